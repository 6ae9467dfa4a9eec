//! The orphan pool: transactions whose parent is not known yet, held until it arrives.
//!
//! Gossip does not deliver parents before children when they travel through different peers,
//! and a client may submit a child to one node before its parent reached it. Such a
//! transaction is not refused: it waits here, keyed by the parent txids it misses, and is
//! offered to the pool again when one of them is admitted or confirmed
//! ([`crate::Mempool::offer`]).
//!
//! Bounded four ways: a count and a byte total (past them the oldest orphans leave first), a
//! share per source (a peer, or the local API: past it that source's own oldest orphans leave,
//! so one peer cannot push everybody else's out), and an age (an orphan older than
//! `expiry_ms` leaves). Pure: the clock comes in as `now_ms`; sources are opaque `u64` tags the
//! caller assigns (the node derives one from the peer id); every map is ordered.

use std::collections::{BTreeMap, BTreeSet};

use scalechain_types::{Hash, Tx};

/// Where an orphan came from: a peer's tag, or `None` for the node's own API. Each source has
/// its own share of the pool.
pub type OrphanSource = Option<u64>;

/// Limits of the orphan pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrphanConfig {
    /// Most orphans held (0 disables the pool: a transaction missing a parent is refused).
    pub max_txs: usize,
    /// Most bytes held (sum of encodings).
    pub max_bytes: u64,
    /// Most orphans held from one source.
    pub max_per_source: usize,
    /// Most bytes held from one source.
    pub max_bytes_per_source: u64,
    /// An orphan whose parent has not come after this long leaves, ms.
    pub expiry_ms: u64,
}

impl Default for OrphanConfig {
    /// 5,000 orphans or 10 MB, a quarter of either per source, 10 minutes.
    fn default() -> Self {
        OrphanConfig {
            max_txs: 5_000,
            max_bytes: 10_000_000,
            max_per_source: 1_250,
            max_bytes_per_source: 2_500_000,
            expiry_ms: 10 * 60 * 1000,
        }
    }
}

/// Running totals of the orphan pool since it was created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrphanCounters {
    /// Transactions taken in as orphans (counted by [`crate::Mempool::offer`]: an orphan
    /// released and held again while it waits for another parent counts once).
    pub held: u64,
    /// Orphans admitted to the pool once their parents came.
    pub admitted: u64,
    /// Orphans offered again once a parent came and refused for another reason.
    pub refused: u64,
    /// Orphans that left because they were older than the expiry.
    pub expired: u64,
    /// Orphans pushed out to make room (count, bytes or a source's share).
    pub evicted: u64,
    /// Orphans that left because a block confirmed them.
    pub confirmed: u64,
}

/// What the orphan pool holds now, and its totals.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrphanStats {
    /// Orphans held.
    pub count: usize,
    /// Bytes held.
    pub bytes: u64,
    /// Running totals.
    pub counters: OrphanCounters,
}

#[derive(Clone, Debug)]
struct Orphan {
    tx: Tx,
    size: u64,
    source: OrphanSource,
    /// (arrival time, sequence number): its key in `by_arrival`.
    arrival: (u64, u64),
    /// The parent txids it missed when it was held.
    parents: Vec<Hash>,
}

/// An orphan handed back to be offered again: the transaction, its source and when it first
/// arrived (kept if it is held again, so waiting never extends its expiry).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Released {
    /// The transaction.
    pub tx: Tx,
    /// Where it came from.
    pub source: OrphanSource,
    /// When it was first held, ms.
    pub arrived_ms: u64,
}

/// Transactions waiting for their parents (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct OrphanPool {
    cfg: OrphanConfig,
    orphans: BTreeMap<Hash, Orphan>,
    /// Parent txid → the orphans waiting for it.
    by_parent: BTreeMap<Hash, BTreeSet<Hash>>,
    /// (arrival time, sequence) → txid: oldest first.
    by_arrival: BTreeMap<(u64, u64), Hash>,
    /// Source → its orphans by arrival, and their bytes.
    by_source: BTreeMap<OrphanSource, (BTreeSet<(u64, u64)>, u64)>,
    bytes: u64,
    next_seq: u64,
    counters: OrphanCounters,
}

impl OrphanPool {
    /// An empty pool with these limits.
    pub fn new(cfg: OrphanConfig) -> OrphanPool {
        OrphanPool { cfg, ..OrphanPool::default() }
    }

    /// Its limits.
    pub fn config(&self) -> &OrphanConfig {
        &self.cfg
    }

    /// Orphans held.
    pub fn len(&self) -> usize {
        self.orphans.len()
    }

    /// Holds nothing?
    pub fn is_empty(&self) -> bool {
        self.orphans.is_empty()
    }

    /// Bytes held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Is `txid` held?
    pub fn contains(&self, txid: &Hash) -> bool {
        self.orphans.contains_key(txid)
    }

    /// Orphans held from `source`.
    pub fn held_from(&self, source: OrphanSource) -> usize {
        self.by_source.get(&source).map_or(0, |(s, _)| s.len())
    }

    /// Current figures and totals.
    pub fn stats(&self) -> OrphanStats {
        OrphanStats { count: self.len(), bytes: self.bytes, counters: self.counters.clone() }
    }

    pub(crate) fn counters_mut(&mut self) -> &mut OrphanCounters {
        &mut self.counters
    }

    /// Could a transaction of `size` bytes be held at all?
    pub fn fits(&self, size: u64) -> bool {
        self.cfg.max_txs > 0
            && self.cfg.max_per_source > 0
            && size <= self.cfg.max_bytes
            && size <= self.cfg.max_bytes_per_source
    }

    /// Holds `tx` (its txid and encoded size given) from `source`, waiting for `parents`, as
    /// first seen at `arrived_ms`; makes room by sending the source's own oldest orphans away
    /// when its share is full, then the oldest of all when the pool is. Returns the txids that
    /// left to make room, or `None` if it cannot be held ([`OrphanPool::fits`] is false, or
    /// it is held already).
    pub fn hold(
        &mut self,
        tx: Tx,
        txid: Hash,
        size: u64,
        parents: Vec<Hash>,
        source: OrphanSource,
        arrived_ms: u64,
    ) -> Option<Vec<Hash>> {
        if !self.fits(size) || self.orphans.contains_key(&txid) {
            return None;
        }
        let mut evicted = Vec::new();
        loop {
            let (n, b) = self.by_source.get(&source).map_or((0, 0), |(s, b)| (s.len(), *b));
            if n < self.cfg.max_per_source && b + size <= self.cfg.max_bytes_per_source {
                break;
            }
            let Some(oldest) = self.by_source.get(&source).and_then(|(s, _)| s.first().copied()) else {
                break;
            };
            let Some(id) = self.by_arrival.get(&oldest).copied() else { break };
            self.remove(&id);
            evicted.push(id);
        }
        while self.orphans.len() >= self.cfg.max_txs || self.bytes + size > self.cfg.max_bytes {
            let Some((_, id)) = self.by_arrival.first_key_value().map(|(k, v)| (*k, *v)) else { break };
            self.remove(&id);
            evicted.push(id);
        }
        self.counters.evicted += evicted.len() as u64;
        let arrival = (arrived_ms, self.next_seq);
        self.next_seq += 1;
        let mut parents = parents;
        parents.sort_unstable();
        parents.dedup();
        for p in &parents {
            self.by_parent.entry(*p).or_default().insert(txid);
        }
        self.by_arrival.insert(arrival, txid);
        let s = self.by_source.entry(source).or_default();
        s.0.insert(arrival);
        s.1 += size;
        self.bytes += size;
        self.orphans.insert(txid, Orphan { tx, size, source, arrival, parents });
        Some(evicted)
    }

    /// Takes `txid` out; true if it was held.
    pub fn remove(&mut self, txid: &Hash) -> bool {
        let Some(o) = self.orphans.remove(txid) else { return false };
        for p in &o.parents {
            if let Some(set) = self.by_parent.get_mut(p) {
                set.remove(txid);
                if set.is_empty() {
                    self.by_parent.remove(p);
                }
            }
        }
        self.by_arrival.remove(&o.arrival);
        if let Some(s) = self.by_source.get_mut(&o.source) {
            s.0.remove(&o.arrival);
            s.1 = s.1.saturating_sub(o.size);
            if s.0.is_empty() {
                self.by_source.remove(&o.source);
            }
        }
        self.bytes = self.bytes.saturating_sub(o.size);
        true
    }

    /// Takes out every orphan waiting for one of `parents` (each once, oldest first), to be
    /// offered again.
    pub fn release_children<'a>(&mut self, parents: impl IntoIterator<Item = &'a Hash>) -> Vec<Released> {
        let mut ids: BTreeSet<Hash> = BTreeSet::new();
        for p in parents {
            if let Some(set) = self.by_parent.get(p) {
                ids.extend(set.iter().copied());
            }
        }
        let mut found: Vec<((u64, u64), Hash)> =
            ids.into_iter().filter_map(|id| self.orphans.get(&id).map(|o| (o.arrival, id))).collect();
        found.sort_unstable();
        let mut out = Vec::with_capacity(found.len());
        for (_, id) in found {
            if let Some(o) = self.orphans.get(&id) {
                let r = Released { tx: o.tx.clone(), source: o.source, arrived_ms: o.arrival.0 };
                self.remove(&id);
                out.push(r);
            }
        }
        out
    }

    /// Sends away orphans held since `now_ms - expiry_ms` or earlier; returns their txids.
    pub fn expire(&mut self, now_ms: u64) -> Vec<Hash> {
        let mut gone = Vec::new();
        while let Some((&(at, _), &id)) = self.by_arrival.first_key_value() {
            if now_ms.saturating_sub(at) < self.cfg.expiry_ms {
                break;
            }
            self.remove(&id);
            gone.push(id);
        }
        self.counters.expired += gone.len() as u64;
        gone
    }

    /// Sends away every orphan `source` brought (it left); returns how many.
    pub fn forget_source(&mut self, source: OrphanSource) -> usize {
        let Some((arrivals, _)) = self.by_source.get(&source) else { return 0 };
        let ids: Vec<Hash> = arrivals.iter().filter_map(|a| self.by_arrival.get(a).copied()).collect();
        for id in &ids {
            self.remove(id);
        }
        ids.len()
    }

    /// Checks the indexes against the orphans and the limits; describes the first mismatch.
    pub fn audit(&self) -> Result<(), String> {
        let bytes: u64 = self.orphans.values().map(|o| o.size).sum();
        if bytes != self.bytes {
            return Err(format!("bytes {} but orphans sum to {bytes}", self.bytes));
        }
        if self.by_arrival.len() != self.orphans.len() {
            return Err("arrival index size differs".into());
        }
        if self.orphans.len() > self.cfg.max_txs || self.bytes > self.cfg.max_bytes {
            return Err(format!("{} orphans, {} bytes: over the limits", self.orphans.len(), self.bytes));
        }
        for (id, o) in &self.orphans {
            if self.by_arrival.get(&o.arrival) != Some(id) {
                return Err(format!("{id} missing from the arrival index"));
            }
            for p in &o.parents {
                if !self.by_parent.get(p).is_some_and(|s| s.contains(id)) {
                    return Err(format!("{id} missing from the index of parent {p}"));
                }
            }
        }
        for (src, (set, b)) in &self.by_source {
            let sum: u64 = set
                .iter()
                .filter_map(|a| self.by_arrival.get(a))
                .filter_map(|id| self.orphans.get(id))
                .map(|o| o.size)
                .sum();
            if sum != *b || set.len() > self.cfg.max_per_source || *b > self.cfg.max_bytes_per_source {
                return Err(format!("source {src:?}: {} orphans, {b} bytes (sum {sum})", set.len()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tx(i: u64) -> (Tx, Hash) {
        let t = Tx::coinbase(i, vec![]);
        let id = t.txid(scalechain_types::HashKind::Sha256);
        (t, id)
    }

    fn cfg() -> OrphanConfig {
        OrphanConfig {
            max_txs: 4,
            max_bytes: 1_000,
            max_per_source: 2,
            max_bytes_per_source: 500,
            expiry_ms: 100,
        }
    }

    fn parent(i: u8) -> Hash {
        Hash([i; 32])
    }

    #[test]
    fn a_source_past_its_share_pushes_out_its_own_oldest() {
        let mut p = OrphanPool::new(cfg());
        let ids: Vec<Hash> = (0..3).map(|i| tx(i).1).collect();
        for i in 0..2 {
            assert_eq!(p.hold(tx(i).0, ids[i as usize], 10, vec![parent(1)], Some(7), i), Some(vec![]));
        }
        // The third from source 7 pushes its first out; the others are untouched.
        assert_eq!(p.hold(tx(2).0, ids[2], 10, vec![parent(1)], Some(7), 2), Some(vec![ids[0]]));
        assert!(!p.contains(&ids[0]) && p.contains(&ids[1]) && p.contains(&ids[2]));
        assert_eq!(p.held_from(Some(7)), 2);
        let (t, id) = tx(10);
        assert_eq!(p.hold(t, id, 10, vec![parent(2)], None, 5), Some(vec![]));
        assert_eq!(p.stats().counters.evicted, 1);
        p.audit().unwrap();
    }

    #[test]
    fn count_and_bytes_push_out_the_oldest_of_all_and_oversized_ones_are_not_held() {
        let mut p = OrphanPool::new(cfg());
        let mut ids = Vec::new();
        for (i, src) in [(0, 1), (1, 2), (2, 3), (3, 4)] {
            let (t, id) = tx(i);
            p.hold(t, id, 200, vec![parent(1)], Some(src), i).unwrap();
            ids.push(id);
        }
        assert_eq!((p.len(), p.bytes()), (4, 800));
        // A fifth: the count is full, so the oldest (source 1) leaves.
        let (t, id) = tx(4);
        assert_eq!(p.hold(t, id, 100, vec![parent(1)], Some(5), 4), Some(vec![ids[0]]));
        // 300 more bytes: 700 + 300 fits after one more leaves (count), no more.
        let (t, id5) = tx(5);
        assert_eq!(p.hold(t, id5, 300, vec![parent(1)], Some(6), 5), Some(vec![ids[1]]));
        assert_eq!(p.bytes(), 200 + 200 + 100 + 300);
        // Bytes now: 800 of 1,000. Another 401: the oldest two leave (one for the count, one
        // for the bytes).
        let (t, id6) = tx(6);
        assert_eq!(p.hold(t, id6, 401, vec![parent(1)], Some(8), 6), Some(vec![ids[2], ids[3]]));
        p.audit().unwrap();
        // Larger than a source's share: never held.
        let (t, big) = tx(7);
        assert!(!p.fits(501));
        assert_eq!(p.hold(t, big, 501, vec![parent(1)], Some(9), 7), None);
        assert!(!p.contains(&big));
        // Held already: not again.
        let (t, _) = tx(6);
        assert_eq!(p.hold(t, id6, 400, vec![], Some(8), 8), None);
        // A disabled pool holds nothing.
        let mut off = OrphanPool::new(OrphanConfig { max_txs: 0, ..cfg() });
        let (t, id) = tx(1);
        assert_eq!(off.hold(t, id, 1, vec![], None, 0), None);
    }

    #[test]
    fn children_are_released_by_any_parent_oldest_first_and_expire_otherwise() {
        let mut p = OrphanPool::new(OrphanConfig { max_per_source: 10, ..cfg() });
        let (a, ida) = tx(1);
        let (b, idb) = tx(2);
        let (c, idc) = tx(3);
        p.hold(b.clone(), idb, 10, vec![parent(1), parent(2)], Some(1), 20).unwrap();
        p.hold(a.clone(), ida, 10, vec![parent(1)], Some(1), 10).unwrap();
        p.hold(c, idc, 10, vec![parent(3)], None, 30).unwrap();
        assert!(p.release_children(&[parent(9)]).is_empty());
        let r = p.release_children(&[parent(2), parent(1)]);
        let got: Vec<(Tx, u64)> = r.iter().map(|r| (r.tx.clone(), r.arrived_ms)).collect();
        assert_eq!(got, vec![(a, 10), (b, 20)]);
        assert_eq!((p.len(), p.bytes()), (1, 10));
        p.audit().unwrap();
        // Expiry: an orphan held at 30 leaves at 130, not before.
        assert!(p.expire(129).is_empty());
        assert_eq!(p.expire(130), vec![idc]);
        assert!(p.is_empty());
        assert_eq!(p.stats().counters.expired, 1);
        p.audit().unwrap();
    }

    #[test]
    fn a_source_that_leaves_takes_its_orphans_with_it() {
        let mut p = OrphanPool::new(cfg());
        let (a, ida) = tx(1);
        let (b, idb) = tx(2);
        p.hold(a, ida, 10, vec![parent(1)], Some(1), 0).unwrap();
        p.hold(b, idb, 10, vec![parent(1)], Some(2), 0).unwrap();
        assert_eq!(p.forget_source(Some(1)), 1);
        assert_eq!(p.forget_source(Some(1)), 0);
        assert!(!p.contains(&ida) && p.contains(&idb));
        assert_eq!(p.release_children(&[parent(1)]).len(), 1);
        p.audit().unwrap();
        assert!(p.by_parent.is_empty() && p.by_source.is_empty());
    }
}
