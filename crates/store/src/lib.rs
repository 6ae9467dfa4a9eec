//! ScaleChain's durable store: blocks, undo data, the main-chain index, the UTXO set and
//! application state, behind the [`ChainStore`] trait.
//!
//! Two engines implement it: [`DiskStore`] (fjall, an LSM-tree with a write-ahead journal) for
//! nodes, and [`MemStore`] for tests and simulations.
//!
//! Invariants:
//! - [`ChainStore::commit`] is atomic and durable: after a crash at any moment the store reopens
//!   with either all of a commit or none of it (one fjall batch, fsynced).
//! - Blocks written with [`ChainStore::put_block`] may be lost in a crash if no commit followed;
//!   they are only ever referenced by a later commit, so losing them loses nothing committed.
//! - [`ChainStore::load`] checks the stored state for consistency (tip against the height
//!   index, UTXO count and total against the values committed with them) and refuses a store
//!   that fails, with [`StoreError::Corrupt`] saying what disagreed.
//! - After any failed write the store is poisoned: every later call fails with
//!   [`StoreError::Poisoned`] until it is reopened, so a half-known state is never extended.
//!
//! What it must not do: validate. It stores what the chain layer has validated.

mod disk;
mod mem;

pub use disk::DiskStore;
pub use mem::MemStore;

use scalechain_consensus::{BlockUndo, Coin};
use scalechain_types::{Block, Hash, Header, OutPoint};

/// The on-disk format version this code reads and writes.
pub const FORMAT_VERSION: u32 = 1;

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The underlying engine failed.
    #[error("storage engine: {0}")]
    Engine(String),
    /// Stored bytes do not decode or do not agree with each other.
    #[error("store is corrupt: {0}")]
    Corrupt(String),
    /// A previous write failed; reopen the store.
    #[error("store is poisoned by an earlier failed write; reopen it")]
    Poisoned,
    /// The data directory holds another format version.
    #[error("data directory format {found} is not supported (this build reads {FORMAT_VERSION}); use --reindex or another data directory")]
    Version {
        /// The version found.
        found: u32,
    },
    /// `init` on a store that already holds a chain.
    #[error("store already holds a chain")]
    AlreadyInitialised,
}

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
}
