//! Faults at 1,000 nodes: a partition into halves under load, churn (nodes leaving and
//! joining again), a miner that withholds its blocks and then releases them, and a peer that
//! sends invalid compact blocks. The honest nodes converge on one chain and lose no transaction
//! they accepted; the adversary is penalised by everyone it reached and its block is never
//! forwarded.
#![allow(clippy::unwrap_used)]

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use scalechain_p2p::msg::{block_payload, Role};
use scalechain_p2p::score::Offence;
use scalechain_replica::{solve, ChainView};
use scalechain_simnet::{
    Accounts, CostModel, LoadPlan, MiningClock, NetModel, NodeId, Sim, SimConfig, WorkModel,
};
use scalechain_types::{Hash, HashKind, Lock, Scheme};

const N: usize = 1_000;

fn settled(sim: &Sim, nodes: &[NodeId]) -> bool {
    sim.same_tip(nodes) && nodes.iter().all(|&n| sim.replica(n).unwrap().mempool.is_empty())
}

#[test]
fn a_thousand_nodes_survive_a_partition_churn_a_withholding_miner_and_invalid_compact_blocks() {
    let mut cfg = SimConfig::devnet(77);
    cfg.model = NetModel::simblock();
    cfg.mining = MiningClock::Network;
    cfg.keep_events = false;
    cfg.work = WorkModel::Modelled { costs: Arc::new(CostModel::reference()), cores: 2 };
    let accounts = Accounts::new(&cfg.params, cfg.sig, 77, 512);
    let mut sim = Sim::new(cfg);
    let miners = sim.add_nodes(Role::Miner, 4);
    let peers = sim.add_nodes(Role::Peer, N - 4);
    sim.connect_random(8).unwrap();
    let adversary = sim.add_scripted();
    let start = sim.now();
    // 10 tx/s, one a request, to peers on both sides of the coming partition, for 24 s.
    let targets: Vec<NodeId> = peers.iter().copied().step_by(97).collect();
    sim.start_load(LoadPlan::new(10.0, start + 500, start + 24_000, targets), accounts);
    sim.run_for(4_000);

    // The withholding miner: cut off from everyone, it mines on its own for 6 s.
    let withholder = miners[3];
    let rest: Vec<NodeId> = miners[..3].iter().chain(&peers).copied().collect();
    sim.partition(&[withholder], &rest);
    // And the network split in halves (two miners each side), load going on both.
    let (left, right): (Vec<NodeId>, Vec<NodeId>) = rest.iter().partition(|n| n.0 % 2 == 0);
    sim.partition(&left, &right);
    assert!(left.iter().any(|m| miners.contains(m)) && right.iter().any(|m| miners.contains(m)));
    // Churn: 50 peers leave.
    let leaving: Vec<NodeId> = peers.iter().copied().skip(5).step_by(19).take(50).collect();
    for &n in &leaving {
        sim.stop(n);
    }
    sim.run_for(3_000);
    let apart = [left[0], right[0], withholder].map(|n| sim.tip(n).unwrap());
    // The invalid compact block: a block on a right-hand node's tip whose Merkle root is wrong,
    // its proof of work valid, sent to every peer the adversary reaches.
    let lock = Lock { scheme: Scheme::Ed25519, pubkey_hash: HashKind::Sha256.hash(b"adversary") };
    let on = peers[0];
    let mut bad = sim.replica(on).unwrap().block_template(lock, 0, sim.now());
    bad.header.merkle_root = Hash([0xbb; 32]);
    assert!(solve(&mut bad.header, HashKind::Sha256, 1, &AtomicBool::new(false)));
    let bad_hash = bad.header.hash(HashKind::Sha256);
    let (topic, payload) = block_payload(&bad, HashKind::Sha256, true);
    // It dials 20 peers of the same half as `on` (a scripted node shakes no hands, so it sends
    // at once): they hold the bad block's parent and judge it at once. A node of the other
    // half would hold it as an orphan, and judge it only if that half's chain won the heal.
    let near = |k: usize| peers[k * 38];
    assert!((0..20).all(|k| near(k).0 % 2 == on.0 % 2));
    for k in 0..20 {
        sim.connect(adversary, near(k));
    }
    let reached: Vec<NodeId> =
        (0..20).map(near).filter(|&p| sim.inject_gossip(adversary, p, topic, payload.clone())).collect();
    assert!(reached.len() >= 10, "{reached:?}");
    sim.run_for(3_000);
    // The churned nodes come back and dial 8 peers each.
    for (i, &n) in leaving.iter().enumerate() {
        sim.start(n);
        for k in 0..8 {
            sim.connect(n, rest[(i * 131 + k * 17 + 1) % rest.len()]);
        }
    }
    sim.run_for(4_000);
    // Heal: the two halves and the withholder's private chain meet.
    sim.heal();
    let honest: Vec<NodeId> = sim.up_nodes().into_iter().filter(|&n| n != adversary).collect();
    assert_eq!(honest.len(), N);
    assert!(sim.run_until(60_000, |s| s.now() > start + 26_000 && settled(s, &honest)), "not settled");

    // The sides had grown apart, and one chain won.
    assert!(apart[0] != apart[1] && apart[2] != apart[0] && apart[2] != apart[1], "{apart:?}");
    assert!(sim.disconnected_blocks() > 0);
    // Nothing accepted was lost: every transaction any node admitted from a client is on the
    // chain every node holds (the tips are the same, so one node's chain answers for all).
    let chain = sim.replica(honest[0]).unwrap().chain.read();
    let missing = sim.accepted().iter().filter(|t| chain.tx_location(t).ok().flatten().is_none()).count();
    assert!(sim.accepted().len() > 150, "{}", sim.accepted().len());
    assert_eq!(missing, 0, "of {} accepted", sim.accepted().len());
    drop(chain);
    // The adversary: penalised by every node it reached for an invalid block, and its block in
    // no node's store (gossip goes on only once a node's machine accepted it, so no node
    // forwarded it).
    for &p in &reached {
        assert!(
            sim.penalties()
                .iter()
                .any(|x| x.by == p && x.peer == adversary && x.offence == Offence::InvalidBlock),
            "{p} did not penalise the adversary"
        );
    }
    assert!(sim.penalties().iter().all(|x| x.peer == adversary), "only the adversary is penalised");
    assert!(honest.iter().all(|&n| !sim.replica(n).unwrap().has_block(&bad_hash)));
}
