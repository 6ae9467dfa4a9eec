//! The running ScaleChain node.
//!
//! - [`config`]: settings with documented defaults (TOML);
//! - [`state`]: what the tasks share (chain behind a read-write lock, mempool, index, peers);
//! - [`pipeline`]: seed 000's receive → buffer → verify → apply pipeline for transactions;
//! - [`blocks`]: the block worker, the chain's only writer;
//! - [`miner`]: block templates and the nonce search;
//! - [`api`]: the HTTP API and its OpenAPI document;
//! - [`metrics`]: the Prometheus exposition;
//! - [`run`]: start-up, the network event loop and shutdown.
//!
//! Consensus stays in `consensus` and `chain`: the node only moves data between the network,
//! the API and those crates.

pub mod api;
pub mod blocks;
pub mod config;
pub mod metrics;
pub mod miner;
pub mod pipeline;
pub mod run;
pub mod state;

pub use config::NodeConfig;
pub use run::{run, NodeError, NodeInfo};
