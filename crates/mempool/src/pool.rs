//! The writer's state: pooled transactions with their in-pool parents and children, the
//! outputs they spend, the application keys they hold, descendant totals, the eviction order, and the map of entries
//! that snapshots publish ([`Layered`]).
//!
//! Every graph walk is bounded by the pool's ancestor and descendant limits, so inserting or
//! removing one transaction costs O(limits · log n), whatever the pool's size.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::sync::Arc;

// Keys are hashes and outpoints: foldhash, seeded per process, instead of SipHash.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use scalechain_consensus::{Coin, UtxoView};
use scalechain_types::{FeeRate, Hash, OutPoint, Tx};

use crate::config::MempoolConfig;
use crate::error::MempoolError;
use crate::layers::{Layered, Runs};
use crate::snapshot::PoolEntry;

/// A pooled transaction with its place in the graph.
#[derive(Clone, Debug)]
struct Node {
    entry: Arc<PoolEntry>,
    /// Pooled transactions whose outputs it spends.
    parents: Vec<Hash>,
    /// Pooled transactions that spend its outputs.
    children: Vec<Hash>,
    /// Application keys it holds.
    keys: Vec<AppKey>,
    /// The last height a block may include it at, if any.
    last_height: Option<u64>,
    /// Size of its descendant set (itself excluded), and their fees and bytes.
    desc_count: usize,
    desc_fee: u64,
    desc_size: u64,
}

/// An application key a pooled transaction holds exclusively: the module's kind and the key
/// it named ([`scalechain_consensus::AppModule::conflict_keys`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct AppKey {
    pub kind: u8,
    pub key: Hash,
}

/// Eviction order: lowest score first; on equal scores the latest admission first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct EvictKey {
    score: FeeRate,
    newer: Reverse<u64>,
    txid: Hash,
}

impl Node {
    /// The better of its own rate and that of itself with its descendants, so a parent whose
    /// children pay for it is not evicted before them.
    fn score(&self) -> FeeRate {
        let own = self.entry.fee_rate();
        let with_desc = FeeRate::of(
            self.entry.fee.get().saturating_add(self.desc_fee),
            self.entry.size.saturating_add(self.desc_size),
        );
        own.max(with_desc)
    }

    fn key(&self) -> EvictKey {
        EvictKey { score: self.score(), newer: Reverse(self.entry.seq), txid: self.entry.txid }
    }
}

/// The pool's state, owned by the writer.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pool {
    nodes: HashMap<Hash, Node>,
    spends: HashMap<OutPoint, Hash>,
    claims: HashMap<AppKey, Hash>,
    /// Transactions whose validity ends, by the last height a block may include them at.
    expiring: BTreeSet<(u64, Hash)>,
    /// Eviction order, kept only while the pool is near its limits ([`Pool::keep_order`]):
    /// below them no admission evicts, and each insertion would pay a search of a large
    /// ordered set for nothing.
    by_score: Option<BTreeSet<EvictKey>>,
    entries: Layered<Hash, Arc<PoolEntry>>,
    bytes: u64,
    /// Bytes of the fee-less application transactions among them.
    fee_less_bytes: u64,
    /// Those bytes by fee-less group (no empty group listed).
    fee_less_groups: HashMap<Hash, u64>,
    next_seq: u64,
}

/// A transaction the pool may take: what admission learnt about it.
pub(crate) struct Candidate {
    pub tx: Arc<Tx>,
    pub txid: Hash,
    pub wtxid: Hash,
    pub fee: u64,
    pub size: u64,
    /// Application keys it would hold (distinct).
    pub keys: Vec<AppKey>,
    /// The last height a block may include it at ([`scalechain_consensus::AppModule::last_height`]).
    pub last_height: Option<u64>,
    /// Its fee-less group ([`PoolEntry::fee_less`]).
    pub fee_less: Option<Hash>,
}

/// The checks a candidate passed, and what inserting it takes.
pub(crate) struct Plan {
    parents: Vec<Hash>,
    ancestors: Vec<Hash>,
    /// Transactions to evict first (with their descendants, already listed).
    pub evict: Vec<Hash>,
}

impl Pool {
    pub fn new(next_seq: u64) -> Pool {
        Pool { next_seq, ..Pool::default() }
    }

    /// Makes room for `txs` more transactions spending `inputs` outputs, so that placing a
    /// batch grows the maps once rather than rehashing as they fill.
    pub fn reserve(&mut self, txs: usize, inputs: usize) {
        self.nodes.reserve(txs);
        self.spends.reserve(inputs);
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes of the pooled fee-less application transactions ([`PoolEntry::is_fee_less`]).
    pub fn fee_less_bytes(&self) -> u64 {
        self.fee_less_bytes
    }

    /// Bytes of the pooled fee-less application transactions of `group`.
    pub fn fee_less_group_bytes(&self, group: &Hash) -> u64 {
        self.fee_less_groups.get(group).copied().unwrap_or(0)
    }

    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    pub fn contains(&self, txid: &Hash) -> bool {
        self.nodes.contains_key(txid)
    }

    /// The entries to publish: the changes since the last call sealed into the runs.
    pub fn publish_entries(&mut self) -> Runs<Hash, Arc<PoolEntry>> {
        self.entries.seal()
    }

    /// Are `runs` the entries as they are now (everything published)?
    pub fn entries_published_as(&self, runs: &Runs<Hash, Arc<PoolEntry>>) -> bool {
        self.entries.published_as(runs)
    }

    /// Entries in admission order.
    pub fn by_admission(&self) -> Vec<Arc<PoolEntry>> {
        let mut v: Vec<Arc<PoolEntry>> = self.nodes.values().map(|n| n.entry.clone()).collect();
        v.sort_by_key(|e| e.seq);
        v
    }

    /// The pooled transaction spending `op`.
    pub fn spender(&self, op: &OutPoint) -> Option<Hash> {
        self.spends.get(op).copied()
    }

    /// The first input of `tx` that a pooled transaction already spends.
    pub fn conflict(&self, tx: &Tx) -> Option<MempoolError> {
        tx.inputs.iter().enumerate().find_map(|(input, i)| {
            self.spender(&i.prev).map(|pooled| MempoolError::Conflict { input, prev: i.prev, pooled })
        })
    }

    /// The pooled transaction holding application key `k`.
    pub fn claimant(&self, k: &AppKey) -> Option<Hash> {
        self.claims.get(k).copied()
    }

    /// Does any pooled transaction hold an application key?
    pub fn has_claims(&self) -> bool {
        !self.claims.is_empty()
    }

    /// The first of `keys` that a pooled transaction already holds.
    pub fn app_conflict(&self, keys: &[AppKey]) -> Option<MempoolError> {
        keys.iter().find_map(|k| {
            self.claimant(k).map(|pooled| MempoolError::AppConflict { kind: k.kind, key: k.key, pooled })
        })
    }

    /// The coin at `op` as a transaction joining the pool sees it: a pooled transaction's output
    /// (at `height`, the block it could confirm in) or `chain`'s, unless a pooled transaction
    /// spends it.
    pub fn coin(&self, op: &OutPoint, chain: &dyn UtxoView, height: u64) -> Option<Coin> {
        if self.spends.contains_key(op) {
            return None;
        }
        if let Some(n) = self.nodes.get(&op.txid) {
            let out = usize::try_from(op.index).ok().and_then(|i| n.entry.tx.outputs.get(i))?;
            return Some(Coin { out: *out, height, coinbase: false });
        }
        chain.coin(op)
    }

    /// Pooled transactions whose outputs `tx` spends.
    fn parents_of(&self, tx: &Tx, txid: &Hash) -> Vec<Hash> {
        let mut ps: Vec<Hash> = tx
            .inputs
            .iter()
            .map(|i| i.prev.txid)
            .filter(|t| t != txid && self.nodes.contains_key(t))
            .collect();
        ps.sort_unstable();
        ps.dedup();
        ps
    }

    /// Ancestors reachable from `start` (included), or `None` once there are more than `limit`.
    fn ancestors_from(&self, start: &[Hash], limit: usize) -> Option<Vec<Hash>> {
        if start.is_empty() {
            // The common case, a transaction spending only confirmed coins: nothing to walk.
            return Some(Vec::new());
        }
        let mut seen: HashSet<Hash> = HashSet::new();
        let mut out = Vec::new();
        let mut stack: Vec<Hash> = start.to_vec();
        while let Some(h) = stack.pop() {
            if !seen.insert(h) {
                continue;
            }
            out.push(h);
            if out.len() > limit {
                return None;
            }
            if let Some(n) = self.nodes.get(&h) {
                stack.extend(n.parents.iter().copied());
            }
        }
        Some(out)
    }

    /// Pooled ancestors of `txid` (not itself).
    fn ancestors_of(&self, txid: &Hash) -> Vec<Hash> {
        let parents = self.nodes.get(txid).map(|n| n.parents.clone()).unwrap_or_default();
        self.ancestors_from(&parents, usize::MAX).unwrap_or_default()
    }

    /// Pooled descendants of `txid` (not itself).
    pub fn descendants(&self, txid: &Hash) -> Vec<Hash> {
        let mut seen: HashSet<Hash> = HashSet::new();
        let mut out = Vec::new();
        let mut stack: Vec<Hash> = self.nodes.get(txid).map(|n| n.children.clone()).unwrap_or_default();
        while let Some(h) = stack.pop() {
            if !seen.insert(h) {
                continue;
            }
            out.push(h);
            if let Some(n) = self.nodes.get(&h) {
                stack.extend(n.children.iter().copied());
            }
        }
        out
    }

    /// Checks the chain limits and room for `c`; on success says what to evict first.
    /// Changes nothing.
    pub fn plan(&self, cfg: &MempoolConfig, c: &Candidate) -> Result<Plan, MempoolError> {
        let rate = FeeRate::of(c.fee, c.size);
        let parents = self.parents_of(&c.tx, &c.txid);
        let ancestors = self
            .ancestors_from(&parents, cfg.max_ancestors.saturating_sub(1))
            .ok_or(MempoolError::TooManyAncestors { max: cfg.max_ancestors })?;
        for a in &ancestors {
            let count = self.nodes.get(a).map_or(0, |n| n.desc_count) + 2;
            if count > cfg.max_descendants {
                return Err(MempoolError::TooManyDescendants {
                    ancestor: *a,
                    count,
                    max: cfg.max_descendants,
                });
            }
        }
        let evict = self.plan_eviction(cfg, rate, c.size, &ancestors)?;
        Ok(Plan { parents, ancestors, evict })
    }

    /// What must leave so that a transaction of `size` bytes at `rate` fits: the lowest scores
    /// first, each with its descendants, never an ancestor of the newcomer; refused if the
    /// newcomer pays no more than what it would displace.
    fn plan_eviction(
        &self,
        cfg: &MempoolConfig,
        rate: FeeRate,
        size: u64,
        ancestors: &[Hash],
    ) -> Result<Vec<Hash>, MempoolError> {
        let fits = |count: usize, bytes: u64| {
            count < cfg.max_txs && bytes.checked_add(size).is_some_and(|b| b <= cfg.max_bytes)
        };
        let (mut count, mut bytes) = (self.nodes.len(), self.bytes);
        if fits(count, bytes) {
            return Ok(Vec::new());
        }
        let full = |lowest: FeeRate| MempoolError::PoolFull {
            rate: rate.per_1000_bytes(),
            lowest: lowest.per_1000_bytes(),
        };
        let mut chosen: HashSet<Hash> = HashSet::new();
        let mut evict = Vec::new();
        // Kept whenever the pool is this full (`keep_order`); ordered here otherwise.
        let unkept = if self.by_score.is_none() { self.ordered_keys() } else { Vec::new() };
        for key in self.by_score.iter().flatten().chain(&unkept) {
            if fits(count, bytes) {
                break;
            }
            if chosen.contains(&key.txid) || ancestors.contains(&key.txid) {
                continue;
            }
            if key.score >= rate {
                return Err(full(key.score));
            }
            let mut group = self.descendants(&key.txid);
            group.push(key.txid);
            for g in group {
                if chosen.insert(g) {
                    evict.push(g);
                    count -= 1;
                    bytes -= self.nodes.get(&g).map_or(0, |n| n.entry.size);
                }
            }
        }
        if fits(count, bytes) {
            Ok(evict)
        } else {
            Err(full(rate))
        }
    }

    /// Inserts `c` as `plan` allows (after its evictions). Returns the entry.
    pub fn insert(&mut self, c: Candidate, plan: Plan) -> Arc<PoolEntry> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let entry = Arc::new(PoolEntry {
            tx: c.tx,
            txid: c.txid,
            wtxid: c.wtxid,
            fee: scalechain_types::Amount::new(c.fee).unwrap_or(scalechain_types::Amount::MAX),
            size: c.size,
            seq,
            fee_less: c.fee_less,
        });
        for i in &entry.tx.inputs {
            self.spends.insert(i.prev, c.txid);
        }
        for k in &c.keys {
            self.claims.insert(*k, c.txid);
        }
        if let Some(h) = c.last_height {
            self.expiring.insert((h, c.txid));
        }
        for p in &plan.parents {
            if let Some(n) = self.nodes.get_mut(p) {
                n.children.push(c.txid);
            }
        }
        for a in &plan.ancestors {
            self.rekey(a, |n| {
                n.desc_count += 1;
                n.desc_fee = n.desc_fee.saturating_add(c.fee);
                n.desc_size = n.desc_size.saturating_add(c.size);
            });
        }
        let node = Node {
            entry: entry.clone(),
            parents: plan.parents,
            children: Vec::new(),
            keys: c.keys,
            last_height: c.last_height,
            desc_count: 0,
            desc_fee: 0,
            desc_size: 0,
        };
        if let Some(set) = &mut self.by_score {
            set.insert(node.key());
        }
        self.nodes.insert(c.txid, node);
        self.entries.insert(c.txid, entry.clone());
        self.bytes += c.size;
        if let Some(g) = entry.fee_less {
            self.fee_less_bytes += c.size;
            *self.fee_less_groups.entry(g).or_default() += c.size;
        }
        entry
    }

    /// Changes a node's descendant totals, keeping the eviction order in step.
    fn rekey(&mut self, txid: &Hash, change: impl FnOnce(&mut Node)) {
        if let Some(n) = self.nodes.get_mut(txid) {
            match &mut self.by_score {
                Some(set) => {
                    set.remove(&n.key());
                    change(n);
                    set.insert(n.key());
                }
                None => change(n),
            }
        }
    }

    /// Every node's eviction key, lowest first.
    fn ordered_keys(&self) -> Vec<EvictKey> {
        let mut keys: Vec<EvictKey> = self.nodes.values().map(Node::key).collect();
        keys.sort_unstable();
        keys
    }

    /// Whether the pool is near its limits: it holds something, and at least half of `cfg`'s
    /// transactions or bytes (an empty pool needs no order, whatever the limits).
    fn near_full(&self, cfg: &MempoolConfig) -> bool {
        !self.nodes.is_empty() && (self.nodes.len() >= cfg.max_txs / 2 || self.bytes >= cfg.max_bytes / 2)
    }

    /// Keeps the eviction order only while it may be needed: built once the pool is half
    /// full, dropped once it holds less than a quarter of both limits again (so a pool that
    /// hovers near half full does not build it over and over). Called after each placement.
    pub fn keep_order(&mut self, cfg: &MempoolConfig) {
        match self.by_score {
            None if self.near_full(cfg) => {
                self.by_score = Some(self.ordered_keys().into_iter().collect());
            }
            Some(_) if self.nodes.len() < cfg.max_txs / 4 && self.bytes < cfg.max_bytes / 4 => {
                self.by_score = None;
            }
            _ => {}
        }
    }

    /// Whether the eviction order is kept (see [`Pool::keep_order`]).
    #[cfg(test)]
    fn ordered(&self) -> bool {
        self.by_score.is_some()
    }

    /// Removes one transaction; its pooled children stay (they lose it as a parent, so those
    /// whose parents all left become roots). Ancestors' descendant totals are recounted.
    pub fn remove(&mut self, txid: &Hash) -> Option<Arc<PoolEntry>> {
        let ancestors = self.ancestors_of(txid);
        let node = self.nodes.remove(txid)?;
        if let Some(set) = &mut self.by_score {
            set.remove(&node.key());
        }
        self.entries.remove(*txid);
        self.bytes -= node.entry.size;
        if let Some(g) = node.entry.fee_less {
            self.fee_less_bytes -= node.entry.size;
            if let Some(held) = self.fee_less_groups.get_mut(&g) {
                *held -= node.entry.size;
                if *held == 0 {
                    self.fee_less_groups.remove(&g);
                }
            }
        }
        for i in &node.entry.tx.inputs {
            if self.spends.get(&i.prev) == Some(txid) {
                self.spends.remove(&i.prev);
            }
        }
        for k in &node.keys {
            if self.claims.get(k) == Some(txid) {
                self.claims.remove(k);
            }
        }
        if let Some(h) = node.last_height {
            self.expiring.remove(&(h, *txid));
        }
        for p in &node.parents {
            if let Some(n) = self.nodes.get_mut(p) {
                n.children.retain(|c| c != txid);
            }
        }
        for c in &node.children {
            if let Some(n) = self.nodes.get_mut(c) {
                n.parents.retain(|p| p != txid);
            }
        }
        for a in ancestors {
            let desc = self.descendants(&a);
            let (mut fee, mut size) = (0u64, 0u64);
            for d in &desc {
                if let Some(n) = self.nodes.get(d) {
                    fee = fee.saturating_add(n.entry.fee.get());
                    size = size.saturating_add(n.entry.size);
                }
            }
            self.rekey(&a, |n| {
                n.desc_count = desc.len();
                n.desc_fee = fee;
                n.desc_size = size;
            });
        }
        Some(node.entry)
    }

    /// Pooled transactions that no block at `height` or later may include (their last height
    /// is below it), earliest first.
    pub fn expired_before(&self, height: u64) -> Vec<Hash> {
        self.expiring.range(..(height, Hash([0; 32]))).map(|(_, txid)| *txid).collect()
    }

    /// Removes a transaction and all its descendants, deepest first. Returns what left.
    pub fn remove_with_descendants(&mut self, txid: &Hash) -> Vec<Arc<PoolEntry>> {
        if !self.nodes.contains_key(txid) {
            return Vec::new();
        }
        let mut group = self.descendants(txid);
        group.push(*txid);
        // A descendant has strictly more ancestors than any of its ancestors.
        let mut by_depth: Vec<(usize, Hash)> =
            group.into_iter().map(|h| (self.ancestors_of(&h).len(), h)).collect();
        by_depth.sort_unstable_by(|a, b| b.cmp(a));
        by_depth.into_iter().filter_map(|(_, h)| self.remove(&h)).collect()
    }

    /// Checks every internal invariant against the configuration; describes the first broken.
    pub fn audit(&self, cfg: &MempoolConfig) -> Result<(), String> {
        if self.entries.len() != self.nodes.len() {
            return Err(format!("{} published entries for {} nodes", self.entries.len(), self.nodes.len()));
        }
        match &self.by_score {
            Some(set) if set.len() != self.nodes.len() => {
                return Err(format!("{} eviction keys for {} nodes", set.len(), self.nodes.len()));
            }
            None if self.near_full(cfg) => return Err("no eviction order in a pool near full".into()),
            _ => {}
        }
        let bytes: u64 = self.nodes.values().map(|n| n.entry.size).sum();
        if bytes != self.bytes {
            return Err(format!("bytes {} but entries sum to {bytes}", self.bytes));
        }
        let fee_less: u64 = self.nodes.values().filter(|n| n.entry.is_fee_less()).map(|n| n.entry.size).sum();
        if fee_less != self.fee_less_bytes {
            return Err(format!("fee-less bytes {} but entries sum to {fee_less}", self.fee_less_bytes));
        }
        if self.fee_less_bytes > cfg.max_fee_less_bytes && cfg.min_fee_rate > 0 {
            return Err(format!(
                "{} fee-less bytes over the limit {}",
                self.fee_less_bytes, cfg.max_fee_less_bytes
            ));
        }
        let mut groups: HashMap<Hash, u64> = HashMap::new();
        for n in self.nodes.values() {
            if let Some(g) = n.entry.fee_less {
                *groups.entry(g).or_default() += n.entry.size;
            }
        }
        if groups != self.fee_less_groups {
            return Err(format!("fee-less groups {:?} but entries sum to {groups:?}", self.fee_less_groups));
        }
        if let Some((g, held)) = groups.iter().find(|(_, b)| **b > cfg.max_fee_less_group_bytes) {
            if cfg.min_fee_rate > 0 {
                return Err(format!(
                    "fee-less group {g} holds {held} bytes, over the limit {}",
                    cfg.max_fee_less_group_bytes
                ));
            }
        }
        if self.nodes.len() > cfg.max_txs || self.bytes > cfg.max_bytes {
            return Err(format!("{} txs / {} bytes over the limits", self.nodes.len(), self.bytes));
        }
        let inputs: usize = self.nodes.values().map(|n| n.entry.tx.inputs.len()).sum();
        if inputs != self.spends.len() {
            return Err(format!("{} spends recorded for {inputs} inputs (a conflict?)", self.spends.len()));
        }
        let keys: usize = self.nodes.values().map(|n| n.keys.len()).sum();
        if keys != self.claims.len() {
            return Err(format!(
                "{} application keys recorded for {keys} held (a conflict?)",
                self.claims.len()
            ));
        }
        let expiring: BTreeSet<(u64, Hash)> =
            self.nodes.iter().filter_map(|(txid, n)| n.last_height.map(|h| (h, *txid))).collect();
        if expiring != self.expiring {
            return Err(format!(
                "{} expiring transactions recorded for {} pooled with a last height",
                self.expiring.len(),
                expiring.len()
            ));
        }
        for (txid, n) in &self.nodes {
            for k in &n.keys {
                if self.claims.get(k) != Some(txid) {
                    return Err(format!("{txid}: application key {} of kind {} not recorded", k.key, k.kind));
                }
            }
            if self.entries.get(txid).map(|e| Arc::ptr_eq(e, &n.entry)) != Some(true) {
                return Err(format!("{txid}: published entry differs"));
            }
            if self.by_score.as_ref().is_some_and(|set| !set.contains(&n.key())) {
                return Err(format!("{txid}: eviction key stale"));
            }
            for i in &n.entry.tx.inputs {
                if self.spends.get(&i.prev) != Some(txid) {
                    return Err(format!("{txid}: spend of {} not recorded", i.prev));
                }
            }
            if n.parents != self.parents_of(&n.entry.tx, txid) {
                return Err(format!("{txid}: parents {:?} differ from its pooled inputs", n.parents));
            }
            for p in &n.parents {
                if !self.nodes.get(p).is_some_and(|pn| pn.children.contains(txid)) {
                    return Err(format!("{txid}: parent {p} does not list it as a child"));
                }
            }
            for c in &n.children {
                if !self.nodes.get(c).is_some_and(|cn| cn.parents.contains(txid)) {
                    return Err(format!("{txid}: child {c} does not list it as a parent"));
                }
            }
            let desc = self.descendants(txid);
            let fee: u64 = desc.iter().filter_map(|d| self.nodes.get(d)).map(|d| d.entry.fee.get()).sum();
            let size: u64 = desc.iter().filter_map(|d| self.nodes.get(d)).map(|d| d.entry.size).sum();
            if (desc.len(), fee, size) != (n.desc_count, n.desc_fee, n.desc_size) {
                return Err(format!("{txid}: descendant totals stale"));
            }
            if desc.len() + 1 > cfg.max_descendants {
                return Err(format!("{txid}: {} descendants over the limit", desc.len()));
            }
            if self.ancestors_of(txid).len() + 1 > cfg.max_ancestors {
                return Err(format!("{txid}: ancestors over the limit"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_types::{Amount, HashKind, Lock, PubKey, Scheme, TxIn, TxKind, TxOut, Witness};

    fn tx(tag: u8, prevs: &[OutPoint], outs: usize) -> Tx {
        let pubkey = PubKey::from_slice(Scheme::Ed25519, &[tag; 32]).unwrap_or_else(|| unreachable!());
        Tx {
            version: 1,
            kind: TxKind::TRANSFER,
            inputs: prevs
                .iter()
                .map(|&prev| TxIn { prev, witness: Witness { pubkey, signature: [0; 64] } })
                .collect(),
            outputs: (0..outs)
                .map(|_| TxOut {
                    value: Amount::new(1000).unwrap_or(Amount::ZERO),
                    lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash([tag; 32]) },
                })
                .collect(),
            data: vec![tag],
        }
    }

    fn cand(t: Tx, fee: u64) -> Candidate {
        let txid = t.txid(HashKind::Sha256);
        let size = t.encoded_len() as u64;
        Candidate {
            tx: Arc::new(t),
            txid,
            wtxid: txid,
            fee,
            size,
            keys: Vec::new(),
            last_height: None,
            fee_less: None,
        }
    }

    fn add(pool: &mut Pool, cfg: &MempoolConfig, t: Tx, fee: u64) -> Result<Hash, MempoolError> {
        let c = cand(t, fee);
        let plan = pool.plan(cfg, &c)?;
        for e in plan.evict.clone() {
            pool.remove_with_descendants(&e);
        }
        let id = c.txid;
        pool.insert(c, plan);
        pool.keep_order(cfg);
        Ok(id)
    }

    fn op(txid: Hash, index: u32) -> OutPoint {
        OutPoint { txid, index }
    }

    fn ext(i: u8) -> OutPoint {
        op(Hash([250 - i; 32]), 0)
    }

    #[test]
    fn diamond_totals_and_removal_make_roots() {
        let cfg = MempoolConfig::default();
        let mut p = Pool::new(0);
        let a = add(&mut p, &cfg, tx(1, &[ext(1)], 2), 100).unwrap_or_else(|e| panic!("{e}"));
        let b = add(&mut p, &cfg, tx(2, &[op(a, 0)], 1), 100).unwrap_or_else(|e| panic!("{e}"));
        let c = add(&mut p, &cfg, tx(3, &[op(a, 1)], 1), 100).unwrap_or_else(|e| panic!("{e}"));
        let d = add(&mut p, &cfg, tx(4, &[op(b, 0), op(c, 0)], 1), 100).unwrap_or_else(|e| panic!("{e}"));
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.nodes[&a].desc_count, 3, "d is counted once");
        assert_eq!(p.nodes[&d].parents.len(), 2);
        // a confirmed: b and c become roots.
        assert!(p.remove(&a).is_some());
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.nodes[&b].parents.is_empty() && p.nodes[&c].parents.is_empty());
        assert_eq!(p.nodes[&b].desc_count, 1);
        // b conflicted: d leaves with it, c stays alone.
        assert_eq!(p.remove_with_descendants(&b).len(), 2);
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.len(), 1);
        assert_eq!(p.nodes[&c].desc_count, 0);
        assert_eq!(p.spender(&op(a, 1)), Some(c));
        assert_eq!(p.spender(&op(a, 0)), None);
    }

    #[test]
    fn chain_limits() {
        let cfg = MempoolConfig { max_ancestors: 3, max_descendants: 3, ..MempoolConfig::default() };
        let mut p = Pool::new(0);
        let a = add(&mut p, &cfg, tx(1, &[ext(1)], 3), 100).unwrap_or_else(|e| panic!("{e}"));
        let b = add(&mut p, &cfg, tx(2, &[op(a, 0)], 1), 100).unwrap_or_else(|e| panic!("{e}"));
        let c = add(&mut p, &cfg, tx(3, &[op(b, 0)], 1), 100).unwrap_or_else(|e| panic!("{e}"));
        let e = add(&mut p, &cfg, tx(4, &[op(c, 0)], 1), 100).err();
        assert_eq!(e, Some(MempoolError::TooManyAncestors { max: 3 }));
        // a has b and c: a third descendant would make its set 4.
        let e = add(&mut p, &cfg, tx(5, &[op(a, 1)], 1), 100).err();
        assert_eq!(e, Some(MempoolError::TooManyDescendants { ancestor: a, count: 4, max: 3 }));
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.len(), 3);
    }

    #[test]
    fn eviction_takes_lowest_scores_with_descendants_and_spares_ancestors() {
        let size = tx(1, &[ext(1)], 1).encoded_len() as u64;
        let cfg = MempoolConfig { max_txs: 3, ..MempoolConfig::default() };
        let mut p = Pool::new(0);
        // `low` scores 12.5 per byte with its child (its own 5 would be lower), the child 20.
        let low = add(&mut p, &cfg, tx(1, &[ext(1)], 1), 5 * size).unwrap_or_else(|e| panic!("{e}"));
        let low_child =
            add(&mut p, &cfg, tx(2, &[op(low, 0)], 1), 20 * size).unwrap_or_else(|e| panic!("{e}"));
        let mid = add(&mut p, &cfg, tx(3, &[ext(3)], 1), 500 * size).unwrap_or_else(|e| panic!("{e}"));
        // Paying less than the lowest package: refused, nothing changes.
        let e = add(&mut p, &cfg, tx(4, &[ext(4)], 1), 12 * size).err();
        assert!(matches!(e, Some(MempoolError::PoolFull { .. })), "{e:?}");
        assert_eq!(p.len(), 3);
        // Paying more: the lowest leaves with its child.
        let hi = add(&mut p, &cfg, tx(5, &[ext(5)], 1), 13 * size).unwrap_or_else(|e| panic!("{e}"));
        assert!(!p.contains(&low) && !p.contains(&low_child));
        assert!(p.contains(&mid) && p.contains(&hi));
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        // A child of `mid` in a pool of two: its ancestor `mid` is spared, `hi` leaves.
        let cfg2 = MempoolConfig { max_txs: 2, ..cfg };
        let child =
            add(&mut p, &cfg2, tx(6, &[op(mid, 0)], 1), 1000 * size).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.contains(&mid) && p.contains(&child) && !p.contains(&hi));
        // `mid` with its child is now the lowest package: both leave for a better single.
        let top = add(&mut p, &cfg2, tx(7, &[ext(7)], 1), 1000 * size).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.len(), 1);
        assert!(p.contains(&top));
        assert_eq!(p.bytes(), size);
        p.audit(&cfg2).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn the_eviction_order_is_kept_only_near_the_limits() {
        let cfg = MempoolConfig { max_txs: 8, ..MempoolConfig::default() };
        let mut p = Pool::new(0);
        let ids: Vec<Hash> = (1..=4u8)
            .map(|i| {
                assert!(!p.ordered(), "{} of 8: not near full", p.len());
                add(&mut p, &cfg, tx(i, &[ext(i)], 1), 100 * u64::from(i)).unwrap_or_else(|e| panic!("{e}"))
            })
            .collect();
        assert!(p.ordered(), "half full");
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        // Kept down to a quarter, then dropped at the next admission.
        p.remove(&ids[3]);
        p.remove(&ids[2]);
        p.keep_order(&cfg);
        assert!(p.ordered(), "hysteresis: 2 of 8 is not below a quarter");
        p.remove(&ids[1]);
        p.keep_order(&cfg);
        assert!(!p.ordered());
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        // Limits of one transaction: an empty pool is not near full, a pool of one is.
        let tiny = MempoolConfig { max_txs: 1, max_bytes: 1, ..MempoolConfig::default() };
        let mut empty = Pool::new(0);
        empty.audit(&tiny).unwrap_or_else(|e| panic!("an empty pool under limits of one: {e}"));
        empty.keep_order(&tiny);
        assert!(!empty.ordered());
        // Half the bytes also count.
        let size = tx(9, &[ext(9)], 1).encoded_len() as u64;
        let by_bytes = MempoolConfig { max_bytes: 4 * size, ..MempoolConfig::default() };
        add(&mut p, &by_bytes, tx(9, &[ext(9)], 1), 100).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.ordered(), "{} of {} bytes", p.bytes(), by_bytes.max_bytes);
        p.audit(&by_bytes).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn eviction_without_the_kept_order_chooses_as_with_it() {
        // Limits that shrink under a pool (the order was not kept for them) are met by
        // ordering the pool on the spot, with the same choice.
        let size = tx(1, &[ext(1)], 1).encoded_len() as u64;
        let roomy = MempoolConfig::default();
        let mut p = Pool::new(0);
        let low = add(&mut p, &roomy, tx(1, &[ext(1)], 1), 5 * size).unwrap_or_else(|e| panic!("{e}"));
        add(&mut p, &roomy, tx(2, &[op(low, 0)], 1), 20 * size).unwrap_or_else(|e| panic!("{e}"));
        add(&mut p, &roomy, tx(3, &[ext(3)], 1), 500 * size).unwrap_or_else(|e| panic!("{e}"));
        let tight = MempoolConfig { max_txs: 3, ..roomy };
        let newcomer = cand(tx(5, &[ext(5)], 1), 13 * size);
        assert!(!p.ordered());
        let unordered = p.plan(&tight, &newcomer).unwrap_or_else(|e| panic!("{e}")).evict;
        p.keep_order(&tight);
        assert!(p.ordered());
        let ordered = p.plan(&tight, &newcomer).unwrap_or_else(|e| panic!("{e}")).evict;
        assert_eq!(unordered, ordered);
        assert_eq!(ordered.len(), 2, "the lowest package, parent and child");
    }

    #[test]
    fn a_newcomer_never_evicts_its_own_ancestor() {
        let size = tx(1, &[ext(1)], 1).encoded_len() as u64;
        let cfg = MempoolConfig { max_txs: 2, ..MempoolConfig::default() };
        let mut p = Pool::new(0);
        let parent = add(&mut p, &cfg, tx(1, &[ext(1)], 1), size).unwrap_or_else(|e| panic!("{e}"));
        let other = add(&mut p, &cfg, tx(2, &[ext(2)], 1), 100 * size).unwrap_or_else(|e| panic!("{e}"));
        // The parent is the lowest, but evicting it would take the child: `other` leaves.
        let child =
            add(&mut p, &cfg, tx(3, &[op(parent, 0)], 1), 1000 * size).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.contains(&parent) && p.contains(&child) && !p.contains(&other));
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        // With only its ancestor to evict, a newcomer is refused.
        let cfg1 = MempoolConfig { max_txs: 1, ..cfg };
        let mut p = Pool::new(0);
        let parent = add(&mut p, &cfg1, tx(1, &[ext(1)], 1), size).unwrap_or_else(|e| panic!("{e}"));
        let e = add(&mut p, &cfg1, tx(3, &[op(parent, 0)], 1), 1000 * size).err();
        assert!(matches!(e, Some(MempoolError::PoolFull { .. })), "{e:?}");
        p.audit(&cfg1).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn a_parent_paid_for_by_its_child_outlives_a_better_single() {
        let cfg = MempoolConfig { max_txs: 3, ..MempoolConfig::default() };
        let mut p = Pool::new(0);
        let parent = add(&mut p, &cfg, tx(1, &[ext(1)], 1), 10).unwrap_or_else(|e| panic!("{e}"));
        let _child = add(&mut p, &cfg, tx(2, &[op(parent, 0)], 1), 100_000).unwrap_or_else(|e| panic!("{e}"));
        let single = add(&mut p, &cfg, tx(3, &[ext(3)], 1), 200).unwrap_or_else(|e| panic!("{e}"));
        add(&mut p, &cfg, tx(4, &[ext(4)], 1), 300).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.contains(&parent), "its package rate protects it");
        assert!(!p.contains(&single));
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
    }

    #[test]
    fn coin_view_layers_pool_over_chain() {
        struct Chain;
        impl UtxoView for Chain {
            fn coin(&self, op: &OutPoint) -> Option<Coin> {
                (op.index == 0).then(|| Coin {
                    out: TxOut {
                        value: Amount::new(5).unwrap_or(Amount::ZERO),
                        lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash::ZERO },
                    },
                    height: 1,
                    coinbase: true,
                })
            }
        }
        let cfg = MempoolConfig::default();
        let mut p = Pool::new(0);
        assert!(p.coin(&ext(1), &Chain, 9).is_some());
        let a = add(&mut p, &cfg, tx(1, &[ext(1)], 2), 100).unwrap_or_else(|e| panic!("{e}"));
        assert!(p.coin(&ext(1), &Chain, 9).is_none(), "spent by a pooled tx");
        let c = p.coin(&op(a, 1), &Chain, 9).unwrap_or_else(|| panic!("pooled output"));
        assert_eq!((c.height, c.coinbase, c.out.value.get()), (9, false, 1000));
        assert!(p.coin(&op(a, 2), &Chain, 9).is_none(), "no such output");
        let conflict = p.conflict(&tx(9, &[ext(2), ext(1)], 1));
        assert_eq!(conflict, Some(MempoolError::Conflict { input: 1, prev: ext(1), pooled: a }));
    }

    #[test]
    fn application_keys_are_held_once_and_freed_on_removal() {
        let cfg = MempoolConfig::default();
        let mut p = Pool::new(0);
        let k1 = AppKey { kind: 2, key: Hash([1; 32]) };
        let k2 = AppKey { kind: 2, key: Hash([2; 32]) };
        let other_kind = AppKey { kind: 3, key: Hash([1; 32]) };
        let keyed = |t: Tx, keys: Vec<AppKey>| Candidate { keys, ..cand(t, 1000) };
        let c = keyed(tx(1, &[ext(1)], 1), vec![k1, k2]);
        let a = c.txid;
        let plan = p.plan(&cfg, &c).unwrap_or_else(|e| panic!("{e}"));
        p.insert(c, plan);
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.claimant(&k2), Some(a));
        assert_eq!(
            p.app_conflict(&[other_kind, k2]),
            Some(MempoolError::AppConflict { kind: 2, key: k2.key, pooled: a })
        );
        assert_eq!(p.app_conflict(&[other_kind]), None, "keys are per kind");
        // A child holding its own key; removing the parent with descendants frees all three.
        let child = keyed(tx(2, &[op(a, 0)], 1), vec![other_kind]);
        let b = child.txid;
        let plan = p.plan(&cfg, &child).unwrap_or_else(|e| panic!("{e}"));
        p.insert(child, plan);
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.claimant(&other_kind), Some(b));
        assert_eq!(p.remove_with_descendants(&a).len(), 2);
        assert!(!p.has_claims());
        assert_eq!(p.app_conflict(&[k1, k2, other_kind]), None);
        p.audit(&cfg).unwrap_or_else(|e| panic!("{e}"));
    }
}
