//! The in-memory UTXO set (`scalechain_consensus::UtxoSet`) holding 1,000,000 outputs: lookup of
//! a present and of an absent outpoint, insertion of a new output and removal of a present one.
//!
//! The set is built once. Insert and remove mutate it, so they are timed in chunks with
//! `iter_custom`: a chunk of operations is timed, then undone outside the timing (the inserted
//! outputs removed, the removed ones re-inserted), which keeps the set at 1,000,000 entries
//! throughout. One untimed chunk runs first, so the slab's and table's one-off growth is not
//! measured. Probed outpoints are visited in a scattered, fixed order. Note that the set hashes
//! with a per-process random seed, so table layout (not results) differs between runs.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use scalechain_consensus::{Coin, UtxoSet, UtxoView};
use scalechain_types::{Amount, Hash, HashKind, Lock, OutPoint, Scheme, TxOut};

/// Outputs in the set.
const ENTRIES: usize = 1_000_000;

/// Outpoints probed (a power of two, cycled through).
const PROBES: usize = 1 << 16;

/// Operations timed at once by insert and remove before they are undone.
const CHUNK: usize = 4096;

/// A stride coprime with `ENTRIES`, to scatter the probes over the set.
const STRIDE: usize = 999_983;

fn outpoint(i: usize) -> OutPoint {
    OutPoint {
        txid: HashKind::Sha256.hash_parts(&[b"bench/utxo", &(i as u64).to_le_bytes()]),
        index: (i % 3) as u32,
    }
}

fn coin(i: usize) -> Coin {
    Coin {
        out: TxOut {
            value: Amount::new(1_000 + i as u64).expect("small amounts are in range"),
            lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash([(i % 251) as u8; 32]) },
        },
        height: (i / 2000) as u64,
        coinbase: i.is_multiple_of(50),
    }
}

/// `PROBES` outputs of the set, in a scattered order.
fn present() -> Vec<(OutPoint, Coin)> {
    (0..PROBES).map(|k| (k * STRIDE) % ENTRIES).map(|i| (outpoint(i), coin(i))).collect()
}

/// `PROBES` outputs that are not in the set.
fn absent() -> Vec<(OutPoint, Coin)> {
    (ENTRIES..ENTRIES + PROBES).map(|i| (outpoint(i), coin(i))).collect()
}

/// Runs `iters` operations in chunks: `timed` on each chunk under the clock, then `undo` on it.
fn chunked(
    set: &mut UtxoSet,
    pool: &[(OutPoint, Coin)],
    next: &mut usize,
    iters: u64,
    timed: fn(&mut UtxoSet, &[(OutPoint, Coin)]),
    undo: fn(&mut UtxoSet, &[(OutPoint, Coin)]),
) -> Duration {
    let mut total = Duration::ZERO;
    let mut left = iters as usize;
    while left > 0 {
        let m = left.min(CHUNK).min(pool.len() - *next);
        let chunk = &pool[*next..*next + m];
        let start = Instant::now();
        timed(set, chunk);
        total += start.elapsed();
        undo(set, chunk);
        *next = (*next + m) % pool.len();
        left -= m;
    }
    total
}

fn insert_all(set: &mut UtxoSet, chunk: &[(OutPoint, Coin)]) {
    for (op, c) in chunk {
        set.insert(black_box(*op), *c);
    }
}

fn remove_all(set: &mut UtxoSet, chunk: &[(OutPoint, Coin)]) {
    for (op, _) in chunk {
        black_box(set.remove(black_box(op)));
    }
}

fn utxo(c: &mut Criterion) {
    let mut set = UtxoSet::new();
    set.reserve(ENTRIES);
    for i in 0..ENTRIES {
        set.insert(outpoint(i), coin(i));
    }
    let present = present();
    let absent = absent();
    assert!(present.iter().all(|(op, c)| set.coin(op) == Some(*c)), "probes are present");
    assert!(absent.iter().all(|(op, _)| set.coin(op).is_none()), "misses are absent");
    let id = |extra: &str| BenchmarkId::from_parameter(format!("{extra}entries={ENTRIES}"));

    let mut group = c.benchmark_group("utxo::lookup");
    group.throughput(Throughput::Elements(1));
    for (case, probes) in [("hit", &present), ("miss", &absent)] {
        group.bench_function(id(&format!("case={case},")), |b| {
            let mut k = 0usize;
            b.iter(|| {
                k = (k + 1) % PROBES;
                set.coin(black_box(&probes[k].0))
            })
        });
    }
    group.finish();

    let mut group = c.benchmark_group("utxo::insert");
    group.throughput(Throughput::Elements(1));
    let mut next = 0;
    // Warm-up chunk: lets the slab and the table grow once, untimed.
    chunked(&mut set, &absent, &mut next, CHUNK as u64, insert_all, remove_all);
    group.bench_function(id(""), |b| {
        b.iter_custom(|iters| chunked(&mut set, &absent, &mut next, iters, insert_all, remove_all))
    });
    group.finish();

    let mut group = c.benchmark_group("utxo::remove");
    group.throughput(Throughput::Elements(1));
    let mut next = 0;
    group.bench_function(id(""), |b| {
        b.iter_custom(|iters| chunked(&mut set, &present, &mut next, iters, remove_all, insert_all))
    });
    group.finish();

    assert_eq!(set.len(), ENTRIES, "the set is back to its original size");
}

criterion_group!(benches, utxo);
criterion_main!(benches);
