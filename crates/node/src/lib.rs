//! The running ScaleChain node.
//!
//! - [`config`]: settings with documented defaults (TOML);
//! - `state`: what the tasks share (the replica — chain behind a read-write lock, mempool —,
//!   peers, metrics);
//! - `pipeline`: seed 000's receive → buffer → verify → apply pipeline for transactions;
//! - `blocks`: the block worker, the chain's only writer;
//! - `storage`: whether the node can write its data directory (free space, failed store
//!   writes); while it cannot, blocks and transactions are refused;
//! - `known`: the persisted peer book (`DATA_DIR/peers.json`), dialled again at start;
//! - `miner`: the miner thread (template and nonce search are the replica's);
//! - `api`: the HTTP API and its OpenAPI document;
//! - `serve`: serving the API within connection, header, body and request limits;
//! - `fds`: the open-file limit raised at start and budgeted between the API, the
//!   peer-to-peer sockets and the store;
//! - `metrics`: the OpenMetrics exposition (`prometheus-client`);
//! - `profile`: the function profiler's statistics, persisted in `DATA_DIR/profile.json`;
//! - `arrivals`: when each transaction and block arrived, and from where (`GET /arrivals`);
//! - [`null`]: the null target — the API as the load benchmark uses it, accepting every
//!   transaction unverified (it measures the load generator);
//! - `run`: start-up, the wiring, the reactor that drives the peer protocol, and shutdown
//!   ([`run()`]);
//! - [`view`]: what pages served beside the API read of the node ([`NodeView`]) and the routes
//!   a caller mounts there ([`Pages`]) — the web explorer (`scalechain-explorer`) sits above
//!   the node and is mounted so by `scalechain node`.
//!
//! Consensus stays in `consensus` and `chain`, the peer protocol in `p2p::protocol`, the
//! node's synchronous steps in `replica`: the node only moves data between the network, the
//! API, its threads and those crates.

// The modules are the node's own; its interface is the configuration, `run`, the view the
// pages beside the API read and what `node.json` says. Everything else other crates need lives in `replica`, `p2p` and `client`.
mod api;
mod arrivals;
mod blocks;
pub mod config;
mod fds;
mod known;
mod metrics;
mod miner;
pub mod null;
mod pipeline;
mod profile;
mod redial;
mod run;
mod serve;
mod state;
mod storage;
pub mod view;

pub use config::NodeConfig;
pub use run::{params_of, run, shutdown_signal, NodeError, NodeInfo};
pub use view::{NodeView, Pages};
