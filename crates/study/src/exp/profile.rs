//! `profile` (seed 001 Tables 4, 7 and 10): where a node's time goes while it takes seed 001's
//! 1,001 transactions, by function, beside seed 001's profiles.
//!
//! Seed 001 profiled its node's functions (calls, average run time, run time without the
//! profiled callees) on the machine that generated the 1,001 transactions and mined them
//! (testNetNoDNS, Table 4) and on two mainNet nodes (Tables 7 and 10). Ours: the node's own
//! profiler (`GET /profile`) on one devnet miner, recording from the first submission until the
//! 1,001 of `propagation` — submitted one request each, as seed 001's `sendOneRawTransaction`
//! was called 1,001 times — were mined. The miner both admits and mines, as seed 001's local
//! machine did. The spans that do what seed 001's functions did are set beside them
//! ([`ANALOGUES`]); every path recorded is in the CSV.

use std::collections::BTreeMap;

use scalechain_client::types::ProfilePath;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::Params;
use scalechain_lab::output::sig4;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_types::HashKind;

use super::e2e;
use super::propagation::{self, Placement, RunOpts, Submission};
use crate::seeds::{self, PROFILE_ROWS, SEED_001_CLAIMS};
use crate::{Ctx, Experiment, StudyError};

/// Columns of `profile.csv`: one row per call path the node recorded.
pub const COLUMNS: &[&str] = &["path", "calls", "avg_us", "excl_us", "max_us", "total_ms", "build", "commit"];

/// Seed 001's functions and the node's spans that do the same work: (seed function as
/// [`seeds::ProfileRow::function`] names it, span, what the span covers).
pub const ANALOGUES: &[(&str, &str, &str)] = &[
    (
        "AcceptToMemoryPoolWithTime",
        "mempool.offer",
        "a request's transactions offered to the pool, orphans included; one per request here",
    ),
    (
        "AcceptToMemoryPoolWorker",
        "mempool.judge",
        "the batch judged under the pool's lock: rules, signatures, placement",
    ),
    (
        "VerifyScript (in admission)",
        "mempool.verify",
        "the consensus rules and the signature check of admission",
    ),
    ("UpdateTip", "chain.activate_best", "the main chain moved onto a new block"),
    ("CreateNewBlock", "miner.template", "a block template assembled from the pool"),
];

/// The statistics of every path ending in span `leaf`, summed: (calls, total ns, exclusive
/// ns, longest ns).
fn by_leaf(paths: &[ProfilePath], leaf: &str) -> Option<(u64, u64, u64, u64)> {
    let mut hit = false;
    let mut sum = (0u64, 0u64, 0u64, 0u64);
    for p in paths.iter().filter(|p| p.path.rsplit(" -> ").next() == Some(leaf)) {
        hit = true;
        sum.0 = sum.0.saturating_add(p.count);
        sum.1 = sum.1.saturating_add(p.total_ns);
        sum.2 = sum.2.saturating_add(p.exclusive_ns);
        sum.3 = sum.3.max(p.max_ns);
    }
    hit.then_some(sum)
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let exe = e2e::node_binary(ctx, "profile")?;
    ctx.start(1, "profile: a miner taking the 1,001 one request each");
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let txs = propagation::workload(&p);
    let opts = RunOpts { profile: true, ..RunOpts::propagation() };
    let raw =
        propagation::run_raw_with(&exe, 1, &txs, p.hash, &Placement::Loopback, &opts, Submission::OneByOne)?;
    if raw.profile.is_empty() {
        return Err(StudyError::Wrong("the node recorded no call path while it took the 1,001".into()));
    }
    ctx.progress.inc(1);
    let mut table = Table::new(COLUMNS);
    for path in &raw.profile {
        table.push(row(path, ctx.machine.build, ctx.machine.commit));
    }
    ctx.finish(Experiment::Profile, &table, charts, section)
}

/// The CSV row of one path.
fn row(p: &ProfilePath, build: &str, commit: &str) -> Vec<String> {
    let calls = p.count.max(1) as f64;
    vec![
        p.path.clone(),
        p.count.to_string(),
        format!("{:.2}", p.total_ns as f64 / calls / 1e3),
        format!("{:.2}", p.exclusive_ns as f64 / calls / 1e3),
        format!("{:.2}", p.max_ns as f64 / 1e3),
        format!("{:.3}", p.total_ns as f64 / 1e6),
        build.into(),
        commit.into(),
    ]
}

/// The paths of `build`'s rows, as the node reported them.
fn paths_of(t: &Table, build: &str) -> Vec<ProfilePath> {
    t.rows
        .iter()
        .filter(|r| r[6] == build)
        .filter_map(|r| {
            let count: u64 = r[1].parse().ok()?;
            let us = |i: usize| r[i].parse::<f64>().ok();
            Some(ProfilePath {
                path: r[0].clone(),
                count,
                total_ns: (us(2)? * 1e3 * count as f64).round() as u64,
                exclusive_ns: (us(3)? * 1e3 * count as f64).round() as u64,
                max_ns: (us(4)? * 1e3).round() as u64,
                log2: Vec::new(),
                centred: None,
            })
        })
        .collect()
}

/// Seed 001's average for `function` in `table`, µs.
fn seed_avg(table: &str, function: &str) -> Option<&'static seeds::ProfileRow> {
    PROFILE_ROWS.iter().find(|r| r.table == table && r.function == function)
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let mut series = Vec::new();
    for build in t.distinct("build") {
        let paths = paths_of(t, &build);
        let pts: Vec<(f64, f64)> = ANALOGUES
            .iter()
            .enumerate()
            .filter_map(|(i, (_, span, _))| {
                let (calls, total, _, _) = by_leaf(&paths, span)?;
                Some((i as f64 + 1.0, total as f64 / calls.max(1) as f64 / 1e3))
            })
            .collect();
        series.push(Series::line(format!("ScaleChain ({build}), the node's span"), pts));
    }
    for table in ["Table 4", "Table 7", "Table 10"] {
        let pts: Vec<(f64, f64)> = ANALOGUES
            .iter()
            .enumerate()
            .filter_map(|(i, (f, _, _))| Some((i as f64 + 1.0, seed_avg(table, f)?.avg_us)))
            .collect();
        if !pts.is_empty() {
            series.push(Series::seed(format!("seed 001 {table}"), pts));
        }
    }
    let names: Vec<String> =
        ANALOGUES.iter().enumerate().map(|(i, (f, _, _))| format!("{} {f}", i + 1)).collect();
    vec![Chart {
        title: "Average run time by function, beside seed 001 Tables 4 / 7 / 10".into(),
        x_label: format!("function: {}", names.join(", ")),
        y_label: "µs per call".into(),
        log_x: false,
        log_y: true,
        x_names: Vec::new(),
        series,
    }]
}

fn section(t: &Table) -> String {
    let mut s = String::from(
        "The node's function profiler (`GET /profile`; `scalechain profile` prints it in seed 001's \
         table shape, with histograms) on one devnet miner, recording from the first of the 1,001 \
         transactions of `propagation` — one request each, as seed 001 submitted them — until they \
         were mined. Like seed 001's local machine (Table 4), the node admitted and mined them. \
         Nested spans are `outer -> inner`; `excl_us` leaves out the time of nested spans.\n\n",
    );
    s.push_str(&format!("**Beside seed 001** ({}):\n\n", seeds::PROFILE_SOURCE));
    s.push_str(
        "| seed 001 function | Table 7 London: calls, µs | Table 10 Mumbai: calls, µs | Table 4 testNetNoDNS: calls, µs \
         | ours: span (what it covers) |",
    );
    let builds = t.distinct("build");
    for b in &builds {
        s.push_str(&format!(" {b}: calls | {b}: µs | {b}: excl µs |"));
    }
    s.push_str("\n|---|---|---|---|---|");
    for _ in &builds {
        s.push_str("---:|---:|---:|");
    }
    s.push('\n');
    let cell = |table: &str, f: &str| {
        seed_avg(table, f).map_or("–".to_string(), |r| format!("{}, {}", r.calls, r.avg_us))
    };
    let per_build: BTreeMap<&String, Vec<ProfilePath>> = builds.iter().map(|b| (b, paths_of(t, b))).collect();
    for (f, span, what) in ANALOGUES {
        s.push_str(&format!(
            "| {f} | {} | {} | {} | `{span}` ({what}) |",
            cell("Table 7", f),
            cell("Table 10", f),
            cell("Table 4", f)
        ));
        for b in &builds {
            match by_leaf(&per_build[b], span) {
                Some((calls, total, excl, _)) => {
                    let n = calls.max(1) as f64;
                    s.push_str(&format!(
                        " {calls} | {} | {} |",
                        sig4(total as f64 / n / 1e3),
                        sig4(excl as f64 / n / 1e3)
                    ));
                }
                None => s.push_str(" – | – | – |"),
            }
        }
        s.push('\n');
    }
    s.push_str("\nSeed 001's prose:\n\n");
    for c in SEED_001_CLAIMS {
        s.push_str(&format!("- {}: {} {} ({})\n", c.what, c.value, c.unit, c.source));
    }
    for b in &builds {
        if let Some((calls, total, _, _)) = by_leaf(&per_build[b], "mempool.offer") {
            s.push_str(&format!(
                "\nOurs ({b}): the {calls} offers to the pool took {} ms in all (seed 001: about 400 ms, \
                 397 ms in its latest run, for its 1,001), {} µs each on average (seed 001: 436 µs).\n",
                sig4(total as f64 / 1e6),
                sig4(total as f64 / calls.max(1) as f64 / 1e3)
            ));
        }
    }
    s.push_str(
        "\nNot like for like: seed 001's functions ran a script interpreter over ECDSA signatures and \
         LevelDB's coins; ours are Ed25519 under a signature cache, an in-memory UTXO set and a \
         different split of the work into functions, so a row compares what the node spends on the \
         same step, not the same code. Seed 001's mainNet tables (7, 10) are hours of a live node, \
         ours one run of the 1,001; its Table 4's admission rows are lost from its text (only its \
         prose's 436 µs remains). `UpdateTip` and `CreateNewBlock` average over seed 001's blocks, \
         whose sizes it does not give; ours over the blocks that carried the 1,001.\n\n**Every path, by total time**\n\n",
    );
    let mut all = Table::new(COLUMNS);
    all.rows = t.rows.clone();
    all.rows.sort_by(|a, b| {
        let total = |r: &Vec<String>| r[5].parse::<f64>().unwrap_or(0.0);
        total(b).total_cmp(&total(a))
    });
    s.push_str(&all.markdown(&COLUMNS[..7]));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(p: &str, count: u64, total_us: u64, excl_us: u64) -> ProfilePath {
        ProfilePath {
            path: p.into(),
            count,
            total_ns: total_us * 1_000,
            exclusive_ns: excl_us * 1_000,
            max_ns: 9_000,
            log2: Vec::new(),
            centred: None,
        }
    }

    #[test]
    fn spans_are_summed_over_their_callers_and_set_beside_the_seeds_rows() {
        let paths = [
            path("pipeline.verify -> mempool.offer", 1_000, 300_000, 10_000),
            path("api.submit -> mempool.offer", 1, 500, 10),
            path("mempool.offer -> mempool.judge", 1_001, 250_000, 50_000),
            path("chain.activate_best", 10, 400, 100),
        ];
        assert_eq!(by_leaf(&paths, "mempool.offer"), Some((1_001, 300_500_000, 10_010_000, 9_000)));
        assert_eq!(by_leaf(&paths, "miner.template"), None);
        let mut t = Table::new(COLUMNS);
        for p in &paths {
            t.push(row(p, "portable", "c0ffee"));
        }
        // The CSV keeps what the section needs: the averages read back as recorded.
        let back = paths_of(&t, "portable");
        assert_eq!(by_leaf(&back, "mempool.judge").map(|s| s.0), Some(1_001));
        let s = section(&t);
        assert!(s.contains("| AcceptToMemoryPoolWithTime | 11, 405 | 11, 447 | – | `mempool.offer`"), "{s}");
        // 300.5 ms over 1,001 offers: 300.2 µs each.
        assert!(s.contains("took 300.5 ms in all") && s.contains("300.2 µs each"), "{s}");
        assert!(s.contains("| CreateNewBlock | – | – | 210, 169 | `miner.template`"), "{s}");
        let c = charts(&t);
        assert_eq!(c[0].series.len(), 4, "ours and seed 001's three tables");
    }
}
