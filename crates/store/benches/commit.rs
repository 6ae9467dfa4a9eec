//! The durable commit of one large block (`DiskStore::commit`, synced), the part of block
//! acceptance after validation: `study block-validation` reports it beside the signature bound
//! for a 2^16-transaction block. The variants take one part out at a time (the txid index, the
//! undo data, the UTXO log record), so the parts' costs are the differences; `put_block` is
//! the block's own write (not synced: the commit persists it). The txid index's changes are
//! written by the store's index writer after the commit returns: `all` times the commit alone
//! (the critical path), `all-index-written` the commit and the wait for its index write.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use scalechain_consensus::{BlockUndo, Coin};
use scalechain_store::{ChainStore, Commit, DiskStore, TxLocation};
use scalechain_types::{Amount, Block, Hash, HashKind, Header, Lock, OutPoint, Scheme, Target, Tx, TxOut};

/// Transactions in the block (1-input / 1-output transfers).
const N: u32 = 1 << 14;

fn hash_of(tag: u8, i: u32) -> Hash {
    let mut b = [0u8; 8];
    b[0] = tag;
    b[4..].copy_from_slice(&i.to_le_bytes());
    HashKind::Sha256.hash(&b)
}

fn coin(i: u32, height: u64) -> Coin {
    let out = TxOut {
        value: Amount::new(1_000 + u64::from(i)).expect("in range"),
        lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: hash_of(3, i) },
    };
    Coin { out, height, coinbase: false }
}

fn header(height: u64, prev: Hash) -> Header {
    Header {
        version: 1,
        height,
        prev_hash: prev,
        merkle_root: hash_of(9, height as u32),
        time: 1_700_000_000_000 + height,
        target: Target(Hash([0xff; 32])),
        nonce: 0,
    }
}

/// The `N` coins the block spends.
fn spent() -> Vec<(OutPoint, Coin)> {
    (0..N).map(|i| (OutPoint { txid: hash_of(1, i), index: 0 }, coin(i, 0))).collect()
}

/// A fresh store holding genesis and the coins the block spends.
fn store(dir: &std::path::Path) -> DiskStore {
    let g = Block { header: header(0, Hash::ZERO), txs: vec![Tx::coinbase(0, vec![])] };
    let gid = g.hash(HashKind::Sha256);
    let first = Commit {
        tip: gid,
        tip_height: 0,
        main_chain: vec![(0, gid)],
        undo: vec![],
        utxo_remove: vec![],
        utxo_add: spent(),
        app: vec![],
        txids_remove: vec![],
        txids_add: vec![],
        utxo_count: u64::from(N),
        total_value: 0,
    };
    let mut s = DiskStore::open(dir).expect("a temporary directory opens");
    s.init(b"bench-params", &g, gid, &first).expect("init");
    s
}

/// The block's commit: `N` coins spent, `N` created, their undo, their txid entries.
fn commit(txids: bool, undo: bool, utxos: bool) -> Commit {
    let hash = hash_of(7, 1);
    let spent = spent();
    Commit {
        tip: hash,
        tip_height: 1,
        main_chain: vec![(1, hash)],
        undo: if undo { vec![(hash, BlockUndo { spent: spent.clone(), app: vec![] })] } else { vec![] },
        utxo_remove: if utxos { spent.iter().map(|(o, _)| *o).collect() } else { vec![] },
        utxo_add: if utxos {
            (0..N).map(|i| (OutPoint { txid: hash_of(2, i), index: 0 }, coin(i, 1))).collect()
        } else {
            vec![]
        },
        app: vec![],
        txids_remove: vec![],
        txids_add: if txids {
            (0..N).map(|i| (hash_of(2, i), TxLocation { block: hash, height: 1, position: i + 1 })).collect()
        } else {
            vec![]
        },
        utxo_count: u64::from(N),
        total_value: 0,
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("store-commit");
    g.sample_size(10).measurement_time(Duration::from_secs(8)).warm_up_time(Duration::from_millis(500));
    let variants: [(&str, bool, bool, bool, bool); 5] = [
        ("all", true, true, true, false),
        ("all-index-written", true, true, true, true),
        ("without-txids", false, true, true, false),
        ("without-undo", true, false, true, false),
        ("without-utxo-log", true, true, false, false),
    ];
    for (name, txids, undo, utxos, written) in variants {
        g.bench_function(format!("{name}/{N}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let dir = tempfile::tempdir().expect("a temporary directory");
                    let mut s = store(dir.path());
                    let c = commit(txids, undo, utxos);
                    let t = Instant::now();
                    s.commit(&c).expect("commit");
                    if written {
                        s.flush_txindex().expect("the index written");
                    }
                    total += t.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
