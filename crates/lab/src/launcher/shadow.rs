//! Shadow: a network of unmodified `scalechain node` processes in virtual time.
//!
//! [Shadow](https://shadow.github.io) is a discrete-event network simulator that runs real Linux
//! processes, intercepting their system calls, over a simulated network: its hosts sit on the
//! nodes of a graph whose edges carry a latency and whose nodes give each host an upload and a
//! download bandwidth. Its clock starts at 2000-01-01T00:00:00Z ([`EPOCH_MS`]), so a chain run
//! there needs a genesis time of that era (`chain.genesis_time_ms`). A program runs in zero
//! virtual time: Shadow charges the network, never the CPU.
//!
//! This module writes Shadow's configuration ([`ShadowConfig::to_yaml`]) for a set of regions
//! and hosts, runs it ([`run`]) and finds the simulator ([`find`]). Shadow cannot be installed
//! from the package registries (`../shared/tools/build-shadow.sh` builds it from its sources), so
//! everything that uses it treats its absence as an answer, not an error.
//!
//! Invariants:
//! - The graph is complete, with self-loops, and directed, and Shadow routes along direct edges
//!   only (`use_shortest_path: false`): the latency between two regions is exactly the table's,
//!   whatever the triangle inequality says.
//! - [`ShadowConfig::check`] refuses a configuration Shadow would refuse or misread (a host in
//!   no region, a table of the wrong shape, a zero bandwidth, two hosts on one address), naming
//!   the place.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// Shadow's clock at the start of every simulation: 2000-01-01T00:00:00Z, ms since the Unix
/// epoch.
pub const EPOCH_MS: u64 = 946_684_800_000;

/// What is wrong with a Shadow configuration, or with a run of it.
#[derive(Debug, thiserror::Error)]
pub enum ShadowError {
    /// The configuration is inconsistent; the message names the place.
    #[error("shadow configuration: {0}")]
    Config(String),
    /// Shadow could not be started, or a file of the run could not be written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        source: std::io::Error,
    },
    /// Shadow ended with an error (its last lines of output attached).
    #[error("shadow exited with {status}: {tail}")]
    Failed {
        /// Its exit status.
        status: std::process::ExitStatus,
        /// The end of its output.
        tail: String,
    },
    /// The run took longer than its bound; Shadow was killed.
    #[error("shadow ran past its bound of {0:?} and was stopped")]
    Timeout(Duration),
}

/// A region of the network: the graph node its hosts attach to.
#[derive(Clone, Debug, PartialEq)]
pub struct Region {
    /// Its name (comments only).
    pub name: String,
    /// Each host's upload bandwidth, bit/s.
    pub up_bps: u64,
    /// Each host's download bandwidth, bit/s.
    pub down_bps: u64,
}

/// A process a host runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Process {
    /// The executable.
    pub path: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// When it starts, ms of virtual time.
    pub start_ms: u64,
    /// Still running when the simulation stops (a node), rather than exited (a client).
    pub running_at_end: bool,
}

/// A simulated machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Host {
    /// Its name (letters, digits and `-`; Shadow's output directory for it is named so).
    pub name: String,
    /// Index of its region.
    pub region: usize,
    /// Its address.
    pub ip: Ipv4Addr,
    /// What it runs.
    pub processes: Vec<Process>,
}

/// One simulation.
#[derive(Clone, Debug, PartialEq)]
pub struct ShadowConfig {
    /// The regions.
    pub regions: Vec<Region>,
    /// One-way latency from region `i` to region `j`, µs (`latency_us[i][j]`).
    pub latency_us: Vec<Vec<u64>>,
    /// The hosts.
    pub hosts: Vec<Host>,
    /// When the simulation ends, ms of virtual time.
    pub stop_ms: u64,
    /// Shadow's seed.
    pub seed: u64,
}

/// The address of host `i` of a run: 11.0.0.1 onwards (public, so the nodes treat it as a host
/// of the internet; Shadow never lets traffic out).
pub fn host_ip(i: usize) -> Ipv4Addr {
    let n = 0x0b00_0001u32.saturating_add(u32::try_from(i).unwrap_or(u32::MAX));
    Ipv4Addr::from(n)
}

impl ShadowConfig {
    /// Refuses what Shadow would refuse or misread, naming the place.
    pub fn check(&self) -> Result<(), ShadowError> {
        let bad = |m: String| Err(ShadowError::Config(m));
        let r = self.regions.len();
        if r == 0 {
            return bad("no regions".into());
        }
        if self.latency_us.len() != r {
            return bad(format!("latency_us has {} rows for {r} regions", self.latency_us.len()));
        }
        for (i, row) in self.latency_us.iter().enumerate() {
            if row.len() != r {
                return bad(format!("latency_us[{i}] has {} entries for {r} regions", row.len()));
            }
            if let Some(j) = row.iter().position(|&l| l == 0) {
                return bad(format!("latency_us[{i}][{j}] is 0 (Shadow needs a positive latency)"));
            }
        }
        for (i, g) in self.regions.iter().enumerate() {
            if g.up_bps == 0 || g.down_bps == 0 {
                return bad(format!("regions[{i}] ({}) has a zero bandwidth", g.name));
            }
        }
        let mut ips = std::collections::HashSet::new();
        for (i, h) in self.hosts.iter().enumerate() {
            if h.region >= r {
                return bad(format!("hosts[{i}] ({}) is in region {} of {r}", h.name, h.region));
            }
            if h.name.is_empty() || !h.name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return bad(format!("hosts[{i}]: name {:?} is not letters, digits and '-'", h.name));
            }
            if !ips.insert(h.ip) {
                return bad(format!("hosts[{i}] ({}) has the address {} of an earlier host", h.name, h.ip));
            }
            if let Some(p) = h.processes.iter().position(|p| p.start_ms >= self.stop_ms) {
                return bad(format!("hosts[{i}].processes[{p}] starts at or after the stop time"));
            }
        }
        Ok(())
    }

    /// The network graph in GML: one node per region with its hosts' bandwidths, one directed
    /// edge per ordered pair of regions (self-loops included) with its latency.
    pub fn gml(&self) -> String {
        let mut g = String::from("graph [\n  directed 1\n");
        for (i, r) in self.regions.iter().enumerate() {
            g.push_str(&format!(
                "  node [\n    id {i}\n    label \"{}\"\n    host_bandwidth_up \"{} Kbit\"\n    host_bandwidth_down \"{} Kbit\"\n  ]\n",
                r.name.replace('"', "'"),
                r.up_bps.div_ceil(1_000),
                r.down_bps.div_ceil(1_000),
            ));
        }
        for (i, row) in self.latency_us.iter().enumerate() {
            for (j, l) in row.iter().enumerate() {
                g.push_str(&format!(
                    "  edge [\n    source {i}\n    target {j}\n    latency \"{l} us\"\n    packet_loss 0.0\n  ]\n"
                ));
            }
        }
        g.push_str("]\n");
        g
    }

    /// Shadow's configuration file. YAML 1.2 reads JSON, so it is written as JSON: no quoting
    /// rule of YAML's can misread an argument.
    pub fn to_yaml(&self) -> String {
        let hosts: serde_json::Map<String, serde_json::Value> = self
            .hosts
            .iter()
            .map(|h| {
                let processes: Vec<serde_json::Value> = h
                    .processes
                    .iter()
                    .map(|p| {
                        serde_json::json!({
                            "path": p.path.display().to_string(),
                            "args": p.args,
                            "start_time": format!("{} ms", p.start_ms),
                            "expected_final_state": if p.running_at_end { "running".into() } else { serde_json::json!({"exited": 0}) },
                        })
                    })
                    .collect();
                let host = serde_json::json!({
                    "network_node_id": h.region,
                    "ip_addr": h.ip.to_string(),
                    "processes": processes,
                });
                (h.name.clone(), host)
            })
            .collect();
        let config = serde_json::json!({
            "general": {
                "stop_time": format!("{} ms", self.stop_ms),
                "seed": self.seed,
                "model_unblocked_syscall_latency": true,
                "progress": false,
            },
            "network": {
                "graph": { "type": "gml", "inline": self.gml() },
                "use_shortest_path": false,
            },
            "hosts": hosts,
        });
        format!("{config:#}\n")
    }
}

/// The Shadow binary: `SCALECHAIN_SHADOW` if set, else `shadow` on the `PATH`; `None` when
/// neither names an executable file.
pub fn find() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SCALECHAIN_SHADOW") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    on_path("shadow")
}

/// The file `name` in the first directory of the `PATH` that holds one (Shadow, and the clients
/// its hosts run).
pub fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// Runs `config` under `shadow` in `dir` (its `shadow.yaml`, and Shadow's output in
/// `dir/shadow.data`, `dir/shadow.log`), killing it past `bound` of wall time. Returns the
/// wall time it took.
pub fn run(
    shadow: &Path,
    config: &ShadowConfig,
    dir: &Path,
    bound: Duration,
) -> Result<Duration, ShadowError> {
    config.check()?;
    let io = |what: String| move |source| ShadowError::Io { what, source };
    std::fs::create_dir_all(dir).map_err(io(format!("creating {}", dir.display())))?;
    let yaml = dir.join("shadow.yaml");
    std::fs::write(&yaml, config.to_yaml()).map_err(io(format!("writing {}", yaml.display())))?;
    let data = dir.join("shadow.data");
    if data.exists() {
        std::fs::remove_dir_all(&data).map_err(io(format!("removing {}", data.display())))?;
    }
    let log_path = dir.join("shadow.log");
    let log = std::fs::File::create(&log_path).map_err(io(format!("creating {}", log_path.display())))?;
    let err = log.try_clone().map_err(io(format!("opening {}", log_path.display())))?;
    let start = Instant::now();
    let mut child = Command::new(shadow)
        .arg("--data-directory")
        .arg(&data)
        .arg(&yaml)
        .current_dir(dir)
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(io(format!("starting {}", shadow.display())))?;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(io("waiting for shadow".into()))? {
            break s;
        }
        if start.elapsed() > bound || crate::interrupt::requested() {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ShadowError::Timeout(bound));
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    if !status.success() {
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let tail: Vec<&str> = text.lines().rev().take(15).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(ShadowError::Failed { status, tail: tail.join("\n") });
    }
    Ok(start.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_regions() -> ShadowConfig {
        let node = |i: usize, region: usize| Host {
            name: format!("node{i}"),
            region,
            ip: host_ip(i),
            processes: vec![Process {
                path: "/bin/scalechain".into(),
                args: vec!["node".into(), "--config".into(), format!("/tmp/a b/\"{i}\".toml")],
                start_ms: 1_000,
                running_at_end: true,
            }],
        };
        ShadowConfig {
            regions: vec![
                Region { name: "west".into(), up_bps: 20_000_000, down_bps: 50_000_000 },
                Region { name: "east".into(), up_bps: 1_500, down_bps: 10_000_000 },
            ],
            latency_us: vec![vec![5_000, 80_000], vec![70_000, 5_000]],
            hosts: vec![node(0, 0), node(1, 1)],
            stop_ms: 30_000,
            seed: 7,
        }
    }

    #[test]
    fn the_graph_is_complete_directed_and_exact() {
        let g = two_regions().gml();
        assert!(g.contains("directed 1"));
        assert_eq!(g.matches("edge [").count(), 4, "{g}");
        assert!(g.contains("source 0\n    target 1\n    latency \"80000 us\""), "{g}");
        assert!(g.contains("source 1\n    target 0\n    latency \"70000 us\""), "{g}");
        assert!(g.contains("host_bandwidth_up \"20000 Kbit\""), "{g}");
        // 1,500 bit/s rounds up, never to zero.
        assert!(g.contains("host_bandwidth_up \"2 Kbit\""), "{g}");
    }

    #[test]
    fn the_file_is_json_that_says_every_setting() {
        let c = two_regions();
        let v: serde_json::Value = serde_json::from_str(&c.to_yaml()).unwrap();
        assert_eq!(v["general"]["stop_time"], "30000 ms");
        assert_eq!(v["network"]["use_shortest_path"], false);
        assert_eq!(v["hosts"]["node1"]["ip_addr"], "11.0.0.2");
        assert_eq!(v["hosts"]["node1"]["network_node_id"], 1);
        let p = &v["hosts"]["node0"]["processes"][0];
        assert_eq!(p["args"][2], "/tmp/a b/\"0\".toml", "arguments pass through unsplit");
        assert_eq!(p["expected_final_state"], "running");
        assert_eq!(p["start_time"], "1000 ms");
    }

    #[test]
    fn mistakes_are_named() {
        let mut c = two_regions();
        c.hosts[1].region = 2;
        assert!(c.check().unwrap_err().to_string().contains("hosts[1] (node1) is in region 2 of 2"));
        let mut c = two_regions();
        c.latency_us[1].pop();
        assert!(c.check().unwrap_err().to_string().contains("latency_us[1] has 1 entries"));
        let mut c = two_regions();
        c.latency_us[0][0] = 0;
        assert!(c.check().unwrap_err().to_string().contains("latency_us[0][0] is 0"));
        let mut c = two_regions();
        c.hosts[1].ip = c.hosts[0].ip;
        assert!(c.check().unwrap_err().to_string().contains("address 11.0.0.1"));
        let mut c = two_regions();
        c.regions[0].down_bps = 0;
        assert!(c.check().unwrap_err().to_string().contains("regions[0] (west)"));
        let mut c = two_regions();
        c.hosts[0].processes[0].start_ms = 30_000;
        assert!(c.check().unwrap_err().to_string().contains("hosts[0].processes[0] starts"));
        assert!(two_regions().check().is_ok());
    }

    #[test]
    fn addresses_are_distinct_and_public() {
        assert_eq!(host_ip(0), Ipv4Addr::new(11, 0, 0, 1));
        assert_eq!(host_ip(300), Ipv4Addr::new(11, 0, 1, 45));
        assert!(!host_ip(0).is_private() && !host_ip(0).is_loopback());
    }
}
