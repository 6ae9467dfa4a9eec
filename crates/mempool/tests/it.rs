//! Integration tests of the pool on a real devnet chain with real signed transactions:
//! admission and each policy rule, the signature cache shared with block connection, block
//! removal, reorganisations, templates, and readers running beside the writer.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::{owned, reasons, Net, Utxo};
use scalechain_chain::Accepted;
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::{verify_txs, Apps, SigCache, TxEnv, TxRule, UtxoSet};
use scalechain_mempool::{Mempool, MempoolConfig, MempoolError, Snapshot};
use scalechain_types::{Amount, Hash, OutPoint, Tx};
use scalechain_workload::fixed::{transfers, Spec, Transfers};

fn cfg() -> MempoolConfig {
    MempoolConfig::default()
}

/// Admission environment over a workload's own UTXO set (no chain).
struct Workload {
    net: Net,
    w: Transfers,
    app_state: BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Workload {
    fn new(n: usize, seed: u64) -> Workload {
        let net = Net::new();
        let w = transfers(&net.p, &net.chain_id, &Spec::simple(n, seed));
        Workload { net, w, app_state: BTreeMap::new() }
    }

    fn env(&self) -> TxEnv<'_> {
        env_over(&self.net, &self.w.utxos, &self.app_state)
    }
}

fn env_over<'a>(net: &'a Net, utxos: &'a UtxoSet, app: &'a BTreeMap<Vec<u8>, Vec<u8>>) -> TxEnv<'a> {
    TxEnv {
        ctx: ConnectCtx::new(&net.p, &net.chain_id, &net.apps, &net.verify),
        view: utxos,
        app_state: app,
        height: 1,
        time: 0,
    }
}

/// Every pooled tx's pooled parents come before it in the template, no two spend one output.
fn assert_block_order(snap: &Snapshot, txs: &[Arc<Tx>], net: &Net) {
    let mut seen: HashSet<Hash> = HashSet::new();
    let mut spent: HashSet<OutPoint> = HashSet::new();
    for tx in txs {
        let txid = tx.txid(net.p.hash);
        let entry = snap.get(&txid).expect("template txs are pooled");
        for p in snap.parents_of(entry) {
            assert!(seen.contains(&p), "parent {p} after its child {txid}");
        }
        for i in &tx.inputs {
            assert!(spent.insert(i.prev), "{} spent twice", i.prev);
        }
        seen.insert(txid);
    }
}

#[test]
fn admits_a_batch_of_transfers_once() {
    let wl = Workload::new(300, 1);
    let pool = Mempool::new(wl.net.p.hash, cfg());
    let v = pool.admit(&wl.env(), wl.w.txs.clone());
    assert!(v.iter().all(Result::is_ok), "{:?}", reasons(&v).iter().find(|r| **r != "ok"));
    assert_eq!(pool.len(), 300);
    let bytes: u64 = wl.w.txs.iter().map(|t| t.encoded_len() as u64).sum();
    assert_eq!(pool.bytes(), bytes);
    for (tx, a) in wl.w.txs.iter().zip(&v) {
        let a = a.as_ref().unwrap();
        assert_eq!(a.txid, tx.txid(wl.net.p.hash));
        assert_eq!(a.fee.get(), scalechain_workload::fixed::FEE);
        assert_eq!(pool.get(&a.txid).unwrap().tx.as_ref(), tx);
        assert!(pool.sig_cache().contains(&tx.wtxid(wl.net.p.hash)));
    }
    let s = pool.stats();
    assert_eq!((s.count, s.counters.admitted, s.sig_cache_len), (300, 300, 300));
    pool.audit().unwrap();

    let again = pool.admit(&wl.env(), wl.w.txs[..10].to_vec());
    assert!(reasons(&again).iter().all(|r| *r == "already-known"));
    let s = pool.stats();
    assert_eq!(s.counters.rejected.get("already-known"), Some(&10));
    assert_eq!(s.count, 300);
    // A repeat inside one batch: the second copy is already known.
    let pool2 = Mempool::new(wl.net.p.hash, cfg());
    let v = pool2.admit(&wl.env(), vec![wl.w.txs[0].clone(), wl.w.txs[0].clone()]);
    assert_eq!(reasons(&v), ["ok", "already-known"]);
}

#[test]
fn chained_transactions_in_one_batch_in_any_order() {
    let mut net = Net::new();
    let pool = net.pool(cfg());
    let root = net.fresh();
    let (a, a_out) = net.spend(&[root], 2, 1000);
    let (b, b_out) = net.spend(&[a_out[0]], 1, 1000);
    let (c, _) = net.spend(&[b_out[0]], 1, 1000);
    let (d, _) = net.spend(&[a_out[1]], 1, 1000);
    // Children first: admission sorts the batch into generations.
    let v = pool.admit(&net.env(), vec![c.clone(), d.clone(), b.clone(), a.clone()]);
    assert_eq!(reasons(&v), ["ok"; 4]);
    let t = pool.template(u64::MAX, usize::MAX);
    assert_eq!(t.txs.len(), 4);
    assert_block_order(&pool.snapshot(), &t.txs, &net);
    assert_eq!(t.txids[0], a.txid(net.p.hash));
    pool.audit().unwrap();
    // A child whose parent is unknown is refused as missing its input.
    let (orphan_parent, op_out) = {
        let u = net.fresh();
        net.spend(&[u], 1, 1000)
    };
    let (orphan, _) = net.spend(&[op_out[0]], 1, 1000);
    let v = pool.admit(&net.env(), vec![orphan]);
    assert!(matches!(&v[0], Err(MempoolError::Consensus(TxRule::MissingInput { input: 0, .. }))));
    // The template is a valid block body.
    let (_, r) = net.mine(&owned(&t.txs), t.fees.get());
    assert!(matches!(r.unwrap(), Accepted::Connected(_)));
    drop(orphan_parent);
}

#[test]
fn conflicts_name_input_outpoint_and_pooled_tx_and_change_nothing() {
    let mut net = Net::new();
    let pool = net.pool(cfg());
    let (c1, c2, c3) = (net.fresh(), net.fresh(), net.fresh());
    let (x, _) = net.spend(&[c1, c2], 1, 1000);
    assert_eq!(reasons(&pool.admit(&net.env(), vec![x.clone()])), ["ok"]);
    let before = pool.snapshot();
    let (y, _) = net.spend(&[c3, c2], 1, 1000);
    let v = pool.admit(&net.env(), vec![y.clone()]);
    assert_eq!(
        v[0].as_ref().unwrap_err(),
        &MempoolError::Conflict { input: 1, prev: c2.op, pooled: x.txid(net.p.hash) }
    );
    let after = pool.snapshot();
    assert_eq!(after.len(), before.len());
    assert_eq!(after.bytes(), before.bytes());
    assert!(!after.contains(&y.txid(net.p.hash)));
    assert!(!pool.sig_cache().contains(&y.wtxid(net.p.hash)));
    pool.audit().unwrap();

    // Inside one batch the earlier wins; if it fails, the later is judged on its own.
    let (c4, c5) = (net.fresh(), net.fresh());
    let (p1, _) = net.spend(&[c4], 1, 1000);
    let (p2, _) = net.spend(&[c4], 1, 2000);
    let v = pool.admit(&net.env(), vec![p1.clone(), p2]);
    assert_eq!(reasons(&v), ["ok", "conflict"]);
    assert_eq!(
        v[1].as_ref().unwrap_err(),
        &MempoolError::Conflict { input: 0, prev: c4.op, pooled: p1.txid(net.p.hash) }
    );
    let (mut q1, _) = net.spend(&[c5], 1, 1000);
    q1.inputs[0].witness.signature[0] ^= 1;
    let (q2, _) = net.spend(&[c5], 1, 2000);
    let v = pool.admit(&net.env(), vec![q1, q2]);
    assert_eq!(reasons(&v), ["bad-signature", "ok"]);
    pool.audit().unwrap();
}

#[test]
fn policy_rules_refuse_and_count_by_reason() {
    let mut net = Net::new();
    let pool = net.pool(MempoolConfig { max_tx_bytes: 400, ..cfg() });
    let env_txs = {
        let (low, _) = {
            let u = net.fresh();
            net.spend(&[u], 1, 0)
        };
        let u = net.fresh();
        let (mut dust, _) = net.spend(&[u], 2, 1000);
        // Move all but 100 units to output 0: output 1 becomes dust.
        let total = dust.outputs[0].value.get() + dust.outputs[1].value.get();
        dust.outputs[0].value = Amount::new(total - 100).unwrap();
        dust.outputs[1].value = Amount::new(100).unwrap();
        net.sign(&mut dust, &[u]);
        let ins = [net.fresh(), net.fresh(), net.fresh()];
        let (big, _) = net.spend(&ins, 1, 10_000);
        let mut cb = Tx::coinbase(1, vec![net.premine[0].out]);
        cb.outputs[0].value = Amount::new(1_000_000).unwrap();
        vec![low, dust, big, cb]
    };
    let v = pool.admit(&net.env(), env_txs);
    assert_eq!(reasons(&v), ["low-fee", "dust", "too-large", "loose-coinbase"]);
    assert!(matches!(v[0], Err(MempoolError::LowFee { rate: 0, min: 100, .. })));
    assert!(matches!(v[1], Err(MempoolError::Dust { output: 1, .. })));
    assert!(matches!(v[2], Err(MempoolError::TooLarge { max: 400, .. })));
    let s = pool.stats();
    assert_eq!(s.count, 0);
    assert_eq!(s.counters.rejected_total(), 4);
    assert_eq!(s.counters.rejected.get("dust"), Some(&1));
    assert_eq!(s.counters.rejected.get("loose-coinbase"), Some(&1));
    assert_eq!(s.sig_cache_len, 0, "nothing admitted, nothing cached");
}

#[test]
fn ancestor_and_descendant_limits() {
    let mut net = Net::new();
    let pool = net.pool(MempoolConfig { max_ancestors: 5, ..cfg() });
    // A chain of 6 in one batch: the sixth would make 6 with its ancestors.
    let mut chain = Vec::new();
    let mut u = net.fresh();
    for _ in 0..6 {
        let (t, out) = net.spend(&[u], 1, 1000);
        chain.push(t);
        u = out[0];
    }
    let v = pool.admit(&net.env(), chain);
    assert_eq!(reasons(&v), ["ok", "ok", "ok", "ok", "ok", "too-many-ancestors"]);
    pool.audit().unwrap();
    // A fan-out: the parent and three children make a descendant set of 4; a fourth child not.
    let pool = net.pool(MempoolConfig { max_descendants: 4, ..cfg() });
    let (parent, outs) = {
        let u = net.fresh();
        net.spend(&[u], 5, 1000)
    };
    let children: Vec<Tx> = outs.iter().map(|o| net.spend(&[*o], 1, 1000).0).collect();
    let mut batch = vec![parent.clone()];
    batch.extend(children);
    let v = pool.admit(&net.env(), batch);
    assert_eq!(reasons(&v), ["ok", "ok", "ok", "ok", "too-many-descendants", "too-many-descendants"]);
    assert_eq!(
        v[4].as_ref().unwrap_err(),
        &MempoolError::TooManyDescendants { ancestor: parent.txid(net.p.hash), count: 5, max: 4 }
    );
    pool.audit().unwrap();
}

#[test]
fn full_pool_evicts_lowest_package_and_refuses_a_lowest_newcomer() {
    let mut net = Net::new();
    let pool = net.pool(MempoolConfig { max_txs: 3, ..cfg() });
    let (a, a_out) = {
        let u = net.fresh();
        net.spend(&[u], 1, 500)
    };
    let (a1, _) = net.spend(&[a_out[0]], 1, 600);
    let (b, _) = {
        let u = net.fresh();
        net.spend(&[u], 1, 3000)
    };
    assert_eq!(reasons(&pool.admit(&net.env(), vec![a.clone(), a1.clone(), b.clone()])), ["ok"; 3]);
    let (low, _) = {
        let u = net.fresh();
        net.spend(&[u], 1, 400)
    };
    let v = pool.admit(&net.env(), vec![low]);
    assert!(matches!(v[0], Err(MempoolError::PoolFull { .. })), "{v:?}");
    assert_eq!(pool.len(), 3);
    let (high, _) = {
        let u = net.fresh();
        net.spend(&[u], 1, 5000)
    };
    let v = pool.admit(&net.env(), vec![high.clone()]);
    let evicted: HashSet<Hash> = v[0].as_ref().unwrap().evicted.iter().copied().collect();
    assert_eq!(evicted, HashSet::from([a.txid(net.p.hash), a1.txid(net.p.hash)]));
    assert!(pool.contains(&b.txid(net.p.hash)) && pool.contains(&high.txid(net.p.hash)));
    assert_eq!(pool.len(), 2);
    let s = pool.stats();
    assert_eq!((s.counters.evicted, s.counters.rejected.get("pool-full")), (2, Some(&1)));
    // The evicted are in the removal log, with why; the refused newcomer is not (it never
    // entered).
    let log = pool.removed(0, 10);
    let logged: HashSet<(Hash, &str)> = log.entries.iter().map(|e| (e.txid, e.why.kind())).collect();
    assert_eq!(logged, HashSet::from([(a.txid(net.p.hash), "evicted"), (a1.txid(net.p.hash), "evicted")]));
    assert_eq!((log.oldest, log.last), (1, 2));
    assert_eq!(pool.removed(1, 10).entries.len(), 1, "a page starts after the position asked");
    pool.audit().unwrap();
    // By bytes too.
    let size = b.encoded_len() as u64;
    let pool = net.pool(MempoolConfig { max_bytes: 2 * size + size / 2, ..cfg() });
    let (c, _) = {
        let u = net.fresh();
        net.spend(&[u], 1, 1000)
    };
    let (d, _) = {
        let u = net.fresh();
        net.spend(&[u], 1, 2000)
    };
    let (e, _) = {
        let u = net.fresh();
        net.spend(&[u], 1, 1500)
    };
    let v = pool.admit(&net.env(), vec![c.clone(), d, e]);
    assert_eq!(reasons(&v), ["ok", "ok", "ok"]);
    assert_eq!(v[2].as_ref().unwrap().evicted, vec![c.txid(net.p.hash)]);
    pool.audit().unwrap();
}

#[test]
fn an_eviction_takes_what_a_later_transaction_of_its_generation_spends() {
    // The pool holds one transaction, `p`. A batch brings `a`, paying more, and `child`,
    // spending `p`'s output: both are judged in one generation against a pool that holds `p`,
    // but placing `a` evicts `p`, so `child` spends an output that is gone.
    let mut net = Net::new();
    let pool = net.pool(MempoolConfig { max_txs: 1, ..cfg() });
    let (p, p_out) = {
        let u = net.fresh();
        net.spend(&[u], 1, 500)
    };
    assert_eq!(reasons(&pool.admit(&net.env(), vec![p.clone()])), ["ok"]);
    let (a, _) = {
        let u = net.fresh();
        net.spend(&[u], 1, 5000)
    };
    let (child, _) = net.spend(&[p_out[0]], 1, 3000);
    let v = pool.admit(&net.env(), vec![a.clone(), child]);
    assert_eq!(v[0].as_ref().unwrap().evicted, vec![p.txid(net.p.hash)], "{v:?}");
    assert!(
        matches!(v[1], Err(MempoolError::Consensus(TxRule::MissingInput { input: 0, .. }))),
        "the child's input left with the evicted parent: {v:?}"
    );
    assert_eq!(pool.len(), 1);
    assert!(pool.contains(&a.txid(net.p.hash)));
    pool.audit().unwrap();
}

#[test]
fn signature_cache_skips_signatures_at_block_connection() {
    let mut net = Net::new();
    let pool = net.pool(cfg());
    net.chain.set_sig_cache(Some(pool.sig_cache()));
    let txs: Vec<Tx> = (0..10).map(|_| { let u = net.fresh(); net.spend(&[u], 2, 1000) }.0).collect();
    let mut bad = {
        let u = net.fresh();
        net.spend(&[u], 1, 1000)
    }
    .0;
    bad.inputs[0].witness.signature[5] ^= 4;
    let mut batch = txs.clone();
    batch.push(bad.clone());
    let v = pool.admit(&net.env(), batch);
    assert_eq!(reasons(&v)[10], "bad-signature");
    assert!(!pool.sig_cache().contains(&bad.wtxid(net.p.hash)), "a failed tx is never cached");
    let cache = pool.sig_cache();
    assert_eq!(cache.len(), 10);
    let hits = cache.hits();
    let t = pool.template(u64::MAX, usize::MAX);
    let (block, r) = net.mine(&owned(&t.txs), t.fees.get());
    assert!(matches!(r.unwrap(), Accepted::Connected(_)));
    assert_eq!(cache.hits() - hits, 10, "block connection found every admitted tx in the cache");
    // Txids of the wrong count are not trusted: the pool hashes the block's own.
    let removed = pool.remove_block_txids(&block, &[Hash([3; 32])], &net.apps, &net.p);
    assert_eq!((removed.confirmed, removed.conflicted.len()), (10, 0));
    assert!(pool.is_empty());
    assert_eq!(pool.stats().counters.confirmed, 10);
    assert_eq!(cache.len(), 10, "entries outlive their stay in the pool");
}

#[test]
fn remove_block_confirms_evicts_conflicts_with_descendants_and_makes_roots() {
    let mut net = Net::new();
    let pool = net.pool(cfg());
    let (cb, cc) = (net.fresh(), net.fresh());
    let (a, a_out) = {
        let u = net.fresh();
        net.spend(&[u], 1, 1000)
    };
    let (a_child, _) = net.spend(&[a_out[0]], 1, 1000);
    let (b, b_out) = net.spend(&[cb], 1, 1000);
    let (b_child, _) = net.spend(&[b_out[0]], 1, 1000);
    let (c, _) = net.spend(&[cc], 1, 1000);
    let v = pool.admit(&net.env(), vec![a.clone(), a_child.clone(), b.clone(), b_child.clone(), c.clone()]);
    assert_eq!(reasons(&v), ["ok"; 5]);
    // Someone else's block confirms `a` and double-spends `b`'s coin.
    let (z, _) = net.spend(&[cb], 1, 7000);
    let (block, r) = net.mine(&[a.clone(), z], 0);
    assert!(matches!(r.unwrap(), Accepted::Connected(_)));
    // The txids handed in, as the block's validation computed them.
    let txids: Vec<Hash> = block.txs.iter().map(|t| t.txid(net.p.hash)).collect();
    let removed = pool.remove_block_txids(&block, &txids, &net.apps, &net.p);
    assert_eq!(removed.confirmed, 1);
    let conflicted: HashSet<Hash> = removed.conflicted.iter().copied().collect();
    assert_eq!(conflicted, HashSet::from([b.txid(net.p.hash), b_child.txid(net.p.hash)]));
    let snap = pool.snapshot();
    assert_eq!(snap.len(), 2);
    let child = snap.get(&a_child.txid(net.p.hash)).unwrap();
    assert!(snap.parents_of(child).is_empty(), "its parent confirmed: a root now");
    pool.audit().unwrap();
    let s = pool.stats();
    assert_eq!((s.counters.confirmed, s.counters.conflicted), (1, 2));
    let logged: HashSet<(Hash, &str)> =
        pool.removed(0, 10).entries.iter().map(|e| (e.txid, e.why.kind())).collect();
    assert_eq!(
        logged,
        HashSet::from([(b.txid(net.p.hash), "conflict"), (b_child.txid(net.p.hash), "conflict")])
    );
    // The rest mines on top.
    let t = pool.template(u64::MAX, usize::MAX);
    assert_eq!(t.txs.len(), 2);
    let (_, r) = net.mine(&owned(&t.txs), t.fees.get());
    assert!(matches!(r.unwrap(), Accepted::Connected(_)));
    drop(c);
}

#[test]
fn reorg_returns_transactions_and_drops_what_became_invalid() {
    let mut net = Net::new();
    let pool = net.pool(cfg());
    net.chain.set_sig_cache(Some(pool.sig_cache()));
    let genesis = net.chain.tip_header();
    let (c1, c2) = (net.fresh(), net.fresh());
    let (t1, t1_out) = net.spend(&[c1], 2, 1000);
    let (t2, t2_out) = net.spend(&[c2], 1, 1000);
    let (t3, _) = net.spend(&[t1_out[0]], 1, 1000);
    assert_eq!(reasons(&pool.admit(&net.env(), vec![t1.clone(), t2.clone(), t3.clone()])), ["ok"; 3]);
    // Block 1 confirms t1 and t2; t3 stays as a root.
    let (b1, r) = net.mine(&[t1.clone(), t2.clone()], 2000);
    assert!(matches!(r.unwrap(), Accepted::Connected(_)));
    assert_eq!(pool.remove_block(&b1, &net.apps, &net.p).confirmed, 2);
    // t4 spends t2's (now confirmed) output.
    let (t4, _) = net.spend(&[t2_out[0]], 1, 1000);
    let (t5, _) = net.spend(&[t1_out[1]], 1, 1000);
    assert_eq!(reasons(&pool.admit(&net.env(), vec![t4.clone(), t5.clone()])), ["ok"; 2]);
    assert_eq!(pool.len(), 3);

    // A longer branch from genesis double-spends t2's coin.
    let (x, _) = net.spend(&[c2], 1, 5000);
    let b1x = net.block_on(&genesis, &[x], 0);
    let b2x = net.block_on(&b1x.header, &[], 0);
    assert_eq!(net.chain.accept_block(b1x.clone(), common::NOW).unwrap(), Accepted::SideBranch);
    let Accepted::Connected(reorg) = net.chain.accept_block(b2x.clone(), common::NOW).unwrap() else {
        panic!("the longer branch wins")
    };
    assert_eq!(reorg.returned, vec![t1.clone(), t2.clone()]);
    for b in [&b1x, &b2x] {
        pool.remove_block(b, &net.apps, &net.p);
    }
    let hits = pool.sig_cache().hits();
    let out = pool.reorg(&net.env(), reorg.returned);
    assert_eq!(reasons(&out.returned), ["ok", "missing-input"]);
    let dropped: BTreeMap<Hash, &'static str> = out.dropped.iter().map(|(h, e)| (*h, e.reason())).collect();
    assert_eq!(dropped, BTreeMap::from([(t4.txid(net.p.hash), "missing-input")]));
    let snap = pool.snapshot();
    for t in [&t1, &t3, &t5] {
        assert!(snap.contains(&t.txid(net.p.hash)));
    }
    assert_eq!(snap.len(), 3);
    // t1, t3, t5 passed the ledger rules and the cache vouched for each: no signature re-checked.
    assert_eq!(pool.sig_cache().hits() - hits, 3);
    // t3 and t5 are t1's children again.
    let e3 = snap.get(&t3.txid(net.p.hash)).unwrap();
    assert_eq!(snap.parents_of(e3), vec![t1.txid(net.p.hash)]);
    pool.audit().unwrap();
    let s = pool.stats();
    assert_eq!((s.counters.readmitted, s.counters.dropped), (1, 1));
    // t2 was confirmed, then disconnected and refused back; t4 was pooled and dropped: both
    // are in the removal log with the refusal's reason.
    let logged: Vec<(Hash, &str, Option<&str>)> =
        pool.removed(0, 10).entries.iter().map(|e| (e.txid, e.why.kind(), e.why.reason())).collect();
    assert_eq!(
        logged,
        [
            (t2.txid(net.p.hash), "not-returned", Some("missing-input")),
            (t4.txid(net.p.hash), "dropped", Some("missing-input"))
        ]
    );
    // And the template mines on the new tip.
    let t = pool.template(u64::MAX, usize::MAX);
    assert_block_order(&snap, &t.txs, &net);
    let (_, r) = net.mine(&owned(&t.txs), t.fees.get());
    assert!(matches!(r.unwrap(), Accepted::Connected(_)));
}

#[test]
fn readers_run_beside_the_writer() {
    let wl = Workload::new(1200, 5);
    let pool = Arc::new(Mempool::new(wl.net.p.hash, cfg()));
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let txids: Arc<Vec<Hash>> = Arc::new(wl.w.txs.iter().map(|t| t.txid(wl.net.p.hash)).collect());
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (pool, stop, reads, txids) = (pool.clone(), stop.clone(), reads.clone(), txids.clone());
            std::thread::spawn(move || {
                let mut last_version = 0;
                let mut last_len = 0;
                while !stop.load(Ordering::Relaxed) {
                    let snap = pool.snapshot();
                    assert!(snap.version() >= last_version, "versions never go back");
                    assert!(snap.len() >= last_len, "this writer only adds");
                    last_version = snap.version();
                    last_len = snap.len();
                    let bytes: u64 = snap.iter().map(|e| e.size).sum();
                    assert_eq!(bytes, snap.bytes(), "a snapshot is consistent");
                    match r {
                        0 => {
                            let t = snap.template(50_000, 100);
                            assert!(t.bytes <= 50_000 && t.txs.len() <= 100);
                        }
                        1 => {
                            for id in txids.iter().step_by(37) {
                                if snap.contains(id) {
                                    assert!(pool.get(id).is_some(), "later snapshots keep it");
                                }
                            }
                        }
                        _ => {
                            let _ = pool.stats();
                            let _ = pool.len() + pool.bytes() as usize;
                        }
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let mut interleaved = 0;
    for chunk in wl.w.txs.chunks(100) {
        let before = reads.load(Ordering::Relaxed);
        let v = pool.admit(&wl.env(), chunk.to_vec());
        assert!(v.iter().all(Result::is_ok));
        // Let the readers read between batches (they must never need the writer to pause).
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while reads.load(Ordering::Relaxed) == before && std::time::Instant::now() < deadline {
            std::thread::yield_now();
        }
        interleaved += usize::from(reads.load(Ordering::Relaxed) > before);
    }
    stop.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
    assert_eq!(pool.len(), 1200);
    assert_eq!(pool.stats().version, 12);
    assert_eq!(interleaved, 12, "readers made progress between every two batches");
    pool.audit().unwrap();
}

#[test]
fn a_reader_holding_a_snapshot_does_not_stall_the_writer() {
    let wl = Workload::new(400, 9);
    let pool = Arc::new(Mempool::new(wl.net.p.hash, cfg()));
    assert!(pool.admit(&wl.env(), wl.w.txs[..100].to_vec()).iter().all(Result::is_ok));
    let (held_tx, held_rx) = mpsc::channel::<usize>();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let reader = {
        let pool = pool.clone();
        std::thread::spawn(move || {
            let snap = pool.snapshot();
            let mut it = snap.iter();
            let first = it.next().map(|e| e.txid);
            held_tx.send(snap.len()).unwrap();
            // Hold the snapshot, mid-iteration, until the writer says it is done.
            let finished = done_rx.recv_timeout(Duration::from_secs(120)).is_ok();
            let rest = it.count();
            (finished, first, snap.len(), rest)
        })
    };
    let held_len = held_rx.recv().unwrap();
    for chunk in wl.w.txs[100..].chunks(100) {
        assert!(pool.admit(&wl.env(), chunk.to_vec()).iter().all(Result::is_ok));
    }
    let block = scalechain_types::Block { header: wl.net.chain.tip_header(), txs: wl.w.txs[..50].to_vec() };
    assert_eq!(pool.remove_block(&block, &wl.net.apps, &wl.net.p).confirmed, 50);
    done_tx.send(()).unwrap();
    let (finished, first, len_seen, rest) = reader.join().unwrap();
    assert!(finished, "the writer finished while the reader held its snapshot");
    assert_eq!(held_len, 100);
    assert_eq!(len_seen, 100, "a held snapshot never changes");
    assert_eq!(rest, 99);
    assert!(first.is_some());
    assert_eq!(pool.len(), 350);
}

#[test]
fn admission_agrees_with_verify_txs_on_independent_transactions() {
    // The pool judges independent transactions exactly as `verify_txs` does.
    let wl = Workload::new(200, 11);
    let mut txs = wl.w.txs.clone();
    txs[3].inputs[0].witness.signature[1] ^= 2;
    txs[77].inputs[0].prev = OutPoint { txid: Hash([0xab; 32]), index: 0 };
    txs[150].outputs[0].value = Amount::new(2_000_000).unwrap();
    let apps = Apps::none();
    let ctx = ConnectCtx::new(&wl.net.p, &wl.net.chain_id, &apps, &wl.net.verify);
    let tenv = TxEnv { ctx, view: &wl.w.utxos, app_state: &wl.app_state, height: 1, time: 0 };
    let raw: Vec<&str> =
        verify_txs(&tenv, &txs).iter().map(|r| r.as_ref().map_or_else(|e| e.rule(), |_| "ok")).collect();
    let pool = Mempool::new(wl.net.p.hash, cfg());
    let v = pool.admit(&wl.env(), txs);
    assert_eq!(reasons(&v), raw);
    assert_eq!(pool.len(), 197);
}

#[test]
fn a_generation_judged_in_overlapping_chunks_agrees_with_verify_txs() {
    // 1,500 independent transactions: a generation long enough to be judged in chunks, the
    // signatures of each chunk verified while the one before it is placed. Faults land in
    // the first chunk, a middle one and the last.
    let wl = Workload::new(1_500, 12);
    let mut txs = wl.w.txs.clone();
    for i in [3, 700, 1_499] {
        txs[i].inputs[0].witness.signature[1] ^= 2;
    }
    txs[300].inputs[0].prev = OutPoint { txid: Hash([0xab; 32]), index: 0 };
    txs[1_200].outputs[0].value = Amount::new(2_000_000).unwrap();
    // Another key's witness (the signature fails, the key does not match the lock).
    txs[900].inputs[0].witness.pubkey = txs[901].inputs[0].witness.pubkey;
    let apps = Apps::none();
    let ctx = ConnectCtx::new(&wl.net.p, &wl.net.chain_id, &apps, &wl.net.verify);
    let tenv = TxEnv { ctx, view: &wl.w.utxos, app_state: &wl.app_state, height: 1, time: 0 };
    let raw: Vec<&str> =
        verify_txs(&tenv, &txs).iter().map(|r| r.as_ref().map_or_else(|e| e.rule(), |_| "ok")).collect();
    assert_eq!(raw.iter().filter(|r| **r != "ok").count(), 6, "{raw:?}");
    let pool = Mempool::new(wl.net.p.hash, cfg());
    let v = pool.admit(&wl.env(), txs.clone());
    assert_eq!(reasons(&v), raw);
    assert_eq!(pool.len(), 1_494);
    // Only what was admitted is vouched for afterwards.
    for (tx, r) in txs.iter().zip(&raw) {
        assert_eq!(pool.sig_cache().contains(&tx.wtxid(wl.net.p.hash)), *r == "ok");
    }
    pool.audit().unwrap();
}

/// An application module whose transactions hold the key in the first 32 bytes of their data
/// (none when shorter) and are otherwise always valid; it counts the transactions it applied
/// (judged by the consensus rules).
#[derive(Default)]
struct Keyed {
    applied: std::sync::atomic::AtomicUsize,
}

const KEYED: scalechain_types::TxKind = scalechain_types::TxKind(7);

impl scalechain_consensus::AppModule for Keyed {
    fn kind(&self) -> scalechain_types::TxKind {
        KEYED
    }
    fn name(&self) -> &str {
        "keyed"
    }
    fn check_stateless(
        &self,
        _: &Tx,
        _: &scalechain_consensus::Params,
    ) -> Result<(), scalechain_consensus::AppError> {
        Ok(())
    }
    fn apply(
        &self,
        _: &Tx,
        _: &scalechain_consensus::AppContext<'_>,
        _: &mut scalechain_consensus::AppOverlay<'_>,
    ) -> Result<(), scalechain_consensus::AppError> {
        self.applied.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
    fn conflict_keys(&self, tx: &Tx, _: &scalechain_consensus::Params) -> Vec<Hash> {
        tx.data.get(..32).map(|k| vec![Hash(k.try_into().unwrap())]).unwrap_or_default()
    }
    /// A 34th byte of data is the last height a block may include the transaction at.
    fn last_height(&self, tx: &Tx, _: &scalechain_consensus::Params) -> Option<u64> {
        tx.data.get(33).map(|h| u64::from(*h))
    }
    /// The tag (33rd byte) names the fee-less group; tag 255 rides in none (pays fees).
    fn fee_less_group(&self, tx: &Tx, _: &scalechain_consensus::Params) -> Option<Hash> {
        tx.data.get(32).filter(|t| **t != 255).map(|t| Hash([*t; 32]))
    }
}

/// A bare transaction of the keyed module holding `key` (tagged so txids differ).
fn keyed(key: u8, tag: u8) -> Tx {
    let mut data = vec![key; 32];
    data.push(tag);
    Tx { version: 1, kind: KEYED, inputs: vec![], outputs: vec![], data }
}

#[test]
fn application_keys_conflict_in_the_pool_and_leave_with_their_holder() {
    let mut net = Net::new();
    net.apps.register(Arc::new(Keyed::default()));
    // Bare application transactions pay no fee.
    let pool = net.pool(MempoolConfig { min_fee_rate: 0, ..cfg() });
    let id = |t: &Tx| t.txid(net.p.hash);
    let (a, b, c, unkeyed) = (keyed(1, 0), keyed(1, 1), keyed(2, 0), Tx { data: vec![9], ..keyed(0, 0) });
    // In one batch: the later holder of key 1 waits for the earlier and conflicts with it.
    let v = pool.admit(&net.env(), vec![b.clone(), a.clone(), c.clone(), unkeyed.clone()]);
    assert_eq!(reasons(&v), ["ok", "app-conflict", "ok", "ok"]);
    assert_eq!(v[1], Err(MempoolError::AppConflict { kind: KEYED.0, key: Hash([1; 32]), pooled: id(&b) }));
    // Later, alone: refused the same way, nothing changes.
    let before = pool.snapshot().version();
    let v = pool.admit(&net.env(), vec![a.clone()]);
    assert_eq!(v[0], Err(MempoolError::AppConflict { kind: KEYED.0, key: Hash([1; 32]), pooled: id(&b) }));
    assert_eq!(pool.len(), 3);
    assert_eq!(pool.stats().counters.rejected.get("app-conflict"), Some(&2));
    assert!(pool.snapshot().version() > before, "a refusal publishes counters only");
    pool.audit().unwrap();
    // A block holding `a` (never pooled) takes key 1: its pooled holder `b` leaves as conflicted.
    let block = net.block_on(&net.chain.tip_header(), std::slice::from_ref(&a), 0);
    let r = pool.remove_block(&block, &net.apps, &net.p);
    assert_eq!((r.confirmed, r.conflicted.clone()), (0, vec![id(&b)]));
    assert!(!pool.contains(&id(&b)) && pool.contains(&id(&c)));
    pool.audit().unwrap();
    // A block confirming `c` frees key 2.
    let block = net.block_on(&net.chain.tip_header(), std::slice::from_ref(&c), 0);
    let r = pool.remove_block(&block, &net.apps, &net.p);
    assert_eq!((r.confirmed, r.conflicted.len()), (1, 0));
    let v = pool.admit(&net.env(), vec![keyed(2, 5), b.clone()]);
    assert_eq!(reasons(&v), ["ok", "ok"]);
    pool.audit().unwrap();
    // A reorganisation returns `a`: judged before the pool, it takes key 1 back and `b` drops.
    let out = pool.reorg(&net.env(), vec![a.clone()]);
    assert_eq!(reasons(&out.returned), ["ok"]);
    assert_eq!(
        out.dropped,
        vec![(id(&b), MempoolError::AppConflict { kind: KEYED.0, key: Hash([1; 32]), pooled: id(&a) })]
    );
    assert!(pool.contains(&id(&a)) && !pool.contains(&id(&b)));
    pool.audit().unwrap();
}

#[test]
fn fee_less_application_transactions_are_held_within_their_own_budget() {
    let mut net = Net::new();
    net.apps.register(Arc::new(Keyed::default()));
    let size = keyed(1, 0).encoded_len() as u64;
    // The default minimum fee rate; room for two fee-less transactions.
    let pool = net.pool(MempoolConfig { max_fee_less_bytes: 2 * size, ..cfg() });
    assert!(cfg().min_fee_rate > 0);
    let (a, b, c) = (keyed(1, 0), keyed(2, 0), keyed(3, 0));
    let v = pool.admit(&net.env(), vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(reasons(&v), ["ok", "ok", "fee-less-full"]);
    assert_eq!(v[2], Err(MempoolError::FeeLessFull { size, held: 2 * size, max: 2 * size }));
    pool.audit().unwrap();
    // A block confirming `a` frees its bytes.
    let block = net.block_on(&net.chain.tip_header(), std::slice::from_ref(&a), 0);
    pool.remove_block(&block, &net.apps, &net.p);
    assert_eq!(reasons(&pool.admit(&net.env(), vec![c.clone()])), ["ok"]);
    pool.audit().unwrap();
    // With no budget, none is held.
    let none = net.pool(MempoolConfig { max_fee_less_bytes: 0, ..cfg() });
    assert_eq!(reasons(&none.admit(&net.env(), vec![a])), ["fee-less-full"]);
    assert!(none.is_empty());
}

#[test]
fn one_fee_less_group_cannot_take_the_budget_of_the_others() {
    let mut net = Net::new();
    let module = Arc::new(Keyed::default());
    net.apps.register(module.clone());
    let size = keyed(1, 0).encoded_len() as u64;
    // Room for four fee-less transactions, two of any one group.
    let pool =
        net.pool(MempoolConfig { max_fee_less_bytes: 4 * size, max_fee_less_group_bytes: 2 * size, ..cfg() });
    let flood: Vec<Tx> = (1..=5).map(|k| keyed(k, 7)).collect();
    let v = pool.admit(&net.env(), flood.clone());
    assert_eq!(
        reasons(&v),
        ["ok", "ok", "fee-less-group-full", "fee-less-group-full", "fee-less-group-full"]
    );
    // Once the group is full, more of it is refused before it is verified: a flood past the
    // budget costs no verification.
    let applied = || module.applied.load(std::sync::atomic::Ordering::Relaxed);
    let before = applied();
    let more: Vec<Tx> = (10..=12).map(|k| keyed(k, 7)).collect();
    assert_eq!(reasons(&pool.admit(&net.env(), more)), ["fee-less-group-full"; 3]);
    assert_eq!(applied(), before);
    assert_eq!(
        v[2],
        Err(MempoolError::FeeLessGroupFull { size, group: Hash([7; 32]), held: 2 * size, max: 2 * size })
    );
    // Another group still gets in, up to the whole budget.
    let v = pool.admit(&net.env(), vec![keyed(6, 8), keyed(7, 8), keyed(8, 9)]);
    assert_eq!(reasons(&v), ["ok", "ok", "fee-less-full"]);
    pool.audit().unwrap();
    // A confirmed member frees room in its group.
    let block = net.block_on(&net.chain.tip_header(), std::slice::from_ref(&flood[0]), 0);
    pool.remove_block(&block, &net.apps, &net.p);
    assert_eq!(reasons(&pool.admit(&net.env(), vec![flood[2].clone()])), ["ok"]);
    pool.audit().unwrap();
    // A transaction its module keeps out of every group pays the minimum fee like any other.
    assert!(matches!(&pool.admit(&net.env(), vec![keyed(9, 255)])[0], Err(MempoolError::LowFee { .. })));
}

#[test]
fn application_transactions_leave_once_no_later_block_may_include_them() {
    let mut net = Net::new();
    net.apps.register(Arc::new(Keyed::default()));
    let pool = net.pool(cfg());
    let until = |key: u8, last: u8| {
        let mut t = keyed(key, 0);
        t.data.push(last);
        t
    };
    let (ends_at_2, ends_at_3, open) = (until(1, 2), until(2, 3), keyed(3, 0));
    let id = |t: &Tx| t.txid(net.p.hash);
    let v = pool.admit(&net.env(), vec![ends_at_2.clone(), ends_at_3.clone(), open.clone()]);
    assert_eq!(reasons(&v), ["ok", "ok", "ok"]);
    // Blocks 1 and 2 confirm none of them; after block 2 the first may go in no block.
    let b1 = net.block_on(&net.chain.tip_header(), &[], 0);
    let r = pool.remove_block(&b1, &net.apps, &net.p);
    assert!(r.expired.is_empty() && pool.len() == 3);
    let b2 = net.block_on(&b1.header, &[], 0);
    let r = pool.remove_block(&b2, &net.apps, &net.p);
    assert_eq!(r.expired, vec![id(&ends_at_2)]);
    assert!(!pool.contains(&id(&ends_at_2)) && pool.contains(&id(&ends_at_3)));
    assert_eq!(pool.stats().counters.expired, 1);
    pool.audit().unwrap();
    // The template no longer offers it.
    let t = pool.template(u64::MAX, usize::MAX);
    assert!(t.txs.iter().all(|t| t.txid(net.p.hash) != id(&ends_at_2)));
    let b3 = net.block_on(&b2.header, &[], 0);
    assert_eq!(pool.remove_block(&b3, &net.apps, &net.p).expired, vec![id(&ends_at_3)]);
    assert_eq!(pool.len(), 1);
    // The keys they held are free again.
    assert_eq!(reasons(&pool.admit(&net.env(), vec![until(1, 200), until(2, 200)])), ["ok", "ok"]);
    pool.audit().unwrap();
}

#[test]
fn a_batch_of_generations_judged_in_two_stages_agrees_with_small_batches() {
    // A pooled transaction splits a coin in 600; 600 children spend the outputs and 600
    // grandchildren spend theirs: 1,201 transactions in one batch, grandchildren first. The
    // children's signatures are checked ahead while the batch is sorted into generations; the
    // grandchildren, whose coins do not exist yet, are judged whole in the next generation. A
    // child's signature fails (its grandchild then misses its input), a grandchild's fails,
    // and a child spends an output of the split twice.
    let mut net = Net::new();
    let root = net.fresh();
    let (split, outs) = net.spend(&[root], 600, 100_000);
    let mut children = Vec::new();
    let mut grandchildren = Vec::new();
    for o in &outs {
        let (c, c_out) = net.spend(&[*o], 1, 1000);
        grandchildren.push(net.spend(&[c_out[0]], 1, 1000).0);
        children.push(c);
    }
    children[100].inputs[0].witness.signature[5] ^= 1;
    grandchildren[500].inputs[0].witness.signature[9] ^= 4;
    let twice = net.spend(&[outs[7]], 2, 1000).0;
    let mut batch: Vec<Tx> = grandchildren.iter().chain(&children).cloned().collect();
    batch.push(twice);
    let wide = MempoolConfig { max_descendants: 2_000, ..cfg() };
    let pool = net.pool(wide.clone());
    assert_eq!(reasons(&pool.admit(&net.env(), vec![split.clone()])), ["ok"]);
    let v = pool.admit(&net.env(), batch.clone());
    // The reference: generation by generation, in batches too small for two stages.
    let reference = net.pool(wide);
    let mut by_txid: std::collections::HashMap<Hash, &'static str> = std::collections::HashMap::new();
    let gens: [Vec<Tx>; 3] = [vec![split.clone()], children, grandchildren];
    for g in gens {
        for part in g.chunks(300) {
            let r = reference.admit(&net.env(), part.to_vec());
            for (tx, why) in part.iter().zip(reasons(&r)) {
                by_txid.insert(tx.txid(net.p.hash), why);
            }
        }
    }
    let expected: Vec<&str> =
        batch.iter().map(|tx| by_txid.get(&tx.txid(net.p.hash)).copied().unwrap_or("conflict")).collect();
    assert_eq!(reasons(&v), expected);
    let bad = reasons(&v).into_iter().filter(|r| *r != "ok").count();
    assert_eq!(bad, 4, "{:?}", reasons(&v).into_iter().filter(|r| *r != "ok").collect::<Vec<_>>());
    assert_eq!(pool.len(), reference.len());
    for (tx, r) in batch.iter().zip(reasons(&v)) {
        assert_eq!(pool.sig_cache().contains(&tx.wtxid(net.p.hash)), r == "ok");
    }
    assert!(pool.sig_cache().contains(&split.wtxid(net.p.hash)));
    pool.audit().unwrap();
}

#[test]
fn a_large_batch_checks_no_signature_of_a_transaction_spending_unknown_coins() {
    // 600 transactions spending coins nobody created, with signatures nobody made: each is
    // refused for its missing input without a signature check (the signature cache counts
    // every check it is asked about), as a small batch would be.
    let net = Net::new();
    let junk: Vec<Tx> = (0..600u32)
        .map(|i| {
            let mut b = [0u8; 32];
            b[..4].copy_from_slice(&i.to_le_bytes());
            let u = Utxo {
                op: OutPoint { txid: Hash(b), index: 0 },
                out: net.premine[0].out,
                key: (i as usize) % common::KEYS,
            };
            let (mut tx, _) = net.spend(&[u], 1, 1000);
            tx.inputs[0].witness.signature = [7; 64];
            tx
        })
        .collect();
    let pool = net.pool(cfg());
    let v = pool.admit(&net.env(), junk);
    assert!(reasons(&v).iter().all(|r| *r == "missing-input"), "{:?}", reasons(&v)[0]);
    assert_eq!(pool.sig_cache().lookups(), 0, "no signature of an unspendable transaction was looked at");
    assert!(pool.is_empty());
}
