//! The in-memory engine, and the checks both engines share.
//!
//! [`MemStore`] is the reference for the semantics of [`ChainStore`]: the disk engine must
//! behave exactly like it (same errors, same ordering of everything `load` returns), so tests
//! and simulations can run against either.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use scalechain_consensus::{BlockUndo, Coin};
use scalechain_types::{Block, Hash, OutPoint};

use crate::{ChainStore, Commit, StoreError, StoredState, TxLocation};

/// The longest key the engines store (fjall's limit; the in-memory engine enforces it too).
pub(crate) const MAX_KEY_LEN: usize = u16::MAX as usize;

/// Refuses an application key the disk engine cannot store (empty, or over 65535 bytes).
pub(crate) fn check_app_key(key: &[u8]) -> Result<(), StoreError> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(StoreError::Engine(format!(
            "application key of {} bytes cannot be stored (keys must be 1 to {MAX_KEY_LEN} bytes)",
            key.len()
        )));
    }
    Ok(())
}

/// Refuses a value the disk engine cannot store (over `u32::MAX` bytes).
pub(crate) fn check_value_len(what: &str, len: usize) -> Result<(), StoreError> {
    if u32::try_from(len).is_err() {
        return Err(StoreError::Engine(format!("{what} of {len} bytes is too large to store")));
    }
    Ok(())
}

/// Refuses a commit whose application writes cannot all be stored, before anything is written.
pub(crate) fn check_commit(c: &Commit) -> Result<(), StoreError> {
    for (k, v) in &c.app {
        check_app_key(k)?;
        if let Some(v) = v {
            check_value_len("application value", v.len())?;
        }
    }
    Ok(())
}

/// The error for a commit on a store that holds no chain.
pub(crate) fn no_chain() -> StoreError {
    StoreError::Engine("commit on a store that holds no chain; call init first".into())
}

/// Builds the main chain from height-index entries in ascending height order, checking that
/// heights `0..=tip_height` are all present and that the entry at `tip_height` is `tip`.
/// Entries above `tip_height` are ignored.
pub(crate) fn main_chain_from<I>(entries: I, tip: &Hash, tip_height: u64) -> Result<Vec<Hash>, StoreError>
where
    I: IntoIterator<Item = Result<(u64, Hash), StoreError>>,
{
    let mut chain = Vec::new();
    let mut expected: u64 = 0;
    for entry in entries {
        let (height, hash) = entry?;
        if height > tip_height {
            break;
        }
        if height != expected {
            return Err(missing_height(expected, tip_height));
        }
        chain.push(hash);
        if height == tip_height {
            if hash != *tip {
                return Err(StoreError::Corrupt(format!(
                    "height index at tip height {tip_height} holds {hash}, but the stored tip is {tip}"
                )));
            }
            return Ok(chain);
        }
        expected = height + 1;
    }
    Err(missing_height(expected, tip_height))
}

fn missing_height(height: u64, tip_height: u64) -> StoreError {
    StoreError::Corrupt(format!("height index has no entry at height {height} (tip height {tip_height})"))
}

/// Checks the UTXO set against the count and total value committed with it.
pub(crate) fn check_totals(
    utxos: &[(OutPoint, Coin)],
    utxo_count: u64,
    total_value: u128,
) -> Result<(), StoreError> {
    let (count, total) = totals(utxos.iter().map(|(_, c)| c));
    if count != utxo_count {
        return Err(StoreError::Corrupt(format!(
            "UTXO set holds {count} outputs, but {utxo_count} were committed"
        )));
    }
    if total != total_value {
        return Err(StoreError::Corrupt(format!(
            "UTXO set holds a total value of {total}, but {total_value} was committed"
        )));
    }
    Ok(())
}

/// How many coins, and their total value.
pub(crate) fn totals<'a>(coins: impl Iterator<Item = &'a Coin>) -> (u64, u128) {
    coins.fold((0, 0), |(n, t), c| (n + 1, t + u128::from(c.out.value.get())))
}

/// The order of the UTXO set in a [`StoredState`]: by outpoint encoding (txid bytes, then the
/// index little-endian), which the disk engine's key order was before format 3.
pub(crate) fn outpoint_order(op: &OutPoint) -> [u8; 36] {
    let mut k = [0u8; 36];
    k[..32].copy_from_slice(&op.txid.0);
    k[32..].copy_from_slice(&op.index.to_le_bytes());
    k
}

/// What `init` stored, plus the values of the latest commit.
#[derive(Debug, Clone)]
struct Meta {
    params: Vec<u8>,
    chain_id: Hash,
    tip: Hash,
    tip_height: u64,
    utxo_count: u64,
    total_value: u128,
}

/// An in-memory [`ChainStore`] for tests and simulations, with the same semantics as
/// [`DiskStore`](crate::DiskStore), including the consistency checks of
/// [`load`](ChainStore::load). Cloning it snapshots the whole store.
///
/// `init` makes the genesis block the tip at height 0 under `chain_id`; of the `first` commit
/// it applies the undo, UTXO and application changes and the UTXO count and total, and ignores
/// `tip`, `tip_height` and `main_chain`.
///
/// Application keys must be 1 to 65535 bytes long (the disk engine's limit); a commit that
/// writes another key fails with [`StoreError::Engine`] before anything is changed.
#[derive(Debug, Clone, Default)]
pub struct MemStore {
    meta: Option<Meta>,
    blocks: BTreeMap<Hash, Arc<Block>>,
    undo: HashMap<Hash, Arc<BlockUndo>>,
    /// Where blocks and undo data are held once for every store that shares it.
    shelf: Option<Arc<Shelf>>,
    heights: BTreeMap<u64, Hash>,
    utxos: HashMap<OutPoint, Coin>,
    app: BTreeMap<Vec<u8>, Vec<u8>>,
    txids: HashMap<Hash, TxLocation>,
    /// The txid index's tip: the committed tip, or `None` after
    /// [`MemStore::debug_drop_txindex`] (as for a disk store of format 1) until it is written.
    txindex_tip: Option<(Hash, u64)>,
    poisoned: bool,
    fail_next_write: bool,
}

/// Blocks and undo data that several memory stores hold once: a simulation of many nodes
/// gives them all one shelf, and a block every node stores takes its memory once.
///
/// Both are immutable and named by their block's hash (a block's undo data, the coins it
/// spent, is the same wherever its ancestors are). A store still keeps its own copy of a value
/// that differs from the shelf's under the same hash (a forged body under a real header), so
/// sharing never changes what a store holds. Values stay on the shelf as long as it lives.
#[derive(Debug, Default)]
pub struct Shelf {
    blocks: Mutex<HashMap<Hash, Arc<Block>>>,
    undo: Mutex<HashMap<Hash, Arc<BlockUndo>>>,
}

impl Shelf {
    /// An empty shelf.
    pub fn new() -> Shelf {
        Shelf::default()
    }

    /// Blocks on the shelf.
    pub fn blocks(&self) -> usize {
        self.blocks.lock().map_or(0, |m| m.len())
    }
}

/// `value` as the shelf holds it if it holds an equal one under `hash`, else a new handle
/// (put on the shelf if the hash is free there).
fn shelved<T: PartialEq + Clone>(
    shelf: Option<&Mutex<HashMap<Hash, Arc<T>>>>,
    hash: &Hash,
    value: &T,
) -> Arc<T> {
    let Some(Ok(mut map)) = shelf.map(|m| m.lock()) else { return Arc::new(value.clone()) };
    match map.get(hash) {
        Some(held) if **held == *value => held.clone(),
        Some(_) => Arc::new(value.clone()),
        None => {
            let v = Arc::new(value.clone());
            map.insert(*hash, v.clone());
            v
        }
    }
}

impl MemStore {
    /// An empty store (no chain).
    pub fn new() -> MemStore {
        MemStore::default()
    }

    /// An empty store that holds its blocks and undo data on `shelf`, shared with the other
    /// stores on it.
    pub fn on_shelf(shelf: Arc<Shelf>) -> MemStore {
        MemStore { shelf: Some(shelf), ..MemStore::default() }
    }

    /// Makes the next write (`init`, `put_block` or `commit`) fail with [`StoreError::Engine`]
    /// without changing anything, which poisons the store, as a failed disk write would.
    pub fn inject_write_failure(&mut self) {
        self.fail_next_write = true;
    }

    /// Overwrites the committed UTXO count, so that `load` finds the store inconsistent.
    #[doc(hidden)]
    pub fn debug_set_utxo_count(&mut self, n: u64) {
        if let Some(m) = &mut self.meta {
            m.utxo_count = n;
        }
    }

    /// Forgets the txid index and marks it not ready, as a data directory written before the
    /// index existed would be.
    #[doc(hidden)]
    pub fn debug_drop_txindex(&mut self) {
        self.txids.clear();
        self.txindex_tip = None;
    }

    /// Entries of the txid index, in no particular order.
    #[doc(hidden)]
    pub fn debug_txindex(&self) -> Vec<(Hash, TxLocation)> {
        self.txids.iter().map(|(t, l)| (*t, *l)).collect()
    }

    fn check_poisoned(&self) -> Result<(), StoreError> {
        if self.poisoned {
            return Err(StoreError::Poisoned);
        }
        Ok(())
    }

    /// Called at the start of every write, once nothing can be refused any more: fails (and
    /// poisons) if a failure was injected.
    fn begin_write(&mut self) -> Result<(), StoreError> {
        if std::mem::take(&mut self.fail_next_write) {
            self.poisoned = true;
            return Err(StoreError::Engine("injected write failure".into()));
        }
        Ok(())
    }

    /// Applies the undo, UTXO and application changes of a commit, in that order (removes
    /// before adds; a later write of the same key wins).
    fn apply_changes(&mut self, c: &Commit) {
        for (hash, undo) in &c.undo {
            let undo = shelved(self.shelf.as_deref().map(|s| &s.undo), hash, undo);
            self.undo.insert(*hash, undo);
        }
        for op in &c.utxo_remove {
            self.utxos.remove(op);
        }
        for (op, coin) in &c.utxo_add {
            self.utxos.insert(*op, *coin);
        }
        for (k, v) in &c.app {
            match v {
                Some(v) => self.app.insert(k.clone(), v.clone()),
                None => self.app.remove(k),
            };
        }
        // An index not built yet (`None`) stays so until it is written as a whole.
        if self.txindex_tip.is_some() {
            for t in &c.txids_remove {
                self.txids.remove(t);
            }
            for (t, loc) in &c.txids_add {
                self.txids.insert(*t, *loc);
            }
        }
    }
}

impl ChainStore for MemStore {
    fn load(&self) -> Result<Option<StoredState>, StoreError> {
        self.check_poisoned()?;
        let Some(meta) = &self.meta else {
            return Ok(None);
        };
        let main_chain =
            main_chain_from(self.heights.iter().map(|(h, x)| Ok((*h, *x))), &meta.tip, meta.tip_height)?;
        let headers = self.blocks.values().map(|b| b.header).collect();
        let mut utxos: Vec<(OutPoint, Coin)> = self.utxos.iter().map(|(o, c)| (*o, *c)).collect();
        utxos.sort_unstable_by_key(|(o, _)| outpoint_order(o));
        check_totals(&utxos, meta.utxo_count, meta.total_value)?;
        let app = self.app.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        Ok(Some(StoredState {
            params: meta.params.clone(),
            chain_id: meta.chain_id,
            tip: meta.tip,
            tip_height: meta.tip_height,
            main_chain,
            headers,
            utxos,
            app,
        }))
    }

    fn init(
        &mut self,
        params: &[u8],
        genesis: &Block,
        chain_id: Hash,
        first: &Commit,
    ) -> Result<(), StoreError> {
        self.check_poisoned()?;
        if self.meta.is_some() {
            return Err(StoreError::AlreadyInitialised);
        }
        check_value_len("parameters", params.len())?;
        check_value_len("genesis block", genesis.encoded_len())?;
        check_commit(first)?;
        self.begin_write()?;
        let genesis = shelved(self.shelf.as_deref().map(|s| &s.blocks), &chain_id, genesis);
        self.blocks.insert(chain_id, genesis);
        self.heights.insert(0, chain_id);
        self.txindex_tip = Some((chain_id, 0));
        self.apply_changes(first);
        self.meta = Some(Meta {
            params: params.to_vec(),
            chain_id,
            tip: chain_id,
            tip_height: 0,
            utxo_count: first.utxo_count,
            total_value: first.total_value,
        });
        Ok(())
    }

    fn put_block(&mut self, hash: &Hash, block: &Block) -> Result<(), StoreError> {
        self.check_poisoned()?;
        check_value_len("block", block.encoded_len())?;
        self.begin_write()?;
        let block = shelved(self.shelf.as_deref().map(|s| &s.blocks), hash, block);
        self.blocks.insert(*hash, block);
        Ok(())
    }

    fn get_block(&self, hash: &Hash) -> Result<Option<Block>, StoreError> {
        self.check_poisoned()?;
        Ok(self.blocks.get(hash).map(|b| Block::clone(b)))
    }

    fn get_undo(&self, hash: &Hash) -> Result<Option<BlockUndo>, StoreError> {
        self.check_poisoned()?;
        Ok(self.undo.get(hash).map(|u| BlockUndo::clone(u)))
    }

    fn commit(&mut self, c: &Commit) -> Result<(), StoreError> {
        self.check_poisoned()?;
        if self.meta.is_none() {
            return Err(no_chain());
        }
        check_commit(c)?;
        self.begin_write()?;
        for (height, hash) in &c.main_chain {
            self.heights.insert(*height, *hash);
        }
        if let Some(above) = c.tip_height.checked_add(1) {
            drop(self.heights.split_off(&above));
        }
        self.apply_changes(c);
        if self.txindex_tip.is_some() {
            self.txindex_tip = Some((c.tip, c.tip_height));
        }
        if let Some(m) = &mut self.meta {
            m.tip = c.tip;
            m.tip_height = c.tip_height;
            m.utxo_count = c.utxo_count;
            m.total_value = c.total_value;
        }
        Ok(())
    }

    fn hash_at(&self, height: u64) -> Result<Option<Hash>, StoreError> {
        self.check_poisoned()?;
        Ok(self.heights.get(&height).copied())
    }

    fn tx_location(&self, txid: &Hash) -> Result<Option<TxLocation>, StoreError> {
        self.check_poisoned()?;
        Ok(self.txids.get(txid).copied())
    }

    fn txindex_tip(&self) -> Result<Option<(Hash, u64)>, StoreError> {
        self.check_poisoned()?;
        Ok(self.txindex_tip)
    }

    fn write_txindex(
        &mut self,
        remove: &[Hash],
        add: &[(Hash, TxLocation)],
        tip: (Hash, u64),
    ) -> Result<(), StoreError> {
        self.check_poisoned()?;
        if self.meta.is_none() {
            return Err(no_chain());
        }
        self.begin_write()?;
        for t in remove {
            self.txids.remove(t);
        }
        self.txids.extend(add.iter().copied());
        self.txindex_tip = Some(tip);
        Ok(())
    }
}
