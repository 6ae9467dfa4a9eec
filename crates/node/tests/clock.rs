//! A wrong clock: a miner whose clock is hours ahead mines blocks an honest node holds as too
//! new — it neither accepts them early nor penalises the miner for them — and the honest node
//! reports in `/status` that its peers' clocks differ from its own past the rule's bound; a
//! node whose clock is an hour behind (within the bound) still syncs, and reports no warning.
//!
//! A clock before the devnet's genesis (a network simulator's, such as Shadow's, which starts
//! at 2000-01-01): a devnet miner mines nothing, while a chain whose genesis time is set to
//! match (`chain.genesis_time_ms`) mines and syncs, and is another chain.
//!
//! The clocks are shifted with the node's `clock_offset_ms` (a setting for tests). The test
//! waits on heights and fields reached; its bounds only keep a broken node from hanging it.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use scalechain_p2p::msg::Role;
use support::{eventually, get, height, start, stop};

const HOUR_MS: i64 = 60 * 60 * 1000;
/// 2000-01-01T00:00:00Z, where Shadow's clock starts.
const Y2000_MS: u64 = 946_684_800_000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blocks_from_a_clock_ahead_are_held_and_a_clock_behind_still_syncs() {
    let dirs: Vec<_> = (0..4).map(|_| tempfile::tempdir().unwrap()).collect();
    // A miner three hours ahead (past the devnet's two-hour drift bound), and an honest peer
    // that knows only it.
    let fast = start(dirs[0].path(), Role::Miner, &[], |c| c.clock_offset_ms = 3 * HOUR_MS).await;
    let honest = start(dirs[1].path(), Role::Peer, &[fast.p2p()], |_| {}).await;
    // An honest miner, and a peer an hour behind that knows only it.
    let miner = start(dirs[2].path(), Role::Miner, &[], |_| {}).await;
    let behind = start(dirs[3].path(), Role::Peer, &[miner.p2p()], |c| c.clock_offset_ms = -HOUR_MS).await;

    // The honest peer sees the fast miner's blocks and warns of the clocks.
    let warned = eventually(Duration::from_secs(60), || async {
        get(&honest.api(), "/status").await["clock_warning"] == true
    })
    .await;
    let status = get(&honest.api(), "/status").await;
    assert!(warned, "{status}");
    let offset = status["clock_offset_ms"].as_i64().unwrap();
    assert!(
        (2 * HOUR_MS..=3 * HOUR_MS).contains(&offset),
        "the median offset is the miner's three hours: {status}"
    );
    // Many blocks on, it has none of them and the miner is not penalised for them.
    let fast_start = height(&fast).await;
    assert!(eventually(Duration::from_secs(60), || async { height(&fast).await >= fast_start + 3 }).await);
    assert_eq!(height(&honest).await, 0, "no block from three hours ahead is accepted");
    let peers = get(&honest.api(), "/peers").await;
    let fast_id = get(&fast.api(), "/status").await["peer_id"].clone();
    let shown = peers.as_array().unwrap().iter().find(|p| p["peer_id"] == fast_id).cloned();
    let shown = shown.unwrap_or_else(|| panic!("the fast miner stays connected: {peers}"));
    assert_eq!(shown["score"], 0, "{shown}");

    // The node an hour behind follows its miner and sees no clock problem.
    let target = height(&miner).await + 3;
    let synced = eventually(Duration::from_secs(60), || async { height(&behind).await >= target }).await;
    let status = get(&behind.api(), "/status").await;
    assert!(synced, "the node an hour behind syncs: {status}");
    assert_eq!(status["clock_warning"], false, "{status}");
    let offset = status["clock_offset_ms"].as_i64().unwrap();
    assert!((HOUR_MS / 2..=HOUR_MS + 60_000).contains(&offset), "its miner is an hour ahead of it: {status}");
    for n in [behind, miner, honest, fast] {
        stop(n).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_with_its_own_genesis_time_mines_where_the_clock_is_before_the_devnets() {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    // Every clock reads 2000-01-01, one hour in.
    let offset = (Y2000_MS as i64 + HOUR_MS) - i64::try_from(now).unwrap();
    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let own = |c: &mut scalechain_node::NodeConfig| {
        c.clock_offset_ms = offset;
        c.chain.genesis_time_ms = Y2000_MS;
    };
    let miner = start(dirs[0].path(), Role::Miner, &[], own).await;
    let peer = start(dirs[1].path(), Role::Peer, &[miner.p2p()], own).await;
    let devnet = start(dirs[2].path(), Role::Miner, &[], |c| c.clock_offset_ms = offset).await;

    let synced = eventually(Duration::from_secs(60), || async { height(&peer).await >= 3 }).await;
    let status = get(&peer.api(), "/status").await;
    assert!(synced, "the chain of 2000 mines and syncs: {status}");
    let devnet_status = get(&devnet.api(), "/status").await;
    assert_eq!(devnet_status["height"], 0, "a devnet miner waits for a time 26 years ahead");
    assert_ne!(status["chain_id"], devnet_status["chain_id"], "the genesis time makes another chain");
    for n in [devnet, peer, miner] {
        stop(n).await;
    }
}
