//! Seed 003's optimisations, one at a time (§5.1.1, §5.3, §5.4, §6.2.2–6.2.4, Tables 5.1–5.2,
//! 6.1–6.2): each experiment changes one thing in a devnet of node processes and measures the
//! end-to-end effect through the load benchmark, with seed 003's deltas beside ours.
//!
//! - `backend`: the crypto backends. Node binaries of different builds (`--compare`): the
//!   the README's build (Ed25519 on AVX-512 IFMA where the CPU has it, SHA-256 on SHA-NI)
//!   against builds that leave the IFMA backend out (Ed25519 on AVX2), compute SHA-256 without
//!   SHA-NI (`--cfg sha2_backend="soft"`), or both, and `-C target-cpu=native`; each binary measures its own per-operation costs, and its
//!   devnet the end-to-end effect (seed 003: −13.6% SHA-256 time, −15.7% ECDSA time, 300 → 350
//!   TPS).
//! - `signatures`: a chain that declares in its genesis that it skips input signatures against
//!   the same chain checking them (seed 003: +18% throughput with verification returning true).
//!
//! `contention` (seed 003's lock removal, Tables 6.1 / 6.2 and Fig 5.7) runs on the same
//! harness ([`run_cases`]) from its own module, `super::contention`.
//!
//! Each trial starts every case's devnet in turn (the cases interleaved, so the machine's drift
//! spreads over all of them) and runs two fixed-rate rounds of 1-input/1-output transfers on it:
//! one offered past saturation (its throughput is the network's capacity) and one below it (its
//! latency is the network's at an easy load). Transfers, because only they carry signatures and
//! hash work in proportion to the load (ballots carry proofs, not signatures).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use scalechain_lab::bench::metrics::RoundResult;
use scalechain_lab::bench::spec::{Round, Workload};
use scalechain_lab::launcher::{Launcher, Role};
use scalechain_lab::load::prepare::Shape;
use scalechain_lab::load::schedule::Rate;
use scalechain_lab::machine;
use scalechain_lab::output::sig4;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_types::{Hash, HashKind, Scheme, SecretKey};

use super::e2e::{self, Setting, MINERS, PEERS};
use crate::seeds::{
    SEED_COMBINED, SEED_ECDSA_TIME_CHANGE_PCT, SEED_NO_SIGNATURES_THROUGHPUT_PCT,
    SEED_SHA256_TIME_CHANGE_PCT, SEED_SWAP_LATENCY_TEXT, SEED_SWAP_SATURATION_TPS, SEED_SWAP_THROUGHPUT_PCT,
};
use crate::{median, Ctx, Experiment, StudyError};

/// Columns of `backend.csv`, `signatures.csv` and `contention.csv`. A round's row has the
/// round's figures; an operation's row (`round` = `op …`, `backend` only) has `ns_per_op`.
pub const COLUMNS: &[&str] = &[
    "case",
    "round",
    "offered_tps",
    "trial",
    "ns_per_op",
    "send_tps",
    "throughput_tps",
    "lat_avg_ms",
    "lat_p50_ms",
    "lat_p99_ms",
    "succeeded",
    "failed",
    "node_cores",
    "cpu_us_per_tx",
    "build",
    "commit",
];

/// Trials per case in a full run (each on a fresh devnet).
pub const TRIALS: usize = 3;
/// Transfers per second of the round offered past saturation (above every case's capacity).
pub const SATURATED_TPS: f64 = 20_000.0;
/// Transfers per second of the round offered below saturation.
pub const BELOW_TPS: f64 = 2_000.0;
/// Seconds of each round.
pub const ROUND_S: u64 = 10;
/// Seconds of each round with `--quick`.
pub const QUICK_ROUND_S: u64 = 2;

/// The round offered past saturation.
pub(crate) const SATURATED: &str = "saturated";
/// The round offered below saturation.
pub(crate) const BELOW: &str = "below";

/// One devnet configuration of an experiment.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    /// Its label (a CSV cell: no commas).
    pub label: String,
    /// What the nodes run with.
    pub setting: Setting,
    /// The node binary.
    pub exe: PathBuf,
}

/// A comparison the report makes: `variant` against `baseline`, with seed 003's changes in
/// throughput and latency (percent) for the same optimisation.
pub(crate) struct Pair {
    /// What changes.
    pub what: String,
    /// The baseline case's label.
    pub baseline: String,
    /// The variant case's label.
    pub variant: String,
    /// Seed 003's change in throughput, percent (`None`: the seed changed nothing like it).
    pub seed_tps_pct: Option<f64>,
    /// Seed 003's change in latency, percent.
    pub seed_latency_pct: Option<f64>,
    /// The seed's latency change where it printed a range, not a number.
    pub seed_latency_text: Option<&'static str>,
}

/// The two rounds every case runs (tiny ones with `--quick`).
pub(crate) fn rounds(quick: bool) -> Vec<Round> {
    let (over, under, secs) =
        if quick { (400.0, 200.0, QUICK_ROUND_S) } else { (SATURATED_TPS, BELOW_TPS, ROUND_S) };
    [(SATURATED, over), (BELOW, under)]
        .into_iter()
        .map(|(name, tps)| Round {
            name: name.into(),
            line: 0,
            workload: Workload::Transfer(Shape::ONE_TO_ONE),
            rate: Rate::Fixed { tps },
            controller: "fixed-rate",
            duration: Some(Duration::from_secs(secs)),
            txs: (tps * secs as f64).ceil() as u64,
            drain: Duration::from_secs(60),
        })
        .collect()
}

fn trials(ctx: &Ctx) -> usize {
    if ctx.opts.quick {
        1
    } else {
        ctx.opts.runs.unwrap_or(TRIALS).max(1)
    }
}

/// The rounds of `backend`: a ladder of offered rates from [`BELOW_TPS`] up to
/// [`SATURATED_TPS`] on each devnet, lowest first (so only the last rung leaves a backlog), as
/// seed 003 swept its send rate to find where each build saturates (its Figs 6.3 / 6.4). The
/// lowest rung is `below`, the highest `saturated`, so the two-round comparisons read them as
/// they read the other experiments' rounds.
fn ladder(quick: bool) -> Vec<Round> {
    let two = rounds(quick);
    let (Some(over), Some(under)) =
        (two.iter().find(|r| r.name == SATURATED), two.iter().find(|r| r.name == BELOW))
    else {
        return two;
    };
    let rate = |r: &Round| match r.rate {
        Rate::Fixed { tps } => tps,
        _ => 0.0,
    };
    let (lo, hi) = (rate(under), rate(over));
    let steps = if quick { 2 } else { LADDER_STEPS };
    let mut out = vec![under.clone()];
    for i in 1..steps {
        let tps = (lo + (hi - lo) * i as f64 / steps as f64).round();
        let secs = under.duration.map_or(0, |d| d.as_secs());
        out.push(Round {
            name: rung_name(tps),
            rate: Rate::Fixed { tps },
            txs: (tps * secs as f64).ceil() as u64,
            ..under.clone()
        });
    }
    out.push(over.clone());
    out
}

/// Steps of [`ladder`] between its lowest and highest rung in a full run: 2,000, 5,600, 9,200,
/// 12,800, 16,400 and 20,000 tx/s.
pub const LADDER_STEPS: usize = 5;

/// The name of a middle rung of [`ladder`] (a CSV cell).
fn rung_name(tps: f64) -> String {
    format!("offered {tps}")
}

/// A case saturates where its mean latency reaches this many times its latency at the lowest
/// rung: past its capacity a backlog grows, and shows as latency before it shows as throughput.
/// Throughput alone cannot place it on this ladder: it counts confirmations over the time from
/// the first request to the last confirmation (the load benchmark's, as Caliper's), so even far
/// below saturation it reads a few percent under the rate offered, and that share drifts by as
/// much as the swaps change.
pub const LATENCY_KNEE: f64 = 2.0;

/// One block as one node took it: the node, the block's height, its wait for the chain's write
/// lock and the time it held it, µs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct BlockCommit {
    /// The node's name in the devnet.
    pub node: String,
    /// The block's height.
    pub height: u64,
    /// Its wait for the write lock, µs.
    pub wait_us: u64,
    /// The time it held the lock, µs.
    pub held_us: u64,
}

/// Every block each validating node of `net` took, with its commit time, from the nodes'
/// arrival logs.
pub(crate) fn block_commits(
    net: &mut Launcher,
    rt: &tokio::runtime::Runtime,
) -> Result<Vec<BlockCommit>, StudyError> {
    let mut out = Vec::new();
    for (node, client) in net.clients(|r| r != Role::Bootstrap) {
        let mut log = Vec::new();
        rt.block_on(super::propagation::read_new(&client, &mut log))?;
        for e in log.into_iter().filter(|e| e.kind == "block") {
            if let (Some(height), Some(wait_us), Some(held_us)) = (e.height, e.lock_wait_us, e.lock_held_us) {
                out.push(BlockCommit { node: node.clone(), height, wait_us, held_us });
            }
        }
    }
    Ok(out)
}

/// A table row for one block of a run: from the case, the round, the trial and the block.
pub(crate) type BlockRow<'a> = dyn Fn(&Case, &Round, usize, &BlockCommit) -> Vec<String> + 'a;

/// Runs every case's devnet once per trial, the cases interleaved, into `table`, each devnet
/// through the two rounds of [`rounds`]: a row per round (the columns of [`COLUMNS`], the
/// table's further columns left empty) and, with `commits`, after each round's row one per
/// block of the round per node, built by `commits` (case, round, trial, block) from the
/// nodes' arrival logs read after the rounds ([`block_commits`]).
pub(crate) fn run_cases(
    ctx: &Ctx,
    name: &str,
    cases: &[Case],
    table: &mut Table,
    commits: Option<&BlockRow<'_>>,
) -> Result<(), StudyError> {
    run_cases_with(ctx, name, cases, &rounds(ctx.opts.quick), table, commits)
}

/// [`run_cases`] through `rounds`.
fn run_cases_with(
    ctx: &Ctx,
    name: &str,
    cases: &[Case],
    rounds: &[Round],
    table: &mut Table,
    commits: Option<&BlockRow<'_>>,
) -> Result<(), StudyError> {
    let trials = trials(ctx);
    let width = table.columns.len();
    ctx.start((trials * cases.len() * (rounds.len() + 1)) as u64, &format!("{name}: starting"));
    for trial in 1..=trials {
        for case in cases {
            ctx.progress.set_message(format!("{name}: {} (trial {trial})", case.label));
            let groups = vec![(case.label.clone(), rounds.to_vec())];
            let mut done = Vec::new();
            let mut blocks = Vec::new();
            e2e::run_groups_then(
                ctx,
                &case.exe,
                &case.setting,
                &groups,
                |_, _, round, r| {
                    let mut cells = row(ctx, &case.label, round, trial, r);
                    cells.resize(width, String::new());
                    done.push((round.clone(), cells, r.heights));
                },
                |net, rt| {
                    if commits.is_some() {
                        blocks = block_commits(net, rt)?;
                    }
                    Ok(())
                },
            )?;
            for (round, cells, heights) in done {
                table.push(cells);
                if let Some(commits) = commits {
                    for b in blocks.iter().filter(|b| b.height > heights.0 && b.height <= heights.1) {
                        table.push(commits(case, &round, trial, b));
                    }
                }
            }
        }
    }
    Ok(())
}

fn row(ctx: &Ctx, case: &str, round: &Round, trial: usize, r: &RoundResult) -> Vec<String> {
    let l = r.latency.unwrap_or_default();
    let tps = match round.rate {
        Rate::Fixed { tps } => tps,
        _ => 0.0,
    };
    vec![
        case.into(),
        round.name.clone(),
        format!("{tps}"),
        trial.to_string(),
        String::new(),
        format!("{:.1}", r.send_tps),
        format!("{:.1}", r.throughput_tps),
        format!("{:.1}", l.avg),
        format!("{:.1}", l.p50),
        format!("{:.1}", l.p99),
        r.succeeded.to_string(),
        r.failed_total().to_string(),
        format!("{:.3}", r.node_cores()),
        format!("{:.1}", r.cpu.us_per_tx),
        ctx.machine.build.into(),
        ctx.machine.commit.into(),
    ]
}

/// The mean of a column over a case's rows of one round (its trials).
pub(crate) fn mean(t: &Table, case: &str, round: &str, column: &str) -> Option<f64> {
    let v: Vec<f64> = t
        .select("case", case)
        .filter(|r| t.col("round").is_some_and(|c| r[c] == round))
        .filter_map(|r| t.num(r, column))
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Per trial, the variant's saturated throughput relative to the baseline's, percent.
fn trial_changes(t: &Table, p: &Pair) -> Vec<(f64, f64)> {
    let by_trial = |case: &str| -> BTreeMap<u64, f64> {
        t.select("case", case)
            .filter(|r| t.col("round").is_some_and(|c| r[c] == SATURATED))
            .filter_map(|r| Some((t.num(r, "trial")? as u64, t.num(r, "throughput_tps")?)))
            .collect()
    };
    let (b, v) = (by_trial(&p.baseline), by_trial(&p.variant));
    b.iter().filter_map(|(k, base)| Some((*k as f64, pct(*v.get(k)?, *base)?))).collect()
}

/// `x` against `base`, percent (none without a base).
pub(crate) fn pct(x: f64, base: f64) -> Option<f64> {
    (base > 0.0).then(|| (x / base - 1.0) * 100.0)
}

/// A signed percentage, or `–`.
pub(crate) fn signed(x: Option<f64>) -> String {
    x.map_or("–".into(), |v| format!("{v:+.1}%"))
}

/// The chart: per trial, each comparison's change in saturated throughput, seed 003's beside.
pub(crate) fn change_chart(t: &Table, pairs: &[Pair]) -> Vec<Chart> {
    let mut series = Vec::new();
    for p in pairs {
        let ours = trial_changes(t, p);
        if ours.is_empty() {
            continue;
        }
        let xs: Vec<f64> = ours.iter().map(|x| x.0).collect();
        series.push(Series::line(p.what.clone(), ours));
        if let Some(seed) = p.seed_tps_pct {
            series
                .push(Series::seed(format!("seed 003: {}", p.what), xs.iter().map(|&x| (x, seed)).collect()));
        }
    }
    vec![Chart {
        title: "Change in throughput past saturation, per trial (ours against seed 003's)".into(),
        x_label: "trial".into(),
        y_label: "throughput change (%)".into(),
        log_x: false,
        log_y: false,
        x_names: Vec::new(),
        series,
    }]
}

/// The report: each case's means, then each comparison beside seed 003's.
pub(crate) fn cases_section(t: &Table, intro: &str, pairs: &[Pair]) -> String {
    let mut s = String::new();
    // The rates this table's run offered (a `--quick` run offers less than the documented one).
    let offered =
        |round: &str| t.select("round", round).find_map(|r| t.num(r, "offered_tps")).map_or("–".into(), sig4);
    let _ = writeln!(
        s,
        "{intro}\n\nEach trial starts a devnet of {PEERS} peers and {MINERS} miner per case, the cases in \
         turn, and offers it 1-input/1-output transfers: {} tx/s (`{SATURATED}`: past saturation, so its \
         throughput is the network's capacity) then {} tx/s (`{BELOW}`), each for {ROUND_S} s ({QUICK_ROUND_S} s \
         with `--quick`). Means over the trials; latency from the request to the first sighting of the \
         confirming block.\n",
        offered(SATURATED),
        offered(BELOW)
    );
    s.push_str(
        "| case | trials | saturated: throughput (tx/s) | avg latency (ms) | p99 (ms) | node cores | \
         below: throughput | avg latency (ms) | p99 (ms) |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut cases: Vec<String> = Vec::new();
    for r in t.select("round", SATURATED) {
        if let Some(c) = t.col("case").map(|c| r[c].clone()) {
            if !cases.contains(&c) {
                cases.push(c);
            }
        }
    }
    let cell = |x: Option<f64>| x.map_or("–".into(), sig4);
    for c in &cases {
        let n = t.select("case", c).filter(|r| t.col("round").is_some_and(|i| r[i] == SATURATED)).count();
        let _ = writeln!(
            s,
            "| {c} | {n} | {} | {} | {} | {} | {} | {} | {} |",
            cell(mean(t, c, SATURATED, "throughput_tps")),
            cell(mean(t, c, SATURATED, "lat_avg_ms")),
            cell(mean(t, c, SATURATED, "lat_p99_ms")),
            cell(mean(t, c, SATURATED, "node_cores")),
            cell(mean(t, c, BELOW, "throughput_tps")),
            cell(mean(t, c, BELOW, "lat_avg_ms")),
            cell(mean(t, c, BELOW, "lat_p99_ms")),
        );
    }
    s.push_str(
        "\n| change | throughput past saturation | seed 003 | avg latency past saturation | seed 003 | \
         avg latency below saturation |\n|---|---|---|---|---|---|\n",
    );
    for p in pairs {
        let ch =
            |round: &str, col: &str| pct(mean(t, &p.variant, round, col)?, mean(t, &p.baseline, round, col)?);
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            p.what,
            signed(ch(SATURATED, "throughput_tps")),
            signed(p.seed_tps_pct),
            signed(ch(SATURATED, "lat_avg_ms")),
            p.seed_latency_text.map_or_else(|| signed(p.seed_latency_pct), String::from),
            signed(ch(BELOW, "lat_avg_ms")),
        );
    }
    s
}

// ---------------------------------------------------------------------------------------------
// signatures
// ---------------------------------------------------------------------------------------------

const CHECKED: &str = "signatures checked";
const SKIPPED: &str = "signatures skipped";

fn signature_pairs() -> Vec<Pair> {
    vec![Pair {
        what: "signatures skipped (a chain declaring it in genesis)".into(),
        baseline: CHECKED.into(),
        variant: SKIPPED.into(),
        seed_tps_pct: Some(SEED_NO_SIGNATURES_THROUGHPUT_PCT),
        seed_latency_pct: None,
        seed_latency_text: None,
    }]
}

/// Runs `signatures`.
pub fn run_signatures(ctx: &Ctx) -> Result<Table, StudyError> {
    let exe = e2e::node_binary(ctx, "signatures")?;
    let cases = [
        Case { label: CHECKED.into(), setting: Setting::default(), exe: exe.clone() },
        Case { label: SKIPPED.into(), setting: Setting { skip_signatures: true, ..Setting::default() }, exe },
    ];
    let mut table = Table::new(COLUMNS);
    run_cases(ctx, "signatures", &cases, &mut table, None)?;
    ctx.finish(Experiment::Signatures, &table, signatures_charts, signatures_section)
}

pub(crate) fn signatures_charts(t: &Table) -> Vec<Chart> {
    change_chart(t, &signature_pairs())
}

fn signatures_section(t: &Table) -> String {
    cases_section(
        t,
        "What input signatures cost end to end: the devnet chain against the same chain declaring in \
         its genesis that it skips them (`chain.skip_signatures`, `docs/PROTOCOL.md` §3.4; another chain \
         id, so no chain that did not declare it can skip a signature). Seed 003 made Fabric's \
         signature verification return true and saw +18% (§5.1.1).",
        &signature_pairs(),
    )
}

// ---------------------------------------------------------------------------------------------
// backend
// ---------------------------------------------------------------------------------------------

/// The operations each build measures, with the iterations of one sample.
const OPS: [(&str, u32); 4] =
    [("sha256 250 B", 20_000), ("sha256 64 KiB", 100), ("ed25519 verify", 300), ("secp256k1 verify", 300)];

/// One sample of `op`: nanoseconds per operation over `iterations`.
fn sample(op: &str, iterations: u32) -> Option<f64> {
    let t0 = std::time::Instant::now();
    match op {
        "sha256 250 B" | "sha256 64 KiB" => {
            let mut data = vec![7u8; if op.ends_with("KiB") { 64 << 10 } else { 250 }];
            for i in 0..iterations {
                data[0] = i as u8;
                std::hint::black_box(HashKind::Sha256.hash(&data));
            }
        }
        "ed25519 verify" | "secp256k1 verify" => {
            let scheme = if op.starts_with("ed") { Scheme::Ed25519 } else { Scheme::Secp256k1 };
            let key = SecretKey::from_seed(scheme, [5; 32]);
            let msg = Hash([9; 32]);
            let sig = key.sign(&msg);
            let public = key.public();
            for _ in 0..iterations {
                scalechain_types::keys::verify(&public, &msg, &sig).ok()?;
            }
        }
        _ => return None,
    }
    Some(t0.elapsed().as_nanos() as f64 / f64::from(iterations.max(1)))
}

/// The hidden `study-backend-worker RUNS` command: this binary's build on the first line, then
/// `OP<TAB>NS` per operation (the median of RUNS samples).
pub fn backend_worker_main(args: &[String]) -> Result<String, String> {
    let [runs] = args else {
        return Err("usage: study-backend-worker RUNS".into());
    };
    let runs: usize = runs.parse().map_err(|e| format!("RUNS {runs:?}: {e}"))?;
    if !(1..=1_000).contains(&runs) {
        return Err("RUNS must be 1 to 1000".into());
    }
    let mut out = format!("{}\n", machine::build());
    for (op, n) in OPS {
        let samples: Option<Vec<f64>> = (0..runs).map(|_| sample(op, n)).collect();
        let ns = median(samples.ok_or_else(|| format!("{op} failed"))?);
        let _ = writeln!(out, "{op}\t{ns:.1}");
    }
    Ok(out)
}

/// Asks `exe` for its build and per-operation costs.
fn worker_costs(exe: &PathBuf, runs: usize) -> Result<(String, Vec<(String, f64)>), StudyError> {
    let out = Command::new(exe)
        .args(["study-backend-worker", &runs.to_string()])
        .output()
        .map_err(|e| StudyError::io(exe, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let build = lines.next().unwrap_or_default().trim().to_string();
    let costs: Vec<(String, f64)> = lines
        .filter_map(|l| {
            let (op, ns) = l.split_once('\t')?;
            Some((op.to_string(), ns.trim().parse().ok()?))
        })
        .collect();
    if !out.status.success() || build.is_empty() || costs.len() != OPS.len() {
        return Err(StudyError::Wrong(format!(
            "{} study-backend-worker: {} {}",
            exe.display(),
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok((build, costs))
}

/// Comparisons among the builds present: SHA-NI against the soft SHA-256 of the same target
/// (seed 003's SHA-256 swap), Ed25519 on AVX-512 IFMA against AVX2 (its ECDSA swap), the
/// native build against the portable one (code generation only: no seed counterpart), and
/// everything together against the slowest build with the single lock (its Fig 6.5).
fn backend_pairs(builds: &[String]) -> Vec<Pair> {
    let mut pairs = Vec::new();
    let has = |b: &str| builds.iter().any(|x| x == b);
    // Each swap: the baseline build's suffix, what changes, the seed's throughput and latency.
    let swaps = [
        (
            " soft-sha256",
            "SHA-NI against software SHA-256",
            SEED_SWAP_THROUGHPUT_PCT.0,
            SEED_SWAP_LATENCY_TEXT.0,
        ),
        (
            " ed25519-avx2",
            "Ed25519 on AVX-512 IFMA against AVX2",
            SEED_SWAP_THROUGHPUT_PCT.1,
            SEED_SWAP_LATENCY_TEXT.1,
        ),
    ];
    for target in ["portable", "native"] {
        for (suffix, what, tps, latency) in swaps {
            let baseline = format!("{target}{suffix}");
            if has(target) && has(&baseline) {
                pairs.push(Pair {
                    what: format!("{what} ({target})"),
                    baseline,
                    variant: target.into(),
                    seed_tps_pct: Some(tps),
                    seed_latency_pct: None,
                    seed_latency_text: Some(latency),
                });
            }
        }
    }
    if has("portable") && has("native") {
        pairs.push(Pair {
            what: "native build against portable (code generation only; the same backends)".into(),
            baseline: "portable".into(),
            variant: "native".into(),
            seed_tps_pct: None,
            seed_latency_pct: None,
            seed_latency_text: None,
        });
    }
    if let Some((variant, base)) = combined_variant(builds).zip(combined_baseline(builds)) {
        let (tps0, tps1, lat0, lat1) = SEED_COMBINED;
        pairs.push(Pair {
            what: format!("all together: {variant} with lock-free reads against {base} (seed 003 Fig 6.5)"),
            baseline: combined_label(&base),
            variant: variant.into(),
            seed_tps_pct: Some((tps1 / tps0 - 1.0) * 100.0),
            seed_latency_pct: Some((lat1 / lat0 - 1.0) * 100.0),
            seed_latency_text: None,
        });
    }
    pairs
}

/// The label of the combined baseline's case: build `base` with every reader of the pool taking
/// the writers' lock.
fn combined_label(base: &str) -> String {
    format!("{base}{SINGLE_LOCK_SUFFIX}")
}

/// What the combined baseline's case label adds to its build's name.
const SINGLE_LOCK_SUFFIX: &str = " + single lock";

/// The builds a combined baseline may be, slowest first: every backend swapped out first.
const SLOWEST_FIRST: [&str; 6] = [
    "portable soft-sha256 ed25519-avx2",
    "portable soft-sha256",
    "portable ed25519-avx2",
    "portable",
    "native soft-sha256 ed25519-avx2",
    "native soft-sha256",
];

/// The fastest build present, which the combined comparison runs with every optimisation:
/// `native` if there, else `portable`.
fn combined_variant(builds: &[String]) -> Option<&'static str> {
    ["native", "portable"].into_iter().find(|b| builds.iter().any(|x| x == b))
}

/// Seed 003 Fig 6.5 puts every optimisation together against its baseline. Ours, where the builds
/// allow: the fastest build ([`combined_variant`]) with lock-free reads (the default) against the
/// slowest other build present ([`SLOWEST_FIRST`]) with the single lock. `None` without two such
/// builds.
fn combined_baseline(builds: &[String]) -> Option<String> {
    let variant = combined_variant(builds)?;
    SLOWEST_FIRST
        .into_iter()
        .filter(|b| *b != variant)
        .find(|b| builds.iter().any(|x| x == b))
        .map(String::from)
}

/// Runs `backend`: this binary and each `--compare` binary, per-operation costs then devnets.
pub fn run_backend(ctx: &Ctx) -> Result<Table, StudyError> {
    let exe = e2e::node_binary(ctx, "backend")?;
    let mut exes = vec![exe];
    exes.extend(ctx.opts.compare.iter().cloned());
    let runs = if ctx.opts.quick { 1 } else { ctx.runs().min(15) };
    let mut table = Table::new(COLUMNS);
    // Per-operation costs: each binary in turn, three times, the median of the three.
    let mut costs: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    let mut cases = Vec::new();
    ctx.progress.set_message("backend: per-operation costs");
    for pass in 0..3 {
        for exe in &exes {
            let (build, ops) = worker_costs(exe, runs)?;
            for (op, ns) in ops {
                costs.entry((build.clone(), op)).or_default().push(ns);
            }
            if pass == 0 {
                if cases.iter().any(|c: &Case| c.label == build) {
                    return Err(StudyError::Wrong(format!(
                        "two binaries of the same build ({build}): compare builds that differ"
                    )));
                }
                cases.push(Case { label: build, setting: Setting::default(), exe: exe.clone() });
            }
        }
    }
    for ((build, op), v) in costs {
        table.push(vec![
            build,
            format!("op {op}"),
            String::new(),
            String::new(),
            format!("{:.1}", median(v)),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            String::new(),
            ctx.machine.build.into(),
            ctx.machine.commit.into(),
        ]);
    }
    // Seed 003 Fig 6.5: every optimisation against the baseline, where the builds allow.
    let builds: Vec<String> = cases.iter().map(|c| c.label.clone()).collect();
    if let Some(base) = combined_baseline(&builds) {
        if let Some(c) = cases.iter().find(|c| c.label == base) {
            let setting = Setting { single_lock: true, ..Setting::default() };
            let exe = c.exe.clone();
            cases.push(Case { label: combined_label(&base), setting, exe });
        }
    }
    run_cases_with(ctx, "backend", &cases, &ladder(ctx.opts.quick), &mut table, None)?;
    ctx.finish(Experiment::Backend, &table, backend_charts, backend_section)
}

/// The builds among `t`'s cases (not the combined baseline's, which is a build with a setting).
fn node_builds(t: &Table) -> Vec<String> {
    t.distinct("case").into_iter().filter(|c| !c.ends_with(SINGLE_LOCK_SUFFIX)).collect()
}

pub(crate) fn backend_charts(t: &Table) -> Vec<Chart> {
    let mut charts = change_chart(t, &backend_pairs(&node_builds(t)));
    let cases = t.distinct("case");
    let curve = |column: &str| -> Vec<Series> {
        cases
            .iter()
            .map(|c| {
                let pts =
                    rungs(t, c).into_iter().filter_map(|(x, r)| Some((x, mean(t, c, &r, column)?))).collect();
                Series::line(c.clone(), pts)
            })
            .filter(|s| !s.points.is_empty())
            .collect()
    };
    let mut through = curve("throughput_tps");
    if let Some(hi) = through.iter().flat_map(|s| s.points.iter().map(|p| p.0)).reduce(f64::max) {
        // Keeping up exactly: throughput equal to the rate offered.
        through.push(Series::line("throughput = offered", vec![(0.0, 0.0), (hi, hi)]));
    }
    charts.push(Chart {
        title: "Throughput against the offered rate, per build (seed 003 Fig 6.3's sweep)".into(),
        x_label: "offered (tx/s)".into(),
        y_label: "throughput (tx/s)".into(),
        log_x: false,
        log_y: false,
        x_names: Vec::new(),
        series: through,
    });
    charts.push(Chart {
        title: "Average latency against the offered rate, per build (seed 003 Fig 6.4's sweep)".into(),
        x_label: "offered (tx/s)".into(),
        y_label: "average latency (ms)".into(),
        log_x: false,
        log_y: true,
        x_names: Vec::new(),
        series: curve("lat_avg_ms"),
    });
    charts
}

/// The offered rates a case's rounds ran at, lowest first, with each round's name.
fn rungs(t: &Table, case: &str) -> Vec<(f64, String)> {
    let mut v: Vec<(f64, String)> = Vec::new();
    for r in t.select("case", case) {
        let (Some(x), Some(name)) = (t.num(r, "offered_tps"), t.col("round").map(|c| r[c].clone())) else {
            continue;
        };
        if !name.starts_with("op ") && !v.iter().any(|(_, n)| *n == name) {
            v.push((x, name));
        }
    }
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// A case's saturation: the offered rate at which its mean latency reaches [`LATENCY_KNEE`]
/// times its latency at the lowest rung, interpolated linearly between the two rungs around it
/// (`None` if no rung reaches it), and the highest mean throughput of any rung. `None` without
/// rungs.
fn saturation(t: &Table, case: &str) -> Option<(Option<f64>, f64)> {
    let mut points: Vec<(f64, f64)> = Vec::new();
    let mut peak: Option<f64> = None;
    for (offered, round) in rungs(t, case) {
        if let Some(tps) = mean(t, case, &round, "throughput_tps") {
            peak = Some(peak.map_or(tps, |p| p.max(tps)));
        }
        if let Some(lat) = mean(t, case, &round, "lat_avg_ms") {
            points.push((offered, lat));
        }
    }
    let knee = points.first().and_then(|&(_, base)| {
        let limit = LATENCY_KNEE * base;
        points.windows(2).find(|w| w[1].1 >= limit).map(|w| {
            let ((x0, y0), (x1, y1)) = (w[0], w[1]);
            if y1 > y0 {
                x0 + (x1 - x0) * ((limit - y0) / (y1 - y0)).clamp(0.0, 1.0)
            } else {
                x1
            }
        })
    });
    Some((knee, peak?))
}

/// The saturation table: each case's, then each comparison's change beside seed 003's 300 →
/// 350 TPS.
fn saturation_section(t: &Table, pairs: &[Pair]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nSaturation (seed 003 Figs 6.3 / 6.4 swept the send rate; each swap moved its saturation from \
         {} to {} TPS, {}). Ours: each devnet offered a ladder of rates, lowest first; a case saturates \
         where its mean latency reaches {}× its latency at the lowest rate (a backlog shows as latency \
         first), interpolated between the two rungs around it. Throughput alone cannot place it: it \
         counts from the first request to the last confirmation, so even at the lowest rate it reads a \
         few percent under the rate offered, a share that drifts between trials by as much as a swap \
         changes. The peak throughput is the network's capacity, the seed's own measure.\n",
        sig4(SEED_SWAP_SATURATION_TPS.0),
        sig4(SEED_SWAP_SATURATION_TPS.1),
        signed(pct(SEED_SWAP_SATURATION_TPS.1, SEED_SWAP_SATURATION_TPS.0)),
        LATENCY_KNEE
    );
    s.push_str("| case | saturates at (offered tx/s) | peak throughput (tx/s) |\n|---|---|---|\n");
    for c in t.distinct("case") {
        if let Some((knee, peak)) = saturation(t, &c) {
            let _ = writeln!(
                s,
                "| {c} | {} | {} |",
                knee.map_or("past the highest rung".into(), sig4),
                sig4(peak)
            );
        }
    }
    s.push_str("\n| change | saturates at | peak throughput | seed 003: saturation |\n|---|---|---|---|\n");
    for p in pairs {
        let (Some(b), Some(v)) = (saturation(t, &p.baseline), saturation(t, &p.variant)) else { continue };
        let knee = match (b.0, v.0) {
            (Some(b), Some(v)) => signed(pct(v, b)),
            _ => "–".into(),
        };
        let seed = if p.baseline.ends_with(SINGLE_LOCK_SUFFIX) {
            "– (Fig 6.5 ran one rate)".to_string()
        } else {
            signed(pct(SEED_SWAP_SATURATION_TPS.1, SEED_SWAP_SATURATION_TPS.0))
        };
        let _ = writeln!(s, "| {} | {knee} | {} | {seed} |", p.what, signed(pct(v.1, b.1)));
    }
    s
}

fn op_cost(t: &Table, build: &str, op: &str) -> Option<f64> {
    let round = format!("op {op}");
    t.select("case", build)
        .filter(|r| t.col("round").is_some_and(|c| r[c] == round))
        .filter_map(|r| t.num(r, "ns_per_op"))
        .last()
}

fn backend_section(t: &Table) -> String {
    let builds = node_builds(t);
    let pairs = backend_pairs(&builds);
    let mut s = String::new();
    s.push_str(
        "The crypto backends: node binaries of different builds, each measuring its own costs per \
         operation (median of three passes, the binaries in turn) and then running its own devnet \
         (the load generator is the same binary for all). `portable` is the README's build: it \
         compiles Ed25519's AVX-512 IFMA backend in beside AVX2 and picks at run time (IFMA on a CPU \
         that has it), and SHA-256 uses SHA-NI where the CPU has it. `ed25519-avx2` builds leave the \
         IFMA backend out (`RUSTFLAGS` without the workspace's flag), so they verify Ed25519 on AVX2: \
         the counterpart of seed 003's ECDSA swap. `soft-sha256` (`--cfg sha2_backend=\"soft\"`) \
         computes SHA-256 without SHA-NI: the counterpart of its SHA-256 swap. `native` \
         (`-C target-cpu=native`) changes code generation only, with the same backends as \
         `portable`; it has no counterpart in the seed. secp256k1 is C code, the same in every build \
         (a control). Seed 003 swapped Go's SHA-256 for \
         minio's (−13.6% time, Table 5.1) and Go's ECDSA for OpenSSL's (−15.7%, Table 5.2); each moved \
         its saturation from 300 to 350 TPS.\n\n",
    );
    s.push_str("| operation |");
    for b in &builds {
        let _ = write!(s, " {b} (ns) |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(builds.len()));
    s.push('\n');
    for (op, _) in OPS {
        let _ = write!(s, "| {op} |");
        for b in &builds {
            let _ = write!(s, " {} |", op_cost(t, b, op).map_or("–".into(), sig4));
        }
        s.push('\n');
    }
    if !pairs.is_empty() {
        s.push_str(
            "\nPer operation, beside seed 003's (its Tables 5.1 / 5.2); where ours is several times the \
             seed's, an end-to-end change like the seed's below is no agreement: the same gain per \
             operation moves a node whose time goes elsewhere by less.\n\n\
             | change | operation | time | seed 003 | ours ÷ seed 003 |\n|---|---|---|---|---|\n",
        );
        for p in pairs.iter().filter(|p| !p.baseline.ends_with(SINGLE_LOCK_SUFFIX)) {
            let (op, seed) = if p.what.starts_with("SHA") {
                ("sha256 250 B", SEED_SHA256_TIME_CHANGE_PCT)
            } else {
                ("ed25519 verify", SEED_ECDSA_TIME_CHANGE_PCT)
            };
            let ch = op_cost(t, &p.variant, op).and_then(|v| pct(v, op_cost(t, &p.baseline, op)?));
            let ratio = ch.map_or("–".into(), |c| format!("{:.1}×", c / seed));
            let _ = writeln!(s, "| {} | {op} | {} | {} | {ratio} |", p.what, signed(ch), signed(Some(seed)));
        }
    }
    s.push('\n');
    s.push_str(&cases_section(t, "End to end:", &pairs));
    s.push_str(&saturation_section(t, &pairs));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_row(case: &str, round: &str, trial: usize, tps: f64, lat: f64) -> Vec<String> {
        let mut r = vec![String::new(); COLUMNS.len()];
        r[0] = case.into();
        r[1] = round.into();
        r[3] = trial.to_string();
        r[6] = tps.to_string();
        r[7] = lat.to_string();
        r[14] = "portable".into();
        r
    }

    #[test]
    fn the_combined_case_sets_the_fastest_build_against_the_slowest_with_the_single_lock() {
        let b = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(combined_baseline(&b(&["portable"])), None, "one build");
        assert_eq!(combined_baseline(&b(&["native", "portable"])).as_deref(), Some("portable"));
        // Without a native build, the portable build against the slowest: both backends swapped.
        let four = b(&[
            "portable",
            "portable ed25519-avx2",
            "portable soft-sha256",
            "portable soft-sha256 ed25519-avx2",
        ]);
        assert_eq!(combined_variant(&four), Some("portable"));
        assert_eq!(combined_baseline(&four).as_deref(), Some("portable soft-sha256 ed25519-avx2"));
        let all = b(&["native", "portable", "portable soft-sha256"]);
        assert_eq!(combined_baseline(&all).as_deref(), Some("portable soft-sha256"));
        let pairs = backend_pairs(&all);
        let c = pairs.iter().find(|p| p.what.starts_with("all together")).unwrap();
        assert_eq!(
            (c.baseline.as_str(), c.variant.as_str()),
            ("portable soft-sha256 + single lock", "native")
        );
        // Seed 003 Fig 6.5: 310 → 420 TPS and 3 → 1.91 s.
        assert!(
            (c.seed_tps_pct.unwrap() - 35.48).abs() < 0.01
                && (c.seed_latency_pct.unwrap() + 36.33).abs() < 0.01
        );
        let mut t = Table::new(COLUMNS);
        for case in ["native", "portable", "portable soft-sha256", "portable soft-sha256 + single lock"] {
            t.push(round_row(case, SATURATED, 1, 1000.0, 900.0));
        }
        // The combined baseline is a case, not a build: no column of per-operation costs.
        assert_eq!(node_builds(&t), b(&["native", "portable", "portable soft-sha256"]));
        let s = backend_section(&t);
        assert!(
            s.contains("| all together: native with lock-free reads against portable soft-sha256"),
            "{s}"
        );
        assert!(s.contains("−10 to −15%"), "the seed's latency range: {s}");
    }

    #[test]
    fn the_intro_names_the_rates_its_run_offered() {
        let mut t = Table::new(COLUMNS);
        for (round, offered) in [(SATURATED, "400"), (BELOW, "200")] {
            let mut r = round_row(CHECKED, round, 1, 300.0, 900.0);
            r[2] = offered.into();
            t.push(r);
        }
        let s = cases_section(&t, "End to end:", &signature_pairs());
        assert!(s.contains(&format!("transfers: {} tx/s (`saturated`", sig4(400.0))), "{s}");
        assert!(s.contains(&format!("then {} tx/s (`below`)", sig4(200.0))), "{s}");
        assert!(!s.contains(&sig4(SATURATED_TPS)), "the documented run's rate: {s}");
    }

    #[test]
    fn changes_are_the_variant_against_the_baseline_with_the_seeds_beside() {
        let mut t = Table::new(COLUMNS);
        for trial in 1..=2 {
            t.push(round_row(CHECKED, SATURATED, trial, 1000.0, 900.0));
            t.push(round_row(CHECKED, BELOW, trial, 500.0, 600.0));
            t.push(round_row(SKIPPED, SATURATED, trial, 1000.0 + 100.0 * trial as f64, 450.0));
            t.push(round_row(SKIPPED, BELOW, trial, 500.0, 300.0));
        }
        let ch = trial_changes(&t, &signature_pairs()[0]);
        assert_eq!(ch.len(), 2);
        assert!(
            (ch[0].0, ch[1].0) == (1.0, 2.0)
                && (ch[0].1 - 10.0).abs() < 1e-9
                && (ch[1].1 - 20.0).abs() < 1e-9,
            "{ch:?}"
        );
        let s = signatures_section(&t);
        // Mean 1150 against 1000: +15%; latency 450 against 900: −50%, below 300 against 600.
        assert!(s.contains("| +15.0% | +18.0% | -50.0% | – | -50.0% |"), "{s}");
        assert!(s.contains(&format!("| {SKIPPED} | 2 | 1150 |")), "{s}");
        let c = signatures_charts(&t);
        assert_eq!(c[0].series.len(), 2);
        assert!(c[0].series[1].points_only);
    }

    #[test]
    fn the_ladder_climbs_from_below_to_saturated_and_finds_where_latency_doubles() {
        let rates = |quick| -> Vec<(String, f64)> {
            ladder(quick)
                .into_iter()
                .map(|r| match r.rate {
                    Rate::Fixed { tps } => (r.name, tps),
                    _ => (r.name, 0.0),
                })
                .collect()
        };
        let full = rates(false);
        assert_eq!(full.len(), LADDER_STEPS + 1);
        assert_eq!(full[0], (BELOW.to_string(), BELOW_TPS));
        assert_eq!(full[LADDER_STEPS], (SATURATED.to_string(), SATURATED_TPS));
        assert!(full.windows(2).all(|w| w[0].1 < w[1].1), "{full:?}");
        assert_eq!(full[1], ("offered 5600".to_string(), 5_600.0));
        assert_eq!(rates(true).len(), 3);

        let mut t = Table::new(COLUMNS);
        let rung = |t: &mut Table, case: &str, name: &str, offered: f64, tps: f64, lat: f64| {
            let mut r = round_row(case, name, 1, tps, lat);
            r[2] = offered.to_string();
            t.push(r);
        };
        // "portable"'s latency doubles (500 → 1,000 ms) halfway from 5,600 to 9,200 offered, at
        // 7,400; "native"'s a fifth of the way from 9,200 to 20,000, at 11,360. Throughput reads
        // under the offered rate from the lowest rung on, as it does in a real run.
        for (name, offered, a, b) in [
            (BELOW, 2_000.0, (1_900.0, 500.0), (1_880.0, 500.0)),
            ("offered 5600", 5_600.0, (5_300.0, 600.0), (5_200.0, 550.0)),
            ("offered 9200", 9_200.0, (8_000.0, 1_400.0), (8_600.0, 800.0)),
            (SATURATED, 20_000.0, (7_900.0, 3_000.0), (9_500.0, 1_800.0)),
        ] {
            rung(&mut t, "portable", name, offered, a.0, a.1);
            rung(&mut t, "native", name, offered, b.0, b.1);
        }
        let near = |case: &str, knee: f64, peak: f64| {
            let (k, p) = saturation(&t, case).unwrap();
            assert!((k.unwrap() - knee).abs() < 1e-6 && p == peak, "{case}: {k:?} {p}");
        };
        near("portable", 7_400.0, 8_000.0);
        near("native", 11_360.0, 9_500.0);
        let s = saturation_section(&t, &backend_pairs(&node_builds(&t)));
        assert!(s.contains("| portable | 7400 | 8000 |"), "{s}");
        // 11,360 against 7,400 is +53.5%; the peaks +18.8%; seed 003's 300 → 350 is +16.7%.
        assert!(s.contains("| +53.5% | +18.8% | +16.7% |"), "{s}");
        // A case whose latency never doubles saturates past the ladder.
        for (name, offered) in [(BELOW, 2_000.0), (SATURATED, 20_000.0)] {
            rung(&mut t, "calm", name, offered, offered * 0.9, 500.0);
        }
        assert_eq!(saturation(&t, "calm"), Some((None, 18_000.0)));
        let charts = backend_charts(&t);
        let through = charts.iter().find(|c| c.title.starts_with("Throughput against")).unwrap();
        let native = through.series.iter().find(|s| s.label == "native").unwrap();
        assert_eq!(native.points.len(), 4);
        assert_eq!(native.points[0], (2_000.0, 1_880.0));
    }

    #[test]
    fn backend_pairs_follow_the_builds_present() {
        let b = |v: &[&str]| backend_pairs(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert!(b(&["portable"]).is_empty());
        let all = b(&["native", "portable", "portable soft-sha256"]);
        assert_eq!(all.len(), 3);
        assert_eq!((all[0].baseline.as_str(), all[0].variant.as_str()), ("portable soft-sha256", "portable"));
        assert_eq!((all[1].baseline.as_str(), all[1].variant.as_str()), ("portable", "native"));
        assert_eq!(all[1].seed_tps_pct, None, "code generation alone is no swap of the seed's");
        assert_eq!(all[2].baseline, "portable soft-sha256 + single lock");
        // Each of seed 003's swaps has its counterpart when the builds are there.
        let four = b(&[
            "portable",
            "portable ed25519-avx2",
            "portable soft-sha256",
            "portable soft-sha256 ed25519-avx2",
        ]);
        let what: Vec<(&str, &str, Option<f64>)> = four
            .iter()
            .map(|p| (p.baseline.as_str(), p.variant.as_str(), p.seed_tps_pct.map(|x| x.round())))
            .collect();
        assert_eq!(
            what,
            [
                ("portable soft-sha256", "portable", Some(SEED_SWAP_THROUGHPUT_PCT.0)),
                ("portable ed25519-avx2", "portable", Some(SEED_SWAP_THROUGHPUT_PCT.1)),
                ("portable soft-sha256 ed25519-avx2 + single lock", "portable", Some(35.0)),
            ]
        );
    }

    #[test]
    fn the_worker_reports_its_build_and_every_operation() {
        let out = backend_worker_main(&["1".into()]).unwrap();
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some(machine::build()));
        let ops: Vec<&str> = lines.map(|l| l.split('\t').next().unwrap()).collect();
        assert_eq!(ops, OPS.iter().map(|o| o.0).collect::<Vec<_>>());
        assert!(backend_worker_main(&["0".into()]).is_err());
        assert!(backend_worker_main(&[]).is_err());
    }
}
