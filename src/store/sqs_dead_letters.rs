//! With `QUEUE=sqs`, the database's record of the dead letters in `SQS_DLQ_URL`, by SQS message
//! id ([`SqsDeadLetterStore`]). Reads of the dead letters (the console, `dlq list`, an event's
//! story) come from here and never receive from the DLQ, which would hide its messages from a
//! redrive or purge running at the same moment. The SQS queue keeps it in
//! step with SQS: a record is written after the message reached the DLQ and deleted after the
//! message left it, so the DLQ may hold a message with no record (a failed write, or a message
//! SQS's own redrive policy moved) until the worker's upkeep finds it, but a record without its
//! message lasts only until a redrive or purge looks for it.

use super::StoreResult;
use async_trait::async_trait;

/// One dead letter of the DLQ as recorded. Times are ms since the epoch.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SqsDeadLetterRow {
    pub message_id: String,
    pub event_id: Option<String>,
    pub reason: String,
    pub attempts: i64,
    pub body: String,
    pub first_failed_at: i64,
    pub last_failed_at: i64,
}

#[async_trait]
pub trait SqsDeadLetterStore: Send + Sync {
    /// Records a dead letter now in the DLQ; a message id already recorded is left as it is.
    /// Returns whether it was new.
    async fn sqs_dead_letter_record(&self, row: &SqsDeadLetterRow) -> StoreResult<bool>;
    /// Every recorded dead letter, oldest first.
    async fn sqs_dead_letters(&self) -> StoreResult<Vec<SqsDeadLetterRow>>;
    /// A page, newest first, and how many there are.
    async fn sqs_dead_letter_page(
        &self,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<SqsDeadLetterRow>, i64)>;
    /// The newest recorded dead letter of an event.
    async fn sqs_dead_letter_of_event(
        &self,
        event_id: &str,
    ) -> StoreResult<Option<SqsDeadLetterRow>>;
    /// Forgets these message ids (gone from the DLQ); returns how many were recorded.
    async fn sqs_dead_letters_forget(&self, message_ids: &[String]) -> StoreResult<u64>;
    /// How many are recorded.
    async fn sqs_dead_letter_count(&self) -> StoreResult<i64>;
}
