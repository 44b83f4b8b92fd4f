//! Opening the database, and reading what it answers about itself: its timeouts and its schema.

use super::{PgStore, SqliteStore, Store};
use async_trait::async_trait;
use std::sync::Arc;

/// The database itself: which one it is, its schema, and whether it answers.
#[async_trait]
pub trait DatabaseStore: Send + Sync {
    /// `postgres` or `sqlite`.
    fn backend(&self) -> &'static str;
    /// Applies pending migrations.
    async fn migrate(&self) -> anyhow::Result<()>;
    /// Fails, saying what to do, unless the database has every migration of this binary; returns
    /// the applied ones it does not know (a newer release's, `NNNN_description`), if any.
    async fn check_schema(&self) -> anyhow::Result<Vec<String>>;
    /// Whether the database answers and can start a write, for readiness: a write transaction
    /// is begun (on SQLite it takes the write lock, which a stuck writer would hold), probed and
    /// rolled back, writing nothing.
    async fn ping(&self) -> anyhow::Result<()>;
}

/// Limits PostgreSQL puts on each statement of a connection (`statement_timeout`,
/// `lock_timeout`). SQLite has one writer and its own busy timeout, and ignores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbTimeouts {
    pub statement: std::time::Duration,
    pub lock: std::time::Duration,
}

/// Opens the store that `url` names, with the default pool size.
pub async fn connect(url: &crate::config::DatabaseUrl) -> anyhow::Result<Arc<dyn Store>> {
    connect_with_pool(url, None).await
}

/// Opens the store that `url` names with at most `pool_size` connections (default: 32 on
/// PostgreSQL, 8 on SQLite).
pub async fn connect_with_pool(
    url: &crate::config::DatabaseUrl,
    pool_size: Option<u32>,
) -> anyhow::Result<Arc<dyn Store>> {
    connect_with(url, pool_size, None).await
}

/// Opens the store that `url` names with at most `pool_size` connections, each with
/// `timeouts` on PostgreSQL (none: the server's defaults).
pub async fn connect_with(
    url: &crate::config::DatabaseUrl,
    pool_size: Option<u32>,
    timeouts: Option<DbTimeouts>,
) -> anyhow::Result<Arc<dyn Store>> {
    Ok(match url {
        crate::config::DatabaseUrl::Sqlite(u) => {
            Arc::new(SqliteStore::connect(u, pool_size.unwrap_or(8)).await?)
        }
        crate::config::DatabaseUrl::Postgres(u) => {
            Arc::new(PgStore::connect(u, pool_size.unwrap_or(32), timeouts).await?)
        }
    })
}

/// Whether `e` is PostgreSQL cancelling a statement that ran past `statement_timeout`
/// (57014) or waited past `lock_timeout` for a lock (55P03).
pub fn is_database_timeout(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<sqlx::Error>()
            .and_then(|e| e.as_database_error())
            .and_then(|d| d.code())
            .is_some_and(|code| code == "57014" || code == "55P03")
    })
}

/// The verdict on a database whose applied migrations are `applied`, for a binary that knows
/// `known` (version, description each): an error when one of `known` is missing, else the
/// applied migrations this binary does not know. Those are a newer release's; its migrations
/// follow expand/contract, so the schema stays usable by this one (a rollback).
pub fn schema_verdict(
    applied: &[(i64, String)],
    known: &[(i64, String)],
) -> anyhow::Result<Vec<String>> {
    let name = |(v, d): &(i64, String)| format!("{v:04}_{d}");
    let unknown: Vec<String> = applied
        .iter()
        .filter(|(v, _)| !known.iter().any(|(k, _)| k == v))
        .map(name)
        .collect();
    let pending: Vec<String> = known
        .iter()
        .filter(|(k, _)| !applied.iter().any(|(v, _)| v == k))
        .map(name)
        .collect();
    if !pending.is_empty() && !unknown.is_empty() {
        anyhow::bail!(
            "the database schema has migrations this jobboard does not know ({}) and lacks some \
             of its own ({}): it was migrated by another line of releases; run a release that \
             has both",
            unknown.join(", "),
            pending.join(", ")
        );
    }
    if !pending.is_empty() {
        anyhow::bail!(
            "the database schema is behind this jobboard (pending migrations: {}): run \
             `jobboard migrate` first",
            pending.join(", ")
        );
    }
    Ok(unknown)
}

#[cfg(test)]
mod tests {
    /// Both backends must have the same migrations, by number and name.
    #[test]
    fn migration_folders_match() {
        let names = |dir: &str| {
            let mut v: Vec<String> =
                std::fs::read_dir(format!("{}/migrations/{dir}", env!("CARGO_MANIFEST_DIR")))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
            v.sort();
            v
        };
        let pg = names("postgres");
        assert!(!pg.is_empty());
        assert_eq!(pg, names("sqlite"));
    }
}
