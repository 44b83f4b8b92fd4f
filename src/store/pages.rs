//! What the public pages need from the store ([`PageStore`]): whether a job that is not there was
//! deleted.

use super::StoreResult;
use async_trait::async_trait;

#[async_trait]
pub trait PageStore: Send + Sync {
    /// Whether a job with this id was deleted (a deleted job's id is never a job's again).
    async fn job_deleted(&self, id: i64) -> StoreResult<bool>;
}
