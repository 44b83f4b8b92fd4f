//! Inputs at the edges of their rules: a leap second in `expires_at`, a rejection reason of
//! invisible characters, a body sent to `renew`, which reads none. Each is refused naming the
//! field and changes nothing.

use crate::each_store;
use crate::helpers::*;
use serde_json::json;

each_store!(
    a_leap_second_expires_at_is_422,
    renew_refuses_a_body_it_would_ignore,
);

mod an_invisible_rejection_reason_is_422 {
    use crate::helpers::{Backend, CacheKind, TestApp};
    const ON: &[(&str, &str)] = &[("JOB_MODERATION", "true")];
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::an_invisible_rejection_reason_is_422(
            TestApp::spawn_with(Backend::Sqlite, CacheKind::Memory, ON).await,
        )
        .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::an_invisible_rejection_reason_is_422(
            TestApp::spawn_with(Backend::Postgres, CacheKind::Memory, ON).await,
        )
        .await
    }
}

fn id(v: &serde_json::Value) -> i64 {
    v["id"].as_i64().expect("id")
}

async fn a_leap_second_expires_at_is_422(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    // A day ten days ahead: no leap second is scheduled on it (none ever falls before June).
    let day = (chrono::Utc::now() + chrono::Duration::days(10)).format("%Y-%m-%d");
    let leap = format!("{day}T23:59:60Z");
    let body = json!({
        "company_id": c, "title": "Welder", "description": "Weld",
        "location": "Berlin", "remote": false, "employment_type": "full_time",
        "expires_at": leap,
    });
    let r = app.post("/api/jobs", Some(&e.token), body).await;
    let p = r.expect_problem(422, "validation");
    assert!(p["errors"]["expires_at"].is_array(), "{}", r.text);
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM jobs").await, 0);

    let job = app.job(&e, c, json!({})).await;
    let url = format!("/api/jobs/{}", id(&job));
    for leap in [leap.clone(), format!("{day}T23:59:60.5+00:00")] {
        let r = app
            .patch(&url, Some(&e.token), json!({"expires_at": leap}))
            .await;
        let p = r.expect_problem(422, "validation");
        assert!(p["errors"]["expires_at"].is_array(), "{}", r.text);
    }
    let read = app.get(&url, Some(&e.token)).await;
    assert_eq!(read.expect(200)["expires_at"], job["expires_at"]);
    // The second before it is fine.
    let r = app
        .patch(
            &url,
            Some(&e.token),
            json!({"expires_at": format!("{day}T23:59:59Z")}),
        )
        .await;
    assert_eq!(
        r.expect(200)["expires_at"],
        format!("{day}T23:59:59.000000Z")
    );
}

async fn an_invisible_rejection_reason_is_422(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let op = app.operator().await;
    let url = format!("/api/admin/jobs/{}/reject", id(&job));
    for reason in [
        "\u{200b}",
        " \u{200b}\u{200d} ",
        "\u{feff}",
        "\u{2060}\u{00ad}",
    ] {
        let r = app
            .post(&url, Some(&op.token), json!({ "reason": reason }))
            .await;
        let p = r.expect_problem(422, "validation");
        assert!(p["errors"]["reason"].is_array(), "{reason:?}: {}", r.text);
    }
    let read = app
        .get(&format!("/api/jobs/{}", id(&job)), Some(&e.token))
        .await;
    assert_eq!(read.expect(200)["status"], "pending_review");
    let r = app
        .post(&url, Some(&op.token), json!({"reason": "\u{200b}No pay."}))
        .await;
    assert_eq!(r.expect(200)["status"], "rejected");
}

async fn renew_refuses_a_body_it_would_ignore(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let url = format!("/api/jobs/{}/renew", id(&job));
    let r = app
        .post(
            &url,
            Some(&e.token),
            json!({"expires_at": "2099-01-01T00:00:00Z"}),
        )
        .await;
    let p = r.expect_problem(422, "validation");
    assert!(p["errors"]["expires_at"].is_array(), "{}", r.text);
    let res = app
        .client
        .post(app.url(&url))
        .bearer_auth(&e.token)
        .header("content-type", "text/plain")
        .body("renew please")
        .send()
        .await
        .expect("request");
    let r = TestApp::read(res).await;
    assert_eq!(r.status.as_u16(), 415, "{}", r.text);
    let read = app
        .get(&format!("/api/jobs/{}", id(&job)), Some(&e.token))
        .await;
    assert_eq!(read.expect(200)["updated_at"], job["updated_at"]);
    // No body, or an empty object, renews.
    app.post(&url, Some(&e.token), json!({})).await.expect(200);
    app.send(reqwest::Method::POST, &url, Some(&e.token), None)
        .await
        .expect(200);
}
