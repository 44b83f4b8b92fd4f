//! Webhook endpoints (docs/api.md, "Webhooks"): created with a secret shown once, listed,
//! changed, paused, rotated and deleted by the company's members only; every field validated,
//! every URL that could reach the network the board runs in refused (by its form and by what
//! its host resolves to), at most 10 per company even under concurrent requests, and a retried
//! creation that makes one endpoint and answers the same secret.

use crate::each_store;
use crate::helpers::*;
use reqwest::Method;
use serde_json::{Value, json};

each_store!(
    an_endpoint_is_created_listed_changed_rotated_and_deleted,
    an_endpoint_is_its_companys_members_only,
    every_field_is_validated,
    no_url_reaches_the_network_the_board_runs_in,
    at_most_ten_endpoints_per_company_under_concurrent_requests,
    a_retried_creation_makes_one_endpoint_with_one_secret,
);

/// A public address, never contacted when an endpoint is saved (no DNS either).
const URL: &str = "https://93.184.215.14/hooks/jobboard";

fn hooks(company: i64) -> String {
    format!("/api/companies/{company}/webhooks")
}

async fn create(app: &TestApp, user: &User, company: i64, body: Value) -> Value {
    app.post(&hooks(company), Some(&user.token), body)
        .await
        .expect(201)
        .clone()
}

fn secret_is_standard(secret: &str) {
    use base64::Engine as _;
    let key = secret
        .strip_prefix("whsec_")
        .unwrap_or_else(|| panic!("{secret} is not whsec_…"));
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(key)
        .expect("the key is base64");
    assert!((24..=64).contains(&bytes.len()), "{} bytes", bytes.len());
}

async fn an_endpoint_is_created_listed_changed_rotated_and_deleted(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let created = create(
        &app,
        &employer,
        company,
        json!({"url": URL, "events": ["job.expired", "application.submitted"],
               "description": "  ATS sync "}),
    )
    .await;
    let id = created["id"].as_i64().unwrap();
    assert_eq!(created["url"], URL);
    assert_eq!(
        created["events"],
        json!(["application.submitted", "job.expired"]),
        "in the contract's order"
    );
    assert_eq!(created["description"], "ATS sync");
    assert_eq!(created["paused"], false);
    assert!(created["disabled_reason"].is_null());
    assert!(created["created_at"].as_str().unwrap().ends_with('Z'));
    let secret = created["secret"].as_str().unwrap().to_string();
    secret_is_standard(&secret);

    // The secret is shown once.
    let shown = app
        .get(&format!("{}/{id}", hooks(company)), Some(&employer.token))
        .await;
    let shown = shown.expect(200);
    assert!(shown.get("secret").is_none(), "{shown}");
    let mut expected = created.clone();
    expected.as_object_mut().unwrap().remove("secret");
    assert_eq!(*shown, expected);
    let list = app.get(&hooks(company), Some(&employer.token)).await;
    let list = list.expect(200);
    assert_eq!(list["items"], json!([expected]));
    assert_eq!(list["total"], 1);
    assert!(!list.to_string().contains(&secret));

    // Changed: events, description cleared, paused.
    let path = format!("{}/{id}", hooks(company));
    let changed = app
        .patch(
            &path,
            Some(&employer.token),
            json!({"events": ["job.reviewed"], "description": null, "paused": true}),
        )
        .await;
    let changed = changed.expect(200);
    assert_eq!(changed["events"], json!(["job.reviewed"]));
    assert!(changed["description"].is_null());
    assert_eq!(changed["paused"], true);
    assert_eq!(changed["url"], URL, "what is not named stays");

    // A disabled endpoint is enabled again by un-pausing it.
    app.exec(&format!(
        "UPDATE webhook_endpoints SET disabled_reason = 'the receiver answered 410 Gone', \
         paused = TRUE, failing_since = '2000-01-01T00:00:00Z' WHERE id = {id}"
    ))
    .await;
    let shown = app.get(&path, Some(&employer.token)).await;
    assert_eq!(
        shown.expect(200)["disabled_reason"],
        "the receiver answered 410 Gone"
    );
    let enabled = app
        .patch(&path, Some(&employer.token), json!({"paused": false}))
        .await;
    let enabled = enabled.expect(200);
    assert_eq!(enabled["paused"], false);
    assert!(enabled["disabled_reason"].is_null());
    // Its failing streak ends with it: its next failure does not disable it again.
    assert_eq!(
        app.scalar_i64(&format!(
            "SELECT COUNT(*) FROM webhook_endpoints WHERE id = {id} AND failing_since IS NULL"
        ))
        .await,
        1
    );

    // Rotated: a new secret; the previous one is kept for 24 hours beside it.
    let rotated = app
        .post(
            &format!("{path}/rotate-secret"),
            Some(&employer.token),
            json!({}),
        )
        .await;
    let new_secret = rotated.expect(200)["secret"].as_str().unwrap().to_string();
    secret_is_standard(&new_secret);
    assert_ne!(new_secret, secret);
    assert_eq!(
        app.scalar_text(&format!(
            "SELECT previous_secret FROM webhook_endpoints WHERE id = {id}"
        ))
        .await
        .as_deref(),
        Some(secret.as_str())
    );
    let hours = app
        .scalar_i64(&match app.backend {
            Backend::Sqlite => format!(
                "SELECT CAST(ROUND((julianday(previous_secret_until) - julianday(updated_at)) \
                 * 24) AS INTEGER) FROM webhook_endpoints WHERE id = {id}"
            ),
            Backend::Postgres => format!(
                "SELECT CAST(EXTRACT(EPOCH FROM previous_secret_until - updated_at) / 3600 \
                 AS BIGINT) FROM webhook_endpoints WHERE id = {id}"
            ),
        })
        .await;
    assert_eq!(hours, 24);

    // Deleted: gone.
    app.delete(&path, Some(&employer.token)).await.expect(204);
    app.get(&path, Some(&employer.token))
        .await
        .expect_problem(404, "not-found");
    app.delete(&path, Some(&employer.token))
        .await
        .expect_problem(404, "not-found");
    let list = app.get(&hooks(company), Some(&employer.token)).await;
    assert_eq!(list.expect(200)["total"], 0);
}

async fn an_endpoint_is_its_companys_members_only(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let id = create(
        &app,
        &employer,
        company,
        json!({"url": URL, "events": ["job.expired"]}),
    )
    .await["id"]
        .as_i64()
        .unwrap();
    let path = format!("{}/{id}", hooks(company));
    let outsider = app.user("employer").await;
    let other = app.company(&outsider, "Other").await;
    let candidate = app.user("candidate").await;
    let body = json!({"url": URL, "events": ["job.expired"]});
    for (method, p, body) in [
        (Method::GET, hooks(company), None),
        (Method::POST, hooks(company), Some(body.clone())),
        (Method::GET, path.clone(), None),
        (Method::PATCH, path.clone(), Some(json!({"paused": true}))),
        (Method::DELETE, path.clone(), None),
        (Method::POST, format!("{path}/rotate-secret"), None),
    ] {
        // Another company's member: as if nothing were there.
        app.send(method.clone(), &p, Some(&outsider.token), body.clone())
            .await
            .expect_problem(404, "not-found");
        // A candidate: employers only.
        app.send(method.clone(), &p, Some(&candidate.token), body.clone())
            .await
            .expect_problem(403, "forbidden");
        // No token.
        app.send(method, &p, None, body)
            .await
            .expect_problem(401, "unauthorized");
    }
    // The endpoint through another company's path: not there.
    app.get(&format!("{}/{id}", hooks(other)), Some(&outsider.token))
        .await
        .expect_problem(404, "not-found");
    // Nothing changed.
    let shown = app.get(&path, Some(&employer.token)).await;
    assert_eq!(shown.expect(200)["paused"], false);
}

async fn every_field_is_validated(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let ok = json!({"url": URL, "events": ["job.expired"]});
    let with = |field: &str, value: Value| {
        let mut body = ok.clone();
        body[field] = value;
        body
    };
    for (body, field) in [
        (with("events", json!([])), "events"),
        (with("events", json!(["ping"])), "events"),
        (with("events", json!(["webhook.disabled"])), "events"),
        (
            with("events", json!(["job.expired", "job.expired"])),
            "events",
        ),
        (with("events", json!("job.expired")), "events"),
        (with("url", json!(42)), "url"),
        (with("url", json!("not a url")), "url"),
        (
            with(
                "url",
                json!(format!("https://93.184.215.14/{}", "a".repeat(2048))),
            ),
            "url",
        ),
        (with("description", json!("two\nlines")), "description"),
        (with("description", json!("x".repeat(201))), "description"),
        (with("secret", json!("whsec_mine")), "secret"),
        (with("paused", json!(true)), "paused"),
        (with("colour", json!("blue")), "colour"),
    ] {
        let r = app
            .post(&hooks(company), Some(&employer.token), body.clone())
            .await;
        names_only(&r, &body.to_string(), field);
    }
    let missing = app
        .post(&hooks(company), Some(&employer.token), json!({"url": URL}))
        .await;
    names_only(&missing, "no events", "events");

    let id = create(&app, &employer, company, ok.clone()).await["id"]
        .as_i64()
        .unwrap();
    let path = format!("{}/{id}", hooks(company));
    for (body, field) in [
        (json!({"url": null}), "url"),
        (json!({"events": null}), "events"),
        (json!({"events": []}), "events"),
        (json!({"paused": null}), "paused"),
        (json!({"paused": "yes"}), "paused"),
        (json!({"url": "http://93.184.215.14/"}), "url"),
        (json!({"secret": "whsec_mine"}), "secret"),
        (json!({"disabled_reason": null}), "disabled_reason"),
    ] {
        let r = app.patch(&path, Some(&employer.token), body.clone()).await;
        names_only(&r, &body.to_string(), field);
    }
    // Nothing changed by any of them.
    let mut shown = app
        .get(&path, Some(&employer.token))
        .await
        .expect(200)
        .clone();
    shown.as_object_mut().unwrap().remove("created_at");
    assert_eq!(
        shown,
        json!({"id": id, "url": URL, "events": ["job.expired"], "description": null,
               "paused": false, "disabled_reason": null})
    );
}

async fn no_url_reaches_the_network_the_board_runs_in(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    for url in [
        "http://93.184.215.14/",
        "http://127.0.0.1/",
        "https://127.0.0.1/",
        "https://[::1]/",
        "https://169.254.169.254/latest/meta-data/",
        "https://10.0.0.8/",
        "https://172.16.4.2/",
        "https://192.168.1.1/",
        "https://100.64.0.1/",
        "https://0.0.0.0/",
        "https://[::]/",
        "https://[::ffff:127.0.0.1]/",
        "https://[::ffff:169.254.169.254]/",
        "https://[fe80::1]/",
        "https://[fd00::1]/",
        "https://224.0.0.1/",
        // Decimal, octal and hexadecimal spellings of 127.0.0.1.
        "https://2130706433/",
        "https://0177.0.0.1/",
        "https://0x7f.1/",
        // A name that resolves to loopback, and one that resolves to nothing.
        "https://localhost/",
        "https://localhost./",
        "https://nowhere.invalid/",
        "https://user:secret@93.184.215.14/",
        "ftp://93.184.215.14/",
    ] {
        let r = app
            .post(
                &hooks(company),
                Some(&employer.token),
                json!({"url": url, "events": ["job.expired"]}),
            )
            .await;
        names_only(&r, url, "url");
    }
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM webhook_endpoints")
            .await,
        0
    );
}

async fn at_most_ten_endpoints_per_company_under_concurrent_requests(app: TestApp) {
    let employer = app.user("employer").await;
    for round in 0..2 {
        let company = app.company(&employer, &format!("Acme {round}")).await;
        for i in 0..9 {
            create(
                &app,
                &employer,
                company,
                json!({"url": format!("{URL}/{i}"), "events": ["job.expired"]}),
            )
            .await;
        }
        let path = hooks(company);
        let requests = (0..5).map(|_| {
            app.post(
                &path,
                Some(&employer.token),
                json!({"url": URL, "events": ["job.expired"]}),
            )
        });
        let answers = futures::future::join_all(requests).await;
        let mut statuses: Vec<u16> = answers.iter().map(|r| r.status.as_u16()).collect();
        statuses.sort();
        assert_eq!(statuses, [201, 409, 409, 409, 409], "round {round}");
        for r in answers.iter().filter(|r| r.status.as_u16() == 409) {
            r.expect_problem(409, "too-many-webhooks");
        }
        assert_eq!(
            app.scalar_i64(&format!(
                "SELECT COUNT(*) FROM webhook_endpoints WHERE company_id = {company}"
            ))
            .await,
            10
        );
    }
}

async fn a_retried_creation_makes_one_endpoint_with_one_secret(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let send = |body: Value| {
        let req = app
            .client
            .request(Method::POST, app.url(&hooks(company)))
            .bearer_auth(&employer.token)
            .header("idempotency-key", "hook-1")
            .header("content-type", "application/json")
            .body(body.to_string());
        async move { TestApp::read(req.send().await.unwrap()).await }
    };
    let body = json!({"url": URL, "events": ["job.expired"]});
    let first = send(body.clone()).await.expect(201).clone();
    let again = send(body).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        *again.expect(201),
        first,
        "the same endpoint and the same secret"
    );
    assert_eq!(
        app.scalar_text("SELECT secret FROM webhook_endpoints")
            .await
            .as_deref(),
        first["secret"].as_str()
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM webhook_endpoints")
            .await,
        1
    );
}

/// `WEBHOOK_ALLOW_PRIVATE=true` (tests, private deployments) lifts the address rule and allows
/// `http`; a user name in the URL is still refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn private_addresses_only_when_the_operator_allows_them() {
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Memory,
        &[("WEBHOOK_ALLOW_PRIVATE", "true")],
    )
    .await;
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    for url in [
        "http://127.0.0.1:9/hook",
        "https://[::1]/",
        "http://localhost:8080/",
        "http://10.0.0.8/",
    ] {
        let created = create(
            &app,
            &employer,
            company,
            json!({"url": url, "events": ["job.expired"]}),
        )
        .await;
        assert_eq!(created["url"], url);
    }
    let r = app
        .post(
            &hooks(company),
            Some(&employer.token),
            json!({"url": "http://user:pw@127.0.0.1/", "events": ["job.expired"]}),
        )
        .await;
    names_only(&r, "userinfo", "url");
}
