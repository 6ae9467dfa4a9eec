//! Multi-process network tests on 127.0.0.1 (OS-chosen ports, temporary data directories,
//! every wait bounded): convergence under load, a late and a restarted node catching up, two
//! miners forking without losing transactions, SIGKILL under load, and a peer that sends
//! invalid data being penalised without harming the others.
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use scalechain_consensus::params::SigMode;
use scalechain_consensus::{genesis_block, Params};
use scalechain_p2p::msg::{ProtocolNames, TxBatch};
use scalechain_p2p::net::{self, Command as NetCommand, NetConfig, NetEvent, Topic};
use scalechain_types::codec::Encode;
use scalechain_types::{Block, HashKind, Header, Target, Tx};

mod common;
use common::{api_of, info, start_node, wait_for, NodeProc, EXE};

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
    let v = devnet(&["--nodes", "3", "--miners", "1", "--duration", "4", "--tps", "150"]);
    check_converged(&v, 4);
}

#[test]
fn two_miners_fork_and_settle_on_one_chain_without_losing_transactions() {
    let v = devnet(&["--nodes", "2", "--miners", "2", "--duration", "5", "--tps", "100"]);
    check_converged(&v, 4);
}

fn start(dir: &Path, role: &str, bootstrap: Option<&str>) -> NodeProc {
    let mut args = vec!["--role", role];
    if let Some(b) = bootstrap {
        args.extend(["--bootstrap", b]);
    }
    start_node(dir, &args)
}

fn get(api: &str, path: &str) -> serde_json::Value {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let r = reqwest::get(format!("http://{api}{path}")).await.unwrap();
        r.json().await.unwrap()
    })
}

#[test]
fn a_late_node_and_a_restarted_node_catch_up() {
    let tmp = tempfile::tempdir().unwrap();
    let boot = start(&tmp.path().join("boot"), "bootstrap", None);
    let boot_addr = info(&boot)["p2p"][0].as_str().unwrap().to_string();
    let miner = start(&tmp.path().join("miner"), "miner", Some(&boot_addr));
    let m_api = api_of(&miner);
    wait_for("height 6", Duration::from_secs(60), || get(&m_api, "/status")["height"].as_u64().unwrap() >= 6);
    // Late: starts with nothing and syncs the existing chain.
    let late_dir = tmp.path().join("late");
    let late = start(&late_dir, "peer", Some(&boot_addr));
    let l_api = api_of(&late);
    wait_for("the late node to reach the miner's tip", Duration::from_secs(60), || {
        let m = get(&m_api, "/status");
        let l = get(&l_api, "/status");
        l["height"].as_u64() >= Some(6) && l["tip"] == m["tip"]
    });
    // Restart: SIGTERM, blocks keep coming, start again on the same data directory.
    let stopped_at = get(&l_api, "/status")["height"].as_u64().unwrap();
    Command::new("kill").args(["-TERM", &late.child.id().to_string()]).status().unwrap();
    drop(late);
    let target = stopped_at + 3;
    wait_for("the miner to move on", Duration::from_secs(60), || {
        get(&m_api, "/status")["height"].as_u64().unwrap() >= target
    });
    let again = start(&late_dir, "peer", Some(&boot_addr));
    let a_api = api_of(&again);
    assert!(
        get(&a_api, "/status")["height"].as_u64().unwrap() >= stopped_at,
        "the restarted node kept its chain"
    );
    wait_for("the restarted node to catch up", Duration::from_secs(60), || {
        let m = get(&m_api, "/status");
        let a = get(&a_api, "/status");
        a["height"].as_u64() >= Some(target) && a["tip"] == m["tip"]
    });
    // The bootstrap node is seed 000's peer server: it introduced every node but holds no
    // chain (it neither subscribes to gossip nor syncs).
    let b = get(&api_of(&boot), "/status");
    assert_eq!((b["role"].as_str(), b["height"].as_u64()), (Some("bootstrap"), Some(0)), "{b}");
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
                let v: serde_json::Value = serde_json::from_str(&t).unwrap();
                std::thread::sleep(Duration::from_secs(3));
                let pid = v["pid"].as_u64().unwrap().to_string();
                Command::new("kill").args(["-KILL", &pid]).status().unwrap();
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
    let boot = start(&dir.join("bootstrap"), "bootstrap", None);
    let boot_addr = info(&boot)["p2p"][0].as_str().unwrap().to_string();
    let survivor = start(&dir.join("peer0"), "peer", Some(&boot_addr));
    let miner = start(&dir.join("miner0"), "miner", Some(&boot_addr));
    let killed = start(&dir.join("peer1"), "peer", Some(&boot_addr));
    let (s_api, m_api, k_api) = (api_of(&survivor), api_of(&miner), api_of(&killed));
    let h0 = get(&s_api, "/status")["height"].as_u64().unwrap();
    wait_for("all three on one tip above the old one", Duration::from_secs(90), || {
        let m = get(&m_api, "/status");
        let s = get(&s_api, "/status");
        let k = get(&k_api, "/status");
        m["height"].as_u64().unwrap() > h0 && s["tip"] == m["tip"] && k["tip"] == m["tip"]
    });
}

fn attacker_key() -> [u8; 32] {
    [0xa7; 32]
}

#[test]
fn a_peer_sending_invalid_blocks_and_transactions_is_banned_and_the_others_are_unaffected() {
    let tmp = tempfile::tempdir().unwrap();
    let boot = start(&tmp.path().join("boot"), "bootstrap", None);
    let boot_addr = info(&boot)["p2p"][0].as_str().unwrap().to_string();
    let victim = start(&tmp.path().join("victim"), "peer", Some(&boot_addr));
    let miner = start(&tmp.path().join("miner"), "miner", Some(&boot_addr));
    let (v_api, m_api) = (api_of(&victim), api_of(&miner));
    let v_addr = info(&victim)["p2p"][0].as_str().unwrap().to_string();
    wait_for("height 2", Duration::from_secs(60), || get(&v_api, "/status")["height"].as_u64().unwrap() >= 2);
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
    let metrics = rt.block_on(async {
        reqwest::get(format!("http://{v_api}/metrics")).await.unwrap().text().await.unwrap()
    });
    let value = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")).map(|v| v.parse().unwrap()))
            .unwrap_or(0.0)
    };
    assert!(value("scalechain_peer_penalties_total") >= 1.0, "{metrics}");
    assert!(value("scalechain_peer_bans_total") >= 1.0, "{metrics}");
    let peers = get(&v_api, "/peers");
    assert!(
        !peers.as_array().unwrap().iter().any(|p| p["peer_id"] == attacker_id.as_str()),
        "the attacker is disconnected: {peers}"
    );
    // The honest network goes on.
    let h = get(&v_api, "/status")["height"].as_u64().unwrap();
    wait_for("two more blocks on both", Duration::from_secs(60), || {
        let v = get(&v_api, "/status");
        let m = get(&m_api, "/status");
        v["height"].as_u64().unwrap() >= h + 2 && v["tip"] == m["tip"]
    });
    drop(boot);
}
