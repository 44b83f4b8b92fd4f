//! Every event fits its queue (docs/guarantee.md): an hour of 10 000 applications to one company
//! of five members, on `QUEUE=sqs`. Each member's digest lists at most
//! [`DIGEST_APPLICATIONS`] and counts the rest, so their batch fits SQS's 256 KiB, and each is
//! emailed once. And an event SQS refuses alone as too long is dead-lettered with its reason
//! instead of holding up the outbox: the event written after it is still sent.

use crate::helpers::*;
use crate::worker::Harness;
use chrono::{DateTime, Utc};
use jobboard::domain::event::{DIGEST_APPLICATIONS, Event, EventKind};
use jobboard::worker::Outcome;

mod on_sqs {
    crate::each_worker_mode!(sqs:
        ten_thousand_applications_in_an_hour_make_digests_that_fit_the_queue,
        an_event_too_long_for_the_queue_is_dead_lettered_and_the_rest_go_on,
    );
}

const APPLICATIONS: i64 = 10_000;
const MEMBERS: usize = 5;
const HOUR: &str = "2020-01-06T10:00:00Z";
const AFTER_HOUR: &str = "2020-01-06T11:03:00Z";

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// A time as an SQL value of both backends' column types, as the store writes it.
fn at(h: &Harness, s: &str) -> String {
    let text = t(s).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false);
    match h.app.backend {
        Backend::Sqlite => format!("'{text}'"),
        Backend::Postgres => format!("TIMESTAMPTZ '{text}'"),
    }
}

async fn ten_thousand_applications_in_an_hour_make_digests_that_fit_the_queue(h: Harness) {
    let owner = h.app.user("employer").await;
    let company = h.app.company(&owner, "Acme").await;
    let mut members = vec![owner];
    for _ in 1..MEMBERS {
        let u = h.app.user("employer").await;
        h.app
            .post(
                &format!("/api/companies/{company}/members"),
                Some(&members[0].token),
                serde_json::json!({"email": u.email}),
            )
            .await
            .expect(204);
        members.push(u);
    }
    let job = h
        .app
        .job(
            &members[0],
            company,
            serde_json::json!({"title": "Backend Engineer"}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    // The candidates and their applications in two statements: the case is the hour's size,
    // not the API's path (which the other digest cases take).
    let prefix = unique("bulk");
    let created = at(&h, "2020-01-06T10:30:00Z");
    h.app
        .exec(&format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {APPLICATIONS}) \
             INSERT INTO users (email, email_key, name, role, password_hash, created_at) \
             SELECT '{prefix}' || i || '@example.com', '{prefix}' || i || '@example.com', \
             'Candidate', 'candidate', 'not-a-hash', {created} FROM n"
        ))
        .await;
    h.app
        .exec(&format!(
            "INSERT INTO applications (job_id, candidate_id, status, created_at, updated_at) \
             SELECT {job}, id, 'submitted', {created}, {created} FROM users \
             WHERE email LIKE '{prefix}%' ORDER BY id"
        ))
        .await;
    let first: Vec<i64> = {
        let mut ids = Vec::new();
        for i in 0..DIGEST_APPLICATIONS {
            ids.push(
                h.app
                    .scalar_i64(&format!(
                        "SELECT id FROM applications ORDER BY id LIMIT 1 OFFSET {i}"
                    ))
                    .await,
            );
        }
        ids
    };

    let worker = h.worker().await;
    assert_eq!(
        worker.write_digests(t(AFTER_HOUR)).await.unwrap(),
        MEMBERS as u64
    );
    // Each event lists the hour's first applications and counts the rest.
    for m in &members {
        let body = h
            .app
            .scalar_text(&format!(
                "SELECT body FROM events WHERE event_id = 'applications-digest-{}-{}'",
                m.id,
                t(HOUR).timestamp()
            ))
            .await
            .unwrap();
        assert!(body.len() < 1024, "{} bytes", body.len());
        let Event { kind, .. } = jobboard::domain::event::parse_event(&body).unwrap();
        assert_eq!(
            kind,
            EventKind::ApplicationsDigest {
                user_id: m.id,
                hour: t(HOUR),
                applications: first.clone(),
                further: APPLICATIONS as u64 - DIGEST_APPLICATIONS as u64,
            }
        );
    }
    h.publish().await;
    let outcomes = worker.run_until_empty().await.unwrap();
    assert_eq!(outcomes, vec![Outcome::Sent; MEMBERS], "{outcomes:?}");
    let mails = h.smtp.mails();
    assert_eq!(mails.len(), MEMBERS, "one email per member");
    for m in &members {
        let mine: Vec<_> = mails
            .iter()
            .filter(|mail| mail.recipients[0].contains(&m.email))
            .collect();
        assert_eq!(mine.len(), 1, "one digest for {}", m.email);
        let text = mine[0].text().replace("\r\n", "\n");
        assert!(
            text.contains(&format!("received {APPLICATIONS} new applications:")),
            "{text}"
        );
        assert!(
            text.contains(&format!("  Backend Engineer: {DIGEST_APPLICATIONS}\n")),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "\nand {} more applications.\n",
                APPLICATIONS - DIGEST_APPLICATIONS as i64
            )),
            "{text}"
        );
    }
    assert_eq!(h.queued().await, 0);
    let q = h.sqs.as_ref().unwrap();
    assert_eq!(q.count(&q.dlq).await, 0);
}

async fn an_event_too_long_for_the_queue_is_dead_lettered_and_the_rest_go_on(h: Harness) {
    let s = h.scenario().await;
    h.publish().await;
    h.worker().await.run_until_empty().await.unwrap();
    h.smtp.forget();
    // An event no queue message can hold (hand-made: every event the application writes is
    // bounded), then an ordinary one, in one batch: SQS refuses the batch (BatchRequestTooLong),
    // then the first alone.
    let huge = Event::new(
        EventKind::AlertDigest {
            alert_id: 1,
            period: "2026-W49".into(),
            jobs: (1_000_000..1_150_000).collect(),
            more: 0,
        },
        Utc::now(),
    );
    let after = Event::new(
        EventKind::ApplicationsDigest {
            user_id: s.employer.id,
            hour: t(HOUR),
            applications: vec![s.application_id],
            further: 0,
        },
        Utc::now(),
    );
    // Over SQS's limit (1 MiB since 2025; 256 KiB before) for a batch and for one message.
    assert!(huge.to_json().len() > 1024 * 1024);
    let store = &h.app.state.store;
    assert_eq!(
        store
            .write_events(&[huge.clone(), after.clone()])
            .await
            .unwrap(),
        2
    );
    h.publish().await;
    let dead = store
        .sqs_dead_letter_of_event(&huge.event_id)
        .await
        .unwrap()
        .expect("the event too long is a recorded dead letter");
    assert!(dead.reason.contains("too long"), "{}", dead.reason);
    assert_eq!(dead.body, huge.to_json());
    let outcomes = h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(outcomes, vec![Outcome::Sent], "{outcomes:?}");
    let mails = h.smtp.mails();
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].event_id(), after.event_id);
    assert_eq!(h.queued().await, 0);
}
