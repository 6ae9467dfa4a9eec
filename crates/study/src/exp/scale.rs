//! `scale`: does the network keep up as it grows? On the simulator (`scalechain-simnet`): the
//! production protocol machine and replicas of every node, in virtual time, on SimBlock's
//! six-region network (latency and bandwidth tables from measured Bitcoin data), each node a
//! two-core machine whose work costs what a calibration of this machine's engine says.
//!
//! The series:
//! - `propagation`: N = 16, 64, 256, 1,024 nodes (16, 64 with `--quick`), a light load (20
//!   tx/s, one transaction a request, to eight nodes in turn), blocks at the devnet's interval:
//!   the time for a block to reach 50 / 90 / 99 / 100% of the nodes after it was mined and for a
//!   transaction after it was submitted (medians over blocks and over a sample of
//!   transactions), the stale rate, and what a node sends.
//! - `stale`: at 1,024 nodes (32 with `--quick`), the block interval swept (1, 2, 5, 15 s; 1
//!   and 5 with `--quick`), compact blocks on and off, the same load, 60 intervals of virtual time
//!   but 60 to 300 s: the stale (orphaned) block rate. (60 s blocks, about 20 of them, held
//!   15.7 GB at 1,024 nodes, took 20 of the run's 35 minutes and found no stale block, as 15 s
//!   did.)
//! - `size`: at 1,024 nodes (32 with `--quick`), the block size swept through the size of the
//!   load's transactions (each carrying 0, 1 or 5 KB of data at 20 tx/s and a block a second:
//!   blocks of about 4 to 250 KB, and larger where whole blocks go stale; 0 and 5 KB with
//!   `--quick`), compact blocks on and off, 40 s: the stale rate. (20 KB, 1 MB blocks, held
//!   20 GB at 1,024 nodes and left too little memory for the runs after it.) Its
//!   uplinks carry what a node writes as TCP sockets do (`Uplink::Tcp`), the model `sim-check`
//!   found closest to the real binary under Shadow for large messages.
//! - `load`: at 16, 64 and 256 nodes (16 with `--quick`), the offered load swept (100 to 1,000
//!   tx/s; 30 and 300 with `--quick`), 20 s: what is confirmed, and the highest load at which
//!   every node keeps up, against N.
//!
//! The cost model is measured first, in the same run (`scale-costs.toml` beside the CSV);
//! `--quick` takes the reference calibration kept in the repository instead.

use std::sync::Arc;
use std::time::Instant;

use scalechain_lab::machine::rss_kib;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_p2p::msg::Role;
use scalechain_simnet::{
    budget, Accounts, CostModel, LoadPlan, Mined, MiningClock, NetModel, NodeId, Sim, SimConfig, Tracking,
    Uplink, WorkModel,
};
use scalechain_types::Hash;

use super::propagation;
use crate::{median, Ctx, Experiment, StudyError};

/// Columns of `scale.csv`.
pub const COLUMNS: &[&str] = &[
    "series",
    "nodes",
    "interval_s",
    "compact",
    "blocks",
    "stale_pct",
    "block_p50_ms",
    "block_p90_ms",
    "block_p99_ms",
    "block_p100_ms",
    "tx_p50_ms",
    "tx_p90_ms",
    "tx_p100_ms",
    "up_kbps_per_node",
    "offered_tps",
    "confirmed_tps",
    "backlog_max",
    "keeps_up",
    "region",
    "x_ms",
    "count",
    "virtual_s",
    "wall_s",
    "events_per_s",
    "rss_mib",
    "model",
    "costs",
    "commit",
    "seed",
    "tx_bytes",
    "block_kb",
    "uplink",
];

/// The light load of the propagation and stale series, transactions per second.
const TPS: f64 = 20.0;
/// Miners among the nodes.
const MINERS: usize = 4;
/// Links each node dials.
const OUTBOUND: usize = 8;
/// Virtual time after the load ends for the last blocks and transactions to spread, ms.
const TAIL_MS: u64 = 5_000;
/// A network keeps up with a load if, when the load ends, no node's pool holds more than this
/// many seconds of it (blocks come every second; what is pooled longer is a backlog).
const KEEPS_UP_S: f64 = 3.0;
/// Seed 001's submission: 1,001 transactions one a request at 1,000 a second.
const SEED001_TPS: f64 = 1_000.0;

/// One simulated run's setting.
#[derive(Clone, Copy)]
struct Point {
    series: &'static str,
    nodes: usize,
    interval_ms: u64,
    compact: bool,
    virtual_ms: u64,
    /// The offered load (0: none, blocks alone).
    tps: f64,
    /// Bytes of data each transaction of the load carries.
    data_bytes: usize,
    /// How uplinks are shared.
    uplink: Uplink,
}

/// Bytes of a plain transfer of the load (one input, one output, no data).
const TRANSFER_BYTES: usize = 190;

impl Point {
    /// Bytes of each transaction of the load.
    fn tx_bytes(&self) -> usize {
        TRANSFER_BYTES + self.data_bytes
    }
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let quick = ctx.opts.quick;
    let costs = cost_model(ctx)?;
    let dir = &ctx.opts.out;
    std::fs::create_dir_all(dir).map_err(|e| StudyError::io(dir, e))?;
    let path = dir.join("scale-costs.toml");
    std::fs::write(&path, costs.to_toml()).map_err(|e| StudyError::io(&path, e))?;
    let costs = Arc::new(costs);

    let interval = SimConfig::devnet(0).block_interval_ms;
    let point = |series, nodes, virtual_ms, tps| Point {
        series,
        nodes,
        interval_ms: interval,
        compact: true,
        virtual_ms,
        tps,
        data_bytes: 0,
        uplink: Uplink::Fifo,
    };
    let mut points = Vec::new();
    let sizes: &[usize] = if quick { &[16, 64] } else { &[16, 64, 256, 1_024] };
    let run_ms = if quick { 15_000 } else { 60_000 };
    for &nodes in sizes {
        points.push(point("propagation", nodes, run_ms, TPS));
    }
    // Blocks alone, beyond what a load can be simulated at.
    if !quick {
        for nodes in [4_096, 10_000] {
            points.push(point("blocks", nodes, 60_000, 0.0));
        }
    }
    let (stale_nodes, intervals): (usize, &[u64]) =
        if quick { (32, &[1, 5]) } else { (1_024, &[1, 2, 5, 15]) };
    for &s in intervals {
        for compact in [true, false] {
            let virtual_ms = if quick { 20_000 } else { (60 * s * 1_000).clamp(60_000, 300_000) };
            points.push(Point {
                interval_ms: s * 1_000,
                compact,
                ..point("stale", stale_nodes, virtual_ms, TPS)
            });
        }
    }
    // The block size swept through the transactions' size, at 1,024 nodes.
    let (size_nodes, datas, size_ms): (usize, &[usize], u64) =
        if quick { (32, &[0, 5_000], 15_000) } else { (1_024, &[0, 1_000, 5_000], 40_000) };
    for &data_bytes in datas {
        for compact in [true, false] {
            points.push(Point {
                compact,
                data_bytes,
                uplink: Uplink::Tcp,
                ..point("size", size_nodes, size_ms, TPS)
            });
        }
    }
    // The offered load swept at each size: what every node keeps up with, against N.
    let (load_nodes, loads, load_ms): (&[usize], &[f64], u64) = if quick {
        (&[16], &[30.0, 300.0], 4_000)
    } else {
        (&[16, 64, 256], &[100.0, 300.0, 500.0, 700.0, 1_000.0], 20_000)
    };
    for &nodes in load_nodes {
        for &tps in loads {
            points.push(point("load", nodes, load_ms, tps));
        }
    }
    // Seed 001's question at scale: 1,001 transactions one a request to one node.
    let seed_nodes = if quick { 16 } else { 1_024 };
    points.push(point("seed001", seed_nodes, 1_001, SEED001_TPS));

    ctx.start(points.len() as u64, "simulating");
    let mut table = Table::new(COLUMNS);
    for p in points {
        ctx.progress.set_message(format!(
            "{}: {} nodes, {} s blocks, {} tx/s",
            p.series,
            p.nodes,
            p.interval_ms / 1_000,
            p.tps
        ));
        for row in simulate(ctx, p, &costs)? {
            table.push(row);
        }
        ctx.progress.inc(1);
    }
    ctx.finish(Experiment::Scale, &table, charts, section)
}

/// The simulator's cost model for this run: the file `--costs` names, the repository's
/// reference with `--quick`, else measured on this machine now.
pub(crate) fn cost_model(ctx: &Ctx) -> Result<CostModel, StudyError> {
    if let Some(path) = &ctx.opts.costs {
        let text = std::fs::read_to_string(path).map_err(|e| StudyError::io(path, e))?;
        return CostModel::from_toml(&text)
            .map_err(|e| StudyError::Wrong(format!("{}: {e}", path.display())));
    }
    if ctx.opts.quick {
        return Ok(CostModel::reference());
    }
    ctx.progress.set_message("calibrating the cost model");
    let source = format!(
        "{}; {} cores; {} build; commit {}",
        ctx.machine.cpu, ctx.machine.cores, ctx.machine.build, ctx.machine.commit
    );
    scalechain_simnet::calibrate(1024, 7, &source).map_err(|e| StudyError::Wrong(e.to_string()))
}

/// What a row holds beyond the run's setting and speed.
#[derive(Default)]
struct Measured {
    mined: u64,
    stale_pct: f64,
    block: [f64; 4],
    tx: [f64; 3],
    up_kbps: f64,
    confirmed_tps: f64,
    backlog: usize,
    region: String,
    x_ms: f64,
    count: f64,
    block_kb: f64,
}

/// The longest a network may take to form ([`Sim::form`]), virtual ms.
const FORM_MS: u64 = 30_000;

fn simulate(ctx: &Ctx, p: Point, costs: &Arc<CostModel>) -> Result<Vec<Vec<String>>, StudyError> {
    // A run too large for this machine says so before it starts.
    let plan = budget::Plan {
        nodes: p.nodes,
        virtual_ms: p.virtual_ms + TAIL_MS,
        block_interval_ms: p.interval_ms,
        tps: p.tps,
        tx_bytes: p.tx_bytes() as u64,
    };
    if let Some(available) =
        std::fs::read_to_string("/proc/meminfo").ok().as_deref().and_then(budget::available_bytes)
    {
        plan.check(available).map_err(|e| StudyError::Wrong(format!("scale: {e}")))?;
    }
    let mut cfg = SimConfig::devnet(ctx.opts.seed);
    cfg.model = NetModel { uplink: p.uplink, ..NetModel::simblock() };
    cfg.mining = MiningClock::Network;
    cfg.block_interval_ms = p.interval_ms;
    cfg.compact_blocks = p.compact;
    cfg.keep_events = false;
    cfg.work = WorkModel::Modelled { costs: costs.clone(), cores: 2 };
    if p.series == "seed001" {
        // tx0 and its 1,000 children pooled together, as in `propagation`.
        cfg.mempool.max_descendants = propagation::FAN_OUT + 1;
    }
    let accounts = Accounts::new(&cfg.params, cfg.sig, ctx.opts.seed, 1024).with_data(p.data_bytes);
    let seed_txs = (p.series == "seed001").then(|| propagation::workload(&cfg.params));
    let hash = cfg.params.hash;
    let wall = Instant::now();
    let mut sim = Sim::new(cfg);
    sim.add_nodes(Role::Miner, MINERS);
    let peers = sim.add_nodes(Role::Peer, p.nodes.saturating_sub(MINERS));
    sim.connect_random(OUTBOUND).map_err(|e| StudyError::Wrong(format!("scale: {e}")))?;
    // Measured from a formed network: every link's handshake ended, so meshes hold all their
    // candidates (a couple of virtual seconds on SimBlock's latencies; nothing is mined meanwhile).
    if !sim.form(FORM_MS) {
        return Err(StudyError::Wrong(format!("scale: {} nodes did not form in {FORM_MS} ms", p.nodes)));
    }
    let start = sim.now();
    let running = Instant::now();
    let mut m = Measured::default();
    let mut hist = Vec::new();
    if let Some(txs) = &seed_txs {
        // Once the chain is past its first block (the premine is spendable), the 1,001 one a
        // request at 1,000 a second to a peer in North America.
        sim.run_until(60_000, |s| peers.iter().all(|&i| s.tip(i).is_some_and(|t| t.0 >= 1)));
        let from = peers.iter().copied().find(|&i| sim.region_of(i) == Some(0)).unwrap_or(peers[0]);
        sim.track(Tracking::All);
        let t0 = sim.now_us();
        let gap_us = (1e6 / SEED001_TPS) as u64;
        for t in txs {
            sim.submit_tracked(from, vec![t.clone()]);
            let next = sim.now_us() + gap_us;
            while sim.now_us() < next {
                sim.run_for(1);
            }
        }
        sim.run_for(TAIL_MS);
        // Arrivals at one node of each other region (seed 001's were 100–350 ms away), and at
        // the nearest North American one; one bucket width for all, 50 buckets.
        let ids: Vec<_> = txs.iter().map(|t| t.txid(hash)).collect();
        let mut watched: Vec<(String, NodeId)> = Vec::new();
        for (r, region) in sim.config().model.regions.iter().enumerate() {
            if let Some(&n) = peers.iter().find(|&&i| i != from && sim.region_of(i) == Some(r as u16)) {
                watched.push((region.name.clone(), n));
            }
        }
        let a = sim.arrivals();
        let delays: Vec<(String, Vec<f64>)> = watched
            .iter()
            .map(|(name, n)| {
                let d = ids
                    .iter()
                    .filter_map(|id| a.txs.get(id)?.iter().find(|(x, _)| x == n).map(|(_, t)| *t))
                    .map(|t| t.saturating_sub(t0) as f64 / 1e3)
                    .collect();
                (name.clone(), d)
            })
            .collect();
        let longest = delays.iter().flat_map(|(_, d)| d.iter().copied()).fold(0.0, f64::max);
        let width = (longest / propagation::BUCKETS as f64).max(0.1);
        for (name, d) in &delays {
            for (k, c) in propagation::histogram(d, width).into_iter().enumerate() {
                hist.push((name.clone(), k as f64 * width, c as f64));
            }
            // The row of the node itself: when its last arrived, and how many did.
            let last = d.iter().copied().fold(f64::NAN, f64::max);
            hist.push((name.clone(), last, d.len() as f64));
        }
    } else {
        let expected = (p.tps * p.virtual_ms as f64 / 1_000.0) as u64;
        sim.track(Tracking::EveryNth((expected / 200).max(1)));
        if p.tps > 0.0 {
            let targets: Vec<NodeId> =
                peers.iter().copied().step_by((peers.len() / 8).max(1)).take(8).collect();
            sim.start_load(LoadPlan::new(p.tps, start + 500, start + p.virtual_ms, targets), accounts);
        }
        sim.run_for(p.virtual_ms);
        m.backlog =
            sim.up_nodes().iter().filter_map(|&i| sim.replica(i)).map(|r| r.mempool.len()).max().unwrap_or(0);
        sim.run_for(TAIL_MS);
    }
    let (wall_s, run_s) = (wall.elapsed().as_secs_f64(), running.elapsed().as_secs_f64());

    let n = sim.up_nodes().len();
    let a = sim.arrivals();
    // Blocks and transactions with the tail to spread in.
    let cutoff_us = (start + p.virtual_ms.max(1)) * 1_000;
    let blocks: Vec<&Mined> = a.mined.iter().filter(|b| b.at_us < cutoff_us || seed_txs.is_some()).collect();
    let block_ms = |b: &&Mined, f: f64| a.block_reach_us(&b.hash, f, n).map(|us| us as f64 / 1_000.0);
    let txs: Vec<Hash> =
        a.submitted.iter().filter(|(_, &at)| at < cutoff_us || seed_txs.is_some()).map(|(t, _)| *t).collect();
    let tx_ms = |t: &Hash, f: f64| a.tx_reach_us(t, f, n).map(|us| us as f64 / 1_000.0);
    let height = sim.up_nodes().iter().filter_map(|&i| sim.tip(i)).map(|t| t.0).max().unwrap_or(0);
    m.mined = a.mined.len() as u64;
    m.stale_pct =
        if m.mined == 0 { 0.0 } else { m.mined.saturating_sub(height) as f64 * 100.0 / m.mined as f64 };
    let b = reach_medians(&blocks, &[0.5, 0.9, 0.99, 1.0], block_ms);
    m.block = [b[0], b[1], b[2], b[3]];
    let t = reach_medians(&txs, &[0.5, 0.9, 1.0], tx_ms);
    m.tx = [t[0], t[1], t[2]];
    let c = sim.counters();
    let virtual_s = (p.virtual_ms + TAIL_MS) as f64 / 1_000.0;
    m.up_kbps = c.up_bytes.iter().sum::<u64>() as f64 * 8.0 / n.max(1) as f64 / virtual_s / 1_000.0;
    // The first node's final chain: what clients had accepted that is on it, and the mean size
    // of its blocks (genesis left out).
    if let Some(r) = sim.up_nodes().first().and_then(|&i| sim.replica(i)) {
        let chain = r.chain.read();
        let confirmed =
            sim.accepted().iter().filter(|t| chain.tx_location(t).ok().flatten().is_some()).count();
        m.confirmed_tps = confirmed as f64 / (p.virtual_ms as f64 / 1_000.0);
        let sizes: Vec<usize> = chain
            .main_chain()
            .iter()
            .skip(1)
            .filter_map(|h| chain.block(h).ok().flatten())
            .map(|b| b.encoded_len())
            .collect();
        if !sizes.is_empty() {
            m.block_kb = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64 / 1_000.0;
        }
    }
    let f = |x: f64| if x.is_finite() { format!("{x:.1}") } else { String::new() };
    let loaded = p.tps > 0.0 && seed_txs.is_none();
    let row = |m: &Measured| -> Vec<String> {
        vec![
            p.series.into(),
            p.nodes.to_string(),
            format!("{}", p.interval_ms as f64 / 1_000.0),
            p.compact.to_string(),
            m.mined.to_string(),
            format!("{:.2}", m.stale_pct),
            f(m.block[0]),
            f(m.block[1]),
            f(m.block[2]),
            f(m.block[3]),
            f(m.tx[0]),
            f(m.tx[1]),
            f(m.tx[2]),
            format!("{:.1}", m.up_kbps),
            f(p.tps),
            if loaded { f(m.confirmed_tps) } else { String::new() },
            if loaded { m.backlog.to_string() } else { String::new() },
            // Kept-up is the load sweep's question (its blocks every second); at longer
            // intervals a pool holds the interval's load by design.
            if loaded && p.series == "load" {
                (m.backlog as f64 <= KEEPS_UP_S * p.tps).to_string()
            } else {
                String::new()
            },
            m.region.clone(),
            if m.region.is_empty() { String::new() } else { f(m.x_ms) },
            if m.region.is_empty() { String::new() } else { format!("{}", m.count) },
            format!("{virtual_s:.0}"),
            format!("{wall_s:.1}"),
            format!("{:.0}", c.events as f64 / run_s.max(1e-9)),
            (rss_kib().unwrap_or(0) / 1024).to_string(),
            sim.config().model.name.clone(),
            costs.source.replace(',', ";"),
            ctx.machine.commit.into(),
            ctx.opts.seed.to_string(),
            p.tx_bytes().to_string(),
            format!("{:.1}", m.block_kb),
            p.uplink.name().into(),
        ]
    };
    let mut rows = vec![row(&m)];
    // Seed 001's histograms: a row a bucket (`x_ms` its start, `count` its transactions), and a
    // row a node (`x_ms` its last arrival, `count` how many arrived) named by its region.
    for (k, (region, x, count)) in hist.into_iter().enumerate() {
        let last = (k + 1) % (propagation::BUCKETS + 1) == 0;
        let series = if last { "seed001-node" } else { "seed001-histogram" };
        let mut r = row(&Measured { region, x_ms: x, count, ..Measured::default() });
        r[0] = series.into();
        // Only the node's or the bucket's own columns.
        for c in r.iter_mut().take(18).skip(4) {
            c.clear();
        }
        rows.push(r);
    }
    Ok(rows)
}

/// Stale-block rates published for Bitcoin (10-minute blocks): Gervais et al. 2016 (0.41%) and
/// Decker and Wattenhofer 2013 (1.69% forks). Context only: other protocols and networks.
const BITCOIN_STALE: [(&str, f64); 2] =
    [("Bitcoin, Gervais et al. 2016", 0.41), ("Bitcoin, Decker & Wattenhofer 2013", 1.69)];

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let rows = |series: &'static str| -> Vec<&Vec<String>> { t.select("series", series).collect() };
    // The node count of a series' first row (a series runs at one size), for its chart's title.
    let nodes_of = |rows: &[&Vec<String>]| -> String {
        rows.first().zip(t.col("nodes")).map_or(String::new(), |(r, i)| r[i].clone())
    };
    let line = |rows: &[&Vec<String>], x: &str, y: &str, label: &str| {
        Series::line(label, rows.iter().filter_map(|r| Some((t.num(r, x)?, t.num(r, y)?))).collect())
    };
    let prop = rows("propagation");
    let mut blocks: Vec<Series> =
        [("block_p50_ms", "50% of nodes"), ("block_p90_ms", "90%"), ("block_p100_ms", "100%")]
            .iter()
            .map(|(c, l)| line(&prop, "nodes", c, l))
            .collect();
    let alone = rows("blocks");
    if !alone.is_empty() {
        blocks.push(line(&alone, "nodes", "block_p90_ms", "90%, blocks alone"));
    }
    let txs = [("tx_p50_ms", "50% of nodes"), ("tx_p90_ms", "90%"), ("tx_p100_ms", "100%")]
        .iter()
        .map(|(c, l)| line(&prop, "nodes", c, l))
        .collect();
    // The stale rate against `x`, a line for compact blocks and one for whole blocks.
    let by_compact = |rows: &[&Vec<String>], x: &str| -> Vec<Series> {
        [("true", "compact blocks"), ("false", "whole blocks")]
            .iter()
            .map(|(on, label)| {
                let rows: Vec<&Vec<String>> =
                    rows.iter().copied().filter(|r| t.col("compact").is_some_and(|i| r[i] == *on)).collect();
                line(&rows, x, "stale_pct", label)
            })
            .collect()
    };
    let stale = rows("stale");
    let stale_nodes = nodes_of(&stale);
    let mut stale_series = by_compact(&stale, "interval_s");
    for (label, pct) in BITCOIN_STALE {
        stale_series.push(Series::seed(label, vec![(600.0, pct)]));
    }
    let size: Vec<&Vec<String>> = rows("size");
    let size_series = by_compact(&size, "block_kb");
    let load = rows("load");
    let mut charts = vec![
        Chart {
            title: "Block propagation against network size (simulated, six regions)".into(),
            x_label: "nodes".into(),
            y_label: "ms from mined to reached".into(),
            log_x: true,
            log_y: true,
            x_names: Vec::new(),
            series: blocks,
        },
        Chart {
            title: "Transaction propagation against network size (simulated)".into(),
            x_label: "nodes".into(),
            y_label: "ms from submitted to admitted".into(),
            log_x: true,
            log_y: false,
            x_names: Vec::new(),
            series: txs,
        },
        Chart {
            title: "What a node sends against network size, at 20 tx/s (simulated)".into(),
            x_label: "nodes".into(),
            y_label: "kbit/s sent per node".into(),
            log_x: true,
            log_y: false,
            x_names: Vec::new(),
            series: vec![line(&prop, "nodes", "up_kbps_per_node", "mean per node")],
        },
        Chart {
            title: format!("Stale blocks against the block interval at {stale_nodes} nodes (simulated)"),
            x_label: "block interval, s".into(),
            y_label: "% of mined blocks not in the final chain".into(),
            log_x: true,
            log_y: false,
            x_names: Vec::new(),
            series: stale_series,
        },
    ];
    if !size.is_empty() {
        charts.push(Chart {
            title: format!(
                "Stale blocks against the block size at {} nodes, 1 s blocks (simulated)",
                nodes_of(&size)
            ),
            x_label: "mean block size, KB".into(),
            y_label: "% of mined blocks not in the final chain".into(),
            log_x: true,
            log_y: false,
            x_names: Vec::new(),
            series: size_series,
        });
    }
    if !load.is_empty() {
        let mut offered: Vec<(f64, f64)> =
            load.iter().filter_map(|r| t.num(r, "offered_tps")).map(|x| (x, x)).collect();
        offered.sort_by(|a, b| a.0.total_cmp(&b.0));
        offered.dedup();
        let mut series: Vec<Series> = sizes_of(t, &load)
            .into_iter()
            .map(|n| {
                let at: Vec<&Vec<String>> = of_size(t, &load, &n).collect();
                line(&at, "offered_tps", "confirmed_tps", &format!("confirmed, {n} nodes"))
            })
            .collect();
        series.push(Series::line("offered", offered));
        charts.push(Chart {
            title: "Confirmed against offered load, by network size (simulated)".into(),
            x_label: "offered, tx/s".into(),
            y_label: "tx/s".into(),
            log_x: true,
            log_y: true,
            x_names: Vec::new(),
            series,
        });
    }
    let hist = rows("seed001-histogram");
    if !hist.is_empty() {
        let mut series = Vec::new();
        for region in t.distinct("region") {
            let points: Vec<(f64, f64)> = hist
                .iter()
                .filter(|r| t.col("region").is_some_and(|i| r[i] == region))
                .filter_map(|r| Some((t.num(r, "x_ms")?, t.num(r, "count")?)))
                .collect();
            if !points.is_empty() {
                series.push(Series::line(region, points));
            }
        }
        charts.push(Chart {
            title: "Seed 001 at scale: arrivals of 1,001 transactions sent one a request at 1,000/s".into(),
            x_label: "ms since the first was sent".into(),
            y_label: "transactions per bucket".into(),
            log_x: false,
            log_y: false,
            x_names: Vec::new(),
            series,
        });
    }
    charts
}

fn section(t: &Table) -> String {
    let mut s = String::from(
        "On the simulator: every node runs the production protocol machine and replica; SimBlock's six \
         regions (their measured latency and bandwidth tables, Pareto jitter), each node dialling 8 \
         peers, gossip along meshes of degree 8 (6–12), blocks by a Poisson process at the interval, \
         4 miners, a load submitted one transaction a request to eight peers in turn. Work is \
         charged by the cost model in `scale-costs.toml` (the file `--costs` named, else measured on \
         this machine before the runs, or with `--quick` the repository's reference calibration; \
         the `costs` column says which), each node a machine of two cores.\n\n\
         Series: `propagation` (16 to 1,024 nodes at 20 tx/s), `blocks` (4,096 and 10,000 nodes, \
         blocks alone), `stale` (the block interval at 1,024 nodes, compact blocks on and off), \
         `size` (the block size at 1,024 nodes and 1 s blocks, through transactions carrying 0 to \
         5 KB of data, compact blocks on and off, uplinks carrying what a node writes as TCP sockets do; \
         `block_kb` is the mean block on the final chain), \
         `load` (the offered load swept at 16, 64 and 256 nodes: `confirmed_tps` is what clients had accepted \
         that is on the final chain, per second of load; `backlog_max` the largest pool when the \
         load ended; the network `keeps_up` if no pool then held more than 3 s of the load) and \
         `seed001` (seed 001's submission at 1,024 nodes). Propagation is measured from a \
         block's mining (a transaction's submission) to its acceptance (admission) by the given \
         share of nodes, medians over the blocks mined (and a sample of the transactions \
         submitted) before the load ended that reached every node, the same ones for every share \
         (a block that went stale part-way counts in the stale rate). The stale rate counts mined blocks not in the longest \
         chain at the end. Each network first runs until every link's handshake ended and the \
         meshes formed (under 2 virtual seconds), nothing mined meanwhile; times start after it.\n\n\
         **Not modelled**: CPU shared between nodes (each has its own cores), disk, the transport's \
         CPU, TCP's losses and congestion control (a message takes latency + size / bandwidth, \
         queued on the sender's uplink, no faster than the receiver's download rate; in `size`, \
         a socket send buffer at a time and a window per round trip), downlink queues, \
         gossipsub's IHAVE/IWANT (meshes, flood publishing and IDONTWANT only). **How it was \
         checked**: `sim-check` runs \
         `propagation`'s scenario both on real node processes and in the simulator at 4 to 16 \
         nodes, and with the real binary under Shadow on these six regions at 64 and 256 nodes (16 with \
         `--quick`) \
         (where Shadow is installed): blocks' median, 90% and full reach within 16% of Shadow's; \
         a 232 KB transaction batch within 8% of Shadow's with the uplink as TCP \
         sockets carry it (`tcp`, the model of `size`), 9–24% slower with the uplink shared \
         equally and 34–56% faster with one copy after another (the model of the other series, whose \
         messages are small). Its section and \
         docs/SIMULATOR.md say where the times agree and why they do not elsewhere. Read these \
         figures for their shape against N and load. Figure by figure:\n\n\
         - *Block propagation against N*: checked under Shadow to 256 nodes (within 16%) and \
         against real processes across seed 001's sites at 8 and 16 (within 4%); 1,024 to 10,000 \
         nodes extrapolate the same model. Leaves out CPU shared between nodes and downlink queues.\n\
         - *Transaction propagation against N*: checked against real processes across seed 001's \
         sites (within 10% at 8 and 16 nodes, the shared-host model); a transaction is small, so the uplink's model \
         matters little. Leaves out the transport's CPU.\n\
         - *What a node sends*: the bytes of every message sent, with a fixed framing overhead \
         (64 bytes); gossipsub's control messages but IDONTWANT are not counted.\n\
         - *Stale blocks against the interval*: rests on block propagation, checked to 256 nodes; \
         1,024 is four times the largest size checked.\n\
         - *Stale blocks against the block size*: the `tcp` uplink, within 8% of Shadow for a \
         232 KB message at 64 and 256 nodes; whole blocks past that size are past what was checked.\n\
         - *Confirmed against offered load*: the cost model, calibrated once on this machine's \
         engine, each node a two-core machine of its own; against real processes it holds a \
         node's work alone, not where processes share cores.\n\
         - *Seed 001 at scale*: the transaction path, checked across seed 001's sites as above.\n\n\
         Context, not like for like (other protocols, networks and block sizes, so the chart \
         shows Bitcoin's figures at its 600 s interval as points): Decker and Wattenhofer \
         (2013) found that in Bitcoin \"the median time until a node receives a block is 6.5 \
         seconds\" and measured a fork rate of 1.69%; Gervais et al. (2016) report stale rates \
         of 0.41% for Bitcoin and 6.8% for Ethereum.\n\n",
    );
    let mut summary = Table::new(&COLUMNS[..21]);
    for r in t.rows.iter().filter(|r| r[0] != "seed001-histogram" && r[0] != "seed001-node") {
        summary.push(r[..21].to_vec());
    }
    s.push_str(&summary.markdown(&COLUMNS[..18]));
    let size: Vec<&Vec<String>> = t.select("series", "size").collect();
    if !size.is_empty() {
        s.push_str(
            "\n**The block size** (series `size`; uplinks as TCP sockets carry what a node writes, the \
             model `sim-check` found within 8% of the real binary under Shadow for large messages):\n\n\
             | compact | tx bytes | mean block, KB | blocks | stale % | block p50 / p90 ms |\n|---|---|---|---|---|---|\n",
        );
        for r in size {
            let g = |c: &str| t.col(c).map_or(String::new(), |i| r[i].clone());
            s.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} / {} |\n",
                g("compact"),
                g("tx_bytes"),
                g("block_kb"),
                g("blocks"),
                g("stale_pct"),
                g("block_p50_ms"),
                g("block_p90_ms")
            ));
        }
    }
    let load: Vec<&Vec<String>> = t.select("series", "load").collect();
    if !load.is_empty() {
        s.push_str(
            "\n**Keeping up as the network grows** (series `load`; a network keeps up if, when the \
             load ends, no node's pool holds more than 3 s of it):\n\n\
             | nodes | highest load every node kept up with, tx/s | lowest it did not, tx/s |\n|---|---|---|\n",
        );
        let rate = |x: Option<f64>| x.map_or("none swept".to_string(), |v| format!("{v:.0}"));
        for (n, kept, lost) in keeps_up_by_size(t, &load) {
            s.push_str(&format!("| {n} | {} | {} |\n", rate(kept), rate(lost)));
        }
    }
    let counts: Vec<u64> = t
        .select("series", "stale")
        .filter_map(|r| t.col("blocks").and_then(|i| r[i].parse().ok()))
        .filter(|&n| n > 0)
        .collect();
    if let (Some(&few), Some(&most)) = (counts.iter().min(), counts.iter().max()) {
        s.push_str(&format!(
            "\n**How far to read the stale rates.** Each `stale` point counts {few} to {most} mined \
             blocks, so one stale block more or less moves it by {:.1} to {:.1} points. A rate p over \
             n blocks has a standard error of about √(p(1 − p) / n): ±4 points at 14% over 70 \
             blocks. Differences between neighbouring points smaller than twice that are noise.\n",
            100.0 / most as f64,
            100.0 / few as f64
        ));
    }
    let nodes: Vec<&Vec<String>> = t.select("series", "seed001-node").collect();
    if !nodes.is_empty() {
        s.push_str(
            "\n**Seed 001's question at scale.** The 1,001 transactions of `propagation` (`tx0` and \
             its 1,000 spends) sent one a request at 1,000 a second to a peer in North America, \
             on the same network; the figure draws, for one node of each region, how many \
             arrived in each of 50 buckets (seed 001's Tables 1–2). Seed 001 measured, from \
             Canada to its London and Mumbai machines: \"it took between 50 and 60 seconds for \
             all transactions to arrive\", grouped into \"packets\" of \"between 20 to about 60 \
             transactions\"; the same transactions were accepted where they were sent in \"about \
             400 milliseconds\". Ours, the last arrival at each node:\n\n\
             | region | arrived | last, ms after the first was sent |\n|---|---|---|\n",
        );
        for r in nodes {
            let g = |c: &str| t.col(c).map_or(String::new(), |i| r[i].clone());
            s.push_str(&format!("| {} | {} of 1001 | {} |\n", g("region"), g("count"), g("x_ms")));
        }
    }
    s
}

/// The node counts of `rows`, in the order they first come.
fn sizes_of(t: &Table, rows: &[&Vec<String>]) -> Vec<String> {
    let mut sizes: Vec<String> = Vec::new();
    for r in rows {
        if let Some(n) = t.col("nodes").map(|i| &r[i]) {
            if !sizes.contains(n) {
                sizes.push(n.clone());
            }
        }
    }
    sizes
}

/// The rows of `rows` at `nodes` nodes.
fn of_size<'a>(
    t: &'a Table,
    rows: &'a [&'a Vec<String>],
    nodes: &'a str,
) -> impl Iterator<Item = &'a Vec<String>> + 'a {
    rows.iter().copied().filter(move |r| t.col("nodes").is_some_and(|i| r[i] == nodes))
}

/// Per network size of the `load` rows: the highest offered load every node kept up with and
/// the lowest it did not (either `None` if no rung was so), tx/s.
fn keeps_up_by_size(t: &Table, rows: &[&Vec<String>]) -> Vec<(String, Option<f64>, Option<f64>)> {
    sizes_of(t, rows)
        .into_iter()
        .map(|n| {
            let at = of_size(t, rows, &n);
            let (mut kept, mut lost): (Option<f64>, Option<f64>) = (None, None);
            for r in at {
                let (Some(tps), Some(up)) =
                    (t.num(r, "offered_tps"), t.col("keeps_up").map(|i| r[i] == "true"))
                else {
                    continue;
                };
                if up {
                    kept = Some(kept.map_or(tps, |k| k.max(tps)));
                } else {
                    lost = Some(lost.map_or(tps, |l| l.min(tps)));
                }
            }
            (n, kept, lost)
        })
        .collect()
}

/// The median time for an item (a block, a transaction) to reach each share of the nodes, over
/// the items that reached every node (`reach(item, share)`: ms, `None` if it never did), so
/// every share's median is over the same items. A block that went stale part-way reached half
/// the nodes and never nine in ten; counted in one median and not the next, it would make the
/// 50% slower than the 90%. `NaN` for every share if no item reached every node.
fn reach_medians<T>(items: &[T], shares: &[f64], reach: impl Fn(&T, f64) -> Option<f64>) -> Vec<f64> {
    let everywhere: Vec<&T> = items.iter().filter(|i| reach(i, 1.0).is_some()).collect();
    shares.iter().map(|&f| median(everywhere.iter().filter_map(|i| reach(i, f)).collect())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_share_s_median_is_over_the_items_that_reached_every_node() {
        // (time to 50%, to 90%, to 100%): two blocks that spread, two that went stale part-way.
        let items: [(Option<f64>, Option<f64>, Option<f64>); 4] = [
            (Some(100.0), Some(200.0), Some(300.0)),
            (Some(120.0), Some(220.0), Some(320.0)),
            (Some(900.0), None, None),
            (Some(950.0), Some(990.0), None),
        ];
        let reach = |i: &(Option<f64>, Option<f64>, Option<f64>), f: f64| match f {
            x if x <= 0.5 => i.0,
            x if x <= 0.9 => i.1,
            _ => i.2,
        };
        let m = reach_medians(&items, &[0.5, 0.9, 1.0], reach);
        assert_eq!(m, vec![110.0, 210.0, 310.0]);
        assert!(m.windows(2).all(|w| w[0] <= w[1]));
        // Counted over whichever reached each share, the 50% would read 510 ms, the 90% 220.
        let none: [(Option<f64>, Option<f64>, Option<f64>); 1] = [(Some(1.0), None, None)];
        assert!(reach_medians(&none, &[0.5], reach)[0].is_nan());
    }

    #[test]
    fn keeping_up_is_found_per_network_size_between_the_rungs() {
        let mut t = Table::new(COLUMNS);
        let row = |nodes: &str, tps: &str, up: &str| {
            let mut r = vec![String::new(); COLUMNS.len()];
            for (c, v) in [("series", "load"), ("nodes", nodes), ("offered_tps", tps), ("keeps_up", up)] {
                r[COLUMNS.iter().position(|x| *x == c).unwrap()] = v.into();
            }
            r
        };
        for (n, tps, up) in [
            ("16", "100", "true"),
            ("16", "300", "true"),
            ("16", "1000", "false"),
            ("256", "100", "true"),
            ("256", "300", "false"),
            ("256", "1000", "false"),
            ("64", "100", "false"),
        ] {
            t.push(row(n, tps, up));
        }
        let load: Vec<&Vec<String>> = t.select("series", "load").collect();
        assert_eq!(
            keeps_up_by_size(&t, &load),
            vec![
                ("16".into(), Some(300.0), Some(1000.0)),
                ("256".into(), Some(100.0), Some(300.0)),
                ("64".into(), None, Some(100.0)),
            ]
        );
        let text = section(&t);
        assert!(text.contains("| 256 | 100 | 300 |"), "{text}");
        assert!(text.contains("| 64 | none swept | 100 |"), "{text}");
    }
}
