//! The error model: one variant per consensus rule.
//!
//! [`TxRule`] is a transaction rule, carrying the input or output index it concerns;
//! [`BlockError`] is a block rule, or a [`TxRule`] located in the block (tx index, txid).
//! [`BlockRejection`] adds the block's height and hash, and prints in the form
//! `block <height> <hash>: tx <index> <txid>: <rule>: <detail>`.
//! [`TxRule::rule`] and [`BlockError::rule`] give a stable kebab-case name per rule, used in
//! messages and by tools; nothing matches on message strings.

use std::fmt;

use scalechain_types::{Amount, Hash, OutPoint, Scheme, Target};

use crate::app::AppError;

/// A transaction rule that failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxRule {
    /// Only version 1 is defined.
    #[error("version {0} is not supported")]
    UnsupportedVersion(u32),
    /// A transfer needs at least one input.
    #[error("a transfer needs at least one input")]
    NoInputs,
    /// A transfer needs at least one output.
    #[error("a transfer needs at least one output")]
    NoOutputs,
    /// A coinbase has no inputs.
    #[error("a coinbase has {0} inputs; it must have none")]
    CoinbaseWithInputs(usize),
    /// A coinbase's data must start with its height.
    #[error("coinbase data is {0} bytes; it must start with the 8-byte height")]
    CoinbaseDataTooShort(usize),
    /// No application module handles this kind.
    #[error("no module handles transaction kind {0}")]
    UnknownKind(u8),
    /// Too many inputs.
    #[error("{count} inputs exceed the limit {max}")]
    TooManyInputs {
        /// Inputs present.
        count: u64,
        /// The limit.
        max: u64,
    },
    /// Too many outputs.
    #[error("{count} outputs exceed the limit {max}")]
    TooManyOutputs {
        /// Outputs present.
        count: u64,
        /// The limit.
        max: u64,
    },
    /// The encoding is too large.
    #[error("size {size} bytes exceeds the limit {max}")]
    TooLarge {
        /// Encoded size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The data field is too large.
    #[error("data of {size} bytes exceeds the limit {max}")]
    DataTooLarge {
        /// Data size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// Two inputs of one transaction spend the same output.
    #[error("input {input} spends {prev}, already spent by input {first} of the same transaction")]
    DuplicateInput {
        /// The later input.
        input: usize,
        /// The earlier input.
        first: usize,
        /// The outpoint.
        prev: OutPoint,
    },
    /// An input's witness uses a scheme the chain does not allow.
    #[error("input {input} uses scheme {scheme}, which this chain does not allow")]
    InputSchemeNotAllowed {
        /// The input.
        input: usize,
        /// Its scheme.
        scheme: Scheme,
    },
    /// An output's lock uses a scheme the chain does not allow.
    #[error("output {output} is locked to scheme {scheme}, which this chain does not allow")]
    OutputSchemeNotAllowed {
        /// The output.
        output: usize,
        /// Its scheme.
        scheme: Scheme,
    },
    /// The outputs' values sum past 2^53 − 1.
    #[error("output values overflow at output {output}")]
    OutputOverflow {
        /// The output at which the sum overflowed.
        output: usize,
    },
    /// The spent output does not exist or is already spent.
    #[error("input {input} spends {prev}, which is not an unspent output")]
    MissingInput {
        /// The input.
        input: usize,
        /// The outpoint.
        prev: OutPoint,
    },
    /// The spent output is created by a later transaction of the same block.
    #[error("input {input} spends {prev}, created by tx {creator} later in the same block")]
    SpendsLaterOutput {
        /// The input.
        input: usize,
        /// The outpoint.
        prev: OutPoint,
        /// Index of the creating transaction.
        creator: usize,
    },
    /// Another transaction of the same block already spends this output.
    #[error("input {input} spends {prev}, already spent by tx {first_tx} of the same block")]
    DoubleSpendInBlock {
        /// The input.
        input: usize,
        /// The outpoint.
        prev: OutPoint,
        /// The transaction that spent it first.
        first_tx: usize,
    },
    /// A coinbase output spent before maturity.
    #[error(
        "input {input} spends coinbase output {prev} of height {created}, spendable from height {mature}"
    )]
    ImmatureCoinbase {
        /// The input.
        input: usize,
        /// The outpoint.
        prev: OutPoint,
        /// Height of the coinbase.
        created: u64,
        /// First height at which it may be spent.
        mature: u64,
    },
    /// The witness's scheme differs from the lock's.
    #[error("input {input} signs with {got} but the output is locked to {expected}")]
    SchemeMismatch {
        /// The input.
        input: usize,
        /// The lock's scheme.
        expected: Scheme,
        /// The witness's scheme.
        got: Scheme,
    },
    /// `H(pubkey)` differs from the lock's pubkey hash.
    #[error("input {input}: the key does not hash to the output's lock")]
    WrongKey {
        /// The input.
        input: usize,
    },
    /// The signature does not verify.
    #[error("input {input}: signature invalid ({reason})")]
    BadSignature {
        /// The input.
        input: usize,
        /// What the verifier said.
        reason: scalechain_types::SigError,
    },
    /// The inputs' values sum past 2^53 − 1.
    #[error("input values overflow at input {input}")]
    InputOverflow {
        /// The input at which the sum overflowed.
        input: usize,
    },
    /// Outputs are worth more than inputs.
    #[error("outputs {outputs} exceed inputs {inputs}")]
    OutputsExceedInputs {
        /// Sum of inputs.
        inputs: Amount,
        /// Sum of outputs.
        outputs: Amount,
    },
    /// An output would replace an unspent output with the same outpoint (a repeated txid).
    #[error("output {output} would overwrite the unspent output {op}")]
    OverwritesUnspent {
        /// The output.
        output: usize,
        /// The outpoint.
        op: OutPoint,
    },
    /// The application module rejected the transaction.
    #[error("{0}")]
    App(AppError),
    /// A coinbase offered outside a block (to the mempool or to `verify_txs`).
    #[error("a coinbase is only valid as the first transaction of a block")]
    LooseCoinbase,
}

impl TxRule {
    /// A stable name for the rule.
    pub fn rule(&self) -> &'static str {
        match self {
            TxRule::UnsupportedVersion(_) => "unsupported-version",
            TxRule::NoInputs => "no-inputs",
            TxRule::NoOutputs => "no-outputs",
            TxRule::CoinbaseWithInputs(_) => "coinbase-with-inputs",
            TxRule::CoinbaseDataTooShort(_) => "coinbase-data",
            TxRule::UnknownKind(_) => "unknown-kind",
            TxRule::TooManyInputs { .. } => "too-many-inputs",
            TxRule::TooManyOutputs { .. } => "too-many-outputs",
            TxRule::TooLarge { .. } => "tx-too-large",
            TxRule::DataTooLarge { .. } => "data-too-large",
            TxRule::DuplicateInput { .. } => "duplicate-input",
            TxRule::InputSchemeNotAllowed { .. } => "input-scheme-not-allowed",
            TxRule::OutputSchemeNotAllowed { .. } => "output-scheme-not-allowed",
            TxRule::OutputOverflow { .. } => "output-overflow",
            TxRule::MissingInput { .. } => "missing-input",
            TxRule::SpendsLaterOutput { .. } => "spends-later-output",
            TxRule::DoubleSpendInBlock { .. } => "double-spend-in-block",
            TxRule::ImmatureCoinbase { .. } => "immature-coinbase",
            TxRule::SchemeMismatch { .. } => "scheme-mismatch",
            TxRule::WrongKey { .. } => "wrong-key",
            TxRule::BadSignature { .. } => "bad-signature",
            TxRule::InputOverflow { .. } => "input-overflow",
            TxRule::OutputsExceedInputs { .. } => "outputs-exceed-inputs",
            TxRule::OverwritesUnspent { .. } => "overwrites-unspent",
            TxRule::App(e) => e.rule,
            TxRule::LooseCoinbase => "loose-coinbase",
        }
    }
}

/// A block rule that failed (or a transaction rule, located in the block).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BlockError {
    /// Only header version 1 is defined.
    #[error("header version {0} is not supported")]
    UnsupportedVersion(u32),
    /// The header hash does not meet its target.
    #[error("header hash {hash} does not meet target {target}")]
    BadProofOfWork {
        /// The header hash.
        hash: Hash,
        /// The target in the header.
        target: Target,
    },
    /// The header's target is not the one the retarget rule gives.
    #[error("target {got} differs from the required {expected}")]
    BadTarget {
        /// Required target.
        expected: Target,
        /// Target in the header.
        got: Target,
    },
    /// The Merkle root does not match the transactions.
    #[error("merkle root {got} differs from the transactions' root {computed}")]
    BadMerkleRoot {
        /// Root computed from the transactions.
        computed: Hash,
        /// Root in the header.
        got: Hash,
    },
    /// The parent is not the block it should be.
    #[error("prev_hash {got} is not the parent {expected}")]
    BadPrev {
        /// The parent's hash.
        expected: Hash,
        /// The header's prev_hash.
        got: Hash,
    },
    /// Height is not parent's + 1.
    #[error("height {got}, expected {expected}")]
    BadHeight {
        /// Parent height + 1.
        expected: u64,
        /// Height in the header.
        got: u64,
    },
    /// Time not after the median of the previous blocks.
    #[error("time {time} is not after the median time past {mtp}")]
    TimeTooOld {
        /// Header time.
        time: u64,
        /// Median time past.
        mtp: u64,
    },
    /// Time too far in the future.
    #[error("time {time} is more than the allowed drift past now ({max})")]
    TimeTooNew {
        /// Header time.
        time: u64,
        /// The latest time accepted.
        max: u64,
    },
    /// No transactions.
    #[error("block has no transactions")]
    NoTransactions,
    /// Too many transactions.
    #[error("{count} transactions exceed the limit {max}")]
    TooManyTxs {
        /// Count.
        count: u64,
        /// Limit.
        max: u64,
    },
    /// Block encoding too large.
    #[error("block size {size} bytes exceeds the limit {max}")]
    TooLarge {
        /// Size.
        size: u64,
        /// Limit.
        max: u64,
    },
    /// The first transaction is not a coinbase.
    #[error("first transaction is not a coinbase")]
    FirstNotCoinbase,
    /// A coinbase elsewhere than first.
    #[error("transaction {0} is a second coinbase")]
    ExtraCoinbase(usize),
    /// The coinbase carries the wrong height.
    #[error("coinbase carries height {got}, block height is {expected}")]
    CoinbaseHeight {
        /// Block height.
        expected: u64,
        /// Height in the coinbase data.
        got: u64,
    },
    /// The coinbase pays more than subsidy + fees.
    #[error("coinbase pays {paid}, more than subsidy + fees = {max}")]
    CoinbaseOverpay {
        /// Allowed.
        max: Amount,
        /// Paid.
        paid: Amount,
    },
    /// Subsidy + fees overflow (cannot happen with sane parameters; checked anyway).
    #[error("fees overflow")]
    FeeOverflow,
    /// Two transactions with the same txid.
    #[error("transaction {index} repeats txid {txid}")]
    DuplicateTx {
        /// Index of the repeat.
        index: usize,
        /// The txid.
        txid: Hash,
    },
    /// A transaction rule failed.
    #[error("tx {index} {txid}: {rule}: {error}", rule = error.rule())]
    Tx {
        /// Index of the transaction in the block.
        index: usize,
        /// Its txid.
        txid: Hash,
        /// The rule.
        error: TxRule,
    },
}

impl BlockError {
    /// A stable name for the rule.
    pub fn rule(&self) -> &'static str {
        match self {
            BlockError::UnsupportedVersion(_) => "unsupported-header-version",
            BlockError::BadProofOfWork { .. } => "bad-pow",
            BlockError::BadTarget { .. } => "bad-target",
            BlockError::BadMerkleRoot { .. } => "bad-merkle-root",
            BlockError::BadPrev { .. } => "bad-prev",
            BlockError::BadHeight { .. } => "bad-height",
            BlockError::TimeTooOld { .. } => "time-too-old",
            BlockError::TimeTooNew { .. } => "time-too-new",
            BlockError::NoTransactions => "no-transactions",
            BlockError::TooManyTxs { .. } => "too-many-txs",
            BlockError::TooLarge { .. } => "block-too-large",
            BlockError::FirstNotCoinbase => "first-not-coinbase",
            BlockError::ExtraCoinbase(_) => "extra-coinbase",
            BlockError::CoinbaseHeight { .. } => "coinbase-height",
            BlockError::CoinbaseOverpay { .. } => "coinbase-overpay",
            BlockError::FeeOverflow => "fee-overflow",
            BlockError::DuplicateTx { .. } => "duplicate-tx",
            BlockError::Tx { error, .. } => error.rule(),
        }
    }

    /// The transaction rule, if this is one.
    pub fn tx_rule(&self) -> Option<&TxRule> {
        match self {
            BlockError::Tx { error, .. } => Some(error),
            _ => None,
        }
    }

    /// Is this failure the block's own fault (so its sender misbehaved), rather than something
    /// that may pass later? Only a block too far in the future may become valid with time.
    pub fn is_permanent(&self) -> bool {
        !matches!(self, BlockError::TimeTooNew { .. })
    }
}

/// A block error with the block's height and hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct BlockRejection {
    /// The block's height (as its header claims).
    pub height: u64,
    /// The block's hash.
    pub hash: Hash,
    /// What failed.
    pub error: BlockError,
}

impl fmt::Display for BlockRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {} {}: ", self.height, self.hash)?;
        match &self.error {
            BlockError::Tx { index, txid, error } => {
                write!(f, "tx {index} {txid}: {}: {error}", error.rule())
            }
            e => write!(f, "{}: {e}", e.rule()),
        }
    }
}
