//! The admission engine: how a batch of transactions is judged against the chain's UTXOs plus
//! the pool, fast. [`prepare`] hashes and sizes the batch before the writer's lock is taken;
//! [`run_admission`] judges it under that lock, in generations (parents before the children
//! that spend their outputs), each generation verified as parallel batches (`verify_txs`) and
//! placed by the policy (`crate::policy`). A batch with at least [`OVERLAP_MIN`] signatures to
//! check runs in two stages: the rayon pool verifies signatures in chunks of [`OVERLAP_CHUNK`]
//! from the start while this thread applies the ledger rules chunk by chunk ([`Early`],
//! `Judging::second_stage`).
//!
//! - **Invariants.** Verdicts come back in the order of the batch, and are those of judging it
//!   in one stage, generation by generation: a transaction whose signatures the first stage
//!   did not vouch for is verified again in full, so its refusal names what failed. Of two
//!   transactions of a batch spending one output or claiming one application key, the earlier
//!   is judged first. A transaction pooled already, or twice in the batch, is refused as known.
//!   The wtxids of admitted transactions join the signature cache chunk by chunk. Transactions
//!   refused for a missing input come back beside the verdicts, for the orphan pool.
//! - **Must not.** Decide what the pool takes (every rule beyond consensus is asked of
//!   `crate::policy`), take or release the writer's lock, publish a snapshot or count (the
//!   facade, [`Mempool`](crate::Mempool), does), or hash a transaction twice. This is the
//!   node's hottest path: a change to the thresholds, the chunking or the order of the work
//!   is measured first (the Criterion bench `cargo bench -p scalechain-mempool --bench admit`,
//!   `docs/CRITERION.md`).

// Keys are hashes and outpoints: foldhash, seeded per process, instead of SipHash.
use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::sync::Arc;

use rayon::prelude::*;
use scalechain_consensus::connect::ConnectCtx;
use scalechain_consensus::{
    verify_txs_with_ids, Coin, SigCache, SignatureWork, TxEnv, TxIds, TxRule, UtxoView, VerifyConfig,
    VerifyMode,
};
use scalechain_types::{profile, Hash, HashKind, OutPoint, Tx};

use crate::config::MempoolConfig;
use crate::error::MempoolError;
use crate::outcome::Admitted;
use crate::policy::{app_keys, app_last_height, fee_less_early, fee_less_group, place, static_policy};
use crate::pool::{AppKey, Candidate, Pool};
use crate::sigcache::SignatureCache;

/// A transaction with its ids and size, computed before the writer's lock is taken.
pub(crate) struct Prepared {
    pub tx: Tx,
    pub txid: Hash,
    pub wtxid: Hash,
    pub size: u64,
}

pub(crate) fn prepare(hash: HashKind, txs: Vec<Tx>) -> Vec<Prepared> {
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

/// Transactions of a batch refused for a missing input, by position in the batch.
pub(crate) type MissingInputs = Vec<(usize, Tx)>;

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
pub(crate) fn run_admission(
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

#[cfg(test)]
mod tests {
    use scalechain_types::TxKind;

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
}
