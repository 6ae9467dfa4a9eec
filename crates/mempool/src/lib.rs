//! ScaleChain's transaction pool.
//!
//! A node's API and p2p pipeline [`Mempool::admit`] batches of transactions; miners ask for a
//! [`Mempool::template`]; the chain task calls [`Mempool::remove_block`] for each connected
//! block and [`Mempool::reorg`] with the transactions of disconnected ones.
//!
//! - **Concurrency.** One writer at a time (a mutex only writers take) publishes immutable
//!   [`Snapshot`]s by an atomic pointer swap; readers load the current one without locking and
//!   may hold it indefinitely. A snapshot's entries are immutable sorted runs shared with
//!   the writer's map (each publication seals the changes since the last into a new run; runs
//!   merge so that there are O(log n)), so publishing does not copy the pool.
//! - **Admission.** Each transaction is judged by the consensus rules (`verify_txs`, parallel
//!   batches) against the chain's UTXOs plus the outputs of pooled transactions, less what
//!   pooled transactions spend; chains of unconfirmed transactions in one batch are admitted in
//!   generations. Policy on top: duplicates, conflicts (no replacement) over spent outputs and
//!   over application keys (`AppModule::conflict_keys`: e.g. one pooled ballot per voter and
//!   election; a block holding a key takes the pooled holder out), ancestor and
//!   descendant limits, minimum fee rate, dust, size, and eviction of the lowest fee rates
//!   when full ([`MempoolError`] names each).
//! - **Signature cache.** Admitted transactions' wtxids enter a bounded [`SignatureCache`]
//!   that block connection (`Chain::set_sig_cache`) and re-admission after a reorganisation
//!   consult, so each signature is verified once per node.
//! - **Orphans.** [`Mempool::offer`] holds a transaction whose parent is unknown in a bounded
//!   [`OrphanPool`] (count, bytes, a share per source, an expiry) instead of refusing it, and
//!   admits it when the parent is admitted or confirmed ([`Mempool::offer_orphans_of`]); its
//!   [`TxVerdict`] says `Orphan`, distinct from admitted and refused.
//! - **Templates.** Highest ancestor-package fee rate first, parents before children, within
//!   byte and count limits.
//!
//! Pure like the consensus crate: no IO, no clock, no randomness; the chain state, the
//! verification seed and the block height and time come in through the consensus crate's
//! `TxEnv` (the environment `verify_txs` judges transactions in, describing the next block on
//! the chain's tip; `Chain::next_block_env` builds it).
//!
//! Where each part lives (one interface per file):
//! - `mempool`: the [`Mempool`] facade: the writer's lock, the published snapshot, and each
//!   operation's sequence (prepare, judge, hold orphans, count, publish);
//! - `admission`: the admission engine: generations, parallel verification, and the two
//!   stages that check signatures beside the ledger rules (the performance machinery);
//! - `policy`: the rules beyond consensus that decide what the pool takes (size, dust,
//!   fee rate, fee-less space, conflicts, chain limits and eviction applied, orphans held);
//! - `pool`: the writer's graph of pooled transactions (spends, application keys, ancestor
//!   and descendant walks, the eviction order), which the policy asks;
//! - `outcome`: what the operations return ([`Admitted`], [`TxVerdict`], [`Removed`], ...);
//! - `snapshot` and `layers`: what readers see; `orphan`, `sigcache`, `removed`, `config`,
//!   `error`: the orphan pool, the signature cache, the removal log, the settings, the
//!   refusals.

mod admission;
mod config;
mod error;
mod layers;
mod mempool;
mod orphan;
mod outcome;
mod policy;
mod pool;
mod removed;
mod sigcache;
mod snapshot;

pub use config::MempoolConfig;
pub use error::MempoolError;
pub use mempool::Mempool;
pub use orphan::{OrphanConfig, OrphanCounters, OrphanPool, OrphanSource, OrphanStats, Released};
pub use outcome::{Admitted, HeldOrphan, Offered, Removed, ReorgOutcome, TxVerdict};
pub use removed::{Departure, Removal, RemovedPage};
pub use sigcache::SignatureCache;
pub use snapshot::{Counters, PoolEntry, Snapshot, Stats, Template};
