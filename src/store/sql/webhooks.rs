//! Webhook endpoints ([`WebhookStore`]). Every statement names the company beside the id, so
//! another company's endpoint is never read, changed or deleted.

use super::webhook_deliveries::DELIVERY_INSERT;
use super::{Db, S};
use crate::domain::Conflict;
use crate::domain::webhook;
use crate::store::dialect::Dialect;
use crate::store::*;
use const_format::concatcp;

const COLUMNS: &str = "id, company_id, url, events, description, secret, previous_secret, \
     previous_secret_until, paused, disabled_reason, created_at, updated_at";
/// Held to the commit by an endpoint's creation: the company's creations take turns, so the
/// count they read cannot change before their insert commits.
const COMPANY_LOCKED: &str = concatcp!(
    "SELECT id FROM companies WHERE id = $1",
    <super::D as Dialect>::FOR_UPDATE
);
const COUNT_OF_COMPANY: &str = "SELECT COUNT(*) FROM webhook_endpoints WHERE company_id = $1";
const INSERT: &str = "INSERT INTO webhook_endpoints (company_id, url, events, description, \
     secret, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $6) RETURNING id";
const OF_COMPANY: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM webhook_endpoints WHERE id = $1 AND company_id = $2"
);
const PAGE: &str = concatcp!(
    "SELECT ",
    COLUMNS,
    " FROM webhook_endpoints WHERE company_id = $1 ORDER BY id LIMIT $2 OFFSET $3"
);
/// `$3` true: the description is set to `$4` (null clears it). Un-pausing enables.
const UPDATE: &str = "UPDATE webhook_endpoints SET url = COALESCE($1, url), \
     events = COALESCE($2, events), \
     description = CASE WHEN $3 THEN $4 ELSE description END, \
     paused = COALESCE($5, paused), \
     disabled_reason = CASE WHEN $5 = FALSE THEN NULL ELSE disabled_reason END, \
     failing_since = CASE WHEN $5 = FALSE THEN NULL ELSE failing_since END, \
     updated_at = $6 WHERE id = $7 AND company_id = $8";
const DELETE: &str = "DELETE FROM webhook_endpoints WHERE id = $1 AND company_id = $2";
const ATTEMPTS_COUNT: &str = "SELECT COUNT(*) FROM webhook_attempts WHERE endpoint_id = $1";
const ATTEMPTS_PAGE: &str = "SELECT d.event_id, d.webhook_id, a.attempt, a.at, a.status, \
     a.duration_ms, a.error FROM webhook_attempts a \
     JOIN webhook_deliveries d ON d.id = a.delivery_id \
     WHERE a.endpoint_id = $1 ORDER BY a.id DESC LIMIT $2 OFFSET $3";
/// The name of the company whose endpoint `$1` is, if it is `$2`'s.
const ENDPOINT_COMPANY: &str = "SELECT c.name FROM webhook_endpoints w \
     JOIN companies c ON c.id = w.company_id WHERE w.id = $1 AND w.company_id = $2";
/// Due now, for another `RETRY_FOR`, its backoff from the start.
const REDELIVER: &str = "UPDATE webhook_deliveries SET status = 'pending', \
     next_attempt_at = $1, created_at = $1, finished_at = NULL, attempts = 0 \
     WHERE endpoint_id = $2 AND event_id = $3";
const ROTATE: &str = "UPDATE webhook_endpoints SET previous_secret = secret, \
     previous_secret_until = $1, secret = $2, updated_at = $3 WHERE id = $4 AND company_id = $5";

impl S {
    async fn endpoint_in<'c, E>(e: E, company_id: i64, id: i64) -> StoreResult<EndpointRow>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        sqlx::query_as::<_, EndpointRow>(OF_COMPANY)
            .bind(id)
            .bind(company_id)
            .fetch_optional(e)
            .await
            .with_step(|| format!("reading webhook endpoint {id}"))?
            .ok_or(StoreError::NotFound)
    }
}

#[async_trait::async_trait]
impl WebhookStore for S {
    async fn create_endpoint(
        &self,
        company_id: i64,
        endpoint: NewEndpoint,
        max: i64,
        idem: Idem<'_, EndpointRow>,
    ) -> StoreResult<EndpointRow> {
        let mut tx = self.begin_write().await?;
        // The count and the insert under one lock on the company (SQLite: the write lock taken
        // at BEGIN): two requests at `max - 1` cannot both pass.
        let _: i64 = Self::locked(&mut tx, COMPANY_LOCKED, company_id)
            .await
            .with_step(|| format!("locking company {company_id}"))?;
        let count: i64 = sqlx::query_scalar(COUNT_OF_COMPANY)
            .bind(company_id)
            .fetch_one(&mut *tx)
            .await
            .with_step(|| format!("counting the webhook endpoints of company {company_id}"))?;
        if count >= max {
            return Err(StoreError::Conflict(Conflict::TooManyWebhooks));
        }
        let now = Self::clock(&mut *tx).await?;
        let id: i64 = sqlx::query_scalar(INSERT)
            .bind(company_id)
            .bind(&endpoint.url)
            .bind(&endpoint.events)
            .bind(&endpoint.description)
            .bind(&endpoint.secret)
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .step("inserting the webhook endpoint")?;
        let row = Self::endpoint_in(&mut *tx, company_id, id)
            .await
            .step("reading the new webhook endpoint")?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn endpoint_of(&self, company_id: i64, id: i64) -> StoreResult<EndpointRow> {
        Self::endpoint_in(&self.pool, company_id, id).await
    }

    async fn endpoints_of(
        &self,
        company_id: i64,
        page: Page,
    ) -> StoreResult<(Vec<EndpointRow>, i64)> {
        let mut tx = self.begin_read().await?;
        let total: i64 = sqlx::query_scalar(COUNT_OF_COMPANY)
            .bind(company_id)
            .fetch_one(&mut *tx)
            .await
            .with_step(|| format!("counting the webhook endpoints of company {company_id}"))?;
        let rows = sqlx::query_as::<_, EndpointRow>(PAGE)
            .bind(company_id)
            .bind(page.size)
            .bind(page.offset())
            .fetch_all(&mut *tx)
            .await
            .with_step(|| format!("reading the webhook endpoints of company {company_id}"))?;
        tx.commit()
            .await
            .step("committing the read of the webhook endpoints")?;
        Ok((rows, total))
    }

    async fn update_endpoint(
        &self,
        company_id: i64,
        id: i64,
        change: EndpointChange,
        idem: Idem<'_, EndpointRow>,
    ) -> StoreResult<EndpointRow> {
        let mut tx = self.begin_write().await?;
        let now = Self::clock(&mut *tx).await?;
        let done = sqlx::query(UPDATE)
            .bind(&change.url)
            .bind(&change.events)
            .bind(change.description.is_some())
            .bind(change.description.flatten())
            .bind(change.paused)
            .bind(now)
            .bind(id)
            .bind(company_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("updating webhook endpoint {id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let row = Self::endpoint_in(&mut *tx, company_id, id)
            .await
            .with_step(|| format!("reading webhook endpoint {id} after its update"))?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn delete_endpoint(
        &self,
        company_id: i64,
        id: i64,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(DELETE)
            .bind(id)
            .bind(company_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("deleting webhook endpoint {id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Self::commit_with(tx, idem, &()).await
    }

    async fn rotate_endpoint_secret(
        &self,
        company_id: i64,
        id: i64,
        secret: String,
        overlap: chrono::Duration,
        idem: Idem<'_, EndpointRow>,
    ) -> StoreResult<EndpointRow> {
        let mut tx = self.begin_write().await?;
        let now = Self::clock(&mut *tx).await?;
        let done = sqlx::query(ROTATE)
            .bind(now + overlap)
            .bind(&secret)
            .bind(now)
            .bind(id)
            .bind(company_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("rotating the secret of webhook endpoint {id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        let row = Self::endpoint_in(&mut *tx, company_id, id)
            .await
            .with_step(|| format!("reading webhook endpoint {id} after its rotation"))?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn endpoint_attempts(
        &self,
        company_id: i64,
        id: i64,
        page: Page,
    ) -> StoreResult<(Vec<AttemptRow>, i64)> {
        self.attempts_of_endpoint(company_id, id, page).await
    }

    async fn queue_ping(&self, company_id: i64, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        self.ping_endpoint(company_id, id, idem).await
    }

    async fn redeliver(
        &self,
        company_id: i64,
        id: i64,
        event_id: &str,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        self.redeliver_event(company_id, id, event_id, idem).await
    }
}

impl S {
    /// The name of the company whose endpoint `id` is; `NotFound` unless it is
    /// `company_id`'s.
    async fn endpoint_company_in<'c, E>(e: E, company_id: i64, id: i64) -> StoreResult<String>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        sqlx::query_scalar::<Db, String>(ENDPOINT_COMPANY)
            .bind(id)
            .bind(company_id)
            .fetch_optional(e)
            .await
            .with_step(|| format!("reading webhook endpoint {id}"))?
            .ok_or(StoreError::NotFound)
    }

    async fn attempts_of_endpoint(
        &self,
        company_id: i64,
        id: i64,
        page: Page,
    ) -> StoreResult<(Vec<AttemptRow>, i64)> {
        Self::endpoint_company_in(&self.pool, company_id, id).await?;
        let mut tx = self.begin_read().await?;
        let total: i64 = sqlx::query_scalar(ATTEMPTS_COUNT)
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .with_step(|| format!("counting the attempts of webhook endpoint {id}"))?;
        let rows = sqlx::query_as::<_, AttemptRow>(ATTEMPTS_PAGE)
            .bind(id)
            .bind(page.size)
            .bind(page.offset())
            .fetch_all(&mut *tx)
            .await
            .with_step(|| format!("reading the attempts of webhook endpoint {id}"))?;
        tx.commit()
            .await
            .step("committing the read of the attempts")?;
        Ok((rows, total))
    }

    async fn ping_endpoint(&self, company_id: i64, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let company = Self::endpoint_company_in(&mut *tx, company_id, id).await?;
        let now = Self::clock(&mut *tx).await?;
        let key = format!("ping-{}", uuid::Uuid::new_v4().simple());
        let body = webhook::body(
            webhook::PING,
            now,
            &key,
            webhook::Owner {
                company_id,
                company: &company,
                job: None,
            },
            &serde_json::json!({"endpoint_id": id}),
        );
        sqlx::query(DELIVERY_INSERT)
            .bind(webhook::webhook_id(&key, id))
            .bind(id)
            .bind(&key)
            .bind(webhook::PING)
            .bind(&body)
            .bind(now)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("queueing a ping to webhook endpoint {id}"))?;
        Self::commit_with(tx, idem, &()).await
    }

    async fn redeliver_event(
        &self,
        company_id: i64,
        id: i64,
        event_id: &str,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        Self::endpoint_company_in(&mut *tx, company_id, id).await?;
        let now = Self::clock(&mut *tx).await?;
        let done = sqlx::query(REDELIVER)
            .bind(now)
            .bind(id)
            .bind(event_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("redelivering {event_id} to webhook endpoint {id}"))?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Self::commit_with(tx, idem, &()).await
    }
}
