//! The node's metrics, rendered in the Prometheus text format at `/metrics`.
//!
//! A per-node registry of atomics rather than a process-global recorder: tests run several
//! nodes in one process, and every figure here is a plain counter, gauge or summed duration.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A monotonically increasing count.
#[derive(Debug, Default)]
pub struct Counter(AtomicU64);

impl Counter {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// A value that goes up and down.
#[derive(Debug, Default)]
pub struct Gauge(AtomicU64);

impl Gauge {
    /// Adds one.
    pub fn inc(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }

    /// Subtracts one (saturating at zero).
    pub fn dec(&self) {
        let _ = self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| Some(v.saturating_sub(1)));
    }

    /// The current value.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Time spent in a stage: a count and a sum, as a Prometheus summary without quantiles.
#[derive(Debug, Default)]
pub struct Timer {
    count: AtomicU64,
    micros: AtomicU64,
}

impl Timer {
    /// Records one observation.
    pub fn observe(&self, d: Duration) {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.micros.fetch_add(d.as_micros() as u64, Ordering::Relaxed);
    }

    /// (observations, total seconds).
    pub fn get(&self) -> (u64, f64) {
        (self.count.load(Ordering::Relaxed), self.micros.load(Ordering::Relaxed) as f64 / 1e6)
    }
}

/// Every metric of a node.
#[derive(Debug, Default)]
pub struct Metrics {
    /// Transactions received (API and gossip) before verification.
    pub txs_received: Counter,
    /// Transactions admitted to the mempool.
    pub txs_admitted: Counter,
    /// Transactions refused at admission.
    pub txs_rejected: Counter,
    /// Batches waiting in the pipeline buffer.
    pub pipeline_depth: Gauge,
    /// Time batches waited in the buffer.
    pub pipeline_wait: Timer,
    /// Time spent verifying and admitting batches.
    pub pipeline_verify: Timer,
    /// Time spent relaying admitted transactions.
    pub pipeline_relay: Timer,
    /// Blocks received (gossip, sync, own miner).
    pub blocks_received: Counter,
    /// Blocks that moved the main chain.
    pub blocks_connected: Counter,
    /// Blocks refused as invalid.
    pub blocks_rejected: Counter,
    /// Time spent accepting blocks (validation and commit).
    pub block_accept: Timer,
    /// Reorganisations (main chain lost blocks).
    pub reorgs: Counter,
    /// Blocks this node mined.
    pub blocks_mined: Counter,
    /// Peers penalised.
    pub penalties: Counter,
    /// Peers banned.
    pub bans: Counter,
    /// API requests served.
    pub api_requests: Counter,
    /// API requests answered with an error status.
    pub api_errors: Counter,
}

/// Builds the Prometheus text of `lines` (name, help, type, value).
pub struct Exposition(String);

impl Exposition {
    /// An empty document.
    pub fn new() -> Self {
        Exposition(String::new())
    }

    /// A counter or gauge.
    pub fn value(&mut self, name: &str, help: &str, kind: &str, v: f64) -> &mut Self {
        let _ = writeln!(
            self.0,
            "# HELP scalechain_{name} {help}\n# TYPE scalechain_{name} {kind}\nscalechain_{name} {v}"
        );
        self
    }

    /// A summary of a timer.
    pub fn timer(&mut self, name: &str, help: &str, t: &Timer) -> &mut Self {
        let (n, s) = t.get();
        let _ = writeln!(
            self.0,
            "# HELP scalechain_{name}_seconds {help}\n# TYPE scalechain_{name}_seconds summary\nscalechain_{name}_seconds_sum {s}\nscalechain_{name}_seconds_count {n}"
        );
        self
    }

    /// The document.
    pub fn finish(self) -> String {
        self.0
    }
}

impl Default for Exposition {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// The node's own metrics (the caller appends chain, mempool and network gauges).
    pub fn render(&self, e: &mut Exposition) {
        let c = |c: &Counter| c.get() as f64;
        e.value(
            "txs_received_total",
            "Transactions received before verification.",
            "counter",
            c(&self.txs_received),
        )
        .value(
            "txs_admitted_total",
            "Transactions admitted to the mempool.",
            "counter",
            c(&self.txs_admitted),
        )
        .value("txs_rejected_total", "Transactions refused at admission.", "counter", c(&self.txs_rejected))
        .value(
            "pipeline_depth",
            "Batches waiting between receive and verify.",
            "gauge",
            self.pipeline_depth.get() as f64,
        )
        .timer("pipeline_wait", "Time batches waited in the pipeline buffer.", &self.pipeline_wait)
        .timer("pipeline_verify", "Time spent verifying and admitting batches.", &self.pipeline_verify)
        .timer("pipeline_relay", "Time spent relaying admitted transactions.", &self.pipeline_relay)
        .value("blocks_received_total", "Blocks received.", "counter", c(&self.blocks_received))
        .value(
            "blocks_connected_total",
            "Blocks that joined the main chain.",
            "counter",
            c(&self.blocks_connected),
        )
        .value("blocks_rejected_total", "Blocks refused as invalid.", "counter", c(&self.blocks_rejected))
        .timer("block_accept", "Time spent validating and committing blocks.", &self.block_accept)
        .value("reorgs_total", "Reorganisations.", "counter", c(&self.reorgs))
        .value("blocks_mined_total", "Blocks mined by this node.", "counter", c(&self.blocks_mined))
        .value("peer_penalties_total", "Penalties given to peers.", "counter", c(&self.penalties))
        .value("peer_bans_total", "Peers banned.", "counter", c(&self.bans))
        .value("api_requests_total", "API requests served.", "counter", c(&self.api_requests))
        .value(
            "api_errors_total",
            "API requests answered with an error.",
            "counter",
            c(&self.api_errors),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_is_prometheus_text() {
        let m = Metrics::default();
        m.txs_admitted.add(3);
        m.pipeline_verify.observe(Duration::from_millis(1500));
        m.pipeline_depth.inc();
        m.pipeline_depth.dec();
        m.pipeline_depth.dec();
        let mut e = Exposition::new();
        m.render(&mut e);
        let t = e.finish();
        assert!(t.contains("# TYPE scalechain_txs_admitted_total counter\nscalechain_txs_admitted_total 3\n"));
        assert!(t.contains(
            "scalechain_pipeline_verify_seconds_sum 1.5\nscalechain_pipeline_verify_seconds_count 1\n"
        ));
        assert!(t.contains("scalechain_pipeline_depth 0\n"));
        for line in t.lines().filter(|l| !l.starts_with('#')) {
            let mut parts = line.split(' ');
            assert!(parts.next().unwrap_or("").starts_with("scalechain_"));
            assert!(parts.next().unwrap_or("x").parse::<f64>().is_ok(), "{line}");
        }
    }
}
