//! Following the chain: when each block was first seen (the end of a transaction's latency),
//! which accepted transactions the main chain confirmed, and waits for confirmations.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use scalechain_client::types::NodeEvent;
use scalechain_client::{Client, ClientError};
use scalechain_types::Hash;

use super::submit::Counters;
use super::{Clock, NodeApi};

/// Notes the first time each block is seen on one node.
#[derive(Debug, Default)]
pub struct Watcher {
    height: u64,
    first_seen: HashMap<Hash, Duration>,
    counters: Option<Arc<Counters>>,
}

impl Watcher {
    /// A watcher of the blocks above `height`.
    pub fn new(height: u64) -> Watcher {
        Watcher { height, first_seen: HashMap::new(), counters: None }
    }

    /// Adds the transactions (coinbases aside) of each block it follows to
    /// `counters.confirmed`: the feedback of the schedules that adapt to confirmations.
    pub fn counting_into(mut self, counters: Arc<Counters>) -> Watcher {
        self.counters = Some(counters);
        self
    }

    /// The height followed so far.
    pub fn height(&self) -> u64 {
        self.height
    }

    /// When block `hash` was first seen.
    pub fn seen(&self, hash: &Hash) -> Option<Duration> {
        self.first_seen.get(hash).copied()
    }

    /// One look: every block up to the node's tip, then the tip's block again (a
    /// reorganisation can replace blocks below the height already followed).
    pub async fn poll<A: NodeApi, C: Clock>(&mut self, node: &A, clock: &C) -> Result<(), ClientError> {
        let tip = node.tip().await?;
        while self.height < tip.height {
            let b = node.block_txids(self.height + 1).await?;
            self.first_seen.entry(b.hash).or_insert_with(|| clock.now());
            if let Some(c) = &self.counters {
                c.confirmed.fetch_add(b.txids.len().saturating_sub(1) as u64, Ordering::Relaxed);
            }
            self.height += 1;
        }
        let b = node.block_txids(tip.height).await?;
        self.first_seen.entry(b.hash).or_insert_with(|| clock.now());
        Ok(())
    }

    /// Follows `node`'s tip events (`GET /events`) until `stop` is set: the block an event
    /// names is seen when the event arrives, and each event is followed by a look
    /// ([`Watcher::poll`]) for the blocks below it. While the stream cannot be opened (or after
    /// it broke) it looks every `interval` and tries the stream again.
    pub async fn follow<C: Clock>(
        &mut self,
        node: &Client,
        clock: &C,
        interval: Duration,
        stop: &AtomicBool,
    ) {
        /// How often a quiet stream checks `stop`.
        const CHECK: Duration = Duration::from_millis(100);
        while !stop.load(Ordering::Relaxed) {
            let Ok(events) = node.events().await else {
                let _ = self.poll(node, clock).await;
                clock.sleep(interval).await;
                continue;
            };
            let mut events = std::pin::pin!(events);
            while !stop.load(Ordering::Relaxed) {
                match tokio::time::timeout(CHECK, events.next()).await {
                    Err(_) => continue,
                    Ok(Some(Ok(NodeEvent::Tip(tip)))) => {
                        self.first_seen.entry(tip.hash).or_insert_with(|| clock.now());
                        let _ = self.poll(node, clock).await;
                    }
                    Ok(Some(Err(_)) | None) => break,
                }
            }
        }
    }
}

/// The transactions of `accepted` in the main-chain blocks `from + 1 ..= to` of `node`, each
/// with the time its block was first seen (now, for a block the watcher missed).
pub async fn confirmations<A: NodeApi, C: Clock>(
    node: &A,
    from: u64,
    to: u64,
    watcher: &Watcher,
    accepted: &HashMap<Hash, Duration>,
    clock: &C,
) -> Result<Vec<(Hash, Duration)>, ClientError> {
    let mut out = Vec::new();
    for h in from.saturating_add(1)..=to {
        let b = node.block_txids(h).await?;
        let when = watcher.seen(&b.hash).unwrap_or_else(|| clock.now());
        // The coinbase is never one of the load's.
        out.extend(b.txids.iter().skip(1).filter(|t| accepted.contains_key(t)).map(|t| (*t, when)));
    }
    Ok(out)
}

/// Follows the main chain of `node` from height `from` until every txid of `ids` is in a
/// block, `timeout` passes or `stop` is set, looking every `interval`; returns the txids still
/// unconfirmed and the height reached.
pub async fn wait_confirmed<A: NodeApi, C: Clock>(
    node: &A,
    mut ids: HashSet<Hash>,
    from: u64,
    timeout: Duration,
    interval: Duration,
    clock: &C,
    stop: &AtomicBool,
) -> Result<(HashSet<Hash>, u64), ClientError> {
    let deadline = clock.now() + timeout;
    let mut h = from;
    while !ids.is_empty() && clock.now() < deadline && !stop.load(Ordering::Relaxed) {
        let tip = node.tip().await?;
        while h < tip.height {
            for t in node.block_txids(h + 1).await?.txids {
                ids.remove(&t);
            }
            h += 1;
        }
        if !ids.is_empty() {
            clock.sleep(interval).await;
        }
    }
    Ok((ids, h))
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Mutex;

    use scalechain_client::ops::Method;
    use scalechain_client::types::{BlockTxids, Status, SubmitResult, Tip};
    use scalechain_types::Tx;

    use super::*;
    use crate::load::VirtualClock;

    /// A chain that grows by the blocks scheduled for each time: `(at, hash, txids)`; a reorg
    /// replaces the blocks above a height.
    pub(crate) struct FakeChain<'a> {
        pub clock: &'a VirtualClock,
        pub blocks: Mutex<Vec<(Duration, Hash, Vec<Hash>)>>,
        pub mempool: usize,
    }

    impl FakeChain<'_> {
        fn visible(&self) -> Vec<(Hash, Vec<Hash>)> {
            let now = self.clock.now();
            self.blocks.lock().unwrap().iter().filter(|b| b.0 <= now).map(|b| (b.1, b.2.clone())).collect()
        }
    }

    impl NodeApi for FakeChain<'_> {
        async fn status(&self) -> Result<Status, ClientError> {
            let v = self.visible();
            Ok(Status {
                chain_id: Hash([0; 32]),
                role: "peer".into(),
                peer_id: "p".into(),
                listen: vec![],
                height: v.len() as u64,
                tip: v.last().map_or(Hash([0; 32]), |b| b.0),
                mempool_txs: self.mempool,
                mempool_bytes: 0,
                peers: 2,
                orphans: 0,
                uptime_s: 0.0,
                clock_offset_ms: None,
                clock_warning: false,
                storage: Default::default(),
            })
        }
        async fn tip(&self) -> Result<Tip, ClientError> {
            let v = self.visible();
            Ok(Tip { height: v.len() as u64, hash: v.last().map_or(Hash([0; 32]), |b| b.0) })
        }
        async fn block_txids(&self, height: u64) -> Result<BlockTxids, ClientError> {
            let v = self.visible();
            let missing = || ClientError::Api {
                method: Method::Get,
                url: format!("/blocks/{height}/txids"),
                status: 404,
                code: "not-found".into(),
                message: "no block".into(),
            };
            let (hash, txids) = match usize::try_from(height).unwrap().checked_sub(1) {
                None => (h(0), vec![]),
                Some(i) => v.get(i).cloned().ok_or_else(missing)?,
            };
            Ok(BlockTxids { height, hash, time: 0, txids })
        }
        async fn submit(&self, _: &[Tx]) -> Result<SubmitResult, ClientError> {
            unreachable!("the watcher submits nothing")
        }
    }

    pub(crate) fn h(b: u8) -> Hash {
        Hash([b; 32])
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[tokio::test]
    async fn blocks_are_timed_when_first_seen_and_confirmations_take_those_times() {
        let clock = VirtualClock::new();
        let chain = FakeChain {
            clock: &clock,
            blocks: Mutex::new(vec![
                (ms(300), h(1), vec![h(100), h(11), h(12)]),
                (ms(900), h(2), vec![h(101), h(13)]),
                (ms(1_100), h(3), vec![h(102), h(14), h(99)]),
            ]),
            mempool: 0,
        };
        let mut w = Watcher::new(0);
        // Look every 250 ms until 1 s.
        while clock.now() <= ms(1_000) {
            w.poll(&chain, &clock).await.unwrap();
            clock.sleep(ms(250)).await;
        }
        assert_eq!((w.seen(&h(1)), w.seen(&h(2)), w.seen(&h(3))), (Some(ms(500)), Some(ms(1_000)), None));
        assert_eq!(w.height(), 2);
        // Accepted at 100 ms (11, 12, 13) and 700 ms (14); 99 was not ours; 15 never confirmed.
        let accepted: HashMap<Hash, Duration> =
            [(h(11), ms(100)), (h(12), ms(100)), (h(13), ms(700)), (h(14), ms(700)), (h(15), ms(700))].into();
        // Block 3 came after the last look: it counts from when it is read.
        clock.advance(ms(500));
        let c = confirmations(&chain, 0, 3, &w, &accepted, &clock).await.unwrap();
        assert_eq!(c, vec![(h(11), ms(500)), (h(12), ms(500)), (h(13), ms(1_000)), (h(14), ms(1_750))]);
    }

    #[tokio::test]
    async fn a_reorganised_tip_is_seen_again() {
        let clock = VirtualClock::new();
        let chain =
            FakeChain { clock: &clock, blocks: Mutex::new(vec![(ms(0), h(1), vec![h(100)])]), mempool: 0 };
        let mut w = Watcher::new(0);
        w.poll(&chain, &clock).await.unwrap();
        chain.blocks.lock().unwrap()[0] = (ms(0), h(7), vec![h(100)]);
        clock.advance(ms(40));
        w.poll(&chain, &clock).await.unwrap();
        assert_eq!((w.seen(&h(1)), w.seen(&h(7))), (Some(ms(0)), Some(ms(40))));
    }

    #[tokio::test]
    async fn waiting_for_confirmations_ends_when_all_are_in_or_at_the_timeout() {
        let clock = VirtualClock::new();
        let chain = FakeChain {
            clock: &clock,
            blocks: Mutex::new(vec![
                (ms(1_000), h(1), vec![h(100), h(11)]),
                (ms(3_000), h(2), vec![h(101), h(12)]),
            ]),
            mempool: 0,
        };
        let stop = AtomicBool::new(false);
        let ids: HashSet<Hash> = [h(11), h(12)].into();
        let (left, height) =
            wait_confirmed(&chain, ids.clone(), 0, Duration::from_secs(10), ms(200), &clock, &stop)
                .await
                .unwrap();
        assert!(left.is_empty());
        assert_eq!(height, 2);
        assert!(clock.now() >= ms(3_000) && clock.now() < ms(3_400));
        let clock = VirtualClock::new();
        let chain =
            FakeChain { clock: &clock, blocks: Mutex::new(chain.blocks.into_inner().unwrap()), mempool: 0 };
        let (left, height) =
            wait_confirmed(&chain, ids, 0, Duration::from_secs(2), ms(200), &clock, &stop).await.unwrap();
        assert_eq!((left, height), ([h(12)].into(), 1));
    }
}
