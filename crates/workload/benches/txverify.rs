//! `txverify::verify_txs`: judging independent one-input, one-output Ed25519 transfers (the
//! mempool's admission check) in each verification mode, at 1,024 and 16,384 transactions.
//! `parallel` uses the global rayon pool (set its size with `RAYON_NUM_THREADS`).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::{verify_txs, Apps, Params, SigMode, TxEnv, VerifyConfig, VerifyMode};
use scalechain_types::{Hash, HashKind};
use scalechain_workload::fixed::{transfers, Spec};

/// Transaction counts.
const SIZES: [usize; 2] = [1 << 10, 1 << 14];

/// Seed of the workload's keys and coins.
const WORKLOAD_SEED: u64 = 0x7e57;

fn txverify(c: &mut Criterion) {
    let params = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let chain_id = Hash([1; 32]);
    let max = SIZES.iter().copied().max().unwrap_or(0);
    let w = transfers(&params, &chain_id, &Spec::simple(max, WORKLOAD_SEED));
    let apps = Apps::none();
    let app_state: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();

    let mut group = c.benchmark_group("txverify::verify_txs");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    for n in SIZES {
        if n > 4096 {
            group.warm_up_time(Duration::from_secs(1)).measurement_time(Duration::from_secs(5));
        }
        let txs = &w.txs[..n];
        group.throughput(Throughput::Elements(n as u64));
        for mode in VerifyMode::ALL {
            let name = mode.name();
            let verify = VerifyConfig { mode, seed: [4; 32], batch_size: 256 };
            let ctx = ConnectCtx::new(&params, &chain_id, &apps, &verify);
            let env = TxEnv { ctx, view: &w.utxos, app_state: &app_state, height: 1, time: 0 };
            let verdicts = verify_txs(&env, txs);
            assert!(
                verdicts.iter().all(Result::is_ok),
                "every workload transaction must pass ({name}, n={n})"
            );
            group.bench_function(BenchmarkId::from_parameter(format!("mode={name},n={n}")), |b| {
                b.iter(|| verify_txs(&env, black_box(txs)))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, txverify);
criterion_main!(benches);
