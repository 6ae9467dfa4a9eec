//! A partition between real processes: six nodes (four peers, two miners) and the bootstrap that
//! introduced them, each in a network namespace of its own, split into halves of one miner each for a minute while both
//! halves take transactions, then healed. Every node ends on one chain — the one with more work
//! of the two the halves built — every transaction either half accepted is confirmed on it (the
//! losing half's return to the mempools and are mined again) and nothing the winning half had
//! confirmed is lost. The nodes let the dead links go (an unanswered ping closes a connection)
//! and dial each other again on a short back-off; the times from the heal to the first block
//! across the cut, to the four peers on the heavier chain (the miners frozen meanwhile, so
//! nothing new is mined), to one tip and to every transaction confirmed are printed as a JSON line
//! (`partition: {...}`). Needs root and the `ip` and
//! `nft` programs; elsewhere the test says so and passes without running.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scalechain_client::blocking::Client;
use scalechain_consensus::params::SigMode;
use scalechain_consensus::{pow, Params};
use scalechain_lab::launcher::netns::{self, Namespaces, NetnsError};
use scalechain_lab::launcher::{signal_pid, wait_until, Launcher, NetworkPlan, Sig};
use scalechain_types::{Hash, HashKind, Tx};

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

/// How long the halves stay apart: well past the longest a dead link can go unnoticed (a ping
/// sent up to `PING_INTERVAL`, 15 s, after the cut and unanswered for `PING_TIMEOUT`, 20 s;
/// sooner where data sent across the cut meets the link time-out, 20 s), so both halves let
/// their links across it go.
const CUT: Duration = Duration::from_secs(60);
/// Longest the network may take to settle on one chain after the heal.
const SETTLE: Duration = Duration::from_secs(120);

/// The halves. The bootstrap introduces nodes to each other and keeps no chain: the six nodes
/// that do are the halves' other members.
const HALF_A: [&str; 4] = ["bootstrap", "peer0", "peer1", "miner0"];
const HALF_B: [&str; 3] = ["peer2", "peer3", "miner1"];
const CHAIN_A: [&str; 3] = ["peer0", "peer1", "miner0"];
const CHAIN_B: [&str; 3] = HALF_B;

fn have(program: &str, arg: &str) -> bool {
    std::process::Command::new(program).arg(arg).output().is_ok_and(|o| o.status.success())
}

/// Premine output `i` paid back to its key (devnet: SHA-256, Ed25519).
fn transfer(i: u32) -> Tx {
    let p = Params::devnet(HashKind::Sha256, SigMode::Ed25519);
    scalechain_workload::premine_transfer(&p, SigMode::Ed25519, i, 2_000).unwrap()
}

/// Submits `txs` to `c`; the txids it accepted.
fn submit(c: &Client, txs: &[Tx]) -> Vec<Hash> {
    // A refusal here would be a bug: the transfers spend disjoint premine outputs.
    let r = c.submit(txs).unwrap();
    r.results.iter().filter(|v| v.accepted).filter_map(|v| v.txid).collect()
}

/// The work of `c`'s chain above height `fork` (the blocks only this half has; at least one).
fn work_above(c: &Client, fork: u64) -> impl PartialOrd + std::fmt::Debug {
    let tip = c.status().unwrap().height;
    (fork + 1..=tip)
        .map(|h| pow::work(&c.block(h.into()).unwrap().header.target))
        .reduce(|a, b| a.saturating_add(b))
        .unwrap()
}

/// Counter `name` of `c`'s `/metrics`.
fn counter(c: &Client, name: &str) -> u64 {
    let text = c.metrics().unwrap();
    let line =
        text.lines().find(|l| l.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("no {name}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The highest height at which `a` and `b` have the same block.
fn fork_height(a: &Client, b: &Client) -> u64 {
    let top = a.status().unwrap().height.min(b.status().unwrap().height);
    (0..=top)
        .rev()
        .find(|h| a.block((*h).into()).unwrap().hash == b.block((*h).into()).unwrap().hash)
        .unwrap()
}

#[test]
fn halves_cut_apart_heal_onto_the_heavier_chain_losing_nothing() {
    if !netns::is_root() || !have("ip", "-V") || !have("nft", "--version") {
        eprintln!("skipped: the partition needs root and the `ip` and `nft` programs (Debian: nftables)");
        return;
    }
    let names: Vec<&str> = HALF_A.iter().chain(HALF_B.iter()).copied().collect();
    let ns = Arc::new(Namespaces::create(&names, None).unwrap());
    let mut net = Launcher::new(EXE).unwrap().placement(ns.clone());
    net.start_network(&NetworkPlan { peers: 4, miners: 2, miner_threads: 1, config: None }).unwrap();
    let clients: Vec<(&str, Client)> =
        names.iter().map(|n| (*n, net.node(n).unwrap().blocking_client().unwrap())).collect();
    let client = |name: &str| &clients.iter().find(|(n, _)| *n == name).unwrap().1;
    let chain_nodes: Vec<&Client> = CHAIN_A.iter().chain(CHAIN_B.iter()).map(|n| client(n)).collect();
    let ids: Vec<(&str, String)> = clients.iter().map(|(n, c)| (*n, c.status().unwrap().peer_id)).collect();
    let id_of = |name: &str| ids.iter().find(|(n, _)| *n == name).unwrap().1.clone();
    let linked = |from: &str, to: &[&str]| {
        let want: HashSet<String> = to.iter().map(|n| id_of(n)).collect();
        client(from).peers().unwrap().iter().any(|p| want.contains(&p.peer_id))
    };
    // The bootstrap links everyone but relays nothing: the halves' chain nodes must be linked
    // to each other directly (discovery), so the cut is what parts them.
    let r =
        wait_until("every chain node linked across the cut, blocks mined", Duration::from_secs(90), || {
            CHAIN_A.iter().all(|n| linked(n, &CHAIN_B))
                && CHAIN_B.iter().all(|n| linked(n, &CHAIN_A))
                && chain_nodes.iter().all(|c| c.status().unwrap().height >= 3)
        });
    // What each node sees (for a failure's message): height, tip, linked nodes, counters.
    let seen = || {
        let mut out = String::new();
        for (n, c) in &clients {
            let Ok(s) = c.status() else {
                out.push_str(&format!("\n{n}: no answer (frozen?)"));
                continue;
            };
            let peers: Vec<String> = c.peers().unwrap().iter().map(|p| p.peer_id.clone()).collect();
            let named: Vec<&str> = ids.iter().filter(|(_, id)| peers.contains(id)).map(|(n, _)| *n).collect();
            let counters: Vec<String> =
                ["p2p_ping_failures", "p2p_connection_errors", "peer_redials", "peer_penalties", "peer_bans"]
                    .iter()
                    .map(|k| format!("{k} {}", counter(c, &format!("scalechain_{k}_total"))))
                    .collect();
            out.push_str(&format!(
                "\n{n}: height {} tip {} peers {named:?} {}",
                s.height,
                s.tip,
                counters.join(", ")
            ));
        }
        out
    };
    if let Err(e) = r {
        panic!("{e}:{}", seen());
    }

    // Groups that name no host, or one host twice, are refused before anything changes.
    assert!(
        matches!(ns.partition(&[&["peer0"], &["nobody"]]), Err(NetnsError::UnknownHost(n)) if n == "nobody")
    );
    assert!(matches!(ns.partition(&[&["peer0"], &["peer0"]]), Err(NetnsError::TwoGroups(n)) if n == "peer0"));
    ns.partition(&[&HALF_A, &HALF_B]).unwrap();
    let (a, b) = (client("peer0"), client("peer2"));
    let start_height = a.status().unwrap().height;
    // Load on both sides of the cut: disjoint premine outputs, a few transfers every 250 ms.
    let (mut accepted_a, mut accepted_b) = (Vec::new(), Vec::new());
    let cut_at = Instant::now();
    let mut i = 0u32;
    while cut_at.elapsed() < CUT {
        accepted_a.extend(submit(a, &[transfer(i), transfer(i + 1)]));
        accepted_b.extend(submit(b, &[transfer(512 + i), transfer(512 + i + 1)]));
        i += 2;
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(accepted_a.len() >= 100 && accepted_b.len() >= 100, "{} {}", accepted_a.len(), accepted_b.len());
    // Freeze both miners so that the halves' chains stop growing: the heal then has one right
    // answer, which a block mined during it could otherwise change. Should the halves' works be
    // equal (the first block seen would decide), half A's miner runs until it finds one more.
    let signal = |name: &str, sig: Sig| signal_pid(net.node(name).unwrap().pid(), sig).unwrap();
    let settled_within_halves = || {
        let tip = |n: &str| client(n).status().unwrap().tip;
        wait_until("each half on one tip, its miner frozen", SETTLE, || {
            tip("peer0") == tip("peer1") && tip("peer2") == tip("peer3")
        })
        .unwrap();
    };
    signal("miner0", Sig::Pause);
    signal("miner1", Sig::Pause);
    settled_within_halves();
    let tip_b = b.status().unwrap();
    let fork = fork_height(a, b);
    let (mut work_a, work_b) = (work_above(a, fork), work_above(b, fork));
    for _ in 0..3 {
        if work_a != work_b {
            break;
        }
        let h = a.status().unwrap().height;
        signal("miner0", Sig::Resume);
        wait_until("half A's miner finding one more block", SETTLE, || a.status().unwrap().height > h)
            .unwrap();
        signal("miner0", Sig::Pause);
        settled_within_halves();
        work_a = work_above(a, fork);
    }
    assert!(work_a != work_b, "the halves' works stayed equal: {work_a:?}");
    // Both halves went on mining, each on a chain of its own.
    let tip_a = a.status().unwrap(); // half A may have mined again above
    assert_ne!(tip_a.tip, tip_b.tip, "the halves were apart");
    assert!(tip_a.height > start_height && tip_b.height > start_height, "both halves mined");
    let (winner, loser, winner_tip) =
        if work_a > work_b { (a, b, tip_a.clone()) } else { (b, a, tip_b.clone()) };
    let winner_confirmed: Vec<Hash> = accepted_a
        .iter()
        .chain(&accepted_b)
        .filter(|t| winner.tx(t).is_ok_and(|s| s.height.is_some()))
        .copied()
        .collect();
    let loser_height = loser.status().unwrap().height;

    // The links across the cut were let go (their pings went unanswered) and are being dialled.
    for name in ["peer0", "peer2"] {
        let c = client(name);
        let dead = counter(c, "scalechain_p2p_ping_failures_total")
            + counter(c, "scalechain_p2p_connection_errors_total");
        assert!(dead > 0, "{name} let no dead link go");
        assert!(counter(c, "scalechain_peer_redials_total") > 0, "{name} dialled nobody again");
    }
    ns.heal().unwrap();
    let healed = Instant::now();
    wait_until("a block across the healed cut", SETTLE, || {
        a.block(tip_b.tip.into()).is_ok() || b.block(tip_a.tip.into()).is_ok()
    })
    .unwrap_or_else(|e| panic!("{e}:{}", seen()));
    let crossed = healed.elapsed();
    // With the miners frozen nothing new is mined: the four peers must all take the heavier
    // half's chain, exactly as it was at the heal.
    let peers: Vec<&Client> = ["peer0", "peer1", "peer2", "peer3"].iter().map(|n| client(n)).collect();
    let on_winner = wait_until("the four peers on the heavier half's tip", SETTLE, || {
        peers.iter().all(|c| c.status().unwrap().tip == winner_tip.tip)
    });
    let heavier = healed.elapsed();
    signal("miner0", Sig::Resume);
    signal("miner1", Sig::Resume);
    if let Err(e) = on_winner {
        panic!("{e}: the heavier half's tip is {}:{}", winner_tip.tip, seen());
    }
    wait_until("all six chain nodes on one tip", SETTLE, || {
        let tips: HashSet<Hash> = chain_nodes.iter().map(|c| c.status().unwrap().tip).collect();
        tips.len() == 1
    })
    .unwrap();
    let one_tip = healed.elapsed();
    let all: Vec<Hash> = accepted_a.iter().chain(&accepted_b).copied().collect();
    wait_until("every accepted transaction confirmed", SETTLE, || {
        all.iter().all(|t| a.tx(t).is_ok_and(|s| s.height.is_some()))
    })
    .unwrap();
    let settled = healed.elapsed();
    for t in &winner_confirmed {
        assert!(b.tx(t).unwrap().height.is_some(), "{t} was confirmed on the winning side");
    }
    println!(
        "partition: {}",
        serde_json::json!({
            "cut_s": CUT.as_secs(),
            "accepted": [accepted_a.len(), accepted_b.len()],
            "fork_height": fork,
            "heights_at_heal": [tip_a.height, tip_b.height],
            "winner_height": winner_tip.height,
            "loser_height": loser_height,
            "first_block_across_s": crossed.as_secs_f64(),
            "peers_on_heavier_s": heavier.as_secs_f64(),
            "one_tip_s": one_tip.as_secs_f64(),
            "all_confirmed_s": settled.as_secs_f64(),
        })
    );
    net.stop().unwrap();
}
