//! The orphan pool behind `Mempool::offer`: children that arrive before their parents are held
//! (not refused) and admitted when the parents are admitted or confirmed; spends of outputs
//! that are gone are still refused; the pool's bounds, sources and expiry hold.
#![allow(clippy::unwrap_used)]

mod common;

use common::{Net, Utxo};
use scalechain_consensus::TxRule;
use scalechain_mempool::{MempoolConfig, MempoolError, OrphanConfig, TxVerdict};
use scalechain_types::{Hash, OutPoint, Tx};

fn confirmed(net: &Net) -> impl Fn(&Hash) -> bool + '_ {
    |t| net.chain.tx_location(t).unwrap().is_some()
}

fn kinds(v: &[TxVerdict]) -> Vec<&'static str> {
    v.iter()
        .map(|v| match v {
            TxVerdict::Admitted(_) => "admitted",
            TxVerdict::Orphan(_) => "orphan",
            TxVerdict::Refused(e) => e.reason(),
        })
        .collect()
}

/// A transfer of the next fresh premine output.
fn spend_fresh(net: &mut Net) -> (Tx, Vec<Utxo>) {
    let u = net.fresh();
    net.spend(&[u], 1, 1000)
}

/// A chain of three transfers a → b → c.
fn chain_of_three(net: &mut Net) -> (Tx, Tx, Tx) {
    let root = net.fresh();
    let (a, a_out) = net.spend(&[root], 1, 1000);
    let (b, b_out) = net.spend(&[a_out[0]], 1, 1000);
    let (c, _) = net.spend(&[b_out[0]], 1, 1000);
    (a, b, c)
}

#[test]
fn children_before_their_parents_are_held_and_admitted_with_them_in_order() {
    let mut net = Net::new();
    let pool = net.pool(MempoolConfig::default());
    let (a, b, c) = chain_of_three(&mut net);
    let h = |t: &Tx| t.txid(net.p.hash);
    let o = pool.offer(&net.env(), vec![(c.clone(), Some(1))], 10, &confirmed(&net));
    let TxVerdict::Orphan(held) = &o.verdicts[0] else { panic!("{:?}", o.verdicts) };
    assert_eq!((held.txid, held.input, held.parents.clone()), (h(&c), 0, vec![h(&b)]));
    assert_eq!(held.prev, OutPoint { txid: h(&b), index: 0 });
    assert!(pool.is_empty() && pool.is_orphan(&h(&c)));
    // Through a `Result`, an orphan says so: reason `orphan`, not `missing-input`.
    assert_eq!(o.verdicts[0].clone().into_result().unwrap_err().reason(), "orphan");
    let o = pool.offer(&net.env(), vec![(b.clone(), Some(2)), (c.clone(), Some(2))], 11, &confirmed(&net));
    assert_eq!(kinds(&o.verdicts), ["orphan", "already-known"]);
    assert!(o.released.is_empty());
    // The root parent comes (from the API): both children follow it, parents first.
    let o = pool.offer(&net.env(), vec![(a.clone(), None)], 12, &confirmed(&net));
    assert_eq!(kinds(&o.verdicts), ["admitted"]);
    assert_eq!(o.released.iter().map(|x| x.txid).collect::<Vec<_>>(), vec![h(&b), h(&c)]);
    assert_eq!(pool.len(), 3);
    let s = pool.stats();
    assert_eq!((s.orphans.count, s.orphans.bytes), (0, 0));
    assert_eq!((s.orphans.counters.held, s.orphans.counters.admitted), (2, 2));
    // Held orphans are not refusals; the one repeat is.
    assert_eq!(s.counters.admitted, 3);
    assert_eq!(s.counters.rejected.get("already-known"), Some(&1));
    assert_eq!(s.counters.rejected.get("missing-input"), None);
    pool.audit().unwrap();
    // And the three make a valid block.
    let t = pool.template(u64::MAX, usize::MAX);
    let (_, r) = net.mine(&common::owned(&t.txs), t.fees.get());
    r.unwrap();
}

#[test]
fn spending_an_output_that_is_gone_is_refused_not_held() {
    let mut net = Net::new();
    let pool = net.pool(MempoolConfig::default());
    let u = net.fresh();
    let (x, x_out) = net.spend(&[u], 1, 1000);
    let (blk, r) = net.mine(std::slice::from_ref(&x), 1000);
    r.unwrap();
    pool.remove_block(&blk, &net.apps, &net.p);
    // A second spend of the premine output (genesis is confirmed) and a spend of an output
    // the confirmed `x` never had: both refused as missing inputs.
    let (again, _) = net.spend(&[u], 1, 2000);
    let ghost = Utxo { op: OutPoint { txid: x.txid(net.p.hash), index: 7 }, ..x_out[0] };
    let (from_ghost, _) = net.spend(&[ghost], 1, 1000);
    // A pooled parent's missing output is no orphan either.
    let (p, p_out) = net.spend(&[x_out[0]], 1, 1000);
    let pooled_ghost = Utxo { op: OutPoint { txid: p.txid(net.p.hash), index: 3 }, ..p_out[0] };
    let (from_pooled_ghost, _) = net.spend(&[pooled_ghost], 1, 1000);
    let o = pool.offer(
        &net.env(),
        vec![(again, Some(1)), (from_ghost, Some(1)), (p, Some(1)), (from_pooled_ghost, Some(1))],
        0,
        &confirmed(&net),
    );
    assert_eq!(kinds(&o.verdicts), ["missing-input", "missing-input", "admitted", "missing-input"]);
    assert!(matches!(
        o.verdicts[0],
        TxVerdict::Refused(MempoolError::Consensus(TxRule::MissingInput { .. }))
    ));
    assert_eq!(pool.orphan_stats().count, 0);
}

#[test]
fn a_block_confirming_the_parent_admits_the_child_and_a_confirmed_orphan_leaves() {
    let mut net = Net::new();
    let pool = net.pool(MempoolConfig::default());
    let (p, p_out) = spend_fresh(&mut net);
    let (child, _) = net.spend(&[p_out[0]], 1, 1000);
    let (q, q_out) = spend_fresh(&mut net);
    let (other, _) = net.spend(&[q_out[0]], 1, 1000);
    let o =
        pool.offer(&net.env(), vec![(child.clone(), Some(1)), (other.clone(), Some(2))], 0, &confirmed(&net));
    assert_eq!(kinds(&o.verdicts), ["orphan", "orphan"]);
    // A block holds p, q and the orphan `other` itself.
    let (blk, r) = net.mine(&[p.clone(), q, other.clone()], 3000);
    r.unwrap();
    pool.remove_block(&blk, &net.apps, &net.p);
    assert!(!pool.is_orphan(&other.txid(net.p.hash)));
    assert_eq!(pool.orphan_stats().counters.confirmed, 1);
    let txids: Vec<Hash> = blk.txs.iter().map(|t| t.txid(net.p.hash)).collect();
    let admitted = pool.offer_orphans_of(&net.env(), &txids, 1, &confirmed(&net));
    assert_eq!(admitted.iter().map(|a| a.txid).collect::<Vec<_>>(), vec![child.txid(net.p.hash)]);
    assert!(pool.contains(&child.txid(net.p.hash)));
    assert_eq!(pool.orphan_stats().count, 0);
    pool.audit().unwrap();
}

#[test]
fn bounds_shares_sources_and_expiry() {
    let mut net = Net::new();
    let cfg = OrphanConfig { max_per_source: 2, expiry_ms: 100, ..OrphanConfig::default() };
    let pool = net.pool(MempoolConfig { orphans: cfg, ..MempoolConfig::default() });
    let mut parents = Vec::new();
    let mut kids = Vec::new();
    for _ in 0..4 {
        let (p, p_out) = spend_fresh(&mut net);
        let (k, _) = net.spend(&[p_out[0]], 1, 1000);
        parents.push(p);
        kids.push(k);
    }
    let id = |t: &Tx| t.txid(net.p.hash);
    // Source 1 brings three: past its share of two, its first leaves for the third.
    let offer = |txs: Vec<(Tx, Option<u64>)>, now| pool.offer(&net.env(), txs, now, &confirmed(&net));
    offer(vec![(kids[0].clone(), Some(1)), (kids[1].clone(), Some(1))], 0);
    let o = offer(vec![(kids[2].clone(), Some(1))], 0);
    let TxVerdict::Orphan(h) = &o.verdicts[0] else { panic!() };
    assert_eq!(h.evicted, vec![id(&kids[0])]);
    // Another source is not pushed out by source 1.
    offer(vec![(kids[3].clone(), Some(2))], 50);
    assert_eq!(pool.orphan_stats().count, 3);
    // Source 1 leaves: its orphans go with it.
    assert_eq!(pool.forget_orphans_from(Some(1)), 2);
    // The parent of the evicted child comes: nothing is released for it.
    let o = offer(vec![(parents[0].clone(), None)], 60);
    assert!(o.released.is_empty());
    // Source 2's orphan expires 100 ms after it came, not before.
    assert_eq!(pool.expire_orphans(149), 0);
    assert_eq!(pool.expire_orphans(150), 1);
    let o = offer(vec![(parents[3].clone(), None)], 160);
    assert!(o.released.is_empty());
    let s = pool.orphan_stats();
    assert_eq!((s.count, s.counters.held, s.counters.evicted, s.counters.expired), (0, 4, 1, 1));
    pool.audit().unwrap();
}

#[test]
fn a_released_orphan_still_missing_a_parent_waits_again_without_a_longer_expiry() {
    let mut net = Net::new();
    let cfg = OrphanConfig { expiry_ms: 100, ..OrphanConfig::default() };
    let pool = net.pool(MempoolConfig { orphans: cfg, ..MempoolConfig::default() });
    let (p1, o1) = spend_fresh(&mut net);
    let (p2, o2) = spend_fresh(&mut net);
    let (child, _) = net.spend(&[o1[0], o2[0]], 1, 1000);
    let c = child.txid(net.p.hash);
    let o = pool.offer(&net.env(), vec![(child, Some(1))], 0, &confirmed(&net));
    let TxVerdict::Orphan(h) = &o.verdicts[0] else { panic!() };
    let mut want = vec![p1.txid(net.p.hash), p2.txid(net.p.hash)];
    want.sort();
    assert_eq!(h.parents, want);
    let o = pool.offer(&net.env(), vec![(p1, None)], 60, &confirmed(&net));
    assert!(o.released.is_empty());
    assert!(pool.is_orphan(&c));
    // Held since 0: it leaves at 100 although it was released and held again at 60.
    assert_eq!(pool.expire_orphans(100), 1);
    let o = pool.offer(&net.env(), vec![(p2, None)], 110, &confirmed(&net));
    assert!(o.released.is_empty() && !pool.contains(&c));
    assert_eq!(pool.orphan_stats().counters.held, 1);
}
