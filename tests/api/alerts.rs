//! Job alerts: a candidate's saved searches. Every endpoint, its refusals (401, 403 to an
//! employer, 404 across users, 409 past 20 even under concurrent requests, 422 for each field),
//! alerts going with their user, retries with an `Idempotency-Key`, and the matcher answering
//! an alert's search exactly as `GET /api/jobs` answers the same filters.

use crate::each_store;
use crate::helpers::*;
use reqwest::Method;
use serde_json::{Value, json};

each_store!(
    an_alert_is_created_listed_changed_and_deleted,
    an_alert_is_its_owners_only,
    every_field_is_validated,
    at_most_twenty_alerts_per_user,
    the_limit_holds_under_concurrent_requests,
    alerts_go_with_their_user,
    a_retried_creation_saves_one_alert,
    an_alert_matches_what_the_same_search_finds,
);

fn rust_alert() -> Value {
    json!({"search": {"q": "Rust engineers"}, "frequency": "daily"})
}

async fn create(app: &TestApp, user: &User, body: Value) -> Value {
    app.post("/api/alerts", Some(&user.token), body)
        .await
        .expect(201)
        .clone()
}

async fn an_alert_is_created_listed_changed_and_deleted(app: TestApp) {
    let cand = app.user("candidate").await;
    let a = create(
        &app,
        &cand,
        json!({"search": {"q": "  Rust engineers ", "location": " Berlin ", "remote": true,
            "company_id": 7, "salary_min": 50000, "employment_type": "contract"},
            "frequency": "weekly"}),
    )
    .await;
    assert_eq!(
        a["search"],
        json!({"q": "Rust engineers", "location": "Berlin", "remote": true, "company_id": 7,
            "salary_min": 50000, "employment_type": "contract", "workplace": null,
            "country": null, "salary_currency": null}),
        "trimmed, as typed"
    );
    assert_eq!(a["frequency"], "weekly");
    assert_eq!(a["paused"], false);
    assert!(a["last_sent_at"].is_null());
    assert!(a["created_at"].as_str().unwrap().ends_with('Z'));
    let id = a["id"].as_i64().unwrap();

    // Unset fields are null.
    let b = create(
        &app,
        &cand,
        json!({"search": {"company_id": 3}, "frequency": "daily"}),
    )
    .await;
    assert_eq!(
        b["search"],
        json!({"q": null, "location": null, "remote": null, "company_id": 3,
            "salary_min": null, "employment_type": null, "workplace": null, "country": null,
            "salary_currency": null})
    );
    let b_id = b["id"].as_i64().unwrap();

    // Newest first, as a list.
    let list = app.get("/api/alerts", Some(&cand.token)).await;
    let list = list.expect(200);
    assert_eq!(
        (
            list["total"].clone(),
            list["page"].clone(),
            list["page_size"].clone()
        ),
        (json!(2), json!(1), json!(20))
    );
    let ids: Vec<i64> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [b_id, id]);
    assert_eq!(list["items"][1], a);
    let second = app
        .get("/api/alerts?page=2&page_size=1", Some(&cand.token))
        .await;
    let second = second.expect(200);
    assert_eq!(second["items"].as_array().unwrap().len(), 1);
    assert_eq!(second["items"][0]["id"], id);
    assert_eq!(second["total"], 2);
    for bad in ["page=0", "page_size=0", "page_size=101", "page=x"] {
        app.get(&format!("/api/alerts?{bad}"), Some(&cand.token))
            .await
            .expect_problem(422, "validation");
    }

    // Paused, then the frequency changed; the search stays.
    let path = format!("/api/alerts/{id}");
    let p = app
        .patch(&path, Some(&cand.token), json!({"paused": true}))
        .await;
    let p = p.expect(200);
    assert_eq!(
        (p["paused"].clone(), p["frequency"].clone()),
        (json!(true), json!("weekly"))
    );
    let p = app
        .patch(&path, Some(&cand.token), json!({"frequency": "daily"}))
        .await;
    let p = p.expect(200);
    assert_eq!(
        (p["paused"].clone(), p["frequency"].clone()),
        (json!(true), json!("daily"))
    );
    let p = app
        .patch(
            &path,
            Some(&cand.token),
            json!({"paused": false, "frequency": "weekly"}),
        )
        .await;
    let p = p.expect(200).clone();
    assert_eq!(
        (p["paused"].clone(), p["frequency"].clone()),
        (json!(false), json!("weekly"))
    );
    assert_eq!(
        (p["search"].clone(), p["created_at"].clone()),
        (a["search"].clone(), a["created_at"].clone())
    );
    // An empty patch changes nothing.
    assert_eq!(
        *app.patch(&path, Some(&cand.token), json!({}))
            .await
            .expect(200),
        p
    );

    app.delete(&path, Some(&cand.token)).await.expect(204);
    app.delete(&path, Some(&cand.token))
        .await
        .expect_problem(404, "not-found");
    app.patch(&path, Some(&cand.token), json!({"paused": true}))
        .await
        .expect_problem(404, "not-found");
    let list = app.get("/api/alerts", Some(&cand.token)).await;
    assert_eq!(list.expect(200)["total"], 1);
    // Non-integer ids are 404, like every id in a path.
    for bad in ["x", "0", "-1", "1.5"] {
        app.delete(&format!("/api/alerts/{bad}"), Some(&cand.token))
            .await
            .expect_problem(404, "not-found");
    }
}

async fn an_alert_is_its_owners_only(app: TestApp) {
    let cand = app.user("candidate").await;
    let other = app.user("candidate").await;
    let employer = app.user("employer").await;
    let a = create(&app, &cand, rust_alert()).await;
    let path = format!("/api/alerts/{}", a["id"]);

    // Someone else's alert does not exist for them, whatever the body or key says.
    assert_eq!(
        app.get("/api/alerts", Some(&other.token)).await.expect(200)["total"],
        0
    );
    for who in [&other, &employer] {
        app.patch(&path, Some(&who.token), json!({"paused": true}))
            .await
            .expect_problem(404, "not-found");
        app.patch(&path, Some(&who.token), json!({"no_such_field": 1}))
            .await
            .expect_problem(404, "not-found");
        app.delete(&path, Some(&who.token))
            .await
            .expect_problem(404, "not-found");
        let malformed_key = app
            .client
            .delete(app.url(&path))
            .bearer_auth(&who.token)
            .header("idempotency-key", "not valid")
            .send()
            .await
            .unwrap();
        TestApp::read(malformed_key)
            .await
            .expect_problem(404, "not-found");
    }
    // Only candidates have alerts: an employer's creation is 403, before its body is read.
    app.post("/api/alerts", Some(&employer.token), rust_alert())
        .await
        .expect_problem(403, "forbidden");
    app.post(
        "/api/alerts",
        Some(&employer.token),
        json!({"frequency": "yearly"}),
    )
    .await
    .expect_problem(403, "forbidden");
    let list = app.get("/api/alerts", Some(&employer.token)).await;
    assert_eq!(list.expect(200)["items"], json!([]));

    // No token, or a bad one: 401 on every route.
    for token in [None, Some("not-a-token")] {
        for (method, path, body) in [
            (Method::GET, "/api/alerts".to_string(), None),
            (Method::POST, "/api/alerts".to_string(), Some(rust_alert())),
            (Method::PATCH, path.clone(), Some(json!({"paused": true}))),
            (Method::DELETE, path.clone(), None),
        ] {
            app.send(method, &path, token, body)
                .await
                .expect_problem(401, "unauthorized");
        }
    }
    // The owner's alert is untouched by all of it.
    let list = app.get("/api/alerts", Some(&cand.token)).await;
    assert_eq!(list.expect(200)["items"][0], a);
}

/// The 422s of a creation: each names its field (`search.<name>` inside the search).
async fn every_field_is_validated(app: TestApp) {
    let cand = app.user("candidate").await;
    let many_words: String = (0..33).map(|i| format!("w{i} ")).collect();
    let cases: Vec<(Value, &[&str])> = vec![
        (
            json!({"search": {"q": many_words}, "frequency": "daily"}),
            &["search.q"],
        ),
        (
            json!({"search": {"q": 5}, "frequency": "daily"}),
            &["search.q"],
        ),
        (
            json!({"search": {"q": "a\u{0}b"}, "frequency": "daily"}),
            &["search.q"],
        ),
        (
            json!({"search": {"location": ["x"]}, "frequency": "daily"}),
            &["search.location"],
        ),
        (
            json!({"search": {"location": "Ber\u{0}lin"}, "frequency": "daily"}),
            &["search.location"],
        ),
        (
            json!({"search": {"q": "x", "remote": "yes"}, "frequency": "daily"}),
            &["search.remote"],
        ),
        (
            json!({"search": {"company_id": 0}, "frequency": "daily"}),
            &["search.company_id"],
        ),
        (
            json!({"search": {"company_id": "7"}, "frequency": "daily"}),
            &["search.company_id"],
        ),
        (
            json!({"search": {"company_id": 1.5}, "frequency": "daily"}),
            &["search.company_id"],
        ),
        (
            json!({"search": {"q": "x", "salary_min": -1}, "frequency": "daily"}),
            &["search.salary_min"],
        ),
        (
            json!({"search": {"q": "x", "salary_min": 1_000_000_001i64}, "frequency": "daily"}),
            &["search.salary_min"],
        ),
        (
            json!({"search": {"q": "x", "employment_type": "gig"}, "frequency": "daily"}),
            &["search.employment_type"],
        ),
        // Only the filters an alert saves: the list's own parameters are not among them.
        (
            json!({"search": {"q": "x", "sort": "newest"}, "frequency": "daily"}),
            &["search.sort"],
        ),
        (
            json!({"search": {"q": "x", "posted_within_days": 7}, "frequency": "daily"}),
            &["search.posted_within_days"],
        ),
        (
            json!({"search": {"q": "x"}, "frequency": "hourly"}),
            &["frequency"],
        ),
        (
            json!({"search": {"q": "x"}, "frequency": null}),
            &["frequency"],
        ),
        (json!({"search": {"q": "x"}}), &["frequency"]),
        (json!({"frequency": "daily"}), &["search"]),
        (json!({"search": "rust", "frequency": "daily"}), &["search"]),
        (json!({"search": null, "frequency": "daily"}), &["search"]),
        (
            json!({"search": {"q": "x"}, "frequency": "daily", "paused": true}),
            &["paused"],
        ),
        (
            json!({"search": {"q": "x"}, "frequency": "daily", "id": 3}),
            &["id"],
        ),
        // At least one of q (with a word), location, company_id.
        (json!({"search": {}, "frequency": "daily"}), &["search"]),
        (
            json!({"search": {"remote": true, "salary_min": 1, "employment_type": "contract"}, "frequency": "daily"}),
            &["search"],
        ),
        (
            json!({"search": {"q": " *** ", "location": "  ", "company_id": null}, "frequency": "daily"}),
            &["search"],
        ),
        // Every error at once.
        (
            json!({"search": {"q": 1, "company_id": -5}, "frequency": "monthly"}),
            &["frequency", "search.company_id", "search.q"],
        ),
    ];
    for (body, fields) in cases {
        let r = app
            .post("/api/alerts", Some(&cand.token), body.clone())
            .await;
        let p = r.expect_problem(422, "validation");
        let got: Vec<&str> = p["errors"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(got, fields, "{body}: {}", r.text);
    }
    // Each of the three narrows the search enough on its own; the other filters are kept.
    for search in [
        json!({"q": "rust"}),
        json!({"location": "Berlin"}),
        json!({"company_id": 9_007_199_254_740_991i64}),
        json!({"q": "x", "remote": false, "salary_min": 0, "employment_type": "internship"}),
        json!({"q": "x", "salary_min": 1_000_000_000}),
    ] {
        create(&app, &cand, json!({"search": search, "frequency": "daily"})).await;
    }
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM alerts").await,
        5,
        "no refused alert was saved"
    );

    // A patch changes only frequency and paused, never to null.
    let a = create(&app, &cand, rust_alert()).await;
    let path = format!("/api/alerts/{}", a["id"]);
    for (body, field) in [
        (json!({"frequency": "hourly"}), "frequency"),
        (json!({"frequency": null}), "frequency"),
        (json!({"frequency": 1}), "frequency"),
        (json!({"paused": null}), "paused"),
        (json!({"paused": "yes"}), "paused"),
        (json!({"search": {"q": "go"}}), "search"),
        (json!({"created_at": "2026-01-01T00:00:00Z"}), "created_at"),
        (json!({"no_such_field": 1}), "no_such_field"),
    ] {
        let r = app.patch(&path, Some(&cand.token), body.clone()).await;
        let p = r.expect_problem(422, "validation");
        assert!(p["errors"][field].is_array(), "{body}: {}", r.text);
    }
    let r = app
        .send(Method::PATCH, &path, Some(&cand.token), None)
        .await;
    assert_eq!(r.status.as_u16(), 415, "{}", r.text);
    let list = app.get("/api/alerts", Some(&cand.token)).await;
    assert_eq!(list.expect(200)["items"][0], a, "unchanged");
}

async fn at_most_twenty_alerts_per_user(app: TestApp) {
    let cand = app.user("candidate").await;
    let other = app.user("candidate").await;
    let mut ids = Vec::new();
    for i in 0..20 {
        let a = create(
            &app,
            &cand,
            json!({"search": {"q": format!("word{i}")}, "frequency": "daily"}),
        )
        .await;
        ids.push(a["id"].as_i64().unwrap());
    }
    let r = app
        .post("/api/alerts", Some(&cand.token), rust_alert())
        .await;
    let p = r.expect_problem(409, "too-many-alerts");
    assert!(p["detail"].as_str().unwrap().contains("20"), "{}", r.text);
    // Validation comes before the state: an invalid 21st is a 422.
    app.post(
        "/api/alerts",
        Some(&cand.token),
        json!({"search": {}, "frequency": "daily"}),
    )
    .await
    .expect_problem(422, "validation");
    // Someone else's alerts are not counted against them.
    create(&app, &other, rust_alert()).await;
    // One deleted, one more fits again.
    app.delete(&format!("/api/alerts/{}", ids[3]), Some(&cand.token))
        .await
        .expect(204);
    create(&app, &cand, rust_alert()).await;
    app.post("/api/alerts", Some(&cand.token), rust_alert())
        .await
        .expect_problem(409, "too-many-alerts");
    let list = app
        .get("/api/alerts?page_size=100", Some(&cand.token))
        .await;
    assert_eq!(list.expect(200)["total"], 20);
}

/// Requests at 19 alerts, all at once: exactly one is the 20th.
async fn the_limit_holds_under_concurrent_requests(app: TestApp) {
    for round in 0..3 {
        let cand = app.user("candidate").await;
        for i in 0..19 {
            create(
                &app,
                &cand,
                json!({"search": {"q": format!("w{i}")}, "frequency": "daily"}),
            )
            .await;
        }
        let requests = (0..6).map(|_| app.post("/api/alerts", Some(&cand.token), rust_alert()));
        let answers = futures::future::join_all(requests).await;
        let mut statuses: Vec<u16> = answers.iter().map(|r| r.status.as_u16()).collect();
        statuses.sort();
        assert_eq!(statuses, [201, 409, 409, 409, 409, 409], "round {round}");
        for r in answers.iter().filter(|r| r.status.as_u16() == 409) {
            r.expect_problem(409, "too-many-alerts");
        }
        assert_eq!(
            app.scalar_i64(&format!(
                "SELECT COUNT(*) FROM alerts WHERE user_id = {}",
                cand.id
            ))
            .await,
            20
        );
    }
}

async fn alerts_go_with_their_user(app: TestApp) {
    let cand = app.user("candidate").await;
    let stays = app.user("candidate").await;
    for _ in 0..3 {
        create(&app, &cand, rust_alert()).await;
    }
    let kept = create(&app, &stays, rust_alert()).await;
    app.delete("/api/me", Some(&cand.token)).await.expect(204);
    assert_eq!(
        app.scalar_i64(&format!(
            "SELECT COUNT(*) FROM alerts WHERE user_id = {}",
            cand.id
        ))
        .await,
        0
    );
    let list = app.get("/api/alerts", Some(&stays.token)).await;
    assert_eq!(list.expect(200)["items"], json!([kept]));
}

async fn a_retried_creation_saves_one_alert(app: TestApp) {
    let cand = app.user("candidate").await;
    let send = |method: Method, path: String, key: &'static str, body: Option<Value>| {
        let mut req = app
            .client
            .request(method, app.url(&path))
            .bearer_auth(&cand.token)
            .header("idempotency-key", key);
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        async move { TestApp::read(req.send().await.unwrap()).await }
    };
    let first = send(
        Method::POST,
        "/api/alerts".into(),
        "create-1",
        Some(rust_alert()),
    )
    .await;
    let first = first.expect(201).clone();
    let again = send(
        Method::POST,
        "/api/alerts".into(),
        "create-1",
        Some(rust_alert()),
    )
    .await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(*again.expect(201), first);
    let other_body = json!({"search": {"q": "go"}, "frequency": "daily"});
    send(
        Method::POST,
        "/api/alerts".into(),
        "create-1",
        Some(other_body),
    )
    .await
    .expect_problem(422, "idempotency-key-reused");
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM alerts").await, 1);

    let path = format!("/api/alerts/{}", first["id"]);
    let paused = send(
        Method::PATCH,
        path.clone(),
        "pause-1",
        Some(json!({"paused": true})),
    )
    .await;
    let paused = paused.expect(200).clone();
    // Unpaused meanwhile: the replay is the stored answer and changes nothing.
    app.patch(&path, Some(&cand.token), json!({"paused": false}))
        .await
        .expect(200);
    let replay = send(
        Method::PATCH,
        path.clone(),
        "pause-1",
        Some(json!({"paused": true})),
    )
    .await;
    assert_eq!(replay.header("idempotent-replayed"), Some("true"));
    assert_eq!(*replay.expect(200), paused);
    let list = app.get("/api/alerts", Some(&cand.token)).await;
    assert_eq!(list.expect(200)["items"][0]["paused"], false);

    send(Method::DELETE, path.clone(), "delete-1", None)
        .await
        .expect(204);
    let replay = send(Method::DELETE, path.clone(), "delete-1", None).await;
    assert_eq!(
        (replay.status.as_u16(), replay.header("idempotent-replayed")),
        (204, Some("true"))
    );
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM alerts").await, 0);
}

/// The matcher (`jobboard::search::match_alerts`) on alerts saved through the API and the jobs
/// published after them gives, for each alert, the jobs `GET /api/jobs` finds with the same
/// filters among the jobs created after the alert, newest first, the newest 20 listed and the
/// rest counted.
async fn an_alert_matches_what_the_same_search_finds(app: TestApp) {
    let employer = app.user("employer").await;
    let acme = app.company(&employer, "Acme Rust Works").await;
    let globex = app.company(&employer, "Globex").await;
    let job = |company: i64, title: &str, location: &str, extra: Value| {
        let mut body =
            json!({"title": title, "location": location, "description": "Build systems"});
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        app.job(&employer, company, body)
    };
    // Before any alert: never listed.
    job(acme, "Rust Engineer", "Berlin", json!({})).await;
    let cand = app.user("candidate").await;
    let searches = [
        json!({"q": "engineers"}),
        json!({"q": "rust", "location": "BERLIN"}),
        json!({"location": "münchen", "remote": true}),
        json!({"company_id": globex, "salary_min": 80000}),
        json!({"q": "Nurses", "employment_type": "part_time"}),
        json!({"q": "acme welder"}),
        json!({"q": "zzzz"}),
    ];
    let mut alerts = Vec::new();
    for s in &searches {
        let a = create(&app, &cand, json!({"search": s, "frequency": "daily"})).await;
        alerts.push(a["id"].as_i64().unwrap());
    }
    let mut made = Vec::new();
    for i in 0..24 {
        let j = job(
            acme,
            "Senior Rust Engineers",
            "Berlin-Mitte",
            json!({"remote": i % 2 == 0}),
        )
        .await;
        made.push(j["id"].as_i64().unwrap());
    }
    for (company, title, location, extra) in [
        (
            globex,
            "Nurse",
            "München",
            json!({"remote": true, "employment_type": "part_time", "salary_max": 90000}),
        ),
        (
            globex,
            "Engineer",
            "MÜNCHEN, Bayern",
            json!({"remote": true, "salary_max": 70000}),
        ),
        (globex, "Welder", "Wien", json!({})),
        (
            acme,
            "Welder",
            "Wien",
            json!({"salary_min": 10, "salary_max": 20}),
        ),
        (
            globex,
            "People Person",
            "Berlin",
            json!({"employment_type": "part_time"}),
        ),
    ] {
        let j = job(company, title, location, extra).await;
        made.push(j["id"].as_i64().unwrap());
    }
    // A closed job matches nothing.
    let closed = made[3];
    app.patch(
        &format!("/api/jobs/{closed}"),
        Some(&employer.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);

    let store = &app.state.store;
    let mut rows = Vec::new();
    for id in &alerts {
        rows.push(store.alert_of(cand.id, *id).await.unwrap());
    }
    let window = store.jobs_by_ids(&made).await.unwrap();
    let found: Vec<_> = jobboard::search::match_alerts(&window, &rows)
        .unwrap()
        .into_iter()
        .map(|m| m.expect("every alert is read"))
        .collect();
    for ((search, row), got) in searches.iter().zip(&rows).zip(&found) {
        assert_eq!(got.alert_id, row.id);
        let mut query = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in search.as_object().unwrap() {
            query.append_pair(k, &v.as_str().map(String::from).unwrap_or(v.to_string()));
        }
        let list = app
            .get(&format!("/api/jobs?page_size=100&{}", query.finish()), None)
            .await;
        let created = row.created_at;
        let expected: Vec<i64> = list.expect(200)["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|j| {
                let at = chrono::DateTime::parse_from_rfc3339(j["created_at"].as_str().unwrap())
                    .unwrap();
                at > created
            })
            .map(|j| j["id"].as_i64().unwrap())
            .collect();
        let listed: Vec<i64> = expected.iter().take(20).copied().collect();
        assert_eq!(got.jobs, listed, "{search}");
        assert_eq!(
            got.further as usize,
            expected.len() - listed.len(),
            "{search}"
        );
    }
    // The case that fills a digest: 23 open + 1 engineers, 20 listed, 4 counted.
    assert_eq!((found[0].jobs.len(), found[0].further), (20, 4));
    assert!(!found[0].jobs.contains(&closed));
    assert!(found[6].jobs.is_empty());
}
