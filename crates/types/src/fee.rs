//! Fee rates: a fee over a size in bytes, compared exactly.
//!
//! One type serves both sides of fees: the rate a transaction pays ([`FeeRate::of`]: its fee
//! over its encoded size), and a rate set by policy or by a wallet ([`FeeRate::per_kb`]: so
//! much per 1,000 bytes). Rates compare by cross-multiplication in 128 bits, so `1/3` and
//! `333/1000` differ although they round alike, and nothing overflows.

use std::cmp::Ordering;
use std::fmt;

use crate::amount::Amount;

/// A fee over a size, compared exactly.
#[derive(Clone, Copy, Debug)]
pub struct FeeRate {
    fee: u64,
    size: u64,
}

impl FeeRate {
    /// No fee.
    pub const ZERO: FeeRate = FeeRate { fee: 0, size: 1000 };

    /// The rate of paying `fee` for `size` bytes; a zero size counts as one byte.
    pub fn of(fee: u64, size: u64) -> FeeRate {
        FeeRate { fee, size: size.max(1) }
    }

    /// A rate of `per_1000_bytes` per 1,000 bytes.
    pub const fn per_kb(per_1000_bytes: Amount) -> FeeRate {
        FeeRate { fee: per_1000_bytes.get(), size: 1000 }
    }

    /// The fee this rate describes (a package's sum when it describes one).
    pub fn fee(self) -> u64 {
        self.fee
    }

    /// The size this rate describes, in bytes (never zero).
    pub fn size(self) -> u64 {
        self.size
    }

    /// The rate per 1,000 bytes, rounded down (exact for [`FeeRate::per_kb`] rates).
    pub fn per_1000_bytes(self) -> u64 {
        let v = u128::from(self.fee) * 1000 / u128::from(self.size);
        u64::try_from(v).unwrap_or(u64::MAX)
    }

    /// The least fee that pays this rate for `size` bytes, `ceil(size × fee / self.size)`, or
    /// `None` if it is not an amount (beyond 2^53 − 1).
    pub fn fee_for(self, size: usize) -> Option<Amount> {
        let fee = (size as u128 * u128::from(self.fee)).div_ceil(u128::from(self.size));
        u64::try_from(fee).ok().and_then(|f| Amount::new(f).ok())
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

impl fmt::Display for FeeRate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} per 1000 bytes", self.per_1000_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amount(v: u64) -> Amount {
        Amount::new(v).unwrap_or(Amount::MAX)
    }

    #[test]
    fn rates_compare_exactly() {
        assert!(FeeRate::of(1, 3) < FeeRate::of(1, 2));
        assert_eq!(FeeRate::of(2, 6), FeeRate::of(1, 3));
        // 1/3 and 333/1000 differ although they round alike.
        assert!(FeeRate::of(333, 1000) < FeeRate::of(1, 3));
        assert!(FeeRate::of(u64::MAX, 1) > FeeRate::of(u64::MAX - 1, 1));
        assert_eq!(FeeRate::of(5, 0).size(), 1);
        assert_eq!(FeeRate::per_kb(amount(400)), FeeRate::of(100, 250));
        assert!(FeeRate::of(100, 251) < FeeRate::per_kb(amount(400)));
        assert_eq!(FeeRate::ZERO, FeeRate::of(0, 10));
    }

    #[test]
    fn per_1000_bytes_rounds_down_and_fee_for_rounds_up() {
        assert_eq!(FeeRate::of(100, 250).per_1000_bytes(), 400);
        assert_eq!(FeeRate::of(1, 3).per_1000_bytes(), 333);
        assert_eq!(FeeRate::per_kb(amount(1000)).fee_for(250).map(Amount::get), Some(250));
        assert_eq!(FeeRate::per_kb(amount(1)).fee_for(2000).map(Amount::get), Some(2));
        assert_eq!(FeeRate::per_kb(amount(1)).fee_for(1).map(Amount::get), Some(1));
        assert_eq!(FeeRate::ZERO.fee_for(5000), Some(Amount::ZERO));
        assert_eq!(FeeRate::per_kb(Amount::MAX).fee_for(2000), None);
        assert_eq!(FeeRate::per_kb(amount(7)).to_string(), "7 per 1000 bytes");
    }
}
