//! `sim-check`: how far to trust the simulator. The same scenario runs on real node processes
//! (the launcher's placements that `propagation` uses) and in `scalechain-simnet`, and the
//! same statistic is taken of both: for the 1,001 transactions of `propagation`'s workload
//! submitted to peer 0 in one request, and for every block the miner mined from then on, the
//! time until 50%, 90% and 100% of the nodes had it, counted from its first node (peer 0's
//! admission, the miner's own acceptance). Medians over the transactions and blocks of a run,
//! then over runs.
//!
//! The simulator reads only what the placement is: the nodes in the order the launcher starts
//! them (a bootstrap node first where there is one, the peers, the miner last), every node
//! linked to every other (the run waits until the real nodes are), the placement's one-way
//! latency and bandwidth, the same transactions. Its costs are one calibration (the file `--costs`
//! names, else this build's measured first; the repository's reference with `--quick`), never
//! fitted to a result. It predicts with two
//! models of the CPU:
//! - `own-cores`: each node a machine of this machine's cores (what `study scale` assumes);
//! - `shared-host`: every node on one machine of this machine's cores, shared as the kernel
//!   shares them (processor sharing), which is what processes on one computer are.
//!
//! Beside the times, the CPU the nodes used from the submission until the 1,001 were
//! everywhere: measured (`/proc`, per node) and charged by the shared-host model. Where the
//! measured CPU is well above the charged, the nodes do work the cost model does not hold
//! (transport, gossip framing, timers, the API), and a CPU-bound placement cannot agree.
//!
//! Placements: `loopback` and `wan-seed001` (seed 001's three sites through delaying relays)
//! always; as root, `namespaces-100mbit` and `namespaces-wan-seed001-100mbit` (each node in a
//! network namespace, its link limited by `tc tbf` to 100 Mbit/s, where a 232 KB message to 15
//! peers takes a sender's uplink about 280 ms and bandwidth is no longer free).
//!
//! Beyond 16 nodes, where two cores cannot run the processes in real time: the real binary
//! under Shadow against the simulator, at 64 and 256 nodes on SimBlock's six regions
//! ([`shadow`]), when Shadow is on the `PATH`; the report says when it is not.

pub mod shadow;

use std::sync::Arc;
use std::time::Instant;

use scalechain_client::types::ArrivalJson;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::Params;
use scalechain_lab::launcher::netns;
use scalechain_lab::launcher::wan::Regions;
use scalechain_lab::plot::{Chart, Series};
use scalechain_lab::Table;
use scalechain_mempool::MempoolConfig;
use scalechain_p2p::msg::Role;
use scalechain_simnet::{
    CostModel, Jitter, NetModel, NodeId, Region, Sim, SimConfig, Tracking, Uplink, WorkModel,
};
use scalechain_types::{Hash, HashKind, Tx};

use super::propagation::{self, Placement, RawRun, RunOpts, FAN_OUT};
use crate::{median, Ctx, Experiment, StudyError};

/// Columns of `sim-check.csv`.
pub const COLUMNS: &[&str] = &[
    "series",
    "placement",
    "nodes",
    "model",
    "sim_p50_ms",
    "real_p50_ms",
    "sim_p90_ms",
    "real_p90_ms",
    "sim_max_ms",
    "real_max_ms",
    "worst_diff_pct",
    "within_25",
    "real_items",
    "sim_items",
    "real_cpu_ms_node",
    "sim_cpu_ms_node",
    "real_other_cores",
    "transport_ns_byte",
    "runs",
    "wall_s",
    "build",
    "costs",
    "commit",
    "seed",
];

/// The agreement the issue asks of the simulator: within 25%.
pub const WITHIN: f64 = 25.0;
/// The rate of the capped placements' links.
const CAP: &str = "100mbit";
const CAP_BPS: u64 = 100_000_000;
/// Longest virtual wait for each phase of a simulated run, ms.
const SIM_WAIT_MS: u64 = 120_000;

/// Where a check runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// Processes on loopback, joined through a bootstrap node.
    Loopback,
    /// Processes on loopback in seed 001's three sites, every pair through a delaying relay.
    Wan,
    /// Each process in a network namespace, its link limited to 100 Mbit/s (root).
    Capped,
    /// [`Setting::Wan`] between namespaces whose links are limited to 100 Mbit/s (root).
    CappedWan,
}

impl Setting {
    /// The name in the CSV.
    pub fn label(self) -> &'static str {
        match self {
            Setting::Loopback => "loopback",
            Setting::Wan => "wan-seed001",
            Setting::Capped => "namespaces-100mbit",
            Setting::CappedWan => "namespaces-wan-seed001-100mbit",
        }
    }

    fn placement(self) -> Placement {
        match self {
            Setting::Loopback => Placement::Loopback,
            Setting::Wan => Placement::Wan(Regions::seed_001()),
            Setting::Capped => Placement::Namespaces(Some(CAP.into())),
            Setting::CappedWan => Placement::HostsWan(Regions::seed_001(), CAP.into()),
        }
    }

    /// A bootstrap node joins the others (and relays no gossip).
    fn bootstrap(self) -> bool {
        matches!(self, Setting::Loopback | Setting::Capped)
    }

    fn wan(self) -> bool {
        matches!(self, Setting::Wan | Setting::CappedWan)
    }

    /// The network the simulator gives this placement: its one-way latencies (loopback 50 µs
    /// and a bridge 100 µs, constants ≪ a millisecond; seed 001's table as the relays apply
    /// it, without jitter), its bandwidth (unlimited, or the `tbf` rate up and down).
    pub fn model(self) -> NetModel {
        let bps = if matches!(self, Setting::Capped | Setting::CappedWan) { CAP_BPS } else { 0 };
        let region = |name: &str| Region { name: name.into(), share: 1.0, up_bps: bps, down_bps: bps };
        if self.wan() {
            let r = Regions::seed_001();
            NetModel {
                name: format!("{} as the relays delay", self.label()),
                regions: r.names.iter().map(|n| region(n)).collect(),
                latency_us: r
                    .one_way_ms
                    .iter()
                    .map(|row| row.iter().map(|ms| (ms * 1_000.0).round() as u64).collect())
                    .collect(),
                jitter: Jitter::None,
                loss: 0.0,
                overhead_bytes: 64,
                uplink: Uplink::Fifo,
            }
        } else {
            let us = if self == Setting::Loopback { 50 } else { 100 };
            NetModel {
                name: self.label().into(),
                regions: vec![region("host")],
                latency_us: vec![vec![us]],
                jitter: Jitter::None,
                loss: 0.0,
                overhead_bytes: 64,
                uplink: Uplink::Fifo,
            }
        }
    }
}

/// One item (a transaction or a block) of a run: when it reached each node, µs (index: the
/// node, in start order without the bootstrap node), and which node it started from.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    /// The node it started from.
    pub origin: usize,
    /// Per node, when it got there.
    pub at_us: Vec<Option<u64>>,
}

/// What one run of either world gives the comparison.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observed {
    /// The submitted transactions, peer 0 their origin.
    pub txs: Vec<Item>,
    /// The blocks the miner (the last node) mined from the submission on, the miner's own
    /// acceptance their origin.
    pub blocks: Vec<Item>,
    /// CPU per node from the submission until the transactions were everywhere, ms.
    pub cpu_ms_node: f64,
    /// Real runs: cores the rest of the machine kept busy meanwhile (NaN for simulated ones).
    pub other_cores: f64,
}

/// The time from an item's origin until `fraction` of the nodes had it, ms (`None` if its
/// origin never had it or too few nodes did). The origin counts as one of the nodes.
pub fn reach_ms(it: &Item, fraction: f64) -> Option<f64> {
    let from = (*it.at_us.get(it.origin)?)?;
    let mut d: Vec<u64> = it.at_us.iter().flatten().map(|t| t.saturating_sub(from)).collect();
    d.sort_unstable();
    let need = ((fraction.clamp(0.0, 1.0) * it.at_us.len() as f64).ceil() as usize).max(1);
    d.get(need - 1).map(|us| *us as f64 / 1e3)
}

/// Median over `items` of the time to reach 50%, 90% and 100% of the nodes (NaN if none did).
pub fn stats(items: &[Item]) -> [f64; 3] {
    [0.5, 0.9, 1.0].map(|f| median(items.iter().filter_map(|i| reach_ms(i, f)).collect()))
}

/// The real run's logs as items: per node, the first entry of each id.
pub fn from_real(raw: &RawRun) -> Observed {
    let first = |l: &[ArrivalJson]| {
        let mut m = std::collections::HashMap::new();
        for e in l {
            m.entry(e.id.to_string()).or_insert(e.at_us);
        }
        m
    };
    let at: Vec<_> = raw.logs.iter().map(|l| first(l)).collect();
    let item =
        |id: &str, origin: usize| Item { origin, at_us: at.iter().map(|m| m.get(id).copied()).collect() };
    let miner = raw.logs.len().saturating_sub(1);
    Observed {
        txs: raw.ids.iter().map(|h| item(&h.to_string(), 0)).collect(),
        blocks: raw.mined().iter().map(|(id, _)| item(id, miner)).collect(),
        cpu_ms_node: raw.cpu_ms_node,
        other_cores: raw.other_cores,
    }
}

/// The simulated run's arrivals as items, for the `measured` nodes (the miner last) from
/// `t0_us` on.
pub(crate) fn from_sim(
    sim: &Sim,
    measured: &[NodeId],
    ids: &[Hash],
    t0_us: u64,
    cpu_ms_node: f64,
) -> Observed {
    let a = sim.arrivals();
    let item = |arr: Option<&Vec<(NodeId, u64)>>, origin: usize| Item {
        origin,
        at_us: measured
            .iter()
            .map(|n| arr.and_then(|v| v.iter().filter(|(m, _)| m == n).map(|(_, t)| *t).min()))
            .collect(),
    };
    let miner = measured.len() - 1;
    let blocks = a
        .mined
        .iter()
        .filter(|m| m.miner == measured[miner])
        .map(|m| item(a.blocks.get(&m.hash), miner))
        .filter(|it| it.at_us[miner].is_some_and(|t| t >= t0_us))
        .collect();
    Observed {
        txs: ids.iter().map(|id| item(a.txs.get(id), 0)).collect(),
        blocks,
        cpu_ms_node,
        other_cores: f64::NAN,
    }
}

/// The scenario in the simulator: `n` nodes placed as `setting`, their work as `work`.
pub fn simulate(
    setting: Setting,
    n: usize,
    txs: &[Tx],
    work: WorkModel,
    extra_blocks: u64,
    seed: u64,
) -> Observed {
    let mut cfg = SimConfig::devnet(seed);
    cfg.model = setting.model();
    cfg.keep_events = false;
    cfg.work = work;
    cfg.mempool = MempoolConfig { max_descendants: FAN_OUT + 1, ..MempoolConfig::default() };
    let hash = cfg.params.hash;
    let mut sim = Sim::new(cfg);
    // In the launcher's order, in the relays' regions.
    if setting.bootstrap() {
        sim.add_node_in(Role::Bootstrap, 0);
    }
    let regions = Regions::seed_001();
    let measured: Vec<NodeId> = (0..n)
        .map(|i| {
            let role = if i + 1 == n { Role::Miner } else { Role::Peer };
            let region = if setting.wan() { regions.of_node(i) as u16 } else { 0 };
            sim.add_node_in(role, region)
        })
        .collect();
    sim.connect_all();
    let height = |sim: &Sim, id: NodeId| sim.tip(id).map_or(0, |t| t.0);
    sim.run_until(SIM_WAIT_MS, |s| measured.iter().all(|&i| height(s, i) >= 1));
    // Two heartbeats: the meshes formed.
    sim.run_for(1_500);
    let ids: Vec<Hash> = txs.iter().map(|t| t.txid(hash)).collect();
    // The measured nodes' CPU, as `/proc` is read for the real ones (the bootstrap node's
    // work still takes its share of the machine).
    let cpu = |sim: &Sim| measured.iter().map(|&i| sim.cpu_ms(i)).sum::<f64>();
    let t0 = sim.now_us();
    let cpu0 = cpu(&sim);
    sim.track(Tracking::All);
    sim.submit_tracked(measured[0], txs.to_vec());
    let everywhere = |s: &Sim| {
        ids.iter().all(|id| {
            s.arrivals().txs.get(id).is_some_and(|v| measured.iter().all(|m| v.iter().any(|(n, _)| n == m)))
        })
    };
    sim.run_until(SIM_WAIT_MS, everywhere);
    let cpu_ms_node = (cpu(&sim) - cpu0) / measured.len() as f64;
    let empty = |s: &Sim| measured.iter().all(|&i| s.replica(i).is_some_and(|r| r.mempool.is_empty()));
    sim.run_until(SIM_WAIT_MS, empty);
    if extra_blocks > 0 {
        let miner = measured[n - 1];
        let from = height(&sim, miner);
        sim.run_until(SIM_WAIT_MS, |s| height(s, miner) >= from + extra_blocks);
    }
    sim.run_for(500);
    from_sim(&sim, &measured, &ids, t0, cpu_ms_node)
}

/// The two CPU models the simulator predicts with.
const MODELS: [&str; 2] = ["own-cores", "shared-host"];

fn work_model(model: &str, costs: &Arc<CostModel>, cores: u32) -> WorkModel {
    match model {
        "own-cores" => WorkModel::Modelled { costs: costs.clone(), cores },
        _ => WorkModel::SharedHost { costs: costs.clone(), host_cores: cores, node_threads: cores },
    }
}

/// Runs the experiment.
pub fn run(ctx: &Ctx) -> Result<Table, StudyError> {
    let exe = ctx.opts.worker.clone().ok_or_else(|| {
        StudyError::Wrong("sim-check runs node processes: it needs the scalechain binary".into())
    })?;
    let quick = ctx.opts.quick;
    let costs = super::scale::cost_model(ctx)?;
    // What the transport costs a node per byte of a batch-sized gossip message: not in the
    // cost model (a batch's 232 KB cost a node about a millisecond to send or receive), measured
    // so the table can say how much of a gap it explains.
    let transport_ns = if quick {
        f64::NAN
    } else {
        ctx.progress.set_message("measuring the transport");
        scalechain_simnet::calibrate_transport(190_000, 32, 3)
            .map_err(|e| StudyError::Wrong(e.to_string()))?
    };
    let dir = &ctx.opts.out;
    std::fs::create_dir_all(dir).map_err(|e| StudyError::io(dir, e))?;
    let path = dir.join("sim-check-costs.toml");
    std::fs::write(&path, costs.to_toml()).map_err(|e| StudyError::io(&path, e))?;
    let costs = Arc::new(costs);
    let cores = u32::try_from(ctx.machine.cores).unwrap_or(1).max(1);

    let sizes: Vec<usize> = match ctx.opts.nodes {
        Some(n) => vec![n.max(2)],
        None if quick => vec![4],
        None => vec![4, 8, 16],
    };
    let mut settings = vec![Setting::Loopback, Setting::Wan];
    if !quick && netns::is_root() {
        settings.extend([Setting::Capped, Setting::CappedWan]);
    } else if !quick {
        ctx.progress.println("sim-check: not root, so no run on emulated hosts (network namespaces)");
    }
    let runs = if quick { 1 } else { ctx.opts.runs.unwrap_or(3).max(1) };
    let extra_blocks = if quick { 0 } else { 3 };
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let txs = propagation::workload(&p);

    ctx.start((settings.len() * sizes.len() * runs) as u64, "sim-check");
    let mut table = Table::new(COLUMNS);
    for &setting in &settings {
        for &n in &sizes {
            let wall = Instant::now();
            let mut real = Vec::with_capacity(runs);
            let mut sim: Vec<Vec<Observed>> = vec![Vec::new(); MODELS.len()];
            for r in 0..runs {
                ctx.progress.set_message(format!("{} {n} nodes, run {}/{runs}", setting.label(), r + 1));
                let opts = RunOpts {
                    all_linked: true,
                    extra_blocks,
                    poll: std::time::Duration::from_millis(250),
                    profile: false,
                };
                let raw = propagation::run_raw(&exe, n, &txs, p.hash, &setting.placement(), &opts)?;
                real.push(from_real(&raw));
                for (m, model) in MODELS.iter().enumerate() {
                    let seed = ctx.opts.seed.wrapping_add(r as u64);
                    sim[m].push(simulate(
                        setting,
                        n,
                        &txs,
                        work_model(model, &costs, cores),
                        extra_blocks,
                        seed,
                    ));
                }
                ctx.progress.inc(1);
            }
            let wall_s = wall.elapsed().as_secs_f64();
            for (m, model) in MODELS.iter().enumerate() {
                let sim_cpu = *model == "shared-host";
                let compared =
                    Compared { placement: setting.label(), n, model, sim: &sim[m], real: &real, sim_cpu };
                for series in ["tx", "block"] {
                    table.push(compared.row(ctx, series, transport_ns, runs, wall_s, &costs.source));
                }
            }
        }
    }
    shadow_part(ctx, &exe, &mut table)?;
    ctx.finish(Experiment::SimCheck, &table, charts, section)
}

/// One comparison of simulated runs with measured ones, for the table.
struct Compared<'a> {
    placement: &'a str,
    n: usize,
    model: &'a str,
    sim: &'a [Observed],
    real: &'a [Observed],
    /// The model charged CPU worth reporting (the shared host's).
    sim_cpu: bool,
}

impl Compared<'_> {
    /// The row of `series` (`tx` or `block`): medians over runs of each statistic.
    fn row(
        &self,
        ctx: &Ctx,
        series: &str,
        transport_ns: f64,
        runs: usize,
        wall_s: f64,
        costs: &str,
    ) -> Vec<String> {
        let pick = |o: &Observed| if series == "tx" { o.txs.clone() } else { o.blocks.clone() };
        let over_runs = |obs: &[Observed]| -> [f64; 3] {
            let per: Vec<[f64; 3]> = obs.iter().map(|o| stats(&pick(o))).collect();
            [0, 1, 2].map(|k| median(per.iter().map(|q| q[k]).filter(|x| x.is_finite()).collect()))
        };
        let (s, r) = (over_runs(self.sim), over_runs(self.real));
        let diffs: Vec<f64> = (0..3)
            .filter(|&k| r[k].is_finite() && s[k].is_finite() && r[k] > 0.0)
            .map(|k| (s[k] - r[k]) / r[k] * 100.0)
            .collect();
        let worst = diffs.iter().copied().max_by(|a, b| a.abs().total_cmp(&b.abs()));
        let count = |obs: &[Observed]| obs.iter().map(|o| pick(o).len()).sum::<usize>();
        let cpu =
            |obs: &[Observed]| median(obs.iter().map(|o| o.cpu_ms_node).filter(|x| x.is_finite()).collect());
        let other = median(self.real.iter().map(|o| o.other_cores).filter(|x| x.is_finite()).collect());
        let f = |x: f64| if x.is_finite() { format!("{x:.1}") } else { String::new() };
        vec![
            series.into(),
            self.placement.into(),
            self.n.to_string(),
            self.model.into(),
            f(s[0]),
            f(r[0]),
            f(s[1]),
            f(r[1]),
            f(s[2]),
            f(r[2]),
            worst.map_or(String::new(), |w| format!("{w:.0}")),
            worst.is_some_and(|w| w.abs() <= WITHIN).to_string(),
            count(self.real).to_string(),
            count(self.sim).to_string(),
            f(cpu(self.real)),
            if self.sim_cpu { f(cpu(self.sim)) } else { String::new() },
            if other.is_finite() { format!("{other:.2}") } else { String::new() },
            if transport_ns.is_finite() { format!("{transport_ns:.2}") } else { String::new() },
            runs.to_string(),
            format!("{wall_s:.1}"),
            ctx.machine.build.into(),
            costs.replace(',', ";"),
            ctx.machine.commit.into(),
            ctx.opts.seed.to_string(),
        ]
    }
}

/// The placement label of the runs under Shadow.
pub const SHADOW_PLACEMENT: &str = "shadow-simblock";
/// The simulator's models beside Shadow: no work charged, as Shadow charges none, and each
/// uplink model.
pub const SHADOW_MODELS: [(&str, Uplink); 3] =
    [("fifo-uplink", Uplink::Fifo), ("fair-uplink", Uplink::Fair), ("tcp-uplink", Uplink::Tcp)];

/// The real binary under Shadow against the simulator ([`shadow`]), at 64 and 256 nodes
/// (16 with `--quick`), when Shadow is found; nothing otherwise (the section says so).
fn shadow_part(ctx: &Ctx, exe: &std::path::Path, table: &mut Table) -> Result<(), StudyError> {
    let Some(bin) = scalechain_lab::launcher::shadow::find() else {
        ctx.progress.println("sim-check: Shadow is not on the PATH (nor SCALECHAIN_SHADOW): no run under it");
        return Ok(());
    };
    let sizes: &[usize] = if ctx.opts.quick { &[16] } else { &[64, 256] };
    let mut p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    p.genesis_time = scalechain_lab::launcher::shadow::EPOCH_MS;
    let txs = propagation::workload(&p);
    let ids: Vec<Hash> = txs.iter().map(|t| t.txid(p.hash)).collect();
    let base = ctx.opts.out.join("shadow");
    for &n in sizes {
        ctx.progress.set_message(format!("under Shadow: {n} nodes"));
        let seed = ctx.opts.seed;
        let sims: Vec<(Observed, shadow::Topology)> = SHADOW_MODELS
            .iter()
            .map(|&(_, uplink)| shadow::simulate(n, &p, &txs, seed, uplink))
            .collect::<Result<_, _>>()?;
        let dir = base.join(format!("n{n}"));
        let (real, wall) = shadow::run_shadow(&bin, exe, &sims[0].1, &txs, &ids, seed, &dir)?;
        for ((model, _), (sim, _)) in SHADOW_MODELS.iter().zip(&sims) {
            let compared = Compared {
                placement: SHADOW_PLACEMENT,
                n,
                model,
                sim: std::slice::from_ref(sim),
                real: std::slice::from_ref(&real),
                sim_cpu: false,
            };
            for series in ["tx", "block"] {
                table.push(compared.row(ctx, series, f64::NAN, 1, wall.as_secs_f64(), "none charged"));
            }
        }
    }
    Ok(())
}

pub(crate) fn charts(t: &Table) -> Vec<Chart> {
    let mut out = Vec::new();
    for placement in t.distinct("placement") {
        let is = |r: &[String], col: &str, v: &str| t.col(col).is_some_and(|i| r[i] == v);
        let rows = |series: &str, model: &str| -> Vec<&Vec<String>> {
            t.rows
                .iter()
                .filter(|r| {
                    is(r, "series", series) && is(r, "placement", &placement) && is(r, "model", model)
                })
                .collect()
        };
        let points = |rows: &[&Vec<String>], y: &str| -> Vec<(f64, f64)> {
            rows.iter().filter_map(|r| Some((t.num(r, "nodes")?, t.num(r, y)?))).collect()
        };
        let models: Vec<String> = t
            .distinct("model")
            .into_iter()
            .filter(|m| t.rows.iter().any(|r| is(r, "placement", &placement) && is(r, "model", m)))
            .collect();
        let under_shadow = placement == SHADOW_PLACEMENT;
        let mut series = Vec::new();
        for (s, what) in [("tx", "transactions"), ("block", "blocks")] {
            // The measured times are the same in every model's rows.
            if let Some(first) = models.first() {
                let label = if under_shadow { "under Shadow" } else { "measured" };
                series.push(Series::seed(format!("{what}: {label}"), points(&rows(s, first), "real_p90_ms")));
            }
            for m in &models {
                let name = m.replace('-', " ");
                series.push(Series::line(
                    format!("{what}: simulated, {name}"),
                    points(&rows(s, m), "sim_p90_ms"),
                ));
            }
        }
        let against = if under_shadow { "the real binary under Shadow" } else { "measured" };
        out.push(Chart {
            title: format!("Simulated against {against}, {placement}: time to 90% of the nodes"),
            x_label: "nodes".into(),
            y_label: "ms from the first node".into(),
            log_x: true,
            log_y: true,
            x_names: Vec::new(),
            series,
        });
    }
    out
}

fn section(t: &Table) -> String {
    let mut s = String::from(
        "The same scenario on real node processes and in the simulator: `propagation`'s 1,001 \
         transactions submitted to peer 0 in one request, and every block the miner mined from \
         then on; for each, the time from its first node (peer 0's admission; the miner's own \
         acceptance) until 50%, 90% and 100% of the nodes had it, medians over the items of a \
         run and then over runs. The simulator is given only the placement (the nodes in start \
         order, all linked, the placement's latency and bandwidth) and one calibration of this \
         build's costs (`sim-check-costs.toml`); nothing is fitted. Two CPU models: `own-cores` \
         (each node a machine of its own, as `study scale` assumes) and `shared-host` (every \
         node on this machine's cores, shared as processes share them).\n\n\
         How to read it: `worst_diff_pct` is the largest of the three differences, (simulated − \
         measured) / measured; `within_25` says whether all three are within 25%. \
         `real_cpu_ms_node` is the CPU a node process used from the submission until the \
         1,001 were everywhere, `sim_cpu_ms_node` what the shared-host model charged for the \
         same: where the first is well above the second, the nodes did work the cost model does \
         not hold (transport encryption and framing, gossip bookkeeping, timers, the API) and on \
         a CPU-bound placement no model of these costs can agree. `real_other_cores` is what \
         the rest of the machine kept busy meanwhile (the study itself, the relays): the nodes \
         had the machine's cores less that. `transport_ns_byte` is the CPU the node's libp2p \
         stack takes per byte of a 232 KB gossip message on one side (two of the node's network \
         tasks exchanging such messages in one process): the cost model leaves it out, and it \
         says how much of a gap it could explain (the batch is 232 KB). Blocks are few per run (the \
         block interval is 1 s), so their percentiles are coarse.\n\n",
    );
    let within = |model: &str| {
        let rows: Vec<&Vec<String>> =
            t.rows.iter().filter(|r| t.col("model").is_some_and(|i| r[i] == model)).collect();
        let ok = rows.iter().filter(|r| t.col("within_25").is_some_and(|i| r[i] == "true")).count();
        (ok, rows.len())
    };
    for model in MODELS.into_iter().chain(SHADOW_MODELS.map(|(m, _)| m)) {
        let (ok, all) = within(model);
        if all > 0 {
            s.push_str(&format!("- `{model}`: {ok} of {all} comparisons within 25%.\n"));
        }
    }
    s.push('\n');
    s.push_str(&shadow_paragraph(t));
    s.push_str(&t.markdown(&COLUMNS[..17]));
    s
}

/// What the report says of the runs under Shadow: how they were made, or that Shadow was absent.
fn shadow_paragraph(t: &Table) -> String {
    let ran = t.rows.iter().any(|r| t.col("placement").is_some_and(|i| r[i] == SHADOW_PLACEMENT));
    if !ran {
        return format!(
            "**Under Shadow: not run.** Shadow (a network simulator that runs the real binary in \
             virtual time) was not on the `PATH`, nor named by `SCALECHAIN_SHADOW`, so the check \
             beyond 16 nodes (placement `{SHADOW_PLACEMENT}`) is absent from this run. It is built \
             from its sources (docs/SIMULATOR.md says how).\n\n"
        );
    }
    format!(
        "**Under Shadow** (placement `{SHADOW_PLACEMENT}`): the real `scalechain` \
         binary, one process per simulated host, on SimBlock's six regions (the latency table's means, \
         each region's bandwidths), each node dialling the peers the simulator gave it (eight each), \
         against the simulator on the same network. Shadow runs processes in zero virtual time, so \
         neither world charges CPU: this checks the network model and the relay, not the cost model. \
         The simulator runs with each of its uplink models: `fifo-uplink` sends one message after \
         another at the full upload bandwidth (SimBlock's), `fair-uplink` shares the bandwidth equally \
         among the peers with messages queued, `tcp-uplink` sends a socket send buffer (131,072 bytes) \
         of each copy at a time, in the order written, each connection at most a TCP window \
         (174,760 bytes) per round trip (both Shadow's defaults). \
         `real_*` are Shadow's times, from the nodes' own arrival logs; one run a size; `wall_s` is \
         Shadow's wall time. Before the submission every node's peer book is read: the real links \
         are the simulated ones. Where they differ, and why, docs/SIMULATOR.md says under \
         Validity.\n\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_client::types::ArrivalJson;

    #[test]
    fn reach_counts_the_origin_and_needs_enough_nodes() {
        let it = Item { origin: 1, at_us: vec![Some(5_000), Some(1_000), Some(3_000), None] };
        // Four nodes: 50% is the second (2 ms after the origin), 90% and 100% the fourth,
        // which never had it.
        assert_eq!(reach_ms(&it, 0.5), Some(2.0));
        assert_eq!(reach_ms(&it, 0.25), Some(0.0));
        assert_eq!(reach_ms(&it, 0.75), Some(4.0));
        assert_eq!(reach_ms(&it, 1.0), None);
        let lost = Item { origin: 0, at_us: vec![None, Some(1)] };
        assert_eq!(reach_ms(&lost, 0.5), None);
        let q = stats(&[
            it.clone(),
            Item { origin: 0, at_us: vec![Some(0), Some(4_000), Some(6_000), Some(8_000)] },
        ]);
        assert_eq!(q[0], 3.0);
        assert_eq!(q[2], 8.0);
    }

    fn entry(seq: u64, kind: &str, id: Hash, at_us: u64, source: &str) -> ArrivalJson {
        ArrivalJson {
            seq,
            kind: kind.into(),
            id,
            height: None,
            lock_wait_us: None,
            lock_held_us: None,
            at_us,
            source: source.into(),
            peer: None,
        }
    }

    #[test]
    fn both_worlds_give_the_same_items() {
        let tx = Hash([1; 32]);
        let block = Hash([2; 32]);
        let old = Hash([3; 32]);
        // Peer 0 (submitted to), peer 1, the miner. The old block was mined before t0.
        let raw = RawRun {
            logs: vec![
                vec![entry(1, "tx", tx, 1_100, "local"), entry(2, "block", block, 2_300, "gossip")],
                vec![entry(1, "tx", tx, 1_400, "gossip"), entry(2, "tx", tx, 1_900, "gossip")],
                vec![
                    entry(1, "block", old, 900, "mined"),
                    entry(2, "tx", tx, 1_500, "gossip"),
                    entry(3, "block", block, 2_000, "mined"),
                ],
            ],
            ids: vec![tx],
            t0: 1_000,
            cpu_ms_node: 7.0,
            other_cores: 0.1,
            profile: Vec::new(),
        };
        let o = from_real(&raw);
        assert_eq!(o.txs, vec![Item { origin: 0, at_us: vec![Some(1_100), Some(1_400), Some(1_500)] }]);
        assert_eq!(o.blocks, vec![Item { origin: 2, at_us: vec![Some(2_300), None, Some(2_000)] }]);
        assert_eq!(stats(&o.txs), [0.3, 0.4, 0.4]);
        assert!(stats(&o.blocks)[2].is_nan());
    }

    #[test]
    fn a_simulated_run_observes_every_transaction_everywhere() {
        let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
        let txs = propagation::workload(&p);
        let costs = Arc::new(CostModel::reference());
        let shared = simulate(Setting::Loopback, 3, &txs, work_model("shared-host", &costs, 2), 1, 1);
        assert_eq!(shared.txs.len(), txs.len());
        assert!(shared.txs.iter().all(|i| i.at_us.len() == 3 && i.at_us.iter().all(Option::is_some)));
        assert!(!shared.blocks.is_empty());
        assert!(shared.cpu_ms_node > 0.0);
        let own = simulate(Setting::Loopback, 3, &txs, work_model("own-cores", &costs, 2), 1, 1);
        // Two receivers sharing two cores take longer than each with two of its own.
        assert!(stats(&shared.txs)[2] > stats(&own.txs)[2], "{:?} {:?}", stats(&shared.txs), stats(&own.txs));
        // The WAN's delays: India is 175 ms from Canada one way.
        let wan = simulate(Setting::Wan, 3, &txs, work_model("own-cores", &costs, 2), 0, 1);
        assert!(stats(&wan.txs)[2] >= 175.0, "{:?}", stats(&wan.txs));
    }
}
