//! Jobs: create, read, update, delete, renew and an operator's review. Their search is the
//! search index's, which follows the job-change log; `search_terms` and `title_terms` are still
//! written, so that a release before the index still finds the jobs after a rollback. Every
//! write that leaves a job open with an `expires_at` puts that date on the upkeep's agenda
//! (`job_expiries`, see `job_upkeep.rs`).

use super::joblog::Changed;
use super::{D, Db, S, Tx, sql};
use crate::domain::event::{Decision, Event, EventKind};
use crate::domain::{Conflict, JobStatus, pay_place, search};
use crate::store::dialect::{Dialect, job_terms};
use crate::store::*;
use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row};

type Query<'q> = sqlx::query::Query<'q, Db, <Db as sqlx::Database>::Arguments<'q>>;

impl S {
    pub(super) async fn create_job(
        &self,
        company_id: i64,
        f: JobFields,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow> {
        let mut tx = self.begin_write().await?;
        let company: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, company_id)
            .await
            .with_step(|| format!("locking company {company_id}"))?;
        // Ids follow creation time (the search's newest-first order is the id order): under a
        // lock that orders job inserts, a job is created no earlier than the newest one. The
        // time is the database's clock, read under that lock; the newest job's time stands in
        // only if that clock stepped back (or a job was stamped by a host clock ahead of it,
        // before jobs took the database's).
        if let Some(lock) = D::JOB_INSERT_LOCK {
            sqlx::query(lock)
                .execute(&mut *tx)
                .await
                .step("taking the job inserts' lock")?;
        }
        let latest: Option<DateTime<Utc>> = sqlx::query_scalar(sql::JOB_LATEST_CREATED)
            .fetch_optional(&mut *tx)
            .await
            .step("reading the newest job's creation time")?;
        let clock = Self::clock(&mut *tx).await?;
        let now = latest.map_or(clock, |l| l.max(clock));
        let id: i64 = bind_job(sqlx::query(sql::JOB_INSERT).bind(company_id), &f, &company)
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .step("inserting the job")?
            .try_get(0)
            .step("reading the new job's id")?;
        let row = Self::job_in(&mut *tx, id)
            .await
            .step("reading the new job")?;
        Self::schedule_expiry(&mut tx, &row).await?;
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
            .await
            .with_step(|| format!("reading the company name of job {id}"))?
            .ok_or(StoreError::NotFound)?;
        // updated_at is the version the next merge checks; it must move forward.
        let now = next_version(expected, Self::clock(&mut *tx).await?);
        let done = bind_job(sqlx::query(sql::JOB_UPDATE), &f, &company)
            .bind(now)
            .bind(id)
            .bind(expected)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("updating job {id}"))?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let row = Self::job_in(&mut *tx, id)
            .await
            .with_step(|| format!("reading job {id} after its update"))?;
        Self::schedule_expiry(&mut tx, &row).await?;
        Self::log_change(&mut tx, Changed::Job(id)).await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(Some(row))
    }

    pub(super) async fn delete_job(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(sql::JOB_DELETE)
            .bind(id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("deleting job {id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        sqlx::query(sql::EXPIRY_FORGET_JOB)
            .bind(id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("forgetting the expiry of job {id}"))?;
        // Its page answers 410 from now on, and its sitemap file's date moves.
        let deleted_at = Self::clock(&mut *tx).await?;
        sqlx::query(super::pages::DELETED_INSERT)
            .bind(id)
            .bind(deleted_at)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("recording the deletion of job {id}"))?;
        Self::log_change(&mut tx, Changed::Job(id)).await?;
        Self::commit_with(tx, idem, &()).await
    }

    pub(super) async fn renew_job(
        &self,
        id: i64,
        expires_at: DateTime<Utc>,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow> {
        let mut tx = self.begin_write().await?;
        let (status, _, updated_at) = Self::job_state(&mut tx, id)
            .await
            .with_step(|| format!("locking job {id}"))?;
        // An open job past its date is expired, which is renewable too.
        if !status.is_renewable() {
            return Err(StoreError::Conflict(Conflict::NotRenewable(status)));
        }
        let now = next_version(updated_at, Self::clock(&mut *tx).await?);
        sqlx::query(sql::JOB_RENEW)
            .bind(expires_at)
            .bind(now)
            .bind(id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("renewing job {id}"))?;
        let row = Self::job_in(&mut *tx, id)
            .await
            .with_step(|| format!("reading job {id} after its renewal"))?;
        Self::schedule_expiry(&mut tx, &row).await?;
        Self::log_change(&mut tx, Changed::Job(id)).await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    pub(super) async fn review_job(
        &self,
        id: i64,
        review: Review,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow> {
        let mut tx = self.begin_write().await?;
        let (status, expires_at, updated_at) = Self::job_state(&mut tx, id)
            .await
            .with_step(|| format!("locking job {id}"))?;
        let approve = matches!(review, Review::Approve { .. });
        status
            .reviewed(approve)
            .map_err(|e| StoreError::Conflict(Conflict::JobTransition(e)))?;
        // The approval is the job's opening: its `created_at`, and its default expiry's start.
        let now = next_version(updated_at, Self::clock(&mut *tx).await?);
        match &review {
            Review::Approve { posting } => {
                // A date its members set that is still ahead stands; otherwise it runs from
                // the approval.
                let until = expires_at.filter(|t| *t > now).unwrap_or(now + *posting);
                sqlx::query(sql::JOB_APPROVE)
                    .bind(now)
                    .bind(until)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .with_step(|| format!("approving job {id}"))?;
            }
            Review::Reject { reason } => {
                sqlx::query(sql::JOB_REJECT)
                    .bind(now)
                    .bind(reason)
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .with_step(|| format!("rejecting job {id}"))?;
            }
        }
        let row = Self::job_in(&mut *tx, id)
            .await
            .with_step(|| format!("reading job {id} after its review"))?;
        let decision = if approve {
            Decision::Approved
        } else {
            Decision::Rejected
        };
        let members: Vec<i64> = sqlx::query_scalar(sql::MEMBER_IDS_ORDERED)
            .bind(row.company_id)
            .fetch_all(&mut *tx)
            .await
            .with_step(|| format!("reading the members of the company of job {id}"))?;
        // One job.reviewed per member (docs/guarantee.md), in the decision's transaction.
        for user_id in members {
            let event = Event::new(
                EventKind::JobReviewed {
                    job_id: id,
                    user_id,
                    decision,
                },
                now,
            );
            Self::write_event(&mut tx, &event).await?;
        }
        Self::schedule_expiry(&mut tx, &row).await?;
        Self::log_change(&mut tx, Changed::Job(id)).await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    pub(super) async fn jobs_in_status(
        &self,
        status: JobStatus,
        now: DateTime<Utc>,
        page: Page,
    ) -> StoreResult<(Vec<JobRow>, i64)> {
        // Open and expired as the jobs read (an open job past its date is expired), the other
        // statuses as stored.
        let filter = |qb: &mut QueryBuilder<'_, Db>| match status {
            JobStatus::Open => {
                qb.push(" WHERE j.status = 'open' AND (j.expires_at IS NULL OR j.expires_at > ")
                    .push_bind(now)
                    .push(")");
            }
            JobStatus::Expired => {
                qb.push(" WHERE (j.status = 'expired' OR (j.status = 'open' AND j.expires_at <= ")
                    .push_bind(now)
                    .push("))");
            }
            other => {
                qb.push(" WHERE j.status = ").push_bind(other.as_str());
            }
        };
        let mut tx = self.begin_read().await?;
        let mut count = QueryBuilder::<Db>::new("SELECT COUNT(*) FROM jobs j");
        filter(&mut count);
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .step("counting the jobs in a status")?;
        let mut list = QueryBuilder::<Db>::new(sql::JOB_SELECT);
        filter(&mut list);
        super::store_impl::push_page(&mut list, " ORDER BY j.created_at, j.id", page);
        let rows = list
            .build_query_as::<JobRow>()
            .fetch_all(&mut *tx)
            .await
            .step("reading a page of the jobs in a status")?;
        tx.commit()
            .await
            .step("committing the read of the jobs in a status")?;
        Ok((rows, total))
    }

    /// The job's stored status, `expires_at` and version, locked to the end of `tx`.
    async fn job_state(
        tx: &mut Tx,
        id: i64,
    ) -> StoreResult<(JobStatus, Option<DateTime<Utc>>, DateTime<Utc>)> {
        let (status, expires_at, updated_at): (String, Option<DateTime<Utc>>, DateTime<Utc>) =
            sqlx::query_as(sql::JOB_STATE_LOCKED)
                .bind(id)
                .fetch_optional(&mut **tx)
                .await
                .with_step(|| format!("reading the state of job {id}"))?
                .ok_or(StoreError::NotFound)?;
        let status = JobStatus::try_from(status).map_err(|e| StoreError::Other(e.into()))?;
        Ok((status, expires_at, updated_at))
    }

    /// Puts an open job's `expires_at` on the upkeep's agenda (once per date).
    pub(super) async fn schedule_expiry(tx: &mut Tx, row: &JobRow) -> StoreResult<()> {
        if let (JobStatus::Open, Some(at)) = (row.status, row.expires_at) {
            sqlx::query(sql::EXPIRY_SCHEDULE)
                .bind(row.id)
                .bind(at)
                .execute(&mut **tx)
                .await
                .with_step(|| {
                    format!(
                        "putting the expiry of job {} on the upkeep's agenda",
                        row.id
                    )
                })?;
        }
        Ok(())
    }
}

/// A job's next version (`updated_at`): `now` (the database's clock), or just after the current
/// one if that clock has not passed it, so that a merge that read the old version never
/// overwrites the new.
pub(super) fn next_version(current: DateTime<Utc>, now: DateTime<Utc>) -> DateTime<Utc> {
    if now <= current {
        current + chrono::Duration::microseconds(1)
    } else {
        now
    }
}

/// Binds a job's fields in the order `JOB_INSERT` and `JOB_UPDATE` share. The older columns
/// (`location`, `remote`, `salary_min`, `salary_max`) are written from pay and place, so that
/// a release that reads only them sees the same job.
fn bind_job<'q>(query: Query<'q>, f: &'q JobFields, company: &str) -> Query<'q> {
    let location = f.location();
    let key = location.to_lowercase();
    let salary = f.salary.as_ref();
    query
        .bind(f.title.as_str())
        .bind(&f.description)
        .bind(location)
        .bind(key)
        .bind(f.remote())
        .bind(salary.and_then(|s| s.min))
        .bind(salary.and_then(|s| s.max))
        .bind(f.employment_type.as_str())
        .bind(f.status.as_str())
        .bind(job_terms(f.title.as_str(), &f.description, company))
        .bind(search::document_terms(&[f.title.as_str()]))
        .bind(f.expires_at)
        .bind(f.resume_required)
        .bind(&f.questions)
        .bind(f.workplace.as_str())
        .bind(pay_place::places_to_stored(&f.locations))
        .bind(salary.map(|s| s.currency.clone()))
        .bind(salary.map(|s| s.period.as_str()))
}
