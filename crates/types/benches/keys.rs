//! Signature costs: single verification and signing for both schemes, ZIP-215 Ed25519 batch
//! verification at several batch sizes (`ed25519-zebra`'s verifier, and ours with no key cached
//! and with every key cached), and the sighash every input signs.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use scalechain_types::keycache::{self, Ed25519KeyCache};
use scalechain_types::keys::{self, Ed25519Item};
use scalechain_types::{Hash, HashKind, PubKey, Scheme, SecretKey, Signature};

/// Batch sizes of the Ed25519 batch verifier.
const BATCH_SIZES: [usize; 4] = [16, 64, 256, 1024];

/// The chain id every benchmark signs for.
const CHAIN_ID: Hash = Hash([0xc1; 32]);

/// Seed of the batch verifier's coefficients (fixed: benchmarks are deterministic).
const BATCH_RNG_SEED: u64 = 0x5ca1_ec4a;

/// The `i`-th distinct key of `scheme`.
fn key(scheme: Scheme, i: usize) -> SecretKey {
    let seed = HashKind::Sha256.hash_parts(&[b"bench/keys", &[scheme.code()], &(i as u64).to_le_bytes()]);
    SecretKey::from_seed(scheme, seed.0)
}

/// The `i`-th message: a sighash over a made-up txid, like a real input signs.
fn message(i: usize) -> Hash {
    let txid = HashKind::Sha256.hash(&(i as u64).to_le_bytes());
    keys::sighash(HashKind::Sha256, &CHAIN_ID, &txid)
}

/// A key, a message and the key's signature over it.
struct Signed {
    public: PubKey,
    msg: Hash,
    sig: Signature,
}

fn signed(scheme: Scheme, i: usize) -> Signed {
    let sk = key(scheme, i);
    let msg = message(i);
    Signed { public: sk.public(), msg, sig: sk.sign(&msg) }
}

fn verify_single(c: &mut Criterion) {
    let mut group = c.benchmark_group("keys::verify");
    group.throughput(Throughput::Elements(1));
    for scheme in Scheme::ALL {
        let s = signed(scheme, 0);
        keys::verify(&s.public, &s.msg, &s.sig).expect("a fresh signature verifies");
        group.bench_function(BenchmarkId::from_parameter(format!("scheme={}", scheme.name())), |b| {
            b.iter(|| keys::verify(black_box(&s.public), black_box(&s.msg), black_box(&s.sig)))
        });
    }
    group.finish();
}

fn verify_batch(c: &mut Criterion) {
    let max = BATCH_SIZES.iter().copied().max().unwrap_or(0);
    let all: Vec<([u8; 32], Signed)> = (0..max)
        .map(|i| {
            let s = signed(Scheme::Ed25519, i);
            let key: [u8; 32] = s.public.as_bytes().try_into().expect("ed25519 keys are 32 bytes");
            (key, s)
        })
        .collect();
    let mut group = c.benchmark_group("keys::ed25519_verify_batch");
    let rng = || ChaCha20Rng::seed_from_u64(BATCH_RNG_SEED);
    for n in BATCH_SIZES {
        let items: Vec<Ed25519Item<'_>> =
            all[..n].iter().map(|(key, s)| Ed25519Item { key, sig: &s.sig, msg: s.msg.as_bytes() }).collect();
        keys::verify_ed25519_batch_zebra(&items, rng()).expect("a batch of fresh signatures verifies");
        // No cache: every key decompressed in every batch, as ed25519-zebra does.
        let none = Ed25519KeyCache::new(0);
        // Every key held: a ring of keys that sign again batch after batch.
        let warm = Ed25519KeyCache::new(n);
        assert!(keycache::verify_batch(&items, rng(), &warm), "a batch of fresh signatures verifies");
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("zebra", format!("n={n}")), &items, |b, items| {
            b.iter(|| keys::verify_ed25519_batch_zebra(black_box(items), rng()))
        });
        group.bench_with_input(BenchmarkId::new("cold", format!("n={n}")), &items, |b, items| {
            b.iter(|| keycache::verify_batch(black_box(items), rng(), &none))
        });
        group.bench_with_input(BenchmarkId::new("warm", format!("n={n}")), &items, |b, items| {
            b.iter(|| keycache::verify_batch(black_box(items), rng(), &warm))
        });
    }
    group.finish();
}

fn sign(c: &mut Criterion) {
    let mut group = c.benchmark_group("keys::sign");
    group.throughput(Throughput::Elements(1));
    for scheme in Scheme::ALL {
        let sk = key(scheme, 0);
        let msg = message(0);
        group.bench_function(BenchmarkId::from_parameter(format!("scheme={}", scheme.name())), |b| {
            b.iter(|| black_box(&sk).sign(black_box(&msg)))
        });
    }
    group.finish();
}

fn sighash(c: &mut Criterion) {
    let mut group = c.benchmark_group("keys::sighash");
    group.throughput(Throughput::Elements(1));
    let txid = HashKind::Sha256.hash(b"bench/txid");
    for kind in HashKind::ALL {
        group.bench_function(BenchmarkId::from_parameter(format!("hash={}", kind.name())), |b| {
            b.iter(|| keys::sighash(kind, black_box(&CHAIN_ID), black_box(&txid)))
        });
    }
    group.finish();
}

criterion_group!(benches, verify_single, verify_batch, sign, sighash);
criterion_main!(benches);
