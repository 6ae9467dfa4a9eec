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
//! - `namespace-same-cores`, `namespace-same-cores-alone`: the same, with the sender and the
//!   node in network namespaces of their own behind a bridge (root only): another IP stack and
//!   address, but the same machine's cores, so not seed 000's second machine over Wi-Fi.
//!
//! The node measured is a peer: a miner confirms its funding and is then stopped, so that no
//! block competes with its pipeline for the cores. With no block to drain it, its pool would
//! hold every group sent before, hundreds of thousands of transactions by the large sizes (the
//! later the size, the larger the pool it meets); so it is restarted, on its data directory,
//! before a run whose transactions would take its pool past [`POOL_BUDGET`] (100,000, the
//! mempool's own default capacity, a fifth of a node's default `mempool.max_txs`): each group
//! meets a pool of a size a busy node holds, not every group sent before it (`memory` admits
//! into a fresh one).
//!
//! Beside them, `verify-bound`: the same groups verified by `verify_txs` in parallel, the
//! figure of `tx-throughput` measured in the same run. The node sources spend coins the node
//! holds (the premine split by funding transactions, as `devnet` does).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scalechain_client::types::SubmitResult;
use scalechain_client::Client;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{genesis_block, verify_txs, Params, VerifyMode};
use scalechain_lab::launcher::netns::{self, Namespaces};
use scalechain_lab::launcher::{LaunchError, Launcher, NodeSpec, Role};
use scalechain_lab::load::converge::wait_height;
use scalechain_lab::load::fund::fund;
use scalechain_lab::load::prepare::{premine_funds, prepare};
use scalechain_lab::load::SystemClock;
use scalechain_lab::output::{sig4, Target};
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_mempool::Mempool;
use scalechain_procfs::threads_cpu_seconds;
use scalechain_types::{HashKind, Tx};
use scalechain_workload::fixed::{transfers, Spec};

use super::{open_pool_config, powers, study_params, verify_config, with_env};
use crate::{median, seeds, Ctx, Experiment, StudyError};

/// Columns of `pipeline.csv`.
///
/// For the node sources, `node_cpu_us` and `sender_cpu_us` are the CPU time the node process
/// and this process (the sender) used per transaction over the timed sends
/// ([`threads_cpu_seconds`]), and `busy` the share of the machine's cores the two kept busy
/// meanwhile.
pub const COLUMNS: &[&str] = &[
    "source",
    "n",
    "runs",
    "median_s",
    "tx_per_s",
    "node_cpu_us",
    "sender_cpu_us",
    "busy",
    "build",
    "commit",
    "seed",
];

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
    let mut push = |source: &str, n: usize, runs: usize, s: f64, cpu: Option<&Cpu>| {
        let (node, sender, busy) = cpu.map_or((String::new(), String::new(), String::new()), |c| {
            let busy = c.busy(ctx.machine.cores);
            (format!("{:.2}", c.node_us()), format!("{:.2}", c.sender_us()), format!("{busy:.3}"))
        });
        table.push(vec![
            source.into(),
            n.to_string(),
            runs.to_string(),
            format!("{s:.9}"),
            format!("{:.1}", n as f64 / s),
            node,
            sender,
            busy,
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
        push("memory", n, runs, median(admit), None);
        push("verify-bound", n, runs, median(bound), None);
        ctx.progress.inc(2);
    }
    // From other processes.
    let exe = ctx.opts.worker.clone();
    let node_sizes = powers(node_max);
    let mut sources = vec![("same-machine", false)];
    if netns::is_root() {
        sources.push((OTHER_HOST, true));
    } else {
        ctx.progress.println("pipeline: not root, so no run from a network namespace");
    }
    match exe {
        None => ctx.progress.println("pipeline: no scalechain binary, so no run over the network"),
        Some(exe) => {
            for (source, hosted) in sources {
                ctx.progress.set_message(format!("{source}: starting a node and funding"));
                let times = over_the_network(&exe, hosted, &node_sizes, node_runs)?;
                for (n, (alone, stream)) in node_sizes.iter().zip(times) {
                    push(source, *n, node_runs, stream.median_s, Some(&stream.cpu));
                    push(&format!("{source}-alone"), *n, node_runs, alone.median_s, Some(&alone.cpu));
                }
                ctx.progress.inc(node_sizes.len() as u64);
            }
        }
    }
    ctx.finish(Experiment::Pipeline, &table, charts, section)
}

/// Median request times, per group size, of groups sent to a node process (in its own
/// namespace if `hosted`), alone and in a stream, with the CPU the node and this process used.
fn over_the_network(
    exe: &std::path::Path,
    hosted: bool,
    sizes: &[usize],
    runs: usize,
) -> Result<Vec<(Timed, Timed)>, StudyError> {
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
    // Every request one group (`max_batch = 1`: a request is never merged with the next); a
    // pool large enough that the runs between restarts never evict (a run of the largest
    // group alone may pass the budget).
    let per_run = |n: usize| n * (1 + STREAM);
    let total: usize = sizes.iter().map(|&n| per_run(n) * runs).sum();
    let room = POOL_BUDGET + sizes.iter().map(|&n| per_run(n)).max().unwrap_or(0);
    let config = format!("[mempool]\nmax_batch = 1\nmax_txs = {room}\nmax_bytes = {}\n", 1u64 << 32);
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
        let mut load = prepared.load.into_iter();
        let mut pooled = 0;
        let mut out = Vec::with_capacity(sizes.len());
        for &n in sizes {
            let mut size = SizeTimes::new(runs);
            for _ in 0..runs {
                if needs_restart(pooled, per_run(n)) {
                    net.restart_node("peer0").map_err(launch)?;
                    pooled = 0;
                }
                let node = net.node("peer0").map_err(launch)?;
                let probe = CpuProbe { node: node.pid() };
                let run: Vec<Tx> = load.by_ref().take(per_run(n)).collect();
                rt.block_on(send_run(node.client(), run, n, &probe, &mut size))?;
                pooled += per_run(n);
            }
            out.push(size.finish());
        }
        Ok(out)
    });
    drop(rt);
    let _ = net.stop();
    r
}

/// The source seed 000 measured from "a different machine (on the same LAN)", ours: a network
/// namespace on this machine, sharing its cores with the node.
pub const OTHER_HOST: &str = "namespace-same-cores";
/// Seed 000's words for its second machine (§3.1, Fig 3.1b), as printed.
pub const SEED_OTHER_HOST: [&str; 2] = [
    "a different machine (on the same LAN)",
    "as the data has to travel physically across the Wi-Fi network (unlike the other cases)",
];

/// Transactions the measured node's pool may hold before it is restarted empty: the mempool's
/// own default capacity (`MempoolConfig::default().max_txs`; a node's configuration defaults
/// to 500,000).
pub const POOL_BUDGET: usize = 100_000;

/// Whether the node holding `pooled` transactions is restarted empty before a run of `run`
/// more: when they would pass [`POOL_BUDGET`], unless it holds none (a run larger than the
/// budget is sent whole).
fn needs_restart(pooled: usize, run: usize) -> bool {
    pooled > 0 && pooled.saturating_add(run) > POOL_BUDGET
}

fn api(e: &dyn std::fmt::Display) -> StudyError {
    StudyError::Wrong(format!("node API: {e}"))
}

/// Funds the workload's keys through `node` and waits until it holds the funding confirmed.
async fn fund_at(node: &Client, funding: &[Vec<Tx>], kind: HashKind) -> Result<(), StudyError> {
    let clock = SystemClock::start();
    let stop: &AtomicBool = scalechain_lab::interrupt::flag();
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

/// CPU time used per transaction, summed over timed sends.
#[derive(Clone, Debug, Default)]
struct Cpu {
    /// CPU seconds of the node process.
    node_s: f64,
    /// CPU seconds of this process.
    sender_s: f64,
    /// Wall seconds of the sends.
    wall_s: f64,
    /// Transactions sent.
    txs: usize,
}

impl Cpu {
    fn node_us(&self) -> f64 {
        self.node_s / self.txs.max(1) as f64 * 1e6
    }

    fn sender_us(&self) -> f64 {
        self.sender_s / self.txs.max(1) as f64 * 1e6
    }

    /// The share of a machine's `cores` the node and the sender kept busy.
    fn busy(&self, cores: usize) -> f64 {
        (self.node_s + self.sender_s) / (self.wall_s * cores.max(1) as f64).max(f64::MIN_POSITIVE)
    }
}

/// Reads the CPU time of the node process and of this one.
struct CpuProbe {
    node: u32,
}

impl CpuProbe {
    /// (node, this process) CPU seconds now, before a send: this process last, so that reading
    /// the node's threads is not counted as sending.
    fn now(&self) -> (f64, f64) {
        let node = threads_cpu_seconds(&self.node.to_string());
        (node, threads_cpu_seconds("self"))
    }

    /// Adds to `into` what the node and this process used since `from` (a [`CpuProbe::now`]),
    /// over `wall` seconds and `txs` transactions; this process first, for the same reason.
    fn add(&self, into: &mut Cpu, from: (f64, f64), wall: f64, txs: usize) {
        let me = threads_cpu_seconds("self");
        let node = threads_cpu_seconds(&self.node.to_string());
        into.node_s += (node - from.0).max(0.0);
        into.sender_s += (me - from.1).max(0.0);
        into.wall_s += wall;
        into.txs += txs;
    }
}

/// A median time per group, and the CPU the timed sends used.
struct Timed {
    median_s: f64,
    cpu: Cpu,
}

/// The times and CPU of one group size's runs: each run a group sent alone (one request,
/// waiting for its verdicts before the next) and a stream ([`STREAM`] groups, [`IN_FLIGHT`]
/// requests in flight, so the node decodes and answers one group while it verifies another;
/// the stream's time over its groups).
struct SizeTimes {
    alone: Vec<f64>,
    stream: Vec<f64>,
    alone_cpu: Cpu,
    stream_cpu: Cpu,
}

impl SizeTimes {
    fn new(runs: usize) -> SizeTimes {
        SizeTimes {
            alone: Vec::with_capacity(runs),
            stream: Vec::with_capacity(runs),
            alone_cpu: Cpu::default(),
            stream_cpu: Cpu::default(),
        }
    }

    /// (alone, stream): the median time per group of each, with the CPU the timed sends used.
    fn finish(self) -> (Timed, Timed) {
        (
            Timed { median_s: median(self.alone), cpu: self.alone_cpu },
            Timed { median_s: median(self.stream), cpu: self.stream_cpu },
        )
    }
}

/// One run of groups of `n` from `load` (`n` × (1 + [`STREAM`]) transactions): a group alone,
/// then a stream; every transaction must be admitted.
async fn send_run(
    node: &Client,
    load: Vec<Tx>,
    n: usize,
    probe: &CpuProbe,
    into: &mut SizeTimes,
) -> Result<(), StudyError> {
    use futures::StreamExt;
    let check = |n: usize, r: &SubmitResult| -> Result<(), StudyError> {
        if r.accepted == n {
            return Ok(());
        }
        let why = r.results.iter().find(|v| !v.accepted).and_then(|v| v.reason.clone());
        Err(StudyError::Wrong(format!("{} of a group of {n} refused: {why:?}", n - r.accepted)))
    };
    let mut rest = load.into_iter();
    let group: Vec<Tx> = rest.by_ref().take(n).collect();
    let c = probe.now();
    let t = Instant::now();
    let r = node.submit(&group).await.map_err(|e| api(&e))?;
    let wall = t.elapsed().as_secs_f64();
    probe.add(&mut into.alone_cpu, c, wall, group.len());
    into.alone.push(wall);
    check(group.len(), &r)?;
    let groups: Vec<Vec<Tx>> = (0..STREAM).map(|_| rest.by_ref().take(n).collect()).collect();
    let c = probe.now();
    let t = Instant::now();
    let answers: Vec<_> =
        futures::stream::iter(&groups).map(|g| node.submit(g)).buffered(IN_FLIGHT).collect().await;
    let wall = t.elapsed().as_secs_f64();
    probe.add(&mut into.stream_cpu, c, wall, groups.iter().map(Vec::len).sum());
    into.stream.push(wall / STREAM as f64);
    for (g, r) in groups.iter().zip(answers) {
        check(g.len(), &r.map_err(|e| api(&e))?)?;
    }
    Ok(())
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
        x_names: Vec::new(),
        series: vec![
            Series::line("from memory (admission stage)", rate(t, "memory")),
            Series::line("from the same machine (API, loopback, 2 in flight)", rate(t, "same-machine")),
            Series::line("from the same machine, one request at a time", rate(t, "same-machine-alone")),
            Series::line("from a network namespace on the same cores (2 in flight)", rate(t, OTHER_HOST)),
            Series::line(
                "from a network namespace on the same cores, one at a time",
                rate(t, &format!("{OTHER_HOST}-alone")),
            ),
            Series::line("verify_txs parallel (bound)", rate(t, "verify-bound")),
            Series::seed("seed 000 from memory", seed(|r| r.memory_us)),
            Series::seed("seed 000 same machine", seed(|r| r.same_machine_us)),
            Series::seed("seed 000 different machine (Wi-Fi)", seed(|r| r.different_machine_us)),
        ],
    }]
}

fn section(t: &Table) -> String {
    let mut s = String::from(
        "Throughput of the node's transaction pipeline for groups of n transactions (median of the \
         runs): `memory` is the admission stage in this process (consensus rules, parallel batch \
         verification, pool policy, publication); `same-machine` and `namespace-same-cores` send \
         groups to a node process, one binary `POST /txs` per group (loopback, or between network \
         namespaces behind a bridge), as a stream of 4 groups with 2 requests in flight (the time per group: the \
         stream's over its groups), so that the node decodes and answers one group while it \
         verifies another, as a pipeline does under load; `…-alone` sends one group at a time and \
         times the request (latency-bound); `verify-bound` is `verify_txs` in parallel on the same \
         groups. The node (a peer whose funding a miner confirmed, the miner then stopped, so that \
         no block competes for the cores, as none does in `memory`) takes each request as one \
         group. With no block to drain it, the node is restarted empty before a run that would \
         take its pool past 100,000 transactions (the mempool's default capacity; a node's \
         configuration allows 500,000), so that every size meets a pool a busy node holds rather \
         than all the groups sent before it.\n\n",
    );
    s.push_str(&format!(
        "**Seed 000's third source is not ours.** It sent from \"{}\", and its curve is low and \
         erratic \"{}\". Ours, `{OTHER_HOST}`, is a network namespace on this machine: the sender \
         and the node have IP stacks and addresses of their own behind a bridge, but the bytes never \
         leave the machine and the two share its cores, as \
         `same-machine` does. It measures what a second IP stack costs, not a second machine or a \
         wireless link; the column beside the seed's different machine is not like for like.\n\n",
        SEED_OTHER_HOST[0], SEED_OTHER_HOST[1]
    ));
    let f = |x: Option<f64>| x.map_or("n/a".to_string(), |v| format!("{v:.3}"));
    let bound = best(t, "verify-bound");
    let ratio = |src: &str| Some(best(t, src)? / bound?);
    s.push_str(
        "**Targets** (best group size of each, against the best of `verify-bound` in the same run):\n\n",
    );
    s.push_str("| source | best tx/s | / bound | target |\n|---|---:|---:|---:|\n");
    for (src, target) in [
        ("memory", Some(Target::AtLeast(0.9))),
        ("same-machine", Some(Target::AtLeast(0.8))),
        ("same-machine-alone", None),
        (OTHER_HOST, None),
        ("namespace-same-cores-alone", None),
    ] {
        let r = ratio(src);
        let cell = match (target, r) {
            (Some(tg), Some(x)) => tg.cell(&f(r), x),
            _ => f(r),
        };
        s.push_str(&format!(
            "| {src} | {} | {cell} | {} |\n",
            best(t, src).map_or("n/a".into(), sig4),
            target.map_or(String::new(), |tg| tg.text())
        ));
    }
    s.push_str(&spent(t, bound));
    s.push_str(&format!("\n**Beside seed 000 Table 5.2** (tx/s; seed: {}):\n\n", seeds::TABLE_5_2_SOURCE));
    s.push_str("| n | seed memory | ours memory | seed same machine | ours same machine | seed different machine (Wi-Fi) | ours namespace, same cores |\n");
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
            ours(OTHER_HOST, r.n),
        ));
    }
    s.push_str("\nThe node's own setting for this group size is `mempool.group_size` (default 1: verify whatever is queued, best for latency; `mempool.group_wait_ms` bounds the wait for a larger group).\n\n");
    s.push_str(&t.markdown(&COLUMNS[..8]));
    s
}

/// What the node sources spent at their best group size: CPU per transaction of the node and
/// of the sender, the share of the cores they kept busy, and the rate the same work would
/// reach with every core busy, against the bound.
fn spent(t: &Table, bound: Option<f64>) -> String {
    let mut s = String::from(
        "\n**What the node sources spent** (the stream at each source's best group size; CPU time \
         of the node process and of the sender from `/proc` over the timed sends; \"fully busy\": \
         the rate divided by the share of the cores in use, what the same work per \
         transaction would reach with every core busy):\n\n\
         | source | n | node CPU µs/tx | sender CPU µs/tx | cores busy | fully busy, tx/s | / bound |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    let mut any = false;
    for src in ["same-machine", OTHER_HOST] {
        let best = t
            .select("source", src)
            .filter_map(|r| Some((r, t.num(r, "tx_per_s")?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        let Some((row, rate)) = best else { continue };
        let (Some(n), Some(node), Some(sender), Some(busy)) =
            (t.num(row, "n"), t.num(row, "node_cpu_us"), t.num(row, "sender_cpu_us"), t.num(row, "busy"))
        else {
            continue;
        };
        let full = (busy > 0.0).then(|| rate / busy);
        let ratio = full.zip(bound).map_or("n/a".to_string(), |(f, b)| format!("{:.3}", f / b));
        s.push_str(&format!(
            "| {src} | {n} | {node:.2} | {sender:.2} | {:.0}% | {} | {ratio} |\n",
            busy * 100.0,
            full.map_or("n/a".into(), sig4),
        ));
        any = true;
    }
    if any {
        s
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_node_is_restarted_before_its_pool_passes_the_mempools_default_capacity() {
        assert_eq!(POOL_BUDGET, scalechain_mempool::MempoolConfig::default().max_txs);
        assert!(!needs_restart(0, 5 * 8192), "an empty node takes any run");
        assert!(!needs_restart(POOL_BUDGET - 100, 100));
        assert!(needs_restart(POOL_BUDGET - 100, 101));
        // Sizes 1 … 8,192, 10 runs of 1 + STREAM groups: the pool never holds more than the
        // budget; nine restarts, none before the groups of 1,024.
        let (mut pooled, mut restarts) = (0, Vec::new());
        for n in powers(13) {
            for _ in 0..10 {
                if needs_restart(pooled, (1 + STREAM) * n) {
                    restarts.push(n);
                    pooled = 0;
                }
                pooled += (1 + STREAM) * n;
                assert!(pooled <= POOL_BUDGET, "{pooled} pooled at n = {n}");
            }
        }
        assert_eq!(restarts, [1024, 2048, 4096, 4096, 8192, 8192, 8192, 8192, 8192]);
    }

    #[test]
    fn the_namespace_source_is_labelled_as_the_same_cores_beside_the_seeds_wifi_machine() {
        let mut t = Table::new(COLUMNS);
        let row = |src: &str, n: u32, rate: f64| -> Vec<String> {
            [src, &n.to_string(), "1", "0.1", &rate.to_string(), "", "", "", "portable", "c", "1"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        t.push(row(OTHER_HOST, 512, 40_000.0));
        t.push(row("verify-bound", 512, 80_000.0));
        let s = section(&t);
        assert!(s.contains(SEED_OTHER_HOST[0]) && s.contains(SEED_OTHER_HOST[1]), "{s}");
        assert!(s.contains("| seed different machine (Wi-Fi) | ours namespace, same cores |"), "{s}");
        assert!(s.contains("not like for like"), "{s}");
        let labels: Vec<String> = charts(&t)[0].series.iter().map(|x| x.label.clone()).collect();
        assert!(labels.iter().any(|l| l.contains("namespace on the same cores")), "{labels:?}");
        assert!(labels.iter().any(|l| l == "seed 000 different machine (Wi-Fi)"), "{labels:?}");
    }

    #[test]
    fn what_the_node_sources_spent_reads_the_best_row() {
        let mut t = Table::new(COLUMNS);
        let row = |src: &str, n: u32, rate: f64, cpu: (&str, &str, &str)| -> Vec<String> {
            [src, &n.to_string(), "1", "0.1", &rate.to_string(), cpu.0, cpu.1, cpu.2, "portable", "c", "1"]
                .iter()
                .map(|s| s.to_string())
                .collect()
        };
        t.push(row("same-machine", 4096, 90_000.0, ("13.00", "0.70", "0.700")));
        t.push(row("same-machine", 8192, 100_000.0, ("12.00", "0.50", "0.800")));
        t.push(row("memory", 8192, 170_000.0, ("", "", "")));
        let s = spent(&t, Some(200_000.0));
        assert!(s.contains("| same-machine | 8192 | 12.00 | 0.50 | 80% |"), "{s}");
        assert!(s.contains("| 0.625 |"), "fully busy: 100,000 / 0.8 = 125,000 against 200,000: {s}");
        assert!(!s.contains(OTHER_HOST));
        // Rows of an older CSV, without the CPU columns' values: no section.
        let mut old = Table::new(COLUMNS);
        old.push(row("same-machine", 8192, 100_000.0, ("", "", "")));
        assert_eq!(spent(&old, Some(200_000.0)), "");
    }
}
