//! An emulated wide-area link between two node processes on 127.0.0.1 (the kernel here has no
//! `netem`): the second node, which does not discover peers (`p2p.discover = false`), dials the
//! first only through a relay holding each direction for 100 ms; transactions submitted to the
//! first reach the second that much later, as the nodes' arrival logs measure it, within 10%.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use scalechain_consensus::params::SigMode;
use scalechain_consensus::Params;
use scalechain_lab::launcher::wan::{Link, Relay};
use scalechain_lab::launcher::{wait_until, Launcher, NodeSpec, Role};
use scalechain_types::{HashKind, Tx};

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

/// Premine output `i` paid back to its key (devnet: SHA-256, Ed25519).
fn transfer(i: u32) -> Tx {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    scalechain_workload::premine_transfer(&p, SigMode::Ed25519, i, 2_000).unwrap()
}

#[test]
fn a_relayed_link_delays_what_crosses_it_by_its_one_way_delay() {
    let one_way = Duration::from_millis(100);
    let mut net = Launcher::new(EXE).unwrap();
    let fixed = "[p2p]\ndiscover = false\n";
    let a = net.start(NodeSpec::new("miner", Role::Miner).config(fixed)).unwrap();
    let (a_client, a_addr) = (a.blocking_client().unwrap(), a.p2p_addr().to_string());
    let parts: Vec<&str> = a_addr.split('/').collect();
    let target = SocketAddr::from(([127, 0, 0, 1], parts[4].parse().unwrap()));
    let relay = Relay::start(target, Link::delay(one_way)).unwrap();
    let through = format!("/ip4/127.0.0.1/tcp/{}/p2p/{}", relay.addr().port(), parts[6]);
    let b = net.start(NodeSpec::new("peer", Role::Peer).config(fixed).bootstrap(&through)).unwrap();
    let b_client = b.blocking_client().unwrap();
    wait_until("the link", Duration::from_secs(30), || b_client.status().unwrap().peers == 1).unwrap();
    wait_until("height 1 at both", Duration::from_secs(60), || {
        a_client.status().unwrap().height >= 1 && b_client.status().unwrap().height >= 1
    })
    .unwrap();
    // One transaction at a time, each once the last has crossed.
    let mut delays = Vec::new();
    for i in 0..9 {
        let tx = transfer(i);
        let id = tx.txid(HashKind::Sha256);
        assert_eq!(a_client.submit(&[tx]).unwrap().accepted, 1);
        let at = |c: &scalechain_client::blocking::Client| {
            c.arrivals(0, Some(10_000)).unwrap().entries.into_iter().find(|e| e.id == id).map(|e| e.at_us)
        };
        wait_until("the transaction across the link", Duration::from_secs(10), || at(&b_client).is_some())
            .unwrap();
        let (sent, got) = (at(&a_client).unwrap(), at(&b_client).unwrap());
        delays.push(got.saturating_sub(sent) as f64 / 1e3);
    }
    delays.sort_by(f64::total_cmp);
    let median = delays[delays.len() / 2];
    let want = one_way.as_secs_f64() * 1e3;
    assert!((median - want).abs() <= 0.1 * want, "median {median:.1} ms across a {want} ms link: {delays:?}");
    // The peer knows the miner only through the relay: no direct connection was discovered.
    let peers = b_client.peers().unwrap();
    assert_eq!(peers.len(), 1);
    assert!(peers[0].addr.contains(&relay.addr().port().to_string()), "{:?}", peers[0].addr);
}
