//! `scalechain devnet`: a bootstrap node, N peers and M miners as separate processes on
//! 127.0.0.1 (OS-chosen ports), a transaction load offered at a fixed rate through the peers'
//! APIs, live progress, and a summary of what the network confirmed.
//!
//! A composition: the launcher (`scalechain_lab::launcher`) starts and stops the nodes; the
//! load is a one-round benchmark run by the load benchmark's runner (`scalechain_lab::bench`,
//! what `scalechain bench` runs): 1-input/1-output transfers at a fixed rate, every one signed
//! before the clock starts from the premine split into one output each (a tree of splits when
//! the load is large), offered round-robin over the peers, open loop, beside a block watcher
//! that follows the first peer's tip events; then a drain. A transaction counts as sent when an
//! API accepted it, as confirmed when it is in a block of the converged main chain; its latency
//! runs from its request to the moment the block holding it was first seen. At the end every
//! accepted transaction is accounted for: confirmed, still pooled (on which nodes), removed
//! with the reason a node logged (`GET /mempool/removed`), or lost; devnet exits 1 if any was
//! lost. Ctrl-C stops everything (exit code 130).
//!
//! When the nodes are up, devnet prints each node's API address and the line that makes the
//! other commands use one (`export SCALECHAIN_API=…`). The load spends the premine keys below
//! [`WALLET_KEYS_FROM`]; the keys from there to the last are left for people's wallets
//! (`scalechain wallet import --devnet-key N`: 10 SC each on a fresh devnet).

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;

use scalechain_client::Client;
use scalechain_consensus::params::{SigMode, DEVNET_PREMINE_OUTPUTS};
use scalechain_consensus::Params;
use scalechain_lab::bench::run::{self, Env};
use scalechain_lab::bench::spec::{Benchmark, Network, Round, Workload, MAX_TXS};
use scalechain_lab::interrupt;
use scalechain_lab::launcher::netns::{self, Namespaces};
use scalechain_lab::launcher::{LaunchError, Launcher, NetworkPlan, Role};
use scalechain_lab::load::account::account;
use scalechain_lab::load::converge::{converge, wait_connected};
use scalechain_lab::load::prepare::{premine_funds, Shape};
use scalechain_lab::load::report::{self, memory, NodeEnd, Summary};
use scalechain_lab::load::schedule::Rate;
use scalechain_lab::load::{LoadError, SystemClock};
use scalechain_types::Hash;

use crate::wallet::plural;
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
    /// After the summary, keep the network up (every node's API and web explorer) until
    /// Ctrl-C.
    #[arg(long)]
    stay: bool,
}

/// The first devnet premine key the load leaves alone, for wallets (to the last, 1023).
pub const WALLET_KEYS_FROM: u64 = 1000;

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

/// The nodes' API addresses, and how to use them and fund a wallet.
fn api_lines(nodes: &[(String, Client)]) -> String {
    let mut s = String::from("devnet: node APIs (give one to other commands with --api URL):\n");
    for (name, c) in nodes {
        s.push_str(&format!("devnet:   {name:<8} {}\n", c.base()));
    }
    if let Some((name, c)) = nodes.first() {
        s.push_str(&format!("devnet: to use {name} for every command of this shell:\n"));
        s.push_str(&format!("export SCALECHAIN_API={}\n", c.base()));
        s.push_str(&format!(
            "devnet: premine keys {WALLET_KEYS_FROM} to {} (10 SC each) are left for wallets: \
             scalechain wallet import --devnet-key {WALLET_KEYS_FROM}\n",
            DEVNET_PREMINE_OUTPUTS - 1
        ));
    }
    s
}

/// Runs `scalechain devnet`.
pub fn devnet(a: DevnetArgs) -> Result<(), Fail> {
    if a.nodes == 0 || a.miners == 0 {
        return Err(Fail(2, "a devnet needs at least one peer and one miner".into()));
    }
    let total = a.tps.checked_mul(a.duration).filter(|t| *t <= MAX_TXS).ok_or_else(|| {
        Fail(
            2,
            format!("--tps times --duration is over {MAX_TXS} transactions (all are signed before the load)"),
        )
    })?;
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
        "devnet: {} + {} up in {:.1}s ({})",
        plural(a.nodes, "peer"),
        plural(a.miners, "miner"),
        t_start.elapsed().as_secs_f64(),
        net.base_dir().display()
    );
    let (params, sig) = (scalechain_node::params_of(&node_cfg), node_cfg.chain.sig);
    // Peers and miners, in start order: the peers first.
    let nodes: Vec<(String, Client)> = net.clients(|r| r != Role::Bootstrap);
    eprint!("{}", api_lines(&nodes));
    if let Some((_, c)) = net.clients(|r| r == Role::Miner).first() {
        eprintln!("devnet: web explorer at {} (the miner's; every node serves one)", c.url("/explorer"));
    }
    let pids = net.pids();
    let summary = rt.block_on(drive(&a, &nodes, &pids, &params, sig, total));
    if a.stay && !interrupt::requested() {
        if let Ok(s) = &summary {
            eprint!("{}", s.text());
        }
        eprint!("{}", api_lines(&nodes));
        eprintln!("devnet: the network stays up (--stay); Ctrl-C stops it");
        while !interrupt::requested() {
            std::thread::sleep(POLL);
        }
    }
    // The nodes stop (and a temporary directory goes) before the verdict; a directory that
    // cannot be removed does not change it.
    drop(rt);
    if let Err(e) = net.stop() {
        eprintln!("warning: {e}");
    }
    let summary = summary?;
    if !a.stay {
        eprint!("{}", summary.text());
    }
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

/// The load as a one-round benchmark (`scalechain bench`'s runner: funding, the offer at a
/// fixed rate round-robin over the peers, the block watcher, the drain, the round's
/// measurements), then convergence and the account of every accepted transaction.
async fn drive(
    a: &DevnetArgs,
    nodes: &[(String, Client)],
    pids: &[(String, u32)],
    params: &Params,
    sig: SigMode,
    total: u64,
) -> Result<Summary, Fail> {
    let clock = SystemClock::start();
    let stop = interrupt::flag();
    let peers: Vec<(String, Client)> = nodes.iter().take(a.nodes).cloned().collect();
    if peers.is_empty() {
        return Err(Fail(2, "no peer is up".into()));
    }
    // The mesh: every node sees the bootstrap node and at least one other node (the bootstrap
    // node relays no gossip, so a node that knows only it would receive nothing).
    let want_peers = if nodes.len() > 1 { 2 } else { 1 };
    wait_connected(nodes, want_peers, Duration::from_secs(30), POLL, &clock, stop)
        .await
        .map_err(load_fail)?;
    let round = Round {
        name: "devnet".into(),
        line: 0,
        workload: Workload::Transfer(Shape::ONE_TO_ONE),
        rate: Rate::Fixed { tps: a.tps as f64 },
        controller: "fixed-rate",
        // Every transaction at the rate: the offer lasts --duration.
        duration: None,
        txs: total,
        drain: Duration::from_secs(a.converge_timeout),
    };
    let network =
        Network { peers: a.nodes, miners: a.miners, miner_threads: a.miner_threads, node_config: None };
    let bench = Benchmark { name: "devnet".into(), network, rounds: vec![round] };
    let env = Env { targets: &peers, pids, params, sig, counters: None };
    // A fresh devnet: the premine keys hold their genesis coins. Those from WALLET_KEYS_FROM on
    // are left for wallets.
    let mut funds = premine_funds(params, sig);
    funds.truncate(WALLET_KEYS_FROM as usize);
    let prepared = run::prepare(&bench, &env, &funds).map_err(load_fail)?;
    eprintln!(
        "devnet: {} load transactions and {} funding transactions in {} levels signed in {:.1}s",
        prepared.loads.iter().map(|l| l.0.len()).sum::<usize>(),
        prepared.funding.iter().map(Vec::len).sum::<usize>(),
        prepared.funding.len(),
        prepared.took_s
    );
    // The signature bound, on the load's own signatures, before the load.
    let chain_id = scalechain_consensus::genesis_block(params).hash(params.hash);
    let sig_bound_us = prepared
        .loads
        .first()
        .and_then(|(txs, _)| scalechain_study::exp::signature_bound_us(params, &chain_id, txs));
    let traffic_before = traffic(nodes).await;
    eprintln!("devnet: offering {} tx/s for {} s", a.tps, a.duration);
    let outcome = run::run(&bench, &env, prepared, stop, &|line| eprintln!("devnet: {line}")).await;
    let outcome = outcome.map_err(load_fail)?;
    if outcome.stopped {
        return Err(interrupted());
    }
    let r = outcome.rounds.into_iter().next().ok_or_else(|| Fail(1, "the load did not run".into()))?;

    // Convergence: all nodes on one tip and every accepted transaction confirmed (or the
    // time-out).
    let converged = converge(
        nodes,
        r.accepted > 0,
        Duration::from_secs(a.converge_timeout),
        Duration::from_millis(250),
        &clock,
        stop,
    )
    .await
    .map_err(load_fail)?;
    let traffic_after = traffic(nodes).await;
    let traffic: Vec<(String, report::traffic::Traffic)> = traffic_after
        .into_iter()
        .map(|(name, after)| {
            let before = traffic_before.iter().find(|(n, _)| *n == name).map(|(_, t)| *t).unwrap_or_default();
            (name, before.until(&after))
        })
        .collect();
    // Every accepted transaction: confirmed, pooled where, removed why, or lost.
    let unconfirmed: HashSet<Hash> = r.unconfirmed.iter().copied().collect();
    let mut accounting = account(nodes, &unconfirmed, &HashSet::new())
        .await
        .map_err(|e| Fail(1, format!("accounting: {e}")))?;
    accounting.accepted = r.accepted as usize;
    accounting.confirmed = r.succeeded as usize;
    let mut refused = r.failed.clone();
    refused.remove("unconfirmed");
    let latency = r.latency.unwrap_or_default();
    Ok(Summary {
        peers: a.nodes,
        miners: a.miners,
        duration_s: a.duration,
        offered_tps: a.tps,
        offer_took_s: r.offer_s,
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
        sent: r.accepted as usize,
        refused,
        cpu: r.cpu,
        confirmed: report::Confirmed {
            count: r.succeeded as usize,
            span_s: if r.throughput_tps > 0.0 { r.succeeded as f64 / r.throughput_tps } else { 0.0 },
            tps: r.throughput_tps,
            latency: report::Latency { p50: latency.p50, p95: latency.p95, p99: latency.p99 },
        },
        window_s: r.window_s,
        converged: converged.converged,
        accounting,
        memory: every(&r.memory, a.memory_every),
        sig_bound_us,
        traffic,
    })
}

/// What each node has received from its peers so far (its `/metrics` counters); nodes whose
/// metrics cannot be read are left out.
async fn traffic(nodes: &[(String, Client)]) -> Vec<(String, report::traffic::Traffic)> {
    let mut out = Vec::with_capacity(nodes.len());
    for (name, c) in nodes {
        if let Some(t) = c.metrics().await.ok().as_deref().and_then(report::traffic::parse) {
            out.push((name.clone(), t));
        }
    }
    out
}

/// The samples `every` seconds apart (the first, then the first at or after each multiple of
/// `every`), and the last.
fn every(samples: &[memory::Sample], every: u64) -> Vec<memory::Sample> {
    let mut out: Vec<memory::Sample> = Vec::new();
    let mut next = 0.0;
    for s in samples {
        if s.t_s >= next {
            out.push(s.clone());
            next = (s.t_s / every as f64).floor() * every as f64 + every as f64;
        }
    }
    if let (Some(last), Some(kept)) = (samples.last(), out.last()) {
        if kept.t_s < last.t_s {
            out.push(last.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_samples_are_kept_every_so_many_seconds_and_the_last() {
        let s: Vec<memory::Sample> =
            (1..=10).map(|t| memory::Sample { t_s: t as f64, rss: vec![("peer0".into(), t)] }).collect();
        let t = |v: Vec<memory::Sample>| v.iter().map(|x| x.t_s).collect::<Vec<_>>();
        assert_eq!(t(every(&s, 4)), [1.0, 4.0, 8.0, 10.0]);
        assert_eq!(t(every(&s, 1)), (1..=10).map(|x| x as f64).collect::<Vec<_>>());
        assert!(every(&[], 3).is_empty());
    }
}
