//! Retention and export (CONTRACT.md §4): the worker's upkeep deletes the applications that have
//! been in a final status for longer than `APPLICATION_RETENTION_DAYS`, with their history, and
//! nothing else; in batches, with two workers at once; 0 keeps them. `GET /api/me/export` gives
//! a user everything the service holds about them.

use crate::each_store;
use crate::helpers::*;
use serde_json::{Value, json};

each_store!(
    applications_past_their_retention_go_with_their_history,
    two_workers_delete_many_retired_applications_once,
    the_export_holds_everything_about_its_user,
);

/// A time long past any retention, as the store writes times.
const LONG_AGO: &str = "2000-01-01T00:00:00Z";

async fn worker(app: &TestApp, days: &str) -> jobboard::worker::Worker {
    jobboard::run::build_worker(
        &app.config(&[("APPLICATION_RETENTION_DAYS", days)]),
        app.state.store.clone(),
    )
    .await
    .expect("worker")
}

async fn applications_past_their_retention_go_with_their_history(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app.job(&employer, company, json!({})).await["id"]
        .as_i64()
        .unwrap();
    let mut apps = Vec::new();
    for _ in 0..4 {
        let candidate = app.user("candidate").await;
        let id = app.apply(&candidate, job).await["id"].as_i64().unwrap();
        apps.push((candidate, id));
    }
    let set = |id: i64, status: &'static str| {
        let app = &app;
        let token = employer.token.clone();
        async move {
            app.patch(
                &format!("/api/applications/{id}"),
                Some(&token),
                json!({"status": status}),
            )
            .await
            .expect(200);
        }
    };
    let [
        (hired_by, hired),
        (_, rejected),
        (_, reviewing),
        (withdrawer, withdrawn),
    ] = <[(User, i64); 4]>::try_from(apps).unwrap();
    for to in ["reviewing", "interview", "offered", "hired"] {
        set(hired, to).await;
    }
    set(rejected, "rejected").await;
    set(reviewing, "reviewing").await;
    app.post(
        &format!("/api/applications/{withdrawn}/withdraw"),
        Some(&withdrawer.token),
        json!({}),
    )
    .await
    .expect(200);
    // The hired one and the one still under review were last changed long ago; the others now.
    app.exec(&format!(
        "UPDATE applications SET updated_at = '{LONG_AGO}' WHERE id IN ({hired}, {reviewing})"
    ))
    .await;

    // 0 keeps every application, however old.
    worker(&app, "0").await.delete_expired().await.unwrap();
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM applications").await, 4);

    worker(&app, "30").await.delete_expired().await.unwrap();
    let left: Vec<i64> = {
        let mut ids = Vec::new();
        for id in [hired, rejected, reviewing, withdrawn] {
            if app
                .scalar_i64(&format!(
                    "SELECT COUNT(*) FROM applications WHERE id = {id}"
                ))
                .await
                == 1
            {
                ids.push(id);
            }
        }
        ids
    };
    assert_eq!(
        left,
        [rejected, reviewing, withdrawn],
        "only the final one past the retention goes; one under review stays however old"
    );
    assert_eq!(
        app.scalar_i64(&format!(
            "SELECT COUNT(*) FROM application_history WHERE application_id = {hired}"
        ))
        .await,
        0,
        "its history goes with it"
    );
    app.get(&format!("/api/applications/{hired}"), Some(&hired_by.token))
        .await
        .expect_problem(404, "not-found");
    // The others' histories are whole.
    assert_eq!(
        app.scalar_i64(&format!(
            "SELECT COUNT(*) FROM application_history WHERE application_id = {rejected}"
        ))
        .await,
        2
    );
    // A second run finds nothing more.
    worker(&app, "30").await.delete_expired().await.unwrap();
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM applications").await, 3);
}

/// More than a batch (1 000) of retired applications, deleted by two workers at once: all go,
/// each once, and the recent ones stay.
async fn two_workers_delete_many_retired_applications_once(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app.job(&employer, company, json!({})).await["id"]
        .as_i64()
        .unwrap();
    app.exec(&format!(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 2500) \
         INSERT INTO users (email, email_key, name, role, password_hash, created_at) \
         SELECT 'old' || n || '@retention.example', 'old' || n || '@retention.example', 'Old', \
         'candidate', 'x', '{LONG_AGO}' FROM g"
    ))
    .await;
    app.exec(&format!(
        "INSERT INTO applications (job_id, candidate_id, status, created_at, updated_at) \
         SELECT {job}, id, CASE WHEN id % 5 = 0 THEN 'submitted' ELSE 'rejected' END, \
         '{LONG_AGO}', '{LONG_AGO}' FROM users WHERE email LIKE 'old%@retention.example'"
    ))
    .await;
    let recent = app.user("candidate").await;
    app.apply(&recent, job).await;
    let retired = app
        .scalar_i64("SELECT COUNT(*) FROM applications WHERE status = 'rejected'")
        .await;
    assert_eq!(retired, 2000);
    let (a, b) = (worker(&app, "30").await, worker(&app, "30").await);
    let (x, y) = tokio::join!(a.delete_expired(), b.delete_expired());
    x.unwrap();
    y.unwrap();
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM applications WHERE status = 'rejected'")
            .await,
        0
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM applications").await,
        501,
        "the 500 old ones not in a final status and the recent one stay"
    );
}

async fn the_export_holds_everything_about_its_user(app: TestApp) {
    let s = app.scenario().await;
    app.patch(
        &format!("/api/applications/{}", s.application_id),
        Some(&s.employer.token),
        json!({"status": "reviewing"}),
    )
    .await
    .expect(200);
    let alert = app
        .post(
            "/api/alerts",
            Some(&s.candidate.token),
            json!({"search": {"q": "engineer"}, "frequency": "daily"}),
        )
        .await;
    let alert_id = alert.expect(201)["id"].clone();
    // Another candidate's data is nowhere in this one's export.
    let other = app.user("candidate").await;
    app.apply(&other, s.job_id).await;

    let r = app.get("/api/me/export", Some(&s.candidate.token)).await;
    assert_eq!(
        r.header("content-disposition"),
        Some("attachment; filename=\"jobboard-export.json\"")
    );
    assert_eq!(r.header("cache-control"), Some("no-store"));
    let doc: Value = r.expect(200).clone();
    assert_eq!(doc["account"]["id"], s.candidate.id);
    assert_eq!(doc["account"]["email"], s.candidate.email.as_str());
    assert!(doc["exported_at"].is_string());
    assert_eq!(doc["companies"], json!([]));
    let apps = doc["applications"].as_array().unwrap();
    assert_eq!(apps.len(), 1, "{doc}");
    assert_eq!(apps[0]["id"], s.application_id);
    assert_eq!(apps[0]["status"], "reviewing");
    assert_eq!(apps[0]["job"]["id"], s.job_id);
    let history: Vec<&str> = apps[0]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["new_status"].as_str().unwrap())
        .collect();
    assert_eq!(history, ["submitted", "reviewing"]);
    let alerts = doc["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0]["id"], alert_id);
    assert!(doc["notifications"]["application_digest"].is_boolean());
    assert!(
        !doc.to_string().contains(&other.email),
        "nothing of another user"
    );

    // An employer's: their account and their company; no applications of their own.
    let r = app.get("/api/me/export", Some(&s.employer.token)).await;
    let doc = r.expect(200).clone();
    assert_eq!(doc["account"]["id"], s.employer.id);
    let companies: Vec<i64> = doc["companies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_i64().unwrap())
        .collect();
    assert_eq!(companies, [s.company_id]);
    assert_eq!(doc["applications"], json!([]));

    app.get("/api/me/export", None)
        .await
        .expect_problem(401, "unauthorized");
}
