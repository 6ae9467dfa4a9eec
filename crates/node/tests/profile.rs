//! The function profiler of a running node (seed 001's): spans on the node's hot paths and one
//! per API operation, read with `GET /profile` (paged, bad parameters refused with a JSON 400),
//! switched with `POST /profile` (which needs the token when the node has one), written to
//! `DATA_DIR/profile.json` and merged back at the next start; a corrupt file is reported and
//! ignored. The profiler is per process, so this binary holds this one test.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use scalechain_client::types::{ProfileControl, ProfileJson};
use scalechain_client::{Client, ClientBuilder, ClientError};
use scalechain_p2p::msg::Role;
use serde_json::json;
use support::{eventually, get, height, start, stop, transfers};

fn find<'a>(doc: &'a ProfileJson, path: &str) -> Option<&'a scalechain_client::types::ProfilePath> {
    doc.paths.iter().find(|p| p.path == path)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_profiles_its_hot_paths_keeps_the_statistics_and_survives_a_corrupt_file() {
    let dir = tempfile::tempdir().unwrap();
    let with_profiler = |c: &mut scalechain_node::NodeConfig| {
        c.profile.enabled = true;
        c.miner.threads = 1;
        c.api.token = Some("secret".into());
    };
    let n = start(dir.path(), Role::Miner, &[], with_profiler).await;
    let client = ClientBuilder::new(n.api()).token("secret").build().unwrap();
    // Work for the hot paths: blocks, and transactions through the pipeline.
    assert!(eventually(Duration::from_secs(30), || async { height(&n).await >= 2 }).await);
    let txs: Vec<String> = transfers(0..20).into_iter().map(|(_, hex)| hex).collect();
    let r = reqwest::Client::new()
        .post(format!("{}/txs", n.api()))
        .bearer_auth("secret")
        .json(&json!({ "txs": txs }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    for _ in 0..120 {
        client.status().await.unwrap();
    }
    assert!(
        eventually(Duration::from_secs(20), || async {
            get(&n.api(), "/mempool").await["count"].as_u64() == Some(0)
        })
        .await,
        "the transfers were mined"
    );
    let doc = client.profile(None, None).await.unwrap();
    assert!(doc.enabled && doc.recorded_s > 0.0 && doc.restarts == 0, "{doc:?}");
    for path in [
        "api GET /status",
        "api POST /txs",
        "pipeline.wait",
        "pipeline.verify -> mempool.offer -> mempool.judge -> mempool.verify",
        "pipeline.verify -> mempool.offer -> mempool.lock",
        "block.accept -> chain.accept_block -> chain.activate_best",
        "miner.template",
        "protocol.tick",
    ] {
        assert!(
            find(&doc, path).is_some(),
            "{path} not in {:?}",
            doc.paths.iter().map(|p| &p.path).collect::<Vec<_>>()
        );
    }
    // The commit of a block is nested under its acceptance.
    assert!(doc.paths.iter().any(|p| p.path.starts_with("block.accept") && p.path.ends_with("store.commit")));
    let status = find(&doc, "api GET /status").unwrap();
    assert!(status.count >= 120 && status.log2.iter().sum::<u64>() == status.count);
    let c = status.centred.as_ref().expect("a path with 100 calls has seed 001's histogram");
    assert_eq!(c.buckets.len(), 100);
    let verify = find(&doc, "pipeline.verify").unwrap();
    assert!(verify.exclusive_ns < verify.total_ns, "nested spans are excluded: {verify:?}");

    // Paging: every path once, in order.
    let first = client.profile(None, Some(3)).await.unwrap();
    assert_eq!(first.paths.len(), 3);
    assert!(first.more);
    let next = client.profile(Some(&first.paths[2].path), Some(3)).await.unwrap();
    assert!(next.paths[0].path > first.paths[2].path);
    // Bad parameters and bodies: JSON 400s naming them; writes need the token.
    for (q, want) in [("?limit=x", "limit"), ("?limit=10001", "limit"), ("?page=1", "unknown parameter")] {
        let v = get(&n.api(), &format!("/profile{q}")).await;
        assert_eq!(v["error"], "bad-request", "{q}: {v}");
        assert!(v["message"].as_str().unwrap().contains(want), "{q}: {v}");
    }
    let post = |body: &'static str, token: Option<&'static str>| {
        let url = format!("{}/profile", n.api());
        async move {
            let mut r = reqwest::Client::new().post(url).body(body);
            if let Some(t) = token {
                r = r.bearer_auth(t);
            }
            let r = r.send().await.unwrap();
            (r.status().as_u16(), r.json::<serde_json::Value>().await.unwrap())
        }
    };
    assert_eq!(post(r#"{"enabled": false}"#, None).await.0, 401);
    let (status, v) = post(r#"{"enabled": "no"}"#, Some("secret")).await;
    assert_eq!((status, v["error"].as_str()), (400, Some("bad-request")), "{v}");
    let (status, v) = post(r#"{"reset": true, "extra": 1}"#, Some("secret")).await;
    assert_eq!(status, 400, "{v}");
    let off = client.profile_control(&ProfileControl { enabled: Some(false), reset: false }).await.unwrap();
    assert!(!off.enabled && off.paths >= doc.paths.len(), "{off:?}");
    let before = client.profile(None, None).await.unwrap();
    client.status().await.unwrap();
    let after = client.profile(None, None).await.unwrap();
    assert_eq!(
        find(&after, "api GET /status").unwrap().count,
        find(&before, "api GET /status").unwrap().count,
        "nothing is recorded while off"
    );

    // Restart: the statistics come back, counted as a restart.
    let kept = find(&after, "api GET /status").unwrap().count;
    let dir_path = stop(n).await;
    let file = dir_path.join("profile.json");
    assert!(file.exists());
    let n = start(&dir_path, Role::Miner, &[], with_profiler).await;
    let client = ClientBuilder::new(n.api()).token("secret").build().unwrap();
    let back = client.profile(None, None).await.unwrap();
    assert_eq!(back.restarts, 1);
    assert!(find(&back, "api GET /status").unwrap().count >= kept, "{back:?}");
    assert!(back.recorded_s >= after.recorded_s);

    // Reset: gone from memory and from the file.
    let r = client.profile_control(&ProfileControl { enabled: None, reset: true }).await.unwrap();
    assert!(r.enabled && r.recorded_s < 5.0);
    let dir_path = stop(n).await;
    let saved: ProfileJson = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert!(find(&saved, "api GET /status").is_none_or(|p| p.count < kept), "{saved:?}");

    // A corrupt file: reported, ignored, overwritten; the node starts.
    std::fs::write(&file, "{\"paths\": [").unwrap();
    let n = start(&dir_path, Role::Miner, &[], with_profiler).await;
    let client = Client::new(&n.api()).unwrap();
    let fresh = client.profile(None, None).await.unwrap();
    assert_eq!(fresh.restarts, 0);
    match client.profile_control(&ProfileControl::default()).await {
        Err(ClientError::Api { status: 401, .. }) => {}
        other => panic!("a write without the token: {other:?}"),
    }
    stop(n).await;
}
