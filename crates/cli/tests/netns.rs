//! Emulated hosts: a devnet whose nodes each run in a network namespace of their own (another IP
//! stack and address, linked through a bridge, each link limited by `tbf`), reached over the
//! API at their namespace's address with the token the node wrote; everything the run made is
//! gone once it ends, and a namespace a killed run left behind is swept. Needs root and `ip`; elsewhere the test says so and passes without
//! running.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use scalechain_lab::launcher::netns::{self, Namespaces};
use scalechain_lab::launcher::{wait_until, Launcher, NetworkPlan};

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

#[test]
fn a_devnet_in_two_namespaces_connects_mines_and_cleans_up() {
    if !netns::is_root() || std::process::Command::new("ip").arg("netns").arg("list").output().is_err() {
        eprintln!("skipped: network namespaces need root and the `ip` program");
        return;
    }
    // One a killed run left behind (its creator, a pid above the kernel's limit, is gone).
    let stale = format!("{}4294967295-dead-0", netns::PREFIX);
    let ip = |args: &[&str]| std::process::Command::new("ip").args(args).output().unwrap();
    assert!(ip(&["netns", "add", &stale]).status.success());
    let names = ["bootstrap", "peer0", "miner0"];
    let ns = Arc::new(Namespaces::create(&names, Some("50mbit")).unwrap());
    let listed = String::from_utf8_lossy(&ip(&["netns", "list"]).stdout).to_string();
    assert!(!listed.contains(&stale), "the stale namespace was swept: {listed}");
    let tag = ns.tag().to_string();
    {
        let mut net = Launcher::new(EXE).unwrap().placement(ns.clone());
        net.start_network(&NetworkPlan { peers: 1, miners: 1, miner_threads: 1, config: None }).unwrap();
        let peer = net.node("peer0").unwrap();
        let miner = net.node("miner0").unwrap();
        // Each node is on its own host: its addresses are its namespace's.
        for (n, name) in [(peer, "peer0"), (miner, "miner0")] {
            let addr = ns.address(name).unwrap();
            assert!(n.api_addr().starts_with(addr), "{} at {}", name, n.api_addr());
            assert!(n.p2p_addr().starts_with(&format!("/ip4/{addr}/tcp/")), "{}", n.p2p_addr());
        }
        let (p, m) = (peer.blocking_client().unwrap(), miner.blocking_client().unwrap());
        wait_until("the peer and the miner linked", Duration::from_secs(60), || {
            p.peers().unwrap().iter().any(|x| x.peer_id == m.status().unwrap().peer_id)
        })
        .unwrap();
        wait_until("blocks from the miner at the peer", Duration::from_secs(60), || {
            p.status().unwrap().height >= 2
        })
        .unwrap();
        // Writes go through with the token the node wrote (its API is not on loopback).
        let r = p.profile_control(&Default::default()).unwrap();
        assert!(!r.enabled);
        net.stop().unwrap();
    }
    drop(ns);
    let left = std::process::Command::new("ip").args(["netns", "list"]).output().unwrap();
    let left = String::from_utf8_lossy(&left.stdout);
    let ours = format!("{}{}-{tag}-", netns::PREFIX, std::process::id());
    assert!(!left.contains(&ours), "namespaces left behind: {left}");
    let links = std::process::Command::new("ip").args(["-o", "link"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&links.stdout).contains(&format!("scb{tag}")),
        "the bridge was left behind"
    );
}
