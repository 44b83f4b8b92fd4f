//! Webhook deliveries, the worker's second channel (docs/guarantee.md, "Webhook deliveries"):
//! the deliveries written with their events are claimed with a lease on the database's clock,
//! sent outside any transaction (`webhooks::deliver`), and their attempts recorded only while
//! the lease is the claim's. Each endpoint has a lane of [`LANE`] deliveries at once in this
//! process, and all of them together [`IN_FLIGHT`]: a receiver that hangs holds its own lane for
//! its timeout, never another's, and never the emails, which run on their own loop.

use super::Worker;
use crate::domain::webhook;
use crate::store::{Attempt, AttemptResult, DeliveryClaim, Recorded, WebhookDeliveryStore};
use crate::telemetry as t;
use crate::webhooks::deliver::{self, Client, Request};
use rand::Rng;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// Deliveries to one endpoint at once, per worker process.
pub const LANE: usize = 4;

/// Deliveries claimed at once, per worker process: room for 64 endpoints' full lanes and as many
/// deliveries waiting behind each, so that hanging receivers fill their own lanes long before
/// they fill this.
pub const IN_FLIGHT: usize = 512;

/// A claim's lease, in attempts' deadlines (`WEBHOOK_TIMEOUT_SECS`): long past an attempt and
/// its record (60 s by default).
const LEASE_DEADLINES: u32 = 6;

/// How often the due deliveries are looked for while none is.
const POLL: Duration = Duration::from_millis(200);

/// Requests in flight per endpoint, and what wakes the claiming loop when one ends.
#[derive(Clone, Default)]
struct Lanes {
    /// Deliveries claimed per endpoint, sending or waiting for a place in its lane: at most
    /// [`LANE`] send and as many more wait, so that a freed place is taken at once, without
    /// waiting for the next claim.
    taken: Arc<Mutex<HashMap<i64, usize>>>,
    /// Each endpoint's lane: [`LANE`] places to send.
    sending: Arc<Mutex<HashMap<i64, Arc<tokio::sync::Semaphore>>>>,
    freed: Arc<tokio::sync::Notify>,
}

impl Lanes {
    /// A place in the endpoint's lane, waited for.
    async fn place(&self, endpoint: i64) -> Option<tokio::sync::OwnedSemaphorePermit> {
        let lane = self.sending.lock().ok().map(|mut l| {
            l.entry(endpoint)
                .or_insert_with(|| Arc::new(tokio::sync::Semaphore::new(LANE)))
                .clone()
        })?;
        lane.acquire_owned().await.ok()
    }

    fn snapshot(&self) -> HashMap<i64, usize> {
        self.taken.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn take(&self, endpoint: i64) {
        if let Ok(mut l) = self.taken.lock() {
            *l.entry(endpoint).or_default() += 1;
        }
    }

    /// Gives an endpoint's place back and wakes the claiming loop: the lane has room again.
    fn free(&self, endpoint: i64) {
        if let Ok(mut l) = self.taken.lock()
            && let Some(n) = l.get_mut(&endpoint)
        {
            *n = n.saturating_sub(1);
            if *n == 0 {
                l.remove(&endpoint);
                // Nothing of it is claimed: nothing holds or waits for its lane.
                if let Ok(mut lanes) = self.sending.lock() {
                    lanes.remove(&endpoint);
                }
            }
        }
        self.freed.notify_one();
    }
}

impl Worker {
    /// Delivers the due webhook deliveries until `shutdown`, then waits for those in flight
    /// (each ends within its deadline).
    pub async fn deliver_webhooks(self: Arc<Self>, shutdown: CancellationToken) {
        let client = match Client::new(self.webhook_allow_private, self.webhook_timeout) {
            Ok(client) => client,
            Err(e) => {
                tracing::error!(error = %e, "webhook deliveries cannot start");
                return;
            }
        };
        let lanes = Lanes::default();
        let mut running: JoinSet<()> = JoinSet::new();
        let mut failing = false;
        let lease = self.webhook_timeout * LEASE_DEADLINES;
        while !shutdown.is_cancelled() {
            while running.try_join_next().is_some() {}
            let room = IN_FLIGHT.saturating_sub(running.len());
            let claims = if room == 0 {
                Vec::new()
            } else {
                let in_flight = lanes.snapshot();
                match self
                    .store
                    .claim_deliveries(room as i64, lease.as_millis() as i64, 2 * LANE, &in_flight)
                    .await
                {
                    Ok(claims) => {
                        if std::mem::take(&mut failing) {
                            tracing::info!("webhook deliveries can be claimed again");
                        }
                        claims
                    }
                    Err(e) => {
                        if !std::mem::replace(&mut failing, true) {
                            tracing::error!(
                                error = format!("{e:#}"),
                                "claiming webhook deliveries failed; retrying"
                            );
                        }
                        Vec::new()
                    }
                }
            };
            let idle = claims.is_empty();
            for claim in claims {
                if claim.reclaimed {
                    metrics::counter!(t::EVENTS_RECLAIMED_TOTAL).increment(1);
                    tracing::warn!(
                        event_id = %claim.event_id,
                        endpoint_id = claim.endpoint_id,
                        webhook_id = %claim.webhook_id,
                        "reclaiming expired claim of a webhook delivery"
                    );
                }
                lanes.take(claim.endpoint_id);
                running.spawn(deliver_one(
                    self.store.clone(),
                    client.clone(),
                    claim,
                    lanes.clone(),
                    self.webhook_retry_secs,
                ));
            }
            if idle {
                let wait = if failing {
                    Duration::from_secs(1)
                } else {
                    POLL
                };
                tokio::select! {
                    _ = tokio::time::sleep(wait) => {}
                    _ = running.join_next(), if !running.is_empty() => {}
                    _ = lanes.freed.notified() => {}
                    _ = shutdown.cancelled() => {}
                }
            }
        }
        while running.join_next().await.is_some() {}
    }
}

/// Waits for a place in its endpoint's lane, sends one claimed delivery and records its
/// attempt; the place is given back either way: after a 2xx as soon as the answer is in (the record is the database's work, not the
/// receiver's), after any other answer once it is recorded (so that a 410 disables the endpoint
/// before its lane takes another of its deliveries). An attempt that cannot be recorded leaves the claim to lapse: the next claim of it is a
/// counted reclaim, and a repeat with the same `webhook-id`.
async fn deliver_one(
    store: Arc<dyn crate::store::WorkerStore>,
    client: Client,
    claim: DeliveryClaim,
    lanes: Lanes,
    retry_secs: u64,
) {
    let place = lanes.place(claim.endpoint_id).await;
    let answer = client
        .send(Request {
            url: &claim.url,
            webhook_id: &claim.webhook_id,
            body: &claim.body,
            secrets: &claim.secrets,
            timestamp: claim.claimed_at.timestamp(),
        })
        .await;
    metrics::histogram!(t::WEBHOOK_DELIVERY_SECONDS).record(answer.duration.as_secs_f64());
    let early = answer.delivered();
    let mut place = place;
    if early {
        drop(place.take());
        lanes.free(claim.endpoint_id);
    }
    let result = if answer.delivered() {
        AttemptResult::Delivered
    } else if answer.gone() {
        AttemptResult::Gone
    } else {
        AttemptResult::Failed
    };
    let attempt = Attempt {
        result,
        status: answer.status,
        duration_ms: answer.duration.as_millis() as i64,
        error: answer.error.clone(),
    };
    let failed = u32::try_from(claim.attempts + 1).unwrap_or(u32::MAX);
    let delay = webhook::retry_delay(retry_secs, failed, rand::thread_rng().gen_range(-1.0..=1.0));
    let recorded = WebhookDeliveryStore::record_attempt(&*store, &claim, &attempt, delay).await;
    let span = (
        claim.event_id.as_str(),
        claim.endpoint_id,
        claim.webhook_id.as_str(),
    );
    match recorded {
        Ok(recorded) => outcome(recorded, &claim, &answer, span),
        Err(e) => tracing::warn!(
            event_id = span.0,
            endpoint_id = span.1,
            webhook_id = span.2,
            error = format!("{e:#}"),
            "a webhook attempt could not be recorded; its claim will lapse and be retried"
        ),
    }
    if !early {
        drop(place);
        lanes.free(claim.endpoint_id);
    }
}

/// Logs and counts what an attempt came to.
fn outcome(
    recorded: Recorded,
    claim: &DeliveryClaim,
    answer: &deliver::Answer,
    (event_id, endpoint_id, webhook_id): (&str, i64, &str),
) {
    let error = answer.error.as_deref().unwrap_or("");
    let status = answer.status.map(i64::from).unwrap_or(0);
    let label = match recorded {
        Recorded::Delivered => {
            tracing::info!(
                event_id,
                endpoint_id,
                webhook_id,
                status,
                attempt = claim.attempts + 1,
                "delivered {} to webhook endpoint {endpoint_id}",
                claim.type_name
            );
            "delivered"
        }
        Recorded::Retrying => {
            metrics::counter!(t::WEBHOOK_RETRIES_TOTAL).increment(1);
            tracing::warn!(
                event_id,
                endpoint_id,
                webhook_id,
                status,
                error,
                attempt = claim.attempts + 1,
                "a webhook delivery failed; it will be tried again"
            );
            "failed"
        }
        Recorded::GaveUp => {
            tracing::error!(
                event_id,
                endpoint_id,
                webhook_id,
                status,
                error,
                attempt = claim.attempts + 1,
                "a webhook delivery failed for the last time"
            );
            "failed"
        }
        Recorded::Disabled => {
            metrics::counter!(t::WEBHOOK_ENDPOINTS_DISABLED).increment(1);
            tracing::error!(
                event_id,
                endpoint_id,
                webhook_id,
                status,
                error,
                "webhook endpoint {endpoint_id} is disabled"
            );
            "disabled"
        }
        Recorded::LeaseLost => {
            metrics::counter!(t::LEASES_LOST_TOTAL).increment(1);
            tracing::warn!(
                event_id,
                endpoint_id,
                webhook_id,
                "a webhook delivery's lease was lost before its attempt was recorded"
            );
            return;
        }
    };
    metrics::counter!(t::WEBHOOK_DELIVERIES_TOTAL, "outcome" => label).increment(1);
}
