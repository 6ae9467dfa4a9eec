//! Node processes for the multi-process tests: `scalechain node` on 127.0.0.1 with OS-chosen
//! ports, killed when dropped, its API address read from `node.json` (every wait bounded).
// Each test binary uses its own subset of these.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

/// A node process of a test, killed when dropped.
pub struct NodeProc {
    pub child: Child,
    pub dir: PathBuf,
}

impl Drop for NodeProc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `scalechain node --api 127.0.0.1:0 --data-dir DIR ARGS…`, its log in
/// `DIR/node-<test pid>.log`.
pub fn start_node(dir: &Path, args: &[&str]) -> NodeProc {
    let _ = std::fs::remove_file(dir.join("node.json"));
    std::fs::create_dir_all(dir).unwrap();
    let log = std::fs::File::create(dir.join(format!("node-{}.log", std::process::id()))).unwrap();
    let child = Command::new(EXE)
        .args(["node", "--api", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    NodeProc { child, dir: dir.to_path_buf() }
}

/// The `node.json` this process wrote once up (waits at most 30 s).
pub fn info(n: &NodeProc) -> serde_json::Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(t) = std::fs::read_to_string(n.dir.join("node.json")) {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(&t) {
                if v["pid"].as_u64() == Some(u64::from(n.child.id())) {
                    return v;
                }
            }
        }
        assert!(Instant::now() < deadline, "node in {} did not start", n.dir.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The node's API address (`host:port`).
pub fn api_of(n: &NodeProc) -> String {
    info(n)["api"].as_str().unwrap().to_string()
}

/// Polls `f` every 200 ms until it holds; fails the test naming `what` past `deadline`.
pub fn wait_until(what: &str, deadline: Instant, mut f: impl FnMut() -> bool) {
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// [`wait_until`] with a deadline `timeout` from now.
pub fn wait_for(what: &str, timeout: Duration, f: impl FnMut() -> bool) {
    wait_until(what, Instant::now() + timeout, f)
}
