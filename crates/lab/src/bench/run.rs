//! Running a benchmark against nodes: the funds (the devnet premine keys' coins, read from the
//! first node), every round's transactions prepared and signed before the first round (funding
//! split for all rounds at once and confirmed), then each round in turn — the offer under its
//! controller, round-robin over the nodes, beside a block watcher that follows the first
//! node's tip events (latency ends when a block is first seen) and a progress line a second;
//! then a drain until the round's accepted transactions are confirmed or its drain time
//! passes; then the round's measurements.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rayon::prelude::*;

use scalechain_client::Client;
use scalechain_consensus::params::{SigMode, DEVNET_PREMINE_OUTPUTS};
use scalechain_consensus::Params;
use scalechain_types::{Hash, Tx};

use super::metrics::{rates, RoundResult, Sample};
use super::spec::{Benchmark, Workload};
use crate::load::ballots::ballots;
use crate::load::converge::wait_height;
use crate::load::fund::fund;
use crate::load::prepare::{premine_funds, premine_funds_on, prepare_shaped, Fund, Shape, MAX_SPLIT_OUTPUTS};
use crate::load::report::{cpu, memory};
use crate::load::schedule::Bounded;
use crate::load::submit::{offer, Counters, OfferConfig};
use crate::load::watch::{confirmations, wait_confirmed, Watcher};
use crate::load::{Clock, LoadError, SystemClock};

/// Where the load goes.
pub struct Env<'a> {
    /// The nodes the load goes to, round-robin; the first is watched.
    pub targets: &'a [(String, Client)],
    /// The nodes' processes, when they run on this machine (CPU and memory come from
    /// `/proc`); empty for remote nodes.
    pub pids: &'a [(String, u32)],
    /// The chain's parameters.
    pub params: &'a Params,
    /// Which premine keys pay the load.
    pub sig: SigMode,
    /// The counters a round's offer counts into (offered, accepted, refused, transactions in
    /// blocks), for a caller that reads them while the round runs (the shell's `load status`);
    /// `None`: a fresh set per round.
    pub counters: Option<Arc<Counters>>,
}

/// Every round's transactions, signed.
pub struct Prepared {
    /// The funding levels.
    pub funding: Vec<Vec<Tx>>,
    /// Each round's load, and its txids.
    pub loads: Vec<(Vec<Tx>, Vec<Hash>)>,
    /// Seconds the signing took.
    pub took_s: f64,
}

/// What a benchmark did.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The rounds run (a round cut short by Ctrl-C included, marked so).
    pub rounds: Vec<RoundResult>,
    /// Seconds the funding took to be confirmed.
    pub fund_s: f64,
    /// Ctrl-C stopped the benchmark.
    pub stopped: bool,
}

/// How often the progress line and the memory sample come.
const PROGRESS: Duration = Duration::from_secs(1);
/// How often the waits look.
const POLL: Duration = Duration::from_millis(100);

/// The premine keys' spendable coins, read from the first node. A node that keeps no owner
/// index (`store.owner_index = false`) answers 404 to lookups by owner: on a network the
/// benchmark started itself in a new directory (`fresh`), nothing has spent the premine's genesis
/// coins yet, and they are taken as they are; elsewhere the 404 is the error.
pub async fn funds(env: &Env<'_>, fresh: bool) -> Result<Vec<Fund>, LoadError> {
    let (_, node) = env.targets.first().ok_or(LoadError::NoTargets)?;
    let tip = node.tip().await?;
    let listed =
        premine_funds_on(node, env.params, env.sig, DEVNET_PREMINE_OUTPUTS as usize, tip.height).await;
    let funds = match listed {
        Err(e) if e.is_not_found() && fresh => premine_funds(env.params, env.sig),
        other => other?,
    };
    if funds.is_empty() {
        return Err(LoadError::NoFunds(
            "the devnet premine keys hold no spendable coins on the first node".into(),
        ));
    }
    Ok(funds)
}

/// Prepares and signs every round's transactions (in parallel): the transfers of every round
/// from one tree of splits, and for each ballot workload an election (published by a funding
/// transaction paid by a fund of its own) and its ballots; a mix's parts interleaved by weight.
pub fn prepare(b: &Benchmark, env: &Env<'_>, funds: &[Fund]) -> Result<Prepared, LoadError> {
    let t0 = Instant::now();
    let kind = env.params.hash;
    let chain_id = env.params.chain_id();
    // Each round's parts with their counts.
    let rounds: Vec<Vec<(usize, &Workload)>> =
        b.rounds.iter().map(|r| r.workload.split(usize::try_from(r.txs).unwrap_or(usize::MAX))).collect();
    let elections = rounds.iter().flatten().filter(|(_, w)| matches!(w, Workload::Ballot { .. })).count();
    if elections >= funds.len() {
        return Err(LoadError::NoFunds(format!(
            "{elections} elections need a fund each and the transfers one more; there are {} funds",
            funds.len()
        )));
    }
    // The last funds pay for the elections; the others fund the transfers.
    let (transfer_funds, payers) = funds.split_at(funds.len() - elections);
    let shapes: Vec<(usize, Shape)> = rounds
        .iter()
        .flatten()
        .filter_map(|(n, w)| match w {
            Workload::Transfer(s) => Some((*n, *s)),
            _ => None,
        })
        .collect();
    let (mut funding, transfers) =
        prepare_shaped(kind, &chain_id, transfer_funds, &shapes, MAX_SPLIT_OUTPUTS);
    let mut transfers = transfers.into_iter();
    let mut payers = payers.iter();
    let mut loads = Vec::with_capacity(rounds.len());
    for (i, parts) in rounds.iter().enumerate() {
        let mut made: Vec<Vec<Tx>> = Vec::with_capacity(parts.len());
        for (j, (n, w)) in parts.iter().enumerate() {
            made.push(match w {
                Workload::Transfer(_) => transfers.next().unwrap_or_default(),
                Workload::Ballot { scheme, candidates } => {
                    let payer = payers
                        .next()
                        .ok_or_else(|| LoadError::NoFunds("no fund left for an election".into()))?;
                    let coin = *payer
                        .coins
                        .first()
                        .ok_or_else(|| LoadError::NoFunds("an election's fund has no coin".into()))?;
                    // The coin is spent by this election only: its outpoint makes the election,
                    // its keys and its voters new on every run against the same chain.
                    let mut id = [0u8; 8];
                    id.copy_from_slice(&coin.0.txid.0[..8]);
                    let seed =
                        u64::from_le_bytes(id) ^ u64::from(coin.0.index) << 32 ^ ((i as u64) << 8 | j as u64);
                    let made = ballots(kind, &chain_id, *scheme, *candidates, *n, seed, &payer.key, coin)
                        .map_err(|e| LoadError::NoFunds(e.to_string()))?;
                    // Published with the first level of splits: confirmed before any round.
                    if funding.is_empty() {
                        funding.push(Vec::new());
                    }
                    funding[0].push(made.election_tx);
                    made.ballots
                }
                Workload::Mix(_) => Vec::new(),
            });
        }
        let load = interleave(made);
        let ids = load.par_iter().map(|t| t.txid(kind)).collect();
        loads.push((load, ids));
    }
    Ok(Prepared { funding, loads, took_s: t0.elapsed().as_secs_f64() })
}

/// The parts' transactions in one sequence, each part spread evenly through it (the part
/// furthest behind its share goes next).
fn interleave(parts: Vec<Vec<Tx>>) -> Vec<Tx> {
    if parts.len() == 1 {
        return parts.into_iter().next().unwrap_or_default();
    }
    let total: usize = parts.iter().map(Vec::len).sum();
    let sizes: Vec<usize> = parts.iter().map(Vec::len).collect();
    let mut iters: Vec<_> = parts.into_iter().map(Vec::into_iter).collect();
    let mut taken = vec![0usize; iters.len()];
    let mut out = Vec::with_capacity(total);
    for k in 1..=total {
        let next = (0..iters.len()).filter(|&j| taken[j] < sizes[j]).max_by(|&a, &b| {
            let behind = |j: usize| sizes[j] as f64 * k as f64 / total as f64 - taken[j] as f64;
            behind(a).total_cmp(&behind(b)).then(b.cmp(&a))
        });
        let Some(j) = next else { break };
        if let Some(t) = iters[j].next() {
            out.push(t);
        }
        taken[j] += 1;
    }
    out
}

/// Runs the rounds; `log` gets the progress lines. Ctrl-C (`stop`) ends the round running
/// (measured as far as it went) and the benchmark.
pub async fn run(
    b: &Benchmark,
    env: &Env<'_>,
    prepared: Prepared,
    stop: &AtomicBool,
    log: &(dyn Fn(String) + Sync),
) -> Result<Outcome, LoadError> {
    run_watched(b, env, prepared, stop, log, &mut |_, _| {}).await
}

/// Where a round is, for a watcher of [`run_watched`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RoundEdge {
    /// The round is about to start its offer (the funding is confirmed).
    Start,
    /// Its drain ended (or it failed): nothing of it runs any more.
    End,
}

/// [`run`], calling `watch` with each round's index just before its offer starts and just
/// after its drain ends (or it fails): for whoever samples the nodes over exactly the rounds
/// (a CPU profiler), not over the funding before them.
pub async fn run_watched(
    b: &Benchmark,
    env: &Env<'_>,
    prepared: Prepared,
    stop: &AtomicBool,
    log: &(dyn Fn(String) + Sync),
    watch: &mut (dyn FnMut(usize, RoundEdge) + Send),
) -> Result<Outcome, LoadError> {
    let clock = SystemClock::start();
    let (_, node0) = env.targets.first().ok_or(LoadError::NoTargets)?;
    let kind = env.params.hash;
    let t_fund = clock.now();
    let from = node0.tip().await?.height;
    let funded = match fund(
        node0,
        &prepared.funding,
        kind,
        from,
        Duration::from_secs(120),
        POLL,
        &clock,
        stop,
    )
    .await
    {
        Err(LoadError::Stopped) => return Ok(Outcome { stopped: true, ..Outcome::default() }),
        f => f?,
    };
    if let Some((txid, why)) = funded.refused.first() {
        return Err(LoadError::FundingRefused(format!("{txid}: {why}")));
    }
    // Every node holds the funding before the first round.
    wait_height(env.targets, funded.height, Duration::from_secs(60), POLL, &clock, stop).await?;
    let mut out = Outcome { fund_s: clock.now().saturating_sub(t_fund).as_secs_f64(), ..Outcome::default() };
    log(format!("funded {} rounds at height {} in {:.1} s", b.rounds.len(), funded.height, out.fund_s));
    let clients: Vec<Client> = env.targets.iter().map(|(_, c)| c.clone()).collect();
    for (i, (round, (load, ids))) in b.rounds.iter().zip(prepared.loads).enumerate() {
        if stop.load(Ordering::Relaxed) {
            out.stopped = true;
            break;
        }
        // A funding transaction the node refused takes its leaves' transfers out.
        let keep: Vec<bool> =
            load.iter().map(|t| t.inputs.iter().all(|i| funded.confirmed.contains(&i.prev.txid))).collect();
        let (load, ids): (Vec<Tx>, Vec<Hash>) =
            load.into_iter().zip(ids).zip(&keep).filter(|(_, k)| **k).map(|(x, _)| x).unzip();
        let label = format!("[{}/{} {}]", i + 1, b.rounds.len(), round.name);
        log(format!(
            "{label} {} under {}: {} transactions{}",
            round.workload.label(),
            round.controller,
            load.len(),
            round.duration.map_or_else(String::new, |d| format!(", {:.0} s", d.as_secs_f64()))
        ));
        watch(i, RoundEdge::Start);
        let r = run_round(env, &clients, node0, round, &load, &ids, &clock, stop, &label, log).await;
        watch(i, RoundEdge::End);
        let r = r?;
        let stopped = r.stopped;
        log(format!(
            "{label} sent {} at {:.0} tx/s; {} confirmed at {:.0} tx/s; {} failed; latency p50 {:.0} ms p99 {:.0} ms",
            r.offered,
            r.send_tps,
            r.succeeded,
            r.throughput_tps,
            r.failed_total(),
            r.latency.map_or(0.0, |l| l.p50),
            r.latency.map_or(0.0, |l| l.p99),
        ));
        out.rounds.push(r);
        if stopped {
            out.stopped = true;
            break;
        }
    }
    Ok(out)
}

/// Awaits `f`, passing the progress lines that arrive meanwhile to `log`.
async fn logging<F: std::future::Future>(
    f: F,
    lines: &std::sync::mpsc::Receiver<String>,
    log: &(dyn Fn(String) + Sync),
) -> F::Output {
    let mut f = std::pin::pin!(f);
    loop {
        tokio::select! {
            r = &mut f => return r,
            () = tokio::time::sleep(Duration::from_millis(200)) => lines.try_iter().for_each(log),
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn run_round(
    env: &Env<'_>,
    clients: &[Client],
    node0: &Client,
    round: &super::spec::Round,
    load: &[Tx],
    ids: &[Hash],
    clock: &SystemClock,
    stop: &AtomicBool,
    label: &str,
    log: &(dyn Fn(String) + Sync),
) -> Result<RoundResult, LoadError> {
    let clock = *clock;
    let height = node0.tip().await?.height;
    let counters = env.counters.clone().unwrap_or_default();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (node, done, counters) = (node0.clone(), done.clone(), counters.clone());
        tokio::spawn(async move {
            let mut w = Watcher::new(height).counting_into(counters);
            w.follow(&node, &clock, Duration::from_millis(50), &done).await;
            w
        })
    };
    let start = clock.now();
    let progress = {
        let (node, done, counters) = (node0.clone(), done.clone(), counters.clone());
        let pids = env.pids.to_vec();
        let label = label.to_string();
        // The log goes through a channel: the progress task outlives no borrow.
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let task = tokio::spawn(async move {
            let mut series = Vec::new();
            let mut samples = Vec::new();
            let mut next = start;
            let mut last_offered = 0u64;
            while !done.load(Ordering::Relaxed) {
                next += PROGRESS;
                while clock.now() < next && !done.load(Ordering::Relaxed) {
                    clock.sleep(Duration::from_millis(100).min(next.saturating_sub(clock.now()))).await;
                }
                let (offered, accepted, _) = counters.get();
                let confirmed = counters.confirmed.load(Ordering::Relaxed);
                let mempool = node.status().await.map_or(0, |s| s.mempool_txs);
                let t_s = clock.now().saturating_sub(start).as_secs_f64();
                samples.push(memory::sample(&pids, t_s));
                series.push(Sample { t_s, offered, accepted, confirmed, mempool });
                let _ = tx.send(format!(
                    "{label} t={t_s:>6.1}s sent {offered:>8} ({:>6}/s) accepted {accepted:>8} in blocks {confirmed:>8} mempool {mempool:>7}",
                    offered.saturating_sub(last_offered)
                ));
                last_offered = offered;
            }
            (series, samples)
        });
        (task, rx)
    };
    let cpu0 = cpu::sample(env.pids, "bench");
    let mut schedule = Bounded { rate: round.rate.clone(), total: load.len() as u64, end: round.duration };
    let cfg = OfferConfig { hash: env.params.hash, ..OfferConfig::default() };
    let offering = offer(load, &mut schedule, clients, &clock, &cfg, &counters, stop);
    let offered = logging(offering, &progress.1, log).await;
    let offered = match offered {
        Ok(o) => o,
        Err(e) => {
            done.store(true, Ordering::Relaxed);
            return Err(e);
        }
    };
    let stopped = stop.load(Ordering::Relaxed);
    // The generator's own CPU while it offered (the drain is mostly waiting).
    let me = |s: &cpu::Sample| s.iter().find(|(n, _)| n == "bench").map_or(0.0, |(_, x)| *x);
    let generator_cpu = me(&cpu::sample(&[], "bench")) - me(&cpu0);
    // The drain: until every accepted transaction is on the main chain, or the drain time.
    let accepted: HashSet<Hash> = offered.accepted_at.keys().copied().collect();
    logging(wait_confirmed(node0, accepted, height, round.drain, POLL, &clock, stop), &progress.1, log)
        .await?;
    let cpu1 = cpu::sample(env.pids, "bench");
    let window_s = clock.now().saturating_sub(start).as_secs_f64();
    // Let the watcher see the last block's event before it stops.
    clock.sleep(Duration::from_millis(100)).await;
    done.store(true, Ordering::Relaxed);
    let watcher = watcher.await.map_err(|e| LoadError::Task(format!("the block watcher: {e}")))?;
    let (series, samples) =
        progress.0.await.map_err(|e| LoadError::Task(format!("the progress lines: {e}")))?;
    // Each node's peak resident memory over the samples.
    let mut peaks: BTreeMap<String, u64> = BTreeMap::new();
    for (n, b) in samples.iter().flat_map(|m| &m.rss) {
        let p = peaks.entry(n.clone()).or_default();
        *p = (*p).max(*b);
    }
    for line in progress.1.try_iter() {
        log(line);
    }
    let tip = node0.tip().await?.height;
    let confirmed = confirmations(node0, height, tip, &watcher, &offered.accepted_at, &clock).await?;
    // When each accepted transaction's request was sent.
    let mut sent_at: HashMap<Hash, Duration> = HashMap::with_capacity(offered.accepted_at.len());
    for (range, at) in &offered.sent {
        for id in ids.get(range.clone()).unwrap_or_default() {
            if offered.accepted_at.contains_key(id) {
                sent_at.insert(*id, *at);
            }
        }
    }
    let last_send = offered.sent.last().map_or(start, |s| s.1);
    let (send_tps, throughput_tps, latency) =
        rates(offered.offered as u64, &sent_at, &confirmed, offered.started, last_send);
    let mut failed = offered.refused.clone();
    let on_chain: HashSet<Hash> = confirmed.iter().map(|c| c.0).collect();
    let unconfirmed: Vec<Hash> =
        offered.accepted_at.keys().filter(|t| !on_chain.contains(t)).copied().collect();
    if !unconfirmed.is_empty() {
        failed.insert("unconfirmed".into(), unconfirmed.len() as u64);
    }
    let usage = cpu::usage(&cpu0, &cpu1, window_s, confirmed.len());
    let offer_s = offered.ended.saturating_sub(offered.started).as_secs_f64();
    let generator_cores = generator_cpu.max(0.0) / offer_s.max(1e-9);
    Ok(RoundResult {
        name: round.name.clone(),
        workload: round.workload.label(),
        controller: round.controller.to_string(),
        prepared: round.txs,
        offered: offered.offered as u64,
        accepted: offered.accepted_at.len() as u64,
        succeeded: confirmed.len() as u64,
        failed,
        send_tps,
        throughput_tps,
        latency,
        offer_s,
        window_s,
        cpu: usage,
        generator_cores,
        rss_peak: peaks.into_iter().collect(),
        series,
        heights: (height, tip),
        stopped,
        unconfirmed,
        memory: samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interleaving_spreads_each_part_evenly_and_keeps_each_parts_order() {
        let tx = |tag: u64, i: u64| Tx::coinbase(tag * 1000 + i, vec![]);
        let a: Vec<Tx> = (0..6).map(|i| tx(1, i)).collect();
        let b: Vec<Tx> = (0..2).map(|i| tx(2, i)).collect();
        let out = interleave(vec![a.clone(), b.clone()]);
        assert_eq!(out.len(), 8);
        let tags: Vec<u64> =
            out.iter().map(|t| u64::from_le_bytes(t.data[..8].try_into().unwrap_or([0; 8])) / 1000).collect();
        assert_eq!(tags, [1, 1, 2, 1, 1, 1, 2, 1], "one of b in every four, spread");
        let a_order: Vec<&Tx> = out.iter().filter(|t| a.contains(t)).collect();
        assert!(a_order.iter().zip(&a).all(|(x, y)| *x == y), "each part in its order");
        assert_eq!(interleave(vec![a.clone()]), a);
        assert_eq!(interleave(vec![Vec::new(), b.clone()]), b);
    }
}
