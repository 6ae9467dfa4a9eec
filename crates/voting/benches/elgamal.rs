//! Ballot costs of the `elgamal` scheme: casting (voter side) and verifying (validator side).
#![allow(clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use scalechain_voting::elgamal::{cast, keygen, verify_ballot, verify_ballots, Statement};

fn bench(c: &mut Criterion) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let (_, k) = keygen(&mut rng);
    let st = Statement { election: &[1; 32], voter: &[2; 32] };
    for l in [2usize, 4, 8] {
        let ballot = cast(&k, &st, 0, l, &mut rng).unwrap();
        let mut g = c.benchmark_group("elgamal::verify_ballot");
        g.throughput(Throughput::Elements(1));
        g.bench_function(BenchmarkId::from_parameter(format!("candidates={l}")), |b| {
            b.iter(|| verify_ballot(&k, &st, &ballot, l).unwrap())
        });
        g.finish();
        let voters: Vec<[u8; 32]> = (0..256u32)
            .map(|i| {
                let mut v = [0u8; 32];
                v[..4].copy_from_slice(&i.to_le_bytes());
                v
            })
            .collect();
        let sts: Vec<Statement<'_>> =
            voters.iter().map(|v| Statement { election: &[1; 32], voter: v }).collect();
        let ballots: Vec<_> = sts.iter().map(|s| cast(&k, s, 0, l, &mut rng).unwrap()).collect();
        let items: Vec<_> = sts.iter().copied().zip(ballots.iter()).collect();
        let mut g = c.benchmark_group("elgamal::verify_ballots");
        g.throughput(Throughput::Elements(items.len() as u64));
        g.sample_size(10);
        g.bench_function(BenchmarkId::from_parameter(format!("candidates={l},n=256")), |b| {
            b.iter(|| assert!(verify_ballots(&k, &items, l, &mut rng).iter().all(Result::is_ok)))
        });
        g.finish();
        let mut g = c.benchmark_group("elgamal::cast");
        g.bench_function(BenchmarkId::from_parameter(format!("candidates={l}")), |b| {
            b.iter(|| cast(&k, &st, 1, l, &mut rng).unwrap())
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
