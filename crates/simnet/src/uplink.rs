//! How a node's uplink is shared among the messages it sends ([`Uplink`]).
//!
//! - [`Uplink::Fifo`] (SimBlock's model, the default): one message after another at the full
//!   upload bandwidth. A block sent to eight peers reaches the first after one eighth of the
//!   time it takes to send all eight, so the first receivers relay it early.
//! - [`Uplink::Fair`]: as TCP connections share a bottleneck, the bandwidth is split equally
//!   among the peers the node has something queued for, and each peer's messages go one after
//!   another (one connection, one ordered stream). A block sent to eight peers reaches all
//!   eight at about the same time, the time it takes to send all eight. Checked against the real
//!   binary under Shadow (`study sim-check`), whose TCP shares its links this way.
//!
//! [`FairUplink`] is the second: egalitarian processor sharing over per-peer queues, in
//! integers (bit-µs), so a run is deterministic. The world keeps one pending
//! `Ev::UplinkTick` per node at the next end of a message; a tick whose epoch is stale
//! (messages came or went since) is ignored.
//!
//! Must not: lose a message (each pushed message is returned by [`FairUplink::finished`]
//! exactly once, unless its peer's queue is dropped with [`FairUplink::drop_peer`]), reorder
//! a peer's messages, or send faster than the bandwidth.

use std::collections::{BTreeMap, VecDeque};

use crate::wire::NodeId;

/// How a node's uplink is shared among the messages it sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Uplink {
    /// One message after another at the full bandwidth (SimBlock's model).
    #[default]
    Fifo,
    /// Shared equally among the peers with messages queued, each peer's in order (TCP's).
    Fair,
}

impl Uplink {
    /// The name in a model file: `fifo` or `fair`.
    pub fn name(self) -> &'static str {
        match self {
            Uplink::Fifo => "fifo",
            Uplink::Fair => "fair",
        }
    }

    /// The discipline a model file names.
    pub fn from_name(s: &str) -> Option<Uplink> {
        match s {
            "fifo" => Some(Uplink::Fifo),
            "fair" => Some(Uplink::Fair),
            _ => None,
        }
    }
}

/// A message in a peer's queue.
#[derive(Debug)]
struct Queued<T> {
    item: T,
    /// Work left: bits × 1,000,000 (a bandwidth of `b` bit/s does `b` of it per µs).
    left: u128,
    /// When it reached the head of its queue (began to leave), µs.
    started_us: u64,
}

/// A message that finished leaving: for whom, what, and when it began to leave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Sent<T> {
    pub to: NodeId,
    pub item: T,
    pub started_us: u64,
}

/// One node's uplink under [`Uplink::Fair`].
#[derive(Debug)]
pub(crate) struct FairUplink<T> {
    bps: u128,
    queues: BTreeMap<NodeId, VecDeque<Queued<T>>>,
    /// The time every head's progress is counted to, µs.
    last_us: u64,
    /// Changes whenever messages come or go: ticks scheduled before are stale.
    pub epoch: u64,
}

impl<T> FairUplink<T> {
    /// An idle uplink of `bps` bit/s (at least 1).
    pub fn new(bps: u64) -> FairUplink<T> {
        FairUplink { bps: u128::from(bps.max(1)), queues: BTreeMap::new(), last_us: 0, epoch: 0 }
    }

    /// Counts every head's progress up to `now_us`: each of the `k` active peers' heads gets
    /// `1 / k` of the bandwidth.
    fn advance(&mut self, now_us: u64) {
        let dt = u128::from(now_us.saturating_sub(self.last_us));
        self.last_us = self.last_us.max(now_us);
        let k = self.queues.len() as u128;
        if dt == 0 || k == 0 {
            return;
        }
        let done = dt * self.bps / k;
        for q in self.queues.values_mut() {
            if let Some(head) = q.front_mut() {
                head.left = head.left.saturating_sub(done);
            }
        }
    }

    /// Queues `bytes` for `to` at `now_us`; returns the time of the next end.
    pub fn push(&mut self, now_us: u64, to: NodeId, bytes: u64, item: T) -> Option<u64> {
        self.advance(now_us);
        let left = u128::from(bytes).saturating_mul(8_000_000).max(1);
        self.queues.entry(to).or_default().push_back(Queued { item, left, started_us: now_us });
        self.epoch += 1;
        self.next_end()
    }

    /// The messages that finished leaving by `now_us`, in peer order; the next end after.
    pub fn finished(&mut self, now_us: u64) -> (Vec<Sent<T>>, Option<u64>) {
        self.advance(now_us);
        let mut out = Vec::new();
        let mut emptied = Vec::new();
        for (&to, q) in self.queues.iter_mut() {
            if q.front().is_some_and(|h| h.left == 0) {
                if let Some(h) = q.pop_front() {
                    out.push(Sent { to, item: h.item, started_us: h.started_us });
                }
                match q.front_mut() {
                    Some(next) => next.started_us = now_us,
                    None => emptied.push(to),
                }
            }
        }
        for to in emptied {
            self.queues.remove(&to);
        }
        if !out.is_empty() {
            self.epoch += 1;
        }
        (out, self.next_end())
    }

    /// Drops what is queued for `peer` (its connection went down); the next end after.
    pub fn drop_peer(&mut self, now_us: u64, peer: NodeId) -> Option<u64> {
        self.advance(now_us);
        if self.queues.remove(&peer).is_some() {
            self.epoch += 1;
        }
        self.next_end()
    }

    /// When the next head finishes at the current share, µs.
    fn next_end(&self) -> Option<u64> {
        let k = self.queues.len() as u128;
        let least = self.queues.values().filter_map(|q| q.front()).map(|h| h.left).min()?;
        let us = (least * k).div_ceil(self.bps);
        Some(self.last_us.saturating_add(u64::try_from(us).unwrap_or(u64::MAX)))
    }

    /// How long what is queued takes to leave at the full bandwidth, µs.
    pub fn backlog_us(&self) -> u64 {
        let left: u128 = self.queues.values().flatten().map(|m| m.left).sum();
        u64::try_from(left.div_ceil(self.bps)).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the uplink to empty, returning (peer, item, started, ended) in order of ending.
    fn drain(u: &mut FairUplink<u32>, mut next: Option<u64>) -> Vec<(u32, u32, u64, u64)> {
        let mut out = Vec::new();
        while let Some(t) = next {
            let (sent, n) = u.finished(t);
            out.extend(sent.into_iter().map(|s| (s.to.0, s.item, s.started_us, t)));
            next = n;
        }
        out
    }

    #[test]
    fn peers_share_the_bandwidth_and_finish_together() {
        // 8 Mbit/s: 1,000 bytes take 1 ms alone.
        let mut u = FairUplink::new(8_000_000);
        let mut next = None;
        for p in 0..4 {
            next = u.push(0, NodeId(p), 1_000, p);
        }
        let done = drain(&mut u, next);
        assert_eq!(done.len(), 4);
        assert!(done.iter().all(|d| d.3 == 4_000), "four at a quarter each end together: {done:?}");
    }

    #[test]
    fn one_peer_s_messages_go_in_order_at_the_full_rate() {
        let mut u = FairUplink::new(8_000_000);
        u.push(0, NodeId(1), 1_000, 10);
        let next = u.push(0, NodeId(1), 2_000, 11);
        let done = drain(&mut u, next);
        assert_eq!(done, vec![(1, 10, 0, 1_000), (1, 11, 1_000, 3_000)]);
    }

    #[test]
    fn a_newcomer_slows_those_already_sending() {
        let mut u = FairUplink::new(8_000_000);
        u.push(0, NodeId(1), 1_000, 1);
        // Peer 1's message is half sent at 500 µs; from then on the two share the uplink, so
        // its other half takes 1 ms (ends at 1,500). By then peer 2's is half sent too, and
        // its rest goes alone, by 2,000.
        let next = u.push(500, NodeId(2), 1_000, 2);
        let done = drain(&mut u, next);
        assert_eq!(done, vec![(1, 1, 0, 1_500), (2, 2, 500, 2_000)]);
        assert_eq!(u.backlog_us(), 0);
    }

    #[test]
    fn a_dropped_peer_frees_its_share() {
        let mut u = FairUplink::new(8_000_000);
        u.push(0, NodeId(1), 1_000, 1);
        u.push(0, NodeId(2), 1_000, 2);
        assert_eq!(u.backlog_us(), 2_000);
        let next = u.drop_peer(500, NodeId(2));
        // Peer 1 had a quarter done at 500 µs; the rest alone takes 750 µs.
        assert_eq!(drain(&mut u, next), vec![(1, 1, 0, 1_250)]);
    }

    #[test]
    fn names_round_trip() {
        for u in [Uplink::Fifo, Uplink::Fair] {
            assert_eq!(Uplink::from_name(u.name()), Some(u));
        }
        assert_eq!(Uplink::from_name("tcp"), None);
    }
}
