//! PostgreSQL: row locks with `FOR UPDATE`, advisory locks where writes must take turns.

use super::dialect::Dialect;
use super::{Step, StoreResult};
use anyhow::Context;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, Postgres};
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

/// How long a connection may sit in the pool before it is checked again when handed out.
const IDLE_BEFORE_CHECK: Duration = Duration::from_secs(1);

/// How many applies a batch takes, at most (`store::combine`).
const APPLY_BATCH_MAX: usize = 64;

/// The store on PostgreSQL.
#[derive(Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
    /// Applies that arrive together share one statement (`store::combine`).
    applies: Arc<sql::ApplyCombiner>,
}

impl PgStore {
    const MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

    pub async fn connect(
        url: &str,
        pool_size: u32,
        timeouts: Option<super::DbTimeouts>,
    ) -> anyhow::Result<PgStore> {
        let mut options = PgConnectOptions::from_str(url)?;
        if let Some(t) = timeouts {
            // Sent with each connection's start-up, so every connection has them from its
            // first statement, without a round trip of its own.
            options = options.options([
                (
                    "statement_timeout",
                    format!("{}ms", t.statement.as_millis()),
                ),
                ("lock_timeout", format!("{}ms", t.lock.as_millis())),
            ]);
        }
        let pool = PgPoolOptions::new()
            .max_connections(pool_size)
            .acquire_timeout(Duration::from_secs(5))
            // sqlx checks a connection with a round trip when it is handed back to the pool,
            // and by default again when it is handed out: two round trips beside a one-statement
            // write. The second is kept only for a connection that sat idle (a database restarted
            // meanwhile has closed it); one handed back moments ago was checked then.
            .test_before_acquire(false)
            .before_acquire(|conn, meta| {
                Box::pin(async move {
                    if meta.idle_for >= IDLE_BEFORE_CHECK {
                        sqlx::Connection::ping(conn).await?;
                    }
                    Ok(true)
                })
            })
            .connect_with(options)
            .await
            .context("opening the database's connection pool")?;
        // Batches of applies running at once: one per core of this host (at least two, at
        // most eight), each holding a connection while it runs, at most half the pool. Fewer
        // runners make bigger batches: on two cores, two runners wrote more applies a second
        // than four or eight (docs/performance.md).
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let runners = cores.clamp(2, 8).min((pool_size as usize / 2).max(1));
        let applies = Arc::new(super::combine::Combiner::new(runners, APPLY_BATCH_MAX));
        Ok(PgStore { pool, applies })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Where applies are combined into batches.
    fn apply_combiner(&self) -> Option<&sql::ApplyCombiner> {
        Some(&self.applies)
    }

    async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, Postgres>> {
        self.pool.begin().await.step("starting a write transaction")
    }

    /// A consistent snapshot for a count and its page.
    async fn begin_read(&self) -> StoreResult<sqlx::Transaction<'static, Postgres>> {
        self.pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
            .step("starting a read transaction")
    }
}

pub(super) struct PgDialect;

impl Dialect for PgDialect {
    type Db = Postgres;
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const NOW_MS: &'static str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";
    // The time of the statement, not of the transaction's start (`now()`): a write stamps the
    // moment it reads, just before its commit, whatever it waited for before.
    const CLOCK: Option<&'static str> = Some("SELECT clock_timestamp()");
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const FOR_SHARE: &'static str = " FOR SHARE";
    const NAME: &'static str = "postgres";
    // Job inserts take turns, so that ids (from the identity) follow creation times.
    const JOB_INSERT_LOCK: Option<&'static str> = Some("SELECT pg_advisory_xact_lock(7406001)");
    // An index built CONCURRENTLY (no transaction, so no SET LOCAL) may take longer than any
    // request's deadline; the migrations' lock waits keep the pool's lock_timeout.
    const MIGRATION_SESSION: Option<&'static str> = Some("SET statement_timeout = 0");

    const JOB_LOG_LOCK: Option<&'static str> = Some("SELECT pg_advisory_xact_lock(7406002)");
    const JSON_IDS_OPEN: &'static str =
        "SELECT CAST(value AS BIGINT) FROM jsonb_array_elements_text(CAST(";
    const JSON_IDS_CLOSE: &'static str = " AS JSONB))";
    const WRITE_PROBE: &'static str = "SET TRANSACTION READ WRITE";
    const PLACES_OF_LOCATION: &'static str = "json_build_array(json_build_object('city', \
         location, 'region', NULL, 'country', NULL))::text";
}

// The shared SQL (`sql/`), compiled for this backend.
type Db = Postgres;
type D = PgDialect;
type S = PgStore;
#[allow(clippy::duplicate_mod)]
#[path = "sql/mod.rs"]
mod sql;
