//! ScaleChain's consensus rules, as pure functions of their inputs.
//!
//! Validation runs in stages, each its own function, each testable alone:
//! 1. [`check::check_tx`] / [`check::check_block`]: stateless rules (structure, limits, proof of
//!    work, Merkle root, coinbase shape);
//! 2. [`check::check_header_context`]: the header against its parent and ancestors (height,
//!    target from the retarget rule, median-time-past, future drift);
//! 3. [`connect::connect_block`]: contextual rules against a [`UtxoView`] (unspent, mature, key
//!    matches lock, values, coinbase pays at most subsidy + fees, application modules), while the
//!    signature jobs run in parallel in the [`verify`] engine; the result is a diff plus undo data.
//!
//! Every rule has its own error variant ([`TxRule`], [`BlockError`]); a failure names the block,
//! the transaction and the input or output it concerns.
//!
//! Invariants: nothing here does IO, reads a clock, or draws randomness. The current time and
//! the batch-verification seed come in as arguments, so simulations and tests run exactly the
//! production logic. An invalid block yields an error and no diff: state only changes when the
//! caller applies a [`connect::BlockDiff`].

pub mod app;
pub mod check;
pub mod connect;
pub mod error;
pub mod fuzz;
pub mod params;
pub mod pow;
pub mod tree;
pub mod txverify;
pub mod utxo;
pub mod verify;

pub use app::{AppContext, AppError, AppModule, AppOverlay, AppStateView, Apps};
pub use check::CheckedBlock;
pub use connect::{connect_block, disconnect_block, BlockDiff, BlockUndo};
pub use error::{BlockError, BlockRejection, TxRule};
pub use params::{genesis_block, Params, SigMode};
pub use tree::{BlockTree, TreeError};
pub use txverify::{
    verify_signatures, verify_txs, verify_txs_with_ids, SignatureWork, TxEnv, TxIds, TxVerdict,
};
pub use utxo::{Coin, UtxoSet, UtxoView};
pub use verify::{SigCache, VerifyConfig, VerifyMode};
