//! A Criterion measurement of the calling thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, through
//! rustix's safe `clock_gettime`), so that figures are per core even while other work shares
//! the machine.

use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use rustix::time::{clock_gettime, ClockId};

/// Thread CPU time in nanoseconds.
pub struct ThreadCpu;

static WALL: WallTime = WallTime;

fn now_ns() -> u64 {
    let t = clock_gettime(ClockId::ThreadCPUTime);
    (t.tv_sec as u64) * 1_000_000_000 + t.tv_nsec as u64
}

impl Measurement for ThreadCpu {
    type Intermediate = u64;
    type Value = u64;

    fn start(&self) -> u64 {
        now_ns()
    }

    fn end(&self, i: u64) -> u64 {
        now_ns().saturating_sub(i)
    }

    fn add(&self, v1: &u64, v2: &u64) -> u64 {
        v1 + v2
    }

    fn zero(&self) -> u64 {
        0
    }

    fn to_f64(&self, value: &u64) -> f64 {
        *value as f64
    }

    fn formatter(&self) -> &dyn ValueFormatter {
        WALL.formatter()
    }
}
