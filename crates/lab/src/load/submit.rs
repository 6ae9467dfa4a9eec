//! The submitter: on every tick, the transactions the schedule says are due go out in
//! requests of at most [`OfferConfig::max_batch`], round-robin over the target nodes. Open
//! loop: requests run concurrently with the ticks, so a slow answer does not slow the offer. A
//! transaction counts as accepted when a node's verdict accepts it, at the time that answer
//! arrived.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::stream::{FuturesUnordered, StreamExt};

use scalechain_client::types::SubmitResult;
use scalechain_client::ClientError;
use scalechain_types::{Hash, HashKind, Tx};

use super::schedule::Progress;
use super::{Clock, LoadError, NodeApi, Schedule};

/// How the offer runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OfferConfig {
    /// Time between two rounds of requests.
    pub tick: Duration,
    /// Most transactions in one request (the node's default limit is 10,000).
    pub max_batch: usize,
    /// The chain's hash function (txids).
    pub hash: HashKind,
}

impl Default for OfferConfig {
    /// Every 100 ms, at most 2,000 per request, SHA-256.
    fn default() -> OfferConfig {
        OfferConfig { tick: Duration::from_millis(100), max_batch: 2_000, hash: HashKind::Sha256 }
    }
}

/// Live counts, readable while the offer runs (progress lines, the shell's `load status`).
#[derive(Debug, Default)]
pub struct Counters {
    /// Transactions sent.
    pub offered: AtomicU64,
    /// Accepted by a node.
    pub accepted: AtomicU64,
    /// Refused, or lost with a failed request.
    pub refused: AtomicU64,
    /// Transactions in the blocks a [`Watcher`](super::watch::Watcher) counting into these
    /// counters has seen (any transactions, not only the offer's): the feedback of the
    /// schedules that adapt to confirmations.
    pub confirmed: AtomicU64,
}

impl Counters {
    /// (offered, accepted, refused).
    pub fn get(&self) -> (u64, u64, u64) {
        (
            self.offered.load(Ordering::Relaxed),
            self.accepted.load(Ordering::Relaxed),
            self.refused.load(Ordering::Relaxed),
        )
    }
}

/// What an offer did.
#[derive(Debug, Default)]
pub struct Offered {
    /// Each accepted transaction, with the clock's time of the answer that accepted it.
    pub accepted_at: HashMap<Hash, Duration>,
    /// Refused transactions by reason (`api: <error>` for those of a failed request).
    pub refused: BTreeMap<String, u64>,
    /// Transactions sent.
    pub offered: usize,
    /// Requests made.
    pub requests: usize,
    /// Each request: the range of the load it carried and the clock's time it was sent.
    pub sent: Vec<(std::ops::Range<usize>, Duration)>,
    /// The clock's time when the offer began and when its last answer came.
    pub started: Duration,
    /// See `started`.
    pub ended: Duration,
}

/// One finished request: its slice of the load, its answer, when it came.
type Done = (usize, usize, Result<SubmitResult, ClientError>, Duration);

impl Offered {
    fn record(&mut self, txs: &[Tx], done: Done, hash: HashKind, counters: &Counters) {
        let (lo, hi, answer, at) = done;
        let chunk = &txs[lo..hi];
        match answer {
            Ok(r) => {
                for (t, v) in chunk.iter().zip(r.results) {
                    if v.accepted {
                        self.accepted_at.insert(t.txid(hash), at);
                        counters.accepted.fetch_add(1, Ordering::Relaxed);
                    } else {
                        *self.refused.entry(v.reason.unwrap_or_default()).or_default() += 1;
                        counters.refused.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            Err(e) => {
                *self.refused.entry(format!("api: {e}")).or_default() += chunk.len() as u64;
                counters.refused.fetch_add(chunk.len() as u64, Ordering::Relaxed);
            }
        }
    }
}

/// Offers `txs` on `schedule` (transaction `i` once `i + 1` are due) to `targets`, until all
/// are sent, or the schedule ends, or `stop` is set, and waits for the answers.
pub async fn offer<A: NodeApi, C: Clock, S: Schedule>(
    txs: &[Tx],
    schedule: &mut S,
    targets: &[A],
    clock: &C,
    cfg: &OfferConfig,
    counters: &Counters,
    stop: &AtomicBool,
) -> Result<Offered, LoadError> {
    if targets.is_empty() {
        return Err(LoadError::NoTargets);
    }
    let max_batch = cfg.max_batch.max(1);
    let start = clock.now();
    let mut out = Offered { started: start, ..Offered::default() };
    let total = txs.len().min(usize::try_from(schedule.total()).unwrap_or(usize::MAX));
    let mut next = 0usize;
    let mut tick = 0u32;
    let mut inflight = FuturesUnordered::new();
    let confirmed0 = counters.confirmed.load(Ordering::Relaxed);
    let (offered0, refused0) =
        (counters.offered.load(Ordering::Relaxed), counters.refused.load(Ordering::Relaxed));
    let schedule_end = schedule.ends();
    let ended = |now: Duration| schedule_end.is_some_and(|e| now.saturating_sub(start) >= e);
    while next < total && !stop.load(Ordering::Relaxed) && !ended(clock.now()) {
        tick = tick.saturating_add(1);
        let at = start + cfg.tick * tick;
        // Wait for the tick, taking in the answers that come meanwhile.
        loop {
            tokio::select! {
                biased;
                Some(done) = inflight.next(), if !inflight.is_empty() => out.record(txs, done, cfg.hash, counters),
                () = clock.sleep_until(at) => break,
            }
        }
        let now = clock.now();
        if ended(now) {
            break;
        }
        let progress = Progress {
            elapsed: now.saturating_sub(start),
            offered: counters.offered.load(Ordering::Relaxed).saturating_sub(offered0),
            confirmed: counters.confirmed.load(Ordering::Relaxed).saturating_sub(confirmed0),
            refused: counters.refused.load(Ordering::Relaxed).saturating_sub(refused0),
        };
        let due = usize::try_from(schedule.due(&progress)).unwrap_or(usize::MAX).min(total);
        while next < due {
            let (lo, hi) = (next, due.min(next + max_batch));
            let target = &targets[out.requests % targets.len()];
            out.requests += 1;
            out.sent.push((lo..hi, now));
            counters.offered.fetch_add((hi - lo) as u64, Ordering::Relaxed);
            inflight.push(async move {
                let answer = target.submit(&txs[lo..hi]).await;
                (lo, hi, answer, clock.now())
            });
            next = hi;
        }
    }
    while let Some(done) = inflight.next().await {
        out.record(txs, done, cfg.hash, counters);
    }
    out.offered = next;
    out.ended = clock.now();
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Mutex;

    use scalechain_client::ops::Method;
    use scalechain_client::types::{BlockTxids, Status, Tip, TxResult};

    use super::*;
    use crate::load::{FixedRate, VirtualClock};

    /// A node that records each request (which target, how many, when) and refuses every
    /// transaction whose coinbase height is a multiple of `refuse_every`; `fail` makes every
    /// request fail.
    struct Fake<'a> {
        id: usize,
        clock: &'a VirtualClock,
        log: &'a Mutex<Vec<(usize, usize, Duration)>>,
        refuse_every: u64,
        fail: bool,
    }

    impl NodeApi for Fake<'_> {
        async fn status(&self) -> Result<Status, ClientError> {
            unreachable!("the submitter reads no status")
        }
        async fn tip(&self) -> Result<Tip, ClientError> {
            unreachable!("the submitter reads no tip")
        }
        async fn block_txids(&self, _: u64) -> Result<BlockTxids, ClientError> {
            unreachable!("the submitter reads no block")
        }
        async fn submit(&self, txs: &[Tx]) -> Result<SubmitResult, ClientError> {
            self.log.lock().unwrap().push((self.id, txs.len(), self.clock.now()));
            if self.fail {
                return Err(ClientError::Unreachable {
                    method: Method::Post,
                    url: "x".into(),
                    detail: "refused".into(),
                });
            }
            let results: Vec<TxResult> = txs
                .iter()
                .map(|t| {
                    let h = u64::from_le_bytes(t.data[..8].try_into().unwrap());
                    let ok = h % self.refuse_every != 0;
                    TxResult {
                        txid: Some(t.txid(HashKind::Sha256)),
                        accepted: ok,
                        reason: (!ok).then(|| "low-fee".to_string()),
                        detail: None,
                    }
                })
                .collect();
            Ok(SubmitResult { accepted: results.iter().filter(|r| r.accepted).count(), results })
        }
    }

    fn txs(n: u64) -> Vec<Tx> {
        (1..=n).map(|h| Tx::coinbase(h, vec![])).collect()
    }

    #[tokio::test]
    async fn the_offer_follows_the_schedule_in_bounded_batches_round_robin() {
        let clock = VirtualClock::new();
        let log = Mutex::new(Vec::new());
        let targets: Vec<Fake> =
            (0..3).map(|id| Fake { id, clock: &clock, log: &log, refuse_every: 10, fail: false }).collect();
        let load = txs(5_000);
        let counters = Counters::default();
        // 1,000 tx/s for 5,000 transactions: 100 per 100 ms tick, for 5 s.
        let mut schedule = FixedRate { tps: 1_000, total: 5_000 };
        let cfg = OfferConfig::default();
        let r = offer(&load, &mut schedule, &targets, &clock, &cfg, &counters, &AtomicBool::new(false))
            .await
            .unwrap();
        let log = log.into_inner().unwrap();
        assert_eq!(log.len(), 50, "one request per tick");
        for (i, (target, n, at)) in log.iter().enumerate() {
            assert_eq!(*target, i % 3, "round-robin");
            assert_eq!(*n, 100);
            assert_eq!(*at, Duration::from_millis(100 * (i as u64 + 1)), "on the tick");
        }
        assert_eq!((r.offered, r.requests), (5_000, 50));
        assert_eq!(r.accepted_at.len(), 4_500);
        assert_eq!(r.refused, BTreeMap::from([("low-fee".to_string(), 500)]));
        assert_eq!(counters.get(), (5_000, 4_500, 500));
        assert_eq!(r.ended, Duration::from_secs(5));
        let first = load[0].txid(HashKind::Sha256);
        assert_eq!(r.accepted_at[&first], Duration::from_millis(100));
    }

    #[tokio::test]
    async fn a_schedule_with_an_end_stops_the_offer_there_and_a_fixed_load_follows_confirmations() {
        use crate::load::schedule::{Bounded, Rate};
        let clock = VirtualClock::new();
        let log = Mutex::new(Vec::new());
        let targets = [Fake { id: 0, clock: &clock, log: &log, refuse_every: u64::MAX, fail: false }];
        let load = txs(10_000);
        let cfg = OfferConfig::default();
        let end = Some(Duration::from_secs(2));
        let mut timed = Bounded { rate: Rate::Fixed { tps: 1000.0 }, total: 10_000, end };
        let counters = Counters::default();
        let r = offer(&load, &mut timed, &targets, &clock, &cfg, &counters, &AtomicBool::new(false))
            .await
            .unwrap();
        assert_eq!((r.offered, r.requests), (1_900, 19), "the ticks before 2 s, none at it");
        assert_eq!(r.sent[3], (300..400, Duration::from_millis(400)), "each request's range and time");
        // Nothing confirms: a fixed load of 250 sends 250 and then waits.
        let mut held = Bounded { rate: Rate::FixedLoad { backlog: 250 }, total: 10_000, end };
        let start = clock.now();
        let r = offer(&load, &mut held, &targets, &clock, &cfg, &counters, &AtomicBool::new(false))
            .await
            .unwrap();
        assert_eq!(r.offered, 250);
        assert_eq!(r.ended.saturating_sub(start), Duration::from_secs(2));
        // Everything refused at once: nothing stays unfinished, so each tick sends the whole
        // backlog again (the same feedback path as confirmations).
        let refusing = [Fake { id: 0, clock: &clock, log: &log, refuse_every: 1, fail: false }];
        let mut held = Bounded { rate: Rate::FixedLoad { backlog: 250 }, total: 10_000, end };
        let r = offer(&load, &mut held, &refusing, &clock, &cfg, &counters, &AtomicBool::new(false))
            .await
            .unwrap();
        assert_eq!((r.offered, r.requests), (250 * 19, 19));
    }

    #[tokio::test]
    async fn a_late_tick_catches_up_in_requests_of_at_most_max_batch() {
        let clock = VirtualClock::new();
        let log = Mutex::new(Vec::new());
        let targets = [Fake { id: 0, clock: &clock, log: &log, refuse_every: u64::MAX, fail: false }];
        let load = txs(4_500);
        // 30,000 tx/s with 100 ms ticks: 3,000 due per tick.
        let mut schedule = FixedRate { tps: 30_000, total: 4_500 };
        let counters = Counters::default();
        let cfg = OfferConfig::default();
        let r = offer(&load, &mut schedule, &targets, &clock, &cfg, &counters, &AtomicBool::new(false))
            .await
            .unwrap();
        let sizes: Vec<usize> = log.into_inner().unwrap().iter().map(|x| x.1).collect();
        assert_eq!(sizes, [2_000, 1_000, 1_500]);
        assert_eq!(r.accepted_at.len(), 4_500);
    }

    #[tokio::test]
    async fn failed_requests_count_their_transactions_as_refused_and_stop_ends_the_offer() {
        let clock = VirtualClock::new();
        let log = Mutex::new(Vec::new());
        let targets = [Fake { id: 0, clock: &clock, log: &log, refuse_every: u64::MAX, fail: true }];
        let load = txs(300);
        let counters = Counters::default();
        let cfg = OfferConfig::default();
        let r = offer(
            &load,
            &mut FixedRate { tps: 1_000, total: 300 },
            &targets,
            &clock,
            &cfg,
            &counters,
            &AtomicBool::new(false),
        )
        .await
        .unwrap();
        assert_eq!(r.refused.len(), 1);
        let (reason, n) = r.refused.iter().next().unwrap();
        assert!(reason.starts_with("api: the node's API at x is unreachable"), "{reason}");
        assert_eq!((*n, r.accepted_at.len()), (300, 0));
        let stopped = offer(
            &load,
            &mut FixedRate { tps: 1_000, total: 300 },
            &targets,
            &clock,
            &cfg,
            &counters,
            &AtomicBool::new(true),
        )
        .await
        .unwrap();
        assert_eq!((stopped.offered, stopped.requests), (0, 0));
        let none: [Fake; 0] = [];
        assert!(matches!(
            offer(
                &load,
                &mut FixedRate { tps: 1, total: 1 },
                &none,
                &clock,
                &cfg,
                &counters,
                &AtomicBool::new(false)
            )
            .await,
            Err(LoadError::NoTargets)
        ));
    }
}
