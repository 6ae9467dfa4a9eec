//! One machine whose cores every simulated node shares ([`crate::WorkModel::SharedHost`]): the
//! regime of a network of node processes on one computer, where a node's work waits for the
//! others' as the kernel's scheduler shares the cores.
//!
//! The model is egalitarian processor sharing, as Linux's fair scheduler gives runnable
//! threads: a job runs `threads` threads; with `T` threads runnable in all on `K` cores, each
//! thread gets `min(1, K / T)` of a core, so a job progresses at `threads × min(1, K / T)`
//! cores. A job is a list of phases (the parallel part of a round on the node's verification
//! threads, then its serial part on one), each a number of core-nanoseconds. Jobs that start
//! together and cost the same end together, as node processes sharing two cores are seen to.
//!
//! Arithmetic is in integers (core-nanoseconds, µs), so a run is deterministic. The host keeps
//! one pending [`crate::world::Ev::CpuTick`] at the next end of a phase; a tick whose epoch is
//! stale (jobs came or went since it was scheduled) is ignored.
//!
//! Must not: lose a job (each added job ends exactly once, unless its node goes down), or
//! let a job progress faster than its threads or the host's cores allow.

use std::collections::{BTreeMap, VecDeque};

use crate::wire::NodeId;

/// A job that ended: whose it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ended {
    /// The node whose work it was.
    pub node: NodeId,
    /// The node's incarnation when the work started.
    pub incarnation: u64,
}

#[derive(Debug)]
struct Job {
    owner: Ended,
    /// Phases still to run: core-nanoseconds left, threads.
    phases: VecDeque<(u64, u64)>,
}

/// The shared machine.
#[derive(Debug)]
pub(crate) struct SharedCpu {
    cores: u64,
    jobs: BTreeMap<u64, Job>,
    next_job: u64,
    /// The time every job's progress is counted to, µs.
    last_us: u64,
    /// Changes whenever jobs come or go: ticks scheduled before are stale.
    pub epoch: u64,
    /// Core-nanoseconds of work run per node, so far.
    pub cpu_ns: BTreeMap<NodeId, u64>,
}

impl SharedCpu {
    /// A machine of `cores` cores (at least 1), idle.
    pub fn new(cores: u32) -> SharedCpu {
        SharedCpu {
            cores: u64::from(cores.max(1)),
            jobs: BTreeMap::new(),
            next_job: 0,
            last_us: 0,
            epoch: 0,
            cpu_ns: BTreeMap::new(),
        }
    }

    /// Threads runnable now, or the cores if fewer: the denominator of every job's share.
    fn share_base(&self) -> u64 {
        let t: u64 = self.jobs.values().filter_map(|j| j.phases.front().map(|p| p.1)).sum();
        t.max(self.cores)
    }

    /// Counts every job's progress up to `now_us`; returns the jobs that ended, in the order
    /// they were added.
    pub fn advance(&mut self, now_us: u64) -> Vec<Ended> {
        let dt = u128::from(now_us.saturating_sub(self.last_us));
        self.last_us = self.last_us.max(now_us);
        let base = u128::from(self.share_base());
        let cores = u128::from(self.cores);
        let mut ended = Vec::new();
        for (&key, job) in &mut self.jobs {
            let Some(phase) = job.phases.front_mut() else {
                ended.push(key);
                continue;
            };
            // Core-ns done: dt µs × 1,000 × threads × K / max(T, K).
            let done = dt * 1_000 * u128::from(phase.1) * cores / base;
            let done = u64::try_from(done).unwrap_or(u64::MAX).min(phase.0);
            phase.0 -= done;
            *self.cpu_ns.entry(job.owner.node).or_default() += done;
            if phase.0 == 0 {
                job.phases.pop_front();
                // Phases of no work end at once.
                while job.phases.front().is_some_and(|p| p.0 == 0) {
                    job.phases.pop_front();
                }
            }
            if job.phases.is_empty() {
                ended.push(key);
            }
        }
        if !ended.is_empty() {
            self.epoch += 1;
        }
        ended.into_iter().filter_map(|k| self.jobs.remove(&k)).map(|j| j.owner).collect()
    }

    /// Adds a job of `phases` (core-ns, threads) for `owner` at `now_us`, after counting the
    /// others' progress to now; returns the jobs that ended by now (to be handled by the
    /// caller as [`SharedCpu::advance`]'s).
    pub fn add(&mut self, now_us: u64, owner: Ended, phases: &[(u64, u32)]) -> Vec<Ended> {
        let ended = self.advance(now_us);
        let phases = phases.iter().filter(|p| p.0 > 0).map(|&(ns, t)| (ns, u64::from(t.max(1)))).collect();
        self.jobs.insert(self.next_job, Job { owner, phases });
        self.next_job += 1;
        self.epoch += 1;
        ended
    }

    /// Drops the jobs of `node` (it went down).
    pub fn forget(&mut self, now_us: u64, node: NodeId) -> Vec<Ended> {
        let ended = self.advance(now_us);
        let before = self.jobs.len();
        self.jobs.retain(|_, j| j.owner.node != node);
        if self.jobs.len() != before {
            self.epoch += 1;
        }
        ended.into_iter().filter(|e| e.node != node).collect()
    }

    /// When the next phase ends if no job comes or goes, µs; `None` when idle.
    pub fn next_end(&self) -> Option<u64> {
        let base = u128::from(self.share_base());
        let cores = u128::from(self.cores);
        self.jobs
            .values()
            .map(|j| match j.phases.front() {
                // A job with nothing left ends now.
                None => 0,
                Some(&(left, threads)) => {
                    let per_us = 1_000 * u128::from(threads) * cores;
                    // ceil(left × base / per_us): at that time at least `left` is done.
                    let us = (u128::from(left) * base).div_ceil(per_us);
                    u64::try_from(us).unwrap_or(u64::MAX)
                }
            })
            .min()
            .map(|us| self.last_us.saturating_add(us))
    }

    /// Jobs running or waiting.
    #[cfg(test)]
    pub fn jobs(&self) -> usize {
        self.jobs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(n: u32) -> Ended {
        Ended { node: NodeId(n), incarnation: 1 }
    }

    /// Runs the host to idle from `now`, returning (node, end time µs) in order of ending.
    fn drain(h: &mut SharedCpu) -> Vec<(u32, u64)> {
        let mut out = Vec::new();
        while let Some(at) = h.next_end() {
            for e in h.advance(at) {
                out.push((e.node.0, at));
            }
        }
        out
    }

    #[test]
    fn equal_jobs_on_one_core_end_together_at_twice_their_cost() {
        let mut h = SharedCpu::new(1);
        h.add(0, owner(1), &[(1_000_000, 1)]);
        h.add(0, owner(2), &[(1_000_000, 1)]);
        assert_eq!(drain(&mut h), vec![(1, 2_000), (2, 2_000)]);
        assert_eq!(h.jobs(), 0);
    }

    #[test]
    fn threads_share_the_cores_fairly() {
        // K = 2, a job of 2 threads and one of 1: T = 3, each thread 2/3 of a core; the first
        // runs at 4/3 cores, the second at 2/3.
        let mut h = SharedCpu::new(2);
        h.add(0, owner(1), &[(4_000_000, 2)]);
        h.add(0, owner(2), &[(4_000_000, 1)]);
        let ends = drain(&mut h);
        // Job 1: 4 ms of core at 4/3 → 3 ms. Then job 2 alone (1 thread, 1 core): it had done
        // 2/3 × 3 = 2 ms, 2 ms left → ends at 5 ms.
        assert_eq!(ends, vec![(1, 3_000), (2, 5_000)]);
        assert_eq!(h.cpu_ns[&NodeId(1)], 4_000_000);
        assert_eq!(h.cpu_ns[&NodeId(2)], 4_000_000);
    }

    #[test]
    fn a_job_alone_runs_at_its_threads_and_phases_follow_each_other() {
        let mut h = SharedCpu::new(4);
        // 2 ms of core on 2 threads (1 ms), then 1 ms serial (1 ms).
        h.add(10, owner(7), &[(2_000_000, 2), (1_000_000, 1)]);
        assert_eq!(drain(&mut h), vec![(7, 2_010)]);
    }

    #[test]
    fn a_job_added_later_slows_the_running_one() {
        let mut h = SharedCpu::new(1);
        h.add(0, owner(1), &[(2_000_000, 1)]);
        // At 1 ms, half done; a second job arrives: both at 1/2 core.
        let ended = h.add(1_000, owner(2), &[(1_000_000, 1)]);
        assert!(ended.is_empty());
        assert_eq!(drain(&mut h), vec![(1, 3_000), (2, 3_000)]);
    }

    #[test]
    fn jobs_of_no_work_end_at_once_and_forgotten_ones_never() {
        let mut h = SharedCpu::new(2);
        assert!(h.add(5, owner(1), &[(0, 2), (0, 1)]).is_empty());
        assert_eq!(h.next_end(), Some(5));
        // It ended by the time the next job comes.
        assert_eq!(h.add(5, owner(2), &[(1_000_000, 1)]), vec![owner(1)]);
        assert!(h.forget(5, NodeId(2)).is_empty());
        assert_eq!(h.jobs(), 0);
        assert_eq!(drain(&mut h), vec![]);
    }

    #[test]
    fn the_same_jobs_give_the_same_schedule() {
        let run = || {
            let mut h = SharedCpu::new(2);
            let mut out = Vec::new();
            for i in 0..20u32 {
                for e in h.add(u64::from(i) * 300, owner(i % 5), &[(u64::from(i + 1) * 170_000, 1 + i % 3)]) {
                    out.push((e.node.0, u64::from(i) * 300));
                }
            }
            out.extend(drain(&mut h));
            out
        };
        let a = run();
        assert_eq!(a.len(), 20);
        assert_eq!(a, run());
    }
}
