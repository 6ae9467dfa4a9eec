//! Amounts of coin: a newtype whose arithmetic is checked.

use std::fmt;

use serde::{Deserialize, Serialize};

/// An amount in the smallest unit. Always at most [`Amount::MAX`] = 2^53 − 1, so JSON numbers
/// carry every amount exactly. Construct with [`Amount::new`]; add and subtract with the checked
/// methods only.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize)]
#[serde(transparent)]
pub struct Amount(u64);

/// An amount out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum AmountError {
    /// The value exceeds 2^53 − 1.
    #[error("amount {0} exceeds the maximum 2^53 - 1")]
    TooLarge(u64),
    /// A sum exceeded 2^53 − 1.
    #[error("sum of amounts overflows 2^53 - 1")]
    Overflow,
    /// A difference went below zero.
    #[error("amount difference is negative")]
    Underflow,
}

impl Amount {
    /// The largest amount: 2^53 − 1.
    pub const MAX: Amount = Amount((1 << 53) - 1);
    /// Nothing.
    pub const ZERO: Amount = Amount(0);

    /// An amount, if `v` is in range.
    pub const fn new(v: u64) -> Result<Amount, AmountError> {
        if v > Self::MAX.0 {
            Err(AmountError::TooLarge(v))
        } else {
            Ok(Amount(v))
        }
    }

    /// The value in the smallest unit.
    pub const fn get(self) -> u64 {
        self.0
    }

    /// `self + rhs`, or an error if the sum passes [`Amount::MAX`].
    pub fn checked_add(self, rhs: Amount) -> Result<Amount, AmountError> {
        match self.0.checked_add(rhs.0) {
            Some(v) if v <= Self::MAX.0 => Ok(Amount(v)),
            _ => Err(AmountError::Overflow),
        }
    }

    /// `self - rhs`, or an error if `rhs > self`.
    pub fn checked_sub(self, rhs: Amount) -> Result<Amount, AmountError> {
        self.0.checked_sub(rhs.0).map(Amount).ok_or(AmountError::Underflow)
    }

    /// Base units in one coin (SC): amounts are written in base units, coins have 8 decimals.
    pub const BASE_PER_COIN: u64 = 100_000_000;

    /// The amount in coins, written `1.5 SC` (no trailing zeros; see [`Coins`]).
    pub fn coins(self) -> Coins {
        Coins(self.0)
    }

    /// The sum of many amounts, checked.
    pub fn checked_sum<I: IntoIterator<Item = Amount>>(it: I) -> Result<Amount, AmountError> {
        it.into_iter().try_fold(Amount::ZERO, Amount::checked_add)
    }
}

impl TryFrom<u64> for Amount {
    type Error = AmountError;
    fn try_from(v: u64) -> Result<Self, Self::Error> {
        Amount::new(v)
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Amount::new(u64::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// An amount of base units written in coins: whole coins, up to 8 decimals without trailing
/// zeros, and ` SC` (`0.00000001 SC`, `1.5 SC`, `50 SC`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Coins(pub u64);

impl Coins {
    /// The whole coins and the decimals as text (empty, or `.` and 1 to 8 digits).
    pub fn parts(self) -> (u64, String) {
        let (whole, frac) = (self.0 / Amount::BASE_PER_COIN, self.0 % Amount::BASE_PER_COIN);
        let frac =
            if frac == 0 { String::new() } else { format!(".{frac:08}").trim_end_matches('0').to_string() };
        (whole, frac)
    }
}

impl fmt::Display for Coins {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (whole, frac) = self.parts();
        write!(f, "{whole}{frac} SC")
    }
}

impl fmt::Debug for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Amount({})", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_written_in_coins_without_trailing_zeros() {
        assert_eq!(Amount(5_000_000_000).coins().to_string(), "50 SC");
        assert_eq!(Amount(150_000_000).coins().to_string(), "1.5 SC");
        assert_eq!(Amount(1).coins().to_string(), "0.00000001 SC");
        assert_eq!(Amount(999_895_684).coins().to_string(), "9.99895684 SC");
        assert_eq!(Amount::ZERO.coins().to_string(), "0 SC");
    }

    #[test]
    fn bounds_and_checked_arithmetic() {
        assert!(Amount::new(1 << 53).is_err());
        let max = Amount::MAX;
        assert_eq!(max.checked_add(Amount::ZERO), Ok(max));
        assert_eq!(max.checked_add(Amount(1)), Err(AmountError::Overflow));
        assert_eq!(Amount(u64::MAX >> 11).checked_add(max), Err(AmountError::Overflow));
        assert_eq!(Amount(1).checked_sub(Amount(2)), Err(AmountError::Underflow));
        assert_eq!(Amount::checked_sum([Amount(1), Amount(2)]), Ok(Amount(3)));
        assert_eq!(Amount::checked_sum([max, Amount(1)]), Err(AmountError::Overflow));
        assert!(serde_json::from_str::<Amount>("9007199254740992").is_err());
        assert_eq!(serde_json::from_str::<Amount>("9007199254740991").ok(), Some(max));
    }
}
