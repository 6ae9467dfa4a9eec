//! The virtual network: the clock, the delivery queue, links, the seeded random source and the
//! trace. Nodes live beside it (`crate::node`); the simulator (`crate::Sim`) owns both.

use std::collections::{BTreeMap, BTreeSet};

use rand_chacha::ChaCha20Rng;
use rand_core::{Rng, SeedableRng};
use scalechain_p2p::msg::{MsgId, Topic};
use scalechain_p2p::protocol::Input;
use scalechain_p2p::score::Offence;
use scalechain_types::Hash;

/// A node's identity on the virtual network.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub u32);

impl std::fmt::Debug for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "n{}", self.0)
    }
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "n{}", self.0)
    }
}

/// What travels on a link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Wire {
    /// A gossip message.
    Gossip {
        /// The topic.
        topic: Topic,
        /// Its id.
        id: MsgId,
        /// The payload.
        data: Vec<u8>,
    },
    /// A sync request, with the requester's tag.
    Request {
        /// The requester's tag for the answer.
        tag: u64,
        /// The request body.
        data: Vec<u8>,
    },
    /// The answer to the request with this tag.
    Response {
        /// The requester's tag.
        tag: u64,
        /// The response body.
        data: Vec<u8>,
    },
}

impl Wire {
    fn describe(&self) -> String {
        match self {
            Wire::Gossip { topic, id, data } => {
                format!("gossip {topic:?} {} {}B", &id.to_string()[..8], data.len())
            }
            Wire::Request { tag, data } => {
                format!("request #{tag} kind {} {}B", data.first().map_or(-1, |b| i16::from(*b)), data.len())
            }
            Wire::Response { tag, data } => {
                format!("response #{tag} kind {} {}B", data.first().map_or(-1, |b| i16::from(*b)), data.len())
            }
        }
    }
}

/// Something scheduled to happen at a virtual time.
#[derive(Debug)]
pub(crate) enum Ev {
    /// A message arrives.
    Deliver { to: NodeId, from: NodeId, epoch: u64, wire: Wire },
    /// An input for a node's machine (connections, local failures).
    Input { node: NodeId, incarnation: u64, input: Input<NodeId> },
    /// A node's periodic tick.
    Tick { node: NodeId, incarnation: u64 },
    /// A miner builds and solves a block.
    Mine { node: NodeId, incarnation: u64 },
    /// A node's pipeline runs a verification round.
    Verify { node: NodeId, incarnation: u64 },
    /// A node's block worker takes its queue.
    Blocks { node: NodeId, incarnation: u64 },
    /// A link closed by a ban goes down (after what was written on it arrived).
    Cut { a: NodeId, b: NodeId, epoch: u64 },
}

/// A connection between two nodes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    pub epoch: u64,
    /// Closed by a ban: nothing more is sent on it; it goes down at the scheduled cut.
    pub closing: bool,
}

/// Network settings.
#[derive(Clone, Copy, Debug)]
pub struct NetSettings {
    /// One-way latency of a link, ms (per-link overrides with `Sim::set_latency`).
    pub latency_ms: u64,
    /// Up to this much more, drawn per message, ms.
    pub jitter_ms: u64,
    /// Probability that a gossip message is lost on a link (requests and responses travel on
    /// reliable streams).
    pub loss: f64,
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

pub(crate) struct World {
    pub now: u64,
    seq: u64,
    queue: BTreeMap<(u64, u64), Ev>,
    rng: ChaCha20Rng,
    pub net: NetSettings,
    pub links: BTreeMap<(NodeId, NodeId), Link>,
    next_epoch: u64,
    latency: BTreeMap<(NodeId, NodeId), u64>,
    /// Pairs a partition keeps apart.
    pub cut: BTreeSet<(NodeId, NodeId)>,
    /// (banner, banned) → end of the ban.
    pub refusals: BTreeMap<(NodeId, NodeId), u64>,
    /// Nodes that receive gossip (not the bootstrap role).
    pub subscribers: BTreeSet<NodeId>,
    /// Nodes up, with their incarnation.
    pub up: BTreeMap<NodeId, u64>,
    pub trace: Vec<String>,
    /// Txids admitted from local submissions, anywhere.
    pub accepted: BTreeSet<Hash>,
    pub penalties: Vec<Penalty>,
    /// Blocks that left a main chain, summed over nodes.
    pub disconnected_blocks: u64,
    /// Transactions of such blocks the mempools took back, summed over nodes.
    pub readmitted: u64,
}

pub(crate) fn pair(a: NodeId, b: NodeId) -> (NodeId, NodeId) {
    if a <= b {
        (a, b)
    } else {
        (b, a)
    }
}

impl World {
    pub fn new(seed: u64, net: NetSettings, start_ms: u64) -> World {
        World {
            now: start_ms,
            seq: 0,
            queue: BTreeMap::new(),
            rng: ChaCha20Rng::seed_from_u64(seed),
            net,
            links: BTreeMap::new(),
            next_epoch: 1,
            latency: BTreeMap::new(),
            cut: BTreeSet::new(),
            refusals: BTreeMap::new(),
            subscribers: BTreeSet::new(),
            up: BTreeMap::new(),
            trace: Vec::new(),
            accepted: BTreeSet::new(),
            penalties: Vec::new(),
            disconnected_blocks: 0,
            readmitted: 0,
        }
    }

    pub fn log(&mut self, line: impl std::fmt::Display) {
        let now = self.now;
        self.trace.push(format!("{now} {line}"));
    }

    pub fn schedule(&mut self, at: u64, ev: Ev) {
        self.seq += 1;
        self.queue.insert((at, self.seq), ev);
    }

    /// The next event due at or before `until`, with the clock moved to it.
    pub fn pop(&mut self, until: u64) -> Option<Ev> {
        let (&(at, _), _) = self.queue.first_key_value()?;
        if at > until {
            return None;
        }
        let ((at, _), ev) = self.queue.pop_first()?;
        self.now = self.now.max(at);
        Some(ev)
    }

    /// A uniform draw below `n` (0 for `n` = 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.rng.next_u64() % n
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && (self.rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }

    pub fn set_latency(&mut self, a: NodeId, b: NodeId, ms: u64) {
        self.latency.insert(pair(a, b), ms);
    }

    fn delay(&mut self, a: NodeId, b: NodeId) -> u64 {
        let base = self.latency.get(&pair(a, b)).copied().unwrap_or(self.net.latency_ms);
        base + self.below(self.net.jitter_ms + 1)
    }

    /// The longest a message on the link may take.
    pub fn max_delay(&self, a: NodeId, b: NodeId) -> u64 {
        self.latency.get(&pair(a, b)).copied().unwrap_or(self.net.latency_ms) + self.net.jitter_ms
    }

    pub fn linked(&self, a: NodeId, b: NodeId) -> bool {
        self.links.get(&pair(a, b)).is_some_and(|l| !l.closing)
    }

    /// Peers with an open link to `a`, in id order.
    pub fn peers_of(&self, a: NodeId) -> Vec<NodeId> {
        self.links
            .iter()
            .filter(|(_, l)| !l.closing)
            .filter_map(|(&(x, y), _)| {
                if x == a {
                    Some(y)
                } else if y == a {
                    Some(x)
                } else {
                    None
                }
            })
            .collect()
    }

    /// Sends on the link from `from` to `to`; false if there is no open link (or the message
    /// was lost).
    pub fn send(&mut self, from: NodeId, to: NodeId, wire: Wire) -> bool {
        let Some(link) = self.links.get(&pair(from, to)).copied().filter(|l| !l.closing) else {
            return false;
        };
        if matches!(wire, Wire::Gossip { .. }) && self.chance(self.net.loss) {
            let line = format!("{from}->{to} lost {}", wire.describe());
            self.log(line);
            return false;
        }
        let at = self.now + self.delay(from, to);
        self.schedule(at, Ev::Deliver { to, from, epoch: link.epoch, wire });
        true
    }

    /// True if the message arriving on this link epoch may be delivered.
    pub fn deliverable(&self, from: NodeId, to: NodeId, epoch: u64) -> bool {
        self.links.get(&pair(from, to)).is_some_and(|l| l.epoch == epoch)
    }

    pub fn describe_delivery(&mut self, from: NodeId, to: NodeId, wire: &Wire) {
        let line = format!("{from}->{to} {}", wire.describe());
        self.log(line);
    }

    /// Opens a link if both are up, not kept apart, neither refuses the other and none exists;
    /// both machines learn of it at once.
    pub fn connect(&mut self, a: NodeId, b: NodeId) -> bool {
        let now = self.now;
        let refused = |x, y| self.refusals.get(&(x, y)).is_some_and(|until| now < *until);
        if a == b
            || self.links.contains_key(&pair(a, b))
            || self.cut.contains(&pair(a, b))
            || refused(a, b)
            || refused(b, a)
        {
            return false;
        }
        let (Some(&ia), Some(&ib)) = (self.up.get(&a), self.up.get(&b)) else { return false };
        let epoch = self.next_epoch;
        self.next_epoch += 1;
        self.links.insert(pair(a, b), Link { epoch, closing: false });
        self.log(format!("connect {a} {b}"));
        // `a` dialled `b`.
        for (node, incarnation, peer, inbound) in [(a, ia, b, false), (b, ib, a, true)] {
            let input = Input::Connected { peer, addr: format!("sim/{peer}"), inbound };
            self.schedule(now, Ev::Input { node, incarnation, input });
        }
        true
    }

    /// Takes a link down now (messages in flight on it are lost); both machines learn of it.
    pub fn disconnect(&mut self, a: NodeId, b: NodeId) {
        if self.links.remove(&pair(a, b)).is_none() {
            return;
        }
        self.log(format!("disconnect {a} {b}"));
        let now = self.now;
        for (node, peer) in [(a, b), (b, a)] {
            if let Some(&incarnation) = self.up.get(&node) {
                self.schedule(now, Ev::Input { node, incarnation, input: Input::Disconnected { peer } });
            }
        }
    }

    /// `banner` bans `banned` until `until`: nothing more is sent on their link, which goes down
    /// once what was already written on it arrived (as the node's network defers a ban until
    /// its answers are written).
    pub fn ban(&mut self, banner: NodeId, banned: NodeId, until: u64) {
        self.refusals.insert((banner, banned), until);
        self.log(format!("ban {banner} {banned} until {until}"));
        let after = self.max_delay(banner, banned) + 1;
        if let Some(l) = self.links.get_mut(&pair(banner, banned)) {
            if !l.closing {
                l.closing = true;
                let epoch = l.epoch;
                let at = self.now + after;
                self.schedule(at, Ev::Cut { a: banner, b: banned, epoch });
            }
        }
    }
}
