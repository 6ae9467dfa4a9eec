//! The web explorer's pages against a running miner, on the server side: each page renders with
//! the explorer's headers, values from the chain are escaped, links lead where they say,
//! pagination and bad paths give the explorer's own 400 and 404 pages (HTML, never a 500), the
//! search finds each kind of key, the live stream sends, the voting booth, its module and the
//! bulletin board answer as the other pages do, and the explorer can be turned off.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::Duration;

use scalechain_p2p::msg::Role;
use support::{eventually, get, post, start, stop, transfers_with};

/// `GET base+path` without following redirects: status, headers, body.
async fn page(base: &str, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let client = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let r = client.get(format!("{base}{path}")).send().await.unwrap();
    let (status, headers) = (r.status().as_u16(), r.headers().clone());
    (status, headers, r.text().await.unwrap())
}

/// An HTML page of the explorer, with its headers checked.
async fn html(base: &str, path: &str, status: u16) -> String {
    let (s, h, body) = page(base, path).await;
    assert_eq!(s, status, "{path}: {body}");
    assert!(h["content-type"].to_str().unwrap().starts_with("text/html"), "{path}");
    let csp = h["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{path}: {csp}");
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert!(body.starts_with("<!doctype html>"), "{path}");
    assert!(!body.contains("<script>") && !body.contains("<script >"), "{path}: no inline script");
    body
}

/// Where a search leads (its redirect's target).
async fn search(base: &str, q: &str) -> String {
    let (s, h, body) = page(base, &format!("/explorer/search?q={q}")).await;
    assert_eq!(s, 303, "search {q}: {body}");
    h["location"].to_str().unwrap().to_string()
}

const EVIL: &str = "<script>alert('chain data')</script> & \"quotes\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_page_renders_escapes_links_and_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let m = start(dir.path(), Role::Miner, &[], |_| {}).await;
    let base = m.api();

    // A transaction whose data is markup, confirmed.
    let (txid, hex) = transfers_with(0..1, EVIL.as_bytes()).pop().unwrap();
    let r = post(&base, "/txs", serde_json::json!({ "txs": [hex] })).await;
    assert_eq!(r["accepted"], 1, "{r}");
    assert!(
        eventually(Duration::from_secs(60), || async {
            get(&base, &format!("/txs/{txid}")).await["status"] == "confirmed"
        })
        .await
    );
    let height = get(&base, &format!("/txs/{txid}")).await["height"].as_u64().unwrap();

    // Overview.
    let body = html(&base, "/explorer", 200).await;
    assert!(body.contains("Recent blocks") && body.contains("data-live=\"/explorer/live\""));
    // Block 1 has no interval (genesis has a fixed time): a dash, as the live rows show it.
    let row1 = body.split("<tr data-height=\"1\">").nth(1).and_then(|r| r.split("</tr>").next()).unwrap();
    assert!(row1.ends_with("<td class=\"num\">—</td>"), "{row1}");
    let (s, h, _) = page(&base, "/").await;
    assert_eq!((s, h["location"].to_str().unwrap()), (303, "/explorer"), "/ leads to the explorer");

    // The transaction: escaped data, status, block link, fee, the input's address.
    let body = html(&base, &format!("/explorer/tx/{txid}"), 200).await;
    assert!(!body.contains(EVIL) && !body.contains("<script>alert"), "chain data is escaped");
    assert!(
        body.contains("&#60;script&#62;alert(&#39;chain data&#39;)&#60;/script&#62; &#38; &#34;quotes&#34;"),
        "{body}"
    );
    assert!(body.contains(&format!("confirmed at height {height}")));
    assert!(
        body.contains(&format!(
            "href=\"/explorer/block/{}\"",
            get(&base, &format!("/blocks/{height}")).await["hash"].as_str().unwrap()
        )),
        "a block link"
    );
    assert!(body.contains("title=\"2000 base units\">0.00002&nbsp;SC"), "the fee: {body}");
    let address =
        body.split("href=\"/explorer/address/").nth(1).and_then(|s| s.split('"').next()).unwrap().to_string();
    assert!(address.starts_with("scdev1"), "{address}");
    assert!(body.contains("unspent"), "its output is unspent");

    // Its block, by height and by hash; the block lists it.
    let body = html(&base, &format!("/explorer/block/{height}"), 200).await;
    assert!(body.contains(&format!("/explorer/tx/{txid}")));
    assert!(body.contains("main chain"));
    let hash = get(&base, &format!("/blocks/{height}")).await["hash"].as_str().unwrap().to_string();
    let by_hash = html(&base, &format!("/explorer/block/{hash}"), 200).await;
    assert!(by_hash.contains(&format!("/explorer/tx/{txid}")));
    // Pagination bounds: page 0 is the first, a page past the end is the explorer's 404, a
    // word is its 400.
    html(&base, &format!("/explorer/block/{height}?page=0"), 200).await;
    let body = html(&base, &format!("/explorer/block/{height}?page=2"), 404).await;
    assert!(body.contains("page 2: the block has 1"));
    html(&base, &format!("/explorer/block/{height}?page=two"), 400).await;

    // The address: its balance, its coin, the transaction in its history.
    let body = html(&base, &format!("/explorer/address/{address}"), 200).await;
    assert!(body.contains(&format!("/explorer/tx/{txid}")), "history and coins link the tx");
    assert!(body.contains("in 1 coin"), "{body}");

    // Search: height, block hash, txid, address, pubkey hash; and a clear not-found.
    assert_eq!(search(&base, &height.to_string()).await, format!("/explorer/block/{height}"));
    assert_eq!(search(&base, &hash).await, format!("/explorer/block/{hash}"));
    assert_eq!(search(&base, &txid.to_uppercase()).await, format!("/explorer/tx/{txid}"));
    assert_eq!(search(&base, &address).await, format!("/explorer/address/{address}"));
    let pkh = get(&base, &format!("/txs/{txid}")).await["tx"]["outputs"][0]["pubkey_hash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(search(&base, &pkh).await, format!("/explorer/address/{pkh}"), "a pubkey hash with coins");
    let body = html(&base, &format!("/explorer/address/{pkh}"), 200).await;
    assert!(body.contains(&format!("/explorer/tx/{txid}")), "the same history by pubkey hash");
    let body = html(&base, "/explorer/search?q=not-a-key", 404).await;
    assert!(body.contains("is not a height, a block hash, a txid"), "{body}");
    let body = html(&base, "/explorer/search?q=99999999", 404).await;
    assert!(body.contains("no block at height 99999999"));

    // A spend of its output, pooled or confirmed: the first transaction names its spender.
    let spend = support::spend_first_output(&txid, EVIL.as_bytes());
    let r = post(&base, "/txs", serde_json::json!({ "txs": [spend.1] })).await;
    assert_eq!(r["accepted"], 1, "{r}");
    let body = html(&base, &format!("/explorer/tx/{txid}"), 200).await;
    assert!(body.contains(&format!("class=\"spender\" href=\"/explorer/tx/{}\"", spend.0)), "{body}");

    // The other pages.
    let body = html(&base, "/explorer/chain", 200).await;
    assert!(body.contains("<svg id=\"chain\"") && body.contains("class=\"block main\""));
    let body = html(&base, &format!("/explorer/chain?top={height}&span=3"), 200).await;
    assert!(body.contains(&format!("/explorer/tx/{txid}")), "the picture holds the transaction");
    html(&base, "/explorer/chain?span=31", 400).await;
    let body = html(&base, "/explorer/mempool", 200).await;
    assert!(body.contains("id=\"fee-histogram\""));
    html(&base, "/explorer/mempool?page=5", 404).await;
    html(&base, "/explorer/peers", 200).await;
    let body = html(&base, "/explorer/profile", 200).await;
    assert!(
        body.contains("id=\"stage-block_accept\"") && body.contains("id=\"stage-api_request\""),
        "{body}"
    );
    assert!(
        !body.contains("block_accept — validating and committing a block: 0 observations"),
        "blocks were timed"
    );
    let body = html(&base, "/explorer/study", 200).await;
    assert!(body.contains("serves no study directory"), "{body}");
    let body = html(&base, "/explorer/elections", 200).await;
    assert!(body.contains("No election is published"), "{body}");
    html(&base, &format!("/explorer/election/{}", "ab".repeat(32)), 404).await;

    // Bad paths: the explorer's own pages.
    html(&base, "/explorer/no/such/page", 404).await;
    let body = html(&base, "/explorer/tx/zz", 400).await;
    assert!(body.contains("is not 64 lowercase hex digits"));
    html(&base, &format!("/explorer/tx/{}", "0".repeat(64)), 404).await;
    html(&base, &format!("/explorer/block/{}", "1".repeat(65)), 400).await;
    html(&base, "/explorer/address/scdev1nothing", 400).await;
    html(&base, "/explorer/block/%ff", 400).await;
    let (s, h, _) = page(&base, "/explorer/assets/explorer.js").await;
    assert_eq!((s, h["content-type"].to_str().unwrap()), (200, "text/javascript; charset=utf-8"));
    html(&base, "/explorer/assets/nothing.js", 404).await;

    // The live stream: a status and the tip block within a tick or two.
    let mut live = reqwest::get(format!("{base}/explorer/live")).await.unwrap();
    assert_eq!(live.headers()["content-type"], "text/event-stream");
    let mut text = String::new();
    let got = tokio::time::timeout(Duration::from_secs(10), async {
        while !(text.contains("event: status") && text.contains("event: block")) {
            let chunk = live.chunk().await.unwrap().unwrap();
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
    })
    .await;
    assert!(got.is_ok(), "{text}");
    drop(live);
    stop(m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explorer_can_be_turned_off() {
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |c| c.explorer.enabled = Some(false)).await;
    let (s, h, body) = page(&n.api(), "/explorer").await;
    assert_eq!(s, 404);
    assert_eq!(h["content-type"], "application/json", "the API's own answer: {body}");
    stop(n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn study_reports_are_pages_and_their_files_stay_inside() {
    let study = tempfile::tempdir().unwrap();
    let report = "# Report\n\n<script>alert(1)</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n\
                  ![fig](fig.svg)\n\n[data](data.csv) [bad](javascript:alert(1))\n";
    std::fs::write(study.path().join("report.md"), report).unwrap();
    std::fs::write(study.path().join("fig.svg"), "<svg xmlns=\"http://www.w3.org/2000/svg\"/>").unwrap();
    std::fs::write(study.path().join("data.csv"), "a,b\n1,2\n").unwrap();
    std::fs::write(study.path().join("secret.txt"), "no").unwrap();
    std::fs::create_dir(study.path().join("big")).unwrap();
    std::fs::write(study.path().join("big/report.md"), "# Big\n\n![f](big.svg)\n").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let root = study.path().to_path_buf();
    let n = start(dir.path(), Role::Peer, &[], move |c| c.explorer.study_dir = Some(root)).await;
    let base = n.api();

    let body = html(&base, "/explorer/study", 200).await;
    assert!(body.contains("<td>2</td>") && body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{body}");
    assert!(body.contains("<img src=\"/explorer/study/files/fig.svg\""), "{body}");
    assert!(body.contains("href=\"/explorer/study/files/data.csv\"") && !body.contains("javascript:"));
    assert!(body.contains("href=\"/explorer/study?sub=big\""), "the other report is listed");
    let body = html(&base, "/explorer/study?sub=big", 200).await;
    assert!(body.contains("<img src=\"/explorer/study/files/big/big.svg\""), "{body}");
    html(&base, "/explorer/study?sub=..", 404).await;
    html(&base, "/explorer/study?sub=nothing", 404).await;

    let (s, h, _) = page(&base, "/explorer/study/files/fig.svg").await;
    assert_eq!((s, h["content-type"].to_str().unwrap()), (200, "image/svg+xml"));
    assert!(h["content-security-policy"].to_str().unwrap().contains("script-src 'self'"));
    let (s, _, b) = page(&base, "/explorer/study/files/data.csv").await;
    assert_eq!((s, b.as_str()), (200, "a,b\n1,2\n"));
    for bad in ["secret.txt", "..%2Freport.md", "%2Fetc%2Fpasswd.md", "big/..%2F..%2Fx.md", "nothing.svg"] {
        html(&base, &format!("/explorer/study/files/{bad}"), 404).await;
    }

    // A report from the viewer's disk: rendered and escaped, nothing kept.
    let r = reqwest::Client::new()
        .post(format!("{base}/explorer/study/render"))
        .body("| x |\n|---|\n| <img src=x onerror=alert(1)> |\n\n![f](f.svg)")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let out = r.text().await.unwrap();
    assert!(
        out.contains("&lt;img src=x onerror=alert(1)&gt;") && out.contains("<img src=\"f.svg\""),
        "{out}"
    );
    let r = reqwest::Client::new()
        .post(format!("{base}/explorer/study/render"))
        .body(vec![b'#'; (4 << 20) + 1])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 413);
    stop(n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_peers_page_shows_each_peers_round_trip() {
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let a = start(da.path(), Role::Peer, &[], |_| {}).await;
    let b = start(db.path(), Role::Peer, &[a.p2p()], |_| {}).await;
    let api = b.api();
    assert!(
        eventually(Duration::from_secs(10), || async {
            get(&api, "/peers")
                .await
                .as_array()
                .is_some_and(|p| p.iter().any(|p| p["rtt_us"].as_u64().is_some()))
        })
        .await,
        "a ping's round trip within 10 s (the first ping goes when the connection opens)"
    );
    let body = html(&api, "/explorer/peers", 200).await;
    assert!(body.contains(" µs\">") && body.contains(" ms</span>"), "{body}");
    assert!(body.contains(&a.info.peer_id), "{body}");
    stop(b).await;
    stop(a).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_an_api_token_the_explorer_asks_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |c| c.api.token = Some("s3cret".into())).await;
    let base = n.api();
    // Without it: the token page (401), for pages, assets and the live stream alike.
    for path in ["/explorer", "/explorer/mempool", "/explorer/assets/explorer.css", "/explorer/live"] {
        let (s, _, body) = page(&base, path).await;
        assert_eq!(s, 401, "{path}: {body}");
    }
    let body = html(&base, "/explorer/chain", 401).await;
    assert!(body.contains("action=\"/explorer/chain\"") && body.contains("name=\"token\""), "{body}");
    let body = html(&base, "/explorer/chain?token=wrong", 401).await;
    assert!(body.contains("not this node's API token"));
    // `/` still leads to the explorer (which asks).
    let (s, h, _) = page(&base, "/").await;
    assert_eq!((s, h["location"].to_str().unwrap()), (303, "/explorer"));
    // With it in the query: a cookie, and back to the page without it (other parameters kept).
    let (s, h, _) = page(&base, "/explorer/chain?span=3&token=s3cret").await;
    assert_eq!((s, h["location"].to_str().unwrap()), (303, "/explorer/chain?span=3"));
    let (s, h, _) = page(&base, "/explorer/chain?token=s3cret").await;
    assert_eq!((s, h["location"].to_str().unwrap()), (303, "/explorer/chain"));
    let cookie = h["set-cookie"].to_str().unwrap();
    assert!(
        cookie.starts_with("scalechain_token=s3cret;")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
    );
    let client = reqwest::Client::new();
    let r = client
        .get(format!("{base}/explorer/chain"))
        .header("cookie", "a=b; scalechain_token=s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = client.get(format!("{base}/explorer/peers")).bearer_auth("s3cret").send().await.unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .get(format!("{base}/explorer/peers"))
        .header("cookie", "scalechain_token=s3cre")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    // The API's read endpoints are as before.
    assert_eq!(reqwest::get(format!("{base}/status")).await.unwrap().status(), 200);
    stop(n).await;
}

/// Without the owner index an address page says why it shows no balance or coins (not a zero
/// balance) and still shows the history, and a search by pubkey hash leads to that page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_the_owner_index_an_address_page_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |c| c.store.owner_index = false).await;
    let base = n.api();
    let p = scalechain_consensus::Params::devnet(
        scalechain_types::HashKind::Sha256,
        scalechain_consensus::params::SigMode::Ed25519,
    );
    let owner = p.premine[0].lock.pubkey_hash;
    let body = html(&base, &format!("/explorer/address/{owner}"), 200).await;
    assert!(body.contains("no owner index (<code>store.owner_index = false</code>)"), "{body}");
    assert!(!body.contains("id=\"coins\"") && !body.contains("No unspent outputs"), "{body}");
    assert!(body.contains("<h2>History</h2>"), "{body}");
    assert_eq!(search(&base, &owner.to_string()).await, format!("/explorer/address/{owner}"));
    stop(n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_api_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = scalechain_node::NodeConfig { data_dir: dir.path().to_path_buf(), ..Default::default() };
    cfg.api.listen = "127.0.0.1:0".into();
    cfg.api.token = Some("  ".into());
    let r = tokio::time::timeout(
        Duration::from_secs(30),
        scalechain_node::run(
            cfg,
            scalechain_consensus::Apps::none(),
            scalechain_node::Pages::none(),
            false,
            std::future::pending::<()>(),
        ),
    )
    .await
    .expect("refused at once");
    let e = r.expect_err("an empty token is refused").to_string();
    assert!(e.contains("api.token is empty"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_booth_its_module_and_the_board_answer_under_the_explorers_rules() {
    let dir = tempfile::tempdir().unwrap();
    let n = start(dir.path(), Role::Peer, &[], |_| {}).await;
    let base = n.api();
    // The booth for the election a package names, its module and the module's source map.
    let body = html(&base, "/explorer/booth", 200).await;
    assert!(body.contains("id=\"package-file\"") && body.contains("src=\"/explorer/assets/booth.js\""));
    let (s, h, js) = page(&base, "/explorer/assets/booth.js").await;
    assert_eq!((s, h["content-type"].to_str().unwrap()), (200, "text/javascript; charset=utf-8"));
    assert!(h["content-security-policy"].to_str().unwrap().contains("connect-src 'self'"));
    assert!(js.ends_with("//# sourceMappingURL=booth.js.map\n"), "the map is named");
    let (s, h, map) = page(&base, "/explorer/assets/booth.js.map").await;
    assert_eq!((s, h["content-type"].to_str().unwrap()), (200, "application/json"));
    let map: serde_json::Value = serde_json::from_str(&map).unwrap();
    let sources = map["sources"].as_array().unwrap();
    assert!(sources.iter().any(|s| s.as_str().unwrap().ends_with("booth/src/elgamal.js")), "{sources:?}");
    assert_eq!(map["sourcesContent"].as_array().unwrap().len(), sources.len(), "the sources ship inlined");
    // Bad and unknown ids: the explorer's pages, and JSON for the descriptor the booth reads.
    let unknown = "ab".repeat(32);
    for path in
        [format!("/explorer/election/{unknown}/booth"), format!("/explorer/election/{unknown}/ballots")]
    {
        assert!(html(&base, &path, 404).await.contains(&format!("no election {unknown}")), "{path}");
    }
    html(&base, "/explorer/election/zz/booth", 400).await;
    html(&base, &format!("/explorer/election/{unknown}/ballots?tracker=zz"), 400).await;
    for (path, status) in [
        (format!("/explorer/election/{unknown}/descriptor"), 404),
        ("/explorer/election/zz/descriptor".into(), 400),
    ] {
        let (s, h, body) = page(&base, &path).await;
        assert_eq!((s, h["content-type"].to_str().unwrap()), (status, "application/json"), "{path}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(v["error"].as_str().is_some_and(|e| !e.is_empty()), "{path}: {body}");
    }
    stop(n).await;
}
