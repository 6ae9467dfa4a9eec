//! A benchmark's results: `rounds.csv` (a row per round), `series.csv` (a row per round and
//! second), `report.md`, a self-contained `report.html` (tables and inline SVG charts; no
//! script, no network needed to open it) and one JSON object for scripts.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use super::metrics::RoundResult;
use crate::output::sig4;
use crate::plot::{svg_string, Chart, Series};
use crate::{LabError, Machine, Table};

/// What the results are of.
#[derive(Clone, Debug, Default)]
pub struct Header {
    /// The benchmark's name.
    pub name: String,
    /// What the load went to (`devnet: 3 peers + 1 miner`, or the URLs).
    pub target: String,
    /// Transactions prepared in all, and the seconds their signing took.
    pub prepared: (u64, f64),
    /// Seconds the funding took.
    pub fund_s: f64,
    /// Ctrl-C stopped the benchmark.
    pub stopped: bool,
}

const COLUMNS: [&str; 26] = [
    "round",
    "name",
    "workload",
    "controller",
    "prepared",
    "offered",
    "accepted",
    "succeeded",
    "failed",
    "send_tps",
    "throughput_tps",
    "lat_min_ms",
    "lat_avg_ms",
    "lat_max_ms",
    "lat_p50_ms",
    "lat_p95_ms",
    "lat_p99_ms",
    "offer_s",
    "window_s",
    "node_cores",
    "cpu_us_per_tx",
    "generator_cores",
    "peak_rss_mib",
    "failed_reasons",
    "stopped",
    "build",
];

fn reasons(r: &RoundResult) -> String {
    r.failed.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("; ")
}

/// One row per round.
pub fn table(rounds: &[RoundResult]) -> Table {
    let mut t = Table::new(&COLUMNS);
    for (i, r) in rounds.iter().enumerate() {
        let l = r.latency.unwrap_or_default();
        t.push(vec![
            (i + 1).to_string(),
            r.name.clone(),
            r.workload.clone(),
            r.controller.clone(),
            r.prepared.to_string(),
            r.offered.to_string(),
            r.accepted.to_string(),
            r.succeeded.to_string(),
            r.failed_total().to_string(),
            format!("{:.1}", r.send_tps),
            format!("{:.1}", r.throughput_tps),
            format!("{:.1}", l.min),
            format!("{:.1}", l.avg),
            format!("{:.1}", l.max),
            format!("{:.1}", l.p50),
            format!("{:.1}", l.p95),
            format!("{:.1}", l.p99),
            format!("{:.2}", r.offer_s),
            format!("{:.2}", r.window_s),
            format!("{:.2}", r.node_cores()),
            format!("{:.0}", r.cpu.us_per_tx),
            format!("{:.3}", r.generator_cores),
            format!("{:.1}", r.peak_mib()),
            reasons(r),
            r.stopped.to_string(),
            crate::machine::build().to_string(),
        ]);
    }
    t
}

/// One row per round and second.
pub fn series_csv(rounds: &[RoundResult]) -> String {
    let mut out = String::from("round,t_s,offered,accepted,in_blocks,mempool\n");
    for (i, r) in rounds.iter().enumerate() {
        for s in &r.series {
            let _ = writeln!(
                out,
                "{},{:.1},{},{},{},{}",
                i + 1,
                s.t_s,
                s.offered,
                s.accepted,
                s.confirmed,
                s.mempool
            );
        }
    }
    out
}

/// The charts: rates and latency by round, throughput against send rate, and each round's
/// seconds (at most 12 rounds drawn).
pub fn charts(rounds: &[RoundResult]) -> Vec<Chart> {
    let by_round = |f: &dyn Fn(&RoundResult) -> f64| -> Vec<(f64, f64)> {
        rounds.iter().enumerate().map(|(i, r)| ((i + 1) as f64, f(r))).collect()
    };
    let lat =
        |f: fn(&super::metrics::Latency) -> f64| move |r: &RoundResult| r.latency.as_ref().map_or(0.0, f);
    let mut out = vec![
        Chart {
            title: "Send rate and throughput by round".into(),
            x_label: "round".into(),
            y_label: "tx/s".into(),
            log_x: false,
            log_y: false,
            x_names: Vec::new(),
            series: vec![
                Series::line("send rate", by_round(&|r| r.send_tps)),
                Series::line("throughput (confirmed)", by_round(&|r| r.throughput_tps)),
            ],
        },
        Chart {
            title: "Latency, submission to the confirming block, by round".into(),
            x_label: "round".into(),
            y_label: "ms".into(),
            log_x: false,
            log_y: false,
            x_names: Vec::new(),
            series: vec![
                Series::line("p50", by_round(&lat(|l| l.p50))),
                Series::line("p95", by_round(&lat(|l| l.p95))),
                Series::line("p99", by_round(&lat(|l| l.p99))),
                Series::line("max", by_round(&lat(|l| l.max))),
            ],
        },
        Chart {
            title: "Throughput against send rate".into(),
            x_label: "send rate (tx/s)".into(),
            y_label: "throughput (tx/s)".into(),
            log_x: false,
            log_y: false,
            x_names: Vec::new(),
            series: vec![Series::line(
                "rounds",
                rounds.iter().map(|r| (r.send_tps, r.throughput_tps)).collect(),
            )],
        },
    ];
    for (i, r) in rounds.iter().enumerate().take(12) {
        let per_second = |f: fn(&super::metrics::Sample) -> u64| -> Vec<(f64, f64)> {
            let mut last = (0.0, 0u64);
            r.series
                .iter()
                .map(|s| {
                    let dt = (s.t_s - last.0).max(1e-9);
                    let rate = f(s).saturating_sub(last.1) as f64 / dt;
                    last = (s.t_s, f(s));
                    (s.t_s, rate)
                })
                .collect()
        };
        out.push(Chart {
            title: format!("Round {} ({}): each second", i + 1, r.name),
            x_label: "s since the round began".into(),
            y_label: "tx/s".into(),
            log_x: false,
            log_y: false,
            x_names: Vec::new(),
            series: vec![
                Series::line("sent", per_second(|s| s.offered)),
                Series::line("in blocks", per_second(|s| s.confirmed)),
            ],
        });
    }
    out
}

/// The headings of the report's table, and each round's cells (unescaped).
const HEADINGS: [&str; 14] = [
    "#",
    "round",
    "workload",
    "controller",
    "succeeded",
    "failed",
    "send rate (tx/s)",
    "throughput (tx/s)",
    "latency min / avg / max (ms)",
    "p50 / p95 / p99 (ms)",
    "node cores",
    "CPU µs/tx",
    "generator cores",
    "peak RSS (MiB)",
];

fn cells(i: usize, r: &RoundResult) -> [String; 14] {
    let l = r.latency.unwrap_or_default();
    [
        (i + 1).to_string(),
        format!("{}{}", r.name, if r.stopped { " (stopped)" } else { "" }),
        r.workload.clone(),
        r.controller.clone(),
        r.succeeded.to_string(),
        r.failed_total().to_string(),
        sig4(r.send_tps),
        sig4(r.throughput_tps),
        format!("{} / {} / {}", sig4(l.min), sig4(l.avg), sig4(l.max)),
        format!("{} / {} / {}", sig4(l.p50), sig4(l.p95), sig4(l.p99)),
        format!("{:.2}", r.node_cores()),
        format!("{:.0}", r.cpu.us_per_tx),
        format!("{:.3}", r.generator_cores),
        format!("{:.0}", r.peak_mib()),
    ]
}

/// The Markdown report.
pub fn markdown(h: &Header, rounds: &[RoundResult], machine: &Machine) -> String {
    let mut s = format!("# Benchmark `{}`\n\n", h.name);
    let _ = writeln!(s, "{}\n", machine.markdown());
    let _ = writeln!(
        s,
        "Target: {}. Prepared {} transactions (signed in {:.1} s), funded in {:.1} s.{}\n",
        h.target,
        h.prepared.0,
        h.prepared.1,
        h.fund_s,
        if h.stopped { " **Stopped by Ctrl-C: the last round is partial.**" } else { "" }
    );
    let _ = writeln!(s, "| {} |\n|{}", HEADINGS.join(" | "), "---|".repeat(HEADINGS.len()));
    for (i, r) in rounds.iter().enumerate() {
        let _ = writeln!(s, "| {} |", cells(i, r).join(" | "));
    }
    let failures: Vec<String> = rounds
        .iter()
        .enumerate()
        .filter(|(_, r)| !r.failed.is_empty())
        .map(|(i, r)| format!("- round {} ({}): {}", i + 1, r.name, reasons(r)))
        .collect();
    if !failures.is_empty() {
        let _ = writeln!(s, "\nFailed, by reason:\n\n{}", failures.join("\n"));
    }
    s.push_str(DEFINITIONS);
    s
}

const DEFINITIONS: &str = "\n\
Succeeded: confirmed on the main chain by the end of the round's drain. Failed: refused by a \
node (its reason), lost with a failed request (`api: …`), or `unconfirmed` (accepted, not on the \
main chain when the drain ended). Send rate: sent / (last request − start). Throughput: \
succeeded / (the block confirming the last one first seen − start). Latency: from the request \
that carried a transaction to the moment the block confirming it was first seen (the first \
node's tip events). CPU: user + system time of each node process (node cores, µs per \
succeeded transaction over all nodes) and of the generator, from `/proc`, over the round and \
its drain.\n";

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The HTML report: one page, its charts inline, nothing fetched.
pub fn html(h: &Header, rounds: &[RoundResult], machine: &Machine) -> Result<String, LabError> {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>Benchmark {name}</title><style>{STYLE}</style></head><body>\n<h1>Benchmark <code>{name}</code></h1>\n",
        name = esc(&h.name)
    );
    let _ = writeln!(
        s,
        "<pre>{}</pre><p>Target: {}. Prepared {} transactions (signed in {:.1} s), funded in {:.1} s.{}</p>",
        esc(&machine.markdown()),
        esc(&h.target),
        h.prepared.0,
        h.prepared.1,
        h.fund_s,
        if h.stopped { " <strong>Stopped by Ctrl-C: the last round is partial.</strong>" } else { "" }
    );
    let th: String = HEADINGS.iter().map(|h| format!("<th>{}</th>", esc(h))).collect();
    let _ = writeln!(s, "<table><thead><tr>{th}</tr></thead><tbody>");
    for (i, r) in rounds.iter().enumerate() {
        let td: String = cells(i, r).iter().map(|c| format!("<td>{}</td>", esc(c))).collect();
        let _ = writeln!(s, "<tr>{td}</tr>");
    }
    s.push_str("</tbody></table>\n");
    for (i, r) in rounds.iter().enumerate().filter(|(_, r)| !r.failed.is_empty()) {
        let _ = writeln!(s, "<p>Round {} ({}) failed: {}</p>", i + 1, esc(&r.name), esc(&reasons(r)));
    }
    let _ = writeln!(s, "<p class=\"note\">{}</p>", esc(DEFINITIONS.trim()));
    let svg = svg_string(&charts(rounds))?;
    // The SVG comes from the plotting library, its text escaped there.
    let _ = writeln!(s, "<figure>{svg}</figure>\n</body></html>");
    Ok(s)
}

const STYLE: &str = "body{font-family:system-ui,sans-serif;margin:1.5rem;max-width:90rem}\
table{border-collapse:collapse;font-size:.9rem}td,th{border:1px solid #bbb;padding:.25rem .5rem;text-align:right}\
td:nth-child(2),td:nth-child(3),td:nth-child(4){text-align:left}.note{font-size:.85rem;color:#444}\
figure svg{max-width:100%;height:auto}@media (prefers-color-scheme:dark){body{background:#111;color:#ddd}\
td,th{border-color:#555}.note{color:#aaa}figure{background:#fff}}";

/// The results as one JSON object.
pub fn json(h: &Header, rounds: &[RoundResult]) -> serde_json::Value {
    let rounds: Vec<serde_json::Value> = rounds
        .iter()
        .map(|r| {
            let l = r.latency.unwrap_or_default();
            json!({
                "name": r.name,
                "workload": r.workload,
                "controller": r.controller,
                "prepared": r.prepared,
                "offered": r.offered,
                "accepted": r.accepted,
                "succeeded": r.succeeded,
                "failed": r.failed_total(),
                "failed_reasons": r.failed,
                "send_tps": r.send_tps,
                "throughput_tps": r.throughput_tps,
                "latency_ms": {"min": l.min, "avg": l.avg, "max": l.max, "p50": l.p50, "p95": l.p95, "p99": l.p99},
                "offer_s": r.offer_s,
                "window_s": r.window_s,
                "node_cores": r.node_cores(),
                "cpu_us_per_tx": r.cpu.us_per_tx,
                "generator_cores": r.generator_cores,
                "peak_rss_bytes": r.rss_peak.iter().map(|(_, b)| *b).max().unwrap_or(0),
                "heights": [r.heights.0, r.heights.1],
                "stopped": r.stopped,
            })
        })
        .collect();
    json!({
        "benchmark": h.name,
        "target": h.target,
        "prepared": h.prepared.0,
        "fund_s": h.fund_s,
        "stopped": h.stopped,
        "rounds": rounds,
    })
}

/// Writes `rounds.csv`, `series.csv`, `report.md` and `report.html` to `dir`.
pub fn write(dir: &Path, h: &Header, rounds: &[RoundResult]) -> Result<(), LabError> {
    std::fs::create_dir_all(dir).map_err(|e| LabError::io(dir, e))?;
    let machine = Machine::detect();
    let files = [
        ("rounds.csv", table(rounds).to_csv()),
        ("series.csv", series_csv(rounds)),
        ("report.md", markdown(h, rounds, &machine)),
        ("report.html", html(h, rounds, &machine)?),
    ];
    for (name, text) in files {
        let p = dir.join(name);
        std::fs::write(&p, text).map_err(|e| LabError::io(&p, e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeMap;

    use super::*;
    use crate::bench::metrics::{Latency, Sample};
    use crate::load::report::cpu::Usage;

    fn round(name: &str) -> RoundResult {
        RoundResult {
            name: name.into(),
            workload: "transfer 1-1".into(),
            controller: "fixed-rate".into(),
            prepared: 1000,
            offered: 1000,
            accepted: 990,
            succeeded: 980,
            failed: BTreeMap::from([("low-fee".into(), 10), ("unconfirmed".into(), 10)]),
            send_tps: 100.0,
            throughput_tps: 98.0,
            latency: Some(Latency {
                min: 10.0,
                avg: 500.0,
                max: 2000.0,
                p50: 450.0,
                p95: 1500.0,
                p99: 1900.0,
            }),
            offer_s: 10.0,
            window_s: 20.0,
            cpu: Usage {
                per_proc: vec![("peer0".into(), 4.0), ("peer1".into(), 6.0), ("bench".into(), 1.0)],
                cores: 0.55,
                us_per_tx: 11_224.0,
            },
            generator_cores: 0.05,
            rss_peak: vec![("peer0".into(), 100 << 20), ("peer1".into(), 150 << 20)],
            series: vec![
                Sample { t_s: 1.0, offered: 100, accepted: 100, confirmed: 0, mempool: 100 },
                Sample { t_s: 2.0, offered: 200, accepted: 199, confirmed: 150, mempool: 49 },
            ],
            heights: (4, 9),
            stopped: false,
            unconfirmed: Vec::new(),
            memory: Vec::new(),
        }
    }

    #[test]
    fn the_csv_has_a_row_per_round_with_every_measurement() {
        let t = table(&[round("a"), round("b")]);
        let csv = t.to_csv();
        let back = Table::from_csv(&csv).unwrap();
        let rows: Vec<_> = back.select("name", "b").collect();
        assert_eq!(rows.len(), 1);
        let r = rows[0];
        assert_eq!(back.num(r, "succeeded"), Some(980.0));
        assert_eq!(back.num(r, "failed"), Some(20.0));
        assert_eq!(back.num(r, "node_cores"), Some(0.5), "nodes only: 10 s over 20 s");
        assert_eq!(back.num(r, "peak_rss_mib"), Some(150.0));
        assert_eq!(back.num(r, "lat_p99_ms"), Some(1900.0));
        assert_eq!(r[back.col("failed_reasons").unwrap()], "low-fee=10; unconfirmed=10");
        let series = series_csv(&[round("a")]);
        assert_eq!(series.lines().nth(2), Some("1,2.0,200,199,150,49"));
    }

    #[test]
    fn the_html_report_escapes_names_and_carries_its_charts_inline() {
        let h = Header { name: "<b>x</b>".into(), target: "devnet".into(), ..Header::default() };
        let page = html(&h, &[round("<script>alert(1)</script>")], &Machine::detect()).unwrap();
        assert!(!page.contains("<script>"), "escaped");
        assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(page.contains("<title>Benchmark &lt;b&gt;x&lt;/b&gt;</title>"));
        assert!(page.contains("<svg") && page.contains("Throughput against send rate"));
        assert!(!page.contains(" src=") && !page.contains("href="), "nothing to fetch");
        let md = markdown(&h, &[round("a")], &Machine::detect());
        assert!(md.contains("| 1 | a | transfer 1-1 | fixed-rate | 980 | 20 | 100.0 | 98.00 | 10.00 / 500.0 / 2000 | 450.0 / 1500 / 1900 | 0.50 |"), "{md}");
        assert!(md.contains("- round 1 (a): low-fee=10; unconfirmed=10"));
        let j = json(&h, &[round("a")]);
        assert_eq!(j["rounds"][0]["latency_ms"]["p95"], 1500.0);
        assert_eq!(j["rounds"][0]["failed_reasons"]["low-fee"], 10);
        assert_eq!(j["rounds"][0]["heights"], serde_json::json!([4, 9]));
    }
}
