//! `scalechain devnet`: a bootstrap node, N peers and M miners as separate processes on
//! 127.0.0.1 (OS-chosen ports), a transaction load offered at a fixed rate through the peers'
//! APIs, live progress, and a summary of what the network confirmed.
//!
//! A composition: the launcher (`scalechain_client::launcher`) starts and stops the nodes; the
//! load generator (`scalechain_study::load`) prepares the load (the premine split into one
//! output per transaction — in a tree of splits of at most 1,000 outputs, level by level, in
//! requests that fit the API's limits, when the load is large — every transaction signed
//! before the clock starts), offers it
//! (batches every 100 ms, round-robin over the peers, open loop), watches the blocks and waits
//! for convergence; its report module computes and prints the summary. A transaction counts
//! as sent when an API accepted it, as confirmed when it is in a block of the converged main
//! chain; its latency runs from acceptance to the moment the block holding it was first seen.
//! At the end every accepted transaction is accounted for: confirmed, still pooled (on which
//! nodes), removed with the reason a node logged (`GET /mempool/removed`), or lost; devnet
//! exits 1 if any was lost. Ctrl-C stops everything (exit code 130).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use scalechain_client::launcher::netns::{self, Namespaces};
use scalechain_client::launcher::{LaunchError, Launcher, NetworkPlan, Role};
use scalechain_client::{interrupt, Client};
use scalechain_consensus::genesis_block;
use scalechain_study::load::account::account;
use scalechain_study::load::converge::{converge, wait_connected, wait_height};
use scalechain_study::load::fund::fund;
use scalechain_study::load::prepare::{premine_funds, prepare, Prepared};
use scalechain_study::load::report::{self, cpu, memory, NodeEnd, Summary};
use scalechain_study::load::submit::{offer, Counters, OfferConfig};
use scalechain_study::load::watch::{confirmations, Watcher};
use scalechain_study::load::{Clock, FixedRate, LoadError, SystemClock};
use scalechain_types::{Hash, HashKind};

use crate::Fail;

/// Arguments of `scalechain devnet`.
#[derive(Args)]
pub struct DevnetArgs {
    /// Peer processes (validate, relay, serve the API; the load goes to them).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Miner processes.
    #[arg(long, default_value_t = 1)]
    miners: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 30)]
    duration: u64,
    /// Transactions offered per second.
    #[arg(long, default_value_t = 1000)]
    tps: u64,
    /// Keep the nodes' data here (default: a temporary directory, removed at the end).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
    /// Seconds the nodes get to converge after the load stops.
    #[arg(long, default_value_t = 60)]
    converge_timeout: u64,
    /// Mining threads per miner.
    #[arg(long, default_value_t = 1)]
    miner_threads: usize,
    /// Seconds between samples of each node's resident memory (from the start of the load to
    /// convergence).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    memory_every: u64,
    /// Write the memory samples here as `rss.csv` and `rss.svg` (a soak run's curve).
    #[arg(long)]
    memory_out: Option<PathBuf>,
    /// A node configuration file (TOML, as `node --config`) every node starts with, e.g.
    /// `[profile]` `enabled = true` to run the load with the profiler recording.
    #[arg(long)]
    node_config: Option<PathBuf>,
    /// Run each node in a network namespace of its own (an emulated host: its own IP stack
    /// and address on a bridge), removed at the end. Needs root.
    #[arg(long)]
    netns: bool,
    /// With --netns, limit each node's link to this rate (`tc` syntax, e.g. `100mbit`).
    #[arg(long, requires = "netns")]
    netns_rate: Option<String>,
}

/// How often the waits look.
const POLL: Duration = Duration::from_millis(100);

/// A launcher error as an exit: Ctrl-C 130, anything else 2 (also `bench`'s).
pub(crate) fn launch_fail(e: LaunchError) -> Fail {
    match e {
        LaunchError::Interrupted => interrupted(),
        e => Fail(2, e.to_string()),
    }
}

/// A load error as an exit: Ctrl-C 130, anything else 1 (also `bench`'s).
pub(crate) fn load_fail(e: LoadError) -> Fail {
    match e {
        LoadError::Stopped => interrupted(),
        e => Fail(1, e.to_string()),
    }
}

/// Ctrl-C: the exit code of a process ended by SIGINT.
fn interrupted() -> Fail {
    Fail(130, "interrupted".into())
}

/// Runs `scalechain devnet`.
pub fn devnet(a: DevnetArgs) -> Result<(), Fail> {
    if a.nodes == 0 || a.miners == 0 {
        return Err(Fail(2, "a devnet needs at least one peer and one miner".into()));
    }
    let rt = tokio::runtime::Runtime::new().map_err(|e| Fail(2, format!("starting the runtime: {e}")))?;
    let exe = std::env::current_exe().map_err(|e| Fail(2, format!("locating this program: {e}")))?;
    let t_start = Instant::now();
    let mut net = match &a.data_dir {
        Some(d) => Launcher::with_base(&exe, d),
        None => Launcher::new(&exe),
    }
    .map_err(launch_fail)?;
    // The launcher holds the namespaces too: they go when it has stopped the nodes.
    let hosts = if a.netns {
        let mut names = vec!["bootstrap".to_string()];
        names.extend((0..a.nodes).map(|i| format!("peer{i}")));
        names.extend((0..a.miners).map(|i| format!("miner{i}")));
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let ns = Namespaces::create(&names, a.netns_rate.as_deref())
            .map_err(|e| Fail(2, format!("--netns: {e}")))?;
        eprintln!(
            "devnet: {} hosts in network namespaces {}{}-{}-*",
            names.len(),
            netns::PREFIX,
            std::process::id(),
            ns.tag()
        );
        Some(Arc::new(ns))
    } else {
        None
    };
    if let Some(ns) = &hosts {
        net = net.placement(ns.clone());
    }
    // The node configuration, and the chain it makes (what the load signs for).
    let (config, node_cfg) = match &a.node_config {
        None => (None, scalechain_node::NodeConfig::default()),
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| Fail(2, format!("--node-config {}: {e}", path.display())))?;
            let cfg = scalechain_node::NodeConfig::from_toml(&text)
                .map_err(|e| Fail(2, format!("--node-config {}: {e}", path.display())))?;
            (Some(text), cfg)
        }
    };
    let plan = NetworkPlan { peers: a.nodes, miners: a.miners, miner_threads: a.miner_threads, config };
    net.start_network(&plan).map_err(launch_fail)?;
    eprintln!(
        "devnet: {} peers + {} miners up in {:.1}s ({})",
        a.nodes,
        a.miners,
        t_start.elapsed().as_secs_f64(),
        net.base_dir().display()
    );
    let (params, sig) = (scalechain_node::params_of(&node_cfg), node_cfg.chain.sig);
    let chain_id = genesis_block(&params).hash(params.hash);
    let total = usize::try_from(a.tps.saturating_mul(a.duration))
        .map_err(|_| Fail(2, "--tps times --duration is too large".into()))?;
    let t_prep = Instant::now();
    let prepared = prepare(params.hash, &chain_id, &premine_funds(&params, sig), total);
    eprintln!(
        "devnet: {} load transactions and {} funding transactions in {} levels signed in {:.1}s",
        prepared.load.len(),
        prepared.funding_txs(),
        prepared.funding.len(),
        t_prep.elapsed().as_secs_f64()
    );
    // Peers and miners, in start order: the peers first.
    let nodes: Vec<(String, Client)> = net.clients(|r| r != Role::Bootstrap);
    let pids = net.pids();
    let summary = rt.block_on(drive(&a, &nodes, prepared, &pids, params.hash));
    // The nodes stop (and a temporary directory goes) before the verdict; a directory that
    // cannot be removed does not change it.
    drop(rt);
    if let Err(e) = net.stop() {
        eprintln!("warning: {e}");
    }
    let summary = summary?;
    eprint!("{}", summary.text());
    if let Some(dir) = &a.memory_out {
        let title = format!("Resident memory, {} tx/s offered for {} s", a.tps, a.duration);
        memory::write(dir, &summary.memory, &title)
            .map_err(|e| Fail(1, format!("writing the memory samples: {e}")))?;
        eprintln!("devnet: memory samples in {}", dir.join("rss.csv").display());
    }
    if a.json {
        println!("{}", summary.json());
    }
    if summary.accounting.lost > 0 {
        return Err(Fail(
            1,
            format!(
                "{} accepted transactions were lost: not confirmed, not pooled, not logged as removed by any node",
                summary.accounting.lost
            ),
        ));
    }
    if summary.converged {
        Ok(())
    } else {
        Err(Fail(1, "the nodes did not converge".into()))
    }
}

/// Funds the load, offers it, waits for convergence and measures.
async fn drive(
    a: &DevnetArgs,
    nodes: &[(String, Client)],
    prepared: Prepared,
    pids: &[(String, u32)],
    kind: HashKind,
) -> Result<Summary, Fail> {
    let Prepared { funding, load } = prepared;
    let clock = SystemClock::start();
    let stop = interrupt::flag();
    let peers: Vec<Client> = nodes.iter().take(a.nodes).map(|(_, c)| c.clone()).collect();
    let peer0 = peers.first().ok_or_else(|| Fail(2, "no peer is up".into()))?;
    // The mesh: every node sees the bootstrap node and at least one other node (the bootstrap
    // node relays no gossip, so a node that knows only it would receive nothing).
    let want_peers = if nodes.len() > 1 { 2 } else { 1 };
    wait_connected(nodes, want_peers, Duration::from_secs(30), POLL, &clock, stop)
        .await
        .map_err(load_fail)?;

    // Fund: split the premine (level by level for a large load) and wait until the splits are
    // confirmed, on every node.
    let from = peer0.status().await.map_err(|e| Fail(1, e.to_string()))?.height;
    let funded = fund(peer0, &funding, kind, from, Duration::from_secs(60), POLL, &clock, stop).await;
    let funded = match funded {
        Err(LoadError::Stopped) => return Err(interrupted()),
        Err(e) => return Err(load_fail(e)),
        Ok(f) => f,
    };
    if let Some((txid, why)) = funded.refused.first() {
        return Err(load_fail(LoadError::FundingRefused(format!("{txid}: {why}"))));
    }
    let start_height = funded.height;
    // Every node holds the funding before the load starts (else its first transactions would
    // be refused there as spending unknown outputs).
    wait_height(nodes, start_height, Duration::from_secs(30), POLL, &clock, stop).await.map_err(load_fail)?;
    eprintln!("devnet: funded at height {start_height}; offering {} tx/s for {} s", a.tps, a.duration);

    // The watcher (first time each block is seen, on peer 0, from its tip events) and the
    // progress lines run beside the offer.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (node, done) = (peer0.clone(), done.clone());
        tokio::spawn(async move {
            let mut w = Watcher::new(start_height);
            w.follow(&node, &clock, Duration::from_millis(50), &done).await;
            w
        })
    };
    let counters = Arc::new(Counters::default());
    let offer_start = clock.now();
    let progress = {
        let (node, done, counters) = (peer0.clone(), done.clone(), counters.clone());
        tokio::spawn(async move {
            let mut next = offer_start;
            while !done.load(Ordering::Relaxed) {
                next += Duration::from_secs(1);
                clock.sleep_until(next).await;
                let (offered, accepted, _) = counters.get();
                let st = node.status().await.ok();
                eprintln!(
                    "  t={:>5.1}s offered {:>8} accepted {:>8} height {:>5} mempool {:>7}",
                    clock.now().saturating_sub(offer_start).as_secs_f64(),
                    offered,
                    accepted,
                    st.as_ref().map_or(0, |s| s.height),
                    st.as_ref().map_or(0, |s| s.mempool_txs)
                );
            }
        })
    };
    let sampler = {
        let (done, pids) = (done.clone(), pids.to_vec());
        let every = Duration::from_secs(a.memory_every);
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut next = offer_start;
            while !done.load(Ordering::Relaxed) {
                let t = clock.now().saturating_sub(offer_start).as_secs_f64();
                samples.push(memory::sample(&pids, t));
                next += every;
                while clock.now() < next && !done.load(Ordering::Relaxed) {
                    clock.sleep(Duration::from_millis(250).min(next.saturating_sub(clock.now()))).await;
                }
            }
            samples
        })
    };
    let cpu0 = cpu::sample(pids, "devnet");
    let mut schedule = FixedRate { tps: a.tps, total: load.len() as u64 };
    let cfg = OfferConfig { hash: kind, ..OfferConfig::default() };
    let offered = offer(&load, &mut schedule, &peers, &clock, &cfg, &counters, stop).await;
    progress.abort();
    let offered = offered.map_err(load_fail)?;
    if stop.load(Ordering::Relaxed) {
        done.store(true, Ordering::Relaxed);
        return Err(interrupted());
    }

    // Convergence: all nodes on one tip and every accepted transaction confirmed (or the
    // time-out).
    let converged = converge(
        nodes,
        !offered.accepted_at.is_empty(),
        Duration::from_secs(a.converge_timeout),
        Duration::from_millis(250),
        &clock,
        stop,
    )
    .await;
    let cpu1 = cpu::sample(pids, "devnet");
    let window_s = clock.now().saturating_sub(offered.started).as_secs_f64();
    let converged = match converged {
        Ok(c) => c,
        Err(e) => {
            done.store(true, Ordering::Relaxed);
            return Err(load_fail(e));
        }
    };
    clock.sleep(Duration::from_millis(200)).await;
    done.store(true, Ordering::Relaxed);
    let mut memory = sampler.await.map_err(|e| Fail(2, format!("the memory sampler failed: {e}")))?;
    memory.push(memory::sample(pids, clock.now().saturating_sub(offer_start).as_secs_f64()));
    let watcher = watcher.await.map_err(|e| Fail(2, format!("the block watcher failed: {e}")))?;

    // The converged main chain, read from peer 0.
    let tip = peer0.status().await.map_err(|e| Fail(1, e.to_string()))?.height;
    let confirmed = confirmations(peer0, start_height, tip, &watcher, &offered.accepted_at, &clock)
        .await
        .map_err(|e| Fail(1, e.to_string()))?;
    let c = report::confirmed(&offered.accepted_at, &confirmed, offered.started);
    // Every accepted transaction: confirmed, pooled where, removed why, or lost.
    let accepted: HashSet<Hash> = offered.accepted_at.keys().copied().collect();
    let in_blocks: HashSet<Hash> = confirmed.iter().map(|(t, _)| *t).collect();
    let accounting =
        account(nodes, &accepted, &in_blocks).await.map_err(|e| Fail(1, format!("accounting: {e}")))?;
    Ok(Summary {
        peers: a.nodes,
        miners: a.miners,
        duration_s: a.duration,
        offered_tps: a.tps,
        offer_took_s: offered.ended.saturating_sub(offered.started).as_secs_f64(),
        nodes: converged
            .statuses
            .iter()
            .map(|(name, s)| NodeEnd {
                name: name.clone(),
                height: s.height,
                tip: s.tip,
                mempool_txs: s.mempool_txs,
            })
            .collect(),
        sent: offered.accepted_at.len(),
        refused: offered.refused,
        cpu: cpu::usage(&cpu0, &cpu1, window_s, c.count),
        confirmed: c,
        window_s,
        converged: converged.converged,
        accounting,
        memory,
    })
}
