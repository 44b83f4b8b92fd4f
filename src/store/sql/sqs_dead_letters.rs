//! The record of SQS's dead letters ([`SqsDeadLetterStore`]).

use super::S;
use crate::store::*;
use const_format::concatcp;
use sqlx::{FromRow, Row};

const COLUMNS: &str =
    "message_id, event_id, reason, attempts, body, first_failed_at, last_failed_at";
pub(super) const INSERT: &str = concatcp!(
    "INSERT INTO sqs_dead_letters (",
    COLUMNS,
    ") VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (message_id) DO NOTHING"
);
const ALL: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM sqs_dead_letters ORDER BY last_failed_at, message_id"
);
/// A page, newest first, with the total beside each row: one statement.
const PAGE: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    ", (SELECT COUNT(*) FROM sqs_dead_letters) AS total FROM sqs_dead_letters \
     ORDER BY last_failed_at DESC, message_id DESC LIMIT $1 OFFSET $2"
);
const OF_EVENT: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM sqs_dead_letters WHERE event_id = $1 ORDER BY last_failed_at DESC, message_id DESC \
     LIMIT 1"
);
const FORGET: &str = "DELETE FROM sqs_dead_letters WHERE message_id = $1";
const COUNT: &str = "SELECT COUNT(*) FROM sqs_dead_letters";

#[async_trait::async_trait]
impl SqsDeadLetterStore for S {
    async fn sqs_dead_letter_record(&self, row: &SqsDeadLetterRow) -> StoreResult<bool> {
        let reason = stored_text(&row.reason);
        let done = sqlx::query(INSERT)
            .bind(&row.message_id)
            .bind(&row.event_id)
            .bind(reason.as_ref())
            .bind(row.attempts)
            .bind(&row.body)
            .bind(row.first_failed_at)
            .bind(row.last_failed_at)
            .execute(&self.pool)
            .await
            .step("recording an SQS dead letter")?;
        Ok(done.rows_affected() > 0)
    }

    async fn sqs_dead_letters(&self) -> StoreResult<Vec<SqsDeadLetterRow>> {
        Ok(sqlx::query_as(ALL)
            .fetch_all(&self.pool)
            .await
            .step("reading the SQS dead letters")?)
    }

    async fn sqs_dead_letter_page(
        &self,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<SqsDeadLetterRow>, i64)> {
        let rows = sqlx::query(PAGE)
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await
            .step("reading a page of SQS dead letters")?;
        let total = match rows.first() {
            Some(row) => row.try_get::<i64, _>("total")?,
            // Past the end: the count alone.
            None => self.sqs_dead_letter_count().await?,
        };
        let letters = rows
            .iter()
            .map(SqsDeadLetterRow::from_row)
            .collect::<Result<Vec<_>, _>>()
            .step("reading an SQS dead letter row")?;
        Ok((letters, total))
    }

    async fn sqs_dead_letter_of_event(
        &self,
        event_id: &str,
    ) -> StoreResult<Option<SqsDeadLetterRow>> {
        Ok(sqlx::query_as(OF_EVENT)
            .bind(event_id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("reading the SQS dead letter of event {event_id}"))?)
    }

    async fn sqs_dead_letters_forget(&self, message_ids: &[String]) -> StoreResult<u64> {
        let mut tx = self.begin_write().await?;
        let mut n = 0;
        for id in message_ids {
            n += sqlx::query(FORGET)
                .bind(id)
                .execute(&mut *tx)
                .await
                .step("forgetting SQS dead letters")?
                .rows_affected();
        }
        tx.commit()
            .await
            .step("committing the forgotten SQS dead letters")?;
        Ok(n)
    }

    async fn sqs_dead_letter_count(&self) -> StoreResult<i64> {
        Ok(sqlx::query_scalar(COUNT)
            .fetch_one(&self.pool)
            .await
            .step("counting the SQS dead letters")?)
    }
}
