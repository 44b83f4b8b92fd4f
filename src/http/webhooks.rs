//! Webhook endpoints (docs/api.md, "Webhooks"): where a company's own systems receive its
//! events, signed by the Standard Webhooks rules. Members of the company only (404 to anyone
//! else, as the company itself). A URL is checked when it is saved: `https`, no user name or
//! password, and a host whose every address is public (`crate::webhooks::address`), unless
//! `WEBHOOK_ALLOW_PRIVATE`; deliveries check the address again when they connect.

use super::companies::member_company;
use super::error::{ApiError, ApiResult, FieldErrors, Problem};
use super::extract::{AuthUser, Body, Ids, JsonBody, QueryParams, double_option};
use super::idempotency::Idempotent;
use crate::domain::webhook::{self, MAX_ENDPOINTS_PER_COMPANY, MAX_URL_LEN};
use crate::http::AppState;
use crate::store::{AttemptRow, EndpointChange, EndpointRow, NewEndpoint};
use crate::webhooks::{address, sign};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// How long a URL's host name may take to resolve when an endpoint is saved.
const RESOLVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a rotated secret keeps signing beside the new one.
pub const ROTATION_OVERLAP_HOURS: i64 = 24;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/companies/{id}/webhooks", get(list).post(create))
        .route(
            "/api/companies/{id}/webhooks/{wid}",
            get(show).patch(update).delete(remove),
        )
        .route(
            "/api/companies/{id}/webhooks/{wid}/rotate-secret",
            post(rotate_secret),
        )
        .route("/api/companies/{id}/webhooks/{wid}/test", post(test))
        .route("/api/companies/{id}/webhooks/{wid}/attempts", get(attempts))
        .route(
            "/api/companies/{id}/webhooks/{wid}/redeliver",
            post(redeliver),
        )
}

/// An event type an endpoint can receive (CONTRACT.md §5).
#[derive(ToSchema)]
#[schema(as = WebhookEventType)]
#[allow(dead_code)] // documents the strings `domain::webhook::EVENT_TYPES` lists
pub enum EventTypeDoc {
    #[schema(rename = "application.submitted")]
    ApplicationSubmitted,
    #[schema(rename = "application.status_changed")]
    ApplicationStatusChanged,
    #[schema(rename = "job.expiring")]
    JobExpiring,
    #[schema(rename = "job.expired")]
    JobExpired,
    #[schema(rename = "job.reviewed")]
    JobReviewed,
}

/// A webhook endpoint of a company.
#[derive(Serialize, ToSchema)]
pub struct EndpointOut {
    pub id: i64,
    /// Where deliveries are `POST`ed.
    pub url: String,
    /// The event types it receives, in the contract's order.
    #[schema(value_type = Vec<EventTypeDoc>)]
    pub events: Vec<String>,
    #[schema(required = true)]
    pub description: Option<String>,
    /// A paused endpoint receives nothing until it is un-paused.
    pub paused: bool,
    /// Why deliveries stopped without the company asking (a 410 answer, or days without a
    /// success); the endpoint is then paused. `null` while it is enabled.
    #[schema(required = true)]
    pub disabled_reason: Option<String>,
    #[serde(with = "crate::timefmt")]
    pub created_at: DateTime<Utc>,
}

impl From<&EndpointRow> for EndpointOut {
    fn from(e: &EndpointRow) -> Self {
        EndpointOut {
            id: e.id,
            url: e.url.clone(),
            events: webhook::stored_events(&e.events),
            description: e.description.clone(),
            paused: e.paused,
            disabled_reason: e.disabled_reason.clone(),
            created_at: e.created_at,
        }
    }
}

/// A new endpoint, with its signing secret: shown this once.
#[derive(Serialize, ToSchema)]
pub struct CreatedEndpoint {
    #[serde(flatten)]
    pub endpoint: EndpointOut,
    /// `whsec_` and the base64 of the key (Standard Webhooks): verifies every delivery's
    /// `webhook-signature`. Not shown again; `rotate-secret` makes a new one.
    pub secret: String,
}

/// A new secret after a rotation; the previous one keeps signing beside it for 24 hours.
#[derive(Serialize, ToSchema)]
pub struct RotatedSecret {
    pub secret: String,
}

#[derive(Serialize, ToSchema)]
pub struct EndpointList {
    pub items: Vec<EndpointOut>,
    pub page: i64,
    pub page_size: i64,
    pub total: i64,
}

#[derive(Deserialize, ToSchema)]
pub struct EndpointIn {
    /// `https` (or `http` with `WEBHOOK_ALLOW_PRIVATE`), at most 2048 bytes, no user name or
    /// password; its host must resolve to public addresses only.
    pub url: String,
    #[schema(value_type = Vec<EventTypeDoc>, min_items = 1)]
    pub events: Vec<String>,
    /// One line, at most 200 characters.
    pub description: Option<String>,
}

impl JsonBody for EndpointIn {
    const FIELDS: &'static [&'static str] = &["url", "events", "description"];
    const READ_ONLY: &'static [&'static str] =
        &["id", "paused", "disabled_reason", "created_at", "secret"];
}

/// What a PATCH may change; absent fields stay, a `null` description clears it.
#[derive(Deserialize, ToSchema)]
pub struct EndpointPatch {
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub url: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Vec<EventTypeDoc>>)]
    pub events: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "double_option")]
    pub description: Option<Option<String>>,
    /// `false` also enables an endpoint that was disabled.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<bool>)]
    pub paused: Option<Option<bool>>,
}

impl JsonBody for EndpointPatch {
    const FIELDS: &'static [&'static str] = &["url", "events", "description", "paused"];
    const READ_ONLY: &'static [&'static str] = &["id", "disabled_reason", "created_at", "secret"];
}

/// A URL an endpoint may have: its form, then every address its host resolves to.
async fn checked_url(st: &AppState, raw: &str, errors: &mut FieldErrors) -> Option<String> {
    let raw = raw.trim();
    if raw.len() > MAX_URL_LEN {
        errors.add("url", format!("must be at most {MAX_URL_LEN} bytes"));
        return None;
    }
    let allow_private = st.config.webhook_allow_private;
    let target = match address::parse(raw, allow_private) {
        Ok(target) => target,
        Err(refused) => {
            errors.add("url", refused.to_string());
            return None;
        }
    };
    if target.url.as_str().len() > MAX_URL_LEN {
        errors.add(
            "url",
            format!("must be at most {MAX_URL_LEN} bytes in its normal form"),
        );
        return None;
    }
    match tokio::time::timeout(RESOLVE_TIMEOUT, address::resolve(&target, allow_private)).await {
        Ok(Ok(_)) => Some(target.url.to_string()),
        Ok(Err(refused)) => {
            // What a name resolves to inside the board's network is not told: the same words
            // whether it resolves to nothing or to a private address.
            tracing::info!(url = %target.url, reason = %refused, "a webhook URL was refused");
            errors.add(
                "url",
                "its host must resolve, and only to public addresses (no loopback, private, \
                 link-local or other reserved address)",
            );
            None
        }
        Err(_) => {
            errors.add(
                "url",
                format!(
                    "its host name did not resolve within {} s",
                    RESOLVE_TIMEOUT.as_secs()
                ),
            );
            None
        }
    }
}

fn description(value: Option<String>, errors: &mut FieldErrors) -> Option<String> {
    match value.map(|d| webhook::description(&d)) {
        None => None,
        Some(Ok(d)) if d.is_empty() => None,
        Some(Ok(d)) => Some(d),
        Some(Err(e)) => {
            errors.add("description", e);
            None
        }
    }
}

fn events(value: &[String], errors: &mut FieldErrors) -> Option<String> {
    match webhook::events(value) {
        Ok(list) => Some(webhook::events_text(&list)),
        Err(e) => {
            errors.add("events", e);
            None
        }
    }
}

fn render_created(secret: &str) -> impl Fn(&EndpointRow) -> String + '_ {
    move |row| {
        serde_json::to_string(&CreatedEndpoint {
            endpoint: row.into(),
            secret: secret.to_string(),
        })
        .unwrap_or_default()
    }
}

fn render(row: &EndpointRow) -> String {
    serde_json::to_string(&EndpointOut::from(row)).unwrap_or_default()
}

fn render_rotated(row: &EndpointRow) -> String {
    serde_json::to_string(&RotatedSecret {
        secret: row.secret.clone(),
    })
    .unwrap_or_default()
}

/// Add a webhook endpoint to a company (members only).
#[utoipa::path(post, operation_id = "create_webhook", path = "/api/companies/{id}/webhooks", tag = "webhooks", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    request_body = EndpointIn,
    responses((status = 201, body = CreatedEndpoint), (status = 403, description = "the caller is a candidate: only employers can", body = Problem),
              (status = 404, description = "no such company of the caller's", body = Problem),
              (status = 409, description = "too-many-webhooks: the company has 10 endpoints already", body = Problem),
              (status = 422, description = "a field is invalid: a URL that is not https, carries a user name, or whose host does not resolve or resolves to an address that is not public (unless WEBHOOK_ALLOW_PRIVATE); an unknown or repeated event type", body = Problem)))]
async fn create(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<(StatusCode, Json<CreatedEndpoint>)> {
    let company = member_company(&st, &user, ids.one()).await?;
    let input: EndpointIn = idem.body.json(false)?;
    let mut errors = FieldErrors::default();
    let events = events(&input.events, &mut errors);
    let description = description(input.description, &mut errors);
    // The address check last: it asks the DNS, and only a request valid otherwise needs it.
    let url = if errors.is_empty() {
        checked_url(&st, &input.url, &mut errors).await
    } else {
        None
    };
    errors.into_result()?;
    let (Some(url), Some(events)) = (url, events) else {
        return Err(ApiError::internal(anyhow::anyhow!(
            "an endpoint passed validation without its url or events"
        )));
    };
    let secret = sign::Secret::generate().expose();
    let render = render_created(&secret);
    let done = idem.completion(StatusCode::CREATED, &render)?;
    let row = st
        .store
        .create_endpoint(
            company.id,
            NewEndpoint {
                url,
                events,
                description,
                secret: secret.clone(),
            },
            MAX_ENDPOINTS_PER_COMPANY,
            done.as_ref(),
        )
        .await?;
    tracing::info!(
        endpoint_id = row.id,
        company_id = company.id,
        "user {} added a webhook endpoint",
        user.id()
    );
    Ok((
        StatusCode::CREATED,
        Json(CreatedEndpoint {
            endpoint: (&row).into(),
            secret: row.secret.clone(),
        }),
    ))
}

/// A company's webhook endpoints, oldest first (members only).
#[utoipa::path(get, operation_id = "list_webhooks", path = "/api/companies/{id}/webhooks", tag = "webhooks", security(("bearer" = [])),
    params(("id" = i64, Path), ("page" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "from 1"), ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20")),
    responses((status = 200, body = EndpointList), (status = 403, body = Problem), (status = 404, body = Problem), (status = 422, body = Problem)))]
async fn list(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    q: QueryParams,
) -> ApiResult<Json<EndpointList>> {
    let company = member_company(&st, &user, ids.one()).await?;
    let mut errors = FieldErrors::default();
    let page = q.page(&mut errors);
    errors.into_result()?;
    let (rows, total) = st.store.endpoints_of(company.id, page).await?;
    Ok(Json(EndpointList {
        items: rows.iter().map(EndpointOut::from).collect(),
        page: page.page,
        page_size: page.size,
        total,
    }))
}

/// One webhook endpoint (members only); its secret is not shown.
#[utoipa::path(get, operation_id = "get_webhook", path = "/api/companies/{id}/webhooks/{wid}", tag = "webhooks", security(("bearer" = [])),
    params(("id" = i64, Path), ("wid" = i64, Path)),
    responses((status = 200, body = EndpointOut), (status = 403, body = Problem), (status = 404, body = Problem)))]
async fn show(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
) -> ApiResult<Json<EndpointOut>> {
    let company = member_company(&st, &user, ids.0[0]).await?;
    let row = st.store.endpoint_of(company.id, ids.0[1]).await?;
    Ok(Json((&row).into()))
}

/// Change a webhook endpoint (members only): its URL, events, description, or pause it;
/// un-pausing enables one that was disabled.
#[utoipa::path(patch, operation_id = "update_webhook", path = "/api/companies/{id}/webhooks/{wid}", tag = "webhooks", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path), ("wid" = i64, Path)),
    request_body = EndpointPatch,
    responses((status = 200, body = EndpointOut), (status = 403, body = Problem), (status = 404, body = Problem),
              (status = 422, description = "a field is invalid (as at creation), null where it may not be, unknown or read-only", body = Problem)))]
async fn update(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<Json<EndpointOut>> {
    let company = member_company(&st, &user, ids.0[0]).await?;
    // 404 before anything is said about the body.
    let row = st.store.endpoint_of(company.id, ids.0[1]).await?;
    let patch: EndpointPatch = idem.body.json(false)?;
    let mut errors = FieldErrors::default();
    let events = match patch.events {
        None => None,
        Some(None) => {
            errors.add("events", "must not be null");
            None
        }
        Some(Some(list)) => events(&list, &mut errors),
    };
    let description = patch.description.map(|d| description(d, &mut errors));
    let paused = match patch.paused {
        None => None,
        Some(None) => {
            errors.add("paused", "must not be null");
            None
        }
        Some(p) => p,
    };
    let url = match patch.url {
        None => None,
        Some(None) => {
            errors.add("url", "must not be null");
            None
        }
        Some(Some(url)) if errors.is_empty() => checked_url(&st, &url, &mut errors).await,
        Some(Some(_)) => None,
    };
    errors.into_result()?;
    let done = idem.completion(StatusCode::OK, &render)?;
    let row = st
        .store
        .update_endpoint(
            company.id,
            row.id,
            EndpointChange {
                url,
                events,
                description,
                paused,
            },
            done.as_ref(),
        )
        .await?;
    tracing::info!(
        endpoint_id = row.id,
        company_id = company.id,
        "user {} changed a webhook endpoint",
        user.id()
    );
    Ok(Json((&row).into()))
}

/// Delete a webhook endpoint (members only): nothing more is delivered to it.
#[utoipa::path(delete, operation_id = "delete_webhook", path = "/api/companies/{id}/webhooks/{wid}", tag = "webhooks", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path), ("wid" = i64, Path)),
    responses((status = 204), (status = 403, body = Problem), (status = 404, body = Problem)))]
async fn remove(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    let company = member_company(&st, &user, ids.0[0]).await?;
    let row = st.store.endpoint_of(company.id, ids.0[1]).await?;
    let done = idem.no_content()?;
    st.store
        .delete_endpoint(company.id, row.id, done.as_ref())
        .await?;
    tracing::info!(
        endpoint_id = row.id,
        company_id = company.id,
        "user {} deleted a webhook endpoint",
        user.id()
    );
    Ok(StatusCode::NO_CONTENT)
}

/// Give a webhook endpoint a new signing secret (members only); the previous one keeps signing
/// beside it for 24 hours, so a receiver can switch without missing a delivery.
#[utoipa::path(post, operation_id = "rotate_webhook_secret", path = "/api/companies/{id}/webhooks/{wid}/rotate-secret", tag = "webhooks", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path), ("wid" = i64, Path)),
    responses((status = 200, body = RotatedSecret), (status = 403, body = Problem), (status = 404, body = Problem)))]
async fn rotate_secret(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<Json<RotatedSecret>> {
    let company = member_company(&st, &user, ids.0[0]).await?;
    let row = st.store.endpoint_of(company.id, ids.0[1]).await?;
    let done = idem.completion(StatusCode::OK, &render_rotated)?;
    let secret = sign::Secret::generate().expose();
    let row = st
        .store
        .rotate_endpoint_secret(
            company.id,
            row.id,
            secret,
            chrono::Duration::hours(ROTATION_OVERLAP_HOURS),
            done.as_ref(),
        )
        .await?;
    tracing::info!(
        endpoint_id = row.id,
        company_id = company.id,
        "user {} rotated a webhook endpoint's secret",
        user.id()
    );
    Ok(Json(RotatedSecret { secret: row.secret }))
}

/// One attempt of a delivery to an endpoint.
#[derive(Serialize, ToSchema)]
pub struct AttemptOut {
    /// The event the delivery reports (`data.event_id` of its body); what `redeliver` takes.
    pub event_id: String,
    /// The delivery's `webhook-id`, the same on every attempt.
    pub webhook_id: String,
    /// 1 for the first attempt of the delivery.
    pub attempt: i64,
    #[serde(with = "crate::timefmt")]
    pub at: DateTime<Utc>,
    /// The receiver's HTTP status; `null` when none came (a timeout, a refused address, a
    /// connection that failed).
    #[schema(required = true)]
    pub status: Option<i64>,
    pub duration_ms: i64,
    /// What went wrong, in words; `null` for a 2xx.
    #[schema(required = true)]
    pub error: Option<String>,
}

impl From<AttemptRow> for AttemptOut {
    fn from(a: AttemptRow) -> Self {
        AttemptOut {
            event_id: a.event_id,
            webhook_id: a.webhook_id,
            attempt: a.attempt,
            at: a.at,
            status: a.status,
            duration_ms: a.duration_ms,
            error: a.error,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct AttemptList {
    pub items: Vec<AttemptOut>,
    pub page: i64,
    pub page_size: i64,
    pub total: i64,
}

#[derive(Deserialize, ToSchema)]
pub struct RedeliverIn {
    /// The `event_id` of one of the endpoint's deliveries (as its attempts list it).
    pub event_id: String,
}

impl JsonBody for RedeliverIn {
    const FIELDS: &'static [&'static str] = &["event_id"];
    const READ_ONLY: &'static [&'static str] = &[];
}

/// Send a `ping` to a webhook endpoint (members only), whatever events it takes:
/// `{"type": "ping", "data": {"endpoint_id": …}}`, signed like every delivery (to a paused
/// endpoint, once it is un-paused).
#[utoipa::path(post, operation_id = "test_webhook", path = "/api/companies/{id}/webhooks/{wid}/test", tag = "webhooks", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path), ("wid" = i64, Path)),
    responses((status = 202, description = "the ping is queued; its attempts are listed like any delivery's"), (status = 400, description = "a malformed Idempotency-Key", body = Problem), (status = 403, body = Problem), (status = 404, body = Problem)))]
async fn test(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    let company = member_company(&st, &user, ids.0[0]).await?;
    let endpoint = st.store.endpoint_of(company.id, ids.0[1]).await?;
    let done = idem.completion(StatusCode::ACCEPTED, &|_: &()| String::new())?;
    st.store
        .queue_ping(company.id, endpoint.id, done.as_ref())
        .await?;
    Ok(StatusCode::ACCEPTED)
}

/// A webhook endpoint's recent attempts, newest first (members only).
#[utoipa::path(get, operation_id = "list_webhook_attempts", path = "/api/companies/{id}/webhooks/{wid}/attempts", tag = "webhooks", security(("bearer" = [])),
    params(("id" = i64, Path), ("wid" = i64, Path), ("page" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "from 1"), ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20")),
    responses((status = 200, body = AttemptList), (status = 403, body = Problem), (status = 404, body = Problem), (status = 422, body = Problem)))]
async fn attempts(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    q: QueryParams,
) -> ApiResult<Json<AttemptList>> {
    let company = member_company(&st, &user, ids.0[0]).await?;
    let mut errors = FieldErrors::default();
    let page = q.page(&mut errors);
    errors.into_result()?;
    let (rows, total) = st
        .store
        .endpoint_attempts(company.id, ids.0[1], page)
        .await?;
    Ok(Json(AttemptList {
        items: rows.into_iter().map(AttemptOut::from).collect(),
        page: page.page,
        page_size: page.size,
        total,
    }))
}

/// Deliver an event to a webhook endpoint again (members only): due now, with the same
/// `webhook-id`, retried as a new delivery would be.
#[utoipa::path(post, operation_id = "redeliver_webhook", path = "/api/companies/{id}/webhooks/{wid}/redeliver", tag = "webhooks", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path), ("wid" = i64, Path)),
    request_body = RedeliverIn,
    responses((status = 202, description = "the delivery is due again"), (status = 403, body = Problem),
              (status = 404, description = "no such endpoint of the company's, or no delivery of that event to it", body = Problem),
              (status = 422, body = Problem)))]
async fn redeliver(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<StatusCode> {
    let company = member_company(&st, &user, ids.0[0]).await?;
    let endpoint = st.store.endpoint_of(company.id, ids.0[1]).await?;
    let input: RedeliverIn = idem.body.json(false)?;
    if !crate::domain::event::valid_event_id(&input.event_id) {
        return Err(ApiError::field(
            "event_id",
            "must be 1-64 characters of A-Z, a-z, 0-9, '.', '_' and '-'",
        ));
    }
    let done = idem.completion(StatusCode::ACCEPTED, &|_: &()| String::new())?;
    st.store
        .redeliver(company.id, endpoint.id, &input.event_id, done.as_ref())
        .await?;
    tracing::info!(
        endpoint_id = endpoint.id,
        event_id = %input.event_id,
        "user {} asked for a webhook delivery again",
        user.id()
    );
    Ok(StatusCode::ACCEPTED)
}
