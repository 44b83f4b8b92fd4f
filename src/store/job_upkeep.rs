//! The upkeep's work on jobs ([`JobUpkeepStore`], run by the worker every 30 s through
//! [`run_job_upkeep`]): open jobs past their `expires_at` are expired with a `job.expired` to
//! each member of the company, a `job.expiring` goes to each member `JOB_EXPIRY_NOTICE_DAYS`
//! before, and jobs written before jobs expired get their `expires_at`.
//!
//! Each batch is one transaction with its events (transactional outbox) and its job-change log
//! rows (the search indexes follow them). The events' ids are derived from what they are about
//! (`job-expired-{job}-{expires_at}-{user}`, docs/guarantee.md), and the outbox refuses an id it
//! has, so any number of workers may run this at once, and twice in a row, and each event is
//! written once. On PostgreSQL concurrent workers also skip each other's rows (`SKIP LOCKED`)
//! rather than wait for them.
//!
//! What is due is read from the upkeep's agenda (`job_expiries`, migration 0015): one row per
//! open job and `expires_at`, written with every write that leaves a job open with one, so the
//! upkeep never scans the jobs themselves; a row whose job has since changed is dropped when
//! the upkeep meets it.

use super::StoreResult;
use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};

/// What one batch did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpkeepBatch {
    /// Rows of the agenda (or jobs, for the backfill) the batch took: fewer than its limit
    /// means nothing more is due now.
    pub taken: u64,
    /// Jobs expired, noticed or given an `expires_at`.
    pub jobs: u64,
    /// Events written (a second writing of an id writes nothing and is not counted).
    pub events: u64,
}

/// The upkeep's reads and writes of jobs and applications, each call one batch in one
/// transaction.
#[async_trait]
pub trait JobUpkeepStore: Send + Sync {
    /// Expires up to `limit` open jobs whose `expires_at` is at or before `now`, with one
    /// `job.expired` per member of the company.
    async fn expire_jobs(&self, now: DateTime<Utc>, limit: i64) -> StoreResult<UpkeepBatch>;
    /// Writes one `job.expiring` per member for up to `limit` open jobs whose `expires_at` is
    /// after `now` and at or before `horizon`, once per job and `expires_at`.
    async fn write_expiry_notices(
        &self,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<UpkeepBatch>;
    /// Reads up to `limit` more jobs, by id, from where the last call stopped, and gives each
    /// open one without an `expires_at` (written before jobs expired) `expires_at`.
    async fn backfill_expiries(
        &self,
        expires_at: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<UpkeepBatch>;
    /// Deletes up to `limit` applications in a final status (`hired`, `rejected`,
    /// `withdrawn`) whose last change is before `cutoff`, with their history (as their
    /// candidate's `DELETE` does: a queued event for one ends as `missing`); how many went.
    async fn delete_retired_applications(
        &self,
        cutoff: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<u64>;
}

/// How the upkeep runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobUpkeepSettings {
    /// `JOB_POSTING_DAYS`: what the backfill gives a job.
    pub posting: Duration,
    /// `JOB_EXPIRY_NOTICE_DAYS`; zero writes no notices.
    pub notice: Duration,
    /// Rows per batch (one transaction).
    pub batch: i64,
    /// Backfill batches per run, so that a large backfill never delays the expiries of the
    /// next runs by more than that.
    pub backfill_batches: u32,
}

impl JobUpkeepSettings {
    /// The settings of `JOB_POSTING_DAYS` and `JOB_EXPIRY_NOTICE_DAYS`, in batches of 500.
    pub fn new(posting_days: u64, notice_days: u64) -> JobUpkeepSettings {
        JobUpkeepSettings {
            posting: Duration::days(posting_days as i64),
            notice: Duration::days(notice_days as i64),
            batch: 500,
            backfill_batches: 20,
        }
    }
}

/// What one run did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobUpkeepReport {
    pub expired: u64,
    pub expired_events: u64,
    pub noticed: u64,
    pub notice_events: u64,
    pub backfilled: u64,
}

/// One run of the upkeep's job steps as of `now`: expiries first (the most pressing), then
/// notices, then a bounded part of the backfill. Each step goes batch by batch until a batch
/// comes back short.
pub async fn run_job_upkeep(
    store: &dyn JobUpkeepStore,
    settings: &JobUpkeepSettings,
    now: DateTime<Utc>,
) -> StoreResult<JobUpkeepReport> {
    let mut report = JobUpkeepReport::default();
    let full = |b: &UpkeepBatch| b.taken >= settings.batch as u64;
    loop {
        let b = store.expire_jobs(now, settings.batch).await?;
        report.expired += b.jobs;
        report.expired_events += b.events;
        if !full(&b) {
            break;
        }
    }
    if settings.notice > Duration::zero() {
        loop {
            let b = store
                .write_expiry_notices(now, now + settings.notice, settings.batch)
                .await?;
            report.noticed += b.jobs;
            report.notice_events += b.events;
            if !full(&b) {
                break;
            }
        }
    }
    for _ in 0..settings.backfill_batches {
        let b = store
            .backfill_expiries(now + settings.posting, settings.batch)
            .await?;
        report.backfilled += b.jobs;
        if !full(&b) {
            break;
        }
    }
    Ok(report)
}
