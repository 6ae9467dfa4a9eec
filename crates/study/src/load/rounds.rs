//! A continuous load in rounds (the shell's `load start`): each round funds itself from the
//! devnet premine keys' coins (split, then waited for), offers its transfers at the rate
//! through the submitter, and waits for them to be confirmed before the next round spends the
//! same keys' coins again.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use scalechain_client::Client;
use scalechain_consensus::params::{SigMode, DEVNET_PREMINE_OUTPUTS};
use scalechain_consensus::Params;
use scalechain_types::{Hash, Tx};

use super::fund::fund;
use super::prepare::{premine_funds_on, prepare, Prepared};
use super::submit::{offer, Counters, OfferConfig};
use super::watch::wait_confirmed;
use super::{Clock, FixedRate, LoadError, SystemClock};

/// Transfers a round plans per premine key.
const TXS_PER_KEY: usize = 200;
/// The longest round.
const ROUND: Duration = Duration::from_secs(10);
/// How long a round waits for its split, and then for its transfers, to be confirmed.
const CONFIRM_WAIT: Duration = Duration::from_secs(30);
/// How often those waits look.
const CONFIRM_POLL: Duration = Duration::from_millis(200);

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

/// Offers `tps` transfers per second to `node` in rounds, for `seconds` (or until `stop`).
pub async fn run(
    node: &Client,
    chain: &Chain,
    tps: u64,
    seconds: Option<u64>,
    stats: &RoundStats,
    stop: &AtomicBool,
) -> Result<(), LoadError> {
    let clock = SystemClock::start();
    let kind = chain.params.hash;
    let end = seconds.map(Duration::from_secs);
    let cfg = OfferConfig { hash: kind, ..OfferConfig::default() };
    while !stop.load(Ordering::Relaxed) {
        let round = end.map_or(ROUND, |e| e.saturating_sub(clock.now()).min(ROUND));
        if round.is_zero() {
            break;
        }
        let total = ((tps as f64 * round.as_secs_f64()).ceil() as usize).max(1);
        let keys = total.div_ceil(TXS_PER_KEY).clamp(4, DEVNET_PREMINE_OUTPUTS as usize);
        let tip = node.tip().await?;
        let funds = premine_funds_on(node, &chain.params, chain.sig, keys, tip.height).await?;
        if funds.is_empty() {
            return Err(LoadError::NoFunds(format!("premine keys 0..{keys} hold no spendable coins")));
        }
        let Prepared { funding, load } = prepare(kind, &chain.chain_id, &funds, total);
        if funding.is_empty() {
            return Err(LoadError::NoFunds(format!(
                "premine keys 0..{keys} hold too little to fund {total} transfers"
            )));
        }
        let funded = fund(node, &funding, kind, tip.height, CONFIRM_WAIT, CONFIRM_POLL, &clock, stop).await;
        let funded = match funded {
            Err(LoadError::Stopped) => break,
            f => f?,
        };
        if let Some((_, why)) = funded.refused.first() {
            stats.set_note(format!("a funding transaction was refused: {why}"));
        }
        let height = funded.height;
        let load: Vec<Tx> = load
            .into_iter()
            .filter(|t| t.inputs.first().is_some_and(|i| funded.confirmed.contains(&i.prev.txid)))
            .collect();
        let mut schedule = FixedRate { tps, total: load.len() as u64 };
        let offered =
            offer(&load, &mut schedule, std::slice::from_ref(node), &clock, &cfg, &stats.counters, stop)
                .await?;
        let sent: HashSet<Hash> = offered.accepted_at.into_keys().collect();
        let count = sent.len();
        // The next round spends these keys' coins again: let this round's transfers settle.
        let (left, _) = wait_confirmed(node, sent, height, CONFIRM_WAIT, CONFIRM_POLL, &clock, stop).await?;
        stats.confirmed.fetch_add((count - left.len()) as u64, Ordering::Relaxed);
        stats.rounds.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}
