//! Retry-safe writes with `Idempotency-Key`: one write however often a request is retried, the
//! same answer each time, on both backends.

use crate::each_store;
use crate::helpers::*;
use reqwest::Method;
use serde_json::{Value, json};

each_store!(
    retried_apply_writes_once_and_answers_the_same,
    concurrent_retries_write_once,
    changed_body_is_refused,
    bad_keys_are_refused,
    client_errors_are_stored_and_replayed,
    keys_are_scoped_by_user_method_and_route,
    server_errors_free_the_key,
    keys_expire_and_are_cleaned_up,
    records_go_with_their_user,
    auth_endpoints_ignore_the_header,
    status_change_retried_emits_one_event,
    withdraw_retried_with_a_key_answers_200_again,
    a_request_that_lost_its_key_writes_nothing,
);

/// Sends `body` (JSON, or nothing) with an `Idempotency-Key`.
async fn send(
    app: &TestApp,
    method: Method,
    path: &str,
    token: &str,
    key: &str,
    body: Option<Value>,
) -> Resp {
    let mut req = app
        .client
        .request(method, app.url(path))
        .bearer_auth(token)
        .header("idempotency-key", key);
    if let Some(b) = body {
        req = req
            .header("content-type", "application/json")
            .body(b.to_string());
    }
    TestApp::read(req.send().await.unwrap()).await
}

async fn retried_apply_writes_once_and_answers_the_same(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let cand = app.user("candidate").await;
    let path = format!("/api/jobs/{}/applications", job["id"]);
    let body = json!({"cover_letter": "hello"});
    let first = send(
        &app,
        Method::POST,
        &path,
        &cand.token,
        "apply-1",
        Some(body.clone()),
    )
    .await;
    first.expect(201);
    assert_eq!(first.header("idempotent-replayed"), None);
    let second = send(
        &app,
        Method::POST,
        &path,
        &cand.token,
        "apply-1",
        Some(body),
    )
    .await;
    second.expect(201);
    assert_eq!(second.header("idempotent-replayed"), Some("true"));
    assert_eq!(second.text, first.text, "the same body");
    assert_eq!(second.header("content-type"), Some("application/json"));
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM applications").await, 1);
    // Without the key, the same request is a new one (and a conflict).
    app.post(&path, Some(&cand.token), json!({"cover_letter": "hello"}))
        .await
        .expect_problem(409, "already-applied");
}

async fn concurrent_retries_write_once(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let cand = app.user("candidate").await;
    let path = format!("/api/jobs/{}/applications", job["id"]);
    let body = json!({"cover_letter": "once"});
    let answers = futures::future::join_all((0..20).map(|_| {
        send(
            &app,
            Method::POST,
            &path,
            &cand.token,
            "same-key",
            Some(body.clone()),
        )
    }))
    .await;
    let created: Vec<&Resp> = answers.iter().filter(|r| r.status == 201).collect();
    assert!(!created.is_empty());
    assert!(
        created.iter().all(|r| r.text == created[0].text),
        "every 201 is the same answer"
    );
    for r in &answers {
        assert!(
            r.status == 201
                || (r.status == 409 && r.body["type"] == "/problems/idempotency-in-flight"),
            "{} {}",
            r.status,
            r.text
        );
    }
    assert_eq!(
        created
            .iter()
            .filter(|r| r.header("idempotent-replayed").is_none())
            .count(),
        1,
        "one original"
    );
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM applications").await, 1);
}

async fn changed_body_is_refused(app: TestApp) {
    let e = app.user("employer").await;
    send(
        &app,
        Method::POST,
        "/api/companies",
        &e.token,
        "k",
        Some(json!({"name": "One"})),
    )
    .await
    .expect(201);
    let r = send(
        &app,
        Method::POST,
        "/api/companies",
        &e.token,
        "k",
        Some(json!({"name": "Two"})),
    )
    .await;
    r.expect_problem(422, "idempotency-key-reused");
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM companies").await, 1);
    // The same JSON with other bytes is another body.
    let r = send(
        &app,
        Method::POST,
        "/api/companies",
        &e.token,
        "k",
        Some(json!({"name":  "One", "description": null})),
    )
    .await;
    r.expect_problem(422, "idempotency-key-reused");
}

async fn bad_keys_are_refused(app: TestApp) {
    let e = app.user("employer").await;
    for key in ["", "has space", &"x".repeat(256), "tab\there"] {
        let r = app
            .client
            .post(app.url("/api/companies"))
            .bearer_auth(&e.token)
            .header("idempotency-key", key)
            .header("content-type", "application/json")
            .body(json!({"name": "Acme"}).to_string())
            .send()
            .await
            .unwrap();
        TestApp::read(r)
            .await
            .expect_problem(400, "invalid-idempotency-key");
    }
    send(
        &app,
        Method::POST,
        "/api/companies",
        &e.token,
        &"x".repeat(255),
        Some(json!({"name": "Acme"})),
    )
    .await
    .expect(201);
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM companies").await, 1);
    // Authentication runs first.
    let r = send(
        &app,
        Method::POST,
        "/api/companies",
        "bad-token",
        "",
        Some(json!({"name": "Acme"})),
    )
    .await;
    r.expect_problem(401, "unauthorized");
    // The key is judged with the request itself: after the role (403) and visibility (404).
    let cand = app.user("candidate").await;
    let r = send(
        &app,
        Method::POST,
        "/api/companies",
        &cand.token,
        "",
        Some(json!({"name": "Acme"})),
    )
    .await;
    r.expect_problem(403, "forbidden");
    let other = app.user("employer").await;
    let r = send(
        &app,
        Method::PATCH,
        "/api/companies/999999",
        &other.token,
        "",
        Some(json!({"name": "x"})),
    )
    .await;
    r.expect_problem(404, "not-found");
    let r = send(&app, Method::DELETE, "/api/me", &other.token, "", None).await;
    r.expect_problem(400, "invalid-idempotency-key");
    app.get("/api/me", Some(&other.token)).await.expect(200);
}

async fn client_errors_are_stored_and_replayed(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let job_path = format!("/api/jobs/{}", job["id"]);
    app.patch(&job_path, Some(&e.token), json!({"status": "closed"}))
        .await
        .expect(200);
    let cand = app.user("candidate").await;
    let path = format!("{job_path}/applications");
    let first = send(
        &app,
        Method::POST,
        &path,
        &cand.token,
        "k1",
        Some(json!({})),
    )
    .await;
    first.expect_problem(409, "job-closed");
    app.patch(&job_path, Some(&e.token), json!({"status": "open"}))
        .await
        .expect(200);
    let again = send(
        &app,
        Method::POST,
        &path,
        &cand.token,
        "k1",
        Some(json!({})),
    )
    .await;
    again.expect_problem(409, "job-closed");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.text, first.text);
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM applications").await,
        0,
        "the replay changed nothing"
    );
    // A fresh key applies now that the job is open.
    send(
        &app,
        Method::POST,
        &path,
        &cand.token,
        "k2",
        Some(json!({})),
    )
    .await
    .expect(201);
}

async fn keys_are_scoped_by_user_method_and_route(app: TestApp) {
    let a = app.user("employer").await;
    let b = app.user("employer").await;
    let r1 = send(
        &app,
        Method::POST,
        "/api/companies",
        &a.token,
        "shared",
        Some(json!({"name": "A"})),
    )
    .await;
    let r2 = send(
        &app,
        Method::POST,
        "/api/companies",
        &b.token,
        "shared",
        Some(json!({"name": "B"})),
    )
    .await;
    r1.expect(201);
    r2.expect(201);
    assert_ne!(r1.body["id"], r2.body["id"]);
    // Same user and key on another route: independent.
    let path = format!("/api/companies/{}", r1.body["id"]);
    let r3 = send(
        &app,
        Method::PATCH,
        &path,
        &a.token,
        "shared",
        Some(json!({"name": "A2"})),
    )
    .await;
    assert_eq!(r3.expect(200)["name"], "A2");
    assert_eq!(r3.header("idempotent-replayed"), None);
    // The route template, not the path, is the scope: another company, same key, other body.
    let other = send(
        &app,
        Method::POST,
        "/api/companies",
        &a.token,
        "k-other",
        Some(json!({"name": "A3"})),
    )
    .await;
    let path2 = format!("/api/companies/{}", other.body["id"]);
    let r4 = send(
        &app,
        Method::PATCH,
        &path2,
        &a.token,
        "shared",
        Some(json!({"name": "A4"})),
    )
    .await;
    r4.expect_problem(422, "idempotency-key-reused");
}

async fn server_errors_free_the_key(app: TestApp) {
    let s = app.scenario().await;
    app.refuse_moves_to("reviewing").await;
    let path = format!("/api/applications/{}", s.application_id);
    let body = json!({"status": "reviewing"});
    let r = send(
        &app,
        Method::PATCH,
        &path,
        &s.employer.token,
        "k",
        Some(body.clone()),
    )
    .await;
    assert_eq!(r.status, 500);
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM idempotency_keys")
            .await,
        0,
        "a 5xx stores nothing"
    );
    app.allow_moves().await;
    let r = send(
        &app,
        Method::PATCH,
        &path,
        &s.employer.token,
        "k",
        Some(body),
    )
    .await;
    assert_eq!(r.expect(200)["status"], "reviewing");
    assert_eq!(r.header("idempotent-replayed"), None, "the key was free");
}

async fn keys_expire_and_are_cleaned_up(app: TestApp) {
    let e = app.user("employer").await;
    send(
        &app,
        Method::POST,
        "/api/companies",
        &e.token,
        "old",
        Some(json!({"name": "One"})),
    )
    .await
    .expect(201);
    send(
        &app,
        Method::POST,
        "/api/companies",
        &e.token,
        "fresh",
        Some(json!({"name": "Two"})),
    )
    .await
    .expect(201);
    // The first key is 25 hours old.
    app.exec(&format!(
        "UPDATE idempotency_keys SET created_at = created_at - {} WHERE key = 'old'",
        25 * 3600 * 1000i64
    ))
    .await;
    // An expired key is free again.
    let r = send(
        &app,
        Method::POST,
        "/api/companies",
        &e.token,
        "old",
        Some(json!({"name": "Three"})),
    )
    .await;
    assert_eq!(r.expect(201)["name"], "Three");
    app.exec(&format!(
        "UPDATE idempotency_keys SET created_at = created_at - {} WHERE key = 'old'",
        25 * 3600 * 1000i64
    ))
    .await;
    assert_eq!(
        jobboard::store::upkeep::delete_expired_keys(&*app.state.store)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM idempotency_keys")
            .await,
        1,
        "the fresh key stays"
    );
}

async fn records_go_with_their_user(app: TestApp) {
    let e = app.user("employer").await;
    send(
        &app,
        Method::POST,
        "/api/companies",
        &e.token,
        "k",
        Some(json!({"name": "One"})),
    )
    .await
    .expect(201);
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM idempotency_keys")
            .await,
        1
    );
    send(&app, Method::DELETE, "/api/me", &e.token, "bye", None)
        .await
        .expect(204);
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM idempotency_keys")
            .await,
        0
    );
}

async fn auth_endpoints_ignore_the_header(app: TestApp) {
    let body = json!({"email": "k@example.com", "password": "a long enough passphrase", "name": "K", "role": "candidate"});
    let post = |b: Value| {
        app.client
            .post(app.url("/api/auth/register"))
            .header("idempotency-key", "reg")
            .header("content-type", "application/json")
            .body(b.to_string())
            .send()
    };
    TestApp::read(post(body.clone()).await.unwrap())
        .await
        .expect(201);
    let r = TestApp::read(post(body).await.unwrap()).await;
    r.expect_problem(409, "email-taken");
    assert_eq!(r.header("idempotent-replayed"), None);
}

async fn status_change_retried_emits_one_event(app: TestApp) {
    let s = app.scenario().await;
    let path = format!("/api/applications/{}", s.application_id);
    let body = json!({"status": "reviewing"});
    let first = send(
        &app,
        Method::PATCH,
        &path,
        &s.employer.token,
        "move-1",
        Some(body.clone()),
    )
    .await;
    first.expect(200);
    // Meanwhile the application moved on; the retry still answers what the first request got.
    app.patch(
        &path,
        Some(&s.employer.token),
        json!({"status": "interview"}),
    )
    .await
    .expect(200);
    let retry = send(
        &app,
        Method::PATCH,
        &path,
        &s.employer.token,
        "move-1",
        Some(body),
    )
    .await;
    assert_eq!(retry.expect(200)["status"], "reviewing");
    assert_eq!(retry.text, first.text);
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM outbox").await,
        3,
        "the application's, and one per real move"
    );
    let smtp = crate::smtp::SmtpServer::start().await;
    let url = smtp.url();
    let config = app.config(&[("EMAIL_BACKEND", "smtp"), ("SMTP_URL", &url)]);
    let worker = jobboard::run::build_worker(&config, app.state.store.clone())
        .await
        .unwrap();
    worker.run_until_empty().await.unwrap();
    let mails = smtp.mails();
    assert_eq!(mails.len(), 3);
    assert_eq!(
        mails
            .iter()
            .filter(|m| m.text().contains("from submitted to reviewing"))
            .count(),
        1
    );
}

/// A second withdraw is 409 (the status is final), but the retry of the first, with its key,
/// answers what the first got.
async fn withdraw_retried_with_a_key_answers_200_again(app: TestApp) {
    let s = app.scenario().await;
    let path = format!("/api/applications/{}/withdraw", s.application_id);
    let first = send(&app, Method::POST, &path, &s.candidate.token, "w-1", None).await;
    assert_eq!(first.expect(200)["status"], "withdrawn");
    let retry = send(&app, Method::POST, &path, &s.candidate.token, "w-1", None).await;
    retry.expect(200);
    assert_eq!(retry.header("idempotent-replayed"), Some("true"));
    assert_eq!(retry.text, first.text);
    app.post(&path, Some(&s.candidate.token), json!({}))
        .await
        .expect_problem(409, "invalid-transition");
    let other_key = send(&app, Method::POST, &path, &s.candidate.token, "w-2", None).await;
    other_key.expect_problem(409, "invalid-transition");
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM outbox").await,
        2,
        "the application's, and one for the one withdrawal"
    );
}

/// A request that outlived its hold on the key (a retry took it over) cannot also write: its
/// write rolls back, so the work happens once.
async fn a_request_that_lost_its_key_writes_nothing(app: TestApp) {
    use jobboard::store::{CompanyFields, Completion, IdemBegin};
    let e = app.user("employer").await;
    let store = app.state.store.clone();
    let begin = || {
        store.idem_begin(
            e.id,
            "POST",
            "/api/companies",
            "slow",
            "hash",
            60_000,
            86_400_000,
        )
    };
    let IdemBegin::Started {
        record_id,
        token: first,
    } = begin().await.unwrap()
    else {
        panic!("first request starts")
    };
    assert_eq!(begin().await.unwrap(), IdemBegin::InFlight);
    // The first request stalls past its lock; the retry takes the key over.
    app.exec("UPDATE idempotency_keys SET locked_until = 0")
        .await;
    let IdemBegin::Started { token: second, .. } = begin().await.unwrap() else {
        panic!("retry takes over")
    };
    assert_ne!(first, second);
    let render = |_: &jobboard::store::CompanyRow| "{}".to_string();
    let fields = || CompanyFields {
        name: "Acme".into(),
        website: None,
        description: None,
    };
    let stale = Completion {
        record_id,
        token: &first,
        status: 201,
        render: &render,
    };
    assert!(
        store
            .create_company(e.id, fields(), Some(&stale))
            .await
            .is_err()
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM companies").await,
        0,
        "the stale write rolled back"
    );
    let current = Completion {
        record_id,
        token: &second,
        status: 201,
        render: &render,
    };
    store
        .create_company(e.id, fields(), Some(&current))
        .await
        .unwrap();
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM companies").await, 1);
    assert!(matches!(
        begin().await.unwrap(),
        IdemBegin::Replay { status: 201, .. }
    ));
}
