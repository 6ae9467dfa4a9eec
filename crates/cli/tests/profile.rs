//! `scalechain profile` against a miner process on 127.0.0.1 (OS-chosen ports, every wait
//! bounded): the profiler off by default, turned on over the API, then the profile printed in
//! seed 001's shape (statistics table and centred histograms) and as JSON; a node it cannot
//! reach is exit code 2.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};
use std::time::Duration;

use scalechain_lab::launcher::{wait_until, Launcher, NodeSpec, Role};

const EXE: &str = env!("CARGO_BIN_EXE_scalechain");

fn profile(api: &str, args: &[&str]) -> Output {
    Command::new(EXE).arg("profile").args(["--api", api]).args(args).output().unwrap()
}

fn ok(o: &Output) -> String {
    assert!(o.status.success(), "failed ({:?}): {}", o.status.code(), String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn the_profile_command_switches_the_profiler_and_prints_seed_001s_tables() {
    let mut net = Launcher::new(EXE).unwrap();
    let node = net.start(NodeSpec::new("miner", Role::Miner)).unwrap();
    let (api, client) = (node.api_url(), node.blocking_client().unwrap());
    let off = ok(&profile(&api, &[]));
    assert!(off.contains("Profiling off") && off.contains("No call path recorded"), "{off}");
    assert!(ok(&profile(&api, &["--enable"])).starts_with("profiler recording"));
    for _ in 0..110 {
        client.status().unwrap();
    }
    wait_until("a block with the profiler on", Duration::from_secs(30), || {
        client.profile(None, None).unwrap().paths.iter().any(|p| p.path.starts_with("block.accept"))
    })
    .unwrap();
    let tables = ok(&profile(&api, &[]));
    assert!(tables.starts_with("Profiling recording over"), "{tables}");
    assert!(tables.contains("# calls") && tables.contains("avg excl. µs"), "{tables}");
    assert!(tables.contains("api GET /status (") && tables.contains("centred on"), "{tables}");
    let json: serde_json::Value = serde_json::from_str(&ok(&profile(&api, &["--json"]))).unwrap();
    assert!(json["paths"].as_array().unwrap().iter().any(|p| p["path"] == "api GET /status"), "{json}");
    assert!(ok(&profile(&api, &["--disable", "--reset"])).starts_with("profiler off: 0 call paths"));
    let gone = profile("http://127.0.0.1:1", &[]);
    assert_eq!(gone.status.code(), Some(2), "{}", String::from_utf8_lossy(&gone.stderr));
}
