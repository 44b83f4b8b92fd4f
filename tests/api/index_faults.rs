//! The search index under write faults: an index whose files fail to be written (a full disk,
//! no file descriptor left) loses no job once they can be written again, and never records a
//! change as applied that its searches do not show.

use crate::each_store;
use crate::helpers::*;
use jobboard::search::{JobFeed, SearchIndex, StoreFeed};
use jobboard::store::{JobChange, JobRow, JobSearch, Page, Store};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tantivy::Directory;
use tantivy::directory::error::{DeleteError, OpenReadError, OpenWriteError};
use tantivy::directory::{FileHandle, RamDirectory, WatchCallback, WatchHandle, WritePtr};
use tokio_util::sync::CancellationToken;

each_store!(
    a_failed_index_write_loses_no_job,
    a_failed_index_write_amid_a_batch_loses_no_job,
    a_rebuild_that_fails_half_way_is_done_again,
    a_log_trimmed_while_the_index_catches_up_is_rebuilt_from,
    a_company_change_reads_only_its_open_jobs,
    a_change_unapplied_for_10_s_makes_the_index_not_ready,
);

/// A directory in memory whose next `failing` file creations fail (lock files aside), as with
/// a full disk or no file descriptor left.
#[derive(Debug, Clone, Default)]
struct Faulty {
    inner: RamDirectory,
    failing: Arc<AtomicUsize>,
}

impl Faulty {
    fn fail_next(&self, n: usize) {
        self.failing.store(n, Ordering::SeqCst);
    }

    /// Whether every fault asked for has happened.
    fn spent(&self) -> bool {
        self.failing.load(Ordering::SeqCst) == 0
    }
}

impl Directory for Faulty {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.inner.get_file_handle(path)
    }
    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.inner.delete(path)
    }
    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.inner.exists(path)
    }
    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        let lock = path.extension().is_some_and(|e| e == "lock");
        if !lock
            && self
                .failing
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            return Err(OpenWriteError::wrap_io_error(
                std::io::Error::from_raw_os_error(24), // EMFILE: too many open files
                path.to_path_buf(),
            ));
        }
        self.inner.open_write(path)
    }
    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.inner.atomic_read(path)
    }
    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.inner.atomic_write(path, data)
    }
    fn sync_directory(&self) -> std::io::Result<()> {
        self.inner.sync_directory()
    }
    fn watch(&self, watch_callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.inner.watch(watch_callback)
    }
}

/// An index over a faulty directory, following the app's job-change log until dropped.
struct Follower {
    index: Arc<SearchIndex>,
    directory: Faulty,
    stop: CancellationToken,
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn follower(app: &TestApp) -> Follower {
    let directory = Faulty::default();
    let index = Arc::new(
        SearchIndex::open_with_directory(Box::new(directory.clone())).expect("open the index"),
    );
    let stop = CancellationToken::new();
    tokio::spawn(jobboard::search::follow(
        index.clone(),
        Arc::new(StoreFeed(app.state.store.clone())),
        stop.clone(),
    ));
    let started = Instant::now();
    while !index.is_caught_up() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "never caught up"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Follower {
        index,
        directory,
        stop,
    }
}

/// The ids among `ids` the index finds.
fn found(index: &SearchIndex, ids: &[i64]) -> Vec<i64> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    let found = index
        .search(&JobSearch {
            ids: Some(ids),
            page: Page { page: 1, size: 100 },
            ..JobSearch::default()
        })
        .expect("search the index");
    let mut found: Vec<i64> = found.rows.iter().map(|r| r.id).collect();
    found.sort_unstable();
    found
}

async fn newest_seq(app: &TestApp) -> i64 {
    app.scalar_i64("SELECT CAST(COALESCE(MAX(seq), 0) AS BIGINT) FROM job_changes")
        .await
}

/// Waits (at most 20 s) until the index finds every job of `ids`; meanwhile, whenever it says
/// it has applied the change `seq`, it must find the jobs of `written_by_then`.
async fn until_all_found(f: &Follower, ids: &[i64], seq: i64, written_by_then: &[i64], what: &str) {
    let mut want = ids.to_vec();
    want.sort_unstable();
    let started = Instant::now();
    loop {
        let applied = f.index.applied();
        let now = found(&f.index, ids);
        if applied >= seq {
            let missing: Vec<&i64> = written_by_then
                .iter()
                .filter(|id| !now.contains(id))
                .collect();
            assert!(
                missing.is_empty(),
                "{what}: the index says it applied change {applied} (at least {seq}) but does \
                 not find jobs {missing:?}"
            );
        }
        if now == want {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what}: 20 s after the fault the index finds {now:?} of {want:?} (applied {applied})"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn job_id(app: &TestApp, owner: &User, company: i64, title: &str) -> i64 {
    app.job(owner, company, json!({"title": title})).await["id"]
        .as_i64()
        .unwrap()
}

/// One file that cannot be created during a commit (the review's EMFILE): the job written then
/// and every later one become searchable, and the applied `seq` never runs ahead of them.
async fn a_failed_index_write_loses_no_job(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let first = job_id(&app, &e, c, "Welder").await;
    let f = follower(&app).await;
    until_all_found(&f, &[first], 0, &[], "before the fault").await;

    f.directory.fail_next(1);
    let during = job_id(&app, &e, c, "Plumber").await;
    let seq = newest_seq(&app).await;
    let started = Instant::now();
    while !f.directory.spent() {
        assert!(started.elapsed() < Duration::from_secs(10), "no write");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut ids = vec![first, during];
    for title in ["Painter", "Fitter", "Welder"] {
        ids.push(job_id(&app, &e, c, title).await);
    }
    until_all_found(&f, &ids, seq, &[first, during], "one failed write").await;
    let last = newest_seq(&app).await;
    until_all_found(&f, &ids, last, &ids, "one failed write").await;
    // And the index keeps following: an edit after the repair shows.
    app.patch(
        &format!("/api/jobs/{during}"),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    let closed = newest_seq(&app).await;
    let started = Instant::now();
    while f.index.applied() < closed {
        assert!(started.elapsed() < Duration::from_secs(10), "not applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    ids.retain(|id| *id != during);
    assert_eq!(found(&f.index, &ids), {
        let mut ids = ids.clone();
        ids.sort_unstable();
        ids
    });
    assert!(found(&f.index, &[during]).is_empty(), "the closed job left");
}

/// The indexing thread dies while a batch of many jobs is being added ("An index writer was
/// killed"): the batch and every later job become searchable.
async fn a_failed_index_write_amid_a_batch_loses_no_job(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let f = follower(&app).await;
    f.directory.fail_next(1);
    let mut ids = Vec::new();
    // Written eight at a time: the follower's rounds find several in each batch.
    for chunk in 0..4 {
        let writes =
            (0..8).map(|i| job_id(&app, &e, c, if i % 2 == 0 { "Welder" } else { "Nurse" }));
        ids.extend(futures::future::join_all(writes).await);
        if chunk == 0 {
            let started = Instant::now();
            while !f.directory.spent() {
                assert!(started.elapsed() < Duration::from_secs(10), "no write");
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
    let seq = newest_seq(&app).await;
    until_all_found(&f, &ids, seq, &ids, "a failed batch").await;
}

/// Writes keep failing through the rebuild that follows the first failure, and the one after
/// it (which starts from a new, empty index): once they succeed, every job is searchable.
async fn a_rebuild_that_fails_half_way_is_done_again(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let mut ids = Vec::new();
    for title in ["Welder", "Nurse", "Painter"] {
        ids.push(job_id(&app, &e, c, title).await);
    }
    let f = follower(&app).await;
    f.directory.fail_next(4);
    ids.push(job_id(&app, &e, c, "Plumber").await);
    let started = Instant::now();
    while !f.directory.spent() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "the follower stopped writing with {} faults left",
            f.directory.failing.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    ids.push(job_id(&app, &e, c, "Fitter").await);
    let seq = newest_seq(&app).await;
    until_all_found(&f, &ids, seq, &ids, "a failed rebuild").await;
}

/// The app's log and jobs, with the log trimmed up to `trim_upto` just after the first batch
/// of changes is read, as an API process's hourly trim may do while a far-behind index
/// catches up.
struct TrimmingFeed {
    store: Arc<dyn Store>,
    trim_upto: std::sync::Mutex<Option<i64>>,
}

#[async_trait::async_trait]
impl JobFeed for TrimmingFeed {
    async fn newest(&self) -> anyhow::Result<i64> {
        StoreFeed(self.store.clone()).newest().await
    }
    async fn oldest(&self) -> anyhow::Result<Option<i64>> {
        StoreFeed(self.store.clone()).oldest().await
    }
    async fn changes_after(&self, seq: i64, limit: i64) -> anyhow::Result<Vec<JobChange>> {
        let changes = StoreFeed(self.store.clone())
            .changes_after(seq, limit)
            .await?;
        let trim = self.trim_upto.lock().unwrap().take();
        if let Some(upto) = trim {
            self.store.delete_job_changes_upto(upto, 1_000_000).await?;
        }
        Ok(changes)
    }
    async fn jobs(&self, ids: &[i64]) -> anyhow::Result<Vec<JobRow>> {
        StoreFeed(self.store.clone()).jobs(ids).await
    }
    async fn company_open_jobs(&self, company_id: i64) -> anyhow::Result<Vec<JobRow>> {
        StoreFeed(self.store.clone())
            .company_open_jobs(company_id)
            .await
    }
    async fn open_jobs_after(&self, after_id: i64, limit: i64) -> anyhow::Result<Vec<JobRow>> {
        StoreFeed(self.store.clone())
            .open_jobs_after(after_id, limit)
            .await
    }
}

/// An index 1 000 changes behind, whose log is trimmed past the first batch it reads: the
/// changes it had not read are not skipped; the index is rebuilt and finds every job.
async fn a_log_trimmed_while_the_index_catches_up_is_rebuilt_from(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let first = job_id(&app, &e, c, "Welder").await;
    let index =
        Arc::new(SearchIndex::open_with_directory(Box::new(RamDirectory::create())).expect("open"));
    let feed = StoreFeed(app.state.store.clone());
    jobboard::search::rebuild(&index, &feed).await.unwrap();
    jobboard::search::catch_up(&index, &feed).await.unwrap();
    // A thousand changes of the first job (one batch), then two new jobs.
    let series = match app.backend {
        Backend::Sqlite => format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) \
             INSERT INTO job_changes (job_id) SELECT {first} FROM n"
        ),
        Backend::Postgres => {
            format!("INSERT INTO job_changes (job_id) SELECT {first} FROM generate_series(1, 1000)")
        }
    };
    app.exec(&series).await;
    let skipped = job_id(&app, &e, c, "Plumber").await;
    let after = job_id(&app, &e, c, "Painter").await;
    let trim_upto = newest_seq(&app).await - 1;
    let trimming = TrimmingFeed {
        store: app.state.store.clone(),
        trim_upto: std::sync::Mutex::new(Some(trim_upto)),
    };
    let caught = jobboard::search::catch_up(&index, &trimming).await;
    assert!(
        caught.is_err(),
        "the trim is noticed: applied {} of {}, {caught:?}",
        index.applied(),
        trim_upto + 1
    );
    let stop = CancellationToken::new();
    tokio::spawn(jobboard::search::follow(
        index.clone(),
        Arc::new(StoreFeed(app.state.store.clone())),
        stop.clone(),
    ));
    let f = Follower {
        index,
        directory: Faulty::default(),
        stop,
    };
    let ids = [first, skipped, after];
    until_all_found(&f, &ids, trim_upto + 1, &ids, "a trimmed log").await;
}

/// A company's change (a rename) re-reads only its open jobs; its closed jobs stay out of the
/// index and its open ones carry the new name.
async fn a_company_change_reads_only_its_open_jobs(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let open = job_id(&app, &e, c, "Welder").await;
    let closed = job_id(&app, &e, c, "Painter").await;
    app.patch(
        &format!("/api/jobs/{closed}"),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    let read: Vec<i64> = app
        .state
        .store
        .company_open_jobs(c)
        .await
        .unwrap()
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(read, vec![open], "only the open job is read");

    let f = follower(&app).await;
    app.patch(
        &format!("/api/companies/{c}"),
        Some(&e.token),
        json!({"name": "Acme Welding"}),
    )
    .await
    .expect(200);
    let seq = newest_seq(&app).await;
    let started = Instant::now();
    while f.index.applied() < seq {
        assert!(started.elapsed() < Duration::from_secs(10), "not applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let found = f
        .index
        .search(&JobSearch {
            company_id: Some(c),
            ..JobSearch::default()
        })
        .unwrap();
    let names: Vec<(i64, String)> = found
        .rows
        .iter()
        .map(|r| (r.id, r.company_name.clone()))
        .collect();
    assert_eq!(names, vec![(open, "Acme Welding".to_string())]);
}

/// The app's log and jobs, with the job reads held back while `held` is set (a read stuck on
/// a lock, a slow database).
struct HeldFeed {
    store: Arc<dyn Store>,
    held: tokio::sync::watch::Receiver<bool>,
}

#[async_trait::async_trait]
impl JobFeed for HeldFeed {
    async fn newest(&self) -> anyhow::Result<i64> {
        StoreFeed(self.store.clone()).newest().await
    }
    async fn oldest(&self) -> anyhow::Result<Option<i64>> {
        StoreFeed(self.store.clone()).oldest().await
    }
    async fn changes_after(&self, seq: i64, limit: i64) -> anyhow::Result<Vec<JobChange>> {
        StoreFeed(self.store.clone())
            .changes_after(seq, limit)
            .await
    }
    async fn jobs(&self, ids: &[i64]) -> anyhow::Result<Vec<JobRow>> {
        let mut held = self.held.clone();
        let _ = held.wait_for(|held| !*held).await;
        StoreFeed(self.store.clone()).jobs(ids).await
    }
    async fn company_open_jobs(&self, company_id: i64) -> anyhow::Result<Vec<JobRow>> {
        StoreFeed(self.store.clone())
            .company_open_jobs(company_id)
            .await
    }
    async fn open_jobs_after(&self, after_id: i64, limit: i64) -> anyhow::Result<Vec<JobRow>> {
        StoreFeed(self.store.clone())
            .open_jobs_after(after_id, limit)
            .await
    }
}

/// A round that hangs reading the jobs a change names: the index is ready until the change
/// has waited 10 s unapplied (CONTRACT §4), then not (`behind`), and ready again once the
/// change is applied.
async fn a_change_unapplied_for_10_s_makes_the_index_not_ready(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    job_id(&app, &e, c, "Welder").await;
    let (hold, held) = tokio::sync::watch::channel(false);
    let index =
        Arc::new(SearchIndex::open_with_directory(Box::new(RamDirectory::create())).expect("open"));
    let stop = CancellationToken::new();
    let _stop = stop.clone().drop_guard();
    tokio::spawn(jobboard::search::follow(
        index.clone(),
        Arc::new(HeldFeed {
            store: app.state.store.clone(),
            held,
        }),
        stop,
    ));
    let started = Instant::now();
    while index.readiness() != "ok" {
        assert!(started.elapsed() < Duration::from_secs(30), "never ready");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    hold.send_replace(true);
    let held_job = job_id(&app, &e, c, "Plumber").await;
    let written = Instant::now();
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert_eq!(index.readiness(), "ok", "8 s is within the 10 s allowed");
    loop {
        let readiness = index.readiness();
        if readiness == "behind" {
            break;
        }
        assert!(
            written.elapsed() < Duration::from_secs(12),
            "still {readiness} {:?} after the write",
            written.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(written.elapsed() > Duration::from_secs(10));

    hold.send_replace(false);
    let seq = newest_seq(&app).await;
    let started = Instant::now();
    while index.readiness() != "ok" {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "not ready again"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(index.applied() >= seq);
    assert_eq!(found(&index, &[held_job]), vec![held_job]);
}
