//! `scalechain devnet`: a bootstrap node, N peers and M miners as separate processes on
//! 127.0.0.1 (OS-chosen ports), a transaction load offered at a fixed rate through the peers'
//! APIs, live progress, and a summary of what the network confirmed.
//!
//! The load: the premine outputs are first split into as many outputs as the run will spend
//! (one split transaction per premine output, confirmed before the clock starts); every load
//! transaction then spends one split output back to its owner, and all of them are signed
//! before the clock starts, so the generator measures the network, not its own signing.
//! Transactions go out in batches every 100 ms, round-robin over the peers, open loop: a slow
//! network does not slow the offer. A transaction counts as sent when an API accepted it, as
//! confirmed when it is in a block of the converged main chain; its latency runs from
//! acceptance to the moment the block holding it was first seen.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use rayon::prelude::*;
use serde::Deserialize;

use scalechain_consensus::params::{devnet_premine_key, SigMode, DEVNET_PREMINE_OUTPUTS};
use scalechain_consensus::{genesis_block, Params};
use scalechain_node::NodeInfo;
use scalechain_types::codec::Encode;
use scalechain_types::keys::sighash;
use scalechain_types::{Amount, Hash, HashKind, OutPoint, SecretKey, Tx, TxIn, TxKind, TxOut, Witness};

use crate::Fail;

/// Arguments of `scalechain devnet`.
#[derive(Args)]
pub struct DevnetArgs {
    /// Peer processes (validate, relay, serve the API; the load goes to them).
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Miner processes.
    #[arg(long, default_value_t = 1)]
    miners: usize,
    /// Seconds of load.
    #[arg(long, default_value_t = 30)]
    duration: u64,
    /// Transactions offered per second.
    #[arg(long, default_value_t = 1000)]
    tps: u64,
    /// Keep the nodes' data here (default: a temporary directory, removed at the end).
    #[arg(long)]
    data_dir: Option<PathBuf>,
    /// Print one JSON object as the last line.
    #[arg(long)]
    json: bool,
    /// Seconds the nodes get to converge after the load stops.
    #[arg(long, default_value_t = 60)]
    converge_timeout: u64,
    /// Mining threads per miner.
    #[arg(long, default_value_t = 1)]
    miner_threads: usize,
}

const FEE: u64 = 1_000;

/// The most transactions devnet puts in one `POST /txs` (the node's default limit is 10,000).
const MAX_PER_REQUEST: usize = 2_000;

struct Proc {
    name: String,
    child: Child,
    dir: PathBuf,
    info: Option<NodeInfo>,
}

struct Procs(Vec<Proc>);

impl Drop for Procs {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = Command::new("kill").arg("-TERM").arg(p.child.id().to_string()).status();
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for p in &mut self.0 {
            while Instant::now() < deadline {
                if let Ok(Some(_)) = p.child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
    }
}

/// Starts `scalechain node` as `name`, with its data directory `base/name`.
fn spawn(
    exe: &Path,
    base: &Path,
    name: &str,
    role: &str,
    bootstrap: Option<&str>,
    threads: usize,
) -> Result<Proc, Fail> {
    let dir = &base.join(name);
    std::fs::create_dir_all(dir).map_err(|e| Fail(2, format!("creating {}: {e}", dir.display())))?;
    let log = std::fs::File::create(dir.join("node.log"))
        .map_err(|e| Fail(2, format!("creating the log of {name}: {e}")))?;
    let mut c = Command::new(exe);
    c.arg("node").arg("--role").arg(role).arg("--data-dir").arg(dir).arg("--api").arg("127.0.0.1:0");
    if let Some(b) = bootstrap {
        c.arg("--bootstrap").arg(b);
    }
    if role == "miner" {
        c.arg("--miner-threads").arg(threads.to_string());
    }
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    let child = c.spawn().map_err(|e| Fail(2, format!("starting {name}: {e}")))?;
    Ok(Proc { name: name.into(), child, dir: dir.to_path_buf(), info: None })
}

fn wait_info(p: &mut Proc, timeout: Duration) -> Result<NodeInfo, Fail> {
    let deadline = Instant::now() + timeout;
    let path = p.dir.join("node.json");
    loop {
        if let Ok(text) = std::fs::read_to_string(&path) {
            if let Ok(info) = serde_json::from_str::<NodeInfo>(&text) {
                if info.pid == p.child.id() {
                    p.info = Some(info.clone());
                    return Ok(info);
                }
            }
        }
        if let Ok(Some(status)) = p.child.try_wait() {
            return Err(Fail(
                2,
                format!("{} exited ({status}); see {}", p.name, p.dir.join("node.log").display()),
            ));
        }
        if Instant::now() > deadline {
            return Err(Fail(2, format!("{} did not start within {timeout:?}", p.name)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[derive(Deserialize)]
struct Status {
    height: u64,
    tip: String,
    peers: usize,
    mempool_txs: usize,
}

#[derive(Deserialize)]
struct Txids {
    hash: String,
    txids: Vec<String>,
}

#[derive(Deserialize)]
struct SubmitResult {
    results: Vec<TxResult>,
}

#[derive(Deserialize)]
struct TxResult {
    accepted: bool,
    reason: Option<String>,
}

struct Api {
    client: reqwest::Client,
}

impl Api {
    async fn get<T: serde::de::DeserializeOwned>(&self, addr: &str, path: &str) -> Result<T, String> {
        let r = self.client.get(format!("http://{addr}{path}")).send().await.map_err(|e| e.to_string())?;
        if !r.status().is_success() {
            return Err(format!("{path}: {}", r.status()));
        }
        r.json().await.map_err(|e| e.to_string())
    }

    async fn submit(&self, addr: &str, txs: &[Tx]) -> Result<Vec<TxResult>, String> {
        let body =
            serde_json::json!({ "txs": txs.iter().map(|t| hex::encode(t.encode())).collect::<Vec<_>>() });
        let r = self
            .client
            .post(format!("http://{addr}/txs"))
            .json(&body)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !r.status().is_success() {
            return Err(format!("POST /txs: {}", r.status()));
        }
        Ok(r.json::<SubmitResult>().await.map_err(|e| e.to_string())?.results)
    }
}

fn sign(tx: &mut Tx, key: &SecretKey, kind: HashKind, chain_id: &Hash) {
    let msg = sighash(kind, chain_id, &tx.txid(kind));
    for i in &mut tx.inputs {
        i.witness.signature = key.sign(&msg);
    }
}

fn transfer(prevs: &[OutPoint], key: &SecretKey, outputs: Vec<TxOut>, kind: HashKind, chain_id: &Hash) -> Tx {
    let witness = Witness { pubkey: key.public(), signature: [0; 64] };
    let mut tx = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: prevs.iter().map(|&prev| TxIn { prev, witness }).collect(),
        outputs,
        data: vec![],
    };
    sign(&mut tx, key, kind, chain_id);
    tx
}

/// Coins of one key that a load may spend.
pub(crate) struct Fund {
    /// The key the coins are locked to.
    pub key: SecretKey,
    /// Its coins (all locked to `key`), with their values.
    pub coins: Vec<(OutPoint, TxOut)>,
}

/// The split transactions and the pre-signed load: each fund's coins are split (one split
/// transaction per fund, spending all its coins) into as many outputs as the load spends from
/// it, and every load transaction spends one split output back to its owner, paying [`FEE`].
/// The load interleaves the funds, so consecutive transactions spend different splits. Funds
/// whose coins cannot pay for their share are left out (the load is then shorter than `total`).
pub(crate) fn prepare(kind: HashKind, chain_id: &Hash, funds: &[Fund], total: usize) -> (Vec<Tx>, Vec<Tx>) {
    let n = funds.len().max(1);
    let per = total.div_ceil(n).max(1);
    let built: Vec<Option<(Tx, Vec<Tx>)>> = funds
        .par_iter()
        .enumerate()
        .map(|(i, f)| {
            let have = Amount::checked_sum(f.coins.iter().map(|c| c.1.value)).ok()?.get();
            let lock = f.coins.first()?.1.lock;
            // The split pays at least one unit per byte on top of the fixed fee.
            let size = 17 + f.coins.len() * (36 + 1 + 33 + 64) + per * TxOut::LEN;
            let split_fee = (100 * FEE).checked_add(size as u64)?;
            let value_each = have.checked_sub(split_fee)? / per as u64;
            if value_each <= FEE {
                return None;
            }
            let out = TxOut { value: Amount::new(value_each).ok()?, lock };
            let prevs: Vec<OutPoint> = f.coins.iter().map(|c| c.0).collect();
            let split = transfer(&prevs, &f.key, vec![out; per], kind, chain_id);
            let sid = split.txid(kind);
            let left = total.saturating_sub(i * per).min(per);
            let back = TxOut { value: Amount::new(value_each - FEE).ok()?, lock };
            let load = (0..left)
                .map(|j| {
                    transfer(&[OutPoint { txid: sid, index: j as u32 }], &f.key, vec![back], kind, chain_id)
                })
                .collect();
            Some((split, load))
        })
        .collect();
    let mut splits = Vec::with_capacity(n);
    let mut per_key: Vec<Vec<Tx>> = Vec::with_capacity(n);
    for (s, l) in built.into_iter().flatten() {
        splits.push(s);
        per_key.push(l);
    }
    // Interleave keys so consecutive transactions spend different splits.
    let mut load = Vec::with_capacity(total);
    let mut iters: Vec<_> = per_key.into_iter().map(|v| v.into_iter()).collect();
    while load.len() < total {
        let before = load.len();
        for it in &mut iters {
            if let Some(t) = it.next() {
                load.push(t);
            }
        }
        if load.len() == before {
            break;
        }
    }
    (splits, load)
}

/// The devnet's funds: every premine output of the genesis block, with its key.
fn premine_funds(p: &Params, sig: SigMode) -> Vec<Fund> {
    let coinbase = genesis_block(p).txs[0].txid(p.hash);
    (0..DEVNET_PREMINE_OUTPUTS as usize)
        .filter_map(|i| {
            let out = *p.premine.get(i)?;
            Some(Fund {
                key: devnet_premine_key(sig, i as u64),
                coins: vec![(OutPoint { txid: coinbase, index: i as u32 }, out)],
            })
        })
        .collect()
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs `scalechain devnet`.
pub fn devnet(a: DevnetArgs) -> Result<(), Fail> {
    if a.nodes == 0 || a.miners == 0 {
        return Err(Fail(2, "a devnet needs at least one peer and one miner".into()));
    }
    let rt = tokio::runtime::Runtime::new().map_err(|e| Fail(2, format!("starting the runtime: {e}")))?;
    let tmp;
    let base = match &a.data_dir {
        Some(d) => d.clone(),
        None => {
            tmp = tempfile::tempdir().map_err(|e| Fail(2, format!("temporary directory: {e}")))?;
            tmp.path().to_path_buf()
        }
    };
    let exe = std::env::current_exe().map_err(|e| Fail(2, format!("locating this program: {e}")))?;
    let t_start = Instant::now();
    let mut procs = Procs(Vec::new());
    procs.0.push(spawn(&exe, &base, "bootstrap", "bootstrap", None, 1)?);
    let boot = wait_info(&mut procs.0[0], Duration::from_secs(30))?;
    let boot_addr =
        boot.p2p.first().cloned().ok_or_else(|| Fail(2, "the bootstrap node has no address".into()))?;
    for i in 0..a.nodes {
        procs.0.push(spawn(&exe, &base, &format!("peer{i}"), "peer", Some(&boot_addr), 1)?);
    }
    for i in 0..a.miners {
        procs.0.push(spawn(&exe, &base, &format!("miner{i}"), "miner", Some(&boot_addr), a.miner_threads)?);
    }
    let mut apis = Vec::new();
    for p in procs.0.iter_mut().skip(1) {
        let info = wait_info(p, Duration::from_secs(30))?;
        apis.push((
            p.name.clone(),
            info.api.clone().ok_or_else(|| Fail(2, format!("{} has no API", p.name)))?,
        ));
    }
    eprintln!(
        "devnet: {} peers + {} miners up in {:.1}s ({})",
        a.nodes,
        a.miners,
        t_start.elapsed().as_secs_f64(),
        base.display()
    );
    let params = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let chain_id = genesis_block(&params).hash(params.hash);
    let total = (a.tps * a.duration) as usize;
    let t_prep = Instant::now();
    let (splits, load) = prepare(params.hash, &chain_id, &premine_funds(&params, SigMode::Ed25519), total);
    eprintln!("devnet: {} load transactions signed in {:.1}s", load.len(), t_prep.elapsed().as_secs_f64());
    let peer_apis: Vec<String> = apis.iter().take(a.nodes).map(|(_, x)| x.clone()).collect();
    let all_apis = apis.clone();
    let pids: Vec<(String, u32)> = procs.0.iter().map(|p| (p.name.clone(), p.child.id())).collect();
    let report = rt.block_on(drive(a, peer_apis, all_apis, splits, load, pids))?;
    drop(procs);
    report
}

async fn drive(
    a: DevnetArgs,
    peers: Vec<String>,
    all: Vec<(String, String)>,
    splits: Vec<Tx>,
    load: Vec<Tx>,
    pids: Vec<(String, u32)>,
) -> Result<Result<(), Fail>, Fail> {
    let api = Arc::new(Api {
        client: reqwest::Client::builder()
            .pool_max_idle_per_host(8)
            .build()
            .map_err(|e| Fail(2, e.to_string()))?,
    });
    // Wait for the mesh: every node sees the bootstrap node and at least one other node (the
    // bootstrap node relays no gossip, so a node that knows only it would receive nothing).
    let want_peers = if all.len() > 1 { 2 } else { 1 };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut ok = true;
        for (_, addr) in &all {
            match api.get::<Status>(addr, "/status").await {
                Ok(s) if s.peers >= want_peers => {}
                _ => ok = false,
            }
        }
        if ok {
            break;
        }
        if Instant::now() > deadline {
            return Err(Fail(1, "nodes did not connect within 30 s".into()));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Fund: split the premine and wait until the splits are confirmed.
    let kind = HashKind::Sha256;
    let r =
        api.submit(&peers[0], &splits).await.map_err(|e| Fail(1, format!("submitting the funding: {e}")))?;
    if let Some(bad) = r.iter().find(|x| !x.accepted) {
        return Err(Fail(1, format!("funding refused: {:?}", bad.reason)));
    }
    let split_ids: std::collections::HashSet<String> =
        splits.iter().map(|t| t.txid(kind).to_string()).collect();
    let mut seen_height = api.get::<Status>(&peers[0], "/status").await.map_err(|e| Fail(1, e))?.height;
    let mut funded = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while funded < split_ids.len() {
        if Instant::now() > deadline {
            return Err(Fail(
                1,
                format!("only {funded}/{} funding transactions confirmed in 60 s", split_ids.len()),
            ));
        }
        let s = api.get::<Status>(&peers[0], "/status").await.map_err(|e| Fail(1, e))?;
        while seen_height < s.height {
            seen_height += 1;
            let b: Txids =
                api.get(&peers[0], &format!("/blocks/{seen_height}/txids")).await.map_err(|e| Fail(1, e))?;
            funded += b.txids.iter().filter(|t| split_ids.contains(*t)).count();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let start_height = seen_height;
    // Every node holds the funding before the load starts (else its first transactions would
    // be refused there as spending unknown outputs).
    let deadline = Instant::now() + Duration::from_secs(30);
    for (name, addr) in &all {
        loop {
            match api.get::<Status>(addr, "/status").await {
                Ok(s) if s.height >= start_height => break,
                _ if Instant::now() > deadline => {
                    return Err(Fail(
                        1,
                        format!("{name} did not reach the funded height {start_height} in 30 s"),
                    ));
                }
                _ => tokio::time::sleep(Duration::from_millis(100)).await,
            }
        }
    }
    eprintln!("devnet: funded at height {start_height}; offering {} tx/s for {} s", a.tps, a.duration);
    // Watcher: first time each block hash is seen (on peer 0).
    let seen: Arc<parking_lot_free::Map> = Arc::new(parking_lot_free::Map::default());
    let stop_watch = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watcher = {
        let (api, seen, stop, addr) = (api.clone(), seen.clone(), stop_watch.clone(), peers[0].clone());
        tokio::spawn(async move {
            let mut h = start_height;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                if let Ok(s) = api.get::<Status>(&addr, "/status").await {
                    while h < s.height {
                        h += 1;
                        match api.get::<Txids>(&addr, &format!("/blocks/{h}/txids")).await {
                            Ok(b) => seen.first_seen(b.hash, Instant::now()),
                            Err(_) => {
                                h -= 1;
                                break;
                            }
                        }
                    }
                    // A reorg can replace blocks below the height we reached: re-read the tip.
                    if let Ok(b) = api.get::<Txids>(&addr, &format!("/blocks/{}/txids", s.height)).await {
                        seen.first_seen(b.hash, Instant::now());
                    }
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    // The offer: every 100 ms, the transactions due by then, round-robin over the peers.
    let cpu0 = cpu::sample(&pids);
    let t0 = Instant::now();
    let accepted_at: Arc<std::sync::Mutex<HashMap<Hash, Instant>>> = Default::default();
    let refused: Arc<std::sync::Mutex<HashMap<String, u64>>> = Default::default();
    let mut next = 0usize;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut inflight = tokio::task::JoinSet::new();
    let mut round = 0usize;
    let mut last_print = Instant::now();
    let load = Arc::new(load);
    while next < load.len() {
        tick.tick().await;
        let due = ((t0.elapsed().as_secs_f64() * a.tps as f64) as usize).min(load.len());
        // Requests of at most MAX_PER_REQUEST transactions (a catch-up after a slow tick
        // would otherwise exceed the API's body and count limits), round-robin over the peers.
        while due > next {
            let (lo, hi) = (next, due.min(next + MAX_PER_REQUEST));
            next = hi;
            let addr = peers[round % peers.len()].clone();
            round += 1;
            let (api, load, acc, refused) = (api.clone(), load.clone(), accepted_at.clone(), refused.clone());
            inflight.spawn(async move {
                let chunk = &load[lo..hi];
                match api.submit(&addr, chunk).await {
                    Ok(results) => {
                        let now = Instant::now();
                        let mut acc = acc.lock().unwrap_or_else(|e| e.into_inner());
                        let mut refused = refused.lock().unwrap_or_else(|e| e.into_inner());
                        for (t, r) in chunk.iter().zip(results) {
                            if r.accepted {
                                acc.insert(t.txid(HashKind::Sha256), now);
                            } else {
                                *refused.entry(r.reason.unwrap_or_default()).or_default() += 1;
                            }
                        }
                    }
                    Err(e) => {
                        let mut refused = refused.lock().unwrap_or_else(|e| e.into_inner());
                        *refused.entry(format!("api: {e}")).or_default() += (hi - lo) as u64;
                    }
                }
            });
        }
        while inflight.try_join_next().is_some() {}
        if last_print.elapsed() >= Duration::from_secs(1) {
            last_print = Instant::now();
            let sent = accepted_at.lock().map(|m| m.len()).unwrap_or(0);
            let st = api.get::<Status>(&peers[0], "/status").await.ok();
            eprintln!(
                "  t={:>5.1}s offered {:>8} accepted {:>8} height {:>5} mempool {:>7}",
                t0.elapsed().as_secs_f64(),
                next,
                sent,
                st.as_ref().map_or(0, |s| s.height),
                st.as_ref().map_or(0, |s| s.mempool_txs)
            );
        }
    }
    while inflight.join_next().await.is_some() {}
    let offered_s = t0.elapsed().as_secs_f64();
    // Convergence: all nodes on one tip and every accepted transaction confirmed (or timeout).
    let sent: HashMap<Hash, Instant> = accepted_at.lock().map(|m| m.clone()).unwrap_or_default();
    let deadline = Instant::now() + Duration::from_secs(a.converge_timeout);
    let converged;
    let mut statuses = Vec::new();
    loop {
        statuses.clear();
        for (name, addr) in &all {
            if let Ok(s) = api.get::<Status>(addr, "/status").await {
                statuses.push((name.clone(), s));
            }
        }
        let same = statuses.len() == all.len() && statuses.windows(2).all(|w| w[0].1.tip == w[1].1.tip);
        let empty = statuses.iter().all(|(_, s)| s.mempool_txs == 0);
        if same && (empty || sent.is_empty()) {
            converged = true;
            break;
        }
        if Instant::now() > deadline {
            converged = same;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let cpu1 = cpu::sample(&pids);
    let window_s = t0.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_millis(200)).await;
    stop_watch.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = watcher.await;
    // The converged main chain, read from peer 0.
    let tip = api.get::<Status>(&peers[0], "/status").await.map_err(|e| Fail(1, e))?;
    let mut confirmed_at: Vec<(Hash, Instant)> = Vec::new();
    for h in (start_height + 1)..=tip.height {
        let b: Txids = api.get(&peers[0], &format!("/blocks/{h}/txids")).await.map_err(|e| Fail(1, e))?;
        let when = seen.get(&b.hash).unwrap_or_else(Instant::now);
        for t in b.txids.iter().skip(1) {
            let mut id = [0u8; 32];
            if hex::decode_to_slice(t, &mut id).is_ok() && sent.contains_key(&Hash(id)) {
                confirmed_at.push((Hash(id), when));
            }
        }
    }
    let mut lat: Vec<f64> = confirmed_at
        .iter()
        .filter_map(|(id, when)| {
            sent.get(id).map(|s| when.saturating_duration_since(*s).as_secs_f64() * 1000.0)
        })
        .collect();
    lat.sort_by(|x, y| x.total_cmp(y));
    let last = confirmed_at.iter().map(|(_, w)| *w).max().unwrap_or(t0);
    let span = last.saturating_duration_since(t0).as_secs_f64().max(1e-9);
    let confirmed = confirmed_at.len();
    let tps = confirmed as f64 / span;
    let (p50, p95, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.95), percentile(&lat, 0.99));
    let refused = refused.lock().map(|m| m.clone()).unwrap_or_default();
    let mut text = String::new();
    use std::fmt::Write as _;
    let _ = writeln!(
        text,
        "devnet summary ({} peers, {} miners, {} s at {} tx/s offered; offer took {:.1} s)",
        a.nodes, a.miners, a.duration, a.tps, offered_s
    );
    for (name, s) in &statuses {
        let _ =
            writeln!(text, "  {name:<10} height {:>5}  tip {}  mempool {}", s.height, s.tip, s.mempool_txs);
    }
    let _ = writeln!(text, "  sent (accepted by the API) {}  refused {:?}", sent.len(), refused);
    let _ = writeln!(text, "  confirmed {confirmed}  in {span:.1} s  = {tps:.0} TPS");
    let _ = writeln!(text, "  latency ms  p50 {p50:.0}  p95 {p95:.0}  p99 {p99:.0}");
    let usage = cpu::usage(&cpu0, &cpu1, window_s, confirmed);
    let _ = writeln!(
        text,
        "  CPU over {window_s:.1} s: {:.2} cores busy, {:.0} µs per confirmed tx ({})",
        usage.cores,
        usage.us_per_tx,
        usage.per_proc.iter().map(|(n, s)| format!("{n} {s:.1} s")).collect::<Vec<_>>().join(", ")
    );
    let _ = writeln!(text, "  converged: {converged}");
    let nodes: Vec<serde_json::Value> = statuses
        .iter()
        .filter(|(n, _)| n.starts_with("peer") || n.starts_with("miner"))
        .map(|(n, s)| serde_json::json!({"name": n, "tip_hash": s.tip, "height": s.height}))
        .collect();
    let json = serde_json::json!({
        "nodes": nodes,
        "sent": sent.len(),
        "confirmed": confirmed,
        "tps": (tps * 10.0).round() / 10.0,
        "latency_ms": {"p50": p50.round(), "p95": p95.round(), "p99": p99.round()},
        "converged": converged,
        "offered_tps": a.tps,
        "duration_s": a.duration,
        "refused": refused,
        "cpu": {
            "window_s": (window_s * 10.0).round() / 10.0,
            "cores_busy": (usage.cores * 100.0).round() / 100.0,
            "us_per_confirmed_tx": usage.us_per_tx.round(),
            "seconds": usage.per_proc.iter().map(|(n, s)| (n.clone(), serde_json::json!((s * 100.0).round() / 100.0))).collect::<serde_json::Map<_, _>>(),
        },
    })
    .to_string();
    eprint!("{text}");
    if a.json {
        println!("{json}");
    }
    Ok(if converged { Ok(()) } else { Err(Fail(1, "the nodes did not converge".into())) })
}

/// CPU time of the devnet's processes, from `/proc` (Linux; elsewhere every figure is zero).
mod cpu {
    /// (name, CPU seconds) per process; `devnet` is this process (the load's HTTP client).
    pub type Sample = Vec<(String, f64)>;

    /// User + system CPU seconds of `pid` (`None` if it cannot be read).
    fn cpu_s(pid: &str) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // Fields after the command name (which may hold spaces): state is the first, utime
        // the 12th and stime the 13th (proc(5) fields 14 and 15).
        let rest = stat.get(stat.rfind(')')? + 1..)?;
        let f: Vec<&str> = rest.split_whitespace().collect();
        let ticks = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        Some(ticks as f64 / rustix::param::clock_ticks_per_second() as f64)
    }

    /// Samples every node and this process.
    pub fn sample(pids: &[(String, u32)]) -> Sample {
        pids.iter()
            .map(|(n, p)| (n.clone(), cpu_s(&p.to_string()).unwrap_or(0.0)))
            .chain(std::iter::once(("devnet".to_string(), cpu_s("self").unwrap_or(0.0))))
            .collect()
    }

    /// CPU use between two samples.
    pub struct Usage {
        /// CPU seconds per process.
        pub per_proc: Vec<(String, f64)>,
        /// Cores kept busy on average (all processes).
        pub cores: f64,
        /// CPU microseconds (all processes) per confirmed transaction.
        pub us_per_tx: f64,
    }

    /// The usage from `a` to `b` over `window_s` seconds in which `confirmed` transactions were
    /// confirmed.
    pub fn usage(a: &Sample, b: &Sample, window_s: f64, confirmed: usize) -> Usage {
        let per_proc: Vec<(String, f64)> =
            a.iter().zip(b).map(|((n, x), (_, y))| (n.clone(), (y - x).max(0.0))).collect();
        let total: f64 = per_proc.iter().map(|(_, s)| s).sum();
        Usage {
            cores: total / window_s.max(1e-9),
            us_per_tx: if confirmed == 0 { 0.0 } else { total * 1e6 / confirmed as f64 },
            per_proc,
        }
    }
}

/// A small concurrent map of block hash → first time seen.
mod parking_lot_free {
    use std::collections::HashMap;
    use std::sync::Mutex;
    use std::time::Instant;

    use scalechain_types::Hash;

    #[derive(Default)]
    pub struct Map(Mutex<HashMap<Hash, Instant>>);

    impl Map {
        pub fn first_seen(&self, hash_hex: String, t: Instant) {
            let mut h = [0u8; 32];
            if hex::decode_to_slice(&hash_hex, &mut h).is_ok() {
                self.0.lock().unwrap_or_else(|e| e.into_inner()).entry(Hash(h)).or_insert(t);
            }
        }

        pub fn get(&self, hash_hex: &str) -> Option<Instant> {
            let mut h = [0u8; 32];
            hex::decode_to_slice(hash_hex, &mut h).ok()?;
            self.0.lock().unwrap_or_else(|e| e.into_inner()).get(&Hash(h)).copied()
        }
    }
}
