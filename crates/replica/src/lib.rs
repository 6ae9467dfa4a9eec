//! One ScaleChain node's state and its synchronous steps, without IO.
//!
//! A [`Replica`] holds the chain behind a read-write lock (readers: the API, admission, the
//! miner, the peer protocol's [`ChainView`]; one writer: block acceptance) and the mempool, and
//! offers the steps a node takes on them. The tip is also published outside the lock after each
//! block ([`Replica::tip`]), so the peer protocol and the API learn it without waiting for a
//! block's validation and commit. The steps:
//!
//! - [`Replica::accept_block`]: accept a block and, before the chain's write lock is released,
//!   take confirmed and conflicting transactions out of the mempool and re-admit a
//!   reorganisation's, so admission never sees a tip and a mempool that disagree; the
//!   [`BlockOutcome`] says what changed and maps to the protocol's [`BlockVerdict`];
//! - [`Replica::admit_batches`]: the pipeline's verify stage — the batches drained at once are
//!   offered in one `Mempool::offer` call and the verdicts split back per batch; a transaction
//!   whose parent is unknown is held as an orphan and admitted (and handed back to be relayed)
//!   when the parent is admitted or confirmed;
//! - [`TxsRound`]: those verdicts as the protocol machine's `TxsDone` round, the one mapping
//!   the node's pipeline and the simulator both use;
//! - [`Replica::block_template`] and [`solve`]: the miner's block and nonce search.
//!
//! Admission judges transactions in `Chain::next_block_env` (the next block on the tip, at
//! the validator's clock).
//!
//! It is generic over the chain store: the node runs `Replica<DiskStore>` behind its threads,
//! channels and sockets; the simulator (`scalechain-simnet`) runs `Replica<MemStore>` directly.
//!
//! The study's analogue of seed 003's lock contention uses the same lock: an admission round
//! can run a caller's `hold` inside its read guard ([`Replica::admit_batches_holding`]), and a
//! block's acceptance tells its caller when it holds the write lock
//! ([`Replica::accept_block_observed`]), so the node can time the wait and the hold.
//!
//! Must not: read a clock (`now_ms` is an argument everywhere; the profiler's spans read one
//! only to observe, as in `chain`), draw random numbers (the chain's verification seed comes
//! in with its `VerifyConfig`), touch files or sockets.

mod accept;
mod round;
mod view;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use scalechain_chain::{Chain, ChainStore};
use scalechain_consensus::app::AppSequence;
use scalechain_consensus::{Params, TxRule};
use scalechain_mempool::{
    Admitted, Mempool, MempoolConfig, MempoolError, OrphanSource, SignatureCache, TxVerdict,
};
use scalechain_types::merkle::root_of_txs;
use scalechain_types::{profile, Amount, Block, Hash, HashKind, Header, Lock, Tx, TxOut};

pub use accept::BlockOutcome;
pub use round::TxsRound;
pub use scalechain_p2p::protocol::{BlockVerdict, ChainView};

/// Bytes a block template leaves free below the chain's block size limit (header, coinbase,
/// counts).
pub const TEMPLATE_HEADROOM: u64 = 4096;

/// One node's chain and mempool.
pub struct Replica<S: ChainStore> {
    /// Chain parameters.
    pub params: Params,
    /// The chain id (genesis hash).
    pub chain_id: Hash,
    /// The chain. Readers take the read lock; only [`Replica::accept_block`] writes.
    pub chain: RwLock<Chain<S>>,
    /// The mempool (lock-free reads).
    pub mempool: Arc<Mempool>,
    /// The tip and the count of blocks waiting for their parent, as of the last block
    /// accepted: set under the chain's write lock, read without the chain's lock, so the peer
    /// protocol and the API never wait for a block's validation and commit to learn the tip.
    published: Mutex<Published>,
}

/// What [`Replica`] publishes after each block ([`Replica::tip`], [`Replica::orphan_blocks`]).
#[derive(Clone, Copy, Debug)]
struct Published {
    height: u64,
    tip: Hash,
    orphans: usize,
}

impl Published {
    fn of<S: ChainStore>(c: &Chain<S>) -> Published {
        Published { height: c.tip_height(), tip: c.tip(), orphans: c.orphan_count() }
    }
}

/// The pipeline's verdicts on one batch.
#[derive(Debug)]
pub struct BatchOutcome {
    /// One verdict per transaction, in the batch's order: admitted, held as an orphan, or
    /// refused.
    pub verdicts: Vec<TxVerdict>,
    /// The txid of each transaction of the batch, in order.
    pub txids: Vec<Hash>,
    /// The transactions the mempool took, in the batch's order.
    pub admitted: Vec<Arc<Tx>>,
    /// True if a transaction broke a consensus rule its sender must have known about (see
    /// [`punishable`]).
    pub invalid: bool,
}

impl BatchOutcome {
    /// How many were refused for want of room ([`TxVerdict::crowded_out`]).
    pub fn crowded(&self) -> usize {
        self.verdicts.iter().filter(|v| v.crowded_out()).count()
    }
}

/// What one verification round did: the verdicts per batch, and the orphans it admitted
/// because their parents came in it.
#[derive(Debug, Default)]
pub struct Admission {
    /// One outcome per batch, in the order given.
    pub batches: Vec<BatchOutcome>,
    /// Orphans (of earlier rounds or of this one) admitted after their parents, parents
    /// first. Nobody relayed them yet: the caller publishes them.
    pub released: Vec<Arc<Tx>>,
}

/// True if a refusal proves the transaction invalid whatever the sender knew: a consensus
/// rule broken, except inputs that are missing or immature here and application rules that
/// failed on the application's state (a ballot whose voter has voted in a block the sender
/// has not connected yet — or the same ballot, confirmed meanwhile): the sender may know a
/// block or a transaction we have not seen yet, or not yet one we have.
pub fn punishable(e: &MempoolError) -> bool {
    e.tx_rule().is_some_and(|r| match r {
        TxRule::MissingInput { .. } | TxRule::ImmatureCoinbase { .. } => false,
        TxRule::App(a) => !a.on_state,
        _ => true,
    })
}

impl<S: ChainStore> Replica<S> {
    /// A replica of `chain` with an empty mempool; block connection consults the mempool's
    /// signature cache, so a block whose transactions were admitted costs no signature checks.
    pub fn new(chain: Chain<S>, mempool: MempoolConfig) -> Replica<S> {
        let cache = Arc::new(SignatureCache::new(mempool.sig_cache_capacity));
        Replica::with_sig_cache(chain, mempool, cache)
    }

    /// A replica like [`Replica::new`] whose mempool's signature cache is `cache`, shared with
    /// other replicas (the simulator's nodes share one: what one verified, another does not
    /// verify again).
    pub fn with_sig_cache(
        mut chain: Chain<S>,
        mempool: MempoolConfig,
        cache: Arc<SignatureCache>,
    ) -> Replica<S> {
        let params = chain.params().clone();
        let chain_id = chain.chain_id();
        let mempool = Arc::new(Mempool::with_sig_cache(params.hash, mempool, cache));
        chain.set_sig_cache(Some(mempool.sig_cache()));
        let published = Mutex::new(Published::of(&chain));
        Replica { params, chain_id, chain: RwLock::new(chain), mempool, published }
    }

    /// Publishes `chain`'s tip; called by the writer before it releases the write lock.
    fn publish(&self, chain: &Chain<S>) {
        *self.published.lock() = Published::of(chain);
    }

    /// The chain, for a restart on the same store (the mempool is dropped, as a process's is).
    pub fn into_chain(self) -> Chain<S> {
        let mut chain = self.chain.into_inner();
        chain.set_sig_cache(None);
        chain
    }

    /// Height and hash of the tip.
    ///
    /// Read without the chain's lock: a block being validated or committed does not make the
    /// caller wait (the tip is the one before it until it is accepted).
    pub fn tip(&self) -> (u64, Hash) {
        let p = *self.published.lock();
        (p.height, p.tip)
    }

    /// Blocks held until their parent comes, as of the last block accepted (read as
    /// [`Replica::tip`] is).
    pub fn orphan_blocks(&self) -> usize {
        self.published.lock().orphans
    }

    /// Judges transactions against the tip (under the chain's read lock, so no block connects
    /// meanwhile) at the validator's clock `now_ms`.
    pub fn admit(&self, txs: Vec<Tx>, now_ms: u64) -> Vec<Result<Admitted, MempoolError>> {
        let c = self.chain.read();
        self.mempool.admit(&c.next_block_env(now_ms), txs)
    }

    /// The verify stage: every batch in one admission call (one parallel verification round)
    /// at the validator's clock `now_ms`, each batch with its source (a peer's tag, or `None`
    /// for the API) for the orphan pool; the verdicts split back per batch. A transaction whose
    /// parent is unknown is held as an orphan ([`Mempool::offer`]), and orphans whose parents
    /// this round admitted are admitted after them.
    pub fn admit_batches(&self, batches: Vec<(Vec<Tx>, OrphanSource)>, now_ms: u64) -> Admission {
        self.admit_batches_holding(batches, now_ms, &|| {})
    }

    /// [`Replica::admit_batches`], calling `hold` first inside the same read guard as the
    /// judgement: whatever `hold` does, a block's acceptance (the writer) waits for it, as a
    /// commit waits for a transaction executing under the state database's read lock. The
    /// study's execution analogue (`mempool.execute_ms` with `execute_under_lock`, which the
    /// node passes as a sleep); the replica itself neither sleeps nor reads a clock.
    pub fn admit_batches_holding(
        &self,
        batches: Vec<(Vec<Tx>, OrphanSource)>,
        now_ms: u64,
        hold: &dyn Fn(),
    ) -> Admission {
        let spans: Vec<usize> = batches.iter().map(|(b, _)| b.len()).collect();
        let all: Vec<(Tx, OrphanSource)> =
            batches.into_iter().flat_map(|(b, src)| b.into_iter().map(move |t| (t, src))).collect();
        let offered = {
            let c = {
                // The wait behind a block's acceptance (the writer).
                let _s = profile::span("chain.read_lock");
                self.chain.read()
            };
            hold();
            let confirmed = |t: &Hash| c.tx_location(t).ok().flatten().is_some();
            self.mempool.offer(&c.next_block_env(now_ms), all, now_ms, &confirmed)
        };
        let evicted = evicted_by(
            offered
                .verdicts
                .iter()
                .filter_map(|v| match v {
                    TxVerdict::Admitted(a) => Some(a),
                    _ => None,
                })
                .chain(&offered.released),
        );
        let pooled = |a: &Admitted| (!evicted.contains(&a.txid)).then(|| a.tx.clone());
        let mut verdicts = offered.verdicts.into_iter();
        let mut txids = offered.txids.into_iter();
        let batches = spans
            .into_iter()
            .map(|n| {
                let verdicts: Vec<TxVerdict> = verdicts.by_ref().take(n).collect();
                let txids: Vec<Hash> = txids.by_ref().take(n).collect();
                let admitted = verdicts
                    .iter()
                    .filter_map(|v| match v {
                        TxVerdict::Admitted(a) => pooled(a),
                        _ => None,
                    })
                    .collect();
                let invalid = verdicts.iter().any(|v| v.refusal().is_some_and(punishable));
                BatchOutcome { verdicts, txids, admitted, invalid }
            })
            .collect();
        Admission { batches, released: offered.released.iter().filter_map(pooled).collect() }
    }

    /// Orphans past their expiry at `now_ms` leave the orphan pool; returns how many.
    pub fn expire_orphans(&self, now_ms: u64) -> usize {
        self.mempool.expire_orphans(now_ms)
    }

    /// A peer left: the orphans it brought leave with it.
    pub fn forget_orphans_from(&self, source: u64) -> usize {
        self.mempool.forget_orphans_from(Some(source))
    }

    /// The next block on the tip, not yet solved: the mempool's template (at most
    /// `max_block_txs` transactions), a coinbase paying the subsidy plus their fees to
    /// `reward`, the next target, and a time at `now_ms` but past the median time past and the
    /// parent. Tip and template are read under one read lock, so they agree.
    ///
    /// The template's application transactions are replayed on the tip's state in block order
    /// ([`AppSequence`]): one its module refuses there is left out, with its pooled descendants
    /// and its fee, so the block is one consensus accepts even when a rule counts pooled
    /// transactions together (two ballots pooled for an election's last place: the first
    /// goes in, the second stays out; it stays pooled, left out of every template, until its
    /// window ends).
    pub fn block_template(&self, reward: Lock, max_block_txs: usize, now_ms: u64) -> Block {
        let c = self.chain.read();
        let (parent, target, mtp) = (c.tip_header(), c.next_target(), c.median_time_past());
        let p = &self.params;
        let max_txs = max_block_txs.min(p.max_block_txs.saturating_sub(1) as usize);
        let pool = self.mempool.snapshot();
        let tpl = pool.template(p.max_block_bytes.saturating_sub(TEMPLATE_HEADROOM), max_txs);
        let height = parent.height + 1;
        let time = now_ms.max(mtp + 1).max(parent.time + 1);
        let mut txs = Vec::with_capacity(tpl.txs.len() + 1);
        txs.push(Tx::coinbase(height, vec![]));
        let mut fees = tpl.fees;
        let mut seq = AppSequence::new(c.apps(), p, self.chain_id, c.app_state(), height, time);
        let mut left_out: HashSet<Hash> = HashSet::new();
        for (tx, txid) in tpl.txs.iter().zip(&tpl.txids) {
            let orphaned = tx.inputs.iter().any(|i| left_out.contains(&i.prev.txid));
            if orphaned || seq.apply(tx, *txid, txs.len()).is_err() {
                left_out.insert(*txid);
                let fee = pool.get(txid).map_or(Amount::ZERO, |e| e.fee);
                fees = fees.checked_sub(fee).unwrap_or(Amount::ZERO);
                continue;
            }
            txs.push((**tx).clone());
        }
        drop(c);
        let value = p.subsidy(height).checked_add(fees).unwrap_or(p.subsidy(height));
        txs[0] = Tx::coinbase(height, vec![TxOut { value, lock: reward }]);
        let header = Header {
            version: 1,
            height,
            prev_hash: parent.hash(p.hash),
            merkle_root: root_of_txs(p.hash, &txs),
            time,
            target,
            nonce: 0,
        };
        Block { header, txs }
    }
}

/// The txids the admissions `admitted` evicted. A transaction admitted earlier in the same call
/// may be among them: it is no longer pooled, and is not handed on for relay.
pub(crate) fn evicted_by<'a>(admitted: impl IntoIterator<Item = &'a Admitted>) -> HashSet<Hash> {
    admitted.into_iter().flat_map(|a| a.evicted.iter().copied()).collect()
}

/// Hashes tried between checks of `stale`.
const CHECK_EVERY: u64 = 1 << 14;

/// Searches nonces until the header meets its target (true, the nonce set) or `stale` turns
/// true (false). With `threads` above 1 the search runs on that many scoped threads, thread `t`
/// trying nonces `t, t + threads, …`, and the smallest nonce found wins; with one thread it runs
/// on the caller's, from nonce 0, so the result is a function of the header.
pub fn solve(header: &mut Header, kind: HashKind, threads: usize, stale: &AtomicBool) -> bool {
    if threads <= 1 {
        let mut h = *header;
        h.nonce = 0;
        loop {
            for _ in 0..CHECK_EVERY {
                if h.target.is_met_by(&h.hash(kind)) {
                    header.nonce = h.nonce;
                    return true;
                }
                h.nonce = h.nonce.wrapping_add(1);
            }
            if stale.load(Ordering::Relaxed) {
                return false;
            }
        }
    }
    let found = AtomicU64::new(u64::MAX);
    let threads = threads as u64;
    std::thread::scope(|s| {
        for t in 0..threads {
            let found = &found;
            let mut h = *header;
            s.spawn(move || {
                let mut nonce = t;
                loop {
                    for _ in 0..CHECK_EVERY {
                        h.nonce = nonce;
                        if h.target.is_met_by(&h.hash(kind)) {
                            found.fetch_min(nonce, Ordering::Relaxed);
                            return;
                        }
                        nonce = nonce.wrapping_add(threads);
                    }
                    if found.load(Ordering::Relaxed) != u64::MAX || stale.load(Ordering::Relaxed) {
                        return;
                    }
                }
            });
        }
    });
    let n = found.load(Ordering::Relaxed);
    if n == u64::MAX {
        return false;
    }
    header.nonce = n;
    true
}
