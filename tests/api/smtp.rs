//! The SMTP side of the worker's promise: a mail server that refuses the *session* (its greeting,
//! the login, every message until STARTTLS) is an outage of the mail service (docs/guarantee.md),
//! never a dead letter: the worker process stops sending, counts no attempt, reports itself not
//! ready, and sends every email once when the server takes it again; a server that refuses one
//! *message* (a 4xx at RCPT TO or DATA) fails that message alone. The server itself, a real one
//! for tests, is [`fixture`] (the chaos run compiles that file alone); [`postfix`] runs Postfix.

mod fixture;
mod postfix;
pub use fixture::*;

use crate::helpers::Backend;
use crate::worker::{Harness, wait_until};
use jobboard::worker::Outcome;
use serde_json::{Value, json};
use std::process::Stdio;
use std::time::Duration;

/// 50 events against a server that refuses the login (535), then takes it: 0 dead letters,
/// 50 emails, each once; `/readyz` 503 with `checks.mail` failing while refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_session_is_an_outage_not_a_dead_letter() {
    let h = Harness::new(Backend::Postgres, "lease").await;
    let refusal = SessionRefusal::Auth("535 5.7.8 Authentication credentials invalid".into());
    session_outage(h, refusal, 25).await;
}

/// A server that wants STARTTLS first refuses every `MAIL FROM` (530): a refused session, not
/// a refused message, although it comes at the message's first command.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starttls_first_refusal_is_an_outage() {
    let h = Harness::new(Backend::Postgres, "transaction").await;
    let refusal = SessionRefusal::MailFrom("530 5.7.0 Must issue a STARTTLS command first".into());
    session_outage(h, refusal, 2).await;
}

/// A server that accepts the connection and then says nothing (a tarpit, an overloaded relay):
/// the session does not open within half the send's deadline, which is a refused session, not
/// a send whose outcome is unknown: no attempt counted, nothing dead-lettered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_greets_is_an_outage() {
    let h = Harness::new(Backend::Postgres, "lease").await;
    session_outage(h, SessionRefusal::Silent, 25).await;
}

/// A server that greets with 554 serves no one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_greeting_is_an_outage() {
    let h = Harness::new(Backend::Sqlite, "lease-unbatched").await;
    let refusal = SessionRefusal::Greeting("554 5.3.2 no service here".into());
    session_outage(h, refusal, 2).await;
}

/// A probe that opens a session (connected, logged in) ends an outage by itself, with nothing
/// to send: `/readyz` says 200 again, and receiving resumes at once, not after the next backoff.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successful_probe_ends_the_outage() {
    let h = Harness::new(Backend::Postgres, "lease").await;
    let refusal = SessionRefusal::Auth("535 5.7.8 Authentication credentials invalid".into());
    h.smtp.refuse_sessions(Some(refusal));
    events(&h, 1).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let _worker = spawn_worker(&h, &log);
    let addr = worker_addr(&log).await;
    let ready = format!("http://{addr}/readyz");
    // Refused, then probed after 1 s, 2 s and 4 s: the next probe waits 8 s.
    wait_until(
        "four refused sessions, and the worker not ready",
        || async { h.smtp.sessions_refused() >= 4 && get(&ready).await.0 == 503 },
    )
    .await;
    // The refused events leave the queue (an operator purged them): nothing is left to send.
    h.app.exec("DELETE FROM outbox").await;
    h.smtp.refuse_sessions(None);
    wait_until("ready again, with nothing sent", || async {
        get(&ready).await.0 == 200
    })
    .await;
    assert!(h.smtp.mails().is_empty(), "ended by a probe, not a send");
    let logs = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        logs.matches("the mail service accepts sessions again")
            .count(),
        1,
        "{logs}"
    );

    // Receiving resumes at once: new events go out well within the 8 s backoff the outage
    // had reached.
    let next = events(&h, 1).await;
    let start = std::time::Instant::now();
    wait_until("the next events emailed", || async {
        next.iter().all(|e| h.smtp.count_for(e) == 1)
    })
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(4),
        "the next email waited {:?}",
        start.elapsed()
    );
}

/// A message whose send met a refused session comes back after the worker's current backoff
/// (1 s at first): not at once, which would have the workers take it again and again from a
/// service that is down, and not only when its visibility timeout (60 s here) ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_sessions_message_comes_back_after_the_backoff() {
    let h = Harness::new(Backend::Postgres, "lease").await;
    let s = h.scenario().await;
    h.smtp.refuse_sessions(Some(SessionRefusal::Greeting(
        "554 5.3.2 no service here".into(),
    )));
    let event = h.change(&s).await;
    let worker = h.worker_with(&[("VISIBILITY_TIMEOUT_SECS", "60")]).await;
    let outcomes = tokio::time::timeout(Duration::from_secs(20), worker.run_until_empty())
        .await
        .expect("the refused message is put back out of sight, not received again at once")
        .unwrap();
    assert_eq!(outcomes, vec![Outcome::MailUnavailable]);
    assert_eq!(attempts(&h).await, 0, "no attempt counted");
    h.smtp.refuse_sessions(None);
    let start = std::time::Instant::now();
    wait_until("the message back and sent", || async {
        worker.run_until_empty().await.unwrap();
        h.smtp.count_for(&event) == 1
    })
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "came back after {:?}: the backoff, not the visibility timeout",
        start.elapsed()
    );
    assert_eq!(h.smtp.count_for(&event), 1);
}

/// `jobs` applications, each moved twice, while the server refuses every session as `refusal`
/// says; a worker process runs meanwhile; then the server takes sessions again.
async fn session_outage(h: Harness, refusal: SessionRefusal, jobs: usize) {
    h.smtp.refuse_sessions(Some(refusal));
    let events = events(&h, jobs).await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let mut worker = spawn_worker(&h, &log);
    let addr = worker_addr(&log).await;
    let ready = format!("http://{addr}/readyz");

    // Refused, and retried with backoff: a first refusal, then at least two more.
    // (A silent server's sessions are counted when they begin, before the worker gives up on
    // them: the worker says it is not ready once it has.)
    wait_until(
        "three refused sessions, and the worker not ready",
        || async { h.smtp.sessions_refused() >= 3 && get(&ready).await.0 == 503 },
    )
    .await;
    assert_eq!(dead_letters(&h).await, 0, "nothing dead-lettered");
    let (code, body) = get(&ready).await;
    assert_eq!(
        code, 503,
        "not ready while the mail service refuses: {body}"
    );
    assert_ne!(body["checks"]["mail"], "ok", "{body}");
    assert!(body["checks"]["mail"].is_string(), "{body}");
    assert_eq!(body["checks"]["database"], "ok", "{body}");
    let metrics = text(&format!("http://{addr}/metrics")).await;
    assert!(metrics.contains("mail_service_up 0"), "{metrics}");
    assert!(metrics.contains("mail_session_refusals_total"), "{metrics}");
    assert!(h.smtp.mails().is_empty());
    assert_eq!(attempts(&h).await, 0, "no event has an attempt counted");

    h.smtp.refuse_sessions(None);
    wait_until("every event emailed", || async {
        h.smtp.mails().len() >= events.len()
    })
    .await;
    wait_until("queue drained", || async { h.queued().await == 0 }).await;
    wait_until("ready again", || async { get(&ready).await.0 == 200 }).await;
    let (_, body) = get(&ready).await;
    assert_eq!(body["checks"]["mail"], "ok", "{body}");
    for e in &events {
        assert_eq!(h.smtp.count_for(e), 1, "one email for {e}");
        assert_eq!(h.processed_status(e).await.as_deref(), Some("done"));
    }
    assert_eq!(h.smtp.mails().len(), events.len());
    assert_eq!(dead_letters(&h).await, 0);
    assert_eq!(attempts(&h).await, 0);
    let metrics = text(&format!("http://{addr}/metrics")).await;
    assert!(metrics.contains("mail_service_up 1"), "{metrics}");

    let pid = worker.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), worker.wait())
        .await
        .expect("stops")
        .unwrap();
    assert_eq!(status.code(), Some(0), "graceful stop");
    // One ERROR when the outage begins, one INFO when it ends.
    let logs = std::fs::read_to_string(&log).unwrap();
    let with = |level: &str, words: &str| count_logged(&logs, level, words);
    assert_eq!(with("ERROR", "mail service refuses"), 1, "{logs}");
    assert_eq!(with("INFO", "mail service accepts"), 1, "{logs}");
    assert_eq!(with("ERROR", "dead-lettered"), 0, "{logs}");
}

/// Postfix with its stock relay restrictions refuses a recipient at a domain it does not relay
/// with `454 4.7.1 Relay access denied` at RCPT TO. That is this message's failure, not an outage
/// of the mail service: the event is retried with the message backoff, counted, and
/// dead-lettered after `MAX_ATTEMPTS`, while the other candidates' emails go out, each once, and
/// the worker stays ready throughout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4xx_at_rcpt_from_postfix_fails_that_message_only() {
    let h = Harness::new(Backend::Postgres, "lease").await;
    let postfix = postfix::Postfix::start("good.example", h.smtp.port);
    let employer = h.app.user("employer").await;
    let company = h.app.company(&employer, "Acme").await;
    let denied = user_at(&h, "elsewhere.example").await;
    let mut refused = Vec::new();
    let mut good = Vec::new();
    for i in 0..11 {
        let candidate = match i {
            0 => denied.clone(),
            _ => user_at(&h, "good.example").await,
        };
        let job = h.app.job(&employer, company, json!({})).await["id"]
            .as_i64()
            .unwrap();
        let application = h.app.apply(&candidate, job).await["id"].as_i64().unwrap();
        let submitted = h.last_submission(application).await;
        h.app
            .patch(
                &format!("/api/applications/{application}"),
                Some(&employer.token),
                json!({"status": "reviewing"}),
            )
            .await
            .expect(200);
        let event = h.last_event_id(application).await;
        match i {
            0 => refused.extend([submitted, event]),
            _ => good.extend([submitted, event]),
        }
    }
    h.publish().await;

    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let url = format!("smtp://127.0.0.1:{}?tls=none", postfix.port);
    // A send's deadline of 4 s (at most half the visibility): Postfix greets within its half on
    // a loaded machine too (22 sessions open at once), so only the 454 is in play.
    let settings = [
        ("MAX_ATTEMPTS", "2"),
        ("VISIBILITY_TIMEOUT_SECS", "8"),
        ("EMAIL_SEND_TIMEOUT_SECS", "4"),
    ];
    let mut worker = spawn_worker_with(&h, &log, &url, &settings);
    let addr = worker_addr(&log).await;
    let ready = format!("http://{addr}/readyz");
    // `/readyz` sampled all along.
    let watch = {
        let ready = ready.clone();
        tokio::spawn(async move {
            let mut codes = Vec::new();
            loop {
                codes.push(get(&ready).await.0);
                tokio::time::sleep(Duration::from_millis(100)).await;
                if codes.len() >= 400 {
                    return codes;
                }
            }
        })
    };

    wait_until("the refused events dead-lettered", || async {
        dead_letters(&h).await == refused.len() as i64
    })
    .await;
    wait_until("the other emails relayed", || async {
        good.iter().all(|e| h.smtp.count_for(e) >= 1)
    })
    .await;
    watch.abort();
    let codes = match watch.await {
        Ok(codes) => codes,
        Err(e) if e.is_cancelled() => Vec::new(),
        Err(e) => panic!("the /readyz watch failed: {e}"),
    };
    let (code, body) = get(&ready).await;
    assert_eq!(code, 200, "ready: a refused message is no outage: {body}");
    assert!(
        !codes.contains(&503),
        "/readyz said 503 while one message was refused: {codes:?}"
    );
    for refused in &refused {
        let reason = h
            .app
            .scalar_text(&format!(
                "SELECT reason FROM dead_letters WHERE event_id = '{refused}'"
            ))
            .await
            .expect("a dead letter for the refused event");
        assert!(reason.contains("gave up after 2 failed sends"), "{reason}");
        assert!(reason.contains("454"), "{reason}");
        assert!(!reason.contains("elsewhere.example"), "masked: {reason}");
        assert_eq!(h.attempts(refused).await, 2);
        assert_eq!(h.smtp.count_for(refused), 0);
    }
    for e in &good {
        wait_until("recorded", || async {
            h.processed_status(e).await.as_deref() == Some("done")
        })
        .await;
        assert_eq!(h.smtp.count_for(e), 1, "one email for {e}");
        assert_eq!(h.attempts(e).await, 0, "{e}");
    }
    assert!(
        postfix.log().contains("454 4.7.1"),
        "Postfix said 454 at RCPT TO:\n{}",
        postfix.log()
    );

    worker.start_kill().unwrap();
    worker.wait().await.unwrap();
    let logs = std::fs::read_to_string(&log).unwrap();
    let with = |level: &str, words: &str| count_logged(&logs, level, words);
    assert_eq!(with("ERROR", "mail service refuses"), 0, "{logs}");
    assert_eq!(with("WARN", "send failed (attempt 1 of 2)"), 2, "{logs}");
    assert_eq!(with("ERROR", "event dead-lettered"), 2, "{logs}");
    assert!(!logs.contains(&denied.email), "addresses masked: {logs}");
}

/// How many lines of a JSON-format log have this level and a message containing `words`.
fn count_logged(logs: &str, level: &str, words: &str) -> usize {
    logs.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|_| panic!("JSON log line: {l}")))
        .filter(|l| l["level"] == level && l["message"].as_str().unwrap_or("").contains(words))
        .count()
}

/// A candidate whose address is at `domain`.
async fn user_at(h: &Harness, domain: &str) -> crate::helpers::User {
    let email = format!("{}@{domain}", crate::helpers::unique("candidate"));
    let password = "a long enough passphrase".to_string();
    let body = json!({"email": email, "password": password, "name": "candidate user", "role": "candidate"});
    let id = h
        .app
        .post("/api/auth/register", None, body)
        .await
        .expect(201)["id"]
        .as_i64()
        .unwrap();
    let token = h.app.login(&email, &password).await;
    crate::helpers::User {
        id,
        email,
        password,
        token,
    }
}

/// One candidate applies to `jobs` jobs, and each application moves twice: `3 × jobs` events
/// (each application's confirmation, and its moves).
async fn events(h: &Harness, jobs: usize) -> Vec<String> {
    let employer = h.app.user("employer").await;
    let company = h.app.company(&employer, "Acme").await;
    let candidate = h.app.user("candidate").await;
    let mut events = Vec::new();
    for _ in 0..jobs {
        let job = h.app.job(&employer, company, json!({})).await["id"]
            .as_i64()
            .unwrap();
        let application = h.app.apply(&candidate, job).await["id"].as_i64().unwrap();
        events.push(h.last_submission(application).await);
        for status in ["reviewing", "interview"] {
            h.app
                .patch(
                    &format!("/api/applications/{application}"),
                    Some(&employer.token),
                    json!({"status": status}),
                )
                .await
                .expect(200);
            events.push(h.last_event_id(application).await);
        }
    }
    h.publish().await;
    events
}

/// `jobboard worker` on the test's database and SMTP server, logging in with credentials, its
/// log (JSON lines) in `log`.
fn spawn_worker(h: &Harness, log: &std::path::Path) -> tokio::process::Child {
    let url = format!("smtp://jobs:s3cret@127.0.0.1:{}?tls=none", h.smtp.port);
    spawn_worker_with(h, log, &url, &[])
}

/// `jobboard worker` sending through `smtp_url`, with `extra` settings.
fn spawn_worker_with(
    h: &Harness,
    log: &std::path::Path,
    smtp_url: &str,
    extra: &[(&str, &str)],
) -> tokio::process::Child {
    let (mode, batch) = match h.mode {
        "lease-unbatched" => ("lease", "false"),
        mode => (mode, "true"),
    };
    tokio::process::Command::new(env!("CARGO_BIN_EXE_jobboard"))
        .arg("worker")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &h.app.database_url)
        .env("LOG_FORMAT", "json")
        .env("EMAIL_BACKEND", "smtp")
        .env("SMTP_URL", smtp_url)
        .env("EMAIL_FROM", "jobs@jobboard.example")
        .env("WORKER_HTTP_ADDR", "127.0.0.1:0")
        .env("CLAIM_MODE", mode)
        .env("WORKER_BATCH", batch)
        .env("VISIBILITY_TIMEOUT_SECS", "4")
        .env("EMAIL_SEND_TIMEOUT_SECS", "2")
        .env("MAX_ATTEMPTS", "3")
        .env("SHUTDOWN_GRACE_SECS", "5")
        .envs(extra.iter().copied())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).unwrap())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn worker")
}

/// The worker's health and metrics address, from its start-up log line.
async fn worker_addr(log: &std::path::Path) -> String {
    let marker = "worker health and metrics on http://";
    for _ in 0..400 {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if let Some(at) = text.find(marker) {
            let rest = &text[at + marker.len()..];
            return rest
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.' || *c == ':')
                .collect();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the worker never said where it listens: {}",
        std::fs::read_to_string(log).unwrap_or_default()
    );
}

async fn get(url: &str) -> (u16, Value) {
    let r = reqwest::get(url).await.expect("reachable");
    let code = r.status().as_u16();
    (code, r.json().await.unwrap_or(Value::Null))
}

async fn text(url: &str) -> String {
    reqwest::get(url).await.unwrap().text().await.unwrap()
}

async fn dead_letters(h: &Harness) -> i64 {
    h.app.scalar_i64("SELECT COUNT(*) FROM dead_letters").await
}

/// Events with a failed send counted.
async fn attempts(h: &Harness) -> i64 {
    h.app
        .scalar_i64("SELECT COUNT(*) FROM processed_events WHERE attempts > 0")
        .await
}
