//! SQLite: WAL mode, write transactions that take the write lock up front (`BEGIN IMMEDIATE`).

use super::dialect::Dialect;
use super::{Step, StoreResult};
use anyhow::Context;
use sqlx::sqlite::{
    Sqlite, SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use std::str::FromStr;
use std::time::Duration;

/// The store on SQLite.
#[derive(Clone)]
pub struct SqliteStore {
    pub(crate) pool: SqlitePool,
}

impl SqliteStore {
    const MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");

    /// Opens (creating it and its folder if needed) the database at `url`.
    pub async fn connect(url: &str, pool_size: u32) -> anyhow::Result<SqliteStore> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10));
        if let Some(dir) = options.get_filename().parent()
            && !dir.as_os_str().is_empty()
        {
            std::fs::create_dir_all(dir).map_err(|e| {
                anyhow::anyhow!("cannot create the database folder {}: {e}", dir.display())
            })?;
        }
        let pool = SqlitePoolOptions::new()
            .max_connections(pool_size)
            .acquire_timeout(Duration::from_secs(10))
            .after_release(|conn, _| Box::pin(still_usable(conn)))
            .connect_with(options)
            .await
            .context("opening the database's connection pool")?;
        Ok(SqliteStore { pool })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// None: each apply is written in its own transaction, which takes the one write lock.
    fn apply_combiner(&self) -> Option<&sql::ApplyCombiner> {
        None
    }

    /// Takes the write lock at BEGIN: a deferred transaction that reads and then writes can fail
    /// with SQLITE_BUSY when another connection wrote in between.
    async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, Sqlite>> {
        self.pool
            .begin_with("BEGIN IMMEDIATE")
            .await
            .step("starting a write transaction")
    }

    /// A read transaction sees one snapshot in WAL mode.
    async fn begin_read(&self) -> StoreResult<sqlx::Transaction<'static, Sqlite>> {
        self.pool.begin().await.step("starting a read transaction")
    }
}

/// Whether a connection handed back to the pool may be handed out again: not while it is still
/// inside a transaction. A `Transaction` dropped without its commit (an error, a panic, a
/// cancelled future) queues its rollback, which the ping below lets run first. But a future
/// dropped between the `BEGIN IMMEDIATE` and the `Transaction` that would own it (sqlx checks
/// the transaction began in a second step) leaves nothing to roll it back: back in the pool,
/// that connection would hold the database's write lock for ever, and every other write would
/// wait for it and fail ("database is locked"; on that connection, "begin_with at non-zero
/// transaction depth"). It is closed instead, which rolls the transaction back.
async fn still_usable(conn: &mut sqlx::SqliteConnection) -> Result<bool, sqlx::Error> {
    use sqlx::Connection;
    conn.ping().await?;
    if conn.is_in_transaction() {
        tracing::warn!(
            "a database connection came back to the pool inside a transaction; closing it, \
             which rolls the transaction back"
        );
        return Ok(false);
    }
    Ok(true)
}

pub(super) struct SqliteDialect;

impl Dialect for SqliteDialect {
    type Db = Sqlite;
    const SKIP_LOCKED: &'static str = "";
    const NOW_MS: &'static str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
    // SQLite runs in this process and reads this host's clock ('now' above is the same clock):
    // read here, to the microsecond, without a statement.
    const CLOCK: Option<&'static str> = None;
    const FOR_UPDATE: &'static str = "";
    const FOR_SHARE: &'static str = "";
    const NAME: &'static str = "sqlite";
    // Write transactions start with the database's write lock, which orders job inserts.
    const JOB_INSERT_LOCK: Option<&'static str> = None;
    const MIGRATION_SESSION: Option<&'static str> = None;

    const JOB_LOG_LOCK: Option<&'static str> = None;
    const JSON_IDS_OPEN: &'static str = "SELECT CAST(value AS INTEGER) FROM json_each(";
    const JSON_IDS_CLOSE: &'static str = ")";
    // `BEGIN IMMEDIATE` has taken the write lock already.
    const WRITE_PROBE: &'static str = "SELECT 1";
    const PLACES_OF_LOCATION: &'static str =
        "json_array(json_object('city', location, 'region', NULL, 'country', NULL))";
}

// The shared SQL (`sql/`), compiled for this backend.
type Db = Sqlite;
type D = SqliteDialect;
type S = SqliteStore;
#[allow(clippy::duplicate_mod)]
#[path = "sql/mod.rs"]
mod sql;
