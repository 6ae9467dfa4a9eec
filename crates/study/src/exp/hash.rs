//! `hash` (seed 002): SHA-256, SHA-512 and BLAKE3 at 25 B, 64 B, 1 KiB and 1 MiB inputs on
//! 1, 2, 4 and 8 threads: hashes/s, MB/s (10^6 bytes) and peak resident memory of the process
//! that did the hashing. With a worker binary each configuration runs in its own process (as
//! the seed measured it), so `peak_rss_kib` is that run's own `maxrss`; in-process it is the
//! study process's peak so far. `openssl speed` on the same sizes is a reference row when
//! openssl is installed.
//!
//! Seed 002 ran on 8 vCPUs. Thread counts up to this machine's cores are the like-for-like
//! points; rows with more threads than cores are marked `oversubscribed` (they share the cores
//! and cannot show the seed's scaling).

use std::hint::black_box;
use std::process::Command;
use std::time::Instant;

use scalechain_lab::machine::peak_rss_kib;
use scalechain_lab::output::sig4;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use sha2::Digest;

use super::speedup::{placement, OVERSUBSCRIBED, WITHIN};
use crate::{median, seeds, Ctx, Experiment, StudyError};

/// Columns of `hash.csv`.
pub const COLUMNS: &[&str] = &[
    "algorithm",
    "bytes",
    "threads",
    "build",
    "impl",
    "hashes_per_s",
    "mb_per_s",
    "peak_rss_kib",
    "placement",
    "runs",
    "commit",
    "seed",
];

/// The algorithms.
pub const ALGORITHMS: [&str; 3] = ["sha256", "sha512", "blake3"];
/// Input sizes.
pub const SIZES: [usize; 4] = [25, 64, 1024, 1 << 20];
/// Thread counts.
pub const THREADS: [usize; 4] = [1, 2, 4, 8];

fn hash_once(alg: &str, data: &[u8]) {
    match alg {
        "sha256" => {
            black_box(sha2::Sha256::digest(data));
        }
        "sha512" => {
            black_box(sha2::Sha512::digest(data));
        }
        _ => {
            black_box(blake3::hash(data));
        }
    }
}

/// Hashes `count` inputs of `bytes` bytes on each of `threads` threads; returns the seconds
/// taken and the peak resident memory (KiB) of this process afterwards.
pub fn work(alg: &str, bytes: usize, threads: usize, count: u64) -> (f64, Option<u64>) {
    let t0 = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads.max(1) {
            s.spawn(move || {
                let mut data = vec![t as u8; bytes];
                for i in 0..count {
                    data[0] = i as u8;
                    hash_once(alg, &data);
                }
            });
        }
    });
    (t0.elapsed().as_secs_f64(), peak_rss_kib())
}

/// The hidden `study-hash-worker` command: `ALG BYTES THREADS COUNT` in, `SECONDS PEAK_KIB` out.
pub fn worker_main(args: &[String]) -> Result<String, String> {
    let [alg, bytes, threads, count] = args else {
        return Err("usage: study-hash-worker ALG BYTES THREADS COUNT".into());
    };
    if !ALGORITHMS.contains(&alg.as_str()) {
        return Err(format!("unknown algorithm {alg:?}"));
    }
    let num = |s: &str| s.parse::<u64>().map_err(|e| format!("{s:?}: {e}"));
    let (bytes, threads, count) = (num(bytes)?, num(threads)?, num(count)?);
    if bytes > 1 << 30 || threads > 1024 {
        return Err("bytes at most 2^30 and threads at most 1024".into());
    }
    let (s, peak) = work(alg, bytes as usize, threads as usize, count);
    Ok(format!("{s} {}", peak.unwrap_or(0)))
}

fn run_once(
    ctx: &Ctx,
    alg: &str,
    bytes: usize,
    threads: usize,
    count: u64,
) -> Result<(f64, Option<u64>), StudyError> {
    let Some(bin) = &ctx.opts.worker else {
        return Ok(work(alg, bytes, threads, count));
    };
    let out = Command::new(bin)
        .args(["study-hash-worker", alg, &bytes.to_string(), &threads.to_string(), &count.to_string()])
        .output()
        .map_err(|e| StudyError::io(bin, e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text.split_whitespace();
    match (it.next().and_then(|s| s.parse().ok()), it.next().and_then(|s| s.parse().ok())) {
        (Some(s), Some(k)) if out.status.success() => Ok((s, Some(k))),
        _ => Err(StudyError::Wrong(format!(
            "hash worker failed: {} {}",
            text.trim(),
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
    }
}

/// `openssl speed` for one algorithm and size: hashes per second, if openssl is installed.
fn openssl(alg: &str, bytes: usize) -> Option<f64> {
    let out = Command::new("openssl")
        .args(["speed", "-seconds", "1", "-bytes", &bytes.to_string(), "-evp", alg])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // The last line reads `<alg>  <rate>k`: thousands of bytes per second.
    let line = text.lines().rev().find(|l| l.trim_start().starts_with(alg))?;
    let rate: f64 = line.split_whitespace().last()?.trim_end_matches('k').parse().ok()?;
    Some(rate * 1000.0 / bytes as f64)
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let runs = ctx.runs();
    let target_s = if ctx.opts.quick { 0.01 } else { 0.25 };
    let threads: Vec<usize> = match ctx.opts.threads {
        Some(t) => THREADS.iter().copied().filter(|x| *x <= t.max(1)).collect(),
        None => THREADS.to_vec(),
    };
    ctx.start((ALGORITHMS.len() * SIZES.len() * (threads.len() + 1)) as u64, "hashing");
    let mut table = Table::new(COLUMNS);
    for alg in ALGORITHMS {
        for bytes in SIZES {
            // Calibrate one thread's count to about `target_s`, each step the fastest of three
            // tries: one try that stalls (threads of an earlier experiment still exiting, say)
            // would otherwise shrink the count until thread start-up dominates every run.
            let mut count = 16u64;
            loop {
                let s = (0..3).map(|_| work(alg, bytes, 1, count).0).fold(f64::INFINITY, f64::min);
                if s >= target_s / 10.0 || count > 1 << 30 {
                    count = ((count as f64) * target_s / s.max(1e-9)).max(1.0) as u64;
                    break;
                }
                count *= 4;
            }
            for &t in &threads {
                ctx.progress.set_message(format!("{alg}, {bytes} B, {t} threads"));
                let mut secs = Vec::with_capacity(runs);
                let mut peak = None;
                for _ in 0..runs {
                    let (s, k) = run_once(ctx, alg, bytes, t, count)?;
                    secs.push(s);
                    peak = peak.max(k);
                }
                let hps = (count * t as u64) as f64 / median(secs);
                table.push(row(ctx, alg, bytes, t, "scalechain", hps, peak, runs));
                ctx.progress.inc(1);
            }
            ctx.progress.set_message(format!("openssl speed {alg}, {bytes} B"));
            // openssl has no BLAKE3; a quick run skips openssl (a second per size).
            if alg != "blake3" && !ctx.opts.quick {
                if let Some(hps) = openssl(alg, bytes) {
                    table.push(row(ctx, alg, bytes, 1, "openssl", hps, None, 1));
                }
            }
            ctx.progress.inc(1);
        }
    }
    let cores = ctx.machine.cores;
    ctx.finish(Experiment::Hash, &table, charts, |t| section(t, cores))
}

#[allow(clippy::too_many_arguments)]
fn row(
    ctx: &Ctx,
    alg: &str,
    bytes: usize,
    t: usize,
    imp: &str,
    hps: f64,
    peak: Option<u64>,
    runs: usize,
) -> Vec<String> {
    vec![
        alg.into(),
        bytes.to_string(),
        t.to_string(),
        ctx.machine.build.into(),
        imp.into(),
        format!("{hps:.1}"),
        format!("{:.3}", hps * bytes as f64 / 1e6),
        peak.map_or(String::new(), |k| k.to_string()),
        placement(t, ctx.machine.cores).into(),
        runs.to_string(),
        ctx.machine.commit.into(),
        "0".into(),
    ]
}

/// A row's placement (rows of CSVs older than the column count as within the cores).
fn placement_of<'a>(t: &Table, r: &'a [String]) -> &'a str {
    t.col("placement").map_or(WITHIN, |i| r[i].as_str())
}

/// Our hashes/s of `alg` at `bytes` on `threads` threads (scalechain rows of `build`).
fn rate(t: &Table, alg: &str, bytes: usize, threads: usize, build: &str) -> Option<f64> {
    let (b, th) = (bytes.to_string(), threads.to_string());
    t.select("algorithm", alg)
        .find(|r| r[1] == b && r[2] == th && r[3] == build && r[4] == "scalechain")
        .and_then(|r| t.num(r, "hashes_per_s"))
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    SIZES
        .iter()
        .map(|&bytes| {
            let mut series = Vec::new();
            let b = bytes.to_string();
            let builds = t.distinct("build");
            for build in &builds {
                for alg in ALGORITHMS {
                    let pts = |keep: &str| -> Vec<(f64, f64)> {
                        t.select("algorithm", alg)
                            .filter(|r| r[1] == b && &r[3] == build && r[4] == "scalechain")
                            .filter(|r| placement_of(t, r) == keep)
                            .filter_map(|r| Some((t.num(r, "threads")?, t.num(r, "mb_per_s")?)))
                            .collect()
                    };
                    let within = pts(WITHIN);
                    let mut over = pts(OVERSUBSCRIBED);
                    series.push(Series::line(format!("{alg}, threads ≤ cores ({build})"), within.clone()));
                    if !over.is_empty() {
                        // Joined to the last point within the cores.
                        if let Some(last) = within.last() {
                            over.insert(0, *last);
                        }
                        series.push(Series::line(format!("{alg}, oversubscribed ({build})"), over));
                    }
                }
            }
            for alg in ["sha256", "blake3"] {
                let pts = seeds::HASH
                    .iter()
                    .filter(|r| r.algorithm == alg && r.input_bytes as usize == bytes)
                    .filter_map(|r| {
                        Some((
                            f64::from(r.threads),
                            r.mb_per_s.or(r.hashes_per_s.map(|h| h * bytes as f64 / 1e6))?,
                        ))
                    })
                    .collect::<Vec<_>>();
                if !pts.is_empty() {
                    series.push(Series::seed(format!("seed 002 {alg} (t2.2xlarge, 8 vCPUs)"), pts));
                }
            }
            Chart {
                title: format!("Hashing {bytes}-byte inputs (seed 002)"),
                x_label: "threads".into(),
                y_label: "MB/s (10^6 bytes per second)".into(),
                log_x: true,
                log_y: true,
                x_names: Vec::new(),
                series,
            }
        })
        .collect()
}

fn section(t: &Table, cores: usize) -> String {
    let mut s = format!(
        "Each thread hashes its own inputs (independent work, as in seed 002). `openssl` rows are \
         `openssl speed -evp` on one thread in the same run. This machine has {cores} logical \
         cores; seed 002's tables ran on 8 vCPUs. Rows with at most {cores} threads are the \
         like-for-like points; rows with more threads are `oversubscribed`: their threads share \
         the {cores} cores, so they cannot show the seed's scaling with threads. SHA-256 runs on \
         the `{}` backend here.\n\n",
        scalechain_types::keys::sha256_backend()
    );
    s.push_str(&t.markdown(&COLUMNS[..9]));
    s.push_str(&small_inputs(t, cores));
    s.push_str(&format!("\n**Seed 002** ({}):\n\n| algorithm | bytes | threads | hashes/s | MB/s | × the row with half the threads |\n|---|---:|---:|---:|---:|---:|\n", seeds::HASH_SOURCE));
    for r in seeds::HASH {
        let f = |x: Option<f64>| x.map_or("–".into(), |v| format!("{v}"));
        let half = seeds::HASH.iter().find(|h| {
            h.algorithm == r.algorithm && h.input_bytes == r.input_bytes && 2 * h.threads == r.threads
        });
        let x = match (r.hashes_per_s, half.and_then(|h| h.hashes_per_s)) {
            (Some(a), Some(b)) => format!("{:.4}", a / b),
            _ => "–".into(),
        };
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {x} |\n",
            r.algorithm,
            r.input_bytes,
            r.threads,
            f(r.hashes_per_s),
            f(r.mb_per_s)
        ));
    }
    let builds = t.distinct("build");
    if let Some(b) = builds.first() {
        let ours = |alg: &str| {
            let (one, two) = (rate(t, alg, 1 << 20, 1, b), rate(t, alg, 1 << 20, 2, b));
            match (one, two) {
                (Some(x), Some(y)) => format!("{:.0} → {:.0} hashes/s ({:.2}×)", x, y, y / x),
                _ => "–".into(),
            }
        };
        s.push_str(&format!(
            "\n**Why the seed's numbers are suspect.** Its rates double with the threads (last \
             column): SHA-256 exactly (658, 1316, 2632 on 2, 4, 8 threads), BLAKE3 to within \
             0.1% (5271, 10544, 21094). Each thread times itself and the program sums the \
             threads' rates, so the total doubles only if no thread slows another, yet 8 threads \
             on 8 vCPUs (on EC2 a vCPU is a hyperthread, two to a core) share cores. And its \
             timer reads microseconds only: `{}` ({}). It subtracts the microsecond fields and \
             drops the seconds, so elapsed time is counted modulo one second (and can come out \
             negative): 500000 hashes of 1 MB at 658/s would take about 13 minutes. Ours, 1 → 2 \
             threads at 1 MiB (build `{b}`): SHA-256 {}, BLAKE3 {}.\n",
            seeds::HASH_TIMER_LINE,
            seeds::HASH_TIMER_SOURCE,
            ours("sha256"),
            ours("blake3"),
        ));
    }
    s
}

/// SHA-256 against BLAKE3 at each size on the like-for-like thread counts, against seed 002's
/// headline that BLAKE3 is the faster.
fn small_inputs(t: &Table, cores: usize) -> String {
    let mut s = String::from(
        "\n**SHA-256 against BLAKE3 by input size** (threads within the cores; seed 002: \"Blake3 \
         generally outperformed both SHA-512 and SHA-256 in terms of hashes generated per second \
         on tested hardware platforms\", section V):\n\n\
         | build | bytes | threads | sha256 hashes/s | blake3 hashes/s | sha256 / blake3 | faster |\n\
         |---|---:|---:|---:|---:|---:|---|\n",
    );
    for b in t.distinct("build") {
        for bytes in SIZES {
            for th in THREADS.iter().copied().filter(|&x| x <= cores.max(1)) {
                if let (Some(sha), Some(bl)) =
                    (rate(t, "sha256", bytes, th, &b), rate(t, "blake3", bytes, th, &b))
                {
                    s.push_str(&format!(
                        "| {b} | {bytes} | {th} | {} | {} | {:.2} | {} |\n",
                        sig4(sha),
                        sig4(bl),
                        sha / bl,
                        if sha > bl { "sha256" } else { "blake3" }
                    ));
                }
            }
        }
    }
    s.push_str(
        "\nWhat decides it at a given size: 25 B and 64 B fit one 64-byte BLAKE3 block, but \
         SHA-256 pads 64 B into two blocks; up to one 1 KiB chunk BLAKE3 compresses its blocks one \
         after another (16 at 1 KiB), like SHA-256, whose compressions SHA-NI runs in hardware; \
         from two chunks on, BLAKE3 compresses chunks side by side in SIMD lanes.\n",
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Opts;

    #[test]
    fn a_quick_run_labels_the_rows_beyond_the_cores_oversubscribed() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let opts = Opts { quick: true, runs: Some(1), ..Opts::new(dir.path()) };
        crate::run(Experiment::Hash, opts).unwrap_or_else(|e| panic!("{e}"));
        let csv = std::fs::read_to_string(dir.path().join("hash.csv")).unwrap_or_default();
        let t = Table::from_csv(&csv).unwrap_or_else(|| panic!("{csv}"));
        let cores = scalechain_lab::Machine::detect().cores;
        assert_eq!(t.rows.len(), ALGORITHMS.len() * SIZES.len() * THREADS.len(), "{csv}");
        for r in &t.rows {
            let th: usize = r[2].parse().unwrap_or(0);
            let want = if th > cores { OVERSUBSCRIBED } else { WITHIN };
            assert_eq!(t.col("placement").map(|i| r[i].as_str()), Some(want), "{r:?}");
            assert!(t.num(r, "hashes_per_s").is_some_and(|h| h > 0.0), "{r:?}");
        }
        // One and two threads are like-for-like wherever there are two cores.
        if cores >= 2 {
            assert!(t.rows.iter().filter(|r| r[2] == "2").all(|r| placement_of(&t, r) == WITHIN));
        }
        let report = std::fs::read_to_string(dir.path().join("report.md")).unwrap_or_default();
        assert!(report.contains(seeds::HASH_TIMER_LINE), "{report}");
        assert!(report.contains("| sha256 | 1048576 | 4 | 1316 | – | 2.0000 |"), "{report}");
        assert!(report.contains("SHA-256 against BLAKE3 by input size"), "{report}");
        let svg = std::fs::read_to_string(dir.path().join("hash.svg")).unwrap_or_default();
        assert!(svg.contains("seed 002 blake3"), "{svg}");
        if cores < 8 {
            assert!(svg.contains("oversubscribed"), "{svg}");
        }
    }
}
