//! What a round measured, computed from what the generator logged (when each request was sent,
//! what each answer said) and what the chain confirmed (when each block was first seen): pure
//! arithmetic, tested on its own.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use scalechain_types::Hash;

use crate::load::report::{cpu, percentile};

/// Latency from submission to the block that confirmed a transaction, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Latency {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub avg: f64,
    /// Largest.
    pub max: f64,
    /// Median.
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
}

impl Latency {
    /// The statistics of `ms` (sorted in place); `None` for no values.
    pub fn of(ms: &mut [f64]) -> Option<Latency> {
        if ms.is_empty() {
            return None;
        }
        ms.sort_by(f64::total_cmp);
        Some(Latency {
            min: ms[0],
            avg: ms.iter().sum::<f64>() / ms.len() as f64,
            max: ms[ms.len() - 1],
            p50: percentile(ms, 0.5),
            p95: percentile(ms, 0.95),
            p99: percentile(ms, 0.99),
        })
    }
}

/// One second of a round, as the progress line saw it.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sample {
    /// Seconds since the offer began.
    pub t_s: f64,
    /// Sent so far.
    pub offered: u64,
    /// Accepted so far.
    pub accepted: u64,
    /// Transactions in the blocks seen so far.
    pub confirmed: u64,
    /// The watched node's mempool.
    pub mempool: usize,
}

/// What a round measured.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoundResult {
    /// The round's name.
    pub name: String,
    /// Its workload (`transfer 1-1`).
    pub workload: String,
    /// Its controller (`fixed-rate`).
    pub controller: String,
    /// Transactions prepared for it.
    pub prepared: u64,
    /// Sent.
    pub offered: u64,
    /// Accepted by a node.
    pub accepted: u64,
    /// Confirmed on the main chain: Caliper's "succeeded".
    pub succeeded: u64,
    /// Not confirmed, by reason: a node's refusal, a failed request (`api: …`), or
    /// `unconfirmed` (accepted, but not on the main chain when the drain ended).
    pub failed: BTreeMap<String, u64>,
    /// Measured send rate: sent / (last send − start), tx/s.
    pub send_tps: f64,
    /// Throughput: succeeded / (last confirming block seen − start), tx/s.
    pub throughput_tps: f64,
    /// Latency of the succeeded ones.
    pub latency: Option<Latency>,
    /// Seconds the offer took.
    pub offer_s: f64,
    /// Seconds from the start to the end of the drain (the CPU window).
    pub window_s: f64,
    /// CPU over the window: each node and the generator (`bench`).
    pub cpu: cpu::Usage,
    /// The generator's own CPU while it offered, in cores.
    pub generator_cores: f64,
    /// Peak resident memory of each node in the round, bytes.
    pub rss_peak: Vec<(String, u64)>,
    /// One sample a second.
    pub series: Vec<Sample>,
    /// The first node's main-chain height when the round began, and when its drain ended: its
    /// transactions are in the blocks above the first, up to the second.
    pub heights: (u64, u64),
    /// Ctrl-C cut the round short.
    pub stopped: bool,
    /// The accepted transactions not on the main chain when the drain ended (the
    /// `unconfirmed` of `failed`), for an account of where each went.
    pub unconfirmed: Vec<scalechain_types::Hash>,
    /// Each node's resident memory, one sample a second.
    pub memory: Vec<crate::load::report::memory::Sample>,
}

impl RoundResult {
    /// Failed in all.
    pub fn failed_total(&self) -> u64 {
        self.failed.values().sum()
    }

    /// The nodes' CPU over the window (every process but the generator), in cores.
    pub fn node_cores(&self) -> f64 {
        let nodes: f64 = self.cpu.per_proc.iter().filter(|(n, _)| n != "bench").map(|(_, s)| s).sum();
        nodes / self.window_s.max(1e-9)
    }

    /// The largest resident memory of any node, MiB.
    pub fn peak_mib(&self) -> f64 {
        self.rss_peak.iter().map(|(_, b)| *b).max().unwrap_or(0) as f64 / 1_048_576.0
    }
}

/// Rates and latency of a round: `sent_at` maps each accepted transaction to when its request
/// was sent, `confirmed` lists the confirmed ones with when their block was first seen, `start`
/// is when the offer began and `last_send` when its last request went (same clock). Returns
/// (send rate, throughput, latency).
pub fn rates(
    offered: u64,
    sent_at: &HashMap<Hash, Duration>,
    confirmed: &[(Hash, Duration)],
    start: Duration,
    last_send: Duration,
) -> (f64, f64, Option<Latency>) {
    let send_span = last_send.saturating_sub(start).as_secs_f64();
    let send_tps = if send_span > 0.0 { offered as f64 / send_span } else { 0.0 };
    let mut ms: Vec<f64> = confirmed
        .iter()
        .filter_map(|(id, seen)| sent_at.get(id).map(|s| seen.saturating_sub(*s).as_secs_f64() * 1000.0))
        .collect();
    let last = confirmed.iter().map(|(_, w)| *w).max().unwrap_or(start);
    let span = last.saturating_sub(start).as_secs_f64();
    let throughput = if span > 0.0 { confirmed.len() as f64 / span } else { 0.0 };
    (send_tps, throughput, Latency::of(&mut ms))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn h(i: u8) -> Hash {
        Hash([i; 32])
    }

    fn ms(x: u64) -> Duration {
        Duration::from_millis(x)
    }

    #[test]
    fn latency_statistics_take_min_mean_max_and_nearest_rank_percentiles() {
        let mut v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let l = Latency::of(&mut v).unwrap();
        assert_eq!((l.min, l.max, l.avg), (1.0, 100.0, 50.5));
        assert_eq!((l.p50, l.p95, l.p99), (51.0, 95.0, 99.0));
        assert_eq!(Latency::of(&mut []), None);
    }

    #[test]
    fn rates_run_from_the_start_to_the_last_send_and_to_the_last_block() {
        // Sent at 0.1 s and 0.2 s (after a start at 1 s on the clock); two confirmed in a block
        // seen at 1.5 s, one in a block seen at 2 s; one accepted never confirmed.
        let start = ms(1000);
        let sent_at = HashMap::from([(h(1), ms(1100)), (h(2), ms(1100)), (h(3), ms(1200)), (h(4), ms(1200))]);
        let confirmed = [(h(1), ms(1500)), (h(2), ms(1500)), (h(3), ms(2000))];
        let (send, tput, lat) = rates(4, &sent_at, &confirmed, start, ms(1200));
        assert!((send - 20.0).abs() < 1e-9, "4 sent over 0.2 s: {send}");
        assert!((tput - 3.0).abs() < 1e-9, "3 confirmed by 1 s after the start: {tput}");
        let lat = lat.unwrap();
        assert_eq!((lat.min, lat.max), (400.0, 800.0));
        assert!((lat.avg - 1600.0 / 3.0).abs() < 1e-9);
        // A confirmation of a transaction the offer did not send is not a latency.
        let (_, _, lat) = rates(4, &sent_at, &[(h(9), ms(3000))], start, ms(1200));
        assert_eq!(lat, None);
        // Nothing sent, nothing confirmed: zero rates, not NaN.
        assert_eq!(rates(0, &HashMap::new(), &[], start, start), (0.0, 0.0, None));
    }
}
