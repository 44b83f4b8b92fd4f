//! Job alerts ([`AlertStore`]). Every statement names the owner beside the id, so someone
//! else's alert is never read, changed or deleted.

use super::{Db, S};
use crate::domain::Conflict;
use crate::store::dialect::Dialect;
use crate::store::*;
use const_format::concatcp;

const COLUMNS: &str = "id, user_id, q, location, remote, company_id, salary_min, \
     employment_type, workplace, country, salary_currency, frequency, paused, created_at, last_sent_at, watermark_created_at, \
     watermark_job_id";
/// Held to the commit by an alert's creation: the user's creations take turns, so the count
/// they read cannot change before their insert commits.
const USER_LOCKED: &str = concatcp!(
    "SELECT id FROM users WHERE id = $1",
    <super::D as Dialect>::FOR_UPDATE
);
const COUNT_OF_USER: &str = "SELECT COUNT(*) FROM alerts WHERE user_id = $1";
const INSERT: &str = "INSERT INTO alerts (user_id, q, location, remote, company_id, salary_min, \
     employment_type, frequency, created_at, workplace, country, salary_currency) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING id";
const OF_USER: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM alerts WHERE id = $1 AND user_id = $2"
);
const PAGE: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM alerts WHERE user_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2 OFFSET $3"
);
const UPDATE: &str = "UPDATE alerts SET frequency = COALESCE($1, frequency), \
     paused = COALESCE($2, paused) WHERE id = $3 AND user_id = $4";
const DELETE: &str = "DELETE FROM alerts WHERE id = $1 AND user_id = $2";
const BY_ID: &str = concatcp!("SELECT ", COLUMNS, " FROM alerts WHERE id = $1");
const PAUSE: &str = concatcp!(
    "UPDATE alerts SET paused = TRUE WHERE id = $1 RETURNING ",
    COLUMNS
);

impl S {
    async fn alert_in<'c, E>(e: E, user_id: i64, id: i64) -> StoreResult<AlertRow>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        sqlx::query_as::<_, AlertRow>(OF_USER)
            .bind(id)
            .bind(user_id)
            .fetch_optional(e)
            .await
            .with_step(|| format!("reading alert {id}"))?
            .ok_or(StoreError::NotFound)
    }
}

#[async_trait::async_trait]
impl AlertStore for S {
    async fn create_alert(
        &self,
        user_id: i64,
        alert: NewAlert,
        max: i64,
        idem: Idem<'_, AlertRow>,
    ) -> StoreResult<AlertRow> {
        let mut tx = self.begin_write().await?;
        // The count and the insert under one lock on the user (SQLite: the write lock taken at
        // BEGIN): two requests at `max - 1` cannot both pass.
        let _: i64 = Self::locked(&mut tx, USER_LOCKED, user_id)
            .await
            .with_step(|| format!("locking user {user_id}"))?;
        let count: i64 = sqlx::query_scalar(COUNT_OF_USER)
            .bind(user_id)
            .fetch_one(&mut *tx)
            .await
            .with_step(|| format!("counting the alerts of user {user_id}"))?;
        if count >= max {
            return Err(StoreError::Conflict(Conflict::TooManyAlerts));
        }
        let f = &alert.filters;
        // Its creation is its watermark until its first digest: the database's clock, so that an
        // API host whose clock is ahead cannot leave the next minutes' jobs out of its digest.
        let created_at = Self::clock(&mut *tx).await?;
        let id: i64 = sqlx::query_scalar(INSERT)
            .bind(user_id)
            .bind(&f.q)
            .bind(&f.location)
            .bind(f.remote)
            .bind(f.company_id)
            .bind(f.salary_min)
            .bind(f.employment_type.map(|t| t.as_str()))
            .bind(alert.frequency.as_str())
            .bind(created_at)
            .bind(f.workplace.map(|w| w.as_str()))
            .bind(&f.country)
            .bind(&f.salary_currency)
            .fetch_one(&mut *tx)
            .await
            .step("inserting the alert")?;
        let row = Self::alert_in(&mut *tx, user_id, id)
            .await
            .step("reading the new alert")?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn alert_of(&self, user_id: i64, id: i64) -> StoreResult<AlertRow> {
        Self::alert_in(&self.pool, user_id, id).await
    }

    async fn alerts_of(&self, user_id: i64, page: Page) -> StoreResult<(Vec<AlertRow>, i64)> {
        let mut tx = self.begin_read().await?;
        let total: i64 = sqlx::query_scalar(COUNT_OF_USER)
            .bind(user_id)
            .fetch_one(&mut *tx)
            .await
            .with_step(|| format!("counting the alerts of user {user_id}"))?;
        let rows = sqlx::query_as::<_, AlertRow>(PAGE)
            .bind(user_id)
            .bind(page.size)
            .bind(page.offset())
            .fetch_all(&mut *tx)
            .await
            .with_step(|| format!("reading a page of the alerts of user {user_id}"))?;
        tx.commit()
            .await
            .step("committing the read of the alerts")?;
        Ok((rows, total))
    }

    async fn update_alert(
        &self,
        user_id: i64,
        id: i64,
        change: AlertChange,
        idem: Idem<'_, AlertRow>,
    ) -> StoreResult<AlertRow> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(UPDATE)
            .bind(change.frequency.map(|f| f.as_str()))
            .bind(change.paused)
            .bind(id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("updating alert {id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let row = Self::alert_in(&mut *tx, user_id, id)
            .await
            .with_step(|| format!("reading alert {id} after its update"))?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn delete_alert(&self, user_id: i64, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(DELETE)
            .bind(id)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("deleting alert {id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Self::commit_with(tx, idem, &()).await
    }

    async fn alert(&self, id: i64) -> StoreResult<AlertRow> {
        sqlx::query_as::<_, AlertRow>(BY_ID)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("reading alert {id}"))?
            .ok_or(StoreError::NotFound)
    }

    async fn pause_alert(&self, id: i64, idem: Idem<'_, AlertRow>) -> StoreResult<AlertRow> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query_as::<_, AlertRow>(PAUSE)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("pausing alert {id}"))?
            .ok_or(StoreError::NotFound)?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }
}
