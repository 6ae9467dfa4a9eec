//! Verifying independent transactions against a UTXO view: the mempool's admission check and
//! the workload of the study's `tx-throughput` experiment.
//!
//! Each transaction is judged alone, as if it were the only transfer of a block at `height` on
//! top of `view`: the stateless rules ([`check_tx`]), its inputs against the coins they spend
//! ([`check_spend`], values, fee), its application module, and its signatures. Transactions of
//! one call must not depend on each other (a mempool resolves chains of unconfirmed transactions
//! by passing an overlay as the view).
//!
//! Strategies follow [`VerifyConfig::mode`]:
//! - `sequential`: one transaction after another, each signature verified singly;
//! - `batch`: the ledger work of a chunk of transactions, then one ZIP-215 batch for the chunk's
//!   Ed25519 signatures, on the calling thread;
//! - `parallel`: the same chunks spread over the current rayon pool, so the ledger work (hashing,
//!   lookups) is parallel too, not only the signatures.
//!
//! Application modules with a batch pre-check get it per chunk (see
//! [`crate::app::precheck_txs`]), for the chunk's transactions that passed the stateless rules;
//! in `sequential` mode each module's `apply` does that work itself, with the same verdicts.
//!
//! A signature cache in the context ([`ConnectCtx::sig_cache`]) skips the signatures of the
//! transactions it holds, as in block connection.
//!
//! Every strategy returns the same verdicts: when a batch fails, its signatures are re-verified
//! singly and only the transactions owning a bad signature fail.

use rayon::prelude::*;

use scalechain_types::keys::sighash;
use scalechain_types::profile;
use scalechain_types::{Amount, Hash, Tx, TxKind};

use crate::app::{precheck_txs, AppContext, AppOverlay, AppStateView, Precheck};
use crate::check::check_tx;
use crate::connect::{check_spend, ConnectCtx};
use crate::error::TxRule;
use crate::utxo::UtxoView;
use crate::verify::{batch_failures, parallel_chunk, SigJob, VerifyConfig, VerifyMode};

/// A transaction that passed: its txid and the fee it pays.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxVerdict {
    /// The txid.
    pub txid: Hash,
    /// Inputs minus outputs.
    pub fee: Amount,
}

/// Where a transaction will be judged.
#[derive(Clone, Copy)]
pub struct TxEnv<'a> {
    /// Chain-wide inputs (params, chain id, modules, engine settings).
    pub ctx: ConnectCtx<'a>,
    /// The unspent outputs the transactions may spend.
    pub view: &'a (dyn UtxoView + Sync),
    /// Committed application state.
    pub app_state: &'a (dyn AppStateView + Sync),
    /// Height of the block the transactions would enter (maturity is judged against it).
    pub height: u64,
    /// Time of that block (passed to application modules).
    pub time: u64,
}

/// A transaction's txid and wtxid, as its caller already computed them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxIds {
    /// `Tx::txid` under the chain's hash function.
    pub txid: Hash,
    /// `Tx::wtxid` under the chain's hash function.
    pub wtxid: Hash,
}

/// Verifies each of `txs` alone against `env`; the verdicts are in the order of `txs`.
pub fn verify_txs(env: &TxEnv<'_>, txs: &[Tx]) -> Vec<Result<TxVerdict, TxRule>> {
    verify(env, txs, None)
}

/// [`verify_txs`] for a caller that already hashed the transactions (the mempool does, to key
/// its pool): `ids[i]` must be `txs[i]`'s own under `env`'s hash function, and then the
/// verdicts are [`verify_txs`]'s, without hashing each transaction twice more (its txid for the
/// sighash, its wtxid for the signature cache). With `ids` of another length, they are ignored.
pub fn verify_txs_with_ids(env: &TxEnv<'_>, txs: &[Tx], ids: &[TxIds]) -> Vec<Result<TxVerdict, TxRule>> {
    verify(env, txs, Some(ids).filter(|i| i.len() == txs.len()))
}

fn verify(env: &TxEnv<'_>, txs: &[Tx], ids: Option<&[TxIds]>) -> Vec<Result<TxVerdict, TxRule>> {
    let _s = profile::span("txverify.verify_txs");
    if env.ctx.verify.mode == VerifyMode::Sequential {
        let _s = profile::span("txverify.chunk");
        return txs
            .iter()
            .enumerate()
            .map(|(i, tx)| verify_one_sequential(env, tx, ids.map(|x| &x[i])))
            .collect();
    }
    by_chunks(env.ctx.verify, txs, ids, |c, chunk, ids| verify_chunk(env, chunk, ids, c))
}

/// `f(c, chunk, its ids)` over `txs` cut into the engine's chunks — `batch_size` each on this
/// thread in `batch` mode, [`parallel_chunk`] each over the current rayon pool in `parallel`
/// mode — the results concatenated in order. `c` numbers the chunks: the stream of their
/// batch coefficients.
fn by_chunks<T: Send>(
    cfg: &VerifyConfig,
    txs: &[Tx],
    ids: Option<&[TxIds]>,
    f: impl Fn(u64, &[Tx], Option<&[TxIds]>) -> Vec<T> + Sync,
) -> Vec<T> {
    let parallel = cfg.mode == VerifyMode::Parallel;
    let per = if parallel { parallel_chunk(txs.len(), cfg.batch_size) } else { cfg.batch_size.max(1) };
    let one =
        |(c, chunk): (usize, &[Tx])| f(c as u64, chunk, ids.map(|i| &i[c * per..c * per + chunk.len()]));
    if parallel {
        let parts: Vec<Vec<T>> = txs.par_chunks(per).enumerate().map(one).collect();
        parts.into_iter().flatten().collect()
    } else {
        txs.chunks(per).enumerate().flat_map(one).collect()
    }
}

/// The signature half of [`verify_txs_with_ids`], with no view of the coins spent: for each
/// of `txs` (`ids[i]` being `txs[i]`'s own), whether it passes the stateless rules and every
/// signature of its witnesses verifies over its sighash, the way `env`'s engine would verify
/// it under `ctx` (so true also when its signature cache vouches for it, or the chain skips
/// signatures). A caller that verifies signatures ahead of the ledger rules, to overlap them
/// with other work, then vouches for the `true` ones through a signature cache; a `false` one
/// is left to [`verify_txs`], which names what failed. With `ids` of another length, every
/// answer is `false`.
pub fn verify_signatures(ctx: &ConnectCtx<'_>, txs: &[Tx], ids: &[TxIds]) -> Vec<bool> {
    let _s = profile::span("txverify.signatures");
    if ids.len() != txs.len() {
        return vec![false; txs.len()];
    }
    let cfg = ctx.verify;
    let chunk = |c: u64, txs: &[Tx], ids: &[TxIds]| -> Vec<bool> {
        let mut work = SignatureWork::default();
        for (tx, id) in txs.iter().zip(ids) {
            work.push(ctx, tx, id);
        }
        work.verify(cfg, c)
    };
    if cfg.mode == VerifyMode::Sequential {
        return chunk(0, txs, ids);
    }
    // `by_chunks` hands each chunk its own ids: `ids` has `txs`'s length.
    by_chunks(cfg, txs, Some(ids), |c, t, i| chunk(c, t, i.unwrap_or_default()))
}

/// [`verify_signatures`] in two steps, for a caller that verifies the signatures of
/// transactions apart from them (on another thread, while it goes on using the transactions):
/// [`SignatureWork::push`] takes from each transaction what checking its signatures needs
/// (the stateless rules are applied then), and [`SignatureWork::verify`] checks it.
#[derive(Clone, Debug, Default)]
pub struct SignatureWork {
    /// Per transaction pushed: did it pass the stateless rules?
    passed: Vec<bool>,
    /// The signature jobs of those that did, unless the context's cache vouched for them.
    jobs: Vec<SigJob>,
}

impl SignatureWork {
    /// Adds `tx`, `ids` being its own: its stateless rules are applied now, and its
    /// signatures are taken (with the sighash they sign) unless `ctx`'s signature cache
    /// vouches for it or the chain skips signatures.
    pub fn push(&mut self, ctx: &ConnectCtx<'_>, tx: &Tx, ids: &TxIds) {
        let ti = self.passed.len();
        let passed = stateless_rules(ctx, tx).is_ok();
        self.passed.push(passed);
        if passed {
            jobs_of(ctx, ti, tx, &ids.txid, Some(&ids.wtxid), &mut self.jobs);
        }
    }

    /// Adds a transaction whose signatures are not to be checked here: [`SignatureWork::verify`]
    /// answers `false` for it, vouching for nothing.
    pub fn skip(&mut self) {
        self.passed.push(false);
    }

    /// Transactions pushed or skipped.
    pub fn len(&self) -> usize {
        self.passed.len()
    }

    /// Signatures to check.
    pub fn signatures(&self) -> usize {
        self.jobs.len()
    }

    /// Were none pushed or skipped?
    pub fn is_empty(&self) -> bool {
        self.passed.is_empty()
    }

    /// Verifies the signatures on this thread — singly in `sequential` mode, else in ZIP-215
    /// batches of `cfg.batch_size` — and answers, per transaction in the order pushed, whether
    /// it passed the stateless rules and every signature of it verified. `stream` keeps the
    /// batch coefficients of calls sharing `cfg.seed` independent (see [`batch_failures`]).
    pub fn verify(self, cfg: &VerifyConfig, stream: u64) -> Vec<bool> {
        let mut ok = self.passed;
        if cfg.mode == VerifyMode::Sequential {
            for job in &self.jobs {
                if ok[job.tx] && scalechain_types::keys::verify(&job.pubkey, &job.msg, &job.sig).is_err() {
                    ok[job.tx] = false;
                }
            }
        } else {
            for (j, _) in batch_failures(cfg, &self.jobs, stream) {
                ok[self.jobs[j].tx] = false;
            }
        }
        ok
    }
}

/// The stateless rules of one transaction.
fn stateless_rules(ctx: &ConnectCtx<'_>, tx: &Tx) -> Result<(), TxRule> {
    if tx.is_coinbase() {
        return Err(TxRule::LooseCoinbase);
    }
    check_tx(tx, ctx.params, ctx.apps)
}

/// The ledger rules of one transaction (everything but its signatures), `precheck` being its
/// module's batch pre-check verdict.
fn ledger_rules(
    env: &TxEnv<'_>,
    tx: &Tx,
    precheck: Precheck<'_>,
    txid: Option<Hash>,
) -> Result<TxVerdict, TxRule> {
    stateless_rules(&env.ctx, tx)?;
    contextual_rules(env, tx, precheck, txid)
}

/// The ledger rules after the stateless ones.
/// `txid`, if given, is `tx`'s own.
fn contextual_rules(
    env: &TxEnv<'_>,
    tx: &Tx,
    precheck: Precheck<'_>,
    txid: Option<Hash>,
) -> Result<TxVerdict, TxRule> {
    let p = env.ctx.params;
    let txid = txid.unwrap_or_else(|| tx.txid(p.hash));
    let mut in_sum = Amount::ZERO;
    for (ii, input) in tx.inputs.iter().enumerate() {
        let coin = env.view.coin(&input.prev).ok_or(TxRule::MissingInput { input: ii, prev: input.prev })?;
        check_spend(p, env.height, ii, input, &coin)?;
        in_sum = in_sum.checked_add(coin.out.value).map_err(|_| TxRule::InputOverflow { input: ii })?;
    }
    let out_sum = Amount::checked_sum(tx.outputs.iter().map(|o| o.value))
        .map_err(|_| TxRule::OutputOverflow { output: tx.outputs.len().saturating_sub(1) })?;
    let fee = in_sum
        .checked_sub(out_sum)
        .map_err(|_| TxRule::OutputsExceedInputs { inputs: in_sum, outputs: out_sum })?;
    if tx.kind != TxKind::TRANSFER {
        let module = env.ctx.apps.get(tx.kind).ok_or(TxRule::UnknownKind(tx.kind.0))?;
        let actx = AppContext {
            params: p,
            chain_id: *env.ctx.chain_id,
            height: env.height,
            time: env.time,
            tx_index: 1,
            txid,
            precheck,
        };
        let mut overlay = AppOverlay::new(env.app_state);
        overlay.set_namespace(tx.kind);
        module.apply(tx, &actx, &mut overlay).map_err(TxRule::App)?;
    }
    Ok(TxVerdict { txid, fee })
}

/// The signature jobs of one transaction, none if the context's signature cache vouches for it
/// (`wtxid`, if given, is `tx`'s own) or the chain declares that it skips signatures
/// ([`crate::Params::skip_signatures`]).
fn jobs_of(
    ctx: &ConnectCtx<'_>,
    ti: usize,
    tx: &Tx,
    txid: &Hash,
    wtxid: Option<&Hash>,
    out: &mut Vec<SigJob>,
) {
    if ctx.params.skip_signatures {
        return;
    }
    if let Some(cache) = ctx.sig_cache {
        let w = wtxid.copied().unwrap_or_else(|| tx.wtxid(ctx.params.hash));
        if cache.contains(&w) {
            return;
        }
    }
    let msg = sighash(ctx.params.hash, ctx.chain_id, txid);
    out.extend(tx.inputs.iter().enumerate().map(|(ii, i)| SigJob {
        tx: ti,
        input: ii,
        pubkey: i.witness.pubkey,
        sig: i.witness.signature,
        msg,
    }));
}

fn verify_one_sequential(env: &TxEnv<'_>, tx: &Tx, ids: Option<&TxIds>) -> Result<TxVerdict, TxRule> {
    let verdict = ledger_rules(env, tx, Precheck::None, ids.map(|i| i.txid))?;
    let mut jobs = Vec::with_capacity(tx.inputs.len());
    jobs_of(&env.ctx, 0, tx, &verdict.txid, ids.map(|i| &i.wtxid), &mut jobs);
    for job in &jobs {
        scalechain_types::keys::verify(&job.pubkey, &job.msg, &job.sig)
            .map_err(|reason| TxRule::BadSignature { input: job.input, reason })?;
    }
    Ok(verdict)
}

/// The ledger rules of every transaction of `chunk`, then one batch for their signatures.
fn verify_chunk(
    env: &TxEnv<'_>,
    chunk: &[Tx],
    ids: Option<&[TxIds]>,
    stream: u64,
) -> Vec<Result<TxVerdict, TxRule>> {
    let _s = profile::span("txverify.chunk");
    let stateless: Vec<Result<(), TxRule>> = chunk.iter().map(|tx| stateless_rules(&env.ctx, tx)).collect();
    let cfg = env.ctx.verify;
    let pre = precheck_txs(env.ctx.apps, env.ctx.params, cfg, chunk, stream, false, |i| {
        stateless[i].is_err() || chunk[i].kind == TxKind::TRANSFER
    });
    let mut verdicts: Vec<Result<TxVerdict, TxRule>> = chunk
        .iter()
        .zip(stateless)
        .zip(&pre)
        .enumerate()
        .map(|(i, ((tx, s), pre))| {
            s.and_then(|()| contextual_rules(env, tx, Precheck::of(pre), ids.map(|x| x[i].txid)))
        })
        .collect();
    let mut jobs = Vec::with_capacity(chunk.len());
    for (ti, (tx, v)) in chunk.iter().zip(&verdicts).enumerate() {
        if let Ok(v) = v {
            jobs_of(&env.ctx, ti, tx, &v.txid, ids.map(|x| &x[ti].wtxid), &mut jobs);
        }
    }
    for (j, reason) in batch_failures(env.ctx.verify, &jobs, stream) {
        let job = &jobs[j];
        // Keep the lowest failing input of each transaction (failures come in job order).
        if verdicts[job.tx].is_ok() {
            verdicts[job.tx] = Err(TxRule::BadSignature { input: job.input, reason });
        }
    }
    verdicts
}
