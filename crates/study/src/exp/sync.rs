//! `sync`: initial sync. A devnet (3 peers and a miner, node processes on this machine) builds
//! a chain of transfers through the load benchmark — 1,050,000 by default (15,000 tx/s for
//! 70 s), 4,000 with `--quick` — then every node but one peer stops, and a new peer, started
//! with an empty data directory and that peer as its bootstrap, downloads, validates (every
//! signature: nothing is in its signature cache) and commits the whole chain. The late node's
//! height is polled every 50 ms from its start until it holds the tip the devnet ended with.
//!
//! Beside it, `bound`: `verify_txs` in parallel on 2^14 transfers of the `tx-throughput`
//! workload (2^10 with `--quick`), in this process and in the same run — the parallel
//! verification bound that the sync, commits included, is measured against.
//!
//! Rows: `bound` (its rate), `sync` (the whole sync: seconds, the tip's height, the chain's
//! transactions, their rate) and `progress` (one per poll: seconds since the start, height,
//! transactions connected so far).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use scalechain_consensus::{verify_txs, VerifyMode};
use scalechain_lab::bench::spec::{Round, Workload};
use scalechain_lab::launcher::{NodeSpec, Role};
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
            let t0 = Instant::now();
            let late = net.start(NodeSpec::new("late0", Role::Peer).bootstrap(boot)).map_err(launch)?;
            let client = late.client().clone();
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
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            synced = Some(Synced { per_height, points });
            Ok(())
        },
    )?;
    ctx.progress.inc(1);
    let s = synced.ok_or_else(|| StudyError::Wrong("the sync did not run".into()))?;
    let cumulative = |h: u64| -> u64 { s.per_height.iter().take(h as usize + 1).sum() };
    let &(total_s, height) = s.points.last().ok_or_else(|| StudyError::Wrong("no poll".into()))?;
    let txs = cumulative(height);
    push("sync", total_s, height, txs, txs as f64 / total_s);
    for &(t, h) in &s.points {
        push("progress", t, h, cumulative(h), 0.0);
    }
    ctx.finish(Experiment::Sync, &table, charts, section)
}

/// What the late node's sync gave.
struct Synced {
    /// Transactions (coinbase excluded) of each block, by height.
    per_height: Vec<u64>,
    /// Seconds since the late node started, and its height then.
    points: Vec<(f64, u64)>,
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
    let progress: Vec<(f64, f64)> =
        t.select("series", "progress").filter_map(|r| Some((t.num(r, "t_s")?, t.num(r, "txs")?))).collect();
    let end = progress.last().map_or(1.0, |p| p.0);
    let mut series = vec![Series::line("the new node: transactions connected", progress)];
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
         that finds it at the devnet's tip. `bound` is `verify_txs` in parallel on the \
         `tx-throughput` workload in this process, in the same run.\n\n",
    );
    let bound = first(t, "bound").and_then(|r| t.num(&r, "tx_per_s"));
    if let Some(r) = first(t, "sync") {
        let (secs, height, txs, rate) = (
            t.num(&r, "t_s").unwrap_or(0.0),
            t.num(&r, "height").unwrap_or(0.0),
            t.num(&r, "txs").unwrap_or(0.0),
            t.num(&r, "tx_per_s").unwrap_or(0.0),
        );
        s.push_str("| blocks | transactions | sync s | tx/s | bound tx/s | / bound | target |\n");
        s.push_str("|---:|---:|---:|---:|---:|---:|---:|\n");
        s.push_str(&format!(
            "| {height} | {txs} | {secs:.2} | {} | {} | {} | {} |\n\n",
            sig4(rate),
            bound.map_or("n/a".into(), sig4),
            bound.map_or("n/a".into(), |b| SYNC_TARGET.cell(&format!("{:.3}", rate / b), rate / b)),
            SYNC_TARGET.text(),
        ));
        // One input per transfer, so the µs per input is the µs per transaction.
        s.push_str(&format!(
            "Per input connected: {:.1} µs of wall time on this machine's cores, against Bitcoin \
             Core's ≈ {BITCOIN_CORE_US_PER_INPUT} µs per input in `ConnectBlock` (one core; \
             context, not a measurement of ours).\n\n",
            if rate > 0.0 { 1e6 / rate } else { 0.0 },
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
        ] {
            let mut r: Vec<String> = row.iter().map(|s| s.to_string()).collect();
            r.extend(["portable".into(), "c".into()]);
            t.push(r);
        }
        let text = section(&t);
        assert!(text.contains("| 50 | 1000000 | 6.00 | 166667 | 200000 | 0.833 (met) | ≥ 0.8 |"), "{text}");
        let charts = charts(&t);
        assert_eq!(charts[0].series.len(), 3);
        assert_eq!(charts[0].series[0].points, vec![(0.5, 0.0), (5.0, 800_000.0)]);
        assert_eq!(charts[0].series[1].points, vec![(0.0, 0.0), (5.0, 1_000_000.0)]);
    }
}
