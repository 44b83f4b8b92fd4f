//! A job's lifecycle in the store: renewal, an operator's review, applications refused past
//! `expires_at` before any upkeep, the upkeep's expiries, notices and backfill (each event
//! written once, whatever the number of workers and runs), and the schema that holds it.

use crate::harness::*;
use chrono::{DateTime, Duration, Utc};
use jobboard::domain::{Conflict, JobStatus, Role};
use jobboard::store::job_upkeep::{JobUpkeepReport, JobUpkeepSettings, run_job_upkeep};
use jobboard::store::{JobFields, Page, Review, Store, StoreError};
use std::sync::Arc;

crate::each_backend!(
    renew_opens_open_and_expired_jobs_only,
    applications_stop_at_expires_at_before_the_upkeep,
);

mod with_db {
    crate::each_backend!(with_db:
        review_opens_or_rejects_a_job_waiting_for_review,
        the_upkeep_expires_notices_and_backfills_once,
        three_workers_twice_write_each_event_once,
        the_schema_takes_the_new_statuses_and_no_other,
    );

    use super::*;
}

fn at(base: DateTime<Utc>, hours: i64) -> Option<DateTime<Utc>> {
    Some(base + Duration::hours(hours))
}

fn fields(status: JobStatus, expires_at: Option<DateTime<Utc>>) -> JobFields {
    JobFields {
        status,
        expires_at,
        ..job_fields("Welder")
    }
}

#[track_caller]
fn assert_conflict_is<T: std::fmt::Debug>(got: Result<T, StoreError>, want: Conflict) {
    match got {
        Err(StoreError::Conflict(c)) if c == want => {}
        other => panic!("expected {want:?}, got {other:?}"),
    }
}

async fn renew_opens_open_and_expired_jobs_only(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let now = jobboard::timefmt::now();

    let open = job(&store, c.id, fields(JobStatus::Open, at(now, 24))).await;
    let until = now + Duration::days(30);
    let renewed = store.renew_job(open.id, until, None).await.expect("renew");
    assert_eq!(
        (renewed.status, renewed.expires_at),
        (JobStatus::Open, Some(until))
    );
    assert!(renewed.updated_at > open.updated_at, "the version moves");

    // Expired by the upkeep, then renewed: open again, and due again at its new date.
    let lapsing = job(&store, c.id, fields(JobStatus::Open, at(now, 1))).await;
    let expired = store
        .expire_jobs(now + Duration::hours(2), 500)
        .await
        .unwrap();
    assert_eq!(expired.jobs, 1);
    assert_eq!(
        store.job(lapsing.id).await.unwrap().status,
        JobStatus::Expired
    );
    let again = store
        .renew_job(lapsing.id, now + Duration::hours(5), None)
        .await
        .expect("renew an expired job");
    assert_eq!(again.status, JobStatus::Open);
    assert_eq!(
        store
            .expire_jobs(now + Duration::hours(6), 500)
            .await
            .unwrap()
            .jobs,
        1,
        "the renewed date is on the agenda"
    );

    // Past its date but not yet expired by the upkeep: renewable too.
    let past = job(
        &store,
        c.id,
        fields(JobStatus::Open, Some(now - Duration::hours(1))),
    )
    .await;
    assert_eq!(
        store.renew_job(past.id, until, None).await.unwrap().status,
        JobStatus::Open
    );

    for status in [
        JobStatus::Closed,
        JobStatus::PendingReview,
        JobStatus::Rejected,
    ] {
        let j = job(&store, c.id, fields(status, at(now, 24))).await;
        assert_conflict_is(
            store.renew_job(j.id, until, None).await,
            Conflict::NotRenewable(status),
        );
        assert_eq!(store.job(j.id).await.unwrap().status, status, "unchanged");
    }
    assert_not_found(store.renew_job(open.id + 1000, until, None).await);
}

async fn applications_stop_at_expires_at_before_the_upkeep(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let soon = jobboard::timefmt::now() + Duration::milliseconds(1500);
    let j = job(&store, c.id, fields(JobStatus::Open, Some(soon))).await;
    let early = user(&store, Role::Candidate).await;
    store
        .apply(j.id, early.id, Default::default(), None)
        .await
        .expect("open until its date");
    tokio::time::sleep((soon - Utc::now()).to_std().unwrap_or_default()).await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    let late = user(&store, Role::Candidate).await;
    // No upkeep has run: the job is stored open, and still refuses.
    assert_eq!(store.job(j.id).await.unwrap().status, JobStatus::Open);
    assert_conflict(
        store.apply(j.id, late.id, Default::default(), None).await,
        Conflict::JobExpired,
    );
    for status in [
        JobStatus::Closed,
        JobStatus::PendingReview,
        JobStatus::Rejected,
    ] {
        let other = job(&store, c.id, fields(status, None)).await;
        assert_conflict(
            store
                .apply(other.id, late.id, Default::default(), None)
                .await,
            Conflict::JobClosed,
        );
    }
}

/// How many events of one type were written.
async fn events_of(db: &TestDb, kind: &str) -> i64 {
    count(
        db,
        &format!("SELECT COUNT(*) FROM events WHERE type = '{kind}'"),
    )
    .await
}

/// The outbox rows of the events of one type (each event must have exactly one).
async fn outbox_of(db: &TestDb, kind: &str) -> i64 {
    count(
        db,
        &format!(
            "SELECT COUNT(*) FROM outbox o JOIN events e ON e.event_id = o.event_id \
             WHERE e.type = '{kind}'"
        ),
    )
    .await
}

async fn review_opens_or_rejects_a_job_waiting_for_review(db: &TestDb) {
    let store = &db.store;
    let owner = user(store, Role::Employer).await;
    let second = user(store, Role::Employer).await;
    let c = company(store, owner.id, "Acme").await;
    store
        .add_member(
            c.id,
            &Email::parse(&store.user_by_id(second.id).await.unwrap().email).unwrap(),
            None,
        )
        .await
        .unwrap();
    let posting = Duration::days(30);
    let before = jobboard::timefmt::now();

    let waiting = job(store, c.id, fields(JobStatus::PendingReview, None)).await;
    let approved = store
        .review_job(waiting.id, Review::Approve { posting }, None)
        .await
        .expect("approve");
    assert_eq!(approved.status, JobStatus::Open);
    assert!(approved.created_at >= before, "it opens at its approval");
    let until = approved.expires_at.expect("a date from the approval");
    assert!(until >= approved.created_at + posting && until <= Utc::now() + posting);
    assert_eq!(events_of(db, "job.reviewed").await, 2, "one per member");
    assert_eq!(outbox_of(db, "job.reviewed").await, 2);
    let approvals = count(
        db,
        "SELECT COUNT(*) FROM events WHERE type = 'job.reviewed' AND body LIKE '%\"decision\":\"approved\"%'",
    )
    .await;
    assert_eq!(approvals, 2);

    // A date its members set that is still ahead stands; one that passed does not.
    let ahead = Utc::now() + Duration::days(3);
    let ahead = jobboard::domain::job::parse_time(&jobboard::timefmt::format(&ahead)).unwrap();
    let dated = job(store, c.id, fields(JobStatus::PendingReview, Some(ahead))).await;
    let kept = store
        .review_job(dated.id, Review::Approve { posting }, None)
        .await
        .unwrap();
    assert_eq!(kept.expires_at, Some(ahead));
    let stale = job(
        store,
        c.id,
        fields(JobStatus::PendingReview, Some(before - Duration::days(1))),
    )
    .await;
    let renewed = store
        .review_job(stale.id, Review::Approve { posting }, None)
        .await
        .unwrap();
    assert!(renewed.expires_at.unwrap() > Utc::now() + Duration::days(29));

    let refused = job(store, c.id, fields(JobStatus::PendingReview, None)).await;
    let rejected = store
        .review_job(
            refused.id,
            Review::Reject {
                reason: "Not a real job".into(),
            },
            None,
        )
        .await
        .expect("reject");
    assert_eq!(rejected.status, JobStatus::Rejected);
    assert_eq!(rejected.rejection_reason.as_deref(), Some("Not a real job"));
    assert_eq!(events_of(db, "job.reviewed").await, 8);
    let rejections = count(
        db,
        "SELECT COUNT(*) FROM events WHERE type = 'job.reviewed' AND body LIKE '%\"decision\":\"rejected\"%'",
    )
    .await;
    assert_eq!(rejections, 2);

    // Only a job waiting for review is reviewed; nothing is written otherwise.
    for id in [approved.id, rejected.id] {
        for review in [
            Review::Approve { posting },
            Review::Reject {
                reason: "again".into(),
            },
        ] {
            match store.review_job(id, review, None).await {
                Err(StoreError::Conflict(Conflict::JobTransition(_))) => {}
                other => panic!("expected a refused transition, got {other:?}"),
            }
        }
    }
    assert_eq!(events_of(db, "job.reviewed").await, 8);
    assert_not_found(
        store
            .review_job(refused.id + 1000, Review::Approve { posting }, None)
            .await,
    );

    // Back to review by a member's edit: the reason goes.
    let mut edited = rejected.fields().unwrap();
    edited.status = JobStatus::PendingReview;
    let back = store
        .update_job(rejected.id, edited, rejected.updated_at, None)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        (back.status, back.rejection_reason),
        (JobStatus::PendingReview, None)
    );

    // The review queue: oldest first; open and expired as the jobs read.
    let (queue, total) = store
        .jobs_in_status(JobStatus::PendingReview, Utc::now(), Page::default())
        .await
        .unwrap();
    assert_eq!(total, 1);
    assert_eq!(queue[0].id, back.id);
    let lapsed = job(store, c.id, fields(JobStatus::Open, Some(before))).await;
    let (open, _) = store
        .jobs_in_status(JobStatus::Open, Utc::now(), Page::default())
        .await
        .unwrap();
    let ids: Vec<i64> = open.iter().map(|j| j.id).collect();
    assert_eq!(ids, vec![approved.id, kept.id, renewed.id], "oldest first");
    let (expired, total) = store
        .jobs_in_status(JobStatus::Expired, Utc::now(), Page::default())
        .await
        .unwrap();
    assert_eq!((expired[0].id, total), (lapsed.id, 1));
}

fn settings() -> JobUpkeepSettings {
    JobUpkeepSettings {
        batch: 7,
        ..JobUpkeepSettings::new(30, 5)
    }
}

async fn the_upkeep_expires_notices_and_backfills_once(db: &TestDb) {
    let store: &dyn Store = &*db.store;
    let arc = &db.store;
    let owner = user(arc, Role::Employer).await;
    let second = user(arc, Role::Employer).await;
    let c = company(arc, owner.id, "Acme").await;
    store
        .add_member(
            c.id,
            &Email::parse(&store.user_by_id(second.id).await.unwrap().email).unwrap(),
            None,
        )
        .await
        .unwrap();
    let base = jobboard::timefmt::now() + Duration::days(1);
    let ten_days = job(arc, c.id, fields(JobStatus::Open, at(base, 240))).await;
    let three_days = job(arc, c.id, fields(JobStatus::Open, at(base, 72))).await;
    let one_hour = job(arc, c.id, fields(JobStatus::Open, at(base, 1))).await;
    let closed = job(arc, c.id, fields(JobStatus::Closed, at(base, 1))).await;
    let waiting = job(arc, c.id, fields(JobStatus::PendingReview, at(base, 1))).await;
    // Written before jobs expired: no date.
    let legacy = job(arc, c.id, fields(JobStatus::Open, None)).await;
    let legacy_closed = job(arc, c.id, fields(JobStatus::Closed, None)).await;
    let s = settings();
    let changes = || count(db, "SELECT COUNT(*) FROM job_changes");

    let first = run_job_upkeep(store, &s, base).await.unwrap();
    assert_eq!(
        first,
        JobUpkeepReport {
            expired: 0,
            expired_events: 0,
            noticed: 2,
            notice_events: 4,
            backfilled: 1,
        },
        "the notices of the jobs due within five days, one per member; the old open job dated"
    );
    let given = store.job(legacy.id).await.unwrap().expires_at;
    assert!(
        given.is_some_and(|t| t >= base + Duration::days(30)),
        "{given:?}"
    );
    assert_eq!(store.job(legacy_closed.id).await.unwrap().expires_at, None);
    let logged = changes().await;
    assert_eq!(
        run_job_upkeep(store, &s, base).await.unwrap(),
        JobUpkeepReport::default(),
        "twice in a row: nothing new"
    );
    assert_eq!(changes().await, logged);
    assert_eq!(events_of(db, "job.expiring").await, 4);
    let ids = count(
        db,
        &format!(
            "SELECT COUNT(*) FROM events WHERE event_id = 'job-expiring-{}-{}-{}'",
            one_hour.id,
            one_hour.expires_at.unwrap().timestamp(),
            owner.id
        ),
    )
    .await;
    assert_eq!(
        ids, 1,
        "the id is made from the job, its date and the member"
    );

    let later = run_job_upkeep(store, &s, base + Duration::hours(2))
        .await
        .unwrap();
    assert_eq!((later.expired, later.expired_events), (1, 2));
    let expired = store.job(one_hour.id).await.unwrap();
    assert_eq!(expired.status, JobStatus::Expired);
    assert!(expired.updated_at > one_hour.updated_at);
    assert_eq!(changes().await, logged + 1, "the index hears of it");
    for untouched in [&closed, &waiting] {
        assert_eq!(
            store.job(untouched.id).await.unwrap().status,
            untouched.status
        );
    }

    // Renewed: a new date, so a new notice, and a new expiry in its time.
    store
        .renew_job(one_hour.id, base + Duration::hours(48), None)
        .await
        .unwrap();
    let renewed = run_job_upkeep(store, &s, base + Duration::hours(3))
        .await
        .unwrap();
    assert_eq!((renewed.noticed, renewed.notice_events), (1, 2));
    // Closed before its date: never expired.
    let mut shut = three_days.fields().unwrap();
    shut.status = JobStatus::Closed;
    store
        .update_job(three_days.id, shut, three_days.updated_at, None)
        .await
        .unwrap()
        .unwrap();

    let end = run_job_upkeep(store, &s, base + Duration::days(11))
        .await
        .unwrap();
    // The ten-day job's notice window passed while no upkeep ran: it expires without one.
    assert_eq!((end.expired, end.expired_events, end.noticed), (2, 4, 0));
    assert_eq!(
        store.job(ten_days.id).await.unwrap().status,
        JobStatus::Expired
    );
    assert_eq!(
        store.job(three_days.id).await.unwrap().status,
        JobStatus::Closed
    );
    assert_eq!(events_of(db, "job.expired").await, 6);
    assert_eq!(outbox_of(db, "job.expired").await, 6);
    assert_eq!(events_of(db, "job.expiring").await, 6);
    assert_eq!(outbox_of(db, "job.expiring").await, 6);
    assert_eq!(
        count(db, "SELECT COUNT(*) FROM job_expiries").await,
        1,
        "only the backfilled job's date is left to watch"
    );

    // No notices when JOB_EXPIRY_NOTICE_DAYS is 0 (with 5, this job's would be due).
    let quiet = JobUpkeepSettings::new(30, 0);
    let j = job(arc, c.id, fields(JobStatus::Open, at(base, 24 * 14))).await;
    let none = run_job_upkeep(store, &quiet, base + Duration::days(12))
        .await
        .unwrap();
    assert_eq!(none.notice_events, 0);
    assert_eq!(store.job(j.id).await.unwrap().status, JobStatus::Open);
}

/// Three workers at once, each run twice, over 1 000 jobs of 10 companies (two members each)
/// whose dates cross the notice and expiry times of the runs: every event once, and each
/// written by exactly one of the runs.
async fn three_workers_twice_write_each_event_once(db: &TestDb) {
    let arc = &db.store;
    let base = jobboard::timefmt::now() + Duration::days(1);
    let mut companies = Vec::new();
    for i in 0..10 {
        let owner = user(arc, Role::Employer).await;
        let second = user(arc, Role::Employer).await;
        let c = company(arc, owner.id, &format!("Company {i}")).await;
        arc.add_member(
            c.id,
            &Email::parse(&arc.user_by_id(second.id).await.unwrap().email).unwrap(),
            None,
        )
        .await
        .unwrap();
        companies.push(c.id);
    }
    // Dates from 1 to 3 days after `base`, one every ~3 minutes.
    for i in 0..1000i64 {
        let when = base + Duration::days(1) + Duration::seconds(i * 173);
        job(
            arc,
            companies[(i % 10) as usize],
            fields(JobStatus::Open, Some(when)),
        )
        .await;
    }
    let workers: Vec<Arc<dyn Store>> = futures::future::join_all(
        (0..3).map(|_| jobboard::store::connect_with_pool(&db.url, Some(4))),
    )
    .await
    .into_iter()
    .map(|s| s.expect("a worker's store"))
    .collect();
    let s = JobUpkeepSettings {
        batch: 50,
        ..JobUpkeepSettings::new(30, 5)
    };
    let mut totals = JobUpkeepReport::default();
    // At `base` every job is within its notice window; at +2 days about half have expired;
    // at +4 days all of them.
    for when in [base, base + Duration::days(2), base + Duration::days(4)] {
        for _ in 0..2 {
            let runs =
                futures::future::join_all(workers.iter().map(|w| run_job_upkeep(&**w, &s, when)))
                    .await;
            for r in runs {
                let r = r.expect("a worker's run");
                totals.expired += r.expired;
                totals.expired_events += r.expired_events;
                totals.noticed += r.noticed;
                totals.notice_events += r.notice_events;
            }
        }
    }
    assert_eq!(events_of(db, "job.expiring").await, 2000);
    assert_eq!(outbox_of(db, "job.expiring").await, 2000);
    assert_eq!(events_of(db, "job.expired").await, 2000);
    assert_eq!(outbox_of(db, "job.expired").await, 2000);
    assert_eq!(
        (
            totals.noticed,
            totals.notice_events,
            totals.expired,
            totals.expired_events
        ),
        (1000, 2000, 1000, 2000),
        "each job noticed and expired by one run"
    );
    assert_eq!(
        count(db, "SELECT COUNT(*) FROM jobs WHERE status = 'expired'").await,
        1000
    );
    assert_eq!(count(db, "SELECT COUNT(*) FROM job_expiries").await, 0);
}

async fn the_schema_takes_the_new_statuses_and_no_other(db: &TestDb) {
    let owner = user(&db.store, Role::Employer).await;
    let c = company(&db.store, owner.id, "Acme").await;
    let j = job(&db.store, c.id, job_fields("Welder")).await;
    for status in JobStatus::ALL {
        exec(
            db,
            &format!("UPDATE jobs SET status = '{status}' WHERE id = {}", j.id),
        )
        .await
        .unwrap_or_else(|e| panic!("{status}: {e}"));
        assert_eq!(db.store.job(j.id).await.unwrap().status, status);
    }
    let refused = exec(
        db,
        &format!("UPDATE jobs SET status = 'archived' WHERE id = {}", j.id),
    )
    .await;
    assert!(
        refused
            .as_ref()
            .is_err_and(|e| e.contains("CHECK") || e.contains("check")),
        "{refused:?}"
    );
    match db.store.backend() {
        "sqlite" => {
            // The schema edited in place (migration 0015) is sound.
            let sqlite = match &db.url {
                jobboard::config::DatabaseUrl::Sqlite(url) => url.clone(),
                _ => unreachable!(),
            };
            let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&sqlite)
                .await
                .unwrap();
            let verdict: String = sqlx::query_scalar("PRAGMA integrity_check")
                .fetch_one(&mut conn)
                .await
                .unwrap();
            assert_eq!(verdict, "ok");
        }
        _ => {
            assert_eq!(
                count(
                    db,
                    "SELECT COUNT(*) FROM pg_constraint WHERE conname = 'jobs_status_lifecycle' \
                     AND convalidated"
                )
                .await,
                1,
                "the wider constraint is validated"
            );
            assert_eq!(
                count(
                    db,
                    "SELECT COUNT(*) FROM pg_constraint WHERE conname = 'jobs_status_check'"
                )
                .await,
                0
            );
        }
    }
}

/// Migration 0015 on a database that has jobs, applications and full-text rows: every row
/// stays (no application lost to a cascade), nothing is rewritten (PostgreSQL keeps the table's
/// file), the old jobs have no date until the upkeep gives the open ones theirs.
mod upgrade {
    use super::*;

    /// The migrations before 0015 of `backend`, applied to `url` from a folder of their own.
    async fn migrate_before_0015(backend: &str, url: &jobboard::config::DatabaseUrl) {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("migrations")
            .join(backend);
        for entry in std::fs::read_dir(&source).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.as_str() < "0015" {
                std::fs::copy(entry.path(), dir.path().join(&name)).unwrap();
            }
        }
        let migrator = sqlx::migrate::Migrator::new(dir.path()).await.unwrap();
        match url {
            jobboard::config::DatabaseUrl::Sqlite(u) => {
                let pool = sqlx::SqlitePool::connect(u).await.unwrap();
                migrator.run(&pool).await.expect("0001-0014");
                pool.close().await;
            }
            jobboard::config::DatabaseUrl::Postgres(u) => {
                let pool = sqlx::PgPool::connect(u).await.unwrap();
                migrator.run(&pool).await.expect("0001-0014");
                pool.close().await;
            }
        }
    }

    /// Rows as a release before 0015 wrote them: 2 000 jobs (every tenth closed), one
    /// application to each of the first 100.
    const SEED_PG: &str = "
        INSERT INTO users (email, email_key, name, role, password_hash, created_at) VALUES
            ('e@x.example', 'e@x.example', 'E', 'employer', 'h', now()),
            ('c@x.example', 'c@x.example', 'C', 'candidate', 'h', now());
        INSERT INTO companies (name, created_at) VALUES ('Acme', now());
        INSERT INTO company_members (company_id, user_id) VALUES (1, 1);
        INSERT INTO jobs (company_id, title, description, location, location_key, remote,
            employment_type, status, search_terms, title_terms, created_at, updated_at)
        SELECT 1, 'Welder ' || g, 'd', 'Berlin', 'berlin', false, 'full_time',
            CASE WHEN g % 10 = 0 THEN 'closed' ELSE 'open' END, 'welder acme', 'welder',
            now(), now()
        FROM generate_series(1, 2000) g;
        INSERT INTO applications (job_id, candidate_id, status, created_at, updated_at)
        SELECT id, 2, 'submitted', now(), now() FROM jobs WHERE id <= 100;";

    const SEED_SQLITE: &str = "
        INSERT INTO users (email, email_key, name, role, password_hash, created_at) VALUES
            ('e@x.example', 'e@x.example', 'E', 'employer', 'h', '2026-01-01T00:00:00+00:00'),
            ('c@x.example', 'c@x.example', 'C', 'candidate', 'h', '2026-01-01T00:00:00+00:00');
        INSERT INTO companies (name, created_at) VALUES ('Acme', '2026-01-01T00:00:00+00:00');
        INSERT INTO company_members (company_id, user_id) VALUES (1, 1);
        WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < 2000)
        INSERT INTO jobs (company_id, title, description, location, location_key, remote,
            employment_type, status, search_terms, title_terms, created_at, updated_at)
        SELECT 1, 'Welder ' || n, 'd', 'Berlin', 'berlin', 0, 'full_time',
            CASE WHEN n % 10 = 0 THEN 'closed' ELSE 'open' END, 'welder acme', 'welder',
            '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00'
        FROM g;
        INSERT INTO applications (job_id, candidate_id, status, created_at, updated_at)
        SELECT id, 2, 'submitted', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00'
        FROM jobs WHERE id <= 100;";

    async fn upgrade(db: TestDb) {
        let backend = db.store.backend();
        migrate_before_0015(backend, &db.url).await;
        let seed = if backend == "sqlite" {
            SEED_SQLITE
        } else {
            SEED_PG
        };
        exec(&db, seed).await.expect("seed");
        exec(
            &db,
            "UPDATE jobs SET salary_max = 90000, remote = (1 = 1), location = '' WHERE id = 7",
        )
        .await
        .expect("a remote job with pay and no location");
        let file = "SELECT CAST(pg_relation_filenode('jobs') AS BIGINT)";
        let before = if backend == "postgres" {
            count(&db, file).await
        } else {
            0
        };

        db.store.migrate().await.expect("0015 and after");

        if backend == "postgres" {
            assert_eq!(count(&db, file).await, before, "jobs was not rewritten");
        }
        assert_eq!(count(&db, "SELECT COUNT(*) FROM jobs").await, 2000);
        assert_eq!(count(&db, "SELECT COUNT(*) FROM applications").await, 100);
        // Pay and place (0029) written down from the older columns, in batches: what every
        // job read as before, now stored.
        assert_eq!(
            count(&db, "SELECT COUNT(*) FROM jobs WHERE workplace = 'onsite'").await,
            1999
        );
        assert_eq!(
            count(
                &db,
                "SELECT COUNT(*) FROM jobs WHERE salary_currency IS NOT NULL"
            )
            .await,
            1,
            "no pay, no currency"
        );
        let paid = db.store.job(7).await.expect("read job 7");
        assert_eq!(
            (
                paid.workplace.as_deref(),
                paid.locations.as_deref(),
                paid.salary_currency.as_deref(),
                paid.salary_period.as_deref()
            ),
            (Some("remote"), Some("[]"), Some("USD"), Some("year"))
        );
        for id in [1, 1999, 2000] {
            let job = db.store.job(id).await.expect("read job");
            assert!(
                job.locations.is_some() && job.workplace.is_some(),
                "{job:?}"
            );
            assert_eq!(
                job.places(),
                [jobboard::domain::pay_place::Place::of_text("Berlin")]
            );
            assert_eq!(job.fields().expect("valid").location(), "Berlin");
        }
        assert_eq!(
            count(&db, "SELECT COUNT(*) FROM jobs WHERE expires_at IS NULL").await,
            2000,
            "no date until the upkeep"
        );
        if backend == "sqlite" {
            // The full-text rows and their triggers are as they were.
            assert_eq!(
                count(
                    &db,
                    "SELECT COUNT(*) FROM jobs_fts WHERE jobs_fts MATCH 'welder'"
                )
                .await,
                1800
            );
        }
        let now = jobboard::timefmt::now();
        let s = JobUpkeepSettings::new(30, 5);
        let first = run_job_upkeep(&*db.store, &s, now).await.unwrap();
        // Four batches of 500 read every job; the open ones are dated.
        assert_eq!(first.backfilled, 1800);
        let again = run_job_upkeep(&*db.store, &s, now).await.unwrap();
        assert_eq!(again.backfilled, 0, "the cursor is past them");
        assert_eq!(
            count(&db, "SELECT COUNT(*) FROM jobs WHERE expires_at IS NULL").await,
            200,
            "closed jobs get theirs when reopened"
        );
        assert_eq!(count(&db, "SELECT COUNT(*) FROM job_expiries").await, 1800);
        // Nothing expired, nothing noticed: the dates are JOB_POSTING_DAYS ahead.
        assert_eq!((first.expired, first.notice_events), (0, 0));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        upgrade(crate::harness::sqlite().await).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        upgrade(crate::harness::postgres().await).await;
    }
}
