//! A job's lifecycle over HTTP: `expires_at` on create and PATCH, a job past it absent from
//! every search (cached or not) and refusing applications before any upkeep, renewal, the
//! status moves a PATCH may make, and the upkeep's writes reaching an API process's searches
//! through the job-change log alone (the worker has no cache handle).

use crate::helpers::*;
use crate::{each_backend, each_store};
use chrono::{DateTime, Duration, Utc};
use jobboard::store::job_upkeep::{JobUpkeepSettings, run_job_upkeep};
use serde_json::{Value, json};

each_backend!(
    a_job_past_its_date_leaves_every_search_at_once,
    the_upkeeps_writes_reach_the_searches_without_a_cache_bump,
);
each_store!(
    the_workers_upkeep_expires_a_job_and_counts_its_events,
    expires_at_is_set_on_create_and_by_patch_within_a_year,
    renew_opens_open_and_expired_jobs,
    a_patch_moves_a_job_only_between_open_and_closed,
);

fn time(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().expect("a time"))
        .expect("RFC 3339")
        .with_timezone(&Utc)
}

fn rfc(t: DateTime<Utc>) -> String {
    jobboard::timefmt::format(&t)
}

fn ids(body: &Value) -> Vec<i64> {
    body["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|j| j["id"].as_i64().expect("id"))
        .collect()
}

/// Waits until `t` has passed (with a little margin).
async fn until_past(t: DateTime<Utc>) {
    let left = (t - Utc::now()).to_std().unwrap_or_default();
    tokio::time::sleep(left + std::time::Duration::from_millis(100)).await;
}

async fn a_job_past_its_date_leaves_every_search_at_once(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let soon = Utc::now() + Duration::seconds(2);
    let lapsing = app
        .job(
            &e,
            c,
            json!({"title": "Lapsing welder", "expires_at": rfc(soon)}),
        )
        .await;
    let lapsing_id = lapsing["id"].as_i64().unwrap();
    assert_eq!(
        time(&lapsing["expires_at"]),
        jobboard::domain::job::parse_time(&rfc(soon)).unwrap()
    );
    let lasting = app.job(&e, c, json!({"title": "Lasting welder"})).await;
    let lasting_id = lasting["id"].as_i64().unwrap();
    let path = "/api/jobs?q=welder&facets=employment_type,company";
    let first = app.get(path, None).await;
    assert_eq!(ids(first.expect(200)), vec![lasting_id, lapsing_id]);
    let again = app.get(path, None).await;
    assert_eq!(
        again.header("x-cache"),
        Some("HIT"),
        "cached while both are open"
    );
    assert_eq!(again.body["total"], 2);
    let cand = app.user("candidate").await;
    app.apply(&cand, lapsing_id).await;

    until_past(soon).await;
    // No upkeep has run: the job is stored open, and yet no search has it, cached or not.
    assert_eq!(
        app.scalar_text(&format!("SELECT status FROM jobs WHERE id = {lapsing_id}"))
            .await
            .as_deref(),
        Some("open")
    );
    let after = app.get(path, None).await;
    after.expect(200);
    assert_eq!(
        after.header("x-cache"),
        Some("MISS"),
        "a cached page is never served past its earliest match's expires_at"
    );
    assert_eq!(ids(&after.body), vec![lasting_id]);
    assert_eq!(after.body["total"], 1);
    assert_eq!(after.body["facets"]["employment_type"]["full_time"], 1);
    assert_eq!(after.body["facets"]["company"][0]["count"], 1);
    let plain = app.get("/api/jobs", None).await;
    assert_eq!(ids(plain.expect(200)), vec![lasting_id]);

    // It reads expired, and takes no application.
    let read = app.get(&format!("/api/jobs/{lapsing_id}"), None).await;
    assert_eq!(read.expect(200)["status"], "expired");
    let late = app.user("candidate").await;
    let refused = app
        .post(
            &format!("/api/jobs/{lapsing_id}/applications"),
            Some(&late.token),
            json!({}),
        )
        .await;
    let detail = refused.expect_problem(409, "job-closed")["detail"].clone();
    assert!(detail.as_str().unwrap().contains("expired"), "{detail}");

    // Renewed: open and found again at once.
    let renewed = app
        .post(
            &format!("/api/jobs/{lapsing_id}/renew"),
            Some(&e.token),
            json!({}),
        )
        .await;
    assert_eq!(renewed.expect(200)["status"], "open");
    let back = app.get(path, None).await;
    assert_eq!(ids(back.expect(200)), vec![lasting_id, lapsing_id]);
    assert_eq!(back.header("x-cache"), Some("MISS"));
}

/// The worker's upkeep writes jobs (here: gives a job written before jobs expired its date)
/// with no cache to bump: the API process's searches show it once its index has applied the
/// change, though the cached page before it would live for minutes.
async fn the_upkeeps_writes_reach_the_searches_without_a_cache_bump(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({"title": "Old welder"})).await;
    let id = job["id"].as_i64().unwrap();
    // As a release before jobs expired wrote it: no date, and its change in the log.
    app.exec(&format!(
        "UPDATE jobs SET expires_at = NULL WHERE id = {id}; \
         DELETE FROM job_expiries WHERE job_id = {id}; \
         INSERT INTO job_changes (job_id) VALUES ({id})"
    ))
    .await;
    let path = "/api/jobs?q=welder";
    let found = loop {
        let r = app.get(path, None).await;
        if r.expect(200)["items"][0]["expires_at"].is_null() {
            break r;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(found.body["total"], 1);
    assert_eq!(
        app.get(path, None).await.header("x-cache"),
        Some("HIT"),
        "cached"
    );

    // The upkeep, as a worker runs it: the store alone.
    let report = run_job_upkeep(
        &*app.state.store,
        &JobUpkeepSettings::new(30, 5),
        jobboard::timefmt::now(),
    )
    .await
    .expect("the upkeep");
    assert_eq!(report.backfilled, 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let r = app.get(path, None).await;
        if !r.expect(200)["items"][0]["expires_at"].is_null() {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the search still shows the job without its date: {}",
            r.text
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn expires_at_is_set_on_create_and_by_patch_within_a_year(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let now = Utc::now();
    // Default: JOB_POSTING_DAYS (30) from its creation.
    let plain = app.job(&e, c, json!({})).await;
    let created = time(&plain["created_at"]);
    let off = time(&plain["expires_at"]) - (created + Duration::days(30));
    assert!(off.abs() < Duration::seconds(1), "{off}");
    assert!(plain["rejection_reason"].is_null());

    let body = |expires: Value| {
        json!({"company_id": c, "title": "T", "description": "", "location": "",
            "remote": false, "employment_type": "contract", "expires_at": expires})
    };
    for bad in [
        json!(rfc(now - Duration::seconds(1))),
        json!(rfc(now + Duration::days(366))),
        json!("next tuesday"),
        json!("2026-13-01T00:00:00Z"),
        json!(5),
    ] {
        let r = app
            .post("/api/jobs", Some(&e.token), body(bad.clone()))
            .await;
        assert!(
            r.expect_problem(422, "validation")["errors"]["expires_at"].is_array(),
            "{bad}: {}",
            r.text
        );
    }
    // Any offset; answered in UTC.
    let chosen = chrono::SubsecRound::trunc_subsecs(now + Duration::days(10), 0);
    let two_hours_east = chrono::FixedOffset::east_opt(2 * 3600).unwrap();
    let sent = chosen
        .with_timezone(&two_hours_east)
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, false);
    let dated = app
        .post("/api/jobs", Some(&e.token), body(json!(sent)))
        .await;
    let dated = dated.expect(201).clone();
    assert_eq!(dated["expires_at"], json!(rfc(chosen)), "{sent}");
    let id = dated["id"].as_i64().unwrap();
    let url = format!("/api/jobs/{id}");

    for (bad, why) in [
        (json!(null), "must not be null"),
        (json!(rfc(now - Duration::days(1))), "future"),
        (json!(rfc(now + Duration::days(400))), "365"),
        (json!("soon"), "RFC 3339"),
    ] {
        let r = app
            .patch(&url, Some(&e.token), json!({"expires_at": bad}))
            .await;
        let errors = &r.expect_problem(422, "validation")["errors"]["expires_at"];
        assert!(errors.to_string().contains(why), "{bad}: {}", r.text);
    }
    let later = rfc(now + Duration::days(20));
    let r = app
        .patch(&url, Some(&e.token), json!({"expires_at": later}))
        .await;
    assert_eq!(r.expect(200)["expires_at"], json!(later));

    // Closed: the same date sent back is no change; a new one is refused until it reopens.
    let closed = app
        .patch(&url, Some(&e.token), json!({"status": "closed"}))
        .await;
    let closed = closed.expect(200).clone();
    app.patch(
        &url,
        Some(&e.token),
        json!({"expires_at": later, "title": "Same date"}),
    )
    .await
    .expect(200);
    let r = app
        .patch(
            &url,
            Some(&e.token),
            json!({"expires_at": rfc(now + Duration::days(5))}),
        )
        .await;
    r.expect_problem(409, "job-not-open");
    let other = rfc(now + Duration::days(5));
    let reopened = app
        .patch(
            &url,
            Some(&e.token),
            json!({"status": "open", "expires_at": other}),
        )
        .await;
    let reopened = reopened.expect(200);
    assert_eq!(
        (reopened["status"].clone(), reopened["expires_at"].clone()),
        (json!("open"), json!(other))
    );
    assert!(closed["updated_at"] != reopened["updated_at"]);

    // Reopened after its date passed while closed: it runs from now, as a renewal would.
    let brief = app
        .job(
            &e,
            c,
            json!({"expires_at": rfc(Utc::now() + Duration::seconds(1))}),
        )
        .await;
    let brief_url = format!("/api/jobs/{}", brief["id"]);
    app.patch(&brief_url, Some(&e.token), json!({"status": "closed"}))
        .await
        .expect(200);
    until_past(time(&brief["expires_at"])).await;
    let back = app
        .patch(&brief_url, Some(&e.token), json!({"status": "open"}))
        .await;
    let back = back.expect(200);
    assert_eq!(back["status"], "open");
    assert!(time(&back["expires_at"]) > Utc::now() + Duration::days(29));
}

async fn renew_opens_open_and_expired_jobs(app: TestApp) {
    let e = app.user("employer").await;
    let other = app.user("employer").await;
    let cand = app.user("candidate").await;
    let c = app.company(&e, "Acme").await;
    let job = app
        .job(
            &e,
            c,
            json!({"expires_at": rfc(Utc::now() + Duration::days(2))}),
        )
        .await;
    let id = job["id"].as_i64().unwrap();
    let renew = |id: &str| format!("/api/jobs/{id}/renew");
    let before = Utc::now();
    let r = app
        .post(&renew(&id.to_string()), Some(&e.token), json!({}))
        .await;
    let r = r.expect(200);
    assert_eq!(r["status"], "open");
    let until = time(&r["expires_at"]);
    assert!(until >= before + Duration::days(30) && until <= Utc::now() + Duration::days(30));

    // Refusals: a candidate (403), not a member, unknown, not an id (404), closed (409).
    app.post(&renew(&id.to_string()), Some(&cand.token), json!({}))
        .await
        .expect_problem(403, "forbidden");
    app.post(&renew(&id.to_string()), Some(&other.token), json!({}))
        .await
        .expect_problem(404, "not-found");
    app.post(&renew(&(id + 1000).to_string()), Some(&e.token), json!({}))
        .await
        .expect_problem(404, "not-found");
    app.post(&renew("x1"), Some(&e.token), json!({}))
        .await
        .expect_problem(404, "not-found");
    app.post(&renew(&id.to_string()), None, json!({}))
        .await
        .expect_problem(401, "unauthorized");
    app.patch(
        &format!("/api/jobs/{id}"),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    let before = app.fingerprint().await;
    let r = app
        .post(&renew(&id.to_string()), Some(&e.token), json!({}))
        .await;
    let detail = r.expect_problem(409, "not-renewable")["detail"].clone();
    assert!(detail.as_str().unwrap().contains("closed"), "{detail}");
    assert_eq!(app.fingerprint().await, before, "nothing changed");

    // Past its date (no upkeep has run): expired, and renewable.
    let soon = Utc::now() + Duration::seconds(1);
    let lapsing = app.job(&e, c, json!({"expires_at": rfc(soon)})).await;
    until_past(soon).await;
    let url = format!("/api/jobs/{}", lapsing["id"]);
    assert_eq!(app.get(&url, None).await.expect(200)["status"], "expired");
    let r = app
        .post(&format!("{url}/renew"), Some(&e.token), json!({}))
        .await;
    assert_eq!(r.expect(200)["status"], "open");
    assert_eq!(app.get(&url, None).await.expect(200)["status"], "open");
}

async fn a_patch_moves_a_job_only_between_open_and_closed(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let url = format!("/api/jobs/{}", job["id"]);
    for to in ["expired", "pending_review", "rejected"] {
        let r = app.patch(&url, Some(&e.token), json!({"status": to})).await;
        let detail = r.expect_problem(409, "invalid-transition")["detail"].clone();
        assert!(
            detail.as_str().unwrap().contains("open and closed"),
            "{to}: {detail}"
        );
    }
    let r = app
        .patch(&url, Some(&e.token), json!({"status": "archived"}))
        .await;
    assert!(r.expect_problem(422, "validation")["errors"]["status"].is_array());
    // A 422 comes before a 409: a bad field and a forbidden move are a 422.
    let r = app
        .patch(
            &url,
            Some(&e.token),
            json!({"status": "expired", "title": ""}),
        )
        .await;
    r.expect_problem(422, "validation");
    for to in ["closed", "closed", "open", "open"] {
        let r = app.patch(&url, Some(&e.token), json!({"status": to})).await;
        assert_eq!(r.expect(200)["status"], to);
    }
    let r = app
        .patch(&url, Some(&e.token), json!({"rejection_reason": "x"}))
        .await;
    assert_eq!(
        r.expect_problem(422, "validation")["errors"]["rejection_reason"][0],
        "is read-only"
    );

    // Expired (its date passed): a PATCH may edit it but not move it; renew does.
    let soon = Utc::now() + Duration::seconds(1);
    let lapsing = app.job(&e, c, json!({"expires_at": rfc(soon)})).await;
    until_past(soon).await;
    let url = format!("/api/jobs/{}", lapsing["id"]);
    for to in ["open", "closed"] {
        let r = app.patch(&url, Some(&e.token), json!({"status": to})).await;
        let detail = r.expect_problem(409, "invalid-transition")["detail"].clone();
        assert!(detail.as_str().unwrap().contains("renew"), "{detail}");
    }
    let r = app
        .patch(
            &url,
            Some(&e.token),
            json!({"expires_at": rfc(Utc::now() + Duration::days(3))}),
        )
        .await;
    r.expect_problem(409, "job-not-open");
    let r = app
        .patch(&url, Some(&e.token), json!({"title": "Still expired"}))
        .await;
    let r = r.expect(200);
    assert_eq!(
        (r["title"].clone(), r["status"].clone()),
        (json!("Still expired"), json!("expired"))
    );
    // The upkeep still finds it open to expire, and writes its events.
    let report = run_job_upkeep(
        &*app.state.store,
        &JobUpkeepSettings::new(30, 5),
        jobboard::timefmt::now(),
    )
    .await
    .unwrap();
    assert_eq!((report.expired, report.expired_events), (1, 1));
    assert_eq!(app.get(&url, None).await.expect(200)["status"], "expired");
}

/// The worker's own upkeep loop (as `jobboard worker` runs it) expires a job past its date at
/// its first round, writes one `job.expired` per member, and counts them.
async fn the_workers_upkeep_expires_a_job_and_counts_its_events(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let soon = Utc::now() + Duration::seconds(1);
    let job = app.job(&e, c, json!({"expires_at": rfc(soon)})).await;
    let id = job["id"].as_i64().unwrap();
    until_past(soon).await;
    let worker = std::sync::Arc::new(
        jobboard::run::build_worker(&app.config(&[]), app.state.store.clone())
            .await
            .expect("a worker"),
    );
    let shutdown = tokio_util::sync::CancellationToken::new();
    let upkeep = tokio::spawn(worker.clone().maintain(shutdown.clone()));
    let status = format!("SELECT status FROM jobs WHERE id = {id}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while app.scalar_text(&status).await.as_deref() != Some("expired") {
        assert!(
            std::time::Instant::now() < deadline,
            "not expired by the upkeep"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    shutdown.cancel();
    upkeep.await.unwrap();
    let event = format!(
        "job-expired-{id}-{}-{}",
        time(&job["expires_at"]).timestamp(),
        e.id
    );
    let written = app
        .scalar_i64(&format!(
            "SELECT COUNT(*) FROM events WHERE event_id = '{event}' AND type = 'job.expired'"
        ))
        .await;
    assert_eq!(written, 1);
    let metrics = app.get("/metrics", None).await.text;
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"upkeep_events_written_total{type="job.expired"} 1"#),
        "{metrics}"
    );
}
