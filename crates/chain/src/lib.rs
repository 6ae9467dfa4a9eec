//! The chain state of a ScaleChain node: the block tree, the main chain, the in-memory UTXO set
//! and application state, kept in step with a durable [`ChainStore`].
//!
//! [`Chain::accept_block`] takes a block from anywhere (the network, an import, a miner) and
//! runs the consensus stages on it: stateless checks and header context on arrival, then
//! full connection when its branch becomes the one with the most work. Orphans wait (bounded)
//! for their parents. A reorganisation disconnects to the fork point with undo data and connects
//! the new branch on an overlay; only if the result has more work than the old tip is it
//! committed, in one atomic store commit, and applied to memory. A block that fails is marked
//! invalid with its descendants, and state is left exactly as it was.
//!
//! Invariant: after every public call, memory (tip, main chain, UTXO set, app state) equals what
//! the store would load. Time comes in as an argument; the only IO is through the store.

mod chain;
pub mod export;
mod orphans;

pub use chain::{Accepted, Chain, ChainError, OpenOptions, Reorg, VerifyReport};
pub use orphans::OrphanPool;
pub use scalechain_store::{ChainStore, DiskStore, MemStore, Shelf, StoreError, TxLocation};
