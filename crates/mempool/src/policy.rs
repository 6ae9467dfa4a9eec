//! The pool's policy: the rules, beyond consensus, that decide what the pool and the orphan
//! pool take. Whatever the consensus rules say, a transaction is refused when
//!
//! - it is larger than [`MempoolConfig::max_tx_bytes`] or pays an output below the dust limit
//!   ([`static_policy`], needing no state);
//! - it is fee-less (an application transaction with no inputs, e.g. a ballot) and the pool's
//!   fee-less space or its group's share of it is full ([`fee_less_room`]; checked before
//!   verification by [`fee_less_early`] so a flood past the budget costs no signature check);
//! - it pays less than [`MempoolConfig::min_fee_rate`] and is not fee-less with room, or it
//!   breaks the ancestor and descendant limits, or the pool is full and its fee rate is no
//!   better than the scores of what it would evict ([`place`]).
//!
//! Conflicts are refused, never replaced: a transaction spending an output a pooled one spends,
//! or claiming an application key a pooled one holds ([`app_keys`]: the module's
//! `AppModule::conflict_keys`), is refused (`crate::admission` asks before verification,
//! [`place`] again when the pool changed meanwhile). The rules that walk the pool's graph —
//! which pooled transaction spends or claims what, the limits, whom to evict — are the pool's
//! own (`Pool::conflict`, `Pool::app_conflict`, `Pool::plan` in `crate::pool`): this file says
//! when they apply and what follows. A refused transaction missing an input whose parents are
//! unknown here is held as an orphan instead, if the orphan pool has room ([`hold_orphan`]).
//!
//! - **Invariants.** The checks run in a fixed order and the first broken rule names the
//!   refusal ([`MempoolError`]): the order is part of the behaviour. A refused transaction
//!   changes nothing; only [`place`] changes the pool (its evictions, then the insertion) and
//!   only [`hold_orphan`] the orphan pool.
//! - **Must not.** Verify anything the consensus rules decide (the admission engine calls
//!   `verify_txs`), take a lock, read a clock or run in parallel: these are plain functions of
//!   the pool, the settings and the transaction, called under the writer's lock on one thread
//!   (by the engine, and by the facade for orphans).

use std::sync::Arc;

use scalechain_consensus::{AppModule, Apps, Params, TxEnv, TxRule};
use scalechain_types::{Amount, FeeRate, Hash, Tx, TxKind};

use crate::config::MempoolConfig;
use crate::error::MempoolError;
use crate::orphan::{OrphanPool, OrphanSource};
use crate::outcome::{Admitted, HeldOrphan};
use crate::pool::{AppKey, Candidate, Pool};

/// The application keys `tx` would hold in the pool (distinct, sorted): those its module names
/// ([`scalechain_consensus::AppModule::conflict_keys`]); none for transfers and unknown kinds.
pub(crate) fn app_keys(apps: &Apps, params: &Params, tx: &Tx) -> Vec<AppKey> {
    let Some(m) = module_of(apps, tx) else { return Vec::new() };
    let mut keys: Vec<AppKey> =
        m.conflict_keys(tx, params).into_iter().map(|key| AppKey { kind: tx.kind.0, key }).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}

/// The last height a block may include `tx` at, as its module says; none for transfers.
pub(crate) fn app_last_height(apps: &Apps, params: &Params, tx: &Tx) -> Option<u64> {
    module_of(apps, tx)?.last_height(tx, params)
}

/// The fee-less group of `tx` paying `fee` ([`PoolEntry::fee_less`]): none unless it has no
/// inputs, pays nothing, and its module names a group.
pub(crate) fn fee_less_group(apps: &Apps, params: &Params, tx: &Tx, fee: u64) -> Option<Hash> {
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
pub(crate) fn static_policy(cfg: &MempoolConfig, tx: &Tx, size: u64) -> Result<(), MempoolError> {
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
pub(crate) fn fee_less_early(
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
pub(crate) fn place(
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

/// Holds `tx` (with its txid and size), refused with `err`, in `orphans` if `err` is a
/// missing input whose parents are unknown here: neither pooled nor `confirmed`. `origin` is
/// its source and first arrival time. Gives back `err` if it is not held.
pub(crate) fn hold_orphan(
    pool: &Pool,
    orphans: &mut OrphanPool,
    env: &TxEnv<'_>,
    (tx, txid, size): (Tx, Hash, u64),
    err: MempoolError,
    (source, arrived_ms): (OrphanSource, u64),
    confirmed: &dyn Fn(&Hash) -> bool,
) -> Result<HeldOrphan, MempoolError> {
    let MempoolError::Consensus(TxRule::MissingInput { input, prev }) = err else { return Err(err) };
    if !orphans.fits(size) {
        return Err(err);
    }
    let mut parents: Vec<Hash> = tx
        .inputs
        .iter()
        .filter(|i| pool.coin(&i.prev, env.view, env.height).is_none())
        .map(|i| i.prev.txid)
        .collect();
    parents.sort_unstable();
    parents.dedup();
    if parents.is_empty() || parents.iter().any(|p| *p == txid || pool.contains(p) || confirmed(p)) {
        return Err(err);
    }
    match orphans.hold(tx, txid, size, parents.clone(), source, arrived_ms) {
        Some(evicted) => Ok(HeldOrphan { txid, input, prev, parents, evicted }),
        None => Err(err),
    }
}
