//! `sim-check` beyond 16 nodes: the real `scalechain` binary under Shadow (a discrete-event
//! simulator that runs unmodified processes over a simulated network, in virtual time) against
//! the simulator, on SimBlock's six regions at 64 and 256 nodes (16 with `--quick`).
//!
//! Both worlds get the same network: the simulator builds it first (nodes placed in the regions
//! by their shares, each dialling eight others), and the Shadow configuration copies it — every
//! node a host on its region's graph node with the region's bandwidths, each link dialled by its
//! higher-numbered end (`p2p.discover` off, so no other link forms; after the run the nodes'
//! peer books must hold exactly those links, [`same_links`]), one-way latencies exactly
//! the table's means. Shadow has no jitter, so the simulator runs without it. Shadow runs the
//! processes in zero virtual time: it charges the network and never the CPU, so the simulator
//! charges no work either, and the check is of the network model and the protocol machine's
//! relay, on the real binary. The simulator runs with each of its uplink models
//! ([`Uplink`]): SimBlock's one message after another (`fifo-uplink`), shared equally among
//! the peers (`fair-uplink`), and a send buffer at a time, a window per round trip, as TCP
//! sockets carry it (`tcp-uplink`).
//!
//! The scenario is `sim-check`'s: the last node mines (one block a second, paced as the devnet
//! does), and `propagation`'s 1,001 transactions go to node 0 in one request
//! ([`SUBMIT_MS`]); each node's arrival log is read at [`READ_MS`]. The statistic is
//! `sim-check`'s: the time from an item's first node until 50%, 90% and 100% of the nodes had
//! it. Shadow's clock starts at 2000-01-01, so the chain's genesis time is set there
//! (`chain.genesis_time_ms`) in both worlds: another chain, the same workload signed for it.
//!
//! Shadow is optional (it is built from its sources, not installed from a registry): without it
//! ([`scalechain_lab::launcher::shadow::find`]) this part does not run, and the report says so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use scalechain_client::types::ArrivalsJson;
use scalechain_consensus::Params;
use scalechain_lab::launcher::shadow::{self, host_ip, Host, Process, ShadowConfig, EPOCH_MS};
use scalechain_mempool::MempoolConfig;
use scalechain_p2p::msg::Role;
use scalechain_simnet::{Jitter, NetModel, NodeId, Sim, SimConfig, Tracking, Uplink, WorkModel};
use scalechain_types::tx::encode_tx_batch;
use scalechain_types::{Hash, Tx};

use super::{from_real, from_sim, Observed};
use crate::exp::propagation::{RawRun, FAN_OUT};
use crate::StudyError;

/// When the nodes start, ms of virtual time.
pub const START_MS: u64 = 1_000;
/// When the 1,001 transactions are submitted to node 0.
pub const SUBMIT_MS: u64 = 20_000;
/// When each node's arrival log is read.
pub const READ_MS: u64 = 45_000;
/// When the simulation ends.
const STOP_MS: u64 = 47_000;
/// Links each node dials.
const OUTBOUND: usize = 8;
/// The nodes' API port.
const API_PORT: u16 = 8645;
/// Their peer-to-peer port.
const P2P_PORT: u16 = 9000;
/// The API token the nodes are given (the submission is a write).
const TOKEN: &str = "shadow-check";
/// Longest wall time one Shadow run may take.
const BOUND: Duration = Duration::from_secs(3_600);

/// The network both worlds run on: SimBlock's regions and bandwidths, its latency table's
/// means without jitter (Shadow's edges have none), uplinks shared as `uplink` says.
pub fn model(uplink: Uplink) -> NetModel {
    NetModel { name: "SimBlock 2019, no jitter".into(), jitter: Jitter::None, uplink, ..NetModel::simblock() }
}

/// What the simulator built, for Shadow to copy: each node's region and the peers it dials.
#[derive(Clone, Debug, PartialEq)]
pub struct Topology {
    /// Per node, its region.
    pub regions: Vec<usize>,
    /// Per node, the lower-numbered peers it dials.
    pub dials: Vec<Vec<usize>>,
}

/// The scenario in the simulator, on `n` nodes (the last the miner), uplinks shared as
/// `uplink` says; returns what it observed and the network it built (the same for both
/// uplinks).
pub fn simulate(
    n: usize,
    params: &Params,
    txs: &[Tx],
    seed: u64,
    uplink: Uplink,
) -> Result<(Observed, Topology), StudyError> {
    let mut cfg = SimConfig::devnet(seed);
    cfg.params = params.clone();
    cfg.model = model(uplink);
    cfg.keep_events = false;
    cfg.work = WorkModel::Fixed { ms: 0 };
    cfg.mempool = MempoolConfig { max_descendants: FAN_OUT + 1, ..MempoolConfig::default() };
    let hash = cfg.params.hash;
    let mut sim = Sim::new(cfg);
    // Placed in the regions by their shares, the miner too.
    let mut nodes: Vec<NodeId> = sim.add_nodes(Role::Peer, n.saturating_sub(1));
    nodes.extend(sim.add_nodes(Role::Miner, 1));
    sim.connect_random(OUTBOUND).map_err(|e| StudyError::Wrong(format!("sim-check under Shadow: {e}")))?;
    let topology = Topology {
        regions: nodes.iter().map(|&id| usize::from(sim.region_of(id).unwrap_or(0))).collect(),
        dials: nodes
            .iter()
            .map(|&id| {
                sim.peers_of(id).into_iter().map(|p| p.0 as usize).filter(|&p| p < id.0 as usize).collect()
            })
            .collect(),
    };
    // The simulated nodes start at 0, Shadow's at START_MS.
    sim.run_for(SUBMIT_MS - START_MS);
    let ids: Vec<Hash> = txs.iter().map(|t| t.txid(hash)).collect();
    let t0 = sim.now_us();
    sim.track(Tracking::All);
    sim.submit_tracked(nodes[0], txs.to_vec());
    sim.run_for(READ_MS - SUBMIT_MS);
    Ok((from_sim(&sim, &nodes, &ids, t0, f64::NAN), topology))
}

/// The node configuration every host runs (the chain of 2000, a fixed topology, room for the
/// workload's descendants, the API token).
fn node_toml(genesis_ms: u64) -> String {
    format!(
        "[chain]\ngenesis_time_ms = {genesis_ms}\n\n[p2p]\ndiscover = false\n\n[mempool]\nmax_descendants = {}\n\n[api]\ntoken = \"{TOKEN}\"\n",
        FAN_OUT + 1
    )
}

/// A node's identity key, derived from the run's seed (so its peer id is known before it
/// starts).
fn node_key(seed: u64, i: usize) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"scalechain shadow-check node key");
    h.update(&seed.to_le_bytes());
    h.update(&(i as u64).to_le_bytes());
    *h.finalize().as_bytes()
}

/// The Shadow configuration of the scenario on `topology`, its files written under `dir`
/// (each node's data directory with its key, the shared node configuration, the transactions).
pub fn config(
    exe: &Path,
    curl: &Path,
    topology: &Topology,
    txs: &[Tx],
    seed: u64,
    dir: &Path,
) -> Result<ShadowConfig, StudyError> {
    let n = topology.regions.len();
    let write = |path: &PathBuf, data: &[u8]| std::fs::write(path, data).map_err(|e| StudyError::io(path, e));
    let mkdir = |path: &PathBuf| std::fs::create_dir_all(path).map_err(|e| StudyError::io(path, e));
    mkdir(&dir.join("arrivals"))?;
    let toml = dir.join("node.toml");
    write(&toml, node_toml(EPOCH_MS).as_bytes())?;
    let batch = dir.join("txs.bin");
    write(&batch, &encode_tx_batch(txs.iter()))?;
    let mut addrs = Vec::with_capacity(n);
    for i in 0..n {
        let key = node_key(seed, i);
        let peer = scalechain_p2p::net::peer_id_of_seed(key)
            .ok_or_else(|| StudyError::Wrong(format!("node {i}: its derived key is not an ed25519 key")))?;
        addrs.push(format!("/ip4/{}/tcp/{P2P_PORT}/p2p/{peer}", host_ip(i)));
        let data = dir.join(format!("node{i}"));
        if data.exists() {
            std::fs::remove_dir_all(&data).map_err(|e| StudyError::io(&data, e))?;
        }
        mkdir(&data)?;
        write(&data.join("node_key"), &key)?;
    }
    let s = |p: &Path| p.display().to_string();
    let hosts = (0..n)
        .map(|i| {
            let ip = host_ip(i);
            let role = if i + 1 == n { "miner" } else { "peer" };
            let mut args: Vec<String> = [
                "node",
                "--role",
                role,
                "--data-dir",
                &s(&dir.join(format!("node{i}"))),
                "--config",
                &s(&toml),
                "--api",
                &format!("{ip}:{API_PORT}"),
                "--listen",
                &format!("/ip4/{ip}/tcp/{P2P_PORT}"),
                "--miner-threads",
                "1",
            ]
            .map(String::from)
            .to_vec();
            for &p in &topology.dials[i] {
                args.extend(["--bootstrap".into(), addrs[p].clone()]);
            }
            let mut processes =
                vec![Process { path: exe.into(), args, start_ms: START_MS, running_at_end: true }];
            let url = |path: &str| format!("http://{ip}:{API_PORT}{path}");
            if i == 0 {
                processes.push(Process {
                    path: curl.into(),
                    args: vec![
                        "-sS".into(),
                        "--fail".into(),
                        "-H".into(),
                        format!("Authorization: Bearer {TOKEN}"),
                        "-H".into(),
                        "Content-Type: application/octet-stream".into(),
                        "--data-binary".into(),
                        format!("@{}", s(&batch)),
                        "-o".into(),
                        s(&dir.join("submit.json")),
                        url("/txs"),
                    ],
                    start_ms: SUBMIT_MS,
                    running_at_end: false,
                });
            }
            processes.push(Process {
                path: curl.into(),
                args: vec![
                    "-sS".into(),
                    "--fail".into(),
                    "-o".into(),
                    s(&dir.join("arrivals").join(format!("node{i}.json"))),
                    url("/arrivals?after=0&limit=10000"),
                ],
                start_ms: READ_MS,
                running_at_end: false,
            });
            Host { name: format!("node{i}"), region: topology.regions[i], ip, processes }
        })
        .collect();
    let m = model(Uplink::Fifo);
    Ok(ShadowConfig {
        regions: m
            .regions
            .iter()
            .map(|r| shadow::Region { name: r.name.clone(), up_bps: r.up_bps, down_bps: r.down_bps })
            .collect(),
        latency_us: m.latency_us.clone(),
        hosts,
        stop_ms: STOP_MS,
        seed,
    })
}

/// Runs the scenario under `shadow` on `topology` in `dir`; returns what the nodes logged, as
/// `sim-check` reads real runs, and the wall time.
pub fn run_shadow(
    shadow_bin: &Path,
    exe: &Path,
    topology: &Topology,
    txs: &[Tx],
    ids: &[Hash],
    seed: u64,
    dir: &Path,
) -> Result<(Observed, Duration), StudyError> {
    let curl = find_curl()?;
    let cfg = config(exe, &curl, topology, txs, seed, dir)?;
    let wall = shadow::run(shadow_bin, &cfg, dir, BOUND).map_err(|e| StudyError::Wrong(e.to_string()))?;
    same_links(topology, seed, dir)?;
    let read = |path: PathBuf| -> Result<String, StudyError> {
        std::fs::read_to_string(&path).map_err(|e| StudyError::io(&path, e))
    };
    let submitted: serde_json::Value = serde_json::from_str(&read(dir.join("submit.json"))?)
        .map_err(|e| StudyError::Wrong(format!("submit.json: {e}")))?;
    if submitted["accepted"].as_u64() != Some(txs.len() as u64) {
        return Err(StudyError::Wrong(format!(
            "under Shadow node 0 accepted {} of the {} transactions",
            submitted["accepted"],
            txs.len()
        )));
    }
    let mut logs = Vec::with_capacity(topology.regions.len());
    for i in 0..topology.regions.len() {
        let path = dir.join("arrivals").join(format!("node{i}.json"));
        let page: ArrivalsJson = serde_json::from_str(&read(path.clone())?)
            .map_err(|e| StudyError::Wrong(format!("{}: {e}", path.display())))?;
        logs.push(page.entries);
    }
    let raw = RawRun {
        logs,
        ids: ids.to_vec(),
        t0: (EPOCH_MS + SUBMIT_MS) * 1_000,
        cpu_ms_node: f64::NAN,
        other_cores: f64::NAN,
        profile: Vec::new(),
    };
    Ok((from_real(&raw), wall))
}

/// Checks that under Shadow every node connected with exactly the peers the simulated network
/// links it with, as the peer books the nodes wrote say (`nodeN/peers.json`, saved every 10 s,
/// every peer ever connected): otherwise the two worlds were different networks and the
/// comparison means nothing. The error names each link that differs.
pub fn same_links(topology: &Topology, seed: u64, dir: &Path) -> Result<(), StudyError> {
    let n = topology.regions.len();
    let mut index = std::collections::HashMap::with_capacity(n);
    for i in 0..n {
        let peer = scalechain_p2p::net::peer_id_of_seed(node_key(seed, i))
            .ok_or_else(|| StudyError::Wrong(format!("node {i}: its derived key is not an ed25519 key")))?;
        index.insert(peer.to_string(), i);
    }
    let mut linked = vec![std::collections::BTreeSet::new(); n];
    for (i, dials) in topology.dials.iter().enumerate() {
        for &j in dials {
            linked[i].insert(j);
            linked[j].insert(i);
        }
    }
    let mut differ = Vec::new();
    for (i, want) in linked.iter().enumerate() {
        let path = dir.join(format!("node{i}")).join("peers.json");
        let text = std::fs::read_to_string(&path).map_err(|e| StudyError::io(&path, e))?;
        let book: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| StudyError::Wrong(format!("{}: {e}", path.display())))?;
        let peers = book["peers"]
            .as_object()
            .ok_or_else(|| StudyError::Wrong(format!("{}: no `peers` object", path.display())))?;
        let mut got = std::collections::BTreeSet::new();
        for id in peers.keys() {
            match index.get(id) {
                Some(&j) => {
                    got.insert(j);
                }
                None => differ.push(format!("node {i} connected with {id}, no node of the run")),
            }
        }
        differ.extend(got.difference(want).map(|j| format!("node {i} connected with node {j} (not linked)")));
        differ.extend(
            want.difference(&got).map(|j| format!("node {i} never connected with node {j} (linked)")),
        );
    }
    if differ.is_empty() {
        return Ok(());
    }
    let shown: Vec<&str> = differ.iter().take(8).map(String::as_str).collect();
    Err(StudyError::Wrong(format!(
        "under Shadow the nodes were not on the simulated network: {} links differ ({}{})",
        differ.len(),
        shown.join("; "),
        if differ.len() > shown.len() { "; …" } else { "" }
    )))
}

/// curl on the `PATH` (the hosts' clients).
fn find_curl() -> Result<PathBuf, StudyError> {
    shadow::on_path("curl").ok_or_else(|| {
        StudyError::Wrong("the Shadow check's clients are curl, which is not on the PATH".into())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_consensus::params::SigMode;
    use scalechain_types::HashKind;

    fn params() -> Params {
        let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        p.genesis_time = EPOCH_MS;
        p
    }

    #[test]
    fn the_simulated_network_is_what_shadow_is_given() {
        let p = params();
        let txs = crate::exp::propagation::workload(&p);
        let (seen, topo) = simulate(16, &p, &txs, 3, Uplink::Fifo).unwrap();
        let (fair, same) = simulate(16, &p, &txs, 3, Uplink::Fair).unwrap();
        assert_eq!(topo, same, "the uplink does not change the network built");
        // A 232 KB batch to eight peers: shared, the first copies leave later, so the batch
        // reaches half the nodes later than one copy after another.
        let half = |o: &Observed| super::super::stats(&o.txs)[0];
        assert!(half(&fair) > half(&seen), "{} {}", half(&fair), half(&seen));
        // As TCP sockets carry it (a send buffer at a time): between the two.
        let (tcp, same_again) = simulate(16, &p, &txs, 3, Uplink::Tcp).unwrap();
        assert_eq!(topo, same_again);
        assert!(half(&seen) < half(&tcp) && half(&tcp) < half(&fair), "{}", half(&tcp));
        assert_eq!(topo.regions.len(), 16);
        let mut regions = topo.regions.clone();
        regions.sort_unstable();
        regions.dedup();
        assert!(regions.len() >= 3, "placed by the regions' shares: {:?}", topo.regions);
        // Every link dialled once, by its higher end, each node linked to at least its eight.
        assert!(topo.dials.iter().enumerate().all(|(i, d)| d.iter().all(|&p| p < i)));
        let links: usize = topo.dials.iter().map(Vec::len).sum();
        assert!(links >= 16 * OUTBOUND / 2, "{links}");
        // The chain of 2000 works: the 1,001 reach every node, blocks are mined.
        assert_eq!(seen.txs.len(), txs.len());
        assert!(seen.txs.iter().all(|i| i.at_us.iter().all(Option::is_some)));
        assert!(!seen.blocks.is_empty());

        let dir = tempfile::tempdir().unwrap();
        let cfg =
            config(Path::new("/bin/scalechain"), Path::new("/usr/bin/curl"), &topo, &txs, 3, dir.path())
                .unwrap();
        cfg.check().unwrap();
        assert_eq!(cfg.hosts.len(), 16);
        for (i, h) in cfg.hosts.iter().enumerate() {
            assert_eq!(h.region, topo.regions[i]);
            let args = &h.processes[0].args;
            let dialled = args.iter().filter(|a| *a == "--bootstrap").count();
            assert_eq!(dialled, topo.dials[i].len(), "node {i}");
            assert_eq!(args[2], if i == 15 { "miner" } else { "peer" });
        }
        // Node 0 also submits; every node's log is read.
        assert_eq!(cfg.hosts[0].processes.len(), 3);
        assert_eq!(cfg.hosts[0].processes[1].start_ms, SUBMIT_MS);
        assert!(cfg.hosts.iter().all(|h| h.processes.last().unwrap().start_ms == READ_MS));
        // The keys are on disk and the peer ids in the dial addresses are theirs.
        let key: [u8; 32] = std::fs::read(dir.path().join("node0/node_key")).unwrap().try_into().unwrap();
        let id = scalechain_p2p::net::peer_id_of_seed(key).unwrap().to_string();
        let dials_node0 =
            cfg.hosts.iter().flat_map(|h| &h.processes[0].args).filter(|a| a.ends_with(&id)).count();
        assert_eq!(dials_node0, topo.dials.iter().filter(|d| d.contains(&0)).count());
        let toml = std::fs::read_to_string(dir.path().join("node.toml")).unwrap();
        assert!(toml.contains(&format!("genesis_time_ms = {EPOCH_MS}")), "{toml}");
        // The latencies are the table's means: Shadow has no jitter.
        assert_eq!(cfg.latency_us, NetModel::simblock().latency_us);
    }

    #[test]
    fn the_peer_books_must_hold_exactly_the_simulated_links() {
        // Three nodes: 1 dials 0, 2 dials 1.
        let topo = Topology { regions: vec![0, 0, 0], dials: vec![vec![], vec![0], vec![1]] };
        let id = |i: usize| scalechain_p2p::net::peer_id_of_seed(node_key(9, i)).unwrap().to_string();
        let book = |peers: &[String]| {
            let entries: Vec<String> = peers
                .iter()
                .map(|p| format!("\"{p}\": {{\"addrs\": [], \"last_seen_ms\": 1, \"score\": 0, \"banned_until_ms\": null}}"))
                .collect();
            format!("{{\"version\": 1, \"peers\": {{{}}}}}", entries.join(", "))
        };
        let dir = tempfile::tempdir().unwrap();
        let write = |i: usize, peers: &[String]| {
            std::fs::create_dir_all(dir.path().join(format!("node{i}"))).unwrap();
            std::fs::write(dir.path().join(format!("node{i}/peers.json")), book(peers)).unwrap();
        };
        write(0, &[id(1)]);
        write(1, &[id(0), id(2)]);
        write(2, &[id(1)]);
        same_links(&topo, 9, dir.path()).unwrap();
        // Node 2 also reached node 0 (discovery through node 1): the worlds differ.
        write(2, &[id(1), id(0)]);
        let e = same_links(&topo, 9, dir.path()).unwrap_err().to_string();
        assert!(e.contains("node 2 connected with node 0 (not linked)"), "{e}");
        // A link that never formed differs too.
        write(2, &[]);
        let e = same_links(&topo, 9, dir.path()).unwrap_err().to_string();
        assert!(e.contains("node 2 never connected with node 1 (linked)"), "{e}");
    }
}
