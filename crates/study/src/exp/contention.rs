//! `contention` (seed 003 §5.4, §6.2.4 and §7.1.1: Tables 6.1 / 6.2, Fig 5.7, Theorem 1): what a
//! read-write lock between execution and commit costs, the seed's experiment made like for like.
//!
//! Seed 003's Fabric endorser held the state database's read lock while a transaction's
//! chaincode executed (50, 200 or 500 ms), and the commit thread took the write lock, so a
//! block's commit waited for the executions in flight; the seed made the transaction manager
//! lock-free and measured throughput, latency (Tables 6.1 / 6.2) and commit times (Fig 5.7).
//! Our node has the same structure: admission (`Replica::admit_batches`, the pipeline's verify
//! stage) judges a round of transactions under the chain's read lock, and a block's acceptance
//! takes the write lock. Here every admission round executes for the same 50, 200 or 500 ms
//! (`mempool.execute_ms`, a sleep), under the read lock inside the judgement's guard
//! (`mempool.execute_under_lock`: the seed's baseline) or before the lock is taken (its change),
//! on the devnet of `super::optimise`'s harness, with the same two rounds. Each block's commit
//! time on each node — its wait for the write lock plus the time it held it, from the node's
//! arrival log (`GET /arrivals`: `lock_wait_us`, `lock_held_us`) — gives Fig 5.7's analogue; the
//! commit speed-up p and the throughput speed-up S are checked against the seed's bound S < p.

use std::fmt::Write as _;

use scalechain_lab::bench::spec::Round;
use scalechain_lab::output::sig4;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;

use super::e2e::{self, Setting};
use super::optimise::{self, BlockCommit, Case, Pair, BELOW, SATURATED};
use super::propagation::quantile;
use crate::seeds::{
    SEED_COMMIT_EXECUTE_MS, SEED_COMMIT_SOURCE, SEED_COMMIT_SPEEDUP, SEED_COMMIT_WITHOUT_LOCK_MS,
    SEED_COMMIT_WITH_LOCK_MS, SEED_LOCK_PRINTED_PCT, SEED_LOCK_ROWS, SEED_THEOREM_S, SEED_THEOREM_Y_MS,
};
use crate::{Ctx, Experiment, StudyError};

/// Columns of `contention.csv`: those of `super::optimise::COLUMNS`, then a block's: the node
/// that took it, its height, its wait for the chain's write lock and its commit time (the wait
/// plus the time it held the lock), ms. A round's row (`round` = `saturated` or `below`) fills
/// the first; a block's row (`round` = `saturated block` or `below block`: a block of that
/// round) fills `case`, `round`, `offered_tps`, `trial`, `build`, `commit` and the block's.
pub const COLUMNS: &[&str] = &[
    "case",
    "round",
    "offered_tps",
    "trial",
    "ns_per_op",
    "send_tps",
    "throughput_tps",
    "lat_avg_ms",
    "lat_p50_ms",
    "lat_p99_ms",
    "succeeded",
    "failed",
    "node_cores",
    "cpu_us_per_tx",
    "build",
    "commit",
    "node",
    "height",
    "lock_wait_ms",
    "commit_ms",
];

/// Execution times of an admission round, ms: seed 003's chaincode execution times (Tables
/// 6.1 / 6.2), not scaled (see [`section`]: the block intervals are of the same order).
pub const EXECUTE_MS: [u64; 3] = [50, 200, 500];

/// Arrivals each node's log keeps beyond the rounds' transactions (funding transactions, orphans
/// released, blocks), so that every block of the rounds is still there when the study reads it.
const ARRIVAL_MARGIN: usize = 50_000;

/// A case's label (a CSV cell: no commas).
fn label(under_lock: bool, ms: u64) -> String {
    format!("execution {ms} ms {}", if under_lock { "under the lock" } else { "lock-free" })
}

/// The `round` of a block row of the round `round`.
fn block_round(round: &str) -> String {
    format!("{round} block")
}

/// The CSV row of block `b` of the round `round` of case `case`'s trial `trial`.
pub(crate) fn block_row(ctx: &Ctx, case: &str, round: &Round, trial: usize, b: &BlockCommit) -> Vec<String> {
    let tps = match round.rate {
        scalechain_lab::load::schedule::Rate::Fixed { tps } => tps,
        _ => 0.0,
    };
    let ms = |us: u64| format!("{:.3}", us as f64 / 1e3);
    let mut r = vec![String::new(); COLUMNS.len()];
    let mut set = |column: &str, v: String| {
        if let Some(i) = COLUMNS.iter().position(|c| *c == column) {
            r[i] = v;
        }
    };
    set("case", case.into());
    set("round", block_round(&round.name));
    set("offered_tps", format!("{tps}"));
    set("trial", trial.to_string());
    set("build", ctx.machine.build.into());
    set("commit", ctx.machine.commit.into());
    set("node", b.node.clone());
    set("height", b.height.to_string());
    set("lock_wait_ms", ms(b.wait_us));
    set("commit_ms", ms(b.wait_us.saturating_add(b.held_us)));
    r
}

/// Runs `contention`.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let exe = e2e::node_binary(ctx, "contention")?;
    let times: &[u64] = if ctx.opts.quick { &EXECUTE_MS[1..2] } else { &EXECUTE_MS };
    let rounds = optimise::rounds(ctx.opts.quick);
    let arrivals = rounds.iter().map(|r| r.txs as usize).sum::<usize>() + ARRIVAL_MARGIN;
    let mut cases = Vec::new();
    for &ms in times {
        for under_lock in [true, false] {
            let setting = Setting {
                execute_ms: ms,
                execute_under_lock: under_lock,
                arrivals: Some(arrivals),
                ..Setting::default()
            };
            cases.push(Case { label: label(under_lock, ms), setting, exe: exe.clone() });
        }
    }
    let mut table = Table::new(COLUMNS);
    let block = |case: &Case, round: &Round, trial: usize, b: &BlockCommit| {
        block_row(ctx, &case.label, round, trial, b)
    };
    optimise::run_cases(ctx, "contention", &cases, &mut table, Some(&block))?;
    ctx.finish(Experiment::Contention, &table, charts, section)
}

/// The execution times among `t`'s cases.
fn times_in(t: &Table) -> Vec<u64> {
    EXECUTE_MS.into_iter().filter(|&ms| t.select("case", &label(true, ms)).next().is_some()).collect()
}

/// The comparisons: lock-free against under the lock at each execution time `t` holds, with
/// seed 003's changes as printed (Tables 6.1 / 6.2).
fn pairs(t: &Table) -> Vec<Pair> {
    SEED_LOCK_ROWS
        .iter()
        .zip(SEED_LOCK_PRINTED_PCT)
        .filter(|((ms, ..), _)| times_in(t).contains(ms))
        .map(|(&(ms, ..), (tps, latency))| Pair {
            what: format!("lock-free at {ms} ms execution"),
            baseline: label(true, ms),
            variant: label(false, ms),
            seed_tps_pct: Some(tps),
            seed_latency_pct: Some(latency),
            seed_latency_text: None,
        })
        .collect()
}

/// A column of the block rows of case `case` in round `round`.
fn block_values(t: &Table, case: &str, round: &str, column: &str) -> Vec<f64> {
    let round = block_round(round);
    t.select("case", case)
        .filter(|r| t.col("round").is_some_and(|c| r[c] == round))
        .filter_map(|r| t.num(r, column))
        .collect()
}

/// Commit times of a case's blocks in one round: count, least, mean, median, 90th percentile,
/// most (ms).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Spread {
    n: usize,
    min: f64,
    mean: f64,
    p50: f64,
    p90: f64,
    max: f64,
}

fn spread(v: &[f64]) -> Option<Spread> {
    if v.is_empty() {
        return None;
    }
    Some(Spread {
        n: v.len(),
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        mean: v.iter().sum::<f64>() / v.len() as f64,
        p50: quantile(v, 0.5),
        p90: quantile(v, 0.9),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    })
}

/// One execution time's speed-ups: the commit speed-up p past saturation and below it (the mean
/// commit time under the lock over the mean lock-free, that round's blocks) and the throughput
/// speed-up S (the throughput past saturation lock-free over under the lock).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Speedups {
    ms: u64,
    p_saturated: Option<f64>,
    p_below: Option<f64>,
    s: Option<f64>,
}

fn speedups(t: &Table) -> Vec<Speedups> {
    times_in(t)
        .into_iter()
        .map(|ms| {
            let (with, without) = (label(true, ms), label(false, ms));
            let p = |round: &str| {
                let commit = |case: &str| spread(&block_values(t, case, round, "commit_ms")).map(|s| s.mean);
                match (commit(&with), commit(&without)) {
                    (Some(a), Some(b)) if b > 0.0 => Some(a / b),
                    _ => None,
                }
            };
            let tps = |case: &str| optimise::mean(t, case, SATURATED, "throughput_tps");
            let s = match (tps(&with), tps(&without)) {
                (Some(a), Some(b)) if a > 0.0 => Some(b / a),
                _ => None,
            };
            Speedups { ms, p_saturated: p(SATURATED), p_below: p(BELOW), s }
        })
        .collect()
}

/// The distribution of the commit times of `round`'s blocks per case, seed 003's ranges beside.
fn cdf_chart(t: &Table, round: &str, title: &str) -> Chart {
    let mut cdf = Vec::new();
    for ms in times_in(t) {
        for under_lock in [true, false] {
            let case = label(under_lock, ms);
            let mut v = block_values(t, &case, round, "commit_ms");
            if v.is_empty() {
                continue;
            }
            v.sort_by(f64::total_cmp);
            let n = v.len() as f64;
            cdf.push(Series::line(
                format!("ours: {case}"),
                v.iter().enumerate().map(|(i, x)| (*x, (i + 1) as f64 / n)).collect(),
            ));
        }
    }
    for (what, (lo, _, hi)) in [("with", SEED_COMMIT_WITH_LOCK_MS), ("without", SEED_COMMIT_WITHOUT_LOCK_MS)]
    {
        cdf.push(Series::seed(
            format!("seed 003 Fig 5.7 {what} the lock ({SEED_COMMIT_EXECUTE_MS} ms): least and most"),
            vec![(lo, 0.0), (hi, 1.0)],
        ));
    }
    Chart {
        title: title.into(),
        x_label: "commit time: wait for the write lock + time held (ms)".into(),
        y_label: "fraction of blocks at or below".into(),
        log_x: true,
        log_y: false,
        x_names: Vec::new(),
        series: cdf,
    }
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let mut charts = optimise::change_chart(t, &pairs(t));
    charts.push(cdf_chart(t, SATURATED, "Block commit times past saturation (every node's blocks)"));
    charts.push(cdf_chart(t, BELOW, "Block commit times below saturation (every node's blocks)"));
    // Mean commit time against the execution time.
    let mut means = Vec::new();
    for (round, when) in [(SATURATED, "past saturation"), (BELOW, "below saturation")] {
        for under_lock in [true, false] {
            let pts: Vec<(f64, f64)> = times_in(t)
                .into_iter()
                .filter_map(|ms| {
                    let v = block_values(t, &label(under_lock, ms), round, "commit_ms");
                    Some((ms as f64, spread(&v)?.mean))
                })
                .collect();
            if !pts.is_empty() {
                let how = if under_lock { "under the lock" } else { "lock-free" };
                means.push(Series::line(format!("ours {when}: mean, execution {how}"), pts));
            }
        }
    }
    for (what, (lo, mean, hi)) in
        [("with", SEED_COMMIT_WITH_LOCK_MS), ("without", SEED_COMMIT_WITHOUT_LOCK_MS)]
    {
        let x = SEED_COMMIT_EXECUTE_MS as f64;
        means.push(Series::seed(
            format!("seed 003 §7.1.1 {what} the lock: least, mean, most"),
            vec![(x, lo), (x, mean), (x, hi)],
        ));
    }
    charts.push(Chart {
        title: "Mean block commit time against the execution time (seed 003 at 200 ms)".into(),
        x_label: "execution time of an admission round / a chaincode (ms)".into(),
        y_label: "commit time (ms)".into(),
        log_x: false,
        log_y: true,
        x_names: Vec::new(),
        series: means,
    });
    charts
}

fn ms_cell(x: f64) -> String {
    if x.is_finite() {
        sig4(x)
    } else {
        "–".into()
    }
}

pub(crate) fn section(t: &Table) -> String {
    let mut s = optimise::cases_section(
        t,
        "Seed 003's lock removal made like for like. Every admission round of every node executes for \
         50, 200 or 500 ms — seed 003's chaincode execution times — as a sleep (`mempool.execute_ms`), \
         either under the chain's read lock, inside the guard its judgement runs in \
         (`mempool.execute_under_lock`: the seed's baseline, Fabric's endorser holding the state \
         database's read lock while the chaincode runs), or before the lock is taken (the seed's \
         lock-free change). A block's acceptance takes the chain's write lock, as Fabric's commit \
         thread did; parking_lot's lock is task-fair, so a waiting acceptance also holds back new \
         readers (the next admission round, the miner's template), as a waiting `Lock` holds back \
         new `RLock`s in Go. Not like for like: the seed endorsed each transaction on its own, many at \
         once, so a commit waited for the slowest execution in flight (about the whole execution \
         time); our verify stage runs one round at a time, so an acceptance waits for what is left \
         of one round's execution (half of it on average when rounds run back to back). Our \
         lock-free setting keeps a short read lock for the judgement itself (the chain must not move \
         under a batch being judged), where the seed's single-key transactions needed none. The \
         sleep also bounds admission to `mempool.max_batch` transactions a round, in both settings. \
         The seed ran one peer and one orderer on four cores; ours is four validating nodes on two, \
         each of which admits every transaction and accepts every block. The execution times are the \
         seed's, not scaled: its blocks came every 1.2–1.7 s (500 transactions a block at 300–420 TPS \
         in its combined run, §6.2.5), ours every 1 s (the devnet's), so they are of the same order \
         against the block interval in both.",
        &pairs(t),
    );
    s.push_str(
        "\nSeed 003's changes are quoted as printed (+8 / +14 / +20% TPS, −12 / −18 / −25% latency); its \
         own rows give slightly different ones: +7.9 / +13.7 / +19.2% and −12.9 / −19.4 / −25.9% (3.6 → \
         2.9 s is −19.4%, printed −18%). Its latency is at its saturation point; ours past saturation \
         and below it.\n",
    );
    let _ = write!(
        s,
        "\n**Block commit times** (Fig 5.7's analogue): per block and node, the wait for the chain's \
         write lock plus the time the block held it (validation, commit, the mempool brought up to \
         date), from the nodes' arrival logs; every node's blocks of each round. Ours counts the \
         block's validation, which our node does under the write lock; Fabric validated a block \
         before it took the lock. Past saturation every admission round judges up to \
         `mempool.max_batch` transactions under the read lock in both settings, so the judgement's \
         own hold weighs there too, where the seed's lock-free transactions held nothing; below \
         saturation rounds are small and the execution's hold is most of it. Seed: \
         {SEED_COMMIT_SOURCE}\n\n\
         | case | past saturation: blocks | lock wait: mean (ms) | commit: least (ms) | mean | median | \
         p90 | most | below saturation: blocks | lock wait: mean (ms) | commit: mean (ms) |\n\
         |---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    let cell = |x: Option<f64>| x.map_or("–".into(), ms_cell);
    for ms in times_in(t) {
        for under_lock in [true, false] {
            let case = label(under_lock, ms);
            let of = |round: &str, column: &str| spread(&block_values(t, &case, round, column));
            let (c, b) = (of(SATURATED, "commit_ms"), of(BELOW, "commit_ms"));
            let _ = writeln!(
                s,
                "| {case} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                c.map_or(0, |c| c.n),
                cell(of(SATURATED, "lock_wait_ms").map(|w| w.mean)),
                cell(c.map(|c| c.min)),
                cell(c.map(|c| c.mean)),
                cell(c.map(|c| c.p50)),
                cell(c.map(|c| c.p90)),
                cell(c.map(|c| c.max)),
                b.map_or(0, |b| b.n),
                cell(of(BELOW, "lock_wait_ms").map(|w| w.mean)),
                cell(b.map(|b| b.mean)),
            );
        }
    }
    for (what, (lo, mean, hi)) in
        [("with", SEED_COMMIT_WITH_LOCK_MS), ("without", SEED_COMMIT_WITHOUT_LOCK_MS)]
    {
        let _ = writeln!(
            s,
            "| seed 003: {SEED_COMMIT_EXECUTE_MS} ms chaincode, {what} the lock | – | – | {} | {} | – | – | \
             {} | – | – | – |",
            sig4(lo),
            sig4(mean),
            sig4(hi)
        );
    }
    let _ = write!(
        s,
        "\n**Speed-ups against seed 003's bound** (its Theorem 1: a commit speed-up p gives a \
         throughput speed-up S = (x + y) / (x/p + y) < p, x the commit time and y the rest of a block's \
         processing; its example: x = {} ms with the lock, {} ms without (p = {SEED_COMMIT_SPEEDUP}, \
         printed \"3.3x\"), y = {} ms of unmarshalling, S = {SEED_THEOREM_S}; its Table 6.1 measured S \
         = {:.3} at 200 ms). Ours: p is a round's mean commit time under the lock over the mean \
         lock-free, S the throughput past saturation lock-free over under the lock, checked against \
         p past saturation. Our throughput is bounded by the admission rounds (every node admits \
         every transaction, one round at a time), not by block processing as the theorem's model \
         has it, so S < p holds for another reason than the seed's y; the check is the seed's.\n\n\
         | execution (ms) | commit speed-up p past saturation | p below saturation | throughput \
         speed-up S | S < p |\n|---|---|---|---|---|\n",
        sig4(SEED_COMMIT_WITH_LOCK_MS.1),
        sig4(SEED_COMMIT_WITHOUT_LOCK_MS.1),
        sig4(SEED_THEOREM_Y_MS),
        SEED_LOCK_ROWS[1].2 / SEED_LOCK_ROWS[1].1,
    );
    for x in speedups(t) {
        let cell = |x: Option<f64>| x.map_or("–".into(), |v| format!("{v:.3}"));
        let holds = match (x.p_saturated, x.s) {
            (Some(p), Some(sp)) if sp < p => "yes",
            (Some(_), Some(_)) => "no",
            _ => "–",
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {holds} |",
            x.ms,
            cell(x.p_saturated),
            cell(x.p_below),
            cell(x.s)
        );
    }
    let _ = writeln!(
        s,
        "| seed 003, {SEED_COMMIT_EXECUTE_MS} ms | {SEED_COMMIT_SPEEDUP} (§7.1.1) | – | {:.3} (Table 6.1; \
         Theorem 1's example: {SEED_THEOREM_S}) | yes |",
        SEED_LOCK_ROWS[1].2 / SEED_LOCK_ROWS[1].1
    );
    s.push_str(
        "\nAn earlier form of this experiment compared the pool's lock-free snapshot reads with \
         `mempool.single_lock` at three block intervals; readers there held the pool's lock only to \
         load a snapshot, so no difference could show, and it is gone (`mempool.single_lock` stays, \
         for `backend`'s combined case).\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_row(case: &str, round: &str, trial: usize, tps: f64, lat: f64) -> Vec<String> {
        let mut r = vec![String::new(); COLUMNS.len()];
        r[0] = case.into();
        r[1] = round.into();
        r[3] = trial.to_string();
        r[6] = tps.to_string();
        r[7] = lat.to_string();
        r[14] = "portable".into();
        r
    }

    fn block(case: &str, round: &str, height: u64, wait: f64, commit: f64) -> Vec<String> {
        let mut r = round_row(case, &block_round(round), 1, 0.0, 0.0);
        r[6].clear();
        r[7].clear();
        r[16] = "peer0".into();
        r[17] = height.to_string();
        r[18] = wait.to_string();
        r[19] = commit.to_string();
        r
    }

    #[test]
    fn the_columns_extend_the_harness_columns_and_labels_are_csv_cells() {
        assert_eq!(&COLUMNS[..optimise::COLUMNS.len()], optimise::COLUMNS);
        assert_eq!(&COLUMNS[optimise::COLUMNS.len()..], ["node", "height", "lock_wait_ms", "commit_ms"]);
        for ms in EXECUTE_MS {
            for under in [true, false] {
                assert!(!label(under, ms).contains(','));
            }
        }
        assert_eq!(label(true, 200), "execution 200 ms under the lock");
        // Block rows are never taken for a round's rows.
        assert_ne!(block_round(SATURATED), SATURATED);
    }

    /// A hand-made run at 200 ms: under the lock 1000 tx/s, commits of 300 and 500 ms past
    /// saturation and 200 ms below; lock-free 1100 tx/s, commits of 100 ms and 50 ms below.
    fn table() -> Table {
        let (with, without) = (label(true, 200), label(false, 200));
        let mut t = Table::new(COLUMNS);
        t.push(round_row(&with, SATURATED, 1, 1000.0, 900.0));
        t.push(block(&with, SATURATED, 5, 150.0, 300.0));
        t.push(block(&with, SATURATED, 6, 400.0, 500.0));
        t.push(round_row(&with, BELOW, 1, 500.0, 600.0));
        t.push(block(&with, BELOW, 8, 50.0, 200.0));
        t.push(round_row(&without, SATURATED, 1, 1100.0, 450.0));
        t.push(block(&without, SATURATED, 5, 1.0, 100.0));
        t.push(block(&without, SATURATED, 6, 1.0, 100.0));
        t.push(round_row(&without, BELOW, 1, 500.0, 300.0));
        t.push(block(&without, BELOW, 8, 1.0, 50.0));
        t
    }

    #[test]
    fn the_section_sets_throughput_commit_times_and_speed_ups_beside_seed_003() {
        let t = table();
        assert_eq!(times_in(&t), [200]);
        let p = pairs(&t);
        assert_eq!(p.len(), 1, "only the execution times run");
        assert_eq!((p[0].seed_tps_pct, p[0].seed_latency_pct), (Some(14.0), Some(-18.0)));
        let s = section(&t);
        // Throughput +10% against the seed's printed +14%; latency −50% against −18%.
        let change = "| lock-free at 200 ms execution | +10.0% | +14.0% | -50.0% | -18.0% | -50.0% |";
        assert!(s.contains(change), "{s}");
        assert!(s.contains("3.6 → 2.9 s is −19.4%, printed −18%"), "{s}");
        // Past saturation two blocks, mean 400, waits 275 on average; below one, 200.
        let with =
            "| execution 200 ms under the lock | 2 | 275.0 | 300.0 | 400.0 | 300.0 | 500.0 | 500.0 | 1 \
                    | 50.00 | 200.0 |";
        assert!(s.contains(with), "{s}");
        let without =
            "| execution 200 ms lock-free | 2 | 1.000 | 100.0 | 100.0 | 100.0 | 100.0 | 100.0 | 1 | \
                       1.000 | 50.00 |";
        assert!(s.contains(without), "{s}");
        let seed = "| seed 003: 200 ms chaincode, with the lock | – | – | 230.0 | 285.0 | – | – | 390.0 | – | – | – |";
        assert!(s.contains(seed), "{s}");
        // p = 400 / 100 = 4 past saturation, 200 / 50 = 4 below; S = 1100 / 1000 = 1.1 < p.
        assert!(s.contains("| 200 | 4.000 | 4.000 | 1.100 | yes |"), "{s}");
        let seed =
            "| seed 003, 200 ms | 3.3 (§7.1.1) | – | 1.137 (Table 6.1; Theorem 1's example: 1.59) | yes |";
        assert!(s.contains(seed), "{s}");
        let want = Speedups { ms: 200, p_saturated: Some(4.0), p_below: Some(4.0), s: Some(1100.0 / 1000.0) };
        assert_eq!(speedups(&t), vec![want]);
    }

    #[test]
    fn the_charts_draw_ours_with_and_without_the_lock_beside_the_seeds_ranges() {
        let c = charts(&table());
        assert_eq!(c.len(), 4);
        let ours = |chart: &Chart| -> Vec<Vec<(f64, f64)>> {
            chart.series.iter().filter(|s| !s.points_only).map(|s| s.points.clone()).collect()
        };
        assert_eq!(ours(&c[1]), vec![vec![(300.0, 0.5), (500.0, 1.0)], vec![(100.0, 0.5), (100.0, 1.0)]]);
        assert_eq!(ours(&c[2]), vec![vec![(200.0, 1.0)], vec![(50.0, 1.0)]]);
        let seed: Vec<&Series> = c[1].series.iter().filter(|s| s.points_only).collect();
        assert_eq!(seed[0].points, vec![(230.0, 0.0), (390.0, 1.0)]);
        assert_eq!(seed[1].points, vec![(40.0, 0.0), (130.0, 1.0)]);
        // Means: past saturation under the lock and lock-free, then below; the seed's beside.
        let means = &c[3];
        assert_eq!(
            ours(means),
            vec![vec![(200.0, 400.0)], vec![(200.0, 100.0)], vec![(200.0, 200.0)], vec![(200.0, 50.0)]]
        );
        assert_eq!(means.series[4].points, vec![(200.0, 230.0), (200.0, 285.0), (200.0, 390.0)]);
        // An empty table draws the seed's alone.
        let empty = charts(&Table::new(COLUMNS));
        assert!(empty[1..].iter().all(|c| c.series.iter().all(|s| s.points_only)));
    }
}
