//! The nodes' duplicate caches: the gossip ids each node saw lately, as gossipsub's
//! `duplicate_cache` keeps them (a bounded number, each for a bounded time).
//!
//! They live in the world beside the nodes rather than in the nodes, so that a large run can tell
//! at send time that a copy will arrive at a node that already has the message (see
//! `World::send`): such a copy costs its bandwidth but needs no delivery event. A node's cache
//! still holds the id when the copy arrives if it was first seen less than `SEEN_MS` before
//! ([`Seen::holds`]) — unless `SEEN` newer ids push it out meanwhile, which would take 65,536
//! messages during one message's flight.
//!
//! Layout: one entry per message for the whole network, with every node's first sighting in one
//! array, instead of a map per node. A message spreads through the network within a short time,
//! so the lookups of one message (each node's receipt, each send's check that the receiver has
//! it) fall on one small array instead of a thousand large maps; the network-wide map from ids
//! to entries is one lookup. Each node keeps its own queue of what it saw, in order, for its
//! bounds.
//!
//! Invariant: node `n` remembers an id from when it first saw it until `SEEN_MS` later or until
//! `SEEN` newer ids pushed it out, whichever comes first; what it remembers is in `n`'s queue
//! and in the id's entry, and an entry lives while some node's queue holds it. As in
//! gossipsub's cache, a node lets an id go when it next remembers one (the queue's front is
//! trimmed then); what it answers for an id past its time is the same before and after.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use scalechain_p2p::msg::MsgId;

/// Gossip ids a node remembers at most (gossipsub's duplicate cache).
const SEEN: usize = 1 << 16;
/// How long a node remembers a gossip id, ms (the node's `duplicate_cache_time`).
const SEEN_MS: u64 = 120_000;
/// A node that does not remember the id (in [`Entry::first`]).
const NONE: u64 = u64::MAX;

/// Hashes a message id by its first eight bytes: ids are digests already, and no outsider
/// chooses them in a simulation, so a keyed hash would only cost time.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for (i, b) in bytes.iter().take(8).enumerate() {
            self.0 ^= u64::from(*b) << (8 * i);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// One message's sightings.
struct Entry {
    id: MsgId,
    /// When each node first saw it (ms), by node index; [`NONE`] (or past the end) if the node
    /// does not remember it.
    first: Vec<u64>,
    /// Nodes whose queue holds it.
    holders: u32,
}

/// The ids every node saw lately.
#[derive(Default)]
pub(crate) struct Seen {
    /// Each remembered id's entry.
    index: HashMap<MsgId, u32, BuildHasherDefault<IdHasher>>,
    entries: Vec<Entry>,
    /// Entries no id uses, for reuse.
    free: Vec<u32>,
    /// Each node's ids in the order it saw them: when (ms) and the entry.
    queues: Vec<VecDeque<(u64, u32)>>,
}

impl Seen {
    /// Makes room for nodes `0..n`.
    pub fn grow(&mut self, n: usize) {
        if self.queues.len() < n {
            self.queues.resize_with(n, VecDeque::new);
        }
    }

    /// When node `node` first saw entry `e`'s id, if it remembers it.
    fn first_of(&self, e: u32, node: usize) -> Option<u64> {
        let at = *self.entries[e as usize].first.get(node)?;
        (at != NONE).then_some(at)
    }

    /// Node `node` lets go of the id at the front of its queue.
    fn pop_front(&mut self, node: usize) {
        let Some((_, e)) = self.queues[node].pop_front() else { return };
        let entry = &mut self.entries[e as usize];
        entry.first[node] = NONE;
        entry.holders -= 1;
        if entry.holders == 0 {
            self.index.remove(&entry.id);
            self.free.push(e);
        }
    }

    /// The entry of `id`, made (held by no node yet) if there is none.
    fn entry(&mut self, id: MsgId) -> u32 {
        if let Some(&e) = self.index.get(&id) {
            return e;
        }
        let e = match self.free.pop() {
            Some(e) => {
                let entry = &mut self.entries[e as usize];
                entry.id = id;
                entry.first.fill(NONE);
                e
            }
            None => {
                let e = u32::try_from(self.entries.len()).expect("fewer than 2^32 ids remembered at once");
                self.entries.push(Entry { id, first: Vec::new(), holders: 0 });
                e
            }
        };
        self.index.insert(id, e);
        e
    }

    /// Node `node` remembers `id` seen at `now_ms`; false if it was seen already (within the
    /// cache's time and size).
    pub fn remember(&mut self, node: usize, id: MsgId, now_ms: u64) -> bool {
        self.grow(node + 1);
        while let Some(&(at, _)) = self.queues[node].front() {
            if self.queues[node].len() < SEEN && at + SEEN_MS > now_ms {
                break;
            }
            self.pop_front(node);
        }
        let e = self.entry(id);
        if self.first_of(e, node).is_some() {
            return false;
        }
        let entry = &mut self.entries[e as usize];
        if entry.first.len() <= node {
            entry.first.resize(self.queues.len(), NONE);
        }
        entry.first[node] = now_ms;
        entry.holders += 1;
        self.queues[node].push_back((now_ms, e));
        true
    }

    /// When node `node` first saw `id` (ms), if it remembers it.
    pub fn first_seen_ms(&self, node: usize, id: &MsgId) -> Option<u64> {
        self.index.get(id).and_then(|&e| self.first_of(e, node))
    }

    /// Will node `node` still remember `id` at `at_ms` (by time; see the module's note on
    /// size)?
    pub fn holds(&self, node: usize, id: &MsgId, at_ms: u64) -> bool {
        self.first_seen_ms(node, id).is_some_and(|first| first + SEEN_MS > at_ms)
    }

    /// Node `node` forgets every id (it starts afresh).
    pub fn forget(&mut self, node: usize) {
        while self.queues.get(node).is_some_and(|q| !q.is_empty()) {
            self.pop_front(node);
        }
    }

    /// Ids some node remembers.
    #[cfg(test)]
    fn ids(&self) -> usize {
        self.index.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_remembered_for_the_cache_time_only() {
        let mut s = Seen::default();
        let id = MsgId([7u8; 20]);
        assert!(s.remember(3, id, 1_000));
        assert!(!s.remember(3, id, 1_000 + SEEN_MS - 1));
        assert!(s.holds(3, &id, 1_000 + SEEN_MS - 1));
        assert!(!s.holds(3, &id, 1_000 + SEEN_MS), "a copy arriving after the cache time is news");
        assert!(s.remember(3, id, 1_000 + SEEN_MS), "forgotten after the cache time");
    }

    #[test]
    fn each_node_remembers_for_itself_and_an_id_nobody_holds_is_let_go() {
        let mut s = Seen::default();
        let (a, b) = (MsgId([1u8; 20]), MsgId([2u8; 20]));
        assert!(s.remember(0, a, 10));
        assert!(s.remember(5, a, 20), "node 5 had not seen it");
        assert_eq!(s.first_seen_ms(0, &a), Some(10));
        assert_eq!(s.first_seen_ms(5, &a), Some(20));
        assert_eq!(s.first_seen_ms(2, &a), None);
        assert!(!s.holds(9, &a, 20), "a node past every entry's end holds nothing");
        s.forget(0);
        assert_eq!(s.first_seen_ms(0, &a), None);
        assert!(s.holds(5, &a, 30), "forgetting is one node's");
        // Node 5 lets `a` go when it next remembers something after `a`'s time.
        assert!(s.remember(5, b, 20 + SEEN_MS));
        assert_eq!(s.ids(), 1, "no node holds `a`: its entry is free");
        assert!(s.remember(7, a, 20 + SEEN_MS), "and the id is news again, in a reused entry");
        assert_eq!(s.first_seen_ms(5, &a), None);
        assert_eq!(s.entries.len(), 2);
    }

    #[test]
    fn a_node_keeps_at_most_its_bound_the_oldest_going_first() {
        let mut s = Seen::default();
        let id = |i: u32| {
            let mut b = [0u8; 20];
            b[..4].copy_from_slice(&i.to_le_bytes());
            MsgId(b)
        };
        for i in 0..=SEEN as u32 {
            assert!(s.remember(1, id(i), 5));
        }
        assert!(s.remember(1, id(0), 5), "the first was pushed out by the bound");
        assert_eq!(s.queues[1].len(), SEEN);
        assert!(!s.remember(1, id(SEEN as u32), 5), "a later one stays");
    }
}
