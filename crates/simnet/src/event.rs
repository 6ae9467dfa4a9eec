//! What happened in a simulation, as typed events: deliveries and losses of messages, links
//! opening and closing, bans, nodes starting and stopping, submissions, verification rounds,
//! blocks taken by the block worker, blocks mined, and what the protocol machines reported.
//!
//! Each [`Record`] holds one [`Event`] with the virtual time it happened at; `Sim::events`
//! gives them in order. Scenario tests assert on the events; `Display` writes a record as one
//! readable line (`Sim::trace` writes them all), for a failing test's message.
//!
//! Every event passes through one place (`World::record`): it always counts it ([`Counters`],
//! cheap enough for a run of 10,000 nodes) and keeps it only when the simulation keeps events
//! (`SimConfig::keep_events`: tests do, large runs do not).
//!
//! Invariants: records are in the order things happened (their times never decrease); the same
//! seed gives the same records. A message is described by its kind, its gossip id or its tag,
//! and its size ([`Msg`]), never by its payload, so recording copies no message.
//!
//! Must not: change what the simulation does (an event records, it decides nothing), or read
//! anything but the virtual clock.

use std::fmt;

use scalechain_p2p::msg::Topic;
use scalechain_p2p::msg::{MsgId, Role};
use scalechain_p2p::protocol::{BlockVerdict, Event as ProtocolEvent};
use scalechain_types::Hash;

use crate::wire::{NodeId, Wire};

/// One event and the virtual time it happened at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    /// The virtual time, ms since the Unix epoch.
    pub at_ms: u64,
    /// What happened.
    pub event: Event,
}

impl fmt::Display for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.at_ms, self.event)
    }
}

/// Something that happened in the simulated network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A message arrived at `to` on the link it was sent on (to `to`'s machine, or to a
    /// scripted node's inbox).
    Delivered {
        /// The sender.
        from: NodeId,
        /// The receiver.
        to: NodeId,
        /// The message.
        msg: Msg,
    },
    /// A message did not arrive.
    Lost {
        /// The sender.
        from: NodeId,
        /// The receiver it was sent to.
        to: NodeId,
        /// The message.
        msg: Msg,
        /// Why.
        cause: Cause,
    },
    /// A link opened (`a` dialled `b`).
    Linked {
        /// The dialler.
        a: NodeId,
        /// The node dialled.
        b: NodeId,
    },
    /// A link went down (messages in flight on it are lost).
    Unlinked {
        /// One end.
        a: NodeId,
        /// The other.
        b: NodeId,
    },
    /// A node banned a peer: their link closes once what was written on it arrived, and
    /// neither can open one again before the ban ends.
    Ban {
        /// The node that banned.
        by: NodeId,
        /// The peer banned.
        peer: NodeId,
        /// When the ban ends.
        until_ms: u64,
    },
    /// An honest node came up, on a fresh chain (incarnation 1) or restarted on its store.
    Up {
        /// The node.
        node: NodeId,
        /// Its role.
        role: Role,
        /// Its incarnation (1 for the first start, one more each restart).
        incarnation: u64,
        /// Its tip height.
        height: u64,
    },
    /// A scripted node (an adversary the test drives) joined.
    ScriptedUp {
        /// The node.
        node: NodeId,
    },
    /// A node stopped (its store is kept).
    Down {
        /// The node.
        node: NodeId,
    },
    /// Transactions were submitted at a node, as through its API.
    Submitted {
        /// The node.
        node: NodeId,
        /// How many.
        txs: usize,
    },
    /// A node's pipeline ran a verification round.
    Verified {
        /// The node.
        node: NodeId,
        /// Transactions judged.
        offered: usize,
        /// Transactions admitted, orphans released by their parents included.
        admitted: usize,
        /// Transactions held as orphans.
        orphans: usize,
    },
    /// A node's block worker took a block.
    Block {
        /// The node.
        node: NodeId,
        /// The block's height (as its header claims).
        height: u64,
        /// Its hash.
        hash: Hash,
        /// What became of it.
        verdict: BlockVerdict,
        /// The tip height after it, if it moved the tip.
        new_tip: Option<u64>,
    },
    /// Blocks a node connected released orphan transactions (the machine relays them).
    Released {
        /// The node.
        node: NodeId,
        /// How many.
        orphans: usize,
    },
    /// A miner solved a block (its block worker takes it next).
    Mined {
        /// The miner.
        node: NodeId,
        /// The block's height.
        height: u64,
        /// Its transactions, the coinbase left out.
        txs: usize,
    },
    /// A node did not publish a payload: its id is in the node's duplicate cache (gossipsub
    /// refuses to publish what it has seen).
    DuplicatePublish {
        /// The node.
        node: NodeId,
        /// The payload's message id.
        id: MsgId,
    },
    /// A node's machine closed its link to a peer.
    Disconnects {
        /// The node.
        node: NodeId,
        /// The peer.
        peer: NodeId,
        /// Why, as the machine said.
        reason: &'static str,
    },
    /// A node's machine reported something (a connection, a handshake, a penalty, a ban, ...).
    Protocol {
        /// The node.
        node: NodeId,
        /// What it reported.
        event: ProtocolEvent<NodeId>,
    },
}

impl Event {
    /// The sender, receiver and message of a delivery or a loss.
    pub fn message(&self) -> Option<(NodeId, NodeId, &Msg)> {
        match self {
            Event::Delivered { from, to, msg } | Event::Lost { from, to, msg, .. } => Some((*from, *to, msg)),
            _ => None,
        }
    }
}

/// The first 8 hex digits of a hash or message id, as the trace shows them.
fn short(id: impl fmt::Display) -> String {
    let mut s = id.to_string();
    s.truncate(8);
    s
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Delivered { from, to, msg } => write!(f, "{from}->{to} {msg}"),
            Event::Lost { from, to, msg, cause } => write!(f, "{from}->{to} {cause} {msg}"),
            Event::Linked { a, b } => write!(f, "connect {a} {b}"),
            Event::Unlinked { a, b } => write!(f, "disconnect {a} {b}"),
            Event::Ban { by, peer, until_ms } => write!(f, "ban {by} {peer} until {until_ms}"),
            Event::Up { node, role, incarnation, height } => {
                write!(f, "up {node} {role:?} incarnation {incarnation} height {height}")
            }
            Event::ScriptedUp { node } => write!(f, "up {node} scripted"),
            Event::Down { node } => write!(f, "down {node}"),
            Event::Submitted { node, txs } => write!(f, "{node} submit {txs}"),
            Event::Verified { node, offered, admitted, orphans } => {
                write!(f, "{node} admitted {admitted}/{offered} orphans {orphans}")
            }
            Event::Block { node, height, hash, verdict, new_tip } => {
                write!(f, "{node} block {height} {} {verdict:?} tip {new_tip:?}", short(hash))
            }
            Event::Released { node, orphans } => write!(f, "{node} block released {orphans} orphans"),
            Event::Mined { node, height, txs } => write!(f, "{node} mined {height} with {txs} txs"),
            Event::DuplicatePublish { node, id } => {
                write!(f, "{node} publish dropped: duplicate {}", short(id))
            }
            Event::Disconnects { node, peer, reason } => write!(f, "{node} drops {peer}: {reason}"),
            Event::Protocol { node, event } => write!(f, "{node} {event:?}"),
        }
    }
}

/// Why a message did not arrive.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    /// Gossip lost on the link (the settings' loss rate), when it was sent.
    Loss,
    /// Its link went down while it was in flight, by a partition that still keeps the two
    /// apart.
    Partition,
    /// Its link went down while it was in flight otherwise (a disconnection, a ban, a node
    /// stopping), or a new link replaced it.
    Closed,
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Cause::Loss => "lost",
            Cause::Partition => "lost to a partition",
            Cause::Closed => "lost with its link",
        })
    }
}

/// A message on a link, without its payload.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Msg {
    /// A gossip message.
    Gossip {
        /// Its topic.
        topic: Topic,
        /// Its id.
        id: MsgId,
        /// Bytes of its payload.
        bytes: usize,
    },
    /// A sync request.
    Request {
        /// The requester's tag.
        tag: u64,
        /// Its kind (`None`: a body naming no request, as junk does).
        kind: Option<RequestKind>,
        /// Bytes of its body.
        bytes: usize,
    },
    /// A sync response.
    Response {
        /// The requester's tag.
        tag: u64,
        /// Its kind (`None`: a body naming no response).
        kind: Option<ResponseKind>,
        /// Bytes of its body.
        bytes: usize,
    },
}

impl Msg {
    /// The description of what travels on a link.
    pub fn of(wire: &Wire) -> Msg {
        match wire {
            Wire::Gossip { topic, id, data } => Msg::Gossip { topic: *topic, id: *id, bytes: data.len() },
            Wire::Request { tag, data } => {
                Msg::Request { tag: *tag, kind: RequestKind::of(data), bytes: data.len() }
            }
            Wire::Response { tag, data } => {
                Msg::Response { tag: *tag, kind: ResponseKind::of(data), bytes: data.len() }
            }
        }
    }

    /// True for a request of this kind.
    pub fn is_request(&self, of: RequestKind) -> bool {
        matches!(self, Msg::Request { kind: Some(k), .. } if *k == of)
    }

    /// True for gossip on this topic.
    pub fn is_gossip(&self, on: Topic) -> bool {
        matches!(self, Msg::Gossip { topic, .. } if *topic == on)
    }

    /// The gossip message id, if it is gossip.
    pub fn gossip_id(&self) -> Option<MsgId> {
        match self {
            Msg::Gossip { id, .. } => Some(*id),
            _ => None,
        }
    }
}

impl fmt::Display for Msg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Msg::Gossip { topic, id, bytes } => write!(f, "gossip {topic:?} {} {bytes}B", short(id)),
            Msg::Request { tag, kind: Some(k), bytes } => write!(f, "request #{tag} {k:?} {bytes}B"),
            Msg::Request { tag, kind: None, bytes } => write!(f, "request #{tag} unknown {bytes}B"),
            Msg::Response { tag, kind: Some(k), bytes } => write!(f, "response #{tag} {k:?} {bytes}B"),
            Msg::Response { tag, kind: None, bytes } => write!(f, "response #{tag} unknown {bytes}B"),
        }
    }
}

/// A sync request's kind: the variant of `scalechain_p2p::msg::Request` its first byte names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RequestKind {
    /// The handshake.
    Hello,
    /// Headers after a locator.
    GetHeaders,
    /// Whole blocks by hash.
    GetBlocks,
    /// Transactions from the responder's mempool.
    GetTxs,
    /// A page of the responder's mempool inventory.
    GetPoolTxids,
    /// Transactions of a stored block by position.
    GetBlockTxs,
}

impl RequestKind {
    /// The kind a request body's first byte names, if it names one.
    pub fn of(body: &[u8]) -> Option<RequestKind> {
        Some(match body.first()? {
            0 => RequestKind::Hello,
            1 => RequestKind::GetHeaders,
            2 => RequestKind::GetBlocks,
            3 => RequestKind::GetTxs,
            4 => RequestKind::GetPoolTxids,
            5 => RequestKind::GetBlockTxs,
            _ => return None,
        })
    }
}

/// A sync response's kind: the variant of `scalechain_p2p::msg::Response` its first byte names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResponseKind {
    /// The responder's handshake.
    Hello,
    /// Headers.
    Headers,
    /// Whole blocks.
    Blocks,
    /// Transactions from the mempool.
    Txs,
    /// A refusal.
    Refused,
    /// A page of the mempool inventory.
    PoolTxids,
    /// Transactions of a block.
    BlockTxs,
}

impl ResponseKind {
    /// The kind a response body's first byte names, if it names one.
    pub fn of(body: &[u8]) -> Option<ResponseKind> {
        Some(match body.first()? {
            0 => ResponseKind::Hello,
            1 => ResponseKind::Headers,
            2 => ResponseKind::Blocks,
            3 => ResponseKind::Txs,
            4 => ResponseKind::Refused,
            5 => ResponseKind::PoolTxids,
            6 => ResponseKind::BlockTxs,
            _ => return None,
        })
    }
}

/// What a message is, for counting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Gossip of transaction batches.
    TxGossip,
    /// Gossip of blocks, whole or compact.
    BlockGossip,
    /// A sync request.
    Request,
    /// A sync response.
    Response,
}

impl Kind {
    /// Every kind, in the order of [`Counters`]' arrays.
    pub const ALL: [Kind; 4] = [Kind::TxGossip, Kind::BlockGossip, Kind::Request, Kind::Response];

    /// The kind of what travels on a link.
    pub fn of(wire: &Wire) -> Kind {
        match wire {
            Wire::Gossip { topic: Topic::Txs, .. } => Kind::TxGossip,
            Wire::Gossip { .. } => Kind::BlockGossip,
            Wire::Request { .. } => Kind::Request,
            Wire::Response { .. } => Kind::Response,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Counts of what happened in a simulation, kept whether events are or not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Events the queue ran (deliveries, ticks, rounds, ...).
    pub events: u64,
    /// Messages sent, by [`Kind`] (lost ones included).
    pub sent: [u64; 4],
    /// Bytes sent on the wire, by [`Kind`] (with the model's per-message overhead).
    pub sent_bytes: [u64; 4],
    /// Messages delivered.
    pub delivered: u64,
    /// Copies of gossip that their receiver already had when they were sent, not delivered
    /// (runs that keep no events only): neither in `delivered` nor in `lost` (a few would have
    /// been lost with their link had they been delivered).
    pub elided: u64,
    /// Copies of gossip not sent because their receiver had said IDONTWANT for them.
    pub declined: u64,
    /// IDONTWANT control messages sent (their bytes are in `up_bytes` / `down_bytes`).
    pub idontwant: u64,
    /// Messages lost: to the loss rate, to a partition, with their link.
    pub lost: [u64; 3],
    /// Verification rounds run.
    pub rounds: u64,
    /// Transactions judged in them.
    pub judged: u64,
    /// Blocks the block workers took.
    pub blocks: u64,
    /// Blocks mined.
    pub mined: u64,
    /// Per node: bytes it sent.
    pub up_bytes: Vec<u64>,
    /// Per node: bytes sent to it.
    pub down_bytes: Vec<u64>,
}

impl Counters {
    /// Counts an event.
    pub fn count(&mut self, event: &Event) {
        match event {
            Event::Delivered { .. } => self.delivered += 1,
            Event::Lost { cause, .. } => {
                self.lost[match cause {
                    Cause::Loss => 0,
                    Cause::Partition => 1,
                    Cause::Closed => 2,
                }] += 1
            }
            Event::Verified { offered, .. } => {
                self.rounds += 1;
                self.judged += *offered as u64;
            }
            Event::Block { .. } => self.blocks += 1,
            Event::Mined { .. } => self.mined += 1,
            _ => {}
        }
    }

    /// Counts a message sent, of `size` bytes on the wire.
    pub fn sent(&mut self, wire: &Wire, size: u64) {
        let k = Kind::of(wire).index();
        self.sent[k] += 1;
        self.sent_bytes[k] += size;
    }

    /// Counts `size` bytes going from `from` to `to`.
    pub fn add_bytes(&mut self, from: NodeId, to: NodeId, size: u64) {
        for (v, i) in [(&mut self.up_bytes, from.0 as usize), (&mut self.down_bytes, to.0 as usize)] {
            if v.len() <= i {
                v.resize(i + 1, 0);
            }
            v[i] += size;
        }
    }

    /// Messages of a kind sent.
    pub fn sent_of(&self, kind: Kind) -> u64 {
        self.sent[kind.index()]
    }

    /// Bytes of a kind sent.
    pub fn bytes_of(&self, kind: Kind) -> u64 {
        self.sent_bytes[kind.index()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_p2p::msg::{Hello, Request, Response, PROTOCOL_VERSION};
    use scalechain_types::codec::Encode;

    #[test]
    fn kinds_name_the_variants_the_wire_encoding_gives() {
        let hello = Hello {
            version: PROTOCOL_VERSION,
            chain_id: Hash([1; 32]),
            role: Role::Peer,
            tip_height: 0,
            tip_hash: Hash([1; 32]),
            agent: "test".into(),
        };
        let h = Hash([2; 32]);
        let requests = [
            (Request::Hello(hello.clone()), RequestKind::Hello),
            (Request::GetHeaders { locator: vec![h], max: 1 }, RequestKind::GetHeaders),
            (Request::GetBlocks(vec![h]), RequestKind::GetBlocks),
            (Request::GetTxs(vec![h]), RequestKind::GetTxs),
            (Request::GetPoolTxids { from: h, max: 1 }, RequestKind::GetPoolTxids),
            (Request::GetBlockTxs { block: h, indexes: vec![1] }, RequestKind::GetBlockTxs),
        ];
        for (r, kind) in requests {
            assert_eq!(RequestKind::of(&r.encode()), Some(kind), "{r:?}");
        }
        let responses = [
            (Response::Hello(hello), ResponseKind::Hello),
            (Response::Headers(vec![]), ResponseKind::Headers),
            (Response::Blocks(vec![]), ResponseKind::Blocks),
            (Response::Txs(vec![]), ResponseKind::Txs),
            (Response::Refused("no".into()), ResponseKind::Refused),
            (Response::PoolTxids(vec![]), ResponseKind::PoolTxids),
            (Response::BlockTxs(vec![]), ResponseKind::BlockTxs),
        ];
        for (r, kind) in responses {
            assert_eq!(ResponseKind::of(&r.encode()), Some(kind), "{r:?}");
        }
        assert_eq!(RequestKind::of(&[]), None);
        assert_eq!(RequestKind::of(&[7, 1, 2]), None);
        assert_eq!(ResponseKind::of(&[9]), None);
    }

    #[test]
    fn a_record_reads_as_one_line() {
        let (a, b) = (NodeId(1), NodeId(2));
        let wire = Wire::Request { tag: 4, data: vec![1, 0, 0] };
        let delivered =
            Record { at_ms: 1_000, event: Event::Delivered { from: a, to: b, msg: Msg::of(&wire) } };
        assert_eq!(delivered.to_string(), "1000 n1->n2 request #4 GetHeaders 3B");
        let gossip = Wire::Gossip { topic: Topic::Txs, id: MsgId([0xab; 20]), data: vec![0; 10].into() };
        let lost = Event::Lost { from: b, to: a, msg: Msg::of(&gossip), cause: Cause::Loss };
        assert_eq!(lost.to_string(), "n2->n1 lost gossip Txs abababab 10B");
        assert_eq!(lost.message(), Some((b, a, &Msg::of(&gossip))));
        assert_eq!(Event::Down { node: a }.message(), None);
    }
}
