//! What differs between the backends ([`Dialect`]) and the few helpers every backend's SQL
//! shares. The SQL itself is in `sql/`, written once and compiled once per backend.

use super::StoreError;
use crate::domain::{Conflict, search};

/// The statements that differ between PostgreSQL and SQLite.
pub(super) trait Dialect {
    type Db: sqlx::Database;
    /// Appended to a SELECT that must lock the rows it reads for the rest of the transaction
    /// (SQLite needs nothing: its write transactions start with the database write lock).
    const FOR_UPDATE: &'static str;
    /// Appended to a SELECT whose rows must not change or vanish until the transaction ends.
    const FOR_SHARE: &'static str;
    /// Appended to the SELECT that picks queue messages: concurrent receivers skip each other's
    /// rows (SQLite's single writer needs nothing).
    const SKIP_LOCKED: &'static str;
    /// The database clock as ms since the epoch, as an SQL expression.
    const NOW_MS: &'static str;
    /// The statement that reads the database's clock as a time to the microsecond, in a write's
    /// transaction (the time it stamps and judges by, see `S::clock`); `None` where the
    /// database runs inside this process, whose clock is then the database's.
    const CLOCK: Option<&'static str>;
    /// The backend's name, as `Store::backend` reports it.
    const NAME: &'static str;
    /// Taken in a job insert's transaction before it reads the newest job's creation time, so
    /// that inserts take turns (none where the transaction already holds the write lock).
    const JOB_INSERT_LOCK: Option<&'static str>;
    /// Run on the connection that applies the migrations before it does: the pool's statement
    /// deadline does not apply to them (each sets its own with `SET LOCAL`).
    const MIGRATION_SESSION: Option<&'static str>;
    /// Taken just before a job-change log row is inserted and held to the commit, so that the
    /// log's rows commit in `seq` order (none where the transaction holds the write lock).
    const JOB_LOG_LOCK: Option<&'static str>;
    /// `JSON_IDS_OPEN` + a parameter holding a JSON array of integers + `JSON_IDS_CLOSE`: a
    /// SELECT of those integers, one per row (a list of any length in one bind).
    const JSON_IDS_OPEN: &'static str;
    const JSON_IDS_CLOSE: &'static str;
    /// A statement that fails in a write transaction that could not write (readiness): on
    /// PostgreSQL, a standby in recovery refuses it.
    const WRITE_PROBE: &'static str;
    /// An SQL expression of a job row: the JSON array of the one place its `location` column
    /// names, `{city: location, region: null, country: null}` (the pay-and-place backfill).
    const PLACES_OF_LOCATION: &'static str;
}

/// Maps a constraint violation to the given conflict; anything else stays an error.
pub(super) fn constraint(e: sqlx::Error, conflict: Conflict) -> StoreError {
    if let Some(db) = e.as_database_error()
        && matches!(
            db.kind(),
            sqlx::error::ErrorKind::UniqueViolation | sqlx::error::ErrorKind::ForeignKeyViolation
        )
    {
        return StoreError::Conflict(conflict);
    }
    e.into()
}

/// A job's searchable text.
pub(super) fn job_terms(title: &str, description: &str, company: &str) -> String {
    search::document_terms(&[title, description, company])
}

/// `$first, $first+1, …` for an `IN (…)` list of `n` values.
pub(super) fn placeholders(first: usize, n: usize) -> String {
    (first..first + n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(", ")
}
