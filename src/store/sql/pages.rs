//! The public pages' reads ([`PageStore`]): deleted jobs.

use super::{Db, S};
use crate::store::*;
use anyhow::Context;

/// Recorded in a job's deletion transaction (see `jobs.rs`).
pub(super) const DELETED_INSERT: &str =
    "INSERT INTO deleted_jobs (id, deleted_at) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING";
const DELETED: &str = "SELECT EXISTS (SELECT 1 FROM deleted_jobs WHERE id = $1)";

#[async_trait::async_trait]
impl PageStore for S {
    async fn job_deleted(&self, id: i64) -> StoreResult<bool> {
        Ok(sqlx::query_scalar::<Db, bool>(DELETED)
            .bind(id)
            .fetch_one(&self.pool)
            .await
            .with_context(|| format!("reading whether job {id} was deleted"))?)
    }
}
