//! Nodes run in this test process: start one on a data directory, stop it (its data directory
//! kept, so it can start again), and talk to its API. The explorer's tests include this file by
//! path (`crates/explorer/tests/support/mod.rs`) and start nodes with its pages.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{genesis_block, Apps, Params};
use scalechain_node::{NodeConfig, NodeInfo, Pages};
use scalechain_p2p::msg::Role;
use scalechain_types::codec::Encode;
use scalechain_types::{Amount, Hash, HashKind, OutPoint, Tx, TxIn, TxKind, TxOut, Witness};

/// A node running in this process.
pub struct Node {
    /// What it wrote to `node.json`.
    pub info: NodeInfo,
    /// Its data directory.
    pub dir: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Node {
    /// `http://host:port` of its API.
    pub fn api(&self) -> String {
        format!("http://{}", self.info.api.clone().unwrap())
    }

    /// Its first peer-to-peer address (with `/p2p/<id>`).
    pub fn p2p(&self) -> String {
        self.info.p2p[0].clone()
    }
}

/// Starts a node of `role` on `dir` (API on a free loopback port), joining through
/// `bootstrap`, with `tweak` applied to its settings; returns once it is up.
pub async fn start(
    dir: &Path,
    role: Role,
    bootstrap: &[String],
    tweak: impl FnOnce(&mut NodeConfig),
) -> Node {
    start_with(dir, role, bootstrap, Pages::none(), tweak).await
}

/// [`start`] with `pages` mounted beside the API (the explorer's tests include this file).
pub async fn start_with(
    dir: &Path,
    role: Role,
    bootstrap: &[String],
    pages: Pages,
    tweak: impl FnOnce(&mut NodeConfig),
) -> Node {
    let mut cfg = NodeConfig { data_dir: dir.to_path_buf(), role, ..NodeConfig::default() };
    cfg.api.listen = "127.0.0.1:0".into();
    cfg.p2p.bootstrap = bootstrap.to_vec();
    tweak(&mut cfg);
    let path = dir.join("node.json");
    let _ = std::fs::remove_file(&path);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        scalechain_node::run(cfg, Apps::none(), pages, false, async {
            let _ = rx.await;
        })
        .await
        .unwrap();
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    let info: NodeInfo = loop {
        if let Ok(t) = std::fs::read_to_string(&path) {
            if let Ok(i) = serde_json::from_str(&t) {
                break i;
            }
        }
        assert!(Instant::now() < deadline, "node did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    Node { info, dir: dir.to_path_buf(), stop: Some(tx), task }
}

/// Stops a node and waits until it is down.
pub async fn stop(mut n: Node) -> PathBuf {
    let _ = n.stop.take().unwrap().send(());
    tokio::time::timeout(Duration::from_secs(30), &mut n.task).await.unwrap().unwrap();
    n.dir
}

/// `GET base+path` as JSON.
pub async fn get(base: &str, path: &str) -> serde_json::Value {
    let r = reqwest::get(format!("{base}{path}")).await.unwrap();
    r.json().await.unwrap()
}

/// `POST base+path` with a JSON body, as JSON.
pub async fn post(base: &str, path: &str, body: serde_json::Value) -> serde_json::Value {
    let r = reqwest::Client::new().post(format!("{base}{path}")).json(&body).send().await.unwrap();
    r.json().await.unwrap()
}

/// Polls `check` every 100 ms until it holds; false after `within`.
pub async fn eventually<F, Fut>(within: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + within;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The peer ids a node's `/peers` lists.
pub async fn peer_ids(n: &Node) -> Vec<String> {
    let v = get(&n.api(), "/peers").await;
    v.as_array().unwrap().iter().map(|p| p["peer_id"].as_str().unwrap().to_string()).collect()
}

/// Its tip height.
pub async fn height(n: &Node) -> u64 {
    get(&n.api(), "/status").await["height"].as_u64().unwrap()
}

/// Transfers of premine outputs `range` back to their keys (devnet: SHA-256, Ed25519), hex.
pub fn transfers(range: std::ops::Range<u32>) -> Vec<(String, String)> {
    transfers_with(range, &[])
}

/// [`transfers`] carrying `data`.
pub fn transfers_with(range: std::ops::Range<u32>, data: &[u8]) -> Vec<(String, String)> {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let genesis = genesis_block(&p);
    let (chain_id, premine) = (genesis.hash(p.hash), genesis.txs[0].txid(p.hash));
    range
        .map(|i| premine_key_transfer(&p, &chain_id, i, OutPoint { txid: premine, index: i }, 2_000, data))
        .collect()
}

/// A transfer of `prev` on the chain `chain_id` of `p`, spent with premine key `i`, to that
/// key's own premine lock: premine output `i`'s value less `fee_below`, carrying `data`;
/// (txid, hex).
pub fn premine_key_transfer(
    p: &Params,
    chain_id: &Hash,
    i: u32,
    prev: OutPoint,
    fee_below: u64,
    data: &[u8],
) -> (String, String) {
    let key = devnet_premine_key(SigMode::Ed25519, u64::from(i));
    let out = p.premine[i as usize];
    let mut tx = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: vec![TxIn { prev, witness: Witness { pubkey: key.public(), signature: [0; 64] } }],
        outputs: vec![TxOut { value: Amount::new(out.value.get() - fee_below).unwrap(), lock: out.lock }],
        data: data.to_vec(),
    };
    tx.sign_inputs_with(p.hash, chain_id, &key);
    (tx.txid(p.hash).to_string(), hex::encode(tx.encode()))
}

/// The `/metrics` text of the API at `base`.
pub async fn metrics_text(base: &str) -> String {
    reqwest::get(format!("{base}/metrics")).await.unwrap().text().await.unwrap()
}

/// The value of metric `name` (the whole sample name, e.g. `scalechain_peer_bans_total`) in the
/// `/metrics` of the API at `base`; panics naming it if the node does not export it.
pub async fn metric(base: &str, name: &str) -> f64 {
    let text = metrics_text(base).await;
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}"))
}

/// Holds `n` TCP connections to `to` that never send a byte, opened from `sources` loopback
/// addresses in turn (127.0.0.2 onwards, at most 250), opening new ones as the node closes
/// them, until the task is aborted; counts the connections opened.
pub fn silent_flood(
    to: std::net::SocketAddr,
    n: usize,
    sources: u8,
) -> (tokio::task::JoinHandle<()>, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::AsyncReadExt;
    let opened = std::sync::Arc::new(AtomicUsize::new(0));
    let count = opened.clone();
    let sources = usize::from(sources.clamp(1, 250));
    let task = tokio::spawn(async move {
        let mut next = 0usize;
        let mut held: Vec<tokio::net::TcpStream> = Vec::new();
        loop {
            // Keep only the connections the node has not closed.
            let mut alive = Vec::with_capacity(held.len());
            for mut s in held.drain(..) {
                let mut b = [0u8; 1];
                match tokio::time::timeout(Duration::from_micros(100), s.read(&mut b)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => {}
                    _ => alive.push(s),
                }
            }
            held = alive;
            while held.len() < n {
                let from = std::net::Ipv4Addr::new(127, 0, 0, 2 + (next % sources) as u8);
                next += 1;
                let Ok(sock) = tokio::net::TcpSocket::new_v4() else { break };
                if sock.bind(std::net::SocketAddr::from((from, 0))).is_err() {
                    break;
                }
                match sock.connect(to).await {
                    Ok(s) => {
                        held.push(s);
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => break,
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    (task, opened)
}
