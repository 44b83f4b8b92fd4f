//! PostgreSQL: row locks with `FOR UPDATE`, full-text search on a GIN-indexed tsvector.

use super::dialect::Dialect;
use sqlx::postgres::{PgPool, PgPoolOptions, Postgres};
use std::time::Duration;

/// The store on PostgreSQL.
#[derive(Clone)]
pub struct PgStore {
    pub(crate) pool: PgPool,
}

impl PgStore {
    const MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

    pub async fn connect(url: &str, pool_size: u32) -> anyhow::Result<PgStore> {
        let pool = PgPoolOptions::new()
            .max_connections(pool_size)
            .acquire_timeout(Duration::from_secs(5))
            .connect(url)
            .await?;
        Ok(PgStore { pool })
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// `EXPLAIN (ANALYZE, BUFFERS)` of the two statements a search runs (its count, then its
    /// page), for looking at a slow search.
    pub async fn explain_search(&self, s: &super::JobSearch) -> anyhow::Result<[String; 2]> {
        const EXPLAIN: &str = "EXPLAIN (ANALYZE, BUFFERS) ";
        let count: Vec<String> = sql::search_count(EXPLAIN, s)
            .build_query_scalar()
            .fetch_all(&self.pool)
            .await?;
        let page: Vec<String> = sql::search_page(EXPLAIN, s)
            .build_query_scalar()
            .fetch_all(&self.pool)
            .await?;
        Ok([count.join("\n"), page.join("\n")])
    }

    async fn begin_write(&self) -> sqlx::Result<sqlx::Transaction<'static, Postgres>> {
        self.pool.begin().await
    }

    /// A consistent snapshot for a count and its page.
    async fn begin_read(&self) -> sqlx::Result<sqlx::Transaction<'static, Postgres>> {
        self.pool
            .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            .await
    }
}

pub(super) struct PgDialect;

impl Dialect for PgDialect {
    type Db = Postgres;
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    const NOW_MS: &'static str = "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)";
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const FOR_SHARE: &'static str = " FOR SHARE";
    const NAME: &'static str = "postgres";

    fn push_terms_match(qb: &mut sqlx::QueryBuilder<'_, Postgres>, terms: &[String]) {
        // Terms are letters and digits only, so quoting them makes each a literal lexeme.
        let query = terms
            .iter()
            .map(|t| format!("'{t}'"))
            .collect::<Vec<_>>()
            .join(" & ");
        qb.push(" AND j.search_vector @@ CAST(")
            .push_bind(query)
            .push(" AS tsquery)");
    }

    fn push_location_match(qb: &mut sqlx::QueryBuilder<'_, Postgres>, needle: String) {
        qb.push(" AND strpos(j.location_key, ")
            .push_bind(needle)
            .push(") > 0");
    }
}

// The shared SQL (`sql/`), compiled for this backend.
type Db = Postgres;
type D = PgDialect;
type S = PgStore;
#[allow(clippy::duplicate_mod)]
#[path = "sql/mod.rs"]
mod sql;
