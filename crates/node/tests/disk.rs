//! A full disk: a miner whose data directory is a small tmpfs (mounted by the test; root only,
//! skipped with a message elsewhere) stops taking blocks and transactions when the free space
//! falls under `store.min_free_bytes`, and goes on by itself once space is freed; when a write
//! fails for want of space it stops the same way, says so in `/status`, and after space is
//! freed and it restarts it goes on from its tip, with every block it had confirmed and a
//! store that verifies from genesis.
//!
//! The test waits on states and heights; its bounds only keep a broken node from hanging it.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use scalechain_chain::{Chain, DiskStore};
use scalechain_consensus::{Apps, VerifyConfig};
use scalechain_p2p::msg::Role;
use support::{eventually, get, height, start, stop, transfers, Node};

/// Only a broken node takes this long.
const GENEROUS: Duration = Duration::from_secs(60);

/// A tmpfs of `bytes` mounted on a fresh directory, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(bytes: u64) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={bytes}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// Free bytes on the filesystem of `dir`.
fn free(dir: &Path) -> u64 {
    let s = rustix::fs::statvfs(dir).unwrap();
    s.f_bavail * s.f_frsize
}

/// Writes a file of up to `bytes` in `dir` (stopping quietly when the filesystem is full).
fn fill(dir: &Path, bytes: u64) -> PathBuf {
    let path = dir.join("filler");
    let mut f = std::fs::File::create(&path).unwrap();
    let chunk = vec![0xa5u8; 64 << 10];
    let mut left = bytes;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        match f.write(&chunk[..n]) {
            Ok(0) | Err(_) => break,
            Ok(w) => left -= w as u64,
        }
    }
    let _ = f.sync_all();
    path
}

/// `/status`'s `storage.state`.
async fn storage_state(n: &Node) -> String {
    get(&n.api(), "/status").await["storage"]["state"].as_str().unwrap().to_string()
}

/// `POST /txs` of one transfer: the HTTP status and the error code.
async fn submit(n: &Node, i: u32) -> (u16, String) {
    let (_, hex) = transfers(i..i + 1).pop().unwrap();
    let r = reqwest::Client::new()
        .post(format!("{}/txs", n.api()))
        .json(&serde_json::json!({ "txs": [hex] }))
        .send()
        .await
        .unwrap();
    let status = r.status().as_u16();
    let v: serde_json::Value = r.json().await.unwrap();
    (status, v["error"].as_str().unwrap_or_default().to_string())
}

/// The main-chain block hash at `height`, from the API.
async fn hash_at(n: &Node, height: u64) -> String {
    get(&n.api(), &format!("/blocks/{height}")).await["hash"].as_str().unwrap().to_string()
}

/// The tip's height and hash, from `/status`.
async fn tip(n: &Node) -> (u64, String) {
    let s = get(&n.api(), "/status").await;
    (s["height"].as_u64().unwrap(), s["tip"].as_str().unwrap().to_string())
}

/// True if the height stays at `h` for a while (a few block intervals).
async fn stays(n: &Node, h: u64) -> bool {
    for _ in 0..8 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        if height(n).await != h {
            return false;
        }
    }
    true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_stops_the_node_without_losing_a_block_and_a_restart_goes_on() {
    if !rustix::process::geteuid().is_root() {
        eprintln!("skipped: mounting a small tmpfs for the data directory needs root");
        return;
    }
    let Some(fs) = Tmpfs::mount(24 << 20) else {
        eprintln!("skipped: mounting a tmpfs failed");
        return;
    };
    let data = fs.path().join("node");
    let miner = |margin: u64| {
        move |c: &mut scalechain_node::NodeConfig| {
            c.chain.target_block_ms = 50;
            c.store.min_free_bytes = margin;
            c.store.memtable_bytes = 1 << 20;
        }
    };

    // Low space: under the margin the node halts, and goes on by itself once space is freed.
    let margin = 4 << 20;
    let n = start(&data, Role::Miner, &[], miner(margin)).await;
    assert!(eventually(GENEROUS, || async { height(&n).await >= 3 }).await, "mining");
    let filler = fill(fs.path(), free(fs.path()).saturating_sub(margin / 2));
    assert!(eventually(GENEROUS, || async { storage_state(&n).await == "low" }).await);
    let h = height(&n).await;
    assert!(stays(&n, h).await, "blocks were taken under the margin");
    assert_eq!(submit(&n, 0).await, (503, "storage".to_string()));
    std::fs::remove_file(&filler).unwrap();
    assert!(eventually(GENEROUS, || async { storage_state(&n).await == "ok" }).await);
    assert!(eventually(GENEROUS, || async { height(&n).await > h }).await, "mining again");
    let data = stop(n).await;

    // No margin: the disk fills until a store write fails.
    let n = start(&data, Role::Miner, &[], miner(0)).await;
    let before = height(&n).await;
    assert!(eventually(GENEROUS, || async { height(&n).await > before }).await, "mining");
    let filler = fill(fs.path(), u64::MAX);
    assert!(
        eventually(GENEROUS, || async { storage_state(&n).await == "full" }).await,
        "the store never failed for want of space: {}",
        get(&n.api(), "/status").await["storage"]
    );
    let status = get(&n.api(), "/status").await;
    assert!(status["storage"]["error"].as_str().is_some_and(|e| !e.is_empty()));
    let (confirmed, confirmed_tip) = tip(&n).await;
    eprintln!("full at height {confirmed}: {}", status["storage"]);
    assert!(stays(&n, confirmed).await, "blocks were taken on a full disk");
    assert_eq!(submit(&n, 1).await, (503, "storage".to_string()));
    let data = stop(n).await;

    // Space freed, restarted: the same tip, then on from it.
    std::fs::remove_file(&filler).unwrap();
    let n = start(&data, Role::Miner, &[], miner(0)).await;
    assert!(height(&n).await >= confirmed, "confirmed blocks were lost");
    assert_eq!(hash_at(&n, confirmed).await, confirmed_tip);
    assert_eq!(storage_state(&n).await, "ok");
    assert!(eventually(GENEROUS, || async { height(&n).await > confirmed + 2 }).await, "mining again");
    let (code, _) = submit(&n, 2).await;
    assert_eq!(code, 200);
    let data = stop(n).await;

    // The store verifies from genesis (what `scalechain chain verify` runs).
    let store = DiskStore::open(&data.join("chain")).unwrap();
    let chain = Chain::open(store, Apps::none(), VerifyConfig::parallel([7; 32])).unwrap();
    let report = chain.verify_all(u64::MAX / 2, |_, _| {}).unwrap();
    assert!(chain.tip_height() > confirmed, "{report:?}");
    eprintln!("restarted from {confirmed}, verified to {}: {report:?}", chain.tip_height());
}
