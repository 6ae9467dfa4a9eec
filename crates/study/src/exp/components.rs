//! `components` (seed 004): the cost of each step of validating one 1-input/1-output
//! transaction — decode, txid, sighash, UTXO lookup, key parse, signature, apply — and of the
//! whole, beside seed 004's Criterion figures; then seed 004's validator unit
//! ([`super::validator`]): the cost of a mempool read handle, and validator threads drawing
//! from a 100,000-transaction pool for one second, by thread count.

use std::hint::black_box;
use std::time::{Duration, Instant};

use scalechain_consensus::{verify_txs, Coin, UtxoView, VerifyMode};
use scalechain_lab::output::sig4;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_types::codec::{Decode, Encode};
use scalechain_types::keys::{self, sighash, Ed25519Item};
use scalechain_types::{HashKind, Scheme, SecretKey, Tx};
use scalechain_workload::fixed::{transfers, Spec};

use super::{study_params, validator, verify_config, with_env, CHAIN_ID};
use crate::{median, seeds, Ctx, Experiment, StudyError};

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
    let (threads, window, unit_runs) = if ctx.opts.quick {
        (&validator::THREADS[..2], Duration::from_millis(100), 1)
    } else {
        (validator::THREADS, Duration::from_secs(1), runs.min(3))
    };
    // The workload, 12 components, the read handle, then two rows per thread count.
    ctx.start(14 + 2 * threads.len() as u64, "generating the workload");
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
    // Seed 004's `full_validation_1_thread`: the same validation in a thread spawned (and
    // joined) for each one.
    record(
        "full_validation_spawned",
        per_op(runs, target_s, |i| {
            let k = pick(i);
            let (p, cfg, utxos) = (&p, &cfg, &w.utxos);
            std::thread::scope(|s| {
                let h = s
                    .spawn(move || black_box(with_env(p, cfg, utxos, |env| verify_txs(env, &txs[k..k + 1]))));
                black_box(h.join().is_ok());
            });
        }),
    );
    // Seed 004's validator unit: a read handle's cost, then the thread sweep.
    let pool = validator::pool_of(&p, &w.utxos, txs);
    record(
        "read_handle_clone",
        per_op(runs, target_s, |_| {
            black_box(pool.snapshot());
        }),
    );
    let dir = tempfile::tempdir().map_err(|e| StudyError::Wrong(format!("temporary directory: {e}")))?;
    for &n in threads {
        let mut got = Vec::with_capacity(unit_runs);
        for r in 0..unit_runs {
            let sub = dir.path().join(format!("t{n}-{r}"));
            got.push(validator::run_unit(&p, &w.utxos, &pool, n, window, &sub, ctx.opts.seed ^ r as u64)?);
        }
        let per_s = median(got.iter().map(|u| u.validations as f64 / u.window_s).collect());
        let written = median(got.iter().map(|u| u.written as f64).collect());
        let write_ns = median(got.iter().map(|u| u.write_ns).collect());
        // One validation's share of the unit's wall time, and the writer's cost per distinct
        // transaction written; `iterations` holds validations per second and distinct writes.
        record(&format!("validator_unit_{n}_threads"), (1e9 / per_s, per_s.round() as u64));
        record(&format!("validator_unit_{n}_threads_write"), (write_ns, written.round() as u64));
    }
    ctx.finish(Experiment::Components, &table, charts, section)
}

/// Seed 004's component row whose name ends with `(bench)`, ns.
fn seed_component(bench: &str) -> Option<f64> {
    seeds::COMPONENTS.iter().find(|r| r.component.ends_with(&format!("({bench})"))).map(|r| r.ns)
}

/// Seed 004's one-thread validation beside ours, per build: the same validation in the
/// benchmark's thread and in a thread spawned for each.
fn spawned_beside_seed(t: &Table) -> String {
    let (Some(seed_here), Some(seed_spawned)) =
        (seed_component("full_validation"), seed_component("full_validation_1_thread"))
    else {
        return String::new();
    };
    let claim = seeds::SEED_004_CLAIMS.iter().find(|c| c.what.starts_with("single threaded full validation"));
    let mut s = format!(
        "\n**One validation in a thread of its own, beside seed 004.** Seed 004's \
         `full_validation_1_thread` ran its full validation in a thread spawned and joined per \
         iteration (which also created the transaction there); its own two slopes give {} µs \
         against {} µs in the benchmark's thread, {:+.1}%{}. Ours: `full_validation` in the \
         benchmark's thread and `full_validation_spawned` in a scoped thread spawned and joined for \
         each (the transaction is made beforehand).\n\n\
         | | in the benchmark's thread (µs) | in a spawned thread (µs) | change |\n|---|---:|---:|---:|\n\
         | seed 004 (secp256k1 ECDSA, JSON) | {} | {} | {:+.1}% |\n",
        sig4(seed_spawned / 1e3),
        sig4(seed_here / 1e3),
        (seed_spawned / seed_here - 1.0) * 100.0,
        claim.map_or(String::new(), |c| format!(" (printed: \"under performs … by about {}%\")", c.value)),
        sig4(seed_here / 1e3),
        sig4(seed_spawned / 1e3),
        (seed_spawned / seed_here - 1.0) * 100.0,
    );
    for build in t.distinct("build") {
        let ns = |name: &str| {
            t.rows.iter().find(|r| r[0] == name && r[3] == build).and_then(|r| r[1].parse::<f64>().ok())
        };
        if let (Some(here), Some(spawned)) = (ns("full_validation"), ns("full_validation_spawned")) {
            s.push_str(&format!(
                "| ScaleChain, {build} (Ed25519, binary) | {} | {} | {:+.1}% |\n",
                sig4(here / 1e3),
                sig4(spawned / 1e3),
                (spawned / here - 1.0) * 100.0
            ));
        }
    }
    s
}

/// Is `r` a row of the validator unit (not a per-transaction component)?
fn unit_row(r: &[String]) -> bool {
    r[0].starts_with("validator_unit_") || r[0] == "read_handle_clone"
}

/// The validator unit's validations per second by thread count, per build.
fn unit_rates(t: &Table, build: &str) -> Vec<(f64, f64)> {
    t.rows
        .iter()
        .filter(|r| r[3] == build)
        .filter_map(|r| {
            let n: f64 = r[0].strip_prefix("validator_unit_")?.strip_suffix("_threads")?.parse().ok()?;
            Some((n, t.num(r, "iterations")?))
        })
        .collect()
}

/// Seed 004's validator unit figure (validations in its 1 s window, 50 threads).
fn seed_unit(what: &str) -> Option<f64> {
    seeds::SEED_004_CLAIMS.iter().find(|c| c.what.starts_with(what)).map(|c| c.value)
}

/// The components along the figure's x axis: those seed 004 measured first (at the place of
/// the seed's row that does the same work, [`seeds::ComponentRow::ours`]), then ours alone,
/// each in the order of `components.csv`.
fn chart_components(t: &Table) -> Vec<String> {
    let mut names: Vec<String> = seeds::COMPONENTS.iter().map(|r| r.ours.to_string()).collect();
    for r in t.rows.iter().filter(|r| !unit_row(r)) {
        if !names.contains(&r[0]) {
            names.push(r[0].clone());
        }
    }
    names
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    // One series per build over named components; seed 004's points at the components that do
    // its rows' work.
    let names = chart_components(t);
    let at = |c: &str| names.iter().position(|n| n == c).map(|i| i as f64 + 1.0);
    let builds = t.distinct("build");
    let mut series: Vec<Series> = builds
        .iter()
        .map(|b| {
            let mut pts: Vec<(f64, f64)> = t
                .rows
                .iter()
                .filter(|r| &r[3] == b && !unit_row(r))
                .filter_map(|r| Some((at(&r[0])?, t.num(r, "ns")?)))
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            Series::points(format!("ScaleChain ({b})"), pts)
        })
        .collect();
    series.push(Series::seed(
        "seed 004 (its component that does the same work)",
        seeds::COMPONENTS.iter().filter_map(|r| Some((at(r.ours)?, r.ns))).collect(),
    ));
    let mut charts = vec![Chart {
        title: "Cost per component of validating one transaction (seed 004)".into(),
        x_label: "component".into(),
        y_label: "time per transaction (ns)".into(),
        log_x: false,
        log_y: true,
        x_names: names,
        series,
    }];
    let mut unit: Vec<Series> = builds
        .iter()
        .map(|b| Series::line(format!("ScaleChain ({b})"), unit_rates(t, b)))
        .filter(|s| !s.points.is_empty())
        .collect();
    if !unit.is_empty() {
        if let Some(v) = seed_unit("validator unit run: total validations") {
            unit.push(Series::seed("seed 004 (50 threads, its machine)", vec![(50.0, v)]));
        }
        charts.push(Chart {
            title: "Seed 004's validator unit: validations in one second by thread count".into(),
            x_label: "validator threads".into(),
            y_label: "validations / s".into(),
            log_x: true,
            log_y: false,
            x_names: Vec::new(),
            series: unit,
        });
    }
    charts
}

fn section(t: &Table) -> String {
    let mut s = String::from(
        "Median ns per call over a 1-input/1-output Ed25519 transfer; `utxo_lookup` is against a \
         set of 2^18 coins. `full_validation` is `verify_txs` in `sequential` mode on one \
         transaction (every rule and the signature).\n\n",
    );
    let mut parts = Table::new(&t.columns.iter().map(String::as_str).collect::<Vec<_>>());
    parts.rows = t.rows.iter().filter(|r| !unit_row(r)).cloned().collect();
    s.push_str(&parts.markdown(&["component", "ns", "iterations", "build"]));
    let mut unit = Table::new(&t.columns.iter().map(String::as_str).collect::<Vec<_>>());
    unit.rows = t.rows.iter().filter(|r| unit_row(r)).cloned().collect();
    if !unit.rows.is_empty() {
        s.push_str(&format!(
            "\n**Seed 004's validator unit.** `read_handle_clone`: taking a read handle of a pool of \
             {} transactions (`Mempool::snapshot`, an `Arc` from an `ArcSwap`; seed 004 cloned an \
             `evmap` read handle in 103 ns). `validator_unit_N_threads`: N threads, each with its own \
             handle, validate transactions drawn at random from the pool (`verify_txs`, sequential \
             mode, one at a time) for one second and send confirmations in batches of {} to a writer \
             thread; `iterations` is validations per second, `ns` one validation's share of the wall \
             time. `…_write`: the writer's commit time per distinct transaction written (fjall, one \
             write batch per confirmation batch, not synced), `iterations` the distinct \
             transactions written. Seed 004 (50 threads, its machine): {} validations and {} \
             distinct transactions written in its one-second window. With more threads than cores \
             the threads share the cores, so the sweep shows where they stop paying.\n\n",
            validator::POOL_TXS,
            validator::CONFIRM_BATCH,
            seed_unit("validator unit run: total validations").map_or("n/a".into(), sig4),
            seed_unit("validator unit run: unique").map_or("n/a".into(), sig4),
        ));
        s.push_str(&unit.markdown(&["component", "ns", "iterations", "build"]));
    }
    s.push_str(&spawned_beside_seed(t));
    s.push_str(&format!(
        "\n**Seed 004** ({}; beside each, our component that does the same work, where the figure \
         places it: the payload the seed rebuilds is what our txid hashes, its message hash our \
         sighash):\n\n| component | ours | ns | note |\n|---|---|---:|---|\n",
        seeds::COMPONENTS_SOURCE
    ));
    for r in seeds::COMPONENTS {
        s.push_str(&format!("| {} | `{}` | {} | {} |\n", r.component, r.ours, sig4(r.ns), r.note));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, ns: f64, build: &str) -> Vec<String> {
        vec![name.into(), format!("{ns:.1}"), "1".into(), build.into(), "1".into(), "c".into(), "1".into()]
    }

    #[test]
    fn the_figure_names_its_components_and_sets_each_seed_row_at_its_match() {
        let mut t = Table::new(COLUMNS);
        t.push(row("decode", 300.0, "portable"));
        t.push(row("full_validation", 20_000.0, "portable"));
        t.push(row("utxo_lookup", 50.0, "portable"));
        let c = &charts(&t)[0];
        let names = &c.x_names;
        assert_eq!(names.len(), seeds::COMPONENTS.len() + 1, "{names:?}");
        assert_eq!(names.last().map(String::as_str), Some("utxo_lookup"));
        let x = |n: &str| names.iter().position(|m| m == n).unwrap() as f64 + 1.0;
        let ours = &c.series[0];
        assert_eq!(
            ours.points,
            vec![(x("decode"), 300.0), (x("full_validation"), 20_000.0), (x("utxo_lookup"), 50.0)]
        );
        let seed = c.series.last().unwrap();
        let json = seeds::COMPONENTS.iter().find(|r| r.ours == "decode").unwrap();
        assert!(seed.points.contains(&(x("decode"), json.ns)), "the seed's JSON decode at our decode");
        assert_eq!(seed.points.len(), seeds::COMPONENTS.len());
    }

    #[test]
    fn the_spawned_thread_row_stands_beside_the_seeds_with_both_changes() {
        let mut t = Table::new(COLUMNS);
        t.push(row("full_validation", 20_000.0, "portable"));
        t.push(row("full_validation_spawned", 50_000.0, "portable"));
        t.push(row("full_validation", 10_000.0, "native"));
        let s = spawned_beside_seed(&t);
        // The seed's two slopes: 182.32 and 346.24 µs, +89.9%, and its printed 93.88%.
        assert!(s.contains("| seed 004 (secp256k1 ECDSA, JSON) | 182.3 | 346.2 | +89.9% |"), "{s}");
        assert!(s.contains("93.88%"), "{s}");
        assert!(s.contains("| ScaleChain, portable (Ed25519, binary) | 20.00 | 50.00 | +150.0% |"), "{s}");
        // A build without the spawned row has no line of its own.
        assert!(!s.contains("ScaleChain, native"), "{s}");
        assert!(section(&t).contains("One validation in a thread of its own"));
    }
}
