//! A replica on a memory store: mined blocks connect and empty the mempool, reorganisations and
//! orphans bring the mempool up to date, rejections map to the protocol's verdicts, batches are
//! admitted together and split back, and the chain view serves what the protocol asks.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicBool, Ordering};

use scalechain_chain::{Chain, MemStore};
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{genesis_block, Apps, Params, VerifyConfig};
use scalechain_mempool::{MempoolConfig, MempoolError};
use scalechain_replica::{solve, BlockVerdict, ChainView, Replica};
use scalechain_types::{
    Amount, Block, Hash, HashKind, Header, Lock, OutPoint, Scheme, Target, Tx, TxIn, TxKind, TxOut, Witness,
};

fn params() -> Params {
    Params::devnet(HashKind::Sha256, SigMode::Ed25519)
}

fn replica(seed: u8) -> Replica<MemStore> {
    let p = params();
    let chain =
        Chain::open_or_init(MemStore::new(), &p, Apps::none(), VerifyConfig::parallel([seed; 32])).unwrap();
    Replica::new(chain, MempoolConfig::default())
}

fn t0() -> u64 {
    params().genesis_time
}

/// Premine output `i` back to its own key, less `fee`; `prev` overrides the outpoint spent.
fn transfer(i: u64, fee: u64, prev: Option<OutPoint>) -> Tx {
    let p = params();
    let genesis = genesis_block(&p);
    let key = devnet_premine_key(SigMode::Ed25519, i);
    let prev = prev.unwrap_or(OutPoint { txid: genesis.txs[0].txid(p.hash), index: i as u32 });
    let out = p.premine[i as usize];
    let mut tx = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: vec![TxIn { prev, witness: Witness { pubkey: key.public(), signature: [0; 64] } }],
        outputs: vec![TxOut { value: Amount::new(out.value.get() - fee).unwrap(), lock: out.lock }],
        data: vec![],
    };
    tx.sign_inputs_with(p.hash, &genesis.hash(p.hash), &key);
    tx
}

fn reward() -> Lock {
    Lock { scheme: Scheme::Ed25519, pubkey_hash: HashKind::Sha256.hash(b"replica-test-miner") }
}

fn mine(r: &Replica<MemStore>, now: u64) -> Block {
    let mut b = r.block_template(reward(), 1000, now);
    assert!(solve(&mut b.header, HashKind::Sha256, 1, &AtomicBool::new(false)));
    b
}

fn remine(mut b: Block) -> Block {
    b.header.merkle_root = b.compute_merkle_root(HashKind::Sha256);
    assert!(solve(&mut b.header, HashKind::Sha256, 1, &AtomicBool::new(false)));
    b
}

fn admitted(r: &Replica<MemStore>, txs: Vec<Tx>, now: u64) {
    assert!(r.admit(txs, now).iter().all(Result::is_ok));
}

#[test]
fn a_mined_block_connects_and_takes_its_transactions_out_of_the_mempool() {
    let r = replica(1);
    let genesis = r.chain_id;
    admitted(&r, (0..3).map(|i| transfer(i, 1000, None)).collect(), t0() + 500);
    let b = mine(&r, t0() + 1000);
    assert_eq!(b.txs.len(), 4);
    let hash = b.header.hash(HashKind::Sha256);
    let o = r.accept_block(b.clone(), t0() + 1000);
    assert_eq!(o.verdict(), BlockVerdict::Connected);
    assert_eq!((o.new_tip, o.connected, o.disconnected, o.removed.confirmed), (Some((1, hash)), 1, 0, 3));
    assert!(r.mempool.is_empty());
    let again = r.accept_block(b.clone(), t0() + 1000);
    assert_eq!((again.verdict(), again.new_tip), (BlockVerdict::Known, None));
    // What the protocol reads.
    assert_eq!(ChainView::tip(&r), (1, hash));
    assert!(r.has_block(&hash) && r.has_block(&genesis) && !r.has_block(&Hash([5; 32])));
    assert_eq!(r.locator(), vec![hash, genesis]);
    assert_eq!(r.headers_after(&[Hash([9; 32]), genesis], 10), vec![b.header]);
    assert!(r.headers_after(&[hash], 10).is_empty());
    assert_eq!(r.headers_after(&[genesis], 0), vec![]);
}

#[test]
fn a_reorganisation_returns_the_lost_blocks_transactions_to_the_mempool() {
    let a = replica(1);
    let b = replica(2);
    let t = transfer(7, 1000, None);
    admitted(&a, vec![t.clone()], t0() + 100);
    let a1 = mine(&a, t0() + 1000);
    assert_eq!(a.accept_block(a1, t0() + 1000).verdict(), BlockVerdict::Connected);
    assert!(a.mempool.is_empty());
    // b mines two blocks without the transaction.
    let b1 = mine(&b, t0() + 1100);
    assert_eq!(b.accept_block(b1.clone(), t0() + 1100).verdict(), BlockVerdict::Connected);
    let b2 = mine(&b, t0() + 2000);
    b.accept_block(b2.clone(), t0() + 2000);
    let o = a.accept_block(b1, t0() + 2000);
    assert_eq!((o.verdict(), o.new_tip), (BlockVerdict::SideBranch, None));
    let o = a.accept_block(b2.clone(), t0() + 2000);
    assert_eq!(o.verdict(), BlockVerdict::Connected);
    assert_eq!((o.connected, o.disconnected), (2, 1));
    assert_eq!(o.reorg.returned.len(), 1);
    assert!(o.reorg.returned[0].is_ok());
    assert!(a.mempool.contains(&t.txid(HashKind::Sha256)));
    assert_eq!(a.tip(), b.tip());
}

#[test]
fn orphans_connected_by_their_parent_take_their_transactions_out_too() {
    let a = replica(1);
    let b = replica(2);
    let (t1, t2) = (transfer(1, 1000, None), transfer(2, 1000, None));
    admitted(&a, vec![t1.clone(), t2.clone()], t0() + 100);
    admitted(&b, vec![t1], t0() + 100);
    let b1 = mine(&b, t0() + 1000);
    b.accept_block(b1.clone(), t0() + 1000);
    admitted(&b, vec![t2], t0() + 1500);
    let b2 = mine(&b, t0() + 2000);
    assert_eq!(b2.txs.len(), 2);
    b.accept_block(b2.clone(), t0() + 2000);
    let o = a.accept_block(b2.clone(), t0() + 2000);
    assert_eq!((o.verdict(), o.new_tip), (BlockVerdict::Orphan, None));
    assert_eq!(a.mempool.len(), 2);
    assert_eq!((a.tip().0, a.orphan_blocks()), (0, 1), "an orphan is published though the tip stays");
    let o = a.accept_block(b1, t0() + 2000);
    assert_eq!(o.verdict(), BlockVerdict::Connected);
    assert_eq!((o.new_tip, o.connected, o.removed.confirmed), (Some(b.tip()), 2, 2));
    assert!(a.mempool.is_empty(), "the orphan's transaction left the mempool too");
    assert_eq!(a.orphan_blocks(), 0);
}

#[test]
fn the_tip_is_read_without_waiting_for_the_chain_lock() {
    let r = replica(1);
    let b1 = mine(&r, t0() + 1000);
    let h1 = b1.header.hash(HashKind::Sha256);
    r.accept_block(b1, t0() + 1000);
    let c = r.chain.read();
    assert_eq!(r.tip(), (c.tip_height(), c.tip()));
    assert_eq!(r.tip(), (1, h1));
    drop(c);
    // The block worker holds the write lock while it validates and commits: the peer
    // protocol's and the API's reads of the tip must not wait for it.
    let guard = r.chain.write();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|s| {
        s.spawn(|| tx.send(r.tip()).unwrap());
        let got = rx.recv_timeout(std::time::Duration::from_secs(10));
        drop(guard);
        assert_eq!(got.ok(), Some((1, h1)), "tip() waited for the write lock");
    });
}

#[test]
fn rejections_map_to_permanent_or_transient_verdicts() {
    let r = replica(1);
    // A Merkle root that does not match: permanent.
    let mut bad = mine(&r, t0() + 1000);
    bad.header.merkle_root = Hash([3; 32]);
    assert!(solve(&mut bad.header, HashKind::Sha256, 1, &AtomicBool::new(false)));
    let o = r.accept_block(bad, t0() + 1000);
    assert!(
        matches!(o.verdict(), BlockVerdict::Invalid { permanent: true, reason } if reason.contains("merkle"))
    );
    assert!(o.rejected());
    // A time too far ahead of our clock: not the sender's fault; the same block is taken once
    // our clock catches up.
    let ahead = t0() + 3 * 60 * 60 * 1000;
    let future = mine(&r, ahead);
    let o = r.accept_block(future.clone(), t0() + 1000);
    assert!(
        matches!(o.verdict(), BlockVerdict::Invalid { permanent: false, reason } if reason.contains("time-too-new"))
    );
    assert!(o.rejected());
    assert_eq!(r.accept_block(future, ahead).verdict(), BlockVerdict::Connected);
    // A bad signature fails when the block connects: permanent, and its child descends from
    // an invalid block (permanent, but not itself a rule broken).
    let mut forged = transfer(4, 1000, None);
    forged.inputs[0].witness.signature[0] ^= 1;
    let mut b = mine(&r, ahead + 1000);
    b.txs.push(forged);
    let b = remine(b);
    let o = r.accept_block(b.clone(), ahead + 1000);
    assert!(
        matches!(o.verdict(), BlockVerdict::Invalid { permanent: true, reason } if reason.contains("signature"))
    );
    let child = remine(Block {
        header: Header {
            height: 3,
            prev_hash: b.header.hash(HashKind::Sha256),
            time: ahead + 2000,
            ..b.header
        },
        txs: vec![Tx::coinbase(3, vec![])],
    });
    let o = r.accept_block(child, ahead + 2000);
    assert!(matches!(o.verdict(), BlockVerdict::Invalid { permanent: true, .. }), "{:?}", o.result);
    assert!(!o.rejected());
    assert!(matches!(o.result, Err(scalechain_chain::ChainError::InvalidAncestor { .. })));
}

#[test]
fn batches_are_admitted_together_and_split_back() {
    let r = replica(1);
    let mut forged = transfer(3, 1000, None);
    forged.inputs[0].witness.signature[5] ^= 1;
    let missing = transfer(4, 1000, Some(OutPoint { txid: Hash([0xee; 32]), index: 0 }));
    let batches = vec![
        (vec![transfer(1, 1000, None), transfer(2, 1000, None)], Some(1)),
        (vec![forged], Some(2)),
        (vec![missing, transfer(5, 1000, None)], Some(3)),
        (vec![], None),
    ];
    let out = r.admit_batches(batches, t0() + 10).batches;
    assert_eq!(out.len(), 4);
    assert_eq!((out[0].verdicts.len(), out[0].admitted.len(), out[0].invalid), (2, 2, false));
    assert_eq!((out[1].admitted.len(), out[1].invalid), (0, true));
    assert!(matches!(out[1].verdicts[0].refusal(), Some(MempoolError::Consensus(_))));
    // A missing input may be one the sender knows and we do not: held as an orphan, not
    // punished.
    assert!(out[2].verdicts[0].is_orphan());
    assert_eq!((out[2].admitted.len(), out[2].invalid), (1, false));
    assert_eq!(*out[2].admitted[0], transfer(5, 1000, None));
    assert!(out[3].verdicts.is_empty());
    assert_eq!(r.mempool.len(), 3);
    let (t1, t2) = (transfer(1, 1000, None), transfer(2, 1000, None));
    let ids = [Hash([1; 32]), t2.txid(HashKind::Sha256), t1.txid(HashKind::Sha256)];
    assert_eq!(r.pooled_txs(&ids, usize::MAX), vec![t2.clone(), t1.clone()]);
    // The byte cap stops the answer before it is passed.
    assert_eq!(r.pooled_txs(&ids, t2.encoded_len() + t1.encoded_len() - 1), vec![t2.clone()]);
    // The inventory: pooled txids from a txid on, ascending.
    let mut all: Vec<Hash> = r.mempool.snapshot().iter().map(|e| e.txid).collect();
    all.sort();
    assert_eq!(r.pool_txids(&Hash([0; 32]), 10), all);
    assert_eq!(r.pool_txids(&all[1], 1), vec![all[1]]);
    assert!(r.has_tx(&all[0]) && !r.has_tx(&Hash([1; 32])));
}

/// A transfer spending output 0 of `parent` (premine output `i` sent back to key `i`).
fn child_of(parent: &Tx, i: u64) -> Tx {
    transfer(i, 2000, Some(OutPoint { txid: parent.txid(HashKind::Sha256), index: 0 }))
}

#[test]
fn orphans_join_when_a_batch_admits_or_a_block_confirms_their_parent() {
    let r = replica(1);
    let (parent, child) = (transfer(1, 1000, None), child_of(&transfer(1, 1000, None), 1));
    let now = t0() + 10;
    let a = r.admit_batches(vec![(vec![child.clone()], Some(7))], now);
    assert!(a.batches[0].verdicts[0].is_orphan());
    assert!(a.batches[0].admitted.is_empty() && !a.batches[0].invalid && a.released.is_empty());
    let a = r.admit_batches(vec![(vec![parent.clone()], None)], now);
    assert_eq!(a.batches[0].admitted.len(), 1);
    assert_eq!(a.released.iter().map(|t| (**t).clone()).collect::<Vec<_>>(), vec![child.clone()]);
    assert_eq!(r.mempool.len(), 2);
    // Now a parent the pool never saw comes in a block: its waiting child is admitted and
    // handed back for relay.
    let (parent2, child2) = (transfer(2, 1000, None), child_of(&transfer(2, 1000, None), 2));
    assert!(r.admit_batches(vec![(vec![child2.clone()], Some(8))], now).batches[0].verdicts[0].is_orphan());
    let other = replica(2);
    admitted(&other, vec![parent2], now);
    let b = mine(&other, t0() + 1000);
    let o = r.accept_block(b, t0() + 1000);
    assert_eq!(o.verdict(), BlockVerdict::Connected);
    assert_eq!(o.released.iter().map(|t| (**t).clone()).collect::<Vec<_>>(), vec![child2.clone()]);
    assert!(r.mempool.contains(&child2.txid(HashKind::Sha256)));
    assert_eq!(r.mempool.orphan_stats().counters.admitted, 2);
}

#[test]
fn solve_finds_a_nonce_meeting_the_target_and_stops_when_stale() {
    let h = Header {
        version: 1,
        height: 1,
        prev_hash: Hash([1; 32]),
        merkle_root: Hash([2; 32]),
        time: 5,
        target: Target::from_bits(248),
        nonce: 0,
    };
    let stale = AtomicBool::new(false);
    for threads in [1, 2] {
        let mut x = h;
        assert!(solve(&mut x, HashKind::Sha256, threads, &stale));
        assert!(x.target.is_met_by(&x.hash(HashKind::Sha256)));
    }
    // One thread searches from nonce 0: the same header gives the same nonce.
    let (mut x, mut y) = (Header { nonce: 77, ..h }, h);
    solve(&mut x, HashKind::Sha256, 1, &stale);
    solve(&mut y, HashKind::Sha256, 1, &stale);
    assert_eq!(x.nonce, y.nonce);
    // An impossible target with the stale flag already set returns without a block.
    stale.store(true, Ordering::Relaxed);
    for threads in [1, 2] {
        let mut hard = Header { target: Target::from_bits(0), ..h };
        assert!(!solve(&mut hard, HashKind::Sha256, threads, &stale));
    }
}
