//! `scalechain bench` as a user runs it: a benchmark of transfers, ballots of both schemes and
//! a mix against running nodes (`--api`) whose measured send rate is within 2% of the configured one and whose latency percentiles agree
//! with an independent computation from the nodes' own arrival logs and blocks; a benchmark on
//! a devnet it starts (its nodes without the owner index), stopped by Ctrl-C, that writes what
//! it measured and stops its nodes;
//! and bad benchmark files and targets refused before any load, naming file, line and key.
#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use scalechain_client::types::BlockId;
use scalechain_lab::launcher::{signal_pid, Launcher, NetworkPlan, Role, Sig};
use scalechain_types::Hash;

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

/// The value at quantile `q` of `v` (nearest rank, as the benchmark computes it).
fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * q).round() as usize]
}

#[test]
fn a_benchmark_against_running_nodes_sends_at_its_rate_and_its_latency_agrees_with_the_nodes_logs() {
    let mut net = Launcher::new(EXE).unwrap();
    net.start_network(&NetworkPlan { peers: 2, miners: 1, miner_threads: 1, config: None }).unwrap();
    let peers: Vec<_> =
        net.nodes().filter(|n| n.role() == Role::Peer).map(|n| n.blocking_client().unwrap()).collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("b.toml");
    std::fs::write(
        &file,
        r#"
[[round]]
name = "steady"
rate = { controller = "fixed-rate", tps = 400 }
duration = 4

[[round]]
name = "held"
workload = { kind = "transfer", inputs = 2, outputs = 2 }
rate = { controller = "fixed-load", backlog = 300 }
txs = 1200

[[round]]
name = "ballots"
workload = { kind = "ballot", scheme = "elgamal", candidates = 3 }
rate = { controller = "fixed-rate", tps = 200 }
txs = 200

[[round]]
name = "mixed"
workload = { kind = "mix", parts = [
  { weight = 3, workload = { kind = "transfer" } },
  { weight = 1, workload = { kind = "ballot", scheme = "paillier" } },
] }
rate = { controller = "fixed-rate", tps = 100 }
txs = 40
"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    // Until both peers are linked to the miner (not only to the bootstrap, which relays
    // nothing), a transaction sent to one might not reach it.
    let miner = net.node("miner0").unwrap().blocking_client().unwrap().status().unwrap().peer_id;
    scalechain_lab::launcher::wait_until("the peers linked to the miner", Duration::from_secs(60), || {
        peers.iter().all(|p| p.peers().is_ok_and(|l| l.iter().any(|x| x.peer_id == miner)))
    })
    .unwrap();
    let run = Command::new(EXE)
        .arg("bench")
        .arg(&file)
        .args(["--api", peers[0].base(), "--api", peers[1].base(), "--json", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&run.stdout).trim()).unwrap();
    let rounds = v["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 4, "{v}");
    for r in rounds {
        assert!(r["offered"].as_u64().unwrap() > 0, "{r}");
        assert_eq!(r["succeeded"], r["offered"], "every transaction confirmed: {r}");
        assert_eq!(r["failed"], 0, "{r}");
        assert!(r["generator_cores"].as_f64().unwrap() < 0.5, "{r}");
    }
    let steady = &rounds[0];
    let send = steady["send_tps"].as_f64().unwrap();
    assert!((send - 400.0).abs() / 400.0 < 0.02, "send rate {send} against 400 configured");
    assert_eq!(rounds[1]["succeeded"], 1200);
    assert_eq!(
        (rounds[2]["workload"].as_str(), rounds[2]["succeeded"].as_u64()),
        (Some("ballot elgamal 3"), Some(200))
    );
    assert_eq!(rounds[3]["succeeded"], 40, "transfers and paillier ballots, all confirmed");
    for f in ["rounds.csv", "series.csv", "report.md", "report.html"] {
        assert!(out.join(f).is_file(), "{f}");
    }
    assert_eq!(std::fs::read_to_string(out.join("rounds.csv")).unwrap().lines().count(), 5);

    // The independent computation: from when the node that took each transaction through its
    // API logged it to when the first node logged the block holding it (both nodes' clocks are
    // this machine's).
    let (from, to) = (steady["heights"][0].as_u64().unwrap(), steady["heights"][1].as_u64().unwrap());
    let mut block_of: HashMap<Hash, Hash> = HashMap::new();
    for h in from + 1..=to {
        let b = peers[0].block_txids(BlockId::Height(h)).unwrap();
        for t in b.txids.iter().skip(1) {
            block_of.insert(*t, b.hash);
        }
    }
    let arrivals = |c: &scalechain_client::blocking::Client| {
        let mut all = Vec::new();
        let mut after = 0;
        loop {
            let a = c.arrivals(after, Some(10_000)).unwrap();
            let Some(last) = a.entries.last().map(|e| e.seq) else { break };
            all.extend(a.entries);
            after = last;
        }
        all
    };
    let block_at: HashMap<Hash, u64> =
        arrivals(&peers[0]).into_iter().filter(|e| e.kind == "block").map(|e| (e.id, e.at_us)).collect();
    let mut ms = Vec::new();
    for p in &peers {
        for e in arrivals(p).into_iter().filter(|e| e.kind == "tx" && e.source == "api") {
            if let Some(at) = block_of.get(&e.id).and_then(|b| block_at.get(b)) {
                ms.push(at.saturating_sub(e.at_us) as f64 / 1000.0);
            }
        }
    }
    assert_eq!(ms.len() as u64, steady["succeeded"].as_u64().unwrap(), "each transaction of the round, once");
    for (q, key) in [(0.5, "p50"), (0.95, "p95")] {
        let independent = quantile(&mut ms, q);
        let measured = steady["latency_ms"][key].as_f64().unwrap();
        // The benchmark's clock starts when a request is sent and stops when the block's tip
        // event arrives; the nodes' when the transaction was admitted and the block was taken.
        // They agree within a few milliseconds on this machine.
        let slack = 50.0_f64.max(0.05 * independent);
        assert!(
            (measured - independent).abs() <= slack,
            "{key}: {measured:.1} ms measured, {independent:.1} ms from the nodes' logs"
        );
    }
    net.stop().unwrap();
}

#[test]
fn ctrl_c_stops_the_load_writes_what_was_measured_and_stops_the_devnet() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("long.toml");
    // Nodes without the owner index: the benchmark funds its load from the premine's genesis
    // coins of the network it started, since the first node lists no coins by owner.
    std::fs::write(dir.path().join("node.toml"), "[store]\nowner_index = false\n").unwrap();
    std::fs::write(
        &file,
        "[network]\npeers = 1\nnode-config = \"node.toml\"\n\n[[round]]\nname = \"long\"\nrate = { controller = \"fixed-rate\", tps = 200 }\nduration = 120\n\n[[round]]\nname = \"never\"\nrate = { controller = \"fixed-rate\", tps = 200 }\nduration = 5\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let mut child = Command::new(EXE)
        .arg("bench")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut base = None;
    let deadline = Instant::now() + Duration::from_secs(120);
    // The nodes' directory, then the second progress line of the round.
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(b) = line.split("; its data in ").nth(1) {
            base = Some(std::path::PathBuf::from(b));
        }
        if line.contains("[1/2 long] t=") && line.contains("t=   2.") {
            break;
        }
        assert!(Instant::now() < deadline, "no progress");
    }
    signal_pid(child.id(), Sig::Int).unwrap();
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{rest:?}");
    assert!(rest.iter().any(|l| l.contains("interrupted after 1 of 2 rounds")), "{rest:?}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(md.contains("Stopped by Ctrl-C") && md.contains("long (stopped)"), "{md}");
    let csv = std::fs::read_to_string(out.join("rounds.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2, "the partial round only: {csv}");
    assert!(csv.lines().nth(1).unwrap().contains(",true,"), "{csv}");
    let base = base.expect("the devnet's directory was printed");
    assert!(!base.exists(), "the devnet was stopped and its directory removed: {}", base.display());
}

#[test]
fn bad_files_and_unreachable_targets_are_refused_before_any_load() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |text: &str, extra: &[&str]| {
        let f = dir.path().join("b.toml");
        std::fs::write(&f, text).unwrap();
        let t0 = Instant::now();
        let o = Command::new(EXE).arg("bench").arg(&f).args(extra).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{o:?}");
        assert!(t0.elapsed() < Duration::from_secs(10), "refused before starting anything");
        let e = String::from_utf8_lossy(&o.stderr).to_string();
        (e.replace(&format!("{}", f.display()), "b.toml"), f)
    };
    let round = "[[round]]\nrate = { controller = \"fixed-rate\", tps = 10 }\nduration = 1\n";
    let (e, _) = refused(&format!("{round}burst = 3\n"), &[]);
    assert!(e.contains("b.toml:4: ") && e.contains("unknown field `burst`"), "{e}");
    let (e, _) = refused(
        "[[round]]\nname = \"r\"\nrate = { controller = \"fixed-rate\", tps = 0 }\nduration = 1\n",
        &[],
    );
    assert!(e.contains("b.toml:3: round 1 (r) rate.tps: 0 is not a rate above 0"), "{e}");
    let (e, _) = refused("[[round]]\nrate = { controller = \"fixed-rate\", tps = 10 }\nduration = -1\n", &[]);
    assert!(e.contains("b.toml:3: round 1 duration: -1 is not a number of seconds"), "{e}");
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let (e, _) = refused(round, &["--api", &format!("http://127.0.0.1:{port}")]);
    assert!(e.contains(&format!("--api http://127.0.0.1:{port}")) && e.contains("unreachable"), "{e}");
    let missing = Command::new(EXE).args(["bench", "/nonexistent/b.toml"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/b.toml:0: "));
}

#[test]
fn the_null_target_takes_everything_so_a_benchmark_against_it_measures_the_generator() {
    let mut null =
        Command::new(EXE).args(["null-node", "--interval-ms", "200"]).stdout(Stdio::piped()).spawn().unwrap();
    let mut first = String::new();
    BufReader::new(null.stdout.take().unwrap()).read_line(&mut first).unwrap();
    let api: serde_json::Value = serde_json::from_str(&first).unwrap();
    let url = format!("http://{}", api["api"].as_str().unwrap());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("g.toml");
    std::fs::write(
        &file,
        "[[round]]\nrate = { controller = \"fixed-rate\", tps = 5000 }\nduration = 2\ndrain = 10\n",
    )
    .unwrap();
    let run = Command::new(EXE)
        .arg("bench")
        .arg(&file)
        .args(["--api", &url, "--json", "--out"])
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    signal_pid(null.id(), Sig::Term).unwrap();
    assert!(null.wait().unwrap().success(), "the null target stops cleanly on SIGTERM");
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let v: serde_json::Value = serde_json::from_str(String::from_utf8_lossy(&run.stdout).trim()).unwrap();
    let r = &v["rounds"][0];
    assert!(r["offered"].as_u64().unwrap() >= 9_000, "{r}");
    assert_eq!(r["succeeded"], r["offered"], "{r}");
    let send = r["send_tps"].as_f64().unwrap();
    assert!((send - 5000.0).abs() / 5000.0 < 0.02, "{send}");
    assert_eq!(r["failed"], 0);
}
