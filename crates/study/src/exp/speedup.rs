//! `speedup` (seed 000 Fig 3.3): the speedup of parallel transaction verification and of the
//! Merkle root with 1, 2, 4, … threads (up to twice the cores), beside Amdahl's law with the
//! parallel fraction measured by the built-in profiler on a one-thread run.
//!
//! The fraction `f` is the time spent inside the spans that run on the rayon pool
//! (`txverify.chunk`; `merkle.leaves_par` and `merkle.level_par`) over the wall time of the
//! whole call. Amdahl's bound for `t` threads on `c` cores is `1 / ((1 − f) + f / min(t, c))`:
//! threads beyond the cores add no processors.

use std::time::Instant;

use scalechain_consensus::{verify_txs, VerifyMode};
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_types::{merkle, profile};
use scalechain_workload::fixed::{transfers, Spec};

use super::{study_params, verify_config, with_env, CHAIN_ID};
use crate::{time_median, Ctx, Experiment, StudyError};

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
    "runs",
    "commit",
    "seed",
];

/// Amdahl's law.
pub fn amdahl(f: f64, processors: f64) -> f64 {
    1.0 / ((1.0 - f) + f / processors)
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let log = if ctx.opts.quick { ctx.opts.max_log2.min(12) } else { ctx.opts.max_log2.min(16) };
    let n = 1usize << log;
    let runs = ctx.runs();
    let max_threads = ctx.opts.threads.unwrap_or(2 * ctx.machine.cores).max(1);
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
                runs.to_string(),
                ctx.machine.commit.into(),
                ctx.opts.seed.to_string(),
            ]);
            ctx.progress.inc(1);
        }
    }
    let cores = ctx.machine.cores;
    ctx.finish(Experiment::Speedup, &table, charts, |t| section(t, cores))
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let builds = t.distinct("build");
    ["tx-verify", "merkle"]
        .iter()
        .map(|task| {
            let mut series = Vec::new();
            for b in &builds {
                for (col, what) in [("speedup", "measured"), ("amdahl", "Amdahl")] {
                    let pts = t
                        .select("task", task)
                        .filter(|r| &r[3] == b)
                        .filter_map(|r| Some((t.num(r, "threads")?, t.num(r, col)?)))
                        .collect();
                    series.push(Series::line(format!("{what} ({b})"), pts));
                }
            }
            Chart {
                title: format!("Speedup of {task} by threads (seed 000 Fig 3.3)"),
                x_label: "threads".into(),
                y_label: "speedup over 1 thread (×)".into(),
                log_x: true,
                log_y: false,
                series,
            }
        })
        .collect()
}

fn section(t: &Table, cores: usize) -> String {
    let mut s = format!(
        "Speedup over one thread on this {cores}-core machine, beside Amdahl's bound with the \
         parallel fraction `f` measured by the profiler (not assumed). Seed 000 reports a \
         plateau near 2 measured and 2.5 theoretical on 8 cores (graphs only; no table). \
         Median of the runs.\n\n"
    );
    s.push_str(&t.markdown(&COLUMNS[..8]));
    s
}

#[cfg(test)]
mod tests {
    use super::amdahl;

    #[test]
    fn amdahl_bounds() {
        assert!((amdahl(1.0, 4.0) - 4.0).abs() < 1e-12);
        assert!((amdahl(0.0, 4.0) - 1.0).abs() < 1e-12);
        assert!((amdahl(0.5, 2.0) - 4.0 / 3.0).abs() < 1e-12);
    }
}
