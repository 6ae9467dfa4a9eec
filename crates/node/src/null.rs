//! The null target: a process that speaks the node's API as far as the load benchmark uses it
//! and accepts every transaction without verifying it — so a benchmark run against it measures
//! the load generator, not a node (`scalechain null-node`; issue: the generator must never be
//! what bounds a result).
//!
//! It answers `GET /status`, `/tip`, `/blocks/{height}/txids`, `/events`, `/utxos/{owner}` (the
//! devnet premine outputs of the chain it pretends to run) and `POST /txs` (a binary batch,
//! decoded — so a malformed one is refused 400 — and accepted whole; a JSON body is refused).
//! Every `interval` it "mines" a block holding every transaction received since the last one
//! (their txids, hashed here), so confirmations and latency flow as they do from a node. No
//! signature, coin or rule is checked, and nothing is stored.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use parking_lot::Mutex;
use tokio::sync::watch;

use scalechain_client::ops;
use scalechain_client::types::{BlockTxids, Status, SubmitResult, Tip, TxResult, UtxoJson};
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{genesis_block, Params};
use scalechain_types::tx::decode_tx_batch;
use scalechain_types::{Hash, Tx};

/// The most transactions one request may carry.
const MAX_BATCH: usize = 100_000;

struct Chain {
    /// Each block's hash, time (ms) and txids (coinbase first, a placeholder).
    blocks: Vec<(Hash, u64, Vec<Hash>)>,
    /// Received since the last block.
    pending: Vec<Tx>,
}

struct Null {
    params: Params,
    chain: Mutex<Chain>,
    tip: watch::Sender<(u64, Hash)>,
    started: Instant,
    stopped: watch::Receiver<bool>,
}

/// The hash of the block at `height` (distinct per height; no proof of work).
fn block_hash(height: u64) -> Hash {
    scalechain_types::HashKind::Sha256.hash(&[b"null-node block".as_slice(), &height.to_le_bytes()].concat())
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Serves the null target on `listener` for the devnet chain of `sig` (SHA-256), a block every
/// `interval`, until `stop` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    sig: SigMode,
    interval: Duration,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let params = Params::devnet(scalechain_types::HashKind::Sha256, sig);
    let genesis = genesis_block(&params).hash(params.hash);
    // The premine matures at the devnet's coinbase maturity: start past it.
    let start = params.coinbase_maturity;
    let mut blocks = vec![(genesis, now_ms(), vec![genesis_block(&params).txs[0].txid(params.hash)])];
    blocks.extend((1..=start).map(|h| (block_hash(h), now_ms(), vec![block_hash(h)])));
    let tip = watch::Sender::new((start, block_hash(start)));
    let (stopped, _) = watch::channel(false);
    let null = Arc::new(Null {
        params,
        chain: Mutex::new(Chain { blocks, pending: Vec::new() }),
        tip,
        started: Instant::now(),
        stopped: stopped.subscribe(),
    });
    let miner = {
        let null = null.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(interval);
            tick.tick().await;
            loop {
                tick.tick().await;
                let pending = std::mem::take(&mut null.chain.lock().pending);
                let kind = null.params.hash;
                let txids = pending.iter().map(|t| t.txid(kind));
                // Only this task adds blocks: the height is the chain's length.
                let mut c = null.chain.lock();
                let height = c.blocks.len() as u64;
                let hash = block_hash(height);
                c.blocks.push((hash, now_ms(), std::iter::once(hash).chain(txids).collect()));
                drop(c);
                null.tip.send_replace((height, hash));
            }
        })
    };
    let app = Router::new()
        .route(ops::STATUS.path, get(status))
        .route(ops::TIP.path, get(tip_of))
        .route(ops::BLOCK_TXIDS.path, get(block_txids))
        .route(ops::UTXOS.path, get(utxos))
        .route(ops::SUBMIT.path, post(submit))
        .route(ops::EVENTS.path, get(events))
        .layer(axum::extract::DefaultBodyLimit::max(256 << 20))
        .with_state(null);
    // Open event streams end when the stop comes, so the graceful shutdown is not held up.
    let r = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            stop.await;
            let _ = stopped.send(true);
        })
        .await;
    miner.abort();
    r
}

type St = State<Arc<Null>>;

fn error(status: StatusCode, code: &str, message: String) -> Response {
    (status, Json(scalechain_client::types::ApiError { error: code.into(), message })).into_response()
}

async fn status(State(n): St) -> Json<Status> {
    let (height, tip) = *n.tip.borrow();
    let mempool_txs = n.chain.lock().pending.len();
    Json(Status {
        chain_id: n.params.chain_id(),
        role: "null".into(),
        peer_id: String::new(),
        listen: Vec::new(),
        height,
        tip,
        mempool_txs,
        mempool_bytes: 0,
        peers: 0,
        orphans: 0,
        uptime_s: n.started.elapsed().as_secs_f64(),
        clock_offset_ms: None,
        clock_warning: false,
        storage: Default::default(),
    })
}

async fn tip_of(State(n): St) -> Json<Tip> {
    let (height, hash) = *n.tip.borrow();
    Json(Tip { height, hash })
}

async fn block_txids(State(n): St, Path(id): Path<String>) -> Response {
    let Ok(h) = id.parse::<u64>() else {
        return error(
            StatusCode::BAD_REQUEST,
            "bad-request",
            format!("block {id:?}: the null target serves heights only"),
        );
    };
    let c = n.chain.lock();
    match c.blocks.get(h as usize) {
        Some((hash, time, txids)) => {
            Json(BlockTxids { height: h, hash: *hash, time: *time, txids: txids.clone() }).into_response()
        }
        None => error(StatusCode::NOT_FOUND, "not-found", format!("no block at height {h}")),
    }
}

async fn utxos(State(n): St, Path(owner): Path<String>) -> Response {
    let Ok(pkh) = owner.parse::<Hash>() else {
        return error(
            StatusCode::BAD_REQUEST,
            "bad-request",
            format!("owner {owner:?}: the null target takes pubkey hashes only"),
        );
    };
    let coinbase = genesis_block(&n.params).txs[0].txid(n.params.hash);
    let out: Vec<UtxoJson> = n
        .params
        .premine
        .iter()
        .enumerate()
        .filter(|(_, o)| o.lock.pubkey_hash == pkh)
        .map(|(i, o)| UtxoJson {
            txid: coinbase,
            index: i as u32,
            value: o.value,
            scheme: o.lock.scheme,
            pubkey_hash: pkh,
            height: 0,
            coinbase: true,
        })
        .collect();
    Json(out).into_response()
}

async fn submit(State(n): St, headers: HeaderMap, body: Bytes) -> Response {
    let binary =
        headers.get(header::CONTENT_TYPE).is_some_and(|v| v.as_bytes().starts_with(ops::BINARY.as_bytes()));
    if !binary {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            format!("the null target takes {} transaction batches only", ops::BINARY),
        );
    }
    let txs = match decode_tx_batch(&body, MAX_BATCH) {
        Ok(t) => t,
        Err(e) => return error(StatusCode::BAD_REQUEST, "bad-request", format!("transaction batch: {e}")),
    };
    let count = txs.len();
    n.chain.lock().pending.extend(txs);
    let results = vec![TxResult { txid: None, accepted: true, reason: None, detail: None }; count];
    Json(SubmitResult { accepted: count, results }).into_response()
}

async fn events(State(n): St) -> Response {
    crate::api::tip_events(n.tip.subscribe(), n.stopped.clone())
}
