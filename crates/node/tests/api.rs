//! The HTTP API of an in-process node: every bad request is a 4xx with a JSON error naming
//! what was wrong (sent raw, on purpose), good requests answer through the typed client, the
//! OpenAPI document lists the endpoints with the schemas of the very types the client decodes,
//! and write endpoints demand the token when one is configured.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use scalechain_client::ops::{self, Schema};
use scalechain_client::types::{
    AppEntry, AppRange, ArrivalJson, ArrivalsJson, BlockId, CentredJson, Owner, PeerInfo, ProfileControl,
    ProfileJson, ProfilePath, ProfileStatus, RemovalJson, RemovedJson, StorageStatus, SubmitTxs, TxState,
};
use scalechain_client::{Client, ClientError};
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_consensus::{genesis_block, Apps, Params};
use scalechain_node::{NodeConfig, NodeInfo, Pages};
use scalechain_types::{Amount, HashKind, OutPoint, SecretKey, Tx, TxIn, TxKind, TxOut, Witness};
use serde_json::{json, Value};

struct Running {
    api: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
    _dir: Option<tempfile::TempDir>,
}

async fn start(token: Option<&str>) -> Running {
    let dir = tempfile::tempdir().unwrap();
    let mut n = start_at(dir.path(), |cfg| {
        cfg.api.token = token.map(String::from);
        cfg.api.max_txs_per_request = 3;
        cfg.api.max_body_bytes = 64 << 10;
    })
    .await;
    n._dir = Some(dir);
    n
}

/// A node on data directory `dir` (which the caller keeps), with `tweak` applied to its settings.
async fn start_at(dir: &std::path::Path, tweak: impl FnOnce(&mut NodeConfig)) -> Running {
    let mut cfg = NodeConfig { data_dir: dir.to_path_buf(), ..NodeConfig::default() };
    cfg.api.listen = "127.0.0.1:0".into();
    tweak(&mut cfg);
    let path = dir.join("node.json");
    let _ = std::fs::remove_file(&path);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        scalechain_node::run(cfg, Apps::none(), Pages::none(), false, async {
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
    Running { api: info.api.unwrap(), stop: Some(tx), task, _dir: None }
}

/// With `store.tx_index = false` a confirmed transaction is not looked up, and the 404 says
/// why; the same data directory with the index on finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_txid_index_says_so_and_finds_confirmed_transactions_once_it_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let coinbase = genesis_block(&p).txs[0].txid(p.hash);
    let url = |n: &Running| format!("http://{}/txs/{coinbase}", n.api);
    let n = start_at(dir.path(), |c| c.store.tx_index = false).await;
    let (status, body) = call("GET", &url(&n), None, None).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["message"].as_str().unwrap().contains("store.tx_index = false"), "{body}");
    stop(n).await;
    let n = start_at(dir.path(), |_| {}).await;
    let (status, body) = call("GET", &url(&n), None, None).await;
    assert_eq!((status, &body["status"], &body["height"]), (200, &json!("confirmed"), &json!(0)), "{body}");
    stop(n).await;
}

/// With `store.owner_index = false` no coins are looked up by owner, and the 404 says why;
/// the same data directory with the index on (rebuilt from the UTXO set) finds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_without_the_owner_index_says_so_and_finds_coins_once_it_is_on() {
    let dir = tempfile::tempdir().unwrap();
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let owner = p.premine[0].lock.pubkey_hash;
    let url = |n: &Running| format!("http://{}/utxos/{owner}", n.api);
    let n = start_at(dir.path(), |c| c.store.owner_index = false).await;
    let (status, body) = call("GET", &url(&n), None, None).await;
    assert_eq!(status, 404, "{body}");
    assert!(body["message"].as_str().unwrap().contains("store.owner_index = false"), "{body}");
    stop(n).await;
    let n = start_at(dir.path(), |_| {}).await;
    let (status, body) = call("GET", &url(&n), None, None).await;
    assert_eq!(status, 200, "{body}");
    let coins = body.as_array().unwrap();
    assert!(!coins.is_empty(), "the premine's owner holds coins: {body}");
    assert!(coins.iter().all(|c| c["pubkey_hash"] == json!(owner.to_string())), "{body}");
    stop(n).await;
}

async fn stop(mut n: Running) {
    let _ = n.stop.take().unwrap().send(());
    tokio::time::timeout(Duration::from_secs(30), &mut n.task).await.unwrap().unwrap();
}

async fn call(method: &str, url: &str, body: Option<&str>, bearer: Option<&str>) -> (u16, serde_json::Value) {
    let c = reqwest::Client::new();
    let mut r = if method == "POST" { c.post(url) } else { c.get(url) };
    if let Some(b) = body {
        r = r.header("content-type", "application/json").body(b.to_string());
    }
    if let Some(t) = bearer {
        r = r.header("authorization", format!("Bearer {t}"));
    }
    let resp = r.send().await.unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: not JSON ({e}): {text}")))
}

/// `POST url` with a binary body (`application/octet-stream`).
async fn call_bytes(url: &str, body: Vec<u8>) -> (u16, serde_json::Value) {
    let resp = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/octet-stream")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or_else(|e| panic!("{url}: not JSON ({e}): {text}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_json_4xx_and_good_ones_answer() {
    let mut n = start(None).await;
    let base = format!("http://{}", n.api);
    // An address of a chain hashing with another function (this node's is SHA-256).
    let lock = scalechain_types::Lock {
        scheme: scalechain_types::Scheme::Ed25519,
        pubkey_hash: scalechain_types::Hash([7; 32]),
    };
    let blake3 = format!(
        "/utxos/{}",
        scalechain_wallet::encode_address(&scalechain_wallet::AddressHrp::devnet(), HashKind::Blake3, &lock)
    );
    let bad: &[(&str, &str, Option<&str>, u16, &str)] = &[
        ("GET", &blake3, None, 400, "hashing with blake3, and this chain uses sha256"),
        ("GET", "/blocks/xyz", None, 400, "neither a height nor 64 lowercase hex digits"),
        // Digests are lowercase (docs/PROTOCOL.md §1.2): uppercase is refused, not read.
        ("GET", &format!("/blocks/{}", "AB".repeat(32)), None, 400, "64 lowercase hex digits"),
        ("GET", &format!("/txs/{}", "AB".repeat(32)), None, 400, "64 lowercase hex digits"),
        ("GET", &format!("/utxos/{}", "AB".repeat(32)), None, 400, "64 lowercase hex digits"),
        ("GET", "/apps/2/state/AB", None, 400, "uppercase"),
        ("GET", "/apps/2/state?prefix=aB", None, 400, "uppercase"),
        ("GET", "/blocks/99999", None, 404, "no block at height 99999"),
        ("GET", &format!("/blocks/{}", "0".repeat(64)), None, 404, "no block"),
        ("GET", "/txs/nothex", None, 400, "txid"),
        ("GET", &format!("/txs/{}", "ab".repeat(32)), None, 404, "no transaction"),
        ("GET", "/utxos/sc1notanaddress", None, 400, "owner"),
        ("GET", "/mempool?limit=abc", None, 400, "limit"),
        ("GET", "/mempool?limit=100001", None, 400, "limit"),
        ("GET", "/no/such/path", None, 404, "no such endpoint"),
        ("POST", "/txs", Some("{not json"), 400, "body"),
        ("POST", "/txs", Some(r#"{"txs": ["00", "01", "02", "03"]}"#), 413, "at most 3"),
    ];
    for (m, path, body, status, msg) in bad {
        let (s, v) = call(m, &format!("{base}{path}"), *body, None).await;
        assert_eq!(s, *status, "{m} {path}: {v}");
        assert!(v["error"].is_string(), "{m} {path}: {v}");
        assert!(v["message"].as_str().unwrap().contains(msg), "{m} {path}: {v}");
    }
    // A binary body is one transaction batch: bounded by its count before decoding, and
    // refused whole, saying where, if it does not decode.
    let binary: &[(Vec<u8>, u16, &str)] = &[
        (vec![], 400, "shorter than its 4-byte count"),
        (vec![4, 0, 0, 0], 413, "at most 3"),
        (vec![0xff, 0xff, 0xff, 0xff], 413, "at most 3"),
        (vec![1, 0, 0, 0, 1, 2, 3], 400, "transaction batch"),
        (vec![0, 0, 0, 0, 9], 400, "transaction batch"),
    ];
    for (body, status, msg) in binary {
        let (s, v) = call_bytes(&format!("{base}/txs"), body.clone()).await;
        assert_eq!(s, *status, "{body:?}: {v}");
        assert!(v["message"].as_str().unwrap().contains(msg), "{body:?}: {v}");
    }
    // An empty batch is a request with no transactions.
    let (s, v) = call_bytes(&format!("{base}/txs"), vec![0, 0, 0, 0]).await;
    assert_eq!((s, &v["results"]), (200, &serde_json::json!([])), "{v}");
    // Uppercase hex is not read as a transaction's encoding.
    let (s, v) = call("POST", &format!("{base}/txs"), Some(r#"{"txs": ["0A"]}"#), None).await;
    assert_eq!((s, v["results"][0]["reason"].as_str()), (200, Some("malformed")), "{v}");
    assert!(v["results"][0]["detail"].as_str().unwrap().contains("uppercase"), "{v}");
    // A transaction that does not decode is refused by name, in its place.
    let (s, v) = call("POST", &format!("{base}/txs"), Some(r#"{"txs": ["zz"]}"#), None).await;
    assert_eq!(s, 200);
    assert_eq!(v["accepted"], 0);
    assert_eq!(v["results"][0]["reason"], "malformed");
    assert!(v["results"][0]["detail"].as_str().unwrap().starts_with("txs[0]"));
    // Good requests, through the client.
    let client = Client::new(&n.api).unwrap();
    assert_eq!(client.status().await.unwrap().height, 0);
    assert_eq!(client.block(0).await.unwrap().header.height, 0);
    let v = client.openapi().await.unwrap();
    for p in ["/status", "/blocks/{id}", "/txs", "/utxos/{owner}", "/mempool", "/metrics"] {
        assert!(v["paths"][p].is_object(), "openapi lacks {p}");
    }
    // The client's typed errors carry the node's JSON error.
    let e = client.block(99_999).await.unwrap_err();
    assert_eq!(e.status(), Some(404), "{e}");
    assert!(e.to_string().contains("HTTP 404 not-found: no block at height 99999"), "{e}");
    let metrics = client.metrics().await.unwrap();
    assert!(metrics.contains("scalechain_chain_height"));
    // Every part of the node's memory that a setting bounds has its size in the metrics.
    let gauge = |name: &str| -> f64 {
        let line = metrics
            .lines()
            .find(|l| l.starts_with(&format!("scalechain_{name} ")))
            .unwrap_or_else(|| panic!("{name}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    assert!(gauge("process_resident_memory_bytes") > 1e6);
    assert!(gauge("store_journal_bytes") > 0.0);
    for name in [
        "store_write_buffer_bytes",
        "store_cache_bytes",
        "store_txindex_queued",
        "sig_cache_entries",
        "ed25519_key_cache_entries",
        "mempool_bytes",
        "utxos",
    ] {
        assert!(gauge(name) >= 0.0, "{name}");
    }
    // Every request before this scrape was counted and timed, the refused ones as errors.
    let (requests, errors) = (gauge("api_requests_total"), gauge("api_errors_total"));
    assert!(errors >= 2.0 && requests > errors, "{requests} requests, {errors} errors");
    assert_eq!(gauge("api_request_seconds_count"), requests);
    assert_eq!(gauge("api_request_seconds_bucket{le=\"+Inf\"}"), requests);
    assert!(gauge("process_cpu_seconds_total") > 0.0 && gauge("process_open_fds") >= 3.0);
    assert!(metrics.contains("scalechain_build_info{version=\""), "{metrics}");
    let _ = n.stop.take().unwrap().send(());
    tokio::time::timeout(Duration::from_secs(30), &mut n.task).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_endpoints_need_the_token_when_one_is_set() {
    let mut n = start(Some("s3cret")).await;
    let e = Client::new(&n.api).unwrap().submit(&[]).await.unwrap_err();
    match &e {
        ClientError::Api { status: 401, code, .. } => assert_eq!(code, "unauthorized"),
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("pass --token or --token-file"), "the 401 hint: {e}");
    let wrong = Client::builder(n.api.as_str()).token("wrong").build().unwrap();
    assert_eq!(wrong.submit(&[]).await.unwrap_err().status(), Some(401));
    let right = Client::builder(n.api.as_str()).token("s3cret").build().unwrap();
    assert_eq!(right.submit(&[]).await.unwrap().accepted, 0);
    // Reads stay open.
    assert_eq!(Client::new(&n.api).unwrap().status().await.unwrap().height, 0);
    let _ = n.stop.take().unwrap().send(());
    tokio::time::timeout(Duration::from_secs(30), &mut n.task).await.unwrap().unwrap();
}

/// What the schemathesis run (`.ci/api-fuzz.sh`) found answered by the extractors' own plain-text
/// rejections, or not listed in the OpenAPI document: each is now a JSON 4xx naming what was
/// wrong, and the document covers every route with its parameters and body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extractor_rejections_are_json_4xx_and_the_document_covers_every_route() {
    let n = start(None).await;
    let base = format!("http://{}", n.api);
    let hex64 = "ab".repeat(32);
    let bad: &[(&str, &str, Option<&str>, u16, &str)] = &[
        // Percent-encoded bytes that are not UTF-8, in each path parameter.
        ("GET", "/blocks/%FF", None, 400, "block id"),
        ("GET", "/blocks/%C3%28/txids", None, 400, "block id"),
        ("GET", "/txs/%FE", None, 400, "txid"),
        ("GET", "/utxos/%80", None, 400, "owner"),
        // Query strings: unknown parameters, repeats, and non-numbers.
        ("GET", "/mempool?limit=1&limit=2", None, 400, "more than once"),
        ("GET", "/mempool?foo=1", None, 400, "unknown parameter"),
        ("GET", "/mempool/removed?after=-1", None, 400, "after"),
        ("GET", "/mempool/removed?after=1&after=2", None, 400, "more than once"),
        ("GET", "/mempool/removed?limit=10001", None, 400, "limit"),
        ("GET", "/mempool/removed?since=1", None, 400, "unknown parameter"),
        ("GET", &format!("/utxos/{hex64}?limit=-1"), None, 400, "limit"),
        ("GET", &format!("/utxos/{hex64}?limit=%FF"), None, 400, "limit"),
        // Application state reads: kinds, keys and their query.
        ("GET", "/apps/1/state", None, 400, "kind"),
        ("GET", "/apps/%FF/state", None, 400, "kind"),
        ("GET", "/apps/2/state/zz", None, 400, "not hex"),
        ("GET", "/apps/2/state?foo=1", None, 400, "unknown parameter"),
        ("GET", "/apps/2/state?after=00&after=01", None, 400, "more than once"),
        ("GET", "/apps/2/state?limit=1001", None, 400, "limit"),
        ("GET", "/apps/2/state/00", None, 404, "no key"),
    ];
    for (m, path, body, status, msg) in bad {
        let (s, v) = call(m, &format!("{base}{path}"), *body, None).await;
        assert_eq!(s, *status, "{m} {path}: {v}");
        assert!(v["error"].is_string(), "{m} {path}: {v}");
        assert!(v["message"].as_str().unwrap().contains(msg), "{m} {path}: {v}");
    }
    // A body over `api.max_body_bytes` is a JSON 413.
    let big = format!(r#"{{"txs": ["{}"]}}"#, "00".repeat(64 << 10));
    let (s, v) = call("POST", &format!("{base}/txs"), Some(&big), None).await;
    assert_eq!(s, 413, "{v}");
    assert_eq!(v["error"], "too-large");
    // Good list queries still answer.
    let (s, v) = call("GET", &format!("{base}/mempool?limit=0"), None, None).await;
    assert_eq!(s, 200, "{v}");
    let (s, v) = call("GET", &format!("{base}/mempool/removed?after=0&limit=10"), None, None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v, serde_json::json!({"entries": [], "oldest": 1, "last": 0}));
    let (s, v) = call("GET", &format!("{base}/utxos/{hex64}?limit=5"), None, None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v, serde_json::json!([]));
    let (s, v) = call("GET", &format!("{base}/apps/2/state?prefix=00&limit=3"), None, None).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!((v["kind"].as_u64(), v["more"].as_bool()), (Some(2), Some(false)), "{v}");

    let (_, doc) = call("GET", &format!("{base}/openapi.json"), None, None).await;
    for (p, m) in [
        ("/status", "get"),
        ("/tip", "get"),
        ("/peers", "get"),
        ("/blocks/{id}", "get"),
        ("/blocks/{id}/txids", "get"),
        ("/txs/{txid}", "get"),
        ("/txs", "post"),
        ("/utxos/{owner}", "get"),
        ("/mempool", "get"),
        ("/mempool/removed", "get"),
        ("/metrics", "get"),
        ("/openapi.json", "get"),
        ("/apps/{kind}/state", "get"),
        ("/apps/{kind}/state/{key}", "get"),
    ] {
        assert!(doc["paths"][p][m].is_object(), "openapi lacks {m} {p}");
    }
    let body = &doc["paths"]["/txs"]["post"]["requestBody"]["content"]["application/json"];
    assert!(body["schema"].is_object(), "POST /txs documents its JSON body: {doc}");
    for (p, name, place) in [
        ("/blocks/{id}", "id", "path"),
        ("/txs/{txid}", "txid", "path"),
        ("/utxos/{owner}", "owner", "path"),
        ("/utxos/{owner}", "limit", "query"),
        ("/mempool", "limit", "query"),
    ] {
        let params = doc["paths"][p]["get"]["parameters"].as_array().unwrap();
        assert!(
            params.iter().any(|x| x["name"] == name && x["in"] == place),
            "{p} documents its {place} parameter {name}"
        );
    }
    stop(n).await;
}

/// A transfer of `prev` (worth `value`, locked to `key`) back to `key`, less `fee`.
fn transfer(p: &Params, key: &SecretKey, prev: OutPoint, value: u64, fee: u64) -> Tx {
    let pk = key.public();
    let lock = scalechain_types::Lock { scheme: pk.scheme(), pubkey_hash: pk.hash(p.hash) };
    let mut tx = Tx {
        version: 1,
        kind: TxKind::TRANSFER,
        inputs: vec![TxIn { prev, witness: Witness { pubkey: pk, signature: [0; 64] } }],
        outputs: vec![TxOut { value: Amount::new(value - fee).unwrap(), lock }],
        data: vec![],
    };
    tx.sign_inputs_with(p.hash, &p.chain_id(), key);
    tx
}

/// The schema `s` with `$ref`s resolved.
fn resolve<'a>(s: &'a Value, doc: &'a Value) -> &'a Value {
    match s["$ref"].as_str().and_then(|r| r.strip_prefix("#/components/schemas/")) {
        Some(name) => resolve(&doc["components"]["schemas"][name], doc),
        None => s,
    }
}

/// Checks that `v` has exactly the shape of `schema`: an object has every property of its
/// schema and no other, required ones not null; arrays, maps, enums and scalar types match.
fn conforms(v: &Value, schema: &Value, doc: &Value, at: &str) -> Result<(), String> {
    let s = resolve(schema, doc);
    if let Some(alts) = s["oneOf"].as_array().or_else(|| s["anyOf"].as_array()) {
        return if alts.iter().any(|a| conforms(v, a, doc, at).is_ok()) {
            Ok(())
        } else {
            Err(format!("{at}: {v} matches none of {alts:?}"))
        };
    }
    if let Some(all) = s["allOf"].as_array() {
        return all.iter().try_for_each(|a| conforms(v, a, doc, at));
    }
    if let Some(options) = s["enum"].as_array() {
        if !options.contains(v) {
            return Err(format!("{at}: {v} is not one of {options:?}"));
        }
    }
    let types: Vec<&str> = match &s["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => vec![],
    };
    let type_ok = types.is_empty()
        || types.iter().any(|t| match *t {
            "null" => v.is_null(),
            "string" => v.is_string(),
            "boolean" => v.is_boolean(),
            "integer" => v.is_i64() || v.is_u64(),
            "number" => v.is_number(),
            "array" => v.is_array(),
            "object" => v.is_object(),
            _ => false,
        });
    if !type_ok {
        return Err(format!("{at}: {v} is not of type {types:?}"));
    }
    if let Some(props) = s["properties"].as_object() {
        let obj = v.as_object().ok_or_else(|| format!("{at}: {v} is not an object"))?;
        let want: BTreeSet<&String> = props.keys().collect();
        let have: BTreeSet<&String> = obj.keys().collect();
        if want != have {
            return Err(format!("{at}: properties {have:?}, schema {want:?}"));
        }
        let required: BTreeSet<&str> = s["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (k, p) in props {
            if required.contains(k.as_str()) && obj[k].is_null() {
                return Err(format!("{at}.{k}: required, but null"));
            }
            if !required.contains(k.as_str()) && !obj[k].is_null() && p["type"] == json!("null") {
                return Err(format!("{at}.{k}: not null"));
            }
            conforms(&obj[k], p, doc, &format!("{at}.{k}"))?;
        }
        // A field the type may leave out must be optional in the schema, and the other way round.
        for k in &required {
            if !props.contains_key(*k) {
                return Err(format!("{at}: required {k} is no property"));
            }
        }
    } else if let (Some(extra), Some(obj)) = (s.get("additionalProperties"), v.as_object()) {
        for (k, x) in obj {
            conforms(x, extra, doc, &format!("{at}[{k:?}]"))?;
        }
    }
    if let (Some(items), Some(arr)) = (s.get("items"), v.as_array()) {
        for (i, x) in arr.iter().enumerate() {
            conforms(x, items, doc, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// The schema a `Schema` of the client stands for, as the document writes it.
fn expected(s: &Schema) -> Option<Value> {
    match s {
        Schema::Named(n) => Some(json!({ "$ref": format!("#/components/schemas/{n}") })),
        Schema::ListOf(n) => {
            Some(json!({ "type": "array", "items": { "$ref": format!("#/components/schemas/{n}") } }))
        }
        Schema::Untyped => None,
    }
}

/// The OpenAPI document the node serves and the types the client decodes agree: every
/// operation of the node is one of the client's, with the request and response schemas of the
/// client's types, and a sample of every schema in the document (read from the node through the
/// client where the node can produce one, built from the shared type where it cannot) has
/// exactly the properties, required ones included, of its schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_openapi_document_describes_the_types_the_client_decodes() {
    let n = start(None).await;
    let client = Client::new(&n.api).unwrap();
    let doc = client.openapi().await.unwrap();

    // Operations: the same set on both sides, with the same schemas.
    let mut in_doc = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            in_doc.insert((method.to_uppercase(), path.clone()));
        }
    }
    let client_ops: BTreeSet<(String, String)> =
        ops::all().iter().map(|d| (d.method.as_str().to_string(), d.path.to_string())).collect();
    assert_eq!(in_doc, client_ops, "the node's operations and the client's");
    for d in ops::all() {
        let op = &doc["paths"][d.path][d.method.as_str().to_lowercase()];
        let ok = &op["responses"]["200"]["content"];
        let content = ok.as_object().unwrap();
        let media = content.keys().next().unwrap();
        assert!(
            media.starts_with(d.media),
            "{} {}: answers {media}, the client reads {}",
            d.method,
            d.path,
            d.media
        );
        match expected(&d.response) {
            Some(want) => assert_eq!(ok[media]["schema"], want, "{} {} answer", d.method, d.path),
            None => assert!(ok[media]["schema"].get("$ref").is_none(), "{} {}: {ok}", d.method, d.path),
        }
        let body = &op["requestBody"]["content"]["application/json"]["schema"];
        match &d.request {
            Some(name) => assert_eq!(
                body,
                &json!({ "$ref": format!("#/components/schemas/{name}") }),
                "{} {}",
                d.method,
                d.path
            ),
            None => assert!(op.get("requestBody").is_none(), "{} {} takes no body", d.method, d.path),
        }
        for (code, r) in op["responses"].as_object().unwrap() {
            if code.starts_with('4') || code.starts_with('5') {
                let s = &r["content"]["application/json"]["schema"];
                assert_eq!(
                    s,
                    &json!({"$ref": "#/components/schemas/ApiError"}),
                    "{} {} {code}",
                    d.method,
                    d.path
                );
            }
        }
    }

    // Samples of every schema, from the node through the client where it can give one.
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let genesis = genesis_block(&p);
    let coinbase = genesis.txs[0].txid(p.hash);
    let key = devnet_premine_key(SigMode::Ed25519, 0);
    let tx = transfer(&p, &key, OutPoint { txid: coinbase, index: 0 }, p.premine[0].value.get(), 1_000);
    let submitted = client.submit(std::slice::from_ref(&tx)).await.unwrap();
    assert_eq!(submitted.accepted, 1, "{submitted:?}");
    // The same transaction again, in JSON this time: the same verdict shape, refused as known.
    let again = client.submit_json(std::slice::from_ref(&tx)).await.unwrap();
    assert!(!again.results[0].accepted && again.results[0].reason.is_some(), "{again:?}");
    assert_eq!(again.results[0].txid, submitted.results[0].txid);
    // The document offers both bodies.
    let content = &doc["paths"]["/txs"]["post"]["requestBody"]["content"];
    assert!(content["application/octet-stream"].is_object(), "{content}");
    let in_pool = client.tx(&tx.txid(p.hash)).await.unwrap();
    assert_eq!(in_pool.status, TxState::Mempool);
    let confirmed = client.tx(&coinbase).await.unwrap();
    assert_eq!((confirmed.status, confirmed.height), (TxState::Confirmed, Some(0)));
    let block = client.block(BlockId::Hash(genesis.hash(p.hash))).await.unwrap();
    let utxos = client
        .utxos(&Owner::PubkeyHash(devnet_premine_key(SigMode::Ed25519, 1).public().hash(p.hash)), Some(5))
        .await
        .unwrap();
    assert_eq!(utxos.len(), 1, "premine key 1 holds one output");
    let error = match client.tx(&"ab".repeat(32).parse().unwrap()).await.unwrap_err() {
        ClientError::Api { code, message, .. } => scalechain_client::types::ApiError { error: code, message },
        other => panic!("{other}"),
    };
    let entries = client.app_range(2, &AppRange { limit: Some(3), ..AppRange::default() }).await.unwrap();
    let peer = PeerInfo {
        peer_id: "12D3KooW".into(),
        addr: "/ip4/127.0.0.1/tcp/1".into(),
        role: None,
        height: 4,
        score: -3,
        rtt_us: None,
        last_block_ms: None,
    };
    let peer_known = PeerInfo {
        role: Some("miner".into()),
        rtt_us: Some(812),
        last_block_ms: Some(1_700_000_000_000),
        ..peer.clone()
    };
    let tx_json = in_pool.tx.clone();
    let evicted =
        RemovalJson { seq: 1, txid: tx.txid(HashKind::Sha256), kind: "evicted".into(), reason: None };
    let dropped = RemovalJson {
        seq: 2,
        kind: "dropped".into(),
        reason: Some("missing-input".into()),
        ..evicted.clone()
    };
    let tx_arrival = ArrivalJson {
        seq: 1,
        kind: "tx".into(),
        id: scalechain_types::Hash([7; 32]),
        height: None,
        lock_wait_us: None,
        lock_held_us: None,
        at_us: 1_700_000_000_000_000,
        source: "gossip".into(),
        peer: Some("12D3KooWDpJ7As7BWAwRMfu1VU2WCqNjvq387JEYKDBj4kx6nXTN".into()),
    };
    let block_arrival = ArrivalJson {
        seq: 2,
        kind: "block".into(),
        height: Some(3),
        lock_wait_us: Some(120),
        lock_held_us: Some(3_400),
        source: "mined".into(),
        peer: None,
        ..tx_arrival.clone()
    };
    let centred = CentredJson { centre_ns: 1_000, width_ns: 20, buckets: vec![1; 100], under: 0, over: 3 };
    let profile_path = ProfilePath {
        path: "pipeline.verify".into(),
        count: 103,
        total_ns: 103_000,
        exclusive_ns: 40_000,
        max_ns: 9_000,
        log2: vec![0; 40],
        centred: Some(centred.clone()),
    };
    let leaf_path = ProfilePath {
        path: "pipeline.verify -> mempool.offer".into(),
        centred: None,
        ..profile_path.clone()
    };
    let samples: BTreeMap<&str, Vec<Value>> = [
        ("Status", vec![serde_json::to_value(client.status().await.unwrap()).unwrap()]),
        (
            "StorageStatus",
            vec![
                serde_json::to_value(client.status().await.unwrap().storage).unwrap(),
                serde_json::to_value(StorageStatus {
                    state: "full".into(),
                    free_bytes: Some(0),
                    min_free_bytes: 52_428_800,
                    error: Some("no space left".into()),
                })
                .unwrap(),
            ],
        ),
        ("Tip", vec![serde_json::to_value(client.tip().await.unwrap()).unwrap()]),
        ("PeerInfo", vec![serde_json::to_value(&peer).unwrap(), serde_json::to_value(&peer_known).unwrap()]),
        ("BlockJson", vec![serde_json::to_value(&block).unwrap()]),
        ("HeaderJson", vec![serde_json::to_value(&block.header).unwrap()]),
        (
            "TxJson",
            vec![serde_json::to_value(&tx_json).unwrap(), serde_json::to_value(&block.txs[0]).unwrap()],
        ),
        ("InputJson", vec![serde_json::to_value(&tx_json.inputs[0]).unwrap()]),
        ("OutputJson", vec![serde_json::to_value(&tx_json.outputs[0]).unwrap()]),
        ("BlockTxids", vec![serde_json::to_value(client.block_txids(0).await.unwrap()).unwrap()]),
        (
            "TxStatus",
            vec![serde_json::to_value(&in_pool).unwrap(), serde_json::to_value(&confirmed).unwrap()],
        ),
        ("TxState", vec![json!("mempool"), json!("confirmed")]),
        ("SubmitTxs", vec![serde_json::to_value(SubmitTxs::encode(std::slice::from_ref(&tx))).unwrap()]),
        (
            "SubmitResult",
            vec![serde_json::to_value(&submitted).unwrap(), serde_json::to_value(&again).unwrap()],
        ),
        (
            "TxResult",
            vec![
                serde_json::to_value(&submitted.results[0]).unwrap(),
                serde_json::to_value(&again.results[0]).unwrap(),
            ],
        ),
        ("UtxoJson", vec![serde_json::to_value(utxos[0]).unwrap()]),
        ("MempoolJson", vec![serde_json::to_value(client.mempool(Some(10)).await.unwrap()).unwrap()]),
        (
            "AppEntry",
            vec![serde_json::to_value(AppEntry { key: "65".into(), value: "00ff".into() }).unwrap()],
        ),
        ("AppEntries", vec![serde_json::to_value(&entries).unwrap()]),
        (
            "RemovalJson",
            vec![serde_json::to_value(&evicted).unwrap(), serde_json::to_value(&dropped).unwrap()],
        ),
        (
            "RemovedJson",
            vec![
                serde_json::to_value(client.mempool_removed(0, Some(5)).await.unwrap()).unwrap(),
                serde_json::to_value(RemovedJson {
                    entries: vec![evicted.clone(), dropped.clone()],
                    oldest: 1,
                    last: 2,
                })
                .unwrap(),
            ],
        ),
        ("ApiError", vec![serde_json::to_value(&error).unwrap()]),
        ("CentredJson", vec![serde_json::to_value(&centred).unwrap()]),
        (
            "ArrivalJson",
            vec![serde_json::to_value(&tx_arrival).unwrap(), serde_json::to_value(&block_arrival).unwrap()],
        ),
        (
            "ArrivalsJson",
            vec![
                serde_json::to_value(client.arrivals(0, Some(5)).await.unwrap()).unwrap(),
                serde_json::to_value(ArrivalsJson {
                    entries: vec![tx_arrival.clone(), block_arrival.clone()],
                    oldest: 1,
                    last: 2,
                    now_us: 1_700_000_000_000_000,
                })
                .unwrap(),
            ],
        ),
        (
            "ProfilePath",
            vec![serde_json::to_value(&profile_path).unwrap(), serde_json::to_value(&leaf_path).unwrap()],
        ),
        (
            "ProfileJson",
            vec![
                serde_json::to_value(client.profile(None, Some(2)).await.unwrap()).unwrap(),
                serde_json::to_value(ProfileJson {
                    enabled: true,
                    recorded_s: 12.5,
                    restarts: 2,
                    paths: vec![profile_path.clone(), leaf_path.clone()],
                    more: true,
                })
                .unwrap(),
            ],
        ),
        (
            "ProfileControl",
            vec![
                serde_json::to_value(ProfileControl::default()).unwrap(),
                serde_json::to_value(ProfileControl { enabled: Some(true), reset: true }).unwrap(),
            ],
        ),
        (
            "ProfileStatus",
            vec![serde_json::to_value(ProfileStatus { enabled: false, recorded_s: 0.0, paths: 0 }).unwrap()],
        ),
    ]
    .into_iter()
    .collect();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    let names: BTreeSet<&str> = schemas.keys().map(String::as_str).collect();
    let sampled: BTreeSet<&str> = samples.keys().copied().collect();
    assert_eq!(names, sampled, "a sample for every schema of the document");
    for (name, values) in &samples {
        for v in values {
            conforms(v, &schemas[*name], &doc, name).unwrap_or_else(|e| panic!("{e}\n{v}"));
        }
    }
    // The checker itself: a property too many, one missing and a wrong type are caught.
    let mut extra = samples["Tip"][0].clone();
    extra["more"] = json!(1);
    assert!(conforms(&extra, &schemas["Tip"], &doc, "Tip").is_err());
    let mut missing = samples["Status"][0].clone();
    missing.as_object_mut().unwrap().remove("orphans");
    assert!(conforms(&missing, &schemas["Status"], &doc, "Status").is_err());
    let mut wrong = samples["UtxoJson"][0].clone();
    wrong["value"] = json!("5");
    assert!(conforms(&wrong, &schemas["UtxoJson"], &doc, "UtxoJson").is_err());
    stop(n).await;
}
