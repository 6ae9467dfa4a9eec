//! `scalechain profile`: a node's function profile (`GET /profile`) in the shape of seed 001's
//! tables — Tables 4/7/10 (call path with nested calls as `a -> b`, calls, average, average
//! excluding profiled callees, longest) and Tables 5/8/11 (each path's histogram centred on its
//! mean) — beside the log2 histogram; or turns the profiler on, off, or resets it
//! (`POST /profile`).

use clap::Args;

use scalechain_client::types::{ProfileControl, ProfileJson, ProfilePath};

use crate::remote::{NodeError, NodeOpts};
use crate::Fail;

/// Arguments of `scalechain profile`.
#[derive(Args)]
pub struct ProfileArgs {
    #[command(flatten)]
    api: NodeOpts,
    /// Print the node's JSON document instead of tables.
    #[arg(long)]
    json: bool,
    /// Start recording (then print the profiler's state).
    #[arg(long, conflicts_with_all = ["disable", "json"])]
    enable: bool,
    /// Stop recording.
    #[arg(long, conflicts_with_all = ["enable", "json"])]
    disable: bool,
    /// Forget every statistic (in the node's memory and data directory).
    #[arg(long, conflicts_with = "json")]
    reset: bool,
    /// Leave out the histograms.
    #[arg(long)]
    no_histograms: bool,
}

/// Paths fetched per request.
const PAGE: usize = 1_000;
/// Most paths fetched in all.
const MAX_PATHS: usize = 10_000;
/// Widest histogram bar, characters.
const BAR: u64 = 40;

/// Runs `scalechain profile`.
pub fn run(a: ProfileArgs) -> Result<(), Fail> {
    let api = a.api.client()?;
    if a.enable || a.disable || a.reset {
        let control = ProfileControl { enabled: (a.enable || a.disable).then_some(a.enable), reset: a.reset };
        let s = api.profile_control(&control).map_err(NodeError::from)?;
        println!(
            "profiler {}: {} call paths, {:.1} s recorded",
            if s.enabled { "recording" } else { "off" },
            s.paths,
            s.recorded_s
        );
        return Ok(());
    }
    let mut doc = api.profile(None, Some(PAGE)).map_err(NodeError::from)?;
    while doc.more && doc.paths.len() < MAX_PATHS {
        let last = doc.paths.last().map(|p| p.path.clone());
        let next = api.profile(last.as_deref(), Some(PAGE)).map_err(NodeError::from)?;
        doc.paths.extend(next.paths);
        doc.more = next.more;
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc).map_err(|e| Fail(2, e.to_string()))?);
    } else {
        // The hint repeats the node the command was given.
        let enable = match &a.api.api {
            Some(url) => format!("scalechain profile --api {url} --enable"),
            None => "scalechain profile --enable".to_string(),
        };
        print!("{}", tables(&doc, !a.no_histograms, &enable));
    }
    Ok(())
}

/// Seed 001's tables for `doc`: the statistics, then (with `histograms`) each path's histograms;
/// with no path recorded, the hint to run `enable` (the command line that turns the profiler on).
pub fn tables(doc: &ProfileJson, histograms: bool, enable: &str) -> String {
    let mut out = format!(
        "Profiling {} over {}, with {} restarts{}.\n\n",
        if doc.enabled { "recording" } else { "off" },
        duration(doc.recorded_s),
        doc.restarts,
        if doc.more { " (more paths than shown)" } else { "" }
    );
    if doc.paths.is_empty() {
        out.push_str(&format!("No call path recorded (turn the profiler on: `{enable}`).\n"));
        return out;
    }
    let width = doc.paths.iter().map(|p| p.path.chars().count()).max().unwrap_or(8).max(8);
    out.push_str(&format!(
        "{:<width$}  {:>10}  {:>14}  {:>14}  {:>12}\n",
        "function", "# calls", "avg µs", "avg excl. µs", "max µs"
    ));
    for p in &doc.paths {
        let n = p.count.max(1) as f64;
        let excl = if p.exclusive_ns == p.total_ns {
            String::new()
        } else {
            format!("{:.1}", p.exclusive_ns as f64 / n / 1e3)
        };
        out.push_str(&format!(
            "{:<width$}  {:>10}  {:>14.1}  {:>14}  {:>12.1}\n",
            p.path,
            p.count,
            p.total_ns as f64 / n / 1e3,
            excl,
            p.max_ns as f64 / 1e3
        ));
    }
    if histograms {
        for p in &doc.paths {
            out.push('\n');
            out.push_str(&histogram(p));
        }
    }
    out
}

/// One path's histograms: seed 001's centred one if it has one, and the log2 one.
fn histogram(p: &ProfilePath) -> String {
    let mut out = format!("{} ({} calls)\n", p.path, p.count);
    match &p.centred {
        Some(c) => {
            let low = c.centre_ns.saturating_sub(c.width_ns * (c.buckets.len() as u64 / 2));
            out.push_str(&format!(
                "  centred on {:.1} µs, {} buckets of {:.2} µs from {:.1} µs ({} calls since centring)\n",
                c.centre_ns as f64 / 1e3,
                c.buckets.len(),
                c.width_ns as f64 / 1e3,
                low as f64 / 1e3,
                c.buckets.iter().sum::<u64>() + c.under + c.over
            ));
            let max = c.buckets.iter().copied().chain([c.under, c.over]).max().unwrap_or(0);
            if c.under > 0 {
                out.push_str(&row(&format!("< {:.1}", low as f64 / 1e3), c.under, max));
            }
            for (i, n) in c.buckets.iter().enumerate().filter(|(_, n)| **n > 0) {
                let from = low + i as u64 * c.width_ns;
                out.push_str(&row(
                    &format!("{:.1}–{:.1}", from as f64 / 1e3, (from + c.width_ns) as f64 / 1e3),
                    *n,
                    max,
                ));
            }
            if c.over > 0 {
                let end = low + c.buckets.len() as u64 * c.width_ns;
                out.push_str(&row(&format!(">= {:.1}", end as f64 / 1e3), c.over, max));
            }
        }
        None => out.push_str("  not centred yet (fewer than 100 calls)\n"),
    }
    out.push_str("  log2:\n");
    let max = p.log2.iter().copied().max().unwrap_or(0);
    for (i, n) in p.log2.iter().enumerate().filter(|(_, n)| **n > 0) {
        out.push_str(&row(&format!("{}–{}", ns(1u64 << i), ns(1u64 << (i + 1))), *n, max));
    }
    out
}

/// `  label µs  count  ####`, the bar scaled to `max`.
fn row(label: &str, n: u64, max: u64) -> String {
    let bar = (n * BAR).div_ceil(max.max(1));
    format!("  {label:>24}  {n:>10}  {}\n", "#".repeat(bar as usize))
}

/// A duration in ns, in the unit that reads best.
fn ns(v: u64) -> String {
    match v {
        0..1_000 => format!("{v} ns"),
        1_000..1_000_000 => format!("{:.0} µs", v as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.0} ms", v as f64 / 1e6),
        _ => format!("{:.1} s", v as f64 / 1e9),
    }
}

/// Seconds as seed 001 wrote them: `33 min, 34 s`.
fn duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min, {} s", s / 60, s % 60),
        _ => format!("{} h, {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_client::types::CentredJson;

    fn path(name: &str, count: u64, total_ns: u64, exclusive_ns: u64) -> ProfilePath {
        let mut log2 = vec![0; 40];
        log2[10] = count;
        ProfilePath {
            path: name.into(),
            count,
            total_ns,
            exclusive_ns,
            max_ns: total_ns / count.max(1) * 2,
            log2,
            centred: None,
        }
    }

    #[test]
    fn tables_have_seed_001s_columns_and_centred_histograms() {
        let mut outer = path("pipeline.verify", 200, 2_000_000, 500_000);
        let mut buckets = vec![0; 100];
        buckets[50] = 90;
        buckets[10] = 5;
        outer.centred = Some(CentredJson { centre_ns: 10_000, width_ns: 200, buckets, under: 0, over: 5 });
        let inner = path("pipeline.verify -> mempool.offer", 200, 1_500_000, 1_500_000);
        let doc = ProfileJson {
            enabled: true,
            recorded_s: 2014.0,
            restarts: 3,
            paths: vec![outer, inner],
            more: false,
        };
        let t = tables(&doc, true, "x");
        assert!(t.starts_with("Profiling recording over 33 min, 34 s, with 3 restarts."), "{t}");
        assert!(t.contains("# calls"), "{t}");
        // Average 10 µs, 2.5 µs of it outside profiled callees; a leaf has no exclusive column.
        let row = t.lines().find(|l| l.starts_with("pipeline.verify  ")).unwrap();
        assert!(row.contains("10.0") && row.contains("2.5"), "{row}");
        let leaf = t.lines().find(|l| l.starts_with("pipeline.verify -> mempool.offer")).unwrap();
        assert_eq!(leaf.split_whitespace().count(), 6, "{leaf}");
        assert!(
            t.contains("centred on 10.0 µs, 100 buckets of 0.20 µs from 0.0 µs (100 calls since centring)"),
            "{t}"
        );
        assert!(t.contains("10.0–10.2") && t.contains("2.0–2.2") && t.contains(">= 20.0"), "{t}");
        assert!(t.contains("not centred yet"), "{t}");
        assert!(t.contains("1 µs–2 µs"), "{t}");
        let empty = ProfileJson { paths: vec![], ..doc };
        let hint = tables(&empty, true, "scalechain profile --api http://h:1 --enable");
        assert!(hint.contains("No call path recorded (turn the profiler on: `scalechain profile --api http://h:1 --enable`)"), "{hint}");
    }
}
