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
            .connect_with(options)
            .await
            .context("opening the database's connection pool")?;
        Ok(SqliteStore { pool })
    }

    pub fn pool(&self) -> &SqlitePool {
        &self.pool
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

pub(super) struct SqliteDialect;

impl Dialect for SqliteDialect {
    type Db = Sqlite;
    const SKIP_LOCKED: &'static str = "";
    const NOW_MS: &'static str = "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)";
    const FOR_UPDATE: &'static str = "";
    const FOR_SHARE: &'static str = "";
    const NAME: &'static str = "sqlite";
    // Write transactions start with the database's write lock, which orders job inserts.
    const JOB_INSERT_LOCK: Option<&'static str> = None;
    const MIGRATION_SESSION: Option<&'static str> = None;

    const JOB_LOG_LOCK: Option<&'static str> = None;
    const JSON_IDS_OPEN: &'static str = "SELECT CAST(value AS INTEGER) FROM json_each(";
    const JSON_IDS_CLOSE: &'static str = ")";
}

// The shared SQL (`sql/`), compiled for this backend.
type Db = Sqlite;
type D = SqliteDialect;
type S = SqliteStore;
#[allow(clippy::duplicate_mod)]
#[path = "sql/mod.rs"]
mod sql;
