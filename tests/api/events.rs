//! Every event type of docs/guarantee.md through the one worker path, against a real SMTP server:
//! each type's email (subject, body, headers, recipient), the confirmation written with an
//! application, the hourly applications digest written by the upkeep (each once, whatever runs
//! it how often), the `missing` ends (what an event reports is gone, or its person turned the
//! email off), and invalid messages of each type dead-lettered with the field named. Each case
//! runs on SQLite with `lease`, and on PostgreSQL with `lease` (batched and not) and with
//! `transaction`; the main ones with `QUEUE=sqs` too.

use crate::helpers::*;
use crate::smtp::Mail;
use crate::worker::Harness;
use chrono::{DateTime, TimeDelta, Utc};
use jobboard::domain::Role;
use jobboard::domain::event::{DIGEST_APPLICATIONS, Decision, Event, EventKind};
use jobboard::domain::values::Email;
use jobboard::store::NewUser;
use jobboard::worker::Outcome;
use serde_json::json;

crate::each_worker_mode!(
    an_application_is_confirmed_to_its_candidate,
    job_events_email_each_member,
    the_digest_of_an_hour_goes_to_each_member_with_their_companies_counts,
    the_upkeep_writes_each_digest_once,
    a_digest_turned_off_is_not_written_or_not_sent,
    what_an_event_reports_gone_ends_missing,
    invalid_messages_of_each_type_are_dead_lettered,
);

mod on_sqs {
    crate::each_worker_mode!(sqs:
        an_application_is_confirmed_to_its_candidate,
        job_events_email_each_member,
        the_digest_of_an_hour_goes_to_each_member_with_their_companies_counts,
    );
}

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// The hour the digest cases' applications are moved into, and an instant the upkeep runs at
/// after it ended (its grace included): far from the real clock, so no other row falls in it.
const HOUR: &str = "2020-01-06T10:00:00Z";
const AFTER_HOUR: &str = "2020-01-06T11:03:00Z";

/// Writes events as the upkeep (or another part of the application) does: with their records,
/// in one transaction. Returns how many were new.
async fn write(h: &Harness, events: &[Event]) -> u64 {
    let written = h.app.state.store.write_events(events).await.unwrap();
    h.publish().await;
    written
}

/// Sends what waits, with one worker; every outcome.
async fn drain(h: &Harness) -> Vec<Outcome> {
    h.publish().await;
    h.worker().await.run_until_empty().await.unwrap()
}

/// The mails of one event id.
fn mail_of(h: &Harness, event_id: &str) -> Mail {
    let mails: Vec<Mail> = h
        .smtp
        .mails()
        .into_iter()
        .filter(|m| m.event_id() == event_id)
        .collect();
    assert_eq!(mails.len(), 1, "one email for {event_id}");
    mails.into_iter().next().unwrap()
}

/// The headers every event's email carries, and its one recipient.
fn assert_event_mail(m: &Mail, event_id: &str, to: &str, subject: &str) {
    assert_eq!(m.event_id(), event_id);
    assert_eq!(
        m.header("Message-ID").as_deref(),
        Some(format!("<{event_id}@jobboard.example>").as_str())
    );
    assert_eq!(m.header("Subject").as_deref(), Some(subject), "{}", m.raw);
    assert_eq!(m.recipients.len(), 1);
    assert!(
        m.recipients[0].contains(to),
        "{:?} is not {to}",
        m.recipients
    );
}

/// The value of the metric line that starts with `name` (0 when absent).
async fn metric(app: &TestApp, name: &str) -> f64 {
    let text = app.get("/metrics", None).await.text;
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

async fn an_application_is_confirmed_to_its_candidate(h: Harness) {
    let s = h.app.scenario().await;
    let history = h
        .app
        .get(
            &format!("/api/applications/{}/history", s.application_id),
            Some(&s.candidate.token),
        )
        .await;
    let event_id = history.expect(200)[0]["event_id"]
        .as_str()
        .expect("the submission's history row carries its event")
        .to_string();
    assert_eq!(drain(&h).await, vec![Outcome::Sent]);
    let m = mail_of(&h, &event_id);
    assert_event_mail(
        &m,
        &event_id,
        &s.candidate.email,
        "We received your application for Backend Engineer at Acme",
    );
    assert!(m.text().contains("Its status is submitted"), "{}", m.raw);
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
    assert_eq!(
        metric(
            &h.app,
            r#"events_handled_total{type="application.submitted",outcome="sent"}"#
        )
        .await,
        1.0
    );
    // A copy of it is a duplicate.
    let body = json!({"type": "application.submitted", "event_id": event_id,
        "application_id": s.application_id, "occurred_at": "2026-12-02T10:00:00Z"});
    h.enqueue(&body.to_string()).await;
    assert_eq!(drain(&h).await, vec![Outcome::Duplicate]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert_eq!(h.queued().await, 0);
}

/// An employer who is a member of `company_id`, added by `owner`.
async fn member(h: &Harness, owner: &User, company_id: i64) -> User {
    let u = h.app.user("employer").await;
    h.app
        .post(
            &format!("/api/companies/{company_id}/members"),
            Some(&owner.token),
            json!({"email": u.email}),
        )
        .await
        .expect(204);
    u
}

async fn job_events_email_each_member(h: Harness) {
    let s = h.scenario().await;
    let second = member(&h, &s.employer, s.company_id).await;
    let expires_at = t("2026-12-09T10:30:00Z");
    let job_id = s.job_id;
    let events = [
        EventKind::JobExpiring {
            job_id,
            user_id: s.employer.id,
            expires_at,
        },
        EventKind::JobExpiring {
            job_id,
            user_id: second.id,
            expires_at,
        },
        EventKind::JobExpired {
            job_id,
            user_id: s.employer.id,
            expires_at,
        },
        EventKind::JobReviewed {
            job_id,
            user_id: s.employer.id,
            decision: Decision::Approved,
        },
        EventKind::JobReviewed {
            job_id,
            user_id: second.id,
            decision: Decision::Rejected,
        },
    ]
    .map(|k| Event::new(k, Utc::now()));
    assert_eq!(write(&h, &events).await, 5);
    // The job is renamed before the send: the emails say what it is called now.
    h.app
        .patch(
            &format!("/api/jobs/{job_id}"),
            Some(&s.employer.token),
            json!({"title": "Staff Engineer"}),
        )
        .await
        .expect(200);
    // The rejection's reason, as an operator's rejection stores it, is read at send time too.
    h.app
        .exec(&format!(
            "UPDATE jobs SET rejection_reason = 'Please name the salary.' WHERE id = {job_id}"
        ))
        .await;
    let outcomes = drain(&h).await;
    assert_eq!(outcomes, vec![Outcome::Sent; 5], "{outcomes:?}");
    let want = [
        (&s.employer, "Staff Engineer expires on 2026-12-09"),
        (&second, "Staff Engineer expires on 2026-12-09"),
        (&s.employer, "Staff Engineer has expired"),
        (&s.employer, "Staff Engineer was approved"),
        (&second, "Staff Engineer was not approved"),
    ];
    for (e, (to, subject)) in events.iter().zip(want) {
        let m = mail_of(&h, &e.event_id);
        assert_event_mail(&m, &e.event_id, &to.email, subject);
        assert!(
            !m.raw.contains(&s.candidate.email),
            "no candidate in an employer's email"
        );
        assert!(m.text().contains("Staff Engineer at Acme"), "{}", m.raw);
    }
    let text = |i: usize| mail_of(&h, &events[i].event_id).text();
    assert!(
        text(0).contains("expires on 2026-12-09 at 10:30 UTC"),
        "{}",
        text(0)
    );
    assert!(
        text(2).contains("expired on 2026-12-09 at 10:30 UTC"),
        "{}",
        text(2)
    );
    assert!(text(3).contains("approved your job"), "{}", text(3));
    assert!(text(4).contains("did not approve your job"), "{}", text(4));
    assert!(
        text(4)
            .replace("\r\n", "\n")
            .contains("The reason given:\n\nPlease name the salary."),
        "{}",
        text(4)
    );
    for (kind, n) in [
        ("job.expiring", 2.0),
        ("job.expired", 1.0),
        ("job.reviewed", 2.0),
    ] {
        let name = format!(r#"events_handled_total{{type="{kind}",outcome="sent"}}"#);
        assert_eq!(metric(&h.app, &name).await, n, "{name}");
    }
    assert_eq!(h.queued().await, 0);
}

/// `n` candidates, made through the store (a password hash apiece would only slow the case),
/// each applying to `job_id` as the API does.
async fn applications(h: &Harness, job_id: i64, n: usize) -> Vec<i64> {
    let store = &h.app.state.store;
    let mut ids = Vec::new();
    for _ in 0..n {
        let c = store
            .create_user(NewUser {
                email: Email::parse(&format!("{}@example.com", unique("cand"))).unwrap(),
                name: unique("Candidate "),
                role: Role::Candidate,
                password_hash: "not-a-hash".into(),
            })
            .await
            .unwrap();
        ids.push(
            store
                .apply(job_id, c.id, Default::default(), None)
                .await
                .unwrap()
                .id,
        );
    }
    ids
}

/// Moves every application into [`HOUR`], spread over its minutes.
async fn into_the_hour(h: &Harness) {
    let hour = t(HOUR);
    for (i, id) in all_applications(h).await.into_iter().enumerate() {
        let at = hour + TimeDelta::seconds((i as i64 * 61) % 3600);
        h.app
            .exec(&format!(
                "UPDATE applications SET created_at = {} WHERE id = {id}",
                literal(at)
            ))
            .await;
    }
}

/// A time as an SQL literal both backends read as the store writes it.
fn literal(at: DateTime<Utc>) -> String {
    format!(
        "'{}'",
        at.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
    )
}

/// A company with three members and jobs receiving these numbers of applications.
struct Company {
    name: String,
    members: Vec<User>,
    jobs: Vec<(String, usize)>,
}

async fn company(h: &Harness, name: &str, jobs: &[(&str, usize)]) -> Company {
    let owner = h.app.user("employer").await;
    let id = h.app.company(&owner, name).await;
    let mut members = vec![owner];
    for _ in 0..2 {
        let m = member(h, &members[0], id).await;
        members.push(m);
    }
    for (title, n) in jobs {
        let job = h.app.job(&members[0], id, json!({"title": title})).await;
        applications(h, job["id"].as_i64().unwrap(), *n).await;
    }
    Company {
        name: name.to_string(),
        members,
        jobs: jobs.iter().map(|(t, n)| (t.to_string(), *n)).collect(),
    }
}

async fn the_digest_of_an_hour_goes_to_each_member_with_their_companies_counts(h: Harness) {
    // 50 applications to 5 jobs of 2 companies of 3 members each.
    let acme = company(
        &h,
        "Acme",
        &[("Backend Engineer", 5), ("Designer", 10), ("Tester", 15)],
    )
    .await;
    let globex = company(&h, "Globex", &[("Backend Engineer", 12), ("Support", 8)]).await;
    into_the_hour(&h).await;
    // The candidates' own confirmations go first; then the hour's digests are written.
    let confirmations = drain(&h).await;
    assert_eq!(confirmations, vec![Outcome::Sent; 50]);
    h.smtp.forget();
    let worker = h.worker().await;
    assert_eq!(worker.write_digests(t(AFTER_HOUR)).await.unwrap(), 6);
    assert_eq!(
        metric(
            &h.app,
            r#"upkeep_events_written_total{type="applications.digest"}"#
        )
        .await,
        6.0
    );
    let outcomes = drain(&h).await;
    assert_eq!(outcomes, vec![Outcome::Sent; 6], "{outcomes:?}");
    let mails = h.smtp.mails();
    assert_eq!(mails.len(), 6, "one email per member");
    let candidates: Vec<String> = (0..50)
        .map(|i| {
            format!(
                "SELECT email FROM users WHERE role = 'candidate' ORDER BY id LIMIT 1 OFFSET {i}"
            )
        })
        .collect();
    let mut addresses = Vec::new();
    for q in candidates {
        addresses.push(h.app.scalar_text(&q).await.unwrap());
    }
    for c in [&acme, &globex] {
        let total: usize = c.jobs.iter().map(|(_, n)| n).sum();
        for m in &c.members {
            let mine: Vec<&Mail> = mails
                .iter()
                .filter(|mail| mail.recipients[0].contains(&m.email))
                .collect();
            assert_eq!(mine.len(), 1, "one digest for {}", m.email);
            let mail = mine[0];
            let event_id = mail.event_id();
            assert_eq!(
                event_id,
                format!("applications-digest-{}-{}", m.id, t(HOUR).timestamp())
            );
            assert_event_mail(
                mail,
                &event_id,
                &m.email,
                &format!("{total} new applications"),
            );
            let text = mail.text().replace("\r\n", "\n");
            assert!(text.contains(&format!("\n{}\n", c.name)), "{text}");
            // The first DIGEST_APPLICATIONS applications are listed (by job), the rest counted.
            let mut left = DIGEST_APPLICATIONS;
            for (title, n) in &c.jobs {
                let listed = (*n).min(left);
                left -= listed;
                assert_eq!(
                    text.contains(&format!("  {title}: {listed}\n")),
                    listed > 0,
                    "{title}: {listed} in {text}"
                );
            }
            let further = total.saturating_sub(DIGEST_APPLICATIONS);
            assert_eq!(
                text.contains(&format!("\nand {further} more applications.\n")),
                further > 1,
                "{text}"
            );
            assert!(
                text.contains("Between 10:00 and 11:00 UTC on 2020-01-06"),
                "{text}"
            );
            let other = if c.name == "Acme" { "Globex" } else { "Acme" };
            assert!(!text.contains(other), "only their companies: {text}");
            for a in &addresses {
                assert!(
                    !mail.raw.contains(a.as_str()),
                    "a candidate's address in {text}"
                );
            }
            assert!(
                !mail.raw.contains("Candidate "),
                "a candidate's name in {text}"
            );
        }
    }
    assert_eq!(
        metric(
            &h.app,
            r#"events_handled_total{type="applications.digest",outcome="sent"}"#
        )
        .await,
        6.0
    );
    // The hour is done: the upkeep writes nothing more for it.
    assert_eq!(worker.write_digests(t(AFTER_HOUR)).await.unwrap(), 0);
    // Each digest carries its member's one-click link (RFC 8058), which turns that member's
    // digest off and nobody else's.
    let first = &acme.members[0];
    let mail = mails
        .iter()
        .find(|m| m.recipients[0].contains(&first.email))
        .unwrap();
    assert!(
        mail.raw
            .contains("List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n"),
        "{}",
        mail.raw
    );
    let at = mail
        .raw
        .find("List-Unsubscribe: <")
        .unwrap_or_else(|| panic!("no List-Unsubscribe in {}", mail.raw));
    let link = &mail.raw[at + "List-Unsubscribe: <".len()..];
    let link = &link[..link.find('>').unwrap()];
    let path = &link[link.find("/api/unsubscribe/").expect(link)..];
    let r = h
        .app
        .client
        .post(h.app.url(path))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("List-Unsubscribe=One-Click")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 200, "{link}");
    let on = |id: i64| format!("SELECT COUNT(*) FROM users WHERE id = {id} AND application_digest");
    assert_eq!(h.app.scalar_i64(&on(first.id)).await, 0, "{link}");
    assert_eq!(h.app.scalar_i64(&on(acme.members[1].id)).await, 1);
}

async fn the_upkeep_writes_each_digest_once(h: Harness) {
    let s = h.app.scenario().await;
    let second = member(&h, &s.employer, s.company_id).await;
    applications(&h, s.job_id, 3).await;
    into_the_hour(&h).await;
    drain(&h).await;
    let count = || {
        h.app
            .scalar_i64("SELECT COUNT(*) FROM events WHERE type = 'applications.digest'")
    };
    // Not before the hour has ended, and its grace passed.
    let worker = h.worker().await;
    assert_eq!(
        worker
            .write_digests(t("2020-01-06T11:01:00Z"))
            .await
            .unwrap(),
        0
    );
    assert_eq!(count().await, 0);
    // A run that died after writing one member's digest, before the hour's mark: the next
    // writes only the other.
    let first = Event::new(
        EventKind::ApplicationsDigest {
            user_id: s.employer.id,
            hour: t(HOUR),
            applications: all_applications(&h).await,
            further: 0,
        },
        t(AFTER_HOUR),
    );
    assert_eq!(write(&h, std::slice::from_ref(&first)).await, 1);
    // Three workers at once, then twice more in a row.
    let workers = [h.worker().await, h.worker().await, h.worker().await];
    let runs =
        futures::future::join_all(workers.iter().map(|w| w.write_digests(t(AFTER_HOUR)))).await;
    let written: u64 = runs.into_iter().map(|r| r.unwrap()).sum();
    assert_eq!(written, 1, "only the other member's digest");
    for w in &workers[..2] {
        assert_eq!(w.write_digests(t(AFTER_HOUR)).await.unwrap(), 0);
    }
    assert_eq!(count().await, 2);
    let outcomes = drain(&h).await;
    assert_eq!(outcomes, vec![Outcome::Sent; 2], "{outcomes:?}");
    for u in [&s.employer, &second] {
        let id = format!("applications-digest-{}-{}", u.id, t(HOUR).timestamp());
        assert_eq!(h.smtp.count_for(&id), 1, "{id}");
        assert!(mail_of(&h, &id).recipients[0].contains(&u.email));
        assert_eq!(
            mail_of(&h, &id).header("Subject").as_deref(),
            Some("4 new applications")
        );
    }
    // A later hour with applications gets its own digests; the done one none again.
    applications(&h, s.job_id, 1).await;
    let later: i64 = h.app.scalar_i64("SELECT MAX(id) FROM applications").await;
    h.app
        .exec(&format!(
            "UPDATE applications SET created_at = '2020-01-06T12:15:00+00:00' WHERE id = {later}"
        ))
        .await;
    assert_eq!(
        worker
            .write_digests(t("2020-01-06T13:05:00Z"))
            .await
            .unwrap(),
        2
    );
    assert_eq!(count().await, 4);
}

async fn all_applications(h: &Harness) -> Vec<i64> {
    let n = h.app.scalar_i64("SELECT COUNT(*) FROM applications").await;
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(
            h.app
                .scalar_i64(&format!(
                    "SELECT id FROM applications ORDER BY id LIMIT 1 OFFSET {i}"
                ))
                .await,
        );
    }
    ids
}

async fn a_digest_turned_off_is_not_written_or_not_sent(h: Harness) {
    let s = h.app.scenario().await;
    let second = member(&h, &s.employer, s.company_id).await;
    let third = member(&h, &s.employer, s.company_id).await;
    into_the_hour(&h).await;
    drain(&h).await;
    h.smtp.forget();
    // Off before the hour is written: no digest for that member.
    h.app
        .exec(&format!(
            "UPDATE users SET application_digest = FALSE WHERE id = {}",
            second.id
        ))
        .await;
    assert_eq!(
        h.worker().await.write_digests(t(AFTER_HOUR)).await.unwrap(),
        2
    );
    // Off after it was written, before the send: nothing sent, the event ends as missing.
    h.app
        .exec(&format!(
            "UPDATE users SET application_digest = FALSE WHERE id = {}",
            third.id
        ))
        .await;
    let mut outcomes = drain(&h).await;
    outcomes.sort_by_key(|o| o.as_str());
    assert_eq!(outcomes, vec![Outcome::Missing, Outcome::Sent]);
    let id = |u: &User| format!("applications-digest-{}-{}", u.id, t(HOUR).timestamp());
    assert_eq!(h.smtp.count_for(&id(&s.employer)), 1);
    assert_eq!(h.smtp.mails().len(), 1);
    assert_eq!(
        h.processed_status(&id(&third)).await.as_deref(),
        Some("missing")
    );
    assert_eq!(
        h.processed_status(&id(&second)).await,
        None,
        "never written"
    );
    assert_eq!(
        metric(
            &h.app,
            r#"events_handled_total{type="applications.digest",outcome="missing"}"#
        )
        .await,
        1.0
    );
}

async fn what_an_event_reports_gone_ends_missing(h: Harness) {
    let other = h.scenario().await;
    // An application deleted before its confirmation is sent.
    let s = h.app.scenario().await;
    let confirmation = h.last_submission(s.application_id).await;
    h.app
        .delete(
            &format!("/api/applications/{}", s.application_id),
            Some(&s.candidate.token),
        )
        .await
        .expect(204);
    // A member whose account is deleted, before a job notice and their digest are sent.
    let leaving = member(&h, &other.employer, other.company_id).await;
    let events = [
        EventKind::JobExpired {
            job_id: other.job_id,
            user_id: leaving.id,
            expires_at: t("2026-12-09T10:00:00Z"),
        },
        EventKind::ApplicationsDigest {
            user_id: leaving.id,
            hour: t(HOUR),
            applications: vec![other.application_id],
            further: 0,
        },
        // A job deleted before its notice is sent.
        EventKind::JobReviewed {
            job_id: other.job_id,
            user_id: other.employer.id,
            decision: Decision::Approved,
        },
    ]
    .map(|k| Event::new(k, Utc::now()));
    write(&h, &events).await;
    h.app
        .delete("/api/me", Some(&leaving.token))
        .await
        .expect(204);
    h.app
        .delete(
            &format!("/api/jobs/{}", other.job_id),
            Some(&other.employer.token),
        )
        .await
        .expect(204);
    let outcomes = drain(&h).await;
    assert_eq!(outcomes, vec![Outcome::Missing; 4], "{outcomes:?}");
    assert!(h.smtp.mails().is_empty());
    for id in events
        .iter()
        .map(|e| e.event_id.as_str())
        .chain([confirmation.as_str()])
    {
        assert_eq!(
            h.processed_status(id).await.as_deref(),
            Some("missing"),
            "{id}"
        );
    }
    assert_eq!(h.queued().await, 0);
}

async fn invalid_messages_of_each_type_are_dead_lettered(h: Harness) {
    let bad: [(serde_json::Value, &str); 7] = [
        (
            json!({"type": "application.submitted", "event_id": "bad-1", "occurred_at": "2026-12-02T10:00:00Z",
                "application_id": "seven"}),
            "application_id",
        ),
        (
            json!({"type": "job.expiring", "event_id": "bad-2", "occurred_at": "2026-12-02T10:00:00Z",
                "job_id": 1, "user_id": 2, "expires_at": "next week"}),
            "expires_at",
        ),
        (
            json!({"type": "job.expired", "event_id": "bad-3", "occurred_at": "2026-12-02T10:00:00Z",
                "job_id": 1, "expires_at": "2026-12-02T10:00:00Z"}),
            "user_id",
        ),
        (
            json!({"type": "job.reviewed", "event_id": "bad-4", "occurred_at": "2026-12-02T10:00:00Z",
                "job_id": 1, "user_id": 2, "decision": "maybe"}),
            "decision",
        ),
        (
            json!({"type": "applications.digest", "event_id": "bad-5", "occurred_at": "2026-12-02T10:00:00Z",
                "user_id": 2, "hour": "2026-12-02T10:00:00Z", "applications": [1, "two"]}),
            "applications",
        ),
        (
            json!({"type": "alert.digest", "event_id": "bad-6", "occurred_at": "2026-12-02T10:00:00Z",
                "alert_id": 2, "period": "2026-W60", "jobs": [1]}),
            "period",
        ),
        (
            json!({"type": "application.status_changed", "event_id": "bad-7", "occurred_at": "2026-12-02T10:00:00Z",
                "application_id": 1, "old_status": "submitted", "new_status": "hired!"}),
            "new_status",
        ),
    ];
    for (body, _) in &bad {
        h.enqueue(&body.to_string()).await;
    }
    let outcomes = drain(&h).await;
    assert_eq!(outcomes, vec![Outcome::Invalid; bad.len()], "{outcomes:?}");
    let dead = h.worker().await.queue().dead_letters().await.unwrap();
    assert_eq!(dead.len(), bad.len());
    for (body, field) in &bad {
        let id = body["event_id"].as_str().unwrap();
        let d = dead
            .iter()
            .find(|d| d.event_id.as_deref() == Some(id))
            .unwrap_or_else(|| panic!("{id} dead-lettered with its id"));
        assert!(
            d.reason.contains(&format!("invalid field {field}")),
            "{id}: {} should name {field}",
            d.reason
        );
        assert_eq!(d.attempts, 0);
    }
    assert!(h.smtp.mails().is_empty());
    assert_eq!(
        metric(
            &h.app,
            r#"events_handled_total{type="unknown",outcome="invalid"}"#
        )
        .await,
        bad.len() as f64
    );
}

/// The upkeep's own loop writes the digests too, on its interval, with the database's clock:
/// a worker started after an hour with applications ended writes that hour's digests.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_upkeep_loop_writes_the_digests_of_the_hour_that_ended() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let h = Harness::new(backend, "lease").await;
        let s = h.app.scenario().await;
        // The application is moved into the last hour whose digests are due (it ended, and
        // its grace passed), away from the moment that changes which hour that is.
        let due = || Utc::now() - jobboard::worker::DIGEST_GRACE;
        let to_next_hour = 3600 - due().timestamp() % 3600;
        if to_next_hour < 10 {
            tokio::time::sleep(std::time::Duration::from_secs(to_next_hour as u64 + 1)).await;
        }
        let hour_start = due().timestamp() - due().timestamp() % 3600 - 3600;
        let created = DateTime::from_timestamp(hour_start + 1800, 0).unwrap();
        h.app
            .exec(&format!(
                "UPDATE applications SET created_at = {}",
                literal(created)
            ))
            .await;
        let worker = std::sync::Arc::new(h.worker().await);
        let shutdown = tokio_util::sync::CancellationToken::new();
        let upkeep = tokio::spawn(worker.clone().maintain(shutdown.clone()));
        let id = format!("applications-digest-{}-", s.employer.id);
        crate::worker::wait_until("the upkeep writes the digest", || async {
            h.app
                .scalar_i64(&format!(
                    "SELECT COUNT(*) FROM events WHERE event_id LIKE '{id}%'"
                ))
                .await
                == 1
        })
        .await;
        shutdown.cancel();
        upkeep.await.unwrap();
        let outcomes = drain(&h).await;
        assert_eq!(
            outcomes.len(),
            2,
            "the confirmation and the digest: {outcomes:?}"
        );
        let digest: Vec<Mail> = h
            .smtp
            .mails()
            .into_iter()
            .filter(|m| m.event_id().starts_with(&id))
            .collect();
        assert_eq!(digest.len(), 1);
        assert_eq!(
            digest[0].header("Subject").as_deref(),
            Some("1 new applications")
        );
    }
}
