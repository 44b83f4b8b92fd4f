//! The public pages' reads ([`PageStore`]): deleted jobs, and the open jobs the sitemap lists.

use super::{Db, S};
use crate::store::*;
use anyhow::Context;
use chrono::{DateTime, Utc};

/// Recorded in a job's deletion transaction (see `jobs.rs`).
pub(super) const DELETED_INSERT: &str =
    "INSERT INTO deleted_jobs (id, deleted_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING";
const DELETED: &str = "SELECT EXISTS (SELECT 1 FROM deleted_jobs WHERE id = $1)";
/// Open as the jobs read at `$1`: an open job past its date is expired.
const OPEN_COUNT: &str = "SELECT COUNT(*), MIN(expires_at) FROM jobs \
     WHERE status = 'open' AND (expires_at IS NULL OR expires_at > $1)";
/// Where each run of `$2` open jobs by id starts: one walk of the index of open jobs by id
/// (migration 0024), no job's row read.
const OPEN_STARTS: &str = "SELECT id FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY id) AS n \
     FROM jobs WHERE status = 'open' AND (expires_at IS NULL OR expires_at > $1)) AS open_jobs \
     WHERE (n - 1) % $2 = 0 ORDER BY id";
/// Up to `$4` open jobs with ids in [`$2`, `$3`): a range of the index, and their rows only.
const OPEN_IN: &str = "SELECT id, title, updated_at, expires_at FROM jobs \
     WHERE status = 'open' AND (expires_at IS NULL OR expires_at > $1) AND id >= $2 AND id < $3 \
     ORDER BY id LIMIT $4";

#[async_trait::async_trait]
impl PageStore for S {
    async fn job_deleted(&self, id: i64) -> StoreResult<bool> {
        Ok(sqlx::query_scalar::<Db, bool>(DELETED)
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .with_context(|| format!("reading whether job {id} was deleted"))?)
    }

    async fn open_jobs(&self, now: DateTime<Utc>) -> StoreResult<OpenJobs> {
        let (count, first_expiry) = sqlx::query_as::<Db, (i64, Option<DateTime<Utc>>)>(OPEN_COUNT)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .context("counting the open jobs")?;
        Ok(OpenJobs {
            count,
            first_expiry,
        })
    }

    async fn open_job_starts(&self, now: DateTime<Utc>, every: i64) -> StoreResult<Vec<i64>> {
        Ok(sqlx::query_scalar::<Db, i64>(OPEN_STARTS)
            .bind(now)
            .bind(every.max(1))
            .fetch_all(&self.pool)
            .await
            .with_context(|| format!("finding where each {every} open jobs start"))?)
    }

    async fn open_jobs_in(
        &self,
        now: DateTime<Utc>,
        from: i64,
        before: i64,
        limit: i64,
    ) -> StoreResult<Vec<SitemapJob>> {
        let rows =
            sqlx::query_as::<Db, (i64, String, DateTime<Utc>, Option<DateTime<Utc>>)>(OPEN_IN)
                .bind(now)
                .bind(from)
                .bind(before)
                .bind(limit)
                .fetch_all(&self.pool)
                .await
                .with_context(|| format!("reading the open jobs from id {from} to {before}"))?;
        Ok(rows
            .into_iter()
            .map(|(id, title, updated_at, expires_at)| SitemapJob {
                id,
                title,
                updated_at,
                expires_at,
            })
            .collect())
    }
}
