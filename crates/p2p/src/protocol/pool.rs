//! Mempool sync: what a node fetches of a new peer's mempool after the handshake, so that
//! transactions admitted while the two were apart (a miner restarting, a partition) reach it;
//! and again after a block once gossip brought more than its pool had room for.
//!
//! Per peer: pages of the peer's inventory (`GetPoolTxids`, txids in ascending order), then
//! the transactions this node lacks (`GetTxs`, a batch at a time); one request in flight, at
//! most one per `interval_ms`, at most `max_txs` txids and `max_bytes` of transactions per
//! sync. Txids asked of one peer are not asked of another meanwhile.

use std::collections::{BTreeSet, VecDeque};

use scalechain_types::Hash;

/// The mempool-sync settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSyncConfig {
    /// Most txids fetched from one peer per sync (0 turns mempool sync off).
    pub max_txs: usize,
    /// Most bytes of transactions fetched from one peer per sync.
    pub max_bytes: usize,
    /// Txids per `GetTxs` request.
    pub batch: usize,
    /// Least time between two mempool-sync requests to one peer, ms.
    pub interval_ms: u64,
}

impl Default for PoolSyncConfig {
    /// 100,000 transactions or 64 MiB per sync, 1,024 per request, 20 requests a second.
    fn default() -> Self {
        PoolSyncConfig { max_txs: 100_000, max_bytes: 64 << 20, batch: 1_024, interval_ms: 50 }
    }
}

/// One peer's mempool sync.
#[derive(Clone, Debug)]
pub(super) struct PoolSync {
    /// The first txid of the next inventory page; `None` once the inventory is read.
    pub next: Option<Hash>,
    /// Txids of the inventory this node lacked when they came, to fetch.
    pub want: VecDeque<Hash>,
    /// Txids taken from the inventory so far (the `max_txs` budget).
    pub taken: usize,
    /// Bytes of transactions delivered so far (the `max_bytes` budget).
    pub bytes: usize,
    /// A request is in flight.
    pub busy: bool,
    /// When the last request went out.
    pub last_ms: Option<u64>,
}

impl PoolSync {
    pub fn new() -> PoolSync {
        PoolSync {
            next: Some(Hash([0; 32])),
            want: VecDeque::new(),
            taken: 0,
            bytes: 0,
            busy: false,
            last_ms: None,
        }
    }

    /// May a request go out at `now_ms`?
    pub fn due(&self, now_ms: u64, interval_ms: u64) -> bool {
        !self.busy && self.last_ms.is_none_or(|t| now_ms.saturating_sub(t) >= interval_ms)
    }
}

/// What to ask a peer next, if anything.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Next {
    /// Another inventory page from this txid on.
    Inventory(Hash),
    /// These transactions.
    Txs(Vec<Hash>),
    /// Nothing now (waiting for an answer or for the interval).
    Wait,
    /// Nothing ever: the sync is over.
    Done,
}

impl PoolSync {
    /// Picks the next request: transactions first (skipping those `have` or `inflight`, which
    /// another peer is asked for), then the next inventory page while the budget lasts.
    pub fn next(
        &mut self,
        cfg: &PoolSyncConfig,
        now_ms: u64,
        inflight: &BTreeSet<Hash>,
        have: impl Fn(&Hash) -> bool,
    ) -> Next {
        if !self.due(now_ms, cfg.interval_ms) {
            return Next::Wait;
        }
        if self.bytes >= cfg.max_bytes {
            return Next::Done;
        }
        let mut batch = Vec::new();
        while batch.len() < cfg.batch.max(1) {
            let Some(h) = self.want.pop_front() else { break };
            if !inflight.contains(&h) && !have(&h) {
                batch.push(h);
            }
        }
        if !batch.is_empty() {
            return Next::Txs(batch);
        }
        match self.next {
            Some(from) if self.taken < cfg.max_txs => Next::Inventory(from),
            _ => Next::Done,
        }
    }

    /// An inventory page asked from `from` for at most `max` came back: checks it is ascending
    /// from `from` and within `max`, queues what this node lacks within the budget, and moves
    /// to the next page (none after a short page). False if the page breaks the rules.
    pub fn on_inventory(
        &mut self,
        cfg: &PoolSyncConfig,
        from: Hash,
        max: usize,
        txids: &[Hash],
        have: impl Fn(&Hash) -> bool,
    ) -> bool {
        self.busy = false;
        if txids.len() > max
            || txids.first().is_some_and(|f| *f < from)
            || txids.windows(2).any(|w| w[0] >= w[1])
        {
            return false;
        }
        let room = cfg.max_txs.saturating_sub(self.taken);
        let taken = txids.len().min(room);
        self.taken += taken;
        self.want.extend(txids[..taken].iter().filter(|h| !have(h)).copied());
        self.next =
            if txids.len() < max || taken < txids.len() { None } else { txids.last().and_then(successor) };
        true
    }
}

/// The txid after `h` in ascending order (`h` + 1 as a big-endian number), none after the
/// last.
pub fn successor(h: &Hash) -> Option<Hash> {
    let mut b = h.0;
    for i in (0..32).rev() {
        let (v, carry) = b[i].overflowing_add(1);
        b[i] = v;
        if !carry {
            return Some(Hash(b));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(i: u8) -> Hash {
        let mut b = [0u8; 32];
        b[31] = i;
        Hash(b)
    }

    #[test]
    fn successor_counts_up_big_endian_and_ends() {
        assert_eq!(successor(&h(1)), Some(h(2)));
        let mut b = [0u8; 32];
        b[30] = 1;
        assert_eq!(successor(&h(255)), Some(Hash(b)));
        assert_eq!(successor(&Hash([0xff; 32])), None);
    }

    #[test]
    fn pages_then_missing_transactions_within_the_budget_and_the_pace() {
        let cfg = PoolSyncConfig { max_txs: 5, max_bytes: 100, batch: 2, interval_ms: 10 };
        let mut s = PoolSync::new();
        let none = BTreeSet::new();
        assert_eq!(s.next(&cfg, 0, &none, |_| false), Next::Inventory(Hash([0; 32])));
        s.busy = true;
        s.last_ms = Some(0);
        assert_eq!(s.next(&cfg, 20, &none, |_| false), Next::Wait);
        // A full page of 3: h(2) is known here; the next page starts after h(4).
        assert!(s.on_inventory(&cfg, Hash([0; 32]), 3, &[h(1), h(2), h(4)], |x| *x == h(2)));
        assert_eq!(s.next, Some(h(5)));
        assert_eq!(s.next(&cfg, 5, &none, |_| false), Next::Wait, "paced");
        let inflight: BTreeSet<Hash> = [h(1)].into_iter().collect();
        assert_eq!(s.next(&cfg, 10, &inflight, |_| false), Next::Txs(vec![h(4)]));
        s.last_ms = Some(10);
        assert_eq!(s.next(&cfg, 20, &none, |_| false), Next::Inventory(h(5)));
        // The budget of 5 txids ends the inventory after two of this page.
        assert!(s.on_inventory(&cfg, h(5), 3, &[h(5), h(6), h(7)], |_| false));
        assert_eq!((s.taken, s.next), (5, None));
        assert_eq!(s.next(&cfg, 30, &none, |_| false), Next::Txs(vec![h(5), h(6)]));
        assert_eq!(s.next(&cfg, 30, &none, |_| false), Next::Done);
    }

    #[test]
    fn pages_out_of_order_or_too_long_are_refused_and_a_short_page_ends_the_inventory() {
        let cfg = PoolSyncConfig::default();
        let mut s = PoolSync::new();
        assert!(!s.on_inventory(&cfg, h(3), 4, &[h(2), h(5)], |_| false));
        assert!(!s.on_inventory(&cfg, h(0), 4, &[h(5), h(5)], |_| false));
        assert!(!s.on_inventory(&cfg, h(0), 1, &[h(5), h(6)], |_| false));
        assert!(s.on_inventory(&cfg, h(0), 4, &[h(5), h(6)], |_| false));
        assert_eq!(s.next, None);
        // The byte budget spent: done even with txids left.
        s.bytes = cfg.max_bytes;
        assert_eq!(s.next(&cfg, 0, &BTreeSet::new(), |_| false), Next::Done);
    }
}
