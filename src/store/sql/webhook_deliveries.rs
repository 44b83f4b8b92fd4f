//! Webhook deliveries: written with their event ([`S::fan_out`], in the event's transaction),
//! claimed with a lease and recorded by the worker ([`WebhookDeliveryStore`]), listed, pinged
//! and redelivered through the API.

use super::{D, Db, S, Tx};
use crate::domain::event::Event;
use crate::domain::webhook::{self, About};
use crate::store::dialect::Dialect;
use crate::store::*;
use chrono::{DateTime, Utc};
use const_format::concatcp;
use std::collections::HashMap;

/// The company and the job an event's delivery names (`$1` the application or the job).
const APPLICATION_OWNER: &str = "SELECT j.company_id, c.name, j.id, j.title FROM applications a \
     JOIN jobs j ON j.id = a.job_id JOIN companies c ON c.id = j.company_id WHERE a.id = $1";
const JOB_OWNER: &str = "SELECT j.company_id, c.name, j.id, j.title FROM jobs j \
     JOIN companies c ON c.id = j.company_id WHERE j.id = $1";
/// The company's endpoints that take deliveries now.
const ENABLED_OF_COMPANY: &str = "SELECT id, events FROM webhook_endpoints \
     WHERE company_id = $1 AND NOT paused AND disabled_reason IS NULL";
pub(super) const DELIVERY_INSERT: &str = "INSERT INTO webhook_deliveries (webhook_id, endpoint_id, \
     event_id, type, body, next_attempt_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $6) \
     ON CONFLICT (webhook_id) DO NOTHING";
/// Due deliveries of enabled endpoints, soonest first, not claimed or with a lapsed lease
/// (`$1` now, `$2` the endpoints that have no room, `$3` how many to look at). Read without a
/// lock: [`CLAIM`] takes the ones picked only if they are still unclaimed, so two claimers never
/// both take one, and none locks the rows it passes over.
const DUE: &str = concatcp!(
    "SELECT id, endpoint_id, lease_id IS NOT NULL FROM webhook_deliveries \
     WHERE status = 'pending' AND next_attempt_at <= $1 \
     AND (locked_until IS NULL OR locked_until <= $1) \
     AND endpoint_id IN (SELECT id FROM webhook_endpoints \
         WHERE NOT paused AND disabled_reason IS NULL) \
     AND endpoint_id NOT IN (",
    <D as Dialect>::JSON_IDS_OPEN,
    "$2",
    <D as Dialect>::JSON_IDS_CLOSE,
    ") ORDER BY next_attempt_at, id LIMIT $3"
);
/// Claims the picked deliveries (`$3`, a JSON array of ids) that are still due and unclaimed
/// at `$4`: one lease (`$1`, until `$2`) for the batch, each row's own id beside it.
const CLAIM: &str = concatcp!(
    "UPDATE webhook_deliveries SET lease_id = $1, locked_until = $2 WHERE id IN (",
    <D as Dialect>::JSON_IDS_OPEN,
    "$3",
    <D as Dialect>::JSON_IDS_CLOSE,
    ") AND status = 'pending' AND (locked_until IS NULL OR locked_until <= $4) \
     RETURNING id, webhook_id, endpoint_id, event_id, type, body, attempts, created_at"
);
/// The claimed deliveries' endpoints (`$1` their ids, `$2` now): where to send and what signs.
const CLAIMED_ENDPOINTS: &str = concatcp!(
    "SELECT id, url, secret, CASE WHEN previous_secret_until > $2 THEN previous_secret END \
     FROM webhook_endpoints WHERE id IN (",
    <D as Dialect>::JSON_IDS_OPEN,
    "$1",
    <D as Dialect>::JSON_IDS_CLOSE,
    ")"
);
/// At most this many due deliveries are looked at per claim: the lanes that have room are
/// filled from the soonest, and the rows of full endpoints are left out by the query itself.
const LOOK_AT: i64 = 256;
/// Deliveries that ended before `$1`, at most `$2` (their attempts go with them).
const FINISHED_DELETE: &str = "DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM \
     webhook_deliveries WHERE status <> 'pending' AND finished_at < $1 ORDER BY finished_at \
     LIMIT $2)";
const ENDPOINT_LOCKED: &str = concatcp!(
    "SELECT id FROM webhook_endpoints WHERE id = $1",
    <D as Dialect>::FOR_UPDATE
);
const ENDPOINT_MEMBERS: &str = "SELECT m.user_id FROM company_members m \
     JOIN webhook_endpoints w ON w.company_id = m.company_id WHERE w.id = $1 ORDER BY m.user_id";
const ATTEMPT_INSERT: &str = "INSERT INTO webhook_attempts (delivery_id, endpoint_id, attempt, \
     at, status, duration_ms, error) VALUES ($1, $2, $3, $4, $5, $6, $7)";
/// The delivery's new state, only while the lease is the claim's (`$1` status, `$2` the next
/// attempt's time, `$3` finished at, `$4` id, `$5` lease).
const SETTLE: &str = "UPDATE webhook_deliveries SET status = $1, attempts = attempts + 1, \
     next_attempt_at = $2, finished_at = $3, lease_id = NULL, locked_until = NULL \
     WHERE id = $4 AND lease_id = $5";
/// A success: `last_success_at` (`$1`) and no longer failing. Written only when it changes
/// something an operator reads: the endpoint was failing, or its last success is older than
/// `$3` (a minute ago), so that a busy endpoint's deliveries do not all rewrite its row.
const ENDPOINT_SUCCEEDED: &str = "UPDATE webhook_endpoints SET last_success_at = $1, \
     failing_since = NULL WHERE id = $2 AND (failing_since IS NOT NULL \
     OR last_success_at IS NULL OR last_success_at < $3)";
const ENDPOINT_FAILED: &str = "UPDATE webhook_endpoints \
     SET failing_since = COALESCE(failing_since, $1) WHERE id = $2 RETURNING failing_since";
const ENDPOINT_DISABLE: &str = "UPDATE webhook_endpoints SET paused = TRUE, \
     disabled_reason = $1, updated_at = $2 WHERE id = $3 AND disabled_reason IS NULL";

impl S {
    /// Writes a delivery of `event` for each of its company's enabled endpoints that take its
    /// type, in the event's own transaction: what an endpoint subscribed to when the event was
    /// written is delivered. The upkeep's one-per-member events make one delivery (their fact's
    /// `webhook-id` is refused the second time).
    pub(super) async fn fan_out(tx: &mut Tx, event: &Event) -> StoreResult<()> {
        let Some(fact) = webhook::fact(event) else {
            return Ok(());
        };
        let (statement, id) = match fact.about {
            About::Application(id) => (APPLICATION_OWNER, id),
            About::Job(id) => (JOB_OWNER, id),
        };
        let Some((company_id, company, job_id, job_title)) =
            sqlx::query_as::<Db, (i64, String, i64, String)>(statement)
                .bind(id)
                .fetch_optional(&mut **tx)
                .await
                .with_step(|| format!("finding the company of event {}", event.event_id))?
        else {
            return Ok(());
        };
        let endpoints: Vec<(i64, String)> = sqlx::query_as(ENABLED_OF_COMPANY)
            .bind(company_id)
            .fetch_all(&mut **tx)
            .await
            .with_step(|| format!("reading the webhook endpoints of company {company_id}"))?;
        let owner = webhook::Owner {
            company_id,
            company: &company,
            job: Some((job_id, &job_title)),
        };
        Self::write_deliveries(tx, event, &fact, owner, &endpoints, None).await
    }

    /// Writes the deliveries of `fact` to those of `endpoints` (`(id, events)`: the company's
    /// enabled ones) that take its type, due at `now` (the database's clock when `None`).
    pub(super) async fn write_deliveries(
        tx: &mut Tx,
        event: &Event,
        fact: &webhook::Fact,
        owner: webhook::Owner<'_>,
        endpoints: &[(i64, String)],
        now: Option<DateTime<Utc>>,
    ) -> StoreResult<()> {
        let endpoints: Vec<i64> = endpoints
            .iter()
            .filter(|(_, events)| webhook::subscribed(events, fact.type_name))
            .map(|(id, _)| *id)
            .collect();
        if endpoints.is_empty() {
            return Ok(());
        }
        let now = match now {
            Some(now) => now,
            None => Self::clock(&mut **tx).await?,
        };
        let body = webhook::body(
            fact.type_name,
            event.occurred_at,
            &fact.key,
            owner,
            &fact.data,
        );
        for endpoint in endpoints {
            sqlx::query(DELIVERY_INSERT)
                .bind(webhook::webhook_id(&fact.key, endpoint))
                .bind(endpoint)
                .bind(&fact.key)
                .bind(fact.type_name)
                .bind(&body)
                .bind(now)
                .execute(&mut **tx)
                .await
                .with_step(|| {
                    format!(
                        "writing the delivery of {} to endpoint {endpoint}",
                        fact.key
                    )
                })?;
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl WebhookDeliveryStore for S {
    async fn claim_deliveries(
        &self,
        limit: i64,
        lease_ms: i64,
        lane: usize,
        in_flight: &HashMap<i64, usize>,
    ) -> StoreResult<Vec<DeliveryClaim>> {
        let mut tx = self.begin_write().await?;
        let now = Self::clock(&mut *tx).await?;
        let full: Vec<i64> = in_flight
            .iter()
            .filter(|(_, n)| **n >= lane)
            .map(|(id, _)| *id)
            .collect();
        let due: Vec<(i64, i64, bool)> = sqlx::query_as(DUE)
            .bind(now)
            .bind(serde_json::to_string(&full).unwrap_or_else(|_| "[]".into()))
            .bind(limit.saturating_mul(2).min(LOOK_AT))
            .fetch_all(&mut *tx)
            .await
            .step("finding the due webhook deliveries")?;
        let mut room: HashMap<i64, usize> = HashMap::new();
        let mut picked: HashMap<i64, bool> = HashMap::new();
        for (id, endpoint, reclaimed) in due {
            let taken = room.entry(endpoint).or_insert_with(|| {
                lane.saturating_sub(in_flight.get(&endpoint).copied().unwrap_or(0))
            });
            if *taken == 0 || picked.len() as i64 >= limit {
                continue;
            }
            *taken -= 1;
            picked.insert(id, reclaimed);
        }
        if picked.is_empty() {
            tx.commit().await.step("committing the webhook claims")?;
            return Ok(Vec::new());
        }
        let until = now + chrono::Duration::milliseconds(lease_ms);
        let lease_id = uuid::Uuid::new_v4().to_string();
        let ids: Vec<i64> = picked.keys().copied().collect();
        type Row = (i64, String, i64, String, String, String, i64, DateTime<Utc>);
        let claimed: Vec<Row> = sqlx::query_as(CLAIM)
            .bind(&lease_id)
            .bind(until)
            .bind(serde_json::to_string(&ids).unwrap_or_else(|_| "[]".into()))
            .bind(now)
            .fetch_all(&mut *tx)
            .await
            .step("claiming webhook deliveries")?;
        let endpoint_ids: Vec<i64> = claimed.iter().map(|r| r.2).collect();
        let endpoints: HashMap<i64, (String, String, Option<String>)> =
            sqlx::query_as::<_, (i64, String, String, Option<String>)>(CLAIMED_ENDPOINTS)
                .bind(serde_json::to_string(&endpoint_ids).unwrap_or_else(|_| "[]".into()))
                .bind(now)
                .fetch_all(&mut *tx)
                .await
                .step("reading the claimed deliveries' endpoints")?
                .into_iter()
                .map(|(id, url, secret, previous)| (id, (url, secret, previous)))
                .collect();
        let mut claims = Vec::with_capacity(claimed.len());
        for (id, webhook_id, endpoint_id, event_id, type_name, body, attempts, created_at) in
            claimed
        {
            // An endpoint deleted meanwhile takes its deliveries with it.
            let Some((url, secret, previous)) = endpoints.get(&endpoint_id).cloned() else {
                continue;
            };
            claims.push(DeliveryClaim {
                id,
                webhook_id,
                endpoint_id,
                event_id,
                type_name,
                body,
                attempts,
                created_at,
                url,
                secrets: std::iter::once(secret).chain(previous).collect(),
                lease_id: lease_id.clone(),
                reclaimed: picked.get(&id).copied().unwrap_or(false),
                claimed_at: now,
            });
        }
        tx.commit().await.step("committing the webhook claims")?;
        Ok(claims)
    }

    async fn record_attempt(
        &self,
        claim: &DeliveryClaim,
        attempt: &Attempt,
        retry_delay: chrono::Duration,
    ) -> StoreResult<Recorded> {
        let mut tx = self.begin_write().await?;
        // The endpoint first, as its deletion locks it before its deliveries: the two take
        // their locks in the same order and never wait on each other in a circle.
        let endpoint: Option<i64> = sqlx::query_scalar(ENDPOINT_LOCKED)
            .bind(claim.endpoint_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("locking webhook endpoint {}", claim.endpoint_id))?;
        if endpoint.is_none() {
            return Ok(Recorded::LeaseLost);
        }
        let now = Self::clock(&mut *tx).await?;
        let created = claim.created_at;
        let (status, next, finished) = match attempt.result {
            AttemptResult::Delivered => ("delivered", now, Some(now)),
            AttemptResult::Gone => ("failed", now, Some(now)),
            AttemptResult::Failed if now - created >= webhook::RETRY_FOR => {
                ("failed", now, Some(now))
            }
            AttemptResult::Failed => ("pending", now + retry_delay, None),
        };
        let settled = sqlx::query(SETTLE)
            .bind(status)
            .bind(next)
            .bind(finished)
            .bind(claim.id)
            .bind(&claim.lease_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("recording webhook delivery {}", claim.id))?;
        if settled.rows_affected() == 0 {
            return Ok(Recorded::LeaseLost);
        }
        sqlx::query(ATTEMPT_INSERT)
            .bind(claim.id)
            .bind(claim.endpoint_id)
            .bind(claim.attempts + 1)
            .bind(now)
            .bind(attempt.status.map(i64::from))
            .bind(attempt.duration_ms)
            .bind(attempt.error.as_deref().map(stored_text))
            .execute(&mut *tx)
            .await
            .with_step(|| format!("recording an attempt of webhook delivery {}", claim.id))?;
        let disable = match attempt.result {
            AttemptResult::Delivered => {
                sqlx::query(ENDPOINT_SUCCEEDED)
                    .bind(now)
                    .bind(claim.endpoint_id)
                    .bind(now - chrono::Duration::minutes(1))
                    .execute(&mut *tx)
                    .await
                    .with_step(|| format!("recording endpoint {}'s success", claim.endpoint_id))?;
                None
            }
            AttemptResult::Gone => Some("the receiver answered 410 Gone".to_string()),
            AttemptResult::Failed => {
                let since: Option<DateTime<Utc>> = sqlx::query_scalar(ENDPOINT_FAILED)
                    .bind(now)
                    .bind(claim.endpoint_id)
                    .fetch_optional(&mut *tx)
                    .await
                    .with_step(|| format!("recording endpoint {}'s failure", claim.endpoint_id))?
                    .flatten();
                since
                    .filter(|since| now - *since >= webhook::DISABLE_AFTER)
                    .map(|_| "no delivery succeeded for 5 days".to_string())
            }
        };
        let mut recorded = match (status, attempt.result.clone()) {
            ("delivered", _) => Recorded::Delivered,
            ("pending", _) => Recorded::Retrying,
            _ => Recorded::GaveUp,
        };
        if let Some(reason) = disable {
            let done = sqlx::query(ENDPOINT_DISABLE)
                .bind(&reason)
                .bind(now)
                .bind(claim.endpoint_id)
                .execute(&mut *tx)
                .await
                .with_step(|| format!("disabling endpoint {}", claim.endpoint_id))?;
            if done.rows_affected() > 0 {
                recorded = Recorded::Disabled;
                // Each member of its company is told, once: the update above happens once
                // per disablement.
                let members: Vec<i64> = sqlx::query_scalar(ENDPOINT_MEMBERS)
                    .bind(claim.endpoint_id)
                    .fetch_all(&mut *tx)
                    .await
                    .with_step(|| {
                        format!(
                            "reading the members of endpoint {}'s company",
                            claim.endpoint_id
                        )
                    })?;
                for user_id in members {
                    let event = Event::new(
                        crate::domain::event::EventKind::WebhookDisabled {
                            endpoint_id: claim.endpoint_id,
                            user_id,
                            reason: reason.clone(),
                        },
                        now,
                    );
                    Self::write_event(&mut tx, &event).await?;
                }
            }
        }
        tx.commit().await.step("committing the webhook attempt")?;
        Ok(recorded)
    }

    async fn delete_finished_deliveries(
        &self,
        cutoff: DateTime<Utc>,
        limit: i64,
    ) -> StoreResult<u64> {
        let done = sqlx::query(FINISHED_DELETE)
            .bind(cutoff)
            .bind(limit)
            .execute(&self.pool)
            .await
            .step("deleting finished webhook deliveries")?;
        Ok(done.rows_affected())
    }
}
