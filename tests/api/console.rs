//! `/console` in a real browser, as an operator works: headless Chromium driven through
//! WebDriver (ChromeDriver, the `fantoccini` client) signs in from the keyboard, reads the
//! queue's figures, finds a dead-lettered event by its id, redrives it after a confirmation,
//! and sees the figures move on their own once its email reached the SMTP fixture. A second
//! case fills a dead letter and an event's reason with markup and script and checks in the
//! browser that nothing runs, the text shows as it is, and the token is kept nowhere.
//!
//! A screenshot of each screen is saved under the tests' output
//! (`$CARGO_TARGET_DIR/tmp/console-screens/`).

use crate::helpers::*;
use crate::worker::{Harness, wait_until};
use fantoccini::{Client, ClientBuilder, Locator};
use jobboard::worker::Outcome;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// Markup and script that would run if the page ever parsed what it shows as HTML.
const HOSTILE: &str = r#"<img src=x onerror="window.__pwned=1"></script><script>window.__pwned=2</script><b>bold</b>"#;

/// ChromeDriver (on a free port of loopback, stopped when dropped) and a session of headless
/// Chromium through it.
struct Browser {
    client: Client,
    _driver: tokio::process::Child,
    _profile: tempfile::TempDir,
    screens: std::path::PathBuf,
    case: &'static str,
}

impl Browser {
    async fn start(case: &'static str) -> Browser {
        let chromium = std::env::var("JOBBOARD_TEST_CHROMIUM")
            .unwrap_or_else(|_| "/usr/bin/chromium".to_string());
        let chromedriver = std::env::var("JOBBOARD_TEST_CHROMEDRIVER")
            .unwrap_or_else(|_| "/usr/bin/chromedriver".to_string());
        for path in [&chromium, &chromedriver] {
            assert!(
                std::path::Path::new(path).exists(),
                "{path} is required for the console's browser tests; scripts/services installs \
                 Debian's chromium and chromium-driver"
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
        let mut caps = serde_json::Map::new();
        caps.insert(
            "goog:chromeOptions".into(),
            json!({
                "binary": chromium,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                    "--no-first-run", "--window-size=1280,1000",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            }),
        );
        let connector = hyper_util::client::legacy::connect::HttpConnector::new();
        let client = ClientBuilder::new(connector)
            .capabilities(caps)
            .connect(&webdriver)
            .await
            .expect("a WebDriver session of headless Chromium");
        let screens = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("console-screens");
        std::fs::create_dir_all(&screens).unwrap();
        Browser {
            client,
            _driver: driver,
            _profile: profile,
            screens,
            case,
        }
    }

    async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("goto");
    }

    async fn find(&self, css: &str) -> fantoccini::elements::Element {
        self.client
            .wait()
            .at_most(Duration::from_secs(20))
            .for_element(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css} on the page: {e}"))
    }

    async fn text(&self, css: &str) -> String {
        self.find(css).await.text().await.expect("text")
    }

    async fn js(&self, script: &str) -> Value {
        self.client.execute(script, vec![]).await.expect("script")
    }

    /// The text of every element `css` finds, in page order.
    async fn texts(&self, css: &str) -> Vec<String> {
        let mut texts = Vec::new();
        for e in self
            .client
            .find_all(Locator::Css(css))
            .await
            .expect("find_all")
        {
            texts.push(e.text().await.expect("text"));
        }
        texts
    }

    async fn count(&self, css: &str) -> usize {
        self.client
            .find_all(Locator::Css(css))
            .await
            .expect("find_all")
            .len()
    }

    /// Waits (up to 20 s) until `css`'s text satisfies `ok`; panics with the last text.
    async fn wait_text(&self, css: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = match self.client.find(Locator::Css(css)).await {
                Ok(e) => e.text().await.unwrap_or_default(),
                Err(_) => String::new(),
            };
            if ok(&text) {
                return text;
            }
            assert!(
                Instant::now() < deadline,
                "{css} never showed {what}; it shows {text:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn visible(&self, css: &str) -> bool {
        self.find(css)
            .await
            .is_displayed()
            .await
            .expect("displayed")
    }

    /// Clicks a button of the confirmation and waits until the dialog has closed.
    async fn answer(&self, yes: bool) {
        self.find("#confirm[open]").await;
        let button = if yes { "#confirm-yes" } else { "#confirm-no" };
        self.find(button).await.click().await.expect("click");
        wait_until("the confirmation closes", || async {
            self.count("#confirm[open]").await == 0
        })
        .await;
    }

    async fn shot(&self, name: &str) {
        let png = self.client.screenshot().await.expect("screenshot");
        let path = self.screens.join(format!("{}-{name}.png", self.case));
        std::fs::write(&path, png).expect("save the screenshot");
    }

    /// Signs in from the keyboard: the email field has the focus when the page loads, Tab
    /// moves to the password, Enter submits.
    async fn sign_in(&self, email: &str, password: &str) {
        self.find("#email").await;
        let focused = self.client.active_element().await.expect("focus");
        assert_eq!(focused.attr("id").await.unwrap().as_deref(), Some("email"));
        focused
            .send_keys(&format!("{email}\u{E004}{password}\u{E007}"))
            .await
            .expect("type");
    }

    async fn close(self) {
        self.client
            .clone()
            .close()
            .await
            .expect("close the browser");
    }
}

impl Drop for Browser {
    /// A test that panicked never closed its session: stop the Chromium of this profile, which
    /// ChromeDriver (killed on drop) would leave running.
    fn drop(&mut self) {
        let _ = std::process::Command::new("pkill")
            .args(["-f", "--"])
            .arg(format!(
                "--user-data-dir={}",
                self._profile.path().display()
            ))
            .status();
    }
}

fn is(expected: &'static str) -> impl Fn(&str) -> bool {
    move |t: &str| t == expected
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_finds_a_dead_letter_by_its_event_and_redrives_it() {
    let h = Harness::new(Backend::Sqlite, "lease").await;
    let app = &h.app;
    let (s, event_id, worker) = h.dead_lettered_change().await;
    let op = app.operator().await;

    let b = Browser::start("redrive").await;
    b.goto(&app.url("/console")).await;
    assert!(b.visible("#signin").await);
    assert!(
        !b.visible("#console").await,
        "nothing but the form before signing in"
    );
    b.shot("1-sign-in").await;

    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#fig-dead_letters", "1 dead letter", is("1"))
        .await;
    assert_eq!(b.text("#whoami").await, op.email);
    assert_eq!(b.text("#queue-kind").await, "db");
    assert_eq!(b.text("#fig-failed_last_hour").await, "1");
    // The application's confirmation.
    assert_eq!(b.text("#fig-sent_last_hour").await, "1");
    b.wait_text("#dl-total", "1 dead letter", is("1")).await;
    assert_eq!(b.count("#dl-list .letter").await, 1);
    assert!(b.text("#dl-list .letter .reason").await.contains("554"));
    assert_eq!(b.text("#dl-list .letter .event-link").await, event_id);
    b.shot("2-queue").await;

    // The event's story, found by its id from the keyboard.
    let search = b.find("#event-id").await;
    search
        .send_keys(&format!("{event_id}\u{E007}"))
        .await
        .expect("type");
    let timeline = b
        .wait_text("#timeline", "the dead letter", |t| {
            t.contains("dead letters")
        })
        .await;
    assert!(timeline.contains("submitted → reviewing"), "{timeline}");
    assert!(
        timeline.contains(&format!("Application {}", s.application_id)),
        "{timeline}"
    );
    assert!(timeline.contains("1 attempt, status dead"), "{timeline}");
    assert!(timeline.contains("554"), "{timeline}");
    b.shot("3-story").await;

    // Redrive asks first: Cancel leaves the letter where it is.
    b.find("#story .redrive").await.click().await.unwrap();
    assert!(b.text("#confirm-text").await.contains(&event_id));
    b.answer(false).await;
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM dead_letters").await, 1);
    b.find("#story .redrive").await.click().await.unwrap();
    b.answer(true).await;
    b.wait_text("#notice", "the redrive", is("Redriven: 1."))
        .await;
    b.wait_text("#dl-total", "no dead letter", is("0")).await;
    assert_eq!(b.count("#dl-list .letter").await, 0);
    assert!(b.visible("#dl-empty").await);

    // The worker sends it; the figures follow on their own, no click needed.
    h.later().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1, "the redriven email is sent");
    b.wait_text("#fig-sent_last_hour", "the sent email", is("2"))
        .await;
    assert_eq!(b.text("#fig-dead_letters").await, "0");
    b.shot("4-redriven").await;

    // A phone's width: everything still fits, nothing scrolls sideways.
    b.client.set_window_size(390, 844).await.unwrap();
    let width = b.js("return window.innerWidth").await;
    assert!(
        width.as_i64().is_some_and(|w| w <= 400),
        "the window is a phone's width: {width}"
    );
    let fits = b
        .js("return document.documentElement.scrollWidth <= window.innerWidth")
        .await;
    assert_eq!(fits, json!(true), "the page scrolls sideways at 390 px");
    b.shot("5-phone").await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_text_shows_as_text_and_nothing_runs() {
    let h = Harness::new(Backend::Sqlite, "lease").await;
    let app = &h.app;
    let poison = format!("poison {HOSTILE}");
    let s = h.scenario().await;
    h.enqueue(&poison).await;
    let event_id = h.change(&s).await;
    h.smtp.reject_next();
    let worker = h.worker().await;
    let mut outcomes = worker.run_until_empty().await.unwrap();
    outcomes.sort_by_key(|o| format!("{o:?}"));
    assert_eq!(outcomes, vec![Outcome::DeadLettered, Outcome::Invalid]);
    // The event's reason, as a mail server could have worded it.
    app.exec(&format!(
        "UPDATE dead_letters SET reason = '{HOSTILE}' WHERE event_id = '{event_id}'"
    ))
    .await;
    app.exec(&format!(
        "UPDATE processed_events SET last_error = '{HOSTILE}' WHERE event_id = '{event_id}'"
    ))
    .await;

    let b = Browser::start("hostile").await;
    b.goto(&app.url("/console")).await;

    // An account without the rights gets no further than the form.
    let candidate = app.user("candidate").await;
    b.sign_in(&candidate.email, &candidate.password).await;
    b.wait_text("#signin-error", "the refusal", |t| {
        t.contains("no operator rights")
    })
    .await;
    assert!(!b.visible("#console").await);

    let op = app.operator().await;
    b.find("#email").await.clear().await.unwrap();
    b.find("#email").await.click().await.unwrap();
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#fig-dead_letters", "2 dead letters", is("2"))
        .await;
    b.wait_text("#dl-total", "2 dead letters", is("2")).await;

    let bodies = b.texts("#dl-list .body").await;
    assert!(bodies.contains(&poison), "{bodies:?}");
    let reasons = b.texts("#dl-list .reason").await;
    assert!(reasons.iter().any(|r| r == HOSTILE), "{reasons:?}");

    // The story shows the same reason and last error as text.
    b.find("#event-id")
        .await
        .send_keys(&event_id)
        .await
        .unwrap();
    b.find("#story-form button").await.click().await.unwrap();
    let last_error = b.text("#timeline .last-error").await;
    assert_eq!(last_error, HOSTILE);
    b.shot("1-hostile").await;

    assert_eq!(
        b.js("return window.__pwned === undefined").await,
        json!(true)
    );
    assert_eq!(b.count("img").await, 0, "no markup became an element");
    assert_eq!(b.count("#dead-letters b, #story b").await, 0);
    assert_eq!(b.count("script").await, 1, "only the page's own script");
    let kept = b
        .js("return [localStorage.length, sessionStorage.length, document.cookie]")
        .await;
    assert_eq!(kept, json!([0, 0, ""]), "the token is kept nowhere");

    // Purge the poison message: asked first, then gone from the page and the database.
    let letters = b
        .client
        .find_all(Locator::Css("#dl-list .letter"))
        .await
        .unwrap();
    let mut poisoned = None;
    for l in letters {
        if l.find(Locator::Css(".body"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
            == poison
        {
            poisoned = Some(l);
        }
    }
    let poisoned = poisoned.expect("the poison message is listed");
    poisoned
        .find(Locator::Css(".purge"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.answer(true).await;
    b.wait_text("#notice", "the purge", is("Purged.")).await;
    b.wait_text("#dl-total", "1 dead letter", is("1")).await;
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM dead_letters WHERE event_id IS NULL")
            .await,
        0
    );
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM dead_letters").await, 1);

    // Rights taken away while signed in: the next read signs the page out and says why.
    let (code, _, err) = app.cli(&["admin", "revoke", &op.email]).await;
    assert_eq!(code, Some(0), "{err}");
    b.find("#dl-refresh").await.click().await.unwrap();
    b.wait_text("#signin-error", "the sign-out", |t| {
        t.starts_with("Signed out")
    })
    .await;
    assert!(!b.visible("#console").await);
    assert_eq!(
        b.text("#dl-list").await,
        "",
        "nothing of the console is left"
    );

    // Nothing survives a reload: the token was in the page's memory only.
    b.client.refresh().await.unwrap();
    assert!(b.visible("#signin").await);
    assert!(!b.visible("#console").await);
    b.close().await;
}
