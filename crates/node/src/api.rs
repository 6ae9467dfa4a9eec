//! The HTTP API (axum, JSON; OpenAPI document at `/openapi.json`; Prometheus text at
//! `/metrics`). Bound to 127.0.0.1 by default. Every bad request gets a 4xx with a JSON body
//! `{"error": <code>, "message": <what and where>}`: path segments and bodies are parsed here,
//! not by extractors with their own error formats, and nothing a client sends can panic the
//! node. Write endpoints require `Authorization: Bearer <token>` when a token is configured
//! (always, when the API listens beyond loopback).

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use tokio::sync::{mpsc, oneshot};
use utoipa::OpenApi;

use scalechain_chain::export::{block_json, tx_json};
use scalechain_chain::{ChainError, StoreError};
use scalechain_client::ops;
use scalechain_client::types::ApiError as ErrorBody;
pub use scalechain_client::types::{
    AppEntries, AppEntry, ArrivalJson, ArrivalsJson, BlockJson, BlockTxids, CentredJson, MempoolJson,
    PeerInfo, ProfileControl, ProfileJson, ProfilePath, ProfileStatus, RemovalJson, RemovedJson, Status,
    StorageStatus, SubmitResult, SubmitTxs, Tip, TxResult, TxState, TxStatus, UtxoJson,
};
use scalechain_types::codec::Decode;
use scalechain_types::{Hash, Tx};
use scalechain_wallet::{parse_address, AddressHrp};

use crate::metrics::{self, Scrape};

#[path = "api_apps.rs"]
pub mod apps;
use crate::pipeline::{self, Inbound, Source};
use crate::state::Shared;

/// What the API handlers share.
#[derive(Clone)]
pub struct ApiState {
    /// The node.
    pub shared: Arc<Shared>,
    /// The pipeline's receive side.
    pub pipeline: mpsc::Sender<Inbound>,
}

/// An error answer: an HTTP status and the JSON body every client decodes
/// ([`scalechain_client::types::ApiError`]).
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    body: scalechain_client::types::ApiError,
}

impl ApiError {
    fn new(status: StatusCode, error: &str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            body: scalechain_client::types::ApiError { error: error.into(), message: message.into() },
        }
    }

    fn bad(message: impl Into<String>) -> ApiError {
        Self::new(StatusCode::BAD_REQUEST, "bad-request", message)
    }

    fn not_found(message: impl Into<String>) -> ApiError {
        Self::new(StatusCode::NOT_FOUND, "not-found", message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.status, Json(self.body)).into_response()
    }
}

type ApiResult<T> = Result<Json<T>, ApiError>;

/// The query of a list endpoint: its `key=value` pairs, decoded (never fails on any input).
type QueryPairs = Result<Query<Vec<(String, String)>>, QueryRejection>;

/// `?limit=N` of list endpoints, parsed here so every mistake is a JSON 400 naming it: a
/// parameter other than `limit`, `limit` given twice, or a value that is not an integer in
/// `0..=max`.
fn limit(query: QueryPairs, default: usize, max: usize) -> Result<usize, ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad(format!("query: {}", e.body_text())))?;
    let mut found: Option<String> = None;
    for (k, v) in pairs {
        if k != "limit" {
            return Err(ApiError::bad(format!("query: unknown parameter {k:?} (only `limit`)")));
        }
        if found.is_some() {
            return Err(ApiError::bad("limit: given more than once"));
        }
        found = Some(v);
    }
    match found {
        None => Ok(default),
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n <= max => Ok(n),
            _ => Err(ApiError::bad(format!("limit: {s:?} is not an integer from 0 to {max}"))),
        },
    }
}

/// `?after=N&limit=M` of a log endpoint, parsed so every mistake is a JSON 400 naming it (an
/// unknown or repeated parameter, a value that is not an integer in range).
fn after_and_limit(query: QueryPairs, default: usize, max: usize) -> Result<(u64, usize), ApiError> {
    let (after, n) = after_text_and_limit(query, default, max)?;
    let after = match after {
        None => 0,
        Some(a) => a
            .parse::<u64>()
            .map_err(|_| ApiError::bad(format!("after: {a:?} is not an integer from 0 to 2^64 - 1")))?,
    };
    Ok((after, n))
}

/// `?after=TEXT&limit=M`: `after` as given, `limit` checked (see [`after_and_limit`]).
fn after_text_and_limit(
    query: QueryPairs,
    default: usize,
    max: usize,
) -> Result<(Option<String>, usize), ApiError> {
    let Query(pairs) = query.map_err(|e| ApiError::bad(format!("query: {}", e.body_text())))?;
    let (mut after, mut n) = (None, None);
    for (k, v) in pairs {
        let slot = match k.as_str() {
            "after" => &mut after,
            "limit" => &mut n,
            _ => return Err(ApiError::bad(format!("query: unknown parameter {k:?} (after, limit)"))),
        };
        if slot.replace(v).is_some() {
            return Err(ApiError::bad(format!("{k}: given more than once")));
        }
    }
    let n = match n {
        None => default,
        Some(s) => match s.parse::<usize>() {
            Ok(n) if n <= max => n,
            _ => return Err(ApiError::bad(format!("limit: {s:?} is not an integer from 0 to {max}"))),
        },
    };
    Ok((after, n))
}

/// A path segment, or a JSON 400 if it is not valid percent-encoded UTF-8.
fn segment(p: Result<Path<String>, PathRejection>, what: &str) -> Result<String, ApiError> {
    p.map(|Path(s)| s).map_err(|e| ApiError::bad(format!("{what}: {}", e.body_text())))
}

/// A digest: exactly 64 lowercase hex digits (`docs/PROTOCOL.md` §1.2: parsers reject
/// uppercase).
fn parse_hash(what: &str, s: &str) -> Result<Hash, ApiError> {
    s.parse().map_err(|_| ApiError::bad(format!("{what}: {s:?} is not 64 lowercase hex digits")))
}

/// Bytes written as lowercase hex (every hex string of the API is lowercase, as digests are).
pub(crate) fn lower_hex(what: &str, s: &str) -> Result<Vec<u8>, String> {
    if let Some(i) = s.bytes().position(|b| b.is_ascii_uppercase()) {
        return Err(format!("{what}: uppercase hex digit at {i}; hex is lowercase"));
    }
    hex::decode(s).map_err(|e| format!("{what}: not hex: {e}"))
}

/// The OpenAPI document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "ScaleChain node API",
        description = "Status, blocks, transactions, UTXOs, mempool, submission and application state."
    ),
    paths(
        status,
        tip,
        peers,
        block,
        block_txids,
        tx,
        submit,
        utxos,
        mempool,
        mempool_removed,
        arrivals,
        profile,
        profile_control,
        metrics,
        events,
        openapi,
        apps::value,
        apps::range
    ),
    components(schemas(
        ErrorBody,
        Status,
        StorageStatus,
        Tip,
        BlockTxids,
        TxStatus,
        SubmitTxs,
        TxResult,
        SubmitResult,
        UtxoJson,
        MempoolJson,
        RemovalJson,
        RemovedJson,
        ArrivalJson,
        ArrivalsJson,
        ProfileJson,
        ProfilePath,
        CentredJson,
        ProfileControl,
        ProfileStatus,
        PeerInfo,
        BlockJson,
        AppEntry,
        AppEntries
    ))
)]
pub struct ApiDoc;

/// The router: the API, and `pages` beside it when they are served (the explorer's, built by
/// [`Pages`](crate::view::Pages)).
pub fn router(state: ApiState, pages: Option<Router>) -> Router {
    let max_body = state.shared.cfg.api.max_body_bytes;
    // The paths are the client's (`scalechain_client::ops`); the `#[utoipa::path]` attributes
    // repeat them as literals, and the OpenAPI test compares the two.
    let api = Router::new()
        .route(ops::STATUS.path, get(status))
        .route(ops::TIP.path, get(tip))
        .route(ops::PEERS.path, get(peers))
        .route(ops::BLOCK.path, get(block))
        .route(ops::BLOCK_TXIDS.path, get(block_txids))
        .route(ops::TX.path, get(tx))
        .route(ops::SUBMIT.path, post(submit))
        .route(ops::UTXOS.path, get(utxos))
        .route(ops::MEMPOOL.path, get(mempool))
        .route(ops::MEMPOOL_REMOVED.path, get(mempool_removed))
        .route(ops::PROFILE.path, get(profile).post(profile_control))
        .route(ops::ARRIVALS.path, get(arrivals))
        .route(ops::METRICS.path, get(metrics))
        .route(ops::EVENTS.path, get(events))
        .route(ops::OPENAPI.path, get(openapi))
        .merge(apps::router())
        .with_state(state.clone());
    let api = match pages {
        Some(p) => api.merge(p),
        None => api,
    };
    api.fallback(|| async { ApiError::not_found("no such endpoint") })
        .layer(axum::extract::DefaultBodyLimit::max(max_body))
        .layer(axum::middleware::from_fn_with_state(state, track))
}

/// This document.
#[utoipa::path(get, path = "/openapi.json", responses((status = 200, description = "The OpenAPI document", content_type = "application/json")))]
async fn openapi() -> Response {
    match ApiDoc::openapi().to_json() {
        Ok(s) => ([(header::CONTENT_TYPE, "application/json")], s).into_response(),
        Err(e) => {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.to_string()).into_response()
        }
    }
}

/// Node status.
#[utoipa::path(get, path = "/status", responses((status = 200, body = Status)))]
async fn status(State(s): State<ApiState>) -> Json<Status> {
    Json(status_of(&s.shared))
}

/// The node at a glance (`GET /status`, and [`NodeView::status`](crate::view::NodeView::status)).
pub(crate) fn status_of(sh: &Shared) -> Status {
    // Published by the block worker: no wait behind a block being validated or committed.
    let ((height, tip), orphans) = (sh.replica.tip(), sh.replica.orphan_blocks());
    let clock = *sh.clock.read();
    Status {
        chain_id: sh.replica.chain_id,
        role: sh.role().name().into(),
        peer_id: sh.peer_id.to_string(),
        listen: sh.listen.read().iter().map(|a| a.to_string()).collect(),
        height,
        tip,
        mempool_txs: sh.replica.mempool.len(),
        mempool_bytes: sh.replica.mempool.bytes(),
        peers: sh.peers.read().len(),
        orphans,
        uptime_s: sh.started.elapsed().as_secs_f64(),
        clock_offset_ms: clock.map(|(median, _)| median),
        clock_warning: clock
            .is_some_and(|(median, _)| median.unsigned_abs() > sh.replica.params.max_future_drift_ms),
        storage: sh.storage.status(),
    }
}

/// The tip.
#[utoipa::path(get, path = "/tip", responses((status = 200, body = Tip)))]
async fn tip(State(s): State<ApiState>) -> Json<Tip> {
    let (height, hash) = s.shared.replica.tip();
    Json(Tip { height, hash })
}

/// Connected peers.
#[utoipa::path(get, path = "/peers", responses((status = 200, body = [PeerInfo])))]
async fn peers(State(s): State<ApiState>) -> Json<Vec<PeerInfo>> {
    Json(s.shared.peers.read().values().cloned().collect())
}

/// A block named by its height or its hash.
enum BlockId {
    Height(u64),
    Hash(Hash),
}

fn parse_block_id(id: &str) -> Result<BlockId, ApiError> {
    if id.len() == 64 {
        return parse_hash("block hash", id).map(BlockId::Hash);
    }
    id.parse().map(BlockId::Height).map_err(|_| {
        ApiError::bad(format!("block id {id:?} is neither a height nor 64 lowercase hex digits"))
    })
}

fn find_block(s: &ApiState, id: BlockId) -> Result<scalechain_types::Block, ApiError> {
    let c = s.shared.replica.chain.read();
    let found = match &id {
        BlockId::Hash(h) => c.block(h),
        BlockId::Height(h) => c.block_at(*h),
    };
    match found {
        Ok(Some(b)) => Ok(b),
        Ok(None) => Err(ApiError::not_found(match id {
            BlockId::Hash(h) => format!("no block {h}"),
            BlockId::Height(h) => format!("no block at height {h}"),
        })),
        Err(e) => Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.to_string())),
    }
}

/// A block by height or hash.
#[utoipa::path(get, path = "/blocks/{id}", params(("id" = String, Path, description = "height (decimal) or block hash (64 lowercase hex digits)", pattern = r"^([0-9]{1,20}|[0-9a-f]{64})$", example = "0")),
    responses((status = 200, body = BlockJson), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn block(State(s): State<ApiState>, id: Result<Path<String>, PathRejection>) -> ApiResult<BlockJson> {
    let id = segment(id, "block id")?;
    let b = find_block(&s, parse_block_id(&id)?)?;
    Ok(Json(block_json(s.shared.replica.params.hash, &b)))
}

/// A block's txids.
#[utoipa::path(get, path = "/blocks/{id}/txids", params(("id" = String, Path, description = "height (decimal) or block hash (64 lowercase hex digits)", pattern = r"^([0-9]{1,20}|[0-9a-f]{64})$", example = "0")),
    responses((status = 200, body = BlockTxids), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn block_txids(
    State(s): State<ApiState>,
    id: Result<Path<String>, PathRejection>,
) -> ApiResult<BlockTxids> {
    let id = segment(id, "block id")?;
    let b = find_block(&s, parse_block_id(&id)?)?;
    let kind = s.shared.replica.params.hash;
    Ok(Json(BlockTxids {
        height: b.header.height,
        hash: b.header.hash(kind),
        time: b.header.time,
        txids: b.txs.iter().map(|t| t.txid(kind)).collect(),
    }))
}

/// A transaction from the mempool or the main chain.
#[utoipa::path(get, path = "/txs/{txid}", params(("txid" = String, Path, description = "64 lowercase hex digits", pattern = r"^[0-9a-f]{64}$")),
    responses((status = 200, body = TxStatus), (status = 400, body = ErrorBody), (status = 404, body = ErrorBody)))]
async fn tx(State(s): State<ApiState>, id: Result<Path<String>, PathRejection>) -> ApiResult<TxStatus> {
    let id = segment(id, "txid")?;
    let txid = parse_hash("txid", &id)?;
    let kind = s.shared.replica.params.hash;
    if let Some(e) = s.shared.replica.mempool.get(&txid) {
        return Ok(Json(TxStatus { status: TxState::Mempool, height: None, tx: tx_json(kind, &e.tx) }));
    }
    let found = s.shared.replica.chain.read().confirmed_tx(&txid);
    match found {
        Ok(Some((loc, t))) => {
            Ok(Json(TxStatus { status: TxState::Confirmed, height: Some(loc.height), tx: tx_json(kind, &t) }))
        }
        Ok(None) => Err(ApiError::not_found(format!("no transaction {id}"))),
        Err(ChainError::Store(StoreError::TxIndexOff)) => Err(ApiError::not_found(format!(
            "no transaction {id} in the mempool, and this node keeps no txid index \
             (store.tx_index = false) to look up confirmed ones"
        ))),
        Err(e) => Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.to_string())),
    }
}

/// The token of an `Authorization: Bearer <token>` header, if there is one.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
}

fn authorised(s: &ApiState, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(token) = &s.shared.api_token else { return Ok(()) };
    if bearer(headers).is_some_and(|g| constant_time_eq(g.as_bytes(), token.as_bytes())) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "this endpoint needs `Authorization: Bearer <token>`",
        ))
    }
}

pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Submits transactions — hex encodings in JSON, or one transaction batch (§13.2's encoding)
/// as `application/octet-stream` — and answers once each was admitted or refused.
#[utoipa::path(post, path = "/txs",
    request_body(description = "the transactions, in order: JSON `{\"txs\": [hex, …]}`, or as `application/octet-stream` one transaction batch (`count:u32 LE ‖ tx * count`, PROTOCOL.md §13.2)",
        content((SubmitTxs = "application/json"), (Vec<u8> = "application/octet-stream"))),
    responses((status = 200, body = SubmitResult), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 413, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn submit(
    State(s): State<ApiState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<SubmitResult> {
    authorised(&s, &headers)?;
    if let Some(why) = s.shared.storage.why() {
        return Err(ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "storage", why));
    }
    let body = body.map_err(|e| {
        // Reading the body fails only through the client (too long, cut short): a 4xx.
        let status = if e.status().is_client_error() { e.status() } else { StatusCode::BAD_REQUEST };
        let code = if status == StatusCode::PAYLOAD_TOO_LARGE { "too-large" } else { "bad-request" };
        ApiError::new(status, code, format!("body: {}", e.body_text()))
    })?;
    let max = s.shared.cfg.api.max_txs_per_request;
    let too_many = move |n: usize| {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, "too-large", format!("{n} transactions, at most {max}"))
    };
    let body_len = body.len();
    let binary = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|m| m.trim().eq_ignore_ascii_case(ops::BINARY)));
    let decode = move || -> Result<Decoded, ApiError> {
        let (txs, results) = if binary {
            let n = batch_count(&body).map_err(|e| ApiError::bad(format!("body: {e}")))?;
            if n > max {
                return Err(too_many(n));
            }
            let txs = scalechain_types::tx::decode_tx_batch(&body, max)
                .map_err(|e| ApiError::bad(format!("body: transaction batch: {e}")))?;
            let results = vec![None; txs.len()];
            (txs, results)
        } else {
            let req: SubmitTxs =
                serde_json::from_slice(&body).map_err(|e| ApiError::bad(format!("body: {e}")))?;
            if req.txs.len() > max {
                return Err(too_many(req.txs.len()));
            }
            decode_hex_txs(&req.txs)
        };
        Ok((txs, results))
    };
    // Decoding takes about a µs a transaction: a large request is decoded off the API's
    // threads, a small one at once. The pipeline hashes the transactions (once, for the pool)
    // and hands back their txids with the verdicts.
    let (txs, results) = if body_len > INLINE_BODY {
        tokio::task::spawn_blocking(decode)
            .await
            .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", "the node is stopping"))??
    } else {
        decode()?
    };
    let verdicts = if txs.is_empty() {
        Vec::new()
    } else {
        let (reply, rx) = oneshot::channel();
        pipeline::submit(&s.shared, &s.pipeline, txs, Source::Api(reply), Duration::from_secs(10))
            .await
            .map_err(|why| {
                ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "busy",
                    format!("the transaction pipeline is {why}"),
                )
            })?;
        rx.await
            .map_err(|_| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "busy", "the node is stopping"))?
    };
    let mut v = verdicts.into_iter();
    let mut accepted = 0;
    let results = results
        .into_iter()
        .map(|r| match r {
            Some(r) => r,
            None => match v.next() {
                Some((id, Ok(_))) => {
                    accepted += 1;
                    TxResult { txid: Some(id), accepted: true, reason: None, detail: None }
                }
                Some((id, Err(e))) => TxResult {
                    txid: Some(id),
                    accepted: false,
                    reason: Some(e.reason().into()),
                    detail: Some(e.to_string()),
                },
                None => TxResult { txid: None, accepted: false, reason: Some("lost".into()), detail: None },
            },
        })
        .collect();
    Ok(Json(SubmitResult { accepted, results }))
}

/// A decoded `POST /txs` body: the transactions that decoded, and per submitted position the
/// verdict of one that did not.
type Decoded = (Vec<Tx>, Vec<Option<TxResult>>);

/// `POST /txs` bodies up to this size are decoded on the API's own thread.
const INLINE_BODY: usize = 16 << 10;

/// The count a transaction batch starts with (checked against the limit before decoding).
fn batch_count(body: &[u8]) -> Result<usize, String> {
    let head: [u8; 4] = body
        .get(..4)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| format!("transaction batch: {} bytes, shorter than its 4-byte count", body.len()))?;
    usize::try_from(u32::from_le_bytes(head)).map_err(|e| format!("transaction batch: count: {e}"))
}

/// Hex encodings decoded: the transactions that decoded, and per submitted position its
/// verdict if it did not (`malformed`, with where).
fn decode_hex_txs(hexes: &[String]) -> (Vec<Tx>, Vec<Option<TxResult>>) {
    let mut results: Vec<Option<TxResult>> = Vec::with_capacity(hexes.len());
    let mut txs = Vec::with_capacity(hexes.len());
    for (i, h) in hexes.iter().enumerate() {
        let decoded = lower_hex("encoding", h).and_then(|b| Tx::decode(&b).map_err(|e| e.to_string()));
        match decoded {
            Ok(t) => {
                txs.push(t);
                results.push(None);
            }
            Err(e) => results.push(Some(TxResult {
                txid: None,
                accepted: false,
                reason: Some("malformed".into()),
                detail: Some(format!("txs[{i}]: {e}")),
            })),
        }
    }
    (txs, results)
}

/// Unspent outputs of an address (bech32m) or a pubkey hash (64 hex digits), in outpoint order,
/// through the chain's owner index (cost: the owner's outputs, not the UTXO set).
#[utoipa::path(get, path = "/utxos/{owner}", params(("owner" = String, Path, description = "devnet address (bech32m, `scdev1…`) or pubkey hash (64 lowercase hex digits)", pattern = r"^([0-9a-f]{64}|scdev1[02-9ac-hj-np-z]{6,})$"), ("limit" = Option<u32>, Query, description = "most outputs returned (default 1000)", minimum = 0, maximum = 100000)),
    responses((status = 200, body = [UtxoJson]), (status = 400, body = ErrorBody), (status = 404, description = "the node keeps no owner index (`store.owner_index = false`)", body = ErrorBody)))]
async fn utxos(
    State(s): State<ApiState>,
    owner: Result<Path<String>, PathRejection>,
    q: QueryPairs,
) -> ApiResult<Vec<UtxoJson>> {
    let owner = segment(owner, "owner")?;
    let n = limit(q, 1000, 100_000)?;
    // A pubkey hash is 64 lowercase hex digits (uppercase is refused, as for every digest);
    // anything else must be a devnet address.
    let pkh = if owner.len() == 64 && owner.bytes().all(|b| b.is_ascii_hexdigit()) {
        parse_hash("owner (pubkey hash)", &owner)?
    } else {
        parse_address(&owner, &AddressHrp::devnet(), s.shared.replica.params.hash)
            .map_err(|e| {
                ApiError::bad(format!("owner {owner:?}: not a pubkey hash, and as an address: {e}"))
            })?
            .pubkey_hash
    };
    let c = s.shared.replica.chain.read();
    // The one error is `ChainError::OwnerIndexOff`, whose message names the setting.
    let coins = c.utxos_of(&pkh).map_err(|e| ApiError::not_found(format!("{owner}: {e}")))?;
    let out = coins
        .take(n)
        .map(|(op, coin)| UtxoJson {
            txid: op.txid,
            index: op.index,
            value: coin.out.value,
            scheme: coin.out.lock.scheme,
            pubkey_hash: pkh,
            height: coin.height,
            coinbase: coin.coinbase,
        })
        .collect();
    Ok(Json(out))
}

/// Mempool contents and counters.
#[utoipa::path(get, path = "/mempool", params(("limit" = Option<u32>, Query, description = "most txids listed (default 1000)", minimum = 0, maximum = 100000)),
    responses((status = 200, body = MempoolJson), (status = 400, body = ErrorBody)))]
async fn mempool(State(s): State<ApiState>, q: QueryPairs) -> ApiResult<MempoolJson> {
    let n = limit(q, 1000, 100_000)?;
    let snap = s.shared.replica.mempool.snapshot();
    let stats = s.shared.replica.mempool.stats();
    Ok(Json(MempoolJson {
        count: snap.len(),
        bytes: snap.bytes(),
        txids: snap.iter().take(n).map(|e| e.txid).collect(),
        admitted: stats.counters.admitted,
        rejected: stats.counters.rejected.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
        evicted: stats.counters.evicted,
    }))
}

/// Transactions that left the mempool unconfirmed, and why: a page of the node's removal log
/// (it keeps the newest `mempool.removed_log` entries), so that nothing the node accepted
/// vanishes without a word.
#[utoipa::path(get, path = "/mempool/removed", params(("after" = Option<u64>, Query, description = "entries after this log position (default 0: from the oldest kept)", minimum = 0), ("limit" = Option<u32>, Query, description = "most entries (default 1000)", minimum = 0, maximum = 10000)),
    responses((status = 200, body = RemovedJson), (status = 400, body = ErrorBody)))]
async fn mempool_removed(State(s): State<ApiState>, q: QueryPairs) -> ApiResult<RemovedJson> {
    let (after, n) = after_and_limit(q, 1000, 10_000)?;
    let page = s.shared.replica.mempool.removed(after, n);
    Ok(Json(RemovedJson {
        entries: page
            .entries
            .iter()
            .map(|e| RemovalJson {
                seq: e.seq,
                txid: e.txid,
                kind: e.why.kind().to_string(),
                reason: e.why.reason().map(str::to_string),
            })
            .collect(),
        oldest: page.oldest,
        last: page.last,
    }))
}

/// When transactions were first admitted and blocks first taken, and from where: a page of the
/// node's arrival log (the newest `arrivals.capacity` entries).
#[utoipa::path(get, path = "/arrivals", params(("after" = Option<u64>, Query, description = "entries after this log position (default 0: from the oldest kept)", minimum = 0), ("limit" = Option<u32>, Query, description = "most entries (default 1000)", minimum = 0, maximum = 10000)),
    responses((status = 200, body = ArrivalsJson), (status = 400, body = ErrorBody)))]
async fn arrivals(State(s): State<ApiState>, q: QueryPairs) -> ApiResult<ArrivalsJson> {
    let (after, n) = after_and_limit(q, 1000, 10_000)?;
    let page = s.shared.arrivals.page(after, n);
    Ok(Json(ArrivalsJson {
        entries: page
            .entries
            .iter()
            .map(|a| {
                let (kind, height, lock) = match a.kind {
                    crate::arrivals::Kind::Tx => ("tx", None, None),
                    crate::arrivals::Kind::Block { height, lock_wait_us, lock_held_us } => {
                        ("block", Some(height), Some((lock_wait_us, lock_held_us)))
                    }
                };
                ArrivalJson {
                    seq: a.seq,
                    kind: kind.into(),
                    id: a.id,
                    height,
                    lock_wait_us: lock.map(|l| l.0),
                    lock_held_us: lock.map(|l| l.1),
                    at_us: a.at_us,
                    source: a.from.name().into(),
                    peer: a.from.peer().map(|p| p.to_string()),
                }
            })
            .collect(),
        oldest: page.oldest,
        last: page.last,
        now_us: crate::arrivals::now_us(),
    }))
}

/// The function profile (seed 001's profiler): call paths in path order, after `after`.
#[utoipa::path(get, path = "/profile", params(("after" = Option<String>, Query, description = "paths after this one (in path order)"), ("limit" = Option<u32>, Query, description = "most paths (default 1000)", minimum = 0, maximum = 10000)),
    responses((status = 200, body = ProfileJson), (status = 400, body = ErrorBody)))]
async fn profile(State(s): State<ApiState>, q: QueryPairs) -> ApiResult<ProfileJson> {
    let (after, n) = after_text_and_limit(q, 1000, 10_000)?;
    Ok(Json(s.shared.profile.document(after.as_deref(), n)))
}

/// Turns the profiler on or off, or resets it (in memory and in the data directory).
#[utoipa::path(post, path = "/profile", request_body = ProfileControl,
    responses((status = 200, body = ProfileStatus), (status = 400, body = ErrorBody), (status = 401, body = ErrorBody), (status = 503, body = ErrorBody)))]
async fn profile_control(
    State(s): State<ApiState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> ApiResult<ProfileStatus> {
    authorised(&s, &headers)?;
    let body = body.map_err(|e| ApiError::bad(format!("body: {}", e.body_text())))?;
    let c: ProfileControl = serde_json::from_slice(&body).map_err(|e| ApiError::bad(format!("body: {e}")))?;
    let p = &s.shared.profile;
    if c.reset {
        p.reset().map_err(|e| {
            ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", format!("writing the profile: {e}"))
        })?;
    }
    if let Some(on) = c.enabled {
        scalechain_types::profile::set_enabled(on);
    }
    Ok(Json(ProfileStatus {
        enabled: scalechain_types::profile::enabled(),
        recorded_s: scalechain_types::profile::recorded().as_secs_f64(),
        paths: scalechain_types::profile::path_count(),
    }))
}

/// How often an idle event stream carries a keep-alive comment.
pub const EVENTS_KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Server-sent events: `event: tip` with the tip as data (`{"height", "hash"}`) at once, then
/// after every change of tip (changes close together coalesce into the newest); a keep-alive
/// comment every 15 s while nothing happens. The stream ends when the node stops.
#[utoipa::path(get, path = "/events", responses((status = 200, description = "Server-sent events: `tip`", content_type = "text/event-stream")))]
async fn events(State(s): State<ApiState>) -> Response {
    tip_events(s.shared.tip_changed.subscribe(), s.shared.api_stop.subscribe())
}

/// The `tip` event stream over a tip channel, ending when `stop` turns true (also the null
/// target's).
pub(crate) fn tip_events(
    rx: tokio::sync::watch::Receiver<(u64, Hash)>,
    stop: tokio::sync::watch::Receiver<bool>,
) -> Response {
    use axum::response::sse::{Event, KeepAlive, Sse};
    let stream = futures::stream::unfold((rx, stop, true), |(mut rx, mut stop, first)| async move {
        if !first {
            tokio::select! {
                changed = rx.changed() => changed.ok()?,
                _ = stop.wait_for(|s| *s) => return None,
            }
        }
        if *stop.borrow() {
            return None;
        }
        let (height, hash) = *rx.borrow_and_update();
        let data = serde_json::to_string(&Tip { height, hash }).ok()?;
        let ev: Result<Event, std::convert::Infallible> = Ok(Event::default().event("tip").data(data));
        Some((ev, (rx, stop, false)))
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(EVENTS_KEEP_ALIVE)).into_response()
}

/// Metrics in the OpenMetrics text format (Prometheus scrapes it).
#[utoipa::path(get, path = "/metrics", responses((status = 200, description = "OpenMetrics text format", content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8")))]
async fn metrics(State(s): State<ApiState>) -> Response {
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], metrics_text(&s.shared)).into_response()
}

/// The node's metrics in the OpenMetrics text format (`GET /metrics`, and
/// [`NodeView::metrics_text`](crate::view::NodeView::metrics_text)).
pub(crate) fn metrics_text(sh: &Shared) -> String {
    let (height, orphans, utxos) = {
        let c = sh.replica.chain.read();
        (c.tip_height(), c.orphan_count(), c.utxos().len())
    };
    let (store, index_queued) = {
        let c = sh.replica.chain.read();
        (c.store().memory(), c.store().txindex_queued())
    };
    let st = sh.replica.mempool.stats();
    let keys = scalechain_types::keycache::Ed25519KeyCache::global().stats();
    let mut e = Scrape::new();
    e.process()
        .gauge(
            "store_write_buffer_bytes",
            "Bytes in the store's memtables (store.memtable_bytes).",
            store.write_buffer as f64,
        )
        .gauge(
            "store_cache_bytes",
            "Bytes in the store's block cache (store.cache_bytes).",
            store.cache as f64,
        )
        .gauge("store_journal_bytes", "Bytes of the store's journals on disk.", store.journal as f64)
        .gauge(
            "store_txindex_queued",
            "Commits whose txid-index entries the store's index writer has not written yet (at most 64).",
            index_queued as f64,
        )
        .gauge(
            "sig_cache_entries",
            "Verdicts the signature cache holds (mempool.sig_cache).",
            st.sig_cache_len as f64,
        )
        .gauge("chain_height", "Tip height.", height as f64)
        .gauge("chain_orphans", "Blocks waiting for their parent.", orphans as f64)
        .gauge("utxos", "Unspent outputs.", utxos as f64)
        .gauge("mempool_txs", "Pooled transactions.", st.count as f64)
        .gauge("mempool_bytes", "Pooled bytes.", st.bytes as f64)
        .counter("mempool_evicted", "Transactions evicted for room.", st.counters.evicted)
        .counter(
            "mempool_expired",
            "Transactions dropped because no later block may include them.",
            st.counters.expired,
        )
        .counter("sig_cache_hits", "Signature-cache hits.", st.sig_cache_hits)
        .counter("sig_cache_lookups", "Signature-cache lookups.", st.sig_cache_lookups)
        .gauge(
            "ed25519_key_cache_entries",
            "Decompressed Ed25519 keys the process holds for batch verification (at most 65,536).",
            keys.entries as f64,
        )
        .counter("ed25519_key_cache_hits", "Keys of verified batches found already decompressed.", keys.hits)
        .counter(
            "ed25519_key_cache_lookups",
            "Distinct keys of verified batches looked up in the key cache.",
            keys.lookups,
        )
        .gauge(
            "orphans",
            "Transactions waiting in the orphan pool for their parents.",
            st.orphans.count as f64,
        )
        .counter("orphans_held", "Transactions taken in as orphans.", st.orphans.counters.held)
        .counter(
            "orphans_admitted",
            "Orphans admitted once their parents came.",
            st.orphans.counters.admitted,
        )
        .counter("orphans_expired", "Orphans that expired.", st.orphans.counters.expired)
        .counter("orphans_evicted", "Orphans pushed out for room.", st.orphans.counters.evicted)
        .gauge("peers", "Connected peers.", sh.peers.read().len() as f64);
    if let Some(n) = sh.net_stats.read().as_ref() {
        use std::sync::atomic::Ordering::Relaxed;
        e.counter("gossip_in", "Gossip messages received.", n.gossip_in.load(Relaxed))
            .counter("gossip_in_bytes", "Gossip bytes received.", n.gossip_in_bytes.load(Relaxed))
            .counter(
                "gossip_in_block_bytes",
                "Gossip bytes received on the block topics (whole and compact).",
                n.gossip_in_block_bytes.load(Relaxed),
            )
            .counter(
                "sync_in_bytes",
                "Response bytes received for sync requests.",
                n.sync_in_bytes.load(Relaxed),
            )
            .counter("gossip_out", "Gossip messages published.", n.gossip_out.load(Relaxed))
            .counter("gossip_publish_failed", "Publishes that failed.", n.publish_failed.load(Relaxed))
            .counter("gossip_slow_peer", "Slow-peer reports.", n.slow_peer.load(Relaxed))
            .counter(
                "p2p_ping_failures",
                "Connections closed because a ping went unanswered.",
                n.ping_failures.load(Relaxed),
            )
            .counter(
                "p2p_connection_errors",
                "Connections that ended in an error (reset, or data unacknowledged for 20 s).",
                n.connection_errors.load(Relaxed),
            )
            .counter(
                "p2p_silent_closed",
                "Inbound peer-to-peer connections closed, having sent nothing, to make room for a newcomer.",
                n.silent_closed.load(Relaxed),
            );
    }
    sh.metrics.render(&e)
}

/// Counts every API request, its errors (4xx and 5xx) and its latency to the response's head.
/// The profiler records each request under its operation (`api GET /blocks/{id}`).
async fn track(
    State(s): State<ApiState>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let t0 = std::time::Instant::now();
    let name =
        op_name(req.method(), req.extensions().get::<axum::extract::MatchedPath>().map(|m| m.as_str()));
    let r = next.run(req).await;
    let m = &s.shared.metrics;
    m.api_requests.add(1);
    if r.status().is_client_error() || r.status().is_server_error() {
        m.api_errors.add(1);
    }
    m.api_request.observe(t0.elapsed());
    scalechain_types::profile::record(name, t0.elapsed());
    r
}

/// The profiler's name of an API request: `api METHOD PATH` for the operations of
/// [`ops::all`], made once, and `api other` for anything else (a fallback answer).
fn op_name(method: &axum::http::Method, matched: Option<&str>) -> &'static str {
    type Names = Vec<(&'static str, &'static str, &'static str)>;
    static NAMES: std::sync::OnceLock<Names> = std::sync::OnceLock::new();
    let names = NAMES.get_or_init(|| {
        ops::all()
            .into_iter()
            .map(|d| {
                let name: &'static str = Box::leak(format!("api {} {}", d.method, d.path).into_boxed_str());
                (d.method.as_str(), d.path, name)
            })
            .collect()
    });
    matched
        .and_then(|p| names.iter().find(|(m, path, _)| *path == p && *m == method.as_str()))
        .map_or("api other", |(_, _, name)| name)
}
