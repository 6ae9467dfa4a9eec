//! Nodes run in this test process with the explorer mounted as `scalechain node` mounts it (its
//! pages and the election pages): the node's own test helpers (`crates/node/tests/support/`,
//! included by path) with [`start`] mounting the pages, and the transactions the explorer's
//! tests send.
#![allow(dead_code, unused_imports, clippy::unwrap_used)]

#[path = "../../../node/tests/support/mod.rs"]
mod node;

use std::path::Path;

use scalechain_consensus::params::SigMode;
use scalechain_consensus::{genesis_block, Params};
use scalechain_node::{NodeConfig, Pages};
use scalechain_p2p::msg::Role;
use scalechain_types::{HashKind, OutPoint};

pub use node::{eventually, get, height, post, stop, transfers, transfers_with, Node};

/// Starts a node of `role` on `dir` (API on a free loopback port) with the explorer's pages,
/// joining through `bootstrap`, with `tweak` applied to its settings; returns once it is up.
pub async fn start(
    dir: &Path,
    role: Role,
    bootstrap: &[String],
    tweak: impl FnOnce(&mut NodeConfig),
) -> Node {
    let pages = Pages::none().with(scalechain_explorer::router).with(scalechain_explorer::election::router);
    node::start_with(dir, role, bootstrap, pages, tweak).await
}

/// A transfer of output 0 of `txid` (a transfer of premine output 0, as [`transfers`] makes)
/// back to the same key, carrying `data`: (txid, hex).
pub fn spend_first_output(txid: &str, data: &[u8]) -> (String, String) {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let chain_id = genesis_block(&p).hash(p.hash);
    let prev = OutPoint { txid: txid.parse().unwrap(), index: 0 };
    node::premine_key_transfer(&p, &chain_id, 0, prev, 4_000, data)
}
