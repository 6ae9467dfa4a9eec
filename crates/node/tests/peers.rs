//! `GET /peers` keeps up with the network: a peer's height follows its chain after the
//! handshake — by the blocks it relays, and, for a peer whose relays gossip never delivers
//! (the same block came first from another), by its `Hello` asked again — and each peer shows
//! when it last gave this node a block.
//!
//! The test waits on heights reached rather than timing them; its bounds only keep a broken
//! node from hanging it.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use scalechain_p2p::msg::Role;
use support::{eventually, get, height, start, stop};

/// The entry of `/peers` at `n` for `peer_id`.
async fn shown(n: &support::Node, peer_id: &str) -> Option<serde_json::Value> {
    let v = get(&n.api(), "/peers").await;
    v.as_array().unwrap().iter().find(|p| p["peer_id"] == peer_id).cloned()
}

async fn peer_id(n: &support::Node) -> String {
    get(&n.api(), "/status").await["peer_id"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_are_shown_at_their_current_height_with_their_last_block_time() {
    let (dm, da, db) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = start(dm.path(), Role::Miner, &[], |_| {}).await;
    // A relays the miner's blocks; B hears them from the miner and from A, and gossip gives it
    // each block once, mostly from the miner: A's own announcements rarely reach B's protocol.
    let a = start(da.path(), Role::Peer, &[m.p2p()], |_| {}).await;
    let b = start(db.path(), Role::Peer, &[m.p2p(), a.p2p()], |_| {}).await;
    let (m_id, a_id) = (peer_id(&m).await, peer_id(&a).await);
    let connected = eventually(Duration::from_secs(90), || async {
        shown(&b, &m_id).await.is_some() && shown(&b, &a_id).await.is_some()
    })
    .await;
    if !connected {
        let mut seen = String::new();
        for (name, n) in [("miner", &m), ("A", &a), ("B", &b)] {
            let (peers, metrics) = (get(&n.api(), "/peers").await, support::metrics_text(&n.api()).await);
            let p2p: Vec<&str> = metrics
                .lines()
                .filter(|l| l.starts_with("scalechain_p2p_") || l.starts_with("scalechain_peer"))
                .collect();
            seen.push_str(&format!("\n{name}: peers {peers}\n{}", p2p.join("\n")));
        }
        panic!("B connects to the miner ({m_id}) and to A ({a_id}); what each saw:{seen}");
    }
    let start_height = height(&m).await;
    // Ten blocks later, B shows both at least there.
    let target = start_height + 10;
    let current = eventually(Duration::from_secs(90), || async {
        let (sm, sa) = (shown(&b, &m_id).await, shown(&b, &a_id).await);
        let h = |s: &Option<serde_json::Value>| s.as_ref().and_then(|p| p["height"].as_u64()).unwrap_or(0);
        h(&sm) >= target && h(&sa) >= target
    })
    .await;
    assert!(current, "B shows the miner and A at height {target} or more: {}", get(&b.api(), "/peers").await);
    // The miner gave B blocks: its last block time is set, and no later than now.
    let sm = shown(&b, &m_id).await.unwrap();
    let last = sm["last_block_ms"].as_u64().unwrap_or_else(|| panic!("no last block time: {sm}"));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    assert!(last <= now, "{sm}");
    for n in [b, a, m] {
        stop(n).await;
    }
}
