//! An opt-in function profiler in the manner of seed 001: named spans, nested into call paths
//! per thread, aggregated into count, total time, exclusive time (total minus child spans) and a
//! log2 histogram of durations.
//!
//! Disabled (the default), a span costs one relaxed atomic load and reads no clock. Enabled, it
//! reads the monotonic clock twice and takes one global lock when it closes, so spans belong
//! around coarse units of work (a chunk of transactions, a Merkle level), never around one hash.
//! The profiler only observes: no result anywhere depends on it, so consensus code may carry
//! spans and stay deterministic.
//!
//! Call paths are per thread: a span opened on a rayon worker starts a new path there.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Instant;

static ENABLED: AtomicBool = AtomicBool::new(false);
static STATS: Mutex<BTreeMap<String, SpanStats>> = Mutex::new(BTreeMap::new());

thread_local! {
    /// Open spans of this thread: (name, nanoseconds spent in closed children).
    static STACK: RefCell<Vec<(&'static str, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Buckets of the duration histogram: bucket `i` counts spans of `[2^i, 2^(i+1))` ns.
pub const HISTOGRAM_BUCKETS: usize = 40;

/// Aggregated timings of one call path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpanStats {
    /// Times the span closed.
    pub count: u64,
    /// Sum of durations, ns.
    pub total_ns: u64,
    /// Sum of durations minus time in child spans of the same thread, ns.
    pub exclusive_ns: u64,
    /// Longest single duration, ns.
    pub max_ns: u64,
    /// Durations by power of two (see [`HISTOGRAM_BUCKETS`]).
    pub histogram: [u64; HISTOGRAM_BUCKETS],
}

impl Default for SpanStats {
    fn default() -> Self {
        SpanStats { count: 0, total_ns: 0, exclusive_ns: 0, max_ns: 0, histogram: [0; HISTOGRAM_BUCKETS] }
    }
}

impl SpanStats {
    /// Mean duration, ns.
    pub fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.total_ns as f64 / self.count as f64
        }
    }

    fn record(&mut self, ns: u64, child_ns: u64) {
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        self.exclusive_ns = self.exclusive_ns.saturating_add(ns.saturating_sub(child_ns));
        self.max_ns = self.max_ns.max(ns);
        let bucket = (64 - ns.max(1).leading_zeros() as usize - 1).min(HISTOGRAM_BUCKETS - 1);
        self.histogram[bucket] += 1;
    }
}

/// Turns recording on or off (spans already open when it changes are still closed correctly).
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Is recording on?
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Forgets every recorded span.
pub fn reset() {
    STATS.lock().unwrap_or_else(|e| e.into_inner()).clear();
}

/// Every call path recorded so far (`outer/inner`), with its statistics.
pub fn snapshot() -> BTreeMap<String, SpanStats> {
    STATS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Total time of every path whose last element is `name`, ns.
pub fn total_ns(name: &str) -> u64 {
    snapshot().iter().filter(|(path, _)| path.rsplit('/').next() == Some(name)).map(|(_, s)| s.total_ns).sum()
}

/// An open span; it records when dropped.
#[must_use = "a span measures until it is dropped"]
pub struct Span {
    start: Option<Instant>,
}

/// Opens a span named `name` (a static, dotted name such as `"merkle.leaves"`).
pub fn span(name: &'static str) -> Span {
    if !enabled() {
        return Span { start: None };
    }
    STACK.with(|s| s.borrow_mut().push((name, 0)));
    Span { start: Some(Instant::now()) }
}

impl Drop for Span {
    fn drop(&mut self) {
        let Some(start) = self.start else { return };
        let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let (path, child_ns) = STACK.with(|s| {
            let mut stack = s.borrow_mut();
            let path = stack.iter().map(|(n, _)| *n).collect::<Vec<_>>().join("/");
            let (_, child_ns) = stack.pop().unwrap_or(("", 0));
            if let Some(parent) = stack.last_mut() {
                parent.1 = parent.1.saturating_add(ns);
            }
            (path, child_ns)
        });
        STATS.lock().unwrap_or_else(|e| e.into_inner()).entry(path).or_default().record(ns, child_ns);
    }
}

/// Renders a snapshot as a Markdown table, slowest paths first.
pub fn report(stats: &BTreeMap<String, SpanStats>) -> String {
    let mut rows: Vec<_> = stats.iter().collect();
    rows.sort_by_key(|(_, s)| std::cmp::Reverse(s.total_ns));
    let mut out = String::from("| path | count | total ms | exclusive ms | mean µs | max µs |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|\n");
    for (path, s) in rows {
        out.push_str(&format!(
            "| `{path}` | {} | {:.3} | {:.3} | {:.1} | {:.1} |\n",
            s.count,
            s.total_ns as f64 / 1e6,
            s.exclusive_ns as f64 / 1e6,
            s.mean_ns() / 1e3,
            s.max_ns as f64 / 1e3
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test touches the global state, so tests cannot race on it.
    #[test]
    fn nested_spans_record_paths_and_exclusive_time() {
        reset();
        {
            let _quiet = span("off");
        }
        assert!(snapshot().is_empty(), "a disabled profiler records nothing");
        set_enabled(true);
        {
            let _outer = span("outer");
            std::thread::sleep(std::time::Duration::from_millis(2));
            for _ in 0..3 {
                let _inner = span("inner");
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        set_enabled(false);
        let s = snapshot();
        let outer = &s["outer"];
        let inner = &s["outer/inner"];
        assert_eq!((outer.count, inner.count), (1, 3));
        assert!(inner.total_ns >= 3_000_000);
        assert!(outer.total_ns >= inner.total_ns + 2_000_000);
        assert_eq!(outer.exclusive_ns, outer.total_ns - inner.total_ns);
        assert_eq!(inner.histogram.iter().sum::<u64>(), 3);
        assert_eq!(total_ns("inner"), inner.total_ns);
        assert!(report(&s).contains("`outer/inner` | 3 |"));
        reset();
        assert!(snapshot().is_empty());
    }
}
