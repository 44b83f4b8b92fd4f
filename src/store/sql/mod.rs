//! The SQL of every store method, written once and compiled once per backend: `postgres.rs`
//! and `sqlite.rs` each include this folder as a module of their own, after naming their
//! database (`Db`), their [`Dialect`](crate::store::dialect::Dialect) (`D`) and their store (`S`).
//! sqlx executors are concrete per database, so the code is the same and the types differ.
//!
//! Every write that answers an `Idempotency-Key` ends with [`S::commit_with`]: the response is
//! stored in the write's own transaction, then it commits.
//!
//! One clock: every time a write stores (`created_at`, `updated_at`, an approval, an event's
//! `occurred_at`) and every judgement it makes by the time is the database's clock, read once in
//! the write's transaction by [`S::clock`], never the host's (`tests/api/architecture.rs` checks
//! that nothing else here reads the host's clock).

mod accounts;
mod alert_digests;
mod alerts;
mod applications;
mod companies;
mod console;
mod db_queue;
mod digests;
mod email_data;
mod events;
mod idempotency;
mod job_upkeep;
mod joblog;
mod jobs;
mod pages;
mod resumes;
mod sqs_dead_letters;
mod statements;
mod store_impl;
mod webhook_deliveries;
mod webhooks;

use super::{D, Db, S};
use crate::store::dialect::Dialect;
use crate::store::{ApplicationRow, Idem, JobRow};
use crate::store::{Step, StoreError, StoreResult};
use statements as sql;

pub(super) use applications::ApplyCombiner;

type Tx = sqlx::Transaction<'static, Db>;

impl S {
    /// The database's clock, to the microsecond: PostgreSQL's `clock_timestamp()` (the time of
    /// the statement, not of the transaction's start), or, for SQLite, which runs in this
    /// process, this host's clock, which is the database's.
    async fn clock<'c, E>(e: E) -> StoreResult<chrono::DateTime<chrono::Utc>>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        match D::CLOCK {
            Some(statement) => sqlx::query_scalar(statement)
                .fetch_one(e)
                .await
                .step("reading the database's clock"),
            None => Ok(crate::timefmt::now()),
        }
    }

    /// Stores the idempotent request's response (if it has a key) and commits.
    async fn commit_with<T>(mut tx: Tx, idem: Idem<'_, T>, value: &T) -> StoreResult<()> {
        if let Some(c) = idem {
            let done = sqlx::query(sql::IDEM_COMPLETE)
                .bind(c.record_id)
                .bind(c.status as i64)
                .bind((c.render)(value))
                .bind(c.token)
                .execute(&mut *tx)
                .await
                .step("storing the idempotent response")?;
            if done.rows_affected() == 0 {
                // A retry took the key over (this request ran past its lock): the write must
                // not happen twice, so this one rolls back.
                return Err(StoreError::Other(anyhow::anyhow!(
                    "the idempotency key was taken over by a retry; not writing twice"
                )));
            }
        }
        tx.commit().await.step("committing the write")?;
        Ok(())
    }

    /// Runs a statement that deletes one row by id (`$1`), then [`S::commit_with`];
    /// `NotFound` if there was none.
    async fn delete_one(
        &self,
        statement: &'static str,
        id: i64,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(statement)
            .bind(id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("deleting row {id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Self::commit_with(tx, idem, &()).await
    }

    async fn job_in<'c, E>(e: E, id: i64) -> StoreResult<JobRow>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        sqlx::query_as::<_, JobRow>(sql::JOB_BY_ID)
            .bind(id)
            .fetch_optional(e)
            .await
            .with_step(|| format!("reading job {id}"))?
            .ok_or(StoreError::NotFound)
    }

    async fn application_in<'c, E>(e: E, id: i64) -> StoreResult<ApplicationRow>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        sqlx::query_as::<_, ApplicationRow>(sql::APPLICATION_BY_ID)
            .bind(id)
            .fetch_optional(e)
            .await
            .with_step(|| format!("reading application {id}"))?
            .ok_or(StoreError::NotFound)
    }

    /// Locks the row `statement` selects by id (`$1`) for the rest of the transaction and
    /// returns its one column; `NotFound` if there is none.
    async fn locked<T>(tx: &mut Tx, statement: &'static str, id: i64) -> StoreResult<T>
    where
        T: Send + Unpin + for<'r> sqlx::Decode<'r, Db> + sqlx::Type<Db>,
    {
        sqlx::query_scalar::<_, T>(statement)
            .bind(id)
            .fetch_optional(&mut **tx)
            .await
            .with_step(|| format!("locking row {id}"))?
            .ok_or(StoreError::NotFound)
    }
}
