//! The public job pages in a real browser (headless Chromium through ChromeDriver, as
//! `console.rs` drives it), at a phone's width: each page shows without a console error and
//! with nothing blocked by its Content-Security-Policy (Chromium logs every refusal), its style
//! sheet applies, it has its landmarks, one `h1` and a language, nothing is wider than the
//! screen, and the `JobPosting` read back from the rendered page keeps Google's rules.

use crate::helpers::*;
use crate::pages::{BASE, board, canonical_page, google_problems, log_change};
use fantoccini::Client;
use serde_json::{Value, json};

/// ChromeDriver's log of the browser (the console and the network), since the last read.
#[derive(Debug)]
struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (reqwest::Method, Option<String>) {
        (reqwest::Method::POST, Some(r#"{"type":"browser"}"#.into()))
    }
}

struct Browser {
    client: Client,
    _driver: tokio::process::Child,
    profile: tempfile::TempDir,
}

impl Browser {
    /// A session at a phone's size (390 × 844) that keeps every entry of the browser's log.
    async fn start() -> Browser {
        let mut options = serde_json::Map::new();
        // A phone's screen, which honours the page's viewport (a window of a desktop browser is
        // never this narrow).
        options.insert(
            "mobileEmulation".into(),
            json!({"deviceMetrics": {"width": 390, "height": 844, "pixelRatio": 3.0, "touch": true}}),
        );
        let mut caps = serde_json::Map::new();
        caps.insert("goog:loggingPrefs".into(), json!({"browser": "ALL"}));
        let session = crate::browser::start("the pages' browser tests", &[], options, caps).await;
        let (client, driver, profile) = (session.client, session.driver, session.profile);
        Browser {
            client,
            _driver: driver,
            profile,
        }
    }

    async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.expect("script")
    }

    /// The browser's log entries since the last read, as `LEVEL source: message`.
    async fn log(&self) -> Vec<String> {
        let entries = self.client.issue_cmd(BrowserLog).await.expect("the log");
        entries
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| {
                format!(
                    "{} {}: {}",
                    e["level"].as_str().unwrap_or(""),
                    e["source"].as_str().unwrap_or(""),
                    e["message"].as_str().unwrap_or("")
                )
            })
            .collect()
    }
}

impl Drop for Browser {
    /// A test that panicked never closed its session: stop the Chromium of this profile.
    fn drop(&mut self) {
        let _ = std::process::Command::new("pkill")
            .args(["-f", "--"])
            .arg(format!("--user-data-dir={}", self.profile.path().display()))
            .status();
    }
}

/// What the page is, read in the browser.
const INSPECT: &str = r#"
const block = document.querySelector('script[type="application/ld+json"]');
const root = document.documentElement;
return {
  lang: root.lang,
  h1: [...document.querySelectorAll('h1')].map(h => h.textContent),
  main: document.querySelectorAll('main').length,
  banner: document.querySelectorAll('body > header').length,
  contentinfo: document.querySelectorAll('body > footer').length,
  styled: getComputedStyle(document.querySelector('main')).maxWidth !== 'none',
  wide: root.scrollWidth > window.innerWidth,
  width: window.innerWidth,
  posting: block ? block.textContent : null,
  scripts: document.scripts.length,
  text: document.body.innerText,
};
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_show_in_a_browser_at_a_phones_width() {
    let app = board(Backend::Sqlite, CacheKind::Memory, &[]).await;
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let post = |extra: Value| app.job(&employer, company, extra);
    let id = |v: Value| v["id"].as_i64().unwrap();
    let full = id(
        post(json!({"title": "Senior Rust Engineer", "salary_min": 70000,
        "salary_max": 95000, "description": "Build the API.\nShip it.\n\nA small team."}))
        .await,
    );
    let fewest = id(post(json!({"title": "Intern", "employment_type": "internship"})).await);
    app.exec(&format!(
        "UPDATE jobs SET expires_at = NULL WHERE id = {fewest}"
    ))
    .await;
    log_change(&app, fewest).await;
    // Markup, and words longer than a phone's screen is wide.
    let word = "Unbreakable".repeat(10);
    let hostile = id(post(json!({
        "title": format!("</script><script>document.title='pwned'</script> \"Lead\" <!-- {word}"),
        "description": format!("</script><!-- <img src=x onerror=alert(1)> {word}{word}{word}\n")
            .repeat(50),
        "location": "<b>Berlin</b>",
    }))
    .await);
    app.exec(&format!(
        "UPDATE jobs SET description = description || '\u{202E}reversed?' WHERE id = {hostile}"
    ))
    .await;
    log_change(&app, hostile).await;
    let closed = id(post(json!({"title": "Closed"})).await);
    app.patch(
        &format!("/api/jobs/{closed}"),
        Some(&employer.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);

    // The browser asks for /favicon.ico by itself; where the board serves none, that one 404
    // is the browser's, not the page's.
    let no_icon = crate::pages::fetch(&app, "/favicon.ico", &[]).await.status == 404;
    let icon_404 = |line: &String| {
        no_icon && line.starts_with("SEVERE network: ") && line.contains("/favicon.ico - ")
    };
    let b = Browser::start().await;
    for (job, posting) in [
        (full, true),
        (fewest, true),
        (hostile, true),
        (closed, false),
    ] {
        let (key, _) = canonical_page(&app, job).await;
        // Through the bare id: the browser follows the redirect to the canonical page.
        b.client
            .goto(&app.url(&format!("/jobs/{job}")))
            .await
            .expect("goto");
        let url = b.client.current_url().await.unwrap();
        assert!(url.path().ends_with(&format!("/jobs/{key}")), "{url}");
        let page = b.js(INSPECT).await;
        let log: Vec<String> = b.log().await.into_iter().filter(|l| !icon_404(l)).collect();
        assert!(log.is_empty(), "job {job}: the browser logged {log:#?}");
        assert_eq!(page["lang"], "en");
        assert_eq!(page["h1"].as_array().unwrap().len(), 1, "{page}");
        assert_eq!(
            (
                page["main"].as_i64(),
                page["banner"].as_i64(),
                page["contentinfo"].as_i64()
            ),
            (Some(1), Some(1), Some(1))
        );
        assert_eq!(page["styled"], true, "the style sheet applies");
        assert_eq!(page["width"], 390);
        assert_eq!(
            page["wide"], false,
            "job {job}: wider than a phone's screen"
        );
        assert_eq!(page["scripts"], if posting { 1 } else { 0 });
        let title = b.client.title().await.unwrap();
        assert!(title.ends_with(" – Acme") && title != "pwned", "{title}");
        match page["posting"].as_str() {
            Some(text) => {
                assert!(posting, "job {job} has no posting to show");
                let p: Value = serde_json::from_str(text).expect("the block is JSON");
                assert!(
                    google_problems(&p).is_empty(),
                    "job {job}: {:?}",
                    google_problems(&p)
                );
                assert_eq!(p["url"], format!("{BASE}/jobs/{key}"));
            }
            None => assert!(!posting, "job {job}: no JobPosting in the page"),
        }
        if job == hostile {
            let text = page["text"].as_str().unwrap();
            assert!(
                text.contains("</script><script>document.title='pwned'</script>"),
                "{text}"
            );
            assert!(text.contains("<img src=x onerror=alert(1)>"));
            assert!(!text.contains('\u{202E}'));
        }
    }
    b.client.clone().close().await.expect("close the browser");
}
