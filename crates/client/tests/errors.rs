//! The client's typed errors against a stand-in server with canned answers: the node's JSON
//! error (with the 401 hint), an error page that is not JSON, an answer that does not parse
//! (naming the field), a verdict count that does not match, a time-out, an unreachable
//! address; the bearer token goes with writes only; the blocking face gives the same answers.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use axum::response::Html;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::json;

use scalechain_client::ops::Method;
use scalechain_client::types::BlockId;
use scalechain_client::{Client, ClientError};
use scalechain_types::Tx;

const HASH: &str = "abababababababababababababababababababababababababababababababab";

fn status_json() -> serde_json::Value {
    json!({
        "chain_id": HASH, "role": "miner", "peer_id": "p", "listen": [], "height": 7, "tip": HASH,
        "mempool_txs": 0, "mempool_bytes": 0, "peers": 1, "orphans": 0, "uptime_s": 1.5
    })
}

/// Serves canned answers on 127.0.0.1; returns `host:port`.
async fn serve() -> String {
    let app = Router::new()
        .route("/status", get(|| async { Json(status_json()) }))
        .route("/tip", get(|| async { Json(json!({"height": "seven", "hash": HASH})) }))
        .route(
            "/blocks/{id}",
            get(|| async {
                (
                    StatusCode::NOT_FOUND,
                    Json(json!({"error": "not-found", "message": "no block at height 9"})),
                )
            }),
        )
        .route("/mempool", get(|| async { (StatusCode::BAD_GATEWAY, "<html>bad gateway</html>") }))
        .route("/blocks/{id}/txids", get(|| async { Html("<html>a web server's page</html>") }))
        .route(
            "/peers",
            get(|| async {
                tokio::time::sleep(Duration::from_secs(3)).await;
                Json(json!([]))
            }),
        )
        .route(
            "/metrics",
            get(|headers: HeaderMap| async move {
                // Reads carry no token.
                format!("authorization {}", headers.contains_key("authorization"))
            }),
        )
        .route(
            "/txs",
            post(|headers: HeaderMap| async move {
                if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some("Bearer t0k") {
                    let body = json!({"error": "unauthorized", "message": "this endpoint needs a token"});
                    return (StatusCode::UNAUTHORIZED, Json(body));
                }
                let one = json!({"txid": HASH, "accepted": true, "reason": null, "detail": null});
                (StatusCode::OK, Json(json!({"accepted": 1, "results": [one]})))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

#[tokio::test]
async fn every_failure_is_a_typed_error_naming_the_request() {
    let addr = serve().await;
    let c = Client::builder(addr.as_str()).token("t0k").timeout(Duration::from_millis(400)).build().unwrap();
    assert_eq!(c.base(), format!("http://{addr}"));
    assert_eq!(c.status().await.unwrap().height, 7);

    // An answer that does not parse: the field and the URL.
    match c.tip().await.unwrap_err() {
        ClientError::BadResponse { method, url, detail } => {
            assert_eq!((method, url.as_str()), (Method::Get, format!("http://{addr}/tip").as_str()));
            assert!(detail.starts_with("height: invalid type"), "{detail}");
        }
        other => panic!("{other}"),
    }
    // The node's JSON error.
    let e = c.block(BlockId::Height(9)).await.unwrap_err();
    match &e {
        ClientError::Api { method: Method::Get, status: 404, code, message, url } => {
            assert_eq!((code.as_str(), message.as_str()), ("not-found", "no block at height 9"));
            assert!(url.ends_with("/blocks/9"), "{url}");
        }
        other => panic!("{other}"),
    }
    assert!(e.is_not_found() && !e.is_connection());
    assert_eq!(
        e.to_string(),
        format!("GET http://{addr}/blocks/9: HTTP 404 not-found: no block at height 9")
    );
    // An error page that is not the API's JSON error, or a web page where the API answers
    // JSON: something else answered; its body is not repeated.
    let e = c.mempool(None).await.unwrap_err();
    match &e {
        ClientError::NotANode { status: 502, media, .. } => assert_eq!(media, "text/plain"),
        other => panic!("{other}"),
    }
    assert!(e.is_connection() && !e.to_string().contains("bad gateway"), "{e}");
    let e = c.block_txids(BlockId::Height(1)).await.unwrap_err();
    match &e {
        ClientError::NotANode { status: 200, media, url, .. } => {
            assert_eq!(media, "text/html");
            assert!(url.ends_with("/blocks/1/txids"), "{url}");
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().starts_with("not a ScaleChain node at http://"), "{e}");
    assert!(!e.to_string().contains("web server"), "{e}");
    // A time-out.
    match c.peers().await.unwrap_err() {
        ClientError::Timeout { method: Method::Get, url, after } => {
            assert!(url.ends_with("/peers"));
            assert_eq!(after, Duration::from_millis(400));
        }
        other => panic!("{other}"),
    }
    // Writes carry the token, reads do not; the verdicts are checked against what was sent.
    assert_eq!(c.metrics().await.unwrap(), "authorization false");
    let one = Tx::coinbase(1, vec![]);
    assert_eq!(c.submit(std::slice::from_ref(&one)).await.unwrap().accepted, 1);
    match c.submit(&[one.clone(), Tx::coinbase(2, vec![])]).await.unwrap_err() {
        ClientError::BadResponse { method: Method::Post, detail, .. } => {
            assert_eq!(detail, "1 verdicts for 2 transactions")
        }
        other => panic!("{other}"),
    }
    let no_token = Client::new(&addr).unwrap();
    let e = no_token.submit(std::slice::from_ref(&one)).await.unwrap_err();
    assert_eq!(e.status(), Some(401));
    assert!(e.to_string().ends_with("this endpoint needs a token (pass --token or --token-file; the node keeps its token in DATA_DIR/api_token)"), "{e}");
}

#[tokio::test]
async fn an_address_where_nothing_listens_is_unreachable() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let c = Client::new(&format!("127.0.0.1:{port}")).unwrap();
    let e = c.status().await.unwrap_err();
    assert!(matches!(e, ClientError::Unreachable { method: Method::Get, .. }), "{e}");
    assert!(e.is_connection());
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("the node's API at http://127.0.0.1:{port}/status is unreachable (")),
        "{text}"
    );
    assert!(text.contains("refused") && text.contains("pass --api URL"), "{text}");
    assert!(!text.contains("error sending request"), "only the innermost cause: {text}");
}

#[test]
fn the_blocking_client_gives_the_same_answers() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let addr = rt.block_on(serve());
    let c = scalechain_client::blocking::Client::new(&addr).unwrap();
    assert_eq!(c.status().unwrap().height, 7);
    assert!(c.block(BlockId::Height(9)).unwrap_err().is_not_found());
    assert!(matches!(c.tip().unwrap_err(), ClientError::BadResponse { .. }));
    let e = scalechain_client::blocking::Client::new("ftp://x").unwrap_err();
    assert!(matches!(e, ClientError::BadUrl { .. }), "{e}");
}

/// A server that answers the first request of each connection with `/status`'s body and keeps
/// the connection open, then closes it, unanswered, when the second request comes — as a node
/// does when its keep-alive time-out ends just as a pooled connection is reused. Counts the
/// connections it took.
async fn closing_server() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let conns = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = conns.clone();
    tokio::spawn(async move {
        loop {
            let (mut s, _) = l.accept().await.unwrap();
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = s.read(&mut buf).await;
                let body = status_json().to_string();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(format!("{head}{body}").as_bytes()).await;
                // The next request on this connection: read it, and close.
                let _ = s.read(&mut buf).await;
            });
        }
    });
    (addr, conns)
}

#[tokio::test]
async fn a_get_on_a_connection_the_node_closed_goes_again_once_and_a_post_does_not() {
    let (addr, conns) = closing_server().await;
    let c = Client::new(&addr).unwrap();
    assert_eq!(c.status().await.unwrap().height, 7);
    // The pooled connection is reused and closed unanswered: the GET goes again, on a new one.
    assert_eq!(c.status().await.unwrap().height, 7);
    assert_eq!(conns.load(std::sync::atomic::Ordering::SeqCst), 2);
    // A write is never sent twice: its failure is the caller's to see.
    let e = c.submit(&[Tx::coinbase(1, vec![])]).await.unwrap_err();
    assert!(matches!(e, ClientError::Unreachable { method: Method::Post, .. }), "{e}");
}
