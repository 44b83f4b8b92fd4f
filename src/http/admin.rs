//! The operators' endpoints (docs/api.md, Operators): the queue figures, an event's story, the
//! dead letters with redrive and purge. Only accounts given operator rights by `jobboard admin
//! grant` get past [`Operator`]; for anyone else, signed in or not, every route here is 404. The
//! dead letters are read and acted on through the same [`Queue`](crate::queue::Queue) methods
//! as the `dlq` commands, so the CLI and these endpoints share one implementation.

use super::error::Problem;
use super::error::{ApiError, ApiResult, FieldErrors};
pub use super::extract::Operator;
use super::extract::{Body, JsonBody, QueryParams, wrong_method};
use super::idempotency::Idempotent;
use crate::http::AppState;
use crate::queue::{DeadLetter, Selection};
use crate::store::{EventChange, FailingEndpoint, ProcessedRecord, RedriveTrace, StoryDelivery};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/admin/queue",
            get(queue).fallback(wrong_method("GET,HEAD")),
        )
        .route(
            "/api/admin/events/{event_id}",
            get(event).fallback(wrong_method("GET,HEAD")),
        )
        .route(
            "/api/admin/dead-letters",
            get(dead_letters).fallback(wrong_method("GET,HEAD")),
        )
        .route(
            "/api/admin/dead-letters/redrive",
            post(redrive).fallback(wrong_method("POST")),
        )
        .route(
            "/api/admin/dead-letters/{id}",
            delete(purge).fallback(wrong_method("DELETE")),
        )
        .route(
            "/api/admin/webhooks/failing",
            get(failing_webhooks).fallback(wrong_method("GET,HEAD")),
        )
}

/// The most failing endpoints one answer lists.
const FAILING_LIMIT: i64 = 100;

/// The queue's figures; `null` where the queue cannot tell.
#[derive(Serialize, ToSchema)]
pub struct QueueFigures {
    /// `db` or `sqs`.
    pub queue: &'static str,
    /// Status changes committed and not yet handed to a worker: with `db`, the outbox (which is
    /// the queue); with `sqs`, the outbox rows not yet published plus the queue's approximate
    /// count of messages.
    #[schema(required = true)]
    pub outbox_pending: Option<i64>,
    /// Age of the oldest of them.
    #[schema(required = true)]
    pub oldest_pending_age_seconds: Option<f64>,
    /// Events claimed by a worker and not finished: a send under way, or a lease yet to lapse.
    #[schema(required = true)]
    pub in_flight: Option<i64>,
    /// Events whose email was accepted in the last hour.
    pub sent_last_hour: i64,
    /// Events whose last failed send was in the last hour (waiting for a retry, or dead).
    pub failed_last_hour: i64,
    /// Dead letters (with `sqs`, the dead-letter queue's approximate count).
    #[schema(required = true)]
    pub dead_letters: Option<i64>,
}

/// The queue figures.
#[utoipa::path(get, operation_id = "admin_queue", path = "/api/admin/queue", tag = "operators", security(("bearer" = [])),
    responses((status = 200, body = QueueFigures), (status = 404, body = Problem, description = "not an operator (signed in or not)")))]
async fn queue(State(st): State<AppState>, _op: Operator) -> ApiResult<Json<QueueFigures>> {
    let db = st.store.console_figures().await?;
    let mut figures = QueueFigures {
        queue: st.queue.kind(),
        outbox_pending: Some(db.outbox_pending),
        oldest_pending_age_seconds: db.oldest_pending_age_ms.map(|ms| ms as f64 / 1000.0),
        in_flight: Some(db.in_flight),
        sent_last_hour: db.sent_last_hour,
        failed_last_hour: db.failed_last_hour,
        dead_letters: Some(db.dead_letters),
    };
    if st.queue.kind() != "db" {
        // The queue's own counts; when it cannot be asked, those figures are unknown.
        match st.queue.stats().await {
            Ok((waiting, oldest, dead)) => {
                figures.outbox_pending = Some(db.outbox_pending + waiting);
                let queued = oldest.map(|d| d.as_secs_f64());
                figures.oldest_pending_age_seconds =
                    match (queued, figures.oldest_pending_age_seconds) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    };
                figures.dead_letters = Some(dead);
            }
            Err(e) => {
                tracing::warn!(
                    error = format!("{e:#}"),
                    "the queue's figures could not be read"
                );
                figures.outbox_pending = None;
                figures.oldest_pending_age_seconds = None;
                figures.dead_letters = None;
            }
        }
    }
    Ok(Json(figures))
}

/// A dead letter, as `jobboard dlq list --json` shows it.
#[derive(Serialize, ToSchema)]
pub struct DeadLetterOut {
    /// The queue's id for it (what redrive and purge take).
    pub id: String,
    /// The event it carries, if the message could be read as one.
    #[schema(required = true)]
    pub event_id: Option<String>,
    pub reason: String,
    /// Failed sends counted before it was dead-lettered.
    pub attempts: i64,
    #[serde(with = "crate::timefmt")]
    pub first_failed_at: DateTime<Utc>,
    #[serde(with = "crate::timefmt")]
    pub last_failed_at: DateTime<Utc>,
    /// The message as it was received: anything at all.
    pub body: String,
}

impl From<DeadLetter> for DeadLetterOut {
    fn from(d: DeadLetter) -> Self {
        DeadLetterOut {
            id: d.id,
            event_id: d.event_id,
            reason: d.reason,
            attempts: d.attempts,
            first_failed_at: d.first_failed_at,
            last_failed_at: d.last_failed_at,
            body: d.body,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct DeadLetterList {
    /// Newest first.
    pub items: Vec<DeadLetterOut>,
    pub page: i64,
    pub page_size: i64,
    pub total: i64,
}

/// The dead letters, newest first.
#[utoipa::path(get, operation_id = "admin_dead_letters", path = "/api/admin/dead-letters", tag = "operators", security(("bearer" = [])),
    params(("page" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "from 1"), ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20")),
    responses((status = 200, body = DeadLetterList), (status = 404, body = Problem, description = "not an operator (signed in or not)"), (status = 422, body = Problem)))]
async fn dead_letters(
    State(st): State<AppState>,
    _op: Operator,
    q: QueryParams,
) -> ApiResult<Json<DeadLetterList>> {
    let mut errors = FieldErrors::default();
    let page = q.page(&mut errors);
    errors.into_result()?;
    let (items, total) = st
        .queue
        .dead_letter_page(page.offset() as usize, page.size as usize)
        .await?;
    Ok(Json(DeadLetterList {
        items: items.into_iter().map(Into::into).collect(),
        page: page.page,
        page_size: page.size,
        total,
    }))
}

#[derive(Deserialize, ToSchema)]
pub struct RedriveIn {
    /// Dead-letter ids, as the list shows them; or `all`.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Every dead letter.
    #[serde(default)]
    pub all: bool,
    /// Also re-queue messages that have no usable event id.
    #[serde(default)]
    pub include_invalid: bool,
}

impl JsonBody for RedriveIn {
    const FIELDS: &'static [&'static str] = &["ids", "all", "include_invalid"];
}

#[derive(Serialize, ToSchema)]
pub struct RedriveOut {
    pub redriven: u64,
    /// Ids that are not dead letters (any more).
    pub not_found: u64,
    /// Dead letters without a usable event id, left alone without `include_invalid`.
    pub skipped_invalid: u64,
}

/// Re-queues dead letters with their attempts reset, as `jobboard dlq redrive` does.
#[utoipa::path(post, operation_id = "admin_redrive", path = "/api/admin/dead-letters/redrive", tag = "operators", security(("bearer" = [])), request_body = RedriveIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")),
    responses((status = 200, body = RedriveOut), (status = 404, body = Problem, description = "not an operator (signed in or not)"), (status = 422, body = Problem)))]
async fn redrive(
    State(st): State<AppState>,
    op: Operator,
    idem: Idempotent<Body>,
) -> ApiResult<Json<RedriveOut>> {
    let input: RedriveIn = idem.body.json(false)?;
    // The queue's write is not the database's, so a retry's answer is kept after it (by the
    // `settle` layer); a retry that finds no answer redrives again and finds nothing to move.
    idem.check()?;
    let which = match (input.ids, input.all) {
        (Some(_), true) => {
            return Err(ApiError::field("ids", "give either ids or all, not both"));
        }
        (Some(ids), false) if !ids.is_empty() && ids.len() <= 1000 => Selection::Ids(ids),
        (Some(_), false) => return Err(ApiError::field("ids", "must hold 1 to 1000 ids")),
        (None, true) => Selection::All,
        (None, false) => return Err(ApiError::field("ids", "give ids, or all: true")),
    };
    let described = match &which {
        Selection::All => "all".to_string(),
        Selection::Ids(ids) => ids.join(","),
    };
    let r = st.queue.redrive(which, input.include_invalid).await?;
    tracing::info!(
        operator = op.user_id,
        dead_letters = %described,
        include_invalid = input.include_invalid,
        redriven = r.redriven,
        not_found = r.not_found,
        skipped_invalid = r.skipped_invalid,
        "an operator redrove dead letters"
    );
    Ok(Json(RedriveOut {
        redriven: r.redriven,
        not_found: r.not_found,
        skipped_invalid: r.skipped_invalid,
    }))
}

/// Deletes one dead letter, as `jobboard dlq purge ID` does.
#[utoipa::path(delete, operation_id = "admin_purge", path = "/api/admin/dead-letters/{id}", tag = "operators", security(("bearer" = [])),
    params(("id" = String, Path, description = "the dead letter's id, as the list shows it"), ("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")),
    responses((status = 204, description = "deleted"), (status = 404, body = Problem, description = "no such dead letter, or not an operator")))]
async fn purge(
    State(st): State<AppState>,
    op: Operator,
    Path(id): Path<String>,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    idem.check()?;
    let purged = st.queue.purge(Selection::Ids(vec![id.clone()])).await?;
    if purged == 0 {
        return Err(ApiError::not_found());
    }
    tracing::info!(operator = op.user_id, dead_letter = %id, "an operator purged a dead letter");
    Ok(StatusCode::NO_CONTENT)
}

/// The status change an event records.
#[derive(Serialize, ToSchema)]
pub struct ChangeOut {
    pub application_id: i64,
    /// `null` once the job is gone.
    #[schema(required = true)]
    pub job_id: Option<i64>,
    #[schema(required = true)]
    pub job_title: Option<String>,
    #[schema(required = true)]
    pub candidate_id: Option<i64>,
    /// `null` for an application's first status.
    #[schema(required = true)]
    pub old_status: Option<String>,
    pub new_status: String,
    /// The user who made the change.
    pub changed_by: i64,
    #[serde(with = "crate::timefmt")]
    pub at: DateTime<Utc>,
}

impl From<EventChange> for ChangeOut {
    fn from(c: EventChange) -> Self {
        ChangeOut {
            application_id: c.application_id,
            job_id: c.job_id,
            job_title: c.job_title,
            candidate_id: c.candidate_id,
            old_status: c.old_status,
            new_status: c.new_status,
            changed_by: c.changed_by,
            at: c.at,
        }
    }
}

/// The worker's record of the event.
#[derive(Serialize, ToSchema)]
pub struct ProcessedOut {
    /// `in_progress` (claimed), `pending` (a failed send, waiting for a retry), `done` (sent),
    /// `missing` (its application was gone), `dead` (dead-lettered).
    pub status: String,
    /// Failed sends counted.
    pub attempts: i64,
    #[schema(required = true)]
    pub last_error: Option<String>,
    /// When the current claim lapses, while one is held.
    #[schema(required = true)]
    #[serde(with = "crate::timefmt::option")]
    pub lease_expires_at: Option<DateTime<Utc>>,
    #[schema(required = true)]
    #[serde(with = "crate::timefmt::option")]
    pub first_failed_at: Option<DateTime<Utc>>,
    /// The record's last change: when the email was accepted, for a sent one.
    #[serde(with = "crate::timefmt")]
    pub updated_at: DateTime<Utc>,
}

fn time_of(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

impl From<ProcessedRecord> for ProcessedOut {
    fn from(p: ProcessedRecord) -> Self {
        ProcessedOut {
            lease_expires_at: p
                .locked_until
                .filter(|_| p.status == "in_progress")
                .map(time_of),
            status: p.status,
            attempts: p.attempts,
            last_error: p.last_error,
            first_failed_at: p.first_failed_at.map(time_of),
            updated_at: time_of(p.updated_at),
        }
    }
}

/// The trace of an event's redrives, each of which forgot its failed sends (`processed` then
/// starts again, its `attempts` counting only the sends since the last one).
#[derive(Serialize, ToSchema)]
pub struct RedriveTraceOut {
    /// How many times it was redriven (by the API or `jobboard dlq redrive`).
    pub count: i64,
    /// The failed sends its dead letters had counted, over all its redrives.
    pub attempts_before: i64,
    /// When it was last redriven.
    #[serde(with = "crate::timefmt")]
    pub last_at: DateTime<Utc>,
}

impl From<RedriveTrace> for RedriveTraceOut {
    fn from(r: RedriveTrace) -> Self {
        RedriveTraceOut {
            count: r.redrives,
            attempts_before: r.attempts_before,
            last_at: time_of(r.last_redriven_at),
        }
    }
}

/// Everything known of one event.
#[derive(Serialize, ToSchema)]
pub struct EventStoryOut {
    pub event_id: String,
    /// The status change it records; `null` once its application is deleted.
    #[schema(required = true)]
    pub change: Option<ChangeOut>,
    /// `null` until a worker has claimed it.
    #[schema(required = true)]
    pub processed: Option<ProcessedOut>,
    #[schema(required = true)]
    pub dead_letter: Option<DeadLetterOut>,
    /// `null` unless an operator redrove it.
    #[schema(required = true)]
    pub redrive: Option<RedriveTraceOut>,
    /// Its webhook deliveries, one per endpoint that took its type when it was written.
    pub webhooks: Vec<StoryDeliveryOut>,
}

/// A webhook delivery of an event.
#[derive(Serialize, ToSchema)]
pub struct StoryDeliveryOut {
    /// The `webhook-id` every attempt of it carried.
    pub webhook_id: String,
    pub endpoint_id: i64,
    pub company_id: i64,
    pub url: String,
    /// What it delivers: the event's id, or for the upkeep's events that are one per member
    /// (`job.*`), what they share.
    pub event_id: String,
    #[serde(rename = "type")]
    pub type_name: String,
    /// `pending` (due at `next_attempt_at`), `delivered`, or `failed` (given up).
    pub status: String,
    pub attempts: i64,
    #[serde(with = "crate::timefmt")]
    pub next_attempt_at: DateTime<Utc>,
    #[schema(required = true)]
    #[serde(with = "crate::timefmt::option")]
    pub finished_at: Option<DateTime<Utc>>,
    /// The latest attempt's HTTP status; `null` without an answer or an attempt.
    #[schema(required = true)]
    pub last_status: Option<i64>,
    #[schema(required = true)]
    pub last_error: Option<String>,
}

impl From<StoryDelivery> for StoryDeliveryOut {
    fn from(d: StoryDelivery) -> Self {
        StoryDeliveryOut {
            webhook_id: d.webhook_id,
            endpoint_id: d.endpoint_id,
            company_id: d.company_id,
            url: d.url,
            event_id: d.event_id,
            type_name: d.type_name,
            status: d.status,
            attempts: d.attempts,
            next_attempt_at: d.next_attempt_at,
            finished_at: d.finished_at,
            last_status: d.last_status,
            last_error: d.last_error,
        }
    }
}

/// A webhook endpoint that fails or was disabled.
#[derive(Serialize, ToSchema)]
pub struct FailingEndpointOut {
    pub id: i64,
    pub company_id: i64,
    pub company_name: String,
    pub url: String,
    pub paused: bool,
    /// Why deliveries stopped without its company asking (a 410, or 5 days without a success).
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    /// Its first failure since its last success.
    #[schema(required = true)]
    #[serde(with = "crate::timefmt::option")]
    pub failing_since: Option<DateTime<Utc>>,
    #[schema(required = true)]
    #[serde(with = "crate::timefmt::option")]
    pub last_success_at: Option<DateTime<Utc>>,
    /// Deliveries still to be made to it.
    pub pending: i64,
    #[schema(required = true)]
    #[serde(with = "crate::timefmt::option")]
    pub last_attempt_at: Option<DateTime<Utc>>,
    #[schema(required = true)]
    pub last_status: Option<i64>,
    #[schema(required = true)]
    pub last_error: Option<String>,
}

impl From<FailingEndpoint> for FailingEndpointOut {
    fn from(f: FailingEndpoint) -> Self {
        FailingEndpointOut {
            id: f.id,
            company_id: f.company_id,
            company_name: f.company_name,
            url: f.url,
            paused: f.paused,
            disabled_reason: f.disabled_reason,
            failing_since: f.failing_since,
            last_success_at: f.last_success_at,
            pending: f.pending,
            last_attempt_at: f.last_attempt_at,
            last_status: f.last_status,
            last_error: f.last_error,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct FailingEndpoints {
    /// The longest failing first, then the disabled ones that fail no more; at most 100.
    pub items: Vec<FailingEndpointOut>,
}

/// The webhook endpoints that fail (no success since their first failure) or were disabled,
/// across companies.
#[utoipa::path(get, operation_id = "admin_failing_webhooks", path = "/api/admin/webhooks/failing", tag = "operators", security(("bearer" = [])),
    responses((status = 200, body = FailingEndpoints), (status = 404, body = Problem, description = "not an operator (signed in or not)")))]
async fn failing_webhooks(
    State(st): State<AppState>,
    _op: Operator,
) -> ApiResult<Json<FailingEndpoints>> {
    let items = st.store.failing_webhooks(FAILING_LIMIT).await?;
    Ok(Json(FailingEndpoints {
        items: items.into_iter().map(Into::into).collect(),
    }))
}

/// An event's story: the status change, the worker's record, the dead letter, the redrives, the
/// webhook deliveries.
#[utoipa::path(get, operation_id = "admin_event", path = "/api/admin/events/{event_id}", tag = "operators", security(("bearer" = [])),
    params(("event_id" = String, Path, description = "the event id, as the status change's history and the email's headers show it; or a webhook delivery's `webhook-id` (`msg_…`)")),
    responses((status = 200, body = EventStoryOut), (status = 404, body = Problem, description = "nothing is known of this event id, or not an operator")))]
async fn event(
    State(st): State<AppState>,
    _op: Operator,
    Path(event_id): Path<String>,
) -> ApiResult<Json<EventStoryOut>> {
    if event_id.len() > 200 {
        return Err(ApiError::not_found());
    }
    let story = st.store.event_story(&event_id).await?;
    // With SQS the dead letter is in the DLQ; its record is read, never the queue.
    let sqs_dead_letter = match &story.dead_letter {
        None => st.store.sqs_dead_letter_of_event(&event_id).await?,
        Some(_) => None,
    };
    if story.is_unknown() && sqs_dead_letter.is_none() {
        return Err(ApiError::not_found());
    }
    let dead_letter = match (story.dead_letter, sqs_dead_letter) {
        (Some(d), _) => Some(DeadLetter::from(d)),
        (None, Some(d)) => Some(DeadLetter::from(d)),
        (None, None) => None,
    };
    Ok(Json(EventStoryOut {
        event_id,
        change: story.change.map(Into::into),
        processed: story.processed.map(Into::into),
        dead_letter: dead_letter.map(DeadLetterOut::from),
        redrive: story.redrive.map(Into::into),
        webhooks: story.webhooks.into_iter().map(Into::into).collect(),
    }))
}
