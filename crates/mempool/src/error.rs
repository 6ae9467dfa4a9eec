//! Why the pool refused a transaction: one variant per policy rule, plus the consensus rule
//! that failed. [`MempoolError::reason`] gives each a stable kebab-case name (for metrics,
//! logs and peers); nothing matches on message strings.

use scalechain_consensus::TxRule;
use scalechain_types::{Amount, Hash, OutPoint};

/// A transaction the pool refused. Refusing one changes nothing in the pool.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MempoolError {
    /// The pool already holds this txid, or the same batch offered it earlier.
    #[error("transaction {txid} is already known")]
    AlreadyKnown {
        /// The txid.
        txid: Hash,
    },
    /// An input spends an output that a pooled transaction already spends (no replacement).
    #[error("input {input} spends {prev}, already spent by pooled transaction {pooled}")]
    Conflict {
        /// The input of the refused transaction.
        input: usize,
        /// The outpoint both spend.
        prev: OutPoint,
        /// The pooled transaction that spends it.
        pooled: Hash,
    },
    /// An application module says the transaction holds a key that a pooled transaction
    /// already holds (e.g. a voter's second ballot for one election; no replacement).
    #[error("application key {key} of kind {kind} is already held by pooled transaction {pooled}")]
    AppConflict {
        /// The transaction kind (the module) the key belongs to.
        kind: u8,
        /// The key both claim ([`scalechain_consensus::AppModule::conflict_keys`]).
        key: Hash,
        /// The pooled transaction that holds it.
        pooled: Hash,
    },
    /// With its unconfirmed ancestors the transaction would form a chain longer than allowed.
    #[error("with its unconfirmed ancestors the transaction would make more than {max} pooled transactions")]
    TooManyAncestors {
        /// The limit (the transaction counts itself).
        max: usize,
    },
    /// A pooled ancestor would get more descendants than allowed.
    #[error("pooled ancestor {ancestor} would have {count} transactions in its descendant set, over {max}")]
    TooManyDescendants {
        /// The ancestor whose limit the transaction breaks.
        ancestor: Hash,
        /// The size its descendant set (itself included) would reach.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// The fee per 1,000 bytes is below the pool's minimum.
    #[error("fee {fee} for {size} bytes is {rate} per 1000 bytes, below the minimum {min}")]
    LowFee {
        /// The fee paid.
        fee: Amount,
        /// The encoded size.
        size: u64,
        /// Fee per 1,000 bytes (rounded down).
        rate: u64,
        /// The minimum.
        min: u64,
    },
    /// A fee-less application transaction would take the pool's fee-less space past its limit.
    #[error("{size} bytes of fee-less application transaction would take the pool's {held} such bytes past the limit {max}")]
    FeeLessFull {
        /// The transaction's encoded size.
        size: u64,
        /// Fee-less bytes already held.
        held: u64,
        /// The limit ([`crate::MempoolConfig::max_fee_less_bytes`]).
        max: u64,
    },
    /// A fee-less application transaction would take its group's share of the fee-less space
    /// past its limit.
    #[error("{size} bytes of fee-less application transaction would take the {held} such bytes of its group {group} past the limit {max}")]
    FeeLessGroupFull {
        /// The transaction's encoded size.
        size: u64,
        /// Its group ([`crate::PoolEntry::fee_less`]).
        group: Hash,
        /// Bytes the group already holds.
        held: u64,
        /// The limit ([`crate::MempoolConfig::max_fee_less_group_bytes`]).
        max: u64,
    },
    /// An output is worth less than the dust limit.
    #[error("output {output} of {value} is below the dust limit {limit}")]
    Dust {
        /// The output.
        output: usize,
        /// Its value.
        value: Amount,
        /// The limit.
        limit: Amount,
    },
    /// The encoding is larger than the pool's policy allows (below the consensus limit).
    #[error("size {size} bytes exceeds the pool's limit {max}")]
    TooLarge {
        /// Encoded size.
        size: u64,
        /// The policy limit.
        max: u64,
    },
    /// The pool is full and the transaction pays no more per byte than what it would evict.
    #[error(
        "pool is full: fee rate {rate} per 1000 bytes does not beat the lowest pooled package ({lowest})"
    )]
    PoolFull {
        /// The transaction's fee per 1,000 bytes.
        rate: u64,
        /// Fee per 1,000 bytes of the pooled package it would have to displace (the
        /// transaction's own rate when the pool cannot make room at all).
        lowest: u64,
    },
    /// A consensus rule failed ([`TxRule::rule`] is the reason).
    #[error("{rule}: {0}", rule = .0.rule())]
    Consensus(TxRule),
    /// Not a refusal: the transaction is held in the orphan pool until the transaction whose
    /// output it spends arrives. Only [`crate::TxVerdict::into_result`] gives it, to callers
    /// that take a `Result`.
    #[error(
        "input {input} spends {prev}, whose transaction is unknown here: held as an orphan until it arrives"
    )]
    Orphan {
        /// The first input whose output is unknown.
        input: usize,
        /// What it spends.
        prev: OutPoint,
    },
}

impl MempoolError {
    /// A stable kebab-case name: the policy rule, or the consensus rule's [`TxRule::rule`].
    pub fn reason(&self) -> &'static str {
        match self {
            MempoolError::AlreadyKnown { .. } => "already-known",
            MempoolError::Conflict { .. } => "conflict",
            MempoolError::AppConflict { .. } => "app-conflict",
            MempoolError::TooManyAncestors { .. } => "too-many-ancestors",
            MempoolError::TooManyDescendants { .. } => "too-many-descendants",
            MempoolError::LowFee { .. } => "low-fee",
            MempoolError::FeeLessFull { .. } => "fee-less-full",
            MempoolError::FeeLessGroupFull { .. } => "fee-less-group-full",
            MempoolError::Dust { .. } => "dust",
            MempoolError::TooLarge { .. } => "too-large",
            MempoolError::PoolFull { .. } => "pool-full",
            MempoolError::Consensus(rule) => rule.rule(),
            MempoolError::Orphan { .. } => "orphan",
        }
    }

    /// True for a refusal for want of room (the pool, its fee-less space or a group's share is
    /// full; a chain of unconfirmed transactions is at its limit): the same transaction may be
    /// admitted once a block has taken pooled transactions out.
    pub fn may_fit_later(&self) -> bool {
        matches!(
            self,
            MempoolError::PoolFull { .. }
                | MempoolError::FeeLessFull { .. }
                | MempoolError::FeeLessGroupFull { .. }
                | MempoolError::TooManyAncestors { .. }
                | MempoolError::TooManyDescendants { .. }
        )
    }

    /// The consensus rule, if that is what failed.
    pub fn tx_rule(&self) -> Option<&TxRule> {
        match self {
            MempoolError::Consensus(rule) => Some(rule),
            _ => None,
        }
    }
}

impl From<TxRule> for MempoolError {
    fn from(rule: TxRule) -> Self {
        MempoolError::Consensus(rule)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_stable_and_distinct() {
        let h = Hash([1; 32]);
        let op = OutPoint { txid: h, index: 2 };
        let all = [
            MempoolError::AlreadyKnown { txid: h },
            MempoolError::Conflict { input: 0, prev: op, pooled: h },
            MempoolError::AppConflict { kind: 2, key: h, pooled: h },
            MempoolError::TooManyAncestors { max: 25 },
            MempoolError::TooManyDescendants { ancestor: h, count: 26, max: 25 },
            MempoolError::LowFee { fee: Amount::ZERO, size: 100, rate: 0, min: 1 },
            MempoolError::FeeLessFull { size: 1, held: 2, max: 2 },
            MempoolError::FeeLessGroupFull { size: 1, group: Hash([0; 32]), held: 2, max: 2 },
            MempoolError::Dust { output: 0, value: Amount::ZERO, limit: Amount::ZERO },
            MempoolError::TooLarge { size: 2, max: 1 },
            MempoolError::PoolFull { rate: 1, lowest: 2 },
            MempoolError::Consensus(TxRule::NoInputs),
            MempoolError::Orphan { input: 0, prev: op },
        ];
        let names: Vec<&str> = all.iter().map(MempoolError::reason).collect();
        assert_eq!(
            names,
            [
                "already-known",
                "conflict",
                "app-conflict",
                "too-many-ancestors",
                "too-many-descendants",
                "low-fee",
                "fee-less-full",
                "fee-less-group-full",
                "dust",
                "too-large",
                "pool-full",
                "no-inputs",
                "orphan"
            ]
        );
        for (i, a) in names.iter().enumerate() {
            assert!(!names[..i].contains(a), "{a} repeats");
        }
        let later: Vec<&str> = all.iter().filter(|e| e.may_fit_later()).map(MempoolError::reason).collect();
        assert_eq!(
            later,
            [
                "too-many-ancestors",
                "too-many-descendants",
                "fee-less-full",
                "fee-less-group-full",
                "pool-full"
            ]
        );
    }

    #[test]
    fn messages_name_what_and_where() {
        let pooled = Hash([9; 32]);
        let prev = OutPoint { txid: Hash([3; 32]), index: 4 };
        let e = MempoolError::Conflict { input: 1, prev, pooled };
        let msg = e.to_string();
        assert!(msg.contains("input 1"), "{msg}");
        assert!(msg.contains(&prev.to_string()), "{msg}");
        assert!(msg.contains(&pooled.to_string()), "{msg}");
        let key = Hash([5; 32]);
        let msg = MempoolError::AppConflict { kind: 2, key, pooled }.to_string();
        assert!(msg.contains(&key.to_string()) && msg.contains(&pooled.to_string()), "{msg}");
        assert!(msg.contains("kind 2"), "{msg}");
        let c = MempoolError::from(TxRule::WrongKey { input: 3 });
        assert_eq!(c.reason(), "wrong-key");
        assert!(c.to_string().starts_with("wrong-key: input 3"), "{c}");
        assert_eq!(c.tx_rule(), Some(&TxRule::WrongKey { input: 3 }));
    }
}
