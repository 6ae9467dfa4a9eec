//! What a load run reports: latency percentiles, memory and CPU use from `/proc`, and devnet's
//! summary as text and as one JSON
//! object (its keys are read by scripts and tests: `nodes`, `sent`, `confirmed`, `tps`,
//! `latency_ms`, `converged`, `offered_tps`, `duration_s`, `refused`, `cpu`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::json;

use scalechain_types::Hash;

use super::account::Accounting;

/// The value at quantile `q` (0 to 1) of `sorted` (nearest rank; 0 for no values).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q.clamp(0.0, 1.0)).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Latency percentiles, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// What the chain confirmed of a load.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Confirmed {
    /// Transactions confirmed.
    pub count: usize,
    /// Seconds from the offer's start to the last confirming block.
    pub span_s: f64,
    /// `count / span_s`.
    pub tps: f64,
    /// From each request to the first sighting of the block that confirmed it.
    pub latency: Latency,
}

/// What each node received from its peers: gossip payloads by topic and sync answers, read
/// from its `/metrics` before and after the load.
pub mod traffic {
    /// Bytes a node received, by kind.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct Traffic {
        /// Gossip payloads on the transactions topic.
        pub gossip_txs: u64,
        /// Gossip payloads on the block topics (whole and compact).
        pub gossip_blocks: u64,
        /// Answers to its sync requests (blocks, mempool transactions, compact-block fetches).
        pub sync: u64,
    }

    impl Traffic {
        /// All of it.
        pub fn total(&self) -> u64 {
            self.gossip_txs + self.gossip_blocks + self.sync
        }

        /// What `later` received beyond `self` (a counter that went back, a restarted node,
        /// counts from zero).
        pub fn until(&self, later: &Traffic) -> Traffic {
            let d = |a: u64, b: u64| if b >= a { b - a } else { b };
            Traffic {
                gossip_txs: d(self.gossip_txs, later.gossip_txs),
                gossip_blocks: d(self.gossip_blocks, later.gossip_blocks),
                sync: d(self.sync, later.sync),
            }
        }
    }

    /// The counters of one `/metrics` exposition (`scalechain_gossip_in_bytes_total`,
    /// `scalechain_gossip_in_block_bytes_total`, `scalechain_sync_in_bytes_total`); `None` if
    /// the gossip counters are missing (a node without a network).
    pub fn parse(metrics: &str) -> Option<Traffic> {
        let value = |name: &str| -> Option<u64> {
            metrics.lines().find_map(|l| {
                let mut it = l.split_whitespace();
                if it.next() != Some(name) {
                    return None;
                }
                it.next().and_then(|v| v.parse::<f64>().ok()).map(|v| v as u64)
            })
        };
        let all = value("scalechain_gossip_in_bytes_total")?;
        let blocks = value("scalechain_gossip_in_block_bytes_total")?;
        let sync = value("scalechain_sync_in_bytes_total")?;
        Some(Traffic { gossip_txs: all.saturating_sub(blocks), gossip_blocks: blocks, sync })
    }
}

/// Resident memory of processes over a run, from `/proc` (Linux; elsewhere nothing).
pub mod memory {
    use std::fmt::Write as _;
    use std::path::Path;

    use crate::plot::{write_svg, Chart, Series};
    use crate::LabError;

    /// Resident bytes of `pid` (the `VmRSS` line of its `/proc/<pid>/status`).
    pub fn resident(pid: u32) -> Option<u64> {
        scalechain_procfs::resident_bytes(&std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?)
    }

    /// One sample: seconds since the load started, and (name, resident bytes) per process that
    /// answered.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct Sample {
        /// Seconds since the load started.
        pub t_s: f64,
        /// Resident bytes per process.
        pub rss: Vec<(String, u64)>,
    }

    /// Samples each process of `pids` at `t_s`.
    pub fn sample(pids: &[(String, u32)], t_s: f64) -> Sample {
        Sample { t_s, rss: pids.iter().filter_map(|(n, p)| Some((n.clone(), resident(*p)?))).collect() }
    }

    /// The samples as CSV: `t_s` then one column of MiB per process (in the first sample's
    /// order; empty where a process did not answer).
    pub fn csv(samples: &[Sample]) -> String {
        let names: Vec<&str> =
            samples.first().map_or(vec![], |s| s.rss.iter().map(|(n, _)| n.as_str()).collect());
        let mut out =
            format!("t_s,{}\n", names.iter().map(|n| format!("{n}_rss_mib")).collect::<Vec<_>>().join(","));
        for s in samples {
            let _ = write!(out, "{:.0}", s.t_s);
            for n in &names {
                let v = s
                    .rss
                    .iter()
                    .find(|(m, _)| m == n)
                    .map(|(_, b)| format!("{:.1}", *b as f64 / 1_048_576.0));
                let _ = write!(out, ",{}", v.unwrap_or_default());
            }
            out.push('\n');
        }
        out
    }

    /// The samples as a chart: resident MiB of each process against minutes.
    pub fn chart(samples: &[Sample], title: &str) -> Chart {
        let names: Vec<String> =
            samples.first().map_or(vec![], |s| s.rss.iter().map(|(n, _)| n.clone()).collect());
        let series = names
            .iter()
            .map(|n| {
                let pts = samples
                    .iter()
                    .filter_map(|s| {
                        let b = s.rss.iter().find(|(m, _)| m == n)?.1;
                        Some((s.t_s / 60.0, b as f64 / 1_048_576.0))
                    })
                    .collect();
                Series::line(n.clone(), pts)
            })
            .collect();
        Chart {
            title: title.into(),
            x_label: "time since the load started (min)".into(),
            y_label: "resident memory (MiB)".into(),
            log_x: false,
            log_y: false,
            x_names: Vec::new(),
            series,
        }
    }

    /// Writes `rss.csv` and `rss.svg` into `dir`.
    pub fn write(dir: &Path, samples: &[Sample], title: &str) -> Result<(), LabError> {
        std::fs::create_dir_all(dir).map_err(|source| LabError::Io { path: dir.to_path_buf(), source })?;
        let csv_path = dir.join("rss.csv");
        std::fs::write(&csv_path, csv(samples)).map_err(|source| LabError::Io { path: csv_path, source })?;
        write_svg(&dir.join("rss.svg"), &[chart(samples, title)])
    }
}

/// CPU time of processes, from `/proc` (Linux; elsewhere every figure is zero).
pub mod cpu {
    /// (name, CPU seconds) per process.
    pub type Sample = Vec<(String, f64)>;

    /// User + system CPU seconds in the text of a `/proc/<pid>/stat` file, at `ticks` clock
    /// ticks per second (`None` if it does not parse).
    pub use scalechain_procfs::cpu_seconds as parse_stat;

    /// CPU seconds of `pid` (`self` for this process).
    fn seconds(pid: &str) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        parse_stat(&stat, rustix::param::clock_ticks_per_second())
    }

    /// Samples each process of `pids` and this one, as `me`.
    pub fn sample(pids: &[(String, u32)], me: &str) -> Sample {
        pids.iter()
            .map(|(n, p)| (n.clone(), seconds(&p.to_string()).unwrap_or(0.0)))
            .chain(std::iter::once((me.to_string(), seconds("self").unwrap_or(0.0))))
            .collect()
    }

    /// CPU use between two samples.
    #[derive(Clone, Debug, Default, PartialEq)]
    pub struct Usage {
        /// CPU seconds per process.
        pub per_proc: Vec<(String, f64)>,
        /// Cores kept busy on average (all processes).
        pub cores: f64,
        /// CPU microseconds (all processes) per confirmed transaction.
        pub us_per_tx: f64,
    }

    /// The use from `a` to `b` (same processes, same order) over `window_s` seconds in which
    /// `confirmed` transactions were confirmed.
    pub fn usage(a: &Sample, b: &Sample, window_s: f64, confirmed: usize) -> Usage {
        let per_proc: Vec<(String, f64)> =
            a.iter().zip(b).map(|((n, x), (_, y))| (n.clone(), (y - x).max(0.0))).collect();
        let total: f64 = per_proc.iter().map(|(_, s)| s).sum();
        Usage {
            cores: total / window_s.max(1e-9),
            us_per_tx: if confirmed == 0 { 0.0 } else { total * 1e6 / confirmed as f64 },
            per_proc,
        }
    }
}

/// One node at the end of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeEnd {
    /// Its name.
    pub name: String,
    /// Tip height.
    pub height: u64,
    /// Tip hash.
    pub tip: Hash,
    /// Transactions in its mempool.
    pub mempool_txs: usize,
}

/// Devnet's summary.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Peer processes.
    pub peers: usize,
    /// Miner processes.
    pub miners: usize,
    /// Seconds of load asked for.
    pub duration_s: u64,
    /// Transactions per second offered.
    pub offered_tps: u64,
    /// Seconds the offer took.
    pub offer_took_s: f64,
    /// Each peer and miner at the end.
    pub nodes: Vec<NodeEnd>,
    /// Transactions an API accepted.
    pub sent: usize,
    /// Refused transactions by reason.
    pub refused: BTreeMap<String, u64>,
    /// What the chain confirmed.
    pub confirmed: Confirmed,
    /// CPU from the first submission to convergence.
    pub cpu: cpu::Usage,
    /// That window, in seconds.
    pub window_s: f64,
    /// Did the nodes converge?
    pub converged: bool,
    /// Where every accepted transaction ended.
    pub accounting: Accounting,
    /// Resident memory of the nodes over the run.
    pub memory: Vec<memory::Sample>,
    /// The signature bound measured in the same run: µs per batched Ed25519 check on one core
    /// (`scalechain_study::exp::signature_bound_us`), if the load signs with Ed25519.
    pub sig_bound_us: Option<f64>,
    /// What each validating node received from its peers over the load, by node.
    pub traffic: Vec<(String, traffic::Traffic)>,
}

/// `x` rounded to `1 / per` (`per` = 10: one decimal).
fn round_to(x: f64, per: f64) -> f64 {
    (x * per).round() / per
}

impl Summary {
    /// CPU µs per confirmed transaction of one validating node (peers and miners: the
    /// processes named `peer…` and `miner…`), on average.
    pub fn us_per_tx_per_validator(&self) -> Option<f64> {
        let validators: Vec<f64> = self
            .cpu
            .per_proc
            .iter()
            .filter(|(n, _)| n.starts_with("peer") || n.starts_with("miner"))
            .map(|(_, s)| *s)
            .collect();
        if validators.is_empty() || self.confirmed.count == 0 {
            return None;
        }
        Some(validators.iter().sum::<f64>() * 1e6 / self.confirmed.count as f64 / validators.len() as f64)
    }

    /// Bytes a validating node received per confirmed transaction, on average over the nodes
    /// that report traffic: (gossip transactions, gossip blocks, sync answers).
    pub fn bytes_per_tx(&self) -> Option<(f64, f64, f64)> {
        if self.traffic.is_empty() || self.confirmed.count == 0 {
            return None;
        }
        let n = (self.traffic.len() * self.confirmed.count) as f64;
        let sum =
            |f: fn(&traffic::Traffic) -> u64| self.traffic.iter().map(|(_, t)| f(t)).sum::<u64>() as f64 / n;
        Some((sum(|t| t.gossip_txs), sum(|t| t.gossip_blocks), sum(|t| t.sync)))
    }

    /// The text devnet prints on standard error.
    pub fn text(&self) -> String {
        let mut t = String::new();
        let c = &self.confirmed;
        let _ = writeln!(
            t,
            "devnet summary ({} peers, {} miners, {} s at {} tx/s offered; offer took {:.1} s)",
            self.peers, self.miners, self.duration_s, self.offered_tps, self.offer_took_s
        );
        for n in &self.nodes {
            let _ = writeln!(
                t,
                "  {:<10} height {:>5}  tip {}  mempool {}",
                n.name, n.height, n.tip, n.mempool_txs
            );
        }
        let _ = writeln!(t, "  sent (accepted by the API) {}  refused {:?}", self.sent, self.refused);
        let _ = writeln!(t, "  confirmed {}  in {:.1} s  = {:.0} TPS", c.count, c.span_s, c.tps);
        let _ = writeln!(
            t,
            "  latency ms  p50 {:.0}  p95 {:.0}  p99 {:.0}",
            c.latency.p50, c.latency.p95, c.latency.p99
        );
        let _ = writeln!(
            t,
            "  CPU over {:.1} s: {:.2} cores busy, {:.0} µs per confirmed tx ({})",
            self.window_s,
            self.cpu.cores,
            self.cpu.us_per_tx,
            self.cpu.per_proc.iter().map(|(n, s)| format!("{n} {s:.1} s")).collect::<Vec<_>>().join(", ")
        );
        if let (Some(bound), Some(per)) = (self.sig_bound_us, self.us_per_tx_per_validator()) {
            let _ = writeln!(
                t,
                "  signature bound {bound:.1} µs per batched Ed25519 check (one core, this build: {}); each validating node {per:.1} µs per tx = {:.2}× the bound",
                scalechain_types::keys::ed25519_backend(),
                per / bound
            );
        }
        if let Some((txs, blocks, sync)) = self.bytes_per_tx() {
            let _ = writeln!(
                t,
                "  received per confirmed tx by each validating node: {:.0} B ({txs:.0} B gossip transactions, {blocks:.0} B gossip blocks, {sync:.0} B sync answers)",
                txs + blocks + sync
            );
        }
        let _ = writeln!(t, "  {}", self.accounting.line());
        if !self.accounting.lost_sample.is_empty() {
            let sample: Vec<String> = self.accounting.lost_sample.iter().map(Hash::to_string).collect();
            let _ = writeln!(t, "  lost, for example: {}", sample.join(", "));
        }
        if !self.accounting.log_overflowed.is_empty() {
            let _ = writeln!(
                t,
                "  removal logs that forgot entries: {}",
                self.accounting.log_overflowed.join(", ")
            );
        }
        if let (Some(first), Some(last)) = (self.memory.first(), self.memory.last()) {
            let mib = |s: &memory::Sample| -> Vec<String> {
                s.rss.iter().map(|(n, b)| format!("{n} {:.0}", *b as f64 / 1_048_576.0)).collect()
            };
            let _ = writeln!(
                t,
                "  resident MiB at {:.0} s: {}; at {:.0} s: {}",
                first.t_s,
                mib(first).join(", "),
                last.t_s,
                mib(last).join(", ")
            );
        }
        let _ = writeln!(t, "  converged: {}", self.converged);
        t
    }

    /// The JSON object devnet prints as its last line with `--json`.
    pub fn json(&self) -> serde_json::Value {
        let c = &self.confirmed;
        let a = &self.accounting;
        let seconds: serde_json::Map<String, serde_json::Value> =
            self.cpu.per_proc.iter().map(|(n, s)| (n.clone(), json!(round_to(*s, 100.0)))).collect();
        json!({
            "nodes": self.nodes.iter().map(|n| json!({"name": n.name, "tip_hash": n.tip, "height": n.height})).collect::<Vec<_>>(),
            "sent": self.sent,
            "confirmed": c.count,
            "tps": round_to(c.tps, 10.0),
            "latency_ms": {"p50": c.latency.p50.round(), "p95": c.latency.p95.round(), "p99": c.latency.p99.round()},
            "converged": self.converged,
            "accounting": {
                "accepted": a.accepted,
                "confirmed": a.confirmed,
                "pooled": a.pooled,
                "pooled_at": a.pooled_at,
                "removed": a.removed,
                "lost": a.lost,
                "lost_sample": a.lost_sample.iter().map(Hash::to_string).collect::<Vec<_>>(),
            },
            "memory_mib": self.memory.iter().map(|m| {
                let mut o = serde_json::Map::new();
                o.insert("t_s".into(), json!(m.t_s.round()));
                for (n, b) in &m.rss {
                    o.insert(n.clone(), json!(round_to(*b as f64 / 1_048_576.0, 10.0)));
                }
                serde_json::Value::Object(o)
            }).collect::<Vec<_>>(),
            "offered_tps": self.offered_tps,
            "duration_s": self.duration_s,
            "received_bytes_per_tx": self.bytes_per_tx().map(|(txs, blocks, sync)| json!({
                "gossip_txs": round_to(txs, 10.0),
                "gossip_blocks": round_to(blocks, 10.0),
                "sync": round_to(sync, 10.0),
                "total": round_to(txs + blocks + sync, 10.0),
            })),
            "refused": self.refused,
            "cpu": {
                "window_s": round_to(self.window_s, 10.0),
                "cores_busy": round_to(self.cpu.cores, 100.0),
                "us_per_confirmed_tx": self.cpu.us_per_tx.round(),
                "us_per_tx_per_validating_node": self.us_per_tx_per_validator().map(|x| round_to(x, 10.0)),
                "signature_bound_us": self.sig_bound_us.map(|x| round_to(x, 100.0)),
                "ratio_to_bound": self.sig_bound_us.zip(self.us_per_tx_per_validator()).map(|(b, v)| round_to(v / b, 100.0)),
                "ed25519_backend": scalechain_types::keys::ed25519_backend(),
                "seconds": seconds,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!((percentile(&v, 0.5), percentile(&v, 0.95), percentile(&v, 0.99)), (51.0, 95.0, 99.0));
        assert_eq!((percentile(&v, 0.0), percentile(&v, 1.0), percentile(&v, 7.0)), (1.0, 100.0, 100.0));
        assert_eq!(percentile(&[], 0.5), 0.0);
        assert_eq!(percentile(&[3.0], 0.99), 3.0);
    }

    #[test]
    fn cpu_seconds_come_from_proc_stat_fields_14_and_15() {
        // A command name with spaces and parentheses; utime 250, stime 50 ticks.
        let stat =
            "4242 (scale (chain) node) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 50 0 0 20 0 9 0 100 0 0";
        assert_eq!(cpu::parse_stat(stat, 100), Some(3.0));
        assert_eq!(cpu::parse_stat("4242 (x) S 1 2", 100), None, "too few fields");
        assert_eq!(cpu::parse_stat("garbage", 100), None);
        assert_eq!(cpu::parse_stat(stat, 0), None);
        let me = cpu::sample(&[("gone".into(), u32::MAX)], "devnet");
        assert_eq!(me[0], ("gone".to_string(), 0.0), "an unreadable process counts zero");
        assert_eq!(me[1].0, "devnet");
        let a = vec![("n".to_string(), 1.0), ("devnet".to_string(), 0.5)];
        let b = vec![("n".to_string(), 3.0), ("devnet".to_string(), 1.5)];
        let u = cpu::usage(&a, &b, 2.0, 1_000);
        assert_eq!(u.per_proc, vec![("n".to_string(), 2.0), ("devnet".to_string(), 1.0)]);
        assert!((u.cores - 1.5).abs() < 1e-9 && (u.us_per_tx - 3_000.0).abs() < 1e-9, "{u:?}");
        assert_eq!(cpu::usage(&a, &b, 2.0, 0).us_per_tx, 0.0);
    }

    #[test]
    fn resident_memory_comes_from_the_vmrss_line_and_becomes_csv_and_a_chart() {
        assert!(memory::resident(std::process::id()).unwrap() > 0, "this process has a resident set");
        assert!(
            memory::sample(&[("gone".into(), u32::MAX)], 0.0).rss.is_empty(),
            "a gone process is left out"
        );
        let samples = vec![
            memory::Sample { t_s: 0.0, rss: vec![("a".into(), 1 << 20), ("b".into(), 3 << 19)] },
            memory::Sample { t_s: 60.4, rss: vec![("a".into(), 2 << 20)] },
        ];
        assert_eq!(memory::csv(&samples), "t_s,a_rss_mib,b_rss_mib\n0,1.0,1.5\n60,2.0,\n");
        let c = memory::chart(&samples, "soak");
        assert_eq!(c.series.len(), 2);
        assert_eq!(c.series[0].points, [(0.0, 1.0), (60.4 / 60.0, 2.0)]);
        assert_eq!(c.series[1].points, [(0.0, 1.5)]);
    }

    fn summary() -> Summary {
        Summary {
            peers: 1,
            miners: 1,
            duration_s: 4,
            offered_tps: 150,
            offer_took_s: 4.04,
            nodes: vec![
                NodeEnd { name: "peer0".into(), height: 9, tip: Hash([0xab; 32]), mempool_txs: 0 },
                NodeEnd { name: "miner0".into(), height: 9, tip: Hash([0xab; 32]), mempool_txs: 0 },
            ],
            sent: 600,
            refused: BTreeMap::from([("low-fee".to_string(), 2)]),
            confirmed: Confirmed {
                count: 600,
                span_s: 5.03,
                tps: 119.28,
                latency: Latency { p50: 812.4, p95: 1490.6, p99: 1602.0 },
            },
            cpu: cpu::Usage {
                per_proc: vec![("bootstrap".into(), 0.123), ("peer0".into(), 2.456), ("devnet".into(), 0.5)],
                cores: 0.6123,
                us_per_tx: 5131.6,
            },
            window_s: 5.04,
            converged: true,
            accounting: Accounting {
                accepted: 600,
                confirmed: 599,
                removed: BTreeMap::from([("evicted".to_string(), 1)]),
                ..Accounting::default()
            },
            memory: vec![
                memory::Sample { t_s: 0.0, rss: vec![("peer0".into(), 20 << 20)] },
                memory::Sample { t_s: 5.2, rss: vec![("peer0".into(), 31 << 19)] },
            ],
            sig_bound_us: Some(40.0),
            traffic: vec![
                ("peer0".into(), traffic::Traffic { gossip_txs: 120_000, gossip_blocks: 30_000, sync: 600 }),
                ("miner0".into(), traffic::Traffic { gossip_txs: 114_000, gossip_blocks: 0, sync: 0 }),
            ],
        }
    }

    #[test]
    fn traffic_comes_from_the_metrics_counters_and_counts_what_the_load_added() {
        let text = "# HELP scalechain_gossip_in_bytes Gossip bytes received.\n\
                    # TYPE scalechain_gossip_in_bytes counter\n\
                    scalechain_gossip_in_bytes_total 1500\n\
                    scalechain_gossip_in_block_bytes_total 500\n\
                    scalechain_sync_in_bytes_total 70\n\
                    scalechain_gossip_in_bytes_totally 9\n";
        let t = traffic::parse(text).unwrap();
        assert_eq!(t, traffic::Traffic { gossip_txs: 1000, gossip_blocks: 500, sync: 70 });
        assert_eq!(t.total(), 1570);
        assert_eq!(traffic::parse("scalechain_sync_in_bytes_total 70\n"), None);
        let before = traffic::Traffic { gossip_txs: 100, gossip_blocks: 600, sync: 10 };
        // A counter below its first reading (the node restarted) counts from zero.
        assert_eq!(before.until(&t), traffic::Traffic { gossip_txs: 900, gossip_blocks: 500, sync: 60 });
    }

    #[test]
    fn the_summary_text_and_json_keep_their_lines_and_keys() {
        let s = summary();
        let tip = "ab".repeat(32);
        let ed = scalechain_types::keys::ed25519_backend();
        assert_eq!(
            s.text(),
            format!(
                "devnet summary (1 peers, 1 miners, 4 s at 150 tx/s offered; offer took 4.0 s)\n\
                 \x20 peer0      height     9  tip {tip}  mempool 0\n\
                 \x20 miner0     height     9  tip {tip}  mempool 0\n\
                 \x20 sent (accepted by the API) 600  refused {{\"low-fee\": 2}}\n\
                 \x20 confirmed 600  in 5.0 s  = 119 TPS\n\
                 \x20 latency ms  p50 812  p95 1491  p99 1602\n\
                 \x20 CPU over 5.0 s: 0.61 cores busy, 5132 µs per confirmed tx (bootstrap 0.1 s, peer0 2.5 s, devnet 0.5 s)\n\
                 \x20 signature bound 40.0 µs per batched Ed25519 check (one core, this build: {ed}); each validating node 4093.3 µs per tx = 102.33× the bound\n\
                 \x20 received per confirmed tx by each validating node: 220 B (195 B gossip transactions, 25 B gossip blocks, 0 B sync answers)\n\
                 \x20 accepted 600: confirmed 599, pooled 0, removed 1 (evicted 1), lost 0\n\
                 \x20 resident MiB at 0 s: peer0 20; at 5 s: peer0 16\n\
                 \x20 converged: true\n"
            )
        );
        let j = s.json();
        let keys: Vec<&String> = j.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "accounting",
                "confirmed",
                "converged",
                "cpu",
                "duration_s",
                "latency_ms",
                "memory_mib",
                "nodes",
                "offered_tps",
                "received_bytes_per_tx",
                "refused",
                "sent",
                "tps"
            ]
        );
        assert_eq!(j["nodes"][1], json!({"name": "miner0", "tip_hash": tip, "height": 9}));
        assert_eq!(j["tps"], json!(119.3));
        assert_eq!(j["latency_ms"], json!({"p50": 812.0, "p95": 1491.0, "p99": 1602.0}));
        assert_eq!(j["refused"], json!({"low-fee": 2}));
        assert_eq!(j["cpu"]["seconds"], json!({"bootstrap": 0.12, "peer0": 2.46, "devnet": 0.5}));
        assert_eq!(
            (j["cpu"]["cores_busy"].clone(), j["cpu"]["us_per_confirmed_tx"].clone()),
            (json!(0.61), json!(5132.0))
        );
        assert_eq!(j["cpu"]["window_s"], json!(5.0));
        assert_eq!(
            (
                &j["cpu"]["signature_bound_us"],
                &j["cpu"]["us_per_tx_per_validating_node"],
                &j["cpu"]["ratio_to_bound"]
            ),
            (&json!(40.0), &json!(4093.3), &json!(102.33)),
            "only peers and miners are validating nodes"
        );
        assert_eq!(j["cpu"]["ed25519_backend"], json!(scalechain_types::keys::ed25519_backend()));
        let unsigned = Summary { sig_bound_us: None, ..summary() };
        assert!(
            !unsigned.text().contains("signature bound")
                && unsigned.json()["cpu"]["ratio_to_bound"].is_null()
        );
        assert_eq!(
            j["received_bytes_per_tx"],
            json!({"gossip_txs": 195.0, "gossip_blocks": 25.0, "sync": 0.5, "total": 220.5})
        );
        assert!(Summary { traffic: vec![], ..summary() }.json()["received_bytes_per_tx"].is_null());
        assert_eq!(j["accounting"]["removed"], json!({"evicted": 1}));
        assert_eq!(j["memory_mib"][1], json!({"t_s": 5.0, "peer0": 15.5}));
        assert_eq!(
            (j["accounting"]["lost"].clone(), j["accounting"]["confirmed"].clone()),
            (json!(0), json!(599))
        );
    }
}
