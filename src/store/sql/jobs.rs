//! Jobs. Their search is the search index's, which follows the job-change
//! log; `search_terms` and `title_terms` are still written, so that a release before the index
//! still finds the jobs after a rollback.

use super::joblog::Changed;
use super::{D, Db, S, sql};
use crate::domain::search;
use crate::store::dialect::{Dialect, job_terms};
use crate::store::*;
use chrono::{DateTime, Utc};
use sqlx::Row;

type Query<'q> = sqlx::query::Query<'q, Db, <Db as sqlx::Database>::Arguments<'q>>;

impl S {
    pub(super) async fn create_job(
        &self,
        company_id: i64,
        f: JobFields,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow> {
        let mut tx = self.begin_write().await?;
        let company: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, company_id).await?;
        // Ids follow creation time (the search's newest-first order is the id order): under a
        // lock that orders job inserts, a job is created no earlier than the newest one.
        if let Some(lock) = D::JOB_INSERT_LOCK {
            sqlx::query(lock).execute(&mut *tx).await?;
        }
        let latest: Option<DateTime<Utc>> = sqlx::query_scalar(sql::JOB_LATEST_CREATED)
            .fetch_optional(&mut *tx)
            .await?;
        let now = latest.map_or(crate::timefmt::now(), |l| l.max(crate::timefmt::now()));
        let id: i64 = bind_job(sqlx::query(sql::JOB_INSERT).bind(company_id), &f, &company)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        let row = Self::job_in(&mut *tx, id).await?;
        Self::log_change(&mut tx, Changed::Job(id)).await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    pub(super) async fn job(&self, id: i64) -> StoreResult<JobRow> {
        Self::job_in(&self.pool, id).await
    }

    pub(super) async fn update_job(
        &self,
        id: i64,
        f: JobFields,
        expected: DateTime<Utc>,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<Option<JobRow>> {
        let mut tx = self.begin_write().await?;
        let company: String = sqlx::query_scalar(sql::JOB_COMPANY_NAME)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        let mut now = crate::timefmt::now();
        if now <= expected {
            // updated_at is the version the next merge checks; it must move forward.
            now = expected + chrono::Duration::microseconds(1);
        }
        let done = bind_job(sqlx::query(sql::JOB_UPDATE), &f, &company)
            .bind(now)
            .bind(id)
            .bind(expected)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let row = Self::job_in(&mut *tx, id).await?;
        Self::log_change(&mut tx, Changed::Job(id)).await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(Some(row))
    }

    pub(super) async fn delete_job(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(sql::JOB_DELETE)
            .bind(id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Self::log_change(&mut tx, Changed::Job(id)).await?;
        Self::commit_with(tx, idem, &()).await
    }
}

/// Binds a job's fields in the order `JOB_INSERT` and `JOB_UPDATE` share.
fn bind_job<'q>(query: Query<'q>, f: &'q JobFields, company: &str) -> Query<'q> {
    query
        .bind(f.title.as_str())
        .bind(&f.description)
        .bind(&f.location)
        .bind(f.location.to_lowercase())
        .bind(f.remote)
        .bind(f.salary.min())
        .bind(f.salary.max())
        .bind(f.employment_type.as_str())
        .bind(f.status.as_str())
        .bind(job_terms(f.title.as_str(), &f.description, company))
        .bind(search::document_terms(&[f.title.as_str()]))
}
