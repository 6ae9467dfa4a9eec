//! Stateless rules (stage 1) and header-context rules (stage 2).

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use scalechain_types::profile;
use scalechain_types::{Amount, Block, Hash, Header, Tx, TxKind};

use crate::app::Apps;
use crate::error::{BlockError, TxRule};
use crate::params::Params;
use crate::pow::{median_time_past, next_target, HeaderChain};

/// Below this many transactions a block's stateless checks run on one thread.
const PAR_TXS: usize = 64;

/// Stateless rules of one transaction: version, kind and shape, limits, allowed schemes, no
/// duplicate input, output sum in range, and the application module's stateless rules.
pub fn check_tx(tx: &Tx, p: &Params, apps: &Apps) -> Result<(), TxRule> {
    if tx.version != 1 {
        return Err(TxRule::UnsupportedVersion(tx.version));
    }
    match tx.kind {
        TxKind::COINBASE => {
            if !tx.inputs.is_empty() {
                return Err(TxRule::CoinbaseWithInputs(tx.inputs.len()));
            }
            if tx.data.len() < 8 {
                return Err(TxRule::CoinbaseDataTooShort(tx.data.len()));
            }
        }
        TxKind::TRANSFER => {
            if tx.inputs.is_empty() {
                return Err(TxRule::NoInputs);
            }
            if tx.outputs.is_empty() {
                return Err(TxRule::NoOutputs);
            }
        }
        k if apps.get(k).is_none() => return Err(TxRule::UnknownKind(k.0)),
        _ => {}
    }
    let (ni, no) = (tx.inputs.len() as u64, tx.outputs.len() as u64);
    if ni > p.max_tx_inputs {
        return Err(TxRule::TooManyInputs { count: ni, max: p.max_tx_inputs });
    }
    if no > p.max_tx_outputs {
        return Err(TxRule::TooManyOutputs { count: no, max: p.max_tx_outputs });
    }
    if tx.data.len() as u64 > p.max_tx_data {
        return Err(TxRule::DataTooLarge { size: tx.data.len() as u64, max: p.max_tx_data });
    }
    let size = tx.encoded_len() as u64;
    if size > p.max_tx_bytes {
        return Err(TxRule::TooLarge { size, max: p.max_tx_bytes });
    }
    let mut seen = HashMap::with_capacity(tx.inputs.len());
    for (i, input) in tx.inputs.iter().enumerate() {
        let scheme = input.witness.pubkey.scheme();
        if !p.allows(scheme) {
            return Err(TxRule::InputSchemeNotAllowed { input: i, scheme });
        }
        if let Some(first) = seen.insert(input.prev, i) {
            return Err(TxRule::DuplicateInput { input: i, first, prev: input.prev });
        }
    }
    let mut total = Amount::ZERO;
    for (o, out) in tx.outputs.iter().enumerate() {
        if !p.allows(out.lock.scheme) {
            return Err(TxRule::OutputSchemeNotAllowed { output: o, scheme: out.lock.scheme });
        }
        total = total.checked_add(out.value).map_err(|_| TxRule::OutputOverflow { output: o })?;
    }
    if let Some(m) = apps.get(tx.kind) {
        m.check_stateless(tx, p).map_err(TxRule::App)?;
    }
    Ok(())
}

/// The height a coinbase carries (first 8 bytes of `data`, little-endian).
pub fn coinbase_height(tx: &Tx) -> Option<u64> {
    Some(u64::from_le_bytes(tx.data.get(..8)?.try_into().ok()?))
}

/// A block that passed [`check_block`], with what the check computed once for the later
/// stages: its hash and its txids. Only [`check_block`] makes one, and
/// [`crate::connect::connect_block`] takes nothing else, so no block reaches the UTXO set
/// without its stateless rules, and no list of txids can be paired with the wrong block.
#[derive(Debug)]
pub struct CheckedBlock<'a> {
    block: &'a Block,
    hash: Hash,
    txids: Vec<Hash>,
}

impl<'a> CheckedBlock<'a> {
    /// The block.
    pub fn block(&self) -> &'a Block {
        self.block
    }

    /// The block's hash.
    pub fn hash(&self) -> Hash {
        self.hash
    }

    /// The txids of its transactions, in block order.
    pub fn txids(&self) -> &[Hash] {
        &self.txids
    }
}

/// Stateless rules of a block: version, counts and size, proof of work against the header's
/// own target, the Merkle root, coinbase placement and height, every transaction's stateless
/// rules and unique txids. Returns the block as checked, with its hash and txids (computed
/// once, in parallel, for later stages).
pub fn check_block<'a>(block: &'a Block, p: &Params, apps: &Apps) -> Result<CheckedBlock<'a>, BlockError> {
    let _s = profile::span("check.block");
    let h = &block.header;
    if h.version != 1 {
        return Err(BlockError::UnsupportedVersion(h.version));
    }
    let n = block.txs.len() as u64;
    if n == 0 {
        return Err(BlockError::NoTransactions);
    }
    if n > p.max_block_txs {
        return Err(BlockError::TooManyTxs { count: n, max: p.max_block_txs });
    }
    let size = block.encoded_len() as u64;
    if size > p.max_block_bytes {
        return Err(BlockError::TooLarge { size, max: p.max_block_bytes });
    }
    let hash = h.hash(p.hash);
    if !h.target.is_met_by(&hash) {
        return Err(BlockError::BadProofOfWork { hash, target: h.target });
    }
    // The Merkle root first: a body that does not match its header is not this block at all,
    // so no rule of its transactions may be blamed on the header's author.
    let computed = block.compute_merkle_root(p.hash);
    if computed != h.merkle_root {
        return Err(BlockError::BadMerkleRoot { computed, got: h.merkle_root });
    }
    let txids = check_block_txs(block, p, apps)?;
    Ok(CheckedBlock { block, hash, txids })
}

/// The transaction part of [`check_block`], for a block whose shape, proof of work and Merkle
/// root already passed: coinbase placement and height, every transaction's stateless rules,
/// unique txids. Returns the txids.
pub fn check_block_txs(block: &Block, p: &Params, apps: &Apps) -> Result<Vec<Hash>, BlockError> {
    let h = &block.header;
    if block.txs.is_empty() {
        return Err(BlockError::NoTransactions);
    }
    if !block.txs[0].is_coinbase() {
        return Err(BlockError::FirstNotCoinbase);
    }
    if let Some(i) = block.txs.iter().skip(1).position(Tx::is_coinbase) {
        return Err(BlockError::ExtraCoinbase(i + 1));
    }
    let par = block.txs.len() >= PAR_TXS;
    let txids: Vec<Hash> = if par {
        block.txs.par_iter().map(|t| t.txid(p.hash)).collect()
    } else {
        block.txs.iter().map(|t| t.txid(p.hash)).collect()
    };
    let first_bad = |i: usize| check_tx(&block.txs[i], p, apps).err().map(|e| (i, e));
    let bad = if par {
        (0..block.txs.len()).into_par_iter().filter_map(first_bad).min_by_key(|(i, _)| *i)
    } else {
        (0..block.txs.len()).find_map(first_bad)
    };
    if let Some((index, error)) = bad {
        return Err(BlockError::Tx { index, txid: txids[index], error });
    }
    let got = coinbase_height(&block.txs[0]).unwrap_or(u64::MAX);
    if got != h.height {
        return Err(BlockError::CoinbaseHeight { expected: h.height, got });
    }
    let mut seen = HashSet::with_capacity(txids.len());
    for (index, txid) in txids.iter().enumerate() {
        if !seen.insert(*txid) {
            return Err(BlockError::DuplicateTx { index, txid: *txid });
        }
    }
    Ok(txids)
}

/// Header rules that need the parent and its ancestors: prev hash, height, the target the
/// retarget rule gives, time after the median time past and at most `max_future_drift_ms`
/// past `now_ms` (the validator's clock, passed in).
pub fn check_header_context(
    p: &Params,
    header: &Header,
    parent: &Header,
    chain: &dyn HeaderChain,
    now_ms: u64,
) -> Result<(), BlockError> {
    let parent_hash = parent.hash(p.hash);
    if header.prev_hash != parent_hash {
        return Err(BlockError::BadPrev { expected: parent_hash, got: header.prev_hash });
    }
    if header.height != parent.height + 1 {
        return Err(BlockError::BadHeight { expected: parent.height + 1, got: header.height });
    }
    let expected = next_target(p, parent, chain);
    if header.target != expected {
        return Err(BlockError::BadTarget { expected, got: header.target });
    }
    let mtp = median_time_past(p, parent, chain);
    if header.time <= mtp {
        return Err(BlockError::TimeTooOld { time: header.time, mtp });
    }
    let max = now_ms.saturating_add(p.max_future_drift_ms);
    if header.time > max {
        return Err(BlockError::TimeTooNew { time: header.time, max });
    }
    Ok(())
}
