//! A simulated node: the production protocol machine and replica, and the simulator's stand-ins
//! for what the node's reactor does around them (gossipsub's duplicate filter and forwarding,
//! the request-response ids, the pipeline's buffer, the block worker's queue, the miner).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::atomic::AtomicBool;

use scalechain_chain::MemStore;
use scalechain_p2p::msg::{block_payload, message_id, MsgId, Role, Topic};
use scalechain_p2p::protocol::{
    block_txs_response, blocks_response, BlockOrigin, Event as ProtocolEvent, Input, Output, Protocol,
    TxOrigin, TxsDone, Verdict, BLOCKS_RESPONSE_BYTES,
};
use scalechain_replica::{solve, Replica, TxsRound};
use scalechain_types::codec::Encode;
use scalechain_types::{Block, Lock, Tx};

use crate::event::Event;
use crate::wire::{NodeId, Wire};
use crate::world::{Ev, Penalty, World};

/// Gossip ids a node remembers (gossipsub's duplicate cache).
const SEEN: usize = 1 << 16;

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
    pub max_block_txs: usize,
    /// Publish mined blocks in compact form (`p2p.compact_blocks`).
    pub compact_blocks: bool,
    pub work_ms: u64,
    seen: BTreeSet<MsgId>,
    seen_order: VecDeque<MsgId>,
    /// Gossip waiting for the machine's verdict: its topic, payload and source.
    pending: BTreeMap<MsgId, (Topic, Vec<u8>, NodeId)>,
    /// Inbound requests by the id given to the machine: requester and its tag.
    inbound: BTreeMap<u64, (NodeId, u64)>,
    next_inbound: u64,
    pipeline: Vec<(Vec<Tx>, TxOrigin<NodeId>)>,
    verify_due: bool,
    blocks: Vec<(Block, BlockOrigin<NodeId>)>,
    blocks_due: bool,
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
            max_block_txs: 10_000,
            compact_blocks: true,
            work_ms: 1,
            seen: BTreeSet::new(),
            seen_order: VecDeque::new(),
            pending: BTreeMap::new(),
            inbound: BTreeMap::new(),
            next_inbound: 0,
            pipeline: Vec::new(),
            verify_due: false,
            blocks: Vec::new(),
            blocks_due: false,
        }
    }

    fn remember(&mut self, id: MsgId) -> bool {
        if !self.seen.insert(id) {
            return false;
        }
        self.seen_order.push_back(id);
        if self.seen_order.len() > SEEN {
            if let Some(old) = self.seen_order.pop_front() {
                self.seen.remove(&old);
            }
        }
        true
    }

    /// Steps the machine at the world's clock and carries out its outputs.
    pub fn step(&mut self, input: Input<NodeId>, w: &mut World) {
        self.protocol.step(w.now, input, &self.replica);
        let outputs: Vec<Output<NodeId>> = self.protocol.drain().collect();
        for o in outputs {
            self.carry(o, w);
        }
    }

    /// A message arrived on an open link.
    pub fn receive(&mut self, from: NodeId, wire: Wire, w: &mut World) {
        match wire {
            Wire::Gossip { topic, id, data } => {
                if !self.remember(id) {
                    return;
                }
                self.pending.insert(id, (topic, data.clone(), from));
                self.step(Input::Gossip { topic, id, source: from, data }, w);
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

    /// Gossip to every subscribed peer with an open link but `except`.
    fn gossip(&mut self, topic: Topic, id: MsgId, data: &[u8], except: Option<NodeId>, w: &mut World) {
        for peer in w.peers_of(self.id) {
            if Some(peer) != except && w.subscribers.contains(&peer) {
                w.send(self.id, peer, Wire::Gossip { topic, id, data: data.to_vec() });
            }
        }
    }

    fn carry(&mut self, o: Output<NodeId>, w: &mut World) {
        match o {
            Output::Request { peer, tag, request } => {
                if !w.send(self.id, peer, Wire::Request { tag, data: request.encode() }) {
                    let input = Input::RequestFailed { peer, tag, error: "not connected".into() };
                    w.schedule(w.now, Ev::Input { node: self.id, incarnation: self.incarnation, input });
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
                        self.gossip(topic, id, &data, Some(from), w);
                    }
                }
            }
            Output::Publish { topic, data } => {
                // Gossipsub refuses to publish a payload whose id is in its duplicate cache.
                let id = message_id(&data);
                if self.remember(id) {
                    self.gossip(topic, id, &data, None, w);
                } else {
                    w.record(Event::DuplicatePublish { node: self.id, id });
                }
            }
            Output::SubmitBlock { block, origin } => {
                self.blocks.push((block, origin));
                if !self.blocks_due {
                    self.blocks_due = true;
                    let ev = Ev::Blocks { node: self.id, incarnation: self.incarnation };
                    w.schedule(w.now + self.work_ms, ev);
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
                        w.penalties.push(Penalty { at_ms: w.now, by: self.id, peer, offence })
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

    /// A batch enters the pipeline's buffer; a verification round is due.
    pub fn submit(&mut self, txs: Vec<Tx>, origin: TxOrigin<NodeId>, w: &mut World) {
        self.pipeline.push((txs, origin));
        if !self.verify_due {
            self.verify_due = true;
            w.schedule(w.now + self.work_ms, Ev::Verify { node: self.id, incarnation: self.incarnation });
        }
    }

    /// The verify stage: everything buffered in one admission call, then the verdicts to the
    /// machine as the node's pipeline gives them (`TxsRound`: gossip per batch, what local
    /// submissions brought as one relay, the released orphans as another).
    pub fn verify(&mut self, w: &mut World) {
        self.verify_due = false;
        let items = std::mem::take(&mut self.pipeline);
        let (batches, origins): (Vec<Vec<Tx>>, Vec<TxOrigin<NodeId>>) = items.into_iter().unzip();
        let n: usize = batches.iter().map(Vec::len).sum();
        let tagged = batches.into_iter().zip(origins.iter().map(orphan_source)).collect();
        let admission = self.replica.admit_batches(tagged, w.now);
        let mut round = TxsRound::with_capacity(origins.len());
        let mut admitted = admission.released.len();
        let orphans: usize =
            admission.batches.iter().map(|b| b.verdicts.iter().filter(|v| v.is_orphan()).count()).sum();
        for (origin, o) in origins.into_iter().zip(admission.batches) {
            admitted += o.admitted.len();
            if origin == TxOrigin::Local {
                for t in &o.admitted {
                    w.accepted.insert(t.txid(self.replica.params.hash));
                }
            }
            round.push(origin, o);
        }
        let round = round.finish(admission.released);
        w.record(Event::Verified { node: self.id, offered: n, admitted, orphans });
        if !round.is_empty() {
            self.step(Input::TxsDone(round), w);
        }
    }

    /// The block worker: every queued block, in order, each verdict to the machine.
    pub fn accept_blocks(&mut self, w: &mut World) {
        self.blocks_due = false;
        for (block, origin) in std::mem::take(&mut self.blocks) {
            let mut o = self.replica.accept_block(block, w.now);
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
            self.step(Input::BlockDone { hash: o.hash, height: o.height, origin, verdict }, w);
            if !released.is_empty() {
                w.record(Event::Released { node: self.id, orphans: released.len() });
                let done = TxsDone::relay(TxOrigin::Released, released);
                self.step(Input::TxsDone(vec![done]), w);
            }
        }
    }

    /// The miner: a block on the tip, solved on this thread, to the block worker.
    pub fn mine(&mut self, w: &mut World) {
        let Some(reward) = self.reward else { return };
        let mut block = self.replica.block_template(reward, self.max_block_txs, w.now);
        if !solve(&mut block.header, self.replica.params.hash, 1, &AtomicBool::new(false)) {
            return;
        }
        w.record(Event::Mined { node: self.id, height: block.header.height, txs: block.txs.len() - 1 });
        let (topic, payload) = block_payload(&block, self.replica.params.hash, self.compact_blocks);
        self.carry(Output::SubmitBlock { block, origin: BlockOrigin::Local { topic, payload } }, w);
    }
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
