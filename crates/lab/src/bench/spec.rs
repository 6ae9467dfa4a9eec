//! The benchmark file: a TOML document of rounds, each a workload, a rate controller and a
//! length; read whole and checked before any load starts. Every refusal names the file, the
//! line and the key (`bench.toml:12: round 2 (ramp) rate.finish: …`). The format is documented
//! in `docs/LOAD-BENCHMARK.md`; `bench/example.toml` in the repository uses every controller.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

use scalechain_voting::app::MAX_CANDIDATES;
use scalechain_voting::BallotScheme;

use crate::load::prepare::Shape;
use crate::load::schedule::{Composite, Length, Maximum, Part, Rate};

/// The largest benchmark file read.
pub const MAX_FILE: u64 = 1 << 20;
/// The largest replay schedule read (about 10 million offsets).
pub const MAX_REPLAY_FILE: u64 = 128 << 20;
/// The most transactions a benchmark may prepare (they are all signed before the first round).
pub const MAX_TXS: u64 = 5_000_000;
/// The most rounds.
pub const MAX_ROUNDS: usize = 1_000;
/// The most inputs or outputs of a transfer workload.
pub const MAX_SHAPE: usize = 100;

/// A refusal: where, which key, why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}:{line}: {key}{}{message}", file.display(), if key.is_empty() { "" } else { ": " })]
pub struct SpecError {
    /// The file.
    pub file: PathBuf,
    /// The line (1-based; 0 when the file could not be read).
    pub line: usize,
    /// The key (`round 2 (ramp) rate.tps`), empty for a file-level error.
    pub key: String,
    /// What is wrong.
    pub message: String,
}

/// A benchmark, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Benchmark {
    /// Its name (the file's stem unless given).
    pub name: String,
    /// The network to start when no node is given.
    pub network: Network,
    /// The rounds, in order.
    pub rounds: Vec<Round>,
}

/// The network `scalechain bench` starts when it is given no `--api` (devnet's layout).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Network {
    /// Peer processes (the load goes to them).
    pub peers: usize,
    /// Miner processes.
    pub miners: usize,
    /// Mining threads per miner.
    pub miner_threads: usize,
    /// A node configuration file every node starts with.
    pub node_config: Option<PathBuf>,
}

/// What a round offers.
#[derive(Clone, Debug, PartialEq)]
pub enum Workload {
    /// Transfers of a shape, from keys the benchmark funds itself.
    Transfer(Shape),
    /// Seed 003's ballots: an election the benchmark publishes, one ballot per voter.
    Ballot {
        /// The ballot scheme.
        scheme: BallotScheme,
        /// The election's candidates.
        candidates: usize,
    },
    /// Several workloads interleaved by weight (none of them a mix).
    Mix(Vec<(f64, Workload)>),
}

impl Workload {
    /// The label in reports (`transfer 1-1`, `ballot elgamal 4`, `mix 3 transfer 1-1 + 1 ballot
    /// elgamal 2`).
    pub fn label(&self) -> String {
        match self {
            Workload::Transfer(s) => format!("transfer {}-{}", s.inputs, s.outputs),
            Workload::Ballot { scheme, candidates } => format!("ballot {} {candidates}", scheme.name()),
            Workload::Mix(parts) => format!(
                "mix {}",
                parts.iter().map(|(w, p)| format!("{w} {}", p.label())).collect::<Vec<_>>().join(" + ")
            ),
        }
    }

    /// Its parts with their shares of a round of `count` transactions (a workload that is not
    /// a mix is its own only part): each part's count, by largest remainder, summing to
    /// `count`.
    pub fn split(&self, count: usize) -> Vec<(usize, &Workload)> {
        let Workload::Mix(parts) = self else { return vec![(count, self)] };
        let sum: f64 = parts.iter().map(|p| p.0).sum();
        let exact: Vec<f64> = parts.iter().map(|p| count as f64 * p.0 / sum).collect();
        let mut counts: Vec<usize> = exact.iter().map(|x| x.floor() as usize).collect();
        // Fewer than one per part is left: to the largest remainders.
        let left = count.saturating_sub(counts.iter().sum());
        let mut order: Vec<usize> = (0..parts.len()).collect();
        order.sort_by(|&a, &b| (exact[b] - exact[b].floor()).total_cmp(&(exact[a] - exact[a].floor())));
        for &i in order.iter().take(left) {
            counts[i] += 1;
        }
        counts.into_iter().zip(parts.iter().map(|p| &p.1)).collect()
    }
}

/// One round, checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Round {
    /// Its name.
    pub name: String,
    /// The line of its table in the file.
    pub line: usize,
    /// The workload.
    pub workload: Workload,
    /// The rate controller.
    pub rate: Rate,
    /// The controller's name (`fixed-rate`, …).
    pub controller: &'static str,
    /// When the offer ends, if it ends by time.
    pub duration: Option<Duration>,
    /// Transactions prepared for it: the most it may send.
    pub txs: u64,
    /// How long, after the offer, the round waits for its transactions to be confirmed.
    pub drain: Duration,
}

// What the file holds, before checking.

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct File {
    name: Option<String>,
    #[serde(default)]
    network: Option<Spanned<NetworkFile>>,
    #[serde(default)]
    round: Vec<Spanned<RoundFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct NetworkFile {
    peers: Option<Spanned<i64>>,
    miners: Option<Spanned<i64>>,
    miner_threads: Option<Spanned<i64>>,
    node_config: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RoundFile {
    name: Option<String>,
    workload: Option<Spanned<WorkloadFile>>,
    rate: Spanned<RateFile>,
    duration: Option<Spanned<f64>>,
    txs: Option<Spanned<i64>>,
    drain: Option<Spanned<f64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", tag = "kind")]
enum WorkloadFile {
    Transfer { inputs: Option<i64>, outputs: Option<i64> },
    Ballot { scheme: Option<String>, candidates: Option<i64> },
    Mix { parts: Vec<MixPartFile> },
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct MixPartFile {
    weight: f64,
    workload: WorkloadFile,
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", tag = "controller")]
enum RateFile {
    FixedRate { tps: f64 },
    LinearRate { start: f64, finish: f64 },
    FixedLoad { backlog: i64 },
    MaximumRate { tps: f64, step: f64, interval: Option<f64> },
    CompositeRate { parts: Vec<PartFile> },
    Replay { file: String },
}

#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct PartFile {
    weight: f64,
    rate: RateFile,
}

/// The default wait for confirmations after a round's offer.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(60);
/// The default interval of `maximum-rate`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(5);

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())].iter().filter(|&&b| b == b'\n').count() + 1
}

struct Ctx<'a> {
    file: &'a Path,
    text: &'a str,
}

impl Ctx<'_> {
    fn err(
        &self,
        span: std::ops::Range<usize>,
        key: impl Into<String>,
        message: impl Into<String>,
    ) -> SpecError {
        SpecError {
            file: self.file.to_path_buf(),
            line: line_of(self.text, span.start),
            key: key.into(),
            message: message.into(),
        }
    }
}

/// Reads and checks the benchmark file at `path`.
pub fn load(path: &Path) -> Result<Benchmark, SpecError> {
    let fail = |message: String| SpecError { file: path.to_path_buf(), line: 0, key: String::new(), message };
    let bytes = read_bounded(path, MAX_FILE).map_err(fail)?;
    let text = String::from_utf8(bytes).map_err(|e| fail(format!("not UTF-8: {e}")))?;
    parse(path, &text, &|p: &Path| read_bounded(p, MAX_REPLAY_FILE))
}

/// Reads at most `max` bytes of `path`, refusing a larger file.
fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    use std::io::Read;
    let f = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut bytes = Vec::new();
    f.take(max.saturating_add(1)).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("larger than {max} bytes"));
    }
    Ok(bytes)
}

/// Checks the benchmark `text` of the file at `path`; `read` reads the files it names
/// (replay schedules, relative to the benchmark file's directory).
pub fn parse(
    path: &Path,
    text: &str,
    read: &dyn Fn(&Path) -> Result<Vec<u8>, String>,
) -> Result<Benchmark, SpecError> {
    let cx = Ctx { file: path, text };
    let file: File = toml::from_str(text).map_err(|e| {
        let line = e.span().map_or(0, |s| line_of(text, s.start));
        SpecError {
            file: path.to_path_buf(),
            line,
            key: String::new(),
            message: e.message().trim().to_string(),
        }
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let network = match file.network {
        None => Network { peers: 3, miners: 1, miner_threads: 1, node_config: None },
        Some(n) => {
            let n = n.into_inner();
            let count = |v: Option<Spanned<i64>>, key: &str, default: usize, max: usize| match v {
                None => Ok(default),
                Some(v) => {
                    let x = *v.get_ref();
                    usize::try_from(x).ok().filter(|x| (1..=max).contains(x)).ok_or_else(|| {
                        cx.err(
                            v.span(),
                            format!("network.{key}"),
                            format!("{x} is not a count from 1 to {max}"),
                        )
                    })
                }
            };
            Network {
                peers: count(n.peers, "peers", 3, 64)?,
                miners: count(n.miners, "miners", 1, 16)?,
                miner_threads: count(n.miner_threads, "miner-threads", 1, 256)?,
                node_config: n.node_config.map(|p| dir.join(p)),
            }
        }
    };
    if file.round.is_empty() {
        return Err(SpecError {
            file: path.to_path_buf(),
            line: 0,
            key: "round".into(),
            message: "a benchmark needs at least one [[round]]".into(),
        });
    }
    if file.round.len() > MAX_ROUNDS {
        return Err(cx.err(file.round[MAX_ROUNDS].span(), "round", format!("more than {MAX_ROUNDS} rounds")));
    }
    let mut rounds = Vec::with_capacity(file.round.len());
    let mut total = 0u64;
    for (i, r) in file.round.into_iter().enumerate() {
        let span = r.span();
        let r = r.into_inner();
        let key = match &r.name {
            Some(n) => format!("round {} ({n})", i + 1),
            None => format!("round {}", i + 1),
        };
        let name = r.name.clone().unwrap_or_else(|| format!("round {}", i + 1));
        let round = check_round(&cx, dir, read, &key, name, span.clone(), r)?;
        total = total.saturating_add(round.txs);
        if total > MAX_TXS {
            return Err(cx.err(
                span,
                key,
                format!("the rounds up to this one prepare {total} transactions, more than {MAX_TXS}"),
            ));
        }
        rounds.push(round);
    }
    let name = file
        .name
        .unwrap_or_else(|| path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
    Ok(Benchmark { name, network, rounds })
}

/// A positive, finite number of seconds.
fn seconds(cx: &Ctx, v: &Spanned<f64>, key: &str) -> Result<Duration, SpecError> {
    let x = *v.get_ref();
    if !(x.is_finite() && x > 0.0 && x <= 1e6) {
        return Err(cx.err(v.span(), key, format!("{x} is not a number of seconds above 0 (at most 1e6)")));
    }
    Ok(Duration::from_secs_f64(x))
}

/// A rate controller, checked, with the most transactions per second it can ask for over
/// `length` (`None`: no rate of its own).
fn check_rate(
    cx: &Ctx,
    dir: &Path,
    read: &dyn Fn(&Path) -> Result<Vec<u8>, String>,
    rate: &RateFile,
    span: std::ops::Range<usize>,
    key: &str,
    length: Option<Length>,
) -> Result<(Rate, Option<f64>), SpecError> {
    let tps_ok = |x: f64, k: &str, zero: bool| {
        if x.is_finite() && (x > 0.0 || (zero && x == 0.0)) && x <= 1e9 {
            Ok(x)
        } else {
            let want = if zero { "from 0" } else { "above 0" };
            Err(cx.err(span.clone(), format!("{key}.{k}"), format!("{x} is not a rate {want} to 1e9 tx/s")))
        }
    };
    let need_length = |what: &str| {
        length.ok_or_else(|| {
            cx.err(
                span.clone(),
                key,
                format!("{what} needs the round's length: give the round `duration` or `txs`"),
            )
        })
    };
    Ok(match rate {
        RateFile::FixedRate { tps } => (Rate::Fixed { tps: tps_ok(*tps, "tps", false)? }, Some(*tps)),
        RateFile::LinearRate { start, finish } => {
            let (start, finish) = (tps_ok(*start, "start", true)?, tps_ok(*finish, "finish", true)?);
            if start == 0.0 && finish == 0.0 {
                return Err(cx.err(
                    span.clone(),
                    format!("{key}.finish"),
                    "a ramp from 0 to 0 sends nothing",
                ));
            }
            let over = need_length("linear-rate")?;
            (Rate::Linear { start, finish, over }, Some(start.max(finish)))
        }
        RateFile::FixedLoad { backlog } => {
            let b = u64::try_from(*backlog).ok().filter(|b| (1..=MAX_TXS).contains(b)).ok_or_else(|| {
                cx.err(
                    span.clone(),
                    format!("{key}.backlog"),
                    format!("{backlog} is not a count from 1 to {MAX_TXS}"),
                )
            })?;
            (Rate::FixedLoad { backlog: b }, None)
        }
        RateFile::MaximumRate { tps, step, interval } => {
            let (tps, step) = (tps_ok(*tps, "tps", false)?, tps_ok(*step, "step", false)?);
            let interval = match interval {
                None => DEFAULT_INTERVAL,
                Some(x) if x.is_finite() && *x >= 0.1 && *x <= 3600.0 => Duration::from_secs_f64(*x),
                Some(x) => {
                    return Err(cx.err(
                        span.clone(),
                        format!("{key}.interval"),
                        format!("{x} is not a number of seconds from 0.1 to 3600"),
                    ))
                }
            };
            // The most it can reach: one step up per interval of the round.
            let most = match length {
                Some(Length::Time(d)) => Some(tps + step * (d.as_secs_f64() / interval.as_secs_f64()).ceil()),
                _ => None,
            };
            (Rate::Maximum(Maximum::new(tps, step, interval)), most)
        }
        RateFile::CompositeRate { parts } => {
            let over = need_length("composite-rate")?;
            if parts.is_empty() || parts.len() > 100 {
                return Err(cx.err(span.clone(), format!("{key}.parts"), "from 1 to 100 parts"));
            }
            let sum: f64 = parts.iter().map(|p| p.weight).sum();
            let mut until = 0.0;
            let mut out = Vec::with_capacity(parts.len());
            let mut most: Option<f64> = Some(0.0);
            for (j, p) in parts.iter().enumerate() {
                let k = format!("{key}.parts[{j}]");
                if !(p.weight.is_finite() && p.weight > 0.0) {
                    return Err(cx.err(
                        span.clone(),
                        format!("{k}.weight"),
                        format!("{} is not above 0", p.weight),
                    ));
                }
                until += p.weight / sum;
                let share = match over {
                    Length::Time(d) => Length::Time(d.mul_f64(p.weight / sum)),
                    Length::Txs(n) => Length::Txs(((n as f64) * p.weight / sum).ceil() as u64),
                };
                let (rate, m) =
                    check_rate(cx, dir, read, &p.rate, span.clone(), &format!("{k}.rate"), Some(share))?;
                if matches!(rate, Rate::Composite(_)) {
                    return Err(cx.err(span.clone(), format!("{k}.rate"), "a composite inside a composite"));
                }
                most = most.zip(m).map(|(a, b)| a.max(b));
                out.push(Part { rate, until: if j + 1 == parts.len() { 1.0 } else { until } });
            }
            (Rate::Composite(Composite::new(out, over)), most)
        }
        RateFile::Replay { file } => {
            let at = dir.join(file);
            let bytes = read(&at)
                .map_err(|e| cx.err(span.clone(), format!("{key}.file"), format!("{}: {e}", at.display())))?;
            let offsets = replay_offsets(&at, &bytes)?;
            (Rate::Replay { offsets }, None)
        }
    })
}

/// A replay schedule: one offset per line, in milliseconds from the round's start (a decimal
/// number, non-decreasing); blank lines and lines starting with `#` are skipped.
pub fn replay_offsets(path: &Path, bytes: &[u8]) -> Result<Arc<[Duration]>, SpecError> {
    let err = |line: usize, message: String| SpecError {
        file: path.to_path_buf(),
        line,
        key: String::new(),
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| err(0, format!("not UTF-8: {e}")))?;
    let mut out = Vec::new();
    let mut last = 0.0f64;
    for (i, l) in text.lines().enumerate() {
        let l = l.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let ms: f64 = l.parse().map_err(|_| err(i + 1, format!("{l:?} is not a number of milliseconds")))?;
        if !(ms.is_finite() && (0.0..=1e9).contains(&ms)) {
            return Err(err(i + 1, format!("{ms} is not an offset from 0 to 1e9 ms")));
        }
        if ms < last {
            return Err(err(i + 1, format!("{ms} ms comes before the line above's {last} ms")));
        }
        last = ms;
        if out.len() as u64 >= MAX_TXS {
            return Err(err(i + 1, format!("more than {MAX_TXS} offsets")));
        }
        out.push(Duration::from_nanos((ms * 1e6).round() as u64));
    }
    if out.is_empty() {
        return Err(err(0, "no offsets".into()));
    }
    Ok(out.into())
}

/// A workload, checked; `mix` says whether it may be a mix.
fn check_workload(
    cx: &Ctx,
    span: std::ops::Range<usize>,
    key: &str,
    w: WorkloadFile,
    mix: bool,
) -> Result<Workload, SpecError> {
    let count = |v: Option<i64>, k: &str, default: i64, max: usize| {
        let v = v.unwrap_or(default);
        usize::try_from(v).ok().filter(|v| (1..=max).contains(v)).ok_or_else(|| {
            cx.err(span.clone(), format!("{key}.{k}"), format!("{v} is not a count from 1 to {max}"))
        })
    };
    Ok(match w {
        WorkloadFile::Transfer { inputs, outputs } => Workload::Transfer(Shape {
            inputs: count(inputs, "inputs", 1, MAX_SHAPE)?,
            outputs: count(outputs, "outputs", 1, MAX_SHAPE)?,
        }),
        WorkloadFile::Ballot { scheme, candidates } => {
            let scheme = match scheme.as_deref() {
                None | Some("elgamal") => BallotScheme::Elgamal,
                Some("paillier") => BallotScheme::Paillier,
                Some(other) => {
                    return Err(cx.err(
                        span.clone(),
                        format!("{key}.scheme"),
                        format!("{other:?} is not elgamal or paillier"),
                    ))
                }
            };
            Workload::Ballot { scheme, candidates: count(candidates, "candidates", 2, MAX_CANDIDATES)? }
        }
        WorkloadFile::Mix { parts } => {
            if !mix {
                return Err(cx.err(span.clone(), key, "a mix inside a mix"));
            }
            if parts.is_empty() || parts.len() > 16 {
                return Err(cx.err(span.clone(), format!("{key}.parts"), "from 1 to 16 parts"));
            }
            let mut out = Vec::with_capacity(parts.len());
            for (j, p) in parts.into_iter().enumerate() {
                let k = format!("{key}.parts[{j}]");
                if !(p.weight.is_finite() && p.weight > 0.0 && p.weight <= 1e6) {
                    return Err(cx.err(
                        span.clone(),
                        format!("{k}.weight"),
                        format!("{} is not above 0 (at most 1e6)", p.weight),
                    ));
                }
                out.push((
                    p.weight,
                    check_workload(cx, span.clone(), &format!("{k}.workload"), p.workload, false)?,
                ));
            }
            Workload::Mix(out)
        }
    })
}

fn check_round(
    cx: &Ctx,
    dir: &Path,
    read: &dyn Fn(&Path) -> Result<Vec<u8>, String>,
    key: &str,
    name: String,
    span: std::ops::Range<usize>,
    r: RoundFile,
) -> Result<Round, SpecError> {
    let workload = match r.workload {
        None => Workload::Transfer(Shape::ONE_TO_ONE),
        Some(w) => {
            let wspan = w.span();
            check_workload(cx, wspan, &format!("{key} workload"), w.into_inner(), true)?
        }
    };
    let duration = r.duration.as_ref().map(|d| seconds(cx, d, &format!("{key} duration"))).transpose()?;
    let txs = match &r.txs {
        None => None,
        Some(t) => {
            Some(u64::try_from(*t.get_ref()).ok().filter(|t| (1..=MAX_TXS).contains(t)).ok_or_else(|| {
                cx.err(
                    t.span(),
                    format!("{key} txs"),
                    format!("{} is not a count from 1 to {MAX_TXS}", t.get_ref()),
                )
            })?)
        }
    };
    let drain = r
        .drain
        .as_ref()
        .map(|d| seconds(cx, d, &format!("{key} drain")))
        .transpose()?
        .unwrap_or(DEFAULT_DRAIN);
    // A round of so many transactions ends when they are sent; a round of a duration ends
    // then (and sends at most `txs`, when given).
    let length = match (duration, txs) {
        (Some(d), _) => Some(Length::Time(d)),
        (None, Some(n)) => Some(Length::Txs(n)),
        (None, None) => None,
    };
    let rspan = r.rate.span();
    let (rate, most_tps) =
        check_rate(cx, dir, read, r.rate.get_ref(), rspan.clone(), &format!("{key} rate"), length)?;
    let controller = match r.rate.get_ref() {
        RateFile::FixedRate { .. } => "fixed-rate",
        RateFile::LinearRate { .. } => "linear-rate",
        RateFile::FixedLoad { .. } => "fixed-load",
        RateFile::MaximumRate { .. } => "maximum-rate",
        RateFile::CompositeRate { .. } => "composite-rate",
        RateFile::Replay { .. } => "replay",
    };
    // How many to prepare: the count given, else what the rate can ask for in the time.
    let replayed = match &rate {
        Rate::Replay { offsets } => Some(offsets.len() as u64),
        _ => None,
    };
    let from_rate = match (duration, most_tps, replayed) {
        (_, _, Some(n)) => Some(n),
        (Some(d), Some(tps), None) => Some((tps * d.as_secs_f64()).ceil().min(MAX_TXS as f64 + 1.0) as u64),
        _ => None,
    };
    let txs = match (txs, from_rate) {
        (Some(n), Some(m)) => n.min(m),
        (Some(n), None) => n,
        (None, Some(m)) => m,
        (None, None) => {
            return Err(cx.err(
                rspan,
                format!("{key} txs"),
                format!("{controller} sets no rate of its own: give the round `txs`, the most it may send"),
            ))
        }
    };
    if txs > MAX_TXS {
        return Err(cx.err(
            span,
            key,
            format!("would prepare more than {MAX_TXS} transactions (the most a benchmark signs in advance)"),
        ));
    }
    Ok(Round { name, line: line_of(cx.text, span.start), workload, rate, controller, duration, txs, drain })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn no_files(p: &Path) -> Result<Vec<u8>, String> {
        Err(format!("no file {}", p.display()))
    }

    fn check(text: &str) -> Result<Benchmark, SpecError> {
        parse(Path::new("dir/b.toml"), text, &no_files)
    }

    fn refusal(text: &str) -> String {
        check(text).unwrap_err().to_string()
    }

    #[test]
    fn every_controller_and_workload_reads_with_its_defaults() {
        let text = r#"
name = "all"
[network]
peers = 2
node-config = "node.toml"

[[round]]
name = "fixed"
rate = { controller = "fixed-rate", tps = 100 }
duration = 10

[[round]]
workload = { kind = "transfer", inputs = 2, outputs = 3 }
rate = { controller = "linear-rate", start = 100, finish = 300 }
duration = 10
drain = 5

[[round]]
rate = { controller = "fixed-load", backlog = 500 }
txs = 2000

[[round]]
rate = { controller = "maximum-rate", tps = 100, step = 50, interval = 2 }
duration = 10

[[round]]
rate = { controller = "composite-rate", parts = [
  { weight = 1, rate = { controller = "fixed-rate", tps = 10 } },
  { weight = 3, rate = { controller = "linear-rate", start = 0, finish = 40 } },
] }
duration = 8

[[round]]
rate = { controller = "replay", file = "times.txt" }
"#;
        let read = |p: &Path| {
            assert_eq!(p, Path::new("dir/times.txt"), "relative to the benchmark file");
            Ok(b"# offsets\n0\n10\n\n10.5\n2000\n".to_vec())
        };
        let b = parse(Path::new("dir/b.toml"), text, &read).unwrap();
        assert_eq!(b.name, "all");
        assert_eq!(
            b.network,
            Network {
                peers: 2,
                miners: 1,
                miner_threads: 1,
                node_config: Some(PathBuf::from("dir/node.toml"))
            }
        );
        let r = &b.rounds;
        assert_eq!(r.len(), 6);
        assert_eq!((r[0].name.as_str(), r[0].line, r[0].txs), ("fixed", 7, 1000));
        assert_eq!(r[0].duration, Some(Duration::from_secs(10)));
        assert_eq!(r[0].drain, DEFAULT_DRAIN);
        assert_eq!(r[0].workload, Workload::Transfer(Shape::ONE_TO_ONE));
        assert_eq!(r[1].workload, Workload::Transfer(Shape { inputs: 2, outputs: 3 }));
        assert_eq!((r[1].name.as_str(), r[1].txs, r[1].drain), ("round 2", 3000, Duration::from_secs(5)));
        assert_eq!((r[2].controller, r[2].txs, r[2].duration), ("fixed-load", 2000, None));
        assert_eq!(r[3].txs, (100.0 + 50.0 * 5.0) as u64 * 10, "up to one step per interval");
        assert_eq!(r[4].txs, 8 * 40, "the fastest part's rate over the round");
        match &r[4].rate {
            Rate::Composite(_) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!((r[5].controller, r[5].txs), ("replay", 4));
        assert_eq!(r[0].workload.label(), "transfer 1-1");
    }

    #[test]
    fn refusals_name_the_file_the_line_and_the_key() {
        let e =
            refusal("[[round]]\nrate = { controller = \"fixed-rate\", tps = 10 }\nduration = 1\nspeed = 3\n");
        assert!(e.starts_with("dir/b.toml:4: ") && e.contains("unknown field `speed`"), "{e}");
        let e = refusal(
            "[[round]]\nname = \"r\"\nrate = { controller = \"fixed-rate\", tps = -5 }\nduration = 1\n",
        );
        assert_eq!(e, "dir/b.toml:3: round 1 (r) rate.tps: -5 is not a rate above 0 to 1e9 tx/s");
        let e = refusal("[[round]]\nrate = { controller = \"fixed-rate\", tps = 5 }\nduration = -2\n");
        assert_eq!(e, "dir/b.toml:3: round 1 duration: -2 is not a number of seconds above 0 (at most 1e6)");
        let e = refusal("[[round]]\nrate = { controller = \"fixed-load\", backlog = 10 }\nduration = 5\n");
        assert!(e.starts_with("dir/b.toml:2: round 1 txs: fixed-load sets no rate"), "{e}");
        let e = refusal("[[round]]\nrate = { controller = \"warp\", tps = 5 }\n");
        assert!(e.starts_with("dir/b.toml:2: ") && e.contains("unknown variant `warp`"), "{e}");
        let e = refusal("[[round]]\nrate = { controller = \"linear-rate\", start = 1, finish = 2 }\n");
        assert!(e.contains("rate: linear-rate needs the round's length"), "{e}");
        let e = refusal(
            "[network]\npeers = 0\n[[round]]\nrate = { controller = \"fixed-rate\", tps = 5 }\ntxs = 1\n",
        );
        assert_eq!(e, "dir/b.toml:2: network.peers: 0 is not a count from 1 to 64");
        let e = refusal("name = \"x\"\n");
        assert_eq!(e, "dir/b.toml:0: round: a benchmark needs at least one [[round]]");
        let e = refusal("[[round]]\nworkload = { kind = \"transfer\", inputs = 0 }\nrate = { controller = \"fixed-rate\", tps = 5 }\ntxs = 3\n");
        assert_eq!(e, "dir/b.toml:2: round 1 workload.inputs: 0 is not a count from 1 to 100");
        let e = refusal("[[round]]\nrate = { controller = \"replay\", file = \"t.txt\" }\n");
        assert_eq!(e, "dir/b.toml:2: round 1 rate.file: dir/t.txt: no file dir/t.txt");
        let e = refusal("[[round]]\nrate = { controller = \"fixed-rate\", tps = 1e9 }\nduration = 100\n");
        assert!(e.contains("would prepare more than 5000000"), "{e}");
        let e = refusal("[[round]]\nrate = { controller = \"composite-rate\", parts = [{ weight = 0, rate = { controller = \"fixed-rate\", tps = 1 } }] }\nduration = 3\n");
        assert_eq!(e, "dir/b.toml:2: round 1 rate.parts[0].weight: 0 is not above 0");
        let e = refusal("[[round]]\nrate = { controller = \"fixed-rate\", tps = 1 }\ntxs = 3\n[[round]]\nrate = { controller = \"fixed-rate\", tps = 1 }\ntxs = 0\n");
        assert_eq!(e, "dir/b.toml:6: round 2 txs: 0 is not a count from 1 to 5000000");
    }

    #[test]
    fn ballots_and_mixes_read_and_a_mix_splits_its_count_by_weight() {
        let b = check(
            r#"
[[round]]
workload = { kind = "ballot", scheme = "paillier", candidates = 4 }
rate = { controller = "fixed-rate", tps = 10 }
txs = 30

[[round]]
workload = { kind = "mix", parts = [
  { weight = 3, workload = { kind = "transfer" } },
  { weight = 1, workload = { kind = "ballot" } },
] }
rate = { controller = "fixed-rate", tps = 10 }
txs = 10
"#,
        )
        .unwrap();
        assert_eq!(b.rounds[0].workload, Workload::Ballot { scheme: BallotScheme::Paillier, candidates: 4 });
        assert_eq!(b.rounds[0].workload.label(), "ballot paillier 4");
        let mix = &b.rounds[1].workload;
        assert_eq!(mix.label(), "mix 3 transfer 1-1 + 1 ballot elgamal 2");
        let split: Vec<usize> = mix.split(10).iter().map(|p| p.0).collect();
        assert_eq!(split, [8, 2], "7.5 and 2.5: the remainder to the first largest");
        assert_eq!(mix.split(0).iter().map(|p| p.0).sum::<usize>(), 0);
        assert_eq!(mix.split(1001).iter().map(|p| p.0).sum::<usize>(), 1001);
        assert_eq!(b.rounds[0].workload.split(7), vec![(7, &b.rounds[0].workload)]);
        let e = refusal("[[round]]\nworkload = { kind = \"ballot\", scheme = \"rsa\" }\nrate = { controller = \"fixed-rate\", tps = 1 }\ntxs = 1\n");
        assert_eq!(e, "dir/b.toml:2: round 1 workload.scheme: \"rsa\" is not elgamal or paillier");
        let e = refusal("[[round]]\nworkload = { kind = \"ballot\", candidates = 0 }\nrate = { controller = \"fixed-rate\", tps = 1 }\ntxs = 1\n");
        assert!(
            e.starts_with("dir/b.toml:2: round 1 workload.candidates: 0 is not a count from 1 to"),
            "{e}"
        );
        let e = refusal("[[round]]\nworkload = { kind = \"mix\", parts = [{ weight = 1, workload = { kind = \"mix\", parts = [] } }] }\nrate = { controller = \"fixed-rate\", tps = 1 }\ntxs = 1\n");
        assert_eq!(e, "dir/b.toml:2: round 1 workload.parts[0].workload: a mix inside a mix");
    }

    #[test]
    fn the_repositorys_example_benchmarks_read() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench");
        let example = load(&dir.join("example.toml")).unwrap();
        let controllers: std::collections::BTreeSet<&str> =
            example.rounds.iter().map(|r| r.controller).collect();
        assert_eq!(controllers.len(), 6, "every controller: {controllers:?}");
        assert!(example.rounds.iter().any(|r| matches!(r.workload, Workload::Ballot { .. })));
        assert!(example.rounds.iter().any(|r| matches!(r.workload, Workload::Mix(_))));
        assert_eq!(load(&dir.join("generator.toml")).unwrap().rounds.len(), 4);
    }

    #[test]
    fn a_replay_schedule_is_non_decreasing_milliseconds() {
        let p = Path::new("t.txt");
        let o = replay_offsets(p, b"0\n1.5\n1.5\n# c\n\n3000\n").unwrap();
        assert_eq!(&o[..], [0, 1500, 1500, 3_000_000].map(Duration::from_micros));
        assert_eq!(
            replay_offsets(p, b"5\n4\n").unwrap_err().to_string(),
            "t.txt:2: 4 ms comes before the line above's 5 ms"
        );
        assert_eq!(
            replay_offsets(p, b"x\n").unwrap_err().to_string(),
            "t.txt:1: \"x\" is not a number of milliseconds"
        );
        assert_eq!(
            replay_offsets(p, b"-1\n").unwrap_err().to_string(),
            "t.txt:1: -1 is not an offset from 0 to 1e9 ms"
        );
        assert_eq!(replay_offsets(p, b"# none\n").unwrap_err().to_string(), "t.txt:0: no offsets");
    }

    #[test]
    fn an_unreadable_or_oversized_file_is_refused_before_parsing() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("none.toml");
        let e = load(&missing).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (0, ""));
        let big = dir.path().join("big.toml");
        std::fs::write(&big, vec![b'#'; MAX_FILE as usize + 1]).unwrap();
        assert!(load(&big).unwrap_err().message.contains("larger than"), "bounded");
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, [0xff, 0xfe]).unwrap();
        assert!(load(&bad).unwrap_err().message.starts_with("not UTF-8"));
    }
}
