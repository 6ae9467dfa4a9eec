//! `sync`: initial sync. A devnet (3 peers and a miner, node processes on this machine) builds
//! a chain of transfers through the load benchmark — 1,050,000 by default (15,000 tx/s for
//! 70 s), 4,000 with `--quick` — then every node but one peer stops, and a new peer, started
//! with an empty data directory and that peer as its bootstrap, downloads, validates (every
//! signature: nothing is in its signature cache) and commits the whole chain. The late node's
//! height is polled every 50 ms from its start until it holds the tip the devnet ended with.
//! Then it stops, and four more new peers sync the same chain from the same peer in turn: one
//! with the txid index off (`store.tx_index`), one with the owner index off
//! (`store.owner_index`), one with both off, and one with the defaults again: what each index
//! costs a sync, and how far the machine drifted meanwhile.
//!
//! Beside it, `bound`: `verify_txs` in parallel on 2^14 transfers of the `tx-throughput`
//! workload (2^10 with `--quick`), in this process and in the same run — the parallel
//! verification bound that the sync, commits included, is measured against.
//!
//! Rows: `bound` (its rate); `sync`, `sync-no-txid-index`, `sync-no-owner-index`, `sync-lean`
//! and `sync-repeat` (each new node's whole sync: seconds, the tip's height, the chain's
//! transactions, their rate); and `progress`, `progress-no-txid-index`,
//! `progress-no-owner-index`, `progress-lean` and `progress-repeat` (one per poll: seconds
//! since the start, height, transactions connected so far).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use scalechain_consensus::{verify_txs, VerifyMode};
use scalechain_lab::bench::spec::{Round, Workload};
use scalechain_lab::launcher::{Launcher, NodeSpec, Role};
use scalechain_lab::load::prepare::Shape;
use scalechain_lab::load::schedule::Rate;
use scalechain_lab::output::{sig4, Target};
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_workload::fixed::{transfers, Spec};

use super::e2e::{self, Setting};
use super::{study_params, verify_config, with_env};
use crate::{median, Ctx, Experiment, StudyError};

/// Columns of `sync.csv`.
pub const COLUMNS: &[&str] = &["series", "t_s", "height", "txs", "tx_per_s", "build", "commit"];

/// Bitcoin Core's cost of connecting a block, per input (`ConnectBlock`, about 12 µs), as the
/// issue quotes it: context for the rate of a sync, not a measurement of ours.
pub const BITCOIN_CORE_US_PER_INPUT: f64 = 12.0;

/// A new node's sync rate against the parallel verification bound (commits included).
pub const SYNC_TARGET: Target = Target::AtLeast(0.8);

/// How the chain is built: offered rate, seconds, and the longest wait for the sync.
fn plan(quick: bool) -> (f64, u64, Duration) {
    if quick {
        (1_000.0, 4, Duration::from_secs(120))
    } else {
        (15_000.0, 70, Duration::from_secs(900))
    }
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let exe = e2e::node_binary(ctx, "sync")?;
    let quick = ctx.opts.quick;
    let (tps, secs, limit) = plan(quick);
    ctx.start(4, "the verification bound");
    let mut table = Table::new(COLUMNS);
    let mut push = |series: &str, t: f64, height: u64, txs: u64, rate: f64| {
        table.push(vec![
            series.into(),
            format!("{t:.3}"),
            height.to_string(),
            txs.to_string(),
            format!("{rate:.1}"),
            ctx.machine.build.into(),
            ctx.machine.commit.into(),
        ]);
    };
    let bound = bound(ctx, if quick { 1 << 10 } else { 1 << 14 })?;
    push("bound", 0.0, 0, 0, bound);
    ctx.progress.inc(1);
    let round = Round {
        name: format!("chain {tps} tx/s for {secs} s"),
        line: 0,
        workload: Workload::Transfer(Shape::ONE_TO_ONE),
        rate: Rate::Fixed { tps },
        controller: "fixed-rate",
        duration: Some(Duration::from_secs(secs)),
        txs: (tps * secs as f64) as u64,
        drain: Duration::from_secs(120),
    };
    let groups = vec![("chain".to_string(), vec![round])];
    let built = std::cell::Cell::new(0u64);
    let mut synced: Option<Synced> = None;
    e2e::run_groups_then(
        ctx,
        &exe,
        &Setting::default(),
        &groups,
        |_, _, _, r| built.set(r.succeeded),
        |net, rt| {
            if built.get() == 0 {
                return Err(StudyError::Wrong("the load confirmed no transaction".into()));
            }
            // The peer the late node syncs from stays; nothing else competes for the cores, and
            // with the miner gone the tip holds still.
            for name in ["miner0", "peer1", "peer2"] {
                net.stop_node(name).map_err(launch)?;
            }
            ctx.progress.set_message("counting the chain's transactions");
            let source = net.node("peer0").map_err(launch)?.client().clone();
            // Blocks the miner announced just before it stopped reach the peer first.
            std::thread::sleep(Duration::from_secs(2));
            let tip = rt.block_on(source.tip()).map_err(api)?;
            // Transactions per height (coinbases left out: the sync's work is the others).
            let mut per_height = vec![0u64; tip.height as usize + 1];
            for h in 1..=tip.height {
                let ids = rt.block_on(source.block_txids(h)).map_err(api)?;
                per_height[h as usize] = ids.txids.len().saturating_sub(1) as u64;
            }
            ctx.progress.set_message(format!("a new node syncing {} blocks", tip.height));
            let boot = net.node("peer0").map_err(launch)?.p2p_addr().to_string();
            let mut runs = Vec::new();
            for (i, v) in VARIANTS.iter().enumerate() {
                ctx.progress.set_message(format!("a new node ({}) syncing {} blocks", v.what, tip.height));
                let name = format!("late{i}");
                let mut spec = NodeSpec::new(name.clone(), Role::Peer).bootstrap(boot.clone());
                if let Some(toml) = v.config {
                    spec = spec.config(toml);
                }
                let points = follow(net, rt, spec, &tip, limit)?;
                // The next new node syncs from the same peer, alone with it; this one's copy of
                // the chain goes (a copy of a million transactions per new node adds up).
                let dir = net.node(&name).map_err(launch)?.data_dir().to_path_buf();
                net.stop_node(&name).map_err(launch)?;
                std::fs::remove_dir_all(&dir).map_err(|e| StudyError::io(&dir, e))?;
                runs.push(points);
            }
            synced = Some(Synced { per_height, runs });
            Ok(())
        },
    )?;
    ctx.progress.inc(1);
    let s = synced.ok_or_else(|| StudyError::Wrong("the sync did not run".into()))?;
    let cumulative = |h: u64| -> u64 { s.per_height.iter().take(h as usize + 1).sum() };
    for (v, points) in VARIANTS.iter().zip(&s.runs) {
        let &(total_s, height) = points.last().ok_or_else(|| StudyError::Wrong("no poll".into()))?;
        let txs = cumulative(height);
        push(v.series, total_s, height, txs, txs as f64 / total_s);
        for &(t, h) in points {
            push(v.progress, t, h, cumulative(h), 0.0);
        }
    }
    ctx.finish(Experiment::Sync, &table, charts, section)
}

/// What the late nodes' syncs gave.
struct Synced {
    /// Transactions (coinbase excluded) of each block, by height.
    per_height: Vec<u64>,
    /// For each of [`VARIANTS`], in order: seconds since its late node started, and its
    /// height then.
    runs: Vec<Vec<(f64, u64)>>,
}

/// One kind of new node that syncs the chain.
struct Variant {
    /// The `series` of its `sync` row.
    series: &'static str,
    /// The `series` of its `progress` rows.
    progress: &'static str,
    /// What it is, for the report and the chart.
    what: &'static str,
    /// Its node configuration (`None`: the defaults).
    config: Option<&'static str>,
}

/// The new nodes, one after the other from the same peer: as a user runs one (every index
/// on, the defaults), one without the txid index, one without the owner index, one that
/// serves no lookups (both off; ADRs 0004 and 0005), and the defaults again. Each index's cost
/// is measured against the mean of the two default runs, and their difference is the drift of
/// the machine over the run, which the report states.
const VARIANTS: [Variant; 5] = [
    Variant { series: "sync", progress: "progress", what: "indexes on, the defaults", config: None },
    Variant {
        series: "sync-no-txid-index",
        progress: "progress-no-txid-index",
        what: "txid index off",
        config: Some("[store]\ntx_index = false\n"),
    },
    Variant {
        series: "sync-no-owner-index",
        progress: "progress-no-owner-index",
        what: "owner index off",
        config: Some("[store]\nowner_index = false\n"),
    },
    Variant {
        series: "sync-lean",
        progress: "progress-lean",
        what: "txid and owner indexes off",
        config: Some("[store]\ntx_index = false\nowner_index = false\n"),
    },
    Variant {
        series: "sync-repeat",
        progress: "progress-repeat",
        what: "the defaults again, last",
        config: None,
    },
];

/// Starts `spec`, a new node, and polls its height every 50 ms until it holds `tip`: the
/// polls' (seconds since its start, height).
fn follow(
    net: &mut Launcher,
    rt: &tokio::runtime::Runtime,
    spec: NodeSpec,
    tip: &scalechain_client::types::Tip,
    limit: Duration,
) -> Result<Vec<(f64, u64)>, StudyError> {
    let t0 = Instant::now();
    let client = net.start(spec).map_err(launch)?.client().clone();
    let stop: &AtomicBool = scalechain_lab::interrupt::flag();
    let mut points = Vec::new();
    loop {
        if stop.load(Ordering::Relaxed) {
            return Err(StudyError::Wrong("interrupted".into()));
        }
        let t = t0.elapsed();
        if t > limit {
            return Err(StudyError::Wrong(format!(
                "the new node did not reach height {} in {} s",
                tip.height,
                limit.as_secs()
            )));
        }
        let now = rt.block_on(client.tip()).map_err(api)?;
        points.push((t.as_secs_f64(), now.height));
        if now.height >= tip.height {
            if now.height != tip.height || now.hash != tip.hash {
                return Err(StudyError::Wrong(format!(
                    "the new node's tip {} at height {} is not the devnet's, {} at {}",
                    now.hash, now.height, tip.hash, tip.height
                )));
            }
            return Ok(points);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn launch(e: scalechain_lab::launcher::LaunchError) -> StudyError {
    StudyError::Wrong(format!("the devnet: {e}"))
}

fn api(e: scalechain_client::ClientError) -> StudyError {
    StudyError::Wrong(format!("node API: {e}"))
}

/// `verify_txs` in parallel on `n` transfers: transactions per second, the median of the runs.
fn bound(ctx: &Ctx, n: usize) -> Result<f64, StudyError> {
    let p = study_params();
    let pool = ctx.pool(ctx.threads())?;
    let w = pool.install(|| transfers(&p, &super::CHAIN_ID, &Spec::simple(n, ctx.opts.seed)));
    let cfg = verify_config(VerifyMode::Parallel);
    let mut times = Vec::with_capacity(ctx.runs());
    for _ in 0..ctx.runs() {
        let t = Instant::now();
        let ok = pool.install(|| {
            with_env(&p, &cfg, &w.utxos, |env| verify_txs(env, &w.txs).iter().all(Result::is_ok))
        });
        times.push(t.elapsed().as_secs_f64());
        if !ok {
            return Err(StudyError::Wrong("a valid transfer of the bound's workload was refused".into()));
        }
    }
    Ok(n as f64 / median(times))
}

fn first(t: &Table, series: &str) -> Option<Vec<String>> {
    t.select("series", series).next().cloned()
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let mut series = Vec::new();
    let mut end: f64 = 0.0;
    for v in &VARIANTS {
        let progress: Vec<(f64, f64)> = t
            .select("series", v.progress)
            .filter_map(|r| Some((t.num(r, "t_s")?, t.num(r, "txs")?)))
            .collect();
        if let Some(last) = progress.last() {
            end = end.max(last.0);
            series.push(Series::line(format!("a new node, {}: transactions connected", v.what), progress));
        }
    }
    let end = if end > 0.0 { end } else { 1.0 };
    if let Some(rate) = first(t, "bound").and_then(|r| t.num(&r, "tx_per_s")) {
        series.push(Series::line("parallel verification bound", vec![(0.0, 0.0), (end, rate * end)]));
        series.push(Series::line("0.8 × the bound (the target)", vec![(0.0, 0.0), (end, 0.8 * rate * end)]));
    }
    vec![Chart {
        title: "Initial sync: a new node catching up with the devnet's chain".into(),
        x_label: "seconds since the new node started".into(),
        y_label: "transactions connected".into(),
        log_x: false,
        log_y: false,
        x_names: Vec::new(),
        series,
    }]
}

fn section(t: &Table) -> String {
    let mut s = String::from(
        "A devnet (3 peers, a miner) builds a chain of one-input, one-output transfers through \
         the load benchmark; then all but one peer stop and a new peer, with an empty data \
         directory and that peer as its bootstrap, downloads, validates (every signature: its \
         signature cache is empty) and commits the whole chain. The time runs from the new \
         node's start (process start and store creation included) to the poll (every 50 ms) \
         that finds it at the devnet's tip. Then four more new peers sync the same chain from \
         the same peer in turn: with the txid index off (`[store] tx_index = false`), with the \
         owner index off (`owner_index = false`), with both off, as a node that serves no \
         lookups runs, and with the defaults again, to measure the drift. `bound` is \
         `verify_txs` in parallel on the `tx-throughput` workload in this process, in the \
         same run.\n\n",
    );
    let bound = first(t, "bound").and_then(|r| t.num(&r, "tx_per_s"));
    let rows: Vec<(&Variant, Vec<String>)> =
        VARIANTS.iter().filter_map(|v| Some((v, first(t, v.series)?))).collect();
    if rows.is_empty() {
        return s;
    }
    s.push_str("| new node | blocks | transactions | sync s | tx/s | bound tx/s | / bound | target |\n");
    s.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
    for (v, r) in &rows {
        let (secs, height, txs, rate) = (
            t.num(r, "t_s").unwrap_or(0.0),
            t.num(r, "height").unwrap_or(0.0),
            t.num(r, "txs").unwrap_or(0.0),
            t.num(r, "tx_per_s").unwrap_or(0.0),
        );
        s.push_str(&format!(
            "| {} | {height} | {txs} | {secs:.2} | {} | {} | {} | {} |\n",
            v.what,
            sig4(rate),
            bound.map_or("n/a".into(), sig4),
            bound.map_or("n/a".into(), |b| SYNC_TARGET.cell(&format!("{:.3}", rate / b), rate / b)),
            SYNC_TARGET.text(),
        ));
    }
    s.push('\n');
    let rate = |series: &str| first(t, series).and_then(|r| t.num(&r, "tx_per_s")).filter(|r| *r > 0.0);
    let us = |series: &str| rate(series).map(|r| 1e6 / r);
    // The defaults' µs per transaction: the mean of their two runs (first and last).
    let defaults: Vec<f64> = ["sync", "sync-repeat"].iter().filter_map(|v| us(v)).collect();
    if let (false, Some(off)) = (defaults.is_empty(), us("sync-lean")) {
        let on = defaults.iter().sum::<f64>() / defaults.len() as f64;
        s.push_str(&format!(
            "The indexes cost this sync {:.1} µs per transaction: the node without them syncs at \
             {:.2}× the rate of the node with them",
            on - off,
            on / off,
        ));
        let each: Vec<String> =
            [("sync-no-txid-index", "the txid index"), ("sync-no-owner-index", "the owner index")]
                .iter()
                .filter_map(|(series, name)| Some(format!("{name} {:.1} µs", on - us(series)?)))
                .collect();
        if !each.is_empty() {
            s.push_str(&format!(" (each alone: {})", each.join(", ")));
        }
        s.push_str(". The nodes synced one after the other from the same peer, one run each");
        if let [first, last] = defaults[..] {
            s.push_str(&format!(
                "; the defaults ran first and last, {first:.1} and {last:.1} µs per transaction, so \
                 the machine drifted {:.0}% over the run: read differences smaller than that as noise",
                100.0 * (first - last).abs() / on,
            ));
        }
        s.push_str(".\n\n");
    }
    if let Some(on) = rate("sync") {
        // One input per transfer, so the µs per input is the µs per transaction.
        s.push_str(&format!(
            "Per input connected: {:.1} µs of wall time on this machine's cores (the defaults), \
             against Bitcoin Core's ≈ {BITCOIN_CORE_US_PER_INPUT} µs per input in `ConnectBlock` \
             (one core; context, not a measurement of ours).\n\n",
            1e6 / on,
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_and_chart_read_the_rows() {
        let mut t = Table::new(COLUMNS);
        for row in [
            ["bound", "0.000", "0", "0", "200000.0"],
            ["progress", "0.500", "0", "0", "0.0"],
            ["progress", "5.000", "40", "800000", "0.0"],
            ["sync", "6.000", "50", "1000000", "166666.7"],
            ["progress-lean", "0.500", "0", "0", "0.0"],
            ["progress-lean", "4.000", "50", "1000000", "0.0"],
            ["sync-lean", "5.000", "50", "1000000", "200000.0"],
            ["sync-no-txid-index", "5.500", "50", "1000000", "181818.2"],
            ["sync-repeat", "7.000", "50", "1000000", "142857.1"],
        ] {
            let mut r: Vec<String> = row.iter().map(|s| s.to_string()).collect();
            r.extend(["portable".into(), "c".into()]);
            t.push(r);
        }
        let text = section(&t);
        assert!(
            text.contains(
                "| indexes on, the defaults | 50 | 1000000 | 6.00 | 166667 | 200000 | 0.833 (met) | ≥ 0.8 |"
            ),
            "{text}"
        );
        assert!(
            text.contains("| txid and owner indexes off | 50 | 1000000 | 5.00 | 200000 | 200000 | 1.000 (met) | ≥ 0.8 |"),
            "{text}"
        );
        assert!(text.contains("| txid index off | 50 | 1000000 | 5.50 | 181818 |"), "{text}");
        // The defaults: 6 and 7 µs per transaction, 6.5 on average, against 5 and 5.5.
        assert!(
            text.contains("cost this sync 1.5 µs per transaction") && text.contains("at 1.30× the rate"),
            "{text}"
        );
        // The owner index's node did not run, so it is not named.
        assert!(text.contains("(each alone: the txid index 1.0 µs)."), "{text}");
        assert!(text.contains("6.0 and 7.0 µs per transaction, so the machine drifted 15%"), "{text}");
        let charts = charts(&t);
        assert_eq!(charts[0].series.len(), 4);
        assert_eq!(charts[0].series[0].points, vec![(0.5, 0.0), (5.0, 800_000.0)]);
        assert_eq!(charts[0].series[1].points, vec![(0.5, 0.0), (4.0, 1_000_000.0)]);
        assert_eq!(charts[0].series[2].points, vec![(0.0, 0.0), (5.0, 1_000_000.0)]);
    }
}
