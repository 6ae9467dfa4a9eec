//! The load generator: transactions offered to running nodes at a controlled rate, and what
//! the network made of them. The load benchmark's runner ([`crate::bench::run`]) drives it, for
//! `scalechain bench`, `scalechain devnet`, the shell's `load` and the study.
//!
//! - [`prepare`]: the load itself — coins split into one output per transaction to come, and
//!   every transaction signed before the clock starts, so the generator measures the network,
//!   not its own signing;
//! - [`ballots`]: seed 003's ballots as a load (an election, its voters, one ballot each);
//! - [`schedule`]: how many transactions are due by a time, given what the offer has done:
//!   the benchmark's rate controllers ([`schedule::Rate`]), separate from submission;
//! - [`clock`]: the time the driver reads and sleeps on: the system's, or a virtual one that
//!   tests drive;
//! - [`submit`]: the submitter — batches of at most 2,000 transactions per `POST /txs`,
//!   round-robin over the target nodes, open loop (a slow answer does not slow the offer),
//!   accepted and refused counts by reason;
//! - [`watch`]: the confirmation watcher (when each block was first seen, from the node's tip
//!   events, so latency runs to the block that confirmed a transaction; it can count
//!   confirmations into the offer's counters) and waits for confirmations;
//! - [`converge`]: waits over several nodes (connected, caught up, converged);
//! - [`rounds`]: the shell's continuous load, in rounds that fund, offer and settle;
//! - [`report`]: the summary devnet prints (text and JSON), percentiles, CPU accounting.
//!
//! Everything that talks to a node does it through [`NodeApi`], which the API client
//! implements and tests replace.

pub mod account;
pub mod ballots;
pub mod clock;
pub mod converge;
pub mod fund;
pub mod prepare;
pub mod report;
pub mod rounds;
pub mod schedule;
pub mod submit;
pub mod watch;

use std::future::Future;
use std::time::Duration;

use scalechain_client::types::{BlockId, BlockTxids, Status, SubmitResult, Tip};
use scalechain_client::{Client, ClientError};
use scalechain_types::Tx;

pub use clock::{Clock, SystemClock, VirtualClock};
#[cfg(test)]
pub use schedule::FixedRate;
pub use schedule::Schedule;

/// What the load needs of one node's API.
pub trait NodeApi: Sync {
    /// `GET /status`.
    fn status(&self) -> impl Future<Output = Result<Status, ClientError>> + Send;
    /// `GET /tip`.
    fn tip(&self) -> impl Future<Output = Result<Tip, ClientError>> + Send;
    /// `GET /blocks/{height}/txids`.
    fn block_txids(&self, height: u64) -> impl Future<Output = Result<BlockTxids, ClientError>> + Send;
    /// `POST /txs`.
    fn submit(&self, txs: &[Tx]) -> impl Future<Output = Result<SubmitResult, ClientError>> + Send;
}

impl NodeApi for Client {
    fn status(&self) -> impl Future<Output = Result<Status, ClientError>> + Send {
        Client::status(self)
    }

    fn tip(&self) -> impl Future<Output = Result<Tip, ClientError>> + Send {
        Client::tip(self)
    }

    fn block_txids(&self, height: u64) -> impl Future<Output = Result<BlockTxids, ClientError>> + Send {
        Client::block_txids(self, BlockId::Height(height))
    }

    fn submit(&self, txs: &[Tx]) -> impl Future<Output = Result<SubmitResult, ClientError>> + Send {
        Client::submit(self, txs)
    }
}

/// Why a load could not go on.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// A node's API failed.
    #[error(transparent)]
    Api(#[from] ClientError),
    /// There is no node to send to.
    #[error("no target node")]
    NoTargets,
    /// The nodes did not connect in time.
    #[error("nodes did not connect within {} s", .0.as_secs())]
    NotConnected(Duration),
    /// A node did not reach a height in time.
    #[error("{name} did not reach the funded height {height} in {} s", after.as_secs())]
    Behind {
        /// The node.
        name: String,
        /// The height.
        height: u64,
        /// The time-out.
        after: Duration,
    },
    /// Funding transactions were refused.
    #[error("funding refused: {0}")]
    FundingRefused(String),
    /// Funding transactions were not confirmed in time.
    #[error("only {funded}/{total} funding transactions confirmed in {} s", after.as_secs())]
    NotFunded {
        /// Confirmed.
        funded: usize,
        /// Sent.
        total: usize,
        /// The time-out.
        after: Duration,
    },
    /// The coins cannot fund the load.
    #[error("{0}")]
    NoFunds(String),
    /// Ctrl-C, or the caller's stop flag.
    #[error("stopped")]
    Stopped,
    /// A task of the load (watcher, progress) failed.
    #[error("a task of the load failed: {0}")]
    Task(String),
}
