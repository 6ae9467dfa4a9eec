//! Balances: the value of a list of coins, in total and per address, with checked sums.

use std::collections::BTreeMap;

use serde::Serialize;

use scalechain_types::{Amount, HashKind, OutPoint, TxOut};

use crate::address::{encode_address, AddressHrp};

/// The value held by one address.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default, Serialize)]
pub struct AddressBalance {
    /// Sum of the coins' values.
    pub amount: Amount,
    /// Number of coins.
    pub coins: usize,
}

/// The value of a list of coins.
#[derive(Clone, PartialEq, Eq, Debug, Default, Serialize)]
pub struct Balance {
    /// Sum of every coin's value.
    pub total: Amount,
    /// Number of coins.
    pub coins: usize,
    /// Per address (bech32m, sorted).
    pub by_address: BTreeMap<String, AddressBalance>,
}

/// The sum of the coins passes 2^53 − 1 (no real chain holds that much: the list is wrong).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("coin values sum past 2^53 - 1 at coin {at}")]
pub struct BalanceError {
    /// The coin at which the sum overflowed.
    pub at: OutPoint,
}

/// Sums `coins` in total and per address of the network of `hrp` on a chain hashing with `hash`. Coins are counted as given (a
/// coin listed twice counts twice).
pub fn balance(
    coins: &[(OutPoint, TxOut)],
    hrp: &AddressHrp,
    hash: HashKind,
) -> Result<Balance, BalanceError> {
    let mut b = Balance::default();
    for (op, out) in coins {
        let overflow = |_| BalanceError { at: *op };
        b.total = b.total.checked_add(out.value).map_err(overflow)?;
        b.coins += 1;
        let entry = b.by_address.entry(encode_address(hrp, hash, &out.lock)).or_default();
        entry.amount = entry.amount.checked_add(out.value).map_err(overflow)?;
        entry.coins += 1;
    }
    Ok(b)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use scalechain_types::{Hash, Lock, Scheme};

    fn coin(i: u8, key: u8, value: u64) -> (OutPoint, TxOut) {
        (
            OutPoint { txid: Hash([i; 32]), index: 0 },
            TxOut {
                value: Amount::new(value).unwrap(),
                lock: Lock { scheme: Scheme::Ed25519, pubkey_hash: Hash([key; 32]) },
            },
        )
    }

    #[test]
    fn sums_by_address() {
        let hrp = AddressHrp::devnet();
        let coins = [coin(1, 1, 10), coin(2, 2, 5), coin(3, 1, 7)];
        let b = balance(&coins, &hrp, HashKind::Sha256).unwrap();
        assert_eq!(b.total.get(), 22);
        assert_eq!(b.coins, 3);
        assert_eq!(b.by_address.len(), 2);
        let a1 = encode_address(&hrp, HashKind::Sha256, &coins[0].1.lock);
        assert_eq!(b.by_address[&a1], AddressBalance { amount: Amount::new(17).unwrap(), coins: 2 });
        assert_eq!(balance(&[], &hrp, HashKind::Sha256).unwrap(), Balance::default());
        let json = serde_json::to_value(&b).unwrap();
        assert_eq!(json["total"], 22);
    }

    #[test]
    fn overflow_is_an_error() {
        let hrp = AddressHrp::main();
        let coins = [coin(1, 1, Amount::MAX.get()), coin(2, 2, 1)];
        assert_eq!(balance(&coins, &hrp, HashKind::Sha256), Err(BalanceError { at: coins[1].0 }));
    }
}
