//! Résumés ([`ResumeStore`]). Every statement names the user beside the id, so another user's
//! résumé is never read or deleted.

use super::{Db, S};
use crate::domain::Conflict;
use crate::store::*;
use const_format::concatcp;
use sqlx::QueryBuilder;

const COLUMNS: &str = "id, user_id, filename, content_type, size, sha256, storage_key, created_at";
/// Held to the commit by an upload: a user's uploads take turns, so the count they read cannot
/// change before their insert commits.
const USER_LOCKED: &str = concatcp!(
    "SELECT id FROM users WHERE id = $1",
    <super::D as crate::store::dialect::Dialect>::FOR_UPDATE
);
const COUNT_OF_USER: &str = "SELECT COUNT(*) FROM resumes WHERE user_id = $1";
/// The résumé, inserted only while the user has fewer than `$8`: counted by this statement,
/// which runs after the lock on the user ([`USER_LOCKED`]) and so sees every résumé of an
/// upload that held the lock before it. No row when they have `$8` already.
const INSERT_UNDER_MAX: &str = concatcp!(
    "INSERT INTO resumes (user_id, filename, content_type, size, sha256, storage_key, \
     created_at, used_at) SELECT $1, $2, $3, $4, $5, $6, $7, $7 WHERE (",
    COUNT_OF_USER,
    ") < $8 RETURNING ",
    COLUMNS
);
const OF_USER: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM resumes WHERE user_id = $1 ORDER BY created_at DESC, id DESC"
);
const ONE_OF_USER: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM resumes WHERE id = $1 AND user_id = $2"
);
const DELETE: &str = "DELETE FROM resumes WHERE id = $1 AND user_id = $2 RETURNING storage_key";
/// The résumé attached to application `$1`, when user `$2` is the application's candidate or a
/// member of its job's company.
const OF_VISIBLE_APPLICATION: &str = "SELECT r.id, r.user_id, r.filename, r.content_type, \
     r.size, r.sha256, r.storage_key, r.created_at FROM applications a \
     JOIN resumes r ON r.id = a.resume_id JOIN jobs j ON j.id = a.job_id \
     WHERE a.id = $1 AND (a.candidate_id = $2 OR EXISTS (SELECT 1 FROM company_members m \
     WHERE m.company_id = j.company_id AND m.user_id = $2))";
/// The résumés neither used since `$1` nor attached to any application, oldest first.
const UNUSED_DELETE: &str = "DELETE FROM resumes WHERE id IN (SELECT r.id FROM resumes r \
     WHERE r.used_at < $1 AND NOT EXISTS \
     (SELECT 1 FROM applications a WHERE a.resume_id = r.id) \
     ORDER BY r.used_at LIMIT $2) RETURNING storage_key";

#[async_trait::async_trait]
impl ResumeStore for S {
    async fn create_resume(
        &self,
        user_id: i64,
        resume: NewResume,
        max: i64,
        idem: Idem<'_, ResumeRow>,
    ) -> StoreResult<ResumeRow> {
        let mut tx = self.begin_write().await?;
        sqlx::query_scalar::<_, i64>(USER_LOCKED)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("locking user {user_id}"))?
            .ok_or(StoreError::NotFound)?;
        let now = Self::clock(&mut *tx).await?;
        let row = sqlx::query_as::<_, ResumeRow>(INSERT_UNDER_MAX)
            .bind(user_id)
            .bind(&resume.filename)
            .bind(&resume.content_type)
            .bind(resume.size)
            .bind(&resume.sha256)
            .bind(&resume.storage_key)
            .bind(now)
            .bind(max)
            .fetch_optional(&mut *tx)
            .await
            .step("inserting the résumé")?
            .ok_or(StoreError::Conflict(Conflict::TooManyResumes))?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn resumes_of(&self, user_id: i64) -> StoreResult<Vec<ResumeRow>> {
        sqlx::query_as::<_, ResumeRow>(OF_USER)
            .bind(user_id)
            .fetch_all(&self.pool)
            .await
            .with_step(|| format!("reading the résumés of user {user_id}"))
    }

    async fn resume_of(&self, user_id: i64, id: i64) -> StoreResult<ResumeRow> {
        sqlx::query_as::<_, ResumeRow>(ONE_OF_USER)
            .bind(id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("reading résumé {id}"))?
            .ok_or(StoreError::NotFound)
    }

    async fn delete_resume(
        &self,
        user_id: i64,
        id: i64,
        idem: Idem<'_, ()>,
    ) -> StoreResult<String> {
        let mut tx = self.begin_write().await?;
        let key = sqlx::query_scalar::<_, String>(DELETE)
            .bind(id)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("deleting résumé {id}"))?
            .ok_or(StoreError::NotFound)?;
        Self::commit_with(tx, idem, &()).await?;
        Ok(key)
    }

    async fn visible_application_resume(
        &self,
        application_id: i64,
        user_id: i64,
    ) -> StoreResult<Option<ResumeRow>> {
        sqlx::query_as::<_, ResumeRow>(OF_VISIBLE_APPLICATION)
            .bind(application_id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("reading the résumé of application {application_id}"))
    }

    async fn resume_count(&self, user_id: i64) -> StoreResult<i64> {
        sqlx::query_scalar(COUNT_OF_USER)
            .bind(user_id)
            .fetch_one(&self.pool)
            .await
            .with_step(|| format!("counting the résumés of user {user_id}"))
    }

    async fn named_keys(&self, keys: &[String]) -> StoreResult<Vec<String>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let mut q =
            QueryBuilder::<Db>::new("SELECT storage_key FROM resumes WHERE storage_key IN (");
        let mut list = q.separated(", ");
        for key in keys {
            list.push_bind(key);
        }
        q.push(")");
        q.build_query_scalar::<String>()
            .fetch_all(&self.pool)
            .await
            .step("reading which files résumés name")
    }

    async fn delete_unused_resumes(
        &self,
        cutoff: chrono::DateTime<chrono::Utc>,
        limit: i64,
    ) -> StoreResult<Vec<String>> {
        sqlx::query_scalar::<_, String>(UNUSED_DELETE)
            .bind(cutoff)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .step("deleting the résumés past their retention")
    }
}
