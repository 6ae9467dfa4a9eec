//! The launcher with the real `scalechain node`: a bootstrap node and a miner up on OS-chosen
//! ports with their API clients, the miner restarted on its data directory (keeping its
//! chain), everything stopped with no process left and the temporary directory gone; a node
//! that cannot start is reported with the end of its log.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use scalechain_lab::launcher::{wait_until, LaunchError, Launcher, NodeSpec, Role};

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

#[test]
fn two_nodes_start_one_restarts_and_all_stop_without_a_trace() {
    let mut net = Launcher::new(EXE).unwrap();
    let base = net.base_dir().to_path_buf();
    let boot = net.start(NodeSpec::new("boot", Role::Bootstrap)).unwrap().clone();
    assert!(boot.p2p_addr().contains("/p2p/"), "{}", boot.p2p_addr());
    let miner = net.start(NodeSpec::new("miner", Role::Miner).bootstrap(boot.p2p_addr())).unwrap().clone();
    let m = miner.blocking_client().unwrap();
    let s = m.status().unwrap();
    assert_eq!((s.role.as_str(), s.peer_id.as_str()), ("miner", miner.info().peer_id.as_str()));
    assert_eq!(boot.blocking_client().unwrap().status().unwrap().role, "bootstrap");
    wait_until("the miner's height 2", Duration::from_secs(30), || m.status().is_ok_and(|s| s.height >= 2))
        .unwrap();
    let before = m.status().unwrap().height;

    let again = net.restart_node("miner").unwrap().clone();
    assert_ne!(again.pid(), miner.pid());
    assert!(!alive(miner.pid()));
    assert_ne!(again.api_addr(), "", "a new API address");
    let a = again.blocking_client().unwrap();
    assert!(a.status().unwrap().height >= before, "the restarted miner kept its chain");
    let log = std::fs::read_to_string(again.log_path()).unwrap();
    assert_eq!(log.matches("=== launcher:").count(), 2, "one log across restarts");

    let pids: Vec<u32> = net.pids().into_iter().map(|(_, p)| p).collect();
    assert_eq!(pids.len(), 2);
    net.stop().unwrap();
    for pid in pids {
        assert!(!alive(pid), "process {pid} left behind");
    }
    assert!(!base.exists(), "the temporary base directory is removed");
}

#[test]
fn a_node_that_cannot_start_is_reported_with_its_log() {
    let mut net = Launcher::new(EXE).unwrap();
    let e =
        net.start(NodeSpec::new("bad", Role::Peer).args(["--config", "/nonexistent/node.toml"])).unwrap_err();
    match &e {
        LaunchError::Exited { name, status, tail, .. } => {
            assert_eq!((name.as_str(), status.code()), ("bad", Some(2)));
            assert!(tail.contains("/nonexistent/node.toml"), "{tail}");
        }
        other => panic!("{other}"),
    }
}
