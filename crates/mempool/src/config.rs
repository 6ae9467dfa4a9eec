//! Pool limits and policy.

use scalechain_types::Amount;

use crate::orphan::OrphanConfig;

/// Limits and policy of a pool. Every limit is enforced on top of the consensus rules.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MempoolConfig {
    /// Most bytes (sum of transaction encodings) held; past it the lowest fee rates leave.
    pub max_bytes: u64,
    /// Most transactions held; past it the lowest fee rates leave.
    pub max_txs: usize,
    /// Longest chain of unconfirmed transactions a new one may join, itself included.
    pub max_ancestors: usize,
    /// Largest descendant set (itself included) any pooled transaction may reach.
    pub max_descendants: usize,
    /// Minimum fee per 1,000 bytes of a transaction's encoding.
    pub min_fee_rate: u64,
    /// Most bytes of fee-less application transactions held below `min_fee_rate`. Such a
    /// transaction ([`crate::PoolEntry::fee_less`]: one with no inputs and no fee that its
    /// module lets ride fee-less, such as a ballot) has no coins to pay a fee with; its
    /// module's own rules (a ballot needs the election authority's token, and a voter holds
    /// one key in the pool) bound how many exist, and this bounds the memory they take. 0
    /// refuses them below the minimum.
    pub max_fee_less_bytes: u64,
    /// Most of those bytes one fee-less group (the ballots of one election) may hold, so that
    /// one group cannot crowd out the others: filling the budget takes
    /// `max_fee_less_bytes / max_fee_less_group_bytes` groups (elections, each paying a fee).
    pub max_fee_less_group_bytes: u64,
    /// Outputs worth less are refused.
    pub dust_limit: Amount,
    /// Largest transaction encoding the pool takes (the consensus limit still applies).
    pub max_tx_bytes: u64,
    /// Wtxids the signature cache remembers (first in, first out).
    pub sig_cache_capacity: usize,
    /// Limits of the orphan pool ([`crate::Mempool::offer`]).
    pub orphans: OrphanConfig,
    /// Transactions that left unconfirmed the log remembers ([`crate::Mempool::removed`]);
    /// 0 keeps none.
    pub removed_log: usize,
    /// Study only: readers take the writers' lock and read under it (a pool with one lock for
    /// everything, seed 003's baseline) instead of loading the published snapshot lock-free.
    pub single_lock: bool,
}

impl Default for MempoolConfig {
    /// 64 MiB or 100,000 transactions, chains of 25, 100 per 1,000 bytes, 4 MiB of fee-less
    /// application transactions and 1 MiB of one group, dust below 546, transactions up to 100,000 bytes, 200,000
    /// cached signature verdicts, the orphan pool's defaults ([`OrphanConfig`]), a log of the
    /// last 50,000 transactions that left unconfirmed, lock-free reads.
    fn default() -> Self {
        MempoolConfig {
            max_bytes: 64 << 20,
            max_txs: 100_000,
            max_ancestors: 25,
            max_descendants: 25,
            min_fee_rate: 100,
            max_fee_less_bytes: 4 << 20,
            max_fee_less_group_bytes: 1 << 20,
            dust_limit: Amount::new(546).unwrap_or(Amount::ZERO),
            max_tx_bytes: 100_000,
            sig_cache_capacity: 200_000,
            orphans: OrphanConfig::default(),
            removed_log: 50_000,
            single_lock: false,
        }
    }
}
