//! `tx-throughput` (seed 000 Fig 3.1a, Table 5.1): verifying n isolated 1-input/1-output
//! Ed25519 transactions with the ledger's `verify_txs`, in each mode, beside the raw signature
//! bounds measured on the same signatures in the same run.

use scalechain_consensus::{verify_txs, VerifyMode};
use scalechain_lab::output::sig4;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_workload::fixed::{transfers, Spec};

use super::{powers, raw_batch, raw_sigs, study_params, verify_config, with_env};
use crate::{interleaved_medians, seeds, Ctx, Experiment, StudyError};

/// Columns of `tx-throughput.csv`.
pub const COLUMNS: &[&str] =
    &["n", "mode", "threads", "build", "median_s", "tx_per_s", "runs", "commit", "seed"];

/// A measured closure: returns whether the workload verified.
type Timed<'a> = Box<dyn FnMut() -> bool + 'a>;

/// The n at which the ratio targets are judged (or the largest n run, if smaller).
pub const TARGET_N: usize = 1 << 16;

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let max = if ctx.opts.quick { ctx.opts.max_log2.min(10) } else { ctx.opts.max_log2 };
    let (runs, threads) = (ctx.runs(), ctx.threads());
    let p = study_params();
    let (one, many) = (ctx.pool(1)?, ctx.pool(threads)?);
    ctx.start(u64::from(max + 1) * 5 + 1, "generating and signing the workload");
    let w = many.install(|| transfers(&p, &super::CHAIN_ID, &Spec::simple(1 << max, ctx.opts.seed)));
    let sigs = raw_sigs(&p, &w.txs);
    ctx.progress.inc(1);
    let mut table = Table::new(COLUMNS);
    for n in powers(max) {
        let txs = &w.txs[..n];
        let ledger = |vm: VerifyMode, pool: &rayon::ThreadPool| {
            let cfg = verify_config(vm);
            pool.install(|| {
                with_env(&p, &cfg, &w.utxos, |env| verify_txs(env, txs).iter().all(Result::is_ok))
            })
        };
        let bs = verify_config(VerifyMode::Parallel).batch_size;
        let mut modes: Vec<(&str, usize, Timed<'_>)> = vec![
            ("sequential", 1, Box::new(|| ledger(VerifyMode::Sequential, &one))),
            ("batch", 1, Box::new(|| ledger(VerifyMode::Batch, &one))),
            ("parallel", threads, Box::new(|| ledger(VerifyMode::Parallel, &many))),
            ("bound", threads, Box::new(|| many.install(|| raw_batch(&sigs[..n], bs)))),
            ("bound_single", 1, Box::new(|| super::raw_single(&sigs[..n]))),
        ];
        ctx.progress.set_message(format!("n = {n}"));
        for (mode, _, f) in modes.iter_mut() {
            if !f() {
                return Err(StudyError::Wrong(format!("{mode} rejected a valid workload at n = {n}")));
            }
        }
        // Rounds interleave the modes (rotating the order), so drift in the machine's speed
        // lands on every mode alike and the ratios stay fair.
        let medians = {
            let mut fs: Vec<&mut dyn FnMut() -> bool> =
                modes.iter_mut().map(|(_, _, f)| &mut **f as _).collect();
            interleaved_medians(runs, &mut fs)
        };
        for ((mode, t, _), s) in modes.iter().zip(medians) {
            table.push(vec![
                n.to_string(),
                mode.to_string(),
                t.to_string(),
                ctx.machine.build.into(),
                format!("{s:.9}"),
                format!("{:.1}", n as f64 / s),
                runs.to_string(),
                ctx.machine.commit.into(),
                ctx.opts.seed.to_string(),
            ]);
            ctx.progress.inc(1);
        }
    }
    ctx.finish(Experiment::TxThroughput, &table, charts, |t| section(t, ctx.machine.build))
}

fn rate(t: &Table, n: usize, mode: &str, build: &str) -> Option<f64> {
    let ns = n.to_string();
    t.select("mode", mode).find(|r| r[0] == ns && r[3] == build).and_then(|r| t.num(r, "tx_per_s"))
}

/// The ratios the issue sets targets for, at `n`: (parallel / bound, sequential / bound_single).
pub fn ratios(t: &Table, n: usize, build: &str) -> (Option<f64>, Option<f64>) {
    let r = |a: &str, b: &str| Some(rate(t, n, a, build)? / rate(t, n, b, build)?);
    (r("parallel", "bound"), r("sequential", "bound_single"))
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let mut series = Vec::new();
    let builds = t.distinct("build");
    for build in &builds {
        for mode in ["sequential", "batch", "parallel", "bound", "bound_single"] {
            let pts = t
                .select("mode", mode)
                .filter(|r| &r[3] == build)
                .filter_map(|r| Some((t.num(r, "n")?, t.num(r, "tx_per_s")?)))
                .collect();
            series.push(Series::line(format!("{mode} ({build})"), pts));
        }
    }
    let seed = |f: fn(&seeds::TxVerifyRow) -> f64| {
        seeds::TABLE_5_1.iter().map(|r| (r.n as f64, r.n as f64 / (f(r) / 1e6))).collect()
    };
    series.push(Series::seed("seed 000 sequential", seed(|r| r.sequential_us)));
    series.push(Series::seed("seed 000 batch", seed(|r| r.batch_us)));
    series.push(Series::seed("seed 000 parallel", seed(|r| r.parallel_us)));
    vec![Chart {
        title: "Transaction verification throughput (seed 000 Fig 3.1a)".into(),
        x_label: "transactions verified together (n)".into(),
        y_label: "transactions / s".into(),
        log_x: true,
        log_y: true,
        series,
    }]
}

fn section(t: &Table, build: &str) -> String {
    let mut s = String::from(
        "Ledger verification (`verify_txs`: stateless rules, txid, UTXO lookup, key and value \
         checks, signature) of n independent 1-input/1-output Ed25519 transactions, against the raw \
         ZIP-215 bounds on the same signatures. Median of the runs.\n\n",
    );
    let builds = t.distinct("build");
    let max_n = t.rows.iter().filter_map(|r| r[0].parse::<usize>().ok()).max().unwrap_or(1);
    let n = TARGET_N.min(max_n);
    s.push_str(&format!("**Targets at n = {n}** (ratio of throughputs, same threads, same build):\n\n"));
    s.push_str("| build | parallel / bound (target ≥ 0.90) | sequential / bound_single (target ≥ 0.90) |\n|---|---:|---:|\n");
    for b in &builds {
        let (par, seq) = ratios(t, n, b);
        let f = |x: Option<f64>| x.map_or("n/a".into(), |x| format!("{x:.3}"));
        s.push_str(&format!("| {b} | {} | {} |\n", f(par), f(seq)));
    }
    s.push_str(&format!(
        "\n**Beside seed 000 Table 5.1** (tx/s; seed: {}; ours: build `{build}`):\n\n",
        seeds::TABLE_5_1_SOURCE
    ));
    s.push_str("| n | seed sequential | ours sequential | seed batch | ours batch | seed parallel | ours parallel | ours bound |\n");
    s.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in seeds::TABLE_5_1.iter().filter(|r| r.n as usize <= max_n) {
        let n = r.n as usize;
        let seed = |us: f64| sig4(r.n as f64 / (us / 1e6));
        let ours = |m: &str| rate(t, n, m, build).map_or("–".into(), sig4);
        s.push_str(&format!(
            "| {n} | {} | {} | {} | {} | {} | {} | {} |\n",
            seed(r.sequential_us),
            ours("sequential"),
            seed(r.batch_us),
            ours("batch"),
            seed(r.parallel_us),
            ours("parallel"),
            ours("bound"),
        ));
    }
    s
}
