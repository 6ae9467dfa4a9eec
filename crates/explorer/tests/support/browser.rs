//! Headless Chromium through `chromedriver` for the browser tests (the explorer's own, and
//! the command line's election test, which includes this file by path): start the driver, open
//! a session, wait on the page, take screenshots into `target/explorer-screenshots/`
//! (`SCALECHAIN_SCREENSHOTS` moves them).
//!
//! Without `chromedriver` and `chromium` a test says so and passes, unless
//! `SCALECHAIN_REQUIRE_BROWSER=1` (CI sets it, after installing both), which makes it fail.
#![allow(dead_code, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;

/// A running `chromedriver`, stopped on drop.
pub struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn required() -> bool {
    std::env::var("SCALECHAIN_REQUIRE_BROWSER").is_ok_and(|v| v == "1")
}

fn chromium() -> PathBuf {
    std::env::var_os("SCALECHAIN_CHROMIUM").map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from)
}

/// Starts `chromedriver` on a free loopback port, or says why it cannot (and fails when a
/// browser is required).
pub fn driver() -> Option<Driver> {
    let exe = std::env::var_os("SCALECHAIN_CHROMEDRIVER").unwrap_or_else(|| "chromedriver".into());
    let missing = |what: String| {
        assert!(!required(), "SCALECHAIN_REQUIRE_BROWSER=1 but {what}");
        eprintln!("skipping the browser test: {what} (apt install chromium chromium-driver)");
        None
    };
    if !chromium().exists() {
        return missing(format!("{} is missing", chromium().display()));
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = match Command::new(&exe)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => return missing(format!("{} does not start: {e}", exe.to_string_lossy())),
    };
    let d = Driver { child, url: format!("http://127.0.0.1:{port}") };
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(d)
}

/// A headless Chromium session: a fresh profile, no network beyond what the page asks for.
pub async fn browser(d: &Driver, dark: bool) -> Client {
    let profile = tempfile::tempdir().unwrap().keep();
    let mut args = vec![
        "--headless=new".to_string(),
        "--no-sandbox".into(),
        "--disable-gpu".into(),
        "--disable-dev-shm-usage".into(),
        "--disable-quic".into(),
        "--no-first-run".into(),
        "--disable-background-networking".into(),
        "--disable-component-update".into(),
        "--disable-sync".into(),
        "--window-size=1280,900".into(),
        format!("--user-data-dir={}", profile.display()),
    ];
    if dark {
        args.push("--force-dark-mode".into());
        args.push("--blink-settings=preferredColorScheme=0".into());
    }
    let mut caps = serde_json::Map::new();
    caps.insert("browserName".into(), json!("chrome"));
    caps.insert("goog:chromeOptions".into(), json!({ "binary": chromium(), "args": args }));
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    ClientBuilder::new(connector).capabilities(caps).connect(&d.url).await.expect("a WebDriver session")
}

/// Where screenshots go (made if missing).
pub fn shots() -> PathBuf {
    let dir = std::env::var_os("SCALECHAIN_SCREENSHOTS").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/explorer-screenshots"),
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A screenshot of the page as `NAME.png`.
pub async fn shot(c: &Client, name: &str) {
    let png = c.screenshot().await.unwrap();
    std::fs::write(shots().join(format!("{name}.png")), png).unwrap();
}

/// The text of the first element `css` selects.
pub async fn text(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css)).await.unwrap().text().await.unwrap()
}

/// The page's path.
pub async fn path(c: &Client) -> String {
    c.current_url().await.unwrap().path().to_string()
}

/// Waits until `check` holds on the page, polling every 100 ms, at most `within`.
pub async fn until(c: &Client, within: Duration, what: &str, script: &str) {
    let deadline = Instant::now() + within;
    loop {
        if c.execute(script, vec![]).await.unwrap() == json!(true) {
            return;
        }
        assert!(Instant::now() < deadline, "{what} within {within:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
