//! Unspent outputs: the [`Coin`] record, read access through [`UtxoView`], and the in-memory
//! set [`UtxoSet`] that a node serves from (its database holds the durable copy).

use std::collections::HashMap;
use std::hash::BuildHasher;

use foldhash::fast::RandomState;
use hashbrown::HashTable;
use scalechain_types::codec::{Decode, DecodeError, Encode, Reader};
use scalechain_types::{Amount, Hash, Lock, OutPoint, Scheme, TxOut};

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

/// One unspent output packed into 86 bytes with alignment 1, so the slab has no padding:
/// outpoint (36), value (8, LE), scheme (1), pubkey hash (32), height (8, LE), coinbase flag (1).
#[derive(Clone, Copy, PartialEq, Eq)]
struct Packed {
    op: [u8; 36],
    value: [u8; 8],
    scheme: u8,
    pubkey_hash: [u8; 32],
    height: [u8; 8],
    coinbase: u8,
}

fn pack_op(op: &OutPoint) -> [u8; 36] {
    let mut b = [0; 36];
    b[..32].copy_from_slice(&op.txid.0);
    b[32..].copy_from_slice(&op.index.to_le_bytes());
    b
}

impl Packed {
    fn new(op: &OutPoint, c: &Coin) -> Packed {
        Packed {
            op: pack_op(op),
            value: c.out.value.get().to_le_bytes(),
            scheme: c.out.lock.scheme.code(),
            pubkey_hash: c.out.lock.pubkey_hash.0,
            height: c.height.to_le_bytes(),
            coinbase: u8::from(c.coinbase),
        }
    }

    fn outpoint(&self) -> OutPoint {
        let mut txid = [0; 32];
        txid.copy_from_slice(&self.op[..32]);
        let mut index = [0; 4];
        index.copy_from_slice(&self.op[32..]);
        OutPoint { txid: Hash(txid), index: u32::from_le_bytes(index) }
    }

    fn coin(&self) -> Coin {
        // Every field was packed from a valid `Coin`, so the conversions cannot fail.
        let value = Amount::new(u64::from_le_bytes(self.value)).unwrap_or(Amount::MAX);
        let scheme = Scheme::from_code(self.scheme).unwrap_or(Scheme::Ed25519);
        Coin {
            out: TxOut { value, lock: Lock { scheme, pubkey_hash: Hash(self.pubkey_hash) } },
            height: u64::from_le_bytes(self.height),
            coinbase: self.coinbase != 0,
        }
    }
}

/// The in-memory UTXO set.
///
/// Layout, chosen for memory per output (the study's `utxo-memory` figure): a dense slab of
/// 86-byte packed entries and a hash table of `u32` slab indices (5 bytes per bucket with its
/// control byte). Removal swaps the last entry into the hole and re-points its index. The slab
/// grows by a quarter at a time, so its spare capacity stays below 25%. The table hashes
/// outpoints with a per-process random seed, so nobody can aim collisions at it.
#[derive(Clone, Default)]
pub struct UtxoSet {
    table: HashTable<u32>,
    slab: Vec<Packed>,
    hasher: RandomState,
    /// Sum of the values held, kept as outputs come and go (so a commit reads it in O(1)).
    total: u128,
}

impl UtxoSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    fn hash(&self, op: &[u8; 36]) -> u64 {
        self.hasher.hash_one(op)
    }

    /// Number of unspent outputs.
    pub fn len(&self) -> usize {
        self.slab.len()
    }

    /// Is it empty?
    pub fn is_empty(&self) -> bool {
        self.slab.is_empty()
    }

    fn find(&self, key: &[u8; 36]) -> Option<usize> {
        self.find_hashed(self.hash(key), key)
    }

    fn find_hashed(&self, h: u64, key: &[u8; 36]) -> Option<usize> {
        let slab = &self.slab;
        self.table.find(h, |&i| slab[i as usize].op == *key).map(|&i| i as usize)
    }

    /// Adds an output (replacing one with the same outpoint).
    pub fn insert(&mut self, op: OutPoint, coin: Coin) {
        let packed = Packed::new(&op, &coin);
        let h = self.hash(&packed.op);
        if let Some(i) = self.find_hashed(h, &packed.op) {
            self.total -= u128::from(u64::from_le_bytes(self.slab[i].value));
            self.total += u128::from(coin.out.value.get());
            self.slab[i] = packed;
            return;
        }
        self.total += u128::from(coin.out.value.get());
        if self.slab.len() == self.slab.capacity() {
            self.slab.reserve_exact((self.slab.len() / 4).max(64));
        }
        let index = u32::try_from(self.slab.len()).expect("the UTXO set holds at most 2^32 - 1 outputs");
        self.slab.push(packed);
        let (slab, hasher) = (&self.slab, &self.hasher);
        self.table.insert_unique(h, index, |&i| hasher.hash_one(slab[i as usize].op));
    }

    /// Removes an output, returning it.
    pub fn remove(&mut self, op: &OutPoint) -> Option<Coin> {
        let key = pack_op(op);
        let h = self.hash(&key);
        let slab = &self.slab;
        let (index, _) = self.table.find_entry(h, |&i| slab[i as usize].op == key).ok()?.remove();
        let removed = self.slab.swap_remove(index as usize);
        self.total -= u128::from(u64::from_le_bytes(removed.value));
        if let Some(moved) = self.slab.get(index as usize) {
            // The former last entry now lives at `index`: re-point its table slot.
            let from = self.slab.len() as u32;
            let mh = self.hasher.hash_one(moved.op);
            if let Some(slot) = self.table.find_mut(mh, |&i| i == from) {
                *slot = index;
            }
        }
        Some(removed.coin())
    }

    /// Every unspent output (unordered).
    pub fn iter(&self) -> impl Iterator<Item = (OutPoint, Coin)> + '_ {
        self.slab.iter().map(|p| (p.outpoint(), p.coin()))
    }

    /// Sum of all values, as u128 (cannot overflow): a running sum, read in O(1).
    pub fn total_value(&self) -> u128 {
        self.total
    }

    /// Reserves room for `n` more outputs.
    pub fn reserve(&mut self, n: usize) {
        self.slab.reserve_exact(n);
        let (slab, hasher) = (&self.slab, &self.hasher);
        self.table.reserve(n, |&i| hasher.hash_one(slab[i as usize].op));
    }

    /// Bytes of heap the set holds: the slab's and the table's allocations.
    pub fn heap_bytes(&self) -> usize {
        self.slab.capacity() * std::mem::size_of::<Packed>() + self.table.allocation_size()
    }

    /// Bytes of one slab entry.
    pub const ENTRY_BYTES: usize = std::mem::size_of::<Packed>();
}

impl PartialEq for UtxoSet {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len()
            && self.slab.iter().all(|p| other.find(&p.op).is_some_and(|i| other.slab[i] == *p))
    }
}

impl Eq for UtxoSet {}

impl std::fmt::Debug for UtxoSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UtxoSet").field("len", &self.len()).field("total_value", &self.total_value()).finish()
    }
}

impl FromIterator<(OutPoint, Coin)> for UtxoSet {
    fn from_iter<I: IntoIterator<Item = (OutPoint, Coin)>>(it: I) -> Self {
        let mut set = UtxoSet::new();
        for (op, coin) in it {
            set.insert(op, coin);
        }
        set
    }
}

impl UtxoView for UtxoSet {
    fn coin(&self, op: &OutPoint) -> Option<Coin> {
        self.find(&pack_op(op)).map(|i| self.slab[i].coin())
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn coin(v: u64, h: u64) -> Coin {
        Coin {
            out: TxOut {
                value: Amount::new(v).unwrap_or(Amount::MAX),
                lock: Lock { scheme: Scheme::Secp256k1, pubkey_hash: Hash([v as u8; 32]) },
            },
            height: h,
            coinbase: h % 2 == 1,
        }
    }

    fn op(k: u8) -> OutPoint {
        OutPoint { txid: Hash([k % 16; 32]), index: u32::from(k / 16) }
    }

    #[test]
    fn an_entry_is_86_bytes_without_padding() {
        assert_eq!(UtxoSet::ENTRY_BYTES, 86);
        assert_eq!(std::mem::align_of::<Packed>(), 1);
    }

    proptest! {
        /// Any sequence of inserts and removes leaves the set equal to a HashMap model:
        /// same length, same coins, same total, and removal returns what was stored.
        #[test]
        fn behaves_like_a_map(ops in proptest::collection::vec((any::<bool>(), any::<u8>(), 0u64..1 << 53), 0..400)) {
            let mut set = UtxoSet::new();
            let mut model: HashMap<OutPoint, Coin> = HashMap::new();
            for (insert, k, v) in ops {
                if insert {
                    set.insert(op(k), coin(v, v % 1000));
                    model.insert(op(k), coin(v, v % 1000));
                } else {
                    prop_assert_eq!(set.remove(&op(k)), model.remove(&op(k)));
                }
                prop_assert_eq!(set.len(), model.len());
            }
            for k in 0..=255u8 {
                prop_assert_eq!(set.coin(&op(k)), model.get(&op(k)).copied());
            }
            let total: u128 = model.values().map(|c| u128::from(c.out.value.get())).sum();
            prop_assert_eq!(set.total_value(), total);
            let rebuilt: UtxoSet = model.iter().map(|(o, c)| (*o, *c)).collect();
            prop_assert_eq!(&rebuilt, &set);
            let listed: HashMap<OutPoint, Coin> = set.iter().collect();
            prop_assert_eq!(listed, model);
        }
    }

    #[test]
    fn sets_with_different_coins_differ() {
        let a: UtxoSet = [(op(1), coin(5, 1))].into_iter().collect();
        let b: UtxoSet = [(op(1), coin(6, 1))].into_iter().collect();
        let c: UtxoSet = [(op(2), coin(5, 1))].into_iter().collect();
        assert_ne!(a, b);
        assert_ne!(a, c);
        assert_eq!(a, a.clone());
    }
}
