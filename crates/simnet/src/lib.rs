//! A deterministic in-process network of ScaleChain nodes.
//!
//! Each simulated node runs the production logic — the peer protocol machine
//! (`scalechain_p2p::protocol::Protocol`) and a `scalechain_replica::Replica` on a memory store
//! (chain, mempool, the pipeline's verify stage, block acceptance, the miner's template and
//! nonce search) — and the simulator is its second reactor (nakamoto's shape): it delivers the
//! machine's requests, responses and gossip over virtual links and feeds back verdicts.
//!
//! - **Time** is virtual: a delivery queue ordered by (time, sequence number); every node gets
//!   a tick every 250 ms; a verification round or a block takes `work_ms`.
//! - **Links** have a latency (per link if set), a jitter and, for gossip, a loss rate, all
//!   drawn from one seeded random source; they can be partitioned and healed; a ban closes a
//!   link once what was written on it arrived.
//! - **Gossip** imitates gossipsub: a publish goes to the connected subscribers; a receiver
//!   drops ids it has seen, steps the rest through its machine, and forwards a message to its
//!   other peers only when its machine says `Validate { Accept }`. The bootstrap role does not
//!   subscribe.
//! - **Nodes** can join late, stop (the memory store is kept) and start again; miners build and
//!   solve a block at random intervals averaging the chain's target interval; scripted
//!   adversaries send whatever a test tells them to.
//!
//! - **Events**: what happened is recorded as typed events with their virtual time
//!   ([`Sim::events`]: deliveries and losses of messages by kind, links, bans, starts and stops,
//!   verification rounds, blocks, the machines' reports); tests assert on them, and
//!   [`Sim::trace`] prints them.
//!
//! Determinism: everything random (latencies, losses, mining times, signature-batch seeds,
//! the load) derives from the seed, and every map is ordered, so a scenario run twice with the
//! same seed gives the same events and the same final state.

mod event;
mod load;
mod node;
mod wire;
mod world;

use scalechain_chain::{Chain, MemStore};
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{Apps, Params, VerifyConfig};
use scalechain_mempool::MempoolConfig;
use scalechain_p2p::msg::{message_id, Role, Topic};
use scalechain_p2p::protocol::{Config as ProtocolConfig, Protocol, TxOrigin};
use scalechain_replica::Replica;
use scalechain_types::{Hash, HashKind, Lock, Scheme, Tx};

pub use event::{Cause, Event, Msg, Record, RequestKind, ResponseKind};
pub use load::Load;
pub use wire::{NodeId, Wire};
pub use world::{NetSettings, Penalty};

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
    /// Link behaviour.
    pub net: NetSettings,
    /// A miner's mean time between blocks, ms (the chain's target interval by default).
    pub block_interval_ms: u64,
    /// Virtual time a verification round or a block acceptance takes, ms.
    pub work_ms: u64,
    /// Interval of the machines' ticks, ms (the node's: 250).
    pub tick_ms: u64,
    /// Mempool settings of every node.
    pub mempool: MempoolConfig,
    /// Miners publish their blocks in compact form (the node's `p2p.compact_blocks`).
    pub compact_blocks: bool,
}

impl SimConfig {
    /// A devnet (SHA-256, Ed25519) on links of 20 ms ± 10 ms without loss.
    pub fn devnet(seed: u64) -> SimConfig {
        let params = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        SimConfig {
            seed,
            block_interval_ms: params.target_block_ms,
            params,
            sig: SigMode::Ed25519,
            net: NetSettings { latency_ms: 20, jitter_ms: 10, loss: 0.0 },
            work_ms: 1,
            tick_ms: 250,
            mempool: MempoolConfig::default(),
            compact_blocks: true,
        }
    }
}

enum Slot {
    Honest(Box<Honest>),
    Scripted(Scripted),
    Down { role: Role, store: Box<MemStore>, incarnation: u64, mining: bool },
}

/// The simulator.
pub struct Sim {
    cfg: SimConfig,
    nodes: Vec<Slot>,
    w: World,
    /// Nodes whose mempool settings differ from the configuration's.
    mempools: std::collections::BTreeMap<NodeId, MempoolConfig>,
}

impl Sim {
    /// An empty network whose clock starts at the genesis time plus one second.
    pub fn new(cfg: SimConfig) -> Sim {
        let start = cfg.params.genesis_time + 1_000;
        let w = World::new(cfg.seed, cfg.net, start);
        Sim { cfg, nodes: Vec::new(), w, mempools: Default::default() }
    }

    /// The virtual clock, ms since the Unix epoch.
    pub fn now(&self) -> u64 {
        self.w.now
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
        let replica = Replica::new(chain, mempool);
        let mut n = Honest::new(id, role, incarnation, Protocol::new(pc), replica);
        n.work_ms = self.cfg.work_ms;
        n.compact_blocks = self.cfg.compact_blocks;
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
        self.w.up.insert(id, incarnation);
        if n.role != Role::Bootstrap {
            self.w.subscribers.insert(id);
        }
        let mining = n.mining;
        self.w.record(Event::Up { node: id, role: n.role, incarnation, height: n.replica.tip().0 });
        self.nodes[id.0 as usize] = Slot::Honest(Box::new(n));
        let tick = self.w.now + self.cfg.tick_ms;
        self.w.schedule(tick, Ev::Tick { node: id, incarnation });
        if mining {
            self.schedule_mining(id, incarnation);
        }
    }

    fn schedule_mining(&mut self, node: NodeId, incarnation: u64) {
        let i = self.cfg.block_interval_ms.max(2);
        let at = self.w.now + i / 2 + self.w.below(i);
        self.w.schedule(at, Ev::Mine { node, incarnation });
    }

    /// Adds a node with a fresh chain (genesis only); it is up but connected to nobody.
    pub fn add_node(&mut self, role: Role) -> NodeId {
        let mempool = self.cfg.mempool.clone();
        self.add_node_with(role, mempool)
    }

    /// Adds a node like [`Sim::add_node`] whose mempool (now and after restarts) has its own
    /// settings.
    pub fn add_node_with(&mut self, role: Role, mempool: MempoolConfig) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.mempools.insert(id, mempool);
        self.nodes.push(Slot::Down { role, store: Box::default(), incarnation: 0, mining: false });
        let chain =
            Chain::open_or_init(MemStore::new(), &self.cfg.params, Apps::none(), self.verify_config(id, 1))
                .expect("a devnet's parameters open a memory store");
        let n = self.honest(id, role, 1, chain, true);
        self.bring_up(n);
        id
    }

    /// Adds a scripted node (an adversary): it runs no protocol, subscribes to gossip, records
    /// what reaches it, and sends what the test tells it to.
    pub fn add_scripted(&mut self) -> NodeId {
        let id = NodeId(self.nodes.len() as u32);
        self.nodes.push(Slot::Scripted(Scripted::default()));
        self.w.up.insert(id, 1);
        self.w.subscribers.insert(id);
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
        for peer in self.w.peers_of(id) {
            self.w.disconnect(id, peer);
        }
        // Closing links (bans in progress) go down too.
        let closing: Vec<NodeId> = self
            .w
            .links
            .keys()
            .filter_map(|&(a, b)| {
                if a == id {
                    Some(b)
                } else if b == id {
                    Some(a)
                } else {
                    None
                }
            })
            .collect();
        for peer in closing {
            self.w.disconnect(id, peer);
        }
        self.w.up.remove(&id);
        self.w.subscribers.remove(&id);
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
        let chain = Chain::open(*store, Apps::none(), self.verify_config(id, incarnation))
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

    /// Links every pair of nodes that are up (as the devnet's discovery does), but those kept
    /// apart or banned.
    pub fn connect_all(&mut self) {
        let up: Vec<NodeId> = self.w.up.keys().copied().collect();
        for (i, &a) in up.iter().enumerate() {
            for &b in &up[i + 1..] {
                self.w.connect(a, b);
            }
        }
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
                self.w.disconnect(a, b);
            }
        }
    }

    /// Ends every partition and links every pair again.
    pub fn heal(&mut self) {
        self.w.cut.clear();
        self.connect_all();
    }

    /// Submits transactions at a node, as its API would; what it admits is published.
    pub fn submit(&mut self, id: NodeId, txs: Vec<Tx>) {
        let Some(Slot::Honest(n)) = self.nodes.get_mut(id.0 as usize) else { return };
        self.w.record(Event::Submitted { node: id, txs: txs.len() });
        n.submit(txs, TxOrigin::Local, &mut self.w);
    }

    /// Runs the network for `ms` of virtual time.
    pub fn run_for(&mut self, ms: u64) {
        let until = self.w.now + ms;
        while let Some(ev) = self.w.pop(until) {
            self.handle(ev);
        }
        self.w.now = until;
    }

    /// Runs until `done` holds (checked every tick interval) or `ms` passed; true if it held.
    pub fn run_until(&mut self, ms: u64, mut done: impl FnMut(&Sim) -> bool) -> bool {
        let end = self.w.now + ms;
        while self.w.now < end {
            if done(self) {
                return true;
            }
            self.run_for(self.cfg.tick_ms.min(end - self.w.now));
        }
        done(self)
    }

    fn handle(&mut self, ev: Ev) {
        let current = |w: &World, node: NodeId, incarnation: u64| w.up.get(&node) == Some(&incarnation);
        match ev {
            Ev::Deliver { to, from, epoch, wire } => {
                if !self.w.arrive(from, to, epoch, &wire) {
                    return;
                }
                match self.nodes.get_mut(to.0 as usize) {
                    Some(Slot::Honest(n)) => n.receive(from, wire, &mut self.w),
                    Some(Slot::Scripted(s)) => s.received.push((self.w.now, from, wire)),
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
                    n.replica.expire_orphans(self.w.now);
                    n.step(scalechain_p2p::protocol::Input::Tick, &mut self.w);
                    let at = self.w.now + self.cfg.tick_ms;
                    self.w.schedule(at, Ev::Tick { node, incarnation });
                }
            }
            Ev::Mine { node, incarnation } => {
                if let (true, Some(Slot::Honest(n))) =
                    (current(&self.w, node, incarnation), self.nodes.get_mut(node.0 as usize))
                {
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
            Ev::Cut { a, b, epoch } => {
                if self.w.links.get(&pair(a, b)).is_some_and(|l| l.epoch == epoch) {
                    self.w.disconnect(a, b);
                }
            }
        }
    }

    // ---- Adversaries ----

    /// A scripted node sends a gossip message to one peer (false without an open link).
    pub fn inject_gossip(&mut self, from: NodeId, to: NodeId, topic: Topic, data: Vec<u8>) -> bool {
        let id = message_id(&data);
        self.w.send(from, to, Wire::Gossip { topic, id, data })
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
