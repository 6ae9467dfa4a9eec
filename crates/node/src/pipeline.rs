//! Seed 000's three-stage transaction pipeline: receive → bounded buffer → parallel batch
//! verification → apply (mempool) and relay.
//!
//! The receive stage is the API and the gossip handler; each pushes a batch into a bounded
//! channel and waits while it is full, so a flood slows its senders instead of growing the
//! queue (the gossip handler waiting stops the swarm reading its sockets). The verify stage
//! drains whatever is queued, up to `max_batch` transactions, and admits it in one
//! `Mempool::admit` call: ledger checks and signature batches spread over the rayon pool.
//! Admitted transactions that came from the API are published in batches; a gossip message is
//! forwarded by gossipsub once the verdict says so.

use std::sync::Arc;
use std::time::{Duration, Instant};

use scalechain_mempool::{Admitted, MempoolError};
use scalechain_p2p::msg::{encode_tx_batch, group_for_batches};
use scalechain_p2p::net::{Command, MessageId, PeerId, Topic, Verdict};
use scalechain_p2p::score::Offence;
use scalechain_types::Tx;
use tokio::sync::{mpsc, oneshot};

use crate::state::Shared;

/// Where a batch came from.
pub enum Source {
    /// The API; the verdicts go back on the channel.
    Api(oneshot::Sender<Vec<Result<Admitted, MempoolError>>>),
    /// A gossip message.
    Gossip {
        /// Its id.
        id: MessageId,
        /// The peer that forwarded it.
        peer: PeerId,
    },
}

/// A batch of transactions entering the pipeline.
pub struct Inbound {
    /// The transactions.
    pub txs: Vec<Tx>,
    /// Where they came from.
    pub source: Source,
    /// When they entered the buffer.
    pub queued: Instant,
}

/// A penalty the pipeline wants the event loop to apply.
pub struct Penalty {
    /// The peer.
    pub peer: PeerId,
    /// What it did.
    pub offence: Offence,
}

/// Runs the verify and apply stages until the buffer closes.
pub async fn run(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Inbound>,
    net: mpsc::Sender<Command>,
    penalties: mpsc::UnboundedSender<Penalty>,
) {
    let max_batch = shared.cfg.mempool.max_batch.max(1);
    let max_msg_txs = shared.cfg.p2p.max_txs_per_message.max(1);
    let max_msg_bytes = shared.cfg.p2p.max_message_bytes.saturating_sub(1024).max(1024);
    while let Some(first) = rx.recv().await {
        shared.metrics.pipeline_depth.dec();
        let mut items = vec![first];
        let mut n = items[0].txs.len();
        while n < max_batch {
            match rx.try_recv() {
                Ok(i) => {
                    shared.metrics.pipeline_depth.dec();
                    n += i.txs.len();
                    items.push(i);
                }
                Err(_) => break,
            }
        }
        let now = Instant::now();
        for i in &items {
            shared.metrics.pipeline_wait.observe(now.duration_since(i.queued));
        }
        // Verify stage: everything queued in one admission call, off the async threads.
        let mut all = Vec::with_capacity(n);
        let mut spans = Vec::with_capacity(items.len());
        for i in &mut items {
            spans.push(i.txs.len());
            all.append(&mut i.txs);
        }
        shared.metrics.txs_received.add(n as u64);
        let s = shared.clone();
        let t0 = Instant::now();
        let Ok(verdicts) =
            tokio::task::spawn_blocking(move || s.with_admit_env(|env| s.mempool.admit(env, all))).await
        else {
            break;
        };
        shared.metrics.pipeline_verify.observe(t0.elapsed());
        // Apply stage: verdicts back to their sources, relay what the API brought.
        let t1 = Instant::now();
        let mut relay = Vec::new();
        let mut verdicts = verdicts.into_iter();
        for (item, len) in items.into_iter().zip(spans) {
            let mine: Vec<_> = verdicts.by_ref().take(len).collect();
            let admitted = mine.iter().filter(|v| v.is_ok()).count() as u64;
            shared.metrics.txs_admitted.add(admitted);
            shared.metrics.txs_rejected.add(len as u64 - admitted);
            match item.source {
                Source::Api(reply) => {
                    relay.extend(
                        mine.iter()
                            .flatten()
                            .filter_map(|a| shared.mempool.get(&a.txid))
                            .map(|e| e.tx.clone()),
                    );
                    let _ = reply.send(mine);
                }
                Source::Gossip { id, peer } => {
                    let invalid = mine.iter().any(|v| matches!(v, Err(e) if e.tx_rule().is_some()));
                    let verdict = if invalid {
                        let _ = penalties.send(Penalty { peer, offence: Offence::InvalidTx });
                        Verdict::Reject
                    } else if admitted > 0 {
                        Verdict::Accept
                    } else {
                        Verdict::Ignore
                    };
                    let _ = net.send(Command::Validate { id, source: peer, verdict }).await;
                }
            }
        }
        for group in group_for_batches(&relay, max_msg_bytes, max_msg_txs) {
            let data = encode_tx_batch(group.iter().map(|t| &**t));
            let _ = net.send(Command::Publish { topic: Topic::Txs, data }).await;
        }
        shared.metrics.pipeline_relay.observe(t1.elapsed());
    }
}

/// Hands a batch to the pipeline, waiting at most `wait` for room in the buffer.
pub async fn submit(
    shared: &Shared,
    tx: &mpsc::Sender<Inbound>,
    txs: Vec<Tx>,
    source: Source,
    wait: Duration,
) -> Result<(), &'static str> {
    let permit =
        tokio::time::timeout(wait, tx.reserve()).await.map_err(|_| "busy")?.map_err(|_| "stopping")?;
    shared.metrics.pipeline_depth.inc();
    permit.send(Inbound { txs, source, queued: Instant::now() });
    Ok(())
}
