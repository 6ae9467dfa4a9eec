//! Ctrl-C while the launcher waits (its own test binary: the signal flag is process-wide): the
//! wait ends with `Interrupted`, and dropping the launcher stops the node it had started.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use scalechain_lab::interrupt;
use scalechain_lab::launcher::{signal_pid, LaunchError, Launcher, NodeSpec, Role, Sig};

#[test]
fn sigint_ends_the_wait_and_the_launcher_stops_its_processes() {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let exe = bin.path().join("hang");
    std::fs::write(&exe, "#!/bin/sh\nexec sleep 1000\n").unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut net = Launcher::new(&exe).unwrap().start_timeout(Duration::from_secs(20));
    assert!(!interrupt::requested());
    net.spawn(NodeSpec::new("n", Role::Peer)).unwrap();
    let pid = net.pids()[0].1;
    let me = std::process::id();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        signal_pid(me, Sig::Int).unwrap();
    });
    let t = Instant::now();
    assert!(matches!(net.wait_up(), Err(LaunchError::Interrupted)));
    assert!(t.elapsed() < Duration::from_secs(10), "ended by the signal, not the time-out");
    assert!(interrupt::requested());
    assert!(matches!(
        scalechain_lab::launcher::wait_until("anything", Duration::from_secs(5), || false),
        Err(LaunchError::Interrupted)
    ));
    drop(net);
    assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists(), "the node is stopped");
}
