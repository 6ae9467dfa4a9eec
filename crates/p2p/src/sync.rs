//! Headers-first block sync as a state machine.
//!
//! A node learns peers' tips from their handshakes and from blocks they gossip. When a peer
//! claims more height than the local tip — or a tip the node does not have, at any height
//! (another branch, which may hold more work than a longer one: two halves of a partition
//! retarget apart) — the node asks it for headers after a locator of its main chain, checks
//! that they link up and meet their own targets, queues the hashes of the unknown blocks and
//! fetches them in small batches from the peers that have them, re-asking elsewhere when a
//! request times out or a peer leaves. Blocks themselves are validated by the
//! chain; this module only decides what to ask and of whom.
//!
//! Pure: the clock comes in as `now_ms`, outputs are [`Action`]s the caller (the protocol
//! machine, `crate::protocol`) turns into requests.

use std::collections::{BTreeMap, BTreeSet};

use scalechain_types::{Hash, HashKind, Header};

use crate::msg::{Request, MAX_BLOCKS_PER_REQUEST, MAX_HEADERS, MAX_LOCATOR};
use crate::score::Offence;

/// Most block hashes queued for download (bounds what low-work headers can make us hold).
pub const MAX_QUEUED: usize = 20_000;

/// What the caller must send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action<K> {
    /// Ask the peer for up to [`MAX_HEADERS`] headers after this locator.
    GetHeaders(K, Vec<Hash>),
    /// Ask the peer for these blocks (at most [`MAX_BLOCKS_PER_REQUEST`]).
    GetBlocks(K, Vec<Hash>),
}

impl<K> Action<K> {
    /// The request to send and to whom.
    pub fn into_request(self) -> (K, Request) {
        match self {
            Action::GetHeaders(peer, locator) => {
                (peer, Request::GetHeaders { locator, max: MAX_HEADERS as u32 })
            }
            Action::GetBlocks(peer, hashes) => (peer, Request::GetBlocks(hashes)),
        }
    }
}

/// Sync settings.
#[derive(Clone, Copy, Debug)]
pub struct SyncConfig {
    /// A request unanswered for this long is given up and re-asked elsewhere.
    pub timeout_ms: u64,
    /// Block requests in flight at once (each for up to [`MAX_BLOCKS_PER_REQUEST`] blocks).
    pub max_inflight_requests: usize,
}

impl Default for SyncConfig {
    fn default() -> Self {
        SyncConfig { timeout_ms: 10_000, max_inflight_requests: 4 }
    }
}

/// A block asked for and not delivered yet.
#[derive(Clone, Debug)]
struct Inflight<K> {
    peer: K,
    sent_ms: u64,
    /// Its place in the download order (kept when it is asked again).
    order: u64,
}

/// The sync state of one node.
///
/// Every map is ordered (by peer, by hash or by download order), so the requests a sequence of
/// calls produces are the same on every run: the simulator's determinism rests on it.
#[derive(Debug)]
pub struct SyncState<K> {
    cfg: SyncConfig,
    /// Peers' claimed tip heights.
    peers: BTreeMap<K, u64>,
    /// Peers whose claimed tip the node did not have when they claimed it: they are asked for
    /// headers whatever their height. Cleared when their headers bring nothing new.
    other_branch: BTreeSet<K>,
    header_req: Option<(K, u64)>,
    /// Blocks to fetch, by download order (the order their headers came in: parents first).
    queue: BTreeMap<u64, Hash>,
    /// The same blocks by hash, with their order.
    queued: BTreeMap<Hash, u64>,
    inflight: BTreeMap<Hash, Inflight<K>>,
    next_order: u64,
}

impl<K: Eq + Clone + Ord> SyncState<K> {
    /// An idle state.
    pub fn new(cfg: SyncConfig) -> Self {
        SyncState {
            cfg,
            peers: BTreeMap::new(),
            other_branch: BTreeSet::new(),
            header_req: None,
            queue: BTreeMap::new(),
            queued: BTreeMap::new(),
            inflight: BTreeMap::new(),
            next_order: 0,
        }
    }

    /// A peer's claimed tip (from its handshake or a block it relayed); heights only grow.
    pub fn peer_tip(&mut self, peer: K, height: u64) {
        let e = self.peers.entry(peer).or_insert(height);
        *e = (*e).max(height);
    }

    /// Whether the tip `peer` claims (in its handshake) is one the node lacks. Such a peer is on
    /// another branch, which may hold more work whatever its length (difficulty retargets apart
    /// on the two sides of a partition): the node asks it for headers as it would a taller
    /// peer, and the chain keeps whichever branch has more work.
    pub fn peer_tip_unknown(&mut self, peer: K, unknown: bool) {
        if unknown {
            self.other_branch.insert(peer);
        } else {
            self.other_branch.remove(&peer);
        }
    }

    /// A peer left: its requests are re-queued.
    pub fn peer_gone(&mut self, peer: &K) {
        self.peers.remove(peer);
        self.other_branch.remove(peer);
        self.header_failed(peer);
        let lost: Vec<Hash> =
            self.inflight.iter().filter(|(_, f)| f.peer == *peer).map(|(h, _)| *h).collect();
        self.requeue(&lost);
    }

    /// A header request to `peer` failed (or was refused): headers may be asked again at once.
    pub fn header_failed(&mut self, peer: &K) {
        if self.header_req.as_ref().is_some_and(|(p, _)| p == peer) {
            self.header_req = None;
        }
    }

    /// Blocks in flight go back to the queue, at their old places.
    fn requeue(&mut self, hashes: &[Hash]) {
        for h in hashes {
            if let Some(f) = self.inflight.remove(h) {
                if self.queued.insert(*h, f.order).is_none() {
                    self.queue.insert(f.order, *h);
                }
            }
        }
    }

    /// Blocks queued or in flight.
    pub fn pending(&self) -> usize {
        self.queue.len() + self.inflight.len()
    }

    /// True while headers or blocks are being fetched.
    pub fn busy(&self) -> bool {
        self.header_req.is_some() || self.pending() > 0
    }

    /// Peers known with their claimed heights, in peer order.
    pub fn peers(&self) -> Vec<(K, u64)> {
        self.peers.iter().map(|(k, h)| (k.clone(), *h)).collect()
    }

    /// The height a peer claims, if it is known.
    pub fn peer_height(&self, peer: &K) -> Option<u64> {
        self.peers.get(peer).copied()
    }

    /// Time passes: gives up timed-out requests and issues new ones. `locator` is called only
    /// when headers are to be asked for.
    pub fn tick(
        &mut self,
        now_ms: u64,
        our_height: u64,
        locator: impl FnOnce() -> Vec<Hash>,
    ) -> Vec<Action<K>> {
        let timeout = self.cfg.timeout_ms;
        if self.header_req.as_ref().is_some_and(|(_, t)| now_ms.saturating_sub(*t) >= timeout) {
            self.header_req = None;
        }
        let late: Vec<Hash> = self
            .inflight
            .iter()
            .filter(|(_, f)| now_ms.saturating_sub(f.sent_ms) >= timeout)
            .map(|(h, _)| *h)
            .collect();
        self.requeue(&late);
        let mut out = Vec::new();
        // Ask for headers when idle and some peer is ahead.
        if self.header_req.is_none() && self.pending() == 0 {
            if let Some(best) = self.best_peer(our_height) {
                out.push(Action::GetHeaders(best.clone(), locator()));
                self.header_req = Some((best, now_ms));
            }
        }
        // Fetch queued blocks, in download order.
        while self.inflight.len().div_ceil(MAX_BLOCKS_PER_REQUEST) < self.cfg.max_inflight_requests
            && !self.queue.is_empty()
        {
            let Some(peer) = self.best_peer(0) else { break };
            let mut hashes = Vec::with_capacity(MAX_BLOCKS_PER_REQUEST);
            while hashes.len() < MAX_BLOCKS_PER_REQUEST {
                let Some((order, h)) = self.queue.pop_first() else { break };
                self.queued.remove(&h);
                self.inflight.insert(h, Inflight { peer: peer.clone(), sent_ms: now_ms, order });
                hashes.push(h);
            }
            out.push(Action::GetBlocks(peer, hashes));
        }
        out
    }

    /// Of the peers claiming more height than `above` or a tip the node lacks, the one claiming
    /// the most height (ties: the smallest key).
    fn best_peer(&self, above: u64) -> Option<K> {
        self.peers
            .iter()
            .filter(|(k, h)| **h > above || self.other_branch.contains(*k))
            .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
            .map(|(k, _)| k.clone())
    }

    /// Headers arrived. They must link to each other, start from a block `known` says we have,
    /// and meet their own targets; unknown ones are queued for download.
    pub fn on_headers(
        &mut self,
        peer: &K,
        headers: &[Header],
        kind: HashKind,
        known: impl Fn(&Hash) -> bool,
    ) -> Result<usize, Offence> {
        self.header_failed(peer);
        let Some(first) = headers.first() else {
            // Nothing after our locator: the peer's tip is on our main chain after all.
            self.other_branch.remove(peer);
            return Ok(0);
        };
        if !known(&first.prev_hash) {
            return Err(Offence::BadHeaders);
        }
        let mut prev = first.prev_hash;
        let mut hashes = Vec::with_capacity(headers.len());
        for h in headers {
            let hash = h.hash(kind);
            if h.prev_hash != prev || !h.target.is_met_by(&hash) {
                return Err(Offence::BadHeaders);
            }
            prev = hash;
            hashes.push(hash);
        }
        if let Some(last) = headers.last() {
            self.peer_tip(peer.clone(), last.height);
        }
        let unknown: Vec<Hash> = hashes.into_iter().filter(|h| !known(h)).collect();
        // Headers that bring nothing new end the interest in the peer's other branch (it was
        // fetched, or it was ours after all); new ones keep it until they are fetched.
        if unknown.is_empty() {
            self.other_branch.remove(peer);
        }
        let mut added = 0;
        for h in unknown {
            if self.queue.len() >= MAX_QUEUED {
                break;
            }
            if !self.inflight.contains_key(&h) && !self.queued.contains_key(&h) {
                let order = self.next_order;
                self.next_order += 1;
                self.queued.insert(h, order);
                self.queue.insert(order, h);
                added += 1;
            }
        }
        Ok(added)
    }

    /// A block arrived (by request or gossip): it is no longer wanted.
    pub fn on_block(&mut self, hash: &Hash) {
        self.inflight.remove(hash);
        if let Some(order) = self.queued.remove(hash) {
            self.queue.remove(&order);
        }
    }

    /// A block request was answered (with or without all blocks): blocks not delivered go
    /// back to the queue.
    pub fn on_blocks_answer(&mut self, peer: &K, asked: &[Hash], delivered: &BTreeSet<Hash>) {
        let missing: Vec<Hash> = asked
            .iter()
            .filter(|h| !delivered.contains(h) && self.inflight.get(h).is_some_and(|f| f.peer == *peer))
            .copied()
            .collect();
        for h in asked {
            if delivered.contains(h) {
                self.inflight.remove(h);
            }
        }
        if !missing.is_empty() {
            // The peer does not have them after all: stop counting on its height or branch.
            if let Some(t) = self.peers.get_mut(peer) {
                *t = 0;
            }
            self.other_branch.remove(peer);
            self.requeue(&missing);
        }
    }
}

/// A block locator over a main chain (`main[h]` is the hash at height `h`): the last ten
/// blocks one by one, then exponentially sparser, always ending with genesis.
pub fn locator(main: &[Hash]) -> Vec<Hash> {
    let mut out = Vec::new();
    if main.is_empty() {
        return out;
    }
    let mut h = main.len() - 1;
    let mut step = 1;
    loop {
        out.push(main[h]);
        if h == 0 || out.len() >= MAX_LOCATOR - 1 {
            break;
        }
        if out.len() >= 10 {
            step *= 2;
        }
        h = h.saturating_sub(step);
    }
    if out.last() != Some(&main[0]) {
        out.push(main[0]);
    }
    out
}

/// The height after which to answer a `GetHeaders`: the first locator hash found on our main
/// chain (`height_of` maps a hash to its main-chain height), genesis if none is.
pub fn fork_point(locator: &[Hash], height_of: impl Fn(&Hash) -> Option<u64>) -> u64 {
    locator.iter().find_map(height_of).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::testing::mined;

    #[test]
    fn asks_the_highest_peer_for_headers_then_fetches_blocks_in_batches() {
        let (headers, hashes) = mined(40);
        let mut s = SyncState::new(SyncConfig::default());
        s.peer_tip("a", 3);
        s.peer_tip("b", 40);
        let acts = s.tick(0, 0, || vec![hashes[0]]);
        assert_eq!(acts.len(), 1);
        assert!(matches!(&acts[0], Action::GetHeaders("b", _)));
        assert!(matches!(
            acts[0].clone().into_request(),
            ("b", Request::GetHeaders { max, .. }) if max as usize == MAX_HEADERS
        ));
        // Nothing more while headers are in flight.
        assert!(s.tick(1, 0, || unreachable!()).is_empty());
        let genesis = hashes[0];
        let added = s.on_headers(&"b", &headers, HashKind::Sha256, |h| *h == genesis).unwrap();
        assert_eq!(added, 40);
        let acts = s.tick(2, 0, || unreachable!());
        // 40 blocks: 16 + 16 + 8, all to b (the only peer that claims them).
        let sizes: Vec<usize> = acts
            .iter()
            .map(|a| match a {
                Action::GetBlocks("b", h) => h.len(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(sizes, vec![16, 16, 8]);
        for h in &hashes[1..] {
            s.on_block(h);
        }
        assert!(!s.busy());
    }

    #[test]
    fn a_peer_on_another_branch_is_asked_for_headers_until_they_bring_nothing_new() {
        let (headers, hashes) = mined(5);
        let genesis = hashes[0];
        let mut s = SyncState::new(SyncConfig::default());
        // Both peers at our height 5: "a" with our tip, "b" with one we lack.
        s.peer_tip("a", 5);
        s.peer_tip_unknown("a", false);
        s.peer_tip("b", 5);
        s.peer_tip_unknown("b", true);
        let acts = s.tick(0, 5, || vec![genesis]);
        assert!(matches!(&acts[..], [Action::GetHeaders("b", _)]), "{acts:?}");
        // Its branch: queued and fetched; the interest stays until headers bring nothing new.
        assert_eq!(s.on_headers(&"b", &headers, HashKind::Sha256, |h| *h == genesis).unwrap(), 5);
        for h in &hashes[1..] {
            s.on_block(h);
        }
        let acts = s.tick(1, 5, || vec![genesis]);
        assert!(matches!(&acts[..], [Action::GetHeaders("b", _)]), "{acts:?}");
        let all: BTreeSet<Hash> = hashes.iter().copied().collect();
        assert_eq!(s.on_headers(&"b", &headers, HashKind::Sha256, |h| all.contains(h)).unwrap(), 0);
        assert!(s.tick(2, 5, || unreachable!()).is_empty(), "nothing new: no more asks");
        // An empty answer ends it too; a peer that leaves is forgotten.
        s.peer_tip_unknown("b", true);
        assert_eq!(s.tick(3, 5, || vec![genesis]).len(), 1);
        assert_eq!(s.on_headers(&"b", &[], HashKind::Sha256, |_| true).unwrap(), 0);
        assert!(s.tick(4, 5, || unreachable!()).is_empty());
        s.peer_tip_unknown("b", true);
        s.peer_gone(&"b");
        assert!(s.tick(5, 5, || unreachable!()).is_empty());
        // A peer below our height with a tip we lack is asked too (its branch may hold more
        // work); one with a tip we have is not.
        s.peer_tip("c", 4);
        s.peer_tip_unknown("c", false);
        assert!(s.tick(6, 5, || unreachable!()).is_empty());
        s.peer_tip_unknown("c", true);
        let acts = s.tick(7, 5, || vec![genesis]);
        assert!(matches!(&acts[..], [Action::GetHeaders("c", _)]), "{acts:?}");
    }

    #[test]
    fn headers_that_do_not_link_or_miss_their_target_are_an_offence() {
        let (mut headers, hashes) = mined(5);
        let mut s = SyncState::new(SyncConfig::default());
        let genesis = hashes[0];
        assert_eq!(
            s.on_headers(&1, &headers[1..], HashKind::Sha256, |h| *h == genesis),
            Err(Offence::BadHeaders)
        );
        headers[2].nonce = headers[2].nonce.wrapping_add(1);
        let r = s.on_headers(&1, &headers, HashKind::Sha256, |h| *h == genesis);
        assert_eq!(r, Err(Offence::BadHeaders));
        assert_eq!(s.pending(), 0);
    }

    #[test]
    fn timed_out_and_abandoned_requests_are_asked_again_elsewhere() {
        let (headers, hashes) = mined(4);
        let mut s = SyncState::new(SyncConfig { timeout_ms: 100, max_inflight_requests: 1 });
        s.peer_tip(1, 4);
        s.peer_tip(2, 4);
        let _ = s.tick(0, 0, || vec![hashes[0]]);
        let genesis = hashes[0];
        s.on_headers(&2, &headers, HashKind::Sha256, |h| *h == genesis).unwrap();
        let acts = s.tick(1, 0, || unreachable!());
        let Action::GetBlocks(first, _) = &acts[0] else { panic!("{acts:?}") };
        let first = *first;
        s.peer_gone(&first);
        let acts = s.tick(2, 0, || unreachable!());
        assert!(matches!(&acts[..], [Action::GetBlocks(p, h)] if *p != first && h.len() == 4));
        // Time out: the same peer (the only one left) is asked again, in chain order.
        let acts = s.tick(200, 0, || unreachable!());
        assert!(matches!(&acts[..], [Action::GetBlocks(_, h)] if *h == hashes[1..]));
    }

    #[test]
    fn a_partial_answer_requeues_the_rest_in_chain_order_and_a_failed_header_request_is_retried() {
        let (headers, hashes) = mined(6);
        let mut s = SyncState::new(SyncConfig::default());
        s.peer_tip(1, 6);
        s.peer_tip(2, 6);
        assert!(matches!(&s.tick(0, 0, || vec![hashes[0]])[..], [Action::GetHeaders(1, _)]));
        // The header request failed: the next tick asks again without waiting for the timeout.
        assert!(s.tick(1, 0, || unreachable!()).is_empty());
        s.header_failed(&1);
        assert!(matches!(&s.tick(2, 0, || vec![hashes[0]])[..], [Action::GetHeaders(1, _)]));
        let genesis = hashes[0];
        s.on_headers(&1, &headers, HashKind::Sha256, |h| *h == genesis).unwrap();
        let acts = s.tick(3, 0, || unreachable!());
        assert!(matches!(&acts[..], [Action::GetBlocks(1, h)] if *h == hashes[1..]));
        // Peer 1 delivers blocks 2 and 5 only: the rest return to the queue, in order, and peer 1
        // no longer counts as having them.
        let delivered: BTreeSet<Hash> = [hashes[2], hashes[5]].into_iter().collect();
        s.on_blocks_answer(&1, &hashes[1..], &delivered);
        assert_eq!(s.peer_height(&1), Some(0));
        let acts = s.tick(4, 0, || unreachable!());
        let want = vec![hashes[1], hashes[3], hashes[4], hashes[6]];
        assert!(matches!(&acts[..], [Action::GetBlocks(2, h)] if *h == want));
    }

    #[test]
    fn locator_is_dense_near_the_tip_and_ends_at_genesis() {
        let main: Vec<Hash> = (0..1000u32)
            .map(|i| {
                let mut h = [0u8; 32];
                h[..4].copy_from_slice(&i.to_le_bytes());
                Hash(h)
            })
            .collect();
        let l = locator(&main);
        assert_eq!(l[0], main[999]);
        assert_eq!(l[9], main[990]);
        assert_eq!(*l.last().unwrap(), main[0]);
        assert!(l.len() <= MAX_LOCATOR);
        assert_eq!(locator(&main[..1]), vec![main[0]]);
        let pos = |h: &Hash| main.iter().position(|x| x == h).map(|p| p as u64);
        assert_eq!(fork_point(&[Hash([0xff; 32]), main[500]], pos), 500);
        assert_eq!(fork_point(&[Hash([0xff; 32])], pos), 0);
    }
}
