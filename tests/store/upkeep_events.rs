//! Every type's email data (read only while the event's record and what it reports exist), the
//! hourly digests' members, the upkeep's writing of events (each once), its marks of the hours
//! written, and the retention of event records.

use crate::harness::*;
use chrono::{DateTime, TimeDelta, Utc};
use jobboard::domain::Role;
use jobboard::domain::event::{Decision, Event, EventKind};
use jobboard::domain::mail::{About, Absent, DigestJob, EmailData, Loaded, Recipient};
use jobboard::store::{DigestMember, Finished, NewDeadLetter, Store};
use std::sync::Arc;

crate::each_backend!(with_db:
    every_type_reads_what_it_reports,
    a_digest_counts_what_is_left_and_reads_its_preference,
    the_members_of_an_hour_are_paged_by_id,
    the_upkeep_writes_each_event_once,
    event_records_stay_while_a_message_needs_them,
);

fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

fn to(u: &jobboard::store::UserRow) -> Recipient {
    Recipient {
        user_id: u.id,
        email: u.email.clone(),
        name: u.name.clone(),
    }
}

async fn every_type_reads_what_it_reports(db: &TestDb) {
    let store = &db.store;
    let s = scenario(store).await;
    let gone = Loaded::Missing(Absent::Gone);

    // application.submitted: its record and its history row.
    let submitted = Event {
        event_id: store.history(s.application.id).await.unwrap()[0]
            .event_id
            .clone()
            .expect("the submission's event"),
        occurred_at: s.application.created_at,
        kind: EventKind::Submitted {
            application_id: s.application.id,
        },
    };
    let candidate = Loaded::Ready(EmailData {
        to: to(&s.candidate),
        about: About::Application {
            job_title: s.job.title.clone(),
            company: s.company.name.clone(),
            resume: None,
        },
    });
    assert_eq!(store.email_data(&submitted).await.unwrap(), candidate);
    // A status change's id is no submission: its record is its history row, not `events`.
    let moved = store
        .change_status(
            s.application.id,
            jobboard::domain::ApplicationStatus::Reviewing,
            jobboard::domain::Actor::Employer,
            s.employer.id,
            None,
        )
        .await
        .unwrap()
        .event_id
        .unwrap();
    let posing = Event {
        event_id: moved,
        ..submitted.clone()
    };
    assert_eq!(store.email_data(&posing).await.unwrap(), gone);

    // The job events: the job, and a member of its company, each as they are now.
    let second = user(store, Role::Employer).await;
    store
        .add_member(s.company.id, &Email::parse(&second.email).unwrap(), None)
        .await
        .unwrap();
    let stranger = user(store, Role::Employer).await;
    let job_event = |user_id, i: usize| {
        let expires_at = t("2026-12-09T10:00:00Z");
        let (job_id, kind) = (s.job.id, i % 3);
        Event::new(
            match kind {
                0 => EventKind::JobExpiring {
                    job_id,
                    user_id,
                    expires_at,
                },
                1 => EventKind::JobExpired {
                    job_id,
                    user_id,
                    expires_at,
                },
                _ => EventKind::JobReviewed {
                    job_id,
                    user_id,
                    decision: Decision::Rejected,
                },
            },
            Utc::now(),
        )
    };
    let mut events: Vec<Event> = (0..3).map(|i| job_event(s.employer.id, i)).collect();
    events.push(job_event(second.id, 2));
    events.push(job_event(stranger.id, 0));
    assert_eq!(store.write_events(&events).await.unwrap(), 5);
    let member = |u: &jobboard::store::UserRow| {
        Loaded::Ready(EmailData {
            to: to(u),
            about: About::Job {
                job_title: s.job.title.clone(),
                company: s.company.name.clone(),
                rejection_reason: None,
            },
        })
    };
    for e in &events[..3] {
        assert_eq!(
            store.email_data(e).await.unwrap(),
            member(&s.employer),
            "{e:?}"
        );
    }
    assert_eq!(store.email_data(&events[3]).await.unwrap(), member(&second));
    assert_eq!(
        store.email_data(&events[4]).await.unwrap(),
        gone,
        "not a member of the job's company"
    );
    let unwritten = job_event(s.employer.id, 1);
    let unwritten = Event {
        event_id: "never-written".into(),
        ..unwritten
    };
    assert_eq!(
        store.email_data(&unwritten).await.unwrap(),
        gone,
        "no record"
    );

    // alert.digest of an alert that does not exist (see tests/store/alert_digests.rs).
    let alert = Event::new(
        EventKind::AlertDigest {
            alert_id: 1,
            period: "2026-W49".into(),
            jobs: vec![s.job.id],
            more: 0,
        },
        Utc::now(),
    );
    assert_eq!(
        store
            .write_events(std::slice::from_ref(&alert))
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.email_data(&alert).await.unwrap(), gone);

    // Read many at once, each is what it is alone.
    let mut all = events.clone();
    all.extend([submitted.clone(), posing.clone(), alert.clone(), unwritten]);
    let many = store.email_data_many(&all).await.unwrap();
    assert_eq!(many.len(), all.len());
    for (e, (id, loaded)) in all.iter().zip(many) {
        assert_eq!(id, e.event_id);
        assert_eq!(loaded, store.email_data(e).await.unwrap(), "{e:?}");
    }

    // A member who leaves, a job or an application deleted: nothing to send.
    store
        .remove_member(s.company.id, second.id, None)
        .await
        .unwrap();
    assert_eq!(store.email_data(&events[3]).await.unwrap(), gone);
    store
        .delete_application(s.application.id, None)
        .await
        .unwrap();
    assert_eq!(store.email_data(&submitted).await.unwrap(), gone);
    store.delete_job(s.job.id, None).await.unwrap();
    for e in &events[..3] {
        assert_eq!(store.email_data(e).await.unwrap(), gone);
    }
}

async fn a_digest_counts_what_is_left_and_reads_its_preference(db: &TestDb) {
    let store = &db.store;
    let s = scenario(store).await;
    let other_job = job(store, s.company.id, job_fields("Designer")).await;
    let mut applications = vec![s.application.id];
    for job_id in [s.job.id, other_job.id, other_job.id] {
        let c = user(store, Role::Candidate).await;
        applications.push(
            store
                .apply(job_id, c.id, Default::default(), None)
                .await
                .unwrap()
                .id,
        );
    }
    // Another company's application, listed by mistake, is not counted.
    let elsewhere = scenario(store).await;
    applications.push(elsewhere.application.id);
    let digest = Event::new(
        EventKind::ApplicationsDigest {
            user_id: s.employer.id,
            hour: t("2026-12-04T10:00:00Z"),
            applications: applications.clone(),
            further: 0,
        },
        Utc::now(),
    );
    let read = || store.email_data(&digest);
    assert_eq!(
        read().await.unwrap(),
        Loaded::Missing(Absent::Gone),
        "no record yet"
    );
    assert_eq!(
        store
            .write_events(std::slice::from_ref(&digest))
            .await
            .unwrap(),
        1
    );
    let line = |job: &jobboard::store::JobRow, applications| DigestJob {
        job_id: job.id,
        job_title: job.title.clone(),
        company: s.company.name.clone(),
        applications,
    };
    let mut want = vec![line(&other_job, 2), line(&s.job, 2)];
    want.sort_by(|a, b| a.job_title.cmp(&b.job_title));
    assert_eq!(
        read().await.unwrap(),
        Loaded::Ready(EmailData {
            to: to(&s.employer),
            about: About::ApplicationsDigest { jobs: want },
        })
    );

    run_sql(
        db,
        &format!(
            "UPDATE users SET application_digest = FALSE WHERE id = {}",
            s.employer.id
        ),
    )
    .await;
    assert_eq!(read().await.unwrap(), Loaded::Missing(Absent::TurnedOff));
    run_sql(db, "UPDATE users SET application_digest = TRUE").await;

    // The applications go one by one: the counts follow, and none left is nothing to send.
    store.delete_job(other_job.id, None).await.unwrap();
    assert_eq!(
        read().await.unwrap(),
        Loaded::Ready(EmailData {
            to: to(&s.employer),
            about: About::ApplicationsDigest {
                jobs: vec![line(&s.job, 2)]
            },
        })
    );
    store.delete_job(s.job.id, None).await.unwrap();
    assert_eq!(read().await.unwrap(), Loaded::Missing(Absent::Gone));
    // Nor for a user who is gone.
    let gone_user = Event::new(
        EventKind::ApplicationsDigest {
            user_id: elsewhere.employer.id,
            hour: t("2026-12-04T10:00:00Z"),
            applications: vec![elsewhere.application.id],
            further: 0,
        },
        Utc::now(),
    );
    store
        .write_events(std::slice::from_ref(&gone_user))
        .await
        .unwrap();
    assert!(matches!(
        store.email_data(&gone_user).await.unwrap(),
        Loaded::Ready(_)
    ));
    store.delete_user(elsewhere.employer.id).await.unwrap();
    assert_eq!(
        store.email_data(&gone_user).await.unwrap(),
        Loaded::Missing(Absent::Gone)
    );
}

/// Applies to `job_id` as a new candidate, created at `created`.
async fn apply_at(db: &TestDb, job_id: i64, created: DateTime<Utc>) -> i64 {
    let c = user(&db.store, Role::Candidate).await;
    let id = db
        .store
        .apply(job_id, c.id, Default::default(), None)
        .await
        .unwrap()
        .id;
    run_sql(
        db,
        &format!(
            "UPDATE applications SET created_at = {} WHERE id = {id}",
            at(created)
        ),
    )
    .await;
    id
}

async fn the_members_of_an_hour_are_paged_by_id(db: &TestDb) {
    let store = &db.store;
    let hour = t("2020-01-06T10:00:00Z");
    // Company A has two members, company B one; the first member of A is also one of B's.
    let a = scenario(store).await;
    let a2 = user(store, Role::Employer).await;
    store
        .add_member(a.company.id, &Email::parse(&a2.email).unwrap(), None)
        .await
        .unwrap();
    let b = scenario(store).await;
    store
        .add_member(
            b.company.id,
            &Email::parse(&a.employer.email).unwrap(),
            None,
        )
        .await
        .unwrap();
    let a_apps = [
        apply_at(db, a.job.id, hour).await,
        apply_at(db, a.job.id, hour + TimeDelta::minutes(59)).await,
    ];
    let b_apps = [apply_at(db, b.job.id, hour + TimeDelta::minutes(30)).await];
    // Outside the hour: its end, and the hour before.
    apply_at(db, a.job.id, hour + TimeDelta::hours(1)).await;
    apply_at(db, b.job.id, hour - TimeDelta::microseconds(1)).await;
    // The scenarios' own applications were made now, in another hour.
    let mut a_and_b: Vec<i64> = a_apps.iter().chain(&b_apps).copied().collect();
    a_and_b.sort();
    let mut want = vec![
        DigestMember {
            user_id: a.employer.id,
            applications: a_and_b,
            further: 0,
        },
        DigestMember {
            user_id: a2.id,
            applications: a_apps.to_vec(),
            further: 0,
        },
        DigestMember {
            user_id: b.employer.id,
            applications: b_apps.to_vec(),
            further: 0,
        },
    ];
    want.sort_by_key(|m| m.user_id);
    assert_eq!(store.digest_members(hour, 0, 10).await.unwrap(), want);
    // Paged by member, never splitting one's list.
    let first = store.digest_members(hour, 0, 2).await.unwrap();
    assert_eq!(first, want[..2]);
    let rest = store
        .digest_members(hour, first[1].user_id, 2)
        .await
        .unwrap();
    assert_eq!(rest, want[2..]);
    // A member whose digest is off gets none.
    run_sql(
        db,
        &format!(
            "UPDATE users SET application_digest = FALSE WHERE id = {}",
            a2.id
        ),
    )
    .await;
    let on: Vec<DigestMember> = want
        .iter()
        .filter(|m| m.user_id != a2.id)
        .cloned()
        .collect();
    assert_eq!(store.digest_members(hour, 0, 10).await.unwrap(), on);
    assert!(
        store
            .digest_members(hour + TimeDelta::hours(2), 0, 10)
            .await
            .unwrap()
            .is_empty()
    );
}

async fn the_upkeep_writes_each_event_once(db: &TestDb) {
    let store = &db.store;
    let s = scenario(store).await;
    let digest = |hour| {
        Event::new(
            EventKind::ApplicationsDigest {
                user_id: s.employer.id,
                hour,
                applications: vec![s.application.id],
                further: 0,
            },
            Utc::now(),
        )
    };
    let (ten, eleven) = (t("2026-12-04T10:00:00Z"), t("2026-12-04T11:00:00Z"));
    let before = store.outbox_pending().await.unwrap();
    assert_eq!(
        store
            .write_events(&[digest(ten), digest(eleven)])
            .await
            .unwrap(),
        2
    );
    // Again, at once from several writers, and mixed with a new one: only the new one.
    let copies: Vec<[Event; 1]> = (0..3).map(|_| [digest(ten)]).collect();
    let again = futures::future::join_all(copies.iter().map(|c| store.write_events(c))).await;
    assert_eq!(again.into_iter().map(|r| r.unwrap()).sum::<u64>(), 0);
    let noon = t("2026-12-04T12:00:00Z");
    assert_eq!(
        store
            .write_events(&[digest(eleven), digest(noon)])
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.outbox_pending().await.unwrap(), before + 3);

    // The marks of the hours written.
    assert!(!store.any_digest_hour_done().await.unwrap());
    store.mark_digest_hours(&[ten, eleven]).await.unwrap();
    store.mark_digest_hours(&[eleven]).await.unwrap();
    assert!(store.any_digest_hour_done().await.unwrap());
    let mut done = store
        .digest_hours_done(ten, noon + TimeDelta::hours(1))
        .await
        .unwrap();
    done.sort();
    assert_eq!(done, vec![ten, eleven]);
    assert_eq!(
        store.digest_hours_done(eleven, noon).await.unwrap(),
        vec![eleven]
    );
    assert_eq!(store.delete_digest_hours(eleven).await.unwrap(), 1);
    assert_eq!(
        store.digest_hours_done(ten, noon).await.unwrap(),
        vec![eleven]
    );
}

async fn event_records_stay_while_a_message_needs_them(db: &TestDb) {
    let store: &Arc<dyn Store> = &db.store;
    let s = scenario(store).await;
    let old = Utc::now() - TimeDelta::days(20);
    let event = |i: i64, at| {
        Event::new(
            EventKind::ApplicationsDigest {
                user_id: s.employer.id,
                hour: t("2026-12-04T00:00:00Z") + TimeDelta::hours(i),
                applications: vec![s.application.id],
                further: 0,
            },
            at,
        )
    };
    // 0: its message still waits. 1: sent. 2: released, to be retried. 3: never claimed, its
    // message gone. 4: dead-lettered. 5: sent, but recent.
    let events: Vec<Event> = (0..6)
        .map(|i| event(i, if i == 5 { Utc::now() } else { old }))
        .collect();
    store.write_events(&events).await.unwrap();
    for m in store.queue_receive(100, 60_000).await.unwrap() {
        let Some(i) = events
            .iter()
            .position(|e| Some(&e.event_id) == m.event_id.as_ref())
        else {
            continue;
        };
        match i {
            0 => {}
            4 => {
                let dead = NewDeadLetter {
                    event_id: m.event_id.clone(),
                    reason: "550".into(),
                    attempts: 1,
                    body: m.body.clone(),
                    first_failed_at: None,
                    invalid: false,
                };
                store
                    .queue_dead_letter(m.id, &m.receipt, dead)
                    .await
                    .unwrap();
            }
            _ => assert!(store.queue_ack(m.id, &m.receipt).await.unwrap()),
        }
    }
    let lease = |i: usize| {
        let id = events[i].event_id.clone();
        async move {
            match store.claim_event(&id, 60_000).await.unwrap() {
                jobboard::store::Claim::Claimed { lease_id, .. } => lease_id,
                other => panic!("{other:?}"),
            }
        }
    };
    for i in [1, 5] {
        let l = lease(i).await;
        store
            .finish_claim(&events[i].event_id, &l, Finished::Done)
            .await
            .unwrap();
    }
    let l = lease(2).await;
    store
        .fail_claim(&events[2].event_id, &l, "451", 5, false)
        .await
        .unwrap();
    let l = lease(4).await;
    store
        .fail_claim(&events[4].event_id, &l, "550", 5, true)
        .await
        .unwrap();

    let cutoff = Utc::now() - TimeDelta::days(14);
    assert_eq!(store.delete_event_records(cutoff, 1).await.unwrap(), 1);
    assert_eq!(store.delete_event_records(cutoff, 10).await.unwrap(), 1);
    assert_eq!(store.delete_event_records(cutoff, 10).await.unwrap(), 0);
    let left: Vec<bool> =
        futures::future::join_all(events.iter().map(|e| async {
            store.email_data(e).await.unwrap() != Loaded::Missing(Absent::Gone)
        }))
        .await;
    assert_eq!(left, vec![true, false, true, false, true, true]);
}
