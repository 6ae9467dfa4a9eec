//! Building and signing transfers and fee-paying application transactions: coin selection, fees
//! from the encoded size, change, signing.
//!
//! **Coin selection is largest-first.** Coins are sorted by value (largest first, ties by
//! outpoint, so the result is deterministic) and taken one by one until they pay the amount plus
//! the fee of a transaction with those inputs and one output. Zero-value coins are never taken.
//! At most [`BuildOptions::max_inputs`] coins are taken; if more would be needed the error is
//! [`BuildError::TooManyInputs`], and if even every coin is not enough it is
//! [`BuildError::InsufficientFunds`]. Largest-first keeps transactions (and fees) small and is
//! easy to predict; it does consolidate less than other strategies.
//!
//! **Fees.** The fee rate is an amount per 1,000 bytes of the full encoding (witnesses included),
//! and a transaction's fee is `ceil(size * rate / 1000)`. A transfer's size is a function of its
//! shape only (every signature is 64 bytes; a key is 32 or 33 bytes by scheme), so the size of
//! each candidate is exact before anything is signed ([`transfer_size`], equal to
//! [`Tx::encoded_len`]):
//!
//! ```text
//! size = 17 + sum over inputs of (36 + 1 + key_len + 64) + 41 * outputs
//! ```
//!
//! **Change.** With the selected inputs, if `inputs - amount - fee(2 outputs)` is at least the
//! dust limit (and positive), a change output pays it back to the change lock. Otherwise there is
//! no change output and the fee absorbs the remainder (the fee is then
//! `inputs - amount >= fee(1 output)`). Outputs: the recipient first, then the change.
//!
//! **Application transactions** ([`build_app_tx`]: an election, say) are funded the same way
//! with no recipient: the amount is zero, the size counts the data, and the change is the only
//! output (none when it would be dust, the fee then taking every selected coin):
//!
//! ```text
//! size = 17 + sum over inputs of (36 + 1 + key_len + 64) + 41 * (change ? 1 : 0) + data_len
//! ```
//!
//! **Signing.** Every input signs `sighash(chain_id, txid)` with the key behind the lock of the
//! coin it spends (the protocol's SIGHASH_ALL: one message for all inputs).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use scalechain_types::{
    Amount, FeeRate, Hash, HashKind, Lock, OutPoint, Scheme, Tx, TxIn, TxKind, TxOut, Witness,
};

use crate::wallet::Signer;

/// Default cap on the inputs of one transfer (about 135 KB of inputs).
pub const DEFAULT_MAX_INPUTS: usize = 1_000;
/// The lowest dust limit [`BuildOptions::new`] picks.
pub const MIN_DUST_LIMIT: u64 = 546;
/// Bytes of a transfer with no inputs, no outputs and no data.
pub const BASE_SIZE: usize = 17;

/// The least fee that pays `rate` for `size` bytes, or [`BuildError::FeeOverflow`].
fn fee_at(rate: FeeRate, size: usize) -> Result<Amount, BuildError> {
    rate.fee_for(size).ok_or(BuildError::FeeOverflow { size, rate })
}

/// How to build a transfer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BuildOptions {
    /// The fee rate.
    pub fee_rate: FeeRate,
    /// Change below this is not paid back: the fee absorbs it.
    pub dust_limit: Amount,
    /// The most coins one transfer may spend (at least 1).
    pub max_inputs: usize,
}

impl BuildOptions {
    /// Options with `fee_rate`, [`DEFAULT_MAX_INPUTS`], and the dust limit
    /// [`default_dust_limit`]`(fee_rate)`.
    pub fn new(fee_rate: FeeRate) -> BuildOptions {
        BuildOptions { fee_rate, dust_limit: default_dust_limit(fee_rate), max_inputs: DEFAULT_MAX_INPUTS }
    }
}

/// Three times what an output costs to create (41 bytes) and later spend (a 134-byte secp256k1
/// input) at `rate`, and at least [`MIN_DUST_LIMIT`]: change smaller than that is not worth
/// keeping.
pub fn default_dust_limit(rate: FeeRate) -> Amount {
    let cost = rate.fee_for(TxOut::LEN + input_size(Scheme::Secp256k1)).map(|a| a.get()).unwrap_or(u64::MAX);
    Amount::new(cost.saturating_mul(3).max(MIN_DUST_LIMIT)).unwrap_or(Amount::MAX)
}

/// Encoded bytes of one input of `scheme`: outpoint, scheme byte, key, signature.
pub fn input_size(scheme: Scheme) -> usize {
    36 + 1 + scheme.pubkey_len() + 64
}

/// Encoded size of a transfer without data spending inputs of these schemes into `outputs`
/// outputs (equal to [`Tx::encoded_len`] of the signed transaction).
pub fn transfer_size(inputs: impl IntoIterator<Item = Scheme>, outputs: usize) -> usize {
    BASE_SIZE + inputs.into_iter().map(input_size).sum::<usize>() + outputs * TxOut::LEN
}

/// Why no transfer could be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The amount to send is zero.
    #[error("the amount to send is zero")]
    ZeroAmount,
    /// The coins do not cover the amount and the fee.
    #[error("insufficient funds: have {have}, need {need} (amount plus the fee of spending every coin)")]
    InsufficientFunds {
        /// The value of every coin offered.
        have: u64,
        /// The amount plus the fee of a transaction spending every coin (may exceed 2^53 − 1).
        need: u64,
    },
    /// The coins would cover the amount, but only with more inputs than allowed.
    #[error("paying {need} needs more than {max} inputs (the {max} largest coins hold {reachable})")]
    TooManyInputs {
        /// The input cap.
        max: usize,
        /// The value of the `max` largest coins.
        reachable: u64,
        /// The amount plus the fee with `max` inputs.
        need: u64,
    },
    /// The same outpoint is offered twice.
    #[error("coin {0} is listed twice")]
    DuplicateCoin(OutPoint),
    /// A coin is locked to a key the wallet does not hold.
    #[error("coin {outpoint} is locked to a {scheme} key {pubkey_hash} that this wallet does not hold")]
    NotOurs {
        /// The coin.
        outpoint: OutPoint,
        /// Its lock's scheme.
        scheme: Scheme,
        /// Its lock's key hash.
        pubkey_hash: Hash,
    },
    /// The values of the coins sum past 2^53 − 1.
    #[error("coin values sum past 2^53 - 1 at coin {0}")]
    ValueOverflow(OutPoint),
    /// The fee of `size` bytes at `rate` exceeds 2^53 − 1.
    #[error("the fee of {size} bytes at {rate} exceeds 2^53 - 1")]
    FeeOverflow {
        /// The size.
        size: usize,
        /// The rate.
        rate: FeeRate,
    },
    /// The options are unusable.
    #[error("invalid build options: {0}")]
    BadOptions(String),
    /// The size the fee was computed for differs from the encoded size (a bug in this crate).
    #[error(
        "internal error: the fee was computed for {computed} bytes but the transaction encodes to {encoded}"
    )]
    SizeMismatch {
        /// The size the selection computed.
        computed: usize,
        /// The encoded size.
        encoded: usize,
    },
    /// The signer would not sign for a lock it claimed (a broken [`Signer`]).
    #[error("the signer has no key for input {input} although it gave its public key")]
    SignerFailed {
        /// The input.
        input: usize,
    },
}

/// The coins chosen for a payment, with its fee and change.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Selection {
    /// The coins to spend, largest first.
    pub inputs: Vec<(OutPoint, TxOut)>,
    /// Their value.
    pub input_total: Amount,
    /// The amount paid to the recipient.
    pub amount: Amount,
    /// The fee: `input_total - amount - change`.
    pub fee: Amount,
    /// The change paid back, if any.
    pub change: Option<Amount>,
    /// The encoded size of the signed transaction.
    pub size: usize,
}

/// Chooses coins to pay `amount` at `options` (see the module docs). Only the coins' schemes
/// matter for sizes; ownership is checked by [`build_transfer`].
pub fn select_coins(
    coins: &[(OutPoint, TxOut)],
    amount: Amount,
    options: &BuildOptions,
) -> Result<Selection, BuildError> {
    if amount == Amount::ZERO {
        return Err(BuildError::ZeroAmount);
    }
    select(coins, Shape { amount, paid_outputs: 1, data: 0 }, options)
}

/// Chooses coins to pay only the fee of an application transaction carrying `data_len` bytes
/// of data and no output but the change (see the module docs): the selection's `amount` is
/// zero. Only the coins' schemes matter for sizes; ownership is checked by [`build_app_tx`].
pub fn select_fee(
    coins: &[(OutPoint, TxOut)],
    data_len: usize,
    options: &BuildOptions,
) -> Result<Selection, BuildError> {
    select(coins, Shape { amount: Amount::ZERO, paid_outputs: 0, data: data_len }, options)
}

/// What a transaction pays besides its fee and change: `amount` over `paid_outputs` outputs,
/// and `data` bytes of data.
#[derive(Clone, Copy)]
struct Shape {
    amount: Amount,
    paid_outputs: usize,
    data: usize,
}

impl Shape {
    /// The encoded size with inputs of `inputs_bytes` and `change` change outputs.
    fn size(&self, inputs_bytes: usize, change: usize) -> usize {
        BASE_SIZE + inputs_bytes + (self.paid_outputs + change) * TxOut::LEN + self.data
    }
}

fn select(
    coins: &[(OutPoint, TxOut)],
    shape: Shape,
    options: &BuildOptions,
) -> Result<Selection, BuildError> {
    if options.max_inputs == 0 {
        return Err(BuildError::BadOptions("max_inputs must be at least 1".into()));
    }
    let amount = shape.amount;
    let mut seen = HashSet::with_capacity(coins.len());
    let mut have = Amount::ZERO;
    for (op, out) in coins {
        if !seen.insert(*op) {
            return Err(BuildError::DuplicateCoin(*op));
        }
        have = have.checked_add(out.value).map_err(|_| BuildError::ValueOverflow(*op))?;
    }
    let mut sorted: Vec<&(OutPoint, TxOut)> = coins.iter().filter(|(_, o)| o.value > Amount::ZERO).collect();
    sorted.sort_by(|a, b| b.1.value.cmp(&a.1.value).then(a.0.cmp(&b.0)));

    let rate = options.fee_rate;
    let mut total = 0u64;
    let mut inputs_bytes = 0usize;
    for (n, (_, out)) in sorted.iter().enumerate() {
        if n == options.max_inputs {
            let need = amount.get() + fee_at(rate, shape.size(inputs_bytes, 0))?.get();
            // Would every coin do? Then only the cap is in the way.
            if funds_suffice(&sorted, shape, rate)? {
                return Err(BuildError::TooManyInputs { max: options.max_inputs, reachable: total, need });
            }
            break;
        }
        total += out.value.get();
        inputs_bytes += input_size(out.lock.scheme);
        let fee1 = fee_at(rate, shape.size(inputs_bytes, 0))?;
        if total >= amount.get() + fee1.get() {
            return finish(&sorted[..=n], total, shape, options, inputs_bytes);
        }
    }
    let all_inputs: usize = sorted.iter().map(|(_, o)| input_size(o.lock.scheme)).sum();
    Err(BuildError::InsufficientFunds {
        have: have.get(),
        need: amount.get() + fee_at(rate, shape.size(all_inputs, 0))?.get(),
    })
}

fn funds_suffice(sorted: &[&(OutPoint, TxOut)], shape: Shape, rate: FeeRate) -> Result<bool, BuildError> {
    let total: u64 = sorted.iter().map(|(_, o)| o.value.get()).sum();
    let inputs: usize = sorted.iter().map(|(_, o)| input_size(o.lock.scheme)).sum();
    Ok(total >= shape.amount.get() + fee_at(rate, shape.size(inputs, 0))?.get())
}

fn finish(
    chosen: &[&(OutPoint, TxOut)],
    total: u64,
    shape: Shape,
    options: &BuildOptions,
    inputs_bytes: usize,
) -> Result<Selection, BuildError> {
    let amount = shape.amount;
    let in_range = |v: u64| Amount::new(v).map_err(|_| BuildError::ValueOverflow(chosen[0].0));
    let size1 = shape.size(inputs_bytes, 0);
    let size2 = shape.size(inputs_bytes, 1);
    let fee2 = fee_at(options.fee_rate, size2)?.get();
    let change = total.checked_sub(amount.get()).and_then(|r| r.checked_sub(fee2));
    let (change, fee, size) = match change {
        Some(c) if c > 0 && c >= options.dust_limit.get() => (Some(in_range(c)?), fee2, size2),
        _ => (None, total - amount.get(), size1),
    };
    Ok(Selection {
        inputs: chosen.iter().map(|c| **c).collect(),
        input_total: in_range(total)?,
        amount,
        fee: in_range(fee)?,
        change,
        size,
    })
}

/// The chain a transaction is signed for.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Serialize, Deserialize)]
pub struct ChainContext {
    /// The chain's hash function (txids, pubkey hashes, sighashes).
    pub hash: HashKind,
    /// The chain id (genesis block hash), committed to by every signature.
    pub chain_id: Hash,
}

/// A payment to make.
#[derive(Clone, Copy, Debug)]
pub struct TransferRequest<'a> {
    /// The wallet's spendable coins, as the node lists them.
    pub coins: &'a [(OutPoint, TxOut)],
    /// The recipient.
    pub to: Lock,
    /// The amount the recipient gets (not zero).
    pub amount: Amount,
    /// Where change goes (usually a key of the wallet).
    pub change: Lock,
    /// Fee rate, dust limit, input cap.
    pub options: BuildOptions,
}

/// A signed transfer, ready to submit.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct BuiltTransfer {
    /// The transaction.
    pub tx: Tx,
    /// Its txid.
    pub txid: Hash,
    /// The fee it pays.
    pub fee: Amount,
    /// Its encoded size.
    pub size: usize,
    /// The change output's value (the last output), if any.
    pub change: Option<Amount>,
    /// The coins it spends, in input order.
    pub spent: Vec<(OutPoint, TxOut)>,
}

/// Selects coins, builds the transfer and signs every input with `signer` (see the module docs).
///
/// Every coin offered must be the signer's ([`BuildError::NotOurs`] otherwise), even those that
/// end up unselected: a foreign coin in the list is a caller's mistake worth reporting.
pub fn build_transfer(
    signer: &dyn Signer,
    chain: &ChainContext,
    req: &TransferRequest<'_>,
) -> Result<BuiltTransfer, BuildError> {
    all_ours(signer, req.coins)?;
    let sel = select_coins(req.coins, req.amount, &req.options)?;
    let paid = TxOut { value: req.amount, lock: req.to };
    assemble(signer, chain, sel, TxKind::TRANSFER, vec![paid], Vec::new(), req.change)
}

/// An application transaction to fund: its kind and data, paid for by the wallet's coins.
#[derive(Clone, Copy, Debug)]
pub struct AppTxRequest<'a> {
    /// The wallet's spendable coins, as the node lists them.
    pub coins: &'a [(OutPoint, TxOut)],
    /// The transaction kind (an application module's).
    pub kind: TxKind,
    /// The transaction's data (the module's message).
    pub data: &'a [u8],
    /// Where change goes (usually a key of the wallet).
    pub change: Lock,
    /// Fee rate, dust limit, input cap.
    pub options: BuildOptions,
}

/// Selects coins to pay the fee of an application transaction of `req.kind` carrying
/// `req.data` ([`select_fee`]), builds it with the change as its only output (none if the
/// change would be dust) and signs every input with `signer`. Every coin offered must be the
/// signer's, as for [`build_transfer`].
pub fn build_app_tx(
    signer: &dyn Signer,
    chain: &ChainContext,
    req: &AppTxRequest<'_>,
) -> Result<BuiltTransfer, BuildError> {
    if req.kind == TxKind::TRANSFER || req.kind == TxKind::COINBASE {
        return Err(BuildError::BadOptions(format!("kind {} is not an application kind", req.kind.0)));
    }
    all_ours(signer, req.coins)?;
    let sel = select_fee(req.coins, req.data.len(), &req.options)?;
    assemble(signer, chain, sel, req.kind, Vec::new(), req.data.to_vec(), req.change)
}

/// [`BuildError::NotOurs`] for the first coin `signer` holds no key for.
fn all_ours(signer: &dyn Signer, coins: &[(OutPoint, TxOut)]) -> Result<(), BuildError> {
    match coins.iter().find(|(_, out)| signer.pubkey_for(&out.lock).is_none()) {
        Some((op, out)) => Err(BuildError::NotOurs {
            outpoint: *op,
            scheme: out.lock.scheme,
            pubkey_hash: out.lock.pubkey_hash,
        }),
        None => Ok(()),
    }
}

/// The transaction of `sel`: its inputs, `paid` then the change output, `data`; signed.
fn assemble(
    signer: &dyn Signer,
    chain: &ChainContext,
    sel: Selection,
    kind: TxKind,
    mut outputs: Vec<TxOut>,
    data: Vec<u8>,
    change_lock: Lock,
) -> Result<BuiltTransfer, BuildError> {
    let mut inputs = Vec::with_capacity(sel.inputs.len());
    for (i, (op, out)) in sel.inputs.iter().enumerate() {
        let pubkey = signer.pubkey_for(&out.lock).ok_or(BuildError::SignerFailed { input: i })?;
        inputs.push(TxIn { prev: *op, witness: Witness { pubkey, signature: [0; 64] } });
    }
    if let Some(change) = sel.change {
        outputs.push(TxOut { value: change, lock: change_lock });
    }
    let mut tx = Tx { version: 1, kind, inputs, outputs, data };
    let txid = tx.txid(chain.hash);
    tx.sign_inputs(chain.hash, &chain.chain_id, |i, msg| {
        signer.sign_for(&sel.inputs[i].1.lock, msg).ok_or(BuildError::SignerFailed { input: i })
    })?;
    // The selection's size is computed from the shape; check it against the real encoding, so a
    // fee below the rate can never leave this function.
    let size = tx.encoded_len();
    if size != sel.size {
        return Err(BuildError::SizeMismatch { computed: sel.size, encoded: size });
    }
    Ok(BuiltTransfer { tx, txid, fee: sel.fee, size, change: sel.change, spent: sel.inputs })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn coin(i: u8, value: u64, scheme: Scheme) -> (OutPoint, TxOut) {
        (
            OutPoint { txid: Hash([i; 32]), index: u32::from(i) },
            TxOut { value: Amount::new(value).unwrap(), lock: Lock { scheme, pubkey_hash: Hash([i; 32]) } },
        )
    }

    fn opts(rate: u64) -> BuildOptions {
        BuildOptions::new(FeeRate::per_kb(Amount::new(rate).unwrap()))
    }

    #[test]
    fn fee_rounds_up() {
        let r = FeeRate::per_kb(Amount::new(1000).unwrap());
        assert_eq!(r.fee_for(191).unwrap().get(), 191);
        let r = FeeRate::per_kb(Amount::new(1).unwrap());
        assert_eq!(r.fee_for(191).unwrap().get(), 1);
        assert_eq!(r.fee_for(1000).unwrap().get(), 1);
        assert_eq!(r.fee_for(1001).unwrap().get(), 2);
        assert_eq!(FeeRate::ZERO.fee_for(5000).unwrap(), Amount::ZERO);
        assert!(FeeRate::per_kb(Amount::MAX).fee_for(2000).is_none());
    }

    #[test]
    fn sizes_match_the_protocol() {
        assert_eq!(transfer_size([Scheme::Ed25519], 1), 191);
        assert_eq!(transfer_size([Scheme::Secp256k1], 1), 192);
        assert_eq!(transfer_size([Scheme::Ed25519, Scheme::Secp256k1], 2), 17 + 133 + 134 + 82);
    }

    #[test]
    fn largest_first_with_change() {
        let coins = [
            coin(1, 1_000, Scheme::Ed25519),
            coin(2, 50_000, Scheme::Ed25519),
            coin(3, 20_000, Scheme::Ed25519),
        ];
        let s = select_coins(&coins, Amount::new(60_000).unwrap(), &opts(1000)).unwrap();
        assert_eq!(s.inputs.iter().map(|c| c.0.index).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(s.size, transfer_size([Scheme::Ed25519; 2], 2));
        assert_eq!(s.fee.get(), s.size as u64);
        assert_eq!(s.change.unwrap().get(), 70_000 - 60_000 - s.fee.get());
    }

    #[test]
    fn dust_change_goes_to_the_fee() {
        let coins = [coin(1, 10_000, Scheme::Ed25519)];
        let o = opts(1000);
        let fee1 = transfer_size([Scheme::Ed25519], 1) as u64;
        let amount = 10_000 - fee1 - 10;
        let s = select_coins(&coins, Amount::new(amount).unwrap(), &o).unwrap();
        assert_eq!(s.change, None);
        assert_eq!(s.fee.get(), fee1 + 10);
        assert_eq!(s.size, transfer_size([Scheme::Ed25519], 1));
    }

    #[test]
    fn errors() {
        let coins = [coin(1, 1_000, Scheme::Ed25519), coin(2, 2_000, Scheme::Secp256k1)];
        assert_eq!(select_coins(&coins, Amount::ZERO, &opts(0)), Err(BuildError::ZeroAmount));
        let e = select_coins(&coins, Amount::new(3_000).unwrap(), &opts(1000)).unwrap_err();
        let size = transfer_size([Scheme::Secp256k1, Scheme::Ed25519], 1) as u64;
        assert_eq!(e, BuildError::InsufficientFunds { have: 3_000, need: 3_000 + size });
        let mut o = opts(0);
        o.max_inputs = 1;
        let e = select_coins(&coins, Amount::new(2_500).unwrap(), &o).unwrap_err();
        assert_eq!(e, BuildError::TooManyInputs { max: 1, reachable: 2_000, need: 2_500 });
        o.max_inputs = 0;
        assert!(matches!(select_coins(&coins, Amount::new(1).unwrap(), &o), Err(BuildError::BadOptions(_))));
        let dup = [coins[0], coins[0]];
        assert_eq!(
            select_coins(&dup, Amount::new(1).unwrap(), &opts(0)),
            Err(BuildError::DuplicateCoin(coins[0].0))
        );
        let big = [coin(1, Amount::MAX.get(), Scheme::Ed25519), coin(2, 1, Scheme::Ed25519)];
        assert_eq!(
            select_coins(&big, Amount::new(1).unwrap(), &opts(0)),
            Err(BuildError::ValueOverflow(big[1].0))
        );
        assert!(matches!(
            select_coins(&[], Amount::new(1).unwrap(), &opts(0)),
            Err(BuildError::InsufficientFunds { have: 0, need: 1 })
        ));
    }

    #[test]
    fn zero_value_coins_are_never_spent() {
        let coins = [coin(1, 0, Scheme::Ed25519), coin(2, 5_000, Scheme::Ed25519)];
        let s = select_coins(&coins, Amount::new(100).unwrap(), &opts(0)).unwrap();
        assert_eq!(s.inputs.len(), 1);
        assert_eq!(s.inputs[0].0.index, 2);
    }

    #[test]
    fn an_application_transaction_pays_only_its_fee_with_data_counted() {
        let coins = [coin(1, 1_000, Scheme::Ed25519), coin(2, 50_000, Scheme::Ed25519)];
        let o = opts(1000);
        let s = select_fee(&coins, 300, &o).unwrap();
        assert_eq!(s.inputs.iter().map(|c| c.0.index).collect::<Vec<_>>(), [2]);
        assert_eq!(s.amount, Amount::ZERO);
        // One input, the change as the only output, and the data.
        assert_eq!(s.size, BASE_SIZE + input_size(Scheme::Ed25519) + TxOut::LEN + 300);
        assert_eq!(s.fee.get(), s.size as u64);
        assert_eq!(s.change.unwrap().get(), 50_000 - s.fee.get());
        // A coin that covers only the fee leaves no change and no output.
        let small = [coin(3, 600, Scheme::Ed25519)];
        let s = select_fee(&small, 300, &o).unwrap();
        assert_eq!((s.change, s.fee.get()), (None, 600));
        assert_eq!(s.size, BASE_SIZE + input_size(Scheme::Ed25519) + 300);
        // Too little for the fee of the data.
        let e = select_fee(&[coin(4, 100, Scheme::Ed25519)], 300, &o).unwrap_err();
        let need = (BASE_SIZE + input_size(Scheme::Ed25519) + 300) as u64;
        assert_eq!(e, BuildError::InsufficientFunds { have: 100, need });
    }
}
