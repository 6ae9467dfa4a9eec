//! A continuous load in rounds (the shell's `load start`): each round is a one-round benchmark
//! of the load benchmark's runner — it funds itself from the devnet premine keys' coins (split,
//! then waited for), offers its transfers at the rate, and waits for them to be confirmed
//! before the next round spends the same keys' coins again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scalechain_client::Client;
use scalechain_consensus::params::{SigMode, DEVNET_PREMINE_OUTPUTS};
use scalechain_consensus::Params;
use scalechain_types::Hash;

use super::prepare::{premine_funds_on, Shape};
use super::schedule::Rate;
use super::submit::Counters;
use super::{Clock, LoadError, SystemClock};
use crate::bench::run::{prepare, run as bench_run, Env};
use crate::bench::spec::{Benchmark, Network, Round, Workload};

/// Transfers a round plans per premine key.
const TXS_PER_KEY: usize = 200;
/// The longest round.
const ROUND: Duration = Duration::from_secs(10);
/// How long a round waits for its transfers to be confirmed.
const CONFIRM_WAIT: Duration = Duration::from_secs(30);

/// What the rounds have done, readable while they run.
#[derive(Debug, Default)]
pub struct RoundStats {
    /// Offered, accepted, refused by the rounds that ended.
    pub counters: Counters,
    /// Transfers confirmed (counted when a round ends: its transfers are waited for).
    pub confirmed: AtomicU64,
    /// The running round's counters, as its offer goes.
    pub current: Mutex<Option<Arc<Counters>>>,
    /// Rounds completed.
    pub rounds: AtomicU64,
    /// The last thing worth telling (a refused funding transaction, why the load stopped).
    pub note: Mutex<String>,
}

impl RoundStats {
    /// Replaces the note.
    pub fn set_note(&self, s: String) {
        *self.note.lock().unwrap_or_else(|e| e.into_inner()) = s;
    }

    /// The note.
    pub fn note(&self) -> String {
        self.note.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Offered, accepted and refused so far: the rounds that ended and the running one (read
    /// under the lock a round's end takes, so nothing is counted twice or missed).
    pub fn live(&self) -> (u64, u64, u64) {
        let current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        let (o, a, r) = self.counters.get();
        let (co, ca, cr) = current.as_ref().map_or((0, 0, 0), |c| c.get());
        (o + co, a + ca, r + cr)
    }

    /// Ends the running round: its figures (if it has any) join the totals as its live
    /// counters go.
    fn end_round(&self, figures: Option<(u64, u64, u64, u64)>) {
        let mut current = self.current.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((offered, accepted, refused, confirmed)) = figures {
            self.counters.offered.fetch_add(offered, Ordering::Relaxed);
            self.counters.accepted.fetch_add(accepted, Ordering::Relaxed);
            self.counters.refused.fetch_add(refused, Ordering::Relaxed);
            self.confirmed.fetch_add(confirmed, Ordering::Relaxed);
        }
        *current = None;
    }
}

/// The chain the rounds run on.
#[derive(Clone, Debug)]
pub struct Chain {
    /// Its parameters.
    pub params: Params,
    /// Which keys its premine pays.
    pub sig: SigMode,
    /// Its id.
    pub chain_id: Hash,
}

/// Offers `tps` transfers per second to `node` in rounds, for `seconds` (or until `stop`):
/// each round a one-round benchmark of the load benchmark's runner (`crate::bench::run`), its
/// figures added to `stats` when it ends.
pub async fn run(
    node: &Client,
    chain: &Chain,
    tps: u64,
    seconds: Option<u64>,
    stats: &RoundStats,
    stop: &AtomicBool,
) -> Result<(), LoadError> {
    let clock = SystemClock::start();
    let end = seconds.map(Duration::from_secs);
    let targets = [("node".to_string(), node.clone())];
    let mut n = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let length = end.map_or(ROUND, |e| e.saturating_sub(clock.now()).min(ROUND));
        if length.is_zero() {
            break;
        }
        n += 1;
        let total = ((tps as f64 * length.as_secs_f64()).ceil() as usize).max(1);
        let keys = total.div_ceil(TXS_PER_KEY).clamp(4, DEVNET_PREMINE_OUTPUTS as usize);
        let tip = node.tip().await?;
        let funds = premine_funds_on(node, &chain.params, chain.sig, keys, tip.height).await?;
        if funds.is_empty() {
            return Err(LoadError::NoFunds(format!("premine keys 0..{keys} hold no spendable coins")));
        }
        let round = Round {
            name: format!("load {n}"),
            line: 0,
            workload: Workload::Transfer(Shape::ONE_TO_ONE),
            rate: Rate::Fixed { tps: tps as f64 },
            controller: "fixed-rate",
            // Every transaction at the rate: the round lasts `length`.
            duration: None,
            txs: total as u64,
            // The next round spends these keys' coins again: this round's transfers settle
            // first.
            drain: CONFIRM_WAIT,
        };
        let network = Network { peers: 1, miners: 0, miner_threads: 0, node_config: None };
        let bench = Benchmark { name: "load".into(), network, rounds: vec![round] };
        // This round's counters, readable while it runs; its figures join the totals at its end.
        let live = Arc::new(Counters::default());
        let env = Env {
            targets: &targets,
            pids: &[],
            params: &chain.params,
            sig: chain.sig,
            counters: Some(live.clone()),
        };
        let prepared = prepare(&bench, &env, &funds)?;
        *stats.current.lock().unwrap_or_else(|e| e.into_inner()) = Some(live);
        let outcome = bench_run(&bench, &env, prepared, stop, &|_| {}).await;
        if outcome.is_err() {
            stats.end_round(None);
        }
        let outcome = match outcome {
            Err(LoadError::FundingRefused(why)) => {
                stats.set_note(format!("a funding transaction was refused: {why}"));
                return Err(LoadError::FundingRefused(why));
            }
            o => o?,
        };
        let mut figures = (0, 0, 0, 0);
        for r in &outcome.rounds {
            let unconfirmed = r.failed.get("unconfirmed").copied().unwrap_or(0);
            figures.0 += r.offered;
            figures.1 += r.accepted;
            figures.2 += r.failed_total() - unconfirmed;
            figures.3 += r.succeeded;
        }
        stats.end_round(Some(figures));
        if outcome.stopped {
            break;
        }
        stats.rounds.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
