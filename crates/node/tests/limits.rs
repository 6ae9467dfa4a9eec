//! Resources a client could pin: hundreds of API clients that never finish their headers do
//! not keep `/status` from answering and are closed after the header time-out, at most the
//! configured number at a time.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use scalechain_p2p::msg::Role;
use support::{get, start, stop};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_api_clients_neither_pin_the_api_nor_stay_open() {
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |c| {
        c.api.header_timeout_s = 1;
        c.api.max_connections = 400;
    })
    .await;
    let addr: SocketAddr = n.info.api.clone().unwrap().parse().unwrap();
    let mut slow = Vec::new();
    for _ in 0..300 {
        slow.push(slow_client(addr).await);
    }
    // /status answers at once while 300 connections wait for their headers.
    let t0 = Instant::now();
    assert!(get(&n.api(), "/status").await["height"].is_u64());
    assert!(t0.elapsed() < Duration::from_millis(800), "{:?}", t0.elapsed());
    // After the header time-out every slow connection is closed by the node.
    for (i, s) in slow.iter_mut().enumerate() {
        assert!(closed(s, Duration::from_secs(4)).await, "slow client {i} still open");
    }
    let metrics = reqwest::get(format!("{}/metrics", n.api())).await.unwrap().text().await.unwrap();
    let open: f64 =
        metrics.lines().find_map(|l| l.strip_prefix("scalechain_api_connections ")).unwrap().parse().unwrap();
    assert!(open <= 2.0, "{open} API connections still open");
    stop(n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_slow_clients_than_the_cap_wait_their_turn_and_the_api_survives() {
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |c| {
        c.api.header_timeout_s = 1;
        c.api.max_connections = 50;
    })
    .await;
    let addr: SocketAddr = n.info.api.clone().unwrap().parse().unwrap();
    let mut slow = Vec::new();
    for _ in 0..200 {
        slow.push(slow_client(addr).await);
    }
    // At most 50 are served at a time, each closed after the 1 s header time-out: they close
    // in waves, not all after the first second.
    let t0 = Instant::now();
    let mut waits = tokio::task::JoinSet::new();
    for mut s in slow {
        waits.spawn(async move { closed(&mut s, Duration::from_secs(10)).await.then(Instant::now) });
    }
    // /status waits its turn in the backlog, then answers.
    let t1 = Instant::now();
    assert!(get(&n.api(), "/status").await["height"].is_u64());
    assert!(t1.elapsed() < Duration::from_secs(8), "{:?}", t1.elapsed());
    let mut early = 0;
    while let Some(r) = waits.join_next().await {
        let at = r.unwrap().expect("every slow client is closed within 10 s");
        if at.duration_since(t0) < Duration::from_millis(1_500) {
            early += 1;
        }
    }
    assert!(early < 150, "{early} of 200 closed in the first 1.5 s: more than 50 were served at once");
    assert!(get(&n.api(), "/status").await["height"].is_u64());
    stop(n).await;
}
