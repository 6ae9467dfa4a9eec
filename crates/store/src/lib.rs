//! ScaleChain's durable store: blocks, undo data, the main-chain index, the UTXO set and
//! application state, behind the [`ChainStore`] trait.
//!
//! Two engines implement it: [`DiskStore`] (fjall, an LSM-tree with a write-ahead journal) for
//! nodes, and [`MemStore`] for tests and simulations.
//!
//! It also keeps the txid index (txid → block hash, height and position of the main-chain
//! block holding it). Each commit carries its index changes; [`DiskStore`] writes them after the
//! commit, on a thread of its own ([`txindex`]), so the index is off the commit's critical path
//! and follows the chain with its own tip ([`ChainStore::txindex_tip`]); lookups see every
//! commit made all the same. After a crash the stored index may be behind the chain (never
//! ahead, never other than the index of the chain ending at its tip), and the chain layer
//! brings it to the tip when it opens the store ([`ChainStore::write_txindex`]).
//!
//! Invariants:
//! - [`ChainStore::commit`] is atomic and durable: after a crash at any moment the store reopens
//!   with either all of a commit or none of it (one fjall batch, fsynced).
//! - Blocks written with [`ChainStore::put_block`] may be lost in a crash if no commit followed;
//!   they are only ever referenced by a later commit, so losing them loses nothing committed.
//! - [`ChainStore::load`] checks the stored state for consistency (tip against the height
//!   index, UTXO count and total against the values committed with them) and refuses a store
//!   that fails, with [`StoreError::Corrupt`] saying what disagreed.
//! - A store never opens short: after every synced write a commit marker beside the database
//!   ([`marker`]) records the commit, and [`DiskStore::open`] refuses a database behind it (a
//!   damaged journal that the engine cut short) with [`StoreError::Damaged`], as it refuses a
//!   journal or table that does not read.
//! - After any failed write the store is poisoned: every later call fails with
//!   [`StoreError::Poisoned`] until it is reopened, so a half-known state is never extended.
//!
//! What it must not do: validate. It stores what the chain layer has validated.

mod archive;
mod disk;
pub mod marker;
mod mem;
mod snapshot;
pub mod txindex;

pub use disk::{DiskStore, StoreMemory, StoreMemoryUse};
pub use mem::{MemStore, Shelf};

use scalechain_consensus::{BlockUndo, Coin, UtxoSet};
use scalechain_types::{Block, Hash, Header, OutPoint};

/// The on-disk format version this code writes.
///
/// Version 2 added the txid index. A version-1 directory still opens: its index is missing
/// ([`ChainStore::txindex_tip`] answers `None`) until [`ChainStore::write_txindex`] fills it
/// and moves the directory to the current version, which the chain layer does once, when it
/// opens one.
///
/// Version 4 records the txid index's own tip (`meta`'s `txindex_tip`): the index is written
/// after each commit instead of inside it, and may be behind the chain after a crash. A
/// version-2 or -3 directory, whose index always matched its tip, gets its tip recorded when it
/// opens.
///
/// Version 3 keeps the UTXO set in a snapshot file instead of an LSM entry per output: each
/// commit logs its UTXO changes as one record, and [`ChainStore::load`] replays the records
/// since the snapshot. An older directory is converted when it opens (its set written as the snapshot
/// of its tip).
pub const FORMAT_VERSION: u32 = 4;

/// The oldest format version [`DiskStore`] opens (and upgrades).
pub const OLDEST_FORMAT_VERSION: u32 = 1;

/// Where a confirmed transaction is: its block on the main chain and its place in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TxLocation {
    /// The block's hash.
    pub block: Hash,
    /// The block's height.
    pub height: u64,
    /// The transaction's index in the block (0 is the coinbase).
    pub position: u32,
}

impl TxLocation {
    /// Encoded length: hash, height `u64` LE, position `u32` LE.
    pub const LEN: usize = 44;

    /// The stored encoding.
    pub fn to_bytes(&self) -> [u8; Self::LEN] {
        let mut b = [0u8; Self::LEN];
        b[..32].copy_from_slice(&self.block.0);
        b[32..40].copy_from_slice(&self.height.to_le_bytes());
        b[40..].copy_from_slice(&self.position.to_le_bytes());
        b
    }

    /// Decodes the stored encoding (exactly [`TxLocation::LEN`] bytes).
    pub fn from_bytes(b: &[u8]) -> Option<TxLocation> {
        let b: &[u8; Self::LEN] = b.try_into().ok()?;
        let mut block = [0u8; 32];
        block.copy_from_slice(&b[..32]);
        let mut height = [0u8; 8];
        height.copy_from_slice(&b[32..40]);
        let mut position = [0u8; 4];
        position.copy_from_slice(&b[40..]);
        Some(TxLocation {
            block: Hash(block),
            height: u64::from_le_bytes(height),
            position: u32::from_le_bytes(position),
        })
    }
}

/// A store failure.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The underlying engine failed.
    #[error("storage engine: {0}")]
    Engine(String),
    /// Stored bytes do not decode or do not agree with each other.
    #[error("store is corrupt: {0}")]
    Corrupt(String),
    /// A txid lookup on a store whose txid index is switched off (`store.tx_index = false`).
    #[error("this node keeps no txid index (store.tx_index = false): confirmed transactions are not looked up by txid")]
    TxIndexOff,
    /// A previous write failed; reopen the store.
    #[error("store is poisoned by an earlier failed write; reopen it")]
    Poisoned,
    /// The data directory holds another format version.
    #[error("data directory format {found} is not supported (this build reads {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}); use another data directory")]
    Version {
        /// The version found.
        found: u32,
    },
    /// `init` on a store that already holds a chain.
    #[error("store already holds a chain")]
    AlreadyInitialised,
    /// A write failed because the filesystem holding the store has no space left (or the
    /// user's quota is spent). Nothing of the failed write is visible; the store is poisoned
    /// like after any failed write, and holds every earlier commit.
    #[error("no space left for the store in {}: {detail}. Free space on its filesystem and restart the node", path.display())]
    Full {
        /// The store's directory.
        path: std::path::PathBuf,
        /// The write that failed.
        detail: String,
    },
    /// The database does not read, or has lost writes its commit marker records.
    #[error("the store in {} is damaged: {detail}. {RECOVERY}", path.display())]
    Damaged {
        /// The store's directory.
        path: std::path::PathBuf,
        /// What was found, and where.
        detail: String,
    },
}

/// True if `e` says the filesystem is full (`ENOSPC`) or the quota spent (`EDQUOT`).
pub fn out_of_space(e: &std::io::Error) -> bool {
    matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
}

/// The error of a failed write (`what`) to the store in `path`: [`StoreError::Full`] when the
/// filesystem is out of space, [`StoreError::Engine`] otherwise.
pub(crate) fn write_error_at(path: &std::path::Path, what: &str, e: &fjall::Error) -> StoreError {
    let io = match e {
        fjall::Error::Io(io) | fjall::Error::Storage(fjall::LsmError::Io(io)) => Some(io),
        _ => None,
    };
    if io.is_some_and(crate::out_of_space) {
        StoreError::Full { path: path.to_path_buf(), detail: format!("{what}: {e}") }
    } else {
        StoreError::Engine(format!("{}: {what}: {e}", path.display()))
    }
}

/// What to do with a damaged store (part of [`StoreError::Damaged`]'s message).
pub const RECOVERY: &str = "To recover: move the directory aside (nothing in it was deleted) and start the \
    node on an empty data directory, which syncs the chain again from its peers (docs/adr/0003-disk-format.md, \
    \"Damaged stores\")";

/// Everything a node needs in memory after opening a store.
#[derive(Debug, Clone)]
pub struct StoredState {
    /// The canonical encoding of the chain parameters.
    pub params: Vec<u8>,
    /// The genesis block hash.
    pub chain_id: Hash,
    /// The tip of the main chain.
    pub tip: Hash,
    /// Its height.
    pub tip_height: u64,
    /// Main chain hashes by height, genesis first.
    pub main_chain: Vec<Hash>,
    /// Headers of every stored block (main chain and side branches), in no particular order.
    pub headers: Vec<Header>,
    /// The UTXO set.
    pub utxos: Vec<(OutPoint, Coin)>,
    /// Application state.
    pub app: Vec<(Vec<u8>, Vec<u8>)>,
}

/// One atomic change of the chain state: a tip extension, or a whole reorganisation.
#[derive(Debug, Clone, Default)]
pub struct Commit {
    /// The new tip.
    pub tip: Hash,
    /// Its height. Height-index entries above it are removed.
    pub tip_height: u64,
    /// Height-index entries to set (the newly connected main-chain blocks).
    pub main_chain: Vec<(u64, Hash)>,
    /// Undo data of the newly connected blocks.
    pub undo: Vec<(Hash, BlockUndo)>,
    /// Outpoints leaving the UTXO set.
    pub utxo_remove: Vec<OutPoint>,
    /// Outputs entering the UTXO set.
    pub utxo_add: Vec<(OutPoint, Coin)>,
    /// Application state writes (`None` deletes).
    pub app: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    /// Txid-index entries leaving (the transactions of disconnected blocks).
    pub txids_remove: Vec<Hash>,
    /// Txid-index entries entering (the transactions of connected blocks); applied after the
    /// removals, so a transaction in both a disconnected and a connected block ends at the
    /// connected one.
    pub txids_add: Vec<(Hash, TxLocation)>,
    /// Number of unspent outputs after the commit (stored to check the set on load).
    pub utxo_count: u64,
    /// Their total value after the commit (stored to check the set on load).
    pub total_value: u128,
}

/// A durable chain + UTXO store.
pub trait ChainStore: Send {
    /// The stored state, or `None` for a store that holds no chain yet.
    fn load(&self) -> Result<Option<StoredState>, StoreError>;

    /// Stores a new chain: parameters, genesis block as tip at height 0, and the genesis
    /// commit (its UTXOs), atomically.
    fn init(
        &mut self,
        params: &[u8],
        genesis: &Block,
        chain_id: Hash,
        first: &Commit,
    ) -> Result<(), StoreError>;

    /// Stores a block's data (main chain or side branch), keyed by its hash.
    fn put_block(&mut self, hash: &Hash, block: &Block) -> Result<(), StoreError>;

    /// A stored block.
    fn get_block(&self, hash: &Hash) -> Result<Option<Block>, StoreError>;

    /// Undo data of a block on the main chain (kept after a reorg disconnects it, harmlessly).
    fn get_undo(&self, hash: &Hash) -> Result<Option<BlockUndo>, StoreError>;

    /// Applies one change atomically and durably.
    fn commit(&mut self, c: &Commit) -> Result<(), StoreError>;

    /// The main-chain block at `height`.
    fn hash_at(&self, height: u64) -> Result<Option<Hash>, StoreError>;

    /// Where the txid index puts transaction `txid`: the index of the chain that ends at
    /// [`txindex_tip`](Self::txindex_tip), every commit made included.
    fn tx_location(&self, txid: &Hash) -> Result<Option<TxLocation>, StoreError>;

    /// The block the txid index covers through: the index holds exactly the transactions of
    /// the chain that ends there. It is the committed tip, except when a store opens after a
    /// crash (the disk store writes its index after each commit: it may be behind, or on a
    /// branch a later commit left) or was written before the index existed (`None`, format 1),
    /// until [`write_txindex`](Self::write_txindex) brings it to the tip.
    fn txindex_tip(&self) -> Result<Option<(Hash, u64)>, StoreError>;

    /// Whether the store keeps its txid index up to date. Switched off, commits leave the index
    /// where it is (its tip stays), [`tx_location`](Self::tx_location) answers
    /// [`StoreError::TxIndexOff`], and the chain layer does not bring it to the tip; switched on
    /// again, the chain brings it to the tip from where it stopped when it opens the store.
    fn txindex_on(&self) -> bool {
        true
    }

    /// Moves the txid index to `tip`, atomically and durably: the entries of `remove` go, then
    /// those of `add` are set.
    fn write_txindex(
        &mut self,
        remove: &[Hash],
        add: &[(Hash, TxLocation)],
        tip: (Hash, u64),
    ) -> Result<(), StoreError>;

    /// True if the store keeps the UTXO set as a snapshot plus a log of the commits since, and enough
    /// has changed since its snapshot that [`snapshot_utxos`](Self::snapshot_utxos) should be
    /// called; `utxo_count` is the set's size now. A store that writes the set at every
    /// commit ([`MemStore`]) answers false.
    fn snapshot_due(&self, utxo_count: u64) -> bool {
        let _ = utxo_count;
        false
    }

    /// Records `utxos`, the UTXO set as of the committed tip `tip` at `height`, as the
    /// snapshot [`load`](Self::load) starts from, durably. Nothing else changes: a failure
    /// leaves the previous snapshot in force.
    fn snapshot_utxos(&mut self, tip: Hash, height: u64, utxos: &UtxoSet) -> Result<(), StoreError> {
        let _ = (tip, height, utxos);
        Ok(())
    }
}
