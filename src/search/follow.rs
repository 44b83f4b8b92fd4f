//! Keeping the index in step with the database: the job-change log applied in order, and the
//! rebuild from the tables.

use super::SearchIndex;
use crate::store::{JobChange, JobLogStore, JobRow};
use crate::telemetry::{SEARCH_INDEX_APPLIED_SEQ, SEARCH_INDEX_APPLY_SECONDS, SEARCH_INDEX_LAG};
use async_trait::async_trait;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Log rows applied in one commit at most.
const BATCH: i64 = 1000;
/// Open jobs read per page of a rebuild.
const REBUILD_PAGE: i64 = 1000;
/// The follower looks at the log at least this often, nudged or not: how soon this process's
/// index applies a change another process wrote, when no search asks for it sooner (a round
/// that finds nothing new is a few indexed reads of the log).
const TICK: Duration = Duration::from_millis(250);
/// The longest wait between rounds while they fail.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A job change that has waited unapplied this long makes `/readyz` 503 (docs/api.md Index).
const UNAPPLIED_LIMIT: Duration = Duration::from_secs(10);

/// What the follower last saw, for `/readyz`.
#[derive(Default)]
pub(super) struct Following {
    /// The last round failed.
    failed: bool,
    /// The newest log `seq` seen unapplied, and when it was first seen so.
    waiting: Option<(i64, Instant)>,
}

impl SearchIndex {
    /// `/readyz`'s `checks.search`: `ok`, or why not: `catching_up` (it has not applied the
    /// log as it was at start), `failing` (the follower's last round failed) or `behind` (the
    /// newest change it saw has waited unapplied for more than [`UNAPPLIED_LIMIT`]).
    pub fn readiness(&self) -> &'static str {
        if !self.is_caught_up() {
            return "catching_up";
        }
        let following = self
            .following
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if following.failed {
            return "failing";
        }
        match following.waiting {
            Some((seq, since)) if seq > self.applied() && since.elapsed() > UNAPPLIED_LIMIT => {
                "behind"
            }
            _ => "ok",
        }
    }

    /// Records the follower's round: whether it failed, and the newest `seq` in the log then.
    pub(super) fn record_round(&self, failed: bool, newest: Option<i64>) {
        self.following
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .failed = failed;
        if let Some(newest) = newest {
            self.saw_newest(newest);
        }
    }

    /// Records the newest `seq` in the log, seen at the start or the end of a round: a change
    /// seen unapplied starts its clock, so a round that hangs (a stuck read, a slow rebuild)
    /// turns `/readyz` 503 once it has waited [`UNAPPLIED_LIMIT`].
    fn saw_newest(&self, newest: i64) {
        let mut following = self
            .following
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let applied = self.applied();
        following.waiting = match following.waiting {
            // The change first seen waiting still waits: its clock runs on.
            Some((seq, since)) if seq > applied => Some((seq, since)),
            _ if newest > applied => Some((newest, Instant::now())),
            _ => None,
        };
    }
}

/// What the index needs from the database: the log and the jobs it names.
#[async_trait]
pub trait JobFeed: Send + Sync {
    /// The newest `seq` in the log (0: empty).
    async fn newest(&self) -> anyhow::Result<i64>;
    /// The oldest `seq` still in the log.
    async fn oldest(&self) -> anyhow::Result<Option<i64>>;
    /// Up to `limit` log rows after `seq`, in order.
    async fn changes_after(&self, seq: i64, limit: i64) -> anyhow::Result<Vec<JobChange>>;
    /// The jobs with these ids that exist, any status.
    async fn jobs(&self, ids: &[i64]) -> anyhow::Result<Vec<JobRow>>;
    /// The open jobs of a company.
    async fn company_open_jobs(&self, company_id: i64) -> anyhow::Result<Vec<JobRow>>;
    /// Up to `limit` open jobs with an id above `after_id`, by id.
    async fn open_jobs_after(&self, after_id: i64, limit: i64) -> anyhow::Result<Vec<JobRow>>;
}

/// The feed of a store.
pub struct StoreFeed<S: ?Sized>(pub Arc<S>);

#[async_trait]
impl<S: JobLogStore + ?Sized + 'static> JobFeed for StoreFeed<S> {
    async fn newest(&self) -> anyhow::Result<i64> {
        Ok(self.0.newest_job_change().await?)
    }
    async fn oldest(&self) -> anyhow::Result<Option<i64>> {
        Ok(self.0.oldest_job_change().await?)
    }
    async fn changes_after(&self, seq: i64, limit: i64) -> anyhow::Result<Vec<JobChange>> {
        Ok(self.0.job_changes_after(seq, limit).await?)
    }
    async fn jobs(&self, ids: &[i64]) -> anyhow::Result<Vec<JobRow>> {
        Ok(self.0.jobs_by_ids(ids).await?)
    }
    async fn company_open_jobs(&self, company_id: i64) -> anyhow::Result<Vec<JobRow>> {
        Ok(self.0.company_open_jobs(company_id).await?)
    }
    async fn open_jobs_after(&self, after_id: i64, limit: i64) -> anyhow::Result<Vec<JobRow>> {
        Ok(self.0.open_jobs_after(after_id, limit).await?)
    }
}

/// Runs a blocking index write off the async threads.
async fn blocking<F>(index: &Arc<SearchIndex>, f: F) -> anyhow::Result<()>
where
    F: FnOnce(&SearchIndex) -> anyhow::Result<()> + Send + 'static,
{
    let index = index.clone();
    tokio::task::spawn_blocking(move || f(&index))
        .await
        .map_err(|e| anyhow::anyhow!("a search index write panicked: {e}"))?
}

/// Rebuilds the index from the tables: the newest log `seq` first, then every open job, so
/// that following the log from that `seq` brings in whatever changed during the reading.
/// Searches read the index's last commit until the rebuild commits. A rebuild that fails
/// leaves the index marked for another; one that failed to write starts the next from a new,
/// empty index (so a folder removed or damaged under the process is made again).
pub async fn rebuild(index: &Arc<SearchIndex>, feed: &dyn JobFeed) -> anyhow::Result<u64> {
    let started = Instant::now();
    index.mark_stale();
    blocking(index, |i| i.begin_rebuild()).await?;
    let from = feed.newest().await?;
    let mut after = 0;
    let mut first = true;
    let mut documents = 0u64;
    loop {
        let page = feed.open_jobs_after(after, REBUILD_PAGE).await?;
        let Some(last) = page.last() else { break };
        after = last.id;
        documents += page.len() as u64;
        let clear = std::mem::take(&mut first);
        blocking(index, move |i| i.apply(&[], &[], &page, -1, clear)).await?;
    }
    let clear = first;
    blocking(index, move |i| i.apply(&[], &[], &[], from, clear)).await?;
    index.end_rebuild();
    tracing::info!(documents, seq = from, elapsed = ?started.elapsed(), dir = %index.dir().display(),
        "search index rebuilt from the database");
    Ok(documents)
}

/// Applies the log after the index's last `seq` until none is left; returns the newest `seq`
/// applied. Fails, leaving the index marked for a rebuild, when the log was trimmed past the
/// index's last `seq` while it read it (rows it had not read may be gone).
pub async fn catch_up(index: &Arc<SearchIndex>, feed: &dyn JobFeed) -> anyhow::Result<i64> {
    loop {
        let from = index.applied();
        let changes = feed.changes_after(from, BATCH).await?;
        let Some(last) = changes.last().map(|c| c.seq) else {
            return Ok(from);
        };
        // The log is trimmed from its oldest row: if it still reaches back to the row after
        // `from` now, it did when the batch was read.
        if let Some(oldest) = feed.oldest().await?
            && oldest > from + 1
        {
            index.mark_stale();
            anyhow::bail!(
                "the job-change log was trimmed past the search index's last change ({from}; \
                 the oldest left is {oldest}) while it was read; the index is rebuilt from the \
                 database"
            );
        }
        let started = Instant::now();
        let mut touched: BTreeSet<i64> = BTreeSet::new();
        let mut companies: BTreeSet<i64> = BTreeSet::new();
        for c in &changes {
            touched.extend(c.job_id);
            companies.extend(c.company_id);
        }
        let ids: Vec<i64> = touched.iter().copied().collect();
        let mut rows: BTreeMap<i64, JobRow> = feed
            .jobs(&ids)
            .await?
            .into_iter()
            .map(|r| (r.id, r))
            .collect();
        // A company's change (a rename, a deletion) replaces each of its documents: every one
        // is deleted by the company's term, and its open jobs are read and added again.
        for company in &companies {
            for row in feed.company_open_jobs(*company).await? {
                rows.insert(row.id, row);
            }
        }
        let touched: Vec<i64> = touched.into_iter().collect();
        let companies: Vec<i64> = companies.into_iter().collect();
        let rows: Vec<JobRow> = rows.into_values().collect();
        blocking(index, move |i| {
            i.apply(&touched, &companies, &rows, last, false)
        })
        .await?;
        metrics::histogram!(SEARCH_INDEX_APPLY_SECONDS).record(started.elapsed().as_secs_f64());
    }
}

/// Whether the index must be rebuilt before it follows the log: marked so, the log no longer
/// reaches back to the index's last `seq`, or the index has applied changes the log does not
/// have (the folder was kept while the database was replaced or restored from a backup).
async fn needs_rebuild(
    index: &SearchIndex,
    feed: &dyn JobFeed,
    newest: i64,
) -> anyhow::Result<bool> {
    if index.is_stale() {
        return Ok(true);
    }
    let applied = index.applied();
    if applied > newest {
        tracing::warn!(
            applied,
            newest,
            "the search index has applied job changes the database's log does not have; rebuilding it"
        );
        return Ok(true);
    }
    Ok(match feed.oldest().await? {
        Some(oldest) => oldest > applied + 1 && newest > applied,
        None => false,
    })
}

/// One round: rebuild if needed, apply the log, report the lag; returns the newest `seq` in
/// the log after applying it.
async fn round(index: &Arc<SearchIndex>, feed: &dyn JobFeed) -> anyhow::Result<i64> {
    let newest = feed.newest().await?;
    index.saw_newest(newest);
    if needs_rebuild(index, feed, newest).await? {
        rebuild(index, feed).await?;
    }
    let applied = catch_up(index, feed).await?;
    let newest = feed.newest().await?;
    metrics::gauge!(SEARCH_INDEX_LAG).set((newest - applied).max(0) as f64);
    metrics::gauge!(SEARCH_INDEX_APPLIED_SEQ).set(applied as f64);
    Ok(newest)
}

/// The wait after the `failures`-th failed round in a row: [`TICK`] doubling to [`MAX_BACKOFF`].
fn backoff(failures: u32) -> Duration {
    TICK.saturating_mul(1 << failures.saturating_sub(1).min(8))
        .min(MAX_BACKOFF)
}

/// Follows the log into the index until `stop`: a round at start (the index is caught up, for
/// `/readyz`, once it has applied what the log held then), then one per nudge or [`TICK`];
/// after a failed round, the next comes after a backoff ([`TICK`] doubling to
/// [`MAX_BACKOFF`]), nudged or not. Each round's outcome is recorded for `/readyz`.
pub async fn follow(index: Arc<SearchIndex>, feed: Arc<dyn JobFeed>, stop: CancellationToken) {
    let mut failures: u32 = 0;
    let mut said = Said::default();
    loop {
        match round(&index, &*feed).await {
            Ok(newest) => {
                index.record_round(false, Some(newest));
                if failures > 0 {
                    tracing::info!("the search index follows the job-change log again");
                    failures = 0;
                    said = Said::default();
                }
                if !index.caught_up.swap(true, Ordering::SeqCst) {
                    tracing::info!(
                        seq = index.applied(),
                        documents = index.documents(),
                        "the search index has caught up with the job-change log"
                    );
                }
            }
            Err(e) => {
                // The lag still grows while the index cannot follow: the alert reads it.
                let newest = match feed.newest().await {
                    Ok(newest) => {
                        metrics::gauge!(SEARCH_INDEX_LAG)
                            .set((newest - index.applied()).max(0) as f64);
                        Some(newest)
                    }
                    Err(e) => {
                        tracing::debug!(
                            error = format!("{e:#}"),
                            "reading the newest job change failed"
                        );
                        None
                    }
                };
                index.record_round(true, newest);
                let error = format!("{e:#}");
                if said.is_new(&error) {
                    tracing::error!(
                        error,
                        failures,
                        "applying the job-change log to the search index failed; retrying after \
                         250 ms, doubling to every 5 s while it fails"
                    );
                }
                failures = failures.saturating_add(1);
            }
        }
        if failures > 0 {
            tokio::select! {
                _ = tokio::time::sleep(backoff(failures)) => {}
                _ = stop.cancelled() => return,
            }
        } else {
            tokio::select! {
                _ = index.nudge.notified() => {}
                _ = tokio::time::sleep(TICK) => {}
                _ = stop.cancelled() => return,
            }
        }
    }
}

/// What a failing follower has logged: each different error once while the failures last, so
/// that a write of the index failing after a read of the database failed is not hidden behind
/// the first, and a failure repeated every 5 s is not logged every 5 s.
#[derive(Default)]
struct Said {
    errors: Vec<String>,
}

impl Said {
    /// Whether `error` has not been logged since the follower last succeeded (and records it).
    fn is_new(&mut self, error: &str) -> bool {
        if self.errors.iter().any(|e| e == error) {
            return false;
        }
        // A bound, for errors that differ every time (a number in the text).
        if self.errors.len() < 16 {
            self.errors.push(error.to_string());
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failing_follower_logs_each_different_error_once() {
        let mut said = Said::default();
        assert!(said.is_new("reading the changed jobs: Too many open files"));
        assert!(!said.is_new("reading the changed jobs: Too many open files"));
        assert!(said.is_new("committing the search index: Too many open files"));
        assert!(!said.is_new("reading the changed jobs: Too many open files"));
        assert!(!said.is_new("committing the search index: Too many open files"));
        let mut said = Said::default();
        assert!(said.is_new("reading the changed jobs: Too many open files"));
    }

    #[test]
    fn a_failing_follower_waits_250_ms_doubling_to_5_s() {
        let waits: Vec<u128> = (1..=8).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(waits, [250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }
}
