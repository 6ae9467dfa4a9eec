//! With discovery off a node keeps the topology it was given: it connects to its bootstrap
//! addresses and to who dials it, and Kademlia never dials the peers of its peers. With discovery
//! on, the same chain of three nodes closes into a triangle (the control that shows the test can
//! tell the two apart).
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::time::Duration;

use libp2p::{Multiaddr, PeerId};
use scalechain_p2p::msg::ProtocolNames;
use scalechain_p2p::net::{self, Net, NetConfig, NetEvent};
use scalechain_types::Hash;
use tokio::time::Instant;

fn config(seed: u8, bootstrap: Vec<Multiaddr>, discover: bool) -> NetConfig {
    NetConfig {
        listen: vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
        bootstrap,
        names: ProtocolNames::for_chain(&Hash([0x70; 32])),
        key_seed: [seed; 32],
        max_message_bytes: 1 << 20,
        max_connections: 8,
        event_buffer: 256,
        agent: format!("topology-{seed}"),
        gossip: true,
        discover,
    }
}

/// The address `n` listens on (with its `/p2p/` suffix).
async fn listening(n: &mut Net) -> Multiaddr {
    loop {
        if let NetEvent::Listening(a) = n.events.recv().await.unwrap() {
            return a;
        }
    }
}

/// Starts C, then B dialling C, then A dialling B; returns the peers each of A and C connected
/// with until `until` says stop (checked as events come, and at `deadline` at the latest).
async fn chain_of_three(
    discover: bool,
    deadline: Duration,
    until: impl Fn(&HashSet<PeerId>, &PeerId) -> bool,
) -> (HashSet<PeerId>, PeerId, PeerId) {
    let mut c = net::start(config(3, vec![], discover)).await.unwrap();
    let c_addr = listening(&mut c).await;
    let mut b = net::start(config(2, vec![c_addr], discover)).await.unwrap();
    let b_addr = listening(&mut b).await;
    let mut a = net::start(config(1, vec![b_addr], discover)).await.unwrap();
    let (b_id, c_id) = (b.peer_id, c.peer_id);
    let mut seen = HashSet::new();
    let end = Instant::now() + deadline;
    // B and C must keep draining their events for their tasks to go on.
    loop {
        tokio::select! {
            e = a.events.recv() => {
                if let Some(NetEvent::Connected { peer, .. }) = e {
                    seen.insert(peer);
                    if until(&seen, &c_id) {
                        break;
                    }
                }
            }
            _ = b.events.recv() => {}
            _ = c.events.recv() => {}
            _ = tokio::time::sleep_until(end) => break,
        }
    }
    (seen, b_id, c_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_discovery_off_a_node_never_dials_the_peers_of_its_peers() {
    // Kademlia's own search starts half a second after a peer enters its table; five seconds
    // give it ten times that.
    let (seen, b, c) = chain_of_three(false, Duration::from_secs(5), |seen, c| seen.contains(c)).await;
    assert!(seen.contains(&b), "A reached its bootstrap peer: {seen:?}");
    assert!(!seen.contains(&c), "A dialled B's peer C although discovery is off: {seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_discovery_on_the_same_chain_closes_into_a_triangle() {
    let (seen, b, c) = chain_of_three(true, Duration::from_secs(60), |seen, c| seen.contains(c)).await;
    assert!(seen.contains(&b) && seen.contains(&c), "A found C through B: {seen:?}");
}
