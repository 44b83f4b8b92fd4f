//! Accounts: users, passwords and the sign-in failure counters.

use super::{S, sql};
use crate::domain::Conflict;
use crate::store::dialect::constraint;
use crate::store::*;

impl S {
    pub(super) async fn create_user(&self, u: NewUser) -> StoreResult<UserRow> {
        let now = Self::clock(&self.pool).await?;
        let id: i64 = sqlx::query_scalar(sql::USER_INSERT)
            .bind(u.email.as_str())
            .bind(u.email.key())
            .bind(&u.name)
            .bind(u.role.as_str())
            .bind(&u.password_hash)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .map_err(|e| constraint(e, Conflict::EmailTaken))
            .step("inserting the user")?;
        self.user_by_id(id).await
    }

    pub(super) async fn user_by_id(&self, id: i64) -> StoreResult<UserRow> {
        sqlx::query_as::<_, UserRow>(sql::USER_BY_ID)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("reading user {id}"))?
            .ok_or(StoreError::NotFound)
    }

    pub(super) async fn user_by_email_key(&self, key: &str) -> StoreResult<UserRow> {
        sqlx::query_as::<_, UserRow>(sql::USER_BY_EMAIL_KEY)
            .bind(key)
            .fetch_optional(&self.pool)
            .await
            .step("reading a user by email")?
            .ok_or(StoreError::NotFound)
    }

    pub(super) async fn change_password(
        &self,
        user_id: i64,
        hash: &str,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(sql::USER_SET_PASSWORD)
            .bind(hash)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("setting the password of user {user_id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Self::commit_with(tx, idem, &()).await
    }

    pub(super) async fn delete_user(&self, user_id: i64) -> StoreResult<Vec<String>> {
        let mut tx = self.begin_write().await?;
        let keys: Vec<String> = sqlx::query_scalar(sql::USER_RESUMES_DELETE)
            .bind(user_id)
            .fetch_all(&mut *tx)
            .await
            .with_step(|| format!("deleting the résumés of user {user_id}"))?;
        let done = sqlx::query(sql::USER_DELETE)
            .bind(user_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("deleting user {user_id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        tx.commit()
            .await
            .with_step(|| format!("committing the deletion of user {user_id}"))?;
        Ok(keys)
    }

    pub(super) async fn notifications(&self, user_id: i64) -> StoreResult<Notifications> {
        sqlx::query_as::<_, Notifications>(sql::USER_NOTIFICATIONS)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("reading the email preferences of user {user_id}"))?
            .ok_or(StoreError::NotFound)
    }

    pub(super) async fn update_notifications(
        &self,
        user_id: i64,
        application_digest: Option<bool>,
        idem: Idem<'_, Notifications>,
    ) -> StoreResult<Notifications> {
        let mut tx = self.begin_write().await?;
        let updated = sqlx::query_as::<_, Notifications>(sql::USER_NOTIFICATIONS_UPDATE)
            .bind(application_digest)
            .bind(user_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("updating the email preferences of user {user_id}"))?
            .ok_or(StoreError::NotFound)?;
        Self::commit_with(tx, idem, &updated).await?;
        Ok(updated)
    }

    pub(super) async fn auth_failures(
        &self,
        keys: AuthKeys<'_>,
        window_ms: i64,
    ) -> StoreResult<AuthCounters> {
        self.auth_counters(sql::AUTH_FAILURES_READ, keys, window_ms)
            .await
    }

    pub(super) async fn count_auth_failure(
        &self,
        keys: AuthKeys<'_>,
        window_ms: i64,
    ) -> StoreResult<AuthCounters> {
        self.auth_counters(sql::AUTH_FAILURES_COUNT, keys, window_ms)
            .await
    }

    pub(super) async fn forgive_auth_failure(&self, keys: AuthKeys<'_>) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(sql::AUTH_FAILURES_FORGIVE_EMAIL)
            .bind(keys.email)
            .execute(&mut *tx)
            .await
            .step("forgiving the sign-in failures of the email")?;
        sqlx::query(sql::AUTH_FAILURES_FORGIVE_ADDR)
            .bind(keys.addr)
            .execute(&mut *tx)
            .await
            .step("giving back the address's sign-in failure")?;
        tx.commit()
            .await
            .step("committing the forgiven sign-in failure")?;
        Ok(())
    }

    pub(super) async fn delete_expired_auth_failures(
        &self,
        window_ms: i64,
        limit: i64,
    ) -> StoreResult<u64> {
        let done = sqlx::query(sql::AUTH_FAILURES_EXPIRED_DELETE)
            .bind(window_ms)
            .bind(limit)
            .execute(&self.pool)
            .await
            .step("deleting expired sign-in failure counters")?;
        Ok(done.rows_affected())
    }
}

impl S {
    /// Runs one of the `AUTH_FAILURES_*` statements that answer both counters.
    async fn auth_counters(
        &self,
        statement: &'static str,
        keys: AuthKeys<'_>,
        window_ms: i64,
    ) -> StoreResult<AuthCounters> {
        let rows = sqlx::query_as(statement)
            .bind(keys.email)
            .bind(keys.addr)
            .bind(window_ms)
            .fetch_all(&self.pool)
            .await
            .step("reading the sign-in failure counters")?;
        counters(rows)
    }
}

/// The counters in `(kind, failures, remaining_ms)` rows; a kind the schema does not allow is
/// an error, never silently dropped.
fn counters(rows: Vec<(String, i64, i64)>) -> StoreResult<AuthCounters> {
    let mut out = AuthCounters::default();
    for (kind, failures, remaining_ms) in rows {
        let count = FailureCount {
            failures,
            remaining_ms,
        };
        match kind.as_str() {
            "email" => out.email = count,
            "addr" => out.addr = count,
            _ => {
                return Err(StoreError::Other(anyhow::anyhow!(
                    "unknown auth failure counter kind {kind:?}"
                )));
            }
        }
    }
    Ok(out)
}
