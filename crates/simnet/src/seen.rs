//! A node's duplicate cache: the gossip ids it saw lately, as gossipsub's `duplicate_cache`
//! keeps them (a bounded number, each for a bounded time).
//!
//! It lives in the world beside the node rather than in the node, so that a large run can tell
//! at send time that a copy will arrive at a node that already has the message (see
//! `World::send`): such a copy costs its bandwidth but needs no delivery event.
//!
//! Invariant: an id is remembered from when it was first seen until `SEEN_MS` later or until
//! `SEEN` newer ids pushed it out, whichever comes first.

use std::collections::{HashSet, VecDeque};
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
    ids: HashSet<MsgId, BuildHasherDefault<IdHasher>>,
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
        if !self.ids.insert(id) {
            return false;
        }
        self.order.push_back((now_ms, id));
        true
    }

    /// Is `id` remembered (as of the last call to [`Seen::remember`])?
    pub fn has(&self, id: &MsgId) -> bool {
        self.ids.contains(id)
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
        assert!(s.has(&id));
        assert!(s.remember(id, 1_000 + SEEN_MS), "forgotten after the cache time");
    }
}
