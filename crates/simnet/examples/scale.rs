//! A large simulated network under a sustained load, timed: how fast the simulator runs and how
//! much memory it takes.
//!
//! `cargo run --release -p scalechain-simnet --example scale -- NODES VIRTUAL_S TPS [MODEL]`
//! (defaults: 1000 nodes, 60 s, 100 tx/s, the `simblock` model; the model is a preset name or a
//! TOML file). Prints the wall time, events per second, peak resident memory, the chain's
//! height and tips, and the messages and bytes of each kind.
#![allow(clippy::unwrap_used)]

use std::time::Instant;

use scalechain_p2p::msg::Role;
use scalechain_simnet::{
    Accounts, CostModel, Kind, LoadPlan, MiningClock, NetModel, Sim, SimConfig, Tracking, WorkModel,
};

/// mimalloc, with transparent huge pages off (the workspace's `no_thp`): a 1,000-node run
/// allocates millions of small, short-lived values, and takes 0.79 of the time it takes on
/// glibc's malloc for 1.6% more resident memory (docs/SIMULATOR.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).map(str::to_string))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map_or(0, |kib| kib / 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let n: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(1000);
    let secs: u64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(60);
    let tps: f64 = args.get(2).and_then(|a| a.parse().ok()).unwrap_or(100.0);
    let model = match args.get(3).map(String::as_str) {
        None => NetModel::simblock(),
        Some(name) => NetModel::preset(name).unwrap_or_else(|| {
            NetModel::from_toml(&std::fs::read_to_string(name).unwrap())
                .unwrap_or_else(|e| panic!("{name}: {e}"))
        }),
    };
    // Refuse a run this machine cannot hold before building it.
    let plan = scalechain_simnet::budget::Plan {
        nodes: n,
        virtual_ms: (secs + 10) * 1_000,
        block_interval_ms: SimConfig::devnet(1).block_interval_ms,
        tps: tps * secs as f64 / (secs + 10) as f64,
        tx_bytes: 190,
    };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    if let Some(available) = scalechain_simnet::budget::available_bytes(&meminfo) {
        if let Err(e) = plan.check(available) {
            eprintln!("{e}");
            std::process::exit(2);
        }
    }
    eprintln!("estimated peak memory: {} MiB", plan.estimate() >> 20);
    let t0 = Instant::now();
    let mut cfg = SimConfig::devnet(1);
    cfg.mining = MiningClock::Network;
    cfg.model = model;
    cfg.keep_events = false;
    cfg.work = WorkModel::Modelled { costs: std::sync::Arc::new(CostModel::reference()), cores: 2 };
    let mut sim = Sim::new(cfg.clone());
    let miners = sim.add_nodes(Role::Miner, 4);
    let peers = sim.add_nodes(Role::Peer, n.saturating_sub(4));
    if let Err(e) = sim.connect_random(8) {
        eprintln!("{e}");
        std::process::exit(2);
    }
    if !sim.form(30_000) {
        eprintln!("the network did not form in 30 virtual seconds");
        std::process::exit(1);
    }
    let built = t0.elapsed();
    let start = sim.now();
    sim.track(Tracking::EveryNth(100));
    let accounts = Accounts::new(&cfg.params, cfg.sig, 7, 1024);
    let targets: Vec<_> = peers.iter().copied().step_by((peers.len() / 16).max(1)).collect();
    sim.start_load(LoadPlan::new(tps, start + 1_000, start + secs * 1_000, targets), accounts);
    let t1 = Instant::now();
    let mut last = Instant::now();
    for s in 0..secs + 10 {
        sim.run_for(1_000);
        if last.elapsed().as_secs() >= 10 {
            last = Instant::now();
            eprintln!(
                "{s} s virtual, {:.0} s wall, {} events, queue {}, rss {} MiB",
                t1.elapsed().as_secs_f64(),
                sim.counters().events,
                sim.queued(),
                rss_mib()
            );
        }
    }
    let wall = t1.elapsed().as_secs_f64();
    let c = sim.counters();
    let tips: std::collections::BTreeSet<_> = sim.up_nodes().iter().filter_map(|&i| sim.tip(i)).collect();
    let height = sim.tip(miners[0]).map_or(0, |t| t.0);
    println!(
        "nodes {n}, virtual {secs} s at {tps} tx/s: built in {:.1} s, ran in {wall:.1} s",
        built.as_secs_f64()
    );
    println!(
        "events {} ({:.0}/s), peak rss {} MiB, height {height}, distinct tips {}, mined {}",
        c.events,
        c.events as f64 / wall,
        rss_mib(),
        tips.len(),
        c.mined
    );
    for k in Kind::ALL {
        println!("  {k:?}: {} messages, {} MB", c.sent_of(k), c.bytes_of(k) / 1_000_000);
    }
    println!("  rounds {}, judged {}, blocks taken {}", c.rounds, c.judged, c.blocks);
}
