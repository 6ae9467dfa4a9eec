//! A node's duplicate cache: the gossip ids it saw lately, as gossipsub's `duplicate_cache`
//! keeps them (a bounded number, each for a bounded time).
//!
//! It lives in the world beside the node rather than in the node, so that a large run can tell
//! at send time that a copy will arrive at a node that already has the message (see
//! `World::send`): such a copy costs its bandwidth but needs no delivery event. The cache
//! still holds the id when the copy arrives if it was first seen less than `SEEN_MS` before
//! ([`Seen::holds`]) — unless `SEEN` newer ids push it out meanwhile, which would take 65,536
//! messages during one message's flight.
//!
//! Invariant: an id is remembered from when it was first seen until `SEEN_MS` later or until
//! `SEEN` newer ids pushed it out, whichever comes first.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

use scalechain_p2p::msg::MsgId;

/// Gossip ids a node remembers at most (gossipsub's duplicate cache).
const SEEN: usize = 1 << 16;
/// How long a node remembers a gossip id, ms (the node's `duplicate_cache_time`).
const SEEN_MS: u64 = 120_000;

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

/// The ids a node saw lately.
#[derive(Default)]
pub(crate) struct Seen {
    /// Each id remembered, with when it was first seen (ms).
    ids: HashMap<MsgId, u64, BuildHasherDefault<IdHasher>>,
    /// Ids in the order they were seen, with when (ms).
    order: VecDeque<(u64, MsgId)>,
}

impl Seen {
    /// Remembers `id` seen at `now_ms`; false if it was seen already (within the cache's time
    /// and size).
    pub fn remember(&mut self, id: MsgId, now_ms: u64) -> bool {
        while let Some(&(at, old)) = self.order.front() {
            if self.order.len() < SEEN && at + SEEN_MS > now_ms {
                break;
            }
            self.order.pop_front();
            self.ids.remove(&old);
        }
        if self.ids.contains_key(&id) {
            return false;
        }
        self.ids.insert(id, now_ms);
        self.order.push_back((now_ms, id));
        true
    }

    /// When `id` was first seen (ms), if it is remembered.
    pub fn first_seen_ms(&self, id: &MsgId) -> Option<u64> {
        self.ids.get(id).copied()
    }

    /// Will `id` still be remembered at `at_ms` (by time; see the module's note on size)?
    pub fn holds(&self, id: &MsgId, at_ms: u64) -> bool {
        self.ids.get(id).is_some_and(|&first| first + SEEN_MS > at_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_remembered_for_the_cache_time_only() {
        let mut s = Seen::default();
        let id = MsgId([7u8; 20]);
        assert!(s.remember(id, 1_000));
        assert!(!s.remember(id, 1_000 + SEEN_MS - 1));
        assert!(s.holds(&id, 1_000 + SEEN_MS - 1));
        assert!(!s.holds(&id, 1_000 + SEEN_MS), "a copy arriving after the cache time is news");
        assert!(s.remember(id, 1_000 + SEEN_MS), "forgotten after the cache time");
    }
}
