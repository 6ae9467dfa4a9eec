//! The block worker: the only writer of the chain. Blocks from gossip, sync and the node's own
//! miner arrive on one queue and are accepted in order; each change of tip updates the
//! mempool (confirmed and conflicting transactions leave, a reorganisation's transactions
//! return) and the tip watchers, all before the chain lock is released, so
//! admission never sees a tip and a mempool that disagree.

use std::sync::Arc;
use std::time::Instant;

use scalechain_chain::{Accepted, ChainError};
use scalechain_types::{Block, Hash};
use tokio::sync::{mpsc, oneshot};

use crate::state::{now_ms, Shared};

/// Where a block came from.
#[derive(Debug)]
pub enum Origin {
    /// Gossip from a peer (the verdict goes back to gossipsub).
    Gossip {
        /// The peer that forwarded it.
        source: scalechain_p2p::net::PeerId,
        /// The gossip message id.
        id: scalechain_p2p::net::MessageId,
    },
    /// A sync response from a peer.
    Sync(scalechain_p2p::net::PeerId),
    /// This node's miner, with the block's encoding (published if it connects).
    Local(Vec<u8>),
}

/// A block to accept.
pub struct BlockJob {
    /// The block.
    pub block: Block,
    /// Where it came from.
    pub origin: Origin,
    /// Told the outcome, if someone waits.
    pub reply: Option<oneshot::Sender<Outcome>>,
}

/// The result of accepting one block.
#[derive(Debug)]
pub struct Outcome {
    /// The block's hash.
    pub hash: Hash,
    /// Its height.
    pub height: u64,
    /// What the chain did (or why it refused).
    pub result: Result<Accepted, ChainError>,
    /// Where it came from.
    pub origin: Origin,
}

/// Runs the worker on the current thread until the queue closes; outcomes go to `done`.
pub fn run(shared: Arc<Shared>, mut jobs: mpsc::Receiver<BlockJob>, done: mpsc::UnboundedSender<Outcome>) {
    while let Some(job) = jobs.blocking_recv() {
        let outcome = accept(&shared, job.block, job.origin);
        match job.reply {
            Some(r) => {
                let _ = r.send(outcome);
            }
            None => {
                let _ = done.send(outcome);
            }
        }
    }
}

/// Accepts one block and brings the mempool and watchers up to date (the chain store's txid
/// index changed in the block's own commit).
pub fn accept(shared: &Shared, block: Block, origin: Origin) -> Outcome {
    let hash = block.header.hash(shared.params.hash);
    let height = block.header.height;
    shared.metrics.blocks_received.add(1);
    let t0 = Instant::now();
    let mut chain = shared.chain.write();
    // Kept for the mempool if the block connects (one copy, moved out below).
    let mut kept = Some(block.clone());
    let result = chain.accept_block(block, now_ms());
    if let Ok(Accepted::Connected(reorg)) = &result {
        let fetch = |h: &Hash| -> Option<Block> {
            match kept.take() {
                Some(b) if *h == hash => Some(b),
                other => {
                    kept = other;
                    chain.block(h).ok().flatten()
                }
            }
        };
        let connected: Vec<Block> = reorg.connected.iter().filter_map(fetch).collect();
        for b in &connected {
            shared.mempool.remove_block(b, chain.apps(), chain.params());
        }
        let c = &*chain;
        if !reorg.disconnected.is_empty() {
            shared.metrics.reorgs.add(1);
            let env = c.next_block_env(now_ms());
            shared.mempool.reorg(&env, reorg.returned.clone());
        }
        let _ = shared.tip_changed.send((c.tip_height(), c.tip()));
        shared.metrics.blocks_connected.add(connected.len() as u64);
    } else if let Err(e) = &result {
        if e.rejection().is_some() {
            shared.metrics.blocks_rejected.add(1);
        }
    }
    shared.metrics.block_accept.observe(t0.elapsed());
    Outcome { hash, height, result, origin }
}
