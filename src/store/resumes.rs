//! Résumés ([`ResumeStore`]): the rows that name the files of the file store (`files`), each a
//! candidate's (migration 0027). Every method is scoped by the user, so that another user's
//! résumé is `NotFound`, never visible.

use super::{Idem, StoreResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// A résumé as stored. `storage_key` is the file store's key, never shown.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ResumeRow {
    pub id: i64,
    pub user_id: i64,
    pub filename: String,
    pub content_type: String,
    pub size: i64,
    pub sha256: String,
    pub storage_key: String,
    pub created_at: DateTime<Utc>,
}

/// A new résumé, its file already in the store under `storage_key`.
#[derive(Debug, Clone)]
pub struct NewResume {
    pub filename: String,
    pub content_type: String,
    pub size: i64,
    pub sha256: String,
    pub storage_key: String,
}

#[async_trait]
pub trait ResumeStore: Send + Sync {
    /// Names the stored file as `user_id`'s résumé; `Conflict(TooManyResumes)` when they have
    /// `max` already, decided under a lock on the user, so that concurrent uploads cannot pass
    /// it. `NotFound` when the user is gone.
    async fn create_resume(
        &self,
        user_id: i64,
        resume: NewResume,
        max: i64,
        idem: Idem<'_, ResumeRow>,
    ) -> StoreResult<ResumeRow>;
    /// The user's résumés, newest first.
    async fn resumes_of(&self, user_id: i64) -> StoreResult<Vec<ResumeRow>>;
    /// The user's résumé `id`; `NotFound` if there is none or it is another user's.
    async fn resume_of(&self, user_id: i64, id: i64) -> StoreResult<ResumeRow>;
    /// Deletes the user's résumé `id` (applications that used it keep none) and gives its file's
    /// key, for the caller to delete after the commit.
    async fn delete_resume(&self, user_id: i64, id: i64, idem: Idem<'_, ()>)
    -> StoreResult<String>;
    /// The résumé attached to application `application_id` if `user_id` may see the
    /// application (its candidate, or a member of its job's company), in one statement; `None`
    /// when it is not theirs to see or has none.
    async fn visible_application_resume(
        &self,
        application_id: i64,
        user_id: i64,
    ) -> StoreResult<Option<ResumeRow>>;
    /// How many résumés the user has.
    async fn resume_count(&self, user_id: i64) -> StoreResult<i64>;
    /// Which of `keys` a résumé names: the upkeep keeps those files.
    async fn named_keys(&self, keys: &[String]) -> StoreResult<Vec<String>>;
    /// Deletes up to `limit` résumés attached to no application and neither uploaded nor
    /// attached since `cutoff`, and gives their files' keys.
    async fn delete_unused_resumes(
        &self,
        cutoff: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<Vec<String>>;
}
