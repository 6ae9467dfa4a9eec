//! The virtual network: the clock, the delivery queue, links, the network model's latencies
//! and bandwidth queues, the seeded random source, the counters and the record of events
//! (`crate::event`, all recorded by [`World::record`]). Nodes live beside it (`crate::node`);
//! the simulator (`crate::Sim`) owns both.
//!
//! - **Time** is kept in µs (a transaction's serialisation on a fast link, or its admission,
//!   takes less than a millisecond); machines and events see milliseconds.
//! - **Queue**: a calendar of 1 ms buckets ordered by (time, sequence number), so events due
//!   at the same time run in the order they were scheduled.
//! - **Links**: each node's open links in an ordered map of its own (`adj`), so a send and a
//!   node's peer list cost O(its degree), and peers come in id order.
//! - **Arrival** of a message: it leaves when its sender's uplink is free, takes
//!   `size / upload` to leave, travels the drawn latency, and takes no less than
//!   `size / download` to come in (`crate::net`).
//!
//! Invariants: the clock never goes back; the same seed and the same calls give the same
//! schedule; a message on a link that went down (or was replaced) is lost, never delivered on
//! another.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::sync::Arc;

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use scalechain_p2p::msg::MsgId;
use scalechain_p2p::protocol::Input;
use scalechain_p2p::score::Offence;
use scalechain_types::{Block, Hash, HashKind};

use crate::cpu::{Ended, SharedCpu};
use crate::event::{Cause, Counters, Event, Msg, Record};
use crate::mesh::{GossipParams, Mesh};
use crate::net::NetModel;
use crate::observe::Arrivals;
use crate::seen::Seen;
use crate::uplink::{SharedUplink, Uplink, WINDOW_BYTES};
use crate::wire::{NodeId, Wire};

/// Something scheduled to happen at a virtual time.
#[derive(Debug)]
pub(crate) enum Ev {
    /// A message arrives.
    Deliver { to: NodeId, from: NodeId, epoch: u64, wire: Wire },
    /// An input for a node's machine (connections, local failures, work finished).
    Input { node: NodeId, incarnation: u64, input: Input<NodeId> },
    /// A node's periodic tick.
    Tick { node: NodeId, incarnation: u64 },
    /// A node's gossip heartbeat (mesh upkeep).
    Heartbeat { node: NodeId, incarnation: u64 },
    /// A miner builds and solves a block.
    Mine { node: NodeId, incarnation: u64 },
    /// The network found a block ([`crate::MiningClock::Network`]); a miner is drawn.
    NetworkBlock,
    /// A node's pipeline runs a verification round.
    Verify { node: NodeId, incarnation: u64 },
    /// A node's block worker takes its queue.
    Blocks { node: NodeId, incarnation: u64 },
    /// A link closed by a ban goes down (after what was written on it arrived).
    Cut { a: NodeId, b: NodeId, epoch: u64 },
    /// The link of `epoch` finished its handshake ([`crate::mesh::JOIN_RTTS`] round trips
    /// after it opened): `a`, its dialler, may graft `b`.
    MeshJoin { a: NodeId, b: NodeId, epoch: u64 },
    /// The load's next submission is due.
    Load,
    /// The shared CPU's next job may have ended ([`crate::WorkModel::SharedHost`]); stale if
    /// its epoch is not the CPU's.
    CpuTick { epoch: u64 },
    /// A message on `node`'s shared uplink may have finished leaving ([`crate::Uplink::Fair`],
    /// [`crate::Uplink::Tcp`]); stale if its epoch is not the uplink's.
    UplinkTick { node: NodeId, epoch: u64 },
}

/// An event's place in the queue: its time (µs), its sequence number and the slot that holds
/// it. The queue moves these 24-byte keys, never the events themselves.
type Key = (u64, u64, u32);

/// Width of the queue's buckets, µs.
const BUCKET_US: u64 = 1_000;

/// The delivery queue: a calendar of 1 ms buckets. Keys due in the current bucket (or before)
/// sit in a small heap; later ones wait unsorted in their bucket until it comes. Popping gives
/// exactly the order of one heap of all keys, (time, sequence), but the heap a pop sifts holds
/// one millisecond of events instead of all of them.
#[derive(Default)]
struct Calendar {
    /// The bucket the heap holds (and every earlier one).
    bucket: u64,
    /// Keys of buckets up to `bucket`, earliest first.
    current: BinaryHeap<Reverse<Key>>,
    /// Keys of later buckets, by bucket.
    later: BTreeMap<u64, Vec<Key>>,
    len: usize,
}

impl Calendar {
    fn push(&mut self, key: Key) {
        let b = key.0 / BUCKET_US;
        if b <= self.bucket {
            self.current.push(Reverse(key));
        } else {
            self.later.entry(b).or_default().push(key);
        }
        self.len += 1;
    }

    /// The earliest key, if it is due at or before `until_us`.
    fn pop(&mut self, until_us: u64) -> Option<Key> {
        loop {
            if let Some(&Reverse(key)) = self.current.peek() {
                if key.0 > until_us {
                    return None;
                }
                self.current.pop();
                self.len -= 1;
                return Some(key);
            }
            let (&b, _) = self.later.first_key_value()?;
            if b * BUCKET_US > until_us {
                return None;
            }
            let keys = self.later.pop_first().map(|(_, k)| k).unwrap_or_default();
            self.bucket = b;
            self.current = keys.into_iter().map(Reverse).collect();
        }
    }
}

/// A connection between two nodes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    pub epoch: u64,
    /// Closed by a ban: nothing more is sent on it; it goes down at the scheduled cut.
    pub closing: bool,
    /// Its handshake ended ([`Ev::MeshJoin`]): gossipsub on each end knows the other's
    /// subscriptions, so the other is a candidate for its mesh.
    pub joined: bool,
}

/// A penalty one node gave another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Penalty {
    /// When.
    pub at_ms: u64,
    /// The node that penalised.
    pub by: NodeId,
    /// The peer penalised.
    pub peer: NodeId,
    /// What for.
    pub offence: Offence,
}

/// A node's place on the network.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Host {
    /// Its region in the model.
    pub region: u16,
    /// When its uplink is free, µs.
    up_free: u64,
}

pub(crate) struct World {
    /// The clock, µs since the Unix epoch.
    pub now_us: u64,
    seq: u64,
    /// The keys of the events due.
    queue: Calendar,
    /// The events due, each in a slot named by its key.
    slots: Vec<Option<Ev>>,
    /// Slots free for reuse.
    free: Vec<u32>,
    pub rng: ChaCha20Rng,
    pub model: NetModel,
    /// Per node, its open (or closing) links, by peer.
    adj: Vec<BTreeMap<NodeId, Link>>,
    next_epoch: u64,
    /// Open links whose handshake has not ended yet ([`Link::joined`]).
    pub unjoined: usize,
    /// Per node, its region and its links' queues.
    pub hosts: Vec<Host>,
    /// One-way latencies set for single links, µs (they replace the model's draw).
    latency: BTreeMap<(NodeId, NodeId), u64>,
    /// Pairs a partition keeps apart.
    pub cut: BTreeSet<(NodeId, NodeId)>,
    /// (banner, banned) → end of the ban, ms.
    pub refusals: BTreeMap<(NodeId, NodeId), u64>,
    /// Per node: does it receive gossip (not the bootstrap role, not down)?
    pub subscribers: Vec<bool>,
    /// Per node: its incarnation if it is up.
    pub up: Vec<Option<u64>>,
    /// Per node: its duplicate cache (emptied when it starts).
    seen: Seen,
    /// The gossip mesh and its bounds.
    pub mesh: Mesh,
    pub gossip: GossipParams,
    /// Keep every event (tests), or only count them (large runs).
    pub keep_events: bool,
    /// What happened, in order (only [`World::record`] adds to it).
    events: Vec<Record>,
    /// Counts of what happened, always kept.
    pub counters: Counters,
    /// When blocks and tracked transactions reached each node.
    pub arrivals: Arrivals,
    /// Txids admitted from local submissions, anywhere.
    pub accepted: BTreeSet<Hash>,
    pub penalties: Vec<Penalty>,
    /// Recent blocks' txids (but the coinbase's), by block hash: hashed once for every node
    /// that prices the block ([`World::txids_of`]), bodies that match their header only;
    /// emptied past [`TXIDS_KEPT`] blocks.
    block_txids: RefCell<HashMap<Hash, Arc<[Hash]>>>,
    /// Blocks that left a main chain, summed over nodes.
    pub disconnected_blocks: u64,
    /// Transactions of such blocks the mempools took back, summed over nodes.
    pub readmitted: u64,
    /// The one machine every node's work shares, if the work model says so.
    pub cpu: Option<SharedCpu>,
    /// Jobs of the shared CPU that ended and wait for the next tick to be handled.
    pub cpu_ended: Vec<Ended>,
    /// Per node, its uplink's queues under [`Uplink::Fair`] or [`Uplink::Tcp`] (made at its
    /// first limited send).
    uplinks: Vec<Option<SharedUplink<(u64, Wire)>>>,
}

/// Blocks whose txids [`World::txids_of`] keeps at most (a second's blocks reach every node
/// within seconds).
const TXIDS_KEPT: usize = 1_024;

pub(crate) fn pair(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

impl World {
    pub fn new(seed: u64, model: NetModel, gossip: GossipParams, start_ms: u64, keep_events: bool) -> World {
        World {
            now_us: start_ms * 1_000,
            seq: 0,
            queue: Calendar::default(),
            slots: Vec::new(),
            free: Vec::new(),
            rng: ChaCha20Rng::seed_from_u64(seed),
            model,
            adj: Vec::new(),
            next_epoch: 1,
            unjoined: 0,
            hosts: Vec::new(),
            latency: BTreeMap::new(),
            cut: BTreeSet::new(),
            refusals: BTreeMap::new(),
            subscribers: Vec::new(),
            up: Vec::new(),
            seen: Seen::default(),
            mesh: Mesh::default(),
            gossip,
            keep_events,
            events: Vec::new(),
            counters: Counters::default(),
            arrivals: Arrivals::default(),
            accepted: BTreeSet::new(),
            penalties: Vec::new(),
            block_txids: RefCell::default(),
            disconnected_blocks: 0,
            readmitted: 0,
            cpu: None,
            cpu_ended: Vec::new(),
            uplinks: Vec::new(),
        }
    }

    /// Runs a job of `phases` (core-ns, threads) for `node` on the shared CPU from now; its
    /// end comes as a [`Ev::CpuTick`]. Without a shared CPU, nothing.
    pub fn run_on_cpu(&mut self, node: NodeId, incarnation: u64, phases: &[(u64, u32)]) {
        let Some(cpu) = self.cpu.as_mut() else { return };
        let ended = cpu.add(self.now_us, Ended { node, incarnation }, phases);
        self.cpu_ended.extend(ended);
        self.cpu_reschedule();
    }

    /// Schedules the shared CPU's next tick: now if ended jobs wait, else at its next end.
    pub fn cpu_reschedule(&mut self) {
        let Some(cpu) = self.cpu.as_ref() else { return };
        let epoch = cpu.epoch;
        let at = if self.cpu_ended.is_empty() { cpu.next_end() } else { Some(self.now_us) };
        if let Some(at) = at {
            self.schedule_us(at.max(self.now_us), Ev::CpuTick { epoch });
        }
    }

    /// A shared-CPU tick: the jobs that ended by now (none if the tick is stale but for those
    /// that waited), the next tick scheduled.
    pub fn cpu_tick(&mut self, epoch: u64) -> Vec<Ended> {
        let mut ended = std::mem::take(&mut self.cpu_ended);
        let Some(cpu) = self.cpu.as_mut() else { return ended };
        if cpu.epoch == epoch {
            ended.extend(cpu.advance(self.now_us));
            // The phases running now may differ: shares change.
            cpu.epoch += 1;
            self.cpu_reschedule();
        } else if !ended.is_empty() {
            self.cpu_reschedule();
        }
        ended
    }

    /// The clock in ms, as machines and events see it.
    pub fn now(&self) -> u64 {
        self.now_us / 1_000
    }

    /// Makes room for node `id` in region `region` (ids are dense, from 0).
    pub fn add_host(&mut self, id: NodeId, region: u16) {
        let i = id.0 as usize;
        if self.adj.len() <= i {
            self.adj.resize_with(i + 1, BTreeMap::new);
            self.hosts.resize(i + 1, Host::default());
            self.subscribers.resize(i + 1, false);
            self.up.resize(i + 1, None);
            self.seen.grow(i + 1);
            self.uplinks.resize_with(i + 1, || None);
        }
        self.hosts[i].region = region;
    }

    /// Node `id` remembers gossip id `msg` seen now (in its duplicate cache); false if it was
    /// seen already.
    pub fn remember(&mut self, id: NodeId, msg: MsgId) -> bool {
        let now = self.now();
        self.seen.remember(id.0 as usize, msg, now)
    }

    /// Empties node `id`'s duplicate cache (it starts afresh).
    pub fn forget_seen(&mut self, id: NodeId) {
        self.seen.forget(id.0 as usize);
    }

    /// Node `id`'s incarnation, if it is up.
    pub fn incarnation(&self, id: NodeId) -> Option<u64> {
        self.up.get(id.0 as usize).copied().flatten()
    }

    /// Does node `id` receive gossip?
    pub fn subscribed(&self, id: NodeId) -> bool {
        self.subscribers.get(id.0 as usize).copied().unwrap_or(false)
    }

    /// Records that `event` happened now: the one place events are recorded. Counters are
    /// always kept; the event itself only when [`World::keep_events`] says so.
    pub fn record(&mut self, event: Event) {
        self.counters.count(&event);
        if self.keep_events {
            self.events.push(Record { at_ms: self.now(), event });
        }
    }

    /// Everything recorded, in order.
    pub fn events(&self) -> &[Record] {
        &self.events
    }

    /// Schedules `ev` at `at_ms` (ms).
    pub fn schedule(&mut self, at_ms: u64, ev: Ev) {
        self.schedule_us(at_ms * 1_000, ev);
    }

    /// Schedules `ev` at `at_us` (µs).
    pub fn schedule_us(&mut self, at_us: u64, ev: Ev) {
        self.seq += 1;
        let slot = match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(ev);
                slot
            }
            None => {
                // A queue of 2^32 events would not fit in memory long before this overflows.
                let slot = u32::try_from(self.slots.len()).unwrap_or(u32::MAX);
                self.slots.push(Some(ev));
                slot
            }
        };
        self.queue.push((at_us, self.seq, slot));
    }

    /// The next event due at or before `until_us`, with the clock moved to it.
    pub fn pop(&mut self, until_us: u64) -> Option<Ev> {
        loop {
            let (at_us, _, slot) = self.queue.pop(until_us)?;
            let Some(ev) = self.slots.get_mut(slot as usize).and_then(Option::take) else { continue };
            self.free.push(slot);
            self.now_us = self.now_us.max(at_us);
            self.counters.events += 1;
            return Some(ev);
        }
    }

    /// Events waiting in the queue.
    pub fn queued(&self) -> usize {
        self.queue.len
    }

    /// A uniform draw below `n` (0 for `n` = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.rng.next_u64() % n
        }
    }

    /// A uniform draw in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.unit() <= p
    }

    pub fn set_latency(&mut self, a: NodeId, b: NodeId, ms: u64) {
        self.latency.insert(pair(a, b), ms * 1_000);
    }

    fn region(&self, id: NodeId) -> u16 {
        self.hosts.get(id.0 as usize).map_or(0, |h| h.region)
    }

    fn delay_us(&mut self, a: NodeId, b: NodeId) -> u64 {
        if let Some((us, jitter)) = self.link_latency_us(a, b) {
            return us + jitter.map_or(0, |max_us| self.below(max_us + 1));
        }
        let (ra, rb) = (self.region(a), self.region(b));
        self.model.draw_us(ra, rb, &mut self.rng)
    }

    /// The one-way latency set for the link between `a` and `b` ([`World::set_latency`]), µs,
    /// with the bound of the uniform jitter drawn on top of it, if the model draws one.
    fn link_latency_us(&self, a: NodeId, b: NodeId) -> Option<(u64, Option<u64>)> {
        let &us = self.latency.get(&pair(a, b))?;
        let jitter = match self.model.jitter {
            crate::net::Jitter::Uniform { max_us } => Some(max_us),
            _ => None,
        };
        Some((us, jitter))
    }

    /// The mean one-way latency from `a` to `b`, µs (no jitter drawn).
    fn mean_delay_us(&self, a: NodeId, b: NodeId) -> u64 {
        match self.link_latency_us(a, b) {
            Some((us, _)) => us,
            None => self.model.mean_us(self.region(a), self.region(b)),
        }
    }

    /// The link of `epoch` between `a` (its dialler) and `b` finished its handshake: `a`
    /// grafts `b` if both subscribe and the mesh rules allow ([`Mesh::linked`]). Nothing if
    /// the link has gone since.
    pub fn mesh_join(&mut self, a: NodeId, b: NodeId, epoch: u64) {
        if !self.link(a, b).is_some_and(|l| l.epoch == epoch && !l.joined) {
            return;
        }
        self.unjoined -= 1;
        for (x, y) in [(a, b), (b, a)] {
            if let Some(l) = self.adj[x.0 as usize].get_mut(&y) {
                l.joined = true;
            }
        }
        if self.linked(a, b) && self.subscribed(a) && self.subscribed(b) {
            let params = self.gossip;
            self.mesh.linked(a, b, &params);
        }
    }

    /// The longest a message on the link may take beyond what its links' queues hold, µs.
    pub fn max_delay_us(&self, a: NodeId, b: NodeId) -> u64 {
        match self.link_latency_us(a, b) {
            Some((us, jitter)) => us + jitter.unwrap_or(0),
            None => self.model.bound_us(self.region(a), self.region(b)),
        }
    }

    fn link(&self, a: NodeId, b: NodeId) -> Option<Link> {
        self.adj.get(a.0 as usize).and_then(|m| m.get(&b)).copied()
    }

    pub fn linked(&self, a: NodeId, b: NodeId) -> bool {
        self.link(a, b).is_some_and(|l| !l.closing)
    }

    /// Does a link (open or closing) join `a` and `b`?
    pub fn has_link(&self, a: NodeId, b: NodeId) -> bool {
        self.link(a, b).is_some()
    }

    /// The open links of `a`, by peer, in id order.
    fn open_links(&self, a: NodeId) -> impl Iterator<Item = (NodeId, &Link)> + '_ {
        self.adj
            .get(a.0 as usize)
            .into_iter()
            .flat_map(|m| m.iter())
            .filter(|(_, l)| !l.closing)
            .map(|(&p, l)| (p, l))
    }

    /// Peers with an open link to `a`, in id order.
    pub fn peers_of(&self, a: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.open_links(a).map(|(p, _)| p)
    }

    /// Peers with a link (open or closing) to `a`, in id order.
    pub fn all_links_of(&self, a: NodeId) -> Vec<NodeId> {
        self.adj.get(a.0 as usize).map(|m| m.keys().copied().collect()).unwrap_or_default()
    }

    /// `a`'s gossip mesh peers, in id order.
    pub fn mesh_of(&self, a: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.mesh.of(a)
    }

    /// `a`'s gossip heartbeat: the mesh's upkeep among its linked, subscribed peers. A node
    /// that does not subscribe (the bootstrap role) keeps no mesh.
    pub fn heartbeat(&mut self, a: NodeId) {
        if !self.subscribed(a) {
            for p in self.mesh.of(a).collect::<Vec<_>>() {
                self.mesh.prune(a, p);
            }
            return;
        }
        // Only peers whose handshake ended: gossipsub knows no one else's subscriptions.
        let candidates: Vec<NodeId> =
            self.open_links(a).filter(|(p, l)| l.joined && self.subscribed(*p)).map(|(p, _)| p).collect();
        let params = self.gossip;
        self.mesh.heartbeat(a, &candidates, &params, &mut self.rng);
    }

    /// Has `peer` told `to` IDONTWANT for gossip `id` by now? It did when it first saw the id
    /// (a message longer than the threshold), and the control message has arrived if that was
    /// at least the link's longest latency ago.
    pub fn declined(&self, peer: NodeId, to: NodeId, id: &MsgId) -> bool {
        let Some(first_ms) = self.seen.first_seen_ms(peer.0 as usize, id) else {
            return false;
        };
        first_ms.saturating_mul(1_000).saturating_add(self.max_delay_us(peer, to)) <= self.now_us
    }

    /// `from` sends IDONTWANT to `to` (gossipsub 1.2): only its bytes are counted.
    pub fn send_idontwant(&mut self, from: NodeId, to: NodeId) {
        if self.linked(from, to) {
            let size = crate::mesh::IDONTWANT_WIRE_BYTES + self.model.overhead_bytes;
            self.counters.idontwant += 1;
            self.counters.add_bytes(from, to, size);
        }
    }

    /// Sends on the link from `from` to `to`; false if there is no open link (or the message
    /// was lost).
    pub fn send(&mut self, from: NodeId, to: NodeId, wire: Wire) -> bool {
        let Some(link) = self.link(from, to).filter(|l| !l.closing) else {
            return false;
        };
        let size = wire.len() as u64 + self.model.overhead_bytes;
        self.counters.sent(&wire, size);
        if matches!(wire, Wire::Gossip { .. }) && self.chance(self.model.loss) {
            self.record(Event::Lost { from, to, msg: Msg::of(&wire), cause: Cause::Loss });
            return false;
        }
        self.counters.add_bytes(from, to, size);
        let up_bps = self.up_bps(from);
        let discipline = self.model.uplink;
        if discipline != Uplink::Fifo && up_bps != 0 {
            let now = self.now_us;
            let cap_bps = if discipline == Uplink::Tcp { self.window_bps(from, to) } else { 0 };
            let Some(slot) = self.uplinks.get_mut(from.0 as usize) else { return false };
            let u = slot.get_or_insert_with(|| SharedUplink::new(up_bps, discipline));
            let next = u.push(now, to, size, cap_bps, (link.epoch, wire));
            let epoch = u.epoch;
            self.uplink_reschedule(from, epoch, next);
            return true;
        }
        let at = self.arrival_us(from, to, size);
        self.deliver_at(from, to, link.epoch, wire, at);
        true
    }

    /// Schedules the delivery of `wire` at `at` — unless, without a record of events, it is a
    /// copy of gossip that its receiver will already have by then: that copy took its
    /// bandwidth but is not delivered (the receiver would only drop it).
    fn deliver_at(&mut self, from: NodeId, to: NodeId, epoch: u64, wire: Wire, at: u64) {
        if let Wire::Gossip { id, .. } = &wire {
            if !self.keep_events && self.seen.holds(to.0 as usize, id, at / 1_000) {
                self.counters.elided += 1;
                return;
            }
        }
        self.schedule_us(at, Ev::Deliver { to, from, epoch, wire });
    }

    /// `node`'s shared uplink's tick: the messages that finished leaving by now are on
    /// their way (latency, then the receiver's download), the next tick is scheduled.
    pub fn uplink_tick(&mut self, node: NodeId, epoch: u64) {
        let now = self.now_us;
        let Some(u) = self.uplinks.get_mut(node.0 as usize).and_then(Option::as_mut) else { return };
        if u.epoch != epoch {
            return;
        }
        let (sent, next) = u.finished(now);
        let epoch = u.epoch;
        self.uplink_reschedule(node, epoch, next);
        for m in sent {
            let (link_epoch, wire) = m.item;
            let size = wire.len() as u64 + self.model.overhead_bytes;
            let at = self.landing_us(node, m.to, size, m.started_us, now);
            self.deliver_at(node, m.to, link_epoch, wire, at);
        }
    }

    /// Drops what `from`'s shared uplink still holds for `to` (their link went down).
    fn drop_uplink(&mut self, from: NodeId, to: NodeId) {
        let now = self.now_us;
        let Some(u) = self.uplinks.get_mut(from.0 as usize).and_then(Option::as_mut) else { return };
        let before = u.epoch;
        let next = u.drop_peer(now, to);
        let epoch = u.epoch;
        if epoch != before {
            self.uplink_reschedule(from, epoch, next);
        }
    }

    /// Schedules `node`'s uplink tick of `epoch` at its next end, if it has one.
    fn uplink_reschedule(&mut self, node: NodeId, epoch: u64, next: Option<u64>) {
        if let Some(at) = next {
            self.schedule_us(at.max(self.now_us), Ev::UplinkTick { node, epoch });
        }
    }

    /// The txids of `block`'s transactions but the coinbase, in block order, hashed with
    /// `kind`: computed once per block for all the nodes that price it. Pricing only: what a
    /// node accepts its chain checks itself. Only a body that matches its header's Merkle root
    /// (which commits to every transaction, witnesses included) is kept, so a forged body sent
    /// first under a real header does not set the real block's price; a forged body under a
    /// header already kept is priced as the block its header names (and fails its check).
    pub fn txids_of(&self, block: &Block, kind: HashKind) -> Arc<[Hash]> {
        let hash = block.header.hash(kind);
        if let Some(ids) = self.block_txids.borrow().get(&hash) {
            return ids.clone();
        }
        let ids: Arc<[Hash]> = block.txs.iter().skip(1).map(|t| t.txid(kind)).collect();
        if block.compute_merkle_root(kind) == block.header.merkle_root {
            let mut kept = self.block_txids.borrow_mut();
            if kept.len() >= TXIDS_KEPT {
                kept.clear();
            }
            kept.insert(hash, ids.clone());
        }
        ids
    }

    /// The most a connection from `from` to `to` carries under [`Uplink::Tcp`], bit/s: a
    /// window per round trip (the two mean latencies); 0 (no bound) on a link without latency.
    fn window_bps(&self, from: NodeId, to: NodeId) -> u64 {
        let rtt_us = self.mean_delay_us(from, to).saturating_add(self.mean_delay_us(to, from));
        if rtt_us == 0 {
            return 0;
        }
        (WINDOW_BYTES.saturating_mul(8_000_000) / rtt_us).max(1)
    }

    /// How long what `node` has queued, for `to` among others, takes at most to leave its
    /// uplink, µs.
    fn queued_us(&self, node: NodeId, to: NodeId) -> u64 {
        let i = node.0 as usize;
        match self.uplinks.get(i).and_then(Option::as_ref) {
            Some(u) if self.model.uplink != Uplink::Fifo => u.backlog_us(to),
            _ => self.hosts.get(i).map_or(0, |h| h.up_free.saturating_sub(self.now_us)),
        }
    }

    fn up_bps(&self, node: NodeId) -> u64 {
        self.model.regions.get(usize::from(self.region(node))).map_or(0, |r| r.up_bps)
    }

    /// When `size` bytes that began to leave `from` at `started` and had left by `left` finish
    /// arriving at `to`: after the latency, and no sooner than the receiver's download takes
    /// from the first byte's arrival.
    fn landing_us(&mut self, from: NodeId, to: NodeId, size: u64, started: u64, left: u64) -> u64 {
        let latency = self.delay_us(from, to);
        let down_bps = self.model.regions.get(usize::from(self.region(to))).map_or(0, |r| r.down_bps);
        let take = if down_bps == 0 { 0 } else { size.saturating_mul(8_000_000).div_ceil(down_bps) };
        left.saturating_add(latency).max(started.saturating_add(latency).saturating_add(take))
    }

    /// When `size` bytes sent now from `from` finish arriving at `to`: the sender's uplink
    /// carries its messages one after another at its bandwidth; the message travels the
    /// latency; the receiver takes it in no faster than its download bandwidth (the slower
    /// link sets the pace). Downlinks do not queue (`crate::net`).
    fn arrival_us(&mut self, from: NodeId, to: NodeId, size: u64) -> u64 {
        let up_bps = self.up_bps(from);
        let fi = from.0 as usize;
        let start = self.now_us.max(self.hosts[fi].up_free);
        let take = if up_bps == 0 { 0 } else { size.saturating_mul(8_000_000).div_ceil(up_bps) };
        let sent = start.saturating_add(take);
        if up_bps != 0 {
            self.hosts[fi].up_free = sent;
        }
        self.landing_us(from, to, size, start, sent)
    }

    /// A message sent on link epoch `epoch` arrives: true (and recorded as delivered) if that
    /// link is still up, else false (and recorded as lost with it).
    pub fn arrive(&mut self, from: NodeId, to: NodeId, epoch: u64, wire: &Wire) -> bool {
        let msg = Msg::of(wire);
        if self.link(from, to).is_some_and(|l| l.epoch == epoch) {
            self.record(Event::Delivered { from, to, msg });
            return true;
        }
        let cause = if self.cut.contains(&pair(from, to)) { Cause::Partition } else { Cause::Closed };
        self.record(Event::Lost { from, to, msg, cause });
        false
    }

    /// Would [`World::connect`] open a link between `a` and `b` now: two nodes, both up, not
    /// linked yet, not kept apart, neither refusing the other.
    pub fn may_link(&self, a: NodeId, b: NodeId) -> bool {
        let now = self.now();
        let refused = |x, y| self.refusals.get(&(x, y)).is_some_and(|until| now < *until);
        a != b
            && !self.has_link(a, b)
            && !self.cut.contains(&pair(a, b))
            && !refused(a, b)
            && !refused(b, a)
            && self.incarnation(a).is_some()
            && self.incarnation(b).is_some()
    }

    /// Opens a link if both are up, not kept apart, neither refuses the other and none exists;
    /// both machines learn of it at once.
    pub fn connect(&mut self, a: NodeId, b: NodeId) -> bool {
        if !self.may_link(a, b) {
            return false;
        }
        let (Some(ia), Some(ib)) = (self.incarnation(a), self.incarnation(b)) else { return false };
        let epoch = self.next_epoch;
        self.next_epoch += 1;
        let link = Link { epoch, closing: false, joined: false };
        self.unjoined += 1;
        self.adj[a.0 as usize].insert(b, link);
        self.adj[b.0 as usize].insert(a, link);
        // Gossipsub learns of the peer's subscriptions once the connection's handshakes are
        // done, so the nearest peers fill a mesh first.
        let rtt = self.mean_delay_us(a, b) + self.mean_delay_us(b, a);
        self.schedule_us(self.now_us + crate::mesh::JOIN_RTTS * rtt, Ev::MeshJoin { a, b, epoch });
        self.record(Event::Linked { a, b });
        // `a` dialled `b`.
        for (node, incarnation, peer, inbound) in [(a, ia, b, false), (b, ib, a, true)] {
            let input = Input::Connected { peer, addr: format!("sim/{peer}"), inbound };
            self.schedule_us(self.now_us, Ev::Input { node, incarnation, input });
        }
        true
    }

    /// Takes a link down now (messages in flight on it are lost); both machines learn of it.
    pub fn disconnect(&mut self, a: NodeId, b: NodeId) {
        let Some(link) = self.adj.get_mut(a.0 as usize).and_then(|m| m.remove(&b)) else {
            return;
        };
        if !link.joined {
            self.unjoined -= 1;
        }
        if let Some(m) = self.adj.get_mut(b.0 as usize) {
            m.remove(&a);
        }
        self.mesh.prune(a, b);
        self.drop_uplink(a, b);
        self.drop_uplink(b, a);
        self.record(Event::Unlinked { a, b });
        for (node, peer) in [(a, b), (b, a)] {
            if let Some(incarnation) = self.incarnation(node) {
                self.schedule_us(
                    self.now_us,
                    Ev::Input { node, incarnation, input: Input::Disconnected { peer } },
                );
            }
        }
    }

    /// `banner` bans `banned` until `until` (ms): nothing more is sent on their link, which
    /// goes down once what was already written on it arrived (as the node's network defers a
    /// ban until its answers are written).
    pub fn ban(&mut self, banner: NodeId, banned: NodeId, until: u64) {
        self.refusals.insert((banner, banned), until);
        self.record(Event::Ban { by: banner, peer: banned, until_ms: until });
        self.mesh.prune(banner, banned);
        let queued = self.queued_us(banner, banned);
        let after = self.max_delay_us(banner, banned) + queued + 1_000;
        let Some(link) = self.link(banner, banned).filter(|l| !l.closing) else { return };
        for (x, y) in [(banner, banned), (banned, banner)] {
            if let Some(l) = self.adj[x.0 as usize].get_mut(&y) {
                l.closing = true;
            }
        }
        let at = self.now_us + after;
        self.schedule_us(at, Ev::Cut { a: banner, b: banned, epoch: link.epoch });
    }

    /// Is the link between `a` and `b` still the one of `epoch`?
    pub fn link_epoch_is(&self, a: NodeId, b: NodeId, epoch: u64) -> bool {
        self.link(a, b).is_some_and(|l| l.epoch == epoch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{Jitter, Region};
    use scalechain_p2p::msg::{MsgId, Topic};
    use std::sync::Arc;

    /// Two regions 10 ms and 200 ms apart (one way), 8 Mbit/s each way per node; nodes 0 and
    /// 1 in the near region, node 2 in the far one, all linked and up.
    fn world() -> World {
        world_with(crate::Uplink::Fifo)
    }

    fn world_with(uplink: crate::Uplink) -> World {
        let region =
            |name: &str| Region { name: name.into(), share: 1.0, up_bps: 8_000_000, down_bps: 8_000_000 };
        let model = NetModel {
            name: "test".into(),
            regions: vec![region("near"), region("far")],
            latency_us: vec![vec![10_000, 200_000], vec![200_000, 10_000]],
            jitter: Jitter::None,
            loss: 0.0,
            overhead_bytes: 0,
            uplink,
        };
        let mut w = World::new(1, model, GossipParams::node(), 1_000, true);
        for (i, region) in [0u16, 0, 1].into_iter().enumerate() {
            w.add_host(NodeId(i as u32), region);
            w.up[i] = Some(1);
        }
        assert!(
            w.connect(NodeId(0), NodeId(1))
                && w.connect(NodeId(2), NodeId(1))
                && w.connect(NodeId(0), NodeId(2))
        );
        while w.pop(w.now_us).is_some() {}
        w
    }

    fn gossip(n: usize, tag: u8) -> Wire {
        Wire::Gossip { topic: Topic::Txs, id: MsgId([tag; 20]), data: Arc::from(vec![0u8; n]) }
    }

    /// The deliveries due, in order: (µs after `t0`, from, to).
    fn deliveries(w: &mut World, t0: u64) -> Vec<(u64, u32, u32)> {
        let mut out = Vec::new();
        while let Some(ev) = w.pop(u64::MAX) {
            match ev {
                Ev::Deliver { to, from, .. } => out.push((w.now_us - t0, from.0, to.0)),
                Ev::UplinkTick { node, epoch } => w.uplink_tick(node, epoch),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn a_node_grafts_its_nearest_peers_first_once_their_handshakes_end() {
        let mut w = world();
        // Node 0 (near) dials ten far peers, then ten near ones, all at once; it aims at a mesh of 8.
        for i in 3..23u32 {
            w.add_host(NodeId(i), if i < 13 { 1 } else { 0 });
            w.up[i as usize] = Some(1);
        }
        w.subscribers.iter_mut().for_each(|s| *s = true);
        let t0 = w.now_us;
        for i in 3..23u32 {
            assert!(w.connect(NodeId(0), NodeId(i)));
        }
        w.heartbeat(NodeId(0));
        assert_eq!(
            w.mesh_of(NodeId(0)).count(),
            0,
            "no graft, not even at a heartbeat, before a handshake ends"
        );
        let mut joined = Vec::new();
        while let Some(ev) = w.pop(u64::MAX) {
            if let Ev::MeshJoin { a, b, epoch } = ev {
                if a == NodeId(0) && b.0 >= 3 {
                    joined.push((w.now_us - t0, b.0));
                }
                w.mesh_join(a, b, epoch);
            }
        }
        // Three round trips: 60 ms to a near peer, 1.2 s to a far one.
        assert_eq!(joined.len(), 20);
        assert!(joined.iter().all(|&(at, b)| at == if b < 13 { 1_200_000 } else { 60_000 }), "{joined:?}");
        let mesh: Vec<u32> = w.mesh_of(NodeId(0)).map(|n| n.0).collect();
        assert_eq!(mesh.len(), GossipParams::node().d);
        assert!(mesh.iter().all(|&b| b >= 13 || b == 1), "only near peers: {mesh:?}");
    }

    #[test]
    fn an_uplink_sends_one_message_after_another() {
        let mut w = world();
        let t0 = w.now_us;
        // 1 Mbit to each of two peers over 8 Mbit/s: 125 ms each, the second after the first.
        assert!(w.send(NodeId(0), NodeId(1), gossip(125_000, 1)));
        assert!(w.send(NodeId(0), NodeId(2), gossip(125_000, 1)));
        assert_eq!(deliveries(&mut w, t0), [(125_000 + 10_000, 0, 1), (250_000 + 200_000, 0, 2)]);
    }

    #[test]
    fn a_fair_uplink_shares_its_bandwidth_among_peers() {
        let mut w = world_with(crate::Uplink::Fair);
        let t0 = w.now_us;
        // The same two sends: each peer gets half the bandwidth, so both copies take 250 ms
        // to leave, and a third to node 1 waits behind its first (one connection, in order).
        assert!(w.send(NodeId(0), NodeId(1), gossip(125_000, 1)));
        assert!(w.send(NodeId(0), NodeId(2), gossip(125_000, 1)));
        assert!(w.send(NodeId(0), NodeId(1), gossip(125_000, 2)));
        assert_eq!(
            deliveries(&mut w, t0),
            [(250_000 + 10_000, 0, 1), (375_000 + 10_000, 0, 1), (250_000 + 200_000, 0, 2)]
        );
        // A link that goes down takes its queue with it: the other peer gets the whole uplink.
        let t1 = w.now_us;
        assert!(w.send(NodeId(0), NodeId(1), gossip(125_000, 3)));
        assert!(w.send(NodeId(0), NodeId(2), gossip(125_000, 4)));
        w.disconnect(NodeId(0), NodeId(1));
        assert_eq!(deliveries(&mut w, t1), [(125_000 + 200_000, 0, 2)]);
    }

    #[test]
    fn a_tcp_uplink_sends_in_order_but_a_far_peer_at_a_window_per_round_trip() {
        let mut w = world_with(crate::Uplink::Tcp);
        let t0 = w.now_us;
        // Node 2 is 400 ms away and back: its connection carries 174,760 bytes per 400 ms
        // (3,495,200 bit/s) though written first; node 1 (20 ms) takes the other 4,504,800
        // bit/s, so its 125,000 bytes leave after 221,986 µs, and node 2's after 286,107 µs
        // (then the latencies, 10 and 200 ms).
        assert!(w.send(NodeId(0), NodeId(2), gossip(125_000, 1)));
        assert!(w.send(NodeId(0), NodeId(1), gossip(125_000, 1)));
        assert_eq!(deliveries(&mut w, t0), [(221_986 + 10_000, 0, 1), (286_107 + 200_000, 0, 2)]);
        // Under the fifo uplink node 2's copy would have left first, at 125 ms.
        let mut f = world();
        let t0 = f.now_us;
        assert!(f.send(NodeId(0), NodeId(2), gossip(125_000, 1)));
        assert!(f.send(NodeId(0), NodeId(1), gossip(125_000, 1)));
        assert_eq!(deliveries(&mut f, t0), [(250_000 + 10_000, 0, 1), (125_000 + 200_000, 0, 2)]);
    }

    #[test]
    fn a_forged_body_does_not_set_the_txids_of_the_block_its_header_names() {
        use scalechain_types::block::{Header, Target};
        use scalechain_types::tx::TxKind;
        use scalechain_types::{Block, Tx};
        let kind = HashKind::Sha256;
        let tx =
            |n: u8| Tx { version: 1, kind: TxKind::TRANSFER, inputs: vec![], outputs: vec![], data: vec![n] };
        let txs = vec![tx(0), tx(1), tx(2)];
        let header = Header {
            version: 1,
            height: 1,
            prev_hash: Hash::ZERO,
            merkle_root: scalechain_types::merkle::root_of_txs(kind, &txs),
            time: 0,
            target: Target(Hash([0xff; 32])),
            nonce: 0,
        };
        let real = Block { header, txs: txs.clone() };
        let forged = Block { header, txs: vec![tx(0), tx(9)] };
        let ids = |b: &Block| b.txs.iter().skip(1).map(|t| t.txid(kind)).collect::<Vec<_>>();
        let w = world();
        // The forged body comes first: priced by its own txids, and not kept.
        assert_eq!(w.txids_of(&forged, kind).to_vec(), ids(&forged));
        assert_eq!(w.txids_of(&real, kind).to_vec(), ids(&real));
        // The real one was kept: a forged body under its header is priced as the real block.
        assert_eq!(w.txids_of(&forged, kind).to_vec(), ids(&real));
    }

    #[test]
    fn a_slow_message_does_not_hold_up_a_near_one_at_the_receiver() {
        let mut w = world();
        let t0 = w.now_us;
        // From far away first, then from next door: the near one comes first, unhindered.
        assert!(w.send(NodeId(2), NodeId(1), gossip(1_000, 1)));
        assert!(w.send(NodeId(0), NodeId(1), gossip(1_000, 2)));
        assert_eq!(deliveries(&mut w, t0), [(1_000 + 10_000, 0, 1), (1_000 + 200_000, 2, 1)]);
    }

    #[test]
    fn the_calendar_pops_in_time_and_schedule_order_across_buckets() {
        let mut w = world();
        let t0 = w.now_us;
        for (at, tag) in [(5_500u64, 3u32), (1_200, 1), (5_500, 4), (900, 0), (3_000_000, 5)] {
            w.schedule_us(t0 + at, Ev::Tick { node: NodeId(tag), incarnation: 0 });
        }
        let mut order = Vec::new();
        // Up to 5 ms: the bucket of 5.5 ms is loaded, its events not yet due.
        while let Some(ev) = w.pop(t0 + 5_000) {
            if let Ev::Tick { node, .. } = ev {
                order.push(node.0);
            }
        }
        // An event scheduled into an earlier bucket after a later one was loaded still comes first.
        w.schedule_us(t0 + 4_000, Ev::Tick { node: NodeId(2), incarnation: 0 });
        while let Some(ev) = w.pop(u64::MAX) {
            if let Ev::Tick { node, .. } = ev {
                order.push(node.0);
            }
        }
        assert_eq!(order, [0, 1, 2, 3, 4, 5]);
        assert_eq!(w.queued(), 0);
    }
}
