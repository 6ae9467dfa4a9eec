//! Elections over a real node (a miner process on 127.0.0.1 with the default configuration,
//! OS-chosen ports, every wait bounded), one per ballot scheme: the EA publishes an election
//! with `vote election`, registers voters with `vote register`, voters cast with `vote cast` (a
//! second ballot of one voter is refused by the node), blocks are mined, the EA tallies with
//! `vote tally` and anyone checks the result with `vote verify`; a tampered result fails
//! verification, and bad ids get JSON 4xx.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::{api_of, start_node, wait_until, NodeProc, EXE};

/// A miner with the default mempool policy (vote transactions, which are bare, enter as
/// fee-less application transactions).
fn start_miner(dir: &Path) -> NodeProc {
    std::fs::create_dir_all(dir).unwrap();
    let config = dir.join("node.toml");
    // The default minimum fee rate: vote transactions enter as fee-less ones.
    std::fs::write(&config, "role = \"miner\"\n").unwrap();
    start_node(dir, &["--config", config.to_str().unwrap()])
}

/// `GET` answer: status and JSON body.
fn get(api: &str, path: &str) -> (u16, serde_json::Value) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let r = reqwest::get(format!("http://{api}{path}")).await.unwrap();
        let status = r.status().as_u16();
        (status, r.json().await.unwrap())
    })
}

fn height(api: &str) -> u64 {
    get(api, "/status").1["height"].as_u64().unwrap()
}

fn vote(args: &[&str]) -> Output {
    Command::new(EXE).arg("vote").args(args).output().unwrap()
}

/// Runs `vote ARGS`, asserts success, returns the first line of stdout.
fn vote_ok(args: &[&str]) -> String {
    let out = vote(args);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "vote {args:?} failed: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    stdout.lines().next().unwrap_or("").trim().to_string()
}

/// A running miner and a voting window on it.
struct Setup {
    /// When the test must be over.
    deadline: Instant,
    tmp: tempfile::TempDir,
    _node: NodeProc,
    api: String,
    /// The window: 14 blocks from the next one.
    start: u64,
    end: u64,
}

/// Starts a miner in a temporary directory, waits for its first block, and picks a window.
fn setup(secs: u64) -> Setup {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let tmp = tempfile::tempdir().unwrap();
    let node = start_miner(&tmp.path().join("miner"));
    let api = api_of(&node);
    wait_until("height 1", deadline, || height(&api) >= 1);
    let h0 = height(&api);
    Setup { deadline, tmp, _node: node, api, start: h0 + 1, end: h0 + 14 }
}

/// `vote election` of `scheme` with `candidates` for heights `start..=end`; the election id.
fn publish(api: &str, ea_s: &str, scheme: &str, candidates: usize, start: u64, end: u64) -> String {
    vote_ok(&[
        "election",
        "--api",
        api,
        "--ea-dir",
        ea_s,
        "--candidates",
        &candidates.to_string(),
        "--scheme",
        scheme,
        "--voters-max",
        "10",
        "--start",
        &start.to_string(),
        "--end",
        &end.to_string(),
    ])
}

/// A voter's key file (`vote keygen`) and the EA's token for it (`vote register`).
fn register(dir: &Path, ea_s: &str, name: &str) -> (PathBuf, String) {
    let key = dir.join(format!("{name}.key"));
    let pk = vote_ok(&["keygen", "--out", key.to_str().unwrap()]);
    let token = vote_ok(&["register", "--ea-dir", ea_s, "--voter-pubkey", &pk]);
    assert_eq!(token.len(), 128, "{token}");
    (key, token)
}

/// `vote cast` of `choice` in election `id` with `key` and `token`.
fn cast(api: &str, id: &str, choice: usize, key: &Path, token: &str) -> Output {
    vote(&[
        "cast",
        "--api",
        api,
        "--election",
        id,
        "--choice",
        &choice.to_string(),
        "--voter-key",
        key.to_str().unwrap(),
        "--token",
        token,
    ])
}

/// `vote tally` into `result` (must succeed), then `vote verify` of it; the result file's JSON
/// and the tally's output.
fn tally_and_verify(api: &str, id: &str, ea_s: &str, result: &Path) -> (serde_json::Value, String) {
    let res_s = result.to_str().unwrap();
    let out = vote(&["tally", "--api", api, "--election", id, "--ea-dir", ea_s, "--out", res_s]);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    vote_ok(&["verify", "--api", api, "--election", id, "--result", res_s]);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(result).unwrap()).unwrap();
    assert_eq!(v["election"], id);
    (v, stdout)
}

/// `vote verify` of `v` with its counts replaced by `counts`: must fail.
fn tampered_fails(api: &str, id: &str, v: &serde_json::Value, counts: serde_json::Value, dir: &Path) {
    let mut bad = v.clone();
    bad["counts"] = counts;
    let tampered = dir.join("tampered.json");
    std::fs::write(&tampered, bad.to_string()).unwrap();
    let out = vote(&["verify", "--api", api, "--election", id, "--result", tampered.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
    assert!(String::from_utf8_lossy(&out.stderr).contains("verification failed"));
}

#[test]
fn an_elgamal_election_over_a_node_tallies_and_verifies() {
    let Setup { deadline, tmp, _node, api, start, end } = setup(90);
    let ea = tmp.path().join("ea");
    let ea_s = ea.to_str().unwrap();
    let id = publish(&api, ea_s, "elgamal", 3, start, end);
    assert_eq!(id.len(), 64, "{id}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(ea.join("ea-keys.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the EA's secret key file is private");
    }
    // Not over the same directory twice.
    assert_eq!(
        vote(&[
            "election",
            "--api",
            &api,
            "--ea-dir",
            ea_s,
            "--candidates",
            "3",
            "--voters-max",
            "10",
            "--start",
            "1",
            "--end",
            "999",
        ])
        .status
        .code(),
        Some(2)
    );
    wait_until("the election in a block", deadline, || get(&api, &format!("/apps/2/state/65{id}")).0 == 200);

    // Voters: keys, tokens, ballots.
    let choices = [0usize, 1, 2, 2, 1, 2];
    let mut txids = Vec::new();
    let mut first = None;
    for (i, c) in choices.iter().enumerate() {
        let (key, token) = register(tmp.path(), ea_s, &format!("voter{i}"));
        let out = cast(&api, &id, *c, &key, &token);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        txids.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
        if i == 0 {
            // The same voter again, at once: refused by the node (one ballot per voter).
            let again = cast(&api, &id, (c + 1) % 3, &key, &token);
            let err = String::from_utf8_lossy(&again.stderr).to_string();
            assert_eq!(again.status.code(), Some(1), "{err}");
            assert!(err.contains("app-conflict") || err.contains("vote-double-vote"), "{err}");
            first = Some(err);
        }
        // A token for another key does not cast.
        if i == 1 {
            let other = tmp.path().join("stranger.key");
            vote_ok(&["keygen", "--out", other.to_str().unwrap()]);
            let out = cast(&api, &id, 0, &other, &token);
            assert_eq!(out.status.code(), Some(1));
            assert!(String::from_utf8_lossy(&out.stderr).contains("vote-bad-token"));
        }
    }
    eprintln!("double cast: {}", first.unwrap_or_default());
    wait_until("every ballot confirmed", deadline, || {
        txids.iter().all(|t| get(&api, &format!("/txs/{t}")).1["status"] == "confirmed")
    });

    // Tallying before the window closes is refused.
    if height(&api) < end {
        let early = vote(&["tally", "--api", &api, "--election", &id, "--ea-dir", ea_s]);
        assert_eq!(early.status.code(), Some(1), "{}", String::from_utf8_lossy(&early.stderr));
    }
    wait_until("the window to close", deadline, || height(&api) >= end);
    // The EA tallies, anyone verifies; a tampered result fails.
    let result = tmp.path().join("result.json");
    let res_s = result.to_str().unwrap();
    let (v, stdout) = tally_and_verify(&api, &id, ea_s, &result);
    assert!(stdout.contains("6 ballots"), "{stdout}");
    assert_eq!(v["counts"], serde_json::json!([1, 2, 3]), "{v}");
    for (j, n) in [1, 2, 3].iter().enumerate() {
        assert!(stdout.contains(&format!("candidate {j}: {n}")), "{stdout}");
    }
    tampered_fails(&api, &id, &v, serde_json::json!([2, 1, 3]), tmp.path());

    // Bad and unknown ids: typed errors, JSON 4xx from the node.
    let out = vote(&["verify", "--api", &api, "--election", "zz", "--result", res_s]);
    assert_eq!(out.status.code(), Some(2));
    let out = vote(&["verify", "--api", &api, "--election", &"ab".repeat(32), "--result", res_s]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not published"));
    let (status, body) = get(&api, "/apps/2/state/zz");
    assert_eq!((status, body["error"].as_str()), (400, Some("bad-request")), "{body}");
    let (status, body) = get(&api, "/apps/1/state?prefix=62");
    assert_eq!((status, body["error"].as_str()), (400, Some("bad-request")), "{body}");
    let (status, body) = get(&api, &format!("/apps/2/state/65{}", "ab".repeat(32)));
    assert_eq!((status, body["error"].as_str()), (404, Some("not-found")), "{body}");
    let (status, body) = get(&api, &format!("/apps/2/state?prefix=62{id}&limit=2"));
    assert_eq!(status, 200);
    assert_eq!(
        (body["entries"].as_array().unwrap().len(), body["more"].as_bool()),
        (2, Some(true)),
        "{body}"
    );
    assert!(Instant::now() < deadline, "the election took more than 90 s");
}

#[test]
fn a_paillier_election_over_a_node_tallies_and_verifies() {
    let Setup { deadline, tmp, _node, api, start, end } = setup(120);
    let ea_s = tmp.path().join("ea").to_str().unwrap().to_string();
    let id = publish(&api, &ea_s, "paillier", 3, start, end);
    let election: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("ea/election.json")).unwrap()).unwrap();
    assert_eq!(election["scheme"], "paillier", "{election}");
    wait_until("the election in a block", deadline, || get(&api, &format!("/apps/2/state/65{id}")).0 == 200);

    let choices = [2usize, 0, 2];
    let mut txids = Vec::new();
    for (i, c) in choices.iter().enumerate() {
        let (key, token) = register(tmp.path(), &ea_s, &format!("voter{i}"));
        let out = cast(&api, &id, *c, &key, &token);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        txids.push(String::from_utf8_lossy(&out.stdout).trim().to_string());
        if i == 0 {
            let again = cast(&api, &id, 1, &key, &token);
            let err = String::from_utf8_lossy(&again.stderr).to_string();
            assert_eq!(again.status.code(), Some(1), "{err}");
            assert!(err.contains("app-conflict") || err.contains("vote-double-vote"), "{err}");
        }
    }
    wait_until("every ballot confirmed", deadline, || {
        txids.iter().all(|t| get(&api, &format!("/txs/{t}")).1["status"] == "confirmed")
    });
    wait_until("the window to close", deadline, || height(&api) >= end);
    // A ballot after the window: refused by the node, naming the rule.
    let (key, token) = register(tmp.path(), &ea_s, "late");
    let late = cast(&api, &id, 0, &key, &token);
    assert_eq!(late.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&late.stderr).contains("vote-outside-window"));

    let (v, stdout) = tally_and_verify(&api, &id, &ea_s, &tmp.path().join("result.json"));
    assert!(stdout.contains("3 ballots"), "{stdout}");
    assert_eq!(v["counts"], serde_json::json!([1, 0, 2]), "{v}");
    tampered_fails(&api, &id, &v, serde_json::json!([0, 1, 2]), tmp.path());
    assert!(Instant::now() < deadline, "the election took more than 120 s");
}
