//! A simulated node: the production protocol machine and replica, and the simulator's stand-ins
//! for what the node's reactor does around them (gossipsub's duplicate filter, mesh forwarding
//! and flood publishing, the request-response ids, the pipeline's buffer, the block worker's
//! queue, the miner), with the time its work takes ([`WorkModel`]).
//!
//! Work and time: with [`WorkModel::Fixed`] a verification round or a block waits a fixed time
//! and its effects follow at once. With [`WorkModel::Modelled`] the node is a machine of its own
//! with `cores` cores: a round or a block starts when the node's CPU is free, its effect on the
//! replica happens when it starts, and what the machine learns of it (the verdicts, and so the
//! relay) comes when the cost model says the work ends; rounds and blocks queue on one CPU, as
//! the node's pipeline and block worker share its cores.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use scalechain_chain::MemStore;
use scalechain_mempool::TxVerdict;
use scalechain_p2p::msg::{block_payload, message_id, MsgId, Role, Topic};
use scalechain_p2p::protocol::{
    block_txs_response, blocks_response, BlockOrigin, BlockVerdict, Event as ProtocolEvent, Input, Output,
    Protocol, TxOrigin, TxsDone, Verdict, BLOCKS_RESPONSE_BYTES,
};
use scalechain_replica::{solve, Replica, TxsRound};
use scalechain_types::codec::Encode;
use scalechain_types::{Block, Lock, Tx};

use crate::cost::{CostModel, Work};
use crate::event::Event;
use crate::observe::Mined;
use crate::wire::{NodeId, Wire};
use crate::world::{Ev, Penalty, World};

/// How long a simulated node's work takes.
#[derive(Clone, Debug)]
pub enum WorkModel {
    /// A verification round or a block takes this long, ms, whatever it holds.
    Fixed {
        /// The time, ms.
        ms: u64,
    },
    /// Each node is a machine of `cores` cores whose work costs what the model says.
    Modelled {
        /// The per-operation costs.
        costs: Arc<CostModel>,
        /// Cores per node.
        cores: u32,
    },
    /// Every node runs on one machine of `host_cores` cores, shared as the kernel shares
    /// them between processes ([`crate::cpu`]); a node's verification runs `node_threads`
    /// threads. A node does one piece of work at a time; what it learns of the work comes
    /// when the shared machine has run it.
    SharedHost {
        /// The per-operation costs.
        costs: Arc<CostModel>,
        /// Cores of the machine.
        host_cores: u32,
        /// Threads of a node's parallel work (the node's verification threads).
        node_threads: u32,
    },
}

/// What a node's work on a shared machine reports when it ends.
enum Held {
    /// A tracked transaction was admitted.
    Tx(scalechain_types::Hash),
    /// A block was accepted.
    Block(scalechain_types::Hash),
}

/// An honest node: production logic plus the reactor's duties.
pub(crate) struct Honest {
    pub id: NodeId,
    pub role: Role,
    pub incarnation: u64,
    pub protocol: Protocol<NodeId>,
    pub replica: Replica<MemStore>,
    /// Where this node's block rewards go, if it mines.
    pub reward: Option<Lock>,
    pub mining: bool,
    /// A [`crate::world::Ev::Mine`] of this node is in the queue (with the per-miner clock):
    /// turning mining off and on again must not queue a second.
    pub mine_pending: bool,
    pub max_block_txs: usize,
    /// Publish mined blocks in compact form (`p2p.compact_blocks`).
    pub compact_blocks: bool,
    pub work: WorkModel,
    /// When the node's CPU is free, µs (modelled work only).
    cpu_free_us: u64,
    /// Gossip waiting for the machine's verdict: its topic, payload and source.
    pending: BTreeMap<MsgId, (Topic, Arc<[u8]>, NodeId)>,
    /// Inbound requests by the id given to the machine: requester and its tag.
    inbound: BTreeMap<u64, (NodeId, u64)>,
    next_inbound: u64,
    pipeline: Vec<(Vec<Tx>, TxOrigin<NodeId>)>,
    verify_due: bool,
    blocks: Vec<(Block, BlockOrigin<NodeId>)>,
    blocks_due: bool,
    /// Shared machine only: a piece of this node's work is running.
    busy: bool,
    /// Shared machine only: what the running work reports when it ends, in order.
    held_inputs: Vec<Input<NodeId>>,
    held_arrivals: Vec<Held>,
}

impl Honest {
    pub fn new(
        id: NodeId,
        role: Role,
        incarnation: u64,
        protocol: Protocol<NodeId>,
        replica: Replica<MemStore>,
    ) -> Honest {
        Honest {
            id,
            role,
            incarnation,
            protocol,
            replica,
            reward: None,
            mining: false,
            mine_pending: false,
            max_block_txs: 10_000,
            compact_blocks: true,
            work: WorkModel::Fixed { ms: 1 },
            cpu_free_us: 0,
            pending: BTreeMap::new(),
            inbound: BTreeMap::new(),
            next_inbound: 0,
            pipeline: Vec::new(),
            verify_due: false,
            blocks: Vec::new(),
            blocks_due: false,
            busy: false,
            held_inputs: Vec::new(),
            held_arrivals: Vec::new(),
        }
    }

    /// The costs and threads of a node on a shared machine, if it is on one.
    fn shared(&self) -> Option<(Arc<CostModel>, u32)> {
        match &self.work {
            WorkModel::SharedHost { costs, node_threads, .. } => Some((costs.clone(), *node_threads)),
            _ => None,
        }
    }

    /// Starts work of `phases` on the shared machine; `inputs` and `arrivals` are reported
    /// when it ends ([`Honest::work_done`]).
    fn run_shared(
        &mut self,
        phases: [(u64, u32); 2],
        inputs: Vec<Input<NodeId>>,
        arrivals: Vec<Held>,
        w: &mut World,
    ) {
        self.busy = true;
        self.held_inputs = inputs;
        self.held_arrivals = arrivals;
        w.run_on_cpu(self.id, self.incarnation, &phases);
    }

    /// The shared machine ran this node's work: its arrivals are noted now, its verdicts go to
    /// the machine, and the next work waiting starts (blocks first).
    pub fn work_done(&mut self, w: &mut World) {
        self.busy = false;
        let now = w.now_us;
        for h in std::mem::take(&mut self.held_arrivals) {
            match h {
                Held::Tx(txid) => w.arrivals.admitted(self.id, &txid, now),
                Held::Block(hash) => w.arrivals.block(self.id, hash, now),
            }
        }
        for input in std::mem::take(&mut self.held_inputs) {
            self.step(input, w);
        }
        if self.busy {
            return;
        }
        if self.blocks_due {
            w.schedule_us(now, Ev::Blocks { node: self.id, incarnation: self.incarnation });
        }
        if self.verify_due {
            w.schedule_us(now, Ev::Verify { node: self.id, incarnation: self.incarnation });
        }
    }

    /// Remembers a gossip id seen now (in the world's duplicate cache of this node); false if
    /// it was seen already.
    fn remember(&self, id: MsgId, w: &mut World) -> bool {
        w.remember(self.id, id)
    }

    /// Steps the machine at the world's clock and carries out its outputs.
    pub fn step(&mut self, input: Input<NodeId>, w: &mut World) {
        self.protocol.step(w.now(), input, &self.replica);
        let outputs: Vec<Output<NodeId>> = self.protocol.drain().collect();
        for o in outputs {
            self.carry(o, w);
        }
    }

    /// A message arrived on an open link.
    pub fn receive(&mut self, from: NodeId, wire: Wire, w: &mut World) {
        match wire {
            Wire::Gossip { topic, id, data } => {
                if !self.remember(id, w) {
                    return;
                }
                if self.announces(&data, w) {
                    // Gossipsub 1.2: IDONTWANT to the other mesh peers on first receipt.
                    let to: Vec<NodeId> =
                        w.mesh_of(self.id).filter(|&p| p != from && w.subscribed(p)).collect();
                    for peer in to {
                        w.send_idontwant(self.id, peer);
                    }
                }
                let bytes = data.to_vec();
                self.pending.insert(id, (topic, data, from));
                self.step(Input::Gossip { topic, id, source: from, data: bytes }, w);
            }
            Wire::Request { tag, data } => {
                let id = self.next_inbound;
                self.next_inbound += 1;
                self.inbound.insert(id, (from, tag));
                self.step(Input::Request { peer: from, id, data }, w);
            }
            Wire::Response { tag, data } => self.step(Input::Response { peer: from, tag, data }, w),
        }
    }

    fn answer(&mut self, id: u64, data: Vec<u8>, w: &mut World) {
        if let Some((to, tag)) = self.inbound.remove(&id) {
            w.send(self.id, to, Wire::Response { tag, data });
        }
    }

    /// Is `data` long enough that gossipsub announces it with IDONTWANT?
    fn announces(&self, data: &[u8], w: &World) -> bool {
        w.gossip.idontwant_bytes.is_some_and(|t| data.len() > t)
    }

    /// Forwards gossip to the node's subscribed mesh peers but `from` (gossipsub forwards
    /// along its mesh), and but those that said IDONTWANT for it.
    fn forward(&mut self, topic: Topic, id: MsgId, data: &Arc<[u8]>, from: NodeId, w: &mut World) {
        let big = self.announces(data, w);
        let to: Vec<NodeId> = w.mesh_of(self.id).filter(|&p| p != from && w.subscribed(p)).collect();
        for peer in to {
            if big && w.declined(peer, self.id, &id) {
                w.counters.declined += 1;
                continue;
            }
            w.send(self.id, peer, Wire::Gossip { topic, id, data: data.clone() });
        }
    }

    /// Publishes to every subscribed peer with an open link (gossipsub's flood publishing).
    fn publish(&mut self, topic: Topic, id: MsgId, data: Arc<[u8]>, w: &mut World) {
        let to: Vec<NodeId> = w.peers_of(self.id).filter(|&p| w.subscribed(p)).collect();
        for peer in to {
            w.send(self.id, peer, Wire::Gossip { topic, id, data: data.clone() });
        }
    }

    fn carry(&mut self, o: Output<NodeId>, w: &mut World) {
        match o {
            Output::Request { peer, tag, request } => {
                if !w.send(self.id, peer, Wire::Request { tag, data: request.encode() }) {
                    let input = Input::RequestFailed { peer, tag, error: "not connected".into() };
                    w.schedule_us(
                        w.now_us,
                        Ev::Input { node: self.id, incarnation: self.incarnation, input },
                    );
                }
            }
            Output::Respond { id, response } => self.answer(id, response.encode(), w),
            Output::ServeBlocks { id, hashes } => {
                let response = {
                    let c = self.replica.chain.read();
                    blocks_response(&hashes, BLOCKS_RESPONSE_BYTES, |h| c.block(h).ok().flatten())
                };
                self.answer(id, response.encode(), w);
            }
            Output::ServeBlockTxs { id, block, indexes } => {
                let response = {
                    let c = self.replica.chain.read();
                    let b = c.block(&block).ok().flatten();
                    block_txs_response(b.as_ref(), &indexes, BLOCKS_RESPONSE_BYTES)
                };
                self.answer(id, response.encode(), w);
            }
            Output::Validate { id, verdict, .. } => {
                // Gossipsub's validate-then-forward: only an accepted message goes on.
                if let Some((topic, data, from)) = self.pending.remove(&id) {
                    if verdict == Verdict::Accept {
                        self.forward(topic, id, &data, from, w);
                    }
                }
            }
            Output::Publish { topic, data } => {
                // Gossipsub refuses to publish a payload whose id is in its duplicate cache.
                let id = message_id(&data);
                if self.remember(id, w) {
                    self.publish(topic, id, data.into(), w);
                } else {
                    w.record(Event::DuplicatePublish { node: self.id, id });
                }
            }
            Output::SubmitBlock { block, origin } => {
                self.blocks.push((block, origin));
                if !self.blocks_due {
                    self.blocks_due = true;
                    let ev = Ev::Blocks { node: self.id, incarnation: self.incarnation };
                    w.schedule_us(self.work_starts_us(w), ev);
                }
            }
            Output::SubmitTxs { txs, origin } => self.submit(txs, origin, w),
            Output::Ban { peer, until_ms } => w.ban(self.id, peer, until_ms),
            Output::Unban { peer } => {
                w.refusals.remove(&(self.id, peer));
            }
            Output::Disconnect { peer, reason } => {
                w.record(Event::Disconnects { node: self.id, peer, reason });
                w.disconnect(self.id, peer);
            }
            Output::Event(e) => {
                match e {
                    ProtocolEvent::Penalised { peer, offence, .. } => {
                        w.penalties.push(Penalty { at_ms: w.now(), by: self.id, peer, offence })
                    }
                    ProtocolEvent::Disconnected { peer } => {
                        self.replica.forget_orphans_from(u64::from(peer.0));
                    }
                    _ => {}
                }
                w.record(Event::Protocol { node: self.id, event: e });
            }
        }
    }

    /// When work taken now starts: after the fixed wait, or when the CPU is free.
    fn work_starts_us(&self, w: &World) -> u64 {
        match self.work {
            WorkModel::Fixed { ms } => w.now_us + ms * 1_000,
            WorkModel::Modelled { .. } => w.now_us.max(self.cpu_free_us),
            WorkModel::SharedHost { .. } => w.now_us,
        }
    }

    /// Charges `us` of CPU from now; the time the work ends, µs.
    fn charge(&mut self, us: u64, w: &World) -> u64 {
        self.cpu_free_us = w.now_us.max(self.cpu_free_us) + us;
        self.cpu_free_us
    }

    /// Steps the machine with `input` when work that started now ends: at once for fixed
    /// work, after `cost_us` for modelled work.
    fn finish(&mut self, input: Input<NodeId>, cost_us: Option<u64>, w: &mut World) {
        match cost_us {
            None => self.step(input, w),
            Some(us) => {
                let at = self.charge(us, w);
                w.schedule_us(at, Ev::Input { node: self.id, incarnation: self.incarnation, input });
            }
        }
    }

    /// A batch enters the pipeline's buffer; a verification round is due.
    pub fn submit(&mut self, txs: Vec<Tx>, origin: TxOrigin<NodeId>, w: &mut World) {
        self.pipeline.push((txs, origin));
        if !self.verify_due {
            self.verify_due = true;
            let at = self.work_starts_us(w);
            w.schedule_us(at, Ev::Verify { node: self.id, incarnation: self.incarnation });
        }
    }

    /// The verify stage: everything buffered in one admission call, then the verdicts to the
    /// machine as the node's pipeline gives them (`TxsRound`: gossip per batch, what local
    /// submissions brought as one relay, the released orphans as another).
    pub fn verify(&mut self, w: &mut World) {
        let shared = self.shared();
        if shared.is_some() && (self.busy || self.pipeline.is_empty()) {
            // Its turn comes when the running work ends (or there is nothing to do).
            self.verify_due &= !self.pipeline.is_empty();
            return;
        }
        self.verify_due = false;
        let items = std::mem::take(&mut self.pipeline);
        let (batches, origins): (Vec<Vec<Tx>>, Vec<TxOrigin<NodeId>>) = items.into_iter().unzip();
        let n: usize = batches.iter().map(Vec::len).sum();
        let work = work_of(batches.iter().flatten(), |_| true);
        let cost = self.cost(|c, cores| c.admission_us(work, cores));
        let tagged = batches.into_iter().zip(origins.iter().map(orphan_source)).collect();
        let admission = self.replica.admit_batches(tagged, w.now());
        let mut round = TxsRound::with_capacity(origins.len());
        let mut admitted = admission.released.len();
        let orphans: usize =
            admission.batches.iter().map(|b| b.verdicts.iter().filter(|v| v.is_orphan()).count()).sum();
        let h = self.replica.params.hash;
        let following = w.arrivals.following();
        let done_at = w.now_us.max(self.cpu_free_us) + cost.unwrap_or(0);
        let mut held = Vec::new();
        for (origin, o) in origins.into_iter().zip(admission.batches) {
            admitted += o.admitted.len();
            let local = origin == TxOrigin::Local;
            let (txids, verdicts) = round.push(origin, o);
            if local || following {
                for (txid, v) in txids.iter().zip(&verdicts) {
                    if matches!(v, TxVerdict::Admitted(_)) {
                        if local {
                            w.accepted.insert(*txid);
                        }
                        match shared {
                            Some(_) => held.push(Held::Tx(*txid)),
                            None => w.arrivals.admitted(self.id, txid, done_at),
                        }
                    }
                }
            }
        }
        if following {
            for t in &admission.released {
                match shared {
                    Some(_) => held.push(Held::Tx(t.txid(h))),
                    None => w.arrivals.admitted(self.id, &t.txid(h), done_at),
                }
            }
        }
        let round = round.finish(admission.released);
        w.record(Event::Verified { node: self.id, offered: n, admitted, orphans });
        if let Some((costs, threads)) = shared {
            let phases = costs.admission_phases(work, threads);
            let inputs = if round.is_empty() { Vec::new() } else { vec![Input::TxsDone(round)] };
            self.run_shared(phases, inputs, held, w);
        } else if !round.is_empty() {
            self.finish(Input::TxsDone(round), cost, w);
        } else if let Some(us) = cost {
            self.charge(us, w);
        }
    }

    /// What work costs on this node, µs, if its work is modelled.
    fn cost(&self, f: impl FnOnce(&CostModel, u32) -> u64) -> Option<u64> {
        match &self.work {
            WorkModel::Fixed { .. } | WorkModel::SharedHost { .. } => None,
            WorkModel::Modelled { costs, cores } => Some(f(costs, *cores)),
        }
    }

    /// The block worker: every queued block, in order, each verdict to the machine.
    pub fn accept_blocks(&mut self, w: &mut World) {
        if self.shared().is_some() {
            return self.accept_one_block(w);
        }
        self.blocks_due = false;
        for (block, origin) in std::mem::take(&mut self.blocks) {
            let cost = self.cost(|c, cores| c.block_us(self.block_work(&block, w), cores));
            let (hash, height, verdict, released) = self.accept(block, w);
            if matches!(verdict, BlockVerdict::Connected | BlockVerdict::SideBranch) {
                let done_at = w.now_us.max(self.cpu_free_us) + cost.unwrap_or(0);
                w.arrivals.block(self.id, hash, done_at);
            }
            self.finish(Input::BlockDone { hash, height, origin, verdict }, cost, w);
            if !released.is_empty() {
                w.record(Event::Released { node: self.id, orphans: released.len() });
                let done = TxsDone::relay(TxOrigin::Released, released);
                self.finish(Input::TxsDone(vec![done]), cost.map(|_| 0), w);
            }
        }
    }

    /// The work of accepting `block`: its transactions and bytes, and the signatures of those
    /// this node had not admitted (the others are in its signature cache: not paid again).
    fn block_work(&self, block: &Block, w: &World) -> Work {
        let pool = self.replica.mempool.snapshot();
        let h = self.replica.params.hash;
        // The block's transactions but the coinbase, in order, with their txids.
        let txids = w.txids_of(block, h);
        let mut ids = txids.iter();
        let mut work =
            work_of(block.txs.iter().skip(1), |_| ids.next().is_none_or(|id| pool.get(id).is_none()));
        work.bytes = block.encoded_len() as u64;
        work
    }

    /// Accepts `block` on the replica now and records it: its hash, height, verdict and the
    /// orphans it released.
    fn accept(
        &mut self,
        block: Block,
        w: &mut World,
    ) -> (scalechain_types::Hash, u64, BlockVerdict, Vec<Arc<Tx>>) {
        let mut o = self.replica.accept_block(block, w.now());
        w.disconnected_blocks += o.disconnected as u64;
        w.readmitted += o.reorg.returned.iter().filter(|v| v.is_ok()).count() as u64;
        let verdict = o.verdict();
        let released = std::mem::take(&mut o.released);
        w.record(Event::Block {
            node: self.id,
            height: o.height,
            hash: o.hash,
            verdict: verdict.clone(),
            new_tip: o.new_tip.map(|t| t.0),
        });
        (o.hash, o.height, verdict, released)
    }

    /// The block worker on a shared machine: the first queued block, its verdict to the
    /// machine when the shared machine has run its work; the rest wait their turn.
    fn accept_one_block(&mut self, w: &mut World) {
        let Some((costs, threads)) = self.shared() else { return };
        if self.busy || self.blocks.is_empty() {
            self.blocks_due &= !self.blocks.is_empty();
            return;
        }
        let (block, origin) = self.blocks.remove(0);
        self.blocks_due = !self.blocks.is_empty();
        let work = self.block_work(&block, w);
        let (hash, height, verdict, released) = self.accept(block, w);
        let mut held = Vec::new();
        if matches!(verdict, BlockVerdict::Connected | BlockVerdict::SideBranch) {
            held.push(Held::Block(hash));
        }
        let mut inputs = vec![Input::BlockDone { hash, height, origin, verdict }];
        if !released.is_empty() {
            w.record(Event::Released { node: self.id, orphans: released.len() });
            inputs.push(Input::TxsDone(vec![TxsDone::relay(TxOrigin::Released, released)]));
        }
        self.run_shared(costs.block_phases(work, threads), inputs, held, w);
    }

    /// The miner: a block on the tip, solved on this thread, to the block worker.
    pub fn mine(&mut self, w: &mut World) {
        let Some(reward) = self.reward else { return };
        let mut block = self.replica.block_template(reward, self.max_block_txs, w.now());
        if !solve(&mut block.header, self.replica.params.hash, 1, &AtomicBool::new(false)) {
            return;
        }
        w.record(Event::Mined { node: self.id, height: block.header.height, txs: block.txs.len() - 1 });
        w.arrivals.mined(Mined {
            hash: block.hash(self.replica.params.hash),
            height: block.header.height,
            miner: self.id,
            at_us: w.now_us,
            txs: block.txs.len() - 1,
            bytes: block.encoded_len(),
        });
        let (topic, payload) = block_payload(&block, self.replica.params.hash, self.compact_blocks);
        self.carry(Output::SubmitBlock { block, origin: BlockOrigin::Local { topic, payload } }, w);
    }
}

/// The work of judging `txs`: their count and bytes, and the signatures of those
/// `unchecked` says are not in the signature cache.
fn work_of<'a>(txs: impl Iterator<Item = &'a Tx>, mut unchecked: impl FnMut(&Tx) -> bool) -> Work {
    let mut w = Work::default();
    for t in txs {
        w.txs += 1;
        w.bytes += t.encoded_len() as u64;
        if unchecked(t) {
            w.sigs += t.inputs.len() as u64;
        }
    }
    w
}

/// The orphan pool's share a batch counts against: the peer it came from, or the local API.
fn orphan_source(origin: &TxOrigin<NodeId>) -> Option<u64> {
    match origin {
        TxOrigin::Gossip { source, .. } | TxOrigin::Pool(source) => Some(u64::from(source.0)),
        TxOrigin::Local | TxOrigin::Released => None,
    }
}

/// A node the test scripts: it runs no protocol, records what it receives, and sends what it is
/// told to (junk included).
#[derive(Default)]
pub(crate) struct Scripted {
    pub received: Vec<(u64, NodeId, Wire)>,
    pub next_tag: u64,
}
