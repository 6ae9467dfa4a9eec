//! Ballot costs of the `paillier` scheme (2048-bit `N`): verifying (validator side) singly and
//! in batches of random linear combinations, and casting (voter side). Throughput is in
//! ballots per second on one core.
#![allow(clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

#[path = "common/cputime.rs"]
mod cputime;
use cputime::ThreadCpu;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use scalechain_voting::paillier::{cast, keygen, verify_ballot, verify_ballots, Ballot, ElectionKey};
use scalechain_voting::Statement;

fn bench(c: &mut Criterion<ThreadCpu>) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let sk = keygen(2048, &mut rng).unwrap();
    let key = ElectionKey { public: sk.public().clone(), voters: 1_000_000 };
    let st = Statement { election: &[1; 32], voter: &[2; 32] };
    let voters: Vec<[u8; 32]> = (0..256u32)
        .map(|i| {
            let mut v = [0u8; 32];
            v[..4].copy_from_slice(&i.to_le_bytes());
            v
        })
        .collect();
    let sts: Vec<Statement<'_>> = voters.iter().map(|v| Statement { election: &[1; 32], voter: v }).collect();
    // Unit costs: an N-th power, and the 128-bit powers of batch verification.
    {
        use openssl::bn::{BigNum, BigNumContext};
        let pk = &key.public;
        let mut ctx = BigNumContext::new().unwrap();
        let x = cast(&key, &st, 0, 2, &mut rng).unwrap().c.0;
        let mut xn = BigNum::new().unwrap();
        xn.nnmod(&x, pk.n(), &mut ctx).unwrap();
        let e128 = BigNum::from_slice(&[0xa5; 16]).unwrap();
        let e256 = BigNum::from_slice(&[0xa5; 32]).unwrap();
        let mut out = BigNum::new().unwrap();
        let mut g = c.benchmark_group("paillier::unit");
        g.sample_size(20);
        g.bench_function("x^N mod N^2", |b| {
            b.iter(|| out.mod_exp(&x, pk.n(), pk.n_squared(), &mut ctx).unwrap())
        });
        g.bench_function("x^(128 bits) mod N^2", |b| {
            b.iter(|| out.mod_exp(&x, &e128, pk.n_squared(), &mut ctx).unwrap())
        });
        g.bench_function("x^(256 bits) mod N^2", |b| {
            b.iter(|| out.mod_exp(&x, &e256, pk.n_squared(), &mut ctx).unwrap())
        });
        g.bench_function("x^(128 bits) mod N", |b| {
            b.iter(|| out.mod_exp(&xn, &e128, pk.n(), &mut ctx).unwrap())
        });
        g.bench_function("x*y mod N^2", |b| {
            b.iter(|| out.mod_mul(&x, &x, pk.n_squared(), &mut ctx).unwrap())
        });
        g.bench_function("gcd(x, N)", |b| b.iter(|| out.gcd(&x, pk.n(), &mut ctx).unwrap()));
        g.bench_function("x^-1 mod N", |b| b.iter(|| out.mod_inverse(&xn, pk.n(), &mut ctx).unwrap()));
        g.finish();
    }
    for l in [2usize, 4] {
        let ballot = cast(&key, &st, 0, l, &mut rng).unwrap();
        let mut g = c.benchmark_group("paillier::verify_single");
        g.throughput(Throughput::Elements(1));
        g.sample_size(20);
        g.bench_function(BenchmarkId::from_parameter(format!("candidates={l}")), |b| {
            b.iter(|| verify_ballot(&key, &st, &ballot, l).unwrap())
        });
        g.finish();
        let ballots: Vec<Ballot> = sts.iter().map(|s| cast(&key, s, 1 % l, l, &mut rng).unwrap()).collect();
        let mut g = c.benchmark_group("paillier::verify_batch");
        g.sample_size(10);
        for n in [64usize, 256] {
            let items: Vec<_> = sts[..n].iter().copied().zip(ballots.iter()).collect();
            g.throughput(Throughput::Elements(n as u64));
            g.bench_function(BenchmarkId::from_parameter(format!("candidates={l},n={n}")), |b| {
                b.iter(|| assert!(verify_ballots(&key, &items, l, &mut rng).iter().all(Result::is_ok)))
            });
        }
        g.finish();
        let mut g = c.benchmark_group("paillier::cast");
        g.sample_size(10);
        g.bench_function(BenchmarkId::from_parameter(format!("candidates={l}")), |b| {
            b.iter(|| cast(&key, &st, 1 % l, l, &mut rng).unwrap())
        });
        g.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().with_measurement(ThreadCpu);
    targets = bench
}
criterion_main!(benches);
