//! Applications: applying (race-proof), visibility, the status workflow, withdraw, delete,
//! history, and the outbox event each move writes in its own transaction.

use crate::each_store;
use crate::helpers::*;
use serde_json::{Value, json};

each_store!(
    apply_rules,
    apply_checks_the_caller_first,
    concurrent_duplicate_applications,
    visibility,
    workflow_and_events,
    forbidden_moves_name_the_allowed_ones,
    withdraw_rules,
    delete_then_apply_again,
    listing_filters,
);

async fn apply_rules(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({"title": "Designer"})).await;
    let job_id = job["id"].as_i64().unwrap();
    let cand = app.user("candidate").await;
    let path = format!("/api/jobs/{job_id}/applications");

    let r = app
        .post(
            &path,
            Some(&cand.token),
            json!({"cover_letter": "  Hello  "}),
        )
        .await;
    let a = r.expect(201).clone();
    assert_eq!(a["status"], "submitted");
    assert_eq!(a["cover_letter"], "Hello");
    assert_eq!(
        a["job"],
        json!({"id": job_id, "title": "Designer", "company": {"id": c, "name": "Acme"}})
    );
    assert_eq!(a["candidate"]["id"], cand.id);
    assert_eq!(a["candidate"]["email"], cand.email);

    app.post(&path, Some(&cand.token), json!({}))
        .await
        .expect_problem(409, "already-applied");
    app.post(&path, Some(&e.token), json!({}))
        .await
        .expect_problem(403, "forbidden");
    app.post(
        "/api/jobs/999999/applications",
        Some(&cand.token),
        json!({}),
    )
    .await
    .expect_problem(404, "not-found");
    let other = app.user("candidate").await;
    let r = app
        .post(
            &path,
            Some(&other.token),
            json!({"cover_letter": "x".repeat(10_001)}),
        )
        .await;
    assert!(r.expect_problem(422, "validation")["errors"]["cover_letter"].is_array());
    // No body at all is an application without a cover letter.
    let r = app
        .send(reqwest::Method::POST, &path, Some(&other.token), None)
        .await;
    assert!(r.expect(201)["cover_letter"].is_null());

    app.patch(
        &format!("/api/jobs/{job_id}"),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    let late = app.user("candidate").await;
    app.post(&path, Some(&late.token), json!({}))
        .await
        .expect_problem(409, "job-closed");

    let history = app
        .get(
            &format!("/api/applications/{}/history", a["id"]),
            Some(&cand.token),
        )
        .await;
    let event_id = history.expect(200)[0]["event_id"]
        .as_str()
        .expect("the submission's event id")
        .to_string();
    assert_eq!(
        history.body.as_array().unwrap()[0],
        json!({"old_status": null, "new_status": "submitted", "changed_by": cand.id, "event_id": event_id,
               "at": history.body[0]["at"]})
    );
    // Each application emits one event, its candidate's confirmation (docs/guarantee.md), in its
    // transaction: two here, none for the refused attempts.
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 2);
    let body: Value = serde_json::from_str(
        &app.scalar_text(&format!(
            "SELECT body FROM outbox WHERE event_id = '{event_id}'"
        ))
        .await
        .expect("its message"),
    )
    .unwrap();
    assert_eq!(body["type"], "application.submitted");
    assert_eq!(body["application_id"], a["id"]);
    assert_eq!(body["occurred_at"], history.body[0]["at"]);
}

/// A token that is no longer its account's (a password changed, an account deleted) is 401
/// for an apply, and writes nothing, whatever else the request gets wrong: the path, the body,
/// its size, a key. PostgreSQL's apply checks the account in the statement that writes, and
/// reads it only when the statement declines.
async fn apply_checks_the_caller_first(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({"title": "Designer"})).await;
    let path = format!("/api/jobs/{}/applications", job["id"]);
    let revoked = app.user("candidate").await;
    app.post(
        "/api/me/password",
        Some(&revoked.token),
        json!({"current_password": revoked.password, "new_password": "a brand new passphrase"}),
    )
    .await
    .expect(204);
    let gone = app.user("candidate").await;
    app.delete("/api/me", Some(&gone.token)).await.expect(204);
    let outbox = app.scalar_i64("SELECT COUNT(*) FROM outbox").await;
    // A POST of a raw JSON body, with an Idempotency-Key if given.
    let raw = |path: &str, token: &str, key: Option<&str>, body: String| {
        let mut req = app
            .client
            .post(app.url(path))
            .bearer_auth(token)
            .header("content-type", "application/json")
            .body(body);
        if let Some(key) = key {
            req = req.header("idempotency-key", key);
        }
        async move { TestApp::read(req.send().await.expect("request")).await }
    };
    for token in [&revoked.token, &gone.token] {
        app.post(&path, Some(token), json!({"cover_letter": "Hello"}))
            .await
            .expect_problem(401, "unauthorized");
        app.post("/api/jobs/not-a-job/applications", Some(token), json!({}))
            .await
            .expect_problem(401, "unauthorized");
        app.post(&path, Some(token), json!({"cover_letter": 7}))
            .await
            .expect_problem(401, "unauthorized");
        let too_large = format!(r#"{{"cover_letter": "{}"}}"#, "x".repeat(70_000));
        raw(&path, token, None, too_large)
            .await
            .expect_problem(401, "unauthorized");
        raw(&path, token, Some("apply-1"), "{}".into())
            .await
            .expect_problem(401, "unauthorized");
    }
    // The employer's token is its own, but only candidates apply.
    app.post(&path, Some(&e.token), json!({}))
        .await
        .expect_problem(403, "forbidden");
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM applications").await, 0);
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM outbox").await,
        outbox,
        "no event"
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM idempotency_keys")
            .await,
        0,
        "no key kept for a token that is no longer its account's"
    );
    // A refused path is refused before its key is looked at: the key is still free for the
    // apply it was meant for.
    let cand = app.user("candidate").await;
    raw(
        "/api/jobs/not-a-job/applications",
        &cand.token,
        Some("apply-2"),
        "{}".into(),
    )
    .await
    .expect_problem(404, "not-found");
    raw(&path, &cand.token, Some("apply-2"), "{}".into())
        .await
        .expect(201);
    // The new password's token applies.
    let token = app.login(&revoked.email, "a brand new passphrase").await;
    app.post(&path, Some(&token), json!({"cover_letter": "Hello"}))
        .await
        .expect(201);
}

async fn concurrent_duplicate_applications(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let cand = app.user("candidate").await;
    let path = format!("/api/jobs/{}/applications", job["id"]);
    let requests =
        (0..20).map(|_| app.post(&path, Some(&cand.token), json!({"cover_letter": "me"})));
    let answers = futures::future::join_all(requests).await;
    let created = answers.iter().filter(|r| r.status == 201).count();
    let conflicts = answers
        .iter()
        .filter(|r| r.status == 409 && r.body["type"] == "/problems/already-applied")
        .count();
    assert_eq!(
        (created, conflicts),
        (1, 19),
        "{:?}",
        answers.iter().map(|r| r.status).collect::<Vec<_>>()
    );
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM applications").await, 1);
}

async fn visibility(app: TestApp) {
    let s = app.scenario().await;
    let stranger = app.user("candidate").await;
    let rival = app.user("employer").await;
    app.company(&rival, "Rival").await;
    let path = format!("/api/applications/{}", s.application_id);

    app.get(&path, Some(&s.candidate.token)).await.expect(200);
    app.get(&path, Some(&s.employer.token)).await.expect(200);
    app.get(&path, Some(&stranger.token))
        .await
        .expect_problem(404, "not-found");
    app.get(&path, Some(&rival.token))
        .await
        .expect_problem(404, "not-found");
    app.get(&format!("{path}/history"), Some(&stranger.token))
        .await
        .expect_problem(404, "not-found");
    app.get(&format!("{path}/history"), Some(&rival.token))
        .await
        .expect_problem(404, "not-found");
    app.patch(&path, Some(&rival.token), json!({"status": "reviewing"}))
        .await
        .expect_problem(404, "not-found");
    app.post(
        &format!("{path}/withdraw"),
        Some(&stranger.token),
        json!({}),
    )
    .await
    .expect_problem(404, "not-found");
    app.delete(&path, Some(&stranger.token))
        .await
        .expect_problem(404, "not-found");
    app.patch(
        &path,
        Some(&s.candidate.token),
        json!({"status": "reviewing"}),
    )
    .await
    .expect_problem(403, "forbidden");
    app.post(
        &format!("{path}/withdraw"),
        Some(&s.employer.token),
        json!({}),
    )
    .await
    .expect_problem(403, "forbidden");
    app.delete(&path, Some(&s.employer.token))
        .await
        .expect_problem(403, "forbidden");
    app.get(&path, None).await.expect(401);
    // Lists: the stranger and the rival see nothing; filtering by an invisible job is empty.
    assert_eq!(
        app.get("/api/applications", Some(&stranger.token))
            .await
            .expect(200)["total"],
        0
    );
    assert_eq!(
        app.get("/api/applications", Some(&rival.token))
            .await
            .expect(200)["total"],
        0
    );
    let r = app
        .get(
            &format!("/api/applications?job_id={}", s.job_id),
            Some(&rival.token),
        )
        .await;
    assert_eq!(r.expect(200)["items"], json!([]));
    // Nothing changed.
    assert_eq!(
        app.get(&path, Some(&s.candidate.token)).await.body["status"],
        "submitted"
    );
}

async fn workflow_and_events(app: TestApp) {
    let s = app.scenario().await;
    let path = format!("/api/applications/{}", s.application_id);
    for next in ["reviewing", "interview", "offered", "hired"] {
        let r = app
            .patch(&path, Some(&s.employer.token), json!({"status": next}))
            .await;
        assert_eq!(r.expect(200)["status"], next);
        // Setting the current status again is 200 and emits nothing (a final one is refused,
        // below).
        if next != "hired" {
            app.patch(&path, Some(&s.employer.token), json!({"status": next}))
                .await
                .expect(200);
        }
    }
    let history = app
        .get(&format!("{path}/history"), Some(&s.candidate.token))
        .await;
    let rows = history.expect(200).as_array().unwrap().clone();
    let moves: Vec<(serde_json::Value, serde_json::Value)> = rows
        .iter()
        .map(|h| (h["old_status"].clone(), h["new_status"].clone()))
        .collect();
    assert_eq!(
        moves,
        vec![
            (json!(null), json!("submitted")),
            (json!("submitted"), json!("reviewing")),
            (json!("reviewing"), json!("interview")),
            (json!("interview"), json!("offered")),
            (json!("offered"), json!("hired")),
        ]
    );
    let mut event_ids: Vec<String> = rows[1..]
        .iter()
        .map(|h| h["event_id"].as_str().unwrap().to_string())
        .collect();
    assert!(rows[1..].iter().all(|h| h["changed_by"] == s.employer.id));
    event_ids.dedup();
    assert_eq!(event_ids.len(), 4, "one distinct event per move");
    assert!(event_ids.iter().all(|id| uuid::Uuid::parse_str(id).is_ok()));
    // The outbox holds exactly those events (and the submission's), each with the contract's
    // body.
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 5);
    for (i, id) in event_ids.iter().enumerate() {
        let n = app
            .scalar_i64(&format!(
                "SELECT COUNT(*) FROM outbox WHERE event_id = '{id}' AND application_id = {}",
                s.application_id
            ))
            .await;
        assert_eq!(n, 1, "event {i}");
    }
    // A final status allows no more moves, setting it again included (CONTRACT §4: a final
    // status answers 409); a retry that must be safe carries an Idempotency-Key.
    app.patch(
        &path,
        Some(&s.employer.token),
        json!({"status": "rejected"}),
    )
    .await
    .expect_problem(409, "invalid-transition");
    let detail = app
        .patch(&path, Some(&s.employer.token), json!({"status": "hired"}))
        .await
        .expect_problem(409, "invalid-transition")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(detail.contains("final"), "{detail}");
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 5);
}

async fn forbidden_moves_name_the_allowed_ones(app: TestApp) {
    let s = app.scenario().await;
    let path = format!("/api/applications/{}", s.application_id);
    let r = app
        .patch(&path, Some(&s.employer.token), json!({"status": "hired"}))
        .await;
    let detail = r.expect_problem(409, "invalid-transition")["detail"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        detail.contains("reviewing") && detail.contains("rejected"),
        "{detail}"
    );
    let r = app
        .patch(
            &path,
            Some(&s.employer.token),
            json!({"status": "withdrawn"}),
        )
        .await;
    r.expect_problem(409, "invalid-transition");
    app.patch(&path, Some(&s.employer.token), json!({"status": "bogus"}))
        .await
        .expect_problem(422, "validation");
    app.patch(&path, Some(&s.employer.token), json!({}))
        .await
        .expect_problem(422, "validation");
    // Every move the table forbids, from every status reachable by allowed moves.
    let table: &[(&str, &[&str])] = &[
        ("submitted", &["reviewing", "rejected"]),
        ("reviewing", &["interview", "rejected"]),
        ("interview", &["offered", "rejected"]),
        ("offered", &["hired", "rejected"]),
    ];
    let all = [
        "submitted",
        "reviewing",
        "interview",
        "offered",
        "hired",
        "rejected",
        "withdrawn",
    ];
    for (from, allowed) in table {
        for to in all {
            if to == *from || allowed.contains(&to) {
                continue;
            }
            let r = app
                .patch(&path, Some(&s.employer.token), json!({"status": to}))
                .await;
            r.expect_problem(409, "invalid-transition");
        }
        let next = allowed[0];
        app.patch(&path, Some(&s.employer.token), json!({"status": next}))
            .await
            .expect(200);
    }
    // The submission's event and one per move.
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 5);
}

async fn withdraw_rules(app: TestApp) {
    let s = app.scenario().await;
    let path = format!("/api/applications/{}", s.application_id);
    app.patch(
        &path,
        Some(&s.employer.token),
        json!({"status": "reviewing"}),
    )
    .await
    .expect(200);
    let r = app
        .post(
            &format!("{path}/withdraw"),
            Some(&s.candidate.token),
            json!({}),
        )
        .await;
    assert_eq!(r.expect(200)["status"], "withdrawn");
    // Again: withdrawn is final, so 409 and no event.
    app.post(
        &format!("{path}/withdraw"),
        Some(&s.candidate.token),
        json!({}),
    )
    .await
    .expect_problem(409, "invalid-transition");
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 3);
    let history = app
        .get(&format!("{path}/history"), Some(&s.employer.token))
        .await;
    let last = history
        .expect(200)
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        (last["old_status"].clone(), last["new_status"].clone()),
        (json!("reviewing"), json!("withdrawn"))
    );
    assert_eq!(last["changed_by"], s.candidate.id);
    // A withdrawn application still blocks a second one to the same job.
    app.post(
        &format!("/api/jobs/{}/applications", s.job_id),
        Some(&s.candidate.token),
        json!({}),
    )
    .await
    .expect_problem(409, "already-applied");

    // Withdrawing a final application is refused.
    let other = app.user("candidate").await;
    let a = app.apply(&other, s.job_id).await;
    let p2 = format!("/api/applications/{}", a["id"]);
    app.patch(&p2, Some(&s.employer.token), json!({"status": "rejected"}))
        .await
        .expect(200);
    app.post(&format!("{p2}/withdraw"), Some(&other.token), json!({}))
        .await
        .expect_problem(409, "invalid-transition");
}

async fn delete_then_apply_again(app: TestApp) {
    let s = app.scenario().await;
    let path = format!("/api/applications/{}", s.application_id);
    app.patch(
        &path,
        Some(&s.employer.token),
        json!({"status": "reviewing"}),
    )
    .await
    .expect(200);
    app.delete(&path, Some(&s.candidate.token))
        .await
        .expect(204);
    app.get(&path, Some(&s.candidate.token)).await.expect(404);
    app.get(&format!("{path}/history"), Some(&s.candidate.token))
        .await
        .expect(404);
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM application_history")
            .await,
        0
    );
    // The queued events (the submission's and the move's) outlive the application (the
    // worker will find them missing).
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 2);
    let again = app.apply(&s.candidate, s.job_id).await;
    assert!(
        again["id"].as_i64().unwrap() > s.application_id,
        "ids are never reused"
    );
}

async fn listing_filters(app: TestApp) {
    let s = app.scenario().await;
    let second_job = app
        .job(&s.employer, s.company_id, json!({"title": "Second"}))
        .await;
    let other = app.user("candidate").await;
    let a2 = app.apply(&other, second_job["id"].as_i64().unwrap()).await;
    app.apply(&s.candidate, second_job["id"].as_i64().unwrap())
        .await;
    app.patch(
        &format!("/api/applications/{}", a2["id"]),
        Some(&s.employer.token),
        json!({"status": "rejected"}),
    )
    .await
    .expect(200);

    let all = app.get("/api/applications", Some(&s.employer.token)).await;
    assert_eq!(all.expect(200)["total"], 3);
    let ids: Vec<i64> = all.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_i64().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(ids, sorted, "newest first");
    let r = app
        .get(
            &format!("/api/applications?job_id={}", second_job["id"]),
            Some(&s.employer.token),
        )
        .await;
    assert_eq!(r.expect(200)["total"], 2);
    let r = app
        .get("/api/applications?status=rejected", Some(&s.employer.token))
        .await;
    assert_eq!(r.expect(200)["total"], 1);
    assert_eq!(r.body["items"][0]["id"], a2["id"]);
    let r = app
        .get(
            "/api/applications?page_size=1&page=2",
            Some(&s.employer.token),
        )
        .await;
    assert_eq!(r.expect(200)["items"].as_array().unwrap().len(), 1);
    assert_eq!(r.body["total"], 3);
    assert_eq!(
        app.get("/api/applications", Some(&s.candidate.token))
            .await
            .expect(200)["total"],
        2
    );
    assert_eq!(
        app.get("/api/applications", Some(&other.token))
            .await
            .expect(200)["total"],
        1
    );
    app.get("/api/applications?status=bogus", Some(&s.employer.token))
        .await
        .expect_problem(422, "validation");
    app.get("/api/applications?page=0", Some(&s.employer.token))
        .await
        .expect_problem(422, "validation");
    app.get("/api/applications?job_id=abc", Some(&s.employer.token))
        .await
        .expect_problem(422, "validation");
}
