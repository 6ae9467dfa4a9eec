//! A continuous load in rounds (the shell's `load start`): each round is a one-round benchmark
//! of the load benchmark's runner — it funds itself from the devnet premine keys' coins (split,
//! then waited for), offers its transfers at the rate, and waits for them to be confirmed
//! before the next round spends the same keys' coins again.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
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
    /// Offered, accepted, refused.
    pub counters: Counters,
    /// Transfers confirmed.
    pub confirmed: AtomicU64,
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
    let env = Env { targets: &targets, pids: &[], params: &chain.params, sig: chain.sig };
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
        let prepared = prepare(&bench, &env, &funds)?;
        let outcome = match bench_run(&bench, &env, prepared, stop, &|_| {}).await {
            Err(LoadError::FundingRefused(why)) => {
                stats.set_note(format!("a funding transaction was refused: {why}"));
                return Err(LoadError::FundingRefused(why));
            }
            o => o?,
        };
        for r in &outcome.rounds {
            let unconfirmed = r.failed.get("unconfirmed").copied().unwrap_or(0);
            stats.counters.offered.fetch_add(r.offered, Ordering::Relaxed);
            stats.counters.accepted.fetch_add(r.accepted, Ordering::Relaxed);
            stats.counters.refused.fetch_add(r.failed_total() - unconfirmed, Ordering::Relaxed);
            stats.confirmed.fetch_add(r.succeeded, Ordering::Relaxed);
        }
        if outcome.stopped {
            break;
        }
        stats.rounds.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
