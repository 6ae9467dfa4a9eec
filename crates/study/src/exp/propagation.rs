//! `propagation` (seed 001 §1.1, §3.1): how fast transactions and blocks reach every node of a
//! running network. On a network of node processes on this machine (a miner and peers, joined
//! through a bootstrap node), one transaction `tx0` (1 input → 1,000 outputs) and then the
//! 1,000 transactions spending its outputs are submitted to one peer; every node's arrival log
//! (`GET /arrivals`) says when each of the 1,001 reached it. Two ways of submitting them
//! ([`Submission`]): in one request (ours: the node admits them as one batch and relays them as
//! one gossip message), and one request per transaction, each after the answer to the one
//! before (seed 001's: its `sendBulkRawTransactions` ran `sendOneRawTransaction` once per
//! transaction, and its node announced them one by one). In the full run, also a sustained
//! 1,000 tx/s for 60 s, one transaction per request. Reported: each node's arrival times (seed
//! 001's histograms, 50 buckets), the time until the last arrived, the "packets" they came in
//! (transactions a node logged at one instant), the local acceptance time at the node they
//! were sent to, the time a transaction takes to reach every node, and the time a mined block
//! takes to reach every node; and a scaling series over network sizes (seed 000's question:
//! does it scale as the network grows?).
//!
//! Times are differences of the nodes' wall clocks, which processes on one machine share. The
//! placement here is loopback; namespaces and emulated WAN delays are further placements.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use scalechain_client::types::{ArrivalJson, ProfileControl, ProfilePath};
use scalechain_client::Client;
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{genesis_block, Params};
use scalechain_lab::launcher::netns::{self, Namespaces};
use scalechain_lab::launcher::wan::{Link, Regions, Relay};
use scalechain_lab::launcher::{LaunchError, Launcher, NetworkPlan, NodeSpec, Role};
use scalechain_lab::load::converge::{wait_connected, wait_height};
use scalechain_lab::load::fund::fund;
use scalechain_lab::load::prepare::{premine_funds, prepare};
use scalechain_lab::load::schedule::{Bounded, Rate};
use scalechain_lab::load::submit::{offer, Counters, OfferConfig};
use scalechain_lab::load::SystemClock;
use scalechain_lab::output::Target;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_types::{
    Amount, Hash, HashKind, Lock, OutPoint, Scheme, SecretKey, Tx, TxIn, TxKind, TxOut, Witness,
};

use crate::{median, Ctx, Experiment, StudyError};

/// Columns of `propagation.csv`.
pub const COLUMNS: &[&str] = &[
    "series",
    "placement",
    "nodes",
    "node",
    "x_ms",
    "count",
    "p50_ms",
    "p90_ms",
    "p99_ms",
    "max_ms",
    "runs",
    "mode",
    "packets",
    "packet_p50",
    "packet_max",
    "build",
    "commit",
    "seed",
];

/// Outputs of `tx0`, and spends after it (seed 001: 1,000).
pub const FAN_OUT: usize = 1_000;
/// Buckets of the arrival histograms (seed 001's Tables 1–2).
pub const BUCKETS: usize = 50;
/// Seed 001: the run time of its admission routine summed over the 1,001 transactions, ms —
/// not a wall-clock time; `profile`'s summed `mempool.offer` is its counterpart.
pub const SEED_LOCAL_ACCEPT_MS: f64 = 400.0;
/// Seed 001: time for the 1,001 to reach the nodes 200–350 ms away (London, Mumbai), ms.
pub const SEED_REMOTE_MS: (f64, f64) = (50_000.0, 60_000.0);
/// Seed 001: the "packets" the arrivals came in, transactions (its buckets about 1 s wide).
pub const SEED_PACKETS: (f64, f64) = (20.0, 60.0);
/// Seed 001's words for the numbers above (§3.1), as printed.
pub const SEED_QUOTES: &[&str] = &[
    "the total run time of the routine AcceptToMemoryPool for the 1001 transactions given in (1) \
     fluctuated around 400 milliseconds (397 milliseconds in our latest experiment)",
    "split into 50 buckets of width about 1 second each",
    "For both machines, it took between 50 and 60 seconds for all transactions to arrive.",
    "The arrival times appear to be grouped into \"packets\" of size between 20 to about 60 \
     transactions.",
];
/// The sustained offer of the full run: transactions per second, seconds.
pub const SUSTAINED: (u32, u32) = (1_000, 60);

/// Polling interval while waiting for arrivals.
const POLL: Duration = Duration::from_millis(50);
/// Longest wait for the 1,001 to reach every node, and for the network to come up.
const WAIT: Duration = Duration::from_secs(120);
/// After the submission of one by one or sustained, how long no new arrival ends the wait.
const QUIET: Duration = Duration::from_secs(10);

/// What one run measured, times in ms from the first submission.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// Per node (in start order, the submit node first): arrival delays of the 1,001.
    pub arrivals: Vec<Vec<f64>>,
    /// Per transaction: the time from its arrival at the submit node to its arrival at the
    /// last node.
    pub spread: Vec<f64>,
    /// Per block mined during the run: the time from the miner to the last node.
    pub block_reach: Vec<f64>,
    /// Per node: the "packets" the workload arrived in, each the number of its transactions
    /// the node logged at one instant (one admitted batch), in order of arrival.
    pub packets: Vec<Vec<usize>>,
}

impl RunResult {
    /// Local acceptance: the time until the last of the 1,001 was admitted where it was sent.
    pub fn local_accept_ms(&self) -> f64 {
        self.arrivals.first().map_or(f64::NAN, |a| a.iter().copied().fold(0.0, f64::max))
    }
}

/// `tx0` spending premine output 0 into [`FAN_OUT`] outputs, and the spends of those outputs
/// (each back to its own key), signed for the devnet chain.
pub fn workload(p: &Params) -> Vec<Tx> {
    let chain_id = genesis_block(p).hash(p.hash);
    let genesis = genesis_block(p).txs[0].txid(p.hash);
    let premine = devnet_premine_key(SigMode::Ed25519, 0);
    let coin = p.premine[0];
    let keys: Vec<SecretKey> = (0..FAN_OUT as u64)
        .map(|i| SecretKey::from_seed(Scheme::Ed25519, HashKind::Sha256.hash(&i.to_le_bytes()).0))
        .collect();
    let lock = |k: &SecretKey| Lock { scheme: Scheme::Ed25519, pubkey_hash: k.public().hash(p.hash) };
    let fee0 = 100_000u64;
    let each = (coin.value.get() - fee0) / FAN_OUT as u64;
    let mut tx0 = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: vec![TxIn {
            prev: OutPoint { txid: genesis, index: 0 },
            witness: Witness { pubkey: premine.public(), signature: [0; 64] },
        }],
        outputs: keys
            .iter()
            .map(|k| TxOut { value: Amount::new(each).unwrap_or(Amount::ZERO), lock: lock(k) })
            .collect(),
        data: Vec::new(),
    };
    tx0.sign_inputs_with(p.hash, &chain_id, &premine);
    let id0 = tx0.txid(p.hash);
    let mut txs = vec![tx0];
    for (i, k) in keys.iter().enumerate() {
        let mut t = Tx {
            version: 1,
            kind: TxKind::TRANSFER,
            inputs: vec![TxIn {
                prev: OutPoint { txid: id0, index: i as u32 },
                witness: Witness { pubkey: k.public(), signature: [0; 64] },
            }],
            outputs: vec![TxOut { value: Amount::new(each - 1_000).unwrap_or(Amount::ZERO), lock: lock(k) }],
            data: Vec::new(),
        };
        t.sign_inputs_with(p.hash, &chain_id, k);
        txs.push(t);
    }
    txs
}

/// Appends to `log` the arrivals `node` logged after the last one `log` holds, paging through
/// its log (so each poll reads only what is new).
pub(crate) async fn read_new(node: &Client, log: &mut Vec<ArrivalJson>) -> Result<(), StudyError> {
    loop {
        let after = log.last().map_or(0, |e| e.seq);
        let page = node.arrivals(after, Some(10_000)).await.map_err(api)?;
        if page.entries.is_empty() {
            return Ok(());
        }
        log.extend(page.entries);
    }
}

fn api(e: impl std::fmt::Display) -> StudyError {
    StudyError::Wrong(format!("node API: {e}"))
}

fn wall_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Where the nodes run.
#[derive(Clone, Debug, PartialEq)]
pub enum Placement {
    /// Processes on loopback, joined through a bootstrap node (which relays no gossip).
    Loopback,
    /// Processes on loopback in the regions of `Regions` (round robin, the submit node in the
    /// first), without discovery, every pair linked once through a relay delaying each
    /// direction by the pair's one-way delay.
    Wan(Regions),
    /// Each node (and the bootstrap node) in a network namespace of its own: another IP stack
    /// and address, on a bridge, each link limited to the `tc` rate if one is given. Needs root.
    Namespaces(Option<String>),
    /// [`Placement::Wan`] on emulated hosts: each node in its namespace, its link limited to the
    /// `tc` rate given, every pair linked through a relay on the bridge's host address. Needs
    /// root.
    HostsWan(Regions, String),
}

impl Placement {
    /// The name in the CSV's `placement` column.
    pub fn name(&self) -> &'static str {
        match self {
            Placement::Loopback => "loopback",
            Placement::Wan(_) => "wan-seed001",
            Placement::Namespaces(_) => "namespaces",
            Placement::HostsWan(..) => "namespaces-wan-seed001",
        }
    }
}

/// How the workload goes to the submit node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Submission {
    /// The 1,001 in one request: the node admits them as one batch and relays what it
    /// admitted as one gossip message (ours).
    Batch,
    /// The 1,001 one request each (one transaction per `POST /txs`), each sent once the one
    /// before was answered, as seed 001's `sendOneRawTransaction` loop did; each is relayed as
    /// the node relays a single admitted transaction.
    OneByOne,
    /// Transactions spending premine coins split beforehand (funding confirmed before the
    /// clock starts), offered at `tps` for `secs`, one transaction per request, open loop (a
    /// slow answer does not hold back the next request).
    Sustained {
        /// Transactions per second.
        tps: u32,
        /// Seconds.
        secs: u32,
    },
}

impl Submission {
    /// The name in the CSV's `mode` column.
    pub fn name(&self) -> String {
        match self {
            Submission::Batch => "batch-ours".into(),
            Submission::OneByOne => "one-by-one-seed001".into(),
            Submission::Sustained { tps, secs } => format!("sustained-{tps}tps-{secs}s"),
        }
    }

    /// The label in the figure and the report.
    pub fn label(&self) -> String {
        match self {
            Submission::Batch => "batch (ours)".into(),
            Submission::OneByOne => "one by one (seed 001's)".into(),
            Submission::Sustained { tps, secs } => format!("{tps} tx/s for {secs} s, one per request"),
        }
    }

    /// The label of a `mode` column's name.
    pub fn label_of(name: &str) -> String {
        match name {
            "batch-ours" => Submission::Batch.label(),
            "one-by-one-seed001" => Submission::OneByOne.label(),
            other => other.replace('-', " "),
        }
    }
}

/// How a run waits and measures.
#[derive(Clone, Debug)]
pub struct RunOpts {
    /// Wait until every node is linked to every other (and to the bootstrap node) before the
    /// submission, not only to one other.
    pub all_linked: bool,
    /// Blocks to wait for after the 1,001 are confirmed everywhere (more block samples).
    pub extra_blocks: u64,
    /// Interval of the arrival logs' polling.
    pub poll: Duration,
    /// Record the submit node's function profile from the submission on
    /// ([`RawRun::profile`]).
    pub profile: bool,
}

impl RunOpts {
    /// This experiment's: one peer linked is enough, no extra blocks, 50 ms polls.
    pub fn propagation() -> RunOpts {
        RunOpts { all_linked: false, extra_blocks: 0, poll: POLL, profile: false }
    }
}

/// What one run logged: every node's arrival log (peers in start order, the submit node
/// first; the miner last), the submitted txids, and the moment of the submission.
#[derive(Clone, Debug, Default)]
pub struct RawRun {
    /// Each node's arrival log.
    pub logs: Vec<Vec<ArrivalJson>>,
    /// The submitted transactions' ids, in order.
    pub ids: Vec<Hash>,
    /// The submission, µs of the wall clock.
    pub t0: u64,
    /// CPU the node processes used, from the submission until the 1,001 had reached every
    /// node, ms per node.
    pub cpu_ms_node: f64,
    /// Cores the rest of the machine kept busy over the same span (this process, the relays,
    /// anything else running): how far the nodes had the machine to themselves.
    pub other_cores: f64,
    /// The submit node's function profile (`GET /profile`) from the submission until the
    /// 1,001 were confirmed everywhere, with [`RunOpts::profile`]; empty otherwise.
    pub profile: Vec<ProfilePath>,
}

impl RawRun {
    /// Blocks the miner (the last node) mined from the submission on: (hash, when it logged
    /// its own block, µs).
    pub fn mined(&self) -> Vec<(String, u64)> {
        self.logs
            .last()
            .map(|l| {
                l.iter()
                    .filter(|e| e.kind == "block" && e.source == "mined" && e.at_us >= self.t0)
                    .map(|e| (e.id.to_string(), e.at_us))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// One run on a fresh network of `nodes` nodes (peers, and one miner last) placed as `place`.
pub fn run_once(
    exe: &Path,
    nodes: usize,
    txs: &[Tx],
    kind: HashKind,
    place: &Placement,
) -> Result<RunResult, StudyError> {
    let raw = run_raw(exe, nodes, txs, kind, place, &RunOpts::propagation())?;
    Ok(summarise(&raw.logs, &raw.ids, raw.t0, &raw.mined()))
}

/// One run as [`run_once`], the logs kept as they are.
pub fn run_raw(
    exe: &Path,
    nodes: usize,
    txs: &[Tx],
    kind: HashKind,
    place: &Placement,
    opts: &RunOpts,
) -> Result<RawRun, StudyError> {
    run_raw_with(exe, nodes, txs, kind, place, opts, Submission::Batch)
}

/// One run as [`run_raw`], the workload submitted as `submission` says (`txs` is the
/// workload of [`Submission::Batch`] and [`Submission::OneByOne`]; a sustained offer makes
/// its own).
pub fn run_raw_with(
    exe: &Path,
    nodes: usize,
    txs: &[Tx],
    kind: HashKind,
    place: &Placement,
    opts: &RunOpts,
    submission: Submission,
) -> Result<RawRun, StudyError> {
    let launch = |e: LaunchError| StudyError::Wrong(format!("starting the network: {e}"));
    let mut net = Launcher::new(exe).map_err(launch)?;
    // tx0 has 1,000 pooled children: the nodes hold that many descendants (the default 25
    // would refuse all but 24 spends until tx0 is mined).
    let config = format!("[mempool]\nmax_descendants = {}\n", FAN_OUT + 1);
    let mut relays = Vec::new();
    let want_peers = match place {
        Placement::Namespaces(rate) => {
            let mut names = vec!["bootstrap".to_string(), "miner0".to_string()];
            names.extend((0..nodes - 1).map(|i| format!("peer{i}")));
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            let hosts = Namespaces::create(&names, rate.as_deref())
                .map_err(|e| StudyError::Wrong(format!("namespaces: {e}")))?;
            // The launcher stops the nodes before the namespaces go with it.
            net = net.placement(Arc::new(hosts));
            let plan = NetworkPlan { peers: nodes - 1, miners: 1, miner_threads: 1, config: Some(config) };
            net.start_network(&plan).map_err(launch)?;
            if opts.all_linked {
                nodes
            } else {
                2.min(nodes)
            }
        }
        Placement::Loopback => {
            net.start_network(&NetworkPlan {
                peers: nodes - 1,
                miners: 1,
                miner_threads: 1,
                config: Some(config),
            })
            .map_err(launch)?;
            // The bootstrap node and at least one other (or every other).
            if opts.all_linked {
                nodes
            } else {
                2.min(nodes)
            }
        }
        Placement::Wan(regions) | Placement::HostsWan(regions, _) => {
            let config = format!("{config}[p2p]\ndiscover = false\n");
            // On emulated hosts the relays listen on the bridge's host address, which every
            // namespace reaches; on loopback, on loopback.
            let mut gateway = std::net::IpAddr::from([127, 0, 0, 1]);
            if let Placement::HostsWan(_, rate) = place {
                let mut names: Vec<String> = (0..nodes - 1).map(|i| format!("peer{i}")).collect();
                names.push("miner0".into());
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                let hosts = Namespaces::create(&names, Some(rate))
                    .map_err(|e| StudyError::Wrong(format!("namespaces: {e}")))?;
                gateway = hosts.gateway();
                net = net.placement(Arc::new(hosts));
            }
            // (address, port, peer id) of each node started so far.
            let mut addrs: Vec<(std::net::IpAddr, u16, String)> = Vec::new();
            for i in 0..nodes {
                let miner = i == nodes - 1;
                let name = if miner { "miner0".to_string() } else { format!("peer{i}") };
                let mut spec =
                    NodeSpec::new(name, if miner { Role::Miner } else { Role::Peer }).config(config.clone());
                if miner {
                    spec = spec.miner_threads(1);
                }
                for (j, (ip, port, id)) in addrs.iter().enumerate() {
                    let target = SocketAddr::new(*ip, *port);
                    let relay = Relay::start_on(gateway, target, Link::delay(regions.delay(i, j)))
                        .map_err(|e| StudyError::Wrong(format!("starting a relay: {e}")))?;
                    spec = spec.bootstrap(format!("/ip4/{gateway}/tcp/{}/p2p/{id}", relay.addr().port()));
                    relays.push(relay);
                }
                let node = net.start(spec).map_err(launch)?;
                let addr = node.p2p_addr().to_string();
                let parts: Vec<&str> = addr.split('/').collect();
                let ip = parts.get(2).and_then(|p| p.parse().ok());
                let port = parts.get(4).and_then(|p| p.parse().ok());
                let id = parts.get(6).map(|s| s.to_string());
                let (Some(ip), Some(port), Some(id)) = (ip, port, id) else {
                    return Err(StudyError::Wrong(format!(
                        "node {i} listens on {addr:?}, not /ip4/…/tcp/PORT/p2p/ID"
                    )));
                };
                addrs.push((ip, port, id));
            }
            // Every link up.
            nodes - 1
        }
    };
    // Peers first, the miner last; the submit node is peer 0.
    let clients: Vec<(String, Client)> = net.clients(|r| r != Role::Bootstrap);
    let pids: Vec<String> = net
        .pids()
        .into_iter()
        .filter(|(name, _)| clients.iter().any(|(c, _)| c == name))
        .map(|(_, pid)| pid.to_string())
        .collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StudyError::Wrong(format!("runtime: {e}")))?;
    let r = rt.block_on(measure(&clients, &pids, txs, kind, want_peers, opts, submission));
    drop(rt);
    let _ = net.stop();
    drop(relays);
    r
}

async fn measure(
    clients: &[(String, Client)],
    pids: &[String],
    txs: &[Tx],
    kind: HashKind,
    want_peers: usize,
    opts: &RunOpts,
    submission: Submission,
) -> Result<RawRun, StudyError> {
    let clock = SystemClock::start();
    let stop: &AtomicBool = scalechain_lab::interrupt::flag();
    wait_connected(clients, want_peers, WAIT, POLL, &clock, stop).await.map_err(api)?;
    // The premine is spendable from block 1.
    wait_height(clients, 1, WAIT, POLL, &clock, stop).await.map_err(api)?;
    let cpu = || pids.iter().map(|p| scalechain_procfs::threads_cpu_seconds(p)).sum::<f64>();
    let machine =
        || std::fs::read_to_string("/proc/stat").ok().as_deref().and_then(scalechain_procfs::machine_ticks);
    let submit = &clients[0].1;
    let refused = |i: usize, v: &scalechain_client::types::TxResult| {
        StudyError::Wrong(format!("transaction {i} of the workload refused: {:?} {:?}", v.reason, v.detail))
    };
    if opts.profile {
        // Statistics from the submission on only: the start-up's are forgotten.
        let on = ProfileControl { enabled: Some(true), reset: true };
        submit.profile_control(&on).await.map_err(api)?;
    }
    let (ids, t0, cpu0, machine0) = match submission {
        Submission::Batch => {
            let (cpu0, machine0) = (cpu(), machine());
            let t0 = wall_us();
            // One request holding the 1,001 in order.
            let r = submit.submit(txs).await.map_err(api)?;
            if let Some((i, v)) = r.results.iter().enumerate().find(|(_, v)| !v.accepted) {
                return Err(refused(i, v));
            }
            (txs.iter().map(|t| t.txid(kind)).collect::<Vec<Hash>>(), t0, cpu0, machine0)
        }
        Submission::OneByOne => {
            let (cpu0, machine0) = (cpu(), machine());
            let t0 = wall_us();
            // One request per transaction, each once the one before was answered (seed 001's
            // Table 4: 1 `sendBulkRawTransactions` call ran `sendOneRawTransaction` 1,001 times).
            for (i, tx) in txs.iter().enumerate() {
                let r = submit.submit(std::slice::from_ref(tx)).await.map_err(api)?;
                if let Some(v) = r.results.iter().find(|v| !v.accepted) {
                    return Err(refused(i, v));
                }
            }
            (txs.iter().map(|t| t.txid(kind)).collect(), t0, cpu0, machine0)
        }
        Submission::Sustained { tps, secs } => {
            // Coins split beforehand, one per transaction of the offer, the split confirmed.
            let p = Params::devnet(kind, SigMode::Ed25519);
            let chain_id = genesis_block(&p).hash(p.hash);
            let total = tps as usize * secs as usize;
            let prepared = prepare(kind, &chain_id, &premine_funds(&p, SigMode::Ed25519), total);
            let from = submit.status().await.map_err(api)?.height;
            let funded = fund(submit, &prepared.funding, kind, from, WAIT, POLL, &clock, stop)
                .await
                .map_err(|e| StudyError::Wrong(format!("funding the sustained offer: {e}")))?;
            if let Some((txid, why)) = funded.refused.first() {
                return Err(StudyError::Wrong(format!("funding refused: {txid}: {why}")));
            }
            let mut schedule = Bounded {
                rate: Rate::Fixed { tps: f64::from(tps) },
                total: total as u64,
                end: Some(Duration::from_secs(u64::from(secs))),
            };
            // Every 10 ms the transactions due, each in a request of its own.
            let cfg = OfferConfig { tick: Duration::from_millis(10), max_batch: 1, hash: kind };
            let (cpu0, machine0) = (cpu(), machine());
            let t0 = wall_us();
            let done = offer(
                &prepared.load,
                &mut schedule,
                std::slice::from_ref(submit),
                &clock,
                &cfg,
                &Counters::default(),
                stop,
            )
            .await
            .map_err(|e| StudyError::Wrong(format!("the sustained offer: {e}")))?;
            // The accepted ones, in the order offered (the refused are left out: `count`
            // says how many of the offer were accepted).
            let ids: Vec<Hash> = prepared
                .load
                .iter()
                .map(|t| t.txid(kind))
                .filter(|id| done.accepted_at.contains_key(id))
                .collect();
            if ids.is_empty() {
                return Err(StudyError::Wrong(format!(
                    "the sustained offer: none of {} accepted ({:?})",
                    done.offered, done.refused
                )));
            }
            (ids, t0, cpu0, machine0)
        }
    };
    let wanted: std::collections::HashSet<String> = ids.iter().map(|h| h.to_string()).collect();
    // Until every node logged all of them (bounded). One by one, a transaction a block
    // confirmed before it reached a node's pool is never logged there: once nothing new came
    // for `QUIET`, the run ends with what arrived (the counts say how many).
    let deadline = std::time::Instant::now() + WAIT;
    let mut logs: Vec<Vec<ArrivalJson>> = vec![Vec::new(); clients.len()];
    let mut seen = 0usize;
    let mut last_new = std::time::Instant::now();
    loop {
        for ((_, c), log) in clients.iter().zip(&mut logs) {
            read_new(c, log).await?;
        }
        let counts: Vec<usize> = logs
            .iter()
            .map(|l| l.iter().filter(|e| wanted.contains(e.id.to_string().as_str())).count())
            .collect();
        if counts.iter().all(|c| *c == ids.len()) {
            break;
        }
        let now: usize = counts.iter().sum();
        if now > seen {
            seen = now;
            last_new = std::time::Instant::now();
        }
        if submission != Submission::Batch && last_new.elapsed() > QUIET {
            break;
        }
        if std::time::Instant::now() > deadline || stop.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(StudyError::Wrong(format!(
                "the {} transactions did not reach every node in {} s",
                ids.len(),
                WAIT.as_secs()
            )));
        }
        tokio::time::sleep(opts.poll).await;
    }
    let (cpu1, machine1, t1) = (cpu(), machine(), wall_us());
    let cpu_ms_node = (cpu1 - cpu0) * 1e3 / pids.len().max(1) as f64;
    let other_cores = match (machine0, machine1) {
        (Some((b0, a0)), Some((b1, a1))) if a1 > a0 && t1 > t0 => {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
            let busy = (b1 - b0) as f64 / (a1 - a0) as f64 * cores;
            let nodes = (cpu1 - cpu0) / ((t1 - t0) as f64 / 1e6);
            (busy - nodes).max(0.0)
        }
        _ => f64::NAN,
    };
    // Blocks mined after the first submission, until the 1,001 are confirmed everywhere.
    let until = std::time::Instant::now() + WAIT;
    loop {
        let mut all = true;
        for (_, c) in clients {
            all &= c.mempool(Some(0)).await.is_ok_and(|m| m.count == 0);
        }
        if all || std::time::Instant::now() > until {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // More blocks, if asked for, at the miner (the last node).
    if opts.extra_blocks > 0 {
        if let Some((_, miner)) = clients.last() {
            let from = miner.status().await.map_err(api)?.height;
            let until = std::time::Instant::now() + WAIT;
            while std::time::Instant::now() < until && !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if miner.status().await.is_ok_and(|s| s.height >= from + opts.extra_blocks) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    // Blocks may still be on their way to a node: one more read after a pause.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for ((_, c), log) in clients.iter().zip(&mut logs) {
        read_new(c, log).await?;
    }
    let profile = if opts.profile { read_paths(submit).await?.0 } else { Vec::new() };
    Ok(RawRun { logs, ids, t0, cpu_ms_node, other_cores, profile })
}

/// The run's figures from the nodes' logs (the submit node first, the miner last).
pub fn summarise(logs: &[Vec<ArrivalJson>], ids: &[Hash], t0: u64, mined: &[(String, u64)]) -> RunResult {
    let at: Vec<HashMap<String, u64>> =
        logs.iter().map(|l| l.iter().map(|e| (e.id.to_string(), e.at_us)).collect()).collect();
    let ms = |us: u64, from: u64| us.saturating_sub(from) as f64 / 1e3;
    let names: Vec<String> = ids.iter().map(|h| h.to_string()).collect();
    let arrivals =
        at.iter().map(|m| names.iter().filter_map(|id| m.get(id)).map(|us| ms(*us, t0)).collect()).collect();
    let spread = names
        .iter()
        .filter_map(|id| {
            let first = *at.first()?.get(id)?;
            let last =
                at.iter().map(|m| m.get(id).copied()).collect::<Option<Vec<u64>>>()?.into_iter().max()?;
            Some(ms(last, first))
        })
        .collect();
    let block_reach = mined
        .iter()
        .filter_map(|(id, born)| {
            let last =
                at.iter().map(|m| m.get(id).copied()).collect::<Option<Vec<u64>>>()?.into_iter().max()?;
            Some(ms(last, *born))
        })
        .collect();
    let wanted: std::collections::HashSet<&str> = names.iter().map(String::as_str).collect();
    let packets = logs
        .iter()
        .map(|l| {
            let mut sizes: std::collections::BTreeMap<u64, usize> = std::collections::BTreeMap::new();
            for e in l.iter().filter(|e| e.kind == "tx" && wanted.contains(e.id.to_string().as_str())) {
                *sizes.entry(e.at_us).or_default() += 1;
            }
            sizes.into_values().collect()
        })
        .collect();
    RunResult { arrivals, spread, block_reach, packets }
}

/// The `q` quantile of `v` (nearest rank), NaN if empty.
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    s[rank - 1]
}

/// Seed 001's histogram: `BUCKETS` buckets of `width` ms from 0; counts.
pub fn histogram(delays: &[f64], width: f64) -> Vec<u64> {
    let mut b = vec![0u64; BUCKETS];
    for d in delays {
        let i = ((d / width.max(1e-9)) as usize).min(BUCKETS - 1);
        b[i] += 1;
    }
    b
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let exe = ctx.opts.worker.clone().ok_or_else(|| {
        StudyError::Wrong("propagation runs node processes: it needs the scalechain binary".into())
    })?;
    let main = ctx.opts.nodes.unwrap_or(if ctx.opts.quick { 3 } else { 8 }).max(2);
    let mut sizes: Vec<usize> = if ctx.opts.quick { vec![2, 3] } else { vec![2, 4, 8, 16] };
    if !sizes.contains(&main) {
        sizes.push(main);
        sizes.sort_unstable();
    }
    let runs = if ctx.opts.quick { 1 } else { ctx.opts.runs.unwrap_or(3).max(1) };
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let txs = workload(&p);
    // The scaling series on loopback, then the main network across seed 001's regions: the
    // 1,001 in one request (ours) and one request each (seed 001's); in the full run also the
    // sustained offer (one run: a minute of load and its funding).
    let wan = Placement::Wan(Regions::seed_001());
    let mut plan: Vec<(Placement, usize, Submission, usize)> =
        sizes.iter().map(|n| (Placement::Loopback, *n, Submission::Batch, runs)).collect();
    plan.push((wan.clone(), main, Submission::Batch, runs));
    plan.push((wan.clone(), main, Submission::OneByOne, runs));
    if !ctx.opts.quick {
        let (tps, secs) = SUSTAINED;
        plan.push((wan, main, Submission::Sustained { tps, secs }, 1));
    }
    // And on emulated hosts, where this process may make network namespaces.
    if netns::is_root() {
        plan.push((Placement::Namespaces(Some("1gbit".into())), main, Submission::Batch, runs));
        plan.push((Placement::HostsWan(Regions::seed_001(), "1gbit".into()), main, Submission::Batch, runs));
    } else {
        ctx.progress.println("propagation: not root, so no run on emulated hosts (network namespaces)");
    }
    ctx.start(plan.iter().map(|e| e.3 as u64).sum(), "propagation");
    let mut table = Table::new(COLUMNS);
    for (place, n, submission, runs) in &plan {
        let (n, runs) = (*n, *runs);
        let mode = submission.name();
        let row =
            |t: &mut Table, series: &str, node: &str, x: f64, count: usize, q: [f64; 4], pk: [f64; 3]| {
                let f = |v: f64| if v.is_nan() { String::new() } else { format!("{v:.1}") };
                let g = |v: f64| if v.is_nan() { String::new() } else { format!("{v:.0}") };
                t.push(vec![
                    series.into(),
                    place.name().into(),
                    n.to_string(),
                    node.into(),
                    f(x),
                    count.to_string(),
                    f(q[0]),
                    f(q[1]),
                    f(q[2]),
                    f(q[3]),
                    runs.to_string(),
                    mode.clone(),
                    g(pk[0]),
                    g(pk[1]),
                    g(pk[2]),
                    ctx.machine.build.into(),
                    ctx.machine.commit.into(),
                    ctx.opts.seed.to_string(),
                ]);
            };
        let none = [f64::NAN; 3];
        let mut results = Vec::with_capacity(runs);
        for r in 0..runs {
            ctx.progress.set_message(format!(
                "{} {n} nodes, {}, run {}/{runs}",
                place.name(),
                submission.label(),
                r + 1
            ));
            let raw = run_raw_with(&exe, n, &txs, p.hash, place, &RunOpts::propagation(), *submission)?;
            results.push(summarise(&raw.logs, &raw.ids, raw.t0, &raw.mined()));
            ctx.progress.inc(1);
        }
        let med = |f: &dyn Fn(&RunResult) -> f64| median(results.iter().map(f).collect());
        let q4 = |f: &dyn Fn(&RunResult) -> &[f64]| {
            [
                med(&|r| quantile(f(r), 0.5)),
                med(&|r| quantile(f(r), 0.9)),
                med(&|r| quantile(f(r), 0.99)),
                med(&|r| quantile(f(r), 1.0)),
            ]
        };
        // The workload's size: the 1,001, or the sustained offer's accepted transactions.
        let sent = results.iter().map(|r| r.arrivals.first().map_or(0, Vec::len)).min().unwrap_or(0);
        let sent = if *submission == Submission::Batch || *submission == Submission::OneByOne {
            txs.len()
        } else {
            sent
        };
        row(&mut table, "tx-propagation", "", f64::NAN, sent, q4(&|r| &r.spread), none);
        let la = med(&|r| r.local_accept_ms());
        row(&mut table, "local-accept", "0", f64::NAN, sent, [f64::NAN, f64::NAN, f64::NAN, la], none);
        let blocks = results.iter().map(|r| r.block_reach.len()).min().unwrap_or(0);
        row(&mut table, "block-propagation", "", f64::NAN, blocks, q4(&|r| &r.block_reach), none);
        if n != main {
            continue;
        }
        let last = results.last().cloned().unwrap_or_default();
        for (i, a) in last.arrivals.iter().enumerate() {
            let of = |r: &RunResult| -> Vec<f64> { r.arrivals.get(i).cloned().unwrap_or_default() };
            let q = [
                med(&|r| quantile(&of(r), 0.5)),
                med(&|r| quantile(&of(r), 0.9)),
                med(&|r| quantile(&of(r), 0.99)),
                med(&|r| quantile(&of(r), 1.0)),
            ];
            let packets = |r: &RunResult| -> Vec<f64> {
                r.packets.get(i).map(|v| v.iter().map(|&k| k as f64).collect()).unwrap_or_default()
            };
            let pk = [
                med(&|r| packets(r).len() as f64),
                med(&|r| quantile(&packets(r), 0.5)),
                med(&|r| quantile(&packets(r), 1.0)),
            ];
            row(&mut table, "tx-arrival", &i.to_string(), f64::NAN, a.len(), q, pk);
        }
        // Seed 001's histograms of the last run: 50 buckets of one width for every node.
        let longest = last.arrivals.iter().flatten().copied().fold(0.0, f64::max);
        let width = (longest / BUCKETS as f64).max(0.1);
        for (i, a) in last.arrivals.iter().enumerate() {
            for (k, c) in histogram(a, width).into_iter().enumerate() {
                row(
                    &mut table,
                    "histogram",
                    &i.to_string(),
                    k as f64 * width,
                    c as usize,
                    [f64::NAN; 4],
                    none,
                );
            }
        }
    }
    ctx.finish(Experiment::Propagation, &table, charts, section)
}

/// The value of `column` in row `r` of `t` (empty if absent).
fn cell<'a>(t: &Table, r: &'a [String], column: &str) -> &'a str {
    t.columns.iter().position(|c| c == column).and_then(|i| r.get(i)).map_or("", String::as_str)
}

/// The region of node `i` across seed 001's sites (round robin, node 0 in Canada).
fn region(i: usize) -> String {
    let r = Regions::seed_001();
    r.names[i % r.names.len()].clone()
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let histograms = |placement: &str, mode: &str| -> Vec<Series> {
        let mut hist = Vec::new();
        for node in t.distinct("node") {
            let points: Vec<(f64, f64)> = t
                .select("series", "histogram")
                .filter(|r| r[1] == placement && r[3] == node && cell(t, r, "mode") == mode)
                .filter_map(|r| Some((t.num(r, "x_ms")?, t.num(r, "count")?)))
                .collect();
            if !points.is_empty() {
                let label =
                    if node == "0" { "node 0 (submitted to)".to_string() } else { format!("node {node}") };
                hist.push(Series::line(label, points));
            }
        }
        hist
    };
    let by_nodes = |series: &str, col: &str| -> Vec<(f64, f64)> {
        t.select("series", series)
            .filter(|r| r[1] == "loopback")
            .filter_map(|r| Some((t.num(r, "nodes")?, t.num(r, col)?)))
            .collect()
    };
    let scaling = vec![
        Series::line("tx to every node, p50", by_nodes("tx-propagation", "p50_ms")),
        Series::line("tx to every node, p99", by_nodes("tx-propagation", "p99_ms")),
        Series::line("block to every node, p50", by_nodes("block-propagation", "p50_ms")),
        Series::line("block to every node, max", by_nodes("block-propagation", "max_ms")),
        Series::line("local acceptance of the 1,001", by_nodes("local-accept", "max_ms")),
        Series::seed(
            "seed 001: its admission's run time summed ≈ 400 ms (not wall clock)",
            vec![(2.0, SEED_LOCAL_ACCEPT_MS)],
        ),
    ];
    let panel = |title: String, series: Vec<Series>| Chart {
        title,
        x_label: "delay after the first submission (ms, bucket start)".into(),
        y_label: "transactions arrived in the bucket".into(),
        log_x: false,
        log_y: false,
        x_names: Vec::new(),
        series,
    };
    let mut charts = Vec::new();
    let batch = Submission::Batch.name();
    let one = Submission::OneByOne.name();
    let mut modes: Vec<String> = t.distinct("mode");
    modes.sort_by_key(|m| (*m != one, *m != batch));
    // Across seed 001's regions, each way of submitting first (seed 001's first), then the
    // other placements.
    for mode in &modes {
        let wan = histograms("wan-seed001", mode);
        if !wan.is_empty() {
            charts.push(panel(
                format!(
                    "Arrivals at each node across seed 001's regions (Canada, UK, India; emulated delays), {} \
                     (seed 001 Tables 1–2: 50 buckets of about 1 s, all arrived after 50–60 s)",
                    Submission::label_of(mode)
                ),
                wan,
            ));
        }
    }
    charts.extend(wan_against_seed(t));
    for (placement, title) in [
        ("loopback", "Arrivals at each node, loopback, batch (ours)"),
        (
            "namespaces",
            "The same on emulated hosts (a network namespace per node, 1 Gbit/s links), batch (ours)",
        ),
        ("namespaces-wan-seed001", "Across seed 001's regions, each node on an emulated host, batch (ours)"),
    ] {
        let h = histograms(placement, &batch);
        if !h.is_empty() {
            charts.push(panel(title.into(), h));
        }
    }
    charts.push(Chart {
        title: "Propagation against network size (loopback, batch (ours))".into(),
        x_label: "nodes".into(),
        y_label: "time (ms)".into(),
        log_x: true,
        log_y: true,
        x_names: Vec::new(),
        series: scaling,
    });
    charts
}

/// The per-node arrival rows across seed 001's regions, and the table's submission modes,
/// seed 001's first; `None` without such rows.
fn wan_arrivals(t: &Table) -> Option<(Vec<&Vec<String>>, Vec<String>)> {
    let rows: Vec<&Vec<String>> =
        t.select("series", "tx-arrival").filter(|r| r[1] == "wan-seed001").collect();
    if rows.is_empty() {
        return None;
    }
    let mut modes: Vec<String> = t.distinct("mode");
    modes.sort_by_key(|m| (*m != Submission::OneByOne.name(), *m != Submission::Batch.name()));
    Some((rows, modes))
}

/// The main network across seed 001's regions beside the seed, per node: the time until the
/// last of the workload arrived, and the packets it arrived in, each way of submitting; the
/// seed's 50–60 s and 20–60 at its UK and India nodes.
fn wan_against_seed(t: &Table) -> Vec<Chart> {
    let Some((rows, modes)) = wan_arrivals(t) else { return Vec::new() };
    let per_node = |mode: &str, col: &str| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| cell(t, r, "mode") == mode)
            .filter_map(|r| Some((t.num(r, "node")?, t.num(r, col)?)))
            .collect()
    };
    // The seed's nodes away from Canada: ours in the UK and India regions.
    let remote: std::collections::BTreeSet<usize> = rows
        .iter()
        .filter_map(|r| r[3].parse::<usize>().ok())
        .filter(|&i| !i.is_multiple_of(Regions::seed_001().names.len()))
        .collect();
    let at = |y: f64| remote.iter().map(|&x| (x as f64, y)).collect::<Vec<_>>();
    let mut last = Vec::new();
    let mut packets = Vec::new();
    for mode in &modes {
        let label = Submission::label_of(mode);
        last.push(Series::line(format!("{label}: last arrival"), per_node(mode, "max_ms")));
        packets.push(Series::line(format!("{label}: median packet"), per_node(mode, "packet_p50")));
        packets.push(Series::line(format!("{label}: largest packet"), per_node(mode, "packet_max")));
    }
    last.push(Series::seed("seed 001: 50 s (UK, India)", at(SEED_REMOTE_MS.0)));
    last.push(Series::seed("seed 001: 60 s (UK, India)", at(SEED_REMOTE_MS.1)));
    packets.push(Series::seed("seed 001: \"packets\" of 20 (UK, India)", at(SEED_PACKETS.0)));
    packets.push(Series::seed("seed 001: … to about 60 (UK, India)", at(SEED_PACKETS.1)));
    vec![
        Chart {
            title:
                "Time until the last transaction arrived, per node across seed 001's regions, beside seed \
                    001's 50–60 s"
                    .into(),
            x_label: "node (0 submitted to; regions round robin: Canada, UK, India)".into(),
            y_label: "time after the first submission (ms)".into(),
            log_x: false,
            log_y: true,
            x_names: Vec::new(),
            series: last,
        },
        Chart {
            title:
                "Packets: transactions a node logged at one instant, beside seed 001's \"packets\" of 20 to \
                    about 60"
                    .into(),
            x_label: "node (0 submitted to; regions round robin: Canada, UK, India)".into(),
            y_label: "transactions per packet".into(),
            log_x: false,
            log_y: true,
            x_names: Vec::new(),
            series: packets,
        },
    ]
}

/// The target: with 8 nodes on loopback, the last of the 1,001 at the farthest node within
/// 500 ms of the first submission.
pub const LOOPBACK_TARGET: (usize, Target) = (8, Target::AtMost(500.0));

/// The target's line: the latest arrival over the nodes of the loopback run of
/// [`LOOPBACK_TARGET`]'s size, marked met or missed (nothing if the run has no such rows).
fn target_line(t: &Table) -> String {
    let (nodes, target) = LOOPBACK_TARGET;
    let last = t
        .select("series", "tx-arrival")
        .filter(|r| r[1] == "loopback" && t.num(r, "nodes") == Some(nodes as f64))
        .filter_map(|r| t.num(r, "max_ms"))
        .fold(f64::NAN, f64::max);
    if last.is_nan() {
        return String::new();
    }
    format!(
        "**Target** ({nodes} nodes on loopback, the last of the 1,001 at the farthest node, from the first \
         submission, {} ms): {}.\n\n",
        target.text(),
        target.cell(&format!("{last:.1} ms"), last)
    )
}

fn section(t: &Table) -> String {
    let quotes: Vec<String> = SEED_QUOTES.iter().map(|q| format!("> {q}\n")).collect();
    let mut s = format!(
        "Seed 001 (§3.1), as printed:\n\n{}\n\
         Its workload: `tx0` (1 input, {FAN_OUT} outputs) and the {FAN_OUT} transactions spending it, sent \
         to its node in Canada by one `sendBulkRawTransactions` call that ran `sendOneRawTransaction` \
         once per transaction (its Table 4: 1,001 calls), so its node admitted and announced them one by \
         one; the arrival times are when each reached the pools in London and Mumbai. Here the same \
         workload goes to peer 0 of a network of node processes on this machine, every node's arrival log \
         giving the times, in two modes (`mode`):\n\n\
         - `{}` — **{}**: one `POST /txs` holding the 1,001; the node admits them as one batch and relays \
           what it admitted as one gossip message, so each node takes them at one instant or a few \
           (each histogram one bar or a few);\n\
         - `{}` — **{}**: one `POST /txs` per transaction, each sent once the one before was answered, as \
           seed 001's loop did; each is relayed as the node relays a single admitted transaction \
           (the node's relay is not changed for the experiment).\n\n\
         Both run across seed 001's regions (`wan-seed001`: Canada, UK and India round robin, node 0 in \
         Canada, every pair linked through a relay delaying each direction by 100, 175 or 60 ms one way), \
         {} nodes in this run. The full run adds `{}`: {} tx/s to peer 0 for {} s, one transaction per \
         request (open loop, requests every 10 ms), spending premine coins split and confirmed \
         beforehand — the rate seed 001 concluded its network could not propagate. Its `count` is the \
         transactions accepted; a transaction a block confirmed before it reached a node's pool is never \
         logged there, so a node's `count` may be lower.\n\n\
         Columns: `tx-propagation`: per transaction, from its arrival at peer 0 to its arrival at the last \
         node (quantiles over the workload, median over runs); `local-accept`: from the first submission \
         to the last admitted at peer 0, wall clock, one HTTP request per transaction. Seed 001's about \
         {SEED_LOCAL_ACCEPT_MS:.0} ms (397 ms in its latest run) is another quantity, the run time of its \
         admission routine summed over the 1,001; `profile` measures that like for like, as the summed \
         `mempool.offer`. `block-propagation`: per block mined during the run, from the miner to the last node; \
         `tx-arrival`: per node, the delays after the first submission (`max_ms` against seed 001's 50–60 \
         s), and the packets they came in: `packets` is how many instants the node logged them at (one \
         admitted batch each), `packet_p50` and `packet_max` the transactions in the median and the \
         largest (against seed 001's \"packets\" of 20 to about 60, which it read off 1 s buckets). The \
         loopback scaling series and the emulated hosts (`namespaces`, `namespaces-wan-seed001`) run the \
         batch only. The target for 8 nodes on loopback: the farthest node has the last of the 1,001 \
         within 500 ms.\n\n",
        quotes.concat(),
        Submission::Batch.name(),
        Submission::Batch.label(),
        Submission::OneByOne.name(),
        Submission::OneByOne.label(),
        t.select("series", "tx-propagation")
            .find(|r| r[1] == "wan-seed001")
            .map_or_else(|| "no".to_string(), |r| r[2].clone()),
        Submission::Sustained { tps: SUSTAINED.0, secs: SUSTAINED.1 }.name(),
        SUSTAINED.0,
        SUSTAINED.1,
    );
    s.push_str(&target_line(t));
    s.push_str(&against_seed(t));
    let mut shown = Table::new(&t.columns.iter().map(String::as_str).collect::<Vec<_>>());
    shown.rows = t.rows.iter().filter(|r| r[0] != "histogram").cloned().collect();
    s.push_str(&shown.markdown(&[
        "series",
        "placement",
        "mode",
        "nodes",
        "node",
        "count",
        "p50_ms",
        "p90_ms",
        "p99_ms",
        "max_ms",
        "packets",
        "packet_p50",
        "packet_max",
        "runs",
    ]));
    s.push_str(
        "\nThe histograms (the figure's first panels) are the `histogram` rows of the CSV: per node, \
         the transactions that arrived in each of 50 buckets of one width (the run's longest delay / 50; \
         seed 001's were about 1 s).\n",
    );
    s
}

/// Per node across seed 001's regions: the last arrival and the packets of each mode, beside
/// the seed's numbers at its London and Mumbai nodes.
fn against_seed(t: &Table) -> String {
    let Some((rows, modes)) = wan_arrivals(t) else { return String::new() };
    let modes: Vec<String> =
        modes.into_iter().filter(|m| rows.iter().any(|r| cell(t, r, "mode") == m.as_str())).collect();
    let mut s = String::from("| node | region |");
    for m in &modes {
        s.push_str(&format!(
            " {}: last arrival, ms (of arrived) | arrived in packets (median / largest) |",
            Submission::label_of(m)
        ));
    }
    s.push_str(" seed 001 |\n|---|---|");
    s.push_str(&"---|---|".repeat(modes.len()));
    s.push_str("---|\n");
    for node in t.distinct("node").iter().filter(|n| !n.is_empty()) {
        let Ok(i) = node.parse::<usize>() else { continue };
        let mut line = format!("| {node} | {} |", region(i));
        for m in &modes {
            let r = rows.iter().find(|r| r[3] == *node && cell(t, r, "mode") == m.as_str());
            let v = |c: &str| r.map_or("", |r| cell(t, r, c));
            line.push_str(&format!(
                " {} of {} | {} in {} ({} / {}) |",
                v("max_ms"),
                v("count"),
                v("count"),
                v("packets"),
                v("packet_p50"),
                v("packet_max")
            ));
        }
        let seed = if i == 0 {
            "its admission's run time summed to about 400 ms (397 ms): see `profile`".to_string()
        } else if i.is_multiple_of(Regions::seed_001().names.len()) {
            "— (no other node in Canada)".to_string()
        } else {
            "all arrived after 50–60 s, in \"packets\" of 20 to about 60".to_string()
        };
        s.push_str(&format!("{line} {seed} |\n"));
    }
    s.push_str(
        "\nSeed 001's column is the same at every node away from Canada: it reports its London and \
         Mumbai machines together (\"For both machines\"), not per node; ours are emulated regions on \
         one machine's two cores, so the delays are the relays' and the CPU is shared by every node.\n\n",
    );
    s
}

/// Every call path of `client`'s profile, page by page (at most ten pages of 1,000: the node
/// keeps a bounded number of paths), and the seconds it has recorded.
pub(crate) async fn read_paths(client: &Client) -> Result<(Vec<ProfilePath>, f64), StudyError> {
    const PAGE: usize = 1_000;
    let mut paths = Vec::new();
    loop {
        let after = paths.last().map(|p: &ProfilePath| p.path.clone());
        let page = client
            .profile(after.as_deref(), Some(PAGE))
            .await
            .map_err(|e| StudyError::Wrong(format!("node API: {e}")))?;
        paths.extend(page.paths);
        if !page.more || paths.len() >= 10 * PAGE {
            return Ok((paths, page.recorded_s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrival(id: &Hash, kind: &str, at_us: u64) -> ArrivalJson {
        ArrivalJson {
            seq: 0,
            kind: kind.into(),
            id: *id,
            height: None,
            lock_wait_us: None,
            lock_held_us: None,
            at_us,
            source: "gossip".into(),
            peer: None,
        }
    }

    #[test]
    fn the_workload_is_tx0_and_its_spends_and_valid_on_a_devnet_chain() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let txs = workload(&p);
        assert_eq!(txs.len(), FAN_OUT + 1);
        assert_eq!(txs[0].outputs.len(), FAN_OUT);
        let id0 = txs[0].txid(p.hash);
        assert!(txs[1..]
            .iter()
            .enumerate()
            .all(|(i, t)| t.inputs[0].prev == OutPoint { txid: id0, index: i as u32 }));
        // The chain accepts them in one block once the premine is spendable.
        let mut chain = scalechain_chain::Chain::open_or_init(
            scalechain_chain::MemStore::new(),
            &p,
            scalechain_consensus::Apps::none(),
            scalechain_consensus::VerifyConfig::parallel([1; 32]),
        )
        .unwrap();
        let b1 =
            scalechain_workload::fixed::block_paying(&p, &chain.tip_header(), &[], chain.next_target(), 0);
        chain.accept_block(b1, u64::MAX / 2).unwrap();
        let fees: u64 = 100_000 + FAN_OUT as u64 * 1_000;
        let b2 = scalechain_workload::fixed::block_paying(
            &p,
            &chain.tip_header(),
            &txs,
            chain.next_target(),
            fees,
        );
        assert!(matches!(
            chain.accept_block(b2, u64::MAX / 2).unwrap(),
            scalechain_chain::Accepted::Connected(_)
        ));
    }

    #[test]
    fn summaries_measure_from_the_submit_node_and_the_miner() {
        let (a, b) = (Hash([1; 32]), Hash([2; 32]));
        let block = Hash([9; 32]);
        let logs = vec![
            vec![arrival(&a, "tx", 1_000), arrival(&b, "tx", 2_000), arrival(&block, "block", 9_500)],
            vec![arrival(&a, "tx", 4_000), arrival(&b, "tx", 3_000), arrival(&block, "block", 9_000)],
        ];
        let r = summarise(&logs, &[a, b], 0, &[(block.to_string(), 9_000)]);
        assert_eq!(r.arrivals, vec![vec![1.0, 2.0], vec![4.0, 3.0]]);
        assert_eq!(r.spread, vec![3.0, 1.0]);
        assert_eq!(r.block_reach, vec![0.5]);
        assert_eq!(r.local_accept_ms(), 2.0);
        // Each node took the two at separate instants: two packets of one.
        assert_eq!(r.packets, vec![vec![1, 1], vec![1, 1]]);
        // A transaction missing at a node has no spread.
        let partial = summarise(&logs[..1].iter().cloned().chain([vec![]]).collect::<Vec<_>>(), &[a], 0, &[]);
        assert!(partial.spread.is_empty());
    }

    #[test]
    fn packets_are_the_transactions_a_node_logged_at_one_instant() {
        let ids: Vec<Hash> = (0..5u8).map(|i| Hash([i; 32])).collect();
        let other = Hash([7; 32]);
        let log = vec![
            arrival(&ids[0], "tx", 100),
            arrival(&ids[1], "tx", 200),
            arrival(&other, "tx", 200),
            arrival(&ids[2], "tx", 200),
            arrival(&ids[3], "tx", 200),
            arrival(&ids[4], "tx", 300),
        ];
        let r = summarise(&[log], &ids, 0, &[]);
        // Another transaction logged at the same instant is not the workload's.
        assert_eq!(r.packets, vec![vec![1, 3, 1]]);
    }

    /// A table as `run` writes it: across the regions, 3 nodes, batch and one by one.
    fn wan_table() -> Table {
        let mut t = Table::new(COLUMNS);
        for (mode, last, packets, p50, max) in
            [("batch-ours", "400.0", "1", "1001", "1001"), ("one-by-one-seed001", "2500.0", "700", "1", "4")]
        {
            for node in ["0", "1", "2"] {
                let mut r = vec![String::new(); COLUMNS.len()];
                for (c, v) in [
                    ("series", "tx-arrival"),
                    ("placement", "wan-seed001"),
                    ("nodes", "3"),
                    ("node", node),
                    ("count", "1001"),
                    ("max_ms", last),
                    ("runs", "1"),
                    ("mode", mode),
                    ("packets", packets),
                    ("packet_p50", p50),
                    ("packet_max", max),
                ] {
                    r[COLUMNS.iter().position(|x| *x == c).unwrap()] = v.to_string();
                }
                t.push(r.clone());
                r[0] = "histogram".into();
                r[COLUMNS.iter().position(|x| *x == "x_ms").unwrap()] = "0.0".into();
                t.push(r);
            }
        }
        t
    }

    #[test]
    fn the_report_sets_both_modes_beside_the_seeds_printed_numbers() {
        let t = wan_table();
        let s = section(&t);
        for q in SEED_QUOTES {
            assert!(s.contains(q), "{q}: {s}");
        }
        assert!(s.contains("batch (ours)") && s.contains("one by one (seed 001's)"), "{s}");
        // Per node: ours in each mode, and the seed's 50–60 s and packets beside the UK and India nodes.
        assert!(s.contains("| 1 | UK | 2500.0 of 1001 | 1001 in 700 (1 / 4) | 400.0 of 1001 | 1001 in 1 (1001 / 1001) | all arrived after 50–60 s, in \"packets\" of 20 to about 60 |"), "{s}");
        assert!(s.contains("| 0 | Canada |"), "{s}");
        let c = charts(&t);
        assert!(c[0].title.contains("one by one (seed 001's)") && c[1].title.contains("batch (ours)"));
        let last = &c[2];
        let seed: Vec<&Series> = last.series.iter().filter(|x| x.points_only).collect();
        assert_eq!(seed.len(), 2);
        assert_eq!(seed[0].points, vec![(1.0, 50_000.0), (2.0, 50_000.0)], "UK and India only");
        assert_eq!(seed[1].points, vec![(1.0, 60_000.0), (2.0, 60_000.0)]);
        let ours = last.series.iter().find(|x| x.label == "one by one (seed 001's): last arrival").unwrap();
        assert_eq!(ours.points, vec![(0.0, 2500.0), (1.0, 2500.0), (2.0, 2500.0)]);
        let packets = &c[3];
        assert!(packets.series.iter().any(|x| x.points_only && x.points.contains(&(2.0, 20.0))));
        assert!(packets.series.iter().any(|x| x.points_only && x.points.contains(&(2.0, 60.0))));
    }

    #[test]
    fn the_loopback_target_is_marked_from_the_latest_arrival_at_eight_nodes() {
        let arrival = |nodes: &str, node: &str, max: &str| -> Vec<String> {
            let mut r = vec![String::new(); COLUMNS.len()];
            r[0] = "tx-arrival".into();
            r[1] = "loopback".into();
            r[2] = nodes.into();
            r[3] = node.into();
            r[COLUMNS.iter().position(|c| *c == "max_ms").unwrap()] = max.into();
            r
        };
        let mut t = Table::new(COLUMNS);
        assert_eq!(target_line(&t), "", "no loopback run of 8 nodes, no target line");
        t.rows = vec![arrival("8", "0", "19.9"), arrival("8", "1", "113.8"), arrival("16", "1", "900")];
        let line = target_line(&t);
        assert!(line.contains("113.8 ms (met)") && line.contains("≤ 500 ms"), "{line}");
        t.rows.push(arrival("8", "2", "512.0"));
        assert!(target_line(&t).contains("512.0 ms (**missed**)"), "{}", target_line(&t));
    }

    #[test]
    fn the_modes_have_names_and_labels() {
        assert_eq!(Submission::Batch.name(), "batch-ours");
        assert_eq!(Submission::label_of("one-by-one-seed001"), "one by one (seed 001's)");
        assert_eq!(Submission::label_of("batch-ours"), "batch (ours)");
        let (tps, secs) = SUSTAINED;
        assert_eq!(Submission::Sustained { tps, secs }.name(), "sustained-1000tps-60s");
    }

    #[test]
    fn quantiles_and_histograms() {
        let v = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!((quantile(&v, 0.5), quantile(&v, 0.9), quantile(&v, 1.0)), (3.0, 5.0, 5.0));
        assert!(quantile(&[], 0.5).is_nan());
        let h = histogram(&[0.0, 0.5, 1.0, 49.9, 1_000.0], 1.0);
        assert_eq!((h[0], h[1], h[49], h.iter().sum::<u64>()), (2, 1, 2, 5));
    }
}
