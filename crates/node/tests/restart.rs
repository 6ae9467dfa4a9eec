//! Nodes that restart: one finds its old peers again from its persisted peer book, without a
//! bootstrap node; a miner that restarts mines the transactions its peer admitted meanwhile, and
//! both nodes' arrival logs say when each transaction and block reached them and from where;
//! an arrival log keeps its configured capacity and says what it forgot.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use scalechain_p2p::msg::Role;
use support::{eventually, get, height, peer_ids, post, start, stop, transfers};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_restarted_without_bootstrap_reconnects_to_its_old_peers() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = start(da.path(), Role::Peer, &[], |_| {}).await;
    let b = start(db.path(), Role::Peer, &[a.p2p()], |_| {}).await;
    let a_id = a.info.peer_id.clone();
    assert!(eventually(Duration::from_secs(10), || async { peer_ids(&b).await.contains(&a_id) }).await);
    // Stopping writes the book: A is in it with the address it listens on.
    let dir = stop(b).await;
    let book: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("peers.json")).unwrap()).unwrap();
    assert_eq!(book["version"], 1);
    let known = &book["peers"][&a_id];
    let a_addr = a.p2p();
    let addrs: Vec<&str> = known["addrs"]
        .as_array()
        .expect("A is in B's peer book")
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(addrs.iter().any(|x| a_addr.starts_with(x)), "{known} {a_addr}");
    // No bootstrap this time: B dials what its book knows.
    let b = start(&dir, Role::Peer, &[], |_| {}).await;
    assert!(
        eventually(Duration::from_secs(5), || async { peer_ids(&b).await.contains(&a_id) }).await,
        "B did not find A again"
    );
    stop(b).await;
    // A corrupt book is reported and ignored: the node starts with an empty one.
    std::fs::write(dir.join("peers.json"), b"{ not a book").unwrap();
    let b = start(&dir, Role::Peer, &[], |_| {}).await;
    assert!(peer_ids(&b).await.is_empty());
    stop(b).await;
    stop(a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_admitted_while_the_miner_restarts_are_mined_once_it_is_back() {
    let (dm, dp) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = start(dm.path(), Role::Miner, &[], |_| {}).await;
    let p = start(dp.path(), Role::Peer, &[m.p2p()], |_| {}).await;
    assert!(eventually(Duration::from_secs(15), || async { height(&p).await >= 1 }).await);
    // The miner goes down; the peer admits transfers meanwhile.
    let dir = stop(m).await;
    let txs = transfers(0..60);
    let body = serde_json::json!({ "txs": txs.iter().map(|(_, h)| h.clone()).collect::<Vec<_>>() });
    let v = post(&p.api(), "/txs", body).await;
    assert_eq!(v["accepted"], 60, "{v}");
    // Back (the address of its peer given again, as an operator would): it fetches the
    // peer's mempool after the handshake and mines all of it.
    let m = start(&dir, Role::Miner, &[p.p2p()], |_| {}).await;
    let api = p.api();
    let mined = eventually(Duration::from_secs(30), || async {
        for (txid, _) in &txs {
            if get(&api, &format!("/txs/{txid}")).await["status"] != "confirmed" {
                return false;
            }
        }
        true
    })
    .await;
    assert!(mined, "{} of 60 transfers still pooled at the peer", get(&api, "/mempool").await["count"]);

    // Both nodes logged when each transfer and block reached them, and from where: the peer
    // took the transfers from its API, the restarted miner from the peer's mempool; the miner
    // mined the blocks, the peer had them from the miner.
    let peer_id = |n: &support::Node| {
        let api = n.api();
        async move { get(&api, "/status").await["peer_id"].as_str().unwrap().to_string() }
    };
    let (m_id, p_id) = (peer_id(&m).await, peer_id(&p).await);
    let arrivals = |n: &support::Node| {
        let api = n.api();
        async move { get(&api, "/arrivals?limit=10000").await["entries"].as_array().unwrap().clone() }
    };
    let of = |entries: &[serde_json::Value], id: &str| entries.iter().find(|e| e["id"] == id).cloned();
    let (at_p, at_m) = (arrivals(&p).await, arrivals(&m).await);
    for (txid, _) in &txs {
        let (a, b) = (of(&at_p, txid).unwrap(), of(&at_m, txid).unwrap());
        assert_eq!(
            (a["kind"].as_str(), a["source"].as_str(), &a["peer"]),
            (Some("tx"), Some("api"), &serde_json::Value::Null)
        );
        assert_eq!((b["source"].as_str(), b["peer"].as_str()), (Some("pool"), Some(p_id.as_str())), "{b}");
        assert!(b["at_us"].as_u64() > a["at_us"].as_u64(), "{a} then {b}");
        assert!(
            a["lock_wait_us"].is_null() && a["lock_held_us"].is_null(),
            "a transaction takes no lock: {a}"
        );
    }
    let mined_here: Vec<&serde_json::Value> =
        at_m.iter().filter(|e| e["kind"] == "block" && e["source"] == "mined").collect();
    assert!(!mined_here.is_empty());
    // A block's commit time: the wait for the chain's write lock and the time it held it.
    assert!(
        mined_here.iter().all(|b| b["lock_wait_us"].is_u64() && b["lock_held_us"].is_u64()),
        "{mined_here:?}"
    );
    for b in mined_here.iter().filter(|b| b["height"].as_u64() > Some(1)) {
        let seen = of(&at_p, b["id"].as_str().unwrap()).unwrap_or_else(|| panic!("{b} not at the peer"));
        assert!(matches!(seen["source"].as_str(), Some("gossip" | "sync")), "{seen}");
        assert_eq!(seen["peer"].as_str(), Some(m_id.as_str()));
    }
    // A transfer now travels by gossip; a reader pages from the last position it saw.
    let last = get(&m.api(), "/arrivals?limit=0").await["last"].as_u64().unwrap();
    let more = transfers(60..61);
    let v = post(&p.api(), "/txs", serde_json::json!({ "txs": [more[0].1.clone()] })).await;
    assert_eq!(v["accepted"], 1, "{v}");
    let gossiped =
        eventually(Duration::from_secs(15), || async {
            let page = get(&m.api(), &format!("/arrivals?after={last}")).await;
            page["entries"].as_array().unwrap().iter().any(|e| {
                e["id"] == more[0].0.as_str() && e["source"] == "gossip" && e["peer"] == p_id.as_str()
            })
        })
        .await;
    assert!(gossiped, "the miner logged the gossiped transfer");
    for q in ["?after=x", "?limit=10001", "?since=3"] {
        assert_eq!(get(&m.api(), &format!("/arrivals{q}")).await["error"], "bad-request", "{q}");
    }
    stop(m).await;
    stop(p).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_arrival_log_keeps_its_capacity_and_says_what_it_forgot() {
    let d = tempfile::tempdir().unwrap();
    let n = start(d.path(), Role::Peer, &[], |c| c.arrivals.capacity = 5).await;
    let txs = transfers(0..7);
    let body = serde_json::json!({ "txs": txs.iter().map(|(_, h)| h.clone()).collect::<Vec<_>>() });
    assert_eq!(post(&n.api(), "/txs", body).await["accepted"], 7);
    let page = get(&n.api(), "/arrivals?limit=100").await;
    let ids: Vec<&str> =
        page["entries"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap()).collect();
    // The newest five, in order; the first two are forgotten, which `oldest` says.
    assert_eq!(ids, txs[2..].iter().map(|(id, _)| id.as_str()).collect::<Vec<_>>(), "{page}");
    assert_eq!((page["oldest"].as_u64(), page["last"].as_u64()), (Some(3), Some(7)), "{page}");
    stop(n).await;
}
