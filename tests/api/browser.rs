//! One way to start headless Chromium for the browser tests (`console.rs`, `pages_browser.rs`):
//! ChromeDriver on a free port of loopback (stopped when dropped), a profile of its own, and a
//! WebDriver session with the options a test adds to the shared ones.

use crate::helpers::announced_port;
use crate::worker::wait_until;
use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};

/// A session and what it lives on: the ChromeDriver process and the profile's folder.
pub struct Session {
    pub client: Client,
    pub driver: tokio::process::Child,
    pub profile: tempfile::TempDir,
}

/// A session of headless Chromium for `what` (named in the failure when Chromium or ChromeDriver
/// is missing), with `args` after the shared command-line switches, `options` merged into
/// `goog:chromeOptions` and `capabilities` beside them.
pub async fn start(
    what: &str,
    args: &[&str],
    options: serde_json::Map<String, Value>,
    capabilities: serde_json::Map<String, Value>,
) -> Session {
    let chromium =
        std::env::var("JOBBOARD_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_string());
    let chromedriver = std::env::var("JOBBOARD_TEST_CHROMEDRIVER")
        .unwrap_or_else(|_| "/usr/bin/chromedriver".to_string());
    for path in [&chromium, &chromedriver] {
        assert!(
            std::path::Path::new(path).exists(),
            "{path} is required for {what}; scripts/services installs Debian's chromium and \
             chromium-driver"
        );
    }
    // ChromeDriver binds port 0 and says which port it got.
    let mut driver = tokio::process::Command::new(&chromedriver)
        .arg("--port=0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start chromedriver");
    let port = announced_port(
        driver.stdout.take().unwrap(),
        "ChromeDriver was started successfully on port ",
    )
    .await;
    let webdriver = format!("http://127.0.0.1:{port}");
    let status = format!("{webdriver}/status");
    wait_until("ChromeDriver answers", || async {
        reqwest::get(&status)
            .await
            .is_ok_and(|r| r.status().is_success())
    })
    .await;
    let profile = tempfile::tempdir().unwrap();
    let mut switches: Vec<String> = [
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--no-first-run",
    ]
    .iter()
    .chain(args)
    .map(|s| s.to_string())
    .collect();
    switches.push(format!("--user-data-dir={}", profile.path().display()));
    let mut chrome = serde_json::Map::new();
    chrome.insert("binary".into(), json!(chromium));
    chrome.insert("args".into(), json!(switches));
    chrome.extend(options);
    let mut caps = capabilities;
    caps.insert("goog:chromeOptions".into(), Value::Object(chrome));
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = ClientBuilder::new(connector)
        .capabilities(caps)
        .connect(&webdriver)
        .await
        .expect("a WebDriver session of headless Chromium");
    Session {
        client,
        driver,
        profile,
    }
}
