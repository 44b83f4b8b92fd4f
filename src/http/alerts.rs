//! Job alerts: a candidate's saved searches (at most 20), each emailed as a digest of the new
//! jobs that match it once per day or week (by the worker's upkeep). An alert is seen, changed
//! and deleted only by its owner (404 to anyone else).

use super::error::Problem;
use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{AuthUser, Body, Ids, JsonBody, QueryParams, double_option};
use super::filters::{JsonFilters, search_filters};
use super::idempotency::Idempotent;
use crate::domain::alert::{Frequency, MAX_ALERTS_PER_USER, check_saved_search};
use crate::domain::pay_place::Workplace;
use crate::domain::search::SearchFilters;
use crate::domain::{EmploymentType, Role, UnknownValue};
use crate::http::AppState;
use crate::store::{AlertChange, AlertRow, NewAlert};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, patch};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/alerts", get(list).post(create))
        .route("/api/alerts/{id}", patch(update).delete(remove))
}

/// An alert's saved search, as `GET /api/jobs` takes it; unset fields are `null`.
#[derive(Serialize, ToSchema)]
pub struct AlertSearch {
    /// Words that must all match (as typed, trimmed).
    #[schema(required = true)]
    pub q: Option<String>,
    /// A case-insensitive substring of the location (as typed, trimmed).
    #[schema(required = true)]
    pub location: Option<String>,
    #[schema(required = true)]
    pub remote: Option<bool>,
    #[schema(required = true)]
    pub workplace: Option<Workplace>,
    /// ISO 3166-1 alpha-2: jobs with a place in that country.
    #[schema(required = true)]
    pub country: Option<String>,
    #[schema(required = true)]
    pub company_id: Option<i64>,
    /// Keeps jobs whose salary.max is at least this, or that state no pay; with
    /// `salary_currency`, compared over the yearly top of the range.
    #[schema(required = true)]
    pub salary_min: Option<i64>,
    /// ISO 4217: jobs paid in it, or that state no pay.
    #[schema(required = true)]
    pub salary_currency: Option<String>,
    #[schema(required = true)]
    pub employment_type: Option<EmploymentType>,
}

impl From<SearchFilters> for AlertSearch {
    fn from(f: SearchFilters) -> Self {
        AlertSearch {
            q: f.q,
            location: f.location,
            remote: f.remote,
            workplace: f.workplace,
            country: f.country,
            company_id: f.company_id,
            salary_min: f.salary_min,
            salary_currency: f.salary_currency,
            employment_type: f.employment_type,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct AlertOut {
    pub id: i64,
    pub search: AlertSearch,
    pub frequency: Frequency,
    /// A paused alert sends no digest (an unsubscribe link pauses it).
    pub paused: bool,
    #[serde(with = "crate::timefmt")]
    pub created_at: DateTime<Utc>,
    /// When its last digest was written; `null` before the first.
    #[serde(with = "crate::timefmt::option")]
    #[schema(required = true)]
    pub last_sent_at: Option<DateTime<Utc>>,
}

impl TryFrom<AlertRow> for AlertOut {
    type Error = UnknownValue;

    fn try_from(a: AlertRow) -> Result<Self, UnknownValue> {
        Ok(AlertOut {
            search: a.filters()?.into(),
            id: a.id,
            frequency: a.frequency,
            paused: a.paused,
            created_at: a.created_at,
            last_sent_at: a.last_sent_at,
        })
    }
}

pub(super) fn out(row: AlertRow) -> ApiResult<AlertOut> {
    AlertOut::try_from(row).map_err(|e| ApiError::internal(e.into()))
}

/// The stored answer of a write (a row it just wrote, so its values are known).
fn render(row: &AlertRow) -> String {
    AlertOut::try_from(row.clone())
        .ok()
        .and_then(|a| serde_json::to_string(&a).ok())
        .unwrap_or_default()
}

#[derive(Serialize, ToSchema)]
pub struct AlertList {
    pub items: Vec<AlertOut>,
    pub page: i64,
    pub page_size: i64,
    pub total: i64,
}

/// The search an alert saves: the filters of `GET /api/jobs`, validated as it validates them
/// (errors named `search.q`, …); at least one of `q` (with a word), `location`, `company_id`.
#[derive(ToSchema)]
#[allow(dead_code)] // documents the JSON object that `JsonFilters` reads
pub struct AlertSearchIn {
    /// Words that must all match a whole word of the title, description or company name
    /// (singular and plural alike); at most 32 distinct words.
    q: Option<String>,
    /// A case-insensitive substring of the location.
    location: Option<String>,
    remote: Option<bool>,
    #[schema(minimum = 1)]
    company_id: Option<i64>,
    /// Keeps jobs whose salary_max is at least this, or unknown.
    #[schema(minimum = 0, maximum = 1000000000)]
    salary_min: Option<i64>,
    employment_type: Option<EmploymentType>,
}

#[derive(Deserialize, ToSchema)]
pub struct AlertIn {
    #[schema(value_type = AlertSearchIn)]
    pub search: serde_json::Value,
    #[schema(value_type = Frequency)]
    pub frequency: String,
}

impl JsonBody for AlertIn {
    const FIELDS: &'static [&'static str] = &["search", "frequency"];
    const READ_ONLY: &'static [&'static str] = &["id", "created_at", "last_sent_at"];
}

/// What a PATCH may change; absent fields stay.
#[derive(Deserialize, ToSchema)]
pub struct AlertPatch {
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Frequency>)]
    pub frequency: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<bool>)]
    pub paused: Option<Option<bool>>,
}

impl JsonBody for AlertPatch {
    const FIELDS: &'static [&'static str] = &["frequency", "paused"];
    const READ_ONLY: &'static [&'static str] = &["id", "search", "created_at", "last_sent_at"];
}

fn frequency(value: &str, errors: &mut FieldErrors) -> Option<Frequency> {
    let parsed = Frequency::parse(value);
    if parsed.is_none() {
        errors.add("frequency", "must be daily or weekly");
    }
    parsed
}

/// Save a search as an alert (candidates).
#[utoipa::path(post, operation_id = "create_alert", path = "/api/alerts", tag = "alerts", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")),
    request_body = AlertIn,
    responses((status = 201, body = AlertOut), (status = 403, description = "the caller is an employer: only candidates have alerts", body = Problem),
              (status = 409, description = "too-many-alerts: the caller has 20 alerts already", body = Problem),
              (status = 422, description = "a field is invalid (search fields as `search.q`, …), or the search has none of q, location, company_id", body = Problem)))]
async fn create(
    State(st): State<AppState>,
    user: AuthUser,
    idem: Idempotent<Body>,
) -> ApiResult<(StatusCode, Json<AlertOut>)> {
    user.require(Role::Candidate, "have job alerts")?;
    let input: AlertIn = idem.body.json(false)?;
    let mut errors = FieldErrors::default();
    let filters = JsonFilters::new(&input.search, "search", &mut errors)
        .map(|src| search_filters(&src, &mut errors));
    let frequency = frequency(&input.frequency, &mut errors);
    // What a saved search needs besides, once its fields are valid.
    if let Some(f) = &filters
        && errors.is_empty()
    {
        for (field, message) in check_saved_search(f) {
            let field = match field {
                "" => "search".to_string(),
                name => format!("search.{name}"),
            };
            errors.add(field, message);
        }
    }
    errors.into_result()?;
    let (Some(filters), Some(frequency)) = (filters, frequency) else {
        return Err(ApiError::internal(anyhow::anyhow!(
            "an alert passed validation without its search or frequency"
        )));
    };
    let done = idem.completion(StatusCode::CREATED, &render)?;
    let alert = st
        .store
        .create_alert(
            user.id(),
            NewAlert { filters, frequency },
            MAX_ALERTS_PER_USER,
            done.as_ref(),
        )
        .await?;
    tracing::info!(alert_id = alert.id, "user {} saved an alert", user.id());
    Ok((StatusCode::CREATED, Json(out(alert)?)))
}

/// The caller's alerts, newest first (an employer has none).
#[utoipa::path(get, operation_id = "list_alerts", path = "/api/alerts", tag = "alerts", security(("bearer" = [])),
    params(("page" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "from 1"), ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20")),
    responses((status = 200, body = AlertList), (status = 422, body = Problem)))]
async fn list(
    State(st): State<AppState>,
    user: AuthUser,
    q: QueryParams,
) -> ApiResult<Json<AlertList>> {
    let mut errors = FieldErrors::default();
    let page = q.page(&mut errors);
    errors.into_result()?;
    let (rows, total) = st.store.alerts_of(user.id(), page).await?;
    Ok(Json(AlertList {
        items: rows.into_iter().map(out).collect::<ApiResult<_>>()?,
        page: page.page,
        page_size: page.size,
        total,
    }))
}

/// Change an alert's frequency or pause it (its owner only); the search cannot change.
#[utoipa::path(patch, operation_id = "update_alert", path = "/api/alerts/{id}", tag = "alerts", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    request_body = AlertPatch,
    responses((status = 200, body = AlertOut), (status = 404, description = "no such alert of the caller's", body = Problem),
              (status = 422, description = "a field is invalid, null, unknown or read-only (`search`)", body = Problem)))]
async fn update(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<Json<AlertOut>> {
    // 404 before anything is said about the body.
    let alert = st.store.alert_of(user.id(), ids.one()).await?;
    let patch: AlertPatch = idem.body.json(false)?;
    let mut errors = FieldErrors::default();
    let frequency = match patch.frequency {
        None => None,
        Some(None) => {
            errors.add("frequency", "must not be null");
            None
        }
        Some(Some(f)) => frequency(&f, &mut errors),
    };
    let paused = match patch.paused {
        None => None,
        Some(None) => {
            errors.add("paused", "must not be null");
            None
        }
        Some(Some(p)) => Some(p),
    };
    errors.into_result()?;
    let done = idem.completion(StatusCode::OK, &render)?;
    let alert = st
        .store
        .update_alert(
            user.id(),
            alert.id,
            AlertChange { frequency, paused },
            done.as_ref(),
        )
        .await?;
    Ok(Json(out(alert)?))
}

/// Delete an alert (its owner only).
#[utoipa::path(delete, operation_id = "delete_alert", path = "/api/alerts/{id}", tag = "alerts", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    responses((status = 204), (status = 404, description = "no such alert of the caller's", body = Problem)))]
async fn remove(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    // 404 before a malformed Idempotency-Key is 400.
    let alert = st.store.alert_of(user.id(), ids.one()).await?;
    let done = idem.no_content()?;
    st.store
        .delete_alert(user.id(), alert.id, done.as_ref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
