//! `components` (seed 004): the cost of each step of validating one 1-input/1-output
//! transaction — decode, txid, sighash, UTXO lookup, key parse, signature, apply — and of the
//! whole, beside seed 004's Criterion figures.

use std::hint::black_box;
use std::time::Instant;

use scalechain_consensus::{verify_txs, Coin, UtxoView, VerifyMode};
use scalechain_sim::workload::{transfers, Spec};
use scalechain_types::codec::{Decode, Encode};
use scalechain_types::keys::{self, sighash, Ed25519Item};
use scalechain_types::{HashKind, Scheme, SecretKey, Tx};

use super::{study_params, verify_config, with_env, CHAIN_ID};
use crate::output::sig4;
use crate::plot::{Chart, Series};
use crate::{median, seeds, Ctx, Experiment, StudyError, Table};

/// Columns of `components.csv`.
pub const COLUMNS: &[&str] = &["component", "ns", "iterations", "build", "runs", "commit", "seed"];

/// Median ns per call of `f` over `runs` runs of `iters` calls each (`iters` calibrated so one
/// run takes about `target_s`).
fn per_op(runs: usize, target_s: f64, mut f: impl FnMut(u64)) -> (f64, u64) {
    let mut iters = 1u64;
    loop {
        let t = Instant::now();
        for i in 0..iters {
            f(i);
        }
        let s = t.elapsed().as_secs_f64();
        if s >= target_s / 10.0 || iters > 1 << 32 {
            iters = ((iters as f64) * target_s / s.max(1e-9)).max(1.0) as u64;
            break;
        }
        iters *= 4;
    }
    let samples = (0..runs)
        .map(|_| {
            let t = Instant::now();
            for i in 0..iters {
                f(i);
            }
            t.elapsed().as_secs_f64() * 1e9 / iters as f64
        })
        .collect();
    (median(samples), iters)
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let runs = ctx.runs();
    let target_s = if ctx.opts.quick { 0.01 } else { 0.2 };
    let n = if ctx.opts.quick { 1 << 12 } else { 1 << 18 };
    let p = study_params();
    ctx.start(11, "generating the workload");
    let w =
        ctx.pool(ctx.machine.cores)?.install(|| transfers(&p, &CHAIN_ID, &Spec::simple(n, ctx.opts.seed)));
    let txs = &w.txs;
    let raw: Vec<Vec<u8>> = txs.iter().map(Encode::encode).collect();
    let txids: Vec<_> = txs.iter().map(|t| t.txid(p.hash)).collect();
    let msgs: Vec<_> = txids.iter().map(|t| sighash(p.hash, &CHAIN_ID, t)).collect();
    let pick = |i: u64| (i as usize) % n;
    let mut table = Table::new(COLUMNS);
    let mut record = |name: &str, (ns, iters): (f64, u64)| {
        table.push(vec![
            name.into(),
            format!("{ns:.1}"),
            iters.to_string(),
            ctx.machine.build.into(),
            runs.to_string(),
            ctx.machine.commit.into(),
            ctx.opts.seed.to_string(),
        ]);
        ctx.progress.inc(1);
    };
    ctx.progress.inc(1);
    record(
        "decode",
        per_op(runs, target_s, |i| {
            black_box(Tx::decode(&raw[pick(i)]).is_ok());
        }),
    );
    record(
        "txid",
        per_op(runs, target_s, |i| {
            black_box(txs[pick(i)].txid(HashKind::Sha256));
        }),
    );
    record(
        "sighash",
        per_op(runs, target_s, |i| {
            black_box(sighash(p.hash, &CHAIN_ID, &txids[pick(i)]));
        }),
    );
    record(
        "utxo_lookup",
        per_op(runs, target_s, |i| {
            black_box(w.utxos.coin(&txs[pick(i)].inputs[0].prev));
        }),
    );
    record(
        "key_hash_check",
        per_op(runs, target_s, |i| {
            let input = &txs[pick(i)].inputs[0];
            black_box(input.witness.pubkey.hash(p.hash));
        }),
    );
    record(
        "key_parse",
        per_op(runs, target_s, |i| {
            let key = txs[pick(i)].inputs[0].witness.pubkey;
            black_box(ed25519_zebra::VerificationKey::try_from(key.as_bytes()).is_ok());
        }),
    );
    record(
        "signature_ed25519_single",
        per_op(runs, target_s, |i| {
            let (k, tx) = (pick(i), &txs[pick(i)]);
            let inp = &tx.inputs[0];
            black_box(keys::verify(&inp.witness.pubkey, &msgs[k], &inp.witness.signature).is_ok());
        }),
    );
    let keys32: Vec<[u8; 32]> =
        txs.iter().map(|t| t.inputs[0].witness.pubkey.as_bytes().try_into().unwrap_or([0; 32])).collect();
    let batch = 256.min(n);
    let (ns, iters) = per_op(runs, target_s, |i| {
        let start = (pick(i * batch as u64) / batch) * batch;
        let items: Vec<Ed25519Item<'_>> = (start..start + batch)
            .map(|j| Ed25519Item {
                key: &keys32[j],
                sig: &txs[j].inputs[0].witness.signature,
                msg: msgs[j].as_bytes(),
            })
            .collect();
        let rng = <rand_chacha::ChaCha20Rng as rand_core::SeedableRng>::seed_from_u64(i);
        black_box(keys::verify_ed25519_batch(&items, rng).is_ok());
    });
    record("signature_ed25519_batch256_per_sig", (ns / batch as f64, iters * batch as u64));
    let sk = SecretKey::from_seed(Scheme::Secp256k1, [3; 32]);
    let (pk, sig) = (sk.public(), sk.sign(&msgs[0]));
    record(
        "signature_secp256k1",
        per_op(runs, target_s, |_| {
            black_box(keys::verify(&pk, &msgs[0], &sig).is_ok());
        }),
    );
    let mut utxos = w.utxos.clone();
    record(
        "apply",
        per_op(runs, target_s, |i| {
            let tx = &txs[pick(i)];
            let prev = tx.inputs[0].prev;
            if let Some(c) = utxos.remove(&prev) {
                let op = scalechain_types::OutPoint { txid: txids[pick(i)], index: 0 };
                utxos.insert(op, Coin { out: tx.outputs[0], height: 1, coinbase: false });
                // Restore, so every iteration does the same work.
                utxos.remove(&op);
                utxos.insert(prev, c);
            }
        }),
    );
    let cfg = verify_config(VerifyMode::Sequential);
    let ok = with_env(&p, &cfg, &w.utxos, |env| verify_txs(env, &txs[..1]).iter().all(Result::is_ok));
    if !ok {
        return Err(StudyError::Wrong("full validation rejected a valid transaction".into()));
    }
    record(
        "full_validation",
        per_op(runs, target_s, |i| {
            let k = pick(i);
            black_box(with_env(&p, &cfg, &w.utxos, |env| verify_txs(env, &txs[k..k + 1])));
        }),
    );
    ctx.finish(Experiment::Components, &table, charts, section)
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    // One bar-like series per build: components along x by index.
    let builds = t.distinct("build");
    let mut series: Vec<Series> = builds
        .iter()
        .map(|b| {
            let pts = t
                .rows
                .iter()
                .filter(|r| &r[3] == b)
                .enumerate()
                .filter_map(|(i, r)| Some((i as f64 + 1.0, t.num(r, "ns")?)))
                .collect();
            Series::line(format!("ScaleChain ({b}); x = row of components.csv"), pts)
        })
        .collect();
    series.push(Series::seed(
        "seed 004 (x = row of its table)",
        seeds::COMPONENTS.iter().enumerate().map(|(i, r)| (i as f64 + 1.0, r.ns)).collect(),
    ));
    vec![Chart {
        title: "Cost per component of validating one transaction (seed 004)".into(),
        x_label: "component (row)".into(),
        y_label: "time per transaction (ns)".into(),
        log_x: false,
        log_y: true,
        series,
    }]
}

fn section(t: &Table) -> String {
    let mut s = String::from(
        "Median ns per call over a 1-input/1-output Ed25519 transfer; `utxo_lookup` is against a \
         set of 2^18 coins. `full_validation` is `verify_txs` in `sequential` mode on one \
         transaction (every rule and the signature).\n\n",
    );
    s.push_str(&t.markdown(&["component", "ns", "iterations", "build"]));
    s.push_str(&format!(
        "\n**Seed 004** ({}):\n\n| component | ns | note |\n|---|---:|---|\n",
        seeds::COMPONENTS_SOURCE
    ));
    for r in seeds::COMPONENTS {
        s.push_str(&format!("| {} | {} | {} |\n", r.component, sig4(r.ns), r.note));
    }
    s
}
