//! The load benchmark (`scalechain bench`): rounds of a workload offered at a network under a
//! rate controller, each measured as Hyperledger Caliper's report measures it and more.
//!
//! - [`spec`]: the benchmark file, checked before any load starts;
//! - [`run`]: the funds, the signed transactions, the rounds against the nodes;
//! - [`metrics`]: a round's measurements from what the generator logged and the chain
//!   confirmed;
//! - [`report`]: the results as CSV, Markdown, a self-contained HTML page and JSON.
//!
//! The generator is the one in [`crate::load`] (preparation, the offer, the block watcher),
//! with the rate controllers of [`crate::load::schedule`].

pub mod metrics;
pub mod report;
pub mod run;
pub mod spec;
