//! A crowd of slow API clients: with the process's soft open-file limit at 1,024 (a common
//! default), a node raises it to the hard limit at start, and `/status` still answers a client
//! that arrives while 1,100 — and, where the hard limit allows, 10,000 — connections from many
//! loopback addresses (127.0.0.2 onwards) hold the API without ever finishing a request head.
//!
//! The slow clients live in a second process (this test binary again, running [`holder`]), so
//! each process has its own descriptors. The header time-out is set far past the test: an
//! answer is never one that waited for slow clients to be closed. The latencies are printed
//! (`--nocapture`); the test asserts only that `/status` answers within a bound the old node
//! (which served at most half the soft limit and queued the rest) could not meet.
#![allow(clippy::unwrap_used)]

mod support;

use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
use scalechain_p2p::msg::Role;
use support::{get, start, stop};

/// Where the holder connects and how many connections it holds.
const HOLD_ENV: &str = "SCALECHAIN_TEST_HOLD";

/// The soft limit the node starts under.
const SOFT: u64 = 1_024;

/// Far longer than the test.
const HEADER_TIMEOUT_S: u64 = 600;

/// Not a test of its own: run by [`slow_clients_by_the_thousand_do_not_keep_status_waiting`]
/// as a second process (with `HOLD_ENV` set to `ADDR N`), it opens `N` connections to the API
/// at `ADDR` from 127.0.0.2 onwards, sends each the start of a request head, prints how many it
/// holds and keeps them until its standard input closes.
#[test]
fn holder() {
    let Ok(spec) = std::env::var(HOLD_ENV) else { return };
    let (addr, n) = spec.split_once(' ').unwrap();
    let (addr, n): (SocketAddr, usize) = (addr.parse().unwrap(), n.parse().unwrap());
    let l = getrlimit(Resource::Nofile);
    let _ = setrlimit(Resource::Nofile, Rlimit { current: l.maximum, maximum: l.maximum });
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let held = rt.block_on(async move {
        use tokio::io::AsyncWriteExt;
        let mut held = Vec::with_capacity(n);
        for i in 0..n {
            // 127.0.0.2 to 127.0.0.251, in turn.
            let from = std::net::Ipv4Addr::new(127, 0, 0, 2 + (i % 250) as u8);
            let sock = tokio::net::TcpSocket::new_v4().unwrap();
            sock.bind(SocketAddr::from((from, 0))).unwrap();
            let Ok(mut s) = sock.connect(addr).await else { break };
            if s.write_all(b"GET /status HTTP/1.1\r\nHost: node\r\n").await.is_err() {
                break;
            }
            held.push(s);
        }
        held
    });
    println!("\nheld {}", held.len());
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    drop(held);
}

/// Starts the holder for `n` connections to `api`; returns it once it holds them, with how
/// many it holds.
fn hold(api: SocketAddr, n: usize) -> (Child, usize) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "holder", "--nocapture", "--test-threads", "1"])
        .env(HOLD_ENV, format!("{api} {n}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = BufReader::new(child.stdout.take().unwrap());
    let held = out
        .lines()
        .map_while(Result::ok)
        // The test harness may print its own words before it on the line.
        .find_map(|l| l.split("held ").nth(1).map(|n| n.trim().parse::<usize>().unwrap()))
        .expect("the holder reports what it holds");
    (child, held)
}

/// This process's resident memory, KiB (0 where `/proc` does not say).
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// `/status` from a new client: how long it took, or `None` without an answer within `within`.
async fn status_latency(base: &str, within: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    let v = tokio::time::timeout(within, get(base, "/status")).await.ok()?;
    assert!(v["height"].is_u64());
    Some(t0.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_clients_by_the_thousand_do_not_keep_status_waiting() {
    let hard = getrlimit(Resource::Nofile).maximum;
    setrlimit(Resource::Nofile, Rlimit { current: Some(SOFT), maximum: hard }).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |c| c.api.header_timeout_s = HEADER_TIMEOUT_S).await;
    let soft = getrlimit(Resource::Nofile).current;
    if hard.is_none_or(|h| h > SOFT) {
        assert!(soft.is_none_or(|s| s > SOFT), "the node did not raise the soft limit {soft:?}");
    }
    let api: SocketAddr = n.info.api.clone().unwrap().parse().unwrap();
    // The node's end of each connection is one descriptor: the crowds that fit under the hard
    // limit, with room for the rest of the process.
    for crowd in [1_100usize, 10_000] {
        if hard.is_some_and(|h| h < crowd as u64 + 2_048) {
            eprintln!("skipped {crowd} slow clients: the hard open-file limit is {hard:?}");
            continue;
        }
        let rss_before = rss_kib();
        let (mut holder, held) = tokio::time::timeout(
            Duration::from_secs(120),
            tokio::task::spawn_blocking(move || hold(api, crowd)),
        )
        .await
        .expect("the holder opens its connections in time")
        .unwrap();
        assert_eq!(held, crowd, "the holder could not open its connections");
        // Well within the header time-out: the answer did not wait for slow clients to go.
        let bound = Duration::from_secs(30);
        let mut took = Vec::new();
        for _ in 0..5 {
            took.push(status_latency(&n.api(), bound).await);
        }
        let rss_held = rss_kib();
        drop(holder.stdin.take());
        let _ = holder.wait();
        eprintln!(
            "/status with {crowd} slow clients held: {took:?}; this process's resident memory grew by \
             {} KiB",
            rss_held.saturating_sub(rss_before)
        );
        assert!(took.iter().all(Option::is_some), "/status unanswered with {crowd} slow clients: {took:?}");
    }
    stop(n).await;
}
