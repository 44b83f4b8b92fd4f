//! The queue between the outbox and the worker: receive with a visibility timeout, delete when
//! handled, make visible again later, dead-letter. `db.rs` implements it on the database itself;
//! any other queue (SQS) fits the same trait without changing the worker.

pub mod db;
pub mod sqs;

use async_trait::async_trait;
use std::time::Duration;

/// One received message.
#[derive(Debug, Clone)]
pub struct Message {
    /// The queue's id for the message (not the event id).
    pub id: String,
    /// This receive's handle: acknowledging or delaying needs it.
    pub receipt: String,
    pub body: String,
    /// How many times the queue has handed this message out (informational: attempts are
    /// counted per event id in the database, and only for failed sends).
    pub receive_count: i64,
}

/// A dead letter as `jobboard dlq list` shows it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeadLetter {
    pub id: String,
    pub event_id: Option<String>,
    pub reason: String,
    pub attempts: i64,
    #[serde(with = "crate::timefmt")]
    pub first_failed_at: chrono::DateTime<chrono::Utc>,
    #[serde(with = "crate::timefmt")]
    pub last_failed_at: chrono::DateTime<chrono::Utc>,
    pub body: String,
}

/// Why and after how many failed sends a message is dead-lettered.
#[derive(Debug, Clone)]
pub struct DeadLetterReason {
    pub event_id: Option<String>,
    pub reason: String,
    pub attempts: i64,
    /// ms since the epoch of the first failure, if known.
    pub first_failed_at: Option<i64>,
    /// The message could not be read as an event: it is kept whatever event id it claims,
    /// where an event's own failures keep one dead letter per event.
    pub invalid: bool,
}

/// Which dead letters a command is about.
#[derive(Debug, Clone)]
pub enum Selection {
    All,
    Ids(Vec<String>),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redriven {
    pub redriven: u64,
    pub not_found: u64,
    pub skipped_invalid: u64,
}

#[async_trait]
pub trait Queue: Send + Sync + 'static {
    /// `db` or `sqs`.
    fn kind(&self) -> &'static str;
    /// The most messages one receive returns (SQS: 10).
    fn max_receive(&self) -> usize {
        10
    }
    /// Up to `max` messages, each hidden for the visibility timeout; waits up to `wait` for one.
    async fn receive(&self, max: usize, wait: Duration) -> anyhow::Result<Vec<Message>>;
    /// Deletes a handled message.
    async fn ack(&self, m: &Message) -> anyhow::Result<()>;
    /// Deletes several handled messages; a queue that can do it in one call overrides this.
    async fn ack_many(&self, ms: &[Message]) -> anyhow::Result<()> {
        futures::future::try_join_all(ms.iter().map(|m| self.ack(m))).await?;
        Ok(())
    }
    /// Makes the message visible again after `delay` (zero: at once).
    async fn retry_later(&self, m: &Message, delay: Duration) -> anyhow::Result<()>;
    /// Keeps the message hidden for `by` from now (a slow send in flight).
    async fn extend(&self, m: &Message, by: Duration) -> anyhow::Result<()>;
    /// Moves the message to the dead letters with its reason.
    async fn dead_letter(&self, m: &Message, reason: DeadLetterReason) -> anyhow::Result<()>;
    /// Puts a message on the queue (a hand-made one, or a copy to deliver again).
    async fn enqueue(&self, body: &str) -> anyhow::Result<()>;
    async fn ping(&self) -> anyhow::Result<()>;
    /// Messages waiting, and the age of the oldest, for metrics.
    async fn stats(&self) -> anyhow::Result<(i64, Option<Duration>, i64)>;

    async fn dead_letters(&self) -> anyhow::Result<Vec<DeadLetter>>;
    /// `limit` dead letters from `offset`, newest first, and how many there are. A queue that
    /// can read a page without reading them all overrides this.
    async fn dead_letter_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> anyhow::Result<(Vec<DeadLetter>, i64)> {
        let mut all = self.dead_letters().await?;
        let total = all.len() as i64;
        all.reverse();
        Ok((all.into_iter().skip(offset).take(limit).collect(), total))
    }
    async fn redrive(&self, which: Selection, include_invalid: bool) -> anyhow::Result<Redriven>;
    async fn purge(&self, which: Selection) -> anyhow::Result<u64>;
    /// Brings the list of dead letters in step with a queue that can hold some it was not told
    /// of (SQS's own redrive policy); returns how many it found. Nothing to do elsewhere.
    async fn reconcile_dead_letters(&self) -> anyhow::Result<u64> {
        Ok(0)
    }
}
