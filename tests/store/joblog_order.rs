//! The job-change log commits in `seq` order: a follower that has read `seq` N never later finds
//! a row below N. Two followers read the log while many writers change jobs at once: one moves
//! its place to the last `seq` of each batch of [`BATCH`] rows it reads (and must see every
//! row), the other is the search index's own `catch_up` (and must end with every job as last
//! written: a retitled job found under its new title, a closed one gone).
//!
//! On PostgreSQL a row's `seq` is drawn at its insert and the row is seen at its commit, so rows
//! commit in `seq` order only because every job write takes an advisory lock just before its
//! log row and holds it to its commit (`JOB_LOG_LOCK`). The writers here update and close jobs
//! (creations take turns under a lock of their own, so they cannot show this). The insert is the
//! last statement before the commit, so the window in which a `seq` is drawn but not yet seen is
//! short; the case widens it: a trigger it adds to the log makes every [`SLOW_EVERY`]-th row's
//! transaction sleep [`SLOW_SECONDS`] after the insert, before its commit. Without the lock
//! other writers commit larger `seq`s meanwhile, the followers read them and move past the
//! sleeping row, which they never read, and both assertions fail. With it the sleeping writer
//! holds the lock, the others wait, and nothing is skipped.
//!
//! On SQLite every write transaction holds the database's single write lock from its `BEGIN
//! IMMEDIATE` to its commit, so rows commit in `seq` order by construction, and the case runs
//! without the trigger (SQLite has no sleep): there it checks the log's reads and the follower
//! under concurrent writers, not the order, which nothing in the store can break.

use crate::harness::*;
use jobboard::config::DatabaseUrl;
use jobboard::domain::JobStatus;
use jobboard::search::{SearchIndex, StoreFeed};
use jobboard::store::{JobRow, JobSearch, MAX_SEARCH_IDS, Page, Store};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

crate::each_backend!(with_db: a_follower_reading_while_many_writers_commit_sees_every_change);

const WRITERS: usize = 8;
/// The jobs each writer changes, once each: every change is its job's last.
const WRITES: usize = 30;
/// The log rows read at a time by the first follower.
const BATCH: i64 = 5;
/// Every this-many-th log row's transaction sleeps before its commit (PostgreSQL).
const SLOW_EVERY: i64 = 20;
const SLOW_SECONDS: f64 = 0.2;
/// How long a follower waits after a read that found nothing new.
const IDLE: Duration = Duration::from_millis(1);

async fn a_follower_reading_while_many_writers_commit_sees_every_change(db: &TestDb) {
    let store = db.store.clone();
    let owner = user(&store, jobboard::domain::Role::Employer).await;
    let company = company(&store, owner.id, "Acme").await;
    let mut jobs: Vec<Vec<JobRow>> = Vec::with_capacity(WRITERS);
    for w in 0..WRITERS {
        let mut mine = Vec::with_capacity(WRITES);
        for i in 0..WRITES {
            mine.push(job(&store, company.id, job_fields(&format!("Job {w}-{i}"))).await);
        }
        jobs.push(mine);
    }
    // The followers read through a pool of their own, as another process would: the writers'
    // transactions, waiting on each other, do not hold up their reads.
    let reader = jobboard::store::connect_with_pool(&db.url, Some(2))
        .await
        .expect("open a second store on the database");
    let dir = tempfile::tempdir().expect("temp dir");
    let index = Arc::new(SearchIndex::open(dir.path()).expect("open the index"));
    let feed = StoreFeed(reader.clone());
    jobboard::search::catch_up(&index, &feed)
        .await
        .expect("apply the jobs' creation");
    assert_eq!(index.documents(), (WRITERS * WRITES) as u64);

    if let DatabaseUrl::Postgres(url) = &db.url {
        slow_some_log_rows(url).await;
    }
    let start = store.newest_job_change().await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let batches = tokio::spawn(follow_in_batches(reader.clone(), start, done.clone()));
    let following = tokio::spawn(follow_into_the_index(index.clone(), feed, done.clone()));
    // Each writer retitles its jobs, closing every third.
    let writers: Vec<_> = jobs
        .into_iter()
        .map(|mine| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut last = Vec::with_capacity(mine.len());
                for (i, row) in mine.into_iter().enumerate() {
                    let mut fields = job_fields(&format!("Retitled {}", row.title));
                    if i % 3 == 0 {
                        fields.status = JobStatus::Closed;
                    }
                    let changed = store
                        .update_job(row.id, fields, row.updated_at, None)
                        .await
                        .unwrap()
                        .expect("no other writer changes this job");
                    last.push(changed);
                }
                last
            })
        })
        .collect();
    let mut written: BTreeMap<i64, JobRow> = BTreeMap::new();
    for w in writers {
        written.extend(w.await.unwrap().into_iter().map(|r| (r.id, r)));
    }
    done.store(true, Ordering::SeqCst);
    let seen = batches.await.unwrap();
    following.await.unwrap();

    let all: BTreeSet<i64> = store
        .job_changes_after(start, (WRITERS * WRITES * 2) as i64)
        .await
        .unwrap()
        .iter()
        .map(|c| c.seq)
        .collect();
    assert_eq!(all.len(), WRITERS * WRITES);
    let skipped: Vec<&i64> = all.difference(&seen).collect();
    // The index holds each job as last written: open ones under their new title, closed ones
    // not at all.
    let ids: Vec<i64> = written.keys().copied().collect();
    let mut found: BTreeMap<i64, String> = BTreeMap::new();
    for chunk in ids.chunks(MAX_SEARCH_IDS) {
        let page = index
            .search(&JobSearch {
                ids: Some(chunk.to_vec()),
                page: Page {
                    page: 1,
                    size: MAX_SEARCH_IDS as i64,
                },
                ..JobSearch::default()
            })
            .expect("search the index");
        found.extend(page.rows.into_iter().map(|r| (r.id, r.title)));
    }
    let stale: Vec<String> = written
        .values()
        .filter_map(|row| {
            let indexed = found.get(&row.id);
            let open = row.status == JobStatus::Open;
            match indexed {
                Some(title) if open && *title == row.title => None,
                None if !open => None,
                Some(title) => Some(format!("{} {:?} as {title:?}", row.id, row.status)),
                None => Some(format!("{} {:?} missing", row.id, row.status)),
            }
        })
        .collect();
    assert!(
        skipped.is_empty() && stale.is_empty(),
        "the follower reading {BATCH} rows at a time skipped {} of {} changes: {skipped:?}; \
         the index's follower never applied {} of {} (job, its status, what the index holds): \
         {stale:?}",
        skipped.len(),
        all.len(),
        stale.len(),
        written.len()
    );
    assert_eq!(seen, all);
}

/// Adds to the log a trigger that makes every [`SLOW_EVERY`]-th row's transaction sleep
/// [`SLOW_SECONDS`] after its insert: the row's `seq` is drawn, and it commits that much later.
async fn slow_some_log_rows(url: &str) {
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(url)
        .await
        .expect("connect to the test database");
    for statement in [
        format!(
            "CREATE FUNCTION slow_log_row() RETURNS trigger LANGUAGE plpgsql AS \
             $$ BEGIN PERFORM pg_sleep({SLOW_SECONDS}); RETURN NULL; END $$"
        ),
        format!(
            "CREATE TRIGGER slow_log_row AFTER INSERT ON job_changes FOR EACH ROW \
             WHEN (NEW.seq % {SLOW_EVERY} = 0) EXECUTE FUNCTION slow_log_row()"
        ),
    ] {
        sqlx::query(&statement)
            .execute(&mut conn)
            .await
            .expect("add the slowing trigger");
    }
}

/// Reads the log [`BATCH`] rows at a time from `start` until the writers are done and nothing
/// is left, moving past the last `seq` of each batch; returns every `seq` it read.
async fn follow_in_batches(
    store: Arc<dyn Store>,
    start: i64,
    done: Arc<AtomicBool>,
) -> BTreeSet<i64> {
    let mut applied = start;
    let mut seen = BTreeSet::new();
    loop {
        // Read whether the writers are done before reading: an empty read after they all
        // committed means nothing is left.
        let finished = done.load(Ordering::SeqCst);
        let batch = store.job_changes_after(applied, BATCH).await.unwrap();
        let Some(last) = batch.last() else {
            if finished {
                return seen;
            }
            tokio::time::sleep(IDLE).await;
            continue;
        };
        applied = last.seq;
        seen.extend(batch.iter().map(|c| c.seq));
    }
}

/// Applies the log to `index` with the search index's own `catch_up` until the writers are done
/// and it has caught up once more.
async fn follow_into_the_index(
    index: Arc<SearchIndex>,
    feed: StoreFeed<dyn Store>,
    done: Arc<AtomicBool>,
) {
    loop {
        let finished = done.load(Ordering::SeqCst);
        jobboard::search::catch_up(&index, &feed)
            .await
            .expect("apply the log");
        if finished {
            return;
        }
        tokio::time::sleep(IDLE).await;
    }
}
