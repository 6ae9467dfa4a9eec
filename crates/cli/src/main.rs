//! `scalechain`: the command-line front end. Thin: parses arguments, opens the store, calls the
//! library crates, prints. Exit code 0 on success, 1 on a rejected block or failed
//! verification, 2 on bad usage or IO errors.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand, ValueEnum};

mod bench;
mod devnet;
mod netcmd;
mod profilecmd;
mod remote;
mod shell;
mod vote;
mod wallet;

use scalechain_chain::export::{block_json, dot, parse_chain_json, ChainJson, ParamsJson};
use scalechain_chain::{Accepted, Chain, ChainError, DiskStore};
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{Apps, Params, VerifyConfig, VerifyMode};
use scalechain_types::HashKind;
use scalechain_workload::Generator;

#[derive(Parser)]
#[command(name = "scalechain", version, about = "ScaleChain: a fast, minimalist UTXO blockchain")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Build genesis + N mined blocks of M generated transactions each, and store them.
    Simulate {
        /// Data directory (created if missing; must not hold blocks beyond genesis).
        #[arg(long)]
        data_dir: PathBuf,
        /// Blocks to mine after genesis.
        #[arg(long)]
        blocks: u64,
        /// Generated transactions per block (plus the coinbase).
        #[arg(long)]
        txs_per_block: usize,
        /// The chain's hash function.
        #[arg(long, default_value = "sha256")]
        hash: HashKind,
        /// Signature schemes: ed25519, secp256k1 or mixed.
        #[arg(long, default_value = "ed25519")]
        sig: SigMode,
        /// Generator seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Signature verification strategy for connecting the blocks.
        #[arg(long, default_value = "parallel")]
        verify_mode: VerifyMode,
    },
    /// Inspect, verify, export or import a stored chain.
    Chain {
        #[command(subcommand)]
        cmd: ChainCmd,
    },
    /// Rerun a seed experiment on this machine: writes DIR/<experiment>.csv, DIR/<experiment>.svg
    /// and appends a section to DIR/report.md (see docs/STUDY.md).
    Study {
        /// tx-throughput, block-validation, speedup, hash, components, utxo-memory, voting,
        /// propagation, pipeline, load, backend, signatures, contention, sync, scale, sim-check,
        /// profile, cpu;
        /// several separated by commas (run in that order); all; or replot (draw the figures
        /// again from the CSVs in --out, without measuring).
        experiment: String,
        /// Output directory.
        #[arg(long, default_value = "study")]
        out: PathBuf,
        /// Small sizes and few runs (seconds; for smoke tests).
        #[arg(long)]
        quick: bool,
        /// Threads for parallel modes (default: all cores; for `speedup`, the largest count).
        #[arg(long)]
        threads: Option<usize>,
        /// Largest n is 2^max-log2.
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=22))]
        max_log2: u32,
        /// Runs per point, median reported (default 10, or 3 with --quick).
        #[arg(long)]
        runs: Option<usize>,
        /// Workload seed.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Nodes of the network experiments' main network (`propagation`; default 8, 3 with
        /// --quick).
        #[arg(long, value_parser = clap::value_parser!(u32).range(2..=64))]
        nodes: Option<u32>,
        /// `backend`: another build of `scalechain` to compare with this one (repeatable; e.g.
        /// target/native/release/scalechain).
        #[arg(long)]
        compare: Vec<PathBuf>,
        /// `scale`, `sim-check`: the simulator's cost model from this file (as `calibrate`
        /// writes it, e.g. crates/simnet/calibration.toml) instead of measuring one first.
        #[arg(long)]
        costs: Option<PathBuf>,
    },
    /// Run a node (bootstrap, peer or miner) until SIGINT/SIGTERM.
    Node(netcmd::NodeArgs),
    /// Start a bootstrap node, peers and miners on 127.0.0.1, offer a transaction load through
    /// the API, and report confirmed TPS, latency and convergence.
    Devnet(devnet::DevnetArgs),
    /// The load benchmark: rounds of a workload under rate controllers (fixed-rate,
    /// fixed-load, linear-rate, maximum-rate, composite-rate, replay) against a devnet it starts
    /// or the nodes given; per-round throughput, latency, failures and CPU in CSV, Markdown and
    /// HTML (docs/LOAD-BENCHMARK.md).
    Bench(bench::BenchArgs),
    /// Keys, addresses, balance and transfers through a node's API (an encrypted wallet file).
    Wallet(wallet::WalletArgs),
    /// An interactive shell on a node's API (reads commands from standard input when it is not a
    /// terminal).
    Shell(shell::ShellArgs),
    /// A node's function profile (seed 001's tables), or turn its profiler on, off, or reset it.
    Profile(profilecmd::ProfileArgs),
    /// The voting application (seed 003).
    Vote {
        #[command(subcommand)]
        cmd: vote::VoteCmd,
    },
    /// The null target: the node API as the load benchmark uses it, accepting every
    /// transaction without verifying it and putting what it received in a block every
    /// interval — `scalechain bench --api` against it measures the load generator alone.
    /// Prints `{"api": "HOST:PORT"}` once listening; runs until SIGINT/SIGTERM.
    NullNode {
        /// Listen address.
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: std::net::SocketAddr,
        /// Milliseconds between blocks.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
        interval_ms: u64,
        /// The devnet chain's signature mode (its premine keys fund the load).
        #[arg(long, default_value = "ed25519")]
        sig: SigMode,
    },
    /// Internal: one hash-study run in its own process (prints seconds and peak KiB).
    #[command(hide = true)]
    StudyHashWorker {
        /// ALG BYTES THREADS COUNT.
        args: Vec<String>,
    },
    /// Internal: this build's per-operation costs for the study's `backend` experiment.
    #[command(hide = true)]
    StudyBackendWorker {
        /// RUNS.
        args: Vec<String>,
    },
}

#[derive(Subcommand)]
enum ChainCmd {
    /// Summary of the stored chain.
    Info {
        /// Data directory.
        #[arg(long)]
        data_dir: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Re-validate every stored block from genesis and compare the UTXO set.
    Verify {
        /// Data directory.
        #[arg(long)]
        data_dir: PathBuf,
        /// Signature verification strategy.
        #[arg(long, default_value = "parallel")]
        mode: VerifyMode,
    },
    /// Write the main chain as JSON or as a DOT graph.
    Export {
        /// Data directory.
        #[arg(long)]
        data_dir: PathBuf,
        /// Output format.
        #[arg(long, value_enum)]
        format: Format,
        /// First height (default: genesis).
        #[arg(long)]
        from: Option<u64>,
        /// Last height (default: the tip).
        #[arg(long)]
        to: Option<u64>,
        /// Output file (default: standard output).
        #[arg(short = 'o', long)]
        output: Option<PathBuf>,
    },
    /// Validate and connect every block of a JSON export, like a node receiving them.
    Import {
        /// Data directory (created if needed).
        #[arg(long)]
        data_dir: PathBuf,
        /// The JSON file.
        file: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Dot,
}

/// A failure with its exit code.
pub(crate) struct Fail(pub(crate) u8, pub(crate) String);

impl From<ChainError> for Fail {
    fn from(e: ChainError) -> Self {
        match e {
            ChainError::Rejected(_) | ChainError::InvalidAncestor { .. } | ChainError::Corrupt(_) => {
                Fail(1, e.to_string())
            }
            _ => Fail(2, e.to_string()),
        }
    }
}

impl From<scalechain_chain::StoreError> for Fail {
    fn from(e: scalechain_chain::StoreError) -> Self {
        Fail(2, e.to_string())
    }
}

fn io_fail(what: &str, path: &Path, e: impl std::fmt::Display) -> Fail {
    Fail(2, format!("{what} {}: {e}", path.display()))
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

fn verify_config(mode: VerifyMode) -> Result<VerifyConfig, Fail> {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed)
        .map_err(|e| Fail(2, format!("no OS randomness for batch verification: {e}")))?;
    Ok(VerifyConfig::parallel(seed).with_mode(mode))
}

/// Opens the chain of a data directory for reading, creating nothing: the store in
/// `DATA_DIR/chain` (every command's layout, a node's included), or, in a directory of the old
/// layout (`simulate` and `chain import` once wrote the store directly into it), the directory
/// itself.
fn open(data_dir: &Path, mode: VerifyMode) -> Result<Chain<DiskStore>, Fail> {
    if !data_dir.exists() {
        return Err(Fail(2, format!("data directory {} does not exist", data_dir.display())));
    }
    let store_dir = [data_dir.join("chain"), data_dir.to_path_buf()]
        .into_iter()
        .find(|d| DiskStore::exists(d))
        .ok_or_else(|| {
            Fail(
                2,
                format!(
                    "data directory {} holds no chain (its store would be {}); run `scalechain simulate` or \
                     `chain import` into it, or point at a node's data directory",
                    data_dir.display(),
                    data_dir.join("chain").display()
                ),
            )
        })?;
    let store = DiskStore::open(&store_dir)?;
    Ok(Chain::open(store, Apps::none(), verify_config(mode)?)?)
}

/// The store of a data directory for a command that writes it: `DATA_DIR/chain`, created if
/// needed, after moving a store of the old layout (directly in `DATA_DIR`) into it.
fn writable_store(data_dir: &Path) -> Result<DiskStore, Fail> {
    std::fs::create_dir_all(data_dir).map_err(|e| io_fail("cannot create", data_dir, e))?;
    let store_dir = data_dir.join("chain");
    if DiskStore::relocate(data_dir, &store_dir)? {
        eprintln!("moved the store of {} into {}", data_dir.display(), store_dir.display());
    }
    Ok(DiskStore::open(&store_dir)?)
}

/// The version line: the package version and the crypto backends this CPU runs
/// (`scalechain 0.1.0 (ed25519 avx512ifma, sha256 sha-ni)`).
fn version() -> &'static str {
    let v = format!("{} ({})", env!("CARGO_PKG_VERSION"), scalechain_types::keys::backends());
    Box::leak(v.into_boxed_str())
}

fn main() -> ExitCode {
    use clap::{CommandFactory, FromArgMatches};
    let matches = Cli::command().version(version()).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let r = match cli.cmd {
        Cmd::Simulate { data_dir, blocks, txs_per_block, hash, sig, seed, verify_mode } => {
            simulate(&data_dir, blocks, txs_per_block, hash, sig, seed, verify_mode)
        }
        Cmd::Chain { cmd } => match cmd {
            ChainCmd::Info { data_dir, json } => info(&data_dir, json),
            ChainCmd::Verify { data_dir, mode } => verify(&data_dir, mode),
            ChainCmd::Export { data_dir, format, from, to, output } => {
                export(&data_dir, format, from, to, output)
            }
            ChainCmd::Import { data_dir, file } => import(&data_dir, &file),
        },
        Cmd::Study { experiment, out, quick, threads, max_log2, runs, seed, nodes, compare, costs } => {
            let nodes = nodes.map(|n| n as usize);
            let opts = scalechain_study::Opts {
                out,
                quick,
                threads,
                max_log2,
                runs,
                seed,
                worker: None,
                nodes,
                compare,
                costs,
            };
            study(&experiment, opts)
        }
        Cmd::Node(a) => netcmd::node(a),
        Cmd::Devnet(a) => devnet::devnet(a),
        Cmd::Bench(a) => bench::bench(a),
        Cmd::Wallet(a) => wallet::run(a),
        Cmd::Shell(a) => shell::run(a),
        Cmd::Vote { cmd } => vote::run(cmd),
        Cmd::Profile(a) => profilecmd::run(a),
        Cmd::NullNode { listen, interval_ms, sig } => null_node(listen, interval_ms, sig),
        Cmd::StudyHashWorker { args } => match scalechain_study::exp::hash::worker_main(&args) {
            Ok(line) => {
                println!("{line}");
                Ok(())
            }
            Err(e) => Err(Fail(2, e)),
        },
        Cmd::StudyBackendWorker { args } => match scalechain_study::exp::optimise::backend_worker_main(&args)
        {
            Ok(text) => {
                print!("{text}");
                Ok(())
            }
            Err(e) => Err(Fail(2, e)),
        },
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail(code, msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(code)
        }
    }
}

fn null_node(listen: std::net::SocketAddr, interval_ms: u64, sig: SigMode) -> Result<(), Fail> {
    let rt = tokio::runtime::Runtime::new().map_err(|e| Fail(2, format!("starting the runtime: {e}")))?;
    rt.block_on(async {
        let l = tokio::net::TcpListener::bind(listen)
            .await
            .map_err(|e| Fail(2, format!("--listen {listen}: {e}")))?;
        let addr = l.local_addr().map_err(|e| Fail(2, e.to_string()))?;
        println!("{}", serde_json::json!({ "api": addr.to_string() }));
        scalechain_node::null::serve(
            l,
            sig,
            std::time::Duration::from_millis(interval_ms),
            scalechain_node::shutdown_signal(),
        )
        .await
        .map_err(|e| Fail(1, format!("serving: {e}")))
    })
}

fn simulate(
    dir: &Path,
    blocks: u64,
    m: usize,
    hash: HashKind,
    sig: SigMode,
    seed: u64,
    mode: VerifyMode,
) -> Result<(), Fail> {
    let params = Params::devnet(hash, sig);
    let store = writable_store(dir)?;
    let mut chain = Chain::open_or_init(store, &params, Apps::none(), verify_config(mode)?)?;
    if chain.tip_height() > 0 {
        return Err(Fail(
            2,
            format!(
                "{} already holds {} blocks; simulate into a new data directory",
                dir.display(),
                chain.tip_height()
            ),
        ));
    }
    let mut generator = Generator::new(&params, sig, seed);
    let start = Instant::now();
    let (mut gen_time, mut txs) = (0.0f64, 0u64);
    let step = (blocks / 10).max(1);
    for i in 1..=blocks {
        let parent = chain.tip_header();
        let t0 = Instant::now();
        let block =
            generator.build_block(&parent, chain.next_target(), parent.time + params.target_block_ms, m);
        gen_time += t0.elapsed().as_secs_f64();
        txs += block.txs.len() as u64;
        let now = now_ms().max(block.header.time);
        match chain.accept_block(block, now)? {
            Accepted::Connected(_) => {}
            other => return Err(Fail(1, format!("generated block {i} was not connected: {other:?}"))),
        }
        if i % step == 0 || i == blocks {
            eprintln!("  block {i}/{blocks}  txs {txs}  {:.1}s", start.elapsed().as_secs_f64());
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!("simulated {blocks} blocks x {m} txs ({txs} transactions incl. coinbases) in {secs:.2}s");
    println!(
        "  generating + signing {gen_time:.2}s, validating + storing {:.2}s ({:.0} tx/s)",
        secs - gen_time,
        txs as f64 / (secs - gen_time).max(1e-9)
    );
    println!(
        "  chain {}  tip {} at height {}  utxos {}",
        chain.chain_id(),
        chain.tip(),
        chain.tip_height(),
        chain.utxos().len()
    );
    Ok(())
}

fn info(dir: &Path, json: bool) -> Result<(), Fail> {
    let chain = open(dir, VerifyMode::Parallel)?;
    let p = chain.params();
    let v = serde_json::json!({
        "chain_id": chain.chain_id(),
        "tip_hash": chain.tip(),
        "tip_height": chain.tip_height(),
        "tip_time": chain.tip_header().time,
        "utxo_count": chain.utxos().len(),
        "total_value": chain.utxos().total_value() as u64,
        "hash": p.hash.name(),
        "schemes": p.schemes,
        "blocks_known": chain.tree().len(),
        "next_target": chain.next_target(),
    });
    if json {
        println!("{v}");
    } else {
        for (k, val) in v.as_object().into_iter().flatten() {
            println!("{k:>13}: {}", val.as_str().map(str::to_string).unwrap_or_else(|| val.to_string()));
        }
    }
    Ok(())
}

fn verify(dir: &Path, mode: VerifyMode) -> Result<(), Fail> {
    let chain = open(dir, mode)?;
    let start = Instant::now();
    let total = chain.tip_height();
    let step = (total / 10).max(1);
    let report = chain.verify_all(now_ms(), |h, t| {
        if h % step == 0 || h == t {
            eprintln!("  verified {h}/{t}");
        }
    })?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "ok: {} blocks, {} transactions re-validated in {secs:.2}s ({:.0} tx/s, mode {mode:?}); UTXO set matches ({} outputs); tip {}",
        report.blocks,
        report.txs,
        report.txs as f64 / secs.max(1e-9),
        report.utxo_count,
        chain.tip()
    );
    Ok(())
}

fn export(
    dir: &Path,
    format: Format,
    from: Option<u64>,
    to: Option<u64>,
    output: Option<PathBuf>,
) -> Result<(), Fail> {
    let chain = open(dir, VerifyMode::Parallel)?;
    let to = to.unwrap_or(chain.tip_height()).min(chain.tip_height());
    let from = from.unwrap_or(0);
    if from > to {
        return Err(Fail(2, format!("--from {from} is above --to {to}")));
    }
    let mut blocks = Vec::with_capacity((to - from + 1) as usize);
    for h in from..=to {
        blocks.push(chain.block_at(h)?.ok_or_else(|| Fail(1, format!("block {h} missing from the store")))?);
    }
    let kind = chain.params().hash;
    let text = match format {
        Format::Json => {
            let doc = ChainJson {
                params: ParamsJson { chain_id: chain.chain_id(), params: chain.params().clone() },
                blocks: blocks.iter().map(|b| block_json(kind, b)).collect(),
            };
            let mut s = serde_json::to_string(&doc).map_err(|e| Fail(2, e.to_string()))?;
            s.push('\n');
            s
        }
        Format::Dot => dot(kind, &blocks),
    };
    match output {
        Some(path) => std::fs::write(&path, text).map_err(|e| io_fail("cannot write", &path, e))?,
        None => print!("{text}"),
    }
    Ok(())
}

fn import(dir: &Path, file: &Path) -> Result<(), Fail> {
    let text = std::fs::read_to_string(file).map_err(|e| io_fail("cannot read", file, e))?;
    let (params, blocks) = parse_chain_json(&text).map_err(|e| Fail(1, e.to_string()))?;
    let store = writable_store(dir)?;
    let mut chain = Chain::open_or_init(store, &params, Apps::none(), verify_config(VerifyMode::Parallel)?)?;
    let start = Instant::now();
    let (mut connected, mut known, mut side, mut txs) = (0u64, 0u64, 0u64, 0u64);
    // Blocks whose parent was unknown when they came: (height, hash, parent).
    let mut orphans = Vec::new();
    for block in blocks {
        txs += block.txs.len() as u64;
        let (height, hash, parent) = (block.header.height, block.hash(params.hash), block.header.prev_hash);
        match chain.accept_block(block, now_ms())? {
            Accepted::Connected(r) => connected += r.connected.len() as u64,
            Accepted::Duplicate => known += 1,
            Accepted::SideBranch => side += 1,
            Accepted::Orphan => orphans.push((height, hash, parent)),
        }
    }
    // An orphan whose parent came later in the file joined the block tree then.
    let seen = orphans.len();
    orphans.retain(|(_, hash, _)| !chain.tree().contains(hash));
    println!(
        "imported in {:.2}s: {connected} connected, {side} on side branches, {known} already known, {} orphans left ({seen} seen), {txs} transactions; tip {} at height {}",
        start.elapsed().as_secs_f64(),
        orphans.len(),
        chain.tip(),
        chain.tip_height()
    );
    if orphans.is_empty() {
        return Ok(());
    }
    let unconnected: std::collections::HashSet<_> = orphans.iter().map(|(_, hash, _)| *hash).collect();
    let list: Vec<String> = orphans
        .iter()
        .map(|(h, hash, parent)| {
            if unconnected.contains(parent) {
                format!("block {h} {hash}: its parent {parent} did not connect either")
            } else {
                format!("block {h} {hash}: its parent {parent} is neither in the store nor in the file")
            }
        })
        .collect();
    Err(Fail(
        1,
        format!("{} block(s) of {} did not connect:\n  {}", orphans.len(), file.display(), list.join("\n  ")),
    ))
}

/// Runs `study EXPERIMENT` with `opts` (its `worker` set here to this program).
fn study(experiment: &str, opts: scalechain_study::Opts) -> Result<(), Fail> {
    use scalechain_study::Experiment;
    let out = opts.out.clone();
    if experiment == "replot" {
        // Figures drawn again from the CSVs a run left in `out`, without measuring again.
        let mut drawn = 0;
        for exp in Experiment::ALL {
            if scalechain_study::replot(exp, &out).map_err(|e| Fail(1, format!("{}: {e}", exp.name())))? {
                println!("{}: {}", exp.name(), out.join(format!("{}.svg", exp.name())).display());
                drawn += 1;
            }
        }
        if drawn == 0 {
            return Err(Fail(1, format!("{} holds no CSV of any experiment", out.display())));
        }
        return Ok(());
    }
    let list: Vec<Experiment> = if experiment == "all" {
        Experiment::ALL.to_vec()
    } else {
        experiment
            .split(',')
            .map(|name| name.trim().parse().map_err(|e: String| Fail(2, e)))
            .collect::<Result<_, _>>()?
    };
    if opts.threads == Some(0) || opts.runs == Some(0) {
        return Err(Fail(2, "--threads and --runs must be at least 1".into()));
    }
    let worker = std::env::current_exe().ok();
    // A failed experiment does not stop the others (a full run takes hours): in a list, each
    // failure is said when it happens and counted at the end; the exit status is 1. An
    // interrupt stops the list at once.
    let mut failed = Vec::new();
    let (total, several) = (list.len(), list.len() > 1);
    for exp in list {
        let opts = scalechain_study::Opts { worker: worker.clone(), ..opts.clone() };
        let t = Instant::now();
        match scalechain_study::run(exp, opts) {
            Ok(table) => println!(
                "{}: {} rows in {:.1} s -> {}",
                exp.name(),
                table.rows.len(),
                t.elapsed().as_secs_f64(),
                out.join(format!("{}.csv", exp.name())).display()
            ),
            Err(e) => {
                let why = format!("{}: {e}", exp.name());
                if scalechain_lab::interrupt::requested() {
                    return Err(Fail(
                        1,
                        format!("{why} (interrupted: the experiments after it did not run)"),
                    ));
                }
                if several {
                    eprintln!(
                        "{why} (failed after {:.1} s; the next experiment runs)",
                        t.elapsed().as_secs_f64()
                    );
                }
                failed.push(why);
            }
        }
    }
    println!("report: {}", out.join("report.md").display());
    match (failed.len(), several) {
        (0, _) => Ok(()),
        (_, false) => Err(Fail(1, failed.remove(0))),
        (n, true) => Err(Fail(1, format!("{n} of {total} experiments failed: {}", failed.join("; ")))),
    }
}
