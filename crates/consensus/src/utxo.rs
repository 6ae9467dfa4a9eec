//! Unspent outputs: the [`Coin`] record, read access through [`UtxoView`], and the in-memory
//! set [`UtxoSet`] that a node serves from (its database holds the durable copy).

use std::collections::HashMap;

use scalechain_types::codec::{Decode, DecodeError, Encode, Reader};
use scalechain_types::{Amount, OutPoint, TxOut};

/// An unspent output and where it came from.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Hash)]
pub struct Coin {
    /// The output.
    pub out: TxOut,
    /// Height of the block that created it.
    pub height: u64,
    /// Created by a block reward (maturity applies)? Premine outputs are not.
    pub coinbase: bool,
}

impl Coin {
    /// Encoded size.
    pub const LEN: usize = TxOut::LEN + 8 + 1;
}

impl Encode for Coin {
    fn encode_to(&self, out: &mut Vec<u8>) {
        self.out.encode_to(out);
        out.extend_from_slice(&self.height.to_le_bytes());
        out.push(u8::from(self.coinbase));
    }
}

impl Decode for Coin {
    const MIN_LEN: usize = Coin::LEN;
    fn decode_from(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let out = TxOut::decode_from(r)?;
        let height = r.u64("coin.height")?;
        let coinbase = match r.u8("coin.coinbase")? {
            0 => false,
            1 => true,
            b => return Err(r.invalid("coin.coinbase", format!("flag must be 0 or 1, got {b}"))),
        };
        Ok(Coin { out, height, coinbase })
    }
}

/// Read access to a set of unspent outputs.
pub trait UtxoView {
    /// The coin at `op`, if unspent.
    fn coin(&self, op: &OutPoint) -> Option<Coin>;
}

/// The in-memory UTXO set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UtxoSet {
    map: HashMap<OutPoint, Coin>,
}

impl UtxoSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of unspent outputs.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Adds an output.
    pub fn insert(&mut self, op: OutPoint, coin: Coin) {
        self.map.insert(op, coin);
    }

    /// Removes an output, returning it.
    pub fn remove(&mut self, op: &OutPoint) -> Option<Coin> {
        self.map.remove(op)
    }

    /// Every unspent output (unordered).
    pub fn iter(&self) -> impl Iterator<Item = (&OutPoint, &Coin)> {
        self.map.iter()
    }

    /// Sum of all values, as u128 (cannot overflow).
    pub fn total_value(&self) -> u128 {
        self.map.values().map(|c| u128::from(c.out.value.get())).sum()
    }

    /// Reserves room for `n` more outputs.
    pub fn reserve(&mut self, n: usize) {
        self.map.reserve(n);
    }
}

impl FromIterator<(OutPoint, Coin)> for UtxoSet {
    fn from_iter<I: IntoIterator<Item = (OutPoint, Coin)>>(it: I) -> Self {
        UtxoSet { map: it.into_iter().collect() }
    }
}

impl UtxoView for UtxoSet {
    fn coin(&self, op: &OutPoint) -> Option<Coin> {
        self.map.get(op).copied()
    }
}

impl<V: UtxoView + ?Sized> UtxoView for &V {
    fn coin(&self, op: &OutPoint) -> Option<Coin> {
        (**self).coin(op)
    }
}

/// Changes layered over a base view: `Some(coin)` added, `None` spent.
#[derive(Debug)]
pub struct UtxoOverlay<'a, V: UtxoView + ?Sized> {
    base: &'a V,
    changes: HashMap<OutPoint, Option<Coin>>,
}

impl<'a, V: UtxoView + ?Sized> UtxoOverlay<'a, V> {
    /// No changes yet.
    pub fn new(base: &'a V) -> Self {
        UtxoOverlay { base, changes: HashMap::new() }
    }

    /// Marks an output spent.
    pub fn spend(&mut self, op: OutPoint) {
        self.changes.insert(op, None);
    }

    /// Adds an output.
    pub fn add(&mut self, op: OutPoint, coin: Coin) {
        self.changes.insert(op, Some(coin));
    }

    /// The net changes.
    pub fn into_changes(self) -> HashMap<OutPoint, Option<Coin>> {
        self.changes
    }
}

impl<V: UtxoView + ?Sized> UtxoView for UtxoOverlay<'_, V> {
    fn coin(&self, op: &OutPoint) -> Option<Coin> {
        match self.changes.get(op) {
            Some(c) => *c,
            None => self.base.coin(op),
        }
    }
}

/// Sum of values, checked (for tests and tools).
pub fn sum_values<'a, I: IntoIterator<Item = &'a Coin>>(coins: I) -> Option<Amount> {
    Amount::checked_sum(coins.into_iter().map(|c| c.out.value)).ok()
}
