//! `JOB_MODERATION=true`: a new job waits for an operator's review, seen by its company's
//! members and operators alone; `GET /api/admin/jobs`, approve (searchable at once, with any
//! cache) and reject (with its reason; a member's PATCH sends it back), each decision a
//! `job.reviewed` to every member; and every refusal of those endpoints.

use crate::helpers::*;
use serde_json::{Value, json};

/// Expands each case into one test per database with moderation on (`cache`: also with Redis).
macro_rules! moderated {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::helpers::{Backend, CacheKind, TestApp};
            const ON: &[(&str, &str)] = &[("JOB_MODERATION", "true")];
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(TestApp::spawn_with(Backend::Sqlite, CacheKind::Memory, ON).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(TestApp::spawn_with(Backend::Postgres, CacheKind::Memory, ON).await).await
            }
        }
    )*};
    (cache: $($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::helpers::{Backend, CacheKind, TestApp};
            const ON: &[(&str, &str)] = &[("JOB_MODERATION", "true")];
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_memory() {
                super::$name(TestApp::spawn_with(Backend::Sqlite, CacheKind::Memory, ON).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_redis() {
                super::$name(TestApp::spawn_with(Backend::Sqlite, CacheKind::Redis, ON).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_memory() {
                super::$name(TestApp::spawn_with(Backend::Postgres, CacheKind::Memory, ON).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_redis() {
                super::$name(TestApp::spawn_with(Backend::Postgres, CacheKind::Redis, ON).await).await
            }
        }
    )*};
}

moderated!(
    a_job_waiting_for_review_is_its_members_and_operators_alone,
    rejection_has_a_reason_and_an_edit_sends_it_back,
    the_review_endpoints_refuse_what_they_must,
);
moderated!(cache: an_approved_job_is_in_the_next_search);
crate::each_store!(without_moderation_a_job_opens_at_once);

/// An employer with a company of two members, a candidate, an operator, another employer.
struct World {
    member: User,
    second: User,
    other: User,
    candidate: User,
    operator: User,
    company: i64,
}

async fn world(app: &TestApp) -> World {
    let member = app.user("employer").await;
    let second = app.user("employer").await;
    let company = app.company(&member, "Acme").await;
    app.post(
        &format!("/api/companies/{company}/members"),
        Some(&member.token),
        json!({"email": second.email}),
    )
    .await
    .expect(204);
    World {
        other: app.user("employer").await,
        candidate: app.user("candidate").await,
        operator: app.operator().await,
        member,
        second,
        company,
    }
}

fn id(job: &Value) -> i64 {
    job["id"].as_i64().expect("id")
}

async fn reviewed(app: &TestApp, job: i64, decision: &str) -> i64 {
    app.scalar_i64(&format!(
        "SELECT COUNT(*) FROM events WHERE type = 'job.reviewed' \
         AND body LIKE '%\"job_id\":{job},%' AND body LIKE '%\"decision\":\"{decision}\"%'"
    ))
    .await
}

async fn search_ids(app: &TestApp, token: Option<&str>) -> Vec<i64> {
    let r = app.get("/api/jobs?q=welder", token).await;
    r.expect(200)["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(id)
        .collect()
}

async fn a_job_waiting_for_review_is_its_members_and_operators_alone(app: TestApp) {
    let w = world(&app).await;
    let job = app
        .job(&w.member, w.company, json!({"title": "Welder"}))
        .await;
    assert_eq!(job["status"], "pending_review");
    assert!(
        job["expires_at"].is_null(),
        "its approval gives it its date"
    );
    assert!(job["rejection_reason"].is_null());
    let url = format!("/api/jobs/{}", id(&job));

    for token in [None, Some(&w.candidate.token), Some(&w.other.token)] {
        app.get(&url, token.map(|t| t.as_str()))
            .await
            .expect_problem(404, "not-found");
    }
    for who in [&w.member, &w.second, &w.operator] {
        assert_eq!(
            app.get(&url, Some(&who.token)).await.expect(200)["status"],
            "pending_review"
        );
    }
    // Never in a search, whoever asks.
    for token in [
        None,
        Some(w.member.token.as_str()),
        Some(w.operator.token.as_str()),
    ] {
        assert_eq!(search_ids(&app, token).await, Vec::<i64>::new());
    }
    app.post(
        &format!("{url}/applications"),
        Some(&w.candidate.token),
        json!({}),
    )
    .await
    .expect_problem(404, "not-found");
    // Its members manage it as any job of theirs; a PATCH may not open it.
    let r = app
        .patch(
            &url,
            Some(&w.member.token),
            json!({"title": "Senior welder"}),
        )
        .await;
    assert_eq!(r.expect(200)["status"], "pending_review");
    let r = app
        .patch(&url, Some(&w.member.token), json!({"status": "open"}))
        .await;
    let detail = r.expect_problem(409, "invalid-transition")["detail"].clone();
    assert!(detail.as_str().unwrap().contains("operator"), "{detail}");
    app.post(&format!("{url}/renew"), Some(&w.member.token), json!({}))
        .await
        .expect_problem(409, "not-renewable");
    let dated = app
        .patch(
            &url,
            Some(&w.member.token),
            json!({"expires_at": jobboard::timefmt::format(&(chrono::Utc::now() + chrono::Duration::days(3)))}),
        )
        .await;
    assert!(
        !dated.expect(200)["expires_at"].is_null(),
        "settable before it opens"
    );

    // The review queue: oldest first.
    let later = app
        .job(&w.second, w.company, json!({"title": "Later welder"}))
        .await;
    let queue = app.get("/api/admin/jobs", Some(&w.operator.token)).await;
    let queue = queue.expect(200);
    assert_eq!(
        queue["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(id)
            .collect::<Vec<_>>(),
        vec![id(&job), id(&later)]
    );
    assert_eq!(
        (queue["total"].clone(), queue["page_size"].clone()),
        (json!(2), json!(20))
    );
    let page = app
        .get(
            "/api/admin/jobs?status=pending_review&page=2&page_size=1",
            Some(&w.operator.token),
        )
        .await;
    assert_eq!(page.expect(200)["items"][0]["id"], json!(id(&later)));
    let open = app
        .get("/api/admin/jobs?status=open", Some(&w.operator.token))
        .await;
    assert_eq!(open.expect(200)["total"], 0);
}

async fn an_approved_job_is_in_the_next_search(app: TestApp) {
    let w = world(&app).await;
    let job = app
        .job(&w.member, w.company, json!({"title": "Welder"}))
        .await;
    let url = format!("/api/jobs/{}", id(&job));
    // Cached while it waits.
    assert_eq!(search_ids(&app, None).await, Vec::<i64>::new());
    assert_eq!(
        app.get("/api/jobs?q=welder", None).await.header("x-cache"),
        Some("HIT")
    );

    let before = chrono::Utc::now();
    let approved = app
        .post(
            &format!("/api/admin/jobs/{}/approve", id(&job)),
            Some(&w.operator.token),
            json!({}),
        )
        .await;
    let approved = approved.expect(200).clone();
    assert_eq!(approved["status"], "open");
    let created = chrono::DateTime::parse_from_rfc3339(approved["created_at"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc);
    assert!(
        created >= before - chrono::Duration::milliseconds(1),
        "its created_at is the approval"
    );
    assert_ne!(approved["created_at"], job["created_at"]);
    let until = chrono::DateTime::parse_from_rfc3339(approved["expires_at"].as_str().unwrap())
        .unwrap()
        .with_timezone(&chrono::Utc);
    assert_eq!(until, created + chrono::Duration::days(30));
    assert!(approved["rejection_reason"].is_null());

    // Searchable at once, by anyone; readable and appliable.
    assert_eq!(search_ids(&app, None).await, vec![id(&job)]);
    assert_eq!(app.get(&url, None).await.expect(200)["status"], "open");
    let r = app
        .get("/api/jobs?q=welder&posted_within_days=1", None)
        .await;
    assert_eq!(r.expect(200)["total"], 1);
    app.apply(&w.candidate, id(&job)).await;
    assert_eq!(
        reviewed(&app, id(&job), "approved").await,
        2,
        "one per member"
    );
    let outbox = app
        .scalar_i64("SELECT COUNT(*) FROM outbox o JOIN events e ON e.event_id = o.event_id WHERE e.type = 'job.reviewed'")
        .await;
    assert_eq!(outbox, 2);
}

async fn rejection_has_a_reason_and_an_edit_sends_it_back(app: TestApp) {
    let w = world(&app).await;
    let job = app
        .job(&w.member, w.company, json!({"title": "Welder"}))
        .await;
    let url = format!("/api/jobs/{}", id(&job));
    let rejected = app
        .post(
            &format!("/api/admin/jobs/{}/reject", id(&job)),
            Some(&w.operator.token),
            json!({"reason": "  Please name the salary.  "}),
        )
        .await;
    let rejected = rejected.expect(200).clone();
    assert_eq!(rejected["status"], "rejected");
    assert_eq!(rejected["rejection_reason"], "Please name the salary.");
    assert_eq!(reviewed(&app, id(&job), "rejected").await, 2);
    // Still its members' and the operators' alone.
    app.get(&url, Some(&w.candidate.token))
        .await
        .expect_problem(404, "not-found");
    app.get(&url, None).await.expect_problem(404, "not-found");
    let seen = app.get(&url, Some(&w.second.token)).await;
    assert_eq!(
        seen.expect(200)["rejection_reason"],
        "Please name the salary."
    );
    let rejected_list = app
        .get("/api/admin/jobs?status=rejected", Some(&w.operator.token))
        .await;
    assert_eq!(rejected_list.expect(200)["items"][0]["id"], json!(id(&job)));

    // Any edit by a member sends it back to review, and the reason goes.
    let back = app
        .patch(&url, Some(&w.member.token), json!({"salary_max": 90000}))
        .await;
    let back = back.expect(200);
    assert_eq!(back["status"], "pending_review");
    assert!(back["rejection_reason"].is_null());
    let again = app
        .post(
            &format!("/api/admin/jobs/{}/approve", id(&job)),
            Some(&w.operator.token),
            json!({}),
        )
        .await;
    assert_eq!(again.expect(200)["status"], "open");
    assert_eq!(reviewed(&app, id(&job), "approved").await, 2);
}

async fn the_review_endpoints_refuse_what_they_must(app: TestApp) {
    let w = world(&app).await;
    let job = app.job(&w.member, w.company, json!({})).await;
    let approve = format!("/api/admin/jobs/{}/approve", id(&job));
    let reject = format!("/api/admin/jobs/{}/reject", id(&job));
    // Anyone but an operator finds nothing there, whatever the body.
    for token in [
        None,
        Some("not-a-token"),
        Some(w.member.token.as_str()),
        Some(w.candidate.token.as_str()),
    ] {
        app.get("/api/admin/jobs", token)
            .await
            .expect_problem(404, "not-found");
        app.post(&approve, token, json!({}))
            .await
            .expect_problem(404, "not-found");
        app.post(&reject, token, json!({"reason": ""}))
            .await
            .expect_problem(404, "not-found");
    }
    let op = Some(w.operator.token.as_str());
    for bad in ["status=archived", "page=0", "page_size=101", "page=x"] {
        let r = app.get(&format!("/api/admin/jobs?{bad}"), op).await;
        r.expect_problem(422, "validation");
    }
    for path in [
        "/api/admin/jobs/999999/approve",
        "/api/admin/jobs/x/approve",
    ] {
        app.post(path, op, json!({}))
            .await
            .expect_problem(404, "not-found");
    }
    app.post("/api/admin/jobs/999999/reject", op, json!({"reason": "x"}))
        .await
        .expect_problem(404, "not-found");
    let before = app.fingerprint().await;
    for (body, field) in [
        (json!({"reason": "   "}), "reason"),
        (json!({"reason": "x".repeat(1001)}), "reason"),
        (json!({}), "reason"),
        (json!({"reason": 5}), "reason"),
        (json!({"reason": "x", "why": "y"}), "why"),
    ] {
        let r = app.post(&reject, op, body.clone()).await;
        assert!(
            r.expect_problem(422, "validation")["errors"][field].is_array(),
            "{body}: {}",
            r.text
        );
    }
    let r = app.send(reqwest::Method::POST, &reject, op, None).await;
    assert!(matches!(r.status.as_u16(), 400 | 415), "{}", r.text);
    assert_eq!(app.fingerprint().await, before, "nothing changed");
    // A reason of exactly 1 000 characters is taken.
    let r = app
        .post(&reject, op, json!({"reason": "y".repeat(1000)}))
        .await;
    assert_eq!(r.expect(200)["status"], "rejected");
    // Only a job waiting for review is approved or rejected.
    for path in [&approve, &reject] {
        let r = app.post(path, op, json!({"reason": "again"})).await;
        let detail = r.expect_problem(409, "invalid-transition")["detail"].clone();
        assert!(
            detail.as_str().unwrap().contains("waiting for review"),
            "{detail}"
        );
    }
    assert_eq!(reviewed(&app, id(&job), "rejected").await, 2);
    assert_eq!(reviewed(&app, id(&job), "approved").await, 0);
    // A method the route does not take: 405 to an operator only.
    let r = app.send(reqwest::Method::GET, &approve, op, None).await;
    r.expect_problem(405, "method-not-allowed");
}

async fn without_moderation_a_job_opens_at_once(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({"title": "Welder"})).await;
    assert_eq!(job["status"], "open");
    let op = app.operator().await;
    let queue = app.get("/api/admin/jobs", Some(&op.token)).await;
    assert_eq!(queue.expect(200)["total"], 0);
    let r = app
        .post(
            &format!("/api/admin/jobs/{}/approve", id(&job)),
            Some(&op.token),
            json!({}),
        )
        .await;
    r.expect_problem(409, "invalid-transition");
}
