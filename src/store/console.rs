//! What the operator console needs from the store, and nothing more: operator rights, the queue
//! figures in one statement, an event's story, and a page of dead letters. A narrow trait of its
//! own, so the console's handlers see none of the worker's methods.

use super::{DeadLetterRow, StoreResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// What `grant` or `revoke` did to an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperatorChange {
    pub user_id: i64,
    /// `false`: the account already had (or already lacked) the rights.
    pub changed: bool,
}

/// The database's part of the queue figures, read in one statement. Times are ms since the epoch
/// on the database's clock.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsoleFigures {
    /// Rows in the outbox (with `QUEUE=db` the outbox is the queue).
    pub outbox_pending: i64,
    /// Age of the oldest outbox row.
    pub oldest_pending_age_ms: Option<i64>,
    /// Events claimed by a worker and not finished: a send under way, or a lease yet to lapse.
    pub in_flight: i64,
    /// Events whose email was accepted in the last hour.
    pub sent_last_hour: i64,
    /// Events whose last failed send was in the last hour (waiting for a retry, or dead).
    pub failed_last_hour: i64,
    /// Rows in the database queue's dead letters.
    pub dead_letters: i64,
}

/// The status change an event records.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventChange {
    pub application_id: i64,
    pub job_id: Option<i64>,
    pub job_title: Option<String>,
    pub candidate_id: Option<i64>,
    pub old_status: Option<String>,
    pub new_status: String,
    pub changed_by: i64,
    pub at: DateTime<Utc>,
}

/// The worker's record of an event (`processed_events`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProcessedRecord {
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    /// When the current claim's lease lapses (ms since the epoch); none unless in progress.
    pub locked_until: Option<i64>,
    /// The record's last change (ms since the epoch): when it was sent, for a sent one.
    pub updated_at: i64,
    pub first_failed_at: Option<i64>,
}

/// The trace of an event's redrives (`event_redrives`): each forgot the event's failed sends.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RedriveTrace {
    /// How many times the event was redriven.
    pub redrives: i64,
    /// The failed sends its dead letters had counted, over all its redrives.
    pub attempts_before: i64,
    /// When it was last redriven (ms since the epoch).
    pub last_redriven_at: i64,
}

/// A webhook delivery of an event, with its endpoint and its latest attempt's answer.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StoryDelivery {
    pub webhook_id: String,
    pub endpoint_id: i64,
    pub company_id: i64,
    pub url: String,
    /// The delivery's fact: the event's id, or what the upkeep's one-per-member events share.
    pub event_id: String,
    pub type_name: String,
    /// `pending`, `delivered` or `failed` (given up).
    pub status: String,
    pub attempts: i64,
    pub next_attempt_at: DateTime<Utc>,
    pub finished_at: Option<DateTime<Utc>>,
    /// The latest attempt's HTTP status (`None`: no answer, or no attempt yet).
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
}

/// An endpoint that fails (no success since `failing_since`) or that deliveries stopped for
/// (`disabled_reason`), with its company and its latest attempt.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FailingEndpoint {
    pub id: i64,
    pub company_id: i64,
    pub company_name: String,
    pub url: String,
    pub paused: bool,
    pub disabled_reason: Option<String>,
    pub failing_since: Option<DateTime<Utc>>,
    pub last_success_at: Option<DateTime<Utc>>,
    /// Deliveries still to be made to it.
    pub pending: i64,
    pub last_attempt_at: Option<DateTime<Utc>>,
    pub last_status: Option<i64>,
    pub last_error: Option<String>,
}

/// Everything the database knows of one event id.
#[derive(Debug, Clone)]
pub struct EventStory {
    pub change: Option<EventChange>,
    pub processed: Option<ProcessedRecord>,
    pub dead_letter: Option<DeadLetterRow>,
    pub redrive: Option<RedriveTrace>,
    /// Its webhook deliveries, by endpoint.
    pub webhooks: Vec<StoryDelivery>,
}

impl EventStory {
    /// Nothing is known of the id.
    pub fn is_unknown(&self) -> bool {
        self.change.is_none()
            && self.processed.is_none()
            && self.dead_letter.is_none()
            && self.redrive.is_none()
            && self.webhooks.is_empty()
    }
}

#[async_trait]
pub trait ConsoleStore: Send + Sync {
    /// Whether the account holds operator rights.
    async fn is_operator(&self, user_id: i64) -> StoreResult<bool>;
    /// Gives (`grant`) or takes the operator rights of the account with this email key;
    /// `NotFound` if there is no such account.
    async fn set_operator(&self, email_key: &str, grant: bool) -> StoreResult<OperatorChange>;
    /// The queue figures the database holds, in one statement.
    async fn console_figures(&self) -> StoreResult<ConsoleFigures>;
    /// The status change, the processed record, the dead letter, the redrives and the webhook
    /// deliveries of `event_id`. A delivery's `webhook-id` (`msg_…`) finds that delivery alone.
    async fn event_story(&self, event_id: &str) -> StoreResult<EventStory>;
    /// The endpoints that fail or were disabled, the longest failing first, at most `limit`.
    async fn failing_webhooks(&self, limit: i64) -> StoreResult<Vec<FailingEndpoint>>;
}
