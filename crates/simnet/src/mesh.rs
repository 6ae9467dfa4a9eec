//! The gossip mesh, as gossipsub keeps it: each subscribed node forwards gossip to a bounded
//! set of its peers (its mesh), not to every link. The node's gossipsub settings
//! (`crates/p2p/src/net.rs`: `mesh_n` 8, `mesh_n_low` 6, `mesh_n_high` 12, a 700 ms
//! heartbeat) are the defaults ([`GossipParams::node`]).
//!
//! - **Joining**: when a link between two subscribers has finished its handshake,
//!   [`JOIN_RTTS`] round trips after it opened, the dialler grafts the other if it has fewer
//!   than `d` mesh peers and the other fewer than `d_hi` (gossipsub grafts a peer when it learns
//!   of the peer's subscription and at its heartbeats, and a peer past `d_hi` turns a graft
//!   away). Links that open together join in the order of their round trips, so a node's
//!   nearest peers fill its mesh first, as under gossipsub on real connections; in a network
//!   of at most `d + 1` nodes every peer is in every mesh, which is flooding.
//! - **Upkeep** at each node's heartbeat ([`Mesh::heartbeat`]): below `d_lo` it grafts random
//!   subscribed peers not in its mesh up to `d`; above `d_hi` it prunes random mesh peers down
//!   to `d`. Grafts and prunes take effect on both sides at once (the control messages are
//!   small and not modelled as traffic).
//! - **Leaving**: a link that goes down leaves both meshes.
//!
//! - **IDONTWANT** (gossipsub 1.2, on in the node: libp2p's threshold of 1,000 bytes): a node
//!   that receives a message larger than [`GossipParams::idontwant_bytes`] for the first time
//!   tells its other mesh peers at once, and a mesh peer that has heard so does not forward the
//!   message to it (`World::declined`). The control message's bytes are counted; it takes the
//!   link's latency and no uplink time.
//!
//! Not modelled: lazy gossip (IHAVE/IWANT to peers outside the mesh), peer scores, the
//! outbound quota of a mesh, per-topic meshes (every subscriber subscribes to every topic, so
//! one mesh stands for them all). A message the mesh loses is recovered by the protocol itself
//! (mempool sync, headers-first sync), as it would be without lazy gossip.
//!
//! Must not: send anything or read a clock; randomness comes from the caller's source.

use std::collections::BTreeSet;

use rand_core::Rng;

use crate::wire::NodeId;

/// libp2p-gossipsub's `idontwant_message_size_threshold`, which the node keeps: bytes.
pub const IDONTWANT_BYTES: usize = 1_000;

/// Round trips from a link's opening until gossipsub on it knows the other's subscriptions and
/// may graft: TCP's handshake (1), Noise XX's three messages (1.5), and the subscription RPC
/// that follows at once (0.5; multistream-select's negotiation rides on these messages).
pub const JOIN_RTTS: u64 = 3;

/// The encoded length of one IDONTWANT control message for one id, framing included, bytes
/// (a 20-byte id in a protobuf `ControlIDontWant`, in an RPC frame).
pub const IDONTWANT_WIRE_BYTES: u64 = 28;

/// The mesh's degree bounds and heartbeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GossipParams {
    /// The mesh degree a node aims at (gossipsub's D).
    pub d: usize,
    /// Below this a heartbeat grafts (D_lo).
    pub d_lo: usize,
    /// Above this a heartbeat prunes (D_hi).
    pub d_hi: usize,
    /// The heartbeat's interval, ms.
    pub heartbeat_ms: u64,
    /// Messages longer than this many bytes are announced with IDONTWANT on first receipt
    /// (`None`: gossipsub 1.1, no IDONTWANT).
    pub idontwant_bytes: Option<usize>,
}

impl GossipParams {
    /// The node's own settings.
    pub fn node() -> GossipParams {
        GossipParams { d: 8, d_lo: 6, d_hi: 12, heartbeat_ms: 700, idontwant_bytes: Some(IDONTWANT_BYTES) }
    }
}

/// Every node's mesh peers.
#[derive(Debug, Default)]
pub(crate) struct Mesh {
    peers: Vec<BTreeSet<NodeId>>,
}

impl Mesh {
    fn at(&mut self, a: NodeId) -> &mut BTreeSet<NodeId> {
        let i = a.0 as usize;
        if self.peers.len() <= i {
            self.peers.resize_with(i + 1, BTreeSet::new);
        }
        &mut self.peers[i]
    }

    /// `a`'s mesh peers, in id order.
    pub fn of(&self, a: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.peers.get(a.0 as usize).into_iter().flatten().copied()
    }

    /// How many mesh peers `a` has.
    pub fn degree(&self, a: NodeId) -> usize {
        self.peers.get(a.0 as usize).map_or(0, BTreeSet::len)
    }

    /// `a` and `b` take each other into their meshes.
    pub fn graft(&mut self, a: NodeId, b: NodeId) {
        self.at(a).insert(b);
        self.at(b).insert(a);
    }

    /// `a` and `b` leave each other's meshes.
    pub fn prune(&mut self, a: NodeId, b: NodeId) {
        self.at(a).remove(&b);
        self.at(b).remove(&a);
    }

    /// `a` dialled `b`, both subscribers: `a` grafts `b` if it is short of `d` and `b` has
    /// room below `d_hi`.
    pub fn linked(&mut self, a: NodeId, b: NodeId, p: &GossipParams) {
        if self.degree(a) < p.d && self.degree(b) < p.d_hi {
            self.graft(a, b);
        }
    }

    /// `a`'s heartbeat: drops mesh peers no longer `eligible` (linked and subscribed), then
    /// grafts or prunes at random to bring the mesh back within bounds. `candidates` are `a`'s
    /// eligible peers, in id order. As in gossipsub, a peer `a` grafts takes it even past its
    /// own D_hi, and prunes back at its own heartbeat.
    pub fn heartbeat(&mut self, a: NodeId, candidates: &[NodeId], p: &GossipParams, rng: &mut impl Rng) {
        let stale: Vec<NodeId> = self.of(a).filter(|x| candidates.binary_search(x).is_err()).collect();
        for x in stale {
            self.prune(a, x);
        }
        let n = self.degree(a);
        if n < p.d_lo {
            let mut outside: Vec<NodeId> =
                candidates.iter().copied().filter(|x| !self.at(a).contains(x)).collect();
            for _ in n..p.d {
                if outside.is_empty() {
                    break;
                }
                let i = (rng.next_u64() % outside.len() as u64) as usize;
                let b = outside.swap_remove(i);
                self.graft(a, b);
            }
        } else if n > p.d_hi {
            let mut inside: Vec<NodeId> = self.of(a).collect();
            for _ in p.d..n {
                let i = (rng.next_u64() % inside.len() as u64) as usize;
                let b = inside.swap_remove(i);
                self.prune(a, b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    #[test]
    fn heartbeats_keep_the_mesh_within_its_bounds() {
        let p = GossipParams { d: 4, d_lo: 3, d_hi: 6, heartbeat_ms: 700, idontwant_bytes: None };
        let mut rng = ChaCha20Rng::seed_from_u64(3);
        let mut m = Mesh::default();
        let a = NodeId(0);
        let peers: Vec<NodeId> = (1..=20).map(NodeId).collect();
        // Links opening one by one: the first `d` join the mesh at once, then no more.
        for &b in &peers {
            m.linked(a, b, &p);
        }
        assert_eq!(m.degree(a), 4);
        // Grafts by others push it above D_hi; the heartbeat prunes back to D.
        for &b in &peers[10..17] {
            m.graft(b, a);
        }
        assert_eq!(m.degree(a), 11);
        m.graft(NodeId(18), a);
        m.graft(NodeId(19), a);
        assert!(m.degree(a) > p.d_hi);
        m.heartbeat(a, &peers, &p, &mut rng);
        assert_eq!(m.degree(a), p.d);
        assert!(m.of(a).all(|x| m.of(x).any(|y| y == a)), "prunes and grafts are mutual");
        // Links gone: the heartbeat drops them and grafts others up to D.
        let left: Vec<NodeId> = peers.iter().copied().filter(|x| m.of(a).all(|y| y != *x)).take(10).collect();
        m.heartbeat(a, &left, &p, &mut rng);
        assert_eq!(m.degree(a), p.d);
        assert!(m.of(a).all(|x| left.contains(&x)));
        // Nobody left to graft: the mesh is empty, not stuck.
        m.heartbeat(a, &[], &p, &mut rng);
        assert_eq!(m.degree(a), 0);
    }
}
