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

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use scalechain_p2p::msg::Role;
use support::{eventually, get, height, metric, silent_flood, start, stop};

/// Only a broken node takes this long.
const GENEROUS: Duration = Duration::from_secs(60);

/// Starts a newcomer joining `m` while `silent` connections hold `m`'s port; how long it took
/// to reach `m`'s height.
async fn join_under(m: &support::Node, silent: usize) -> Duration {
    let port = m.p2p().split('/').nth(4).unwrap().parse::<u16>().unwrap();
    let (flood, opened) = silent_flood(SocketAddr::from(([127, 0, 0, 1], port)), silent, 250);
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
    assert!(metric(&m.api(), "scalechain_p2p_silent_closed_total").await > 0.0);
    assert!(get(&m.api(), "/status").await["height"].is_u64());
    stop(m).await;
}
