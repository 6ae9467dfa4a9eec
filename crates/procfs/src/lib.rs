//! The project's `/proc` reader (Linux): the node's process metrics, the lab's CPU and memory
//! accounting of the processes it launched, the pipeline study and the mempool's admission
//! benchmark read `/proc` through it, the same way.
//!
//! - [`stat_fields`] and [`cpu_seconds`]: the fields of a `/proc/<pid>/stat` text and the user +
//!   system CPU time it reports, in clock ticks;
//! - [`threads_cpu_seconds`]: for spans shorter than a clock tick, the sum of the threads'
//!   `schedstat` instead, to the nanosecond;
//! - [`resident_bytes`]: the resident set in a `/proc/<pid>/status` text (its `VmRSS` line);
//! - [`machine_ticks`]: the whole machine's busy and total clock ticks in a `/proc/stat` text,
//!   so a measurement can say how busy the machine was besides what it measured.
//!
//! The parsers take the file's text and never read it themselves, so tests hand them any text;
//! only [`threads_cpu_seconds`] reads `/proc`. Nothing here depends on another crate of the
//! project: the node depends on this crate and must not depend on the lab.

/// The fields of a `/proc/<pid>/stat` text after the command name (which may hold spaces and
/// parentheses: it ends at the last `)`). Index 0 is `state`, proc(5)'s field 3, so proc(5)'s
/// field `k` is index `k − 3`.
pub fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let rest = stat.get(stat.rfind(')')? + 1..)?;
    Some(rest.split_whitespace().collect())
}

/// User + system CPU seconds in a `/proc/<pid>/stat` text (proc(5) fields 14 and 15), at
/// `ticks` clock ticks per second; `None` if it does not parse.
pub fn cpu_seconds(stat: &str, ticks: u64) -> Option<f64> {
    let f = stat_fields(stat)?;
    let used = f.get(11)?.parse::<u64>().ok()?.checked_add(f.get(12)?.parse::<u64>().ok()?)?;
    (ticks > 0).then(|| used as f64 / ticks as f64)
}

/// CPU seconds of process `pid` (`self` for this one) to the nanosecond: the sum over its
/// threads of the time on a CPU that `/proc/<pid>/task/<tid>/schedstat` reports first (the
/// clock-tick counts of `/proc/<pid>/stat` are too coarse for a request of a millisecond).
/// Threads that ended are not counted; 0 where `/proc` does not say.
pub fn threads_cpu_seconds(pid: &str) -> f64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else { return 0.0 };
    let ns: u64 = tasks
        .filter_map(|t| {
            let text = std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok()?;
            text.split_whitespace().next()?.parse::<u64>().ok()
        })
        .fold(0u64, u64::saturating_add);
    ns as f64 / 1e9
}

/// The resident bytes in the text of a `/proc/<pid>/status` file (its `VmRSS` line, in kB);
/// `None` if it has none or it does not parse.
pub fn resident_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.trim_start_matches("VmRSS:").trim().trim_end_matches("kB").trim().parse().ok()?;
    kb.checked_mul(1024)
}

/// The machine's (busy, total) clock ticks since boot, summed over its CPUs, from the text of
/// `/proc/stat` (its `cpu ` line: busy is everything but `idle` and `iowait`); `None` if it
/// has no such line or it does not parse.
pub fn machine_ticks(stat: &str) -> Option<(u64, u64)> {
    let line = stat.lines().find(|l| l.starts_with("cpu "))?;
    let f: Vec<u64> = line.split_whitespace().skip(1).map(|v| v.parse().ok()).collect::<Option<_>>()?;
    // user nice system idle iowait irq softirq steal [guest guest_nice: inside user and nice]
    let all: u64 = f.iter().take(8).fold(0u64, |a, v| a.saturating_add(*v));
    let idle = f.get(3)?.saturating_add(*f.get(4)?);
    Some((all.saturating_sub(idle), all))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn machine_ticks_leave_out_idle_and_iowait() {
        let stat = "cpu  100 5 50 800 40 3 2 0 0 0\ncpu0 50 2 25 400 20 1 1 0 0 0\nintr 1\n";
        assert_eq!(machine_ticks(stat), Some((160, 1_000)));
        assert_eq!(machine_ticks("cpu0 1 2 3 4 5\n"), None);
        assert_eq!(machine_ticks("cpu  1 x 3 4 5 6 7 8\n"), None);
        assert_eq!(machine_ticks("cpu  1 2 3\n"), None);
    }

    #[test]
    fn threads_cpu_time_counts_a_busy_thread() {
        // Busy until the process's clock-tick accounting (`/proc/self/stat`) has counted 60 ms
        // more CPU: on loaded cores that takes longer than 60 ms of wall time (a minute at most).
        let ticks = rustix::param::clock_ticks_per_second();
        let stat_seconds = || {
            let text = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
            cpu_seconds(&text, ticks).unwrap_or_else(|| panic!("/proc/self/stat: {text:?}"))
        };
        let before = threads_cpu_seconds("self");
        let start = stat_seconds();
        let t = Instant::now();
        let mut x = 1u64;
        while stat_seconds() - start < 0.06 && t.elapsed() < Duration::from_secs(60) {
            for _ in 0..10_000 {
                x = std::hint::black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1));
            }
        }
        let used = threads_cpu_seconds("self") - before;
        // Other tests share the process: at least half of the busy CPU time, and some of it
        // finer than a clock tick.
        assert!(used >= 0.03, "{used}");
        assert!(threads_cpu_seconds("no-such-process") == 0.0);
    }

    #[test]
    fn a_command_name_with_spaces_and_parentheses_does_not_shift_the_fields() {
        assert_eq!(stat_fields("42 (a (b) c) S 1 2 3").unwrap(), ["S", "1", "2", "3"]);
        assert_eq!(stat_fields("no parenthesis"), None);
        let stat = "7 (x) S 1 1 1 0 -1 0 0 0 0 0 250 50 0 0";
        assert_eq!(cpu_seconds(stat, 100), Some(3.0));
    }

    #[test]
    fn resident_memory_comes_from_the_vmrss_line() {
        assert_eq!(resident_bytes("Name:\tx\nVmRSS:\t   2048 kB\nThreads: 3\n"), Some(2 << 20));
        assert_eq!(resident_bytes("Name:\tx\n"), None);
    }
}
