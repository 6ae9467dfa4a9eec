//! End-to-end rounds through the load benchmark on a devnet of node processes on this machine
//! (3 peers and a miner, the load round-robin over the peers): the harness `load`, `backend`,
//! `signatures`, `contention`, `sync` and `cpu` share. A [`Setting`] says what the nodes run
//! with (the chain and the study-only switches); [`run_groups`] starts such a devnet, runs
//! groups of rounds on it and stops it, also after a failure or Ctrl-C; [`run_watched`] does so
//! on a devnet of another shape ([`Devnet`]) and tells a [`Watch`] where the rounds are.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use scalechain_client::Client;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::Params;
use scalechain_lab::bench::metrics::RoundResult;
use scalechain_lab::bench::run::{self, Env, RoundEdge};
use scalechain_lab::bench::spec::{Benchmark, Network, Round};
use scalechain_lab::launcher::{LaunchError, Launcher, NetworkPlan, Role};
use scalechain_lab::load::converge::wait_connected;
use scalechain_lab::load::{LoadError, SystemClock};
use scalechain_types::HashKind;

use crate::{Ctx, StudyError};

/// Peers of the devnet (the load goes to them).
pub const PEERS: usize = 3;
/// Miners of the devnet.
pub const MINERS: usize = 1;

/// What the devnet's nodes run with: the devnet chain (SHA-256, Ed25519) unless a setting
/// changes it, and the node's defaults unless a study-only switch is on. Each changed setting
/// is one key of the node's configuration file (`docs/STUDY.md` names them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Setting {
    /// `chain.target_block_ms` (another chain): the miner's pace.
    pub target_block_ms: Option<u64>,
    /// `chain.skip_signatures` (another chain, declaring it in its genesis).
    pub skip_signatures: bool,
    /// `mempool.single_lock`: readers of the pool take the writers' lock.
    pub single_lock: bool,
    /// `mempool.execute_ms`: each admission round executes this long (0: not at all).
    pub execute_ms: u64,
    /// `mempool.execute_under_lock`: the execution runs under the chain's read lock.
    pub execute_under_lock: bool,
    /// `arrivals.capacity`: the arrival log's length (`None`: the node's default), so that the
    /// blocks of every round are still in it when the study reads it.
    pub arrivals: Option<usize>,
}

impl Setting {
    /// The node configuration file every node starts with (`None`: the defaults).
    pub fn config(&self) -> Option<String> {
        let mut chain = String::new();
        if let Some(ms) = self.target_block_ms {
            let _ = writeln!(chain, "target_block_ms = {ms}");
        }
        if self.skip_signatures {
            chain.push_str("skip_signatures = true\n");
        }
        let mut s = String::new();
        if !chain.is_empty() {
            let _ = write!(s, "[chain]\n{chain}");
        }
        let mut mempool = String::new();
        if self.single_lock {
            mempool.push_str("single_lock = true\n");
        }
        if self.execute_ms > 0 {
            let _ = writeln!(mempool, "execute_ms = {}", self.execute_ms);
        }
        if self.execute_under_lock {
            mempool.push_str("execute_under_lock = true\n");
        }
        if !mempool.is_empty() {
            let _ = write!(s, "[mempool]\n{mempool}");
        }
        if let Some(n) = self.arrivals {
            let _ = write!(s, "[arrivals]\ncapacity = {n}\n");
        }
        (!s.is_empty()).then_some(s)
    }

    /// The chain those nodes make (what the load signs for).
    pub fn params(&self) -> Params {
        let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        if let Some(ms) = self.target_block_ms {
            p.target_block_ms = ms;
        }
        p.skip_signatures = self.skip_signatures;
        p
    }
}

/// The `scalechain` binary the nodes run (`Opts::worker`).
pub fn node_binary(ctx: &Ctx, what: &str) -> Result<PathBuf, StudyError> {
    ctx.opts.worker.clone().ok_or_else(|| {
        StudyError::Wrong(format!("{what} runs node processes: it needs the scalechain binary"))
    })
}

fn launch_err(e: LaunchError) -> StudyError {
    StudyError::Wrong(format!("starting the devnet: {e}"))
}

/// A failure of the load, as the study reports it.
pub fn load_err(e: LoadError) -> StudyError {
    StudyError::Wrong(format!("the load: {e}"))
}

/// Starts a devnet of `exe` in `setting`, waits until its nodes are connected (one progress
/// step), then runs each group of rounds as one benchmark, prepared just before it runs from
/// the premine keys' coins as the previous group left them (so no more than one group's
/// transactions are held at once), and hands every round's result to `each` with the group's
/// label and the round's index in it (one progress step each). The devnet stops at the end,
/// after a failure, and on Ctrl-C (which ends the round running and fails the run).
pub fn run_groups(
    ctx: &Ctx,
    exe: &Path,
    setting: &Setting,
    groups: &[(String, Vec<Round>)],
    each: impl FnMut(&str, usize, &Round, &RoundResult),
) -> Result<(), StudyError> {
    run_groups_then(ctx, exe, setting, groups, each, |_, _| Ok(()))
}

/// [`run_groups`], then `after` with the devnet still up (to start more nodes on it) and the
/// runtime the rounds ran on; the devnet stops after it, as after the rounds.
pub fn run_groups_then(
    ctx: &Ctx,
    exe: &Path,
    setting: &Setting,
    groups: &[(String, Vec<Round>)],
    each: impl FnMut(&str, usize, &Round, &RoundResult),
    after: impl FnOnce(&mut Launcher, &tokio::runtime::Runtime) -> Result<(), StudyError>,
) -> Result<(), StudyError> {
    run_devnet(ctx, exe, setting, Devnet::STUDY, groups, each, &mut Unwatched, after)
}

/// The nodes of a devnet besides its bootstrap node: `peers` take the load, `miners` make the
/// blocks (one mining thread each).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Devnet {
    /// Peers (`peer0`, …).
    pub peers: usize,
    /// Miners (`miner0`, …).
    pub miners: usize,
}

impl Devnet {
    /// The devnet most end-to-end experiments run: [`PEERS`] peers and [`MINERS`] miner.
    pub const STUDY: Devnet = Devnet { peers: PEERS, miners: MINERS };
}

/// What an experiment does around a devnet's rounds besides running them (a profiler started
/// and stopped with each round); every method does nothing unless implemented.
pub trait Watch: Send {
    /// Once the devnet's nodes are connected, before the first group is prepared.
    fn begin(&mut self, _net: &Launcher, _rt: &tokio::runtime::Runtime) -> Result<(), StudyError> {
        Ok(())
    }

    /// Just before round `i` of group `label` starts its offer (its funding confirmed), and
    /// just after its drain ended or it failed. A failure here is kept by the watcher and
    /// reported from [`Watch::end`].
    fn round(&mut self, _label: &str, _i: usize, _edge: RoundEdge) {}

    /// After the last group, with the devnet still up; also after a failure of the rounds (whose
    /// error is then the one reported).
    fn end(&mut self, _net: &mut Launcher, _rt: &tokio::runtime::Runtime) -> Result<(), StudyError> {
        Ok(())
    }
}

/// The watcher that watches nothing.
struct Unwatched;

impl Watch for Unwatched {}

/// [`run_groups`] on a devnet of the shape `devnet`, with `watch` told where the rounds are.
pub fn run_watched(
    ctx: &Ctx,
    exe: &Path,
    setting: &Setting,
    devnet: Devnet,
    groups: &[(String, Vec<Round>)],
    each: impl FnMut(&str, usize, &Round, &RoundResult),
    watch: &mut dyn Watch,
) -> Result<(), StudyError> {
    run_devnet(ctx, exe, setting, devnet, groups, each, watch, |_, _| Ok(()))
}

#[allow(clippy::too_many_arguments)]
fn run_devnet(
    ctx: &Ctx,
    exe: &Path,
    setting: &Setting,
    devnet: Devnet,
    groups: &[(String, Vec<Round>)],
    mut each: impl FnMut(&str, usize, &Round, &RoundResult),
    watch: &mut dyn Watch,
    after: impl FnOnce(&mut Launcher, &tokio::runtime::Runtime) -> Result<(), StudyError>,
) -> Result<(), StudyError> {
    let config = setting.config();
    let params = setting.params();
    let mut net = Launcher::new(exe).map_err(launch_err)?;
    let plan =
        NetworkPlan { peers: devnet.peers, miners: devnet.miners, miner_threads: 1, config: config.clone() };
    if let Err(e) = net.start_network(&plan) {
        let _ = net.stop();
        return Err(launch_err(e));
    }
    let all: Vec<(String, Client)> = net.clients(|r| r != Role::Bootstrap);
    let peers: Vec<(String, Client)> = net.clients(|r| r == Role::Peer);
    let pids = net.pids();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            let _ = net.stop();
            return Err(StudyError::Wrong(format!("runtime: {e}")));
        }
    };
    let measured = (|| {
        let env =
            Env { targets: &peers, pids: &pids, params: &params, sig: SigMode::Ed25519, counters: None };
        let stop: &AtomicBool = scalechain_lab::interrupt::flag();
        let progress = &ctx.progress;
        let clock = SystemClock::start();
        rt.block_on(wait_connected(
            &all,
            2,
            Duration::from_secs(30),
            Duration::from_millis(100),
            &clock,
            stop,
        ))
        .map_err(load_err)?;
        progress.inc(1);
        watch.begin(&net, &rt)?;
        for (label, rounds) in groups {
            let bench = Benchmark {
                name: format!("study {label}"),
                network: Network {
                    peers: devnet.peers,
                    miners: devnet.miners,
                    miner_threads: 1,
                    node_config: None,
                },
                rounds: rounds.clone(),
            };
            progress.set_message(format!("signing {}", rounds.first().map_or("", |r| r.name.as_str())));
            // Read again for each group: the groups before spent coins (the nodes keep the
            // owner index).
            let funds = rt.block_on(run::funds(&env, false)).map_err(load_err)?;
            let prepared = run::prepare(&bench, &env, &funds).map_err(load_err)?;
            let log = |line: String| {
                // One line per round's end; the progress lines a second go to the bar.
                if line.contains(" sent ") && line.contains(" confirmed at ") {
                    progress.inc(1);
                    progress.println(line);
                } else {
                    progress.set_message(line);
                }
            };
            let mut on_round = |i: usize, edge: RoundEdge| watch.round(label, i, edge);
            let outcome = rt
                .block_on(run::run_watched(&bench, &env, prepared, stop, &log, &mut on_round))
                .map_err(load_err)?;
            if outcome.stopped {
                return Err(StudyError::Wrong("interrupted".into()));
            }
            if outcome.rounds.len() != rounds.len() {
                return Err(StudyError::Wrong(format!(
                    "{label}: {} of {} rounds ran",
                    outcome.rounds.len(),
                    rounds.len()
                )));
            }
            for (i, (round, r)) in rounds.iter().zip(&outcome.rounds).enumerate() {
                each(label, i, round, r);
            }
        }
        Ok(())
    })();
    // The watcher ends (a profiler it started is stopped) whether or not the rounds succeeded.
    let watched = watch.end(&mut net, &rt);
    let measured = measured.and(watched).and_then(|()| after(&mut net, &rt));
    if measured.is_err() {
        // The nodes' logs say why; they go with the temporary directory unless it is kept.
        let kept = net.keep();
        ctx.progress
            .println(format!("the devnet's data directories and logs are kept in {}", kept.display()));
    }
    if let Err(e) = net.stop() {
        ctx.progress.println(format!("stopping the devnet: {e}"));
    }
    measured
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_is_its_configuration_and_its_chain() {
        let d = Setting::default();
        assert_eq!(d.config(), None);
        assert_eq!(d.params(), Params::devnet(HashKind::Sha256, SigMode::Ed25519));
        let s = Setting {
            target_block_ms: Some(200),
            skip_signatures: true,
            single_lock: true,
            execute_ms: 50,
            execute_under_lock: true,
            arrivals: Some(300_000),
        };
        assert_eq!(
            s.config().as_deref(),
            Some(
                "[chain]\ntarget_block_ms = 200\nskip_signatures = true\n[mempool]\nsingle_lock = true\n\
                 execute_ms = 50\nexecute_under_lock = true\n[arrivals]\ncapacity = 300000\n"
            )
        );
        let p = s.params();
        assert_eq!((p.target_block_ms, p.skip_signatures), (200, true));
        assert_ne!(p.chain_id(), d.params().chain_id());
        let lock = Setting { single_lock: true, ..Setting::default() };
        assert_eq!(lock.params().chain_id(), d.params().chain_id(), "the lock is no chain parameter");
        let run = Setting { execute_ms: 200, ..Setting::default() };
        assert_eq!(run.config().as_deref(), Some("[mempool]\nexecute_ms = 200\n"));
        assert_eq!(run.params().chain_id(), d.params().chain_id(), "nor is the execution");
    }
}
