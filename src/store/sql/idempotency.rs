//! [`IdempotencyStore`]: the records of retry-safe writes.

use super::{S, sql};
use crate::store::{IdemBegin, IdempotencyStore, Step, StoreResult};

#[async_trait::async_trait]
impl IdempotencyStore for S {
    async fn idem_begin(
        &self,
        user_id: i64,
        method: &str,
        route: &str,
        key: &str,
        request_hash: &str,
        lock_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<IdemBegin> {
        let token = uuid::Uuid::new_v4().to_string();
        let mut tx = self.begin_write().await?;
        sqlx::query(sql::IDEM_DELETE_EXPIRED)
            .bind(user_id)
            .bind(method)
            .bind(route)
            .bind(key)
            .bind(ttl_ms)
            .execute(&mut *tx)
            .await
            .step("deleting the key's expired record")?;
        let inserted: Option<i64> = sqlx::query_scalar(sql::IDEM_INSERT)
            .bind(user_id)
            .bind(method)
            .bind(route)
            .bind(key)
            .bind(request_hash)
            .bind(lock_ms)
            .bind(&token)
            .fetch_optional(&mut *tx)
            .await
            .step("inserting the key's record")?;
        if let Some(record_id) = inserted {
            tx.commit().await.step("committing the key's record")?;
            return Ok(IdemBegin::Started { record_id, token });
        }
        type Found = (
            i64,
            String,
            String,
            Option<i64>,
            Option<i64>,
            Option<String>,
            i64,
        );
        let (id, hash, state, locked_until, status, body, now): Found =
            sqlx::query_as(sql::IDEM_READ_LOCKED)
                .bind(user_id)
                .bind(method)
                .bind(route)
                .bind(key)
                .fetch_one(&mut *tx)
                .await
                .step("reading the key's record")?;
        if hash != request_hash {
            return Ok(IdemBegin::Mismatch);
        }
        if state == "done" {
            return Ok(IdemBegin::Replay {
                status: status.unwrap_or(200) as u16,
                body: body.unwrap_or_default(),
            });
        }
        if locked_until.unwrap_or(0) > now {
            return Ok(IdemBegin::InFlight);
        }
        // The request that held it died before finishing: nothing was written.
        sqlx::query(sql::IDEM_TAKE_OVER)
            .bind(id)
            .bind(lock_ms)
            .bind(&token)
            .execute(&mut *tx)
            .await
            .step("taking over the key's record")?;
        tx.commit().await.step("committing the key's take-over")?;
        Ok(IdemBegin::Started {
            record_id: id,
            token,
        })
    }

    async fn idem_complete(
        &self,
        record_id: i64,
        token: &str,
        status: u16,
        body: &str,
    ) -> StoreResult<()> {
        sqlx::query(sql::IDEM_COMPLETE)
            .bind(record_id)
            .bind(status as i64)
            .bind(body)
            .bind(token)
            .execute(&self.pool)
            .await
            .with_step(|| format!("storing the response under idempotency record {record_id}"))?;
        Ok(())
    }

    async fn idem_release(&self, record_id: i64, token: &str) -> StoreResult<()> {
        sqlx::query(sql::IDEM_RELEASE)
            .bind(record_id)
            .bind(token)
            .execute(&self.pool)
            .await
            .with_step(|| format!("releasing idempotency record {record_id}"))?;
        Ok(())
    }

    async fn delete_idempotency_keys(&self, older_than_ms: i64, batch: i64) -> StoreResult<u64> {
        let done = sqlx::query(sql::IDEM_EXPIRED_DELETE)
            .bind(older_than_ms)
            .bind(batch)
            .execute(&self.pool)
            .await
            .step("deleting expired idempotency keys")?;
        Ok(done.rows_affected())
    }
}
