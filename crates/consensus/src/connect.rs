//! Stage 3: connecting a block to a UTXO view (and disconnecting it with its undo data).
//!
//! [`connect_block`] checks every contextual rule in one pass over the block, in order — an
//! input may spend an output created by an earlier transaction of the same block, never a later
//! one — while the signature jobs run in the verification engine (alongside, in `parallel`
//! mode). It returns a [`BlockDiff`]: the net UTXO and application-state changes, the fees, and
//! the [`BlockUndo`] that [`disconnect_block`] needs to reverse them. Nothing is mutated here.
//!
//! Application modules with a batch pre-check ([`crate::app::AppModule::precheck_batch`]) get it
//! first (in `batch` and `parallel` modes, over rayon chunks in `parallel`); each module's
//! `apply` then reads its transaction's verdict instead of redoing the work, at the point where
//! it would have done it, so the verdicts — and the reported failure — are those of `sequential`
//! mode, where `apply` does all the work itself.
//!
//! Error precedence (so every mode reports the same error): the first contextual failure in
//! block order; if there is none, the lowest-indexed bad signature.

use std::collections::HashMap;

use rayon::prelude::*;

use scalechain_types::codec::{put_count, put_var_bytes, Decode, DecodeError, Encode, Reader};
use scalechain_types::keys::sighash;
use scalechain_types::profile;
use scalechain_types::{Amount, Block, Hash, OutPoint, Tx, TxIn, TxKind};

use crate::app::{precheck_txs, AppContext, AppError, AppOverlay, AppStateView, Apps, Precheck};
use crate::check::CheckedBlock;
use crate::error::{BlockError, TxRule};
use crate::params::Params;
use crate::utxo::{Coin, UtxoSet, UtxoView};
use crate::verify::{verify_jobs, SigCache, SigJob, VerifyConfig, VerifyMode};

/// Net state changes: outputs to remove, outputs to add, application keys to set or delete.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Outpoints that leave the set.
    pub remove: Vec<OutPoint>,
    /// Outputs that enter the set.
    pub add: Vec<(OutPoint, Coin)>,
    /// Application state writes: `None` deletes.
    pub app: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Changes {
    /// Applies the UTXO part to an in-memory set.
    pub fn apply_utxos(&self, set: &mut UtxoSet) {
        for op in &self.remove {
            set.remove(op);
        }
        for (op, c) in &self.add {
            set.insert(*op, *c);
        }
    }

    /// Applies the application part to an in-memory map.
    pub fn apply_app(&self, state: &mut std::collections::BTreeMap<Vec<u8>, Vec<u8>>) {
        for (k, v) in &self.app {
            match v {
                Some(v) => state.insert(k.clone(), v.clone()),
                None => state.remove(k),
            };
        }
    }
}

/// What is needed to disconnect a block: the coins it spent and the application values it
/// overwrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockUndo {
    /// Coins the block spent that existed before it, in spending order.
    pub spent: Vec<(OutPoint, Coin)>,
    /// Application keys the block wrote, with their previous values.
    pub app: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

impl Encode for BlockUndo {
    fn encode_to(&self, out: &mut Vec<u8>) {
        put_count(out, self.spent.len());
        for (op, c) in &self.spent {
            op.encode_to(out);
            c.encode_to(out);
        }
        put_count(out, self.app.len());
        for (k, v) in &self.app {
            put_var_bytes(out, k);
            match v {
                None => out.push(0),
                Some(v) => {
                    out.push(1);
                    put_var_bytes(out, v);
                }
            }
        }
    }
}

impl Decode for BlockUndo {
    const MIN_LEN: usize = 8;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let n = r.count("undo.spent", OutPoint::MIN_LEN + Coin::LEN)?;
        let mut spent = Vec::with_capacity(n);
        for _ in 0..n {
            spent.push((OutPoint::decode_from(r)?, Coin::decode_from(r)?));
        }
        let n = r.count("undo.app", 5)?;
        let mut app = Vec::with_capacity(n);
        for _ in 0..n {
            let k = r.var_bytes("undo.app.key")?;
            let v = match r.u8("undo.app.flag")? {
                0 => None,
                1 => Some(r.var_bytes("undo.app.value")?),
                b => return Err(r.invalid("undo.app.flag", format!("flag must be 0 or 1, got {b}"))),
            };
            app.push((k, v));
        }
        Ok(BlockUndo { spent, app })
    }
}

/// The result of connecting a block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockDiff {
    /// The net changes.
    pub changes: Changes,
    /// How to reverse them.
    pub undo: BlockUndo,
    /// Sum of the block's fees.
    pub fees: Amount,
}

/// The chain-wide inputs of connection.
#[derive(Clone, Copy)]
pub struct ConnectCtx<'a> {
    /// Parameters.
    pub params: &'a Params,
    /// Chain id (signed by every input).
    pub chain_id: &'a Hash,
    /// Application modules.
    pub apps: &'a Apps,
    /// Signature engine settings.
    pub verify: &'a VerifyConfig,
    /// Transactions whose signatures are known good; their signature jobs are skipped.
    pub sig_cache: Option<&'a dyn SigCache>,
}

impl<'a> ConnectCtx<'a> {
    /// A context without a signature cache.
    pub fn new(params: &'a Params, chain_id: &'a Hash, apps: &'a Apps, verify: &'a VerifyConfig) -> Self {
        ConnectCtx { params, chain_id, apps, verify, sig_cache: None }
    }
}

fn tx_err(index: usize, txids: &[Hash], error: TxRule) -> BlockError {
    BlockError::Tx { index, txid: txids[index], error }
}

/// The signature jobs of a block: every input of every non-coinbase transaction, less the
/// transactions the context's signature cache holds; none on a chain that declares it skips
/// signatures ([`crate::Params::skip_signatures`]).
pub fn sig_jobs(ctx: &ConnectCtx<'_>, block: &Block, txids: &[Hash]) -> Vec<SigJob> {
    if ctx.params.skip_signatures {
        return Vec::new();
    }
    let per_tx = |(ti, tx): (usize, &Tx)| {
        if ctx.sig_cache.is_some_and(|c| c.contains(&tx.wtxid(ctx.params.hash))) {
            return Vec::new();
        }
        let msg = sighash(ctx.params.hash, ctx.chain_id, &txids[ti]);
        tx.inputs
            .iter()
            .enumerate()
            .map(|(ii, i)| SigJob {
                tx: ti,
                input: ii,
                pubkey: i.witness.pubkey,
                sig: i.witness.signature,
                msg,
            })
            .collect::<Vec<_>>()
    };
    if ctx.verify.mode == VerifyMode::Parallel && block.txs.len() > 64 {
        block.txs.par_iter().enumerate().skip(1).flat_map_iter(per_tx).collect()
    } else {
        block.txs.iter().enumerate().skip(1).flat_map(per_tx).collect()
    }
}

/// Connects a block that passed [`crate::check::check_block`] to `view` and `app_state`.
/// Returns the diff, or the first rule the block breaks.
pub fn connect_block(
    ctx: &ConnectCtx<'_>,
    checked: &CheckedBlock<'_>,
    view: &(dyn UtxoView + Sync),
    app_state: &(dyn AppStateView + Sync),
) -> Result<BlockDiff, BlockError> {
    let _s = profile::span("connect.block");
    let (block, txids) = (checked.block(), checked.txids());
    let jobs = sig_jobs(ctx, block, txids);
    let stateful = || {
        let pre = app_prechecks(ctx, block);
        contextual(ctx, block, txids, view, app_state, &pre)
    };
    let (contextual, sigs) = if ctx.verify.mode == VerifyMode::Parallel {
        rayon::join(stateful, || verify_jobs(ctx.verify, &jobs))
    } else {
        (stateful(), verify_jobs(ctx.verify, &jobs))
    };
    let diff = contextual?;
    if let Err((j, reason)) = sigs {
        let job = &jobs[j];
        return Err(tx_err(job.tx, txids, TxRule::BadSignature { input: job.input, reason }));
    }
    Ok(diff)
}

/// The application modules' batch pre-checks of a block's transactions (coinbase and transfers
/// excluded), by transaction index.
fn app_prechecks(ctx: &ConnectCtx<'_>, block: &Block) -> Vec<Option<Result<(), AppError>>> {
    let _s = profile::span("connect.app_prechecks");
    precheck_txs(ctx.apps, ctx.params, ctx.verify, &block.txs, block.header.height, true, |i| {
        matches!(block.txs[i].kind, TxKind::COINBASE | TxKind::TRANSFER)
    })
}

/// The rules between one input and the coin it spends: maturity at `height`, the witness's
/// scheme against the lock's, and `H(pubkey)` against the lock's hash.
pub fn check_spend(p: &Params, height: u64, ii: usize, input: &TxIn, coin: &Coin) -> Result<(), TxRule> {
    if coin.coinbase {
        let mature = coin.height.saturating_add(p.coinbase_maturity);
        if height < mature {
            return Err(TxRule::ImmatureCoinbase {
                input: ii,
                prev: input.prev,
                created: coin.height,
                mature,
            });
        }
    }
    let key = &input.witness.pubkey;
    if key.scheme() != coin.out.lock.scheme {
        return Err(TxRule::SchemeMismatch { input: ii, expected: coin.out.lock.scheme, got: key.scheme() });
    }
    if key.hash(p.hash) != coin.out.lock.pubkey_hash {
        return Err(TxRule::WrongKey { input: ii });
    }
    Ok(())
}

fn contextual(
    ctx: &ConnectCtx<'_>,
    block: &Block,
    txids: &[Hash],
    view: &dyn UtxoView,
    app_state: &dyn AppStateView,
    prechecks: &[Option<Result<(), AppError>>],
) -> Result<BlockDiff, BlockError> {
    let _s = profile::span("connect.contextual");
    let p = ctx.params;
    let height = block.header.height;
    let position: HashMap<Hash, usize> = txids.iter().enumerate().map(|(i, t)| (*t, i)).collect();
    let mut created: HashMap<OutPoint, Coin> = HashMap::new();
    let mut spent_by: HashMap<OutPoint, usize> = HashMap::new();
    let mut undo = BlockUndo::default();
    let mut fees = Amount::ZERO;
    let mut overlay = AppOverlay::new(app_state);

    for (ti, tx) in block.txs.iter().enumerate() {
        let err = |e| tx_err(ti, txids, e);
        let mut in_sum = Amount::ZERO;
        for (ii, input) in tx.inputs.iter().enumerate() {
            let prev = input.prev;
            if let Some(&first_tx) = spent_by.get(&prev) {
                return Err(err(TxRule::DoubleSpendInBlock { input: ii, prev, first_tx }));
            }
            let coin = if let Some(c) = created.remove(&prev) {
                c
            } else if let Some(c) = view.coin(&prev) {
                undo.spent.push((prev, c));
                c
            } else {
                return Err(err(match position.get(&prev.txid) {
                    Some(&creator) if creator >= ti => TxRule::SpendsLaterOutput { input: ii, prev, creator },
                    _ => TxRule::MissingInput { input: ii, prev },
                }));
            };
            spent_by.insert(prev, ti);
            check_spend(p, height, ii, input, &coin).map_err(err)?;
            in_sum =
                in_sum.checked_add(coin.out.value).map_err(|_| err(TxRule::InputOverflow { input: ii }))?;
        }
        let out_sum = Amount::checked_sum(tx.outputs.iter().map(|o| o.value))
            .map_err(|_| err(TxRule::OutputOverflow { output: tx.outputs.len().saturating_sub(1) }))?;
        if ti > 0 {
            let fee = in_sum
                .checked_sub(out_sum)
                .map_err(|_| err(TxRule::OutputsExceedInputs { inputs: in_sum, outputs: out_sum }))?;
            fees = fees.checked_add(fee).map_err(|_| BlockError::FeeOverflow)?;
        }
        if tx.kind != TxKind::COINBASE && tx.kind != TxKind::TRANSFER {
            let module = ctx.apps.get(tx.kind).ok_or_else(|| err(TxRule::UnknownKind(tx.kind.0)))?;
            let actx = AppContext {
                params: p,
                chain_id: *ctx.chain_id,
                height,
                time: block.header.time,
                tx_index: ti,
                txid: txids[ti],
                precheck: prechecks.get(ti).map_or(Precheck::None, Precheck::of),
            };
            overlay.set_namespace(tx.kind);
            module.apply(tx, &actx, &mut overlay).map_err(|e| err(TxRule::App(e)))?;
        }
        for (oi, out) in tx.outputs.iter().enumerate() {
            let op = OutPoint { txid: txids[ti], index: oi as u32 };
            // Like Bitcoin's BIP 30: a repeated txid (possible for input-less application
            // transactions) must not silently replace an unspent output.
            if created.contains_key(&op) || view.coin(&op).is_some() {
                return Err(err(TxRule::OverwritesUnspent { output: oi, op }));
            }
            created.insert(op, Coin { out: *out, height, coinbase: ti == 0 });
        }
    }

    let paid = Amount::checked_sum(block.txs[0].outputs.iter().map(|o| o.value))
        .map_err(|_| BlockError::FeeOverflow)?;
    let max = p.subsidy(height).checked_add(fees).map_err(|_| BlockError::FeeOverflow)?;
    if paid > max {
        return Err(BlockError::CoinbaseOverpay { max, paid });
    }

    let mut app = Vec::new();
    for (k, new, old) in overlay.into_changes() {
        app.push((k.clone(), new));
        undo.app.push((k, old));
    }
    let changes = Changes {
        remove: undo.spent.iter().map(|(op, _)| *op).collect(),
        add: created.into_iter().collect(),
        app,
    };
    Ok(BlockDiff { changes, undo, fees })
}

/// The changes that reverse a connected block: its outputs leave, the coins it spent return,
/// and the application values it overwrote are restored.
pub fn disconnect_block(p: &Params, block: &Block, undo: &BlockUndo) -> Changes {
    let mut remove = Vec::new();
    for tx in &block.txs {
        let txid = tx.txid(p.hash);
        remove.extend((0..tx.outputs.len()).map(|i| OutPoint { txid, index: i as u32 }));
    }
    Changes { remove, add: undo.spent.clone(), app: undo.app.clone() }
}

/// The UTXO changes of the genesis block: its premine outputs, spendable at once.
pub fn genesis_changes(p: &Params, genesis: &Block) -> Changes {
    let mut add = Vec::new();
    for tx in &genesis.txs {
        let txid = tx.txid(p.hash);
        for (i, out) in tx.outputs.iter().enumerate() {
            add.push((OutPoint { txid, index: i as u32 }, Coin { out: *out, height: 0, coinbase: false }));
        }
    }
    Changes { remove: vec![], add, app: vec![] }
}
