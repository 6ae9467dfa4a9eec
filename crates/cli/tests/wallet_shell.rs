//! `scalechain wallet` and `scalechain shell` against a miner node on 127.0.0.1 (OS-chosen
//! ports, temporary directories, every wait bounded): a wallet funded from a devnet premine key
//! pays a second wallet and both balances add up to the fee; the refusals (wrong or missing
//! passphrase, bad address checksum, insufficient funds, unreachable API, overwriting) are typed
//! errors with their exit codes; backup and restore keep the addresses. The shell runs a piped
//! script: status, tip, a short generated load, save and dot (the saved chain imports with
//! `scalechain chain import`), and an unknown command that fails without ending the script.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use scalechain_client::blocking::Client;
use scalechain_client::types::{BlockId, TxState};
use scalechain_consensus::params::{devnet_premine_key, SigMode};
use scalechain_lab::launcher::{wait_until, Launcher, NodeSpec, Role};
use scalechain_types::HashKind;
use scalechain_wallet::{encode_address, AddressHrp};

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

/// A miner node: its launcher (which stops it when dropped), its API's URL and a client.
fn start_miner() -> (Launcher, String, Client) {
    let mut net = Launcher::new(EXE).unwrap();
    let node = net.start(NodeSpec::new("node", Role::Miner)).unwrap();
    let (api, client) = (node.api_url(), node.blocking_client().unwrap());
    (net, api, client)
}

fn wait_confirmed(node: &Client, txid: &str) {
    let id = txid.parse().unwrap();
    wait_until(&format!("{txid} to be confirmed"), Duration::from_secs(20), || {
        node.tx(&id).is_ok_and(|t| t.status == TxState::Confirmed)
    })
    .unwrap();
}

/// Runs `scalechain wallet ARGS` with `--api`; `pass` is the passphrase put in the environment.
fn wallet(api: &str, pass: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(EXE);
    c.arg("wallet").args(args).args(["--api", api]).env_remove("SCALECHAIN_PASSPHRASE");
    if let Some(p) = pass {
        c.env("SCALECHAIN_PASSPHRASE", p);
    }
    c.output().unwrap()
}

fn ok(o: &Output) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "failed ({:?}): {stderr}", o.status.code());
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn fails(o: &Output, code: i32, needle: &str) -> String {
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    assert_eq!(o.status.code(), Some(code), "stderr: {stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    stderr
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn balance(api: &str, pass: &str, w: &Path) -> serde_json::Value {
    let out = ok(&wallet(api, Some(pass), &["balance", "--json", "--wallet", path(w)]));
    serde_json::from_str(out.trim()).unwrap()
}

#[test]
fn wallets_send_confirm_and_refuse_bad_input() {
    let t0 = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let (_net, api, node) = start_miner();
    let (a, b, faucet) = (tmp.path().join("a.json"), tmp.path().join("b.json"), tmp.path().join("f.json"));
    let pass_file = tmp.path().join("pass");
    std::fs::write(&pass_file, "alpha passphrase\n").unwrap();

    // A: passphrase from a file. The first address is printed by `new` and again by `address`.
    let a_new =
        ok(&wallet(&api, None, &["new", "--wallet", path(&a), "--passphrase-file", path(&pass_file)]));
    let a0 = a_new.trim().to_string();
    assert!(a0.starts_with("scdev1"), "{a0}");
    let again = wallet(&api, None, &["address", "--wallet", path(&a), "--passphrase-file", path(&pass_file)]);
    assert_eq!(ok(&again).trim(), a0);
    fails(
        &wallet(&api, Some("x"), &["new", "--wallet", path(&a)]),
        2,
        "already exists; refusing to overwrite it",
    );
    // B and the faucet: passphrase from the environment.
    let b0 = ok(&wallet(&api, Some("beta"), &["new", "--wallet", path(&b)])).trim().to_string();
    ok(&wallet(&api, Some("faucet"), &["new", "--wallet", path(&faucet)]));
    // The faucet imports devnet premine key 1023 (public knowledge).
    let seed = HashKind::Sha256.hash_parts(&[b"scalechain/devnet/premine", &1023u64.to_le_bytes()]);
    let seed_file = tmp.path().join("seed");
    std::fs::write(&seed_file, format!("{}\n", hex::encode(seed.0))).unwrap();
    let imported = ok(&wallet(
        &api,
        Some("faucet"),
        &["import", "--wallet", path(&faucet), "--seed-file", path(&seed_file)],
    ));
    let pk = devnet_premine_key(SigMode::Ed25519, 1023).public();
    let premine_lock = scalechain_types::Lock { scheme: pk.scheme(), pubkey_hash: pk.hash(HashKind::Sha256) };
    assert_eq!(imported.trim(), encode_address(&AddressHrp::devnet(), HashKind::Sha256, &premine_lock));
    assert_eq!(balance(&api, "faucet", &faucet)["confirmed"], 1_000_000_000u64);
    // The imported key (whose secret anybody knows) is spent from, never a receiving address.
    let receiving = ok(&wallet(&api, Some("faucet"), &["address", "--wallet", path(&faucet)]));
    assert_ne!(receiving.trim(), imported.trim());
    let listed: serde_json::Value = serde_json::from_str(
        ok(&wallet(&api, Some("faucet"), &["list", "--json", "--wallet", path(&faucet)])).trim(),
    )
    .unwrap();
    assert_eq!(listed["keys"][1]["address"], imported.trim(), "{listed}");
    assert_eq!(listed["keys"][1]["receiving"], false, "{listed}");
    assert_eq!(listed["keys"][0]["address"], receiving.trim(), "{listed}");

    // Fund A, then A pays B.
    let fund = 50_000_000u64;
    let o = wallet(
        &api,
        Some("faucet"),
        &["send", "--wallet", path(&faucet), "--to", &a0, "--amount", &fund.to_string()],
    );
    let txid = ok(&o).trim().to_string();
    assert_eq!(txid.len(), 64, "{txid}");
    wait_confirmed(&node, &txid);
    let a_bal = |pass: &str| {
        let out = ok(&wallet(
            &api,
            Some(pass),
            &["balance", "--json", "--wallet", path(&a), "--passphrase-file", path(&pass_file)],
        ));
        serde_json::from_str::<serde_json::Value>(out.trim()).unwrap()
    };
    assert_eq!(a_bal("ignored: the file wins")["confirmed"], fund);
    let pay = 12_345_678u64;
    let o = wallet(
        &api,
        None,
        &[
            "send",
            "--wallet",
            path(&a),
            "--passphrase-file",
            path(&pass_file),
            "--to",
            &b0,
            "--amount",
            &pay.to_string(),
            "--fee-rate",
            "2000",
        ],
    );
    let txid2 = ok(&o).trim().to_string();
    let info = String::from_utf8_lossy(&o.stderr).to_string();
    let fee: u64 = info.split("fee ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    // One ed25519 input (133 bytes) and two outputs: 17 + 133 + 2 * 41 = 232 bytes at 2 per byte.
    assert_eq!(fee, 464, "{info}");
    // Until it is confirmed, A's balance shows it as pending.
    let pending = a_bal("");
    if pending["pending_out"] != 0 {
        assert_eq!(pending["pending_out"], fund, "{pending}");
        assert_eq!(pending["pending_in"], fund - pay - fee, "{pending}");
    }
    wait_confirmed(&node, &txid2);
    let after = a_bal("");
    assert_eq!(after["confirmed"], fund - pay - fee, "{after}");
    assert_eq!(after["pending_out"], 0, "{after}");
    let b_after = balance(&api, "beta", &b);
    assert_eq!(b_after["confirmed"], pay, "{b_after}");
    assert_eq!(b_after["addresses"][0]["address"], b0.as_str());

    // Refusals: typed, with the exit codes of the rest of the command line.
    fails(&wallet(&api, Some("not beta"), &["balance", "--wallet", path(&b)]), 1, "wrong passphrase");
    fails(&wallet(&api, None, &["balance", "--wallet", path(&b)]), 2, "SCALECHAIN_PASSPHRASE");
    let mut bad = b0.clone();
    let last = bad.pop().unwrap();
    bad.push(if last == 'q' { 'p' } else { 'q' });
    let e = fails(
        &wallet(&api, Some("beta"), &["send", "--wallet", path(&b), "--to", &bad, "--amount", "1"]),
        2,
        "checksum",
    );
    assert!(e.contains(&bad), "names the address: {e}");
    fails(
        &wallet(&api, Some("beta"), &["send", "--wallet", path(&b), "--to", &a0, "--amount", "100000000"]),
        1,
        &format!("insufficient funds: have {pay}, need"),
    );
    fails(
        &wallet(
            &api,
            Some("beta"),
            &["send", "--wallet", path(&b), "--to", &a0, "--amount", "9007199254740992"],
        ),
        2,
        "--amount 9007199254740992",
    );
    fails(&wallet("http://127.0.0.1:1", Some("beta"), &["balance", "--wallet", path(&b)]), 2, "unreachable");
    // An address of a chain hashing with another function is refused before anything is sent.
    let blake = encode_address(&AddressHrp::devnet(), HashKind::Blake3, &premine_lock);
    let e = fails(
        &wallet(&api, Some("beta"), &["send", "--wallet", path(&b), "--to", &blake, "--amount", "1"]),
        2,
        "address is for a chain hashing with blake3, and this chain uses sha256",
    );
    assert!(e.contains("--to"), "{e}");
    assert_eq!(balance(&api, "beta", &b)["confirmed"], pay, "refusals changed nothing");

    // Backup and restore: the same keys, hence the same addresses.
    let list = |w: &Path, pass: &str| ok(&wallet(&api, Some(pass), &["list", "--wallet", path(w)]));
    let new_key =
        wallet(&api, Some("beta"), &["address", "--new", "--scheme", "secp256k1", "--wallet", path(&b)]);
    let b1 = ok(&new_key).trim().to_string();
    assert_ne!(b1, b0);
    let backup = tmp.path().join("b.bak");
    ok(&wallet(&api, Some("beta"), &["backup", "--wallet", path(&b), "--out", path(&backup)]));
    fails(
        &wallet(&api, Some("beta"), &["backup", "--wallet", path(&b), "--out", path(&backup)]),
        2,
        "already exists",
    );
    let restored = tmp.path().join("restored.json");
    fails(
        &wallet(&api, Some("gamma"), &["restore", "--wallet", path(&restored), "--from", path(&backup)]),
        1,
        "wrong passphrase",
    );
    assert!(!restored.exists(), "a failed restore writes nothing");
    ok(&wallet(&api, Some("beta"), &["restore", "--wallet", path(&restored), "--from", path(&backup)]));
    let (l1, l2) = (list(&b, "beta"), list(&restored, "beta"));
    assert_eq!(l1, l2);
    assert_eq!(l1.lines().count(), 2);
    assert!(l1.contains(&b0) && l1.contains(&b1), "{l1}");
    assert_eq!(balance(&api, "beta", &restored)["confirmed"], pay);
    eprintln!("wallet test: {:.1} s", t0.elapsed().as_secs_f64());
}

#[test]
fn shell_script_reads_the_node_saves_the_chain_and_survives_bad_commands() {
    let t0 = Instant::now();
    let tmp = tempfile::tempdir().unwrap();
    let (_net, api, node) = start_miner();
    wait_until("height 2", Duration::from_secs(30), || node.tip().is_ok_and(|t| t.height >= 2)).unwrap();
    let w = tmp.path().join("w.json");
    ok(&wallet(&api, Some("pw"), &["new", "--wallet", path(&w)]));
    let (json, dot) = (tmp.path().join("x.json"), tmp.path().join("x.dot"));
    let mut shell = Command::new(EXE)
        .args(["shell", "--api", &api, "--wallet", path(&w)])
        .env("SCALECHAIN_PASSPHRASE", "pw")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = shell.stdin.take().unwrap();
    let stdout_pipe = shell.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stdout_pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdout = String::new();
    writeln!(stdin, "status\ntip\n# a comment\n\nbalance --json\nload start 40 2").unwrap();
    // The load: funding (a block), 2 s of offer, then its transfers confirmed.
    let deadline = Instant::now() + Duration::from_secs(40);
    let mut live = false;
    let finished = loop {
        writeln!(stdin, "load status").unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(500));
        let mut done = None;
        while let Ok(l) = rx.try_recv() {
            if l.starts_with("load at 40 tx/s") && l.contains("(finished)") {
                done = Some(l.clone());
            }
            // The counters move while the first round runs (no round has ended yet).
            live |= l.starts_with("load at 40 tx/s") && !l.contains(" 0 offered") && l.contains(" 0 rounds");
            stdout.push_str(&l);
            stdout.push('\n');
        }
        if let Some(l) = done {
            break l;
        }
        assert!(Instant::now() < deadline, "the load did not finish: {stdout}");
    };
    writeln!(
        stdin,
        "load stop\nload stop\nload status\nsave {}\ndot {}\nbogus\nblock 0\nblock nope\nblock 0 --page 2\ntx 00\nhelp\nhelp block\nmempool\nquit\nstatus",
        json.display(),
        dot.display()
    )
    .unwrap();
    drop(stdin);
    let deadline = Instant::now() + Duration::from_secs(30);
    while shell.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the shell did not quit");
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = shell.wait_with_output().unwrap();
    reader.join().unwrap();
    while let Ok(l) = rx.try_recv() {
        stdout.push_str(&l);
        stdout.push('\n');
    }
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    // `bogus`, the second `load stop`, `block nope`, `block 0 --page 2` and `tx 00` failed; the
    // script went on.
    assert_eq!(out.status.code(), Some(1), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(stderr.contains("error: 5 commands failed"), "{stderr}");
    assert!(stderr.contains("block 0: --page 2, but its 1 transaction fill 1 page"), "{stderr}");
    assert!(!stderr.contains("expected 64"), "the txid error is said once: {stderr}");
    assert!(live, "load status counted while the round ran: {stdout}");
    // After `load stop`, `load status` gives the final figures, its clock stopped.
    let took = |l: &str| l.split(" for ").nth(1).unwrap().split(' ').next().unwrap().to_string();
    let last = stdout.lines().find(|l| l.starts_with("no load is running; the last one stopped: ")).unwrap();
    assert_eq!(took(last), took(&finished), "{stdout}");
    // `help` lists `exit`; `help block` tells the command.
    assert!(stdout.contains("[alias: exit]"), "{stdout}");
    assert!(stdout.contains("--page <PAGE>"), "{stdout}");
    assert!(stderr.contains("unrecognized subcommand 'bogus'"), "{stderr}");
    assert!(stderr.contains("no load is running"), "{stderr}");
    assert!(stderr.contains("block \"nope\": give a height or a block hash"), "{stderr}");
    assert!(stderr.contains("tx \"00\": a txid is 64 lowercase hex digits"), "{stderr}");
    assert!(stdout.contains("role miner"), "{stdout}");
    assert!(stdout.contains("\"confirmed\":0"), "{stdout}");
    assert!(stdout.contains("load started: 40 tx/s for 2 s"), "{stdout}");
    assert!(stdout.contains("block 0 "), "{stdout}");
    assert!(stdout.contains("since start"), "mempool ran after the failures: {stdout}");
    assert_eq!(
        stdout.lines().filter(|l| l.starts_with("chain ")).count(),
        1,
        "nothing ran after quit: {stdout}"
    );
    let count = |what: &str| -> u64 {
        finished.split(&format!(" {what}")).next().unwrap().rsplit(' ').next().unwrap().parse().unwrap()
    };
    let offered = count("offered");
    assert!((78..=80).contains(&offered), "40 tx/s for 2 s: {finished}");
    assert_eq!(count("accepted"), offered, "{finished}");
    assert_eq!(count("refused"), 0, "{finished}");
    assert_eq!(count("confirmed"), offered, "{finished}");

    // The saved chain: the node's blocks, and `scalechain chain import` loads it.
    let text = std::fs::read_to_string(&json).unwrap();
    let (params, blocks) = scalechain_chain::export::parse_chain_json(&text).unwrap();
    assert_eq!(params.hash, HashKind::Sha256);
    let height = blocks.len() as u64;
    assert!(height >= 2);
    let last = blocks.last().unwrap().hash(params.hash).to_string();
    assert_eq!(node.block(BlockId::Height(height)).unwrap().hash.to_string(), last);
    let transfers: usize = blocks.iter().map(|b| b.txs.len() - 1).sum();
    assert!(transfers >= 4, "the load's transfers are in the saved chain ({transfers})");
    assert!(stdout.contains(&format!("saved {} blocks (heights 0 to {height}", height + 1)), "{stdout}");
    let import = Command::new(EXE)
        .args(["chain", "import", "--data-dir"])
        .arg(tmp.path().join("imported"))
        .arg(&json)
        .output()
        .unwrap();
    let imported = ok(&import);
    assert!(imported.contains(&format!("tip {last} at height {height}")), "{imported}");
    let dot_text = std::fs::read_to_string(&dot).unwrap();
    assert!(dot_text.starts_with("digraph scalechain {"), "{dot_text}");
    assert!(dot_text.contains("label=\"block 0 "), "{dot_text}");
    eprintln!("shell test: {:.1} s", t0.elapsed().as_secs_f64());
}

/// With no miner, nothing confirms: five sends in a row each spend the change of the one before
/// (the wallet's own unconfirmed change), and the balance counts them as pending.
#[test]
fn sends_in_a_row_spend_their_own_unconfirmed_change() {
    let tmp = tempfile::tempdir().unwrap();
    let mut net = Launcher::new(EXE).unwrap();
    let node = net.start(NodeSpec::new("node", Role::Peer)).unwrap();
    let (api, client) = (node.api_url(), node.blocking_client().unwrap());
    let (w, friend) = (tmp.path().join("w.json"), tmp.path().join("friend.json"));
    ok(&wallet(&api, Some("pw"), &["new", "--wallet", path(&w)]));
    let to = ok(&wallet(&api, Some("pw"), &["new", "--wallet", path(&friend)])).trim().to_string();
    let imported = ok(&wallet(&api, Some("pw"), &["import", "--devnet-key", "1001", "--wallet", path(&w)]));
    let pk = devnet_premine_key(SigMode::Ed25519, 1001).public();
    let lock = scalechain_types::Lock { scheme: pk.scheme(), pubkey_hash: pk.hash(HashKind::Sha256) };
    assert_eq!(imported.trim(), encode_address(&AddressHrp::devnet(), HashKind::Sha256, &lock));
    let mut txids = Vec::new();
    for i in 1..=5u64 {
        let o = wallet(
            &api,
            Some("pw"),
            &["send", "--wallet", path(&w), "--to", &to, "--amount", &(i * 1_000_000).to_string()],
        );
        txids.push(ok(&o).trim().to_string());
    }
    assert_eq!(client.tip().unwrap().height, 0, "no block: every send spent unconfirmed change");
    for id in &txids {
        let t = client.tx(&id.parse().unwrap()).unwrap();
        assert_eq!(t.status, TxState::Mempool, "{id}");
    }
    let friend_bal = balance(&api, "pw", &friend);
    assert_eq!(friend_bal["pending_in"], 15_000_000u64, "{friend_bal}");
    let mine = balance(&api, "pw", &w);
    assert_eq!(mine["confirmed"], 1_000_000_000u64, "{mine}");
    assert_eq!(mine["pending_out"], 1_000_000_000u64, "the premine coin is spent: {mine}");
    // What is left waits as the last send's change.
    let left = mine["pending_in"].as_u64().unwrap();
    assert!(left < 1_000_000_000 - 15_000_000 && left > 1_000_000_000 - 15_000_000 - 10_000, "{mine}");
}
