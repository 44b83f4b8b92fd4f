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
use fantoccini::{Client, Locator};
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
        let session = crate::browser::start(
            "the console's browser tests",
            &["--window-size=1280,1000"],
            serde_json::Map::new(),
            serde_json::Map::new(),
        )
        .await;
        let (client, driver, profile) = (session.client, session.driver, session.profile);
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

/// setTimeout's longest delay: 2^31 − 1 ms (24.8 days); a longer one fires at once.
const LONGEST_TIMER_MS: i64 = 2_147_483_647;

/// A token that lives longer than setTimeout can wait (`JWT_TTL_SECS` at its 30-day maximum):
/// the page keeps the session, arming its sign-out timer for at most the longest delay and
/// again for what is left when that one fires, instead of signing out at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_longer_than_any_timer_keeps_the_session() {
    let ttl_secs: i64 = 2_592_000;
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Memory,
        &[("JWT_TTL_SECS", &ttl_secs.to_string())],
    )
    .await;
    let op = app.operator().await;
    let b = Browser::start("long-token").await;
    b.goto(&app.url("/console")).await;
    // Every delay the page asks of setTimeout is noted; one of the longest delay fires after
    // 100 ms instead, with the clock (`Date.now`) moved on by that delay, as if those 24.8
    // days had passed.
    b.js(&format!(
        "const orig = window.setTimeout.bind(window); const now = Date.now.bind(Date); \
         window.__delays = []; window.__skipped = 0; \
         Date.now = () => now() + window.__skipped; \
         window.setTimeout = (f, d, ...rest) => {{ window.__delays.push(d); \
           if (d < {LONGEST_TIMER_MS}) return orig(f, d, ...rest); \
           return orig(() => {{ window.__skipped += d; f(...rest); }}, 100); }}; \
         return true"
    ))
    .await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#whoami", "the operator's email", |t| t == op.email)
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        b.visible("#console").await,
        "still signed in: {:?}",
        b.text("#signin-error").await
    );
    assert!(!b.visible("#signin-error").await);
    let delays = b.js("return window.__delays").await;
    let delays: Vec<i64> = delays
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap() as i64)
        .collect();
    assert!(
        delays.iter().all(|d| *d <= LONGEST_TIMER_MS),
        "no timer longer than setTimeout can wait: {delays:?}"
    );
    // The first sign-out timer waited the longest delay (cut short here); the next one is armed
    // for what is left of the token's life.
    assert!(delays.contains(&LONGEST_TIMER_MS), "{delays:?}");
    let left = ttl_secs * 1000 - LONGEST_TIMER_MS;
    assert!(
        delays.iter().any(|d| (left - 60_000..=left).contains(d)),
        "re-armed for the {left} ms left: {delays:?}"
    );
    // And the session works: the figures are read again.
    app.exec(
        "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, \
         last_failed_at, invalid) VALUES (NULL, 'invalid message: x', 0, 'x', 0, 0, FALSE)",
    )
    .await;
    b.wait_text("#fig-dead_letters", "the new dead letter", is("1"))
        .await;
    assert!(b.visible("#console").await);
    b.close().await;
}

/// A text of `n` characters as a mail server could word it, between two markers.
fn long_text(n: usize) -> String {
    let mut text = "BEGIN-OF-TEXT 554 5.7.1 ".to_string();
    while text.len() < n - 12 {
        text.push_str("the message was refused by policy; ");
    }
    text.truncate(n - 12);
    text.push_str(" END-OF-TEXT");
    text
}

/// A mail server's refusal of 90 000 characters, stored whole (as a release before the cap
/// stored it), and a poison message as long: each is shown folded, to be opened on demand,
/// and the page stays a few screens tall, opened or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_very_long_text_is_shown_folded() {
    let h = Harness::new(Backend::Sqlite, "lease").await;
    let app = &h.app;
    let (_, event_id, worker) = h.dead_lettered_change().await;
    let long = long_text(90_000);
    app.exec(&format!("UPDATE dead_letters SET reason = '{long}'"))
        .await;
    app.exec(&format!(
        "UPDATE processed_events SET last_error = '{long}'"
    ))
    .await;
    h.enqueue(&long).await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::Invalid]
    );
    let op = app.operator().await;

    let b = Browser::start("long-text").await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#dl-total", "2 dead letters", is("2")).await;
    b.find("#event-id")
        .await
        .send_keys(&format!("{event_id}\u{E007}"))
        .await
        .unwrap();
    b.wait_text("#timeline", "the dead letter", |t| {
        t.contains("dead letters")
    })
    .await;
    let height = || async {
        b.js("return document.documentElement.scrollHeight")
            .await
            .as_i64()
            .unwrap()
    };
    let folded = height().await;
    b.shot("1-folded").await;
    assert!(folded < 3000, "the page is {folded} px tall");

    // Each long text is folded: the list's reason and body, the story's last error and reason.
    let closed = "details.fold:not([open])";
    assert_eq!(
        b.count(&format!("#dl-list {closed}")).await,
        2,
        "the event's reason and the poison message's body"
    );
    assert_eq!(b.count(&format!("#timeline {closed}")).await, 2);
    // Opened from the keyboard, a text is there whole, in a box of its own height.
    let summary = b.find("#dl-list details.fold.reason > summary").await;
    summary.send_keys(" ").await.unwrap();
    b.find("#dl-list details.fold.reason[open]").await;
    let whole = b
        .js("return document.querySelector('#dl-list details.fold.reason[open] .whole').textContent")
        .await;
    assert_eq!(whole, json!(long), "the whole text, opened");
    let opened = height().await;
    b.shot("2-opened").await;
    assert!(
        opened < folded + 1000,
        "opened, the page is {opened} px tall"
    );
    b.close().await;
}

/// `n` dead letters of events (each refused for good by the mail server), written straight into
/// the database queue's table: enough of them make the page several screens tall. Returns their
/// event ids, oldest first (the list shows them newest first).
async fn many_dead_letters(app: &TestApp, n: usize) -> Vec<String> {
    let ids: Vec<String> = (0..n).map(|i| format!("ev-many-{i:03}")).collect();
    let rows: Vec<String> = ids
        .iter()
        .map(|id| {
            format!(
                "('{id}', 'rejected by the mail server: permanent error (554): 5.7.1 message \
                 rejected', 1, '{{\"event_id\": \"{id}\"}}', 1700000000000, 1700000000000, FALSE)"
            )
        })
        .collect();
    app.exec(&format!(
        "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, \
         last_failed_at, invalid) VALUES {}",
        rows.join(", ")
    ))
    .await;
    ids
}

/// Whether the element `css` finds is within the window, top and bottom.
const IN_VIEW: &str = "const r = document.querySelector(arguments[0]).getBoundingClientRect(); \
     return r.top >= 0 && r.bottom <= window.innerHeight";

impl Browser {
    async fn in_view(&self, css: &str) -> bool {
        self.client
            .execute(IN_VIEW, vec![json!(css)])
            .await
            .expect("script")
            .as_bool()
            .expect("a boolean")
    }

    /// The id of the element that has the focus.
    async fn focused_id(&self) -> String {
        let id = self.js("return document.activeElement.id").await;
        id.as_str().unwrap_or_default().to_string()
    }

    /// Waits (up to 20 s) until the element with this id has the focus.
    async fn wait_focus(&self, id: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let focused = self.focused_id().await;
            if focused == id {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "#{id} never got the focus; #{focused:?} has it"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// An event id in the list, far down the page, opens the event's story, which is drawn above
/// the list: the story comes into view with the focus on it, from the keyboard and the mouse.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_story_opened_from_the_list_comes_into_view_with_the_focus() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let ids = many_dead_letters(&app, 20).await;
    let op = app.operator().await;
    let b = Browser::start("story-focus").await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#dl-total", "20 dead letters", is("20")).await;

    // The oldest letter, at the foot of the page, from the keyboard: Enter on its event id.
    let last = "#dl-list .letter:last-child .event-link";
    let link = b.find(last).await;
    assert_eq!(link.text().await.unwrap(), ids[0]);
    link.send_keys("\u{E007}").await.unwrap();
    b.wait_text("#story-heading", "the oldest event", |t| {
        t.contains(&ids[0])
    })
    .await;
    b.wait_focus("story-heading").await;
    assert!(b.in_view("#story-heading").await, "the story is in view");
    b.shot("1-from-the-keyboard").await;

    // Another one, clicked, from the foot of the page again.
    b.js("window.scrollTo(0, document.documentElement.scrollHeight); return true")
        .await;
    assert!(
        !b.in_view("#story-heading").await,
        "the page is tall enough for the story to be out of view"
    );
    let second = "#dl-list .letter:nth-last-child(2) .event-link";
    b.find(second).await.click().await.unwrap();
    b.wait_text("#story-heading", "the second event", |t| {
        t.contains(&ids[1])
    })
    .await;
    b.wait_focus("story-heading").await;
    assert!(b.in_view("#story-heading").await, "the story is in view");
    b.close().await;
}

/// Moving to another page of dead letters, from the foot of the list, goes to the top of the
/// new page: the list's heading in view and focused, the first letter of the page below it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_page_of_dead_letters_starts_at_its_top() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    many_dead_letters(&app, 45).await;
    let op = app.operator().await;
    let b = Browser::start("paging").await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#dl-page", "three pages", is("page 1 of 3"))
        .await;

    // Older, from the keyboard at the foot of page 1.
    b.find("#dl-next")
        .await
        .send_keys("\u{E007}")
        .await
        .unwrap();
    b.wait_text("#dl-page", "page 2", is("page 2 of 3")).await;
    b.wait_focus("dl-title").await;
    assert!(
        b.in_view("#dl-title").await,
        "the list's heading is in view"
    );
    assert_eq!(
        b.text("#dl-list .letter:first-child .event-link").await,
        "ev-many-024",
        "page 2 starts with the 21st newest"
    );
    b.shot("1-page-2").await;

    // Newer, clicked at the foot of page 2.
    b.js("window.scrollTo(0, document.documentElement.scrollHeight); return true")
        .await;
    assert!(!b.in_view("#dl-title").await);
    b.find("#dl-prev").await.click().await.unwrap();
    b.wait_text("#dl-page", "page 1", is("page 1 of 3")).await;
    b.wait_focus("dl-title").await;
    assert!(
        b.in_view("#dl-title").await,
        "the list's heading is in view"
    );
    b.close().await;
}

/// The bidi controls: embeddings and overrides, isolates, marks.
const BIDI_CONTROLS: &str = "\u{202A}\u{202B}\u{202C}\u{202D}\u{202E}\u{2066}\u{2067}\u{2068}\u{2069}\u{200E}\u{200F}\u{061C}";

/// The first element from the one holding the text node up that isolates its content from
/// the text around it, and that content; for every text node under `root` containing `marker`.
const ISOLATED: &str = "const [root, marker] = arguments; const out = []; \
     const walk = document.createTreeWalker(document.querySelector(root), NodeFilter.SHOW_TEXT); \
     while (walk.nextNode()) { const t = walk.currentNode; if (!t.data.includes(marker)) continue; \
       let e = t.parentElement; \
       while (e && !['isolate', 'isolate-override', 'plaintext'].includes(getComputedStyle(e).unicodeBidi)) \
         e = e.parentElement; \
       out.push(e ? e.textContent : null); } \
     return out";

impl Browser {
    /// For each text node under `root` containing `marker`: the text of the nearest element
    /// that isolates it (`None` if none does).
    async fn isolated(&self, root: &str, marker: &str) -> Vec<Option<String>> {
        let v = self
            .client
            .execute(ISOLATED, vec![json!(root), json!(marker)])
            .await
            .expect("script");
        serde_json::from_value(v).expect("a list")
    }
}

/// A right-to-left override (and every other bidi control) in a job's title, a reason, a last
/// error and a message body: each is shown as a marked escape (`\u{202E}`), never as the
/// control itself, and each piece of outside text is isolated (`<bdi>`), so none can reorder
/// the text around it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bidi_controls_are_shown_and_cannot_reorder_the_page() {
    let h = Harness::new(Backend::Sqlite, "lease").await;
    let app = &h.app;
    let (s, event_id, worker) = h.dead_lettered_change().await;
    // A title stored before the API refused bidi controls in one-line fields.
    let title = "Payroll \u{202E}fdp.exe";
    app.exec(&format!(
        "UPDATE jobs SET title = '{title}' WHERE id = {}",
        s.job_id
    ))
    .await;
    let reason = format!("refused \u{202E}olleh{BIDI_CONTROLS} by policy");
    app.exec(&format!(
        "UPDATE dead_letters SET reason = '{reason}'; UPDATE processed_events SET last_error = '{reason}'"
    ))
    .await;
    let body = "poison \u{2067}\u{202E}tfel\u{2069} body";
    h.enqueue(body).await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::Invalid]
    );
    let op = app.operator().await;

    let b = Browser::start("bidi").await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#dl-total", "2 dead letters", is("2")).await;
    b.find("#event-id")
        .await
        .send_keys(&format!("{event_id}\u{E007}"))
        .await
        .unwrap();
    b.wait_text("#timeline", "the dead letter", |t| {
        t.contains("dead letters")
    })
    .await;
    b.shot("1-bidi").await;

    // No control is left in the page's text; each shows as its escape.
    let shown = b.js("return document.body.innerText").await;
    let shown = shown.as_str().unwrap();
    for c in BIDI_CONTROLS.chars() {
        assert!(
            !shown.contains(c),
            "U+{:04X} is in the page's text as it is",
            c as u32
        );
    }
    let escaped_title = "Payroll \\u{202E}fdp.exe";
    let escaped_reason = "refused \\u{202E}olleh\\u{202A}\\u{202B}\\u{202C}\\u{202D}\\u{202E}\
         \\u{2066}\\u{2067}\\u{2068}\\u{2069}\\u{200E}\\u{200F}\\u{061C} by policy";
    let escaped_body = "poison \\u{2067}\\u{202E}tfel\\u{2069} body";
    let timeline = b.text("#timeline").await;
    assert!(timeline.contains(escaped_title), "{timeline}");
    assert!(timeline.contains(escaped_reason), "{timeline}");
    let list = b.text("#dl-list").await;
    assert!(list.contains(escaped_reason), "{list}");
    assert!(list.contains(escaped_body), "{list}");
    // The escapes are marked as such, not the text's own backslashes.
    assert!(b.count("#timeline .control").await >= 13);

    // Each piece of outside text is isolated, alone: the title from the sentence around it,
    // each reason, last error and body from its neighbours.
    assert_eq!(
        b.isolated("#timeline", "Payroll").await,
        vec![Some(escaped_title.to_string())]
    );
    for root in ["#timeline", "#dl-list"] {
        let pieces = b.isolated(root, "olleh").await;
        assert!(!pieces.is_empty());
        for piece in pieces {
            assert_eq!(piece.as_deref(), Some(escaped_reason), "in {root}");
        }
    }
    assert_eq!(
        b.isolated("#dl-list", "poison").await,
        vec![Some(escaped_body.to_string())]
    );
    // Event ids too.
    for piece in b.isolated("#console", &event_id).await {
        assert!(
            piece.is_some(),
            "event {event_id} is isolated wherever it shows"
        );
    }
    b.close().await;
}

/// The server out of reach (a proxy in front of it cut): the figures stay, marked stale, with
/// the time they were last read and that the server cannot be reached; once it answers again
/// the mark goes and the figures are current.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn figures_say_so_when_the_server_cannot_be_reached() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let proxy = crate::proxy::TcpProxy::start(&app.addr.to_string()).await;
    let op = app.operator().await;
    let b = Browser::start("stale").await;
    b.goto(&format!("http://127.0.0.1:{}/console", proxy.port))
        .await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#fig-dead_letters", "no dead letter", is("0"))
        .await;
    let fresh = b
        .wait_text("#figures-updated", "the time it was read", |t| {
            t.starts_with("last updated ")
        })
        .await;
    assert!(!b.visible("#figures-stale").await);
    assert_eq!(b.count(".figures.stale").await, 0);

    proxy.cut();
    let stale = b
        .wait_text("#figures-updated", "the failed refresh", |t| {
            t.contains("cannot reach the server")
        })
        .await;
    // The time of the last figures read, which may be a refresh after `fresh`.
    assert!(
        stale.starts_with("last updated ")
            && stale.contains(" — cannot reach the server")
            && stale.len() > fresh.len(),
        "{stale:?}"
    );
    assert!(
        b.visible("#figures-stale").await,
        "the figures are marked stale"
    );
    assert_eq!(b.count(".figures.stale").await, 1);
    assert_eq!(
        b.text("#fig-dead_letters").await,
        "0",
        "the last figures stay"
    );
    // The jobs waiting for review, read with them, are marked the same way.
    b.wait_text("#review-updated", "the failed refresh", |t| {
        t.starts_with("last updated ") && t.contains(" — cannot reach the server")
    })
    .await;
    assert!(b.visible("#review-stale").await);
    assert_eq!(b.count("#review-list.stale").await, 1);
    b.shot("1-stale").await;

    // Back: the next refresh clears the mark and shows what changed meanwhile.
    app.exec(
        "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, \
         last_failed_at, invalid) VALUES (NULL, 'invalid message: x', 0, 'x', 0, 0, FALSE)",
    )
    .await;
    proxy.restore();
    b.wait_text("#fig-dead_letters", "the new dead letter", is("1"))
        .await;
    b.wait_text("#figures-updated", "a fresh time", |t| {
        t.starts_with("last updated ") && !t.contains("cannot")
    })
    .await;
    assert!(!b.visible("#figures-stale").await);
    assert_eq!(b.count(".figures.stale").await, 0);
    b.wait_text("#review-updated", "a fresh time", |t| {
        t.starts_with("last updated ") && !t.contains("cannot")
    })
    .await;
    assert!(!b.visible("#review-stale").await);
    b.close().await;
}

/// A sent email's story says how it went (on the first try, or after how many failed sends)
/// rather than a bare "0 attempts"; a dead letter an operator redrove leaves the redrive in the
/// story, before the send it led to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_story_tells_how_the_email_was_sent_and_that_it_was_redriven() {
    let h = Harness::new(Backend::Sqlite, "lease").await;
    let app = &h.app;
    // Sent on the first try.
    let (_, first_try) = h.status_change().await;
    let worker = h.worker().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    // Sent after one failed send.
    let (_, second_try) = h.status_change().await;
    h.smtp.fail_next(1);
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::Failed]
    );
    h.later().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    // Refused for good, redriven by an operator, then sent.
    let (_, redriven, _) = h.dead_lettered_change().await;
    let op = app.operator().await;
    let list = app.get("/api/admin/dead-letters", Some(&op.token)).await;
    let id = list.expect(200)["items"][0]["id"].clone();
    app.post(
        "/api/admin/dead-letters/redrive",
        Some(&op.token),
        json!({ "ids": [id] }),
    )
    .await
    .expect(200);
    h.later().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);

    let b = Browser::start("sent").await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    // Three status changes, and the three applications' confirmations to their candidates.
    b.wait_text("#fig-sent_last_hour", "six sent emails", is("6"))
        .await;
    let story = |event_id: String| {
        let b = &b;
        async move {
            let input = b.find("#event-id").await;
            input.clear().await.unwrap();
            input
                .send_keys(&format!("{event_id}\u{E007}"))
                .await
                .unwrap();
            b.wait_text("#story-heading", "the event", |t| t.contains(&event_id))
                .await;
            b.wait_text("#timeline", "the send", |t| t.contains("Email sent"))
                .await
        }
    };

    let timeline = story(first_try).await;
    assert!(timeline.contains("Sent on the first try."), "{timeline}");
    assert!(!timeline.contains("0 attempts"), "{timeline}");

    let timeline = story(second_try).await;
    assert!(
        timeline.contains("Sent after 1 failed attempt."),
        "{timeline}"
    );

    let timeline = story(redriven).await;
    b.shot("1-redriven").await;
    assert!(!timeline.contains("0 attempts"), "{timeline}");
    let redrive = timeline
        .find("Redriven by an operator")
        .unwrap_or_else(|| panic!("the redrive is in the story: {timeline}"));
    let sent = timeline.find("Email sent").unwrap();
    assert!(
        redrive < sent,
        "the redrive comes before the send: {timeline}"
    );
    assert!(
        timeline.contains("1 failed attempt before it"),
        "{timeline}"
    );
    assert!(
        timeline.contains("Sent on the first try after the redrive."),
        "{timeline}"
    );
    b.close().await;
}

/// A webhook endpoint whose receiver answers 500 shows among the failing endpoints, with its
/// company and its last answer, and the event's story shows its deliveries: one delivered, one
/// waiting for a retry. The endpoint's URL, whatever its company wrote, shows as text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_webhooks_and_an_events_deliveries_show_in_the_console() {
    use axum::http::StatusCode;
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Memory,
        &[("WEBHOOK_ALLOW_PRIVATE", "true")],
    )
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let receiver = axum::Router::new()
        .route(
            "/ok",
            axum::routing::post(|| async { StatusCode::NO_CONTENT }),
        )
        .route(
            "/{other}",
            axum::routing::post(|| async { StatusCode::INTERNAL_SERVER_ERROR }),
        );
    tokio::spawn(async move { axum::serve(listener, receiver).await });
    let op = app.operator().await;
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme <b>Hiring</b>").await;
    let job = job_id(&app.job(&employer, company, json!({})).await);
    let failing_url = format!("{base}/{}", "%3Cimg%20src=x%3E");
    for url in [format!("{base}/ok"), failing_url.clone()] {
        app.post(
            &format!("/api/companies/{company}/webhooks"),
            Some(&employer.token),
            json!({"url": url, "events": ["application.submitted"]}),
        )
        .await
        .expect(201);
    }
    let candidate = app.user("candidate").await;
    app.post(
        &format!("/api/jobs/{job}/applications"),
        Some(&candidate.token),
        json!({}),
    )
    .await
    .expect(201);
    let event_id = app
        .scalar_text("SELECT event_id FROM events WHERE type = 'application.submitted'")
        .await
        .expect("the confirmation's event");
    let worker = std::sync::Arc::new(
        jobboard::run::build_worker(
            &app.config(&[("WEBHOOK_ALLOW_PRIVATE", "true")]),
            app.state.store.clone(),
        )
        .await
        .expect("worker"),
    );
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(worker.deliver_webhooks(stop.clone()));
    wait_until("both attempts", || async {
        app.scalar_i64("SELECT COUNT(*) FROM webhook_attempts")
            .await
            == 2
    })
    .await;
    stop.cancel();

    let b = Browser::start("webhooks").await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    let list = b
        .wait_text("#wh-list", "the failing endpoint", |t| {
            t.contains("HTTP 500")
        })
        .await;
    assert_eq!(b.text("#wh-total").await, "1");
    assert!(list.contains(&failing_url), "{list}");
    assert!(list.contains("Acme <b>Hiring</b>"), "{list}");
    assert!(list.contains("never a success"), "{list}");
    assert!(list.contains("1 delivery waiting."), "{list}");
    assert!(list.contains("the receiver answered 500"), "{list}");
    assert!(!list.contains(&format!("{base}/ok")), "{list}");
    assert_eq!(
        b.js("return document.querySelectorAll('#wh-list img, #wh-list b').length")
            .await,
        0
    );

    let input = b.find("#event-id").await;
    input
        .send_keys(&format!("{event_id}\u{E007}"))
        .await
        .unwrap();
    let timeline = b
        .wait_text("#timeline", "the deliveries", |t| {
            t.contains("Webhook delivered")
        })
        .await;
    b.shot("1-deliveries").await;
    assert!(
        timeline.contains("Webhook failed; waiting for a retry"),
        "{timeline}"
    );
    assert!(timeline.contains("answered HTTP 500"), "{timeline}");
    assert!(timeline.contains("answered HTTP 204"), "{timeline}");
    assert!(timeline.contains("webhook-id msg_"), "{timeline}");
    b.close().await;
}

/// The pages and their assets are revalidated on each use (`Cache-Control: no-cache`: their
/// URLs do not change from one release to the next, so a copy kept without asking would pair
/// an old script with a new API) and carry an ETag from their content, so that asking costs a
/// 304 without a body while nothing changed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pages_and_assets_are_revalidated_by_their_etag() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let mut etags = std::collections::BTreeSet::new();
    for path in [
        "/console",
        "/console/console.css",
        "/console/console.js",
        "/docs",
        "/docs/docs.css",
        "/docs/docs.js",
    ] {
        let url = app.url(path);
        let r = app.client.get(&url).send().await.unwrap();
        assert_eq!(r.status(), 200, "{path}");
        let header = |r: &reqwest::Response, name: &str| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        assert_eq!(
            header(&r, "cache-control").as_deref(),
            Some("no-cache"),
            "{path}"
        );
        let policy = header(&r, "content-security-policy");
        assert!(
            policy
                .as_deref()
                .is_some_and(|p| p.contains("script-src 'self'")),
            "{path}: the pages' policy"
        );
        let etag = header(&r, "etag").unwrap_or_else(|| panic!("{path} has an ETag"));
        assert!(
            etag.starts_with('"') && etag.ends_with('"') && etag.len() > 10,
            "{path}: a strong ETag, {etag}"
        );
        assert!(etags.insert(etag.clone()), "{path}: each its own ETag");
        let body = r.bytes().await.unwrap();
        assert!(!body.is_empty());
        // The same again: the same ETag.
        let again = app.client.get(&url).send().await.unwrap();
        assert_eq!(header(&again, "etag").as_ref(), Some(&etag), "{path}");

        // Revalidated: 304 without a body while the ETag matches (also weakly, in a list, or
        // `*`), with the headers a 200 would have had.
        for matching in [
            etag.clone(),
            format!("W/{etag}"),
            format!("\"other\", {etag}"),
            "*".to_string(),
        ] {
            let r = app
                .client
                .get(&url)
                .header("if-none-match", &matching)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 304, "{path} with If-None-Match: {matching}");
            assert_eq!(header(&r, "etag").as_ref(), Some(&etag), "{path}");
            assert_eq!(
                header(&r, "cache-control").as_deref(),
                Some("no-cache"),
                "{path}"
            );
            // A browser keeps the headers of a 304 in place of those it stored: the page's own
            // policy, not the API's `default-src 'none'`, which would block its script.
            assert_eq!(header(&r, "content-security-policy"), policy, "{path}");
            assert!(r.bytes().await.unwrap().is_empty(), "{path}: no body");
        }
        // An ETag of another version: the whole answer.
        let r = app
            .client
            .get(&url)
            .header("if-none-match", "\"0000000000000000\"")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(r.bytes().await.unwrap(), body, "{path}");
    }
}

/// The app with `JOB_MODERATION=true`: a new job waits for an operator's review.
const MODERATED: &[(&str, &str)] = &[("JOB_MODERATION", "true")];

fn job_id(job: &Value) -> i64 {
    job["id"].as_i64().expect("a job's id")
}

/// A text as the console shows it: each bidi control as its escape (`\u{202E}`).
fn escaped(text: &str) -> String {
    text.chars()
        .map(|c| {
            if BIDI_CONTROLS.contains(c) {
                format!("\\u{{{:04X}}}", c as u32)
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A job as `who` reads it through the API.
async fn job_as(app: &TestApp, who: &User, id: i64) -> Value {
    let r = app.get(&format!("/api/jobs/{id}"), Some(&who.token)).await;
    r.expect(200).clone()
}

impl Browser {
    /// Whether the focused element is of class `class`, in the review list's item of job `id`.
    async fn focus_in_job(&self, class: &str, id: i64) -> bool {
        let script = "const [cls, id] = arguments; const e = document.activeElement; \
             const li = e && e.closest('#review-list li'); \
             return Boolean(li && e.classList.contains(cls) && li.dataset.id === String(id))";
        self.client
            .execute(script, vec![json!(class), json!(id)])
            .await
            .expect("script")
            .as_bool()
            .expect("a boolean")
    }
}

/// A job whose every text is written to harm the operator who reviews it: markup and script in
/// its title, company and location, bidi overrides, a description of the longest allowed
/// (20 000 characters) that starts with markup. Each shows as text, its controls as escapes,
/// isolated; the description folded, opened whole on demand; nothing runs; and the refreshes
/// every 5 seconds leave the opened description open and the focus where it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_job_text_waiting_for_review_shows_as_text() {
    let app = TestApp::spawn_with(Backend::Sqlite, CacheKind::Memory, MODERATED).await;
    let employer = app.user("employer").await;
    let company_name = "<b>Acme</b> \u{202E}gnitsoh";
    let company = app.company(&employer, "Acme").await;
    let title = "<script>window.__pwned=3</script> Payroll \u{202E}fdp.exe";
    let location = r#"<img src=x onerror="window.__pwned=4"> Berlin"#;
    let end = " END-OF-DESCRIPTION";
    let mut description = format!("{HOSTILE}\nPaid \u{202E}olleh\u{2069} weekly\n");
    let mut line = 0;
    while description.chars().count() < 20_000 {
        description.push_str(&format!("line {line} of the description\n"));
        line += 1;
    }
    let mut description: String = description.chars().take(20_000 - end.len()).collect();
    description.push_str(end);
    assert_eq!(description.chars().count(), 20_000);
    let job = app
        .job(
            &employer,
            company,
            json!({"title": "Payroll", "location": location, "description": "Paid weekly"}),
        )
        .await;
    assert_eq!(job["status"], "pending_review");
    let id = job_id(&job);
    // The bidi controls as rows stored before the API refused them: the console shows such
    // rows as text too.
    let quoted = |t: &str| t.replace('\'', "''");
    app.exec(&format!(
        "UPDATE companies SET name = '{}' WHERE id = {company}; \
         UPDATE jobs SET title = '{}', description = '{}' WHERE id = {id}",
        quoted(company_name),
        quoted(title),
        quoted(&description)
    ))
    .await;
    let op = app.operator().await;

    let b = Browser::start("review-hostile").await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#review-total", "one job waiting", is("1"))
        .await;
    let item = format!("#review-list li[data-id='{id}']");
    assert_eq!(b.text(&format!("{item} h3")).await, escaped(title));
    assert_eq!(
        b.text(&format!("{item} .company")).await,
        escaped(company_name)
    );
    assert_eq!(b.text(&format!("{item} .location")).await, location);
    // The description, folded: its start, its length, a control that opens it.
    let closed = format!("{item} details.fold.description:not([open])");
    let summary = b.text(&format!("{closed} > summary")).await;
    assert!(summary.starts_with("<img src=x"), "{summary}");
    assert!(summary.contains("20,000 characters"), "{summary}");
    b.shot("1-folded").await;

    // Nothing ran, no markup became an element, the token is kept nowhere.
    assert_eq!(
        b.js("return window.__pwned === undefined").await,
        json!(true)
    );
    assert_eq!(b.count("img").await, 0, "no markup became an element");
    assert_eq!(b.count("#review b, #review script").await, 0);
    assert_eq!(b.count("script").await, 1, "only the page's own script");
    let kept = b
        .js("return [localStorage.length, sessionStorage.length, document.cookie]")
        .await;
    assert_eq!(kept, json!([0, 0, ""]));

    // No control is left in the page's text, and each piece is isolated, alone.
    let shown = b.js("return document.body.innerText").await;
    for c in BIDI_CONTROLS.chars() {
        assert!(
            !shown.as_str().unwrap().contains(c),
            "U+{:04X} is in the page's text as it is",
            c as u32
        );
    }
    assert_eq!(
        b.isolated("#review-list", "Payroll").await,
        vec![Some(escaped(title))]
    );
    assert_eq!(
        b.isolated("#review-list", "gnitsoh").await,
        vec![Some(escaped(company_name))]
    );
    assert_eq!(
        b.isolated("#review-list", "Berlin").await,
        vec![Some(location.to_string())]
    );

    // Opened from the keyboard: the whole description, in a box of its own height.
    b.find(&format!("{closed} > summary"))
        .await
        .send_keys(" ")
        .await
        .unwrap();
    let opened = format!("{item} details.fold.description[open]");
    b.find(&opened).await;
    let whole = b
        .js(&format!(
            "return document.querySelector(\"{opened} .whole\").textContent"
        ))
        .await;
    assert_eq!(
        whole,
        json!(escaped(&description)),
        "the whole text, opened"
    );
    let pieces = b.isolated("#review-list", "olleh").await;
    assert!(pieces.iter().all(Option::is_some), "{pieces:?}");
    assert!(pieces.contains(&Some(escaped(&description))));
    let height = b.js("return document.documentElement.scrollHeight").await;
    assert!(
        height.as_i64().is_some_and(|h| h < 3000),
        "opened, the page is {height} px tall"
    );
    b.shot("2-opened").await;

    // A refresh or two later the description is still open, the focus still on its control.
    let read = b.text("#review-updated").await;
    b.wait_text("#review-updated", "a refresh", |t| {
        t != read && t.starts_with("last updated")
    })
    .await;
    assert_eq!(b.count(&opened).await, 1, "still open after a refresh");
    let focus = b
        .js("const e = document.activeElement; \
             return e.tagName === 'SUMMARY' && e.parentElement.matches('details.description[open]')")
        .await;
    assert_eq!(focus, json!(true), "the focus stays on the description");

    // The questions name the job by its texts as well, isolated and escaped.
    b.find(&format!("{item} .approve"))
        .await
        .click()
        .await
        .unwrap();
    b.find("#confirm[open]").await;
    assert_eq!(
        b.isolated("#confirm-text", "Payroll").await,
        vec![Some(escaped(title))]
    );
    b.answer(false).await;
    assert!(
        b.focus_in_job("approve", id).await,
        "Cancel gives the focus back to the job's Approve"
    );
    b.find(&format!("{item} .reject"))
        .await
        .click()
        .await
        .unwrap();
    b.find("#reject[open]").await;
    assert_eq!(
        b.isolated("#reject-question", "gnitsoh").await,
        vec![Some(escaped(company_name))]
    );
    assert_eq!(
        b.js("return window.__pwned === undefined").await,
        json!(true)
    );
    assert_eq!(b.count("img").await, 0);

    // At a phone's width, the dialog open over the list: nothing scrolls sideways.
    b.client.set_window_size(390, 844).await.unwrap();
    let fits = b
        .js("return window.innerWidth <= 400 && document.documentElement.scrollWidth <= window.innerWidth")
        .await;
    assert_eq!(fits, json!(true), "the page scrolls sideways at 390 px");
    b.shot("3-phone").await;
    b.close().await;
}

mod an_operator_approves_and_rejects_jobs_waiting_for_review {
    use crate::helpers::Backend;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::reviews(Backend::Sqlite, "review-sqlite").await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::reviews(Backend::Postgres, "review-postgres").await
    }
}

/// The review from the browser: the empty state; jobs submitted meanwhile appear on their own,
/// oldest first; Approve (asked first) opens a job and puts it in searches; Reject asks for a
/// reason, refuses an empty one in the page, and leaves the job `rejected` with it; a job
/// another operator decided meanwhile is said so (409) and the list read again; the server's
/// own refusal of a reason (422) shows in the dialog. After each action the focus is on the
/// next job, or on the message that says what went wrong.
async fn reviews(backend: Backend, case: &'static str) {
    let app = TestApp::spawn_with(backend, CacheKind::Memory, MODERATED).await;
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let op = app.operator().await;
    let other = app.operator().await;

    let b = Browser::start(case).await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#review-total", "no job waiting", is("0"))
        .await;
    assert!(b.visible("#review-empty").await);
    assert!(
        b.text("#review-empty")
            .await
            .starts_with("No job is waiting for review."),
        "the empty state says so"
    );
    b.shot("1-empty").await;

    // Submitted while the page is open: listed on its own, oldest first.
    let titles = [
        "Zephyr welder",
        "Glassblower",
        "Cooper",
        "Farrier",
        "Thatcher",
    ];
    let mut ids = Vec::new();
    for title in titles {
        let job = app.job(&employer, company, json!({"title": title})).await;
        assert_eq!(job["status"], "pending_review");
        ids.push(job_id(&job));
    }
    b.wait_text("#review-total", "five jobs waiting", is("5"))
        .await;
    assert!(!b.visible("#review-empty").await);
    assert_eq!(b.texts("#review-list .job h3").await, titles);
    assert_eq!(b.text("#review-page").await, "page 1 of 1");
    let facts = b.text("#review-list .job:first-child .facts").await;
    assert!(
        facts.contains("at Acme") && facts.contains("Berlin") && facts.contains("created"),
        "{facts}"
    );
    b.shot("2-waiting").await;
    let item = |id: i64| format!("#review-list li[data-id='{id}']");

    // Approve, from the keyboard: asked first; Cancel leaves the job waiting.
    let approve = format!("{} .approve", item(ids[0]));
    b.find(&approve).await.send_keys("\u{E007}").await.unwrap();
    assert!(b.text("#confirm-text").await.contains("Zephyr welder"));
    b.answer(false).await;
    assert_eq!(job_as(&app, &op, ids[0]).await["status"], "pending_review");
    b.find(&approve).await.send_keys("\u{E007}").await.unwrap();
    b.answer(true).await;
    b.wait_text("#review-notice", "the approval", |t| {
        t == "Approved job ".to_string()
            + &ids[0].to_string()
            + ", Zephyr welder at Acme: it is open and in searches."
    })
    .await;
    b.wait_text("#review-total", "four jobs waiting", is("4"))
        .await;
    assert_eq!(b.count(&item(ids[0])).await, 0);
    b.wait_focus(&format!("review-job-{}", ids[1])).await;
    // Open and in searches at once, for anyone.
    assert_eq!(job_as(&app, &employer, ids[0]).await["status"], "open");
    let found = app.get("/api/jobs?q=zephyr", None).await;
    let found: Vec<i64> = found.expect(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(job_id)
        .collect();
    assert_eq!(found, vec![ids[0]], "the approved job is searchable");

    // Reject: the reason is asked for, the focus in its box; an empty one (or only spaces) is
    // refused in the page, and nothing is sent.
    b.find(&format!("{} .reject", item(ids[1])))
        .await
        .send_keys("\u{E007}")
        .await
        .unwrap();
    b.find("#reject[open]").await;
    assert!(b.text("#reject-question").await.contains("Glassblower"));
    b.wait_focus("reject-reason").await;
    b.find("#reject-submit").await.click().await.unwrap();
    b.wait_text("#reject-error", "the page's refusal", |t| {
        t.starts_with("Give a reason")
    })
    .await;
    assert_eq!(b.count("#reject[open]").await, 1, "the dialog stays open");
    assert_eq!(
        b.find("#reject-reason")
            .await
            .attr("aria-invalid")
            .await
            .unwrap()
            .as_deref(),
        Some("true")
    );
    b.wait_focus("reject-reason").await;
    let reason = b.find("#reject-reason").await;
    reason.send_keys("  \n \u{3000} ").await.unwrap();
    assert!(!b.visible("#reject-error").await, "cleared while typing");
    b.find("#reject-submit").await.click().await.unwrap();
    b.wait_text("#reject-error", "the page's refusal", |t| {
        t.starts_with("Give a reason")
    })
    .await;
    b.shot("3-no-reason").await;
    let waiting = job_as(&app, &op, ids[1]).await;
    assert_eq!(waiting["status"], "pending_review");
    assert!(waiting["rejection_reason"].is_null());
    reason.clear().await.unwrap();
    reason.send_keys("Please name the salary.").await.unwrap();
    assert_eq!(b.text("#reject-length").await, "23");
    b.find("#reject-submit").await.click().await.unwrap();
    b.wait_text("#review-notice", "the rejection", |t| {
        t.starts_with("Rejected job ") && t.contains("Glassblower")
    })
    .await;
    assert_eq!(b.count("#reject[open]").await, 0);
    b.wait_text("#review-total", "three jobs waiting", is("3"))
        .await;
    b.wait_focus(&format!("review-job-{}", ids[2])).await;
    let rejected = job_as(&app, &op, ids[1]).await;
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["rejection_reason"], "Please name the salary.");
    app.get(&format!("/api/jobs/{}", ids[1]), None)
        .await
        .expect_problem(404, "not-found");

    // Another operator approves the job while this one is asked to confirm: 409, said plainly,
    // the list read again, the focus on the message.
    b.find(&format!("{} .approve", item(ids[2])))
        .await
        .click()
        .await
        .unwrap();
    b.find("#confirm[open]").await;
    app.post(
        &format!("/api/admin/jobs/{}/approve", ids[2]),
        Some(&other.token),
        json!({}),
    )
    .await
    .expect(200);
    b.answer(true).await;
    let said = b
        .wait_text("#review-notice", "the conflict", |t| {
            t.contains("was not approved")
        })
        .await;
    assert!(
        said.contains("Cooper")
            && said.contains("no longer waiting for review")
            && said.contains("another operator"),
        "{said}"
    );
    assert_eq!(b.count("#review-notice.error").await, 1);
    b.wait_text("#review-total", "two jobs waiting", is("2"))
        .await;
    assert_eq!(b.count(&item(ids[2])).await, 0, "the list was read again");
    b.wait_focus("review-notice").await;
    b.shot("4-conflict").await;

    // The same for a rejection: the reason written, the job rejected by another meanwhile.
    b.find(&format!("{} .reject", item(ids[3])))
        .await
        .click()
        .await
        .unwrap();
    b.find("#reject[open]").await;
    b.find("#reject-reason")
        .await
        .send_keys("Too vague.")
        .await
        .unwrap();
    app.post(
        &format!("/api/admin/jobs/{}/reject", ids[3]),
        Some(&other.token),
        json!({"reason": "A duplicate."}),
    )
    .await
    .expect(200);
    b.find("#reject-submit").await.click().await.unwrap();
    b.wait_text("#review-notice", "the conflict", |t| {
        t.contains("Farrier") && t.contains("was not rejected") && t.contains("another operator")
    })
    .await;
    assert_eq!(b.count("#reject[open]").await, 0);
    b.wait_text("#review-total", "one job waiting", is("1"))
        .await;
    b.wait_focus("review-notice").await;
    assert_eq!(
        job_as(&app, &op, ids[3]).await["rejection_reason"],
        "A duplicate.",
        "the first decision stands"
    );

    // The server checks the reason too: one the page let through but the server refuses (the
    // request's reason replaced on its way) shows the server's words in the dialog, which stays
    // open with what was written.
    b.js("const f = window.fetch; window.fetch = (url, init) => { \
            if (String(url).endsWith('/reject') && init && init.body) \
              init = Object.assign({}, init, { body: JSON.stringify({ reason: ' ' }) }); \
            return f(url, init); }; return true")
        .await;
    b.find(&format!("{} .reject", item(ids[4])))
        .await
        .click()
        .await
        .unwrap();
    b.find("#reject[open]").await;
    let reason = b.find("#reject-reason").await;
    reason.send_keys("Fine by the page.").await.unwrap();
    b.find("#reject-submit").await.click().await.unwrap();
    let refused = b
        .wait_text("#reject-error", "the server's refusal", |t| {
            t.starts_with("Not rejected")
        })
        .await;
    assert_eq!(refused, "Not rejected: reason must not be empty");
    assert_eq!(b.count("#reject[open]").await, 1);
    assert_eq!(
        reason.prop("value").await.unwrap().as_deref(),
        Some("Fine by the page.")
    );
    assert_eq!(job_as(&app, &op, ids[4]).await["status"], "pending_review");
    b.shot("5-server-refusal").await;
    // Escape closes it; the focus goes back to the job's Reject.
    reason.send_keys("\u{E00C}").await.unwrap();
    wait_until("the dialog closes", || async {
        b.count("#reject[open]").await == 0
    })
    .await;
    assert!(b.focus_in_job("reject", ids[4]).await);

    // The last one approved: the empty state, the focus on the section's heading.
    b.find(&format!("{} .approve", item(ids[4])))
        .await
        .click()
        .await
        .unwrap();
    b.answer(true).await;
    b.wait_text("#review-total", "no job waiting", is("0"))
        .await;
    assert!(b.visible("#review-empty").await);
    b.wait_focus("review-title").await;
    assert_eq!(job_as(&app, &op, ids[4]).await["status"], "open");
    b.close().await;
}

/// More jobs waiting than a page holds: the pager moves between pages from the keyboard, to the
/// top of the new page; a page emptied by a decision gives way to the last page there is.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_review_list_pages() {
    let app = TestApp::spawn_with(Backend::Sqlite, CacheKind::Memory, MODERATED).await;
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let mut ids = Vec::new();
    for n in 1..=21 {
        let title = format!("Job number {n:02}");
        ids.push(job_id(
            &app.job(&employer, company, json!({"title": title})).await,
        ));
    }
    let op = app.operator().await;
    let b = Browser::start("review-paging").await;
    b.goto(&app.url("/console")).await;
    b.sign_in(&op.email, &op.password).await;
    b.wait_text("#review-page", "two pages", is("page 1 of 2"))
        .await;
    assert_eq!(b.count("#review-list .job").await, 20);
    assert_eq!(
        b.text("#review-list .job:first-child h3").await,
        "Job number 01"
    );
    b.find("#review-next")
        .await
        .send_keys("\u{E007}")
        .await
        .unwrap();
    b.wait_text("#review-page", "page 2", is("page 2 of 2"))
        .await;
    b.wait_focus("review-title").await;
    assert!(b.in_view("#review-title").await);
    assert_eq!(b.texts("#review-list .job h3").await, ["Job number 21"]);
    assert_eq!(
        b.find("#review-next")
            .await
            .prop("disabled")
            .await
            .unwrap()
            .as_deref(),
        Some("true")
    );

    // The only job of page 2 approved: page 1, which is all there is now.
    b.find(&format!("#review-list li[data-id='{}'] .approve", ids[20]))
        .await
        .click()
        .await
        .unwrap();
    b.answer(true).await;
    b.wait_text("#review-page", "one page", is("page 1 of 1"))
        .await;
    assert_eq!(b.text("#review-total").await, "20");
    assert_eq!(b.count("#review-list .job").await, 20);
    b.close().await;
}

/// What a browser asked for and was answered, as a proxy in front of the app saw it: (path,
/// status) of each request, in order.
type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, u16)>>>;

/// A proxy on a port of its own that forwards every GET to `app` and records it; its address.
async fn recording_proxy(app: &TestApp, seen: Seen) -> String {
    let upstream = app.url("");
    let client = reqwest::Client::new();
    let forward = move |req: axum::extract::Request| {
        let (upstream, client, seen) = (upstream.clone(), client.clone(), seen.clone());
        async move {
            let path = req
                .uri()
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_default();
            let mut out = client.get(format!("{upstream}{path}"));
            for (name, value) in req.headers() {
                if name != "host" {
                    out = out.header(name, value);
                }
            }
            let res = out.send().await.expect("the app answers");
            let status = res.status();
            let headers = res.headers().clone();
            let body = res.bytes().await.expect("body");
            seen.lock().unwrap().push((path, status.as_u16()));
            let mut answer = axum::response::Response::new(axum::body::Body::from(body));
            *answer.status_mut() = status;
            for (name, value) in &headers {
                if name != "transfer-encoding" && name != "connection" {
                    answer.headers_mut().insert(name, value.clone());
                }
            }
            answer
        }
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let router = axum::Router::new().fallback(forward);
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}")
}

/// The icon: `/favicon.ico` (which browsers ask for by themselves) is an ICO image kept a week
/// by caches, the pages link it, and a browser that opens the console asks for nothing the
/// server does not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_browser_opening_the_console_finds_its_icon() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let r = app
        .client
        .get(app.url("/favicon.ico"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let header = |name: &str| {
        r.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(header("content-type"), "image/x-icon");
    assert_eq!(header("cache-control"), "public, max-age=604800");
    assert_eq!(header("x-content-type-options"), "nosniff");
    let icon = r.bytes().await.unwrap();
    // An ICO file: reserved 0, type 1 (icon), at least one image, each inside the file.
    assert_eq!(&icon[..4], &[0, 0, 1, 0]);
    let count = u16::from_le_bytes([icon[4], icon[5]]) as usize;
    assert!(count >= 1);
    for i in 0..count {
        let entry = &icon[6 + 16 * i..6 + 16 * (i + 1)];
        let size = u32::from_le_bytes(entry[8..12].try_into().unwrap()) as usize;
        let offset = u32::from_le_bytes(entry[12..16].try_into().unwrap()) as usize;
        assert!(offset + size <= icon.len(), "image {i} inside the file");
    }
    for page in ["/console", "/docs"] {
        let r = app.get(page, None).await;
        assert!(
            r.text
                .contains(r#"<link rel="icon" href="/favicon.ico" sizes="16x16 32x32">"#),
            "{page} links its icon: {}",
            r.text
        );
    }

    let seen: Seen = Default::default();
    let proxy = recording_proxy(&app, seen.clone()).await;
    let b = Browser::start("favicon").await;
    b.goto(&format!("{proxy}/console")).await;
    let asked = || {
        let seen = seen.clone();
        async move {
            seen.lock()
                .unwrap()
                .iter()
                .any(|(path, _)| path.starts_with("/favicon"))
        }
    };
    wait_until("the browser asks for the console's icon", asked).await;
    b.close().await;
    let seen = seen.lock().unwrap().clone();
    assert!(
        seen.iter().all(|(_, status)| *status == 200),
        "every request of the browser answered: {seen:?}"
    );
}
