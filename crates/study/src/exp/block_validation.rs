//! `block-validation` (seed 000 Fig 3.2, Table 5.3): the steps of validating one block of n
//! transactions — fork check, Merkle root, transaction verification — and the total, in
//! `sequential` (one thread, single verification) and `parallel` modes, beside the raw
//! signature bound. Applying the diff to the in-memory UTXO set and the durable store commit
//! are measured separately.

use std::time::Instant;

use scalechain_consensus::check::{check_block, check_block_txs, check_header_context};
use scalechain_consensus::connect::{connect_block, ConnectCtx};
use scalechain_consensus::pow::HeaderChain;
use scalechain_consensus::{genesis_block, Apps, BlockTree, Params, UtxoSet, VerifyMode};
use scalechain_lab::output::sig4;
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
    "runs",
    "commit",
    "seed",
];

struct Genesis(Header);

impl HeaderChain for Genesis {
    fn header_at(&self, height: u64) -> Option<Header> {
        (height == 0).then_some(self.0)
    }
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let max = if ctx.opts.quick { ctx.opts.max_log2.min(10) } else { ctx.opts.max_log2 };
    let (runs, threads) = (ctx.runs(), ctx.threads());
    let p = study_params();
    let genesis = genesis_block(&p);
    let tree = BlockTree::new(p.hash, genesis.header);
    let (one, many) = (ctx.pool(1)?, ctx.pool(threads)?);
    ctx.start(u64::from(max + 1) * 2 + 1, "generating and signing the workload");
    let w = many.install(|| transfers(&p, &CHAIN_ID, &Spec::simple(1 << max, ctx.opts.seed)));
    ctx.progress.inc(1);
    let target = scalechain_consensus::pow::next_target(&p, &genesis.header, &Genesis(genesis.header));
    let mut table = Table::new(COLUMNS);
    for n in powers(max) {
        let block = fixed::block(&p, &genesis.header, &w.txs[..n], target);
        let sigs = raw_sigs(&p, &block.txs[1..]);
        for (mode, vm, t) in
            [("sequential", VerifyMode::Sequential, 1), ("parallel", VerifyMode::Parallel, threads)]
        {
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
            let bound = || {
                if vm == VerifyMode::Parallel {
                    raw_batch(&sigs, cfg.batch_size)
                } else {
                    super::raw_single(&sigs)
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
            let commit_s = if n == 1 << max && vm == VerifyMode::Parallel {
                measure_commit(ctx, &p, &block, &w.utxos, &diff)?
            } else {
                f64::NAN
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
                runs.to_string(),
                ctx.machine.commit.into(),
                ctx.opts.seed.to_string(),
            ]);
            ctx.progress.inc(1);
        }
    }
    ctx.finish(Experiment::BlockValidation, &table, charts, |t| section(t, ctx.machine.build))
}

/// Seconds to store the block and commit its diff durably (fjall, synced), on a store that
/// already holds the spent coins.
fn measure_commit(
    ctx: &Ctx,
    p: &Params,
    block: &Block,
    coins: &UtxoSet,
    diff: &scalechain_consensus::BlockDiff,
) -> Result<f64, StudyError> {
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
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(s)
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let mut steps = Vec::new();
    let mut speed = Vec::new();
    let builds = t.distinct("build");
    for b in &builds {
        for mode in ["sequential", "parallel"] {
            for col in ["fork_s", "merkle_s", "tx_verify_s", "total_s", "bound_s"] {
                let pts = t
                    .select("mode", mode)
                    .filter(|r| &r[3] == b)
                    .filter_map(|r| Some((t.num(r, "n")?, t.num(r, col)? * 1e6)))
                    .collect();
                steps.push(Series::line(format!("{mode} {} ({b})", col.trim_end_matches("_s")), pts));
            }
        }
        for col in ["merkle_s", "tx_verify_s", "total_s"] {
            let pts = t
                .select("mode", "parallel")
                .filter(|r| &r[3] == b)
                .filter_map(|r| {
                    let n = t.num(r, "n")?;
                    let seq = t.rows.iter().find(|s| s[1] == "sequential" && s[0] == r[0] && s[3] == r[3])?;
                    Some((n, t.num(seq, col)? / t.num(r, col)?))
                })
                .collect();
            speed.push(Series::line(format!("{} ({b})", col.trim_end_matches("_s")), pts));
        }
    }
    let seed = |f: fn(&seeds::BlockValidationRow) -> f64| {
        seeds::TABLE_5_3.iter().map(|r| (r.n as f64, f(r))).collect()
    };
    steps.push(Series::seed("seed 000 fork (sequential)", seed(|r| r.fork_us)));
    steps.push(Series::seed("seed 000 merkle (sequential)", seed(|r| r.merkle_us)));
    steps.push(Series::seed("seed 000 tx verify (sequential)", seed(|r| r.tx_verify_us)));
    steps.push(Series::seed("seed 000 total (sequential)", seed(|r| r.total_us)));
    vec![
        Chart {
            title: "Block validation steps (seed 000 Fig 3.2a)".into(),
            x_label: "transactions in the block (n)".into(),
            y_label: "median time (µs)".into(),
            log_x: true,
            log_y: true,
            series: steps,
        },
        Chart {
            title: "Speedup of parallel over sequential (seed 000 Fig 3.2b)".into(),
            x_label: "transactions in the block (n)".into(),
            y_label: "speedup (×, sequential time / parallel time)".into(),
            log_x: true,
            log_y: false,
            series: speed,
        },
    ]
}

fn section(t: &Table, build: &str) -> String {
    let mut s = String::from(
        "Validation of one block of n 1-input/1-output transactions (plus coinbase): `fork` is the \
         parent lookup and header-context check, `merkle` the RFC 6962 root, `tx_verify` the \
         transaction rules and connection (`check_block_txs` + `connect_block`), `total` the whole \
         of `check_header_context` + `check_block` + `connect_block`. `bound` is raw signature \
         verification of the block's signatures (batch over the same threads for `parallel`, single \
         for `sequential`). Median of the runs.\n\n",
    );
    let max_n = t.rows.iter().filter_map(|r| r[0].parse::<usize>().ok()).max().unwrap_or(1);
    let builds = t.distinct("build");
    s.push_str(&format!("**Targets at n = {max_n}** (parallel mode):\n\n"));
    s.push_str("| build | total / bound (target ≤ 1.15) | merkle / bound (target ≤ 0.05) | apply s | store commit s |\n|---|---:|---:|---:|---:|\n");
    for b in &builds {
        let row = t.rows.iter().find(|r| r[0] == max_n.to_string() && r[1] == "parallel" && r[3] == *b);
        if let Some(r) = row {
            let g = |c: &str| t.num(r, c).unwrap_or(f64::NAN);
            s.push_str(&format!(
                "| {b} | {:.3} | {:.4} | {:.3} | {:.3} |\n",
                g("total_s") / g("bound_s"),
                g("merkle_s") / g("bound_s"),
                g("apply_s"),
                g("commit_s")
            ));
        }
    }
    s.push_str(&format!(
        "\n**Beside seed 000 Table 5.3** (µs; seed: {}; ours: build `{build}`):\n\n",
        seeds::TABLE_5_3_SOURCE
    ));
    s.push_str("| n | seed fork | ours fork (seq) | seed merkle | ours merkle (seq / par) | seed tx verify | ours tx verify (seq / par) | seed total | ours total (seq / par) |\n");
    s.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for r in seeds::TABLE_5_3.iter().filter(|r| r.n as usize <= max_n) {
        let get = |mode: &str, col: &str| {
            t.rows
                .iter()
                .find(|x| x[0] == r.n.to_string() && x[1] == mode && x[3] == build)
                .and_then(|x| t.num(x, col))
                .map_or("–".to_string(), |v| sig4(v * 1e6))
        };
        let both = |col: &str| format!("{} / {}", get("sequential", col), get("parallel", col));
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.n,
            sig4(r.fork_us),
            get("sequential", "fork_s"),
            sig4(r.merkle_us),
            both("merkle_s"),
            sig4(r.tx_verify_us),
            both("tx_verify_s"),
            sig4(r.total_us),
            both("total_s"),
        ));
    }
    s
}
