//! The web explorer in a real browser: Debian's headless Chromium driven through WebDriver
//! (`chromedriver`, by fantoccini) against miners running in this process. It loads each page,
//! follows links (block → transaction → address, transaction → its spender), searches by each
//! kind of key through the page's search box, sees a newly mined block arrive without a reload,
//! sees the markup a transaction carries shown as text, sees a fork drawn after two miners'
//! chains meet and one reorganises, and checks the phone-width and dark layouts. Screenshots of
//! each page go to `target/explorer-screenshots/` (`SCALECHAIN_SCREENSHOTS` moves them).
//!
//! Without `chromedriver` and `chromium` the tests say so and pass, unless
//! `SCALECHAIN_REQUIRE_BROWSER=1` (CI sets it, after installing both), which makes them fail.
#![allow(clippy::unwrap_used)]

#[path = "support/browser.rs"]
mod browser_support;
mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use browser_support::{browser, driver, path, shot, text, until};
use fantoccini::{Client, Locator};
use scalechain_p2p::msg::Role;
use serde_json::json;
use support::{eventually, get, post, start, stop, transfers_with};

const EVIL: &str = "<script>alert('chain data')</script><img src=x onerror=alert(1)>";

/// Types `q` into the header's search box and submits it; returns the path it led to.
async fn search(c: &Client, q: &str) -> String {
    let input = c.find(Locator::Css("#q")).await.unwrap();
    input.clear().await.unwrap();
    input.send_keys(q).await.unwrap();
    let before = c.current_url().await.unwrap();
    c.find(Locator::Css("form.search button")).await.unwrap().click().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.current_url().await.unwrap() == before {
        assert!(Instant::now() < deadline, "the search for {q} went nowhere");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    path(c).await
}

/// The document is no wider than the window (nothing scrolls sideways but the tables' own
/// boxes).
async fn fits(c: &Client, what: &str) {
    let w =
        c.execute("return [document.documentElement.scrollWidth, window.innerWidth];", vec![]).await.unwrap();
    let (scroll, inner) = (w[0].as_f64().unwrap(), w[1].as_f64().unwrap());
    let wide = c
        .execute(
            "return [...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > \
             window.innerWidth + 1).slice(0, 5).map(e => e.tagName + '.' + e.className + '#' + e.id);",
            vec![],
        )
        .await
        .unwrap();
    assert!(scroll <= inner + 1.0, "{what}: the page is {scroll} px wide in a {inner} px window: {wide}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_explorer_in_a_real_browser() {
    let Some(d) = driver() else { return };
    let dir = tempfile::tempdir().unwrap();
    let study =
        std::fs::canonicalize(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/study")).unwrap();
    let m = start(dir.path(), Role::Miner, &[], move |c| c.explorer.study_dir = Some(study)).await;
    let base = m.api();
    let c = browser(&d, false).await;

    // The overview goes live, and a newly mined block appears without a reload.
    c.goto(&format!("{base}/explorer")).await.unwrap();
    until(
        &c,
        Duration::from_secs(15),
        "the live stream connects",
        "return document.getElementById('live-state').textContent.startsWith('Live');",
    )
    .await;
    c.execute("window.__same_page = true;", vec![]).await.unwrap();
    let h0: u64 = text(&c, "#tip-height").await.parse().unwrap();
    until(
        &c,
        Duration::from_secs(30),
        "a new block on the overview",
        &format!(
            "return Number(document.getElementById('tip-height').textContent) > {h0} && \
             Number(document.querySelector('#blocks tbody tr').dataset.height) > {h0};"
        ),
    )
    .await;
    assert_eq!(c.execute("return window.__same_page === true;", vec![]).await.unwrap(), json!(true));
    until(
        &c,
        Duration::from_secs(5),
        "the mempool chart has points",
        "return document.querySelector('#chart-mempool polyline') !== null;",
    )
    .await;
    shot(&c, "overview").await;

    // A transaction carrying markup, confirmed, and a pooled spend of its output.
    let (txid, hex) = transfers_with(0..1, EVIL.as_bytes()).pop().unwrap();
    assert_eq!(post(&base, "/txs", json!({ "txs": [hex] })).await["accepted"], 1);
    assert!(
        eventually(Duration::from_secs(60), || async {
            get(&base, &format!("/txs/{txid}")).await["status"] == "confirmed"
        })
        .await
    );
    let height = get(&base, &format!("/txs/{txid}")).await["height"].as_u64().unwrap();
    let block_hash = get(&base, &format!("/blocks/{height}")).await["hash"].as_str().unwrap().to_string();

    // Search by txid; the markup is text, and no script of it ran.
    assert_eq!(search(&c, &txid).await, format!("/explorer/tx/{txid}"));
    assert_eq!(text(&c, "#tx-data").await, EVIL);
    assert!(c.get_alert_text().await.is_err(), "no alert: the data's script did not run");
    assert!(c.find_all(Locator::Css("#main img")).await.unwrap().is_empty(), "no element from the data");
    shot(&c, "tx").await;

    // Follow links: tx → block → tx → address.
    c.find(Locator::Css("#tx-block")).await.unwrap().click().await.unwrap();
    until(
        &c,
        Duration::from_secs(10),
        "the block page",
        "return location.pathname.startsWith('/explorer/block/');",
    )
    .await;
    assert_eq!(text(&c, "#block-hash").await, block_hash);
    shot(&c, "block").await;
    c.find(Locator::Css(&format!("#txs a[href='/explorer/tx/{txid}']")))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    until(
        &c,
        Duration::from_secs(10),
        "the tx page",
        "return location.pathname.startsWith('/explorer/tx/');",
    )
    .await;
    assert_eq!(path(&c).await, format!("/explorer/tx/{txid}"));
    let address =
        c.find(Locator::Css("#outputs a[href^='/explorer/address/']")).await.unwrap().text().await.unwrap();
    c.find(Locator::Css("#outputs a[href^='/explorer/address/']")).await.unwrap().click().await.unwrap();
    until(
        &c,
        Duration::from_secs(10),
        "the address page",
        "return location.pathname.startsWith('/explorer/address/');",
    )
    .await;
    assert!(text(&c, "#balance").await.contains("SC"), "a balance");
    assert!(!c
        .find_all(Locator::Css(&format!("#history a[href='/explorer/tx/{txid}']")))
        .await
        .unwrap()
        .is_empty());
    shot(&c, "address").await;

    // The transaction's output spent: its page links the spender, and the link leads there.
    let spend = support::spend_first_output(&txid, &[]);
    assert_eq!(post(&base, "/txs", json!({ "txs": [spend.1] })).await["accepted"], 1);
    c.goto(&format!("{base}/explorer/tx/{txid}")).await.unwrap();
    c.find(Locator::Css("#outputs a.spender")).await.unwrap().click().await.unwrap();
    until(
        &c,
        Duration::from_secs(10),
        "the spender's page",
        &format!("return location.pathname === '/explorer/tx/{}';", spend.0),
    )
    .await;

    // Search by height, block hash and address; a clear not-found.
    assert_eq!(search(&c, &height.to_string()).await, format!("/explorer/block/{height}"));
    assert_eq!(search(&c, &block_hash).await, format!("/explorer/block/{block_hash}"));
    assert_eq!(search(&c, &address).await, format!("/explorer/address/{address}"));
    search(&c, "no-such-thing").await;
    assert!(text(&c, "#error-message").await.contains("is not a height"), "a not-found page");

    // The other pages load, with their pictures (the mempool with some transactions in it).
    let pooled: Vec<String> = support::transfers(1..41).into_iter().map(|t| t.1).collect();
    assert_eq!(post(&base, "/txs", json!({ "txs": pooled })).await["accepted"], 40);
    c.goto(&format!("{base}/explorer/mempool")).await.unwrap();
    c.find(Locator::Css("#fee-histogram")).await.unwrap();
    shot(&c, "mempool").await;
    c.goto(&format!("{base}/explorer/peers")).await.unwrap();
    shot(&c, "peers").await;
    c.goto(&format!("{base}/explorer/profile")).await.unwrap();
    shot(&c, "profile").await;
    c.goto(&format!("{base}/explorer/chain?top={height}&span=6")).await.unwrap();
    let before = c.find(Locator::Css("#chain")).await.unwrap().attr("viewBox").await.unwrap();
    c.find(Locator::Css(".pan")).await.unwrap().send_keys("++").await.unwrap();
    let after = c.find(Locator::Css("#chain")).await.unwrap().attr("viewBox").await.unwrap();
    assert_ne!(before, after, "the keyboard zooms the chain picture");
    assert!(!c
        .find_all(Locator::Css(&format!("#chain a[href='/explorer/tx/{txid}']")))
        .await
        .unwrap()
        .is_empty());
    shot(&c, "chain").await;

    // The project's own study report, served; then a report chosen from disk, its figure read
    // by the page.
    c.goto(&format!("{base}/explorer/study")).await.unwrap();
    assert!(!c.find_all(Locator::Css("#report table")).await.unwrap().is_empty(), "the report's tables");
    until(
        &c,
        Duration::from_secs(10),
        "the report's figures load",
        "return [...document.querySelectorAll('#report img')].some(i => i.complete && i.naturalWidth > 0);",
    )
    .await;
    shot(&c, "study").await;
    let disk = tempfile::tempdir().unwrap();
    std::fs::write(
        disk.path().join("report.md"),
        "# From disk\n\n| k | v |\n|---|---|\n| x | 1 |\n\n![fig](fig.svg)\n",
    )
    .unwrap();
    std::fs::write(
        disk.path().join("fig.svg"),
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"40\" height=\"20\"><rect width=\"40\" height=\"20\"/></svg>",
    )
    .unwrap();
    c.find(Locator::Css("details.upload summary")).await.unwrap().click().await.unwrap();
    let files =
        format!("{}\n{}", disk.path().join("report.md").display(), disk.path().join("fig.svg").display());
    c.find(Locator::Css("#study-files")).await.unwrap().send_keys(&files).await.unwrap();
    until(
        &c,
        Duration::from_secs(10),
        "the report from disk with its figure",
        "const i = document.querySelector('#report img'); return document.querySelector('#report h1')?.textContent === 'From disk' && i !== null && i.complete && i.naturalWidth === 40;",
    )
    .await;
    assert!(text(&c, "#study-upload-state").await.contains("1 figures shown"));

    // A phone-width window: nothing spills sideways.
    c.set_window_size(390, 844).await.unwrap();
    for page in ["/explorer", &format!("/explorer/tx/{txid}"), "/explorer/mempool"] {
        c.goto(&format!("{base}{page}")).await.unwrap();
        fits(&c, page).await;
    }
    c.goto(&format!("{base}/explorer")).await.unwrap();
    shot(&c, "overview-phone").await;
    c.close().await.unwrap();

    // The system's dark setting gives the dark theme.
    let dark = browser(&d, true).await;
    dark.goto(&format!("{base}/explorer")).await.unwrap();
    let is_dark =
        dark.execute("return matchMedia('(prefers-color-scheme: dark)').matches;", vec![]).await.unwrap();
    if is_dark == json!(true) {
        let bg =
            dark.execute("return getComputedStyle(document.body).backgroundColor;", vec![]).await.unwrap();
        assert_eq!(bg, json!("rgb(17, 21, 26)"), "the dark theme's background");
        shot(&dark, "overview-dark").await;
    } else {
        eprintln!("this Chromium ignores the dark-mode switches: no dark screenshot");
    }
    dark.close().await.unwrap();
    stop(m).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fork_is_drawn_after_two_miners_reorganise() {
    let Some(d) = driver() else { return };
    let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    // Two miners that do not know each other build chains of their own from genesis...
    let a = start(da.path(), Role::Miner, &[], |_| {}).await;
    let b = start(db.path(), Role::Miner, &[], |_| {}).await;
    assert!(
        eventually(Duration::from_secs(60), || async {
            support::height(&a).await >= 3 && support::height(&b).await >= 3
        })
        .await
    );
    let b_dir = stop(b).await;
    let top = support::height(&a).await.max(3) + 10;
    // ...then meet: one of them reorganises onto the other's chain.
    let b = start(&b_dir, Role::Miner, &[a.p2p()], |_| {}).await;
    let (a_api, b_api) = (a.api(), b.api());
    assert!(
        eventually(Duration::from_secs(60), || async {
            let (x, y) = (get(&a_api, "/tip").await, get(&b_api, "/tip").await);
            x["hash"] == y["hash"]
        })
        .await,
        "the two miners converge"
    );
    // The node that reorganised holds the blocks it left as a side branch.
    let mut with_fork = None;
    for api in [&a_api, &b_api] {
        let body = reqwest::get(format!("{api}/explorer/chain?top={top}&span=30"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if body.contains("class=\"block side\"") {
            with_fork = Some(api.clone());
        }
    }
    let api = with_fork.expect("a side branch on one of the two nodes");
    let c = browser(&d, false).await;
    c.goto(&format!("{api}/explorer/chain?top={top}&span=30")).await.unwrap();
    assert!(text(&c, "#side-rows").await.parse::<u64>().unwrap() >= 1);
    let side = c.find_all(Locator::Css("#chain g.block.side")).await.unwrap();
    assert!(!side.is_empty(), "side-branch blocks drawn");
    let main = c.find_all(Locator::Css("#chain g.block.main")).await.unwrap();
    assert!(!main.is_empty());
    let visible = c
        .execute(
            "const pan = document.querySelector('.pan').getBoundingClientRect(); \
             return [...document.querySelectorAll('#chain g.block rect')].every(r => r.getBoundingClientRect().bottom <= pan.bottom + 1);",
            vec![],
        )
        .await
        .unwrap();
    assert_eq!(visible, json!(true), "every branch row is inside the picture's frame");
    shot(&c, "chain-fork").await;
    // A side block's page says so.
    let hash = side[0].attr("data-hash").await.unwrap().unwrap();
    c.goto(&format!("{api}/explorer/block/{hash}")).await.unwrap();
    assert!(c.source().await.unwrap().contains("side branch"));
    c.close().await.unwrap();
    stop(b).await;
    stop(a).await;
}
