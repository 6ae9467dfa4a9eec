//! Pool limits and policy, and the exact fee-rate arithmetic they use.

use std::cmp::Ordering;

use scalechain_types::Amount;

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
    /// transaction ([`crate::PoolEntry::is_fee_less`]: an application kind with no inputs, such
    /// as a ballot) has no coins to pay a fee with; its module's own rules (a ballot needs the
    /// election authority's token, and a voter holds one key in the pool) bound how many exist,
    /// and this bounds the memory they take. 0 refuses them below the minimum.
    pub max_fee_less_bytes: u64,
    /// Outputs worth less are refused.
    pub dust_limit: Amount,
    /// Largest transaction encoding the pool takes (the consensus limit still applies).
    pub max_tx_bytes: u64,
    /// Wtxids the signature cache remembers (first in, first out).
    pub sig_cache_capacity: usize,
}

impl Default for MempoolConfig {
    /// 64 MiB or 100,000 transactions, chains of 25, 100 per 1,000 bytes, 4 MiB of fee-less
    /// application transactions, dust below 546, transactions up to 100,000 bytes, 200,000
    /// cached signature verdicts.
    fn default() -> Self {
        MempoolConfig {
            max_bytes: 64 << 20,
            max_txs: 100_000,
            max_ancestors: 25,
            max_descendants: 25,
            min_fee_rate: 100,
            max_fee_less_bytes: 4 << 20,
            dust_limit: Amount::new(546).unwrap_or(Amount::ZERO),
            max_tx_bytes: 100_000,
            sig_cache_capacity: 200_000,
        }
    }
}

/// A fee over a size, compared exactly (by cross-multiplication, no rounding).
#[derive(Clone, Copy, Debug)]
pub struct FeeRate {
    /// Fee (sum over a package when it describes one).
    pub fee: u64,
    /// Bytes (never zero for a real transaction).
    pub size: u64,
}

impl FeeRate {
    /// `fee` over `size`; a zero size counts as one byte.
    pub fn new(fee: u64, size: u64) -> FeeRate {
        FeeRate { fee, size: size.max(1) }
    }

    /// Fee per 1,000 bytes, rounded down (for messages and metrics).
    pub fn per_kb(self) -> u64 {
        let v = u128::from(self.fee) * 1000 / u128::from(self.size.max(1));
        u64::try_from(v).unwrap_or(u64::MAX)
    }

    /// Is the rate below `min` per 1,000 bytes?
    pub fn below_per_kb(self, min: u64) -> bool {
        u128::from(self.fee) * 1000 < u128::from(min) * u128::from(self.size)
    }
}

impl PartialEq for FeeRate {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for FeeRate {}

impl PartialOrd for FeeRate {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for FeeRate {
    fn cmp(&self, other: &Self) -> Ordering {
        (u128::from(self.fee) * u128::from(other.size)).cmp(&(u128::from(other.fee) * u128::from(self.size)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_compare_exactly() {
        assert!(FeeRate::new(1, 3) < FeeRate::new(1, 2));
        assert_eq!(FeeRate::new(2, 6), FeeRate::new(1, 3));
        // 1/3 and 333/1000 differ although they round alike.
        assert!(FeeRate::new(333, 1000) < FeeRate::new(1, 3));
        assert!(FeeRate::new(u64::MAX, 1) > FeeRate::new(u64::MAX - 1, 1));
        assert_eq!(FeeRate::new(5, 0).size, 1);
    }

    #[test]
    fn per_kb_and_minimum() {
        let r = FeeRate::new(100, 250);
        assert_eq!(r.per_kb(), 400);
        assert!(!r.below_per_kb(400));
        assert!(r.below_per_kb(401));
        assert!(!FeeRate::new(0, 10).below_per_kb(0));
    }
}
