//! Resources a client or a peer could pin: hundreds of API clients that never finish their
//! headers do not keep `/status` from answering and are closed after the header time-out (or,
//! past the connection cap, to make room for a newcomer); a
//! flood of idle TCP connections to the peer-to-peer port does not keep a new node from
//! connecting and syncing.
//!
//! The tests wait on events — an answer, a connection closed, a height reached — rather than
//! time them: what they prove is an order (`/status` answered before the node closed a slow
//! client, or only after it closed most of them). The bounds left only keep a broken node from
//! hanging a test; they are generous because two loaded cores can be slow.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use scalechain_p2p::msg::Role;
use support::{eventually, get, height, metric, silent_flood, start, stop};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a test waits for what a working node does at once, or after a time-out of a
/// second or a few: only a broken node takes this long.
const GENEROUS: Duration = Duration::from_secs(60);

/// A client that sends the start of a request and never ends its headers.
async fn slow_client(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /status HTTP/1.1\r\nHost: node\r\n").await.unwrap();
    s
}

/// True once the server closed the connection (end of stream or reset) within `within`.
async fn closed(s: &mut TcpStream, within: Duration) -> bool {
    let mut buf = [0u8; 256];
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, s.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return true,
            Ok(Ok(_)) => continue,
            Err(_) => return false,
        }
    }
}

/// True if the server has closed the connection already (end of stream or reset), without
/// waiting.
fn closed_now(s: &TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match s.try_read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return false,
            Err(_) => return true,
        }
    }
}

/// `GET base+path` as JSON, within [`GENEROUS`].
async fn get_in_time(base: &str, path: &str) -> serde_json::Value {
    tokio::time::timeout(GENEROUS, get(base, path)).await.unwrap_or_else(|_| panic!("{path}: no answer"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_api_clients_neither_pin_the_api_nor_stay_open() {
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |c| {
        // Long enough that /status is asked for well within it, however loaded the machine.
        c.api.header_timeout_s = 5;
        c.api.max_connections = 400;
    })
    .await;
    let addr: SocketAddr = n.info.api.clone().unwrap().parse().unwrap();
    let mut slow = Vec::new();
    for _ in 0..300 {
        slow.push(slow_client(addr).await);
    }
    // /status answers while the 300 connections wait for their headers: when it has answered,
    // the node has closed none of them yet (it closes each at its header time-out).
    assert!(get_in_time(&n.api(), "/status").await["height"].is_u64());
    let gone = slow.iter().filter(|s| closed_now(s)).count();
    assert_eq!(gone, 0, "{gone} slow clients were closed before /status answered");
    // After the header time-out every slow connection is closed by the node.
    for (i, s) in slow.iter_mut().enumerate() {
        assert!(closed(s, GENEROUS).await, "slow client {i} still open");
    }
    // The node counts a connection closed just after closing it: the count comes down to the
    // connections of these requests.
    let api = n.api();
    let open = || metric(&api, "scalechain_api_connections");
    assert!(
        eventually(GENEROUS, || async { open().await <= 2.0 }).await,
        "{} API connections still open",
        open().await
    );
    stop(n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_a_newcomer_closes_the_connection_idle_longest() {
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |c| {
        // Far longer than the test: no slow client is closed for its time-out.
        c.api.header_timeout_s = 600;
        c.api.max_connections = 50;
    })
    .await;
    let addr: SocketAddr = n.info.api.clone().unwrap().parse().unwrap();
    let mut slow = Vec::new();
    for _ in 0..200 {
        slow.push(slow_client(addr).await);
    }
    // /status is answered although 50 slow clients hold every slot: each newcomer closed the
    // connection idle longest. Before, it waited in the backlog for a header time-out.
    assert!(get_in_time(&n.api(), "/status").await["height"].is_u64());
    // The oldest were closed to make room, the newest are still served.
    for (i, s) in slow.iter_mut().take(150).enumerate() {
        assert!(closed(s, GENEROUS).await, "slow client {i} still open");
    }
    let open = slow[160..].iter().filter(|s| !closed_now(s)).count();
    assert!(open >= 30, "only {open} of the 40 newest slow clients are still open");
    let evicted = metric(&n.api(), "scalechain_api_evictions_total").await;
    assert!(evicted >= 150.0, "{evicted} evictions");
    stop(n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_flooding_a_node_do_not_keep_a_newcomer_out() {
    let (dm, dp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // The idle connections are not closed for not finishing their handshake while the test
    // runs: the newcomer gets in only because one address cannot take every slot, never because
    // the flood's connections timed out and left room.
    let m = start(dm.path(), Role::Miner, &[], |c| c.p2p.handshake_timeout_s = 600).await;
    assert!(eventually(GENEROUS, || async { height(&m).await >= 2 }).await);
    let port = m.p2p().split('/').nth(4).unwrap().parse::<u16>().unwrap();
    // More idle connections than the node's 64 connection slots, kept up all along.
    let (flood, opened) = silent_flood(SocketAddr::from(([127, 0, 0, 1], port)), 150, 1);
    assert!(
        eventually(GENEROUS, || async { opened.load(Ordering::Relaxed) >= 150 }).await,
        "the flood is up"
    );
    let p = start(dp.path(), Role::Peer, &[m.p2p()], |_| {}).await;
    let target = height(&m).await;
    let synced = eventually(GENEROUS, || async { height(&p).await >= target }).await;
    flood.abort();
    assert!(synced, "the newcomer did not sync under the flood");
    stop(p).await;
    stop(m).await;
}
