//! Webhook endpoints ([`WebhookStore`]): where a company's systems receive its events
//! (migration 0025). Every method is scoped by the company, so that another company's endpoint
//! is `NotFound`, never visible.

use super::{Idem, Page, StoreResult};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// An endpoint as stored. Its secrets are `whsec_…` texts (`webhooks::sign::Secret`).
#[derive(Clone, sqlx::FromRow)]
pub struct EndpointRow {
    pub id: i64,
    pub company_id: i64,
    pub url: String,
    /// Space-separated event types (`domain::webhook::stored_events`).
    pub events: String,
    pub description: Option<String>,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_secret_until: Option<DateTime<Utc>>,
    pub paused: bool,
    pub disabled_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl std::fmt::Debug for EndpointRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointRow")
            .field("id", &self.id)
            .field("company_id", &self.company_id)
            .field("url", &self.url)
            .field("events", &self.events)
            .field("paused", &self.paused)
            .field("disabled_reason", &self.disabled_reason)
            .finish_non_exhaustive()
    }
}

/// A new endpoint, its fields validated and its URL checked.
#[derive(Clone)]
pub struct NewEndpoint {
    pub url: String,
    /// As stored (`domain::webhook::events_text`).
    pub events: String,
    pub description: Option<String>,
    pub secret: String,
}

/// What `PATCH …/webhooks/{wid}` may change; `None` keeps the value. `description:
/// Some(None)` clears it; `paused: Some(false)` also clears `disabled_reason`.
#[derive(Debug, Clone, Default)]
pub struct EndpointChange {
    pub url: Option<String>,
    pub events: Option<String>,
    pub description: Option<Option<String>>,
    pub paused: Option<bool>,
}

/// The endpoints of the API's `/api/companies/{id}/webhooks`.
#[async_trait]
pub trait WebhookStore: Send + Sync {
    /// Creates an endpoint for `company_id`; `Conflict(TooManyWebhooks)` when the company has
    /// `max` already, decided under a lock on the company, so that concurrent requests cannot
    /// pass it. `NotFound` when the company is gone.
    async fn create_endpoint(
        &self,
        company_id: i64,
        endpoint: NewEndpoint,
        max: i64,
        idem: Idem<'_, EndpointRow>,
    ) -> StoreResult<EndpointRow>;
    /// The company's endpoint `id`; `NotFound` if there is none or it is another company's.
    async fn endpoint_of(&self, company_id: i64, id: i64) -> StoreResult<EndpointRow>;
    /// A page of the company's endpoints, oldest first, and their count.
    async fn endpoints_of(
        &self,
        company_id: i64,
        page: Page,
    ) -> StoreResult<(Vec<EndpointRow>, i64)>;
    /// Changes the company's endpoint `id`; `NotFound` if there is none.
    async fn update_endpoint(
        &self,
        company_id: i64,
        id: i64,
        change: EndpointChange,
        idem: Idem<'_, EndpointRow>,
    ) -> StoreResult<EndpointRow>;
    /// Deletes the company's endpoint `id`; `NotFound` if there is none.
    async fn delete_endpoint(
        &self,
        company_id: i64,
        id: i64,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()>;
    /// Makes `secret` the endpoint's secret; the one it replaces keeps signing beside it for
    /// `overlap` (from the database's clock). `NotFound` if there is none.
    async fn rotate_endpoint_secret(
        &self,
        company_id: i64,
        id: i64,
        secret: String,
        overlap: chrono::Duration,
        idem: Idem<'_, EndpointRow>,
    ) -> StoreResult<EndpointRow>;
    /// A page of the endpoint's attempts, newest first, and their count; `NotFound` if there is
    /// no such endpoint of the company.
    async fn endpoint_attempts(
        &self,
        company_id: i64,
        id: i64,
        page: Page,
    ) -> StoreResult<(Vec<AttemptRow>, i64)>;
    /// Queues a `ping` delivery to the endpoint (a fresh `webhook-id` each time), whatever
    /// events it takes; `NotFound` if there is none.
    async fn queue_ping(&self, company_id: i64, id: i64, idem: Idem<'_, ()>) -> StoreResult<()>;
    /// Makes the endpoint's delivery of `event_id` due now, with the same `webhook-id`, for
    /// another `RETRY_FOR`; `NotFound` if the endpoint has no delivery of that event.
    async fn redeliver(
        &self,
        company_id: i64,
        id: i64,
        event_id: &str,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()>;
}

/// A delivery a worker claimed: what to send, where, signed with which secrets, and the lease
/// that makes its outcome its own to record.
#[derive(Clone)]
pub struct DeliveryClaim {
    pub id: i64,
    pub webhook_id: String,
    pub endpoint_id: i64,
    /// The fact's key (`domain::webhook::Fact::key`).
    pub event_id: String,
    pub type_name: String,
    pub body: String,
    /// Attempts before this one.
    pub attempts: i64,
    /// When it was written (or redelivered): it is given up `RETRY_FOR` after.
    pub created_at: DateTime<Utc>,
    pub url: String,
    /// The endpoint's secret, and the previous one while it still signs.
    pub secrets: Vec<String>,
    pub lease_id: String,
    /// Its previous claim's lease had lapsed: this claim is a reclaim.
    pub reclaimed: bool,
    /// When it was claimed, on the database's clock: its `webhook-timestamp`.
    pub claimed_at: DateTime<Utc>,
}

impl std::fmt::Debug for DeliveryClaim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeliveryClaim")
            .field("id", &self.id)
            .field("webhook_id", &self.webhook_id)
            .field("endpoint_id", &self.endpoint_id)
            .field("event_id", &self.event_id)
            .field("attempts", &self.attempts)
            .finish_non_exhaustive()
    }
}

/// How an attempt ended, as the worker saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptResult {
    /// A 2xx answer.
    Delivered,
    /// 410 Gone: the receiver asks for no more; the endpoint is disabled.
    Gone,
    /// Any other answer, a timeout, a refused address or a connection that failed: tried again
    /// later, until the delivery is too old.
    Failed,
}

/// One attempt, as recorded and listed.
#[derive(Debug, Clone)]
pub struct Attempt {
    pub result: AttemptResult,
    /// The HTTP status, when an answer came.
    pub status: Option<u16>,
    pub duration_ms: i64,
    pub error: Option<String>,
}

/// What recording an attempt did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Delivered,
    /// Failed, to be tried again at the time given by the backoff.
    Retrying,
    /// Failed, and too old to try again.
    GaveUp,
    /// The endpoint was disabled by this attempt (a 410, or too long without a success).
    Disabled,
    /// The lease was no longer this claim's: nothing recorded.
    LeaseLost,
}

/// An attempt as `GET …/webhooks/{wid}/attempts` lists it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AttemptRow {
    pub event_id: String,
    pub webhook_id: String,
    pub attempt: i64,
    pub at: DateTime<Utc>,
    pub status: Option<i64>,
    pub duration_ms: i64,
    pub error: Option<String>,
}

/// The worker's side of webhooks: claiming due deliveries and recording their attempts.
#[async_trait]
pub trait WebhookDeliveryStore: Send + Sync {
    /// Claims up to `limit` due deliveries of enabled endpoints, soonest first, each with a
    /// lease of `lease_ms` on the database's clock, at most `lane` minus `in_flight[endpoint]`
    /// of one endpoint. A delivery whose previous lease lapsed is claimed again (`reclaimed`).
    async fn claim_deliveries(
        &self,
        limit: i64,
        lease_ms: i64,
        lane: usize,
        in_flight: &std::collections::HashMap<i64, usize>,
    ) -> StoreResult<Vec<DeliveryClaim>>;
    /// Records an attempt of a claimed delivery, if its lease is still the claim's: the
    /// attempt's row, the delivery's state (delivered, due again after `retry_delay`, or given
    /// up past `RETRY_FOR`), and the endpoint's (its last success, or since when it fails, and
    /// disabled on a 410 or after `DISABLE_AFTER` without a success).
    async fn record_attempt(
        &self,
        claim: &DeliveryClaim,
        attempt: &Attempt,
        retry_delay: chrono::Duration,
    ) -> StoreResult<Recorded>;
    /// Deletes up to `limit` deliveries that ended (delivered or given up) before `cutoff`,
    /// with their attempts; how many went.
    async fn delete_finished_deliveries(
        &self,
        cutoff: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<u64>;
}
