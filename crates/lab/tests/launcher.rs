//! The launcher's process handling, with a stand-in for `scalechain node` (a shell script that
//! writes `node.json` like a node, or fails, hangs or ignores SIGTERM, as its environment
//! says): start, restart on the same data directory, stop, no process left behind, the
//! temporary directory removed and a given one kept, a failing node reported with its log,
//! the placement hook, configuration files and extra processes. The real binary's launches are
//! tested in `crates/cli/tests/launcher.rs`.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use scalechain_lab::launcher::{LaunchError, Launcher, NodeSpec, Place, Role};

const FAKE: &str = r#"#!/bin/sh
# A stand-in for `scalechain node`: FAKE_MODE=up (default), fail, hang or stubborn.
dir=""
for a in "$@"; do
  if [ "$prev" = "--data-dir" ]; then dir="$a"; fi
  prev="$a"
done
echo "fake node $$ starting: $* tag=${FAKE_TAG:-none}" >&2
case "${FAKE_MODE:-up}" in
  fail) echo "error: cannot open the store in $dir" >&2; exit 2 ;;
  hang) exec sleep 1000 ;;
  stubborn) trap 'echo ignoring TERM >&2' TERM ;;
esac
printf '{"peer_id":"p%s","p2p":["/ip4/127.0.0.1/tcp/1/p2p/p%s"],"api":"127.0.0.1:1","role":"peer","pid":%s}' $$ $$ $$ > "$dir/node.json.tmp"
mv "$dir/node.json.tmp" "$dir/node.json"
while :; do sleep 0.05; done
"#;

/// The stand-in, written into `dir` and made executable.
fn fake(dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("fake-node");
    std::fs::write(&p, FAKE).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// Is `pid` a live (not reaped, not zombie) process?
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => s.rsplit(')').next().and_then(|r| r.split_whitespace().next()) != Some("Z"),
        Err(_) => false,
    }
}

#[test]
fn nodes_start_restart_and_stop_leaving_no_process_and_no_temporary_directory() {
    let bin = tempfile::tempdir().unwrap();
    let exe = fake(bin.path());
    let mut net = Launcher::new(&exe).unwrap();
    let base = net.base_dir().to_path_buf();
    assert!(base.is_dir());
    let a = net.start(NodeSpec::new("a", Role::Bootstrap)).unwrap().clone();
    assert_eq!((a.name(), a.role(), a.data_dir()), ("a", Role::Bootstrap, base.join("a").as_path()));
    assert_eq!(a.info().pid, a.pid());
    assert_eq!(a.p2p_addr(), format!("/ip4/127.0.0.1/tcp/1/p2p/p{}", a.pid()));
    assert_eq!((a.api_addr(), a.api_url()), ("127.0.0.1:1", "http://127.0.0.1:1".to_string()));
    net.spawn(
        NodeSpec::new("b", Role::Peer).bootstrap(a.p2p_addr()).config("role = \"peer\"\n").arg("--reindex"),
    )
    .unwrap();
    net.wait_up().unwrap();
    let b = net.node("b").unwrap().clone();
    assert_eq!(net.nodes().map(|n| n.name()).collect::<Vec<_>>(), ["a", "b"]);
    // The command line: the launcher's flags, the bootstrap address, the config file, the extra
    // arguments; and the node's output in its log.
    let log = std::fs::read_to_string(b.log_path()).unwrap();
    let want = format!(
        "node --role peer --data-dir {} --api 127.0.0.1:0 --listen /ip4/127.0.0.1/tcp/0 --bootstrap {} --config {} --reindex",
        b.data_dir().display(),
        a.p2p_addr(),
        b.data_dir().join("node.toml").display()
    );
    assert!(log.contains(&want), "{log}");
    assert_eq!(std::fs::read_to_string(b.data_dir().join("node.toml")).unwrap(), "role = \"peer\"\n");
    assert!(b.log_tail(1).starts_with(&format!("fake node {} starting", b.pid())), "{}", b.log_tail(5));

    // Restart on the same data directory: a new process, the same directory, the log appended.
    let again = net.restart_node("b").unwrap().clone();
    assert_ne!(again.pid(), b.pid());
    assert_eq!(again.data_dir(), b.data_dir());
    assert!(!alive(b.pid()), "the old process is gone");
    assert_eq!(std::fs::read_to_string(again.log_path()).unwrap().matches("=== launcher:").count(), 2);
    // Stop one, then start it again later.
    let stopped = net.stop_node("b").unwrap().unwrap();
    assert!(!stopped.killed && !stopped.status.success(), "ended by SIGTERM");
    assert!(!alive(again.pid()));
    assert!(matches!(net.node("b"), Err(LaunchError::Unknown(_))), "a stopped node is not up");
    assert_eq!(net.pids().len(), 1);
    let third = net.restart_node("b").unwrap().pid();
    assert!(matches!(net.spawn(NodeSpec::new("b", Role::Peer)), Err(LaunchError::Duplicate(_))));
    assert!(matches!(net.spawn(NodeSpec::new("../x", Role::Peer)), Err(LaunchError::BadName(_))));

    net.stop().unwrap();
    for pid in [a.pid(), third] {
        assert!(!alive(pid), "process {pid} left behind");
    }
    assert!(!base.exists(), "the temporary base directory is removed");
}

#[test]
fn dropping_the_launcher_stops_everything_and_keeps_a_given_base() {
    let bin = tempfile::tempdir().unwrap();
    let exe = fake(bin.path());
    let given = bin.path().join("net");
    let pids: Vec<u32> = {
        let mut net = Launcher::with_base(&exe, &given).unwrap();
        net.start(NodeSpec::new("n0", Role::Miner)).unwrap();
        let extra = net.spawn_process("helper", "sleep", ["100"]).unwrap();
        let pids: Vec<u32> = net.pids().into_iter().map(|(_, p)| p).collect();
        assert_eq!(pids.len(), 2);
        assert!(pids.contains(&extra) && alive(extra));
        pids
    };
    for pid in pids {
        assert!(!alive(pid), "process {pid} left behind");
    }
    assert!(given.join("n0/node.json").exists(), "a given base directory is kept");
    assert!(given.join("helper.log").exists());
}

#[test]
fn a_kept_temporary_base_outlives_the_launcher() {
    let bin = tempfile::tempdir().unwrap();
    let exe = fake(bin.path());
    let mut net = Launcher::new(&exe).unwrap();
    net.start(NodeSpec::new("n0", Role::Miner)).unwrap();
    let kept = net.keep();
    assert_eq!(kept, net.base_dir());
    assert_eq!(net.keep(), kept, "keeping twice keeps the same directory");
    let pid = net.pids()[0].1;
    net.stop().unwrap();
    assert!(!alive(pid), "process {pid} left behind");
    assert!(kept.join("n0/node.json").exists(), "a kept base directory outlives the launcher");
    std::fs::remove_dir_all(&kept).unwrap();
}

#[test]
fn a_node_that_fails_or_hangs_is_reported_with_its_log() {
    let bin = tempfile::tempdir().unwrap();
    let exe = fake(bin.path());
    let mut net = Launcher::new(&exe).unwrap().start_timeout(Duration::from_millis(600));
    let e = net.start(NodeSpec::new("bad", Role::Peer).env("FAKE_MODE", "fail")).unwrap_err();
    match &e {
        LaunchError::Exited { name, status, log, tail } => {
            assert_eq!(name, "bad");
            assert_eq!(status.code(), Some(2));
            assert!(log.ends_with("bad/node.log"), "{}", log.display());
            assert!(tail.contains("error: cannot open the store"), "{tail}");
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("bad exited (exit status: 2) before it was up; its log"), "{e}");
    let e = net.start(NodeSpec::new("slow", Role::Peer).env("FAKE_MODE", "hang")).unwrap_err();
    assert!(matches!(&e, LaunchError::NotUp { name, .. } if name == "slow"), "{e}");
    assert!(e.to_string().contains("fake node"), "the log's end is quoted: {e}");
    let slow = net.pids().into_iter().find(|(n, _)| n == "slow").unwrap().1;
    net.stop().unwrap();
    assert!(!alive(slow));
}

#[test]
fn a_node_ignoring_sigterm_is_killed_after_the_stop_timeout() {
    let bin = tempfile::tempdir().unwrap();
    let exe = fake(bin.path());
    let mut net = Launcher::new(&exe).unwrap().stop_timeout(Duration::from_millis(300));
    let pid = net.start(NodeSpec::new("stubborn", Role::Peer).env("FAKE_MODE", "stubborn")).unwrap().pid();
    let t = std::time::Instant::now();
    let stopped = net.stop_node("stubborn").unwrap().unwrap();
    assert!(stopped.killed, "SIGKILL after the time-out");
    assert!(t.elapsed() < Duration::from_secs(3));
    assert!(!alive(pid));
}

#[test]
fn the_placement_chooses_addresses_and_wraps_the_command_line() {
    let bin = tempfile::tempdir().unwrap();
    let exe = fake(bin.path());
    let mut net = Launcher::new(&exe).unwrap().placement(|name: &str, role: Role| Place {
        listen: format!("/ip4/10.0.0.1/tcp/{}", if role == Role::Bootstrap { 7000 } else { 7001 }),
        api: "10.0.0.1:8645".into(),
        // `env` executes the node in its own process, as `ip netns exec` does.
        wrap: vec!["env".into(), format!("FAKE_TAG=placed-{name}").into()],
    });
    let n = net.start(NodeSpec::new("p", Role::Peer)).unwrap();
    let log = std::fs::read_to_string(n.log_path()).unwrap();
    assert!(log.contains("=== launcher: env FAKE_TAG=placed-p "), "{log}");
    assert!(log.contains("--api 10.0.0.1:8645 --listen /ip4/10.0.0.1/tcp/7001"), "{log}");
    assert!(log.contains("tag=placed-p"), "{log}");
}

#[test]
fn wait_until_names_what_it_waited_for() {
    let mut n = 0;
    scalechain_lab::launcher::wait_until("three calls", Duration::from_secs(5), || {
        n += 1;
        n == 3
    })
    .unwrap();
    let e = scalechain_lab::launcher::wait_until("never", Duration::from_millis(150), || false).unwrap_err();
    assert_eq!(e.to_string(), "timed out after 150ms waiting for never");
}
