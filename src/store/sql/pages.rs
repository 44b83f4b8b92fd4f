//! The public pages' reads ([`PageStore`]): deleted jobs, and the open jobs the sitemap lists.

use super::{Db, S};
use crate::store::*;
use anyhow::Context;
use chrono::{DateTime, Utc};
use futures::TryStreamExt;

/// Recorded in a job's deletion transaction (see `jobs.rs`).
pub(super) const DELETED_INSERT: &str =
    "INSERT INTO deleted_jobs (id, deleted_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING";
const DELETED: &str = "SELECT EXISTS (SELECT 1 FROM deleted_jobs WHERE id = $1)";
/// Open as the jobs read at `$1`: an open job past its date is expired.
const OPEN_COUNT: &str = "SELECT COUNT(*), MIN(expires_at) FROM jobs \
     WHERE status = 'open' AND (expires_at IS NULL OR expires_at > $1)";
/// Where the open jobs after the first `$2` start: a walk of the index of open jobs by id
/// (migration 0024), no job's row read.
const OPEN_START: &str = "SELECT id FROM jobs \
     WHERE status = 'open' AND (expires_at IS NULL OR expires_at > $1) \
     ORDER BY id LIMIT 1 OFFSET $2";
/// Up to `$3` open jobs from id `$2` on: their rows only.
const OPEN_FROM: &str = "SELECT id, title, updated_at, expires_at FROM jobs \
     WHERE status = 'open' AND (expires_at IS NULL OR expires_at > $1) AND id >= $2 \
     ORDER BY id LIMIT $3";

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

    async fn open_jobs_by_id(
        &self,
        now: DateTime<Utc>,
        skip: i64,
        limit: i64,
        each: &mut (dyn FnMut(SitemapJob) + Send),
    ) -> StoreResult<()> {
        let start: Option<i64> = sqlx::query_scalar::<Db, i64>(OPEN_START)
            .bind(now)
            .bind(skip)
            .fetch_optional(&self.pool)
            .await
            .with_context(|| format!("finding the open job after the first {skip}"))?;
        let Some(start) = start else {
            return Ok(());
        };
        // Streamed, so that a file's jobs are never all in memory beside what is made of them.
        let mut rows =
            sqlx::query_as::<Db, (i64, String, DateTime<Utc>, Option<DateTime<Utc>>)>(OPEN_FROM)
                .bind(now)
                .bind(start)
                .bind(limit)
                .fetch(&self.pool);
        while let Some((id, title, updated_at, expires_at)) = rows
            .try_next()
            .await
            .with_context(|| format!("reading {limit} open jobs from id {start}"))?
        {
            each(SitemapJob {
                id,
                title,
                updated_at,
                expires_at,
            });
        }
        Ok(())
    }
}
