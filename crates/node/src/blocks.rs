//! The block worker: the only writer of the chain. Blocks from gossip, sync and the node's own
//! miner arrive on one queue and are accepted in order by the replica (which brings the
//! mempool up to date before the chain lock is released); the worker adds the metrics and wakes
//! the tip watchers.

use std::sync::Arc;
use std::time::Instant;

use scalechain_p2p::net::PeerId;
use scalechain_p2p::protocol::{BlockOrigin, Input};
use scalechain_replica::BlockOutcome;
use scalechain_types::Block;
use tokio::sync::{mpsc, oneshot};

use scalechain_chain::{Accepted, ChainError};

use crate::arrivals::{self, Kind, Via};
use crate::state::Shared;

/// A block to accept.
pub struct BlockJob {
    /// The block.
    pub block: Block,
    /// Where it came from.
    pub origin: BlockOrigin<PeerId>,
    /// Told the outcome, if someone waits (the miner).
    pub reply: Option<oneshot::Sender<Outcome>>,
}

/// The result of accepting one block.
#[derive(Debug)]
pub struct Outcome {
    /// What the replica did.
    pub outcome: BlockOutcome,
    /// Where the block came from.
    pub origin: BlockOrigin<PeerId>,
}

impl Outcome {
    /// The peer protocol's input for it.
    pub fn input(self) -> Input<PeerId> {
        let o = self.outcome;
        Input::BlockDone { hash: o.hash, height: o.height, verdict: o.verdict(), origin: self.origin }
    }
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

/// The outcome of a block refused, unread, while the node cannot write its data directory: a
/// store failure, which the peer protocol does not hold against the sender.
fn refused(shared: &Shared, block: &Block) -> BlockOutcome {
    BlockOutcome {
        hash: block.header.hash(shared.replica.params.hash),
        height: block.header.height,
        result: Err(ChainError::Store(shared.storage.refusal())),
        new_tip: None,
        connected: 0,
        disconnected: 0,
        removed: Default::default(),
        reorg: Default::default(),
        released: Vec::new(),
        snapshot_failure: None,
    }
}

/// Accepts one block at the node's clock, counts it and wakes the tip watchers.
pub fn accept(shared: &Shared, block: Block, origin: BlockOrigin<PeerId>) -> Outcome {
    shared.metrics.blocks_received.add(1);
    if shared.storage.halted() {
        return Outcome { outcome: refused(shared, &block), origin };
    }
    let t0 = Instant::now();
    let outcome = {
        let _s = scalechain_types::profile::span("block.accept");
        shared.replica.accept_block(block, shared.now_ms())
    };
    if let Err(ChainError::Store(e)) = &outcome.result {
        shared.storage.write_failed(e);
    }
    if let Some(why) = &outcome.snapshot_failure {
        tracing::warn!("the store's UTXO snapshot failed (nothing lost; tried again later): {why}");
    }
    let at = arrivals::now_us();
    if matches!(outcome.result, Ok(Accepted::Connected(_) | Accepted::SideBranch | Accepted::Orphan)) {
        let via = match &origin {
            BlockOrigin::Gossip { source, .. } => Via::Gossip(*source),
            BlockOrigin::Sync(peer) => Via::Sync(*peer),
            BlockOrigin::Local { .. } => Via::Mined,
        };
        shared.arrivals.record(Kind::Block { height: outcome.height }, [outcome.hash], at, via);
    }
    let kind = shared.replica.params.hash;
    shared.arrivals.record(Kind::Tx, outcome.released.iter().map(|t| t.txid(kind)), at, Via::Released);
    if let Some(tip) = outcome.new_tip {
        if outcome.disconnected > 0 {
            shared.metrics.reorgs.add(1);
        }
        shared.metrics.blocks_connected.add(outcome.connected as u64);
        shared.tip_changed.send_replace(tip);
    }
    if outcome.rejected() {
        shared.metrics.blocks_rejected.add(1);
    }
    if !outcome.released.is_empty() {
        shared.metrics.txs_admitted.add(outcome.released.len() as u64);
    }
    shared.metrics.block_accept.observe(t0.elapsed());
    Outcome { outcome, origin }
}
