//! `pipeline` (seed 000 Fig 3.1b, Table 5.2): the node's transaction pipeline by group size —
//! n transactions collected before verification starts — from three sources, as seed 000
//! measured them:
//!
//! - `memory`: groups handed to the node's admission stage in this process (`Mempool::admit`
//!   over the chain state: the consensus rules, signatures verified in parallel batches, the
//!   pool's policy and its publication), a fresh pool each time (so no cached signature
//!   verdict helps);
//! - `same-machine`: groups sent to a node process over loopback, one binary `POST /txs` each
//!   (`mempool.max_batch = 1`: each request one group), as a stream of [`STREAM`] groups with
//!   [`IN_FLIGHT`] requests in flight; the time of a group is the stream's over its groups;
//!   `same-machine-alone` sends one group at a time and times the request;
//! - `other-host`, `other-host-alone`: the same, with the nodes on emulated hosts (network
//!   namespaces behind a bridge; root only).
//!
//! The node measured is a peer: a miner confirms its funding and is then stopped, so that no
//! block competes with its pipeline for the cores.
//!
//! Beside them, `verify-bound`: the same groups verified by `verify_txs` in parallel, the
//! figure of `tx-throughput` measured in the same run. The node sources spend coins the node
//! holds (the premine split by funding transactions, as `devnet` does).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scalechain_client::launcher::netns::{self, Namespaces};
use scalechain_client::launcher::{LaunchError, Launcher, NodeSpec, Role};
use scalechain_client::types::SubmitResult;
use scalechain_client::Client;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{genesis_block, verify_txs, Params, VerifyMode};
use scalechain_mempool::Mempool;
use scalechain_sim::workload::{transfers, Spec};
use scalechain_types::{HashKind, Tx};

use super::{open_pool_config, powers, study_params, verify_config, with_env};
use crate::load::converge::wait_height;
use crate::load::fund::fund;
use crate::load::prepare::{premine_funds, prepare};
use crate::load::SystemClock;
use crate::output::sig4;
use crate::plot::{Chart, Series};
use crate::{median, seeds, Ctx, Experiment, StudyError, Table};

/// Columns of `pipeline.csv`.
pub const COLUMNS: &[&str] = &["source", "n", "runs", "median_s", "tx_per_s", "build", "commit", "seed"];

/// Largest group sent to a node (a request holds at most 10,000 transactions).
pub const MAX_NODE_LOG2: u32 = 13;

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let max = if ctx.opts.quick { ctx.opts.max_log2.min(6) } else { ctx.opts.max_log2.min(16) };
    let node_max = if ctx.opts.quick { max.min(4) } else { max.min(MAX_NODE_LOG2) };
    let runs = ctx.runs();
    let node_runs = if ctx.opts.quick { 1 } else { runs };
    let p = study_params();
    let threads = ctx.threads();
    let pool = ctx.pool(threads)?;
    let sizes = powers(max);
    ctx.start(sizes.len() as u64 * 3 + 2, "signing the workload");
    let w = pool.install(|| transfers(&p, &super::CHAIN_ID, &Spec::simple(1 << max, ctx.opts.seed)));
    let mut table = Table::new(COLUMNS);
    let mut push = |source: &str, n: usize, runs: usize, s: f64| {
        table.push(vec![
            source.into(),
            n.to_string(),
            runs.to_string(),
            format!("{s:.9}"),
            format!("{:.1}", n as f64 / s),
            ctx.machine.build.into(),
            ctx.machine.commit.into(),
            ctx.opts.seed.to_string(),
        ]);
    };
    // From memory: the admission stage and the verification bound, interleaved per run.
    for &n in &sizes {
        ctx.progress.set_message(format!("memory, n = {n}"));
        let group = &w.txs[..n];
        let (mut admit, mut bound) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for _ in 0..runs {
            let cfg = verify_config(VerifyMode::Parallel);
            let t = Instant::now();
            let ok = pool.install(|| {
                with_env(&p, &cfg, &w.utxos, |env| verify_txs(env, group).iter().all(Result::is_ok))
            });
            bound.push(t.elapsed().as_secs_f64());
            let mp = Mempool::new(p.hash, open_pool_config());
            // The node admits the transactions it decoded: the copy is not part of admission.
            let owned = group.to_vec();
            let t = Instant::now();
            let admitted = pool.install(|| with_env(&p, &cfg, &w.utxos, |env| mp.admit(env, owned)));
            admit.push(t.elapsed().as_secs_f64());
            if !ok || admitted.iter().any(Result::is_err) {
                let why = admitted.iter().find_map(|r| r.as_ref().err().map(|e| e.to_string()));
                return Err(StudyError::Wrong(format!("a valid group of {n} was refused: {why:?}")));
            }
        }
        push("memory", n, runs, median(admit));
        push("verify-bound", n, runs, median(bound));
        ctx.progress.inc(2);
    }
    // From other processes.
    let exe = ctx.opts.worker.clone();
    let node_sizes = powers(node_max);
    let mut sources = vec![("same-machine", false)];
    if netns::is_root() {
        sources.push(("other-host", true));
    } else {
        ctx.progress.println("pipeline: not root, so no run from another (emulated) host");
    }
    match exe {
        None => ctx.progress.println("pipeline: no scalechain binary, so no run over the network"),
        Some(exe) => {
            for (source, hosted) in sources {
                ctx.progress.set_message(format!("{source}: starting a node and funding"));
                let times = over_the_network(&exe, hosted, &node_sizes, node_runs)?;
                for (n, (alone, stream)) in node_sizes.iter().zip(times) {
                    push(source, *n, node_runs, stream);
                    push(&format!("{source}-alone"), *n, node_runs, alone);
                }
                ctx.progress.inc(node_sizes.len() as u64);
            }
        }
    }
    ctx.finish(Experiment::Pipeline, &table, charts, section)
}

/// Median request times, per group size, of groups sent to a node process (in its own
/// namespace if `hosted`).
fn over_the_network(
    exe: &std::path::Path,
    hosted: bool,
    sizes: &[usize],
    runs: usize,
) -> Result<Vec<(f64, f64)>, StudyError> {
    let launch = |e: LaunchError| StudyError::Wrong(format!("starting the node: {e}"));
    let mut net = Launcher::new(exe).map_err(launch)?;
    if hosted {
        let hosts = Namespaces::create(&["miner0", "peer0"], None)
            .map_err(|e| StudyError::Wrong(format!("namespaces: {e}")))?;
        net = net.placement(Arc::new(hosts));
    }
    // A miner confirms the funding; the node measured is a peer, which takes every group whole
    // and holds every transaction sent to it.
    let miner = net.start(NodeSpec::new("miner0", Role::Miner).miner_threads(1)).map_err(launch)?;
    let boot = miner.p2p_addr().to_string();
    // Every request one group (`max_batch = 1`: a request is never merged with the next).
    let total: usize = sizes.iter().map(|n| n * runs * (1 + STREAM)).sum();
    let config =
        format!("[mempool]\nmax_batch = 1\nmax_txs = {}\nmax_bytes = {}\n", total + 100_000, 1u64 << 32);
    let node =
        net.start(NodeSpec::new("peer0", Role::Peer).config(config).bootstrap(boot)).map_err(launch)?;
    let client = node.client().clone();
    let params = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let chain_id = genesis_block(&params).hash(params.hash);
    let prepared = prepare(params.hash, &chain_id, &premine_funds(&params, SigMode::Ed25519), total);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StudyError::Wrong(format!("runtime: {e}")))?;
    let r = rt.block_on(fund_at(&client, &prepared.funding, params.hash)).and_then(|()| {
        // Then no blocks: the peer's cores go to its pipeline alone, as in `memory`.
        net.stop_node("miner0").map_err(|e| StudyError::Wrong(format!("stopping the miner: {e}")))?;
        rt.block_on(send_groups(&client, prepared.load, sizes, runs))
    });
    drop(rt);
    let _ = net.stop();
    r
}

fn api(e: &dyn std::fmt::Display) -> StudyError {
    StudyError::Wrong(format!("node API: {e}"))
}

/// Funds the workload's keys through `node` and waits until it holds the funding confirmed.
async fn fund_at(node: &Client, funding: &[Vec<Tx>], kind: HashKind) -> Result<(), StudyError> {
    let clock = SystemClock::start();
    let stop: &AtomicBool = scalechain_client::interrupt::flag();
    let poll = Duration::from_millis(100);
    // The premine is spendable from block 1.
    let named = [("peer0".to_string(), node.clone())];
    wait_height(&named, 1, Duration::from_secs(60), poll, &clock, stop).await.map_err(|e| api(&e))?;
    let from = node.status().await.map_err(|e| api(&e))?.height;
    let funded = fund(node, funding, kind, from, Duration::from_secs(120), poll, &clock, stop)
        .await
        .map_err(|e| api(&e))?;
    if let Some((txid, why)) = funded.refused.first() {
        return Err(StudyError::Wrong(format!("funding refused: {txid}: {why}")));
    }
    Ok(())
}

/// Groups a stream run sends.
const STREAM: usize = 4;
/// Requests a stream keeps in flight.
const IN_FLIGHT: usize = 2;

/// Per size, the median time a group takes: sent alone (one request, waiting for its verdicts
/// before the next), and in a stream ([`STREAM`] groups, [`IN_FLIGHT`] requests in flight, so
/// the node decodes and answers one group while it verifies another; the stream's time over
/// its groups). Each `runs` times.
async fn send_groups(
    node: &Client,
    load: Vec<Tx>,
    sizes: &[usize],
    runs: usize,
) -> Result<Vec<(f64, f64)>, StudyError> {
    use futures::StreamExt;
    let mut rest = load.into_iter();
    let mut out = Vec::with_capacity(sizes.len());
    let check = |n: usize, r: &SubmitResult| -> Result<(), StudyError> {
        if r.accepted == n {
            return Ok(());
        }
        let why = r.results.iter().find(|v| !v.accepted).and_then(|v| v.reason.clone());
        Err(StudyError::Wrong(format!("{} of a group of {n} refused: {why:?}", n - r.accepted)))
    };
    for &n in sizes {
        let (mut alone, mut stream) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for _ in 0..runs {
            let group: Vec<Tx> = rest.by_ref().take(n).collect();
            let t = Instant::now();
            let r = node.submit(&group).await.map_err(|e| api(&e))?;
            alone.push(t.elapsed().as_secs_f64());
            check(group.len(), &r)?;
            let groups: Vec<Vec<Tx>> = (0..STREAM).map(|_| rest.by_ref().take(n).collect()).collect();
            let t = Instant::now();
            let answers: Vec<_> =
                futures::stream::iter(&groups).map(|g| node.submit(g)).buffered(IN_FLIGHT).collect().await;
            stream.push(t.elapsed().as_secs_f64() / STREAM as f64);
            for (g, r) in groups.iter().zip(answers) {
                check(g.len(), &r.map_err(|e| api(&e))?)?;
            }
        }
        out.push((median(alone), median(stream)));
    }
    Ok(out)
}

fn rate(t: &Table, source: &str) -> Vec<(f64, f64)> {
    t.select("source", source).filter_map(|r| Some((t.num(r, "n")?, t.num(r, "tx_per_s")?))).collect()
}

/// The best throughput of `source` over its group sizes.
fn best(t: &Table, source: &str) -> Option<f64> {
    rate(t, source).into_iter().map(|(_, r)| r).reduce(f64::max)
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let seed = |f: fn(&seeds::NetworkVerifyRow) -> f64| -> Vec<(f64, f64)> {
        seeds::TABLE_5_2.iter().map(|r| (r.n as f64, r.n as f64 / (f(r) / 1e6))).collect()
    };
    vec![Chart {
        title: "The node's pipeline by group size and source (seed 000 Fig 3.1b)".into(),
        x_label: "transactions per group (n)".into(),
        y_label: "transactions / s".into(),
        log_x: true,
        log_y: true,
        series: vec![
            Series::line("from memory (admission stage)", rate(t, "memory")),
            Series::line("from the same machine (API, loopback, 2 in flight)", rate(t, "same-machine")),
            Series::line("from the same machine, one request at a time", rate(t, "same-machine-alone")),
            Series::line("from another host (namespace, 2 in flight)", rate(t, "other-host")),
            Series::line("from another host, one request at a time", rate(t, "other-host-alone")),
            Series::line("verify_txs parallel (bound)", rate(t, "verify-bound")),
            Series::seed("seed 000 from memory", seed(|r| r.memory_us)),
            Series::seed("seed 000 same machine", seed(|r| r.same_machine_us)),
            Series::seed("seed 000 different machine", seed(|r| r.different_machine_us)),
        ],
    }]
}

fn section(t: &Table) -> String {
    let mut s = String::from(
        "Throughput of the node's transaction pipeline for groups of n transactions (median of the \
         runs): `memory` is the admission stage in this process (consensus rules, parallel batch \
         verification, pool policy, publication); `same-machine` and `other-host` send groups to a \
         node process, one binary `POST /txs` per group (loopback, or a network namespace behind \
         a bridge), as a stream of 4 groups with 2 requests in flight (the time per group: the \
         stream's over its groups), so that the node decodes and answers one group while it \
         verifies another, as a pipeline does under load; `…-alone` sends one group at a time and \
         times the request (latency-bound); `verify-bound` is `verify_txs` in parallel on the same \
         groups. The node (a peer whose funding a miner confirmed, the miner then stopped, so that \
         no block competes for the cores, as none does in `memory`) takes each request as one \
         group.\n\n",
    );
    let f = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.3}"));
    let bound = best(t, "verify-bound");
    let ratio = |src: &str| Some(best(t, src)? / bound?);
    s.push_str(
        "**Targets** (best group size of each, against the best of `verify-bound` in the same run):\n\n",
    );
    s.push_str("| source | best tx/s | / bound | target |\n|---|---:|---:|---:|\n");
    for (src, target) in [
        ("memory", "≥ 0.90"),
        ("same-machine", "≥ 0.80"),
        ("same-machine-alone", ""),
        ("other-host", ""),
        ("other-host-alone", ""),
    ] {
        s.push_str(&format!(
            "| {src} | {} | {} | {target} |\n",
            best(t, src).map_or("n/a".into(), sig4),
            f(ratio(src))
        ));
    }
    s.push_str(&format!("\n**Beside seed 000 Table 5.2** (tx/s; seed: {}):\n\n", seeds::TABLE_5_2_SOURCE));
    s.push_str("| n | seed memory | ours memory | seed same machine | ours same machine | seed different machine | ours other host |\n");
    s.push_str("|---:|---:|---:|---:|---:|---:|---:|\n");
    let ours = |src: &str, n: u64| -> String {
        rate(t, src).into_iter().find(|(x, _)| *x as u64 == n).map_or("–".into(), |(_, r)| sig4(r))
    };
    for r in seeds::TABLE_5_2 {
        let seed = |us: f64| sig4(r.n as f64 / (us / 1e6));
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            r.n,
            seed(r.memory_us),
            ours("memory", r.n),
            seed(r.same_machine_us),
            ours("same-machine", r.n),
            seed(r.different_machine_us),
            ours("other-host", r.n),
        ));
    }
    s.push_str("\nThe node's own setting for this group size is `mempool.group_size` (default 1: verify whatever is queued, best for latency; `mempool.group_wait_ms` bounds the wait for a larger group).\n\n");
    s.push_str(&t.markdown(&COLUMNS[..5]));
    s
}
