//! Rate schedules: how many transactions are due by a time since the offer began, given what
//! the offer has done so far, apart from how they are sent.
//!
//! [`Rate`] holds the load benchmark's rate controllers, with
//! Hyperledger Caliper's semantics: `fixed-rate`, `linear-rate`, `fixed-load`, `maximum-rate`,
//! `composite-rate` and `replay`; [`Bounded`] makes one a schedule of at most so many
//! transactions and so long. All are pure: time and feedback come in as [`Progress`], so a
//! test drives them on a virtual clock.

use std::sync::Arc;
use std::time::Duration;

/// What an offer has done when a schedule is asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Time since the offer began.
    pub elapsed: Duration,
    /// Transactions sent.
    pub offered: u64,
    /// Transactions in the blocks seen since the offer began (the feedback of `fixed-load`
    /// and `maximum-rate`).
    pub confirmed: u64,
    /// Transactions refused (or lost with a failed request).
    pub refused: u64,
}

impl Progress {
    /// Sent and neither confirmed nor refused yet: the backlog.
    pub fn unfinished(&self) -> u64 {
        self.offered.saturating_sub(self.confirmed.saturating_add(self.refused))
    }

    /// This progress since `base` (what a part of a composite sees).
    fn since(&self, base: &Progress) -> Progress {
        Progress {
            elapsed: self.elapsed.saturating_sub(base.elapsed),
            offered: self.offered.saturating_sub(base.offered),
            confirmed: self.confirmed.saturating_sub(base.confirmed),
            refused: self.refused.saturating_sub(base.refused),
        }
    }
}

/// How many transactions are due.
pub trait Schedule {
    /// Transactions due by now (never more than [`Schedule::total`]); fewer than were offered
    /// means none is due.
    fn due(&mut self, p: &Progress) -> u64;

    /// Transactions the schedule offers at most.
    fn total(&self) -> u64;

    /// When the offer ends, if before the total is offered.
    fn ends(&self) -> Option<Duration> {
        None
    }
}

/// A fixed rate in whole transactions per second, until `total` have been due: an exact
/// schedule for the offer's tests (every load runs a [`Bounded`] [`Rate`]).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FixedRate {
    /// Transactions per second.
    pub tps: u64,
    /// Transactions in all.
    pub total: u64,
}

#[cfg(test)]
impl Schedule for FixedRate {
    fn due(&mut self, p: &Progress) -> u64 {
        let due = p.elapsed.as_micros().saturating_mul(u128::from(self.tps)) / 1_000_000;
        u64::try_from(due).unwrap_or(u64::MAX).min(self.total)
    }

    fn total(&self) -> u64 {
        self.total
    }
}

/// How long a round lasts: a time, or a number of transactions.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Length {
    /// So long.
    Time(Duration),
    /// So many transactions.
    Txs(u64),
}

/// One part of a `composite-rate`: its controller, and where in the round it ends (a fraction
/// of the round's length, the last one 1).
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// The controller.
    pub rate: Rate,
    /// The fraction of the round's length at which the part ends.
    pub until: f64,
}

/// A rate controller (unbounded: [`Bounded`] gives it a total and an end).
#[derive(Clone, Debug, PartialEq)]
pub enum Rate {
    /// `fixed-rate`: `tps` transactions per second.
    Fixed {
        /// Transactions per second.
        tps: f64,
    },
    /// `linear-rate`: the rate goes from `start` to `finish` over the round's length — in time,
    /// or, for a round of so many transactions, along the transactions (Caliper's
    /// interpolation by transaction index).
    Linear {
        /// Rate at the start.
        start: f64,
        /// Rate at the end.
        finish: f64,
        /// The round's length.
        over: Length,
    },
    /// `fixed-load`: keeps `backlog` transactions sent but not yet confirmed (or refused) —
    /// whatever rate that takes; the throughput it reaches is the most the network sustains.
    FixedLoad {
        /// Unfinished transactions to keep.
        backlog: u64,
    },
    /// `maximum-rate`: starts at `tps`; every `interval` it compares the confirmed throughput
    /// of the interval with the one before: not lower, the rate goes up by `step`; lower, it
    /// goes down by `step` (never below `step`).
    Maximum(Maximum),
    /// `composite-rate`: parts one after another, each over its share of the round.
    Composite(Composite),
    /// `replay`: transaction `i` at offset `offsets[i]` from the start (a recorded schedule).
    Replay {
        /// The offsets, non-decreasing.
        offsets: Arc<[Duration]>,
    },
}

/// The state of a `maximum-rate` controller.
#[derive(Clone, Debug, PartialEq)]
pub struct Maximum {
    /// The rate now.
    pub tps: f64,
    /// The step.
    pub step: f64,
    /// The interval between two decisions.
    pub interval: Duration,
    /// Due at the last change of rate, and when.
    base: (f64, Duration),
    /// Confirmed at the last decision, and the throughput of the interval before it.
    last: (u64, Option<f64>),
}

impl Maximum {
    /// A controller starting at `tps`.
    pub fn new(tps: f64, step: f64, interval: Duration) -> Maximum {
        Maximum { tps, step, interval, base: (0.0, Duration::ZERO), last: (0, None) }
    }

    fn due(&mut self, p: &Progress) -> f64 {
        let interval = self.interval.max(Duration::from_millis(1));
        // Every decision point passed since the last one, in order.
        while p.elapsed >= self.base.1 + interval {
            let at = self.base.1 + interval;
            let due_then = self.base.0 + self.tps * interval.as_secs_f64();
            let tput = p.confirmed.saturating_sub(self.last.0) as f64 / interval.as_secs_f64();
            let rising = self.last.1.is_none_or(|before| tput >= before);
            self.tps = if rising { self.tps + self.step } else { (self.tps - self.step).max(self.step) };
            self.base = (due_then, at);
            self.last = (p.confirmed, Some(tput));
        }
        self.base.0 + self.tps * p.elapsed.saturating_sub(self.base.1).as_secs_f64()
    }
}

/// The state of a `composite-rate` controller.
#[derive(Clone, Debug, PartialEq)]
pub struct Composite {
    parts: Vec<Part>,
    over: Length,
    /// The part running, and the progress when it began.
    at: usize,
    base: Progress,
    /// Due when the running part began.
    base_due: f64,
}

impl Composite {
    /// Parts over a round of length `over`.
    pub fn new(parts: Vec<Part>, over: Length) -> Composite {
        Composite { parts, over, at: 0, base: Progress::default(), base_due: 0.0 }
    }

    /// Has the part `i` run its share?
    fn ended(&self, i: usize, p: &Progress) -> bool {
        let Some(part) = self.parts.get(i) else { return false };
        if i + 1 == self.parts.len() {
            return false;
        }
        match self.over {
            Length::Time(d) => p.elapsed.as_secs_f64() >= d.as_secs_f64() * part.until,
            Length::Txs(n) => p.offered as f64 >= n as f64 * part.until,
        }
    }

    fn due(&mut self, p: &Progress) -> f64 {
        while self.ended(self.at, p) {
            self.base_due = p.offered as f64;
            self.base = *p;
            self.at += 1;
        }
        let local = p.since(&self.base);
        match self.parts.get_mut(self.at) {
            Some(part) => self.base_due + part.rate.due(&local),
            None => self.base_due,
        }
    }
}

impl Rate {
    /// Transactions due (fractional, unbounded).
    pub fn due(&mut self, p: &Progress) -> f64 {
        let t = p.elapsed.as_secs_f64();
        match self {
            Rate::Fixed { tps } => *tps * t,
            Rate::Linear { start, finish, over: Length::Time(d) } => {
                let len = d.as_secs_f64().max(1e-9);
                let t = t.min(len);
                *start * t + (*finish - *start) * t * t / (2.0 * len)
            }
            Rate::Linear { start, finish, over: Length::Txs(n) } => {
                // d(due)/dt = start + (finish - start) * due / n.
                let b = (*finish - *start) / (*n).max(1) as f64;
                if b.abs() < 1e-12 {
                    *start * t
                } else {
                    *start / b * ((b * t).exp_m1())
                }
            }
            Rate::FixedLoad { backlog } => (p.offered + backlog.saturating_sub(p.unfinished())) as f64,
            Rate::Maximum(m) => m.due(p),
            Rate::Composite(c) => c.due(p),
            Rate::Replay { offsets } => offsets.partition_point(|o| *o <= p.elapsed) as f64,
        }
    }

    /// The rate now, in transactions per second (for progress lines; `None` for `fixed-load`
    /// and `replay`, which have none of their own).
    pub fn tps(&self, p: &Progress) -> Option<f64> {
        match self {
            Rate::Fixed { tps } => Some(*tps),
            Rate::Linear { start, finish, over } => {
                let f = match over {
                    Length::Time(d) => p.elapsed.as_secs_f64() / d.as_secs_f64().max(1e-9),
                    Length::Txs(n) => p.offered as f64 / (*n).max(1) as f64,
                };
                Some(*start + (*finish - *start) * f.clamp(0.0, 1.0))
            }
            Rate::Maximum(m) => Some(m.tps),
            Rate::Composite(c) => c.parts.get(c.at).and_then(|part| part.rate.tps(&p.since(&c.base))),
            Rate::FixedLoad { .. } | Rate::Replay { .. } => None,
        }
    }
}

/// A controller as a schedule: at most `total` transactions, until `end` if set.
#[derive(Clone, Debug, PartialEq)]
pub struct Bounded {
    /// The controller.
    pub rate: Rate,
    /// Transactions at most.
    pub total: u64,
    /// When the offer ends.
    pub end: Option<Duration>,
}

impl Schedule for Bounded {
    fn due(&mut self, p: &Progress) -> u64 {
        let due = self.rate.due(p);
        if due.is_finite() && due > 0.0 {
            (due.floor().min(u64::MAX as f64) as u64).min(self.total)
        } else {
            0
        }
    }

    fn total(&self) -> u64 {
        self.total
    }

    fn ends(&self) -> Option<Duration> {
        self.end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Progress {
        Progress { elapsed: Duration::from_millis(ms), ..Progress::default() }
    }

    #[test]
    fn a_fixed_rate_is_due_linearly_up_to_its_total() {
        let mut s = FixedRate { tps: 1000, total: 2500 };
        assert_eq!(s.due(&at(0)), 0);
        assert_eq!(s.due(&at(100)), 100);
        assert_eq!(s.due(&Progress { elapsed: Duration::from_micros(1500), ..at(0) }), 1, "rounded down");
        assert_eq!(s.due(&at(2499)), 2499);
        assert_eq!(s.due(&at(60_000)), 2500, "capped at the total");
        assert_eq!(s.due(&Progress { elapsed: Duration::MAX, ..at(0) }), 2500, "no overflow");
        let mut slow = FixedRate { tps: 3, total: 10 };
        assert_eq!(slow.due(&at(999)), 2);
        assert_eq!(slow.total(), 10);
    }

    fn bounded(rate: Rate, total: u64) -> Bounded {
        Bounded { rate, total, end: None }
    }

    #[test]
    fn fixed_rate_controllers_take_fractional_rates_and_stop_at_their_total() {
        let mut s = bounded(Rate::Fixed { tps: 2.5 }, 100);
        assert_eq!(s.due(&at(999)), 2);
        assert_eq!(s.due(&at(4000)), 10);
        assert_eq!(s.due(&at(1_000_000)), 100);
        let mut z = bounded(Rate::Fixed { tps: 0.0 }, 100);
        assert_eq!(z.due(&at(5000)), 0);
    }

    #[test]
    fn a_linear_rate_in_time_integrates_its_ramp() {
        // 100 → 300 tx/s over 10 s: 2,000 in all, 100·t + 10·t² by t.
        let over = Length::Time(Duration::from_secs(10));
        let mut s = bounded(Rate::Linear { start: 100.0, finish: 300.0, over }, 10_000);
        assert_eq!(s.due(&at(0)), 0);
        assert_eq!(s.due(&at(1000)), 110);
        assert_eq!(s.due(&at(5000)), 750);
        assert_eq!(s.due(&at(10_000)), 2000);
        assert_eq!(s.due(&at(20_000)), 2000, "nothing past the round's length");
        let r = Rate::Linear { start: 100.0, finish: 300.0, over };
        assert_eq!(r.tps(&at(5000)), Some(200.0));
        // Ramping down is the mirror image.
        let mut d = bounded(Rate::Linear { start: 300.0, finish: 100.0, over }, 10_000);
        assert_eq!(d.due(&at(10_000)), 2000);
        assert_eq!(d.due(&at(1000)), 290);
    }

    #[test]
    fn a_linear_rate_over_transactions_reaches_its_finish_rate_at_the_last_one() {
        // 100 → 300 tx/s along 1,000 transactions: the rate grows with each one sent.
        let over = Length::Txs(1000);
        let mut r = Rate::Linear { start: 100.0, finish: 300.0, over };
        // due(t) = 500 (e^{0.2 t} − 1): 1,000 due at t = ln 3 / 0.2 ≈ 5.493 s.
        let t = (3f64.ln() / 0.2 * 1000.0) as u64;
        let due = r.due(&at(t));
        assert!((due - 1000.0).abs() < 1.0, "{due}");
        // The slope at that moment is the finish rate.
        let slope = (r.due(&at(t + 1)) - due) * 1000.0;
        assert!((slope - 300.0).abs() < 1.0, "{slope}");
        let mut flat = Rate::Linear { start: 50.0, finish: 50.0, over };
        assert_eq!(flat.due(&at(2000)), 100.0);
        assert_eq!(r.tps(&Progress { offered: 500, ..at(0) }), Some(200.0));
    }

    #[test]
    fn a_fixed_load_tops_the_backlog_up_to_its_size_and_no_further() {
        let mut s = bounded(Rate::FixedLoad { backlog: 500 }, 10_000);
        assert_eq!(s.due(&at(0)), 500, "the whole backlog at once");
        let p = Progress { elapsed: Duration::from_secs(1), offered: 500, confirmed: 0, refused: 0 };
        assert_eq!(s.due(&p), 500, "a full backlog: nothing more");
        let p = Progress { offered: 500, confirmed: 120, refused: 30, ..p };
        assert_eq!(s.due(&p), 650, "150 finished, 150 more");
        let p = Progress { offered: 650, confirmed: 900, refused: 0, ..p };
        assert_eq!(s.due(&p), 1150, "more confirmed than sent (other traffic): the full backlog");
        assert_eq!(s.due(&Progress { offered: 9_900, confirmed: 9_800, ..p }), 10_000, "capped at the total");
        assert_eq!(Rate::FixedLoad { backlog: 1 }.tps(&p), None);
    }

    #[test]
    fn a_maximum_rate_steps_up_while_throughput_rises_and_back_when_it_falls() {
        let mut m = Rate::Maximum(Maximum::new(100.0, 50.0, Duration::from_secs(1)));
        let p = |ms: u64, confirmed: u64| Progress { elapsed: Duration::from_millis(ms), confirmed, ..at(0) };
        assert_eq!(m.due(&p(500, 0)), 50.0);
        // First second: 100 confirmed; no earlier interval, so up to 150.
        assert_eq!(m.due(&p(1000, 100)), 100.0);
        assert_eq!(m.tps(&p(1000, 100)), Some(150.0));
        assert_eq!(m.due(&p(1500, 150)), 175.0);
        // Second second: 140 confirmed (≥ 100): up to 200.
        assert_eq!(m.due(&p(2000, 240)), 250.0);
        assert_eq!(m.tps(&p(2000, 240)), Some(200.0));
        // Third: 100 confirmed (< 140): down to 150.
        assert_eq!(m.due(&p(3000, 340)), 450.0);
        assert_eq!(m.tps(&p(3000, 340)), Some(150.0));
        // A late look takes each decision point in turn: two flat intervals (0 ≥ 0 after the
        // first fall) — down to 100, then up to 150.
        let due = m.due(&p(5000, 340));
        assert_eq!(due, 450.0 + 100.0 + 150.0);
        assert_eq!(m.tps(&p(5000, 340)), Some(150.0));
        // Never below one step.
        let mut low = Rate::Maximum(Maximum::new(10.0, 25.0, Duration::from_secs(1)));
        low.due(&p(1000, 100));
        assert_eq!(low.tps(&p(1000, 100)), Some(35.0));
        low.due(&p(2000, 100));
        assert_eq!(low.tps(&p(2000, 100)), Some(25.0), "35 − 25 = 10 is below the step");
    }

    #[test]
    fn a_composite_runs_its_parts_one_after_another_each_from_its_own_start() {
        // 10 s: 100 tx/s for the first 40 %, then a ramp 0 → 200 tx/s for the rest.
        let over = Length::Time(Duration::from_secs(10));
        let parts = vec![
            Part { rate: Rate::Fixed { tps: 100.0 }, until: 0.4 },
            Part {
                rate: Rate::Linear { start: 0.0, finish: 200.0, over: Length::Time(Duration::from_secs(6)) },
                until: 1.0,
            },
        ];
        let mut c = Rate::Composite(Composite::new(parts, over));
        let p = |ms: u64, offered: u64| Progress { elapsed: Duration::from_millis(ms), offered, ..at(0) };
        assert_eq!(c.due(&p(2000, 0)), 200.0);
        assert_eq!(c.tps(&p(2000, 200)), Some(100.0));
        assert_eq!(c.due(&p(4000, 400)), 400.0, "the second part starts from what was sent");
        assert_eq!(c.due(&p(7000, 400)), 400.0 + 100.0 * 3.0 * 3.0 / 6.0);
        assert_eq!(c.tps(&p(7000, 550)), Some(100.0));
        assert_eq!(c.due(&p(10_000, 550)), 400.0 + 600.0);
        // Over transactions: the switch comes with the count sent.
        let parts = vec![
            Part { rate: Rate::Fixed { tps: 10.0 }, until: 0.5 },
            Part { rate: Rate::Fixed { tps: 1000.0 }, until: 1.0 },
        ];
        let mut c = Rate::Composite(Composite::new(parts, Length::Txs(100)));
        assert_eq!(c.due(&p(4000, 40)), 40.0);
        assert_eq!(c.due(&p(5000, 50)), 50.0, "switched at 50 sent");
        assert_eq!(c.due(&p(5050, 50)), 100.0);
    }

    #[test]
    fn a_replay_is_due_as_its_offsets_pass() {
        let offsets: Arc<[Duration]> =
            [0, 10, 10, 250, 1000].iter().map(|&ms| Duration::from_millis(ms)).collect();
        let mut s = bounded(Rate::Replay { offsets }, 5);
        assert_eq!(s.due(&at(0)), 1);
        assert_eq!(s.due(&at(9)), 1);
        assert_eq!(s.due(&at(10)), 3);
        assert_eq!(s.due(&at(999)), 4);
        assert_eq!(s.due(&at(5000)), 5);
    }

    #[test]
    fn a_bounded_schedule_reports_its_end_and_never_exceeds_its_total() {
        let end = Some(Duration::from_secs(3));
        let mut s = Bounded { rate: Rate::Fixed { tps: 1e30 }, total: 7, end };
        assert_eq!(s.due(&at(1)), 7);
        assert_eq!(s.ends(), end);
        let mut nan = Bounded { rate: Rate::Fixed { tps: f64::NAN }, total: 7, end: None };
        assert_eq!(nan.due(&at(1000)), 0);
    }
}
