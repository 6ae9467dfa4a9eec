//! `GET /events`: a miner's tip arrives as server-sent events, first the tip at once, then each
//! change in order, every one the main chain's block at that height; the stream ends when the
//! node stops, without an error.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use futures::StreamExt;
use scalechain_client::types::{BlockId, NodeEvent};
use scalechain_client::Client;
use scalechain_p2p::msg::Role;
use support::{start, stop};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_miners_tips_arrive_as_events_and_the_stream_ends_with_the_node() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), Role::Miner, &[], |_| {}).await;
    let client = Client::new(&m.api()).unwrap();
    let raw = reqwest::get(format!("{}/events", m.api())).await.unwrap();
    assert_eq!(raw.headers()["content-type"], "text/event-stream");
    drop(raw);
    let before = client.tip().await.unwrap().height;
    let mut events = Box::pin(client.events().await.unwrap());
    let mut tips = Vec::new();
    while tips.len() < 4 {
        let ev = tokio::time::timeout(Duration::from_secs(20), events.next()).await;
        let NodeEvent::Tip(t) = ev.expect("an event within 20 s").expect("an open stream").unwrap();
        tips.push(t);
    }
    assert!(tips[0].height >= before, "the first event is the tip when the stream opened");
    for w in tips.windows(2) {
        assert!(w[1].height > w[0].height, "a single miner's tip only grows: {tips:?}");
    }
    for t in &tips {
        let b = client.block_txids(BlockId::Height(t.height)).await.unwrap();
        assert_eq!(b.hash, t.hash, "the event names the main chain's block at {}", t.height);
    }
    let stopping = tokio::spawn(stop(m));
    let end = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match events.next().await {
                None => return Ok(()),
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(e),
            }
        }
    })
    .await
    .expect("the stream ends when the node stops");
    // A node that stops mid-chunk may reset the connection: an end or a transport error, never
    // a hang or a parse error.
    if let Err(e) = end {
        assert!(matches!(e, scalechain_client::ClientError::Unreachable { .. }), "{e}");
    }
    tokio::time::timeout(Duration::from_secs(30), stopping).await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_nobody_watched_opens_its_stream_at_its_current_tip() {
    let (dm, dp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = start(dm.path(), Role::Miner, &[], |_| {}).await;
    let p = start(dp.path(), Role::Peer, &[m.p2p()], |_| {}).await;
    let peer = Client::new(&p.api()).unwrap();
    // The peer takes blocks with no stream open (nothing subscribed to its tip).
    // A bound against a hang only: twice a loaded machine (a build beside it) kept the peer
    // under height 3 for 20 s.
    let synced = support::eventually(Duration::from_secs(90), || async {
        peer.tip().await.is_ok_and(|t| t.height >= 3)
    })
    .await;
    if !synced {
        let (m_tip, p_tip) = (support::height(&m).await, peer.tip().await.map(|t| t.height));
        let peers = support::get(&p.api(), "/peers").await;
        panic!("the peer did not follow the miner: miner at {m_tip}, peer at {p_tip:?}, its peers {peers}");
    }
    let now = peer.tip().await.unwrap();
    let mut events = Box::pin(peer.events().await.unwrap());
    let first = tokio::time::timeout(Duration::from_secs(5), events.next()).await.unwrap().unwrap().unwrap();
    let NodeEvent::Tip(t) = first;
    assert!(t.height >= now.height, "the stream opens at the tip ({}), not at {}", now.height, t.height);
    drop(events);
    stop(p).await;
    stop(m).await;
}
