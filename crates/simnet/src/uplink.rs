//! How a node's uplink is shared among the messages it sends ([`Uplink`]).
//!
//! - [`Uplink::Fifo`] (SimBlock's model, the default): one message after another at the full
//!   upload bandwidth. A block sent to eight peers reaches the first after one eighth of the
//!   time it takes to send all eight, so the first receivers relay it early.
//! - [`Uplink::Fair`]: as TCP connections share a bottleneck in the long run, the bandwidth is
//!   split equally among the peers the node has something queued for, and each peer's messages
//!   go one after another (one connection, one ordered stream). A block sent to eight peers
//!   reaches all eight at about the same time, the time it takes to send all eight.
//! - [`Uplink::Tcp`]: as a host's TCP sockets carry what an application writes to many of them
//!   at once. The node writes each connection's message a socket send buffer at a time
//!   ([`SEND_BUFFER_BYTES`]), and writes a connection's next buffer when its last one has left;
//!   the host sends what was written in the order it was written (one first-in-first-out
//!   interface queue), at the full bandwidth, but a connection carries at most one TCP window
//!   per round trip ([`WINDOW_BYTES`] / the link's round-trip time): what the buffer at the head
//!   of the line cannot take goes to the next in line. A 232 KB message to many peers so
//!   leaves in two rounds: every copy's first buffer, then every copy's rest, so the first
//!   copies end after about half the time `Fair` takes for all, and the last with it.
//!
//! All three were checked against the real binary under Shadow (`study sim-check`,
//! docs/SIMULATOR.md under Validity). The constants of `Tcp` are Shadow's defaults, read in its
//! source, not fitted.
//!
//! [`SharedUplink`] runs `Fair` and `Tcp`: per-peer queues, in integers (bit-µs), so a run is
//! deterministic. The world keeps one pending `Ev::UplinkTick` per node at the next end of a
//! message (under `Tcp`, of a buffer); a tick whose epoch is stale (messages came or went
//! since) is ignored.
//!
//! Must not: lose a message (each pushed message is returned by [`SharedUplink::finished`]
//! exactly once, unless its peer's queue is dropped with [`SharedUplink::drop_peer`]), reorder
//! a peer's messages, send faster than the bandwidth, or (under `Tcp`) send to a peer faster
//! than its window allows.

use std::collections::{BTreeMap, VecDeque};

use crate::wire::NodeId;

/// The TCP window [`Uplink::Tcp`] allows a connection per round trip, bytes: Shadow's
/// default receive buffer (174,760 bytes, its `tcp_rmem` default; a connection's window is at
/// most what its receiver advertises, and Shadow's connections that took no round-trip sample
/// keep this buffer). Not fitted to any result.
pub const WINDOW_BYTES: u64 = 174_760;

/// What an application writes to one TCP socket at a time under [`Uplink::Tcp`], bytes:
/// Shadow's default send buffer (131,072 bytes). A node writing a message to many
/// connections fills each socket's buffer in turn and writes the rest when it drains, so the
/// copies leave a buffer at a time, round by round.
pub const SEND_BUFFER_BYTES: u64 = 131_072;

/// How a node's uplink is shared among the messages it sends.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Uplink {
    /// One message after another at the full bandwidth (SimBlock's model).
    #[default]
    Fifo,
    /// Shared equally among the peers with messages queued, each peer's in order.
    Fair,
    /// A send buffer at a time, in the order written, each connection at most a TCP window
    /// per round trip.
    Tcp,
}

impl Uplink {
    /// Every discipline, in the order the docs list them.
    pub const ALL: [Uplink; 3] = [Uplink::Fifo, Uplink::Fair, Uplink::Tcp];

    /// The name in a model file: `fifo`, `fair` or `tcp`.
    pub fn name(self) -> &'static str {
        match self {
            Uplink::Fifo => "fifo",
            Uplink::Fair => "fair",
            Uplink::Tcp => "tcp",
        }
    }

    /// The discipline a model file names.
    pub fn from_name(s: &str) -> Option<Uplink> {
        Uplink::ALL.into_iter().find(|u| u.name() == s)
    }
}

/// [`SEND_BUFFER_BYTES`] as work (bits × 1,000,000).
const CHUNK: u128 = SEND_BUFFER_BYTES as u128 * 8_000_000;

/// A message in a peer's queue.
#[derive(Debug)]
struct Queued<T> {
    item: T,
    /// Work left: bits × 1,000,000 (a bandwidth of `b` bit/s does `b` of it per µs).
    left: u128,
    /// When it reached the head of its queue (began to leave), µs.
    started_us: u64,
    /// Work left of the chunk being written (under `Tcp`: a send buffer's worth).
    chunk_left: u128,
    /// Its place in the order the node wrote its messages (its chunk's, under `Tcp`).
    seq: u64,
}

/// One peer's connection: its messages in order, and the most it may carry, bit/s.
#[derive(Debug)]
struct Conn<T> {
    msgs: VecDeque<Queued<T>>,
    cap_bps: u128,
}

/// A message that finished leaving: for whom, what, and when it began to leave.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Sent<T> {
    pub to: NodeId,
    pub item: T,
    pub started_us: u64,
}

/// One node's uplink under [`Uplink::Fair`] or [`Uplink::Tcp`].
#[derive(Debug)]
pub(crate) struct SharedUplink<T> {
    bps: u128,
    /// `Tcp` (else `Fair`).
    tcp: bool,
    queues: BTreeMap<NodeId, Conn<T>>,
    /// The time every head's progress is counted to, µs.
    last_us: u64,
    /// The next message's place in the order written.
    next_seq: u64,
    /// Changes whenever messages come or go: ticks scheduled before are stale.
    pub epoch: u64,
}

impl<T> SharedUplink<T> {
    /// An idle uplink of `bps` bit/s (at least 1), shared as `discipline` says (`Tcp`, or
    /// else `Fair`).
    pub fn new(bps: u64, discipline: Uplink) -> SharedUplink<T> {
        SharedUplink {
            bps: u128::from(bps.max(1)),
            tcp: discipline == Uplink::Tcp,
            queues: BTreeMap::new(),
            last_us: 0,
            next_seq: 0,
            epoch: 0,
        }
    }

    /// Under `Tcp`, each active peer's rate, bit/s, in peer order: the heads in the order
    /// written, each taking what its window allows of what the earlier ones left. (`Fair`
    /// needs no rates: every head gets `1 / k` of the bandwidth, counted in `advance`.)
    fn rates(&self) -> Vec<u128> {
        let mut order: Vec<(u64, usize, u128)> = self
            .queues
            .values()
            .enumerate()
            .map(|(i, c)| (c.msgs.front().map_or(u64::MAX, |h| h.seq), i, c.cap_bps))
            .collect();
        order.sort_unstable();
        let mut rates = vec![0; self.queues.len()];
        let mut free = self.bps;
        for (_, i, cap) in order {
            let r = cap.min(free);
            rates[i] = r;
            free -= r;
        }
        rates
    }

    /// Counts every head's progress up to `now_us` at the current rates.
    fn advance(&mut self, now_us: u64) {
        let dt = u128::from(now_us.saturating_sub(self.last_us));
        self.last_us = self.last_us.max(now_us);
        let k = self.queues.len() as u128;
        if dt == 0 || k == 0 {
            return;
        }
        if !self.tcp {
            let done = dt * self.bps / k;
            for q in self.queues.values_mut() {
                if let Some(head) = q.msgs.front_mut() {
                    head.left = head.left.saturating_sub(done);
                }
            }
            return;
        }
        let rates = self.rates();
        for (q, r) in self.queues.values_mut().zip(rates) {
            if let Some(head) = q.msgs.front_mut() {
                let done = (dt * r).min(head.chunk_left);
                head.chunk_left -= done;
                head.left = head.left.saturating_sub(done);
            }
        }
    }

    /// Queues `bytes` for `to` at `now_us` on a connection that may carry at most `cap_bps`
    /// (under `Tcp`; the bandwidth if that is less, or if `cap_bps` is 0); returns the time
    /// of the next end.
    pub fn push(&mut self, now_us: u64, to: NodeId, bytes: u64, cap_bps: u64, item: T) -> Option<u64> {
        self.advance(now_us);
        let left = u128::from(bytes).saturating_mul(8_000_000).max(1);
        let chunk_left = left.min(CHUNK);
        let cap_bps = if cap_bps == 0 { self.bps } else { u128::from(cap_bps).min(self.bps) };
        let seq = self.next_seq;
        self.next_seq += 1;
        let conn = self.queues.entry(to).or_insert_with(|| Conn { msgs: VecDeque::new(), cap_bps });
        conn.cap_bps = cap_bps;
        conn.msgs.push_back(Queued { item, left, chunk_left, started_us: now_us, seq });
        self.epoch += 1;
        self.next_end()
    }

    /// The messages that finished leaving by `now_us`, in peer order; the next end after.
    /// Under `Tcp`, a message whose buffer left writes its next chunk, at the back of the
    /// line, and the next message of a peer whose message left is written now.
    pub fn finished(&mut self, now_us: u64) -> (Vec<Sent<T>>, Option<u64>) {
        self.advance(now_us);
        let mut out = Vec::new();
        let mut emptied = Vec::new();
        let mut rewritten = false;
        for (&to, q) in self.queues.iter_mut() {
            let Some(head) = q.msgs.front_mut() else { continue };
            if head.left > 0 {
                if self.tcp && head.chunk_left == 0 {
                    head.chunk_left = head.left.min(CHUNK);
                    head.seq = self.next_seq;
                    self.next_seq += 1;
                    rewritten = true;
                }
                continue;
            }
            if let Some(h) = q.msgs.pop_front() {
                out.push(Sent { to, item: h.item, started_us: h.started_us });
            }
            match q.msgs.front_mut() {
                Some(next) => {
                    next.started_us = now_us;
                    next.seq = self.next_seq;
                    self.next_seq += 1;
                }
                None => emptied.push(to),
            }
        }
        for to in emptied {
            self.queues.remove(&to);
        }
        if !out.is_empty() || rewritten {
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

    /// When the next head finishes at the current rates, µs.
    fn next_end(&self) -> Option<u64> {
        let us = if self.tcp {
            let rates = self.rates();
            self.queues
                .values()
                .zip(rates)
                .filter(|(_, r)| *r > 0)
                .filter_map(|(q, r)| q.msgs.front().map(|h| h.chunk_left.div_ceil(r)))
                .min()?
        } else {
            let k = self.queues.len() as u128;
            let least = self.queues.values().filter_map(|q| q.msgs.front()).map(|h| h.left).min()?;
            (least * k).div_ceil(self.bps)
        };
        Some(self.last_us.saturating_add(u64::try_from(us).unwrap_or(u64::MAX)))
    }

    /// A bound on how long what is queued for `peer` takes to leave, µs: everything queued at
    /// the full bandwidth and, under `Tcp`, what is queued for `peer` again at its connection's
    /// rate (a window-bound connection drains slower than the uplink).
    pub fn backlog_us(&self, peer: NodeId) -> u64 {
        let left: u128 = self.queues.values().flat_map(|q| &q.msgs).map(|m| m.left).sum();
        let mut us = left.div_ceil(self.bps);
        if let Some(q) = self.queues.get(&peer).filter(|_| self.tcp) {
            let mine: u128 = q.msgs.iter().map(|m| m.left).sum();
            us = us.saturating_add(mine.div_ceil(q.cap_bps.max(1)));
        }
        u64::try_from(us).unwrap_or(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the uplink to empty, returning (peer, item, started, ended) in order of ending.
    fn drain(u: &mut SharedUplink<u32>, mut next: Option<u64>) -> Vec<(u32, u32, u64, u64)> {
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
        let mut u = SharedUplink::new(8_000_000, Uplink::Fair);
        let mut next = None;
        for p in 0..4 {
            next = u.push(0, NodeId(p), 1_000, 0, p);
        }
        let done = drain(&mut u, next);
        assert_eq!(done.len(), 4);
        assert!(done.iter().all(|d| d.3 == 4_000), "four at a quarter each end together: {done:?}");
    }

    #[test]
    fn one_peer_s_messages_go_in_order_at_the_full_rate() {
        let mut u = SharedUplink::new(8_000_000, Uplink::Fair);
        u.push(0, NodeId(1), 1_000, 0, 10);
        let next = u.push(0, NodeId(1), 2_000, 0, 11);
        let done = drain(&mut u, next);
        assert_eq!(done, vec![(1, 10, 0, 1_000), (1, 11, 1_000, 3_000)]);
    }

    #[test]
    fn a_newcomer_slows_those_already_sending() {
        let mut u = SharedUplink::new(8_000_000, Uplink::Fair);
        u.push(0, NodeId(1), 1_000, 0, 1);
        // Peer 1's message is half sent at 500 µs; from then on the two share the uplink, so
        // its other half takes 1 ms (ends at 1,500). By then peer 2's is half sent too, and
        // its rest goes alone, by 2,000.
        let next = u.push(500, NodeId(2), 1_000, 0, 2);
        let done = drain(&mut u, next);
        assert_eq!(done, vec![(1, 1, 0, 1_500), (2, 2, 500, 2_000)]);
        assert_eq!(u.backlog_us(NodeId(0)), 0);
    }

    #[test]
    fn a_dropped_peer_frees_its_share() {
        let mut u = SharedUplink::new(8_000_000, Uplink::Fair);
        u.push(0, NodeId(1), 1_000, 0, 1);
        u.push(0, NodeId(2), 1_000, 0, 2);
        assert_eq!(u.backlog_us(NodeId(1)), 2_000);
        let next = u.drop_peer(500, NodeId(2));
        // Peer 1 had a quarter done at 500 µs; the rest alone takes 750 µs.
        assert_eq!(drain(&mut u, next), vec![(1, 1, 0, 1_250)]);
    }

    #[test]
    fn a_tcp_uplink_without_window_bound_sends_in_the_order_written() {
        let mut u = SharedUplink::new(8_000_000, Uplink::Tcp);
        let mut next = None;
        for p in [3, 1, 2] {
            next = u.push(0, NodeId(p), 1_000, 100_000_000, p);
        }
        let done = drain(&mut u, next);
        assert_eq!(done, vec![(3, 3, 0, 1_000), (1, 1, 0, 2_000), (2, 2, 0, 3_000)]);
    }

    #[test]
    fn a_window_bound_connection_leaves_the_rest_of_the_bandwidth_to_the_next_in_line() {
        let mut u = SharedUplink::new(8_000_000, Uplink::Tcp);
        // Peer 1 is written first but may carry 2 Mbit/s (a window per long round trip); peer
        // 2 takes the other 6 Mbit/s: its 1,000 bytes leave after 1,334 µs, and peer 1 keeps
        // its 2 Mbit/s to the end (4,000 µs), never faster, though the uplink is idle then.
        u.push(0, NodeId(1), 1_000, 2_000_000, 1);
        let next = u.push(0, NodeId(2), 1_000, 0, 2);
        // What is queued for peer 1 takes 4 ms at its window's rate: the bound says no less.
        assert_eq!(u.backlog_us(NodeId(1)), 2_000 + 4_000);
        let done = drain(&mut u, next);
        assert_eq!(done, vec![(2, 2, 0, 1_334), (1, 1, 0, 4_000)]);
    }

    #[test]
    fn window_bound_connections_leave_side_by_side() {
        let mut u = SharedUplink::new(8_000_000, Uplink::Tcp);
        let mut next = None;
        for p in 0..4 {
            next = u.push(0, NodeId(p), 1_000, 2_000_000, p);
        }
        let done = drain(&mut u, next);
        assert!(done.iter().all(|d| d.3 == 4_000), "four at their windows end together: {done:?}");
        assert_eq!(u.backlog_us(NodeId(0)), 0);
    }

    #[test]
    fn a_tcp_uplink_writes_a_send_buffer_at_a_time_round_by_round() {
        // 200,000 bytes to each of two peers at 8 Mbit/s, no window bound: peer 1's first
        // 131,072 bytes leave by 131,072 µs, peer 2's by 262,144; then peer 1's other 68,928
        // (by 331,072) and peer 2's (by 400,000). One after another, peer 1's copy would have
        // ended at 200,000 µs; shared equally, both at 400,000.
        let mut u = SharedUplink::new(8_000_000, Uplink::Tcp);
        u.push(0, NodeId(1), 200_000, 0, 1);
        let next = u.push(0, NodeId(2), 200_000, 0, 2);
        assert_eq!(drain(&mut u, next), vec![(1, 1, 0, 331_072), (2, 2, 0, 400_000)]);
    }

    #[test]
    fn names_round_trip() {
        for u in Uplink::ALL {
            assert_eq!(Uplink::from_name(u.name()), Some(u));
        }
        assert_eq!(Uplink::from_name("reno"), None);
    }
}
