//! The README's wallet section, run as written against `scalechain devnet --stay`: the block of
//! commands is read from README.md and run by `bash -e` with this build's `scalechain` first on
//! the PATH, its `export SCALECHAIN_API=…` line replaced by the one the devnet printed (the only
//! change). Then: the friend's wallet receives both payments, the restored wallet lists the
//! same keys as the original, and the imported premine key is not the receiving address.
//! Bounded: a small load, every wait with a deadline, the devnet stopped with SIGINT (killed if
//! it does not stop).
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use scalechain_client::blocking::Client;

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

/// The first ```sh block after the `### Wallet` heading of README.md.
fn wallet_block() -> String {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let section = &readme[readme.find("\n### Wallet\n").expect("README has a Wallet section")..];
    let start = section.find("```sh\n").expect("the Wallet section has a sh block") + "```sh\n".len();
    let len = section[start..].find("```").unwrap();
    section[start..start + len].to_string()
}

/// Stops the devnet when dropped: SIGINT, then a kill after 60 s.
struct Devnet(Child);

impl Drop for Devnet {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-INT", &self.0.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.0.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_readme_wallet_section_runs_as_written_against_a_devnet() {
    let block = wallet_block();
    let export =
        block.lines().find(|l| l.starts_with("export SCALECHAIN_API=")).expect("the block selects an API");
    assert!(block.contains("import --devnet-key"), "funding is one step:\n{block}");

    let tmp = tempfile::tempdir().unwrap();
    let mut child = Command::new(EXE)
        .args([
            "devnet",
            "--stay",
            "--nodes",
            "1",
            "--tps",
            "20",
            "--duration",
            "2",
            "--converge-timeout",
            "30",
        ])
        .args(["--data-dir", tmp.path().join("devnet").to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let devnet = Devnet(child);
    let (tx, rx) = mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The devnet prints the export line when its nodes are up, and again when it stays up.
    let deadline = Instant::now() + Duration::from_secs(240);
    let (mut printed, mut log) = (None::<String>, String::new());
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "the devnet did not stay up:\n{log}");
        let Ok(line) = rx.recv_timeout(left) else { panic!("the devnet ended:\n{log}") };
        log.push_str(&line);
        log.push('\n');
        if line.starts_with("export SCALECHAIN_API=http://") {
            printed = Some(line.clone());
        }
        if line.contains("the network stays up") {
            break;
        }
    }
    let printed = printed.unwrap_or_else(|| panic!("no export line:\n{log}"));
    let api = printed.trim_start_matches("export SCALECHAIN_API=").to_string();
    assert!(log.contains("scalechain wallet import --devnet-key 1000"), "{log}");

    // The block, as written, but for the API line.
    let script = format!("set -euo pipefail\n{}", block.replacen(export, &printed, 1));
    let bin = Path::new(EXE).parent().unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let work = tmp.path().join("user");
    std::fs::create_dir(&work).unwrap();
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(&work)
        .env("PATH", path)
        .env_remove("SCALECHAIN_API")
        .env_remove("SCALECHAIN_PASSPHRASE")
        .output()
        .unwrap();
    let (so, se) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "the README block failed ({:?}):\nstdout:\n{so}\nstderr:\n{se}",
        out.status
    );

    // What the block did: both payments reach the friend (confirmed within a bounded wait),
    // the restore holds the same keys, and the receiving address is not the imported key.
    let wallet = |args: &[&str]| {
        let o = Command::new(EXE)
            .arg("wallet")
            .args(args)
            .current_dir(&work)
            .env("SCALECHAIN_API", &api)
            .env("SCALECHAIN_PASSPHRASE", "correct horse battery staple")
            .output()
            .unwrap();
        assert!(o.status.success(), "wallet {args:?}: {}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout).unwrap()
    };
    let node = Client::new(&api).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let b: serde_json::Value =
            serde_json::from_str(wallet(&["balance", "--json", "--wallet", "friend.json"]).trim()).unwrap();
        if b["confirmed"] == 12_000_000u64 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the friend's payments were not confirmed: {b} (tip {:?})",
            node.tip().map(|t| t.height)
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    assert_eq!(wallet(&["list"]), wallet(&["list", "--wallet", "restored.json"]));
    let listed: serde_json::Value = serde_json::from_str(wallet(&["list", "--json"]).trim()).unwrap();
    let receiving = wallet(&["address"]);
    assert_eq!(listed["keys"][0]["address"], receiving.trim(), "{listed}");
    assert_eq!(listed["keys"][1]["origin"], "imported", "{listed}");
    assert_ne!(listed["keys"][1]["address"], receiving.trim(), "{listed}");
    drop(devnet);
}
