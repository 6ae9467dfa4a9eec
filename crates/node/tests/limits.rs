//! Resources a client or a peer could pin: hundreds of API clients that never finish their
//! headers do not keep `/status` from answering and are closed after the header time-out; a
//! flood of idle TCP connections to the peer-to-peer port does not keep a new node from
//! connecting and syncing.
#![allow(clippy::unwrap_used)]

mod support;

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use scalechain_p2p::msg::Role;
use support::{eventually, get, height, start, stop};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

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
    assert!(t0.elapsed() < Duration::from_secs(2), "{:?}", t0.elapsed());
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
    assert!(t1.elapsed() < Duration::from_secs(9), "{:?}", t1.elapsed());
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

/// Opens `n` TCP connections from 127.0.0.2 to `to` that never say anything, and opens them
/// again as the node closes them, until the task is dropped.
fn idle_flood(to: SocketAddr, n: usize) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let open = || async move {
            let sock = TcpSocket::new_v4().ok()?;
            sock.bind("127.0.0.2:0".parse().ok()?).ok()?;
            sock.connect(to).await.ok()
        };
        let mut held: Vec<TcpStream> = Vec::new();
        loop {
            // Keep only the connections the node has not closed.
            let mut alive = Vec::with_capacity(held.len());
            for mut s in held.drain(..) {
                let mut b = [0u8; 1];
                match tokio::time::timeout(Duration::from_millis(1), s.read(&mut b)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => {}
                    _ => alive.push(s),
                }
            }
            held = alive;
            while held.len() < n {
                match open().await {
                    Some(s) => held.push(s),
                    None => break,
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_flooding_a_node_do_not_keep_a_newcomer_out() {
    let (dm, dp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = start(dm.path(), Role::Miner, &[], |_| {}).await;
    assert!(eventually(Duration::from_secs(15), || async { height(&m).await >= 2 }).await);
    let port = m.p2p().split('/').nth(4).unwrap().parse::<u16>().unwrap();
    // More idle connections than the node's 64 connection slots, kept up all along.
    let flood = idle_flood(SocketAddr::from(([127, 0, 0, 1], port)), 150);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let t0 = Instant::now();
    let p = start(dp.path(), Role::Peer, &[m.p2p()], |_| {}).await;
    let target = height(&m).await;
    let synced = eventually(Duration::from_secs(5), || async { height(&p).await >= target }).await;
    let took = t0.elapsed();
    flood.abort();
    assert!(synced, "the newcomer did not sync within 5 s under the flood");
    assert!(took < Duration::from_secs(5), "{took:?}");
    stop(p).await;
    stop(m).await;
}
