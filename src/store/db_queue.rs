//! What the database queue (`QUEUE=db`) needs from the store: the outbox table read as a queue,
//! with a visibility timeout per message, and its dead letters. Times are ms on the database
//! clock.

use super::{DeadLetterRow, NewDeadLetter, QueueStats, QueuedMessage, RedriveResult, StoreResult};
use async_trait::async_trait;

#[async_trait]
pub trait QueueStore: Send + Sync {
    /// Receives up to `max` visible messages, hiding each for `visibility_ms`.
    async fn queue_receive(&self, max: i64, visibility_ms: i64) -> StoreResult<Vec<QueuedMessage>>;
    /// Deletes a received message; `false` if the receipt is stale.
    async fn queue_ack(&self, id: i64, receipt: &str) -> StoreResult<bool>;
    /// Makes a received message visible again after `delay_ms` (0: now).
    async fn queue_delay(&self, id: i64, receipt: &str, delay_ms: i64) -> StoreResult<bool>;
    /// Moves a received message to the dead letters, in one transaction.
    async fn queue_dead_letter(
        &self,
        id: i64,
        receipt: &str,
        dead: NewDeadLetter,
    ) -> StoreResult<()>;
    /// Adds a message (redrive, or an operator's hand-made one). Returns its id.
    async fn queue_enqueue(
        &self,
        event_id: Option<&str>,
        application_id: Option<i64>,
        body: &str,
    ) -> StoreResult<i64>;
    async fn queue_stats(&self) -> StoreResult<QueueStats>;
    /// Deletes several received messages of one receive, in one statement; returns how many
    /// were still ours.
    async fn queue_ack_many(&self, receipt: &str, ids: &[i64]) -> StoreResult<u64>;
    async fn dead_letters(&self) -> StoreResult<Vec<DeadLetterRow>>;
    /// Re-queues dead letters (all, or these ids) with their attempts reset.
    async fn redrive(
        &self,
        ids: Option<&[i64]>,
        include_invalid: bool,
    ) -> StoreResult<RedriveResult>;
    async fn purge_dead_letters(&self, ids: Option<&[i64]>) -> StoreResult<u64>;
    /// A page of the database queue's dead letters, newest first, and how many there are.
    async fn dead_letter_page(
        &self,
        offset: i64,
        limit: i64,
    ) -> StoreResult<(Vec<DeadLetterRow>, i64)>;
}
