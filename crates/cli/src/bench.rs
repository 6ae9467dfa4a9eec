//! `scalechain bench FILE`: the load benchmark. Reads and checks the benchmark file (refused,
//! naming the file, line and key, before anything starts), starts the devnet the file
//! describes (or takes the nodes given by `--api`, load spread over them), prepares and funds
//! every round's transactions, runs the rounds with live progress, and writes `rounds.csv`,
//! `series.csv`, `report.md` and `report.html` to `--out` (`--json`: one JSON object on
//! standard output too). Ctrl-C stops the load, writes what was measured, stops the nodes it
//! started and exits 130; a round that sent nothing exits 1. See `docs/LOAD-BENCHMARK.md`.
//!
//! The nodes' token options and the recognition of their chain among the devnet parameter sets
//! are [`crate::remote`]'s, as for every command that talks to a node.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;

use scalechain_client::Client;
use scalechain_lab::bench::report::{self, Header};
use scalechain_lab::bench::run::{self, Env};
use scalechain_lab::bench::spec::{self, Benchmark};
use scalechain_lab::interrupt;
use scalechain_lab::launcher::{Launcher, NetworkPlan, Role};
use scalechain_lab::load::converge::wait_connected;
use scalechain_lab::load::SystemClock;

use crate::devnet::{launch_fail, load_fail};
use crate::remote::{self, TokenOpts};
use crate::Fail;

/// Arguments of `scalechain bench`.
#[derive(Args)]
pub struct BenchArgs {
    /// The benchmark file (TOML; docs/LOAD-BENCHMARK.md, bench/example.toml).
    file: PathBuf,
    /// Run against these nodes' APIs (repeat the flag; the load goes round-robin over them)
    /// instead of starting a devnet. They must run a devnet chain: the load is funded from its
    /// premine keys.
    #[arg(long = "api", value_name = "URL")]
    api: Vec<String>,
    /// The token of the nodes given with --api.
    #[command(flatten)]
    token: TokenOpts,
    /// Where the results go (default: bench-results/<benchmark name>).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Keep the started nodes' data here (default: a temporary directory, removed at the end).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print the results as one JSON object on standard output.
    #[arg(long)]
    json: bool,
}

/// Runs `scalechain bench`.
pub fn bench(a: BenchArgs) -> Result<(), Fail> {
    let b = spec::load(&a.file).map_err(|e| Fail(2, e.to_string()))?;
    // The configuration the devnet's nodes start with: read and checked before anything starts.
    let node_config = match (&b.network.node_config, a.api.is_empty()) {
        (Some(c), true) => {
            let bad = |e: String| {
                Fail(2, format!("{}: network.node-config {}: {e}", a.file.display(), c.display()))
            };
            let text = std::fs::read_to_string(c).map_err(|e| bad(e.to_string()))?;
            let cfg = scalechain_node::NodeConfig::from_toml(&text).map_err(bad)?;
            Some((text, cfg))
        }
        _ => None,
    };
    let out = a.out.clone().unwrap_or_else(|| PathBuf::from("bench-results").join(&b.name));
    let rt = tokio::runtime::Runtime::new().map_err(|e| Fail(2, format!("starting the runtime: {e}")))?;
    if a.api.is_empty() {
        on_devnet(&a, &b, node_config, &out, &rt)
    } else {
        on_nodes(&a, &b, &out, &rt)
    }
}

/// Against nodes given by `--api`: each must answer and run a devnet chain, the same one.
fn on_nodes(
    a: &BenchArgs,
    b: &Benchmark,
    out: &std::path::Path,
    rt: &tokio::runtime::Runtime,
) -> Result<(), Fail> {
    let mut targets = Vec::new();
    for (i, url) in a.api.iter().enumerate() {
        let c = a.token.builder(url.clone()).build().map_err(|e| Fail(2, format!("--api {url}: {e}")))?;
        targets.push((format!("node{i}"), c));
    }
    let mut chain = None;
    for (_, c) in &targets {
        let st = rt.block_on(c.status()).map_err(|e| Fail(2, format!("--api {}: {e}", c.base())))?;
        match &chain {
            None => chain = Some(st.chain_id),
            Some(id) if *id != st.chain_id => {
                return Err(Fail(
                    2,
                    format!(
                        "--api {}: another chain ({}) than the first node's ({id})",
                        c.base(),
                        st.chain_id
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    let id = chain.ok_or_else(|| Fail(2, "no --api".into()))?;
    let (params, sig) = remote::identify(&id).ok_or_else(|| {
        Fail(
            2,
            format!(
                "chain {id} is not a devnet chain: the benchmark funds its load from the devnet premine keys"
            ),
        )
    })?;
    let env = Env { targets: &targets, pids: &[], params: &params, sig, counters: None };
    let target = format!("nodes {}", a.api.join(", "));
    drive(a, b, out, rt, &env, target, false)
}

/// On a devnet it starts and stops, its nodes started with `node_config` (the file's text, and
/// what it says) if given.
fn on_devnet(
    a: &BenchArgs,
    b: &Benchmark,
    node_config: Option<(String, scalechain_node::NodeConfig)>,
    out: &std::path::Path,
    rt: &tokio::runtime::Runtime,
) -> Result<(), Fail> {
    let exe = std::env::current_exe().map_err(|e| Fail(2, format!("locating this program: {e}")))?;
    let t0 = Instant::now();
    let mut net = match &a.data_dir {
        Some(d) => Launcher::with_base(&exe, d),
        None => Launcher::new(&exe),
    }
    .map_err(launch_fail)?;
    let n = &b.network;
    let (config, node_cfg) = match node_config {
        Some((text, cfg)) => (Some(text), cfg),
        None => (None, scalechain_node::NodeConfig::default()),
    };
    // The chain the nodes make (a node configuration may change its hash function, signature
    // schemes, block interval or signature flag): what the load signs for.
    let (params, sig) = (scalechain_node::params_of(&node_cfg), node_cfg.chain.sig);
    let plan = NetworkPlan { peers: n.peers, miners: n.miners, miner_threads: n.miner_threads, config };
    net.start_network(&plan).map_err(launch_fail)?;
    eprintln!(
        "bench: {} up in {:.1} s; its data in {}",
        layout(n),
        t0.elapsed().as_secs_f64(),
        net.base_dir().display()
    );
    let all: Vec<(String, Client)> = net.clients(|r| r != Role::Bootstrap);
    let peers: Vec<(String, Client)> = net.clients(|r| r == Role::Peer);
    let pids = net.pids();
    let clock = SystemClock::start();
    // Every node sees the bootstrap node and at least one other (the bootstrap node relays no
    // gossip).
    let want = if all.len() > 1 { 2 } else { 1 };
    let connected = rt.block_on(wait_connected(
        &all,
        want,
        std::time::Duration::from_secs(30),
        std::time::Duration::from_millis(100),
        &clock,
        interrupt::flag(),
    ));
    let r = match connected {
        Err(e) => Err(load_fail(e)),
        Ok(()) => {
            let env = Env { targets: &peers, pids: &pids, params: &params, sig, counters: None };
            let target = format!("{}, load to the peers", layout(n));
            // A network in a new temporary directory has spent nothing yet.
            drive(a, b, out, rt, &env, target, a.data_dir.is_none())
        }
    };
    if let Err(e) = net.stop() {
        eprintln!("warning: {e}");
    }
    r
}

/// `devnet of 3 peers and 1 miner`.
fn layout(n: &scalechain_lab::bench::spec::Network) -> String {
    let s = |k: usize| if k == 1 { "" } else { "s" };
    format!("devnet of {} peer{} and {} miner{}", n.peers, s(n.peers), n.miners, s(n.miners))
}

/// Prepares, runs, writes the results and says how it went. `fresh`: the benchmark started the
/// network in a new directory (see [`run::funds`]).
fn drive(
    a: &BenchArgs,
    b: &Benchmark,
    out: &std::path::Path,
    rt: &tokio::runtime::Runtime,
    env: &Env<'_>,
    target: String,
    fresh: bool,
) -> Result<(), Fail> {
    let stop = interrupt::flag();
    let funds = rt.block_on(run::funds(env, fresh)).map_err(load_fail)?;
    let prepared = run::prepare(b, env, &funds).map_err(load_fail)?;
    let total: usize = prepared.loads.iter().map(|l| l.0.len()).sum();
    eprintln!(
        "bench: {total} transactions for {} rounds and {} funding transactions signed in {:.1} s",
        b.rounds.len(),
        prepared.funding.iter().map(Vec::len).sum::<usize>(),
        prepared.took_s
    );
    let took = prepared.took_s;
    let log = |line: String| eprintln!("  {line}");
    let outcome = rt.block_on(run::run(b, env, prepared, stop, &log)).map_err(load_fail)?;
    let header = Header {
        name: b.name.clone(),
        target,
        prepared: (total as u64, took),
        fund_s: outcome.fund_s,
        stopped: outcome.stopped,
    };
    report::write(out, &header, &outcome.rounds).map_err(|e| Fail(1, format!("writing the results: {e}")))?;
    eprintln!("bench: results in {}", out.join("report.html").display());
    if a.json {
        println!("{}", report::json(&header, &outcome.rounds));
    }
    if outcome.stopped {
        return Err(Fail(
            130,
            format!("interrupted after {} of {} rounds", outcome.rounds.len(), b.rounds.len()),
        ));
    }
    let empty: Vec<String> = outcome
        .rounds
        .iter()
        .enumerate()
        .filter(|(_, r)| r.offered == 0)
        .map(|(i, r)| format!("{} ({})", i + 1, r.name))
        .collect();
    if !empty.is_empty() || outcome.rounds.len() < b.rounds.len() {
        return Err(Fail(
            1,
            format!(
                "{} of {} rounds ran; rounds that sent nothing: {}",
                outcome.rounds.len(),
                b.rounds.len(),
                if empty.is_empty() { "none".into() } else { empty.join(", ") }
            ),
        ));
    }
    Ok(())
}
