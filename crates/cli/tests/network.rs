//! Multi-process network tests of the binary on 127.0.0.1 (OS-chosen ports, temporary data
//! directories, every wait bounded): `devnet` converging under load, two real miners forking
//! without losing transactions, a node SIGKILLed under load reopening its store and catching up
//! over real sync, and a libp2p peer sending invalid data being banned without harming the
//! others. The protocol's behaviour itself — relay, late joins, restarts, forks, partitions,
//! misbehaving peers, determinism — is tested in one process by `crates/simnet`.
#![allow(clippy::unwrap_used)]

use std::process::Command;
use std::time::{Duration, Instant};

use scalechain_client::NodeInfo;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{genesis_block, Params};
use scalechain_lab::launcher::{signal_pid, wait_until, Launcher, NodeSpec, Role, Sig};
use scalechain_p2p::msg::{ProtocolNames, TxBatch};
use scalechain_p2p::net::{self, Command as NetCommand, NetConfig, NetEvent, Topic};
use scalechain_types::codec::Encode;
use scalechain_types::{Block, HashKind, Header, Target, Tx};

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

/// Polls `f` until it holds; fails the test naming `what` after `timeout`.
fn wait_for(what: &str, timeout: Duration, f: impl FnMut() -> bool) {
    wait_until(what, timeout, f).unwrap();
}

fn devnet(args: &[&str]) -> serde_json::Value {
    let out = Command::new(EXE).arg("devnet").args(args).arg("--json").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last = stdout.lines().last().unwrap_or_else(|| panic!("no output; stderr:\n{stderr}"));
    let v: serde_json::Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {last}\n{stderr}"));
    assert!(out.status.success(), "devnet failed: {stderr}");
    v
}

fn check_converged(v: &serde_json::Value, nodes: usize) {
    assert_eq!(v["converged"], true, "{v}");
    let n = v["nodes"].as_array().unwrap();
    assert_eq!(n.len(), nodes, "{v}");
    assert!(n.windows(2).all(|w| w[0]["tip_hash"] == w[1]["tip_hash"]), "{v}");
    let sent = v["sent"].as_u64().unwrap();
    assert!(sent > 0, "{v}");
    assert_eq!(v["confirmed"].as_u64().unwrap(), sent, "every accepted transaction is confirmed: {v}");
    let a = &v["accounting"];
    assert_eq!((a["accepted"].as_u64(), a["confirmed"].as_u64()), (Some(sent), Some(sent)), "{v}");
    assert_eq!((a["pooled"].as_u64(), a["lost"].as_u64()), (Some(0), Some(0)), "{v}");
    assert!(v["latency_ms"]["p99"].as_f64().unwrap() > 0.0);
    // CPU accounting from /proc: every node and the client, and a positive cost per transaction.
    let cpu = &v["cpu"];
    assert!(cpu["us_per_confirmed_tx"].as_f64().unwrap() > 0.0, "{v}");
    assert!(cpu["cores_busy"].as_f64().unwrap() > 0.0, "{v}");
    let secs = cpu["seconds"].as_object().unwrap();
    assert_eq!(secs.len(), nodes + 2, "every node, the bootstrap and the client: {v}");
    assert!(n.iter().all(|x| secs[x["name"].as_str().unwrap()].as_f64().unwrap() > 0.0), "{v}");
}

#[test]
fn three_peers_and_a_miner_converge_and_confirm_everything() {
    // Every node starts with the file given by --node-config: here the profiler on, so each
    // leaves its profile in its data directory when it stops.
    let tmp = tempfile::tempdir().unwrap();
    let (data, config) = (tmp.path().join("nodes"), tmp.path().join("node.toml"));
    std::fs::write(&config, "[profile]\nenabled = true\n").unwrap();
    let (data_s, config_s) = (data.to_str().unwrap(), config.to_str().unwrap());
    let v = devnet(&[
        "--nodes",
        "3",
        "--miners",
        "1",
        "--duration",
        "4",
        "--tps",
        "150",
        "--data-dir",
        data_s,
        "--node-config",
        config_s,
    ]);
    check_converged(&v, 4);
    // Each node's traffic, from its counters: blocks travel compact (64 bytes per transaction
    // against the transaction itself, which gossip already brought), so block gossip costs
    // less per transaction than transaction gossip.
    let bytes = &v["received_bytes_per_tx"];
    let (txs, blocks) = (bytes["gossip_txs"].as_f64().unwrap(), bytes["gossip_blocks"].as_f64().unwrap());
    assert!(txs > 0.0 && blocks > 0.0 && blocks < txs, "{bytes}");
    for node in ["peer0", "peer1", "peer2", "miner0"] {
        let text = std::fs::read_to_string(data.join(node).join("profile.json"))
            .unwrap_or_else(|e| panic!("{node} kept no profile: {e}"));
        assert!(text.contains("mempool.admit") || text.contains("mempool.offer"), "{node}: {text:.300}");
    }
    // A file that is not a node configuration is refused before anything starts.
    std::fs::write(&config, "[profile]\nenabeld = true\n").unwrap();
    let out = Command::new(EXE).args(["devnet", "--node-config", config_s]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--node-config") && err.contains("enabeld"), "{err}");
}

#[test]
fn two_miners_fork_and_settle_on_one_chain_without_losing_transactions() {
    let v = devnet(&["--nodes", "2", "--miners", "2", "--duration", "5", "--tps", "100"]);
    check_converged(&v, 4);
}

#[test]
fn a_node_killed_under_load_restarts_and_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    // A devnet keeps its data; SIGKILL one peer mid-run from another thread.
    let killer = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(t) = std::fs::read_to_string(dir.join("peer1/node.json")) {
                let v: NodeInfo = serde_json::from_str(&t).unwrap();
                std::thread::sleep(Duration::from_secs(3));
                signal_pid(v.pid, Sig::Kill).unwrap();
                return dir;
            }
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let out = Command::new(EXE)
        .args([
            "devnet",
            "--nodes",
            "2",
            "--miners",
            "1",
            "--duration",
            "8",
            "--tps",
            "200",
            "--converge-timeout",
            "10",
            "--json",
            "--data-dir",
        ])
        .arg(tmp.path())
        .output()
        .unwrap();
    let dir = killer.join().unwrap();
    // The devnet notices a dead node: it cannot converge with it.
    assert!(!out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Restart the killed node on its data directory; it reopens at its last committed block
    // and catches up with a fresh miner on the survivors' chain.
    let mut net = Launcher::with_base(EXE, &dir).unwrap();
    let boot = net.start(NodeSpec::new("bootstrap", Role::Bootstrap)).unwrap().p2p_addr().to_string();
    net.spawn(NodeSpec::new("peer0", Role::Peer).bootstrap(&boot)).unwrap();
    net.spawn(NodeSpec::new("miner0", Role::Miner).bootstrap(&boot)).unwrap();
    net.spawn(NodeSpec::new("peer1", Role::Peer).bootstrap(&boot)).unwrap();
    net.wait_up().unwrap();
    let client = |name: &str| net.node(name).unwrap().blocking_client().unwrap();
    let (s, m, k) = (client("peer0"), client("miner0"), client("peer1"));
    let h0 = s.status().unwrap().height;
    wait_for("all three on one tip above the old one", Duration::from_secs(90), || {
        let (ms, ss, ks) = (m.status().unwrap(), s.status().unwrap(), k.status().unwrap());
        ms.height > h0 && ss.tip == ms.tip && ks.tip == ms.tip
    });
}

fn attacker_key() -> [u8; 32] {
    [0xa7; 32]
}

#[test]
fn a_peer_sending_invalid_blocks_and_transactions_is_banned_and_the_others_are_unaffected() {
    let mut net = Launcher::new(EXE).unwrap();
    let boot = net.start(NodeSpec::new("boot", Role::Bootstrap)).unwrap().p2p_addr().to_string();
    let victim = net.start(NodeSpec::new("victim", Role::Peer).bootstrap(&boot)).unwrap().clone();
    let m =
        net.start(NodeSpec::new("miner", Role::Miner).bootstrap(&boot)).unwrap().blocking_client().unwrap();
    let v = victim.blocking_client().unwrap();
    let v_addr = victim.p2p_addr().to_string();
    wait_for("height 2", Duration::from_secs(60), || v.status().unwrap().height >= 2);
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    let chain_id = genesis_block(&p).hash(p.hash);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let attacker_id = rt.block_on(async {
        let mut n = net::start(NetConfig {
            listen: vec!["/ip4/127.0.0.1/tcp/0".parse().unwrap()],
            bootstrap: vec![v_addr.parse().unwrap()],
            names: ProtocolNames::for_chain(&chain_id),
            key_seed: attacker_key(),
            max_message_bytes: 1 << 20,
            max_connections: 8,
            event_buffer: 64,
            agent: "attacker".into(),
            gossip: true,
            discover: true,
        })
        .await
        .unwrap();
        // Wait until connected and subscribed, then send garbage and an invalid block.
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(NetEvent::Connected { .. })) =
                tokio::time::timeout(Duration::from_millis(200), n.events.recv()).await
            {
                break;
            }
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        // A block whose header misses its target (and whose parent is unknown).
        let bad = Block {
            header: Header {
                version: 1,
                height: 1,
                prev_hash: chain_id,
                merkle_root: chain_id,
                time: p.genesis_time + 1,
                target: Target::from_bits(1),
                nonce: 0,
            },
            txs: vec![Tx::coinbase(1, vec![])],
        };
        for i in 0..6u8 {
            let mut b = bad.clone();
            b.header.nonce = u64::from(i);
            let _ = n.commands.send(NetCommand::Publish { topic: Topic::Blocks, data: b.encode() }).await;
            let _ =
                n.commands.send(NetCommand::Publish { topic: Topic::Txs, data: vec![0xff, i, 1, 2] }).await;
            let _ = n
                .commands
                .send(NetCommand::Publish {
                    topic: Topic::Txs,
                    data: TxBatch(vec![Tx::coinbase(9, vec![])]).encode(),
                })
                .await;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        n.peer_id.to_string()
    });
    let metrics = v.metrics().unwrap();
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")).map(|v| v.parse().unwrap()))
            .unwrap_or(0.0)
    };
    assert!(value("scalechain_peer_penalties_total") >= 1.0, "{metrics}");
    assert!(value("scalechain_peer_bans_total") >= 1.0, "{metrics}");
    let peers = v.peers().unwrap();
    assert!(!peers.iter().any(|p| p.peer_id == attacker_id), "the attacker is disconnected: {peers:?}");
    // The honest network goes on.
    let h = v.status().unwrap().height;
    wait_for("two more blocks on both", Duration::from_secs(60), || {
        let (vs, ms) = (v.status().unwrap(), m.status().unwrap());
        vs.height >= h + 2 && vs.tip == ms.tip
    });
    net.stop().unwrap();
}
