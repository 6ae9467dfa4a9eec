//! [`Mempool`]: the writer's operations (admit, remove a block's transactions, re-admit after
//! a reorganisation) and the readers' (snapshots, lookups, templates, stats).

// Keys are hashes and outpoints: foldhash, seeded per process, instead of SipHash.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use arc_swap::ArcSwap;
use rayon::prelude::*;
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::{
    verify_txs_with_ids, AppModule, Apps, Coin, Params, SigCache, SignatureWork, TxEnv, TxIds, TxRule,
    UtxoView, VerifyConfig, VerifyMode,
};
use scalechain_types::{profile, Amount, Block, FeeRate, Hash, HashKind, OutPoint, Tx, TxKind};

use crate::config::MempoolConfig;
use crate::error::MempoolError;
use crate::orphan::{OrphanPool, OrphanSource, OrphanStats, Released};
use crate::pool::{AppKey, Candidate, Pool};
use crate::removed::{Departure, RemovalLog, RemovedPage};
use crate::sigcache::SignatureCache;
use crate::snapshot::{Counters, PoolEntry, Snapshot, Stats, Template};

/// A transaction the pool took.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Admitted {
    /// The transaction, as the pool holds it.
    pub tx: Arc<Tx>,
    /// Its txid.
    pub txid: Hash,
    /// Its wtxid.
    pub wtxid: Hash,
    /// The fee it pays.
    pub fee: Amount,
    /// Bytes of its encoding.
    pub size: u64,
    /// Pooled transactions evicted to make room for it (descendants included).
    pub evicted: Vec<Hash>,
}

/// What a connected block took out of the pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Removed {
    /// Pooled transactions the block confirmed.
    pub confirmed: usize,
    /// Pooled transactions that spent an output the block spends, or held an application key a
    /// transaction of the block holds, with their descendants.
    pub conflicted: Vec<Hash>,
    /// Pooled transactions that no later block may include (a ballot past its voting window:
    /// [`scalechain_consensus::AppModule::last_height`]), with their descendants.
    pub expired: Vec<Hash>,
}

/// What a reorganisation did to the pool.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReorgOutcome {
    /// The verdict on each returned transaction, in the order given.
    pub returned: Vec<Result<Admitted, MempoolError>>,
    /// Pooled transactions that no longer pass against the new tip, with the reason.
    pub dropped: Vec<(Hash, MempoolError)>,
}

/// The verdict on one transaction offered to the node ([`Mempool::offer`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TxVerdict {
    /// Taken into the pool.
    Admitted(Admitted),
    /// Not refused: some of its inputs spend outputs of transactions unknown here, so it waits
    /// in the orphan pool and is offered again when they come.
    Orphan(HeldOrphan),
    /// Refused.
    Refused(MempoolError),
}

impl TxVerdict {
    /// The verdict for callers that speak `Result`: an orphan is `Err(MempoolError::Orphan)`
    /// (reason `orphan`), which says it is held, not refused.
    pub fn into_result(self) -> Result<Admitted, MempoolError> {
        match self {
            TxVerdict::Admitted(a) => Ok(a),
            TxVerdict::Orphan(o) => Err(MempoolError::Orphan { input: o.input, prev: o.prev }),
            TxVerdict::Refused(e) => Err(e),
        }
    }

    /// True if the transaction was taken into the pool.
    pub fn is_admitted(&self) -> bool {
        matches!(self, TxVerdict::Admitted(_))
    }

    /// True if it is held as an orphan.
    pub fn is_orphan(&self) -> bool {
        matches!(self, TxVerdict::Orphan(_))
    }

    /// The refusal, if it was refused.
    pub fn refusal(&self) -> Option<&MempoolError> {
        match self {
            TxVerdict::Refused(e) => Some(e),
            _ => None,
        }
    }

    /// True if refused for want of room ([`MempoolError::may_fit_later`]).
    pub fn crowded_out(&self) -> bool {
        self.refusal().is_some_and(MempoolError::may_fit_later)
    }
}

/// A transaction held in the orphan pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldOrphan {
    /// Its txid.
    pub txid: Hash,
    /// Its first input whose output is unknown here.
    pub input: usize,
    /// What that input spends.
    pub prev: OutPoint,
    /// The txids of the parents it waits for.
    pub parents: Vec<Hash>,
    /// Orphans sent away to make room for it.
    pub evicted: Vec<Hash>,
}

/// What [`Mempool::offer`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Offered {
    /// One verdict per transaction offered, in order.
    pub verdicts: Vec<TxVerdict>,
    /// The txid of each transaction offered, in order (hashed once, for the pool's keys:
    /// callers need not hash again).
    pub txids: Vec<Hash>,
    /// Orphans admitted because a transaction admitted here was their parent (children after
    /// their parents).
    pub released: Vec<Admitted>,
}

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

/// A transaction with its ids and size, computed before the writer's lock is taken.
struct Prepared {
    tx: Tx,
    txid: Hash,
    wtxid: Hash,
    size: u64,
}

fn prepare(hash: HashKind, txs: Vec<Tx>) -> Vec<Prepared> {
    let _s = profile::span("mempool.prepare");
    let one =
        |tx: Tx| Prepared { txid: tx.txid(hash), wtxid: tx.wtxid(hash), size: tx.encoded_len() as u64, tx };
    if txs.len() < 64 {
        txs.into_iter().map(one).collect()
    } else {
        txs.into_par_iter().map(one).collect()
    }
}

/// Chain UTXOs, plus outputs of pooled transactions, less the outputs pooled transactions spend.
struct PoolView<'a> {
    pool: &'a Pool,
    chain: &'a (dyn UtxoView + Sync),
    height: u64,
}

impl UtxoView for PoolView<'_> {
    fn coin(&self, op: &OutPoint) -> Option<Coin> {
        self.pool.coin(op, self.chain, self.height)
    }
}

/// The application keys `tx` would hold in the pool (distinct, sorted): those its module names
/// ([`scalechain_consensus::AppModule::conflict_keys`]); none for transfers and unknown kinds.
fn app_keys(apps: &Apps, params: &Params, tx: &Tx) -> Vec<AppKey> {
    let Some(m) = module_of(apps, tx) else { return Vec::new() };
    let mut keys: Vec<AppKey> =
        m.conflict_keys(tx, params).into_iter().map(|key| AppKey { kind: tx.kind.0, key }).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The last height a block may include `tx` at, as its module says; none for transfers.
fn app_last_height(apps: &Apps, params: &Params, tx: &Tx) -> Option<u64> {
    module_of(apps, tx)?.last_height(tx, params)
}

/// The fee-less group of `tx` paying `fee` ([`PoolEntry::fee_less`]): none unless it has no
/// inputs, pays nothing, and its module names a group.
fn fee_less_group(apps: &Apps, params: &Params, tx: &Tx, fee: u64) -> Option<Hash> {
    if !tx.inputs.is_empty() || fee != 0 {
        return None;
    }
    module_of(apps, tx)?.fee_less_group(tx, params)
}

/// The application module owning `tx`; none for transfers, coinbases and unknown kinds.
fn module_of<'a>(apps: &'a Apps, tx: &Tx) -> Option<&'a Arc<dyn AppModule>> {
    if tx.kind == TxKind::TRANSFER || tx.is_coinbase() {
        return None;
    }
    apps.get(tx.kind)
}

/// Policy rules that need no state: size and dust.
fn static_policy(cfg: &MempoolConfig, tx: &Tx, size: u64) -> Result<(), MempoolError> {
    if size > cfg.max_tx_bytes {
        return Err(MempoolError::TooLarge { size, max: cfg.max_tx_bytes });
    }
    if let Some((output, o)) = tx.outputs.iter().enumerate().find(|(_, o)| o.value < cfg.dust_limit) {
        return Err(MempoolError::Dust { output, value: o.value, limit: cfg.dust_limit });
    }
    Ok(())
}

/// Is there room for `size` more bytes of fee-less transactions of `group`, in the pool's
/// fee-less space and in the group's share of it?
fn fee_less_room(pool: &Pool, cfg: &MempoolConfig, group: Hash, size: u64) -> Result<(), MempoolError> {
    let held = pool.fee_less_bytes();
    if held.saturating_add(size) > cfg.max_fee_less_bytes {
        return Err(MempoolError::FeeLessFull { size, held, max: cfg.max_fee_less_bytes });
    }
    let held = pool.fee_less_group_bytes(&group);
    if held.saturating_add(size) > cfg.max_fee_less_group_bytes {
        return Err(MempoolError::FeeLessGroupFull { size, group, held, max: cfg.max_fee_less_group_bytes });
    }
    Ok(())
}

/// Before verification: a fee-less application transaction (no inputs, so no fee: below any
/// positive minimum) whose space in the pool is full already is refused as `place` would
/// refuse it after verifying it, so a flood past the budget costs no verification. (One that
/// breaks a consensus rule as well is then refused for the room, not for the rule.)
fn fee_less_early(
    pool: &Pool,
    cfg: &MempoolConfig,
    env: &TxEnv<'_>,
    tx: &Tx,
    size: u64,
) -> Result<(), MempoolError> {
    if cfg.min_fee_rate == 0 {
        return Ok(());
    }
    match fee_less_group(env.ctx.apps, env.ctx.params, tx, 0) {
        Some(group) => fee_less_room(pool, cfg, group, size),
        None => Ok(()),
    }
}

/// Takes a transaction that passed the consensus rules, if the pool's policy lets it in.
/// `recheck`: the pool changed since the transaction was verified other than by placing
/// transactions that spend other outputs and claim other keys (an eviction, or a generation
/// judged as a cycle), so its inputs and keys are looked up again.
fn place(
    pool: &mut Pool,
    cfg: &MempoolConfig,
    env: &TxEnv<'_>,
    c: Candidate,
    recheck: bool,
) -> Result<Admitted, MempoolError> {
    if recheck {
        if let Some(e) = pool.conflict(&c.tx).or_else(|| pool.app_conflict(&c.keys)) {
            return Err(e);
        }
        for (input, i) in c.tx.inputs.iter().enumerate() {
            if pool.coin(&i.prev, env.view, env.height).is_none() {
                return Err(MempoolError::Consensus(TxRule::MissingInput { input, prev: i.prev }));
            }
        }
    }
    let rate = FeeRate::of(c.fee, c.size);
    if rate < FeeRate::of(cfg.min_fee_rate, 1000) {
        let Some(group) = c.fee_less else {
            return Err(MempoolError::LowFee {
                fee: Amount::new(c.fee).unwrap_or(Amount::MAX),
                size: c.size,
                rate: rate.per_1000_bytes(),
                min: cfg.min_fee_rate,
            });
        };
        fee_less_room(pool, cfg, group, c.size)?;
    }
    let plan = pool.plan(cfg, &c)?;
    let mut evicted = Vec::new();
    for e in &plan.evict {
        evicted.extend(pool.remove_with_descendants(e).iter().map(|x| x.txid));
    }
    let entry = pool.insert(c, plan);
    pool.keep_order(cfg);
    Ok(Admitted {
        tx: entry.tx.clone(),
        txid: entry.txid,
        wtxid: entry.wtxid,
        fee: entry.fee,
        size: entry.size,
        evicted,
    })
}

/// Transactions of a batch refused for a missing input, by position in the batch.
type MissingInputs = Vec<(usize, Tx)>;

/// Admission of a batch into `pool`, in generations: first the transactions whose inputs
/// exist (chain or pool), verified together by `verify_txs`, then those spending outputs of the
/// ones just admitted, and so on. Of two transactions of the batch spending the same output,
/// the earlier is judged first; the later waits and then conflicts with it, or, if the earlier
/// failed, is judged in turn; likewise for two claiming one application key. Verdicts come back
/// in input order.
///
/// A batch with at least [`OVERLAP_MIN`] signatures to check is judged in two stages: the
/// rayon pool verifies them from the start, in chunks of [`OVERLAP_CHUNK`] transactions in
/// batch order ([`SignatureWork`]), while the calling thread sorts the batch into generations
/// and takes each generation, chunk by chunk, through the ledger rules against the pool, waits
/// for the chunk's signatures and places it. So the work only one thread can do runs beside
/// signature checks instead of before or after them. Only transactions whose policy holds and
/// whose coins all exist when the batch starts are checked ahead: one that would be refused
/// first, or held as an orphan, costs no signature work, and its children in the batch are
/// verified whole in their generation. The verdicts are those of the one-stage order: a
/// transaction whose signatures the first stage did not vouch for is verified again in full,
/// which names what failed.
///
/// Transactions that failed for a missing input (`TxRule::MissingInput`) come back beside the
/// verdicts, by position, for the orphan pool.
fn run_admission(
    pool: &mut Pool,
    cfg: &MempoolConfig,
    cache: &SignatureCache,
    env: &TxEnv<'_>,
    items: Vec<Prepared>,
) -> (Vec<Result<Admitted, MempoolError>>, MissingInputs) {
    let _s = profile::span("mempool.judge");
    // Signatures the node's cache holds are not verified again.
    let ctx = ConnectCtx { sig_cache: Some(cache as &dyn SigCache), ..env.ctx };
    let env = &TxEnv { ctx, ..*env };
    let keys_of = |p: &Prepared| app_keys(env.ctx.apps, env.ctx.params, &p.tx);
    if items.len() < 64 {
        let keys = items.iter().map(keys_of).collect();
        return judge(pool, cfg, cache, env, items, keys, None);
    }
    let keys: Vec<Vec<AppKey>> = items.par_iter().map(keys_of).collect();
    if items.len() < OVERLAP_MIN {
        return judge(pool, cfg, cache, env, items, keys, None);
    }
    // Everything the second stage would hand the pool is done before the first stage takes
    // it: a parallel call from here queues behind the signature tasks. A transaction gets its
    // signatures checked ahead only if its policy holds and every coin it spends exists now:
    // one that would be refused first, or held as an orphan, costs no signature work, as in
    // one stage (its children in the batch are judged in a later generation, in one stage).
    let (work, checked): (Vec<SignatureWork>, Vec<Vec<bool>>) = {
        let view = PoolView { pool, chain: env.view, height: env.height };
        let ahead = |p: &Prepared| {
            static_policy(cfg, &p.tx, p.size).is_ok()
                && p.tx.inputs.iter().all(|i| view.coin(&i.prev).is_some())
        };
        items
            .par_chunks(OVERLAP_CHUNK)
            .map(|c| {
                let mut w = SignatureWork::default();
                let mut checked = Vec::with_capacity(c.len());
                for p in c {
                    let check = ahead(p);
                    if check {
                        w.push(&ctx, &p.tx, &TxIds { txid: p.txid, wtxid: p.wtxid });
                    } else {
                        w.skip();
                    }
                    checked.push(check);
                }
                (w, checked)
            })
            .unzip()
    };
    if work.iter().map(SignatureWork::signatures).sum::<usize>() < OVERLAP_MIN {
        // Too few signatures to check ahead (a batch the cache vouches for, as after a
        // reorganisation, or mostly children): one stage, the ledger rules in parallel too.
        return judge(pool, cfg, cache, env, items, keys, None);
    }
    // Each chunk one batch on one thread: the stage's parallelism is its chunks.
    let engine = VerifyConfig { mode: VerifyMode::Batch, ..*env.ctx.verify };
    let (tx, rx) = std::sync::mpsc::channel::<(usize, Vec<bool>)>();
    let chunks = work.len();
    rayon::in_place_scope_fifo(|s| {
        for (k, w) in work.into_iter().enumerate() {
            let tx = tx.clone();
            s.spawn_fifo(move |_| {
                let _s = profile::span("mempool.signatures");
                // The receiver outlives the scope: sending cannot fail.
                let _ = tx.send((k, w.verify(&engine, k as u64)));
            });
        }
        drop(tx);
        let ahead = HashSet::with_capacity(items.len());
        let checked = checked.concat();
        let early = Early { rx, checked, received: vec![false; chunks], upto: 0, ahead };
        judge(pool, cfg, cache, env, items, keys, Some(early))
    })
}

/// Judges `items` in generations (see [`run_admission`]), with the signatures the first stage
/// verifies (`early`) if any, else each generation in one stage.
fn judge(
    pool: &mut Pool,
    cfg: &MempoolConfig,
    cache: &SignatureCache,
    env: &TxEnv<'_>,
    items: Vec<Prepared>,
    keys: Vec<Vec<AppKey>>,
    mut early: Option<Early>,
) -> (Vec<Result<Admitted, MempoolError>>, MissingInputs) {
    let n = items.len();
    let mut st = Judging {
        verdicts: (0..n).map(|_| None).collect(),
        meta: Vec::with_capacity(n),
        keys,
        undecided: HashMap::with_capacity(n),
        more_generations: true,
        missing: Vec::new(),
        admitted_wtxids: Vec::new(),
    };
    let mut pending: Vec<(usize, Tx)> = Vec::new();
    for (i, p) in items.into_iter().enumerate() {
        st.meta.push((p.txid, p.wtxid, p.size));
        let early = if pool.contains(&p.txid) || st.undecided.contains_key(&p.txid) {
            Err(MempoolError::AlreadyKnown { txid: p.txid })
        } else {
            static_policy(cfg, &p.tx, p.size).and_then(|()| fee_less_early(pool, cfg, env, &p.tx, p.size))
        };
        match early {
            Err(e) => st.verdicts[i] = Some(Err(e)),
            Ok(()) => {
                st.undecided.insert(p.txid, i);
                pending.push((i, p.tx));
            }
        }
    }
    while !pending.is_empty() {
        let mut claimed: HashSet<OutPoint> = HashSet::with_capacity(pending.len());
        let mut claimed_keys: HashSet<AppKey> = HashSet::new();
        let mut ready: Vec<(usize, Tx)> = Vec::new();
        let mut wait: Vec<(usize, Tx)> = Vec::new();
        for (i, tx) in pending.drain(..) {
            let txid = st.meta[i].0;
            if tx.inputs.iter().any(|inp| inp.prev.txid != txid && st.undecided.contains_key(&inp.prev.txid))
            {
                wait.push((i, tx));
            } else if let Some(e) = pool.conflict(&tx).or_else(|| pool.app_conflict(&st.keys[i])) {
                st.undecided.remove(&txid);
                st.verdicts[i] = Some(Err(e));
            } else if tx.inputs.iter().any(|inp| claimed.contains(&inp.prev))
                || st.keys[i].iter().any(|k| claimed_keys.contains(k))
            {
                wait.push((i, tx));
            } else {
                claimed.extend(tx.inputs.iter().map(|inp| inp.prev));
                claimed_keys.extend(st.keys[i].iter().copied());
                ready.push((i, tx));
            }
        }
        // Set once the pool changes in a way verification did not see: `place` then looks
        // inputs and keys up again.
        let mut recheck = false;
        if ready.is_empty() {
            // Every waiting transaction waits for another one of the batch: a cycle, which
            // txids (hashes of the spending transactions) rule out. Judge them all anyway;
            // `place` re-checks conflicts.
            ready = std::mem::take(&mut wait);
            recheck = true;
        }
        pool.reserve(ready.len(), ready.iter().map(|(_, t)| t.inputs.len()).sum());
        st.more_generations = !wait.is_empty();
        for c in chunks_of(ready, &st.meta) {
            let results = match early.as_mut() {
                // One stage: the ledger rules and the signatures together, in parallel batches.
                None => st.verify(pool, env, &c, false),
                Some(e) => st.second_stage(pool, env, cache, &c, e),
            };
            st.settle(pool, cfg, env, c, results, &mut recheck);
            // Vouched for at once, not after the batch: in two stages this runs beside the
            // signature checks of later chunks instead of after them all.
            cache.insert_many(std::mem::take(&mut st.admitted_wtxids));
        }
        pending = wait;
    }
    let verdicts = st
        .verdicts
        .into_iter()
        .map(|v| {
            v.expect("every transaction of the batch is judged: pending ones are judged before the loop ends")
        })
        .collect();
    (verdicts, st.missing)
}

/// A batch of this many transactions or more is judged in two stages...
const OVERLAP_MIN: usize = 512;
/// ...its signatures in chunks of this many: the first stage's unit of work, one signature
/// batch of the engine's default size verified on one thread (smaller batches cost more per
/// signature), and the unit in which the second stage takes a generation.
const OVERLAP_CHUNK: usize = 256;

/// Transactions of one generation judged together, with their positions in the batch and ids.
struct Chunk {
    idx: Vec<usize>,
    txs: Vec<Tx>,
    ids: Vec<TxIds>,
}

/// `ready` (positions and transactions) in chunks: one below [`OVERLAP_MIN`], else chunks of
/// [`OVERLAP_CHUNK`]; none if `ready` is empty (every transaction of the generation conflicted).
fn chunks_of(ready: Vec<(usize, Tx)>, meta: &[(Hash, Hash, u64)]) -> Vec<Chunk> {
    let per = if ready.len() < OVERLAP_MIN { ready.len().max(1) } else { OVERLAP_CHUNK };
    let mut chunks = Vec::with_capacity(ready.len().div_ceil(per));
    let mut rest = ready.into_iter().peekable();
    while rest.peek().is_some() {
        let (idx, txs): (Vec<usize>, Vec<Tx>) = rest.by_ref().take(per).unzip();
        // The txids and wtxids `prepare` computed: not hashed again.
        let ids: Vec<TxIds> = idx.iter().map(|i| TxIds { txid: meta[*i].0, wtxid: meta[*i].1 }).collect();
        chunks.push(Chunk { idx, txs, ids });
    }
    chunks
}

/// The first stage's answers as they come: chunk `k` of the batch (positions
/// `k * OVERLAP_CHUNK ..`) sends whether each of its transactions passed.
struct Early {
    rx: std::sync::mpsc::Receiver<(usize, Vec<bool>)>,
    /// By position in the batch: were the transaction's signatures handed to the first stage?
    checked: Vec<bool>,
    received: Vec<bool>,
    /// Chunks `..upto` have all answered.
    upto: usize,
    /// The wtxids the first stage vouches for.
    ahead: HashSet<Hash>,
}

impl Early {
    /// Returns once the chunks holding positions `..=last` have answered. Waiting, a thread
    /// of the rayon pool verifies signatures itself; another thread sleeps.
    fn wait_for(&mut self, last: usize, meta: &[(Hash, Hash, u64)]) {
        let need = (last / OVERLAP_CHUNK + 1).min(self.received.len());
        while self.upto < need {
            let (k, ok) = match self.rx.try_recv() {
                Ok(got) => got,
                Err(_) if matches!(rayon::yield_now(), Some(rayon::Yield::Executed)) => continue,
                Err(_) => match self.rx.recv() {
                    Ok(got) => got,
                    // Every task has answered or panicked (the scope raises the panic): what
                    // is not vouched for is verified in full.
                    Err(_) => return,
                },
            };
            let first = k * OVERLAP_CHUNK;
            self.ahead.extend(ok.iter().enumerate().filter(|(_, ok)| **ok).map(|(j, _)| meta[first + j].1));
            self.received[k] = true;
            while self.upto < self.received.len() && self.received[self.upto] {
                self.upto += 1;
            }
        }
    }
}

/// A signature cache that vouches for every transaction: the ledger rules alone.
struct VouchAll;

impl SigCache for VouchAll {
    fn contains(&self, _: &Hash) -> bool {
        true
    }
}

/// The signature cache a transaction is finally judged under: the signatures the first stage
/// verified, then the node's cache.
struct Vouched<'a> {
    ahead: &'a HashSet<Hash>,
    cache: &'a SignatureCache,
}

impl SigCache for Vouched<'_> {
    fn contains(&self, wtxid: &Hash) -> bool {
        self.ahead.contains(wtxid) || self.cache.contains(wtxid)
    }
}

/// What judging a batch has decided so far.
struct Judging {
    verdicts: Vec<Option<Result<Admitted, MempoolError>>>,
    /// Per transaction: txid, wtxid, size.
    meta: Vec<(Hash, Hash, u64)>,
    /// Per transaction: the application keys it would hold (taken when it is placed).
    keys: Vec<Vec<AppKey>>,
    /// Transactions of the batch not judged yet, by txid.
    undecided: HashMap<Hash, usize>,
    /// Does a generation follow the one being judged? If not, nothing reads `undecided` again.
    more_generations: bool,
    missing: MissingInputs,
    admitted_wtxids: Vec<Hash>,
}

impl Judging {
    /// The consensus rules on `chunk` against the pool, under `env`'s signature cache; on this
    /// thread (`batch` mode) if `here`, else in the engine's mode.
    fn verify(
        &self,
        pool: &Pool,
        env: &TxEnv<'_>,
        chunk: &Chunk,
        here: bool,
    ) -> Vec<Result<scalechain_consensus::TxVerdict, TxRule>> {
        let _s = profile::span("mempool.verify");
        let mode = if here { VerifyMode::Batch } else { env.ctx.verify.mode };
        let engine = VerifyConfig { mode, ..*env.ctx.verify };
        let view = PoolView { pool, chain: env.view, height: env.height };
        let ctx = ConnectCtx { verify: &engine, ..env.ctx };
        verify_txs_with_ids(&TxEnv { ctx, view: &view, ..*env }, &chunk.txs, &chunk.ids)
    }

    /// The second stage on `chunk`, on this thread: the ledger rules against the pool first,
    /// every signature taken as vouched for; then, once the first stage has answered for the
    /// chunk, each transaction that passed the rules but whose signatures it did not vouch for
    /// (nor the node's cache) is verified again in full, so that its verdict is the one-stage
    /// verdict and names what failed. A chunk none of whose signatures went to the first
    /// stage (a later generation) is verified whole at once, its rules applied once.
    fn second_stage(
        &self,
        pool: &Pool,
        env: &TxEnv<'_>,
        cache: &SignatureCache,
        chunk: &Chunk,
        early: &mut Early,
    ) -> Vec<Result<scalechain_consensus::TxVerdict, TxRule>> {
        let trusting =
            TxEnv { ctx: ConnectCtx { sig_cache: Some(&VouchAll as &dyn SigCache), ..env.ctx }, ..*env };
        let rules_first =
            chunk.idx.iter().any(|&i| early.checked[i]).then(|| self.verify(pool, &trusting, chunk, true));
        let last = chunk.idx.iter().copied().max().unwrap_or(0);
        {
            let _s = profile::span("mempool.wait_signatures");
            early.wait_for(last, &self.meta);
        }
        let vouch = Vouched { ahead: &early.ahead, cache };
        let env = TxEnv { ctx: ConnectCtx { sig_cache: Some(&vouch as &dyn SigCache), ..env.ctx }, ..*env };
        // Once the first stage has answered for the whole batch, the pool's threads are free.
        let here = early.upto < early.received.len();
        let Some(mut results) = rules_first else { return self.verify(pool, &env, chunk, here) };
        let again: Vec<usize> = (0..results.len())
            .filter(|&j| results[j].is_ok() && !vouch.contains(&chunk.ids[j].wtxid))
            .collect();
        if again.is_empty() {
            return results;
        }
        let some = Chunk {
            idx: again.iter().map(|&j| chunk.idx[j]).collect(),
            txs: again.iter().map(|&j| chunk.txs[j].clone()).collect(),
            ids: again.iter().map(|&j| chunk.ids[j]).collect(),
        };
        for (j, r) in again.into_iter().zip(self.verify(pool, &env, &some, here)) {
            results[j] = r;
        }
        results
    }

    /// Places the transactions of `chunk` that passed the consensus rules (`results`), in order.
    fn settle(
        &mut self,
        pool: &mut Pool,
        cfg: &MempoolConfig,
        env: &TxEnv<'_>,
        chunk: Chunk,
        results: Vec<Result<scalechain_consensus::TxVerdict, TxRule>>,
        recheck: &mut bool,
    ) {
        let _place = profile::span("mempool.place");
        for ((i, tx), result) in chunk.idx.into_iter().zip(chunk.txs).zip(results) {
            let (txid, wtxid, size) = self.meta[i];
            if self.more_generations {
                self.undecided.remove(&txid);
            }
            let verdict = match result {
                Err(rule @ TxRule::MissingInput { .. }) => {
                    self.missing.push((i, tx));
                    Err(MempoolError::Consensus(rule))
                }
                Err(rule) => Err(MempoolError::Consensus(rule)),
                Ok(v) => {
                    let keys = std::mem::take(&mut self.keys[i]);
                    let last_height = app_last_height(env.ctx.apps, env.ctx.params, &tx);
                    let fee_less = fee_less_group(env.ctx.apps, env.ctx.params, &tx, v.fee.get());
                    let c = Candidate {
                        tx: Arc::new(tx),
                        txid,
                        wtxid,
                        fee: v.fee.get(),
                        size,
                        keys,
                        last_height,
                        fee_less,
                    };
                    let placed = place(pool, cfg, env, c, *recheck);
                    // Evictions may have taken what a later transaction of the generation spends.
                    *recheck |= placed.as_ref().is_ok_and(|a| !a.evicted.is_empty());
                    placed
                }
            };
            if verdict.is_ok() {
                self.admitted_wtxids.push(wtxid);
            }
            self.verdicts[i] = Some(verdict);
        }
    }
}

/// Holds `tx` (with its txid and size), refused with `err`, in the orphan pool if `err` is a
/// missing input whose parents are unknown here: neither pooled nor `confirmed`. `origin` is
/// its source and first arrival time. Gives back `err` if it is not held.
fn hold_orphan(
    w: &mut Writer,
    env: &TxEnv<'_>,
    (tx, txid, size): (Tx, Hash, u64),
    err: MempoolError,
    (source, arrived_ms): (OrphanSource, u64),
    confirmed: &dyn Fn(&Hash) -> bool,
) -> Result<HeldOrphan, MempoolError> {
    let MempoolError::Consensus(TxRule::MissingInput { input, prev }) = err else { return Err(err) };
    if !w.orphans.fits(size) {
        return Err(err);
    }
    let mut parents: Vec<Hash> = tx
        .inputs
        .iter()
        .filter(|i| w.pool.coin(&i.prev, env.view, env.height).is_none())
        .map(|i| i.prev.txid)
        .collect();
    parents.sort_unstable();
    parents.dedup();
    if parents.is_empty() || parents.iter().any(|p| *p == txid || w.pool.contains(p) || confirmed(p)) {
        return Err(err);
    }
    match w.orphans.hold(tx, txid, size, parents.clone(), source, arrived_ms) {
        Some(evicted) => Ok(HeldOrphan { txid, input, prev, parents, evicted }),
        None => Err(err),
    }
}

impl Mempool {
    /// An empty pool for a chain hashing with `hash`.
    pub fn new(hash: HashKind, config: MempoolConfig) -> Mempool {
        let sig_cache = Arc::new(SignatureCache::new(config.sig_cache_capacity));
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
                    match hold_orphan(&mut w, env, (tx, txid, size), e, (sources[i], now_ms), confirmed) {
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
                        if hold_orphan(w, env, (tx, txid, size), e, origins[k], confirmed).is_err() {
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
        let txids: Vec<Hash> = if block.txs.len() < 64 {
            block.txs.iter().map(|t| t.txid(self.hash)).collect()
        } else {
            block.txs.par_iter().map(|t| t.txid(self.hash)).collect()
        };
        let mut w = self.lock();
        let mut removed = Removed::default();
        for (tx, txid) in block.txs.iter().zip(&txids) {
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

    /// A generation below [`OVERLAP_MIN`] is one chunk (one stage); a longer one is cut into
    /// chunks of [`OVERLAP_CHUNK`] in order, each with its transactions' own ids.
    #[test]
    fn generations_are_chunked_for_two_stages_only_from_the_threshold() {
        let tx = Tx { version: 1, kind: TxKind::TRANSFER, inputs: vec![], outputs: vec![], data: vec![] };
        let meta: Vec<(Hash, Hash, u64)> =
            (0..2_000u32).map(|i| (Hash([i as u8; 32]), Hash([(i >> 8) as u8; 32]), 1)).collect();
        let ready = |n: usize| -> Vec<(usize, Tx)> { (0..n).map(|i| (i * 3 % 2_000, tx.clone())).collect() };
        assert!(chunks_of(Vec::new(), &meta).is_empty());
        let one = chunks_of(ready(OVERLAP_MIN - 1), &meta);
        assert_eq!(one.iter().map(|c| c.txs.len()).collect::<Vec<_>>(), [OVERLAP_MIN - 1]);
        let many = chunks_of(ready(1_500), &meta);
        let sizes: Vec<usize> = many.iter().map(|c| c.idx.len()).collect();
        assert_eq!(sizes, [256, 256, 256, 256, 256, 220]);
        let idx: Vec<usize> = many.iter().flat_map(|c| c.idx.iter().copied()).collect();
        assert_eq!(idx, ready(1_500).into_iter().map(|(i, _)| i).collect::<Vec<_>>(), "in order");
        for c in &many {
            for (i, id) in c.idx.iter().zip(&c.ids) {
                assert_eq!((id.txid, id.wtxid), (meta[*i].0, meta[*i].1));
            }
        }
    }

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
