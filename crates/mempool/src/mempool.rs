//! [`Mempool`], the facade: the writer's operations (admit, offer, remove a block's
//! transactions, re-admit after a reorganisation) and the readers' (snapshots, lookups,
//! templates, stats).
//!
//! It owns the state — the writer's pool, orphans, counters and removal log behind one mutex,
//! the published [`Snapshot`], the signature cache — and sequences each operation: prepare
//! the batch outside the lock, take the lock, judge the batch (`crate::admission`), hold the
//! orphans the policy lets in (`crate::policy`), count, log what left, publish.
//!
//! - **Invariants.** Only a writer holding the mutex changes the pool, and every writer that
//!   changed it publishes a new snapshot before it lets go, so readers see whole states only;
//!   the counters and the removal log record every admission and departure once.
//! - **Must not.** Judge a transaction itself (the engine and the policy do), or make a reader
//!   wait for a writer (except under [`MempoolConfig::single_lock`], the study's baseline).

// Keys are hashes and outpoints: foldhash, seeded per process, instead of SipHash.
use foldhash::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arc_swap::ArcSwap;
use rayon::prelude::*;
use scalechain_consensus::{Apps, Params, TxEnv};
use scalechain_types::{profile, Block, Hash, HashKind, Tx};

use crate::admission::{prepare, run_admission, Prepared};
use crate::config::MempoolConfig;
use crate::error::MempoolError;
use crate::orphan::{OrphanPool, OrphanSource, OrphanStats, Released};
use crate::outcome::{Admitted, Offered, Removed, ReorgOutcome, TxVerdict};
use crate::policy::{app_keys, hold_orphan};
use crate::pool::Pool;
use crate::removed::{Departure, RemovalLog, RemovedPage};
use crate::sigcache::SignatureCache;
use crate::snapshot::{Counters, PoolEntry, Snapshot, Stats, Template};

struct Writer {
    pool: Pool,
    counters: Counters,
    version: u64,
    orphans: OrphanPool,
    removed: RemovalLog,
}

impl Writer {
    /// Counts an admission and logs what it evicted.
    fn note_admitted(&mut self, a: &Admitted) {
        self.counters.admitted += 1;
        self.counters.evicted += a.evicted.len() as u64;
        for t in &a.evicted {
            self.removed.push(*t, Departure::Evicted);
        }
    }
}

/// The transaction pool. Share it as `Arc<Mempool>`: any number of readers, one writer at a
/// time.
///
/// Concurrency: the writer (admit, remove_block, reorg) holds a mutex that only writers take,
/// works on its own state, and publishes an immutable [`Snapshot`] with one atomic pointer
/// swap (`arc-swap`). Readers ([`Mempool::get`], [`Mempool::snapshot`],
/// [`Mempool::template`], ...) load the current snapshot without locking, so a reader never
/// delays the writer and may keep a snapshot as long as it likes. The snapshot's map is a
/// stack of immutable sorted runs shared with the writer's copy: a publication seals the
/// changes since the last one into a run, and an admitted transaction costs a push and its
/// share of the sorts and of the logarithmic merges, not a copy of the pool. With
/// [`MempoolConfig::single_lock`] (the study's baseline) readers take the writers' mutex
/// instead and read under it.
pub struct Mempool {
    hash: HashKind,
    config: MempoolConfig,
    writer: Mutex<Writer>,
    published: ArcSwap<Snapshot>,
    sig_cache: Arc<SignatureCache>,
}

impl Mempool {
    /// An empty pool for a chain hashing with `hash`.
    pub fn new(hash: HashKind, config: MempoolConfig) -> Mempool {
        let sig_cache = Arc::new(SignatureCache::new(config.sig_cache_capacity));
        Mempool::with_sig_cache(hash, config, sig_cache)
    }

    /// An empty pool whose signature cache is `sig_cache` (shared with other pools: the
    /// simulator's nodes share one, so that a signature one verified is not verified again;
    /// `config.sig_cache_capacity` is then the shared cache's business).
    pub fn with_sig_cache(hash: HashKind, config: MempoolConfig, sig_cache: Arc<SignatureCache>) -> Mempool {
        let orphans = OrphanPool::new(config.orphans.clone());
        let removed = RemovalLog::new(config.removed_log);
        Mempool {
            hash,
            config,
            writer: Mutex::new(Writer {
                pool: Pool::new(0),
                counters: Counters::default(),
                version: 0,
                orphans,
                removed,
            }),
            published: ArcSwap::from_pointee(Snapshot::default()),
            sig_cache,
        }
    }

    /// The limits and policy.
    pub fn config(&self) -> &MempoolConfig {
        &self.config
    }

    /// The signature cache: hand it to `Chain::set_sig_cache` so that block connection skips
    /// the signatures admission verified.
    pub fn sig_cache(&self) -> Arc<SignatureCache> {
        self.sig_cache.clone()
    }

    fn lock(&self) -> MutexGuard<'_, Writer> {
        // A writer that panicked left no half-published state: readers only ever see whole
        // snapshots, and the writer's own state is checked by `audit`.
        self.writer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`Mempool::lock`], the wait profiled (`mempool.lock`: time queued behind another writer).
    fn lock_profiled(&self) -> MutexGuard<'_, Writer> {
        let _s = profile::span("mempool.lock");
        self.lock()
    }

    fn publish(&self, w: &mut Writer) {
        let _s = profile::span("mempool.publish");
        w.version += 1;
        let snap = Snapshot {
            entries: w.pool.publish_entries(),
            bytes: w.pool.bytes(),
            counters: w.counters.clone(),
            version: w.version,
        };
        self.published.store(Arc::new(snap));
    }

    /// With [`MempoolConfig::single_lock`], the writers' lock, which a reader then holds while
    /// it reads (the wait profiled as `mempool.read_lock`); lock-free reads take nothing.
    fn read_guard(&self) -> Option<MutexGuard<'_, Writer>> {
        self.config.single_lock.then(|| {
            let _s = profile::span("mempool.read_lock");
            self.lock()
        })
    }

    /// The current snapshot (lock-free; hold it as long as needed).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        let _g = self.read_guard();
        self.published.load_full()
    }

    /// The pooled entry of `txid`.
    pub fn get(&self, txid: &Hash) -> Option<Arc<PoolEntry>> {
        let _g = self.read_guard();
        self.published.load().get(txid).cloned()
    }

    /// Is `txid` pooled?
    pub fn contains(&self, txid: &Hash) -> bool {
        let _g = self.read_guard();
        self.published.load().contains(txid)
    }

    /// Transactions pooled.
    pub fn len(&self) -> usize {
        let _g = self.read_guard();
        self.published.load().len()
    }

    /// Holds nothing?
    pub fn is_empty(&self) -> bool {
        let _g = self.read_guard();
        self.published.load().is_empty()
    }

    /// Bytes pooled (sum of encodings).
    pub fn bytes(&self) -> u64 {
        let _g = self.read_guard();
        self.published.load().bytes()
    }

    /// At most `limit` of the latest transactions that left the pool unconfirmed (evicted,
    /// conflicted, expired, dropped or not returned after a reorganisation), after log position
    /// `after`, oldest first; the log keeps the newest [`MempoolConfig::removed_log`]. Takes
    /// the writer's lock for the copy.
    pub fn removed(&self, after: u64, limit: usize) -> RemovedPage {
        self.lock().removed.page(after, limit)
    }

    /// Figures for metrics.
    pub fn stats(&self) -> Stats {
        let s = {
            let _g = self.read_guard();
            self.published.load_full()
        };
        Stats {
            count: s.len(),
            bytes: s.bytes(),
            counters: s.counters().clone(),
            sig_cache_hits: self.sig_cache.hits(),
            sig_cache_lookups: self.sig_cache.lookups(),
            sig_cache_len: self.sig_cache.len(),
            sig_cache_capacity: self.sig_cache.capacity(),
            version: s.version(),
            orphans: self.orphan_stats(),
        }
    }

    /// The orphan pool's figures and totals (takes the writer's lock briefly).
    pub fn orphan_stats(&self) -> OrphanStats {
        self.lock().orphans.stats()
    }

    /// Is `txid` held in the orphan pool?
    pub fn is_orphan(&self, txid: &Hash) -> bool {
        self.lock().orphans.contains(txid)
    }

    /// A block body from the current snapshot: see [`Snapshot::template`].
    pub fn template(&self, max_bytes: u64, max_txs: usize) -> Template {
        let _g = self.read_guard();
        self.published.load().template(max_bytes, max_txs)
    }

    /// Judges `txs` against the chain state in `env` plus the pool, and takes those that pass
    /// the consensus rules and the pool's policy. Verdicts come back in the order of `txs`.
    /// `env.view` is the committed UTXO set (the pool adds its own outputs on top) and
    /// `env.height` the next block's height; the pool uses its own signature cache, whatever
    /// `env.ctx.sig_cache` holds.
    ///
    /// Parents and children may come in one batch, in any order: they are admitted in
    /// generations, each verified as one parallel batch (`verify_txs`) with the pool's
    /// signature cache. A refused transaction changes nothing; the wtxids of admitted ones
    /// join the signature cache.
    pub fn admit(&self, env: &TxEnv<'_>, txs: Vec<Tx>) -> Vec<Result<Admitted, MempoolError>> {
        if txs.is_empty() {
            return Vec::new();
        }
        let _s = profile::span("mempool.admit");
        let items = prepare(env.ctx.params.hash, txs);
        let mut w = self.lock_profiled();
        let (verdicts, _) = run_admission(&mut w.pool, &self.config, &self.sig_cache, env, items);
        for v in &verdicts {
            match v {
                Ok(a) => w.note_admitted(a),
                Err(e) => *w.counters.rejected.entry(e.reason()).or_default() += 1,
            }
        }
        self.publish(&mut w);
        verdicts
    }

    /// Offers transactions, each with its source, at the validator's clock `now_ms`: judged
    /// like [`Mempool::admit`], except that a transaction missing an input whose parent is
    /// unknown here (neither pooled nor confirmed: `confirmed(txid)` says whether a
    /// transaction is on the main chain) is held in the orphan pool instead of refused, and
    /// orphans waiting for a transaction admitted here are offered again, their children after
    /// them. A missing output of a pooled or confirmed transaction is spent or never existed:
    /// spending it is refused. Orphans past their expiry leave first; a transaction held as an
    /// orphan already is refused as known.
    pub fn offer(
        &self,
        env: &TxEnv<'_>,
        txs: Vec<(Tx, OrphanSource)>,
        now_ms: u64,
        confirmed: &dyn Fn(&Hash) -> bool,
    ) -> Offered {
        if txs.is_empty() {
            return Offered::default();
        }
        let _s = profile::span("mempool.offer");
        let (txs, sources): (Vec<Tx>, Vec<OrphanSource>) = txs.into_iter().unzip();
        let items = prepare(env.ctx.params.hash, txs);
        let txids: Vec<Hash> = items.iter().map(|p| p.txid).collect();
        let mut w = self.lock_profiled();
        w.orphans.expire(now_ms);
        let n = items.len();
        let mut verdicts: Vec<Option<TxVerdict>> = (0..n).map(|_| None).collect();
        let mut judged = Vec::with_capacity(n);
        let mut at = Vec::with_capacity(n);
        for (i, p) in items.into_iter().enumerate() {
            if w.orphans.contains(&p.txid) {
                verdicts[i] = Some(TxVerdict::Refused(MempoolError::AlreadyKnown { txid: p.txid }));
            } else {
                at.push((i, p.txid, p.size));
                judged.push(p);
            }
        }
        let (results, missing) = run_admission(&mut w.pool, &self.config, &self.sig_cache, env, judged);
        let mut missing: HashMap<usize, Tx> = missing.into_iter().collect();
        let mut admitted = Vec::new();
        for (k, r) in results.into_iter().enumerate() {
            let (i, txid, size) = at[k];
            let v = match (r, missing.remove(&k)) {
                (Ok(a), _) => {
                    admitted.push(a.txid);
                    TxVerdict::Admitted(a)
                }
                (Err(e), Some(tx)) => {
                    let w = &mut *w;
                    match hold_orphan(
                        &w.pool,
                        &mut w.orphans,
                        env,
                        (tx, txid, size),
                        e,
                        (sources[i], now_ms),
                        confirmed,
                    ) {
                        Ok(o) => {
                            w.orphans.counters_mut().held += 1;
                            TxVerdict::Orphan(o)
                        }
                        Err(e) => TxVerdict::Refused(e),
                    }
                }
                (Err(e), None) => TxVerdict::Refused(e),
            };
            verdicts[i] = Some(v);
        }
        let verdicts: Vec<TxVerdict> = verdicts
            .into_iter()
            .map(|v| v.expect("every transaction offered has a verdict: known orphans or judged"))
            .collect();
        for v in &verdicts {
            match v {
                TxVerdict::Admitted(a) => w.note_admitted(a),
                TxVerdict::Refused(e) => *w.counters.rejected.entry(e.reason()).or_default() += 1,
                TxVerdict::Orphan(_) => {}
            }
        }
        let released = self.release_orphans(&mut w, env, admitted, confirmed);
        self.publish(&mut w);
        Offered { verdicts, txids, released }
    }

    /// Transactions `parents` joined the main chain (a block connected): the orphans waiting
    /// for them are offered again, as [`Mempool::offer`] does for admitted parents. Returns
    /// those admitted.
    pub fn offer_orphans_of(
        &self,
        env: &TxEnv<'_>,
        parents: &[Hash],
        now_ms: u64,
        confirmed: &dyn Fn(&Hash) -> bool,
    ) -> Vec<Admitted> {
        let mut w = self.lock();
        let expired = w.orphans.expire(now_ms);
        if w.orphans.is_empty() {
            return Vec::new();
        }
        let released = self.release_orphans(&mut w, env, parents.to_vec(), confirmed);
        if !released.is_empty() || !expired.is_empty() {
            self.publish(&mut w);
        }
        released
    }

    /// Sends away orphans past their expiry at `now_ms`; returns how many left.
    pub fn expire_orphans(&self, now_ms: u64) -> usize {
        self.lock().orphans.expire(now_ms).len()
    }

    /// Sends away the orphans `source` brought (the peer left); returns how many.
    pub fn forget_orphans_from(&self, source: OrphanSource) -> usize {
        self.lock().orphans.forget_source(source)
    }

    /// Offers again, generation by generation, the orphans waiting for `parents` (txids just
    /// admitted or confirmed); those still missing a parent are held again with their first
    /// arrival time, so waiting never extends an orphan's expiry.
    fn release_orphans(
        &self,
        w: &mut Writer,
        env: &TxEnv<'_>,
        parents: Vec<Hash>,
        confirmed: &dyn Fn(&Hash) -> bool,
    ) -> Vec<Admitted> {
        let mut out = Vec::new();
        let mut frontier = parents;
        while !frontier.is_empty() && !w.orphans.is_empty() {
            let released: Vec<Released> = w.orphans.release_children(&frontier);
            frontier.clear();
            if released.is_empty() {
                break;
            }
            let origins: Vec<(OrphanSource, u64)> =
                released.iter().map(|r| (r.source, r.arrived_ms)).collect();
            let items = prepare(env.ctx.params.hash, released.into_iter().map(|r| r.tx).collect());
            let meta: Vec<(Hash, u64)> = items.iter().map(|p| (p.txid, p.size)).collect();
            let (results, missing) = run_admission(&mut w.pool, &self.config, &self.sig_cache, env, items);
            let mut missing: HashMap<usize, Tx> = missing.into_iter().collect();
            for (k, r) in results.into_iter().enumerate() {
                let (txid, size) = meta[k];
                match (r, missing.remove(&k)) {
                    (Ok(a), _) => {
                        frontier.push(a.txid);
                        w.note_admitted(&a);
                        w.orphans.counters_mut().admitted += 1;
                        out.push(a);
                    }
                    (Err(e), Some(tx)) => {
                        if hold_orphan(
                            &w.pool,
                            &mut w.orphans,
                            env,
                            (tx, txid, size),
                            e,
                            origins[k],
                            confirmed,
                        )
                        .is_err()
                        {
                            w.orphans.counters_mut().refused += 1;
                        }
                    }
                    (Err(_), None) => w.orphans.counters_mut().refused += 1,
                }
            }
        }
        out
    }

    /// A block joined the main chain: the pooled transactions it confirms leave (their pooled
    /// children stay, as roots once all their pooled parents left), and so do pooled
    /// transactions spending an output the block spends, with their descendants.
    ///
    /// So do pooled transactions holding an application key that one of the block's transactions
    /// holds ([`scalechain_consensus::AppModule::conflict_keys`] of `apps`, the chain's modules),
    /// with their descendants: e.g. a voter's pooled ballot once another ballot of that voter for
    /// the same election is in a block.
    ///
    /// So do pooled transactions that no block after this one may include (their module's
    /// [`scalechain_consensus::AppModule::last_height`] is this block's height or lower), so a
    /// template never holds a ballot past its window.
    ///
    /// Call it for each connected block, oldest first. Application transactions are not
    /// otherwise re-judged here; after blocks that change application state, [`Mempool::reorg`]
    /// with no returned transactions re-judges the whole pool.
    pub fn remove_block(&self, block: &Block, apps: &Apps, params: &Params) -> Removed {
        self.remove_block_txids(block, &[], apps, params)
    }

    /// [`Mempool::remove_block`] for a block whose txids the caller has (every one, in block
    /// order, as the block's validation computed them), so they are not hashed again. Txids
    /// that do not match the block's transaction count are ignored and computed here.
    pub fn remove_block_txids(&self, block: &Block, txids: &[Hash], apps: &Apps, params: &Params) -> Removed {
        let computed: Vec<Hash>;
        let txids = if txids.len() == block.txs.len() {
            txids
        } else {
            computed = if block.txs.len() < 64 {
                block.txs.iter().map(|t| t.txid(self.hash)).collect()
            } else {
                block.txs.par_iter().map(|t| t.txid(self.hash)).collect()
            };
            &computed
        };
        let mut w = self.lock();
        let mut removed = Removed::default();
        for (tx, txid) in block.txs.iter().zip(txids) {
            if tx.is_coinbase() {
                continue;
            }
            if w.orphans.remove(txid) {
                w.orphans.counters_mut().confirmed += 1;
            }
            if w.pool.remove(txid).is_some() {
                // It held its keys alone: no other pooled transaction holds them.
                removed.confirmed += 1;
            } else if w.pool.has_claims() {
                for k in app_keys(apps, params, tx) {
                    if let Some(holder) = w.pool.claimant(&k) {
                        removed
                            .conflicted
                            .extend(w.pool.remove_with_descendants(&holder).iter().map(|e| e.txid));
                    }
                }
            }
            for i in &tx.inputs {
                if let Some(spender) = w.pool.spender(&i.prev) {
                    removed
                        .conflicted
                        .extend(w.pool.remove_with_descendants(&spender).iter().map(|e| e.txid));
                }
            }
        }
        for txid in w.pool.expired_before(block.header.height.saturating_add(1)) {
            removed.expired.extend(w.pool.remove_with_descendants(&txid).iter().map(|e| e.txid));
        }
        if removed.confirmed > 0 || !removed.conflicted.is_empty() || !removed.expired.is_empty() {
            w.counters.confirmed += removed.confirmed as u64;
            w.counters.conflicted += removed.conflicted.len() as u64;
            w.counters.expired += removed.expired.len() as u64;
            for t in &removed.conflicted {
                w.removed.push(*t, Departure::Conflict);
            }
            for t in &removed.expired {
                w.removed.push(*t, Departure::Expired);
            }
            self.publish(&mut w);
        }
        removed
    }

    /// The main chain was reorganised and `env` describes its new tip: the transactions of the
    /// disconnected blocks (`Reorg::returned`, after [`Mempool::remove_block`] for the connected
    /// ones) are judged again together with everything pooled, returned ones first, and the
    /// pool is rebuilt from those that pass. Pooled transactions that no longer pass leave.
    ///
    /// Signatures are not checked again for anything the signature cache remembers (everything
    /// admitted before, within its capacity). With an empty `returned` this re-judges the pool
    /// against `env`.
    pub fn reorg(&self, env: &TxEnv<'_>, returned: Vec<Tx>) -> ReorgOutcome {
        let returned = prepare(env.ctx.params.hash, returned);
        let n_returned = returned.len();
        let txids: Vec<Hash> = returned.iter().map(|r| r.txid).collect();
        let mut w = self.lock();
        let old = w.pool.by_admission();
        let mut items = returned;
        items.extend(old.iter().map(|e| Prepared {
            tx: Tx::clone(&e.tx),
            txid: e.txid,
            wtxid: e.wtxid,
            size: e.size,
        }));
        let mut fresh = Pool::new(w.pool.next_seq());
        let (verdicts, _) = run_admission(&mut fresh, &self.config, &self.sig_cache, env, items);
        let mut out = ReorgOutcome::default();
        let mut evicted = Vec::new();
        let mut not_returned = Vec::new();
        for (k, v) in verdicts.into_iter().enumerate() {
            if let Ok(a) = &v {
                evicted.extend_from_slice(&a.evicted);
            }
            if k < n_returned {
                if let Err(e) = &v {
                    not_returned.push((txids[k], e.reason()));
                }
                out.returned.push(v);
            } else if let Err(e) = v {
                // A returned transaction with the same txid took its place.
                if !matches!(e, MempoolError::AlreadyKnown { .. }) {
                    out.dropped.push((old[k - n_returned].txid, e));
                }
            }
        }
        w.pool = fresh;
        w.counters.readmitted += out.returned.iter().filter(|v| v.is_ok()).count() as u64;
        w.counters.dropped += out.dropped.len() as u64;
        w.counters.evicted += evicted.len() as u64;
        for t in evicted {
            w.removed.push(t, Departure::Evicted);
        }
        for (t, reason) in not_returned {
            w.removed.push(t, Departure::NotReturned(reason));
        }
        for (t, e) in &out.dropped {
            w.removed.push(*t, Departure::Dropped(e.reason()));
        }
        self.publish(&mut w);
        out
    }

    /// Checks the writer's internal invariants (graph links, spends, descendant totals,
    /// eviction order, limits) and that the published snapshot is the writer's state.
    /// Describes the first broken one. O(pool); for tests and diagnostics.
    pub fn audit(&self) -> Result<(), String> {
        let w = self.lock();
        w.pool.audit(&self.config)?;
        let s = self.published.load();
        if !w.pool.entries_published_as(&s.entries) || s.bytes != w.pool.bytes() || s.version != w.version {
            return Err("the published snapshot is not the writer's state".into());
        }
        Ok(())
    }
}

impl std::fmt::Debug for Mempool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.published.load();
        f.debug_struct("Mempool").field("len", &s.len()).field("bytes", &s.bytes()).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Duration;

    use super::*;

    /// Holds the writers' lock while a reader calls `len`: true if the reader finished while
    /// the lock was held.
    fn reader_passes_a_writer(single_lock: bool) -> bool {
        let pool =
            Arc::new(Mempool::new(HashKind::Sha256, MempoolConfig { single_lock, ..Default::default() }));
        let guard = pool.lock();
        let (tx, rx) = mpsc::channel();
        let reader = {
            let pool = pool.clone();
            std::thread::spawn(move || {
                let _ = tx.send(pool.len());
            })
        };
        let passed = rx.recv_timeout(Duration::from_millis(300)).is_ok();
        drop(guard);
        reader.join().unwrap();
        passed
    }

    #[test]
    fn readers_wait_for_writers_only_under_a_single_lock() {
        assert!(reader_passes_a_writer(false), "lock-free readers load the published snapshot");
        assert!(!reader_passes_a_writer(true), "under a single lock a reader waits for the writer");
    }
}
