//! The node's metrics, rendered in the OpenMetrics text format at `/metrics` by the
//! `prometheus-client` crate (Prometheus' own Rust client).
//!
//! A per-node registry rather than a process-global one: tests run several nodes in one
//! process. The node's own counters, gauges and latency histograms live in [`Metrics`]; figures
//! read from the node's state at scrape time (chain, mempool, store, network, the process) are
//! gathered per scrape into a [`Scrape`] and rendered after them.

use std::time::Duration;

use prometheus_client::encoding::text::{encode_eof, encode_registry};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::{ConstCounter, Counter as PromCounter};
use prometheus_client::metrics::gauge::{ConstGauge, Gauge as PromGauge};
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::{Registry, Unit};
use scalechain_procfs::{cpu_seconds, stat_fields};

/// The content type of [`Metrics::render`]'s document.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Every metric name starts with this (and `_`).
pub const PREFIX: &str = "scalechain";

/// A monotonically increasing count.
#[derive(Debug, Default, Clone)]
pub struct Counter(PromCounter<u64>);

impl Counter {
    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.0.inc_by(n);
    }
}

/// A value that goes up and down.
#[derive(Debug, Default, Clone)]
pub struct Gauge(PromGauge<i64>);

impl Gauge {
    /// Adds one.
    pub fn inc(&self) {
        self.0.inc();
    }

    /// Subtracts one.
    pub fn dec(&self) {
        self.0.dec();
    }
}

/// Durations of a stage: a histogram in seconds, buckets from 10 µs by factors of 4 up to 42 s.
#[derive(Debug, Clone)]
pub struct Timer(Histogram);

impl Default for Timer {
    fn default() -> Self {
        Timer(Histogram::new(exponential_buckets(1e-5, 4.0, 12)))
    }
}

impl Timer {
    /// Records one observation.
    pub fn observe(&self, d: Duration) {
        self.0.observe(d.as_secs_f64());
    }
}

/// What the build-info metric carries.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BuildLabels {
    version: String,
    profile: String,
    target_arch: String,
    target_os: String,
}

/// Every metric the node keeps itself.
#[derive(Debug)]
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
    /// Time blocks waited for the chain's write lock before their acceptance (readers held it).
    pub block_lock_wait: Timer,
    /// Reorganisations (main chain lost blocks).
    pub reorgs: Counter,
    /// Blocks this node mined.
    pub blocks_mined: Counter,
    /// Peers penalised.
    pub penalties: Counter,
    /// Peers banned.
    pub bans: Counter,
    /// Dials the node made to get back to its target of connected peers.
    pub redials: Counter,
    /// API requests served.
    pub api_requests: Counter,
    /// API requests answered with an error status (4xx or 5xx).
    pub api_errors: Counter,
    /// Time from an API request to its response's head.
    pub api_request: Timer,
    /// API connections open now.
    pub api_connections: Gauge,
    /// Failed accepts on the API socket (too many open files and the like).
    pub api_accept_errors: Counter,
    /// API connections closed, idle, to make room for a newcomer at `api.max_connections`.
    pub api_evictions: Counter,
    /// API connections closed lingering: the client was still sending (`serve::linger`).
    pub api_lingering_closes: Counter,
    registry: Registry,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

impl Metrics {
    /// Every metric at zero, registered.
    pub fn new() -> Metrics {
        let m = Metrics {
            txs_received: Counter::default(),
            txs_admitted: Counter::default(),
            txs_rejected: Counter::default(),
            pipeline_depth: Gauge::default(),
            pipeline_wait: Timer::default(),
            pipeline_verify: Timer::default(),
            pipeline_relay: Timer::default(),
            blocks_received: Counter::default(),
            blocks_connected: Counter::default(),
            blocks_rejected: Counter::default(),
            block_accept: Timer::default(),
            block_lock_wait: Timer::default(),
            reorgs: Counter::default(),
            blocks_mined: Counter::default(),
            penalties: Counter::default(),
            bans: Counter::default(),
            redials: Counter::default(),
            api_requests: Counter::default(),
            api_errors: Counter::default(),
            api_request: Timer::default(),
            api_connections: Gauge::default(),
            api_accept_errors: Counter::default(),
            api_lingering_closes: Counter::default(),
            api_evictions: Counter::default(),
            registry: Registry::with_prefix(PREFIX),
        };
        let mut r = Registry::with_prefix(PREFIX);
        let counter =
            |r: &mut Registry, name: &str, help: &str, c: &Counter| r.register(name, help, c.0.clone());
        let timer = |r: &mut Registry, name: &str, help: &str, t: &Timer| {
            r.register_with_unit(name, help, Unit::Seconds, t.0.clone());
        };
        counter(&mut r, "txs_received", "Transactions received before verification.", &m.txs_received);
        counter(&mut r, "txs_admitted", "Transactions admitted to the mempool.", &m.txs_admitted);
        counter(&mut r, "txs_rejected", "Transactions refused at admission.", &m.txs_rejected);
        r.register(
            "pipeline_depth",
            "Batches waiting between receive and verify.",
            m.pipeline_depth.0.clone(),
        );
        timer(&mut r, "pipeline_wait", "Time batches waited in the pipeline buffer.", &m.pipeline_wait);
        timer(&mut r, "pipeline_verify", "Time spent verifying and admitting batches.", &m.pipeline_verify);
        timer(&mut r, "pipeline_relay", "Time spent relaying admitted transactions.", &m.pipeline_relay);
        counter(&mut r, "blocks_received", "Blocks received.", &m.blocks_received);
        counter(&mut r, "blocks_connected", "Blocks that joined the main chain.", &m.blocks_connected);
        counter(&mut r, "blocks_rejected", "Blocks refused as invalid.", &m.blocks_rejected);
        timer(&mut r, "block_accept", "Time spent validating and committing blocks.", &m.block_accept);
        timer(
            &mut r,
            "block_lock_wait",
            "Time blocks waited for the chain's write lock before their acceptance.",
            &m.block_lock_wait,
        );
        counter(&mut r, "reorgs", "Reorganisations.", &m.reorgs);
        counter(&mut r, "blocks_mined", "Blocks mined by this node.", &m.blocks_mined);
        counter(&mut r, "peer_penalties", "Penalties given to peers.", &m.penalties);
        counter(&mut r, "peer_bans", "Peers banned.", &m.bans);
        counter(
            &mut r,
            "peer_redials",
            "Dials made to get back to the target of connected peers.",
            &m.redials,
        );
        counter(&mut r, "api_requests", "API requests served.", &m.api_requests);
        counter(&mut r, "api_errors", "API requests answered with an error.", &m.api_errors);
        timer(&mut r, "api_request", "Time from an API request to its response.", &m.api_request);
        r.register("api_connections", "API connections open.", m.api_connections.0.clone());
        counter(&mut r, "api_accept_errors", "Failed accepts on the API socket.", &m.api_accept_errors);
        counter(
            &mut r,
            "api_evictions",
            "API connections closed, idle, to make room for a newcomer at the connection cap.",
            &m.api_evictions,
        );
        counter(
            &mut r,
            "api_lingering_closes",
            "API connections closed after reading what the client still sent.",
            &m.api_lingering_closes,
        );
        let build = BuildLabels {
            version: env!("CARGO_PKG_VERSION").into(),
            profile: if cfg!(debug_assertions) { "debug" } else { "release" }.into(),
            target_arch: std::env::consts::ARCH.into(),
            target_os: std::env::consts::OS.into(),
        };
        r.register("build", "The node's version and build.", Info::new(build));
        Metrics { registry: r, ..m }
    }

    /// The document: the node's own metrics, then `scrape`'s, then the end marker.
    pub fn render(&self, scrape: &Scrape) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail; a metric that failed to encode would be a bug in
        // the encoder, and the document is still returned with what came before it.
        let _ = encode_registry(&mut out, &self.registry);
        let _ = encode_registry(&mut out, &scrape.0);
        let _ = encode_eof(&mut out);
        out
    }
}

/// Figures read at scrape time, each registered once per scrape.
#[derive(Debug)]
pub struct Scrape(Registry);

impl Default for Scrape {
    fn default() -> Self {
        Scrape::new()
    }
}

impl Scrape {
    /// No figures yet.
    pub fn new() -> Scrape {
        Scrape(Registry::with_prefix(PREFIX))
    }

    /// A gauge (`PREFIX_name`).
    pub fn gauge(&mut self, name: &str, help: &str, v: f64) -> &mut Self {
        self.0.register(name, help, ConstGauge::new(v));
        self
    }

    /// A counter (`PREFIX_name_total`).
    pub fn counter(&mut self, name: &str, help: &str, v: u64) -> &mut Self {
        self.0.register(name, help, ConstCounter::new(v));
        self
    }

    /// A counter in seconds (`PREFIX_name_seconds_total`).
    pub fn seconds_counter(&mut self, name: &str, help: &str, v: f64) -> &mut Self {
        self.0.register_with_unit(name, help, Unit::Seconds, ConstCounter::new(v));
        self
    }

    /// The process's figures, as far as `/proc` tells them: CPU seconds, resident and virtual
    /// memory, open and allowed file descriptors, threads, start time.
    pub fn process(&mut self) -> &mut Self {
        let p = ProcessStats::read();
        if let Some(cpu) = p.cpu_seconds {
            self.seconds_counter("process_cpu", "User and system CPU time of the node process.", cpu);
        }
        if let Some(rss) = p.resident_bytes {
            self.gauge("process_resident_memory_bytes", "Resident memory of the node process.", rss as f64);
        }
        if let Some(v) = p.virtual_bytes {
            self.gauge("process_virtual_memory_bytes", "Virtual memory of the node process.", v as f64);
        }
        if let Some(n) = p.open_fds {
            self.gauge("process_open_fds", "Open file descriptors.", n as f64);
        }
        if let Some(n) = p.max_fds {
            self.gauge("process_max_fds", "Most file descriptors the process may open.", n as f64);
        }
        if let Some(n) = p.threads {
            self.gauge("process_threads", "Threads of the node process.", n as f64);
        }
        if let Some(t) = p.start_time_seconds {
            self.gauge(
                "process_start_time_seconds",
                "Start of the process, seconds since the Unix epoch.",
                t,
            );
        }
        self
    }
}

/// What `/proc/self` says of the process; a figure it cannot read is `None`.
#[derive(Debug, Default, PartialEq)]
pub struct ProcessStats {
    /// User plus system CPU seconds.
    pub cpu_seconds: Option<f64>,
    /// Resident set size.
    pub resident_bytes: Option<u64>,
    /// Virtual memory size.
    pub virtual_bytes: Option<u64>,
    /// Open file descriptors.
    pub open_fds: Option<u64>,
    /// The soft limit on open file descriptors.
    pub max_fds: Option<u64>,
    /// Threads.
    pub threads: Option<u64>,
    /// Start time, seconds since the epoch.
    pub start_time_seconds: Option<f64>,
}

impl ProcessStats {
    /// Reads the figures of this process.
    pub fn read() -> ProcessStats {
        let stat = std::fs::read_to_string("/proc/self/stat").ok();
        let ticks = rustix::param::clock_ticks_per_second();
        let page = rustix::param::page_size() as u64;
        let fields = stat.as_deref().and_then(stat_fields);
        let field = |i: usize| fields.as_ref().and_then(|f| f.get(i)).and_then(|s| s.parse::<u64>().ok());
        // Fields after the command name, counted from `state` (field 3 of proc(5)) as 0.
        let (threads, start, vsize, rss) = (field(17), field(19), field(20), field(21));
        let boot = std::fs::read_to_string("/proc/stat").ok().and_then(|s| {
            s.lines().find_map(|l| l.strip_prefix("btime ").and_then(|v| v.trim().parse::<u64>().ok()))
        });
        let open_fds = std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as u64);
        let max_fds = rustix::process::getrlimit(rustix::process::Resource::Nofile).current;
        ProcessStats {
            cpu_seconds: stat.as_deref().and_then(|s| cpu_seconds(s, ticks)),
            resident_bytes: rss.and_then(|p| p.checked_mul(page)),
            virtual_bytes: vsize,
            open_fds,
            max_fds,
            threads,
            start_time_seconds: boot
                .zip(start)
                .filter(|_| ticks > 0)
                .map(|(b, s)| b as f64 + s as f64 / ticks as f64),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_is_openmetrics_text() {
        let m = Metrics::default();
        m.txs_admitted.add(3);
        m.pipeline_verify.observe(Duration::from_millis(1500));
        m.pipeline_depth.inc();
        m.pipeline_depth.dec();
        let mut s = Scrape::new();
        s.gauge("chain_height", "Tip height.", 7.0).counter("mempool_evicted", "Evicted.", 2).process();
        let t = m.render(&s);
        assert!(
            t.contains("# TYPE scalechain_txs_admitted counter\nscalechain_txs_admitted_total 3\n"),
            "{t}"
        );
        // 1.5 s falls in the bucket up to 2.62144 s (10 µs · 4^9), not in the one below.
        assert!(t.contains("scalechain_pipeline_verify_seconds_sum 1.5\n"), "{t}");
        assert!(t.contains("scalechain_pipeline_verify_seconds_count 1\n"), "{t}");
        assert!(t.contains("scalechain_pipeline_verify_seconds_bucket{le=\"0.65536\"} 0\n"), "{t}");
        assert!(t.contains("scalechain_pipeline_verify_seconds_bucket{le=\"2.62144\"} 1\n"), "{t}");
        assert!(t.contains("scalechain_pipeline_depth 0\n"), "{t}");
        assert!(t.contains("scalechain_chain_height 7.0\n"), "{t}");
        assert!(t.contains("scalechain_mempool_evicted_total 2\n"), "{t}");
        assert!(t.contains("scalechain_build_info{version=\""), "{t}");
        assert!(t.contains("scalechain_process_cpu_seconds_total "), "{t}");
        assert!(t.contains("scalechain_process_open_fds "), "{t}");
        assert!(t.ends_with("# EOF\n"), "{t}");
        assert_eq!(t.matches("# EOF").count(), 1);
    }

    #[test]
    fn process_figures_are_read_and_plausible() {
        let p = ProcessStats::read();
        assert!(p.cpu_seconds.is_some_and(|c| c >= 0.0), "{p:?}");
        assert!(p.resident_bytes.is_some_and(|r| r > 1 << 20), "{p:?}");
        assert!(p.virtual_bytes.zip(p.resident_bytes).is_some_and(|(v, r)| v >= r), "{p:?}");
        assert!(p.open_fds.zip(p.max_fds).is_some_and(|(o, m)| o >= 3 && o <= m), "{p:?}");
        assert!(p.threads.is_some_and(|t| t >= 1), "{p:?}");
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        assert!(p.start_time_seconds.is_some_and(|s| s <= now + 1.0 && s > now - 86_400.0 * 365.0), "{p:?}");
    }
}
