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
}
