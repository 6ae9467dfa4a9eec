//! Peer scoring: misbehaviour costs points, points recover slowly, and a peer whose score
//! falls to the ban threshold is disconnected and refused for a while.
//!
//! Pure: the caller passes the clock (`now_ms`); the peer key is generic so tests need no
//! network types. Maps are ordered by peer, so every answer (which peer is forgotten first, which
//! bans expire) is the same on every run.

use std::collections::BTreeMap;

/// Something a peer did wrong, with its cost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offence {
    /// A message that does not decode.
    Malformed,
    /// A transaction that breaks a consensus rule.
    InvalidTx,
    /// A block that breaks a consensus rule.
    InvalidBlock,
    /// A handshake for another chain or protocol version.
    WrongChain,
    /// Headers that do not connect or do not meet their targets.
    BadHeaders,
    /// More requests than the per-peer rate allows.
    RateLimited,
}

impl Offence {
    /// Points the offence costs (the ban threshold is [`BAN_SCORE`]).
    pub fn penalty(self) -> i32 {
        match self {
            Offence::Malformed => 50,
            Offence::InvalidTx => 20,
            Offence::InvalidBlock => 100,
            Offence::WrongChain => 100,
            Offence::BadHeaders => 100,
            Offence::RateLimited => 10,
        }
    }

    /// A stable name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Offence::Malformed => "malformed",
            Offence::InvalidTx => "invalid-tx",
            Offence::InvalidBlock => "invalid-block",
            Offence::WrongChain => "wrong-chain",
            Offence::BadHeaders => "bad-headers",
            Offence::RateLimited => "rate-limited",
        }
    }
}

/// A peer at or below minus this score is banned.
pub const BAN_SCORE: i32 = 100;
/// How long a ban lasts.
pub const BAN_MS: u64 = 10 * 60 * 1000;
/// Points recovered per second of good behaviour.
pub const RECOVERY_PER_S: i32 = 1;

/// Where a peer stands after a penalty: what the caller must do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Keep the peer.
    Keep,
    /// Disconnect it; refuse it until the given time.
    Ban {
        /// Clock value (ms) when the ban ends.
        until_ms: u64,
    },
}

#[derive(Clone, Copy, Debug)]
struct Entry {
    score: i32,
    updated_ms: u64,
}

/// Scores and bans of the peers a node has seen.
#[derive(Debug)]
pub struct PeerBook<K> {
    scores: BTreeMap<K, Entry>,
    banned: BTreeMap<K, u64>,
    max_entries: usize,
}

impl<K: Ord + Clone> PeerBook<K> {
    /// A book that remembers at most `max_entries` scores and as many bans (the oldest
    /// forgotten first).
    pub fn new(max_entries: usize) -> Self {
        PeerBook { scores: BTreeMap::new(), banned: BTreeMap::new(), max_entries: max_entries.max(1) }
    }

    /// The peer's current score (0 for an unknown peer).
    pub fn score(&self, peer: &K, now_ms: u64) -> i32 {
        self.scores.get(peer).map_or(0, |e| recovered(*e, now_ms))
    }

    /// True while the peer is banned.
    pub fn is_banned(&self, peer: &K, now_ms: u64) -> bool {
        self.banned.get(peer).is_some_and(|until| now_ms < *until)
    }

    /// The time a peer's ban ends, while it lasts.
    pub fn banned_until(&self, peer: &K, now_ms: u64) -> Option<u64> {
        self.banned.get(peer).copied().filter(|until| now_ms < *until)
    }

    /// Records an offence; says whether to ban.
    pub fn penalise(&mut self, peer: &K, offence: Offence, now_ms: u64) -> Standing {
        if !self.scores.contains_key(peer) && self.scores.len() >= self.max_entries {
            // The least recently penalised is forgotten (ties: the smallest key).
            if let Some(oldest) = self.scores.iter().min_by_key(|(_, e)| e.updated_ms).map(|(k, _)| k.clone())
            {
                self.scores.remove(&oldest);
            }
        }
        let score = self.score(peer, now_ms).saturating_sub(offence.penalty());
        self.scores.insert(peer.clone(), Entry { score, updated_ms: now_ms });
        if score <= -BAN_SCORE {
            let until_ms = now_ms.saturating_add(BAN_MS);
            if !self.banned.contains_key(peer) && self.banned.len() >= self.max_entries {
                if let Some(first) = self.banned.iter().min_by_key(|(_, u)| **u).map(|(k, _)| k.clone()) {
                    self.banned.remove(&first);
                }
            }
            self.banned.insert(peer.clone(), until_ms);
            self.scores.remove(peer);
            Standing::Ban { until_ms }
        } else {
            Standing::Keep
        }
    }

    /// Takes back what a previous run knew of a peer (the node's persisted peer book): a ban
    /// that lasts past `now_ms`, or else a score below 0 (counted from `now_ms`, so it
    /// recovers from here).
    pub fn restore(&mut self, peer: &K, score: i32, banned_until_ms: Option<u64>, now_ms: u64) {
        if let Some(until) = banned_until_ms.filter(|u| *u > now_ms) {
            if self.banned.contains_key(peer) || self.banned.len() < self.max_entries {
                self.banned.insert(peer.clone(), until);
            }
            return;
        }
        if score < 0 && (self.scores.contains_key(peer) || self.scores.len() < self.max_entries) {
            let score = score.max(1 - BAN_SCORE);
            self.scores.insert(peer.clone(), Entry { score, updated_ms: now_ms });
        }
    }

    /// Forgets expired bans and returns their peers, in key order (the caller lets them in
    /// again).
    pub fn expire(&mut self, now_ms: u64) -> Vec<K> {
        let gone: Vec<K> =
            self.banned.iter().filter(|(_, u)| now_ms >= **u).map(|(k, _)| k.clone()).collect();
        for k in &gone {
            self.banned.remove(k);
        }
        gone
    }

    /// Peers banned now.
    pub fn banned(&self, now_ms: u64) -> Vec<K> {
        self.banned.iter().filter(|(_, u)| now_ms < **u).map(|(k, _)| k.clone()).collect()
    }
}

fn recovered(e: Entry, now_ms: u64) -> i32 {
    let secs = now_ms.saturating_sub(e.updated_ms) / 1000;
    let gain = i32::try_from(secs).unwrap_or(i32::MAX).saturating_mul(RECOVERY_PER_S);
    e.score.saturating_add(gain).min(0)
}

/// A token bucket for one peer's requests.
#[derive(Clone, Copy, Debug)]
pub struct RateLimit {
    tokens: f64,
    last_ms: u64,
    per_s: f64,
    burst: f64,
}

impl RateLimit {
    /// `per_s` requests per second on average, bursts of `burst`.
    pub fn new(per_s: f64, burst: f64, now_ms: u64) -> Self {
        RateLimit { tokens: burst, last_ms: now_ms, per_s, burst }
    }

    /// Takes `cost` tokens; false if there are not enough (the request must be refused).
    pub fn take(&mut self, cost: f64, now_ms: u64) -> bool {
        let dt = now_ms.saturating_sub(self.last_ms) as f64 / 1000.0;
        self.tokens = (self.tokens + dt * self.per_s).min(self.burst);
        self.last_ms = now_ms;
        if self.tokens >= cost {
            self.tokens -= cost;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_blocks_ban_at_once_invalid_txs_after_five() {
        let mut b = PeerBook::new(16);
        assert!(matches!(b.penalise(&1, Offence::InvalidBlock, 0), Standing::Ban { until_ms: BAN_MS }));
        assert!(b.is_banned(&1, 1));
        assert_eq!(b.banned_until(&1, 1), Some(BAN_MS));
        assert!(!b.is_banned(&1, BAN_MS));
        for i in 0..4 {
            assert_eq!(b.penalise(&2, Offence::InvalidTx, i), Standing::Keep);
        }
        assert!(matches!(b.penalise(&2, Offence::InvalidTx, 5), Standing::Ban { .. }));
        assert!(!b.is_banned(&3, 0));
        // Expiry hands back the peers whose bans ended, once, in key order.
        assert_eq!(b.expire(BAN_MS), vec![1]);
        assert_eq!(b.expire(BAN_MS + 5), vec![2]);
        assert!(b.expire(u64::MAX).is_empty());
    }

    #[test]
    fn scores_recover_with_time_but_never_above_zero() {
        let mut b = PeerBook::new(16);
        b.penalise(&7, Offence::Malformed, 0);
        assert_eq!(b.score(&7, 0), -50);
        assert_eq!(b.score(&7, 20_000), -30);
        assert_eq!(b.score(&7, 1_000_000), 0);
        // Recovered points count: another malformed message after recovery does not ban.
        assert_eq!(b.penalise(&7, Offence::Malformed, 60_000), Standing::Keep);
    }

    #[test]
    fn the_book_is_bounded() {
        let mut b = PeerBook::new(3);
        for k in 0..10 {
            b.penalise(&k, Offence::RateLimited, k);
        }
        assert!(b.scores.len() <= 3);
        assert_eq!(b.score(&9, 9), -10);
        assert_eq!(b.score(&0, 9), 0);
        for k in 0..10 {
            b.penalise(&k, Offence::InvalidBlock, k);
        }
        assert_eq!(b.banned.len(), 3);
        assert!(b.is_banned(&9, 9) && !b.is_banned(&0, 9));
    }

    #[test]
    fn restored_bans_and_scores_count_from_now() {
        let mut b = PeerBook::new(2);
        b.restore(&1, -100, Some(500), 100);
        assert!(b.is_banned(&1, 499) && !b.is_banned(&1, 500));
        // An expired ban is not restored; a score is, short of a ban, recovering from now.
        b.restore(&2, -250, Some(50), 100);
        assert!(!b.is_banned(&2, 100));
        assert_eq!(b.score(&2, 100), -99);
        assert_eq!(b.score(&2, 1_100), -98);
        b.restore(&3, 0, None, 100);
        assert_eq!(b.score(&3, 100), 0);
    }

    #[test]
    fn rate_limit_refills() {
        let mut r = RateLimit::new(10.0, 5.0, 0);
        for _ in 0..5 {
            assert!(r.take(1.0, 0));
        }
        assert!(!r.take(1.0, 0));
        assert!(r.take(1.0, 100));
        assert!(!r.take(1.0, 100));
    }
}
