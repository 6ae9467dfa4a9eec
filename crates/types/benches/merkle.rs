//! RFC 6962 Merkle trees under SHA-256: the root over data items and over transactions (leaves
//! hashed in parallel above a threshold, so these use the global rayon pool), building a whole
//! tree for proofs, producing an audit path and verifying one, at 2^10, 2^14 and 2^17 leaves.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use scalechain_types::merkle::{self, MerkleTree};
use scalechain_types::{
    Amount, Hash, HashKind, Lock, OutPoint, PubKey, Scheme, Tx, TxIn, TxKind, TxOut, Witness,
};

/// Leaf counts.
const LEAVES: [usize; 3] = [1 << 10, 1 << 14, 1 << 17];

/// The hash function of every benchmark here.
const KIND: HashKind = HashKind::Sha256;

/// Audit paths prepared per tree for `verify_inclusion` (cycled through).
const PROOFS: usize = 256;

/// A stride coprime with every leaf count, to visit leaves in a scattered order.
const STRIDE: usize = 7919;

fn data(n: usize) -> Vec<[u8; 32]> {
    (0..n).map(|i| KIND.hash_parts(&[b"bench/merkle", &(i as u64).to_le_bytes()]).0).collect()
}

/// A one-input, two-output Ed25519-shaped transfer (made-up witness: only its bytes matter here).
fn tx(i: usize) -> Tx {
    let h = |tag: &[u8]| KIND.hash_parts(&[tag, &(i as u64).to_le_bytes()]);
    let pubkey = PubKey::from_slice(Scheme::Ed25519, h(b"pk").as_bytes()).expect("32 bytes for ed25519");
    let lock = Lock { scheme: Scheme::Ed25519, pubkey_hash: h(b"lock") };
    let value = Amount::new(1_000 + i as u64).expect("small amounts are in range");
    Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: vec![TxIn {
            prev: OutPoint { txid: h(b"prev"), index: (i % 4) as u32 },
            witness: Witness { pubkey, signature: [i as u8; 64] },
        }],
        outputs: vec![TxOut { value, lock }, TxOut { value, lock }],
        data: vec![],
    }
}

fn param(n: usize) -> BenchmarkId {
    BenchmarkId::from_parameter(format!("leaves={n}"))
}

fn root(c: &mut Criterion) {
    let mut group = c.benchmark_group("merkle::root");
    for n in LEAVES {
        let items = data(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(param(n), &items, |b, items| b.iter(|| merkle::root(KIND, black_box(items))));
    }
    group.finish();
}

fn root_of_txs(c: &mut Criterion) {
    let mut group = c.benchmark_group("merkle::root_of_txs");
    for n in LEAVES {
        let txs: Vec<Tx> = (0..n).map(tx).collect();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(param(n), &txs, |b, txs| b.iter(|| merkle::root_of_txs(KIND, black_box(txs))));
    }
    group.finish();
}

fn tree_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("merkle::tree_build");
    for n in LEAVES {
        let leaves: Vec<Hash> = data(n).iter().map(|d| merkle::leaf_hash(KIND, d)).collect();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(param(n), &leaves, |b, leaves| {
            b.iter_batched(|| leaves.clone(), |l| MerkleTree::from_leaves(KIND, l), BatchSize::LargeInput)
        });
    }
    group.finish();
}

fn proof(c: &mut Criterion) {
    let mut group = c.benchmark_group("merkle::proof");
    for n in LEAVES {
        let leaves: Vec<Hash> = data(n).iter().map(|d| merkle::leaf_hash(KIND, d)).collect();
        let tree = MerkleTree::from_leaves(KIND, leaves);
        group.bench_with_input(param(n), &tree, |b, tree| {
            let mut i = 0usize;
            b.iter(|| {
                i = (i + STRIDE) % n;
                tree.proof(black_box(i))
            })
        });
    }
    group.finish();
}

fn verify_inclusion(c: &mut Criterion) {
    let mut group = c.benchmark_group("merkle::verify_inclusion");
    for n in LEAVES {
        let leaves: Vec<Hash> = data(n).iter().map(|d| merkle::leaf_hash(KIND, d)).collect();
        let tree = MerkleTree::from_leaves(KIND, leaves.clone());
        let root = tree.root();
        let cases: Vec<(u64, Hash, Vec<Hash>)> = (0..PROOFS)
            .map(|k| {
                let i = (k * STRIDE) % n;
                (i as u64, leaves[i], tree.proof(i).expect("index in range"))
            })
            .collect();
        for (i, leaf, path) in &cases {
            assert!(merkle::verify_inclusion(KIND, leaf, *i, n as u64, path, &root), "proof {i} must verify");
        }
        group.bench_with_input(param(n), &cases, |b, cases| {
            let mut k = 0usize;
            b.iter(|| {
                k = (k + 1) % cases.len();
                let (i, leaf, path) = &cases[k];
                merkle::verify_inclusion(KIND, black_box(leaf), *i, n as u64, black_box(path), &root)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, root, root_of_txs, tree_build, proof, verify_inclusion);
criterion_main!(benches);
