//! The job-change log ([`JobLogStore`]): what a search index needs from the database to follow
//! it. Every job write (create, patch, close, reopen, delete) and every company rename or
//! deletion adds a row in its own transaction; the rows commit in `seq` order on both backends
//! (see migration 0012), so a reader that has seen `seq` N will never see a lower one appear.

use super::{JobRow, StoreResult};
use async_trait::async_trait;

/// One row of the log: what changed (a job, or every job of a company), not how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct JobChange {
    pub seq: i64,
    pub job_id: Option<i64>,
    pub company_id: Option<i64>,
}

/// Reads of the log and of the jobs it names, for keeping a search index in step.
#[async_trait]
pub trait JobLogStore: Send + Sync {
    /// The newest `seq` in the log (0 when it is empty): one index read.
    async fn newest_job_change(&self) -> StoreResult<i64>;
    /// The oldest `seq` still in the log, if any.
    async fn oldest_job_change(&self) -> StoreResult<Option<i64>>;
    /// Up to `limit` rows after `seq`, in order.
    async fn job_changes_after(&self, seq: i64, limit: i64) -> StoreResult<Vec<JobChange>>;
    /// The jobs with these ids that exist, whatever their status.
    async fn jobs_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<JobRow>>;
    /// The open jobs of the company (a changed company's documents are replaced by these).
    async fn company_open_jobs(&self, company_id: i64) -> StoreResult<Vec<JobRow>>;
    /// Up to `limit` open jobs with an id above `after_id`, by id: a rebuild's pages.
    async fn open_jobs_after(&self, after_id: i64, limit: i64) -> StoreResult<Vec<JobRow>>;
    /// Deletes up to `limit` of the oldest rows with a `seq` at most `upto`.
    async fn delete_job_changes_upto(&self, upto: i64, limit: i64) -> StoreResult<u64>;
}
