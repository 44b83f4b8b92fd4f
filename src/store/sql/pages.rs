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
/// By the primary key, so that a file of the sitemap costs a walk of the key to its start and
/// its own rows, whatever the size of the board.
const OPEN_BY_ID: &str = "SELECT id, title, updated_at, expires_at FROM jobs \
     WHERE status = 'open' AND (expires_at IS NULL OR expires_at > $1) \
     ORDER BY id LIMIT $2 OFFSET $3";

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
    ) -> StoreResult<Vec<SitemapJob>> {
        let rows =
            sqlx::query_as::<Db, (i64, String, DateTime<Utc>, Option<DateTime<Utc>>)>(OPEN_BY_ID)
                .bind(now)
                .bind(limit)
                .bind(skip)
                .fetch_all(&self.pool)
                .await
                .with_context(|| format!("reading {limit} open jobs after the first {skip}"))?;
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
