//! The job alerts' digests ([`jobboard::store::AlertDigestStore`] and the upkeep's
//! `jobboard::worker::write_alert_digests` on it): which alerts are due and how they are paged,
//! the conditional move of a watermark that writes an alert's event once, three stores writing
//! at once, twice, with each digest listing exactly what the contract's rules say and no job
//! twice across two periods, and the email data of a digest at send time.

use crate::harness::*;
use chrono::{DateTime, Duration, Utc};
use jobboard::config::DatabaseUrl;
use jobboard::domain::alert::{DIGEST_JOBS, Frequency, Watermark};
use jobboard::domain::event::{Event, EventKind, parse_event};
use jobboard::domain::mail::{About, Absent, AlertJob, EmailData, Loaded, Recipient};
use jobboard::domain::search::{SearchFilters, document_terms, query_terms};
use jobboard::domain::{JobStatus, Role};
use jobboard::store::{AlertChange, AlertDigest, AlertRow, JobRow, NewAlert, Store, UserRow};
use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

crate::each_backend!(with_db:
    due_alerts_are_paged_and_moved_once,
    three_stores_twice_write_each_digest_once_and_none_twice,
    a_digest_reads_its_alert_and_its_jobs_as_they_are_now,
);

pub(crate) fn t(s: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
}

/// An alert of `u`'s created at `created` (written by SQL: the store stamps the present).
pub(crate) async fn alert_at(
    db: &TestDb,
    u: &UserRow,
    q: Option<&str>,
    location: Option<&str>,
    frequency: Frequency,
    created: DateTime<Utc>,
) -> AlertRow {
    let a = db
        .store
        .create_alert(
            u.id,
            NewAlert {
                filters: SearchFilters {
                    q: q.map(String::from),
                    location: location.map(String::from),
                    ..SearchFilters::default()
                },
                frequency,
            },
            20,
            None,
        )
        .await
        .expect("create an alert");
    run_sql(
        db,
        &format!(
            "UPDATE alerts SET created_at = {} WHERE id = {}",
            at(created),
            a.id
        ),
    )
    .await;
    db.store.alert(a.id).await.unwrap()
}

/// A job of `company_id` created at `created`, open unless said otherwise.
pub(crate) async fn job_at(
    db: &TestDb,
    company_id: i64,
    title: &str,
    location: &str,
    created: DateTime<Utc>,
) -> JobRow {
    let mut fields = job_fields(title);
    fields.locations = jobboard::domain::pay_place::places_of_text(location);
    let j = job(&db.store, company_id, fields).await;
    run_sql(
        db,
        &format!(
            "UPDATE jobs SET created_at = {} WHERE id = {}",
            at(created),
            j.id
        ),
    )
    .await;
    db.store.job(j.id).await.unwrap()
}

/// Every `alert.digest` written, by alert and period.
pub(crate) async fn digests(db: &TestDb) -> BTreeMap<(i64, String), (Vec<i64>, u64)> {
    let sql = "SELECT body FROM events WHERE type = 'alert.digest'";
    let bodies: Vec<String> = match &db.url {
        DatabaseUrl::Sqlite(url) => {
            let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(url)
                .await
                .unwrap();
            sqlx::query_scalar(sql).fetch_all(&mut c).await.unwrap()
        }
        DatabaseUrl::Postgres(url) => {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(url)
                .await
                .unwrap();
            sqlx::query_scalar(sql).fetch_all(&mut c).await.unwrap()
        }
    };
    let mut out = BTreeMap::new();
    for body in bodies {
        let e = parse_event(&body).expect("a written event parses");
        let EventKind::AlertDigest {
            alert_id,
            period,
            jobs,
            more,
        } = e.kind
        else {
            panic!("{body}")
        };
        assert_eq!(e.event_id, format!("alert-{alert_id}-{period}"));
        assert!(
            out.insert((alert_id, period), (jobs, more)).is_none(),
            "one event per alert and period"
        );
    }
    out
}

async fn due_alerts_are_paged_and_moved_once(db: &TestDb) {
    let store = &db.store;
    let u = user(store, Role::Candidate).await;
    // The day 2020-03-04 ends at `end`.
    let end = t("2020-03-05T00:00:00Z");
    let daily = Frequency::Daily;
    let old = alert_at(db, &u, Some("rust"), None, daily, t("2020-03-01T09:00:00Z")).await;
    let new = alert_at(db, &u, None, Some("Wien"), daily, t("2020-03-04T12:00:00Z")).await;
    // Created as the day ended: not due for it.
    alert_at(db, &u, Some("rust"), None, daily, end).await;
    let paused = alert_at(db, &u, Some("rust"), None, daily, t("2020-03-01T00:00:00Z")).await;
    store
        .update_alert(
            u.id,
            paused.id,
            AlertChange {
                paused: Some(true),
                ..AlertChange::default()
            },
            None,
        )
        .await
        .unwrap();
    let weekly = alert_at(
        db,
        &u,
        Some("rust"),
        None,
        Frequency::Weekly,
        t("2020-02-01T00:00:00Z"),
    )
    .await;
    let done = alert_at(db, &u, Some("rust"), None, daily, t("2020-03-01T00:00:00Z")).await;
    run_sql(
        db,
        &format!(
            "UPDATE alerts SET watermark_created_at = {}, watermark_job_id = 0 WHERE id = {}",
            at(end),
            done.id
        ),
    )
    .await;

    assert_eq!(
        store.oldest_due_alert(daily, end).await.unwrap(),
        Some(old.created_at)
    );
    assert_eq!(
        store
            .oldest_due_alert(daily, t("2020-03-01T00:00:00Z"))
            .await
            .unwrap(),
        None
    );
    let ids = |rows: Vec<AlertRow>| rows.into_iter().map(|a| a.id).collect::<Vec<_>>();
    let last = store.last_alert_id().await.unwrap();
    assert_eq!(last, done.id);
    assert_eq!(
        ids(store.due_alerts(daily, end, 0, last, 10).await.unwrap()),
        [old.id, new.id]
    );
    assert_eq!(
        ids(store.due_alerts(daily, end, 0, last, 1).await.unwrap()),
        [old.id]
    );
    assert_eq!(
        ids(store
            .due_alerts(daily, end, old.id, last, 10)
            .await
            .unwrap()),
        [new.id]
    );
    assert_eq!(
        ids(store.due_alerts(daily, end, 0, old.id, 10).await.unwrap()),
        [old.id]
    );
    assert_eq!(
        ids(store
            .due_alerts(Frequency::Weekly, t("2020-03-02T00:00:00Z"), 0, last, 10)
            .await
            .unwrap()),
        [weekly.id]
    );

    // The move: `old` with an event, `new` without; each once, whoever tries again.
    let now = t("2020-03-05T00:02:30Z");
    let event = |a: &AlertRow| {
        Event::new(
            EventKind::AlertDigest {
                alert_id: a.id,
                period: "2020-03-04".into(),
                jobs: vec![1],
                more: 0,
            },
            now,
        )
    };
    let batch = vec![
        AlertDigest {
            alert_id: old.id,
            event: Some(event(&old)),
        },
        AlertDigest {
            alert_id: new.id,
            event: None,
        },
        // Not due: paused, another frequency, moved already.
        AlertDigest {
            alert_id: paused.id,
            event: Some(event(&paused)),
        },
        AlertDigest {
            alert_id: weekly.id,
            event: Some(event(&weekly)),
        },
        AlertDigest {
            alert_id: done.id,
            event: Some(event(&done)),
        },
    ];
    let before = store.outbox_pending().await.unwrap();
    assert_eq!(
        store
            .write_alert_digests(daily, end, &batch, now)
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .write_alert_digests(daily, end, &batch, now)
            .await
            .unwrap(),
        0
    );
    assert_eq!(store.outbox_pending().await.unwrap(), before + 1);
    assert_eq!(
        digests(db).await.keys().cloned().collect::<Vec<_>>(),
        [(old.id, "2020-03-04".to_string())]
    );
    let read = |id| store.alert(id);
    let (old_now, new_now) = (read(old.id).await.unwrap(), read(new.id).await.unwrap());
    assert_eq!(old_now.watermark(), Watermark::period_end(end));
    assert_eq!(new_now.watermark(), Watermark::period_end(end));
    assert_eq!(old_now.last_sent_at, Some(now));
    assert_eq!(new_now.last_sent_at, None, "no match, no digest");
    for untouched in [&paused, &weekly] {
        assert_eq!(
            read(untouched.id).await.unwrap().watermark(),
            untouched.watermark()
        );
    }
    assert!(
        store
            .due_alerts(daily, end, 0, last, 10)
            .await
            .unwrap()
            .is_empty()
    );

    // The window: open jobs created in [from, to), not past their date at `at`.
    let owner = user(store, Role::Employer).await;
    let c = company(store, owner.id, &unique("Acme ")).await;
    let from = t("2020-03-04T00:00:00Z");
    let first = job_at(db, c.id, "Welder", "Wien", from).await;
    let last_in = job_at(db, c.id, "Welder", "Wien", end - Duration::microseconds(1)).await;
    job_at(db, c.id, "Welder", "Wien", end).await;
    job_at(db, c.id, "Welder", "Wien", from - Duration::microseconds(1)).await;
    let closed = job_at(db, c.id, "Welder", "Wien", t("2020-03-04T10:00:00Z")).await;
    run_sql(
        db,
        &format!("UPDATE jobs SET status = 'closed' WHERE id = {}", closed.id),
    )
    .await;
    let expiring = job_at(db, c.id, "Welder", "Wien", t("2020-03-04T11:00:00Z")).await;
    // A day before the others' dates.
    let expiry = first.expires_at.unwrap() - Duration::days(1);
    run_sql(
        db,
        &format!(
            "UPDATE jobs SET expires_at = {} WHERE id = {}",
            at(expiry),
            expiring.id
        ),
    )
    .await;
    // Created at the same instant as `expiring`, after it by id.
    let tied = job_at(db, c.id, "Welder", "Wien", expiring.created_at).await;
    // Read in pages of two, each after the last row of the one before: the tie falls across
    // two pages.
    let window = |at: DateTime<Utc>| async move {
        let mut ids = Vec::new();
        let mut after = (from, 0);
        loop {
            let page = store
                .open_jobs_created(from, end, at, after, 2)
                .await
                .unwrap();
            assert!(page.len() <= 2, "a page of {}", page.len());
            let Some(last) = page.last() else {
                return ids;
            };
            after = (last.created_at, last.id);
            ids.extend(page.iter().map(|j| j.id));
        }
    };
    assert_eq!(
        window(expiry - Duration::seconds(1)).await,
        [first.id, expiring.id, tied.id, last_in.id]
    );
    assert_eq!(window(expiry).await, [first.id, tied.id, last_in.id]);
    let ids = |rows: Vec<JobRow>| rows.into_iter().map(|j| j.id).collect::<Vec<_>>();
    assert_eq!(
        ids(store
            .open_jobs_created(from, end, from, (expiring.created_at, expiring.id), 10)
            .await
            .unwrap()),
        [tied.id, last_in.id]
    );

    // Marks of written periods.
    assert!(!store.alert_period_written("2020-03-04").await.unwrap());
    store.mark_alert_period("2020-03-04").await.unwrap();
    store.mark_alert_period("2020-03-04").await.unwrap();
    assert!(store.alert_period_written("2020-03-04").await.unwrap());
    assert!(!store.alert_period_written("2020-W10").await.unwrap());
}

/// A job of the corpus as the reference sees it.
pub(crate) struct RefJob {
    pub id: i64,
    pub terms: HashSet<String>,
    pub location: String,
    pub open: bool,
    pub created_at: DateTime<Utc>,
}

/// The contract's rule, plainly: the open jobs created in `(after, before)` whose terms hold
/// every word of `q` and whose location holds `location` (case-insensitively), newest first.
pub(crate) fn reference(
    jobs: &[RefJob],
    q: Option<&str>,
    location: Option<&str>,
    after: DateTime<Utc>,
    before: DateTime<Utc>,
) -> Vec<i64> {
    let words = q.map(|q| query_terms(q).unwrap()).unwrap_or_default();
    let needle = location.map(str::to_lowercase);
    let mut found: Vec<&RefJob> = jobs
        .iter()
        .filter(|j| j.open && j.created_at > after && j.created_at < before)
        .filter(|j| words.iter().all(|w| j.terms.contains(w)))
        .filter(|j| {
            needle
                .as_ref()
                .is_none_or(|n| j.location.to_lowercase().contains(n))
        })
        .collect();
    found.sort_by_key(|j| std::cmp::Reverse((j.created_at, j.id)));
    found.into_iter().map(|j| j.id).collect()
}

/// The digest the reference expects of `matches`: the first 20 listed, the rest counted.
pub(crate) fn expected(matches: &[i64]) -> Option<(Vec<i64>, u64)> {
    if matches.is_empty() {
        return None;
    }
    let listed = matches.len().min(DIGEST_JOBS);
    Some((matches[..listed].to_vec(), (matches.len() - listed) as u64))
}

async fn three_stores_twice_write_each_digest_once_and_none_twice(db: &TestDb) {
    let store = &db.store;
    let owner = user(store, Role::Employer).await;
    let companies = [
        company(store, owner.id, &unique("Acme ")).await,
        company(store, owner.id, &unique("Globex ")).await,
    ];
    const TITLES: [&str; 6] = [
        "Senior Rust Engineer",
        "Python Developer",
        "Nurse",
        "Welders wanted",
        "Rust and Python engineers",
        "Designer",
    ];
    const PLACES: [&str; 3] = ["Berlin, Germany", "Wien", "Remote, Berlin"];
    // 150 jobs, one every 20 minutes from noon on 2020-03-03 to the evening of 2020-03-05,
    // every seventh closed.
    let start = t("2020-03-03T12:00:00Z");
    let mut corpus = Vec::new();
    for i in 0..150usize {
        let c = &companies[i % 2];
        let title = TITLES[(i * 7 + i / 6) % TITLES.len()];
        let j = job_at(
            db,
            c.id,
            title,
            PLACES[i % PLACES.len()],
            start + Duration::minutes(20 * i as i64),
        )
        .await;
        let open = i % 7 != 3;
        if !open {
            run_sql(
                db,
                &format!("UPDATE jobs SET status = 'closed' WHERE id = {}", j.id),
            )
            .await;
        }
        corpus.push(RefJob {
            id: j.id,
            terms: document_terms(&[&j.title, &j.description, &c.name])
                .split(' ')
                .map(String::from)
                .collect(),
            location: j.location.clone(),
            open,
            created_at: j.created_at,
        });
    }
    // 60 daily alerts of three candidates, made on the evening of 2020-03-03.
    const QS: [Option<&str>; 6] = [
        Some("rust"),
        Some("engineers"),
        Some("PYTHON developer"),
        Some("nurses"),
        Some("pilot"),
        None,
    ];
    const WHERE: [Option<&str>; 3] = [None, Some("berlin"), Some("WIEN")];
    let created = t("2020-03-03T18:10:00Z");
    let mut alerts = Vec::new();
    for k in 0..3 {
        let u = user(store, Role::Candidate).await;
        for i in 0..20usize {
            let (q, location) = (QS[i % QS.len()], WHERE[(i / 6 + k) % WHERE.len()]);
            // Without words, a place: a saved search narrows the jobs.
            let location = location.or(if q.is_none() { Some("Wien") } else { None });
            let a = alert_at(db, &u, q, location, Frequency::Daily, created).await;
            alerts.push((a, q, location));
        }
    }
    let workers: Vec<Arc<dyn Store>> = futures::future::join_all(
        (0..3).map(|_| jobboard::store::connect_with_pool(&db.url, Some(4))),
    )
    .await
    .into_iter()
    .map(|s| s.expect("a worker's store"))
    .collect();

    let days = [
        ("2020-03-04", created, t("2020-03-05T00:00:00Z")),
        // A job created at the first day's very end is the second day's.
        (
            "2020-03-05",
            t("2020-03-05T00:00:00Z") - Duration::microseconds(1),
            t("2020-03-06T00:00:00Z"),
        ),
    ];
    let mut want = BTreeMap::new();
    for (label, after, end) in days {
        let now = end + Duration::minutes(3);
        let mut written = 0;
        for _ in 0..2 {
            let runs = futures::future::join_all(
                workers
                    .iter()
                    .map(|w| jobboard::worker::write_alert_digests(&**w, now)),
            )
            .await;
            for r in runs {
                written += r.expect("a worker's run");
            }
        }
        for (a, q, location) in &alerts {
            if let Some(d) = expected(&reference(&corpus, *q, *location, after, end)) {
                want.insert((a.id, label.to_string()), d);
            }
        }
        let got = digests(db).await;
        assert_eq!(got, want, "the digests of {label}");
        let of_day = want.keys().filter(|(_, p)| p == label).count() as u64;
        assert!(of_day > 10, "the corpus gives {label} digests: {of_day}");
        assert_eq!(written, of_day, "each digest written by one run");
        for (a, _, _) in &alerts {
            assert_eq!(
                store.alert(a.id).await.unwrap().watermark(),
                Watermark::period_end(end)
            );
        }
    }
    // Some alerts list 20 and count more; none lists a job twice across the two days.
    assert!(want.values().any(|(_, more)| *more > 0));
    for (a, _, _) in &alerts {
        let mut seen = HashSet::new();
        for ((id, _), (jobs, _)) in &want {
            if *id == a.id {
                for j in jobs {
                    assert!(seen.insert(*j), "alert {} listed job {j} twice", a.id);
                }
            }
        }
    }
    assert_eq!(
        count(db, "SELECT COUNT(*) FROM alert_digest_periods").await,
        3,
        "the two days, and the week before them, marked written"
    );
}

async fn a_digest_reads_its_alert_and_its_jobs_as_they_are_now(db: &TestDb) {
    let store = &db.store;
    let owner = user(store, Role::Employer).await;
    let c = company(store, owner.id, &unique("Acme ")).await;
    let u = user(store, Role::Candidate).await;
    let a = store
        .create_alert(
            u.id,
            NewAlert {
                filters: SearchFilters {
                    q: Some("rust".into()),
                    location: Some("Berlin".into()),
                    company_id: Some(c.id),
                    remote: Some(true),
                    ..SearchFilters::default()
                },
                frequency: Frequency::Weekly,
            },
            20,
            None,
        )
        .await
        .unwrap();
    let j1 = job(store, c.id, job_fields("Rust engineer")).await;
    let j2 = job(store, c.id, job_fields("Rust developer")).await;
    let digest = |alert_id, jobs: Vec<i64>| {
        Event::new(
            EventKind::AlertDigest {
                alert_id,
                period: "2026-W49".into(),
                jobs,
                more: 3,
            },
            Utc::now(),
        )
    };
    let e = digest(a.id, vec![j2.id, j1.id]);
    let read = || store.email_data(&e);
    assert_eq!(
        read().await.unwrap(),
        Loaded::Missing(Absent::Gone),
        "no record yet"
    );
    store.write_events(std::slice::from_ref(&e)).await.unwrap();
    let line = |j: &JobRow, title: &str| AlertJob {
        job_id: j.id,
        title: title.to_string(),
        company: c.name.clone(),
        location: j.location.clone(),
    };
    let ready = |jobs: Vec<AlertJob>| {
        Loaded::Ready(EmailData {
            to: Recipient {
                user_id: u.id,
                email: u.email.clone(),
                name: u.name.clone(),
            },
            about: About::AlertDigest {
                search: format!("\"rust\" in Berlin at {}, remote", c.name),
                frequency: Frequency::Weekly,
                jobs,
            },
        })
    };
    assert_eq!(
        read().await.unwrap(),
        ready(vec![
            line(&j2, "Rust developer"),
            line(&j1, "Rust engineer")
        ])
    );
    // The current title; a closed job stays listed; one back in review is its company's.
    let mut renamed = j1.fields().unwrap();
    renamed.title = Title::parse("Rust engineer (m/f/d)").unwrap();
    renamed.status = JobStatus::Closed;
    store
        .update_job(j1.id, renamed, j1.updated_at, None)
        .await
        .unwrap()
        .unwrap();
    run_sql(
        db,
        &format!(
            "UPDATE jobs SET status = 'pending_review' WHERE id = {}",
            j2.id
        ),
    )
    .await;
    assert_eq!(
        read().await.unwrap(),
        ready(vec![line(&j1, "Rust engineer (m/f/d)")])
    );
    // Paused: turned off; resumed: ready again.
    let pause = |paused| AlertChange {
        paused: Some(paused),
        ..AlertChange::default()
    };
    store
        .update_alert(u.id, a.id, pause(true), None)
        .await
        .unwrap();
    assert_eq!(read().await.unwrap(), Loaded::Missing(Absent::TurnedOff));
    store
        .update_alert(u.id, a.id, pause(false), None)
        .await
        .unwrap();
    assert!(matches!(read().await.unwrap(), Loaded::Ready(_)));
    // No listed job left to show: gone.
    store.delete_job(j1.id, None).await.unwrap();
    assert_eq!(read().await.unwrap(), Loaded::Missing(Absent::Gone));
    run_sql(
        db,
        &format!("UPDATE jobs SET status = 'open' WHERE id = {}", j2.id),
    )
    .await;
    assert!(matches!(read().await.unwrap(), Loaded::Ready(_)));

    // The unsubscribe link's pause: paused, again the same; an alert gone is NotFound.
    assert!(store.pause_alert(a.id, None).await.unwrap().paused);
    assert!(store.pause_alert(a.id, None).await.unwrap().paused);
    assert_eq!(read().await.unwrap(), Loaded::Missing(Absent::TurnedOff));
    store.delete_alert(u.id, a.id, None).await.unwrap();
    assert_eq!(read().await.unwrap(), Loaded::Missing(Absent::Gone));
    assert_not_found(store.alert(a.id).await);
    assert_not_found(store.pause_alert(a.id, None).await);

    // An alert gone with its user.
    let b = alert_at(db, &u, Some("rust"), None, Frequency::Daily, Utc::now()).await;
    let e = digest(b.id, vec![j2.id]);
    store.write_events(std::slice::from_ref(&e)).await.unwrap();
    assert!(matches!(
        store.email_data(&e).await.unwrap(),
        Loaded::Ready(_)
    ));
    store.delete_user(u.id).await.unwrap();
    assert_eq!(
        store.email_data(&e).await.unwrap(),
        Loaded::Missing(Absent::Gone)
    );
}
