//! The signature verification engine (`scalechain_consensus::verify`) over 4,096 Ed25519 jobs
//! with distinct keys: `verify_jobs` in each mode (batches of 256), and `batch_failures` (batch
//! mode returning every failure) with no bad signature and with one, whose batch is then
//! re-verified singly. `parallel` uses the global rayon pool (`RAYON_NUM_THREADS`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput};
use scalechain_consensus::verify::{batch_failures, verify_jobs, SigJob};
use scalechain_consensus::{VerifyConfig, VerifyMode};
use scalechain_types::keys::sighash;
use scalechain_types::{Hash, HashKind, Scheme, SecretKey};

/// Jobs per call.
const JOBS: usize = 4096;

/// Signatures per Ed25519 batch.
const BATCH: usize = 256;

/// The job whose signature is corrupted in the `bad=1` case.
const BAD_JOB: usize = 2049;

fn jobs() -> Vec<SigJob> {
    let chain_id = Hash([1; 32]);
    (0..JOBS)
        .map(|i| {
            let seed = HashKind::Sha256.hash_parts(&[b"bench/verify", &(i as u64).to_le_bytes()]);
            let sk = SecretKey::from_seed(Scheme::Ed25519, seed.0);
            let txid = HashKind::Sha256.hash(&(i as u64).to_le_bytes());
            let msg = sighash(HashKind::Sha256, &chain_id, &txid);
            SigJob { tx: i, input: 0, pubkey: sk.public(), sig: sk.sign(&msg), msg }
        })
        .collect()
}

fn verify(c: &mut Criterion) {
    let jobs = jobs();
    let cfg = VerifyConfig { mode: VerifyMode::Parallel, seed: [4; 32], batch_size: BATCH };
    let id = |extra: &str| BenchmarkId::from_parameter(format!("{extra}n={JOBS}"));

    let mut group = c.benchmark_group("verify::verify_jobs");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(JOBS as u64));
    for mode in VerifyMode::ALL {
        let name = mode.name();
        let cfg = cfg.with_mode(mode);
        verify_jobs(&cfg, &jobs).expect("every job verifies");
        group
            .bench_function(id(&format!("mode={name},")), |b| b.iter(|| verify_jobs(&cfg, black_box(&jobs))));
    }
    group.finish();

    let mut bad = jobs.clone();
    bad[BAD_JOB].sig[5] ^= 0x40;
    let cfg = cfg.with_mode(VerifyMode::Batch);
    assert!(batch_failures(&cfg, &jobs, 0).is_empty(), "every job verifies");
    let failures: Vec<usize> = batch_failures(&cfg, &bad, 0).into_iter().map(|(i, _)| i).collect();
    assert_eq!(failures, [BAD_JOB], "exactly the corrupted job fails");

    let mut group = c.benchmark_group("verify::batch_failures");
    group.sample_size(10).sampling_mode(SamplingMode::Flat);
    group.throughput(Throughput::Elements(JOBS as u64));
    for (nbad, js) in [(0, &jobs), (1, &bad)] {
        group.bench_function(id(&format!("bad={nbad},")), |b| {
            b.iter(|| batch_failures(&cfg, black_box(js), 0))
        });
    }
    group.finish();
}

criterion_group!(benches, verify);
criterion_main!(benches);
