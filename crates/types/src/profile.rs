//! An opt-in function profiler in the manner of seed 001: named spans, nested into call paths
//! per thread (`outer -> inner`), aggregated into count, total time, exclusive time (total minus
//! child spans), the longest duration, a log2 histogram of durations, and seed 001's centred
//! histogram: once a path has [`CENTRE_AFTER`] observations, [`CENTRED_SIDE`] buckets on each
//! side of their mean (so `[0, 2·mean)`), with under- and overflow counts.
//!
//! Disabled (the default), a span costs one relaxed atomic load and reads no clock. Enabled, it
//! reads the monotonic clock twice and takes one global lock when it closes, so spans belong
//! around coarse units of work (a chunk of transactions, a Merkle level), never around one hash.
//! The profiler only observes: no result anywhere depends on it, so consensus code may carry
//! spans and stay deterministic.
//!
//! The statistics are per process. Call paths are per thread: a span opened on a rayon worker
//! starts a new path there. A span must close on the thread that opened it, so async code
//! records whole requests with [`record`] instead of holding a span across an `.await`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static ENABLED: AtomicBool = AtomicBool::new(false);
static STATS: Mutex<BTreeMap<String, SpanStats>> = Mutex::new(BTreeMap::new());
/// Time recorded before the current enabled stretch, ns.
static RECORDED_NS: AtomicU64 = AtomicU64::new(0);
/// When the current enabled stretch began.
static SINCE: Mutex<Option<Instant>> = Mutex::new(None);

thread_local! {
    /// Open spans of this thread: (name, nanoseconds spent in closed children).
    static STACK: RefCell<Vec<(&'static str, u64)>> = const { RefCell::new(Vec::new()) };
}

/// Buckets of the log2 histogram: bucket `i` counts spans of `[2^i, 2^(i+1))` ns.
pub const HISTOGRAM_BUCKETS: usize = 40;

/// Observations of a path before its centred histogram is fixed on their mean (seed 001's
/// default).
pub const CENTRE_AFTER: u64 = 100;

/// Buckets of the centred histogram on each side of the mean (seed 001: "50 or less").
pub const CENTRED_SIDE: usize = 50;

/// The separator of a call path's names.
pub const SEP: &str = " -> ";

/// Seed 001's histogram: `2 · CENTRED_SIDE` buckets of `width_ns` from
/// `centre_ns - CENTRED_SIDE · width_ns` (never below 0), with what fell outside.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Centred {
    /// The mean of the first [`CENTRE_AFTER`] observations, ns.
    pub centre_ns: u64,
    /// Width of a bucket, ns (at least 1).
    pub width_ns: u64,
    /// Counts, lowest bucket first; `2 · CENTRED_SIDE` of them.
    pub buckets: Vec<u64>,
    /// Observations below the first bucket.
    pub under: u64,
    /// Observations at or past the end of the last bucket.
    pub over: u64,
}

impl Centred {
    /// A histogram centred on `centre_ns`, its range `[0, 2·centre)` cut into
    /// `2 · CENTRED_SIDE` buckets.
    pub fn around(centre_ns: u64) -> Centred {
        let width_ns = centre_ns.div_ceil(CENTRED_SIDE as u64).max(1);
        Centred { centre_ns, width_ns, buckets: vec![0; 2 * CENTRED_SIDE], under: 0, over: 0 }
    }

    /// Where the first bucket starts, ns.
    pub fn low_ns(&self) -> u64 {
        self.centre_ns.saturating_sub(CENTRED_SIDE as u64 * self.width_ns)
    }

    fn record(&mut self, ns: u64) {
        let Some(offset) = ns.checked_sub(self.low_ns()) else {
            self.under += 1;
            return;
        };
        match self.buckets.get_mut(usize::try_from(offset / self.width_ns).unwrap_or(usize::MAX)) {
            Some(b) => *b += 1,
            None => self.over += 1,
        }
    }

    /// Observations it holds, outside ones included.
    pub fn count(&self) -> u64 {
        self.buckets.iter().sum::<u64>() + self.under + self.over
    }
}

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
    /// Seed 001's centred histogram, once [`CENTRE_AFTER`] observations fixed its centre.
    pub centred: Option<Centred>,
}

impl Default for SpanStats {
    fn default() -> Self {
        SpanStats {
            count: 0,
            total_ns: 0,
            exclusive_ns: 0,
            max_ns: 0,
            histogram: [0; HISTOGRAM_BUCKETS],
            centred: None,
        }
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

    /// Mean exclusive duration, ns.
    pub fn exclusive_mean_ns(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.exclusive_ns as f64 / self.count as f64
        }
    }

    fn record(&mut self, ns: u64, child_ns: u64) {
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        self.exclusive_ns = self.exclusive_ns.saturating_add(ns.saturating_sub(child_ns));
        self.max_ns = self.max_ns.max(ns);
        let bucket = (64 - ns.max(1).leading_zeros() as usize - 1).min(HISTOGRAM_BUCKETS - 1);
        self.histogram[bucket] += 1;
        match &mut self.centred {
            Some(c) => c.record(ns),
            None if self.count >= CENTRE_AFTER => {
                self.centred = Some(Centred::around(self.total_ns / self.count));
            }
            None => {}
        }
    }

    /// Adds `other`'s observations (statistics of the same path from another run). A centred
    /// histogram is kept from `self` if it has one, else taken from `other`.
    pub fn merge(&mut self, other: &SpanStats) {
        self.count = self.count.saturating_add(other.count);
        self.total_ns = self.total_ns.saturating_add(other.total_ns);
        self.exclusive_ns = self.exclusive_ns.saturating_add(other.exclusive_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
        for (a, b) in self.histogram.iter_mut().zip(other.histogram.iter()) {
            *a = a.saturating_add(*b);
        }
        match (&mut self.centred, &other.centred) {
            (Some(a), Some(b)) if a.centre_ns == b.centre_ns && a.width_ns == b.width_ns => {
                for (x, y) in a.buckets.iter_mut().zip(&b.buckets) {
                    *x = x.saturating_add(*y);
                }
                a.under = a.under.saturating_add(b.under);
                a.over = a.over.saturating_add(b.over);
            }
            (None, Some(b)) => self.centred = Some(b.clone()),
            _ => {}
        }
    }
}

/// Turns recording on or off (spans already open when it changes are still closed correctly).
pub fn set_enabled(on: bool) {
    let mut since = SINCE.lock().unwrap_or_else(|e| e.into_inner());
    match (on, *since) {
        (true, None) => *since = Some(Instant::now()),
        (false, Some(t)) => {
            RECORDED_NS
                .fetch_add(u64::try_from(t.elapsed().as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
            *since = None;
        }
        _ => {}
    }
    ENABLED.store(on, Ordering::Relaxed);
}

/// Is recording on?
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// How long recording has been on since the last [`reset`], [`add_recorded`] included.
pub fn recorded() -> Duration {
    let now = SINCE.lock().unwrap_or_else(|e| e.into_inner()).map_or(0, |t| t.elapsed().as_nanos());
    Duration::from_nanos(
        RECORDED_NS.load(Ordering::Relaxed).saturating_add(u64::try_from(now).unwrap_or(u64::MAX)),
    )
}

/// Counts `d` as recorded (the time of statistics merged back from an earlier run).
pub fn add_recorded(d: Duration) {
    RECORDED_NS.fetch_add(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Forgets every recorded span and the recorded time (recording stays as it was).
pub fn reset() {
    STATS.lock().unwrap_or_else(|e| e.into_inner()).clear();
    RECORDED_NS.store(0, Ordering::Relaxed);
    let mut since = SINCE.lock().unwrap_or_else(|e| e.into_inner());
    if since.is_some() {
        *since = Some(Instant::now());
    }
}

/// Every call path recorded so far (`outer -> inner`), with its statistics.
pub fn snapshot() -> BTreeMap<String, SpanStats> {
    STATS.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Call paths recorded so far (without copying their statistics, as [`snapshot`] does).
pub fn path_count() -> usize {
    STATS.lock().unwrap_or_else(|e| e.into_inner()).len()
}

/// Adds statistics of `path` recorded elsewhere (an earlier run of the process).
pub fn merge(path: String, stats: &SpanStats) {
    STATS.lock().unwrap_or_else(|e| e.into_inner()).entry(path).or_default().merge(stats);
}

/// Total time of every path whose last element is `name`, ns.
pub fn total_ns(name: &str) -> u64 {
    snapshot().iter().filter(|(path, _)| path.rsplit(SEP).next() == Some(name)).map(|(_, s)| s.total_ns).sum()
}

/// Records one observation of `duration` for the path `name` alone, if recording is on: for
/// work measured across `.await` points, where a [`Span`] could close on another thread.
pub fn record(name: &'static str, duration: Duration) {
    if !enabled() {
        return;
    }
    let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
    STATS.lock().unwrap_or_else(|e| e.into_inner()).entry(name.to_string()).or_default().record(ns, 0);
}

/// An open span; it records when dropped.
#[must_use = "a span measures until it is dropped"]
pub struct Span {
    start: Option<Instant>,
}

/// Opens a span named `name` (a static, dotted name such as `"merkle.leaves"`).
#[inline]
pub fn span(name: &'static str) -> Span {
    if !enabled() {
        return Span { start: None };
    }
    STACK.with(|s| s.borrow_mut().push((name, 0)));
    Span { start: Some(Instant::now()) }
}

impl Drop for Span {
    #[inline]
    fn drop(&mut self) {
        let Some(start) = self.start else { return };
        close(start);
    }
}

fn close(start: Instant) {
    let ns = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let (path, child_ns) = STACK.with(|s| {
        let mut stack = s.borrow_mut();
        let path = stack.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(SEP);
        let (_, child_ns) = stack.pop().unwrap_or(("", 0));
        if let Some(parent) = stack.last_mut() {
            parent.1 = parent.1.saturating_add(ns);
        }
        (path, child_ns)
    });
    STATS.lock().unwrap_or_else(|e| e.into_inner()).entry(path).or_default().record(ns, child_ns);
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
    fn nested_spans_record_paths_exclusive_time_histograms_and_recorded_time() {
        reset();
        {
            let _quiet = span("off");
        }
        record("off", Duration::from_millis(1));
        assert!(snapshot().is_empty(), "a disabled profiler records nothing");
        assert_eq!(recorded(), Duration::ZERO);
        set_enabled(true);
        {
            let _outer = span("outer");
            std::thread::sleep(Duration::from_millis(2));
            for _ in 0..3 {
                let _inner = span("inner");
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        record("request", Duration::from_micros(500));
        set_enabled(false);
        let on = recorded();
        assert!(on >= Duration::from_millis(5), "{on:?}");
        std::thread::sleep(Duration::from_millis(2));
        assert_eq!(recorded(), on, "time with recording off is not counted");
        let s = snapshot();
        let outer = &s["outer"];
        let inner = &s["outer -> inner"];
        assert_eq!((outer.count, inner.count, s["request"].count), (1, 3, 1));
        assert_eq!(path_count(), s.len());
        assert_eq!(s["request"].total_ns, 500_000);
        assert!(inner.total_ns >= 3_000_000);
        assert!(outer.total_ns >= inner.total_ns + 2_000_000);
        assert_eq!(outer.exclusive_ns, outer.total_ns - inner.total_ns);
        assert_eq!(inner.histogram.iter().sum::<u64>(), 3);
        assert_eq!(total_ns("inner"), inner.total_ns);
        assert!(report(&s).contains("`outer -> inner` | 3 |"));
        reset();
        assert!(snapshot().is_empty());
        assert_eq!(path_count(), 0);
        assert_eq!(recorded(), Duration::ZERO);
        // Merged statistics add up.
        merge("outer".into(), outer);
        merge("outer".into(), outer);
        assert_eq!(snapshot()["outer"].count, 2);
        reset();
    }

    #[test]
    fn the_centred_histogram_is_fixed_on_the_mean_of_the_first_hundred() {
        let mut s = SpanStats::default();
        for _ in 0..CENTRE_AFTER - 1 {
            s.record(1_000, 0);
        }
        assert!(s.centred.is_none());
        s.record(1_000, 0);
        let c = s.centred.clone().unwrap();
        assert_eq!((c.centre_ns, c.width_ns, c.low_ns(), c.count()), (1_000, 20, 0, 0));
        // Later observations land around it: at the mean, just below, far out.
        for ns in [1_000, 999, 0, 1_999, 2_000, 50_000] {
            s.record(ns, 0);
        }
        let c = s.centred.clone().unwrap();
        assert_eq!(c.buckets[CENTRED_SIDE], 1, "the mean starts the upper half");
        assert_eq!(c.buckets[CENTRED_SIDE - 1], 1);
        assert_eq!((c.buckets[0], c.buckets[2 * CENTRED_SIDE - 1]), (1, 1));
        assert_eq!((c.under, c.over, c.count()), (0, 2, 6));
        // A centre past 50 · width leaves room below: under counts what falls there.
        let mut wide = Centred::around(10);
        assert_eq!((wide.width_ns, wide.low_ns()), (1, 0));
        wide.centre_ns = 500;
        wide.record(100);
        assert_eq!(wide.under, 1);
        // Merging the same centring adds bucket by bucket.
        let mut a = s.clone();
        a.merge(&s);
        assert_eq!(a.centred.unwrap().count(), 12);
        assert_eq!(a.count, 2 * s.count);
    }
}
