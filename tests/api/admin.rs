//! The operators' endpoints (docs/api.md, Operators) and `jobboard admin grant|revoke`: a
//! dead-lettered event read as an operator sees it (figures, story, list), redriven and sent, a
//! dead letter purged, rights taken away; on both databases with the database queue, and with SQS.

use crate::helpers::*;
use crate::worker::Harness;
use jobboard::worker::Outcome;
use serde_json::{Value, json};

mod db {
    use super::*;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        an_operator_follows_a_dead_letter_to_its_email(Harness::new(Backend::Sqlite, "lease").await)
            .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        an_operator_follows_a_dead_letter_to_its_email(
            Harness::new(Backend::Postgres, "lease").await,
        )
        .await
    }
}

mod sqs {
    use super::*;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        an_operator_follows_a_dead_letter_to_its_email(
            Harness::new_sqs(Backend::Postgres, "lease").await,
        )
        .await
    }
}

/// A mail server's refusal of 90 000 characters, on either queue.
mod long_refusal {
    use super::*;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn db_sqlite() {
        a_long_refusal_is_stored_cut(Harness::new(Backend::Sqlite, "lease").await).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn db_postgres() {
        a_long_refusal_is_stored_cut(Harness::new(Backend::Postgres, "lease").await).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqs_postgres() {
        a_long_refusal_is_stored_cut(Harness::new_sqs(Backend::Postgres, "lease").await).await
    }
}

/// A dead letter redriven twice, by the API and as the CLI does, on either queue.
mod redrive_trace {
    use super::*;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn db_sqlite() {
        a_redrive_leaves_its_trace_in_the_story(Harness::new(Backend::Sqlite, "lease").await).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn db_postgres() {
        a_redrive_leaves_its_trace_in_the_story(Harness::new(Backend::Postgres, "lease").await)
            .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqs_postgres() {
        a_redrive_leaves_its_trace_in_the_story(Harness::new_sqs(Backend::Postgres, "lease").await)
            .await
    }
}

crate::each_store!(
    grant_and_revoke_say_what_changed,
    admin_routes_are_404_to_everyone_else,
    a_wrong_method_is_405_to_an_operator_only,
    bad_admin_requests_are_problems_that_change_nothing,
    figures_count_sent_and_failed_in_the_last_hour,
);

/// Dead letters as the operator's list shows them.
async fn listed(app: &TestApp, token: &str) -> Value {
    app.get("/api/admin/dead-letters", Some(token))
        .await
        .expect(200)
        .clone()
}

async fn an_operator_follows_a_dead_letter_to_its_email(h: Harness) {
    let app = &h.app;
    let (s, event_id, worker) = h.dead_lettered_change().await;
    let op = app.operator().await;
    let token = op.token.as_str();

    let figures = app.get("/api/admin/queue", Some(token)).await;
    let figures = figures.expect(200);
    let queue = if h.sqs.is_some() { "sqs" } else { "db" };
    assert_eq!(figures["queue"], queue, "{figures}");
    assert_eq!(figures["failed_last_hour"], 1, "{figures}");
    assert_eq!(
        figures["sent_last_hour"], 1,
        "the application's confirmation: {figures}"
    );
    assert_eq!(figures["in_flight"], 0, "{figures}");
    if h.sqs.is_none() {
        // SQS counts approximately and late; the database queue exactly.
        assert_eq!(figures["dead_letters"], 1, "{figures}");
        assert_eq!(figures["outbox_pending"], 0, "{figures}");
    }

    let story = app
        .get(&format!("/api/admin/events/{event_id}"), Some(token))
        .await;
    let story = story.expect(200);
    assert_eq!(story["event_id"], event_id.as_str());
    assert_eq!(story["change"]["application_id"], s.application_id);
    assert_eq!(story["change"]["job_id"], s.job_id);
    assert_eq!(story["change"]["candidate_id"], s.candidate.id);
    assert_eq!(story["change"]["old_status"], "submitted");
    assert_eq!(story["change"]["new_status"], "reviewing");
    assert_eq!(story["change"]["changed_by"], s.employer.id);
    assert_eq!(story["processed"]["status"], "dead");
    assert_eq!(story["processed"]["attempts"], 1);
    assert!(
        story["processed"]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("554")),
        "{story}"
    );
    assert_eq!(story["processed"]["lease_expires_at"], Value::Null);
    // With SQS too: the worker keeps a record of each dead letter it sends to the DLQ.
    assert!(
        story["dead_letter"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("554")),
        "{story}"
    );

    let list = listed(app, token).await;
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["page"], 1);
    let letter = &list["items"][0];
    assert_eq!(letter["event_id"], event_id.as_str(), "{list}");
    assert_eq!(letter["attempts"], 1);
    assert!(letter["body"].as_str().unwrap().contains(&event_id));
    let id = letter["id"].as_str().expect("ids are strings").to_string();

    let r = app
        .post(
            "/api/admin/dead-letters/redrive",
            Some(token),
            json!({"ids": [id, "no-such-letter"]}),
        )
        .await;
    let r = r.expect(200);
    assert_eq!(
        r,
        &json!({"redriven": 1, "not_found": 1, "skipped_invalid": 0})
    );
    h.later().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1, "the redriven email is sent");
    assert_eq!(listed(app, token).await["total"], 0);
    let story = app
        .get(&format!("/api/admin/events/{event_id}"), Some(token))
        .await;
    let story = story.expect(200);
    assert_eq!(story["processed"]["status"], "done", "{story}");
    assert_eq!(story["dead_letter"], Value::Null, "{story}");
    let figures = app.get("/api/admin/queue", Some(token)).await;
    let figures = figures.expect(200);
    assert_eq!(
        figures["sent_last_hour"], 2,
        "the confirmation and the redriven change: {figures}"
    );
    assert_eq!(figures["failed_last_hour"], 0, "{figures}");

    // Purge: a poison message's dead letter, deleted once; a second delete finds nothing.
    h.enqueue("poison <b>not an event</b>").await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::Invalid]
    );
    let list = listed(app, token).await;
    assert_eq!(list["total"], 1, "{list}");
    assert_eq!(list["items"][0]["event_id"], Value::Null);
    assert_eq!(list["items"][0]["body"], "poison <b>not an event</b>");
    let id = list["items"][0]["id"].as_str().unwrap().to_string();
    let path = format!("/api/admin/dead-letters/{id}");
    app.delete(&path, Some(token)).await.expect(204);
    app.delete(&path, Some(token))
        .await
        .expect_problem(404, "not-found");
    assert_eq!(listed(app, token).await["total"], 0);
}

async fn grant_and_revoke_say_what_changed(app: TestApp) {
    let user = app.user("employer").await;
    let upper = user.email.to_uppercase();
    let (code, out, err) = app.cli(&["admin", "grant", &upper]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("now has operator rights"), "{out}");
    assert!(out.contains(&format!("user {}", user.id)), "{out}");
    app.get("/api/admin/queue", Some(&user.token))
        .await
        .expect(200);
    let (code, out, _) = app.cli(&["admin", "grant", &user.email]).await;
    assert_eq!(code, Some(0));
    assert!(out.contains("already had operator rights"), "{out}");

    let (code, out, _) = app.cli(&["admin", "revoke", &user.email]).await;
    assert_eq!(code, Some(0));
    assert!(out.contains("no longer has operator rights"), "{out}");
    // Taken at once: the same token, still valid elsewhere, finds nothing here.
    app.get("/api/admin/queue", Some(&user.token))
        .await
        .expect_problem(404, "not-found");
    app.get("/api/me", Some(&user.token)).await.expect(200);
    let (code, out, _) = app.cli(&["admin", "revoke", &user.email]).await;
    assert_eq!(code, Some(0));
    assert!(out.contains("had no operator rights"), "{out}");

    for email in ["nobody@example.com", "not an email"] {
        let (code, out, err) = app.cli(&["admin", "grant", email]).await;
        assert_eq!(code, Some(1), "{out}{err}");
        assert!(err.contains("no account has the email"), "{err}");
    }
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM operators").await, 0);

    // A deleted account takes its rights with it.
    let op = app.operator().await;
    app.delete("/api/me", Some(&op.token)).await.expect(204);
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM operators").await, 0);
}

/// Every admin route, as (method, path, body).
fn admin_routes() -> Vec<(reqwest::Method, &'static str, Option<Value>)> {
    use reqwest::Method as M;
    vec![
        (M::GET, "/api/admin/queue", None),
        (M::GET, "/api/admin/dead-letters", None),
        (M::GET, "/api/admin/events/some-event", None),
        (
            M::POST,
            "/api/admin/dead-letters/redrive",
            Some(json!({"all": true})),
        ),
        (M::DELETE, "/api/admin/dead-letters/1", None),
        (M::GET, "/api/admin/nothing-here", None),
    ]
    .into_iter()
    .chain(wrong_methods().into_iter().map(|(m, p, _)| (m, p, None)))
    .collect()
}

/// Admin routes called with a method they do not take, and the methods they do take.
fn wrong_methods() -> Vec<(reqwest::Method, &'static str, &'static str)> {
    use reqwest::Method as M;
    vec![
        (M::DELETE, "/api/admin/queue", "GET,HEAD"),
        (M::POST, "/api/admin/dead-letters", "GET,HEAD"),
        (M::PUT, "/api/admin/events/some-event", "GET,HEAD"),
        (M::GET, "/api/admin/dead-letters/redrive", "POST"),
        (M::PATCH, "/api/admin/dead-letters/1", "DELETE"),
    ]
}

/// An operator may learn that a route exists: a wrong method is 405 with `Allow`, as anywhere
/// else in the API (everyone else got 404 above).
async fn a_wrong_method_is_405_to_an_operator_only(app: TestApp) {
    let op = app.operator().await;
    let before = app.fingerprint().await;
    for (method, path, allow) in wrong_methods() {
        let r = app
            .send(method.clone(), path, Some(op.token.as_str()), None)
            .await;
        r.expect_problem(405, "method-not-allowed");
        let got = r.header("allow").unwrap_or_default().replace(' ', "");
        let mut got: Vec<&str> = got.split(',').collect();
        got.sort_unstable();
        assert_eq!(got.join(","), allow, "{method} {path}: Allow");
    }
    assert_eq!(app.fingerprint().await, before, "a 405 changed nothing");
}

async fn admin_routes_are_404_to_everyone_else(app: TestApp) {
    let candidate = app.user("candidate").await;
    let employer = app.user("employer").await;
    let tokens = [
        None,
        Some(candidate.token.as_str()),
        Some(employer.token.as_str()),
        Some("not-a-token"),
    ];
    for (method, path, body) in admin_routes() {
        for token in tokens {
            let r = app.send(method.clone(), path, token, body.clone()).await;
            assert_eq!(
                r.status.as_u16(),
                404,
                "{method} {path} with {token:?}: {}",
                r.text
            );
            assert_eq!(r.header("content-type"), Some("application/problem+json"));
            // The same answer as a route that does not exist.
            assert_eq!(r.body["type"], "/problems/not-found", "{}", r.text);
        }
    }
}

async fn bad_admin_requests_are_problems_that_change_nothing(app: TestApp) {
    let op = app.operator().await;
    let token = Some(op.token.as_str());
    let before = app.fingerprint().await;
    for (body, field) in [
        (json!({}), "ids"),
        (json!({"ids": []}), "ids"),
        (json!({"ids": ["1"], "all": true}), "ids"),
        (json!({"ids": [1]}), "ids[0]"),
        (json!({"all": "yes"}), "all"),
        (json!({"all": true, "purge": true}), "purge"),
    ] {
        let r = app
            .post("/api/admin/dead-letters/redrive", token, body.clone())
            .await;
        let problem = r.expect_problem(422, "validation");
        assert!(
            problem["errors"].get(field).is_some(),
            "{body} should name {field}: {problem}"
        );
    }
    for query in ["page=0", "page_size=101", "page=x"] {
        app.get(&format!("/api/admin/dead-letters?{query}"), token)
            .await
            .expect_problem(422, "validation");
    }
    app.get("/api/admin/events/no-such-event", token)
        .await
        .expect_problem(404, "not-found");
    app.get(&format!("/api/admin/events/{}", "x".repeat(300)), token)
        .await
        .expect_problem(404, "not-found");
    app.delete("/api/admin/dead-letters/999999", token)
        .await
        .expect_problem(404, "not-found");
    app.delete("/api/admin/dead-letters/not-a-number", token)
        .await
        .expect_problem(404, "not-found");
    assert_eq!(app.fingerprint().await, before);
}

/// The hour's figures come from the processed records: a send long ago counts in neither.
async fn figures_count_sent_and_failed_in_the_last_hour(app: TestApp) {
    let op = app.operator().await;
    let store = app.state.store.clone();
    let now = store.now_ms().await.unwrap();
    let hour_ago = now - 3_600_000 - 60_000;
    for (event, status, updated, attempts) in [
        ("e-sent", "done", now - 1_000, 0),
        ("e-sent-old", "done", hour_ago, 0),
        ("e-retry", "pending", now - 2_000, 1),
        ("e-dead", "dead", now - 3_000, 5),
        ("e-dead-old", "dead", hour_ago, 5),
        ("e-claimed", "in_progress", now, 0),
    ] {
        let locked = if status == "in_progress" {
            (now + 60_000).to_string()
        } else {
            "NULL".to_string()
        };
        app.exec(&format!(
            "INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, \
             updated_at) VALUES ('{event}', '{status}', 'l', {locked}, {attempts}, {updated})"
        ))
        .await;
    }
    let figures = app.get("/api/admin/queue", Some(&op.token)).await;
    let figures = figures.expect(200);
    assert_eq!(
        figures,
        &json!({"queue": "db", "outbox_pending": 0, "oldest_pending_age_seconds": null,
            "in_flight": 1, "sent_last_hour": 1, "failed_last_hour": 2, "dead_letters": 0})
    );
    let story = app
        .get("/api/admin/events/e-claimed", Some(&op.token))
        .await;
    let story = story.expect(200);
    assert_eq!(story["change"], Value::Null);
    assert_eq!(story["processed"]["status"], "in_progress");
    assert!(
        story["processed"]["lease_expires_at"].is_string(),
        "{story}"
    );
}

/// The most characters of a last error or a dead letter's reason that are stored.
const STORED_MAX_CHARS: usize = 2000;

/// A mail server's refusal of about 90 000 characters: 100 lines of a multi-line 554 reply,
/// each under the 1 000 bytes a client reads of one line.
fn long_refusal() -> String {
    let mut lines = vec!["554-5.7.1 BEGIN-OF-REFUSAL".to_string()];
    for i in 0..100 {
        lines.push(format!(
            "554-5.7.1 line {i:03}: {}",
            "the message was refused by policy; ".repeat(26)
        ));
    }
    lines.push("554 5.7.1 END-OF-REFUSAL".to_string());
    lines.join("\r\n")
}

/// Whatever a mail server answers, the worker's last error and the dead letter's reason are
/// stored cut to their first characters, saying so; and so they are answered.
async fn a_long_refusal_is_stored_cut(h: Harness) {
    let app = &h.app;
    let (_, event_id) = h.status_change().await;
    let refusal = long_refusal();
    assert!(refusal.len() > 90_000);
    h.smtp.reject_next_with(&refusal);
    let worker = h.worker().await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::DeadLettered]
    );
    let op = app.operator().await;
    let story = app
        .get(&format!("/api/admin/events/{event_id}"), Some(&op.token))
        .await;
    let story = story.expect(200).clone();
    let list = listed(app, &op.token).await;
    for (what, text) in [
        ("the last error", &story["processed"]["last_error"]),
        ("the story's dead letter", &story["dead_letter"]["reason"]),
        ("the listed dead letter", &list["items"][0]["reason"]),
    ] {
        let text = text
            .as_str()
            .unwrap_or_else(|| panic!("{what}: {story} {list}"));
        let chars = text.chars().count();
        assert!(chars <= STORED_MAX_CHARS, "{what} has {chars} characters");
        assert!(
            chars > STORED_MAX_CHARS - 100,
            "{what} keeps what fits: {chars}"
        );
        assert!(text.contains("BEGIN-OF-REFUSAL"), "{what} keeps its start");
        assert!(!text.contains("END-OF-REFUSAL"), "{what} is cut");
        let tail: String = text.chars().skip(chars.saturating_sub(60)).collect();
        assert!(
            tail.contains("[cut: ") && tail.ends_with(" characters in all]"),
            "{what} says it was cut: …{tail}"
        );
    }
    // What is stored, not only what is answered.
    let table = if h.sqs.is_some() {
        "sqs_dead_letters"
    } else {
        "dead_letters"
    };
    for sql in [
        format!("SELECT CAST(MAX(LENGTH(reason)) AS BIGINT) FROM {table}"),
        "SELECT CAST(MAX(LENGTH(last_error)) AS BIGINT) FROM processed_events".to_string(),
    ] {
        let stored = app.scalar_i64(&sql).await;
        assert!(stored <= STORED_MAX_CHARS as i64, "{sql}: {stored}");
    }
}

/// An event's story keeps the trace of each redrive (by the API or as `jobboard dlq redrive`),
/// which forgets the event's failed sends: how many redrives, the last one's time, and the
/// failed sends they forgot.
async fn a_redrive_leaves_its_trace_in_the_story(h: Harness) {
    let app = &h.app;
    let (_, event_id, worker) = h.dead_lettered_change().await;
    let op = app.operator().await;
    let token = op.token.as_str();
    let path = format!("/api/admin/events/{event_id}");
    let s = app.get(&path, Some(token)).await.expect(200).clone();
    assert_eq!(s["redrive"], Value::Null, "never redriven: {s}");

    // Redriven by the API: the trace counts it and the failed send it forgot.
    let before = chrono::Utc::now().timestamp_millis();
    let id = listed(app, token).await["items"][0]["id"].clone();
    app.post(
        "/api/admin/dead-letters/redrive",
        Some(token),
        json!({ "ids": [id] }),
    )
    .await
    .expect(200);
    let s = app.get(&path, Some(token)).await.expect(200).clone();
    assert_eq!(s["redrive"]["count"], 1, "{s}");
    assert_eq!(s["redrive"]["attempts_before"], 1, "{s}");
    let first = s["redrive"]["last_at"]
        .as_str()
        .expect("a time")
        .to_string();
    let first = chrono::DateTime::parse_from_rfc3339(&first).unwrap();
    assert!(
        (first.timestamp_millis() - before).abs() < 10_000,
        "{first} is the redrive's time"
    );
    assert_eq!(
        s["processed"],
        Value::Null,
        "the failures are forgotten: {s}"
    );

    // Refused for good again, then redriven as the CLI does: two redrives, two failed sends.
    h.smtp.reject_next();
    h.later().await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::DeadLettered]
    );
    let s = app.get(&path, Some(token)).await.expect(200).clone();
    assert_eq!(s["processed"]["status"], "dead", "{s}");
    assert_eq!(s["redrive"]["count"], 1, "{s}");
    // Through the queue `jobboard dlq redrive --all` builds (the CLI's process would need the
    // test's AWS settings, which it is not given).
    let queue = jobboard::run::build_queue(&app.config(&[]), app.state.store.clone())
        .await
        .unwrap();
    let r = queue
        .redrive(jobboard::queue::Selection::All, false)
        .await
        .unwrap();
    assert_eq!(r.redriven, 1);
    h.later().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    let s = app.get(&path, Some(token)).await.expect(200).clone();
    assert_eq!(s["processed"]["status"], "done", "{s}");
    assert_eq!(
        s["processed"]["attempts"], 0,
        "sent on the first try after it: {s}"
    );
    assert_eq!(s["redrive"]["count"], 2, "{s}");
    assert_eq!(s["redrive"]["attempts_before"], 2, "{s}");
    let last = s["redrive"]["last_at"].as_str().unwrap();
    assert!(
        chrono::DateTime::parse_from_rfc3339(last).unwrap() >= first,
        "{last} is the later redrive"
    );
}
