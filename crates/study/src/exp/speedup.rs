//! `speedup` (seed 000 Fig 3.3, Appendix C): the speedup of parallel transaction verification
//! and of the Merkle root with 1, 2, 4, … threads, well past the cores (to 2^10 threads in the
//! full run, twice the cores with `--quick`), beside Amdahl's law with the parallel fraction
//! measured by the built-in profiler on a one-thread run. Points with more threads than cores are
//! marked `oversubscribed`.
//!
//! The fraction `f` is the time spent inside the spans that run on the rayon pool
//! (`txverify.chunk`; `merkle.leaves_par` and `merkle.level_par`) over the wall time of the
//! whole call. Our Amdahl bound for `t` threads on `c` cores is `1 / ((1 − f) + f / min(t, c))`:
//! threads beyond the cores add no processors. Seed 000's theoretical curve is another bound:
//! its equation 1.1 with `n` the number of threads, no cap at the cores, and an `F` it never
//! states (its ≈2.5 plateau implies F ≈ 0.6).

use std::time::Instant;

use scalechain_consensus::{verify_txs, VerifyMode};
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_types::{merkle, profile};
use scalechain_workload::fixed::{transfers, Spec};

use super::{study_params, verify_config, with_env, CHAIN_ID};
use crate::{seeds, time_median, Ctx, Experiment, StudyError};

/// Columns of `speedup.csv`.
pub const COLUMNS: &[&str] = &[
    "task",
    "n",
    "threads",
    "build",
    "median_s",
    "speedup",
    "amdahl",
    "parallel_fraction",
    "placement",
    "runs",
    "commit",
    "seed",
];

/// The most threads of the full run's sweep (at least; twice the cores if that is more).
pub const FULL_MAX_THREADS: usize = 1 << 10;

/// A point with at most as many threads as cores.
pub const WITHIN: &str = "within-cores";
/// A point with more threads than cores.
pub const OVERSUBSCRIBED: &str = "oversubscribed";

/// The placement of `threads` on `cores`.
pub fn placement(threads: usize, cores: usize) -> &'static str {
    if threads <= cores {
        WITHIN
    } else {
        OVERSUBSCRIBED
    }
}

/// Amdahl's law.
pub fn amdahl(f: f64, processors: f64) -> f64 {
    1.0 / ((1.0 - f) + f / processors)
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let log = if ctx.opts.quick { ctx.opts.max_log2.min(12) } else { ctx.opts.max_log2.min(16) };
    let n = 1usize << log;
    let runs = ctx.runs();
    let cores = ctx.machine.cores.max(1);
    let sweep = if ctx.opts.quick { 2 * cores } else { FULL_MAX_THREADS.max(2 * cores) };
    let max_threads = ctx.opts.threads.unwrap_or(sweep).max(1);
    let counts: Vec<usize> =
        std::iter::successors(Some(1usize), |t| Some(t * 2)).take_while(|t| *t <= max_threads).collect();
    let p = study_params();
    ctx.start(counts.len() as u64 * 2 + 1, "generating and signing the workload");
    let w =
        ctx.pool(ctx.machine.cores)?.install(|| transfers(&p, &CHAIN_ID, &Spec::simple(n, ctx.opts.seed)));
    ctx.progress.inc(1);
    let cfg = verify_config(VerifyMode::Parallel);
    let verify = || with_env(&p, &cfg, &w.utxos, |env| verify_txs(env, &w.txs).iter().all(Result::is_ok));
    let root = || merkle::root_of_txs(p.hash, &w.txs);

    // The parallel fractions, from a profiled one-thread run of each task.
    let one = ctx.pool(1)?;
    let was = profile::enabled();
    profile::set_enabled(true);
    profile::reset();
    if !one.install(verify) {
        return Err(StudyError::Wrong("parallel verification rejected the valid workload".into()));
    }
    let f_tx =
        profile::total_ns("txverify.chunk") as f64 / profile::total_ns("txverify.verify_txs").max(1) as f64;
    profile::reset();
    let t0 = Instant::now();
    one.install(root);
    let wall = t0.elapsed().as_nanos().max(1) as f64;
    let f_merkle =
        (profile::total_ns("merkle.leaves_par") + profile::total_ns("merkle.level_par")) as f64 / wall;
    profile::reset();
    profile::set_enabled(was);

    let mut table = Table::new(COLUMNS);
    for (task, f) in [("tx-verify", f_tx), ("merkle", f_merkle)] {
        let mut t1 = f64::NAN;
        for &t in &counts {
            ctx.progress.set_message(format!("{task}, {t} threads"));
            let pool = ctx.pool(t)?;
            let s = if task == "tx-verify" {
                time_median(runs, || {
                    pool.install(verify);
                })
            } else {
                time_median(runs, || {
                    pool.install(root);
                })
            };
            if t == 1 {
                t1 = s;
            }
            table.push(vec![
                task.into(),
                n.to_string(),
                t.to_string(),
                ctx.machine.build.into(),
                format!("{s:.9}"),
                format!("{:.4}", t1 / s),
                format!("{:.4}", amdahl(f, t.min(ctx.machine.cores) as f64)),
                format!("{f:.5}"),
                placement(t, cores).into(),
                runs.to_string(),
                ctx.machine.commit.into(),
                ctx.opts.seed.to_string(),
            ]);
            ctx.progress.inc(1);
        }
    }
    ctx.finish(Experiment::Speedup, &table, charts, |t| section(t, cores))
}

/// A row's placement (rows of CSVs older than the column count as within the cores).
fn placement_of<'a>(t: &Table, r: &'a [String]) -> &'a str {
    t.col("placement").map_or(WITHIN, |i| r[i].as_str())
}

/// The seed's Fig 3.3 plateaus, from its prose: (level, label).
pub const SEED_PLATEAUS: [(f64, &str); 2] = [
    (2.0, "seed 000 Fig 3.3 prose: measured plateau ≈2 (8 cores, 2^20 tx)"),
    (2.5, "seed 000 Fig 3.3 prose: its Amdahl plateau ≈2.5 (F unstated)"),
];

/// Thread counts the seed's plateaus are drawn at: from its 8 cores ("do not increase
/// significantly beyond 8 threads") to the ≈1K threads where its decline begins.
fn plateau_threads() -> Vec<f64> {
    (3..=10).map(|k| f64::from(1u32 << k)).collect()
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let builds = t.distinct("build");
    ["tx-verify", "merkle"]
        .iter()
        .map(|task| {
            let mut series = Vec::new();
            for b in &builds {
                let rows: Vec<&Vec<String>> = t.select("task", task).filter(|r| &r[3] == b).collect();
                let pts = |col: &str, keep: &dyn Fn(&str) -> bool| -> Vec<(f64, f64)> {
                    rows.iter()
                        .filter(|r| keep(placement_of(t, r)))
                        .filter_map(|r| Some((t.num(r, "threads")?, t.num(r, col)?)))
                        .collect()
                };
                series.push(Series::line(
                    format!("measured, threads ≤ cores ({b})"),
                    pts("speedup", &|p| p == WITHIN),
                ));
                // The oversubscribed line starts at the last point within the cores.
                let mut over = pts("speedup", &|p| p == OVERSUBSCRIBED);
                if !over.is_empty() {
                    if let Some(last) = pts("speedup", &|p| p == WITHIN).last() {
                        over.insert(0, *last);
                    }
                    series.push(Series::line(format!("measured, oversubscribed ({b})"), over));
                }
                series.push(Series::line(
                    format!("our Amdahl bound: f measured, min(threads, cores) ({b})"),
                    pts("amdahl", &|_| true),
                ));
            }
            for (level, label) in SEED_PLATEAUS {
                series.push(Series::seed(label, plateau_threads().into_iter().map(|x| (x, level)).collect()));
            }
            Chart {
                title: format!("Speedup of {task} by threads (seed 000 Fig 3.3, Appendix C)"),
                x_label: "threads".into(),
                y_label: "speedup over 1 thread (×)".into(),
                log_x: true,
                log_y: false,
                x_names: Vec::new(),
                series,
            }
        })
        .collect()
}

fn section(t: &Table, cores: usize) -> String {
    let mut s = format!(
        "Speedup over one thread on this {cores}-core machine, threads swept past the cores (rows \
         with more threads than cores are `oversubscribed`), beside Amdahl's bound with the \
         parallel fraction `f` measured by the profiler (not assumed). Median of the runs.\n\n"
    );
    s.push_str(&t.markdown(&COLUMNS[..9]));
    // The seed's figures and ours, per task.
    let n = t.rows.first().and_then(|r| t.num(r, "n")).unwrap_or(0.0) as u64;
    let fig52 = seeds::APPENDIX_C.iter().find(|f| f.cores == 2);
    s.push_str(&format!(
        "\n**Beside the seed.** Seed 000 measured Fig 3.3 on 8 cores with 2^20 transactions and \
         gives it as graphs only; its prose: \"The measured speedups stabilize at approximately 2 \
         while the theoretical speedup continues to increase steadily and stabilizes at \
         approximately 2.5\", \"Transaction verification speedup begins decreasing steadily at \
         approximately 1K threads and decreases more rapidly at approximately 128K threads\", \
         \"Merkle tree creation speedup decreases rapidly at approximately 32K threads\" (§3.2.3; \
         the two plateaus are drawn as levels). Its thread-count study on the team's machines \
         (Appendix C, graphs only, no printed points; {}) includes a machine with two cores — \
         {}: \"{}\" — and concludes that \"{}\" (§2.3).\n\n",
        seeds::APPENDIX_C_SOURCE,
        fig52.map_or("–", |f| f.figure),
        fig52.map_or("", |f| f.caption),
        seeds::THREADS_EQUAL_CORES,
    ));
    if let Some(f) = fig52.filter(|f| f.cores as usize == cores && f.transactions == n) {
        s.push_str(&format!(
            "This run is {}'s setting: {} cores, {} transactions.\n\n",
            f.figure, f.cores, f.transactions
        ));
    } else {
        s.push_str(&format!(
            "This run: {cores} cores, {n} transactions (Figure 5.2 is two cores, 2^16 transactions).\n\n"
        ));
    }
    s.push_str(
        "| task | build | best threads (speedup) | speedup at cores | at most threads (threads) | change, best → most threads |\n\
         |---|---|---:|---:|---:|---:|\n",
    );
    for task in ["tx-verify", "merkle"] {
        for b in t.distinct("build") {
            let pts: Vec<(f64, f64)> = t
                .select("task", task)
                .filter(|r| r[3] == b)
                .filter_map(|r| Some((t.num(r, "threads")?, t.num(r, "speedup")?)))
                .collect();
            let (Some(best), Some(most)) = (
                pts.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)),
                pts.iter().copied().max_by(|a, b| a.0.total_cmp(&b.0)),
            ) else {
                continue;
            };
            let at_cores =
                pts.iter().find(|p| p.0 == cores as f64).map_or("–".into(), |p| format!("{:.2}", p.1));
            s.push_str(&format!(
                "| {task} | {b} | {} ({:.2}) | {at_cores} | {:.2} ({}) | {:+.0}% |\n",
                best.0,
                best.1,
                most.1,
                most.0,
                (most.1 / best.1 - 1.0) * 100.0
            ));
        }
    }
    let f = t.rows.iter().find(|r| r[0] == "tx-verify").and_then(|r| t.num(r, "parallel_fraction"));
    let tmax = t.rows.iter().filter_map(|r| t.num(r, "threads")).fold(1.0, f64::max);
    s.push_str(&format!(
        "\n**The two \"Amdahl\" curves are different bounds.** Ours caps the processors at the \
         cores: with the measured f{} it cannot exceed the core count and is flat from the cores \
         on, so oversubscribed points are judged against the bound at the cores. The seed's is its equation 1.1 with \
         n the number of threads and no cap, and an F it never states: a plateau of ≈2.5 means \
         F ≈ 0.6 (1 / (1 − F) = 2.5), a limit set by its serial fraction, not by its 8 cores. \
         With our f and no cap, the seed's form would promise {} at {} threads — a bound no \
         machine with {cores} cores can approach. So the seed's measured ≈2 is 80% of a \
         serial-fraction bound on 8 cores, while ours is judged against a core-count bound.\n",
        f.map_or(String::new(), |f| format!(" = {f:.4}")),
        f.map_or("–".to_string(), |f| format!("{:.0}×", amdahl(f, tmax))),
        tmax,
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Opts;

    #[test]
    fn a_quick_run_sweeps_past_the_cores_and_marks_those_points_oversubscribed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let opts = Opts { quick: true, max_log2: 6, runs: Some(1), ..Opts::new(dir.path()) };
        crate::run(Experiment::Speedup, opts).unwrap_or_else(|e| panic!("{e}"));
        let csv = std::fs::read_to_string(dir.path().join("speedup.csv")).unwrap_or_default();
        let t = Table::from_csv(&csv).unwrap_or_else(|| panic!("{csv}"));
        let cores = scalechain_lab::Machine::detect().cores;
        for task in ["tx-verify", "merkle"] {
            let rows: Vec<&Vec<String>> = t.select("task", task).collect();
            let threads: Vec<usize> = rows.iter().filter_map(|r| r[2].parse().ok()).collect();
            assert!(
                threads.iter().any(|&x| x > cores),
                "{task}: the sweep passes {cores} cores: {threads:?}"
            );
            for r in &rows {
                let th: usize = r[2].parse().unwrap_or(0);
                let want = if th > cores { OVERSUBSCRIBED } else { WITHIN };
                assert_eq!(t.col("placement").map(|i| r[i].as_str()), Some(want), "{r:?}");
                assert!(t.num(r, "speedup").is_some_and(|x| x > 0.0), "{r:?}");
            }
        }
        let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap_or_default();
        assert!(report.contains("Figure 5.2") && report.contains("different bounds"), "{report}");
        let svg = std::fs::read_to_string(dir.path().join("speedup.svg")).unwrap_or_default();
        assert!(svg.contains("measured, oversubscribed") && svg.contains("measured plateau"), "{svg}");
    }

    #[test]
    fn appendix_c_is_the_seeds_two_four_and_eight_core_figures() {
        let cores: Vec<u32> = seeds::APPENDIX_C.iter().map(|f| f.cores).collect();
        assert_eq!(cores, [2, 4, 8]);
        let words = ["two", "four", "eight"];
        for (f, w) in seeds::APPENDIX_C.iter().zip(words) {
            assert!(f.caption.contains(&format!("with {w} cores")) && f.caption.contains("2^{16}"), "{f:?}");
            assert_eq!(f.transactions, 1 << 16);
        }
        assert_eq!(placement(2, 2), WITHIN);
        assert_eq!(placement(4, 2), OVERSUBSCRIBED);
    }

    #[test]
    fn amdahl_bounds() {
        assert!((amdahl(1.0, 4.0) - 4.0).abs() < 1e-12);
        assert!((amdahl(0.0, 4.0) - 1.0).abs() < 1e-12);
        assert!((amdahl(0.5, 2.0) - 4.0 / 3.0).abs() < 1e-12);
    }
}
