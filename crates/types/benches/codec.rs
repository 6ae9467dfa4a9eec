//! The canonical codec: encoding, decoding and hashing (txid) of transactions of two shapes, and
//! decoding and encoding of a block of 1,000 transactions.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use scalechain_types::block::Target;
use scalechain_types::{
    Amount, Block, Decode, Encode, Hash, HashKind, Header, Lock, OutPoint, PubKey, Scheme, Tx, TxIn, TxKind,
    TxOut, Witness,
};

/// Transaction shapes: (inputs, outputs).
const SHAPES: [(usize, usize); 2] = [(1, 2), (16, 16)];

/// Transactions in the block benchmarks (besides the coinbase).
const BLOCK_TXS: usize = 1000;

/// The hash function of every benchmark here.
const KIND: HashKind = HashKind::Sha256;

/// A transfer with made-up witnesses (only its bytes matter here); inputs alternate schemes so
/// both witness lengths are decoded.
fn tx(i: usize, inputs: usize, outputs: usize) -> Tx {
    let h =
        |tag: &[u8], j: usize| KIND.hash_parts(&[tag, &(i as u64).to_le_bytes(), &(j as u64).to_le_bytes()]);
    let inputs = (0..inputs)
        .map(|j| {
            let scheme = if j % 2 == 0 { Scheme::Ed25519 } else { Scheme::Secp256k1 };
            let mut key = [0x02; 33];
            key[1..].copy_from_slice(h(b"pk", j).as_bytes());
            let pubkey = PubKey::from_slice(scheme, &key[..scheme.pubkey_len()])
                .expect("length taken from the scheme");
            TxIn {
                prev: OutPoint { txid: h(b"prev", j), index: j as u32 },
                witness: Witness { pubkey, signature: [(i + j) as u8; 64] },
            }
        })
        .collect();
    let outputs = (0..outputs)
        .map(|o| TxOut {
            value: Amount::new(1_000 + o as u64).expect("small amounts are in range"),
            lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: h(b"lock", o) },
        })
        .collect();
    Tx { version: 1, kind: TxKind::TRANSFER, inputs, outputs, data: vec![] }
}

fn shape_id((inputs, outputs): (usize, usize)) -> BenchmarkId {
    BenchmarkId::from_parameter(format!("inputs={inputs},outputs={outputs}"))
}

fn tx_codec(c: &mut Criterion) {
    let txs: Vec<(BenchmarkId, Tx)> = SHAPES.iter().map(|&s| (shape_id(s), tx(7, s.0, s.1))).collect();

    let mut group = c.benchmark_group("codec::tx_encode");
    for (id, t) in &txs {
        group.throughput(Throughput::Bytes(t.encoded_len() as u64));
        group.bench_with_input(id.clone(), t, |b, t| b.iter(|| black_box(t).encode()));
    }
    group.finish();

    let mut group = c.benchmark_group("codec::tx_decode");
    for (id, t) in &txs {
        let bytes = t.encode();
        assert_eq!(Tx::decode(&bytes).as_ref(), Ok(t), "the encoding round-trips");
        group.throughput(Throughput::Bytes(bytes.len() as u64));
        group.bench_with_input(id.clone(), &bytes, |b, bytes| b.iter(|| Tx::decode(black_box(bytes))));
    }
    group.finish();

    let mut group = c.benchmark_group("codec::txid");
    for (id, t) in &txs {
        group.throughput(Throughput::Bytes(t.encode_without_witnesses().len() as u64));
        group.bench_with_input(id.clone(), t, |b, t| b.iter(|| black_box(t).txid(KIND)));
    }
    group.finish();
}

fn block_codec(c: &mut Criterion) {
    let mut txs = vec![Tx::coinbase(
        1,
        vec![TxOut {
            value: Amount::new(5_000_000_000).expect("in range"),
            lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: KIND.hash(b"miner") },
        }],
    )];
    txs.extend((0..BLOCK_TXS).map(|i| tx(i, 1, 2)));
    let header = Header {
        version: 1,
        height: 1,
        prev_hash: Hash([0x11; 32]),
        merkle_root: Hash::ZERO,
        time: 1_767_225_600_000,
        target: Target::from_bits(256),
        nonce: 0,
    };
    let mut block = Block { header, txs };
    block.header.merkle_root = block.compute_merkle_root(KIND);
    let bytes = block.encode();
    assert_eq!(Block::decode(&bytes).as_ref(), Ok(&block), "the encoding round-trips");
    let id = BenchmarkId::from_parameter(format!("txs={BLOCK_TXS}"));

    let mut group = c.benchmark_group("codec::block_decode");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_with_input(id.clone(), &bytes, |b, bytes| b.iter(|| Block::decode(black_box(bytes))));
    group.finish();

    let mut group = c.benchmark_group("codec::block_encode");
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_with_input(id, &block, |b, block| b.iter(|| black_box(block).encode()));
    group.finish();
}

criterion_group!(benches, tx_codec, block_codec);
criterion_main!(benches);
