//! What readers see: an immutable [`Snapshot`] of the pool (entries by txid, sizes, counters),
//! and block [`Template`]s built from one.
//!
//! A snapshot's entries are a stack of immutable sorted runs shared with the writer
//! ([`crate::layers`]): publishing seals the changes since the last publication into a run and
//! copies a few pointers, never the pool. A reader may hold a snapshot as long as it likes;
//! the writer never waits for it.

use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::sync::Arc;

use scalechain_types::{Amount, FeeRate, Hash, Tx};

use crate::layers::Runs;

/// A pooled transaction and what admission learnt about it. Immutable once pooled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolEntry {
    /// The transaction.
    pub tx: Arc<Tx>,
    /// Its txid.
    pub txid: Hash,
    /// Its wtxid (the signature cache's key).
    pub wtxid: Hash,
    /// Inputs minus outputs.
    pub fee: Amount,
    /// Bytes of its encoding.
    pub size: u64,
    /// Admission order: larger is later. Unique within a pool.
    pub seq: u64,
    /// The fee-less group it rides in, if it is a fee-less application transaction: one with
    /// no inputs and no fee whose module names a group
    /// ([`scalechain_consensus::AppModule::fee_less_group`]; a ballot's is its election).
    pub fee_less: Option<Hash>,
}

impl PoolEntry {
    /// Its own fee rate.
    pub fn fee_rate(&self) -> FeeRate {
        FeeRate::of(self.fee.get(), self.size)
    }

    /// Is it a fee-less application transaction ([`PoolEntry::fee_less`])?
    pub fn is_fee_less(&self) -> bool {
        self.fee_less.is_some()
    }
}

/// Running totals since the pool was created.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Transactions admitted by [`crate::Mempool::admit`].
    pub admitted: u64,
    /// Transactions refused by [`crate::Mempool::admit`], by [`crate::MempoolError::reason`].
    pub rejected: BTreeMap<&'static str, u64>,
    /// Transactions evicted to make room (descendants included).
    pub evicted: u64,
    /// Transactions that left because a block confirmed them.
    pub confirmed: u64,
    /// Transactions that left because a block spent one of their inputs (descendants included).
    pub conflicted: u64,
    /// Transactions that left because no later block may include them, descendants included.
    pub expired: u64,
    /// Transactions of disconnected blocks admitted back by [`crate::Mempool::reorg`].
    pub readmitted: u64,
    /// Pooled transactions that failed re-admission after a reorganisation.
    pub dropped: u64,
}

impl Counters {
    /// Refused transactions, all reasons together.
    pub fn rejected_total(&self) -> u64 {
        self.rejected.values().sum()
    }
}

/// Figures for metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Transactions pooled.
    pub count: usize,
    /// Bytes pooled (sum of encodings).
    pub bytes: u64,
    /// Running totals.
    pub counters: Counters,
    /// Signature-cache lookups that skipped a transaction's signatures.
    pub sig_cache_hits: u64,
    /// Signature-cache lookups.
    pub sig_cache_lookups: u64,
    /// Wtxids the signature cache holds.
    pub sig_cache_len: usize,
    /// Its capacity.
    pub sig_cache_capacity: usize,
    /// Snapshots published so far (one per writer call that changed something).
    pub version: u64,
    /// The orphan pool.
    pub orphans: crate::OrphanStats,
}

/// An immutable view of the pool at one moment.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub(crate) entries: Runs<Hash, Arc<PoolEntry>>,
    pub(crate) bytes: u64,
    pub(crate) counters: Counters,
    pub(crate) version: u64,
}

/// Transactions for a block, in block order (parents before children).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Template {
    /// The transactions.
    pub txs: Vec<Arc<Tx>>,
    /// Their txids, in the same order.
    pub txids: Vec<Hash>,
    /// Sum of their fees (what the coinbase may claim on top of the subsidy).
    pub fees: Amount,
    /// Sum of their encodings.
    pub bytes: u64,
}

impl Snapshot {
    /// Transactions held.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Holds nothing?
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Sum of the encodings held.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// The entry of `txid`.
    pub fn get(&self, txid: &Hash) -> Option<&Arc<PoolEntry>> {
        self.entries.get(txid)
    }

    /// Is `txid` pooled?
    pub fn contains(&self, txid: &Hash) -> bool {
        self.entries.contains_key(txid)
    }

    /// Every entry, by txid.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<PoolEntry>> + '_ {
        self.entries.iter().map(|(_, e)| e)
    }

    /// Entries whose txid is `from` or after, by txid (for paging).
    pub fn iter_from(&self, from: &Hash) -> impl Iterator<Item = &Arc<PoolEntry>> + '_ {
        self.entries.iter_from(from).map(|(_, e)| e)
    }

    /// Running totals as of this snapshot.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Which publication this is (increases with every change).
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The pooled parents of `entry`: pooled transactions whose outputs it spends.
    pub fn parents_of(&self, entry: &PoolEntry) -> Vec<Hash> {
        let mut ps: Vec<Hash> = entry
            .tx
            .inputs
            .iter()
            .map(|i| i.prev.txid)
            .filter(|t| *t != entry.txid && self.entries.contains_key(t))
            .collect();
        ps.sort_unstable();
        ps.dedup();
        ps
    }

    /// A block body of at most `max_bytes` (sum of transaction encodings; leave room for the
    /// header and coinbase) and `max_txs` transactions.
    ///
    /// Selection by ancestor package: repeatedly take the transaction whose not yet selected
    /// pooled ancestors and itself pay the most per byte, with those ancestors, parents first;
    /// a package that does not fit is skipped (it returns if one of its ancestors is selected
    /// later). Equal rates go to the earlier admission. The pool never holds two transactions
    /// that spend the same output, so neither does the template.
    pub fn template(&self, max_bytes: u64, max_txs: usize) -> Template {
        Selector::new(self).select(max_bytes, max_txs)
    }
}

/// A candidate in the selection heap: the best package rate first, then the earliest.
#[derive(PartialEq, Eq)]
struct Candidate {
    rate: FeeRate,
    seq: Reverse<u64>,
    idx: usize,
    version: u32,
}

impl Ord for Candidate {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rate
            .cmp(&other.rate)
            .then(self.seq.cmp(&other.seq))
            .then(other.idx.cmp(&self.idx))
            .then(self.version.cmp(&other.version))
    }
}

impl PartialOrd for Candidate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Graph walks with a reusable visited mark (a stamp per walk), so no set is allocated.
struct Marks {
    stamp: Vec<u32>,
    now: u32,
}

impl Marks {
    fn new(n: usize) -> Marks {
        Marks { stamp: vec![0; n], now: 0 }
    }

    fn next(&mut self) {
        self.now = self.now.wrapping_add(1);
        if self.now == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.now = 1;
        }
    }

    /// Marks `i`; false if it was already marked in this walk.
    fn visit(&mut self, i: usize) -> bool {
        if self.stamp[i] == self.now {
            return false;
        }
        self.stamp[i] = self.now;
        true
    }
}

struct Selector<'a> {
    list: Vec<&'a Arc<PoolEntry>>,
    parents: Vec<Vec<usize>>,
    children: Vec<Vec<usize>>,
    anc_count: Vec<usize>,
    pkg_fee: Vec<u64>,
    pkg_size: Vec<u64>,
    marks: Marks,
}

impl<'a> Selector<'a> {
    fn new(snap: &'a Snapshot) -> Selector<'a> {
        let list: Vec<&Arc<PoolEntry>> = snap.iter().collect();
        let n = list.len();
        let index: HashMap<Hash, usize> = list.iter().enumerate().map(|(i, e)| (e.txid, i)).collect();
        let parents: Vec<Vec<usize>> = list
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let mut ps: Vec<usize> =
                    e.tx.inputs
                        .iter()
                        .filter_map(|inp| index.get(&inp.prev.txid).copied())
                        .filter(|&p| p != i)
                        .collect();
                ps.sort_unstable();
                ps.dedup();
                ps
            })
            .collect();
        let mut children = vec![Vec::new(); n];
        for (i, ps) in parents.iter().enumerate() {
            for &p in ps {
                children[p].push(i);
            }
        }
        let mut s = Selector {
            list,
            parents,
            children,
            anc_count: vec![0; n],
            pkg_fee: vec![0; n],
            pkg_size: vec![0; n],
            marks: Marks::new(n),
        };
        for i in 0..n {
            let anc = s.walk(i, true, |_| true);
            s.anc_count[i] = anc.len();
            let (mut fee, mut size) = (s.list[i].fee.get(), s.list[i].size);
            for a in anc {
                fee = fee.saturating_add(s.list[a].fee.get());
                size = size.saturating_add(s.list[a].size);
            }
            s.pkg_fee[i] = fee;
            s.pkg_size[i] = size;
        }
        s
    }

    /// Ancestors (`up`) or descendants of `i`, not `i` itself, among those `keep` accepts
    /// (the walk does not continue past a rejected one).
    fn walk(&mut self, i: usize, up: bool, keep: impl Fn(usize) -> bool) -> Vec<usize> {
        self.marks.next();
        self.marks.visit(i);
        // Breadth first, `out` doubling as the queue: no allocation for a lone transaction.
        let mut out = Vec::new();
        let (mut x, mut k) = (i, 0);
        loop {
            let next = if up { &self.parents[x] } else { &self.children[x] };
            for &y in next {
                if keep(y) && self.marks.visit(y) {
                    out.push(y);
                }
            }
            let Some(&y) = out.get(k) else { break };
            x = y;
            k += 1;
        }
        out
    }

    fn candidate(&self, i: usize, version: u32) -> Candidate {
        Candidate {
            rate: FeeRate::of(self.pkg_fee[i], self.pkg_size[i]),
            seq: Reverse(self.list[i].seq),
            idx: i,
            version,
        }
    }

    fn select(mut self, max_bytes: u64, max_txs: usize) -> Template {
        let n = self.list.len();
        let mut included = vec![false; n];
        let mut version = vec![0u32; n];
        let mut heap: BinaryHeap<Candidate> = (0..n).map(|i| self.candidate(i, 0)).collect();
        let min_size = self.list.iter().map(|e| e.size).min().unwrap_or(0);
        let mut out = Template::default();
        let mut fees = 0u64;
        while let Some(c) = heap.pop() {
            if out.txs.len() >= max_txs || max_bytes.saturating_sub(out.bytes) < min_size {
                break;
            }
            let i = c.idx;
            if included[i] || c.version != version[i] {
                continue;
            }
            let mut pkg = self.walk(i, true, |a| !included[a]);
            pkg.push(i);
            let bytes: u64 = pkg.iter().map(|&m| self.list[m].size).sum();
            if out.txs.len() + pkg.len() > max_txs || out.bytes.saturating_add(bytes) > max_bytes {
                continue;
            }
            // An ancestor has strictly fewer ancestors than its descendants: parents first.
            pkg.sort_by_key(|&m| (self.anc_count[m], self.list[m].seq));
            for &m in &pkg {
                included[m] = true;
                let e = self.list[m];
                out.txs.push(e.tx.clone());
                out.txids.push(e.txid);
                out.bytes += e.size;
                fees = fees.saturating_add(e.fee.get());
            }
            let mut touched = Vec::new();
            for &m in &pkg {
                let (fee, size) = (self.list[m].fee.get(), self.list[m].size);
                for d in self.walk(m, false, |d| !included[d]) {
                    self.pkg_fee[d] = self.pkg_fee[d].saturating_sub(fee);
                    self.pkg_size[d] = self.pkg_size[d].saturating_sub(size);
                    touched.push(d);
                }
            }
            touched.sort_unstable();
            touched.dedup();
            for d in touched {
                version[d] += 1;
                heap.push(self.candidate(d, version[d]));
            }
        }
        out.fees = Amount::new(fees).unwrap_or(Amount::MAX);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_types::{Lock, OutPoint, PubKey, Scheme, TxIn, TxKind, TxOut, Witness};

    /// An unsigned transaction spending `prevs` (the template does not verify anything).
    fn tx(tag: u8, prevs: &[OutPoint]) -> Tx {
        let pubkey = PubKey::from_slice(Scheme::Ed25519, &[tag; 32]).unwrap_or_else(|| unreachable!());
        Tx {
            version: 1,
            kind: TxKind::TRANSFER,
            inputs: prevs
                .iter()
                .map(|&prev| TxIn { prev, witness: Witness { pubkey, signature: [0; 64] } })
                .collect(),
            outputs: vec![TxOut {
                value: Amount::new(u64::from(tag)).unwrap_or(Amount::ZERO),
                lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash([tag; 32]) },
            }],
            data: vec![tag],
        }
    }

    fn snap(txs: &[(Tx, u64)]) -> (Snapshot, Vec<Hash>) {
        let mut s = Snapshot::default();
        let mut entries = crate::layers::Layered::default();
        let mut ids = Vec::new();
        for (seq, (t, fee)) in txs.iter().enumerate() {
            let txid = t.txid(scalechain_types::HashKind::Sha256);
            let e = PoolEntry {
                tx: Arc::new(t.clone()),
                txid,
                wtxid: txid,
                fee: Amount::new(*fee).unwrap_or(Amount::ZERO),
                size: t.encoded_len() as u64,
                seq: seq as u64,
                fee_less: None,
            };
            s.bytes += e.size;
            entries.insert(txid, Arc::new(e));
            ids.push(txid);
        }
        s.entries = entries.seal();
        (s, ids)
    }

    fn out(txid: Hash) -> OutPoint {
        OutPoint { txid, index: 0 }
    }

    fn ext(i: u8) -> OutPoint {
        OutPoint { txid: Hash([200 + i; 32]), index: 0 }
    }

    #[test]
    fn child_pays_for_parent_and_parents_come_first() {
        let parent = tx(1, &[ext(1)]);
        let p_id = parent.txid(scalechain_types::HashKind::Sha256);
        let child = tx(2, &[out(p_id)]);
        let other = tx(3, &[ext(2)]);
        // Parent pays little, child a lot: their package beats `other`.
        let (s, ids) = snap(&[(parent, 10), (child, 5000), (other, 1000)]);
        let t = s.template(u64::MAX, usize::MAX);
        assert_eq!(t.txids, vec![ids[0], ids[1], ids[2]]);
        assert_eq!(t.fees.get(), 6010);
        assert_eq!(t.bytes, s.bytes());
    }

    #[test]
    fn limits_are_respected_and_a_child_never_comes_alone() {
        let parent = tx(1, &[ext(1)]);
        let p_id = parent.txid(scalechain_types::HashKind::Sha256);
        let child = tx(2, &[out(p_id)]);
        let (s, ids) = snap(&[(parent, 10), (child, 5000)]);
        let t = s.template(u64::MAX, 1);
        // The child's package needs two slots; alone, the parent fits.
        assert_eq!(t.txids, vec![ids[0]]);
        let size = s.get(&ids[0]).map(|e| e.size).unwrap_or(0);
        let t = s.template(size - 1, 10);
        assert!(t.txs.is_empty());
        assert_eq!(s.template(0, 0), Template::default());
    }

    #[test]
    fn diamond_counts_shared_ancestor_once() {
        let mut a2 = tx(1, &[ext(1)]);
        a2.outputs.push(a2.outputs[0]);
        let a2_id = a2.txid(scalechain_types::HashKind::Sha256);
        let b = tx(2, &[OutPoint { txid: a2_id, index: 0 }]);
        let c = tx(3, &[OutPoint { txid: a2_id, index: 1 }]);
        let b_id = b.txid(scalechain_types::HashKind::Sha256);
        let c_id = c.txid(scalechain_types::HashKind::Sha256);
        let d = tx(4, &[out(b_id), out(c_id)]);
        let (s, ids) = snap(&[(a2, 1), (b, 1), (c, 1), (d, 100_000)]);
        let t = s.template(u64::MAX, usize::MAX);
        assert_eq!(t.txids.len(), 4);
        assert_eq!(t.txids[0], ids[0]);
        assert_eq!(t.txids[3], ids[3]);
        assert_eq!(t.fees.get(), 100_003);
    }

    #[test]
    fn higher_rate_first_ties_by_admission() {
        let (s, ids) = snap(&[(tx(1, &[ext(1)]), 100), (tx(2, &[ext(2)]), 300), (tx(3, &[ext(3)]), 100)]);
        let t = s.template(u64::MAX, usize::MAX);
        assert_eq!(t.txids, vec![ids[1], ids[0], ids[2]]);
        assert_eq!(s.iter().count(), 3);
        let first = s.iter().next().map(|e| e.txid);
        assert_eq!(s.iter_from(&Hash::ZERO).next().map(|e| e.txid), first);
    }
}
