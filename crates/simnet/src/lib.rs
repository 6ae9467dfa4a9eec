//! A deterministic in-process network of ScaleChain nodes, from a handful to thousands.
//!
//! Each simulated node runs the production logic — the peer protocol machine
//! (`scalechain_p2p::protocol::Protocol`) and a `scalechain_replica::Replica` on a memory store
//! (chain, mempool, the pipeline's verify stage, block acceptance, the miner's template and
//! nonce search) — and the simulator is its second reactor (nakamoto's shape): it delivers the
//! machine's requests, responses and gossip over virtual links and feeds back verdicts.
//!
//! - **Time** is virtual (`crate::world`): a delivery queue ordered by (time, sequence number),
//!   in µs (a calendar of 1 ms buckets); every node gets a tick every 250 ms and a gossip
//!   heartbeat every 700 ms.
//! - **The network** ([`NetModel`], `crate::net`): nodes placed in regions, a latency per pair of
//!   regions with a jitter per message, per-node upload bandwidth (its messages queued one
//!   after another) and download bandwidth (bounding each transfer), and a loss rate for
//!   gossip; links can be partitioned and healed, and a ban closes a link once
//!   what was written on it arrived. Presets: a uniform network, seed 001's three sites,
//!   SimBlock's six regions.
//! - **Topology**: links made by the caller ([`Sim::connect`], [`Sim::connect_all`]) or a random
//!   graph in which each node dials a bounded number of peers ([`Sim::connect_random`]).
//! - **Gossip** imitates gossipsub (`crate::mesh`): a publish floods the connected subscribers; a
//!   receiver drops ids it has seen, steps the rest through its machine, and forwards a
//!   message to its mesh peers (of bounded degree, kept at each heartbeat) only when its
//!   machine says `Validate { Accept }`. The bootstrap role does not subscribe.
//! - **Work** ([`WorkModel`], `crate::cost`): a fixed time per verification round or block, or a
//!   cost model calibrated on a real machine, each node a machine of its own with its cores.
//!   Nodes may share one signature cache ([`SimConfig::share_signatures`]): a signature one node
//!   verified is not verified again by another (still charged to it); whatever no node verified
//!   yet — an adversary's junk included — is really checked.
//! - **Nodes** can join late, stop (the memory store is kept) and start again; miners build and
//!   solve a block at random intervals ([`MiningClock`]: each miner around the interval, or
//!   the network's blocks a Poisson process at the interval, as proof of work); scripted
//!   adversaries send whatever a test tells them to; a [`Load`] or a rate-driven
//!   [`LoadPlan`] submits transactions as clients would.
//! - **Events**: what happened is recorded as typed events with their virtual time
//!   ([`Sim::events`]: deliveries and losses of messages by kind, links, bans, starts and stops,
//!   verification rounds, blocks, the machines' reports); tests assert on them, and
//!   [`Sim::trace`] prints them. Large runs keep only [`Counters`]
//!   ([`SimConfig::keep_events`]) and the arrival times of blocks and tracked transactions
//!   ([`Arrivals`]), and do not deliver copies of gossip their receiver already had when they
//!   were sent (their bandwidth is still taken).
//! - **Memory**: the nodes' memory stores keep blocks and undo data on one shared
//!   [`Shelf`](scalechain_chain::Shelf); each node's chain state, UTXO set and mempool are its
//!   own. The events run on a pool of one thread ([`Sim::run_for`]).
//!
//! Determinism: everything random (latencies, losses, mining times, meshes, signature-batch
//! seeds, the load) derives from the seed, and every map that is walked is ordered, so a
//! scenario run twice with the same seed gives the same events and the same final state.

pub mod budget;
mod calibrate;
mod cost;
mod cpu;
mod event;
mod load;
mod mesh;
mod net;
mod node;
mod observe;
mod seen;
mod transport;
mod uplink;
mod wire;
mod world;

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use scalechain_chain::{Chain, ChainStore, MemStore, OpenOptions, Shelf};
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{Apps, Params, VerifyConfig};
use scalechain_mempool::{MempoolConfig, SignatureCache};
use scalechain_p2p::msg::{message_id, Role, Topic};
use scalechain_p2p::protocol::{Config as ProtocolConfig, Protocol, TxOrigin};
use scalechain_replica::Replica;
use scalechain_types::{Hash, HashKind, Lock, Scheme, Tx};

pub use calibrate::{calibrate, CalibrationError};
pub use cost::{CostModel, Work};
pub use event::{Cause, Counters, Event, Kind, Msg, Record, RequestKind, ResponseKind};
pub use load::{Accounts, Load, LoadPlan};
pub use mesh::{GossipParams, IDONTWANT_WIRE_BYTES};
pub use net::{Jitter, ModelError, NetModel, Region};
pub use node::WorkModel;
pub use observe::{Arrivals, Mined, Tracking};
pub use transport::calibrate_transport;
pub use uplink::Uplink;
pub use wire::{NodeId, Wire};
pub use world::Penalty;

use node::{Honest, Scripted};
use world::{pair, Ev, World};

/// Simulation settings.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The seed everything random derives from.
    pub seed: u64,
    /// Chain parameters (a devnet by default).
    pub params: Params,
    /// The devnet's signature mode (for the load's keys).
    pub sig: SigMode,
    /// The network: regions, latencies, bandwidth, loss.
    pub model: NetModel,
    /// The gossip mesh's bounds.
    pub gossip: GossipParams,
    /// The mean time between blocks, ms (the chain's target interval by default): a miner's
    /// or the network's, as [`SimConfig::mining`] says.
    pub block_interval_ms: u64,
    /// How miners' times to their next block are drawn.
    pub mining: MiningClock,
    /// How long nodes' work takes.
    pub work: WorkModel,
    /// Interval of the machines' ticks, ms (the node's: 250).
    pub tick_ms: u64,
    /// Mempool settings of every node.
    pub mempool: MempoolConfig,
    /// Miners publish their blocks in compact form (the node's `p2p.compact_blocks`).
    pub compact_blocks: bool,
    /// Most transactions a miner puts in a block (the coinbase left out).
    pub max_block_txs: usize,
    /// Keep every event ([`Sim::events`]); without it only the counters and arrivals are kept.
    pub keep_events: bool,
    /// Nodes share one signature cache (each still pays for what it would verify).
    pub share_signatures: bool,
}

impl SimConfig {
    /// A devnet (SHA-256, Ed25519) on links of 20 ms ± 10 ms without loss, unlimited
    /// bandwidth, 1 ms per verification round or block, every event kept.
    pub fn devnet(seed: u64) -> SimConfig {
        let params = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        SimConfig {
            seed,
            block_interval_ms: params.target_block_ms,
            mining: MiningClock::PerMiner,
            params,
            sig: SigMode::Ed25519,
            model: NetModel::uniform(20, 10, 0.0),
            gossip: GossipParams::node(),
            work: WorkModel::Fixed { ms: 1 },
            tick_ms: 250,
            mempool: MempoolConfig::default(),
            compact_blocks: true,
            max_block_txs: 10_000,
            keep_events: true,
            share_signatures: true,
        }
    }
}

/// How miners' times to their next block are drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MiningClock {
    /// Each miner independently, uniform between half and one and a half times the interval:
    /// regular blocks for small scenarios, as many of them as there are miners.
    PerMiner,
    /// The network's blocks as proof of work makes them: a Poisson process whose mean interval
    /// is [`SimConfig::block_interval_ms`], each block won by a miner drawn uniformly among
    /// those mining at that moment (miners of equal hash power; the rate does not change when
    /// miners come and go). Stale-rate studies need this one.
    Network,
}

enum Slot {
    Honest(Box<Honest>),
    Scripted(Scripted),
    Down { role: Role, store: Box<MemStore>, incarnation: u64, mining: bool },
}

/// A replica of `chain` whose mempool has `mempool`'s settings and, if given, the signature
/// cache `cache` shared with others (else a cache of its own).
pub(crate) fn replica_of<S: ChainStore>(
    chain: Chain<S>,
    mempool: MempoolConfig,
    cache: Option<&Arc<SignatureCache>>,
) -> Replica<S> {
    match cache {
        Some(c) => Replica::with_sig_cache(chain, mempool, c.clone()),
        None => Replica::new(chain, mempool),
    }
}

/// How simulated nodes open their chains: without the owner index, as a node that serves no
/// lookups by owner (no API, no wallet, no explorer: `store.owner_index = false`) runs. The
/// index answers only those lookups; it changes nothing a node decides, and at 1,000 nodes it
/// would hold every node's own map of every coin by owner.
const NO_OWNER_INDEX: OpenOptions = OpenOptions { owner_index: false };

/// A pool of one thread, if the system can start one.
fn one_thread() -> Option<Arc<rayon::ThreadPool>> {
    rayon::ThreadPoolBuilder::new().num_threads(1).thread_name(|_| "simnet".into()).build().ok().map(Arc::new)
}

/// The simulator.
pub struct Sim {
    cfg: SimConfig,
    nodes: Vec<Slot>,
    w: World,
    /// Nodes whose mempool settings differ from the configuration's.
    mempools: BTreeMap<NodeId, MempoolConfig>,
    /// The signature cache every node shares, if they do.
    sig_cache: Option<Arc<SignatureCache>>,
    /// Where the nodes' stores keep blocks and undo data once for all.
    shelf: Arc<Shelf>,
    /// Links the partitions took down, to open again when they heal.
    severed: Vec<(NodeId, NodeId)>,
    /// The load being offered, if any.
    load: Option<(LoadPlan, Accounts)>,
    /// The network's mining clock is running ([`MiningClock::Network`]).
    network_mining: bool,
    /// A pool of one thread the simulation runs on (see [`Sim::run_for`]); without it, the
    /// events run on the caller's thread.
    pool: Option<Arc<rayon::ThreadPool>>,
}

impl Sim {
    /// An empty network whose clock starts at the genesis time plus one second.
    pub fn new(cfg: SimConfig) -> Sim {
        let start = cfg.params.genesis_time + 1_000;
        let mut w = World::new(cfg.seed, cfg.model.clone(), cfg.gossip, start, cfg.keep_events);
        if let WorkModel::SharedHost { host_cores, .. } = &cfg.work {
            w.cpu = Some(cpu::SharedCpu::new(*host_cores));
        }
        let sig_cache = cfg
            .share_signatures
            .then(|| Arc::new(SignatureCache::new(cfg.mempool.sig_cache_capacity.max(1 << 20))));
        Sim {
            cfg,
            nodes: Vec::new(),
            w,
            mempools: Default::default(),
            sig_cache,
            shelf: Arc::new(Shelf::new()),
            severed: Vec::new(),
            load: None,
            network_mining: false,
            pool: one_thread(),
        }
    }

    /// The virtual clock, ms since the Unix epoch.
    pub fn now(&self) -> u64 {
        self.w.now()
    }

    /// The virtual clock, µs since the Unix epoch.
    pub fn now_us(&self) -> u64 {
        self.w.now_us
    }

    /// The settings.
    pub fn config(&self) -> &SimConfig {
        &self.cfg
    }

    fn verify_config(&self, id: NodeId, incarnation: u64) -> VerifyConfig {
        let mut seed = [0u8; 32];
        seed[..8].copy_from_slice(&self.cfg.seed.to_le_bytes());
        seed[8..12].copy_from_slice(&id.0.to_le_bytes());
        seed[12..20].copy_from_slice(&incarnation.to_le_bytes());
        VerifyConfig::parallel(seed)
    }

    fn honest(
        &self,
        id: NodeId,
        role: Role,
        incarnation: u64,
        chain: Chain<MemStore>,
        mining: bool,
    ) -> Honest {
        let mut pc = ProtocolConfig::new(role, format!("simnet/{id}"));
        pc.sync.timeout_ms = 10_000;
        let mempool = self.mempools.get(&id).unwrap_or(&self.cfg.mempool).clone();
        let replica = replica_of(chain, mempool, self.sig_cache.as_ref());
        let mut n = Honest::new(id, role, incarnation, Protocol::new(pc), replica);
        n.work = self.cfg.work.clone();
        n.compact_blocks = self.cfg.compact_blocks;
        n.max_block_txs = self.cfg.max_block_txs;
        if role == Role::Miner {
            let pubkey_hash = self.cfg.params.hash.hash(format!("simnet miner {id}").as_bytes());
            n.reward = Some(Lock { scheme: Scheme::Ed25519, pubkey_hash });
            n.mining = mining;
        }
        n
    }

    /// Brings a node up: ticks, mining, gossip subscription.
    fn bring_up(&mut self, n: Honest) {
        let (id, incarnation) = (n.id, n.incarnation);
        self.w.up[id.0 as usize] = Some(incarnation);
        self.w.subscribers[id.0 as usize] = n.role != Role::Bootstrap;
        self.w.forget_seen(id);
        let mining = n.mining;
        self.w.record(Event::Up { node: id, role: n.role, incarnation, height: n.replica.tip().0 });
        self.nodes[id.0 as usize] = Slot::Honest(Box::new(n));
        let tick = self.w.now() + self.cfg.tick_ms;
        self.w.schedule(tick, Ev::Tick { node: id, incarnation });
        // Gossipsub's first heartbeat comes 100 ms after it starts.
        let beat = self.w.now() + 100;
        self.w.schedule(beat, Ev::Heartbeat { node: id, incarnation });
        if mining {
            self.schedule_mining(id, incarnation);
        }
    }

    fn schedule_mining(&mut self, node: NodeId, incarnation: u64) {
        let i = self.cfg.block_interval_ms.max(2);
        match self.cfg.mining {
            MiningClock::PerMiner => {
                let Some(Slot::Honest(n)) = self.nodes.get_mut(node.0 as usize) else { return };
                if n.mine_pending {
                    return;
                }
                n.mine_pending = true;
                let at = self.w.now() + i / 2 + self.w.below(i);
                self.w.schedule(at, Ev::Mine { node, incarnation });
            }
            // One clock for the whole network, started with its first miner.
            MiningClock::Network if !self.network_mining => {
                self.network_mining = true;
                self.schedule_network_block();
            }
            MiningClock::Network => {}
        }
    }

    /// The network's next block: an exponential time of mean the interval (memoryless proof
    /// of work: −ln(1 − U) × mean), won by a miner drawn then among those mining.
    fn schedule_network_block(&mut self) {
        let mean_us = self.cfg.block_interval_ms.max(2) as f64 * 1_000.0;
        let u = self.w.unit();
        let wait = (-(1.0 - u).ln() * mean_us).min(3_600_000_000.0) as u64;
        self.w.schedule_us(self.w.now_us + wait.max(1), Ev::NetworkBlock);
    }

    /// The network found a block: a miner drawn uniformly among those mining mines it.
    fn network_block(&mut self) {
        let miners: Vec<NodeId> = self
            .nodes
            .iter()
            .filter_map(|s| match s {
                Slot::Honest(n) if n.mining && n.reward.is_some() => Some(n.id),
                _ => None,
            })
            .collect();
        if !miners.is_empty() {
            let winner = miners[self.w.below(miners.len() as u64) as usize];
            if let Some(Slot::Honest(n)) = self.nodes.get_mut(winner.0 as usize) {
                n.mine(&mut self.w);
            }
        }
        self.schedule_network_block();
    }

    /// Adds a node with a fresh chain (genesis only) in the model's first region; it is up but
    /// connected to nobody.
    pub fn add_node(&mut self, role: Role) -> NodeId {
        self.add_node_in(role, 0)
    }

    /// Adds a node like [`Sim::add_node`] in region `region` of the model.
    pub fn add_node_in(&mut self, role: Role, region: u16) -> NodeId {
        let mempool = self.cfg.mempool.clone();
        self.add(role, region, mempool)
    }

    /// Adds `n` nodes of `role`, placed in the model's regions by their shares
    /// ([`NetModel::place`]); returns their ids.
    pub fn add_nodes(&mut self, role: Role, n: usize) -> Vec<NodeId> {
        let regions = self.cfg.model.place(n, &mut self.w.rng);
        regions.into_iter().map(|r| self.add_node_in(role, r)).collect()
    }

    /// Adds a node like [`Sim::add_node`] whose mempool (now and after restarts) has its own
    /// settings.
    pub fn add_node_with(&mut self, role: Role, mempool: MempoolConfig) -> NodeId {
        self.add(role, 0, mempool)
    }

    fn add(&mut self, role: Role, region: u16, mempool: MempoolConfig) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.w.add_host(id, region);
        self.mempools.insert(id, mempool);
        self.nodes.push(Slot::Down { role, store: Box::default(), incarnation: 0, mining: false });
        let chain = Chain::open_or_init_with(
            MemStore::on_shelf(self.shelf.clone()),
            &self.cfg.params,
            Apps::none(),
            self.verify_config(id, 1),
            NO_OWNER_INDEX,
        )
        .expect("a devnet's parameters open a memory store");
        let n = self.honest(id, role, 1, chain, true);
        self.bring_up(n);
        id
    }

    /// Adds a scripted node (an adversary): it runs no protocol, subscribes to gossip, records
    /// what reaches it, and sends what the test tells it to.
    pub fn add_scripted(&mut self) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.w.add_host(id, 0);
        self.nodes.push(Slot::Scripted(Scripted::default()));
        self.w.up[id.0 as usize] = Some(1);
        self.w.subscribers[id.0 as usize] = true;
        self.w.record(Event::ScriptedUp { node: id });
        id
    }

    /// Stops a node: its links go down, its machine and mempool are dropped, its store is kept.
    pub fn stop(&mut self, id: NodeId) {
        let Some(Slot::Honest(_)) = self.nodes.get(id.0 as usize) else { return };
        let Slot::Honest(n) = std::mem::replace(
            &mut self.nodes[id.0 as usize],
            Slot::Down { role: Role::Peer, store: Box::default(), incarnation: 0, mining: false },
        ) else {
            return;
        };
        // Its links go down, those closing under a ban too.
        for peer in self.w.all_links_of(id) {
            self.w.disconnect(id, peer);
        }
        self.w.up[id.0 as usize] = None;
        self.w.subscribers[id.0 as usize] = false;
        if let Some(cpu) = self.w.cpu.as_mut() {
            let ended = cpu.forget(self.w.now_us, id);
            self.w.cpu_ended.extend(ended);
            self.w.cpu_reschedule();
        }
        let (role, incarnation, mining) = (n.role, n.incarnation, n.mining);
        let store = Box::new(n.replica.into_chain().store().clone());
        self.w.record(Event::Down { node: id });
        self.nodes[id.0 as usize] = Slot::Down { role, store, incarnation, mining };
    }

    /// Starts a stopped node again on its store (connected to nobody).
    pub fn start(&mut self, id: NodeId) {
        let Some(Slot::Down { .. }) = self.nodes.get(id.0 as usize) else { return };
        let Slot::Down { role, store, incarnation, mining } = std::mem::replace(
            &mut self.nodes[id.0 as usize],
            Slot::Down { role: Role::Peer, store: Box::default(), incarnation: 0, mining: false },
        ) else {
            return;
        };
        let incarnation = incarnation + 1;
        let chain =
            Chain::open_with(*store, Apps::none(), self.verify_config(id, incarnation), NO_OWNER_INDEX)
                .expect("a memory store the simulator wrote reopens");
        let n = self.honest(id, role, incarnation, chain, mining);
        self.bring_up(n);
    }

    /// Turns a miner's mining on or off.
    pub fn set_mining(&mut self, id: NodeId, on: bool) {
        let Some(Slot::Honest(n)) = self.nodes.get_mut(id.0 as usize) else { return };
        if n.reward.is_none() || n.mining == on {
            return;
        }
        n.mining = on;
        let incarnation = n.incarnation;
        if on {
            self.schedule_mining(id, incarnation);
        }
    }

    /// Opens a link (false if one side is down, they are partitioned or one bans the other).
    pub fn connect(&mut self, a: NodeId, b: NodeId) -> bool {
        self.w.connect(a, b)
    }

    /// Takes a link down.
    pub fn disconnect(&mut self, a: NodeId, b: NodeId) {
        self.w.disconnect(a, b);
    }

    /// The nodes that are up, in id order.
    pub fn up_nodes(&self) -> Vec<NodeId> {
        (0..self.w.up.len() as u32).map(NodeId).filter(|&n| self.w.incarnation(n).is_some()).collect()
    }

    /// Links every pair of nodes that are up (as the devnet's discovery does), but those kept
    /// apart or banned.
    pub fn connect_all(&mut self) {
        let up = self.up_nodes();
        for (i, &a) in up.iter().enumerate() {
            for &b in &up[i + 1..] {
                self.w.connect(a, b);
            }
        }
    }

    /// A random graph: each node that is up, in id order, dials `outbound` peers drawn
    /// uniformly among the nodes that are up and not linked to it yet, as a node fills its
    /// outbound slots. Inbound links are whatever the others dialled; a machine past its
    /// `max_peers` evicts as the node's does.
    ///
    /// A node that finds no other node it may link to before its slots are filled stops there
    /// (in a small network the others dialled it already). A graph that cannot be built —
    /// fewer nodes up than `outbound + 1`, or a node left with fewer links than `outbound`
    /// (partitions, refusals) — is an error that names the node, and nothing changes: the graph
    /// is drawn first and built only whole.
    pub fn connect_random(&mut self, outbound: usize) -> Result<(), ModelError> {
        let up = self.up_nodes();
        if outbound >= up.len() && outbound > 0 {
            return Err(ModelError {
                place: "connect_random".into(),
                what: format!("each node cannot dial {outbound} peers among {} nodes up", up.len()),
            });
        }
        let rng = self.w.rng.clone();
        let mut drawn: HashSet<(NodeId, NodeId)> = HashSet::new();
        let mut plan = Vec::with_capacity(up.len() * outbound);
        let free = |w: &World, drawn: &HashSet<_>, a, b| w.may_link(a, b) && !drawn.contains(&pair(a, b));
        for &a in &up {
            let mut dialled = 0;
            let mut tries = 0;
            while dialled < outbound && tries < outbound * 20 + 20 {
                tries += 1;
                let b = up[self.w.below(up.len() as u64) as usize];
                if free(&self.w, &drawn, a, b) {
                    drawn.insert(pair(a, b));
                    plan.push((a, b));
                    dialled += 1;
                }
            }
            if dialled < outbound {
                // The draws kept missing: the rest among those left, in a random order.
                let mut left: Vec<NodeId> =
                    up.iter().copied().filter(|&b| free(&self.w, &drawn, a, b)).collect();
                while dialled < outbound && !left.is_empty() {
                    let b = left.swap_remove(self.w.below(left.len() as u64) as usize);
                    drawn.insert(pair(a, b));
                    plan.push((a, b));
                    dialled += 1;
                }
            }
            // A node whose every other node is linked to it already has its slots filled by
            // inbound links (a small network); one left with fewer links than slots cannot be.
            let links =
                || self.w.peers_of(a).count() + drawn.iter().filter(|(x, y)| *x == a || *y == a).count();
            if dialled < outbound && links() < outbound {
                let links = links();
                self.w.rng = rng;
                return Err(ModelError {
                    place: format!("connect_random: node {}", a.0),
                    what: format!(
                        "linked to {links} peers, fewer than its {outbound}: no other node up it may link to"
                    ),
                });
            }
        }
        for (a, b) in plan {
            self.w.connect(a, b);
        }
        Ok(())
    }

    /// Sets the one-way latency of the link between `a` and `b`.
    pub fn set_latency(&mut self, a: NodeId, b: NodeId, ms: u64) {
        self.w.set_latency(a, b, ms);
    }

    /// Cuts every link between the two groups and keeps them apart until [`Sim::heal`].
    pub fn partition(&mut self, left: &[NodeId], right: &[NodeId]) {
        for &a in left {
            for &b in right {
                self.w.cut.insert(pair(a, b));
                if self.w.has_link(a, b) {
                    self.severed.push((a, b));
                    self.w.disconnect(a, b);
                }
            }
        }
    }

    /// Ends every partition and opens again the links the partitions took down.
    pub fn heal(&mut self) {
        self.w.cut.clear();
        for (a, b) in std::mem::take(&mut self.severed) {
            self.w.connect(a, b);
        }
    }

    /// Submits transactions at a node, as its API would; what it admits is published.
    pub fn submit(&mut self, id: NodeId, txs: Vec<Tx>) {
        let Some(Slot::Honest(n)) = self.nodes.get_mut(id.0 as usize) else { return };
        self.w.record(Event::Submitted { node: id, txs: txs.len() });
        n.submit(txs, TxOrigin::Local, &mut self.w);
    }

    /// Submits transactions at a node like [`Sim::submit`], each followed as the tracking says
    /// from now (as the load's are): [`Arrivals::tx_reach_us`] counts from this moment.
    pub fn submit_tracked(&mut self, id: NodeId, txs: Vec<Tx>) {
        let h = self.cfg.params.hash;
        let now = self.w.now_us;
        for t in &txs {
            self.w.arrivals.submitted(t.txid(h), now);
        }
        self.submit(id, txs);
    }

    /// Core-milliseconds of work node `id` ran on the shared machine so far
    /// ([`WorkModel::SharedHost`]; 0 under other work models).
    pub fn cpu_ms(&self, id: NodeId) -> f64 {
        self.w.cpu.as_ref().and_then(|c| c.cpu_ns.get(&id)).map_or(0.0, |ns| *ns as f64 / 1e6)
    }

    /// Starts offering a load: transactions from `accounts` at the plan's rate until its end.
    pub fn start_load(&mut self, plan: LoadPlan, accounts: Accounts) {
        let at = self.w.now_us.max(plan.start_ms * 1_000);
        self.load = Some((plan, accounts));
        self.w.schedule_us(at, Ev::Load);
    }

    /// The load's next submission: its transactions to the plan's next target, and the one
    /// after it scheduled.
    fn offer(&mut self) {
        let Some((plan, accounts)) = self.load.as_mut() else { return };
        if self.w.now() >= plan.end_ms {
            return;
        }
        let txs = accounts.next(plan.per_submit);
        let target = plan.target();
        let gap = plan.gap_us(&mut self.w.rng);
        if !txs.is_empty() {
            self.submit_tracked(target, txs);
        }
        let at = self.w.now_us + gap;
        self.w.schedule_us(at, Ev::Load);
    }

    /// Runs the network for `ms` of virtual time.
    ///
    /// The events run on a pool of one thread, where the engine's parallel loops run inline: a
    /// simulated node's work is charged in virtual time, and waking real threads for every
    /// round of a few transactions would only cost real time.
    pub fn run_for(&mut self, ms: u64) {
        let until = self.w.now_us + ms * 1_000;
        match self.pool.clone() {
            Some(pool) => pool.install(|| self.run_events(until)),
            None => self.run_events(until),
        }
        self.w.now_us = until;
    }

    fn run_events(&mut self, until_us: u64) {
        while let Some(ev) = self.w.pop(until_us) {
            self.handle(ev);
        }
    }

    /// Has every open link finished its handshake (so every mesh formed from all its links)?
    pub fn formed(&self) -> bool {
        self.w.unjoined == 0
    }

    /// Lets a network just connected form: runs with mining paused until every link's
    /// handshake ended ([`Sim::formed`]; the longest link's three round trips), at most `ms`;
    /// true if it formed. Measurements that start after it see a network in its steady state,
    /// not one whose meshes are still filling (a block mined meanwhile reaches only part of
    /// the nodes by gossip).
    pub fn form(&mut self, ms: u64) -> bool {
        let paused: Vec<NodeId> = self
            .nodes
            .iter()
            .filter_map(|s| match s {
                Slot::Honest(n) if n.mining => Some(n.id),
                _ => None,
            })
            .collect();
        for &id in &paused {
            self.set_mining(id, false);
        }
        let formed = self.run_until(ms, Sim::formed);
        for &id in &paused {
            self.set_mining(id, true);
        }
        formed
    }

    /// Runs until `done` holds (checked every tick interval) or `ms` passed; true if it held.
    pub fn run_until(&mut self, ms: u64, mut done: impl FnMut(&Sim) -> bool) -> bool {
        let end = self.w.now() + ms;
        while self.w.now() < end {
            if done(self) {
                return true;
            }
            self.run_for(self.cfg.tick_ms.min(end - self.w.now()));
        }
        done(self)
    }

    fn handle(&mut self, ev: Ev) {
        let current = |w: &World, node: NodeId, incarnation: u64| w.incarnation(node) == Some(incarnation);
        match ev {
            Ev::Deliver { to, from, epoch, wire } => {
                if !self.w.arrive(from, to, epoch, &wire) {
                    return;
                }
                match self.nodes.get_mut(to.0 as usize) {
                    Some(Slot::Honest(n)) => n.receive(from, wire, &mut self.w),
                    Some(Slot::Scripted(s)) => s.received.push((self.w.now(), from, wire)),
                    _ => {}
                }
            }
            Ev::Input { node, incarnation, input } => {
                if let (true, Some(Slot::Honest(n))) =
                    (current(&self.w, node, incarnation), self.nodes.get_mut(node.0 as usize))
                {
                    n.step(input, &mut self.w);
                }
            }
            Ev::Tick { node, incarnation } => {
                if let (true, Some(Slot::Honest(n))) =
                    (current(&self.w, node, incarnation), self.nodes.get_mut(node.0 as usize))
                {
                    n.replica.expire_orphans(self.w.now());
                    n.step(scalechain_p2p::protocol::Input::Tick, &mut self.w);
                    let at = self.w.now() + self.cfg.tick_ms;
                    self.w.schedule(at, Ev::Tick { node, incarnation });
                }
            }
            Ev::Heartbeat { node, incarnation } => {
                if current(&self.w, node, incarnation) {
                    self.w.heartbeat(node);
                    let at = self.w.now() + self.cfg.gossip.heartbeat_ms;
                    self.w.schedule(at, Ev::Heartbeat { node, incarnation });
                }
            }
            Ev::Load => self.offer(),
            Ev::NetworkBlock => self.network_block(),
            Ev::Mine { node, incarnation } => {
                if let (true, Some(Slot::Honest(n))) =
                    (current(&self.w, node, incarnation), self.nodes.get_mut(node.0 as usize))
                {
                    n.mine_pending = false;
                    if n.mining {
                        n.mine(&mut self.w);
                        self.schedule_mining(node, incarnation);
                    }
                }
            }
            Ev::Verify { node, incarnation } => {
                if let (true, Some(Slot::Honest(n))) =
                    (current(&self.w, node, incarnation), self.nodes.get_mut(node.0 as usize))
                {
                    n.verify(&mut self.w);
                }
            }
            Ev::Blocks { node, incarnation } => {
                if let (true, Some(Slot::Honest(n))) =
                    (current(&self.w, node, incarnation), self.nodes.get_mut(node.0 as usize))
                {
                    n.accept_blocks(&mut self.w);
                }
            }
            Ev::UplinkTick { node, epoch } => self.w.uplink_tick(node, epoch),
            Ev::CpuTick { epoch } => {
                for e in self.w.cpu_tick(epoch) {
                    if let (true, Some(Slot::Honest(n))) =
                        (current(&self.w, e.node, e.incarnation), self.nodes.get_mut(e.node.0 as usize))
                    {
                        n.work_done(&mut self.w);
                    }
                }
            }
            Ev::Cut { a, b, epoch } => {
                if self.w.link_epoch_is(a, b, epoch) {
                    self.w.disconnect(a, b);
                }
            }
            Ev::MeshJoin { a, b, epoch } => self.w.mesh_join(a, b, epoch),
        }
    }

    // ---- Adversaries ----

    /// A scripted node sends a gossip message to one peer (false without an open link).
    pub fn inject_gossip(&mut self, from: NodeId, to: NodeId, topic: Topic, data: Vec<u8>) -> bool {
        let id = message_id(&data);
        self.w.send(from, to, Wire::Gossip { topic, id, data: data.into() })
    }

    /// A scripted node sends a request body to a peer; returns its tag (None without a link).
    pub fn inject_request(&mut self, from: NodeId, to: NodeId, data: Vec<u8>) -> Option<u64> {
        let Some(Slot::Scripted(s)) = self.nodes.get_mut(from.0 as usize) else { return None };
        s.next_tag += 1;
        let tag = s.next_tag;
        self.w.send(from, to, Wire::Request { tag, data }).then_some(tag)
    }

    /// What reached a scripted node: (time, sender, message).
    pub fn received(&self, id: NodeId) -> &[(u64, NodeId, Wire)] {
        match self.nodes.get(id.0 as usize) {
            Some(Slot::Scripted(s)) => &s.received,
            _ => &[],
        }
    }

    // ---- Observation ----

    /// A running node's replica.
    pub fn replica(&self, id: NodeId) -> Option<&Replica<MemStore>> {
        match self.nodes.get(id.0 as usize) {
            Some(Slot::Honest(n)) => Some(&n.replica),
            _ => None,
        }
    }

    /// A running node's protocol machine.
    pub fn protocol(&self, id: NodeId) -> Option<&Protocol<NodeId>> {
        match self.nodes.get(id.0 as usize) {
            Some(Slot::Honest(n)) => Some(&n.protocol),
            _ => None,
        }
    }

    /// A running node's tip.
    pub fn tip(&self, id: NodeId) -> Option<(u64, Hash)> {
        self.replica(id).map(Replica::tip)
    }

    /// True if every listed node runs and all share one tip.
    pub fn same_tip(&self, ids: &[NodeId]) -> bool {
        let tips: Vec<_> = ids.iter().map(|&i| self.tip(i)).collect();
        tips.iter().all(|t| t.is_some() && *t == tips[0])
    }

    /// True if the two nodes are linked.
    pub fn linked(&self, a: NodeId, b: NodeId) -> bool {
        self.w.linked(a, b)
    }

    /// The region of a node in the model.
    pub fn region_of(&self, id: NodeId) -> Option<u16> {
        self.w.hosts.get(id.0 as usize).map(|h| h.region)
    }

    /// A node's gossip mesh peers, in id order.
    pub fn mesh_of(&self, id: NodeId) -> Vec<NodeId> {
        self.w.mesh_of(id).collect()
    }

    /// A node's open links, in id order.
    pub fn peers_of(&self, id: NodeId) -> Vec<NodeId> {
        self.w.peers_of(id).collect()
    }

    /// Counts of what happened (kept whether events are or not).
    pub fn counters(&self) -> &Counters {
        &self.w.counters
    }

    /// When blocks and tracked transactions reached each node, and what was mined.
    pub fn arrivals(&self) -> &Arrivals {
        &self.w.arrivals
    }

    /// Which transactions' arrivals to keep (by default none).
    pub fn track(&mut self, tracking: Tracking) {
        self.w.arrivals.tracking = tracking;
    }

    /// Events waiting in the queue.
    pub fn queued(&self) -> usize {
        self.w.queued()
    }

    /// Txids admitted from local submissions, on any node.
    pub fn accepted(&self) -> &std::collections::BTreeSet<Hash> {
        &self.w.accepted
    }

    /// Every penalty given, in order.
    pub fn penalties(&self) -> &[Penalty] {
        &self.w.penalties
    }

    /// Blocks that left a node's main chain, summed over nodes (0: no node reorganised).
    pub fn disconnected_blocks(&self) -> u64 {
        self.w.disconnected_blocks
    }

    /// Transactions of disconnected blocks that mempools took back, summed over nodes.
    pub fn readmitted(&self) -> u64 {
        self.w.readmitted
    }

    /// Everything that happened, in order: deliveries and losses, links, bans, starts and
    /// stops, verification rounds, blocks, and what the machines reported.
    pub fn events(&self) -> &[Record] {
        self.w.events()
    }

    /// The events as text, one line each, prefixed with the virtual time (for a failing
    /// test's message).
    pub fn trace(&self) -> String {
        let mut out = String::new();
        for r in self.w.events() {
            out.push_str(&r.to_string());
            out.push('\n');
        }
        out
    }

    /// The final state in one string: per node, its tip, its mempool and its peers.
    pub fn state(&self) -> String {
        let mut out = String::new();
        for (i, slot) in self.nodes.iter().enumerate() {
            let id = NodeId(i as u32);
            let line = match slot {
                Slot::Honest(n) => {
                    let (h, tip) = n.replica.tip();
                    let pool: Vec<String> = n
                        .replica
                        .mempool
                        .snapshot()
                        .iter()
                        .map(|e| e.txid.to_string()[..8].to_string())
                        .collect();
                    let peers: Vec<String> =
                        n.protocol.peers().map(|(k, p)| format!("{k}:{}", p.height)).collect();
                    format!("{id} {h} {tip} pool [{}] peers [{}]\n", pool.join(" "), peers.join(" "))
                }
                Slot::Scripted(s) => format!("{id} scripted received {}\n", s.received.len()),
                Slot::Down { .. } => format!("{id} down\n"),
            };
            out.push_str(&line);
        }
        out
    }
}
