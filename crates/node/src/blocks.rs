//! The block worker: the only writer of the chain. Blocks from gossip, sync and the node's own
//! miner arrive on one queue and are accepted in order by the replica (which brings the
//! mempool up to date before the chain lock is released); the worker adds the metrics and wakes
//! the tip watchers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use scalechain_p2p::net::PeerId;
use scalechain_p2p::protocol::{BlockOrigin, Input};
use scalechain_replica::{BlockOutcome, Replica};
use scalechain_types::Block;
use tokio::sync::{mpsc, oneshot};

use scalechain_chain::{Accepted, ChainError, ChainStore};

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

/// How long a block's acceptance waited for the chain's write lock (readers holding it: an
/// admission round, the miner's template, the API), then held it (validation, commit, the
/// mempool brought up to date). Their sum is the analogue of seed 003's block commit time
/// (Fig 5.7), which counts the commit thread's wait for the lock.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommitTime {
    /// The wait for the write lock.
    pub wait: Duration,
    /// The time the block held it.
    pub held: Duration,
}

/// Accepts `block` on `replica` at `now_ms`, timing the wait for the chain's write lock and the
/// hold (the replica says when it holds the lock; it reads no clock itself).
pub fn accept_timed<S: ChainStore>(
    replica: &Replica<S>,
    block: Block,
    now_ms: u64,
) -> (BlockOutcome, CommitTime) {
    let asked = Instant::now();
    let mut locked = None;
    let outcome = replica.accept_block_observed(block, now_ms, &mut || locked = Some(Instant::now()));
    let done = Instant::now();
    let locked = locked.unwrap_or(asked);
    let commit = CommitTime {
        wait: locked.saturating_duration_since(asked),
        held: done.saturating_duration_since(locked),
    };
    (outcome, commit)
}

fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Accepts one block at the node's clock, counts it and wakes the tip watchers.
pub fn accept(shared: &Shared, block: Block, origin: BlockOrigin<PeerId>) -> Outcome {
    shared.metrics.blocks_received.add(1);
    if shared.storage.halted() {
        return Outcome { outcome: refused(shared, &block), origin };
    }
    let t0 = Instant::now();
    let (outcome, commit) = {
        let _s = scalechain_types::profile::span("block.accept");
        accept_timed(&shared.replica, block, shared.now_ms())
    };
    shared.metrics.block_lock_wait.observe(commit.wait);
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
        let kind = Kind::Block {
            height: outcome.height,
            lock_wait_us: micros(commit.wait),
            lock_held_us: micros(commit.held),
        };
        shared.arrivals.record(kind, [outcome.hash], at, via);
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
