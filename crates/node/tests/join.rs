//! A newcomer joins a node whose peer-to-peer port is held by silent TCP connections — opened
//! from many loopback addresses (127.0.0.2 onwards, so no limit per address stops them), never
//! sending a byte, and opened again as the node closes them. The node keeps half of its slots
//! for connections being set up for those that speak and closes the silent one held longest for
//! each newcomer; the newcomer connects and syncs. The handshake time-out is set far past the
//! test, so the flood's connections are never closed for their time.
//!
//! How long the newcomer took to sync, with 70 and with 500 silent connections held, is printed
//! (`--nocapture`); the test asserts only that it syncs within a bound no working node misses
//! (before, 500 silent connections filled every slot for connections being set up and a
//! newcomer was refused until they timed out).
#![allow(clippy::unwrap_used)]

mod support;

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use scalechain_p2p::msg::Role;
use support::{eventually, get, height, start, stop};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpSocket, TcpStream};

/// Only a broken node takes this long.
const GENEROUS: Duration = Duration::from_secs(60);

/// Holds `n` silent TCP connections to `to` from 127.0.0.2 onwards (250 addresses in turn),
/// opening new ones as the node closes them, until the task is dropped; counts those opened.
fn silent_flood(to: SocketAddr, n: usize) -> (tokio::task::JoinHandle<()>, Arc<AtomicUsize>) {
    let opened = Arc::new(AtomicUsize::new(0));
    let count = opened.clone();
    let task = tokio::spawn(async move {
        let mut next = 0usize;
        let mut held: Vec<TcpStream> = Vec::new();
        loop {
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
                let from = Ipv4Addr::new(127, 0, 0, 2 + (next % 250) as u8);
                next += 1;
                let Ok(sock) = TcpSocket::new_v4() else { break };
                if sock.bind(SocketAddr::from((from, 0))).is_err() {
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

/// Starts a newcomer joining `m` while `silent` connections hold `m`'s port; how long it took
/// to reach `m`'s height.
async fn join_under(m: &support::Node, silent: usize) -> Duration {
    let port = m.p2p().split('/').nth(4).unwrap().parse::<u16>().unwrap();
    let (flood, opened) = silent_flood(SocketAddr::from(([127, 0, 0, 1], port)), silent);
    assert!(
        eventually(GENEROUS, || async { opened.load(Ordering::Relaxed) >= silent }).await,
        "the flood is up"
    );
    let target = height(m).await;
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let p = start(dir.path(), Role::Peer, &[m.p2p()], |_| {}).await;
    let synced = eventually(GENEROUS, || async { height(&p).await >= target }).await;
    let took = t0.elapsed();
    flood.abort();
    let _ = flood.await;
    assert!(synced, "the newcomer did not sync with {silent} silent connections held");
    stop(p).await;
    took
}

/// The node's count of silent connections it closed for newcomers.
async fn silent_closed(m: &support::Node) -> f64 {
    let metrics = reqwest::get(format!("{}/metrics", m.api())).await.unwrap().text().await.unwrap();
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("scalechain_p2p_silent_closed_total "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no silent-connection count in {metrics}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_newcomer_joins_while_silent_connections_hold_the_slots() {
    let dm = tempfile::tempdir().unwrap();
    let m = start(dm.path(), Role::Miner, &[], |c| c.p2p.handshake_timeout_s = 600).await;
    assert!(eventually(GENEROUS, || async { height(&m).await >= 2 }).await);
    let mut took = Vec::new();
    for silent in [70, 500] {
        took.push((silent, join_under(&m, silent).await));
    }
    eprintln!("newcomer synced with silent connections held: {took:?}");
    // 500 silent connections are more than the slots for connections being set up (128):
    // some were closed for the newcomers.
    assert!(silent_closed(&m).await > 0.0);
    assert!(get(&m.api(), "/status").await["height"].is_u64());
    stop(m).await;
}
