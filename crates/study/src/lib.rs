//! The scalability study: experiments that rerun the seed documents' measurements on this
//! machine and write `DIR/<experiment>.csv`, an SVG plot `DIR/<experiment>.svg`, and a section
//! of `DIR/report.md` that puts the seed's published figures beside ours, with the machine,
//! the build and the commit. `docs/STUDY.md` documents every experiment and column.
//!
//! Every experiment runs the production code (`verify_txs`, `check_block`, `connect_block`,
//! the Merkle tree, the UTXO set) on generated workloads, and measures alongside it the bound
//! that code cannot beat on this machine (raw signature verification of the same signatures
//! with the same threads), so results are reported as ratios measured in one run.

pub mod exp;
pub mod seeds;

use std::path::{Path, PathBuf};
use std::time::Instant;

use indicatif::{ProgressBar, ProgressStyle};
use scalechain_lab::{output, plot, LabError, Machine, Table};

/// What can go wrong.
#[derive(Debug, thiserror::Error)]
pub enum StudyError {
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The lab harness could not write its output (a file of the report, a plot).
    #[error(transparent)]
    Lab(#[from] LabError),
    /// The code under measurement gave a wrong answer (a measurement of failures is no
    /// measurement).
    #[error("{0}")]
    Wrong(String),
    /// A thread pool could not be built.
    #[error("thread pool: {0}")]
    Pool(String),
    /// Linux perf could not sample a node (`cpu`): missing, refused by the kernel, or failed.
    #[error(transparent)]
    Perf(#[from] exp::cpu::PerfError),
}

impl StudyError {
    /// An IO error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> StudyError {
        StudyError::Io { path: path.to_path_buf(), source }
    }
}

/// The experiments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Experiment {
    /// Seed 000 Fig 3.1a / Table 5.1.
    TxThroughput,
    /// Seed 000 Fig 3.2 / Table 5.3.
    BlockValidation,
    /// Seed 000 Fig 3.3.
    Speedup,
    /// Seed 002.
    Hash,
    /// Seed 004.
    Components,
    /// Memory per unspent output of the in-memory UTXO set.
    UtxoMemory,
    /// Seed 003: ballots per second per scheme.
    Voting,
    /// Seed 001 §1.1, §3.1: transactions and blocks spreading through a running network.
    Propagation,
    /// Seed 000 Fig 3.1b / Table 5.2: the node's pipeline by group size and source.
    Pipeline,
    /// Seed 003 ch. 6: throughput and latency against the arrival rate, through the load
    /// benchmark, for transfers and ballots.
    Load,
    /// Seed 003 §5.3 / §6.2.2–6.2.3: crypto backends (builds) end to end.
    Backend,
    /// Seed 003 §5.1.1: what signatures cost end to end.
    Signatures,
    /// Seed 003 §5.4 / §7.1.1, Tables 6.1–6.2, Fig 5.7: executions under the chain's read lock
    /// against lock-free, throughput, latency and block commit times.
    Contention,
    /// Initial sync: a new node catching up with a devnet's chain, against the parallel
    /// verification bound.
    Sync,
    /// Seed 000's question at scale, on the simulator: propagation and stale blocks against
    /// the number of nodes and the block interval.
    Scale,
    /// How far to trust the simulator: the same scenario on real processes and simulated.
    SimCheck,
    /// Seed 001 Tables 4 / 7 / 10: the node's function profile while it takes the 1,001.
    Profile,
    /// Seed 003 Fig 5.1 / seed 001 Tables 5 / 8 / 11: where a loaded node's CPU goes, by
    /// category (perf) and by function over minutes of load (the profiler's histograms).
    Cpu,
}

impl Experiment {
    /// Every experiment, in the order `all` runs them.
    pub const ALL: [Experiment; 18] = [
        Experiment::TxThroughput,
        Experiment::BlockValidation,
        Experiment::Speedup,
        Experiment::Hash,
        Experiment::Components,
        Experiment::UtxoMemory,
        Experiment::Voting,
        Experiment::Propagation,
        Experiment::Pipeline,
        Experiment::Load,
        Experiment::Backend,
        Experiment::Signatures,
        Experiment::Contention,
        Experiment::Sync,
        Experiment::Scale,
        Experiment::SimCheck,
        Experiment::Profile,
        Experiment::Cpu,
    ];

    /// The command-line name (also the file stem of its outputs).
    pub fn name(self) -> &'static str {
        match self {
            Experiment::TxThroughput => "tx-throughput",
            Experiment::BlockValidation => "block-validation",
            Experiment::Speedup => "speedup",
            Experiment::Hash => "hash",
            Experiment::Components => "components",
            Experiment::UtxoMemory => "utxo-memory",
            Experiment::Voting => "voting",
            Experiment::Propagation => "propagation",
            Experiment::Pipeline => "pipeline",
            Experiment::Load => "load",
            Experiment::Backend => "backend",
            Experiment::Signatures => "signatures",
            Experiment::Contention => "contention",
            Experiment::Sync => "sync",
            Experiment::Scale => "scale",
            Experiment::SimCheck => "sim-check",
            Experiment::Profile => "profile",
            Experiment::Cpu => "cpu",
        }
    }
}

impl Experiment {
    /// Two sentences that open the experiment's report section, under its figure: what the
    /// figure shows, and what to read it for.
    pub fn lede(self) -> &'static str {
        match self {
            Experiment::TxThroughput => {
                "Transactions verified per second against the number of transactions, for each way of \
                 verifying them (one at a time, batched, batched in parallel) beside the raw signature bound \
                 and seed 000's Table 5.1. Read it for how close the ledger runs to its signatures and where \
                 batching and threads pay."
            }
            Experiment::BlockValidation => {
                "The time to validate one block against its transaction count, step by step (fork check, \
                 Merkle root, transactions, whole block), beside seed 000's Fig 3.2 and Table 5.3. Read it for \
                 which step dominates as blocks grow and how far the whole stays from its signatures."
            }
            Experiment::Speedup => {
                "Speed-up over one thread against the thread count, past the cores, beside Amdahl's bound \
                 from the measured parallel fraction and seed 000's Fig 3.3. Read it for the plateau two \
                 cores allow and what oversubscription costs."
            }
            Experiment::Hash => {
                "Hash rate against input size and thread count for SHA-256, SHA-512/256 and BLAKE3, beside \
                 seed 002's. Read it for which hash wins at the sizes a blockchain hashes, on this CPU."
            }
            Experiment::Components => {
                "The cost of each step of validating one transaction, by named component, with seed 004's \
                 row at the component that does its work. Read it for where a transaction's validation time \
                 goes, and how far each part is from seed 004's."
            }
            Experiment::UtxoMemory => {
                "Resident bytes per unspent output for each structure that can hold the UTXO set, against \
                 the 128-byte target. Read it for what a coin costs in memory at ten million coins."
            }
            Experiment::Voting => {
                "Ballots per second per ballot scheme, for proof checks alone and for whole elections, \
                 beside seed 003's Fabric rates and its election-peak requirement. Read it for how many \
                 ballots one chain of ours takes, and what each scheme costs."
            }
            Experiment::Propagation => {
                "How long transactions and blocks take to reach every node of a network of node processes, \
                 against its size and placement, beside seed 001's arrival histograms. Read it for the \
                 protocol's delays on this machine, which two shared cores stretch as nodes are added."
            }
            Experiment::Pipeline => {
                "Transactions admitted per second against the group size of each submission, from memory, \
                 from a process on this machine and from a network namespace, against the verification \
                 bound. Read it for what the node's path costs beyond its signatures."
            }
            Experiment::Load => {
                "Throughput and latency against the offered rate, for transfers and ballots, through the \
                 load benchmark, beside seed 003's saturation. Read it for where the network saturates and \
                 how latency grows before it does."
            }
            Experiment::Backend => {
                "Throughput against the offered rate for each crypto build, and each swap's change past \
                 saturation beside seed 003's. Read it for what a faster hash or signature backend buys end \
                 to end, where the node's time goes elsewhere too."
            }
            Experiment::Signatures => {
                "The change in throughput when a chain skips input signatures, per trial, beside seed 003's \
                 +18%. Read it for the share of the node's capacity that signatures take."
            }
            Experiment::Contention => {
                "The change in throughput past saturation per trial for each lock setting, beside seed 003's \
                 Tables 6.1 and 6.2. Read it for what lock contention costs the node, and whether ours \
                 measures what the seed's did (the section says)."
            }
            Experiment::Sync => {
                "A new node's height against time while it downloads, validates and commits a devnet's chain, \
                 beside the line of the parallel verification bound. Read it for how far sync runs from its \
                 signatures."
            }
            Experiment::Scale => {
                "Block and transaction propagation against the number of simulated nodes, stale blocks \
                 against the block interval, and load against capacity, on the simulator. Read it for the \
                 protocol's shape as the network grows; absolute times are the simulator's (see sim-check)."
            }
            Experiment::SimCheck => {
                "The simulator's propagation times beside real node processes' for the same scenario, at 4 \
                 to 16 nodes, and beside the real binary under Shadow at 64 and 256 where Shadow is \
                 installed. Read it for where the simulator can be trusted, and why it differs elsewhere."
            }
            Experiment::Cpu => {
                "Where a loaded validating peer's CPU goes, by category of primitive operation (signatures, \
                 hashing, serialisation, allocator, disk, locks, network, ...), sampled with perf, beside \
                 seed 003's Fig 5.1; then its functions' run-time histograms over minutes of load, beside \
                 seed 001's long recordings. Read it for which kind of work bounds the node under load."
            }
            Experiment::Profile => {
                "Where a node's time goes by function while it takes seed 001's 1,001 transactions, beside \
                 seed 001's profile tables. Read it for the cost of each step of admission and of a block."
            }
        }
    }
}

impl std::str::FromStr for Experiment {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Experiment::ALL.into_iter().find(|e| e.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Experiment::ALL.iter().map(|e| e.name()).collect();
            format!("unknown experiment {s:?} (expected one of: {}, all)", names.join(", "))
        })
    }
}

/// Options shared by the experiments.
#[derive(Clone, Debug)]
pub struct Opts {
    /// Output directory.
    pub out: PathBuf,
    /// Small sizes and few runs: seconds, for smoke tests.
    pub quick: bool,
    /// Threads for parallel modes (default: all logical cores).
    pub threads: Option<usize>,
    /// Largest n is 2^max_log2.
    pub max_log2: u32,
    /// Runs per point (median reported); default 10 (3 with `quick`).
    pub runs: Option<usize>,
    /// Workload seed.
    pub seed: u64,
    /// The `scalechain` binary, to run hash workers in their own process (so each reports
    /// its own peak memory; `None` measures in-process) and the nodes of the network
    /// experiments (which need it).
    pub worker: Option<PathBuf>,
    /// Nodes of the network experiments' main network (default 8, 3 with `quick`).
    pub nodes: Option<usize>,
    /// Other `scalechain` binaries (other builds) `backend` compares with `worker`.
    pub compare: Vec<PathBuf>,
    /// The simulator's cost model from this file instead of a calibration (`scale`,
    /// `sim-check`).
    pub costs: Option<PathBuf>,
}

impl Opts {
    /// Defaults writing to `out`.
    pub fn new(out: impl Into<PathBuf>) -> Opts {
        Opts {
            out: out.into(),
            quick: false,
            threads: None,
            max_log2: 20,
            runs: None,
            seed: 1,
            worker: None,
            nodes: None,
            compare: Vec::new(),
            costs: None,
        }
    }
}

/// The largest point that [`Ctx::runs_at`] measures with every run: 2^16 transactions, where
/// `tx-throughput` and `block-validation` judge their targets.
pub const FULL_RUNS_UP_TO: usize = 1 << 16;

/// The running context of one experiment.
pub struct Ctx {
    /// Options.
    pub opts: Opts,
    /// Where we run.
    pub machine: Machine,
    /// Progress on the terminal (hidden when stderr is not one).
    pub progress: ProgressBar,
}

impl Ctx {
    /// Threads for parallel modes.
    pub fn threads(&self) -> usize {
        self.opts.threads.unwrap_or(self.machine.cores).max(1)
    }

    /// Runs per point.
    pub fn runs(&self) -> usize {
        self.opts.runs.unwrap_or(if self.opts.quick { 3 } else { 10 }).max(1)
    }

    /// Runs at a point of `n` transactions: [`Ctx::runs`] up to [`FULL_RUNS_UP_TO`] (the size
    /// the targets are judged at), then fewer in inverse proportion to `n` — one run of a 2^20
    /// point takes minutes — but never fewer than `floor`. An explicit `--runs` holds at every
    /// `n`.
    pub fn runs_at(&self, n: usize, floor: usize) -> usize {
        let runs = self.runs();
        if self.opts.runs.is_some() {
            return runs;
        }
        (runs * FULL_RUNS_UP_TO / n.max(1)).clamp(floor.clamp(1, runs), runs)
    }

    /// A rayon pool of `n` threads.
    pub fn pool(&self, n: usize) -> Result<rayon::ThreadPool, StudyError> {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n.max(1))
            .build()
            .map_err(|e| StudyError::Pool(e.to_string()))
    }

    /// Starts a progress bar of `len` steps.
    pub fn start(&self, len: u64, what: &str) {
        self.progress.set_length(len);
        self.progress.set_position(0);
        self.progress.set_message(what.to_string());
    }

    /// Writes the CSV (merged with other builds' rows), the SVG and the report section;
    /// returns the merged table.
    pub fn finish(
        &self,
        exp: Experiment,
        table: &Table,
        charts: impl FnOnce(&Table) -> Vec<plot::Chart>,
        section: impl FnOnce(&Table) -> String,
    ) -> Result<Table, StudyError> {
        let dir = &self.opts.out;
        std::fs::create_dir_all(dir).map_err(|e| StudyError::io(dir, e))?;
        let merged = table.write_merged(&dir.join(format!("{}.csv", exp.name())), self.machine.build)?;
        plot::write_svg(&dir.join(format!("{}.svg", exp.name())), &charts(&merged))?;
        let name = exp.name();
        let body = output::fold_long_tables(&section(&merged), MAX_REPORT_ROWS, &format!("{name}.csv"));
        let text = format!(
            "## `{name}`{}\n\n![{name}]({name}.svg)\n\n{}\n\n{}\n{body}\nData: [`{name}.csv`]({name}.csv).\n",
            if self.opts.quick { " (quick)" } else { "" },
            exp.lede(),
            self.machine.markdown(),
        );
        output::write_report_section(dir, &text)?;
        self.progress.finish_and_clear();
        Ok(merged)
    }
}

/// Rows a table in the report may have; a longer one stays in the CSV.
pub const MAX_REPORT_ROWS: usize = 60;

/// Runs one experiment; returns its merged table.
pub fn run(exp: Experiment, opts: Opts) -> Result<Table, StudyError> {
    let progress = ProgressBar::new(1);
    progress.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let ctx = Ctx { opts, machine: Machine::detect(), progress };
    match exp {
        Experiment::TxThroughput => exp::tx_throughput::run(&ctx),
        Experiment::BlockValidation => exp::block_validation::run(&ctx),
        Experiment::Speedup => exp::speedup::run(&ctx),
        Experiment::Hash => exp::hash::run(&ctx),
        Experiment::Components => exp::components::run(&ctx),
        Experiment::UtxoMemory => exp::utxo_memory::run(&ctx),
        Experiment::Voting => exp::voting::run(&ctx),
        Experiment::Propagation => exp::propagation::run(&ctx),
        Experiment::Pipeline => exp::pipeline::run(&ctx),
        Experiment::Load => exp::load::run(&ctx),
        Experiment::Backend => exp::optimise::run_backend(&ctx),
        Experiment::Signatures => exp::optimise::run_signatures(&ctx),
        Experiment::Contention => exp::contention::run(&ctx),
        Experiment::Sync => exp::sync::run(&ctx),
        Experiment::Scale => exp::scale::run(&ctx),
        Experiment::SimCheck => exp::sim_check::run(&ctx),
        Experiment::Profile => exp::profile::run(&ctx),
        Experiment::Cpu => exp::cpu::run(&ctx),
    }
}

/// Draws `exp`'s figure again from the CSV a run left in `dir` (after a change to the charts,
/// without measuring again); false if `dir` holds no CSV of it.
pub fn replot(exp: Experiment, dir: &std::path::Path) -> Result<bool, StudyError> {
    let csv = dir.join(format!("{}.csv", exp.name()));
    let text = match std::fs::read_to_string(&csv) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(StudyError::io(&csv, e)),
    };
    let table = Table::from_csv(&text)
        .ok_or_else(|| StudyError::Wrong(format!("{}: not a CSV table of the study", csv.display())))?;
    let charts = match exp {
        Experiment::TxThroughput => exp::tx_throughput::charts(&table),
        Experiment::BlockValidation => exp::block_validation::charts(&table),
        Experiment::Speedup => exp::speedup::charts(&table),
        Experiment::Hash => exp::hash::charts(&table),
        Experiment::Components => exp::components::charts(&table),
        Experiment::UtxoMemory => exp::utxo_memory::charts(&table),
        Experiment::Voting => exp::voting::charts(&table),
        Experiment::Propagation => exp::propagation::charts(&table),
        Experiment::Pipeline => exp::pipeline::charts(&table),
        Experiment::Load => exp::load::charts(&table),
        Experiment::Backend => exp::optimise::backend_charts(&table),
        Experiment::Signatures => exp::optimise::signatures_charts(&table),
        Experiment::Contention => exp::contention::charts(&table),
        Experiment::Sync => exp::sync::charts(&table),
        Experiment::Scale => exp::scale::charts(&table),
        Experiment::SimCheck => exp::sim_check::charts(&table),
        Experiment::Profile => exp::profile::charts(&table),
        Experiment::Cpu => exp::cpu::charts(&table),
    };
    plot::write_svg(&dir.join(format!("{}.svg", exp.name())), &charts)?;
    Ok(true)
}

/// The median of samples (the mean of the middle two for an even count).
pub fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if !v.len().is_multiple_of(2) {
        v[m]
    } else {
        (v[m - 1] + v[m]) / 2.0
    }
}

/// Runs `f` `runs` times and returns the median wall time in seconds.
pub fn time_median(runs: usize, mut f: impl FnMut()) -> f64 {
    median(
        (0..runs.max(1))
            .map(|_| {
                let t = Instant::now();
                f();
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

/// Runs every closure `runs` times in interleaved rounds (round `r` starts at closure `r`, so
/// the order rotates) and returns each one's median wall time in seconds.
pub fn interleaved_medians(runs: usize, fs: &mut [&mut dyn FnMut() -> bool]) -> Vec<f64> {
    let k = fs.len();
    let mut samples = vec![Vec::with_capacity(runs); k];
    for round in 0..runs.max(1) {
        for j in 0..k {
            let i = (round + j) % k;
            let t = Instant::now();
            std::hint::black_box(fs[i]());
            samples[i].push(t.elapsed().as_secs_f64());
        }
    }
    samples.into_iter().map(median).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_fall_past_2_16_to_the_floor_unless_set() {
        let ctx = |runs: Option<usize>, quick: bool| Ctx {
            opts: Opts { runs, quick, ..Opts::new("unused") },
            machine: Machine::detect(),
            progress: ProgressBar::hidden(),
        };
        let full = ctx(None, false);
        let at: Vec<usize> = (14..=20).map(|k| full.runs_at(1 << k, 2)).collect();
        assert_eq!(at, vec![10, 10, 10, 5, 2, 2, 2]);
        assert_eq!(full.runs_at(1 << 20, 1), 1);
        assert_eq!(full.runs_at(0, 1), 10);
        // `--runs` holds everywhere; a floor above the runs is the runs.
        assert_eq!(ctx(Some(7), false).runs_at(1 << 20, 1), 7);
        assert_eq!(ctx(None, true).runs_at(1 << 20, 5), 3);
    }

    #[test]
    fn median_of_odd_and_even_counts() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(vec![]).is_nan());
    }

    #[test]
    fn interleaved_medians_runs_each_closure_every_round_in_rotating_order() {
        let order = std::cell::RefCell::new(Vec::new());
        let (mut a, mut b) = (
            || {
                order.borrow_mut().push('a');
                true
            },
            || {
                order.borrow_mut().push('b');
                std::thread::sleep(std::time::Duration::from_millis(3));
                true
            },
        );
        let m = interleaved_medians(3, &mut [&mut a, &mut b]);
        assert_eq!(m.len(), 2);
        assert!(m[1] > m[0] && m[1] >= 0.003, "{m:?}");
        assert_eq!(order.into_inner(), vec!['a', 'b', 'b', 'a', 'a', 'b']);
    }

    #[test]
    fn replot_draws_a_figure_from_the_csv_of_an_earlier_run() {
        let dir = std::env::temp_dir().join(format!("scalechain-replot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let svg = dir.join("speedup.svg");
        assert!(matches!(replot(Experiment::Speedup, &dir), Ok(false)), "no CSV, no figure");
        let csv = "task,n,threads,build,median_s,speedup,amdahl,parallel_fraction,runs,commit,seed\n\
                   tx-verify,65536,1,portable,2.2,1.0000,1.0000,0.998,5,c,1\n\
                   tx-verify,65536,2,portable,1.2,1.8840,1.9960,0.998,5,c,1\n";
        std::fs::write(dir.join("speedup.csv"), csv).unwrap_or_else(|e| panic!("{e}"));
        let drawn = replot(Experiment::Speedup, &dir);
        let text = std::fs::read_to_string(&svg).unwrap_or_default();
        std::fs::remove_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(drawn, Ok(true)), "{drawn:?}");
        assert!(text.starts_with("<svg") && text.contains("speedup over 1 thread"), "{text}");
        assert!(text.contains("<circle"), "the measured points are drawn: {text}");
    }

    #[test]
    fn experiment_names_round_trip() {
        for e in Experiment::ALL {
            assert_eq!(e.name().parse::<Experiment>(), Ok(e));
        }
        assert!("nope".parse::<Experiment>().is_err());
    }
}
