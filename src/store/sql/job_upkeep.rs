//! [`JobUpkeepStore`]: the upkeep's batches over the agenda of expiries (`job_expiries`) and the
//! backfill of `expires_at`, each in one transaction with its events and job-change log rows;
//! and the applications whose retention has passed.

use super::jobs::next_version;
use super::{D, Db, S, Tx};
use crate::domain::JobStatus;
use crate::domain::event::{Event, EventKind};
use crate::store::dialect::Dialect;
use crate::store::job_upkeep::{JobUpkeepStore, UpkeepBatch};
use crate::store::{Step, StoreResult};
use anyhow::Context;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use sqlx::QueryBuilder;
use std::collections::{BTreeMap, BTreeSet};

/// The agenda rows due for expiry; concurrent workers skip each other's (PostgreSQL).
const DUE: &str = concatcp!(
    "SELECT job_id, expires_at FROM job_expiries WHERE expires_at <= $1 \
     ORDER BY expires_at, job_id LIMIT $2",
    <D as Dialect>::SKIP_LOCKED
);
/// The agenda rows whose notices are due and not written (the partial index's predicate,
/// `NOT noticed`, as it is written there).
const NOTICE_DUE: &str = concatcp!(
    "SELECT job_id, expires_at FROM job_expiries WHERE NOT noticed AND expires_at > $1 \
     AND expires_at <= $2 ORDER BY expires_at, job_id LIMIT $3",
    <D as Dialect>::SKIP_LOCKED
);
/// Applications in a final status last changed before `$1`, at most `$2`, oldest first
/// (`applications_retired`); their history goes with them (`ON DELETE CASCADE`). Two workers
/// may pick the same rows: the second's delete waits for the first and finds them gone.
const RETIRED_DELETE: &str = "DELETE FROM applications WHERE id IN (SELECT id FROM applications \
     WHERE status IN ('hired', 'rejected', 'withdrawn') AND updated_at < $1 \
     ORDER BY updated_at LIMIT $2)";
const AGENDA_DROP: &str = "DELETE FROM job_expiries WHERE job_id = $1 AND expires_at = $2";
const AGENDA_NOTICED: &str =
    "UPDATE job_expiries SET noticed = TRUE WHERE job_id = $1 AND expires_at = $2";
const EXPIRE: &str = "UPDATE jobs SET status = 'expired', updated_at = $1 WHERE id = $2";
const CURSOR: &str = concatcp!(
    "SELECT position FROM upkeep_cursors WHERE name = 'expires_at'",
    <D as Dialect>::SKIP_LOCKED
);
const CURSOR_MOVE: &str = "UPDATE upkeep_cursors SET position = $1 WHERE name = 'expires_at'";
const BACKFILL_PAGE: &str = concatcp!(
    "SELECT id, status, expires_at, updated_at FROM jobs WHERE id > $1 ORDER BY id LIMIT $2",
    <D as Dialect>::FOR_UPDATE
);
const BACKFILL_SET: &str = "UPDATE jobs SET expires_at = $1, updated_at = $2 WHERE id = $3";
const SCHEDULE: &str = "INSERT INTO job_expiries (job_id, expires_at) VALUES ($1, $2) \
     ON CONFLICT DO NOTHING";

/// What the upkeep reads of a job the agenda names.
#[derive(sqlx::FromRow)]
struct Named {
    id: i64,
    company_id: i64,
    status: String,
    expires_at: Option<DateTime<Utc>>,
    updated_at: DateTime<Utc>,
}

impl Named {
    /// Whether the job is still open with the agenda row's `expires_at`.
    fn is_open_until(&self, at: DateTime<Utc>) -> bool {
        self.status == JobStatus::Open.as_str() && self.expires_at == Some(at)
    }
}

impl S {
    /// The jobs with these ids, locked (`lock`: `FOR UPDATE` or `FOR SHARE`) in id order.
    async fn named_jobs(
        tx: &mut Tx,
        ids: &BTreeSet<i64>,
        lock: &str,
    ) -> StoreResult<BTreeMap<i64, Named>> {
        if ids.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut qb = QueryBuilder::<Db>::new(
            "SELECT id, company_id, status, expires_at, updated_at FROM jobs WHERE id IN (",
        );
        let mut list = qb.separated(", ");
        for id in ids {
            list.push_bind(*id);
        }
        qb.push(") ORDER BY id").push(lock);
        let rows = qb
            .build_query_as::<Named>()
            .fetch_all(&mut **tx)
            .await
            .context("reading the jobs the upkeep's agenda names")?;
        Ok(rows.into_iter().map(|j| (j.id, j)).collect())
    }

    /// Every member of these companies, by company.
    async fn members_of(
        tx: &mut Tx,
        companies: &BTreeSet<i64>,
    ) -> StoreResult<BTreeMap<i64, Vec<i64>>> {
        let mut out: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
        if companies.is_empty() {
            return Ok(out);
        }
        let mut qb = QueryBuilder::<Db>::new(
            "SELECT company_id, user_id FROM company_members WHERE company_id IN (",
        );
        let mut list = qb.separated(", ");
        for id in companies {
            list.push_bind(*id);
        }
        qb.push(") ORDER BY company_id, user_id");
        let rows: Vec<(i64, i64)> = qb
            .build_query_as()
            .fetch_all(&mut **tx)
            .await
            .context("reading the members of the jobs' companies")?;
        for (company, user) in rows {
            out.entry(company).or_default().push(user);
        }
        Ok(out)
    }

    /// One event per member of the company of each job, written with `tx`; how many were new.
    async fn write_member_events(
        tx: &mut Tx,
        jobs: &[(&Named, DateTime<Utc>)],
        now: DateTime<Utc>,
        kind: fn(i64, i64, DateTime<Utc>) -> EventKind,
    ) -> StoreResult<u64> {
        let companies: BTreeSet<i64> = jobs.iter().map(|(j, _)| j.company_id).collect();
        let members = Self::members_of(tx, &companies)
            .await
            .step("reading the members of the jobs' companies")?;
        let mut written = 0;
        for (job, at) in jobs {
            for user in members.get(&job.company_id).into_iter().flatten() {
                let event = Event::new(kind(job.id, *user, *at), now);
                if Self::write_event(tx, &event).await? {
                    written += 1;
                }
            }
        }
        Ok(written)
    }
}

#[async_trait::async_trait]
impl JobUpkeepStore for S {
    async fn delete_retired_applications(
        &self,
        cutoff: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<u64> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(RETIRED_DELETE)
            .bind(cutoff)
            .bind(limit)
            .execute(&mut *tx)
            .await
            .context("deleting the applications past their retention")?;
        tx.commit()
            .await
            .context("committing the deletion of applications past their retention")?;
        Ok(done.rows_affected())
    }

    async fn expire_jobs(&self, now: DateTime<Utc>, limit: i64) -> StoreResult<UpkeepBatch> {
        let mut tx = self.begin_write().await?;
        let due: Vec<(i64, DateTime<Utc>)> = sqlx::query_as(DUE)
            .bind(now)
            .bind(limit)
            .fetch_all(&mut *tx)
            .await
            .context("reading the expiries due")?;
        let ids: BTreeSet<i64> = due.iter().map(|(id, _)| *id).collect();
        let jobs = Self::named_jobs(&mut tx, &ids, <D as Dialect>::FOR_UPDATE)
            .await
            .step("reading the jobs to expire")?;
        let mut expired: Vec<(&Named, DateTime<Utc>)> = Vec::new();
        let clock = Self::clock(&mut *tx).await?;
        for (id, at) in &due {
            // A row whose job has been closed, renewed or deleted since is only dropped.
            if let Some(job) = jobs.get(id).filter(|j| j.is_open_until(*at))
                && !expired.iter().any(|(j, _)| j.id == *id)
            {
                sqlx::query(EXPIRE)
                    .bind(next_version(job.updated_at, clock))
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .context("expiring a job")?;
                expired.push((job, *at));
            }
            sqlx::query(AGENDA_DROP)
                .bind(id)
                .bind(at)
                .execute(&mut *tx)
                .await
                .context("dropping an agenda row")?;
        }
        let events =
            Self::write_member_events(&mut tx, &expired, now, |job_id, user_id, expires_at| {
                EventKind::JobExpired {
                    job_id,
                    user_id,
                    expires_at,
                }
            })
            .await
            .step("writing the expired jobs' events")?;
        let changed: Vec<i64> = expired.iter().map(|(j, _)| j.id).collect();
        Self::log_job_changes(&mut tx, &changed).await?;
        tx.commit().await.context("committing expired jobs")?;
        Ok(UpkeepBatch {
            taken: due.len() as u64,
            jobs: changed.len() as u64,
            events,
        })
    }

    async fn write_expiry_notices(
        &self,
        now: DateTime<Utc>,
        horizon: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<UpkeepBatch> {
        let mut tx = self.begin_write().await?;
        let due: Vec<(i64, DateTime<Utc>)> = sqlx::query_as(NOTICE_DUE)
            .bind(now)
            .bind(horizon)
            .bind(limit)
            .fetch_all(&mut *tx)
            .await
            .context("reading the expiry notices due")?;
        let ids: BTreeSet<i64> = due.iter().map(|(id, _)| *id).collect();
        // Shared: a renewal or a close waits until the notices of the date it replaces are in.
        let jobs = Self::named_jobs(&mut tx, &ids, <D as Dialect>::FOR_SHARE)
            .await
            .step("reading the jobs due a notice")?;
        let mut noticed: Vec<(&Named, DateTime<Utc>)> = Vec::new();
        for (id, at) in &due {
            let statement = match jobs.get(id).filter(|j| j.is_open_until(*at)) {
                Some(job) => {
                    noticed.push((job, *at));
                    AGENDA_NOTICED
                }
                None => AGENDA_DROP,
            };
            sqlx::query(statement)
                .bind(id)
                .bind(at)
                .execute(&mut *tx)
                .await
                .context("marking an agenda row")?;
        }
        let events =
            Self::write_member_events(&mut tx, &noticed, now, |job_id, user_id, expires_at| {
                EventKind::JobExpiring {
                    job_id,
                    user_id,
                    expires_at,
                }
            })
            .await
            .step("writing the expiry notices' events")?;
        tx.commit().await.context("committing expiry notices")?;
        Ok(UpkeepBatch {
            taken: due.len() as u64,
            jobs: noticed.len() as u64,
            events,
        })
    }

    async fn backfill_expiries(
        &self,
        expires_at: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<UpkeepBatch> {
        let mut tx = self.begin_write().await?;
        // Another worker holding the cursor is doing this batch: nothing to do here.
        let Some(from): Option<i64> = sqlx::query_scalar(CURSOR)
            .fetch_optional(&mut *tx)
            .await
            .context("reading the backfill's cursor")?
        else {
            return Ok(UpkeepBatch::default());
        };
        let page: Vec<(i64, String, Option<DateTime<Utc>>, DateTime<Utc>)> =
            sqlx::query_as(BACKFILL_PAGE)
                .bind(from)
                .bind(limit)
                .fetch_all(&mut *tx)
                .await
                .context("reading jobs for the backfill")?;
        let Some(last) = page.last().map(|(id, ..)| *id) else {
            return Ok(UpkeepBatch::default());
        };
        let mut set = Vec::new();
        let clock = Self::clock(&mut *tx).await?;
        for (id, status, current, updated_at) in &page {
            if status == JobStatus::Open.as_str() && current.is_none() {
                sqlx::query(BACKFILL_SET)
                    .bind(expires_at)
                    .bind(next_version(*updated_at, clock))
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .context("giving a job its expires_at")?;
                sqlx::query(SCHEDULE)
                    .bind(id)
                    .bind(expires_at)
                    .execute(&mut *tx)
                    .await
                    .context("putting a job on the upkeep's agenda")?;
                set.push(*id);
            }
        }
        sqlx::query(CURSOR_MOVE)
            .bind(last)
            .execute(&mut *tx)
            .await
            .context("moving the backfill's cursor")?;
        Self::log_job_changes(&mut tx, &set).await?;
        tx.commit().await.context("committing a backfill batch")?;
        Ok(UpkeepBatch {
            taken: page.len() as u64,
            jobs: set.len() as u64,
            events: 0,
        })
    }
}
