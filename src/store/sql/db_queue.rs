//! The database queue ([`QueueStore`]): the outbox table as a queue, and its dead letters.

use super::{S, sql};
use crate::store::dialect::placeholders;
use crate::store::*;
use const_format::concatcp;
use sqlx::{FromRow, Row};

const DEAD_LETTER_PAGE: &str = concatcp!(
    "SELECT ",
    sql::DEAD_LETTER_COLUMNS,
    ", (SELECT COUNT(*) FROM dead_letters) AS total FROM dead_letters ORDER BY id DESC \
     LIMIT $1 OFFSET $2"
);

#[async_trait::async_trait]
impl QueueStore for S {
    async fn queue_receive(&self, max: i64, visibility_ms: i64) -> StoreResult<Vec<QueuedMessage>> {
        let receipt = uuid::Uuid::new_v4().to_string();
        let mut tx = self.begin_write().await?;
        let rows =
            sqlx::query_as::<_, (i64, String, String, i64, Option<String>)>(sql::QUEUE_RECEIVE)
                .bind(visibility_ms)
                .bind(&receipt)
                .bind(max)
                .fetch_all(&mut *tx)
                .await
                .step("receiving queue messages")?;
        tx.commit().await.step("committing the receive")?;
        let mut messages: Vec<QueuedMessage> = rows
            .into_iter()
            .map(
                |(id, receipt, body, receive_count, event_id)| QueuedMessage {
                    id,
                    receipt,
                    body,
                    receive_count,
                    event_id,
                },
            )
            .collect();
        messages.sort_by_key(|m| m.id);
        Ok(messages)
    }

    async fn queue_ack(&self, id: i64, receipt: &str) -> StoreResult<bool> {
        let done = sqlx::query(sql::QUEUE_ACK)
            .bind(id)
            .bind(receipt)
            .execute(&self.pool)
            .await
            .with_step(|| format!("acknowledging queue message {id}"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn queue_delay(&self, id: i64, receipt: &str, delay_ms: i64) -> StoreResult<bool> {
        let done = sqlx::query(sql::QUEUE_DELAY)
            .bind(id)
            .bind(receipt)
            .bind(delay_ms.max(0))
            .execute(&self.pool)
            .await
            .with_step(|| format!("delaying queue message {id}"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn queue_dead_letter(
        &self,
        id: i64,
        receipt: &str,
        dead: NewDeadLetter,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        Self::dead_letter_in(&mut tx, &dead)
            .await
            .with_step(|| format!("dead-lettering queue message {id}"))?;
        sqlx::query(sql::QUEUE_ACK)
            .bind(id)
            .bind(receipt)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("deleting dead-lettered queue message {id}"))?;
        tx.commit()
            .await
            .with_step(|| format!("committing the dead letter of queue message {id}"))?;
        Ok(())
    }

    async fn queue_enqueue(
        &self,
        event_id: Option<&str>,
        application_id: Option<i64>,
        body: &str,
    ) -> StoreResult<i64> {
        let now = Self::clock(&self.pool).await?;
        Ok(sqlx::query_scalar(sql::OUTBOX_INSERT)
            .bind(event_id)
            .bind(application_id)
            .bind(body)
            .bind(now)
            .fetch_one(&self.pool)
            .await
            .step("adding a message to the queue")?)
    }

    async fn queue_stats(&self) -> StoreResult<QueueStats> {
        let (pending, oldest): (i64, Option<chrono::DateTime<chrono::Utc>>) =
            sqlx::query_as(sql::QUEUE_STATS)
                .fetch_one(&self.pool)
                .await
                .step("reading the queue's figures")?;
        let dead_letters: i64 = sqlx::query_scalar(sql::DEAD_LETTER_COUNT)
            .fetch_one(&self.pool)
            .await
            .step("counting the dead letters")?;
        // The oldest row's age by the clock that stamped it.
        let now = Self::clock(&self.pool).await?;
        Ok(QueueStats {
            pending,
            oldest_age_ms: oldest.map(|t| (now - t).num_milliseconds().max(0)),
            dead_letters,
        })
    }

    // Its text is pinned by the protocol model (`tests/model/statements.rs`), which hashes it for
    // review: its one statement's error goes up without a step of its own until that review.
    async fn queue_ack_many(&self, receipt: &str, ids: &[i64]) -> StoreResult<u64> {
        if ids.is_empty() {
            return Ok(0);
        }
        let statement = format!(
            "DELETE FROM outbox WHERE receipt = $1 AND id IN ({})",
            placeholders(2, ids.len())
        );
        let mut query = sqlx::query(&statement).bind(receipt);
        for id in ids {
            query = query.bind(id);
        }
        Ok(query.execute(&self.pool).await?.rows_affected())
    }

    async fn dead_letters(&self) -> StoreResult<Vec<DeadLetterRow>> {
        Ok(sqlx::query_as::<_, DeadLetterRow>(sql::DEAD_LETTERS)
            .fetch_all(&self.pool)
            .await
            .step("reading the dead letters")?)
    }

    async fn redrive(
        &self,
        ids: Option<&[i64]>,
        include_invalid: bool,
    ) -> StoreResult<RedriveResult> {
        let mut tx = self.begin_write().await?;
        let all: Vec<DeadLetterRow> = sqlx::query_as(sql::DEAD_LETTERS)
            .fetch_all(&mut *tx)
            .await
            .step("reading the dead letters to redrive")?;
        let mut result = RedriveResult::default();
        let now = Self::clock(&mut *tx).await?;
        let chosen: Vec<&DeadLetterRow> = match ids {
            None => all.iter().collect(),
            Some(ids) => {
                let found: Vec<&DeadLetterRow> =
                    all.iter().filter(|d| ids.contains(&d.id)).collect();
                result.not_found = (ids.len() - found.len()) as u64;
                found
            }
        };
        for d in chosen {
            if d.event_id.is_none() && !include_invalid {
                result.skipped_invalid += 1;
                continue;
            }
            sqlx::query(sql::OUTBOX_INSERT)
                .bind(&d.event_id)
                .bind(None::<i64>)
                .bind(&d.body)
                .bind(now)
                .execute(&mut *tx)
                .await
                .step("re-queueing a dead letter")?;
            if let Some(event_id) = &d.event_id {
                // Attempts start again from zero; the story keeps a trace of the redrive.
                sqlx::query(sql::CLAIM_RESET)
                    .bind(event_id)
                    .execute(&mut *tx)
                    .await
                    .step("resetting a redriven event's failures")?;
                sqlx::query(sql::REDRIVE_TRACE)
                    .bind(event_id)
                    .bind(d.attempts)
                    .bind(None::<i64>)
                    .execute(&mut *tx)
                    .await
                    .step("noting a redrive")?;
            }
            sqlx::query(sql::DEAD_LETTER_DELETE)
                .bind(d.id)
                .execute(&mut *tx)
                .await
                .step("deleting a redriven dead letter")?;
            result.redriven += 1;
        }
        tx.commit().await.step("committing the redrive")?;
        Ok(result)
    }

    async fn purge_dead_letters(&self, ids: Option<&[i64]>) -> StoreResult<u64> {
        let mut tx = self.begin_write().await?;
        let mut n = 0;
        match ids {
            None => {
                n = sqlx::query(sql::DEAD_LETTERS_DELETE_ALL)
                    .execute(&mut *tx)
                    .await
                    .step("purging every dead letter")?
                    .rows_affected();
            }
            Some(ids) => {
                for id in ids {
                    n += sqlx::query(sql::DEAD_LETTER_DELETE)
                        .bind(id)
                        .execute(&mut *tx)
                        .await
                        .step("purging a dead letter")?
                        .rows_affected();
                }
            }
        }
        tx.commit().await.step("committing the purge")?;
        Ok(n)
    }

    async fn dead_letter_page(
        &self,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<DeadLetterRow>, i64)> {
        let rows = sqlx::query(DEAD_LETTER_PAGE)
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await
            .step("reading a page of dead letters")?;
        let total = match rows.first() {
            Some(row) => row.try_get::<i64, _>("total")?,
            // Past the end: the count alone.
            None => sqlx::query_scalar(sql::DEAD_LETTER_COUNT)
                .fetch_one(&self.pool)
                .await
                .step("counting the dead letters")?,
        };
        let letters = rows
            .iter()
            .map(DeadLetterRow::from_row)
            .collect::<Result<Vec<_>, _>>()
            .step("reading a dead letter row")?;
        Ok((letters, total))
    }
}
