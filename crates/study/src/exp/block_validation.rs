//! `block-validation` (seed 000 Fig 3.2, Table 5.3): the steps of validating one block of n
//! transactions — fork check, Merkle root, transaction verification — and the total, in
//! `sequential` (one thread, single verification), `batch` (one thread, batch verification: the
//! seed's baseline) and `parallel` modes, beside the raw signature bound. Applying the diff to
//! the in-memory UTXO set and the durable store commit are measured separately.
//!
//! Seed 000's Fig 3.2b divides by its "non-parallelized" block validation (Table 5.3), which ran
//! at batch speed: its 2^20-transaction block verified its transactions in 164026474 µs against
//! 1.49E+08 µs batch and 2.88E+08 µs sequential in Table 5.1. So the like-for-like speed-up is
//! `parallel` over `batch`; `parallel` over `sequential` also counts batching.

use std::time::Instant;

use scalechain_consensus::check::{check_block, check_block_txs, check_header_context};
use scalechain_consensus::connect::{connect_block, ConnectCtx};
use scalechain_consensus::pow::HeaderChain;
use scalechain_consensus::{genesis_block, Apps, BlockTree, Params, UtxoSet, VerifyMode};
use scalechain_lab::output::{sig4, Target};
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_store::{ChainStore, Commit, DiskStore};
use scalechain_types::codec::Encode;
use scalechain_types::{Block, Header};
use scalechain_workload::fixed::{self, transfers, Spec};

use super::{powers, raw_batch, raw_sigs, study_params, verify_config, CHAIN_ID};
use crate::{interleaved_medians, seeds, Ctx, Experiment, StudyError};

/// Columns of `block-validation.csv`.
pub const COLUMNS: &[&str] = &[
    "n",
    "mode",
    "threads",
    "build",
    "fork_s",
    "merkle_s",
    "tx_verify_s",
    "total_s",
    "bound_s",
    "apply_s",
    "commit_s",
    "index_s",
    "runs",
    "commit",
    "seed",
];

/// The modes: single verification on one thread, batches on one thread (the seed's
/// "sequential" baseline of Fig 3.2b), batches over the pool.
pub const MODES: [&str; 3] = ["sequential", "batch", "parallel"];

/// The steps timed, as columns.
pub const STEPS: [&str; 4] = ["fork_s", "merkle_s", "tx_verify_s", "total_s"];

struct Genesis(Header);

impl HeaderChain for Genesis {
    fn header_at(&self, height: u64) -> Option<Header> {
        (height == 0).then_some(self.0)
    }
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let max = if ctx.opts.quick { ctx.opts.max_log2.min(10) } else { ctx.opts.max_log2 };
    let threads = ctx.threads();
    let p = study_params();
    let genesis = genesis_block(&p);
    let tree = BlockTree::new(p.hash, genesis.header);
    let (one, many) = (ctx.pool(1)?, ctx.pool(threads)?);
    ctx.start(u64::from(max + 1) * MODES.len() as u64 + 1, "generating and signing the workload");
    let w = many.install(|| transfers(&p, &CHAIN_ID, &Spec::simple(1 << max, ctx.opts.seed)));
    ctx.progress.inc(1);
    let target = scalechain_consensus::pow::next_target(&p, &genesis.header, &Genesis(genesis.header));
    let mut table = Table::new(COLUMNS);
    for n in powers(max) {
        // Fewer runs past 2^16 without `--runs` (at least 1, as the documented 2^20 run had):
        // one round of the sequential mode at 2^20 takes minutes.
        let runs = ctx.runs_at(n, 1);
        let block = fixed::block(&p, &genesis.header, &w.txs[..n], target);
        let sigs = raw_sigs(&p, &block.txs[1..]);
        for (mode, vm, t) in [
            ("sequential", VerifyMode::Sequential, 1),
            ("batch", VerifyMode::Batch, 1),
            ("parallel", VerifyMode::Parallel, threads),
        ] {
            ctx.progress.set_message(format!("n = {n}, {mode}"));
            let pool = if t == 1 { &one } else { &many };
            let cfg = verify_config(vm);
            let apps = Apps::none();
            let cctx = ConnectCtx::new(&p, &CHAIN_ID, &apps, &cfg);
            let app_state = std::collections::BTreeMap::new();
            let fork = || -> bool {
                tree.contains(&block.header.prev_hash)
                    && check_header_context(
                        &p,
                        &block.header,
                        &genesis.header,
                        &Genesis(genesis.header),
                        u64::MAX / 2,
                    )
                    .is_ok()
            };
            let full = || -> Option<scalechain_consensus::BlockDiff> {
                if !fork() {
                    return None;
                }
                let checked = check_block(&block, &p, &apps).ok()?;
                connect_block(&cctx, &checked, &w.utxos, &app_state).ok()
            };
            let Some(diff) = pool.install(full) else {
                return Err(StudyError::Wrong(format!(
                    "{mode} rejected the valid block of {n} transactions"
                )));
            };
            // The transaction stage alone: its stateless rules (`check_block_txs`, which
            // computes the txids) and the connection, of a block whose shape, proof of work and
            // Merkle root (timed on their own) were checked once outside the timing.
            let checked = check_block(&block, &p, &apps)
                .map_err(|e| StudyError::Wrong(format!("the valid block of {n} transactions: {e}")))?;
            let tx_verify = || {
                check_block_txs(&block, &p, &apps).is_ok()
                    && connect_block(&cctx, &checked, &w.utxos, &app_state).is_ok()
            };
            // On the mode's pool: one thread for `batch`, T for `parallel`.
            let bound = || {
                if vm == VerifyMode::Sequential {
                    super::raw_single(&sigs)
                } else {
                    raw_batch(&sigs, cfg.batch_size)
                }
            };
            // Interleaved rounds: machine drift lands on every step alike.
            let m = interleaved_medians(
                runs,
                &mut [
                    &mut || pool.install(fork),
                    &mut || pool.install(|| block.compute_merkle_root(p.hash) == block.header.merkle_root),
                    &mut || pool.install(tx_verify),
                    &mut || pool.install(full).is_some(),
                    &mut || pool.install(bound),
                ],
            );
            let (fork_s, merkle_s, tx_s, total_s, bound_s) = (m[0], m[1], m[2], m[3], m[4]);
            let mut utxos = w.utxos.clone();
            let t0 = Instant::now();
            diff.changes.apply_utxos(&mut utxos);
            let apply_s = t0.elapsed().as_secs_f64();
            drop(utxos);
            // The durable commit once, at the largest block, in parallel mode.
            let (commit_s, index_s) = if n == 1 << max && vm == VerifyMode::Parallel {
                measure_commit(ctx, &p, &block, &w.utxos, &diff)?
            } else {
                (f64::NAN, f64::NAN)
            };
            let f = |x: f64| if x.is_nan() { String::new() } else { format!("{x:.9}") };
            table.push(vec![
                n.to_string(),
                mode.into(),
                t.to_string(),
                ctx.machine.build.into(),
                f(fork_s),
                f(merkle_s),
                f(tx_s),
                f(total_s),
                f(bound_s),
                f(apply_s),
                f(commit_s),
                f(index_s),
                runs.to_string(),
                ctx.machine.commit.into(),
                ctx.opts.seed.to_string(),
            ]);
            ctx.progress.inc(1);
        }
    }
    ctx.finish(Experiment::BlockValidation, &table, charts, |t| section(t, ctx.machine.build))
}

/// A block's whole validation against the raw signature bound, at the largest n (parallel).
pub const TOTAL_TARGET: Target = Target::AtMost(1.15);
/// Its Merkle root against the same bound.
pub const MERKLE_TARGET: Target = Target::AtMost(0.05);

/// Seconds to store the block and commit its diff durably (fjall, synced), on a store that
/// already holds the spent coins; then the seconds after that until the store's index writer
/// has written the block's txid entries (off the critical path: the next block's validation
/// runs beside it, docs/adr/0004-txid-index-follows-the-chain.md).
fn measure_commit(
    ctx: &Ctx,
    p: &Params,
    block: &Block,
    coins: &UtxoSet,
    diff: &scalechain_consensus::BlockDiff,
) -> Result<(f64, f64), StudyError> {
    let dir = ctx.opts.out.join(".block-validation-store");
    let _ = std::fs::remove_dir_all(&dir);
    let io = |e: scalechain_store::StoreError| StudyError::Wrong(format!("store: {e}"));
    let mut store = DiskStore::open(&dir).map_err(io)?;
    let genesis = genesis_block(p);
    let gid = genesis.hash(p.hash);
    let first = Commit {
        tip: gid,
        tip_height: 0,
        main_chain: vec![],
        undo: vec![],
        utxo_remove: vec![],
        utxo_add: coins.iter().collect(),
        app: vec![],
        txids_remove: vec![],
        txids_add: vec![],
        utxo_count: coins.len() as u64,
        total_value: coins.total_value(),
    };
    store.init(&p.encode(), &genesis, gid, &first).map_err(io)?;
    let mut after = coins.clone();
    diff.changes.apply_utxos(&mut after);
    let hash = block.hash(p.hash);
    let c = Commit {
        tip: hash,
        tip_height: 1,
        main_chain: vec![(1, hash)],
        undo: vec![(hash, diff.undo.clone())],
        utxo_remove: diff.changes.remove.clone(),
        utxo_add: diff.changes.add.clone(),
        app: vec![],
        // A node's commit also indexes the block's transactions.
        txids_remove: vec![],
        txids_add: block
            .txs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let loc = scalechain_store::TxLocation { block: hash, height: 1, position: i as u32 };
                (t.txid(p.hash), loc)
            })
            .collect(),
        utxo_count: after.len() as u64,
        total_value: after.total_value(),
    };
    let t0 = Instant::now();
    store.put_block(&hash, block).map_err(io)?;
    store.commit(&c).map_err(io)?;
    let s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    store.flush_txindex().map_err(io)?;
    let index_s = t1.elapsed().as_secs_f64();
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    Ok((s, index_s))
}

/// A seed number as the seed prints it: plain digits, or the spreadsheet's `1.49E+08` form of
/// Table 5.1's three rounded cells (the only values of 10^8 or more that are whole millions).
pub fn printed(v: f64) -> String {
    if v >= 1e8 && v % 1e6 == 0.0 {
        let e = v.log10().floor() as i32;
        format!("{:.2}E+{e:02}", v / 10f64.powi(e))
    } else {
        format!("{v}")
    }
}

/// `mode`'s row at `n` (as printed in the CSV) of `build`.
fn row<'a>(t: &'a Table, n: &str, mode: &str, build: &str) -> Option<&'a Vec<String>> {
    t.rows.iter().find(|r| r[0] == n && r[1] == mode && r[3] == build)
}

/// Speed-up of `mode` over `base` in the step `col`, at every n of `build`.
fn speedups(t: &Table, mode: &str, base: &str, col: &str, build: &str) -> Vec<(f64, f64)> {
    t.select("mode", mode)
        .filter(|r| r[3] == build)
        .filter_map(|r| Some((t.num(r, "n")?, t.num(row(t, &r[0], base, build)?, col)? / t.num(r, col)?)))
        .collect()
}

/// The seed's Fig 3.2b levels, from its prose: (level, what settles there).
pub const SEED_FIG_3_2B: [(f64, &str); 2] = [(1.6, "Merkle and tx verify settle ≈1.6"), (0.9, "fork ≈0.9")];

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let mut steps = Vec::new();
    let mut speed = Vec::new();
    let builds = t.distinct("build");
    for b in &builds {
        for mode in MODES {
            for col in ["fork_s", "merkle_s", "tx_verify_s", "total_s", "bound_s"] {
                // One thread hashes and checks forks alike in both one-thread modes: batch adds
                // only its verification steps.
                if mode == "batch" && (col == "fork_s" || col == "merkle_s") {
                    continue;
                }
                let pts = t
                    .select("mode", mode)
                    .filter(|r| &r[3] == b)
                    .filter_map(|r| Some((t.num(r, "n")?, t.num(r, col)? * 1e6)))
                    .collect();
                steps.push(Series::line(format!("{mode} {} ({b})", col.trim_end_matches("_s")), pts));
            }
        }
        for col in STEPS {
            speed.push(Series::line(
                format!("{} parallel / batch 1 thread ({b})", col.trim_end_matches("_s")),
                speedups(t, "parallel", "batch", col, b),
            ));
        }
        speed.push(Series::line(
            format!("total parallel / sequential, counts batching ({b})"),
            speedups(t, "parallel", "sequential", "total_s", b),
        ));
    }
    let seed = |f: fn(&seeds::BlockValidationRow) -> f64| {
        seeds::TABLE_5_3.iter().map(|r| (r.n as f64, f(r))).collect()
    };
    steps.push(Series::seed("seed 000 fork (sequential)", seed(|r| r.fork_us)));
    steps.push(Series::seed("seed 000 merkle (sequential)", seed(|r| r.merkle_us)));
    steps.push(Series::seed("seed 000 tx verify (sequential)", seed(|r| r.tx_verify_us)));
    steps.push(Series::seed("seed 000 total (sequential)", seed(|r| r.total_us)));
    // The seed prints no numbers for Fig 3.2b, only the levels it settles at: drawn across our n.
    let ns: Vec<f64> = {
        let mut v: Vec<f64> = t.rows.iter().filter_map(|r| t.num(r, "n")).collect();
        v.sort_by(f64::total_cmp);
        v.dedup();
        v
    };
    for (level, what) in SEED_FIG_3_2B {
        speed.push(Series::seed(
            format!("seed 000 Fig 3.2b prose: {what}"),
            ns.iter().map(|&n| (n, level)).collect(),
        ));
    }
    vec![
        Chart {
            title: "Block validation steps (seed 000 Fig 3.2a)".into(),
            x_label: "transactions in the block (n)".into(),
            y_label: "median time (µs)".into(),
            log_x: true,
            log_y: true,
            x_names: Vec::new(),
            series: steps,
        },
        Chart {
            title: "Speed-up of parallel over the one-thread baseline (seed 000 Fig 3.2b)".into(),
            x_label: "transactions in the block (n)".into(),
            y_label: "speed-up (×, baseline time / parallel time)".into(),
            log_x: true,
            log_y: false,
            x_names: Vec::new(),
            series: speed,
        },
    ]
}

fn section(t: &Table, build: &str) -> String {
    let mut s = String::from(
        "Validation of one block of n 1-input/1-output transactions (plus coinbase): `fork` is the \
         parent lookup and header-context check, `merkle` the RFC 6962 root, `tx_verify` the \
         transaction rules and connection (`check_block_txs` + `connect_block`), `total` the whole \
         of `check_header_context` + `check_block` + `connect_block`. Modes: `sequential` (one \
         thread, single verification), `batch` (one thread, batch verification) and `parallel` \
         (batches over the pool). `bound` is raw signature verification of the block's signatures \
         (single for `sequential`, batches on the mode's threads otherwise). Median of the runs (the `runs` \
         column: fewer past 2^16 unless `--runs` set them).\n\n",
    );
    let max_n = t.rows.iter().filter_map(|r| r[0].parse::<usize>().ok()).max().unwrap_or(1);
    let builds = t.distinct("build");
    s.push_str(&format!("**Targets at n = {max_n}** (parallel mode):\n\n"));
    s.push_str(&format!(
        "| build | total / bound (target {}) | merkle / bound (target {}) | apply s | store commit s | txid index written after, s |\n|---|---:|---:|---:|---:|---:|\n",
        TOTAL_TARGET.text(),
        MERKLE_TARGET.text()
    ));
    for b in &builds {
        if let Some(r) = row(t, &max_n.to_string(), "parallel", b) {
            let g = |c: &str| t.num(r, c).unwrap_or(f64::NAN);
            let (total, merkle) = (g("total_s") / g("bound_s"), g("merkle_s") / g("bound_s"));
            s.push_str(&format!(
                "| {b} | {} | {} | {:.3} | {:.3} | {:.3} |\n",
                TOTAL_TARGET.cell(&format!("{total:.3}"), total),
                MERKLE_TARGET.cell(&format!("{merkle:.4}"), merkle),
                g("apply_s"),
                g("commit_s"),
                g("index_s")
            ));
        }
    }
    s.push_str(&baseline(t, build));
    s.push_str(&format!(
        "\n**Beside seed 000 Table 5.3** (µs, the seed's as printed; seed: {}; ours: build `{build}`):\n\n",
        seeds::TABLE_5_3_SOURCE
    ));
    s.push_str("| n | seed fork | ours fork (seq) | seed merkle | ours merkle (seq / par) | seed tx verify | ours tx verify (seq / batch / par) | seed total | ours total (seq / batch / par) |\n");
    s.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in seeds::TABLE_5_3.iter().filter(|r| r.n as usize <= max_n) {
        let get = |mode: &str, col: &str| {
            row(t, &r.n.to_string(), mode, build)
                .and_then(|x| t.num(x, col))
                .map_or("–".to_string(), |v| sig4(v * 1e6))
        };
        let two = |col: &str| format!("{} / {}", get("sequential", col), get("parallel", col));
        let three = |col: &str| {
            format!("{} / {} / {}", get("sequential", col), get("batch", col), get("parallel", col))
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.n,
            printed(r.fork_us),
            get("sequential", "fork_s"),
            printed(r.merkle_us),
            two("merkle_s"),
            printed(r.tx_verify_us),
            three("tx_verify_s"),
            printed(r.total_us),
            three("total_s"),
        ));
    }
    s
}

/// The seed's baseline and the per-step speed-ups over it, beside the seed's Fig 3.2b levels.
fn baseline(t: &Table, build: &str) -> String {
    let (last3, big_batch, big_seq) = match (
        seeds::TABLE_5_3.iter().find(|r| r.n == 1 << 20),
        seeds::TABLE_5_1.iter().find(|r| r.n == 1 << 20),
    ) {
        (Some(b), Some(v)) => (b.tx_verify_us, v.batch_us, v.sequential_us),
        _ => return String::new(),
    };
    let mut s = format!(
        "\n**The seed's baseline is batch verification on one thread.** Fig 3.2b is the speed-up \
         \"over the basic approach of non-parallelized median single block verification\", whose \
         times are Table 5.3. Those ran at batch speed: at 2^20 transactions Table 5.3 prints \
         {} µs of transaction verification, Table 5.1 prints {} µs batch and {} µs sequential \
         (ratios {:.2} and {:.2}). So the like-for-like speed-up is `parallel` over `batch` (one \
         thread); ours over `sequential` also counts the gain of batching. The seed gives Fig 3.2b \
         as a graph only; its prose: \"Merkle tree creation and transaction verification speed \
         settles around 1.6, and fork detection slows slightly to around 0.9\" (§3.2.2), drawn as \
         levels in the figure.\n\n",
        printed(last3),
        printed(big_batch),
        printed(big_seq),
        last3 / big_batch,
        last3 / big_seq,
    );
    s.push_str(&format!(
        "Speed-ups of build `{build}` (×, baseline time / parallel time):\n\n\
         | n | fork par / batch (seed ≈0.9) | merkle par / batch (seed ≈1.6) | tx verify par / batch (seed ≈1.6) | total par / batch | total par / sequential (counts batching) |\n\
         |---:|---:|---:|---:|---:|---:|\n"
    ));
    let cols: Vec<Vec<(f64, f64)>> = STEPS
        .iter()
        .map(|c| speedups(t, "parallel", "batch", c, build))
        .chain([speedups(t, "parallel", "sequential", "total_s", build)])
        .collect();
    for &(n, _) in &cols[0] {
        let cell = |c: &Vec<(f64, f64)>| {
            c.iter().find(|p| p.0 == n).map_or("–".to_string(), |p| format!("{:.2}", p.1))
        };
        let cells: Vec<String> = cols.iter().map(cell).collect();
        s.push_str(&format!("| {n} | {} |\n", cells.join(" | ")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Experiment, Opts};

    #[test]
    fn seed_numbers_print_as_the_seed_prints_them() {
        assert_eq!(printed(1.49e8), "1.49E+08");
        assert_eq!(printed(2.88e8), "2.88E+08");
        assert_eq!(printed(164026474.0), "164026474");
        assert_eq!(printed(863.5), "863.5");
        assert_eq!(printed(38.0), "38");
    }

    #[test]
    fn a_quick_run_has_the_batch_one_thread_baseline_and_its_speedups() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let opts = Opts { quick: true, max_log2: 3, runs: Some(1), ..Opts::new(dir.path()) };
        crate::run(Experiment::BlockValidation, opts).unwrap_or_else(|e| panic!("{e}"));
        let csv = std::fs::read_to_string(dir.path().join("block-validation.csv")).unwrap_or_default();
        let t = Table::from_csv(&csv).unwrap_or_else(|| panic!("{csv}"));
        let build = t.rows[0][3].clone();
        for mode in MODES {
            let rows: Vec<&Vec<String>> = t.select("mode", mode).collect();
            assert_eq!(rows.len(), 4, "{mode}: {csv}");
            for r in rows {
                for col in STEPS.iter().chain(&["bound_s"]) {
                    assert!(t.num(r, col).is_some_and(|v| v > 0.0), "{mode} {col}: {r:?}");
                }
            }
        }
        // The baseline runs on one thread; parallel on the pool.
        assert!(t.select("mode", "batch").all(|r| r[2] == "1"));
        for col in STEPS {
            assert_eq!(speedups(&t, "parallel", "batch", col, &build).len(), 4, "{col}");
        }
        let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap_or_default();
        assert!(report.contains("164026474 µs of transaction verification"), "{report}");
        assert!(report.contains("| 8 |"), "a speed-up row per n: {report}");
        let svg = std::fs::read_to_string(dir.path().join("block-validation.svg")).unwrap_or_default();
        assert!(svg.contains("parallel / batch 1 thread") && svg.contains("seed 000 Fig 3.2b prose"));
    }
}
