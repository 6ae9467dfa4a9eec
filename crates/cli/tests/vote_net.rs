//! Elections over a real node (a miner process on 127.0.0.1 with the default configuration,
//! OS-chosen ports, every wait bounded), one per ballot scheme: the EA publishes an election
//! with `vote election`, its fee paid from a wallet holding a devnet premine key (a wallet that
//! cannot pay publishes nothing and leaves no keys behind), registers voters with `vote register`, voters cast with `vote cast` (a
//! second ballot of one voter is refused by the node), blocks are mined, the EA tallies with
//! `vote tally` and anyone checks the result with `vote verify`; a tampered result fails
//! verification, and bad ids get JSON 4xx. The chain's hash function is the node's: a `--hash`
//! naming another is refused.
//!
//! A new user's first steps, on a node that mines no block: an election the node refuses
//! leaves its directory usable again, an election waiting for its block is pending, and
//! neither a key file nor a result file that is not one is echoed or taken for a refusal. An
//! election's maximum: `register` gives no token past it, and the chain refuses the ballot
//! past it even with a token minted from a copy of the keys; a voter's second ballot is told
//! whose ballot waits in the mempool, then that the voter has voted.
//!
//! The browser booth (`a_whole_election_through_the_booth_in_a_browser`): voter packages from
//! `vote register --package-dir`, 20 voters casting through the explorer's booth page in headless
//! Chromium (one audits first, checked by the page and by `vote audit`), a second ballot and a
//! token for another key refused in words, bad input answered with messages, every tracker on
//! the bulletin board, the tally verified on the election's page and equal to the choices.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use scalechain_client::blocking::Client;
use scalechain_client::types::{AppRange, TxState};
use scalechain_client::ClientError;
use scalechain_lab::launcher::{LaunchError, Launcher, NodeSpec, Role};
use scalechain_types::{Hash, HashKind};

#[path = "../../explorer/tests/support/browser.rs"]
mod browser;

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

/// Polls `f` every 100 ms until it holds; fails the test naming `what` past `deadline`.
fn wait_until(what: &str, deadline: Instant, f: impl FnMut() -> bool) {
    let left = deadline.saturating_duration_since(Instant::now());
    match scalechain_lab::launcher::wait_until(what, left, f) {
        Ok(()) => {}
        Err(e @ LaunchError::WaitTimeout { .. }) => panic!("{e}"),
        Err(e) => panic!("waiting for {what}: {e}"),
    }
}

/// A miner with the default mempool policy (ballots, which are bare, enter as fee-less
/// application transactions; elections pay a fee), configured by a file.
fn start_miner(net: &mut Launcher) -> (String, Client) {
    // The default minimum fee rate: ballots enter as fee-less transactions.
    let node = net.start(NodeSpec::new("miner", Role::Miner).config("role = \"miner\"\n")).unwrap();
    (node.api_addr().to_string(), node.blocking_client().unwrap())
}

/// The voting module's state value `key` (hex), if the node has it.
fn app_value(node: &Client, key: &str) -> Result<String, ClientError> {
    node.app_value(2, &hex::decode(key).unwrap()).map(|e| e.value)
}

fn confirmed(node: &Client, txid: &str) -> bool {
    node.tx(&txid.parse::<Hash>().unwrap()).is_ok_and(|t| t.status == TxState::Confirmed)
}

/// A deliberately malformed `GET` (which the typed client cannot make): status and JSON body.
fn raw_get(api: &str, path: &str) -> (u16, serde_json::Value) {
    let (status, text) = raw("GET", api, path, None);
    (status, serde_json::from_str(&text).unwrap())
}

/// `METHOD http://api/path` with an optional body: status and the text answered.
fn raw(method: &str, api: &str, path: &str, body: Option<String>) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        let c = reqwest::Client::new();
        let url = format!("http://{api}{path}");
        let req = if method == "POST" { c.post(url).body(body.unwrap_or_default()) } else { c.get(url) };
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        (status, r.text().await.unwrap())
    })
}

/// The web explorer's election pages for `id`, and its verify action over the result file `v`:
/// verified with its counts; `tampered` (other counts) and a non-result refused.
fn explorer_verifies(
    api: &str,
    id: &str,
    v: &serde_json::Value,
    scheme: &str,
    ballots: usize,
    tampered: serde_json::Value,
) {
    let (status, list) = raw("GET", api, "/explorer/elections", None);
    assert_eq!(status, 200, "{list}");
    assert!(list.contains(&format!("href=\"/explorer/election/{id}\"")) && list.contains(scheme), "{list}");
    let (status, page) = raw("GET", api, &format!("/explorer/election/{id}"), None);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(&format!("<dd id=\"ballot-count\">{ballots}</dd>")), "{page}");
    assert!(page.contains("id=\"ballots-chart\""), "the ballots-per-block chart: {page}");
    let (status, verdict) = raw("POST", api, &format!("/explorer/election/{id}/verify"), Some(v.to_string()));
    assert_eq!(status, 200, "{verdict}");
    assert!(
        verdict.contains("<strong>Verified.</strong>")
            && verdict.contains(&format!("each of the {ballots} ballots")),
        "{verdict}"
    );
    for (j, n) in v["counts"].as_array().unwrap().iter().enumerate() {
        assert!(verdict.contains(&format!("<tr><td>{j}</td><td class=\"num\">{n}</td></tr>")), "{verdict}");
    }
    let mut bad = v.clone();
    bad["counts"] = tampered;
    let (status, verdict) =
        raw("POST", api, &format!("/explorer/election/{id}/verify"), Some(bad.to_string()));
    assert_eq!(status, 422, "{verdict}");
    assert!(verdict.contains("verification failed"), "{verdict}");
    let (status, _) = raw("POST", api, &format!("/explorer/election/{id}/verify"), Some("<script>".into()));
    assert_eq!(status, 400);
    assert_eq!(raw("GET", api, "/explorer/election/zz", None).0, 400);
    assert_eq!(raw("GET", api, &format!("/explorer/election/{}", "ab".repeat(32)), None).0, 404);
}

/// The election's pages in headless Chromium (when it is there; required in CI): the list leads
/// to the election, whose page verifies the result file chosen in it and lists the checks.
fn verify_in_a_browser(api: &str, id: &str, result: &Path) {
    use fantoccini::Locator;
    let Some(d) = browser::driver() else { return };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser::browser(&d, false).await;
        c.goto(&format!("http://{api}/explorer/elections")).await.unwrap();
        browser::shot(&c, "elections").await;
        c.find(Locator::Css(&format!("#elections a[href='/explorer/election/{id}']")))
            .await
            .unwrap()
            .click()
            .await
            .unwrap();
        browser::until(
            &c,
            Duration::from_secs(10),
            "the election's page",
            "return location.pathname.startsWith('/explorer/election/');",
        )
        .await;
        let verdict = verdict_of(&c, result).await;
        assert!(verdict.contains("Verified.") && verdict.contains("decryption proofs"), "{verdict}");
        c.execute("document.getElementById('verify-result').scrollIntoView();", vec![]).await.unwrap();
        browser::shot(&c, "election").await;
        c.close().await.unwrap();
    });
}

/// On an election's page: the result file `result` chosen in its verify box; the verdict's text.
async fn verdict_of(c: &fantoccini::Client, result: &Path) -> String {
    use fantoccini::Locator;
    c.find(Locator::Css("#result-file")).await.unwrap().send_keys(result.to_str().unwrap()).await.unwrap();
    browser::until(
        c,
        Duration::from_secs(60),
        "the verdict",
        "return document.querySelector('#verdict') !== null;",
    )
    .await;
    browser::text(c, "#verdict").await
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
    _net: Launcher,
    api: String,
    node: Client,
    /// The window: 14 blocks from the next one.
    start: u64,
    end: u64,
    /// A wallet holding a devnet premine key, and its passphrase file.
    wallet: PathBuf,
    pass: PathBuf,
}

/// `scalechain wallet ARGS` (the passphrase from the file `pass`); asserts success.
fn wallet_ok(wallet: &Path, pass: &Path, args: &[&str]) {
    let out = Command::new(EXE)
        .arg("wallet")
        .args(args)
        .args(["--wallet", wallet.to_str().unwrap(), "--passphrase-file", pass.to_str().unwrap()])
        .env_remove("SCALECHAIN_PASSPHRASE")
        .output()
        .unwrap();
    assert!(out.status.success(), "wallet {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A new wallet at `dir/NAME.json`, holding devnet premine key `premine` if given; its path and
/// passphrase file.
fn new_wallet(dir: &Path, name: &str, premine: Option<u64>) -> (PathBuf, PathBuf) {
    let (wallet, pass) = (dir.join(format!("{name}.json")), dir.join(format!("{name}.pass")));
    std::fs::write(&pass, "election passphrase\n").unwrap();
    wallet_ok(&wallet, &pass, &["new"]);
    if let Some(i) = premine {
        let seed = HashKind::Sha256.hash_parts(&[b"scalechain/devnet/premine", &i.to_le_bytes()]);
        let seed_file = dir.join(format!("{name}.seed"));
        std::fs::write(&seed_file, format!("{}\n", hex::encode(seed.0))).unwrap();
        wallet_ok(&wallet, &pass, &["import", "--seed-file", seed_file.to_str().unwrap()]);
    }
    (wallet, pass)
}

/// Starts a miner, waits for its first block, and picks a window.
fn setup(secs: u64) -> Setup {
    let deadline = Instant::now() + Duration::from_secs(secs);
    let tmp = tempfile::tempdir().unwrap();
    let mut net = Launcher::new(EXE).unwrap();
    let (api, node) = start_miner(&mut net);
    wait_until("height 1", deadline, || node.status().unwrap().height >= 1);
    let h0 = node.status().unwrap().height;
    // Devnet premine key 1023 is an Ed25519 key (public knowledge).
    let (wallet, pass) = new_wallet(tmp.path(), "ea-wallet", Some(1023));
    Setup { deadline, tmp, _net: net, api, node, start: h0 + 1, end: h0 + 14, wallet, pass }
}

/// The arguments of `vote election` of `scheme` with `candidates` and at most `voters` ballots
/// for heights `start..=end`, paid from `payer` (wallet, passphrase file), its keys written to
/// `ea`.
fn election_args(
    api: &str,
    payer: (&Path, &Path),
    ea: &str,
    (scheme, candidates, voters): (&str, usize, u64),
    (start, end): (u64, u64),
) -> Vec<String> {
    let args = [
        "election",
        "--api",
        api,
        "--wallet",
        payer.0.to_str().unwrap(),
        "--passphrase-file",
        payer.1.to_str().unwrap(),
        "--ea-dir",
        ea,
        "--candidates",
        &candidates.to_string(),
        "--scheme",
        scheme,
        "--voters-max",
        &voters.to_string(),
        "--start",
        &start.to_string(),
        "--end",
        &end.to_string(),
    ];
    args.iter().map(|a| a.to_string()).collect()
}

/// `vote election` (as [`election_args`]), which must succeed; the election id.
fn publish(
    api: &str,
    payer: (&Path, &Path),
    ea_s: &str,
    scheme: &str,
    candidates: usize,
    start: u64,
    end: u64,
) -> String {
    let args = election_args(api, payer, ea_s, (scheme, candidates, 10), (start, end));
    vote_ok(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// A voter's key file (`vote keygen`), the EA's token for it (`vote register`), and the
/// voter's public key.
fn register(dir: &Path, ea_s: &str, name: &str) -> (PathBuf, String, String) {
    let key = dir.join(format!("{name}.key"));
    let pk = vote_ok(&["keygen", "--out", key.to_str().unwrap()]);
    let token = vote_ok(&["register", "--ea-dir", ea_s, "--voter-pubkey", &pk]);
    assert_eq!(token.len(), 128, "{token}");
    (key, token, pk)
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
    let Setup { deadline, tmp, _net, api, node, start, end, wallet, pass } = setup(90);
    let height = || node.status().unwrap().height;
    let ea = tmp.path().join("ea");
    let ea_s = ea.to_str().unwrap();
    // A wallet without coins cannot pay for an election: nothing is published or written.
    let (empty, empty_pass) = new_wallet(tmp.path(), "empty", None);
    let unpaid = tmp.path().join("unpaid");
    let args = election_args(
        &api,
        (&empty, &empty_pass),
        unpaid.to_str().unwrap(),
        ("elgamal", 3, 10),
        (start, end),
    );
    let out = vote(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("insufficient funds"), "{err}");
    assert!(!unpaid.exists(), "no keys are written for an election that cannot be paid");

    let id = publish(&api, (&wallet, &pass), ea_s, "elgamal", 3, start, end);
    assert_eq!(id.len(), 64, "{id}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(ea.join("ea-keys.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the EA's secret key file is private");
    }
    // Not over the same directory twice.
    let again = election_args(&api, (&wallet, &pass), ea_s, ("elgamal", 3, 10), (1, 999));
    assert_eq!(vote(&again.iter().map(String::as_str).collect::<Vec<_>>()).status.code(), Some(2));
    wait_until("the election in a block", deadline, || app_value(&node, &format!("65{id}")).is_ok());

    // Voters: keys, tokens, ballots.
    let choices = [0usize, 1, 2, 2, 1, 2];
    let mut txids = Vec::new();
    let mut first = None;
    for (i, c) in choices.iter().enumerate() {
        let (key, token, _) = register(tmp.path(), ea_s, &format!("voter{i}"));
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
    wait_until("every ballot confirmed", deadline, || txids.iter().all(|t| confirmed(&node, t)));

    // Tallying before the window closes is refused.
    if height() < end {
        let early = vote(&["tally", "--api", &api, "--election", &id, "--ea-dir", ea_s]);
        assert_eq!(early.status.code(), Some(1), "{}", String::from_utf8_lossy(&early.stderr));
    }
    wait_until("the window to close", deadline, || height() >= end);
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
    // The chain's hash function comes from the node: the old spellings still work (`--hash`
    // hidden, `--api-token` for `--token`), and a `--hash` the node's chain contradicts is
    // refused, naming both.
    let verify = ["verify", "--api", &api, "--election", &id, "--result", res_s];
    vote_ok(&[&verify[..], &["--hash", "sha256", "--api-token", "sent-with-writes-only"]].concat());
    let out = vote(&[&verify[..], &["--hash", "blake3"]].concat());
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--hash blake3 but the node's chain uses sha256"), "{err}");
    explorer_verifies(&api, &id, &v, "elgamal", 6, serde_json::json!([2, 1, 3]));
    verify_in_a_browser(&api, &id, &result);

    // Bad and unknown ids: typed errors, JSON 4xx from the node.
    let out = vote(&["verify", "--api", &api, "--election", "zz", "--result", res_s]);
    assert_eq!(out.status.code(), Some(2));
    let out = vote(&["verify", "--api", &api, "--election", &"ab".repeat(32), "--result", res_s]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not published"));
    let (status, body) = raw_get(&api, "/apps/2/state/zz");
    assert_eq!((status, body["error"].as_str()), (400, Some("bad-request")), "{body}");
    let prefix = |hex_key: &str| AppRange { prefix: hex::decode(hex_key).unwrap(), ..AppRange::default() };
    match node.app_range(1, &prefix("62")).unwrap_err() {
        ClientError::Api { status, code, .. } => assert_eq!((status, code.as_str()), (400, "bad-request")),
        other => panic!("{other}"),
    }
    match app_value(&node, &format!("65{}", "ab".repeat(32))).unwrap_err() {
        ClientError::Api { status, code, .. } => assert_eq!((status, code.as_str()), (404, "not-found")),
        other => panic!("{other}"),
    }
    let page = node.app_range(2, &AppRange { limit: Some(2), ..prefix(&format!("62{id}")) }).unwrap();
    assert_eq!((page.entries.len(), page.more), (2, true), "{page:?}");
    assert!(Instant::now() < deadline, "the election took more than 90 s");
}

#[test]
fn a_paillier_election_over_a_node_tallies_and_verifies() {
    let Setup { deadline, tmp, _net, api, node, start, end, wallet, pass } = setup(120);
    let height = || node.status().unwrap().height;
    let ea_s = tmp.path().join("ea").to_str().unwrap().to_string();
    let id = publish(&api, (&wallet, &pass), &ea_s, "paillier", 3, start, end);
    let election: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join("ea/election.json")).unwrap()).unwrap();
    assert_eq!(election["scheme"], "paillier", "{election}");
    wait_until("the election in a block", deadline, || app_value(&node, &format!("65{id}")).is_ok());

    let choices = [2usize, 0, 2];
    let mut txids = Vec::new();
    for (i, c) in choices.iter().enumerate() {
        let (key, token, _) = register(tmp.path(), &ea_s, &format!("voter{i}"));
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
    wait_until("every ballot confirmed", deadline, || txids.iter().all(|t| confirmed(&node, t)));
    wait_until("the window to close", deadline, || height() >= end);
    // A ballot after the window: refused by the node, naming the rule.
    let (key, token, _) = register(tmp.path(), &ea_s, "late");
    let late = cast(&api, &id, 0, &key, &token);
    let err = String::from_utf8_lossy(&late.stderr).to_string();
    assert_eq!(late.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("vote-outside-window").count(), 1, "the rule named once: {err}");

    let (v, stdout) = tally_and_verify(&api, &id, &ea_s, &tmp.path().join("result.json"));
    assert!(stdout.contains("3 ballots"), "{stdout}");
    assert_eq!(v["counts"], serde_json::json!([1, 0, 2]), "{v}");
    tampered_fails(&api, &id, &v, serde_json::json!([0, 1, 2]), tmp.path());
    let ballots = v["ballots"].as_u64().unwrap() as usize;
    explorer_verifies(&api, &id, &v, "paillier", ballots, serde_json::json!([0, 1, 2]));
    assert!(Instant::now() < deadline, "the election took more than 120 s");
}

/// `vote ARGS` (strings); exit code and standard error.
fn vote_err(args: &[&str]) -> (Option<i32>, String) {
    let out = vote(args);
    (out.status.code(), String::from_utf8_lossy(&out.stderr).to_string())
}

/// A new user's first steps on a node that mines no block (deterministic: nothing leaves its
/// mempool): an election the node refuses (`low-fee`) leaves no keys, and the same directory
/// publishes it; casting, tallying and verifying before a block holds it say it is pending
/// and name its transaction; a file that is not a key is named but not echoed, and one that
/// is not a result is bad input (exit 2).
#[test]
fn an_election_before_its_block_is_pending_and_a_refused_one_leaves_no_keys() {
    let deadline = Instant::now() + Duration::from_secs(90);
    let tmp = tempfile::tempdir().unwrap();
    let mut net = Launcher::new(EXE).unwrap();
    let peer = net.start(NodeSpec::new("peer", Role::Peer)).unwrap();
    let (api, node) = (peer.api_addr().to_string(), peer.blocking_client().unwrap());
    let (wallet, pass) = new_wallet(tmp.path(), "ea-wallet", Some(1023));
    let ea = tmp.path().join("ea");
    let ea_s = ea.to_str().unwrap();

    // Below the node's minimum fee rate: refused, rule named once, nothing left behind.
    let mut args = election_args(&api, (&wallet, &pass), ea_s, ("elgamal", 3, 10), (2, 50));
    args.extend(["--fee-rate".to_string(), "0".to_string()]);
    let (code, err) = vote_err(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(err.matches("low-fee").count(), 1, "{err}");
    assert!(
        err.contains("raise --fee-rate") && err.contains("publish again with the same --ea-dir"),
        "{err}"
    );
    assert!(!ea.exists(), "the directory this run made goes with the keys");
    // The same directory, at the default fee: published, and pooled only.
    let id = publish(&api, (&wallet, &pass), ea_s, "elgamal", 3, 2, 50);
    let pooled = node.mempool(None).unwrap().txids;
    assert_eq!(pooled.len(), 1, "the election waits in the mempool: {pooled:?}");
    let txid = pooled[0].to_string();

    // Before a block holds it: pending, its transaction named, retry after the next block.
    let (key, token, _) = register(tmp.path(), ea_s, "voter0");
    let out = cast(&api, &id, 0, &key, &token);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is pending") && err.contains(&txid) && err.contains("next block"), "{err}");
    let (code, err) = vote_err(&["tally", "--api", &api, "--election", &id, "--ea-dir", ea_s]);
    assert!(code == Some(1) && err.contains("is pending"), "{err}");
    // An id the node knows nothing of is not pending.
    let (code, err) = vote_err(&["tally", "--api", &api, "--election", &"cd".repeat(32), "--ea-dir", ea_s]);
    assert!(code == Some(1) && err.contains("not published") && !err.contains("pending"), "{err}");

    // A key file that is not a key: named, what is wrong said, its contents never echoed.
    let notes = tmp.path().join("notes.txt");
    std::fs::write(&notes, "my secret diary: the safe opens with 4711\n").unwrap();
    let out = cast(&api, &id, 0, &notes, &token);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("notes.txt") && err.contains("not a hex digit"), "{err}");
    assert!(!err.contains("secret") && !err.contains("4711"), "{err}");
    // A result file that is not one: bad input.
    let (code, err) =
        vote_err(&["verify", "--api", &api, "--election", &id, "--result", notes.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{err}");
    assert!(Instant::now() < deadline, "the test took more than 90 s");
}

/// An election's maximum (`paillier`, `--voters-max 1`, as the user who found the tally failing
/// for ever): `register` gives one token; a second minted from a copy of the EA's keys casts a
/// ballot the chain refuses (`vote-election-full`), so the tally counts one. A voter's second
/// ballot while the first waits in the mempool of a node that mines nothing is told whose
/// ballot waits (its txid), and once a block holds the first that the voter has voted.
#[test]
fn the_ballot_past_an_elections_maximum_is_refused_and_the_tally_holds() {
    let deadline = Instant::now() + Duration::from_secs(180);
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("chain");
    let mut net = Launcher::new(EXE).unwrap();
    let miner = NodeSpec::new("miner", Role::Miner).config("role = \"miner\"\n").data_dir(&data);
    let node = net.start(miner).unwrap().blocking_client().unwrap();
    wait_until("height 1", deadline, || node.status().unwrap().height >= 1);
    let h0 = node.status().unwrap().height;
    let (start, end) = (h0 + 2, h0 + 30);
    let api = net.node("miner").unwrap().api_addr().to_string();
    let (wallet, pass) = new_wallet(tmp.path(), "ea-wallet", Some(1023));
    let ea = tmp.path().join("ea");
    let ea_s = ea.to_str().unwrap();
    let args = election_args(&api, (&wallet, &pass), ea_s, ("paillier", 2, 1), (start, end));
    let id = vote_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    wait_until("the election in a block", deadline, || app_value(&node, &format!("65{id}")).is_ok());

    // One token, not two; the same voter again gets the same one.
    let (alice, token, alice_pk) = register(tmp.path(), ea_s, "alice");
    assert_eq!(vote_ok(&["register", "--ea-dir", ea_s, "--voter-pubkey", &alice_pk]), token);
    let bob = tmp.path().join("bob.key");
    let bob_pk = vote_ok(&["keygen", "--out", bob.to_str().unwrap()]);
    let (code, err) = vote_err(&["register", "--ea-dir", ea_s, "--voter-pubkey", &bob_pk]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("at most 1 voters"), "{err}");
    // An EA minting from a copy of its keys is not stopped there: the chain stops it.
    let copy = tmp.path().join("ea-copy");
    std::fs::create_dir(&copy).unwrap();
    for f in ["ea-keys.json", "election.json"] {
        std::fs::copy(ea.join(f), copy.join(f)).unwrap();
    }
    let bob_token = vote_ok(&["register", "--ea-dir", copy.to_str().unwrap(), "--voter-pubkey", &bob_pk]);

    // On a node that mines nothing (the miner's chain, its mempool empty), a second ballot
    // while the first waits: told whose ballot waits, and its txid.
    net.stop_node("miner").unwrap();
    let peer = net.start(NodeSpec::new("peer", Role::Peer).data_dir(&data)).unwrap();
    let peer_api = peer.api_addr().to_string();
    let out = cast(&peer_api, &id, 0, &alice, &token);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let waiting = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let again = cast(&peer_api, &id, 1, &alice, &token);
    let err = String::from_utf8_lossy(&again.stderr).to_string();
    assert_eq!(again.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("voter {alice_pk}")) && err.contains("alice.key"), "{err}");
    assert!(err.contains(&format!("waiting for a block (txid {waiting})")), "{err}");
    assert!(!err.contains("application key"), "{err}");
    net.stop_node("peer").unwrap();

    // Mining again (the pool starts empty): Alice's ballot in a block, Bob's refused.
    let node = net.restart_node("miner").unwrap().blocking_client().unwrap();
    let api = net.node("miner").unwrap().api_addr().to_string();
    let out = cast(&api, &id, 0, &alice, &token);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let txid = String::from_utf8_lossy(&out.stdout).trim().to_string();
    wait_until("Alice's ballot confirmed", deadline, || confirmed(&node, &txid));
    let out = cast(&api, &id, 1, &bob, &bob_token);
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("vote-election-full").count(), 1, "{err}");
    let again = cast(&api, &id, 1, &alice, &token);
    let err = String::from_utf8_lossy(&again.stderr).to_string();
    assert_eq!(again.status.code(), Some(1), "{err}");
    assert_eq!(err.matches("vote-double-vote").count(), 1, "{err}");
    assert!(err.contains(&format!("voter {alice_pk}")), "{err}");

    // The tally counts the one ballot, and verifies.
    wait_until("the window to close", deadline, || node.status().unwrap().height >= end);
    let (v, stdout) = tally_and_verify(&api, &id, ea_s, &tmp.path().join("result.json"));
    assert!(stdout.contains("1 ballots"), "{stdout}");
    assert_eq!(v["counts"], serde_json::json!([1, 0]), "{v}");
    assert!(Instant::now() < deadline, "the test took more than 180 s");
}

/// What the booth's page says once `id`'s element has a verdict: `(passed, text)`.
async fn booth_verdict(c: &fantoccini::Client, id: &str, what: &str) -> (bool, String) {
    browser::until(
        c,
        Duration::from_secs(30),
        what,
        &format!(
            "const e = document.getElementById('{id}'); \
             return e.classList.contains('pass') || e.classList.contains('fail');"
        ),
    )
    .await;
    let pass = c
        .execute(&format!("return document.getElementById('{id}').classList.contains('pass');"), vec![])
        .await
        .unwrap();
    (pass == serde_json::json!(true), browser::text(c, &format!("#{id}")).await)
}

/// Goes to `url` and records, from then on, what the page's scripts leave uncaught (errors and
/// rejected promises), for [`no_page_errors`].
async fn watched(c: &fantoccini::Client, url: &str) {
    c.goto(url).await.unwrap();
    c.execute(
        "window.__uncaught = []; \
         addEventListener('error', (e) => window.__uncaught.push(String(e.message))); \
         addEventListener('unhandledrejection', (e) => window.__uncaught.push(String(e.reason)));",
        vec![],
    )
    .await
    .unwrap();
}

/// Nothing the page's scripts did since [`watched`] went uncaught.
async fn no_page_errors(c: &fantoccini::Client, what: &str) {
    let errors = c.execute("return window.__uncaught;", vec![]).await.unwrap();
    assert_eq!(errors, serde_json::json!([]), "{what}: uncaught in the page");
}

/// Opens the booth of election `id` and loads the voter package `package` (a file).
async fn booth_load(c: &fantoccini::Client, base: &str, id: &str, package: &Path) -> (bool, String) {
    use fantoccini::Locator;
    watched(c, &format!("{base}/explorer/election/{id}/booth")).await;
    c.find(Locator::Css("#package-file")).await.unwrap().send_keys(package.to_str().unwrap()).await.unwrap();
    booth_verdict(c, "package-state", "the package read").await
}

/// Is the booth's element `id` hidden?
async fn hidden(c: &fantoccini::Client, id: &str) -> bool {
    let script = format!("return document.getElementById('{id}').hidden;");
    c.execute(&script, vec![]).await.unwrap() == serde_json::json!(true)
}

/// Chooses `choice` and encrypts; returns the tracker the page shows.
async fn booth_encrypt(c: &fantoccini::Client, choice: usize) -> String {
    use fantoccini::Locator;
    c.find(Locator::Css(&format!("#choice-{choice}"))).await.unwrap().click().await.unwrap();
    c.find(Locator::Css("#encrypt")).await.unwrap().click().await.unwrap();
    browser::until(
        c,
        Duration::from_secs(30),
        "the ballot encrypted",
        "return !document.getElementById('step-seal').hidden;",
    )
    .await;
    browser::text(c, "#tracker").await
}

/// Casts the encrypted ballot: the verdict.
async fn booth_cast(c: &fantoccini::Client) -> (bool, String) {
    use fantoccini::Locator;
    c.find(Locator::Css("#cast")).await.unwrap().click().await.unwrap();
    booth_verdict(c, "verdict", "the node's verdict").await
}

/// A whole election through the explorer's booth in headless Chromium (required in CI): the EA
/// publishes with `vote election` and writes 21 voter packages with `vote register
/// --package-dir`; 20 voters cast through the booth page — the first audits a ballot first (the
/// page checks it, `vote audit` checks it, and a tampered audit fails), then casts a fresh one —;
/// that voter casts again and is refused in words; a package holding a token for another key is
/// refused before anything is sent; bad input (a key that is not one, an unknown election, a node
/// that is down) gets a message. Every tracker is on the bulletin board, the EA tallies with
/// `vote tally`, the election's page verifies the result, and the counts are the choices made.
#[test]
fn a_whole_election_through_the_booth_in_a_browser() {
    use fantoccini::Locator;
    let Some(d) = browser::driver() else { return };
    let began = Instant::now();
    let Setup { deadline, tmp, mut _net, api, node, wallet, pass, .. } = setup(240);
    let height = || node.status().unwrap().height;
    let ea = tmp.path().join("ea");
    let ea_s = ea.to_str().unwrap();
    // The election enters the next block; ballots from the one after. The window leaves the
    // voters' part of this test about 40 blocks (one a second on a devnet).
    let start = height() + 2;
    let end = start + 40;
    let args = election_args(&api, (&wallet, &pass), ea_s, ("elgamal", 3, 25), (start, end));
    let id = vote_ok(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let packages = tmp.path().join("packages");
    let out =
        vote(&["register", "--ea-dir", ea_s, "--package-dir", packages.to_str().unwrap(), "--count", "21"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let listed = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(listed, 21, "one line per package");
    let package = |i: usize| packages.join(format!("voter-{i:04}.json"));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(package(1)).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "a voter package holds a secret key");
    }
    // Past the election's maximum (25): no more packages, none written.
    let out =
        vote(&["register", "--ea-dir", ea_s, "--package-dir", packages.to_str().unwrap(), "--count", "5"]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("room for 4"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_dir(&packages).unwrap().count(), 21);
    // Bad input for the booth: a package whose key is not one, one naming an election that does
    // not exist, one whose token is another voter's.
    let text = |i: usize| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(package(i)).unwrap()).unwrap()
    };
    let mut broken = text(21);
    let secret = broken["voter_key"].as_str().unwrap().to_string();
    broken["voter_key"] = serde_json::json!(format!("{}q{}", &secret[..10], &secret[11..]));
    let broken_file = tmp.path().join("broken.json");
    std::fs::write(&broken_file, broken.to_string()).unwrap();
    let mut stranger = text(21);
    stranger["token"] = text(20)["token"].clone();
    let mut unknown = text(21);
    unknown["election"] = serde_json::json!("ab".repeat(32));
    let unknown_file = tmp.path().join("unknown.json");
    std::fs::write(&unknown_file, unknown.to_string()).unwrap();
    wait_until("the election in a block", deadline, || app_value(&node, &format!("65{id}")).is_ok());
    wait_until("the window to open", deadline, || height() + 1 >= start);

    let choices: Vec<usize> = (0..20).map(|i| [0, 1, 2, 2, 1, 2, 1][i % 7]).collect();
    let mut expected = [0u64; 3];
    let base = format!("http://{api}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let trackers = rt.block_on(async {
        let c = browser::browser(&d, false).await;
        // The election's page leads to its booth.
        c.goto(&format!("{base}/explorer/election/{id}")).await.unwrap();
        c.find(Locator::Css("#booth-link")).await.unwrap().click().await.unwrap();
        let ten = Duration::from_secs(10);
        browser::until(&c, ten, "the booth", "return location.pathname.endsWith('/booth');").await;
        let read = "return document.getElementById('booth-election').textContent.includes('3 candidates');";
        browser::until(&c, ten, "the booth reads its election", read).await;

        // An election that does not exist: the explorer's 404 page; a package naming one: a message.
        c.goto(&format!("{base}/explorer/election/{}/booth", "ab".repeat(32))).await.unwrap();
        assert!(browser::text(&c, "#error-message").await.contains("no election"));
        watched(&c, &format!("{base}/explorer/booth")).await;
        let input = c.find(Locator::Css("#package-file")).await.unwrap();
        input.send_keys(unknown_file.to_str().unwrap()).await.unwrap();
        let (ok, said) = booth_verdict(&c, "package-state", "the unknown election named").await;
        assert!(!ok && said.contains("no election") && said.contains(&"ab".repeat(32)), "{said}");
        no_page_errors(&c, "an unknown election").await;
        // A key that is not one: named, not echoed.
        let (ok, said) = booth_load(&c, &base, &id, &broken_file).await;
        assert!(!ok && said.contains("voter_key") && said.contains("character 11 of 64"), "{said}");
        assert!(!said.contains(&secret[..8]), "the secret key is never shown: {said}");
        no_page_errors(&c, "a key that is not one").await;
        browser::shot(&c, "booth-bad-key").await;
        // A token for another key: refused in the page, nothing sent (no choice is offered).
        c.execute("document.querySelector('#booth details').open = true;", vec![]).await.unwrap();
        c.find(Locator::Css("#package-text")).await.unwrap().send_keys(&stranger.to_string()).await.unwrap();
        c.find(Locator::Css("#package-load")).await.unwrap().click().await.unwrap();
        let (ok, said) = booth_verdict(&c, "package-state", "the stranger's token refused").await;
        assert!(!ok && said.contains("not valid for its voter key"), "{said}");
        assert!(said.contains("nothing was sent"), "{said}");
        assert!(hidden(&c, "step-choose").await, "no choice offered");
        no_page_errors(&c, "a token for another key").await;
        browser::shot(&c, "booth-other-token").await;

        // Twenty voters; the first audits before casting.
        let mut trackers = Vec::new();
        for (i, &choice) in choices.iter().enumerate() {
            let (ok, said) = booth_load(&c, &base, &id, &package(i + 1)).await;
            assert!(ok, "voter {}: {said}", i + 1);
            let mut tracker = booth_encrypt(&c, choice).await;
            if i == 0 {
                browser::shot(&c, "booth").await;
                c.find(Locator::Css("#audit")).await.unwrap().click().await.unwrap();
                let (ok, said) = booth_verdict(&c, "audit-verdict", "the audit").await;
                assert!(ok && said.contains(&format!("Candidate {choice} only")), "{said}");
                browser::shot(&c, "booth-audit").await;
                let audit = "return document.getElementById('audit-json').value;";
                let audit = c.execute(audit, vec![]).await.unwrap();
                let audit_file = tmp.path().join("audit.json");
                std::fs::write(&audit_file, audit.as_str().unwrap()).unwrap();
                let said = vote_ok(&["audit", "--api", &api, "--audit", audit_file.to_str().unwrap()]);
                assert!(said.contains(&format!("candidate {choice} only")), "{said}");
                assert!(said.contains(&tracker), "{said}");
                // The same ballot said to be for another candidate: the check fails.
                let mut lie: serde_json::Value = serde_json::from_str(audit.as_str().unwrap()).unwrap();
                lie["choice"] = serde_json::json!((choice + 1) % 3);
                std::fs::write(&audit_file, lie.to_string()).unwrap();
                let out = vote(&["audit", "--api", &api, "--audit", audit_file.to_str().unwrap()]);
                assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stdout));
                // The audited ballot is gone: casting needs a fresh one.
                assert!(hidden(&c, "step-seal").await, "the audited ballot cannot be cast");
                let audited = tracker;
                tracker = booth_encrypt(&c, choice).await;
                assert_ne!(tracker, audited, "a fresh ballot");
                trackers.push(audited);
            }
            let (ok, said) = booth_cast(&c).await;
            assert!(ok && said.contains("Accepted"), "voter {}: {said}", i + 1);
            assert_eq!(browser::text(&c, "#cast-tracker").await, tracker);
            if i == 0 {
                browser::shot(&c, "booth-cast").await;
            }
            no_page_errors(&c, &format!("voter {}", i + 1)).await;
            expected[choice] += 1;
            trackers.push(tracker);
        }
        let audited = trackers.remove(0);

        // The first voter's ballot on the board (once a block holds it), then that voter again.
        let first = trackers[0].clone();
        let board = format!("{base}/explorer/election/{id}/ballots?tracker={first}");
        let mut on_chain = false;
        while !on_chain {
            assert!(Instant::now() < deadline, "the first ballot on the board");
            c.goto(&board).await.unwrap();
            on_chain = browser::text(&c, "#found").await.starts_with("On the chain");
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
        let (ok, _) = booth_load(&c, &base, &id, &package(1)).await;
        assert!(ok);
        booth_encrypt(&c, 1).await;
        let (ok, said) = booth_cast(&c).await;
        assert!(!ok && said.contains("you have already voted"), "{said}");
        assert!(said.contains("vote-double-vote"), "{said}");
        no_page_errors(&c, "a second ballot").await;
        browser::shot(&c, "booth-twice").await;
        // The audited ballot was never cast.
        c.goto(&format!("{base}/explorer/election/{id}/ballots?tracker={audited}")).await.unwrap();
        assert!(browser::text(&c, "#found").await.starts_with("Not on the chain"));

        // Chromium's own figures: encrypting and proving (the booth's module, as loaded), and
        // what the booth page weighs.
        c.goto(&format!("{base}/explorer/election/{id}/booth")).await.unwrap();
        let m = c
            .execute_async(
                "const done = arguments[arguments.length - 1]; \
                 import('/explorer/assets/booth.js') \
                   .then((b) => done([3, 10, 50].map((n) => b.measure(n, 5)))) \
                   .catch((e) => done(String(e)));",
                vec![],
            )
            .await
            .unwrap();
        let weight = c
            .execute(
                "return [performance.getEntriesByType('navigation')[0], \
                         ...performance.getEntriesByType('resource')] \
                   .map((e) => [e.name, e.encodedBodySize]);",
                vec![],
            )
            .await
            .unwrap();
        eprintln!("booth in Chromium: encrypt and prove (ms per ballot, 5 each): {m}");
        eprintln!("booth page weight (bytes as served): {weight}");
        c.close().await.unwrap();
        trackers
    });
    assert_eq!(trackers.len(), 20);
    let cast_phase = began.elapsed();

    // Every tracker is on the board, once blocks hold them all.
    wait_until("every ballot in a block", deadline, || {
        let (_, page) = raw("GET", &api, &format!("/explorer/election/{id}/ballots"), None);
        trackers.iter().all(|t| page.contains(&format!("data-tracker=\"{t}\"")))
    });
    wait_until("the window to close", deadline, || height() >= end);
    let result = tmp.path().join("result.json");
    let (v, _) = tally_and_verify(&api, &id, ea_s, &result);
    assert_eq!(v["counts"], serde_json::json!(expected), "the tally is the choices made");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = browser::browser(&d, false).await;
        // The election's page verifies the EA's result; the board lists the 20 ballots.
        c.goto(&format!("{base}/explorer/election/{id}")).await.unwrap();
        let verdict = verdict_of(&c, &result).await;
        assert!(verdict.contains("Verified.") && verdict.contains("each of the 20 ballots"), "{verdict}");
        for (j, n) in expected.iter().enumerate() {
            let cell = browser::text(&c, &format!("#counts tbody tr:nth-child({}) td.num", j + 1)).await;
            assert_eq!(cell, n.to_string(), "candidate {j}");
        }
        c.goto(&format!("{base}/explorer/election/{id}/ballots")).await.unwrap();
        assert_eq!(c.find_all(Locator::Css("#ballots tbody tr")).await.unwrap().len(), 20);
        browser::shot(&c, "booth-board").await;
        // The node goes down under an open booth: the page says so.
        watched(&c, &format!("{base}/explorer/election/{id}/booth")).await;
        _net.stop_node("miner").unwrap();
        c.find(Locator::Css("#package-file"))
            .await
            .unwrap()
            .send_keys(package(21).to_str().unwrap())
            .await
            .unwrap();
        let (ok, said) = booth_verdict(&c, "package-state", "the node down").await;
        assert!(!ok && said.contains("cannot be reached"), "{said}");
        no_page_errors(&c, "the node down").await;
        browser::shot(&c, "booth-node-down").await;
        c.close().await.unwrap();
    });
    eprintln!(
        "the booth's election: 20 voters cast in {:.1} s (from the start), the whole test {:.1} s",
        cast_phase.as_secs_f64(),
        began.elapsed().as_secs_f64()
    );
}
