//! Emulated hosts: each node in a network namespace of its own — another IP stack, another
//! address — joined to the others by a veth pair on a bridge, with an optional bandwidth limit
//! (`tc … tbf`) on each node's link. Needs root and the `ip` and `tc` programs; everything is
//! made under names this run chooses (`scalechain-<pid>-<tag>-<i>` namespaces, `scb<tag>`
//! bridge, `sch<tag><i>`/`scn<tag><i>` veth ends, a `10.x.y.0/24` subnet) and removed when the
//! [`Namespaces`] is dropped (after the launcher that uses it has stopped its nodes). A run
//! killed before it could clean up leaves namespaces behind; the next [`Namespaces::create`]
//! removes those whose creating process (the pid in the name) is gone and that no process uses
//! any more, so it never touches a namespace of a run still going.
//!
//! [`Namespaces::partition`] splits the hosts into groups that cannot reach each other — every
//! packet from another group is dropped silently on arrival (an nftables table in each
//! namespace; needs the `nft` program), as a cut link drops it: connections time out rather
//! than fail at once — while every host still reaches the machine's own address on the bridge
//! (the API stays reachable). [`Namespaces::heal`] removes the tables.

use std::collections::HashMap;
use std::ffi::OsString;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::{Place, Placement, Role};

/// Prefix of the namespaces this module makes.
pub const PREFIX: &str = "scalechain-";

/// Why namespaces could not be made.
#[derive(Debug, thiserror::Error)]
pub enum NetnsError {
    /// Not running as root.
    #[error("network namespaces need root (this process runs as uid {0})")]
    NotRoot(u32),
    /// A command failed.
    #[error("`{command}` failed: {stderr}")]
    Command {
        /// The command line.
        command: String,
        /// What it printed.
        stderr: String,
    },
    /// More hosts than a /24 holds.
    #[error("{0} hosts: at most 250 fit in one subnet")]
    TooMany(usize),
    /// A partition names a node that has no host here.
    #[error("partition: no host named {0:?}")]
    UnknownHost(String),
    /// A partition puts a node in two groups.
    #[error("partition: {0:?} is in two groups")]
    TwoGroups(String),
}

/// The nftables table a partition adds in a namespace.
const PARTITION_TABLE: &str = "scalechain_partition";

/// The hosts of one run: a namespace per node name, on one bridge.
#[derive(Debug)]
pub struct Namespaces {
    tag: String,
    bridge: String,
    gateway: std::net::IpAddr,
    /// Node name → (index, namespace, its address).
    hosts: HashMap<String, (usize, String, String)>,
    /// Namespaces that hold a partition's table now.
    cut: std::sync::Mutex<Vec<String>>,
}

fn run(args: &[&str]) -> Result<String, NetnsError> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| NetnsError::Command { command: args.join(" "), stderr: e.to_string() })?;
    if !out.status.success() {
        return Err(NetnsError::Command {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).to_string())
}

/// Is this process root?
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Removes the namespaces of earlier runs that no process uses any more.
pub fn sweep_stale() {
    let Ok(list) = run(&["ip", "netns", "list"]) else { return };
    for line in list.lines() {
        let Some(name) = line.split_whitespace().next() else { continue };
        if !creator_gone(name) {
            continue;
        }
        if run(&["ip", "netns", "pids", name]).is_ok_and(|p| p.trim().is_empty()) {
            let _ = run(&["ip", "netns", "del", name]);
        }
    }
    // Bridges of earlier runs with nothing attached.
    if let Ok(links) = run(&["ip", "-o", "link", "show", "type", "bridge"]) {
        for l in links.lines() {
            let Some(name) = l.split(": ").nth(1).map(|n| n.split('@').next().unwrap_or(n)) else { continue };
            if name.starts_with("scb")
                && run(&["ip", "-o", "link", "show", "master", name]).is_ok_and(|s| s.trim().is_empty())
            {
                let _ = run(&["ip", "link", "del", name]);
            }
        }
    }
}

/// Is `name` a namespace of this module whose creating process (the pid after the prefix) has
/// ended? Only such a namespace may be swept: any other may belong to a run still going.
fn creator_gone(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(PREFIX) else { return false };
    match rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) {
        Some(pid) => !std::path::Path::new(&format!("/proc/{pid}")).exists(),
        None => false,
    }
}

static RUNS: AtomicU32 = AtomicU32::new(0);

impl Namespaces {
    /// A namespace for each of `names`, on a new bridge; `rate` (a `tc` rate such as
    /// `10mbit`) limits each node's link in both directions.
    pub fn create(names: &[&str], rate: Option<&str>) -> Result<Namespaces, NetnsError> {
        if !is_root() {
            return Err(NetnsError::NotRoot(rustix::process::geteuid().as_raw()));
        }
        if names.len() > 250 {
            return Err(NetnsError::TooMany(names.len()));
        }
        sweep_stale();
        let run_no = RUNS.fetch_add(1, Ordering::Relaxed);
        let id = (std::process::id() << 8 | (run_no & 0xff)) & 0xff_ffff;
        let tag = format!("{id:x}");
        let (a, b) = (100 + (id >> 8) % 100, id & 0xff);
        let subnet = format!("10.{a}.{b}");
        let gateway =
            std::net::IpAddr::from([10, u8::try_from(a).unwrap_or(100), u8::try_from(b).unwrap_or(0), 1]);
        let mut ns = Namespaces {
            tag: tag.clone(),
            bridge: format!("scb{tag}"),
            gateway,
            hosts: HashMap::new(),
            cut: Default::default(),
        };
        run(&["ip", "link", "add", &ns.bridge, "type", "bridge"])?;
        run(&["ip", "addr", "add", &format!("{subnet}.1/24"), "dev", &ns.bridge])?;
        run(&["ip", "link", "set", &ns.bridge, "up"])?;
        for (i, name) in names.iter().enumerate() {
            let netns = format!("{PREFIX}{}-{tag}-{i}", std::process::id());
            let (host_end, node_end) = (format!("sch{tag}{i}"), format!("scn{tag}{i}"));
            let addr = format!("{subnet}.{}", i + 2);
            // Recorded first, so a failure half-way is still cleaned up.
            ns.hosts.insert((*name).to_string(), (i, netns.clone(), addr.clone()));
            run(&["ip", "netns", "add", &netns])?;
            run(&["ip", "link", "add", &host_end, "type", "veth", "peer", "name", &node_end])?;
            run(&["ip", "link", "set", &node_end, "netns", &netns])?;
            run(&["ip", "link", "set", &host_end, "master", &ns.bridge])?;
            run(&["ip", "link", "set", &host_end, "up"])?;
            let inside = |args: &[&str]| -> Result<String, NetnsError> {
                let mut all = vec!["ip", "netns", "exec", netns.as_str()];
                all.extend_from_slice(args);
                run(&all)
            };
            inside(&["ip", "addr", "add", &format!("{addr}/24"), "dev", &node_end])?;
            inside(&["ip", "link", "set", &node_end, "up"])?;
            inside(&["ip", "link", "set", "lo", "up"])?;
            if let Some(r) = rate {
                let tbf = ["root", "tbf", "rate", r, "burst", "64kb", "latency", "400ms"];
                let mut host = vec!["tc", "qdisc", "add", "dev", host_end.as_str()];
                host.extend_from_slice(&tbf);
                run(&host)?;
                let mut node = vec!["tc", "qdisc", "add", "dev", node_end.as_str()];
                node.extend_from_slice(&tbf);
                inside(&node)?;
            }
        }
        Ok(ns)
    }

    /// The host's own address on the bridge, which every namespace reaches.
    pub fn gateway(&self) -> std::net::IpAddr {
        self.gateway
    }

    /// The run's tag (part of every name it made).
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// The address of the host of node `name`.
    pub fn address(&self, name: &str) -> Option<&str> {
        self.hosts.get(name).map(|(_, _, a)| a.as_str())
    }

    /// The namespace of node `name`.
    pub fn namespace(&self, name: &str) -> Option<&str> {
        self.hosts.get(name).map(|(_, n, _)| n.as_str())
    }

    /// Splits the hosts into `groups` that cannot reach each other: each host drops every
    /// packet from a host of another group (hosts in no group keep reaching everyone). The
    /// groups are checked before anything changes; a partition already in place is healed
    /// first.
    pub fn partition(&self, groups: &[&[&str]]) -> Result<(), NetnsError> {
        let mut group_of: HashMap<&str, usize> = HashMap::new();
        for (g, names) in groups.iter().enumerate() {
            for name in names.iter() {
                if !self.hosts.contains_key(*name) {
                    return Err(NetnsError::UnknownHost((*name).to_string()));
                }
                if group_of.insert(name, g).is_some() {
                    return Err(NetnsError::TwoGroups((*name).to_string()));
                }
            }
        }
        self.heal()?;
        for (name, g) in &group_of {
            let others: Vec<&str> = group_of
                .iter()
                .filter(|(_, og)| *og != g)
                .filter_map(|(other, _)| self.address(other))
                .collect();
            if others.is_empty() {
                continue;
            }
            let netns = self.namespace(name).unwrap_or_default().to_string();
            let rules = format!(
                "table inet {PARTITION_TABLE} {{ chain input {{ type filter hook input priority 0; \
                 policy accept; ip saddr {{ {} }} drop; }}; }}",
                others.join(", ")
            );
            run(&["ip", "netns", "exec", &netns, "nft", &rules])?;
            self.cut.lock().unwrap_or_else(|p| p.into_inner()).push(netns);
        }
        Ok(())
    }

    /// Ends a partition: every host reaches every other again (connections the partition
    /// stalled resume as their retransmissions get through).
    pub fn heal(&self) -> Result<(), NetnsError> {
        let mut cut = self.cut.lock().unwrap_or_else(|p| p.into_inner());
        while let Some(netns) = cut.pop() {
            if let Err(e) =
                run(&["ip", "netns", "exec", &netns, "nft", "delete", "table", "inet", PARTITION_TABLE])
            {
                cut.push(netns);
                return Err(e);
            }
        }
        Ok(())
    }
}

impl Placement for Namespaces {
    /// A node named at creation runs in its namespace, listening (peer-to-peer and API) on its
    /// host's address; any other on loopback.
    fn place(&self, name: &str, _role: Role) -> Place {
        match self.hosts.get(name) {
            Some((_, netns, addr)) => Place {
                listen: format!("/ip4/{addr}/tcp/0"),
                api: format!("{addr}:0"),
                wrap: ["ip", "netns", "exec", netns.as_str()].map(OsString::from).to_vec(),
            },
            None => Place::default(),
        }
    }
}

impl Placement for std::sync::Arc<Namespaces> {
    fn place(&self, name: &str, role: Role) -> Place {
        self.as_ref().place(name, role)
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        for (_, netns, _) in self.hosts.values() {
            // Deleting the namespace deletes the veth pair with it.
            let _ = run(&["ip", "netns", "del", netns]);
        }
        let _ = run(&["ip", "link", "del", &self.bridge]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_namespaces_of_ended_processes_are_stale() {
        let mine = format!("{PREFIX}{}-ab12-0", std::process::id());
        assert!(!creator_gone(&mine), "this process's own namespace is not stale");
        // Above the kernel's pid limit (4,194,304): no such process.
        assert!(creator_gone(&format!("{PREFIX}4294967295-ab12-3")));
        assert!(!creator_gone("other-4294967295-ab12-3"), "not ours");
        assert!(!creator_gone(&format!("{PREFIX}ab12-0")), "no pid: left alone");
    }
}
