//! One statement on a database by its URL (PostgreSQL or SQLite), the URL as the
//! configuration reads it, and a time as an SQL literal.

use anyhow::Result;
use std::collections::{HashMap, HashSet};

pub(crate) fn database_url(url: &str) -> Result<jobboard::config::DatabaseUrl> {
    let vars: HashMap<String, String> = [("DATABASE_URL".to_string(), url.to_string())].into();
    Ok(jobboard::config::Config::from_map(&vars, false)?.database_url)
}

pub(crate) async fn sqlx_exec(url: &str, sql: &str) -> Result<()> {
    if url.starts_with("sqlite") {
        let mut c = sqlite_connect(url).await?;
        sqlx::query(sql).execute(&mut c).await?;
    } else {
        let mut c = crate::common::pg_connect(url).await?;
        sqlx::query(sql).execute(&mut c).await?;
    }
    Ok(())
}

pub(crate) async fn sqlx_scalar_i64(url: &str, sql: &str) -> Result<Option<i64>> {
    Ok(if url.starts_with("sqlite") {
        let mut c = sqlite_connect(url).await?;
        sqlx::query_scalar(sql).fetch_optional(&mut c).await?
    } else {
        let mut c = crate::common::pg_connect(url).await?;
        sqlx::query_scalar(sql).fetch_optional(&mut c).await?
    })
}

pub(crate) async fn sqlx_strings(url: &str, sql: &str) -> Result<HashSet<String>> {
    let rows: Vec<Option<String>> = if url.starts_with("sqlite") {
        let mut c = sqlite_connect(url).await?;
        sqlx::query_scalar(sql).fetch_all(&mut c).await?
    } else {
        let mut c = crate::common::pg_connect(url).await?;
        sqlx::query_scalar(sql).fetch_all(&mut c).await?
    };
    Ok(rows.into_iter().flatten().collect())
}

pub(crate) async fn sqlite_connect(url: &str) -> Result<sqlx::SqliteConnection> {
    use sqlx::Connection;
    Ok(sqlx::SqliteConnection::connect(url).await?)
}

/// A time as the store writes it, as an SQL literal (SQLite compares the text).
pub(crate) fn lit(t: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "'{}'",
        t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
    )
}
