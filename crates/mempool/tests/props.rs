//! Property tests over random pools of real signed transactions (chains, fan-outs, joins,
//! double spends, random fees, batches in random order, small limits so that eviction and the
//! chain limits bite):
//! - a template is a valid block body: a block holding it, with a coinbase claiming exactly
//!   the template's fees, connects on the chain (`Chain::accept_block`);
//! - the pool's invariants hold after every admission, block and re-judgement.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::HashSet;

use common::{owned, Net, Utxo};
use proptest::prelude::*;
use scalechain_chain::Accepted;
use scalechain_mempool::{Mempool, MempoolConfig};
use scalechain_types::{Hash, OutPoint, Tx};

#[derive(Clone, Debug)]
enum Op {
    /// Spend a fresh premine output into `outs` outputs.
    Fresh { outs: usize, fee: u64 },
    /// Spend one output the wallet holds (often an unconfirmed one: chains and fan-outs).
    Spend { pick: usize, outs: usize, fee: u64 },
    /// Spend two outputs at once (joins branches).
    Join { a: usize, b: usize, fee: u64 },
    /// Spend again something already spent (a conflict).
    Double { pick: usize, fee: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (1usize..4, 0u64..6000).prop_map(|(outs, fee)| Op::Fresh { outs, fee }),
        5 => (any::<usize>(), 1usize..4, 0u64..6000).prop_map(|(pick, outs, fee)| Op::Spend { pick, outs, fee }),
        1 => (any::<usize>(), any::<usize>(), 0u64..6000).prop_map(|(a, b, fee)| Op::Join { a, b, fee }),
        1 => (any::<usize>(), 0u64..6000).prop_map(|(pick, fee)| Op::Double { pick, fee }),
    ]
}

/// The wallet's view while generating: outputs it may spend, and those it spent.
#[derive(Default)]
struct Wallet {
    unspent: Vec<Utxo>,
    spent: Vec<Utxo>,
}

impl Wallet {
    fn take(&mut self, pick: usize) -> Option<Utxo> {
        if self.unspent.is_empty() {
            return None;
        }
        let u = self.unspent.swap_remove(pick % self.unspent.len());
        self.spent.push(u);
        Some(u)
    }

    /// Generates the transactions of `ops` (in creation order: parents before children).
    fn generate(&mut self, net: &mut Net, ops: &[Op], fresh_left: &mut usize) -> Vec<Tx> {
        let mut txs = Vec::new();
        for op in ops {
            let (ins, outs, fee) = match *op {
                Op::Fresh { outs, fee } => {
                    if *fresh_left == 0 {
                        continue;
                    }
                    *fresh_left -= 1;
                    (vec![net.fresh()], outs, fee)
                }
                Op::Spend { pick, outs, fee } => match self.take(pick) {
                    Some(u) => (vec![u], outs, fee),
                    None => continue,
                },
                Op::Join { a, b, fee } => {
                    let (Some(x), Some(y)) = (self.take(a), self.take(b)) else { continue };
                    (vec![x, y], 1, fee)
                }
                Op::Double { pick, fee } => {
                    if self.spent.is_empty() {
                        continue;
                    }
                    let u = self.spent[pick % self.spent.len()];
                    (vec![u], 1, fee)
                }
            };
            let (tx, new) = net.spend(&ins, outs, fee);
            self.unspent.extend(new);
            txs.push(tx);
        }
        txs
    }
}

/// Fisher–Yates with a xorshift stream: the batch order.
fn shuffle<T>(v: &mut [T], mut seed: u64) {
    seed |= 1;
    for i in (1..v.len()).rev() {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        v.swap(i, (seed % (i as u64 + 1)) as usize);
    }
}

fn admit_in_batches(net: &Net, pool: &Mempool, mut txs: Vec<Tx>, seed: u64, batches: usize) {
    shuffle(&mut txs, seed);
    let per = txs.len().div_ceil(batches.max(1)).max(1);
    for chunk in txs.chunks(per) {
        let v = pool.admit(&net.env(), chunk.to_vec());
        assert_eq!(v.len(), chunk.len());
        pool.audit().unwrap();
    }
}

/// Checks a template against the snapshot it came from and mines it on the tip.
fn check_and_mine(net: &mut Net, pool: &Mempool, max_bytes: u64, max_txs: usize) -> scalechain_types::Block {
    let snap = pool.snapshot();
    let t = snap.template(max_bytes, max_txs);
    assert!(t.bytes <= max_bytes && t.txs.len() <= max_txs);
    let mut seen: HashSet<Hash> = HashSet::new();
    let mut spent: HashSet<OutPoint> = HashSet::new();
    let mut fees = 0u64;
    let mut bytes = 0u64;
    for (tx, txid) in t.txs.iter().zip(&t.txids) {
        let e = snap.get(txid).unwrap();
        assert_eq!(e.tx.as_ref(), tx.as_ref());
        for p in snap.parents_of(e) {
            assert!(seen.contains(&p), "parent {p} missing before {txid}");
        }
        for i in &tx.inputs {
            assert!(spent.insert(i.prev), "{} spent twice", i.prev);
        }
        seen.insert(*txid);
        fees += e.fee.get();
        bytes += e.size;
    }
    assert_eq!((t.fees.get(), t.bytes), (fees, bytes));
    let (block, r) = net.mine(&owned(&t.txs), t.fees.get());
    match r {
        Ok(Accepted::Connected(_)) => {}
        other => panic!("template block refused: {other:?}"),
    }
    block
}

fn config(max_txs: usize) -> MempoolConfig {
    MempoolConfig { max_txs, max_ancestors: 4, max_descendants: 6, ..MempoolConfig::default() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn template_is_a_valid_block_body(
        ops in prop::collection::vec(op(), 1..60),
        order in any::<u64>(),
        batches in 1usize..4,
        max_txs in 4usize..48,
        bytes_frac in 0u64..=100,
        count_frac in 0usize..=100,
    ) {
        let mut net = Net::new();
        let pool = net.pool(config(max_txs));
        let mut fresh_left = common::KEYS;
        let txs = Wallet::default().generate(&mut net, &ops, &mut fresh_left);
        admit_in_batches(&net, &pool, txs, order, batches);
        let snap = pool.snapshot();
        prop_assert!(snap.len() <= max_txs);
        // Unlimited, the template takes the whole pool.
        prop_assert_eq!(snap.template(u64::MAX, usize::MAX).txs.len(), snap.len());
        let max_bytes = snap.bytes() * bytes_frac / 100;
        let limit = (snap.len() * count_frac).div_ceil(100);
        check_and_mine(&mut net, &pool, max_bytes, limit);
    }

    #[test]
    fn invariants_hold_through_blocks_and_rejudgement(
        first in prop::collection::vec(op(), 1..40),
        second in prop::collection::vec(op(), 1..40),
        order in any::<u64>(),
        max_txs in 4usize..40,
        count_frac in 0usize..=100,
    ) {
        let mut net = Net::new();
        let pool = net.pool(config(max_txs));
        let mut wallet = Wallet::default();
        let mut fresh_left = common::KEYS;
        let txs = wallet.generate(&mut net, &first, &mut fresh_left);
        admit_in_batches(&net, &pool, txs, order, 2);
        // A block takes part of the pool.
        let limit = (pool.len() * count_frac).div_ceil(100);
        let block = check_and_mine(&mut net, &pool, u64::MAX, limit);
        pool.remove_block(&block, &net.apps, &net.p);
        pool.audit().unwrap();
        let block_spends: HashSet<OutPoint> =
            block.txs.iter().flat_map(|t| t.inputs.iter().map(|i| i.prev)).collect();
        let snap = pool.snapshot();
        for e in snap.iter() {
            prop_assert!(!block.txs.iter().any(|t| t.txid(net.p.hash) == e.txid), "confirmed tx still pooled");
            prop_assert!(e.tx.inputs.iter().all(|i| !block_spends.contains(&i.prev)), "conflict still pooled");
        }
        // More transactions, some spending what the block confirmed.
        let txs = wallet.generate(&mut net, &second, &mut fresh_left);
        admit_in_batches(&net, &pool, txs, order.rotate_left(17), 3);
        // Re-judging against an unchanged tip drops nothing.
        let before = pool.len();
        let out = pool.reorg(&net.env(), Vec::new());
        prop_assert!(out.dropped.is_empty(), "{:?}", out.dropped);
        prop_assert_eq!(pool.len(), before);
        pool.audit().unwrap();
        let stats = pool.stats();
        prop_assert_eq!(stats.count, pool.len());
        check_and_mine(&mut net, &pool, u64::MAX, usize::MAX);
    }
}
