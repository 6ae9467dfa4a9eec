//! Staying connected: when links break — a peer restarts, a network partition cuts the node
//! off (the transport closes a connection whose ping goes unanswered for 20 s) — the node
//! dials again, on its tick, its bootstrap nodes and (with discovery on) the peers of its book,
//! until it holds [`TARGET`] connections.
//!
//! Each peer is dialled again after a back-off that doubles from [`FIRST_RETRY_MS`] to at most
//! [`MAX_RETRY_MS`]: short, so a healed partition is rejoined within seconds, and bounded in
//! cost (at most [`PER_ROUND`] dials a round, a round every [`ROUND_MS`]). A connection resets
//! the peer's back-off.
//!
//! Must not: dial a connected peer, a banned one, or one whose back-off has not run out; dial
//! the book's peers when discovery is off (the node then keeps to its bootstrap addresses and
//! who dials it); dial at all while [`TARGET`] peers are connected. Pure: the time comes in as
//! an argument.

use std::collections::{HashMap, HashSet};

use scalechain_p2p::net::{Multiaddr, PeerId};

use crate::known::KnownPeers;

/// Connected peers the node works to keep (Bitcoin Core keeps 8 outbound).
pub const TARGET: usize = 8;
/// Most peers dialled in one round.
pub const PER_ROUND: usize = 4;
/// Time between rounds, ms.
pub const ROUND_MS: u64 = 1_000;
/// A peer's first back-off, ms.
pub const FIRST_RETRY_MS: u64 = 1_000;
/// A peer's longest back-off, ms.
pub const MAX_RETRY_MS: u64 = 8_000;

/// A peer to dial: who and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dial {
    /// The peer.
    pub peer: PeerId,
    /// Its addresses (without the `/p2p/<id>` suffix).
    pub addrs: Vec<Multiaddr>,
}

/// The redial policy's state.
#[derive(Debug)]
pub struct Redial {
    /// The bootstrap nodes: dialled again whatever `discover` says.
    bootstrap: Vec<Dial>,
    /// Dial the book's peers too?
    discover: bool,
    connected: HashSet<PeerId>,
    /// Per peer dialled and not connected since: (next dial due, ms; its back-off, ms).
    backoff: HashMap<PeerId, (u64, u64)>,
    next_round_ms: u64,
}

impl Redial {
    /// The policy for a node joined through `bootstrap` (multiaddrs ending in `/p2p/<id>`;
    /// others are skipped), dialling its book's peers too when `discover` is on.
    pub fn new(bootstrap: &[Multiaddr], discover: bool) -> Redial {
        let mut dials: Vec<Dial> = Vec::new();
        for a in bootstrap {
            let Some(peer) = scalechain_p2p::net::peer_of(a) else { continue };
            let addr = scalechain_p2p::net::strip_peer(a);
            match dials.iter_mut().find(|d| d.peer == peer) {
                Some(d) => d.addrs.push(addr),
                None => dials.push(Dial { peer, addrs: vec![addr] }),
            }
        }
        Redial {
            bootstrap: dials,
            discover,
            connected: HashSet::new(),
            backoff: HashMap::new(),
            next_round_ms: 0,
        }
    }

    /// A first connection to `peer` opened: its back-off ends.
    pub fn connected(&mut self, peer: PeerId) {
        self.backoff.remove(&peer);
        self.connected.insert(peer);
    }

    /// The last connection to `peer` closed.
    pub fn disconnected(&mut self, peer: &PeerId) {
        self.connected.remove(peer);
    }

    /// The peers to dial at `now_ms` (empty between rounds or at [`TARGET`]), none connected,
    /// banned or backing off: those never dialled or dialled longest ago first, and among
    /// equals the bootstrap nodes, then the book's peers seen most recently.
    pub fn due(&mut self, now_ms: u64, book: &KnownPeers) -> Vec<Dial> {
        let want = TARGET.saturating_sub(self.connected.len()).min(PER_ROUND);
        if want == 0 || now_ms < self.next_round_ms {
            return Vec::new();
        }
        self.next_round_ms = now_ms.saturating_add(ROUND_MS);
        let mut candidates: Vec<Dial> = self.bootstrap.clone();
        if self.discover {
            candidates.extend(book.dialable(now_ms).into_iter().map(|(peer, addrs)| Dial { peer, addrs }));
        }
        // Those dialled longest ago (or never) first, so a long list is gone through in turn.
        candidates.sort_by_key(|d| self.backoff.get(&d.peer).map_or(0, |e| e.0));
        let mut out: Vec<Dial> = Vec::new();
        for d in candidates {
            if out.len() == want {
                break;
            }
            let waiting = self.backoff.get(&d.peer).is_some_and(|(due, _)| *due > now_ms);
            if self.connected.contains(&d.peer) || waiting || out.iter().any(|o| o.peer == d.peer) {
                continue;
            }
            let e = self.backoff.entry(d.peer).or_insert((0, FIRST_RETRY_MS / 2));
            e.1 = (e.1.saturating_mul(2)).clamp(FIRST_RETRY_MS, MAX_RETRY_MS);
            e.0 = now_ms.saturating_add(e.1);
            out.push(d);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_p2p::net;

    fn peer(i: u8) -> PeerId {
        net::peer_id_of_seed([i; 32]).unwrap()
    }

    fn addr(i: u8) -> Multiaddr {
        format!("/ip4/10.0.0.{i}/tcp/4000").parse().unwrap()
    }

    fn book(peers: &[u8], now_ms: u64) -> KnownPeers {
        let mut b = KnownPeers::new();
        for i in peers {
            b.listens(peer(*i), &[addr(*i)], now_ms);
        }
        b
    }

    fn peers_of(d: &[Dial]) -> Vec<PeerId> {
        d.iter().map(|d| d.peer).collect()
    }

    #[test]
    fn the_bootstrap_first_then_the_book_and_never_a_connected_peer() {
        let boot = net::with_peer(addr(1), peer(1));
        let b = book(&[2, 3, 4], 10);
        let mut r = Redial::new(&[boot], true);
        r.connected(peer(3));
        let d = r.due(0, &b);
        assert_eq!(d[0], Dial { peer: peer(1), addrs: vec![addr(1)] });
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(!peers_of(&d).contains(&peer(3)), "connected");
    }

    #[test]
    fn back_off_doubles_to_its_cap_and_a_connection_resets_it() {
        let b = book(&[2], 0);
        let mut r = Redial::new(&[], true);
        let mut dialled_at = Vec::new();
        for t in (0..40_000).step_by(250) {
            if !r.due(t, &b).is_empty() {
                dialled_at.push(t);
            }
        }
        let gaps: Vec<u64> = dialled_at.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(&gaps[..4], &[1_000, 2_000, 4_000, 8_000], "{dialled_at:?}");
        assert!(gaps[4..].iter().all(|g| *g == MAX_RETRY_MS), "{gaps:?}");
        r.connected(peer(2));
        r.disconnected(&peer(2));
        assert_eq!(peers_of(&r.due(50_000, &b)), vec![peer(2)], "dialled at once after a connection");
    }

    #[test]
    fn nothing_at_the_target_nor_between_rounds_and_no_book_without_discovery() {
        let b = book(&[20, 21], 0);
        let mut r = Redial::new(&[], true);
        for i in 0..TARGET as u8 {
            r.connected(peer(i));
        }
        assert!(r.due(0, &b).is_empty(), "at the target");
        r.disconnected(&peer(0));
        assert_eq!(r.due(0, &b).len(), 1, "one below the target: one dial");
        assert!(r.due(ROUND_MS - 1, &b).is_empty(), "between rounds");

        let boot = net::with_peer(addr(1), peer(1));
        let mut fixed = Redial::new(&[boot, addr(9)], false);
        assert_eq!(
            peers_of(&fixed.due(0, &b)),
            vec![peer(1)],
            "the bootstrap only; an address without a peer id is skipped"
        );
    }

    #[test]
    fn banned_peers_are_not_dialled() {
        let mut b = book(&[2, 3], 0);
        b.banned(peer(2), 10_000, 0);
        let mut r = Redial::new(&[], true);
        assert_eq!(peers_of(&r.due(0, &b)), vec![peer(3)]);
        assert!(peers_of(&r.due(10_000, &b)).contains(&peer(2)), "the ban ended");
    }

    #[test]
    fn at_most_per_round_dials() {
        let b = book(&[1, 2, 3, 4, 5, 6, 7], 0);
        let mut r = Redial::new(&[], true);
        let first = peers_of(&r.due(0, &b));
        let next = peers_of(&r.due(ROUND_MS, &b));
        assert_eq!(next.len(), PER_ROUND);
        assert_eq!(next.iter().filter(|p| !first.contains(p)).count(), 3, "the rest first, next round");
    }
}
