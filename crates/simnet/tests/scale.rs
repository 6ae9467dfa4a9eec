//! The simulator at scale: a thousand nodes on the six-region network with modelled work,
//! deterministic; the shortcuts of large runs (no events, copies of gossip not delivered)
//! change nothing the nodes do; proof-of-work timing keeps the chain's interval; modelled work
//! delays what it should by what the model says.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use scalechain_p2p::msg::Role;
use scalechain_simnet::{
    Accounts, Arrivals, CostModel, Counters, Event, Kind, LoadPlan, MiningClock, NetModel, NodeId, Sim,
    SimConfig, Tracking, WorkModel, IDONTWANT_WIRE_BYTES,
};
use scalechain_types::Hash;

fn large(seed: u64) -> SimConfig {
    let mut cfg = SimConfig::devnet(seed);
    cfg.model = NetModel::simblock();
    cfg.mining = MiningClock::Network;
    cfg.keep_events = false;
    cfg.work = WorkModel::Modelled { costs: Arc::new(CostModel::reference()), cores: 2 };
    cfg
}

/// `n` nodes (4 of them miners) placed by the model's shares, each dialling 8, formed (every
/// link's handshake ended, mining paused meanwhile).
fn network(cfg: SimConfig, n: usize) -> Sim {
    let mut sim = Sim::new(cfg);
    sim.add_nodes(Role::Miner, 4);
    sim.add_nodes(Role::Peer, n - 4);
    sim.connect_random(8).unwrap();
    assert!(!sim.formed(), "links take their handshakes' time to join the meshes");
    assert!(sim.form(5_000), "the network formed");
    sim
}

type Tips = std::collections::BTreeSet<(u64, Hash)>;

/// What a run leaves that two runs of one seed must agree on.
struct Outcome {
    counters: Counters,
    arrivals: Arrivals,
    meshes: Vec<Vec<NodeId>>,
    tips: Tips,
}

fn tips(sim: &Sim) -> Tips {
    sim.up_nodes().iter().filter_map(|&i| sim.tip(i)).collect()
}

fn thousand(seed: u64) -> Outcome {
    let mut sim = network(large(seed), 1_000);
    sim.run_for(8_000);
    let meshes = sim.up_nodes().iter().map(|&i| sim.mesh_of(i)).collect();
    Outcome { counters: sim.counters().clone(), arrivals: sim.arrivals().clone(), meshes, tips: tips(&sim) }
}

#[test]
fn a_thousand_nodes_in_six_regions_relay_blocks_within_bounded_meshes_and_run_twice_the_same() {
    let Outcome { counters, arrivals, meshes, tips } = thousand(11);
    let d = scalechain_simnet::GossipParams::node();
    for (i, m) in meshes.iter().enumerate() {
        assert!(m.len() <= d.d_hi, "node {i} has a mesh of {}", m.len());
    }
    let mean = meshes.iter().map(Vec::len).sum::<usize>() as f64 / meshes.len() as f64;
    assert!(mean >= d.d_lo as f64, "mean mesh degree {mean}");
    assert!(arrivals.mined.len() >= 3, "{} blocks mined in 8 s", arrivals.mined.len());
    // Every block mined before the last two seconds reached every node.
    let last = arrivals.mined.last().unwrap().at_us;
    for m in arrivals.mined.iter().filter(|m| m.at_us + 2_000_000 < last) {
        let all = arrivals.block_reach_us(&m.hash, 1.0, 1_000);
        assert!(all.is_some(), "block {} did not reach every node", m.height);
    }
    assert!(tips.len() <= 2, "{} distinct tips", tips.len());
    // The copies not delivered are counted, and gossip went along meshes, not every link.
    assert!(counters.elided > 0 && counters.delivered > counters.elided);
    let block_msgs = counters.sent_of(Kind::BlockGossip);
    assert!(block_msgs < 1_000 * 12 * arrivals.mined.len() as u64, "{block_msgs} block messages");

    let again = thousand(11);
    assert_eq!(again.counters, counters, "counters differ between two runs of one seed");
    assert_eq!(again.arrivals, arrivals, "arrivals differ between two runs of one seed");
    assert_eq!(again.meshes, meshes);
    assert_eq!(again.tips, tips);
}

fn loaded(keep_events: bool) -> Sim {
    let mut cfg = large(5);
    cfg.keep_events = keep_events;
    run_loaded(cfg)
}

/// 40 nodes of `cfg` under 50 tx/s to six of them for 4 s, run 8 s, every transaction tracked.
fn run_loaded(cfg: SimConfig) -> Sim {
    run_loaded_with(cfg, 0)
}

/// [`run_loaded`], each transaction carrying `data` bytes.
fn run_loaded_with(cfg: SimConfig, data: usize) -> Sim {
    let accounts = Accounts::new(&cfg.params, cfg.sig, 3, 256).with_data(data);
    let mut sim = network(cfg, 40);
    sim.track(Tracking::All);
    let start = sim.now();
    let targets: Vec<NodeId> = (4..40).step_by(7).map(NodeId).collect();
    sim.start_load(LoadPlan::new(50.0, start + 100, start + 4_000, targets), accounts);
    sim.run_for(8_000);
    sim
}

#[test]
fn copies_a_large_run_does_not_deliver_change_nothing_the_nodes_do() {
    let (full, lean) = (loaded(true), loaded(false));
    assert!(!full.events().is_empty() && lean.events().is_empty());
    assert_eq!(full.arrivals(), lean.arrivals(), "the nodes saw things at other times");
    assert_eq!(tips(&full), tips(&lean));
    let (a, b) = (full.counters(), lean.counters());
    assert_eq!((a.sent, a.sent_bytes, a.rounds, a.judged), (b.sent, b.sent_bytes, b.rounds, b.judged));
    // A copy not delivered would have been delivered, or lost with its link, or still be on
    // its way when the run ended.
    let lost = |c: &Counters| c.lost.iter().sum::<u64>();
    let in_flight = (b.delivered + b.elided + lost(b)) - (a.delivered + lost(a));
    assert!(in_flight <= full.queued() as u64, "{in_flight} more copies than were in flight");
    assert!(b.delivered + b.elided >= a.delivered);
    assert_eq!((a.up_bytes.clone(), a.down_bytes.clone()), (b.up_bytes.clone(), b.down_bytes.clone()));
    assert_eq!(a.elided, 0);
    assert!(b.elided > 0 && b.events < a.events, "{} + {} vs {}", b.events, b.elided, a.events);
    // Every transaction tracked reached every node.
    for txid in full.arrivals().submitted.keys() {
        assert!(full.arrivals().tx_reach_us(txid, 1.0, 40).is_some());
    }
    assert!(full.arrivals().submitted.len() > 150);
}

#[test]
fn network_mining_keeps_the_chains_interval_however_many_miners() {
    for miners in [1, 5] {
        let mut cfg = SimConfig::devnet(miners as u64);
        cfg.mining = MiningClock::Network;
        cfg.keep_events = false;
        let mut sim = Sim::new(cfg);
        sim.add_nodes(Role::Miner, miners);
        sim.add_nodes(Role::Peer, 3);
        sim.connect_all();
        sim.run_for(300_000);
        let mined = sim.arrivals().mined.len();
        // A Poisson process of 300 expected blocks: 3 standard deviations either side.
        assert!((248..=352).contains(&mined), "{miners} miners mined {mined} blocks in 300 s");
    }
}

/// A cost model where only signatures cost: a millisecond each.
fn signatures_only() -> CostModel {
    CostModel {
        round_ns: 0.0,
        tx_ns: 0.0,
        sig_ns: 1_000_000.0,
        byte_ns: 0.0,
        block_ns: 0.0,
        block_tx_ns: 0.0,
        source: "test".into(),
    }
}

#[test]
fn modelled_work_delays_admission_by_what_the_model_charges() {
    let costs = signatures_only();
    let mut cfg = SimConfig::devnet(3);
    cfg.work = WorkModel::Modelled { costs: Arc::new(costs), cores: 2 };
    let accounts_cfg = cfg.clone();
    let mut sim = Sim::new(cfg);
    let a = sim.add_node(Role::Peer);
    let b = sim.add_node(Role::Peer);
    sim.connect(a, b);
    sim.run_for(1_000);
    sim.track(Tracking::All);
    let mut accounts = Accounts::new(&accounts_cfg.params, accounts_cfg.sig, 1, 16);
    let txs = accounts.next(10);
    let start = sim.now_us();
    let ids: Vec<Hash> = txs.iter().map(|t| t.txid(accounts_cfg.params.hash)).collect();
    let mut plan = LoadPlan::new(1.0, sim.now(), sim.now() + 1, vec![a]);
    plan.per_submit = 10;
    sim.start_load(plan, Accounts::new(&accounts_cfg.params, accounts_cfg.sig, 1, 16));
    sim.run_for(2_000);
    // Ten signatures at 1 ms each on two cores: 5 ms at the node they were submitted to.
    let at_a = sim.arrivals().txs[&ids[0]].iter().find(|(n, _)| *n == a).unwrap().1;
    assert_eq!(at_a - start, 5_000);
    let rounds = sim.counters().rounds;
    assert!(rounds >= 2, "{rounds}");
    assert!(sim
        .events()
        .iter()
        .any(|r| matches!(r.event, Event::Verified { node, offered: 10, .. } if node == b)));
}

#[test]
fn the_bootstrap_node_keeps_no_mesh_and_is_sent_no_gossip() {
    let mut cfg = SimConfig::devnet(8);
    cfg.model = NetModel::simblock();
    let accounts = Accounts::new(&cfg.params, cfg.sig, 2, 64);
    let mut sim = Sim::new(cfg);
    let boot = sim.add_node(Role::Bootstrap);
    sim.add_nodes(Role::Miner, 1);
    let peers = sim.add_nodes(Role::Peer, 10);
    sim.connect_all();
    let start = sim.now();
    sim.start_load(LoadPlan::new(20.0, start + 100, start + 3_000, peers), accounts);
    sim.run_for(6_000);
    assert!(sim.mesh_of(boot).is_empty(), "{:?}", sim.mesh_of(boot));
    let to_boot = sim
        .events()
        .iter()
        .filter_map(|r| r.event.message())
        .filter(|(_, to, m)| *to == boot && m.gossip_id().is_some());
    assert_eq!(to_boot.count(), 0);
    let gossip =
        sim.events().iter().filter_map(|r| r.event.message()).filter(|(_, _, m)| m.gossip_id().is_some());
    assert!(gossip.count() > 100, "the others gossiped");
}

/// Nodes on one shared machine: a node's work waits for the others', and work that starts
/// together and costs the same ends together (processor sharing), as processes on one
/// computer do.
#[test]
fn nodes_on_a_shared_machine_share_its_cores() {
    let costs = signatures_only();
    let run = |work: WorkModel| {
        let mut cfg = SimConfig::devnet(3);
        cfg.work = work;
        // 1 ms one way, no jitter: the batch reaches the three at once.
        cfg.model = NetModel::uniform(1, 0, 0.0);
        let accounts_cfg = cfg.clone();
        let mut sim = Sim::new(cfg);
        let a = sim.add_node(Role::Peer);
        let others: Vec<NodeId> = (0..3).map(|_| sim.add_node(Role::Peer)).collect();
        for &o in &others {
            sim.connect(a, o);
        }
        sim.run_for(1_000);
        sim.track(Tracking::All);
        let mut accounts = Accounts::new(&accounts_cfg.params, accounts_cfg.sig, 1, 16);
        let txs = accounts.next(10);
        let id = txs[0].txid(accounts_cfg.params.hash);
        let start = sim.now_us();
        sim.submit_tracked(a, txs);
        sim.run_for(2_000);
        let at = |n: NodeId| sim.arrivals().txs[&id].iter().find(|(m, _)| *m == n).unwrap().1 - start;
        assert_eq!(sim.arrivals().tx_reach_us(&id, 0.25, 4), Some(at(a)));
        let cpu: Vec<f64> = (0..4).map(|i| sim.cpu_ms(NodeId(i))).collect();
        (at(a), others.iter().map(|&o| at(o)).collect::<Vec<u64>>(), cpu)
    };
    let costs = Arc::new(costs);
    // One core: 10 ms at the submit node alone; then three nodes each with 10 ms of work at
    // once, a third of the core each: all end 30 ms after the batch reached them.
    let (a, others, cpu) =
        run(WorkModel::SharedHost { costs: costs.clone(), host_cores: 1, node_threads: 2 });
    assert_eq!(a, 10_000);
    assert!(others.iter().all(|&t| t == others[0]), "{others:?}");
    let hop = others[0] - a - 30_000;
    assert!((1_000..2_000).contains(&hop), "{others:?}");
    assert_eq!(cpu, vec![10.0; 4]);
    // Each node a machine of its own (2 cores): 5 ms everywhere.
    let (a, others, cpu) = run(WorkModel::Modelled { costs, cores: 2 });
    assert_eq!(a, 5_000);
    assert!(others.iter().all(|&t| t - a - 5_000 == hop), "{others:?}");
    assert_eq!(cpu, vec![0.0; 4]);
}

/// [`run_loaded`] with full blocks gossiped (no compact blocks, so each is longer than gossipsub's
/// IDONTWANT threshold) of transactions carrying 4 KB each (so a block's copies take their
/// time on the uplinks and a late one can be declined), with or without IDONTWANT.
fn full_blocks(idontwant: bool) -> Sim {
    let mut cfg = large(9);
    cfg.compact_blocks = false;
    if !idontwant {
        cfg.gossip.idontwant_bytes = None;
    }
    run_loaded_with(cfg, 4000)
}

#[test]
fn idontwant_spares_copies_of_long_messages_that_their_receiver_has_and_loses_nothing() {
    let (with, without) = (full_blocks(true), full_blocks(false));
    let (a, b) = (with.counters(), without.counters());
    assert_eq!(b.declined + b.idontwant, 0, "nothing declined without IDONTWANT");
    assert!(a.declined > 0 && a.idontwant > 0, "declined {} idontwant {}", a.declined, a.idontwant);
    // Fewer copies of each block go out, and fewer bytes, with every IDONTWANT counted
    // against the blocks (per block mined: the two runs' histories differ, and one may mine
    // more).
    let per_block = |n: u64, sim: &Sim| n as f64 / sim.arrivals().mined.len().max(1) as f64;
    let copies = |c: &Counters, sim: &Sim| per_block(c.sent_of(Kind::BlockGossip), sim);
    let (ca, cb) = (copies(a, &with), copies(b, &without));
    assert!(ca < cb, "{ca:.0} copies of a block with, {cb:.0} without");
    let control = a.idontwant * (IDONTWANT_WIRE_BYTES + with.config().model.overhead_bytes);
    let (ba, bb) = (
        per_block(a.bytes_of(Kind::BlockGossip) + control, &with),
        per_block(b.bytes_of(Kind::BlockGossip), &without),
    );
    assert!(ba < bb, "{ba:.0} bytes a block with, {bb:.0} without");
    // Every block mined before the last two seconds still reached every node, and every
    // transaction tracked too.
    let arrivals = with.arrivals();
    let last = arrivals.mined.last().unwrap().at_us;
    for m in arrivals.mined.iter().filter(|m| m.at_us + 2_000_000 < last) {
        assert!(arrivals.block_reach_us(&m.hash, 1.0, 40).is_some(), "block {} missed a node", m.height);
    }
    for txid in arrivals.submitted.keys() {
        assert!(arrivals.tx_reach_us(txid, 1.0, 40).is_some());
    }
    assert!(arrivals.mined.len() >= 3);
}

#[test]
fn transactions_carrying_data_are_confirmed_and_make_larger_blocks() {
    let run = |data: usize| {
        let cfg = SimConfig::devnet(4);
        let accounts = Accounts::new(&cfg.params, cfg.sig, 4, 64).with_data(data);
        let mut sim = Sim::new(cfg);
        let miner = sim.add_node(Role::Miner);
        let peer = sim.add_node(Role::Peer);
        sim.connect(miner, peer);
        let start = sim.now();
        sim.start_load(LoadPlan::new(20.0, start + 100, start + 3_000, vec![peer]), accounts);
        sim.run_for(6_000);
        let r = sim.replica(peer).unwrap();
        let chain = r.chain.read();
        let accepted = sim.accepted().len();
        let confirmed =
            sim.accepted().iter().filter(|t| chain.tx_location(t).ok().flatten().is_some()).count();
        (accepted, confirmed, sim.counters().up_bytes.iter().sum::<u64>())
    };
    let (plain, plain_confirmed, plain_bytes) = run(0);
    let (big, big_confirmed, big_bytes) = run(10_000);
    assert!(plain > 40 && plain == plain_confirmed, "{plain} {plain_confirmed}");
    // Their fee pays for their size: every one is admitted and confirmed.
    assert_eq!((big, big_confirmed), (plain, plain_confirmed));
    // 10 KB more each on the wire (compact blocks do not carry them again).
    assert!(big_bytes >= plain_bytes + plain as u64 * 10_000, "{big_bytes} {plain_bytes}");
}

/// A random topology that cannot be built is an error that names the node, and leaves the
/// simulation as it was; one that can be built only through the last candidates is built.
#[test]
fn a_topology_that_cannot_be_built_is_an_error_that_names_the_node_and_changes_nothing() {
    let fresh = || {
        let mut sim = Sim::new(SimConfig::devnet(7));
        let nodes = sim.add_nodes(Role::Peer, 200);
        // Node 0 may link only to nodes 1 to 4.
        sim.partition(&nodes[..1], &nodes[5..]);
        (sim, nodes)
    };
    let (mut sim, nodes) = fresh();
    let e = sim.connect_random(200).unwrap_err();
    assert_eq!(e.place, "connect_random", "{e}");
    let e = sim.connect_random(5).unwrap_err();
    assert_eq!(e.place, "connect_random: node 0", "{e}");
    assert!(e.what.contains("linked to 4 peers, fewer than its 5"), "{e}");
    assert!(nodes.iter().all(|&n| sim.peers_of(n).is_empty()), "no link was made");
    // Nothing changed, the random draws included: the same graph as a fresh simulation's.
    sim.connect_random(4).unwrap();
    let (mut other, _) = fresh();
    other.connect_random(4).unwrap();
    assert!(nodes.iter().all(|&n| sim.peers_of(n) == other.peers_of(n)));
    // Node 0 found its four among 199, however the draws fell.
    assert_eq!(sim.peers_of(nodes[0]), nodes[1..5].to_vec());
    // In a network of 16, the last nodes find every other linked to them already: their slots
    // are filled by inbound links, and that is no error.
    let mut small = Sim::new(SimConfig::devnet(7));
    let nodes = small.add_nodes(Role::Peer, 16);
    small.connect_random(8).unwrap();
    assert!(nodes.iter().all(|&n| small.peers_of(n).len() >= 8));
}

/// Simulated nodes serve no lookups by owner, so their chains keep no owner index, after a
/// restart too (at 1,000 nodes it would hold every node's own map of every coin).
#[test]
fn simulated_chains_keep_no_owner_index() {
    let mut sim = Sim::new(SimConfig::devnet(3));
    let a = sim.add_nodes(Role::Peer, 2)[0];
    let off = |sim: &Sim| sim.replica(a).is_some_and(|r| !r.chain.read().owner_index_on());
    assert!(off(&sim));
    sim.stop(a);
    sim.start(a);
    assert!(off(&sim));
}
