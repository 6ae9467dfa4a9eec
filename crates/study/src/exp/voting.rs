//! `voting`: seed 003's ballots on this machine, per ballot scheme: proof checks alone (one
//! ballot at a time on one core, random-linear-combination batches on one core, batches spread
//! over every core) and whole elections end to end (`vote demo`: registration, casting, inclusion
//! in blocks by the production validation code, tally, decryption and its proof), beside seed
//! 003's 310 and 420 ballots/s on Hyperledger Fabric and its 55,324 ballots/s election-peak
//! requirement.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use rayon::prelude::*;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_voting::demo::{self, DemoOpts};
use scalechain_voting::{elgamal, paillier, BallotScheme, Statement};

use crate::seeds::{
    VOTING_BASELINE_LATENCY_S, VOTING_BASELINE_TPS, VOTING_OPTIMISED_LATENCY_S, VOTING_OPTIMISED_TPS,
    VOTING_REQUIRED_TPS, VOTING_SOURCE,
};
use crate::{Ctx, Experiment, StudyError};

/// Columns of `voting.csv`.
pub const COLUMNS: &[&str] = &[
    "scheme",
    "mode",
    "threads",
    "candidates",
    "ballots",
    "ballots_per_s",
    "ballots_per_s_per_core",
    "latency_p50_ms",
    "latency_p99_ms",
    "build",
    "commit",
    "seed",
];

/// Candidates per election (the and the research note's L).
pub const CANDIDATES: usize = 4;

/// Ballots per batch when proof checks are spread over cores.
const CHUNK: usize = 64;

/// The measured modes, in chart order (x = position + 1).
const MODES: [&str; 4] = ["single", "batch", "batch-parallel", "end-to-end"];

struct Row {
    scheme: BallotScheme,
    mode: &'static str,
    threads: usize,
    ballots: usize,
    per_s: f64,
    latency: Option<(f64, f64)>,
}

/// Proof-check sizes (ballots checked per run) and demo voters, per scheme.
fn sizes(scheme: BallotScheme, quick: bool) -> (usize, usize) {
    match (scheme, quick) {
        (BallotScheme::Elgamal, false) => (2048, 10_000),
        (BallotScheme::Elgamal, true) => (256, 300),
        (BallotScheme::Paillier, false) => (256, 1_000),
        (BallotScheme::Paillier, true) => (32, 40),
    }
}

fn voter(i: usize) -> [u8; 32] {
    let mut v = [0u8; 32];
    v[..8].copy_from_slice(&(i as u64).to_le_bytes());
    v
}

const ELECTION: [u8; 32] = [0xe1; 32];

/// Times `f` over `runs` runs and returns the median ballots/s for `n` ballots.
fn rate(ctx: &Ctx, n: usize, mut f: impl FnMut() -> bool) -> Result<f64, StudyError> {
    let mut ok = true;
    let t = crate::time_median(ctx.runs(), || ok &= f());
    if !ok {
        return Err(StudyError::Wrong("an honest ballot failed verification".into()));
    }
    Ok(n as f64 / t)
}

/// What the proof-check measurement needs of a ballot scheme.
trait Scheme: Sync {
    type Ballot: Send + Sync;
    fn cast(&self, st: &Statement<'_>, choice: usize, rng: &mut ChaCha20Rng) -> Result<Self::Ballot, String>;
    fn verify(&self, st: &Statement<'_>, b: &Self::Ballot) -> bool;
    fn verify_batch(&self, items: &[(Statement<'_>, &Self::Ballot)], rng: &mut ChaCha20Rng) -> bool;
}

impl Scheme for elgamal::PublicKey {
    type Ballot = elgamal::Ballot;
    fn cast(&self, st: &Statement<'_>, choice: usize, rng: &mut ChaCha20Rng) -> Result<Self::Ballot, String> {
        elgamal::cast(self, st, choice, CANDIDATES, rng).map_err(|e| e.to_string())
    }
    fn verify(&self, st: &Statement<'_>, b: &Self::Ballot) -> bool {
        elgamal::verify_ballot(self, st, b, CANDIDATES).is_ok()
    }
    fn verify_batch(&self, items: &[(Statement<'_>, &Self::Ballot)], rng: &mut ChaCha20Rng) -> bool {
        elgamal::verify_ballots(self, items, CANDIDATES, rng).iter().all(Result::is_ok)
    }
}

impl Scheme for paillier::ElectionKey {
    type Ballot = paillier::Ballot;
    fn cast(&self, st: &Statement<'_>, choice: usize, rng: &mut ChaCha20Rng) -> Result<Self::Ballot, String> {
        paillier::cast(self, st, choice, CANDIDATES, rng).map_err(|e| e.to_string())
    }
    fn verify(&self, st: &Statement<'_>, b: &Self::Ballot) -> bool {
        paillier::verify_ballot(self, st, b, CANDIDATES).is_ok()
    }
    fn verify_batch(&self, items: &[(Statement<'_>, &Self::Ballot)], rng: &mut ChaCha20Rng) -> bool {
        paillier::verify_ballots(self, items, CANDIDATES, rng).iter().all(Result::is_ok)
    }
}

/// Casts `n` honest ballots, then measures single, batched and parallel batched checks:
/// (mode, threads, ballots/s) per mode.
fn measure<S: Scheme>(ctx: &Ctx, key: &S, n: usize) -> Result<Vec<(&'static str, usize, f64)>, String> {
    let threads = ctx.threads();
    let seed = ctx.opts.seed;
    let voters: Vec<[u8; 32]> = (0..n).map(voter).collect();
    let sts: Vec<Statement<'_>> =
        voters.iter().map(|v| Statement { election: &ELECTION, voter: v }).collect();
    let pool = ctx.pool(threads).map_err(|e| e.to_string())?;
    let one = ctx.pool(1).map_err(|e| e.to_string())?;
    let ballots: Vec<S::Ballot> = pool.install(|| {
        sts.par_iter()
            .enumerate()
            .map(|(i, st)| {
                key.cast(st, i % CANDIDATES, &mut ChaCha20Rng::seed_from_u64(seed ^ (i as u64) << 8))
            })
            .collect::<Result<_, _>>()
    })?;
    let items: Vec<(Statement<'_>, &S::Ballot)> = sts.iter().copied().zip(&ballots).collect();
    let single = one.install(|| rate(ctx, n, || items.iter().all(|(st, b)| key.verify(st, b))));
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    let batch = one.install(|| rate(ctx, n, || key.verify_batch(&items, &mut rng)));
    let par = pool.install(|| {
        rate(ctx, n, || {
            items
                .par_chunks(CHUNK)
                .enumerate()
                .all(|(c, chunk)| key.verify_batch(chunk, &mut ChaCha20Rng::seed_from_u64(seed ^ c as u64)))
        })
    });
    let ok = |r: Result<f64, StudyError>| r.map_err(|e| e.to_string());
    Ok(vec![("single", 1, ok(single)?), ("batch", 1, ok(batch)?), ("batch-parallel", threads, ok(par)?)])
}

fn proof_rows(ctx: &Ctx, scheme: BallotScheme, rows: &mut Vec<Row>) -> Result<(), StudyError> {
    let (n, _) = sizes(scheme, ctx.opts.quick);
    let seed = ctx.opts.seed;
    let measured = match scheme {
        BallotScheme::Elgamal => {
            let (_, pk) = elgamal::keygen(&mut ChaCha20Rng::seed_from_u64(seed));
            measure(ctx, &pk, n)
        }
        BallotScheme::Paillier => paillier::keygen(2048, &mut ChaCha20Rng::seed_from_u64(seed))
            .map_err(|e| e.to_string())
            .and_then(|sk| {
                measure(ctx, &paillier::ElectionKey { public: sk.public().clone(), voters: 1_000_000 }, n)
            }),
    }
    .map_err(|e| StudyError::Wrong(format!("{scheme}: {e}")))?;
    for (mode, threads, per_s) in measured {
        rows.push(Row { scheme, mode, threads, ballots: n, per_s, latency: None });
        ctx.progress.inc(1);
    }
    Ok(())
}

fn demo_row(ctx: &Ctx, scheme: BallotScheme) -> Result<Row, StudyError> {
    let (_, voters) = sizes(scheme, ctx.opts.quick);
    let threads = ctx.threads();
    let opts = DemoOpts { scheme, voters, candidates: CANDIDATES, invalid: 0, seed: ctx.opts.seed };
    let r = ctx
        .pool(threads)?
        .install(|| demo::run(&opts))
        .map_err(|e| StudyError::Wrong(format!("{scheme}: {e}")))?;
    if r.tally != r.expected || !r.verified {
        return Err(StudyError::Wrong(format!(
            "{scheme}: the election did not verify (tally {:?}, expected {:?})",
            r.tally, r.expected
        )));
    }
    ctx.progress.inc(1);
    Ok(Row {
        scheme,
        mode: "end-to-end",
        threads,
        ballots: voters,
        per_s: r.ballots_per_s,
        latency: Some((r.latency_ms.p50, r.latency_ms.p99)),
    })
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    ctx.start((BallotScheme::ALL.len() * MODES.len()) as u64, "ballots");
    let mut rows = Vec::new();
    for scheme in BallotScheme::ALL {
        ctx.progress.set_message(format!("{scheme}: proof checks"));
        proof_rows(ctx, scheme, &mut rows)?;
        ctx.progress.set_message(format!("{scheme}: election end to end"));
        rows.push(demo_row(ctx, scheme)?);
    }
    let mut table = Table::new(COLUMNS);
    for r in rows {
        let (p50, p99) =
            r.latency.map_or((String::new(), String::new()), |(a, b)| (format!("{a:.1}"), format!("{b:.1}")));
        table.push(vec![
            r.scheme.name().into(),
            r.mode.into(),
            r.threads.to_string(),
            CANDIDATES.to_string(),
            r.ballots.to_string(),
            format!("{:.1}", r.per_s),
            format!("{:.1}", r.per_s / r.threads as f64),
            p50,
            p99,
            ctx.machine.build.into(),
            ctx.machine.commit.into(),
            ctx.opts.seed.to_string(),
        ]);
    }
    ctx.finish(Experiment::Voting, &table, charts, section)
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let x_max = MODES.len() as f64 + 0.5;
    let mut series: Vec<Series> = BallotScheme::ALL
        .iter()
        .map(|s| {
            let points = MODES
                .iter()
                .enumerate()
                .filter_map(|(i, m)| {
                    let row = t.rows.iter().rev().find(|r| r[0] == s.name() && r[1] == *m)?;
                    Some((i as f64 + 1.0, t.num(row, "ballots_per_s")?))
                })
                .collect();
            Series::line(format!("{s} (this machine)"), points)
        })
        .collect();
    for (label, y) in [
        ("seed 003: Fabric, baseline (310/s)", VOTING_BASELINE_TPS),
        ("seed 003: Fabric, optimised (420/s)", VOTING_OPTIMISED_TPS),
        ("seed 003: election peak required (55,324/s)", VOTING_REQUIRED_TPS),
    ] {
        series.push(Series::seed(label, vec![(0.5, y), (x_max, y)]));
    }
    vec![Chart {
        title: format!("Ballots per second, L = {CANDIDATES} candidates"),
        x_label: "1 = single, 2 = batch (1 core), 3 = batch (all cores), 4 = election end to end".into(),
        y_label: "ballots / s".into(),
        log_x: false,
        log_y: true,
        x_names: Vec::new(),
        series,
    }]
}

/// The proof-check modes the chain uses for `scheme`'s ballots (`crates/voting/src/app.rs`):
/// ElGamal batches, Paillier single checks only.
fn consensus_modes(scheme: BallotScheme) -> &'static [&'static str] {
    match scheme {
        BallotScheme::Elgamal => &["single", "batch", "batch-parallel"],
        BallotScheme::Paillier => &["single"],
    }
}

fn section(t: &Table) -> String {
    let mut s = format!(
        "Proof checks alone (`single`: one ballot at a time on one core; `batch`: random-linear-\
         combination batches on one core, falling back to single checks on failure; `batch-parallel`: \
         batches of {CHUNK} spread over every core) and whole elections (`end-to-end`: `vote demo` with \
         honest voters — ballots confirmed per second from the first submission to the last \
         confirmation, latency from submission to inclusion). Seed 003 measured {VOTING_BASELINE_TPS} ballots/s \
         ({VOTING_BASELINE_LATENCY_S} s average latency) and {VOTING_OPTIMISED_TPS}/s ({VOTING_OPTIMISED_LATENCY_S} s) \
         end to end on Fabric with Paillier ballots, and asks for 55,324/s at an election peak.\n\n\
         Source: {VOTING_SOURCE}\n\n"
    );
    s.push_str(&t.markdown(&COLUMNS[..9]));
    s.push_str(
        "\nCores needed for the election peak at the per-core rate at which the chain checks each \
         scheme's proofs (validation only; every validator checks every ballot). The chain checks \
         ElGamal proofs in batches, but each Paillier proof alone: Paillier's batch equation cannot \
         be trusted to agree with the single check (docs/VOTING.md), so its batch rate above is not \
         one the chain reaches, and a Paillier election end to end runs near the single-check rate.\n\n",
    );
    for scheme in BallotScheme::ALL {
        let best = t
            .rows
            .iter()
            .filter(|r| r[0] == scheme.name() && consensus_modes(scheme).contains(&r[1].as_str()))
            .filter_map(|r| t.num(r, "ballots_per_s_per_core"))
            .fold(0.0f64, f64::max);
        if best > 0.0 {
            s.push_str(&format!(
                "- {scheme}: {best:.0} ballots/s per core → {:.0} cores per validator for {VOTING_REQUIRED_TPS}/s\n",
                (VOTING_REQUIRED_TPS / best).ceil()
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_peak_s_cores_use_the_rate_the_chain_checks_at_single_for_paillier() {
        let mut t = Table::new(COLUMNS);
        for (scheme, mode, per_core) in [
            ("elgamal", "single", "1951.9"),
            ("elgamal", "batch", "2939.7"),
            ("paillier", "single", "22.3"),
            ("paillier", "batch", "170.1"),
        ] {
            let mut r = vec![String::new(); COLUMNS.len()];
            r[0] = scheme.into();
            r[1] = mode.into();
            r[6] = per_core.into();
            t.push(r);
        }
        let s = section(&t);
        assert!(s.contains("- elgamal: 2940 ballots/s per core → 19 cores"), "{s}");
        assert!(s.contains("- paillier: 22 ballots/s per core → 2481 cores"), "{s}");
    }
}
