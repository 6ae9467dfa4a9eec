//! Seed 000's three-stage transaction pipeline: receive → bounded buffer → parallel batch
//! verification → apply (mempool) and relay.
//!
//! The receive stage is the API and the reactor (gossip); each pushes a batch into a bounded
//! channel and waits while it is full, so a flood slows its senders instead of growing the
//! queue (the reactor waiting stops it taking network events, and the swarm then stops reading
//! its sockets). The verify stage drains whatever is queued, up to `max_batch` transactions,
//! and admits it in one call (`Replica::admit_batches`: ledger checks and signature batches
//! spread over the rayon pool; a transaction whose parent is unknown is held as an orphan, and
//! orphans whose parents came are admitted and relayed). The verdicts go back to the API callers and, as one
//! `Input::TxsDone` round (`replica::TxsRound`, the simulator's mapping too), to the peer
//! protocol, which answers gossipsub and publishes what the API brought.
//!
//! For the study only, each admission round can first "execute" for a fixed time
//! (`mempool.execute_ms`, seed 003's chaincode execution), under the chain's read lock or
//! before it is taken (`mempool.execute_under_lock`): see [`admit`].

use std::sync::Arc;
use std::time::{Duration, Instant};

use scalechain_chain::ChainStore;
use scalechain_mempool::{Admitted, MempoolError, OrphanSource, TxVerdict};
use scalechain_p2p::msg::MsgId;
use scalechain_p2p::net::PeerId;
use scalechain_p2p::protocol::{TxOrigin, TxsDone};
use scalechain_replica::{Admission, Replica, TxsRound};
use scalechain_types::{profile, Hash, Tx};
use tokio::sync::{mpsc, oneshot};

use crate::arrivals::{self, Kind, Via};
use crate::config::Execution;
use crate::state::Shared;

/// Where a batch came from.
pub enum Source {
    /// The API; the verdicts go back on the channel, each with its transaction's txid.
    Api(oneshot::Sender<Vec<(Hash, Result<Admitted, MempoolError>)>>),
    /// A gossip message.
    Gossip {
        /// Its id.
        id: MsgId,
        /// The peer that forwarded it.
        peer: PeerId,
    },
    /// Fetched from a peer's mempool after the handshake (mempool sync).
    Pool {
        /// The peer.
        peer: PeerId,
    },
}

impl Source {
    /// Its share of the orphan pool: the peer's tag, or `None` for the API.
    pub fn orphan_source(&self) -> OrphanSource {
        match self {
            Source::Api(_) => None,
            Source::Gossip { peer, .. } | Source::Pool { peer } => Some(orphan_tag(peer)),
        }
    }
}

/// The orphan pool's tag for a peer (a hash of its id, fixed for the process's life).
pub fn orphan_tag(peer: &PeerId) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    peer.hash(&mut h);
    h.finish()
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

/// Runs the verify and apply stages until the buffer closes; each round's verdicts go to
/// `done` for the peer protocol.
pub async fn run(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Inbound>,
    done: mpsc::UnboundedSender<Vec<TxsDone<PeerId>>>,
) {
    let max_batch = shared.cfg.mempool.max_batch.max(1);
    // Start-up refused settings it does not take (`run::start_up`), so none is dropped here.
    let execution = shared.cfg.mempool.execution().ok().flatten();
    let group = Group {
        size: shared.cfg.mempool.group_size.clamp(1, max_batch),
        max: max_batch,
        wait: Duration::from_millis(shared.cfg.mempool.group_wait_ms),
    };
    while let Some(first) = rx.recv().await {
        let (mut items, n) = gather(&mut rx, first, group).await;
        for _ in 0..items.len() {
            shared.metrics.pipeline_depth.dec();
        }
        let now = Instant::now();
        for i in &items {
            shared.metrics.pipeline_wait.observe(now.duration_since(i.queued));
            profile::record("pipeline.wait", now.duration_since(i.queued));
        }
        // Verify stage: everything queued in one admission call, off the async threads.
        let batches: Vec<(Vec<Tx>, OrphanSource)> =
            items.iter_mut().map(|i| (std::mem::take(&mut i.txs), i.source.orphan_source())).collect();
        shared.metrics.txs_received.add(n as u64);
        let s = shared.clone();
        let t0 = Instant::now();
        let Ok(admission) = tokio::task::spawn_blocking(move || {
            let _s = profile::span("pipeline.verify");
            let hold = || {
                if let Some(e) = execution {
                    execute(e);
                }
            };
            admit(&s.replica, batches, &|| s.now_ms(), execution, &hold)
        })
        .await
        else {
            break;
        };
        shared.metrics.pipeline_verify.observe(t0.elapsed());
        // Apply stage: verdicts back to their sources; the protocol relays what the API brought
        // and the orphans that joined after their parents.
        let t1 = Instant::now();
        let mut round = TxsRound::with_capacity(items.len());
        shared.metrics.txs_admitted.add(admission.released.len() as u64);
        let at = arrivals::now_us();
        let txid = |t: &Arc<Tx>| t.txid(shared.replica.params.hash);
        shared.arrivals.record(Kind::Tx, admission.released.iter().map(txid), at, Via::Released);
        for (item, o) in items.into_iter().zip(admission.batches) {
            let via = match &item.source {
                Source::Api(_) => Via::Api,
                Source::Gossip { peer, .. } => Via::Gossip(*peer),
                Source::Pool { peer } => Via::Pool(*peer),
            };
            let admitted_ids = o.verdicts.iter().filter_map(|v| match v {
                TxVerdict::Admitted(a) => Some(a.txid),
                _ => None,
            });
            shared.arrivals.record(Kind::Tx, admitted_ids, at, via);
            let admitted = o.admitted.len() as u64;
            shared.metrics.txs_admitted.add(admitted);
            shared
                .metrics
                .txs_rejected
                .add(o.verdicts.iter().filter(|v| v.refusal().is_some()).count() as u64);
            match item.source {
                Source::Api(reply) => {
                    let (txids, verdicts) = round.push(TxOrigin::Local, o);
                    let verdicts = verdicts.into_iter().map(TxVerdict::into_result);
                    let _ = reply.send(txids.into_iter().zip(verdicts).collect());
                }
                Source::Gossip { id, peer } => {
                    round.push(TxOrigin::Gossip { source: peer, id }, o);
                }
                Source::Pool { peer } => {
                    round.push(TxOrigin::Pool(peer), o);
                }
            }
        }
        let round = round.finish(admission.released);
        if !round.is_empty() && done.send(round).is_err() {
            break;
        }
        shared.metrics.pipeline_relay.observe(t1.elapsed());
        profile::record("pipeline.relay", t1.elapsed());
    }
}

/// The study's execution, once: a sleep of its length (`mempool.execute_ms` says why a sleep),
/// profiled as `study.execute`.
fn execute(e: Execution) {
    let _s = profile::span("study.execute");
    std::thread::sleep(Duration::from_millis(e.ms));
}

/// One admission round of the verify stage, judged at the clock `now_ms` reads when the
/// judgement begins, with the study's execution `execution` (`mempool.execute_ms`; `hold`
/// runs it): under the lock, `hold` runs inside the chain's read guard the judgement runs in,
/// so a block's acceptance waits for it; lock-free, `hold` runs before the lock is taken and a
/// block's acceptance goes ahead meanwhile. Without an execution `hold` is not called.
pub fn admit<S: ChainStore>(
    replica: &Replica<S>,
    batches: Vec<(Vec<Tx>, OrphanSource)>,
    now_ms: &dyn Fn() -> u64,
    execution: Option<Execution>,
    hold: &dyn Fn(),
) -> Admission {
    match execution {
        None => replica.admit_batches(batches, now_ms()),
        Some(e) if e.under_lock => replica.admit_batches_holding(batches, now_ms(), hold),
        Some(_) => {
            hold();
            replica.admit_batches(batches, now_ms())
        }
    }
}

/// How the verify stage collects a group from the buffer (seed 000's group size).
#[derive(Clone, Copy, Debug)]
pub struct Group {
    /// Transactions to collect before verifying (at least 1).
    pub size: usize,
    /// Most transactions in a group.
    pub max: usize,
    /// Longest wait for `size`, from the first batch's arrival.
    pub wait: Duration,
}

/// A group starting with `first`: every batch already queued while the group holds fewer than
/// `g.max` transactions, then, while it holds fewer than `g.size`, batches as they come until
/// `g.wait` has passed. The batches and their transaction count.
pub async fn gather(rx: &mut mpsc::Receiver<Inbound>, first: Inbound, g: Group) -> (Vec<Inbound>, usize) {
    let deadline = tokio::time::Instant::now() + g.wait;
    let mut n = first.txs.len();
    let mut items = vec![first];
    while n < g.max {
        let next = match rx.try_recv() {
            Ok(i) => Some(i),
            Err(_) if n < g.size => tokio::time::timeout_at(deadline, rx.recv()).await.ok().flatten(),
            Err(_) => None,
        };
        let Some(i) = next else { break };
        n += i.txs.len();
        items.push(i);
    }
    (items, n)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc as std_mpsc;

    use parking_lot::Mutex;
    use scalechain_chain::{Accepted, Chain, MemStore};
    use scalechain_consensus::params::SigMode;
    use scalechain_consensus::{Apps, Params, VerifyConfig};
    use scalechain_mempool::MempoolConfig;
    use scalechain_types::{HashKind, Lock, Scheme};

    /// One admission round whose execution is held until the test releases it, and a block's
    /// acceptance started while it is held; the order of what happened.
    fn a_block_beside_a_held_execution(under_lock: bool) -> Vec<&'static str> {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let chain = Chain::open_or_init(MemStore::new(), &p, Apps::none(), VerifyConfig::parallel([1; 32]))
            .expect("a chain in memory");
        let r = Replica::new(chain, MempoolConfig::default());
        let now = p.genesis_time + 1_000;
        let reward = Lock { scheme: Scheme::Ed25519, pubkey_hash: HashKind::Sha256.hash(b"pipeline-test") };
        let mut block = r.block_template(reward, 10, now);
        assert!(scalechain_replica::solve(&mut block.header, p.hash, 1, &AtomicBool::new(false)));
        let events = Mutex::new(Vec::new());
        let (held, is_held) = std_mpsc::channel();
        let (release, released_rx) = std_mpsc::channel::<()>();
        let released_rx = Mutex::new(released_rx);
        let (done, is_done) = std_mpsc::channel();
        std::thread::scope(|s| {
            // Owned here, so that a failing assertion drops it and the held execution ends.
            let release = release;
            let (r, events) = (&r, &events);
            let admission = s.spawn(|| {
                let hold = || {
                    held.send(()).expect("the test waits");
                    released_rx.lock().recv().expect("the test releases");
                    events.lock().push("execution ends");
                };
                let execution = Some(Execution { ms: 1, under_lock });
                admit(r, vec![(vec![], None)], &|| now, execution, &hold)
            });
            is_held.recv().expect("the execution started");
            let commit = s.spawn(move || {
                let (outcome, time) = crate::blocks::accept_timed(r, block, now);
                let locked = Instant::now() - time.held;
                events.lock().push("block committed");
                let _ = done.send(());
                (outcome, locked)
            });
            if under_lock {
                // Until the acceptance queues for the write lock: a queued writer turns new
                // readers away (parking_lot's lock is task-fair), and nothing else does.
                while r.chain.try_read().is_some() {
                    assert!(
                        is_done.try_recv().is_err(),
                        "the block's acceptance went ahead of the execution"
                    );
                    std::thread::yield_now();
                }
            } else {
                // The acceptance goes ahead while the execution is held (a hang guard, not a
                // timing: under the lock it would wait for the release below forever).
                is_done
                    .recv_timeout(Duration::from_secs(60))
                    .expect("the block's acceptance waited for an execution outside the lock");
            }
            let released = Instant::now();
            events.lock().push("released");
            release.send(()).expect("the execution waits");
            let (outcome, locked) = commit.join().expect("the acceptance");
            assert!(matches!(outcome.result, Ok(Accepted::Connected(_))), "{:?}", outcome.result);
            if under_lock {
                assert!(locked >= released, "the measured wait covers the held execution");
            }
            let admission = admission.join().expect("the admission round");
            assert_eq!(admission.batches.len(), 1);
        });
        events.into_inner()
    }

    #[test]
    fn a_block_waits_for_an_execution_under_the_lock_and_not_for_one_before_it() {
        assert_eq!(a_block_beside_a_held_execution(true), ["released", "execution ends", "block committed"]);
        assert_eq!(a_block_beside_a_held_execution(false), ["block committed", "released", "execution ends"]);
    }

    fn batch(n: usize) -> Inbound {
        let (reply, _) = oneshot::channel();
        let tx = Tx {
            version: 1,
            kind: scalechain_types::TxKind::TRANSFER,
            inputs: vec![],
            outputs: vec![],
            data: vec![],
        };
        Inbound { txs: vec![tx; n], source: Source::Api(reply), queued: Instant::now() }
    }

    #[tokio::test(start_paused = true)]
    async fn a_group_takes_what_is_queued_and_waits_for_its_size_at_most_its_wait() {
        let (tx, mut rx) = mpsc::channel(16);
        let g = Group { size: 1, max: 10, wait: Duration::from_millis(5) };
        // Size 1: whatever is queued, no waiting.
        tx.send(batch(3)).await.unwrap();
        tx.send(batch(4)).await.unwrap();
        let first = rx.recv().await.unwrap();
        let (items, n) = gather(&mut rx, first, g).await;
        assert_eq!((items.len(), n), (2, 7));
        // At most `max`: the batch that crosses it ends the group, the rest stays queued.
        for k in [6, 6, 6] {
            tx.send(batch(k)).await.unwrap();
        }
        let first = rx.recv().await.unwrap();
        assert_eq!(gather(&mut rx, first, g).await.1, 12);
        assert_eq!(rx.try_recv().unwrap().txs.len(), 6);
        // Size 8: waits for more, up to the wait.
        let g8 = Group { size: 8, ..g };
        let sender = tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(2)).await;
            sender.send(batch(5)).await.unwrap();
            tokio::time::sleep(Duration::from_millis(10)).await;
            sender.send(batch(1)).await.unwrap();
        });
        let t0 = tokio::time::Instant::now();
        let (items, n) = gather(&mut rx, batch(2), g8).await;
        assert_eq!((items.len(), n), (2, 7), "the batch after the wait is not taken");
        assert_eq!(t0.elapsed(), Duration::from_millis(5));
        assert_eq!(rx.recv().await.unwrap().txs.len(), 1);
    }
}
