//! Rate schedules: how many transactions are due by a time since the offer began, apart from
//! how they are sent.

use std::time::Duration;

/// How many transactions are due by a time.
pub trait Schedule {
    /// Transactions due by `elapsed` since the start (never more than [`Schedule::total`], and
    /// never fewer than at an earlier time).
    fn due(&self, elapsed: Duration) -> u64;

    /// Transactions the schedule offers in all.
    fn total(&self) -> u64;
}

/// A fixed rate: `tps` transactions per second until `total` have been due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedRate {
    /// Transactions per second.
    pub tps: u64,
    /// Transactions in all.
    pub total: u64,
}

impl Schedule for FixedRate {
    fn due(&self, elapsed: Duration) -> u64 {
        let due = elapsed.as_micros().saturating_mul(u128::from(self.tps)) / 1_000_000;
        u64::try_from(due).unwrap_or(u64::MAX).min(self.total)
    }

    fn total(&self) -> u64 {
        self.total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_rate_is_due_linearly_up_to_its_total() {
        let s = FixedRate { tps: 1000, total: 2500 };
        assert_eq!(s.due(Duration::ZERO), 0);
        assert_eq!(s.due(Duration::from_millis(100)), 100);
        assert_eq!(s.due(Duration::from_micros(1500)), 1, "rounded down");
        assert_eq!(s.due(Duration::from_millis(2499)), 2499);
        assert_eq!(s.due(Duration::from_secs(60)), 2500, "capped at the total");
        assert_eq!(s.due(Duration::MAX), 2500, "no overflow");
        let slow = FixedRate { tps: 3, total: 10 };
        assert_eq!(slow.due(Duration::from_millis(999)), 2);
        assert_eq!(slow.total(), 10);
    }
}
