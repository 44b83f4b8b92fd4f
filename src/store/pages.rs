//! What the public pages need from the store ([`PageStore`]): whether a job that is not there was
//! deleted, and the open jobs the sitemap lists.

use super::StoreResult;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// An open job as the sitemap lists it.
#[derive(Debug, Clone)]
pub struct SitemapJob {
    pub id: i64,
    pub title: String,
    pub updated_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// The open jobs at an instant: how many, and the earliest `expires_at` among them (when the
/// count next changes without a write).
#[derive(Debug, Clone, Copy)]
pub struct OpenJobs {
    pub count: i64,
    pub first_expiry: Option<DateTime<Utc>>,
}

#[async_trait]
pub trait PageStore: Send + Sync {
    /// Whether a job with this id was deleted (a deleted job's id is never a job's again).
    async fn job_deleted(&self, id: i64) -> StoreResult<bool>;

    /// The jobs open at `now` (not past their `expires_at`): how many, and the first to expire.
    async fn open_jobs(&self, now: DateTime<Utc>) -> StoreResult<OpenJobs>;

    /// Where each run of `every` jobs open at `now`, by id, starts: the ids of the first, the
    /// `every + 1`-th, the `2 × every + 1`-th … of them, in one walk of the open jobs.
    async fn open_job_starts(&self, now: DateTime<Utc>, every: i64) -> StoreResult<Vec<i64>>;

    /// Up to `limit` of the jobs open at `now` with ids from `from` and below `before`, by id.
    async fn open_jobs_in(
        &self,
        now: DateTime<Utc>,
        from: i64,
        before: i64,
        limit: i64,
    ) -> StoreResult<Vec<SitemapJob>>;
}
