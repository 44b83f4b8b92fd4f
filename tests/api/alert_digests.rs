//! The job alerts' digests end to end (docs/api.md "Digest rule", §5 `alert.digest`, §6):
//! written by the worker's upkeep after the period, emailed through a real SMTP server with the
//! jobs as they are now, their links and the RFC 8058 headers; a paused or deleted alert's
//! pending digest ends `missing`; the unsubscribe link pauses the alert.

use crate::helpers::*;
use crate::smtp::Mail;
use crate::worker::Harness;
use chrono::{DateTime, Utc};
use jobboard::unsubscribe::{self, Target};
use jobboard::worker::Outcome;
use serde_json::json;

macro_rules! each_mode {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use crate::worker::Harness;
            use crate::helpers::Backend;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_lease() {
                super::$name(Harness::new(Backend::Sqlite, "lease").await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_lease() {
                super::$name(Harness::new(Backend::Postgres, "lease").await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_transaction() {
                super::$name(Harness::new(Backend::Postgres, "transaction").await).await
            }
        }
    )*};
}

each_mode!(
    a_digest_lists_the_new_jobs_with_their_links_and_its_unsubscribe_link,
    a_paused_or_deleted_alerts_pending_digest_ends_missing,
    a_worker_signs_its_links_with_the_unsubscribe_secret,
);

crate::each_store!(
    the_link_names_the_alert_and_pauses_it,
    the_link_of_a_deleted_alert_has_nothing_to_stop,
);

/// The secret the test app signs with (`helpers.rs`).
const SECRET: &[u8] = b"test-secret-test-secret-test-secret";
/// Where the emails' links point.
const BASE: &str = "https://jobs.example";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// The day the cases' jobs are created in, far from the real clock, and when its digests are
/// written (after the day, its grace passed).
const DAY: &str = "2020-03-04";
const AFTER_DAY: &str = "2020-03-05T00:03:00Z";

/// `candidate`'s alert with `search`, made on the day before [`DAY`].
async fn alert(app: &TestApp, candidate: &User, search: serde_json::Value, frequency: &str) -> i64 {
    let r = app
        .post(
            "/api/alerts",
            Some(&candidate.token),
            json!({"search": search, "frequency": frequency}),
        )
        .await;
    let id = r.expect(201)["id"].as_i64().expect("an alert id");
    app.exec(&format!(
        "UPDATE alerts SET created_at = '2020-03-03T00:00:00Z' WHERE id = {id}"
    ))
    .await;
    id
}

/// A job of `company_id` opened on [`DAY`] at `time`; its id.
async fn job_on_day(
    app: &TestApp,
    owner: &User,
    company_id: i64,
    title: &str,
    location: &str,
    time: &str,
) -> i64 {
    let j = app
        .job(
            owner,
            company_id,
            json!({"title": title, "location": location}),
        )
        .await;
    let id = j["id"].as_i64().unwrap();
    app.exec(&format!(
        "UPDATE jobs SET created_at = '{DAY}T{time}Z' WHERE id = {id}"
    ))
    .await;
    id
}

/// The upkeep's run after [`DAY`], then every email sent; the outcomes.
async fn write_and_send(h: &Harness) -> (u64, Vec<Outcome>) {
    let worker = h.worker_with(&[("PUBLIC_BASE_URL", BASE)]).await;
    let written = worker.write_alert_digests(t(AFTER_DAY)).await.unwrap();
    h.publish().await;
    (written, worker.run_until_empty().await.unwrap())
}

/// `user`'s alert `id` as `GET /api/alerts` lists it.
async fn alert_json(app: &TestApp, user: &User, id: i64) -> serde_json::Value {
    let list = app.get("/api/alerts", Some(&user.token)).await;
    list.expect(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["id"] == json!(id))
        .cloned()
        .unwrap_or_else(|| panic!("alert {id} in {}", list.text))
}

fn alert_link(alert_id: i64) -> String {
    format!(
        "/api/unsubscribe/{}",
        unsubscribe::token(SECRET, Target::Alert { alert_id })
    )
}

async fn a_digest_lists_the_new_jobs_with_their_links_and_its_unsubscribe_link(h: Harness) {
    let s = h.scenario().await;
    let candidate = h.app.user("candidate").await;
    let other = h.app.user("candidate").await;
    let id = alert(
        &h.app,
        &candidate,
        json!({"q": "rust engineers", "location": "berlin", "remote": true}),
        "daily",
    )
    .await;
    // Another's alert that matches nothing: no email for it.
    alert(&h.app, &other, json!({"q": "pilot"}), "daily").await;
    let owner = &s.employer;
    let c = s.company_id;
    let older = job_on_day(&h.app, owner, c, "Rust Engineer", "Berlin", "08:00:00").await;
    let newer = job_on_day(
        &h.app,
        owner,
        c,
        "Senior Rust Engineer",
        "Berlin, Germany",
        "17:30:00",
    )
    .await;
    // Not remote; another word; another place.
    let not_remote = job_on_day(&h.app, owner, c, "Rust Engineer", "Berlin", "09:00:00").await;
    let welder = job_on_day(&h.app, owner, c, "Welder", "Berlin", "10:00:00").await;
    let wien = job_on_day(&h.app, owner, c, "Rust Engineer", "Wien", "11:00:00").await;
    h.app
        .exec(&format!(
            "UPDATE jobs SET remote = (id <> {not_remote}) WHERE id IN ({older}, {newer}, \
             {not_remote}, {welder}, {wien})"
        ))
        .await;

    let metrics = h.app.get("/metrics", None).await.text;
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"upkeep_failures_total{task="alerts"} 0"#),
        "{metrics}"
    );
    let (written, outcomes) = write_and_send(&h).await;
    assert_eq!(written, 1);
    assert_eq!(outcomes, vec![Outcome::Sent]);
    let metrics = h.app.get("/metrics", None).await.text;
    assert!(
        metrics
            .lines()
            .any(|l| l == r#"upkeep_events_written_total{type="alert.digest"} 1"#),
        "{metrics}"
    );
    let event_id = format!("alert-{id}-{DAY}");
    let mails: Vec<Mail> = h.smtp.mails();
    assert_eq!(mails.len(), 1);
    let m = &mails[0];
    assert_eq!(m.event_id(), event_id);
    assert_eq!(m.recipients.len(), 1);
    assert!(
        m.recipients[0].contains(&candidate.email),
        "{:?}",
        m.recipients
    );
    assert_eq!(
        m.header("Subject").as_deref(),
        Some("2 new jobs for \"rust engineers\" in berlin, remote"),
        "{}",
        m.raw
    );
    let text = m.text().replace("\r\n", "\n");
    let want = format!(
        "2 new jobs on {DAY} (UTC) match your daily alert for \"rust engineers\" in berlin, \
         remote:\n\nSenior Rust Engineer\n  Acme, Berlin, Germany\n  {BASE}/api/jobs/{newer}\n\n\
         Rust Engineer\n  Acme, Berlin\n  {BASE}/api/jobs/{older}\n"
    );
    assert!(text.contains(&want), "{text}\nshould contain\n{want}");
    let link = format!("{BASE}{}", alert_link(id));
    assert!(
        text.contains(&format!("To stop this daily alert: {link}")),
        "{text}"
    );
    assert_eq!(
        m.header("List-Unsubscribe").as_deref(),
        Some(format!("<{link}>").as_str())
    );
    assert_eq!(
        m.header("List-Unsubscribe-Post").as_deref(),
        Some("List-Unsubscribe=One-Click")
    );
    assert!(!m.raw.contains(&other.email), "no other user's data");
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
    let listed = alert_json(&h.app, &candidate, id).await;
    assert!(listed["last_sent_at"].is_string(), "{listed}");

    // Again, by another run: nothing new. The one-click link pauses the alert.
    let (written, outcomes) = write_and_send(&h).await;
    assert_eq!((written, outcomes), (0, vec![]));
    let r = h
        .app
        .client
        .post(link.replace(BASE, &h.app.url("")))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body, json!({"unsubscribed": "alert"}));
    assert_eq!(
        alert_json(&h.app, &candidate, id).await["paused"],
        json!(true)
    );
}

async fn a_paused_or_deleted_alerts_pending_digest_ends_missing(h: Harness) {
    let s = h.scenario().await;
    let candidate = h.app.user("candidate").await;
    let paused = alert(&h.app, &candidate, json!({"q": "welder"}), "daily").await;
    let deleted = alert(&h.app, &candidate, json!({"location": "Wien"}), "daily").await;
    let kept = alert(&h.app, &candidate, json!({"q": "welders"}), "daily").await;
    job_on_day(
        &h.app,
        &s.employer,
        s.company_id,
        "Welder",
        "Wien",
        "12:00:00",
    )
    .await;
    let worker = h.worker_with(&[("PUBLIC_BASE_URL", BASE)]).await;
    assert_eq!(worker.write_alert_digests(t(AFTER_DAY)).await.unwrap(), 3);
    h.app
        .patch(
            &format!("/api/alerts/{paused}"),
            Some(&candidate.token),
            json!({"paused": true}),
        )
        .await
        .expect(200);
    h.app
        .delete(&format!("/api/alerts/{deleted}"), Some(&candidate.token))
        .await
        .expect(204);
    h.publish().await;
    let mut outcomes = worker.run_until_empty().await.unwrap();
    outcomes.sort_by_key(|o| o.as_str());
    assert_eq!(
        outcomes,
        vec![Outcome::Missing, Outcome::Missing, Outcome::Sent]
    );
    for id in [paused, deleted] {
        assert_eq!(
            h.processed_status(&format!("alert-{id}-{DAY}"))
                .await
                .as_deref(),
            Some("missing")
        );
    }
    let mails = h.smtp.mails();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].event_id(), format!("alert-{kept}-{DAY}"));
    assert_eq!(
        mails[0].header("Subject").as_deref(),
        Some("1 new job for \"welders\"")
    );
}

async fn the_link_names_the_alert_and_pauses_it(app: TestApp) {
    let candidate = app.user("candidate").await;
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme & Sons").await;
    let id = alert(
        &app,
        &candidate,
        json!({"q": "<b>rust</b>", "company_id": company, "employment_type": "part_time"}),
        "weekly",
    )
    .await;
    let path = alert_link(id);
    let paused = || async {
        alert_json(&app, &candidate, id).await["paused"]
            .as_bool()
            .unwrap()
    };
    // A followed link changes nothing and names the alert, escaped.
    for _ in 0..2 {
        let r = app.get(&path, None).await;
        r.expect(200);
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        assert!(
            r.text.contains(
                "the weekly emails of your job alert for &quot;&lt;b&gt;rust&lt;/b&gt;&quot; \
                 at Acme &amp; Sons, part-time"
            ),
            "{}",
            r.text
        );
        assert!(r.text.contains("<form method=\"post\">"), "{}", r.text);
    }
    assert!(!paused().await);
    // One click pauses it; again the same 200; a browser gets a page.
    for _ in 0..2 {
        let r = app
            .client
            .post(app.url(&path))
            .header("content-type", "application/x-www-form-urlencoded")
            .body("List-Unsubscribe=One-Click")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let body: serde_json::Value = r.json().await.unwrap();
        assert_eq!(body, json!({"unsubscribed": "alert"}));
        assert!(paused().await);
    }
    let r = app
        .client
        .post(app.url(&path))
        .header("accept", "text/html")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let page = r.text().await.unwrap();
    assert!(page.contains("The alert is paused, not deleted"), "{page}");
    // Followed again, the link's page says it is done already, and offers no button.
    let r = app.get(&path, None).await;
    r.expect(200);
    assert!(
        r.text.contains(
            "Done already: you no longer receive the weekly emails of your job alert for \
             &quot;&lt;b&gt;rust&lt;/b&gt;&quot; at Acme &amp; Sons, part-time."
        ),
        "{}",
        r.text
    );
    assert!(
        r.text.contains("The alert is paused, not deleted"),
        "{}",
        r.text
    );
    assert!(!r.text.contains("<form"), "{}", r.text);
    // Resumed by its owner, paused again by a retry with a key: the stored answer.
    app.patch(
        &format!("/api/alerts/{id}"),
        Some(&candidate.token),
        json!({"paused": false}),
    )
    .await
    .expect(200);
    for _ in 0..2 {
        let r = app
            .client
            .post(app.url(&path))
            .header("idempotency-key", "unsubscribe-1")
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    assert!(paused().await);
    // A link naming an alert under another secret is 404, and changes nothing.
    let forged = format!(
        "/api/unsubscribe/{}",
        unsubscribe::token(
            b"another-secret-another-secret-xx",
            Target::Alert { alert_id: id }
        )
    );
    app.get(&forged, None)
        .await
        .expect_problem(404, "not-found");
}

async fn the_link_of_a_deleted_alert_has_nothing_to_stop(app: TestApp) {
    let candidate = app.user("candidate").await;
    let id = alert(&app, &candidate, json!({"q": "rust"}), "daily").await;
    app.delete(&format!("/api/alerts/{id}"), Some(&candidate.token))
        .await
        .expect(204);
    let path = alert_link(id);
    let r = app.get(&path, None).await;
    r.expect(200);
    assert!(r.text.contains("no longer exists"), "{}", r.text);
    assert!(!r.text.contains("<form"), "{}", r.text);
    let r = app
        .client
        .post(app.url(&path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["cache-control"], "no-store");
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body, json!({"unsubscribed": "alert"}));
    // Gone with its user too.
    let id = alert(&app, &candidate, json!({"q": "rust"}), "daily").await;
    app.delete("/api/me", Some(&candidate.token))
        .await
        .expect(204);
    app.get(&alert_link(id), None).await.expect(200);
}

/// With `UNSUBSCRIBE_SECRET` set, the links a worker mails are signed with it, not with
/// `JWT_SECRET`: a rotation of the sign-in secret leaves them working.
async fn a_worker_signs_its_links_with_the_unsubscribe_secret(h: Harness) {
    let key = b"unsubscribe-key-unsubscribe-key-unsubscribe";
    let s = h.scenario().await;
    let candidate = h.app.user("candidate").await;
    let id = alert(&h.app, &candidate, json!({"q": "welder"}), "daily").await;
    job_on_day(
        &h.app,
        &s.employer,
        s.company_id,
        "Welder",
        "Wien",
        "12:00:00",
    )
    .await;
    let worker = h
        .worker_with(&[
            ("PUBLIC_BASE_URL", BASE),
            ("UNSUBSCRIBE_SECRET", std::str::from_utf8(key).unwrap()),
        ])
        .await;
    assert_eq!(worker.write_alert_digests(t(AFTER_DAY)).await.unwrap(), 1);
    h.publish().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    let mails = h.smtp.mails();
    let m = mails
        .iter()
        .find(|m| m.event_id() == format!("alert-{id}-{DAY}"))
        .expect("the alert's digest");
    let header = m.header("List-Unsubscribe").expect("List-Unsubscribe");
    let prefix = format!("<{BASE}/api/unsubscribe/");
    let token = header
        .strip_prefix(&prefix)
        .and_then(|t| t.strip_suffix('>'))
        .unwrap_or_else(|| panic!("{header}"));
    assert_eq!(
        unsubscribe::verify(&[key], token),
        Some(Target::Alert { alert_id: id }),
        "{header}"
    );
    assert_eq!(unsubscribe::verify(&[SECRET], token), None, "{header}");
    assert!(
        m.text()
            .contains(&format!("{BASE}/api/unsubscribe/{token}")),
        "the body's link is the header's: {}",
        m.text()
    );
}
