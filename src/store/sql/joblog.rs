//! The job-change log: its rows, written in each job write's transaction, and the reads a
//! search index follows it with ([`JobLogStore`]).

use super::{D, Db, S, Tx, sql};
use crate::store::dialect::Dialect;
use crate::store::*;
use anyhow::Context;
use sqlx::QueryBuilder;

const CHANGE_INSERT: &str = "INSERT INTO job_changes (job_id, company_id) VALUES ($1, $2)";
const NEWEST: &str = "SELECT COALESCE(MAX(seq), 0) FROM job_changes";
const OLDEST: &str = "SELECT MIN(seq) FROM job_changes";
const AFTER: &str =
    "SELECT seq, job_id, company_id FROM job_changes WHERE seq > $1 ORDER BY seq LIMIT $2";
const TRIM: &str = "DELETE FROM job_changes WHERE seq IN (SELECT seq FROM job_changes \
     WHERE seq <= $1 ORDER BY seq LIMIT $2)";
const COMPANY_OPEN_JOBS: &str = const_format::concatcp!(
    sql::JOB_SELECT,
    " WHERE j.company_id = $1 AND j.status = 'open'"
);
const OPEN_AFTER: &str = const_format::concatcp!(
    sql::JOB_SELECT,
    " WHERE j.status = 'open' AND j.id > $1 ORDER BY j.id LIMIT $2"
);

/// What a log row names.
pub(super) enum Changed {
    Job(i64),
    /// A rename or deletion: every job of the company.
    Company(i64),
}

impl S {
    /// Adds the log row of a write to its transaction, as its last statement before the commit
    /// (on PostgreSQL under a lock held to the commit, so that rows commit in `seq` order).
    pub(super) async fn log_change(tx: &mut Tx, changed: Changed) -> StoreResult<()> {
        if let Some(lock) = D::JOB_LOG_LOCK {
            sqlx::query(lock)
                .execute(&mut **tx)
                .await
                .context("taking the job-change log's lock")?;
        }
        let (job, company) = match changed {
            Changed::Job(id) => (Some(id), None),
            Changed::Company(id) => (None, Some(id)),
        };
        sqlx::query(CHANGE_INSERT)
            .bind(job)
            .bind(company)
            .execute(&mut **tx)
            .await
            .context("writing the job-change log")?;
        Ok(())
    }

    /// [`S::log_change`] for many jobs at once (the upkeep's batches), in one statement.
    pub(super) async fn log_job_changes(tx: &mut Tx, jobs: &[i64]) -> StoreResult<()> {
        if jobs.is_empty() {
            return Ok(());
        }
        if let Some(lock) = D::JOB_LOG_LOCK {
            sqlx::query(lock)
                .execute(&mut **tx)
                .await
                .context("taking the job-change log's lock")?;
        }
        let mut qb = QueryBuilder::<Db>::new("INSERT INTO job_changes (job_id) ");
        qb.push_values(jobs, |mut b, id| {
            b.push_bind(*id);
        });
        qb.build()
            .execute(&mut **tx)
            .await
            .context("writing the job-change log")?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl JobLogStore for S {
    async fn newest_job_change(&self) -> StoreResult<i64> {
        Ok(sqlx::query_scalar(NEWEST)
            .fetch_one(&self.pool)
            .await
            .context("reading the newest job change")?)
    }

    async fn oldest_job_change(&self) -> StoreResult<Option<i64>> {
        Ok(sqlx::query_scalar(OLDEST)
            .fetch_one(&self.pool)
            .await
            .context("reading the oldest job change")?)
    }

    async fn job_changes_after(&self, seq: i64, limit: i64) -> StoreResult<Vec<JobChange>> {
        Ok(sqlx::query_as::<_, JobChange>(AFTER)
            .bind(seq)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .context("reading the job-change log")?)
    }

    async fn jobs_by_ids(&self, ids: &[i64]) -> StoreResult<Vec<JobRow>> {
        let mut rows = Vec::with_capacity(ids.len());
        for chunk in ids.chunks(500) {
            let mut qb = QueryBuilder::<Db>::new(sql::JOB_SELECT);
            qb.push(" WHERE j.id IN (");
            let mut list = qb.separated(", ");
            for id in chunk {
                list.push_bind(*id);
            }
            qb.push(")");
            rows.extend(
                qb.build_query_as::<JobRow>()
                    .fetch_all(&self.pool)
                    .await
                    .context("reading the changed jobs")?,
            );
        }
        Ok(rows)
    }

    async fn company_open_jobs(&self, company_id: i64) -> StoreResult<Vec<JobRow>> {
        Ok(sqlx::query_as::<_, JobRow>(COMPANY_OPEN_JOBS)
            .bind(company_id)
            .fetch_all(&self.pool)
            .await
            .context("reading a changed company's open jobs")?)
    }

    async fn open_jobs_after(&self, after_id: i64, limit: i64) -> StoreResult<Vec<JobRow>> {
        Ok(sqlx::query_as::<_, JobRow>(OPEN_AFTER)
            .bind(after_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .context("reading open jobs for a rebuild")?)
    }

    async fn delete_job_changes_upto(&self, upto: i64, limit: i64) -> StoreResult<u64> {
        Ok(sqlx::query(TRIM)
            .bind(upto)
            .bind(limit)
            .execute(&self.pool)
            .await
            .context("trimming the job-change log")?
            .rows_affected())
    }
}
