//! Jobs: publishing (company members), reading one, renewing, and the lifecycle rules of a
//! member's PATCH (docs/api.md, Jobs: `open ↔ closed`, `expires_at`, a rejected job back to
//! review); the search is in `search.rs`, the operators' review in `admin_jobs.rs`.

use super::companies::member_company;
use super::error::Problem;
use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{AuthUser, Body, Ids, JsonBody, MaybeUser};
use super::idempotency::{Idempotent, json_of};
use super::job_patch::{Draft, JobPatch, merge, validate_job};
use super::job_pay::PayPlaceIn;
use super::job_view::JobOut;
use super::search::search_jobs;
use crate::domain::job::{check_expires_at, parse_time};
use crate::domain::pay_place::{Place, Salary, Workplace};
use crate::domain::{EmploymentType, JobStatus, Role};
use crate::http::AppState;
use crate::store::{JobRow, UserRow};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/jobs", get(search_jobs).post(create))
        .route("/api/jobs/{id}", get(show).patch(update).delete(remove))
        .route("/api/jobs/{id}/renew", post(renew))
}

#[derive(Deserialize, ToSchema)]
pub struct JobIn {
    pub company_id: i64,
    pub title: String,
    pub description: String,
    /// `onsite`, `hybrid` or `remote` (or the older `remote`).
    #[serde(default)]
    #[schema(value_type = Option<Workplace>)]
    pub workplace: Option<String>,
    /// 1 to 10 places `{city, region, country}` (or the older `location`); for a remote job,
    /// where its candidates may live.
    #[serde(default)]
    #[schema(value_type = Option<Vec<Place>>)]
    pub locations: Option<serde_json::Value>,
    /// The pay range `{min, max, currency, period}` (or the older `salary_min`/`salary_max`);
    /// required under `JOB_REQUIRE_SALARY`.
    #[serde(default)]
    #[schema(value_type = Option<Salary>)]
    pub salary: Option<serde_json::Value>,
    /// Deprecated: one place, its country unknown until a member sets it (use `locations`).
    #[serde(default)]
    #[schema(deprecated)]
    pub location: Option<String>,
    /// Deprecated: `true` is `workplace: remote`, `false` `onsite`.
    #[serde(default)]
    #[schema(deprecated)]
    pub remote: Option<bool>,
    /// Deprecated: the range's minimum, in `DEFAULT_SALARY_CURRENCY` per year (use `salary`).
    #[serde(default)]
    #[schema(deprecated)]
    pub salary_min: Option<i64>,
    /// Deprecated: the range's maximum (use `salary`).
    #[serde(default)]
    #[schema(deprecated)]
    pub salary_max: Option<i64>,
    #[schema(value_type = EmploymentType)]
    pub employment_type: String,
    /// Any time in the next 365 days; default `JOB_POSTING_DAYS` after the job opens (its
    /// creation, or its approval under moderation).
    #[serde(default)]
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<String>,
    /// Whether applying needs a résumé; default false.
    #[serde(default)]
    pub resume_required: bool,
    /// Up to 20 screening questions, `[{text, kind, required?}]`; the server assigns their ids.
    #[serde(default)]
    #[schema(value_type = Option<Vec<super::job_patch::QuestionIn>>)]
    pub questions: Option<serde_json::Value>,
}

impl JsonBody for JobIn {
    const FIELDS: &'static [&'static str] = &[
        "company_id",
        "title",
        "description",
        "workplace",
        "locations",
        "salary",
        "location",
        "remote",
        "salary_min",
        "salary_max",
        "employment_type",
        "expires_at",
        "resume_required",
        "questions",
    ];
    const READ_ONLY: &'static [&'static str] = &[
        "id",
        "company",
        "status",
        "rejection_reason",
        "created_at",
        "updated_at",
    ];
}

/// A member's `expires_at`, parsed and checked against `now` (422 under `expires_at`).
fn expiry(raw: &str, now: DateTime<Utc>, errors: &mut FieldErrors) -> Option<DateTime<Utc>> {
    errors.check(
        "expires_at",
        parse_time(raw).and_then(|t| check_expires_at(t, now)),
    )
}

/// `JOB_POSTING_DAYS`.
fn posting(st: &AppState) -> Duration {
    Duration::days(st.config.job_posting_days as i64)
}

/// Publish a job for one of the caller's companies: `open` until `expires_at` (default
/// `JOB_POSTING_DAYS` from now), or, under `JOB_MODERATION`, `pending_review` until an operator
/// approves it.
#[utoipa::path(post, operation_id = "create_job", path = "/api/jobs", params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")), tag = "jobs", security(("bearer" = [])), request_body = JobIn,
    responses((status = 201, body = JobOut), (status = 403, body = Problem),
              (status = 404, description = "no such company among the caller's", body = Problem), (status = 422, body = Problem)))]
async fn create(
    State(st): State<AppState>,
    user: AuthUser,
    idem: Idempotent<Body>,
) -> ApiResult<(StatusCode, Json<JobOut>)> {
    user.require(Role::Employer, "publish jobs")?;
    // The company decides visibility (404) before the rest of the body is judged (422).
    let loose = idem.body.json_value(false)?;
    if let Some(company_id) = loose.get("company_id").and_then(|v| v.as_i64()) {
        member_company(&st, &user, company_id).await?;
    }
    let input: JobIn = idem.body.json(false)?;
    // The database's clock, as the job's `created_at` will be: a host whose clock is behind
    // must not make the default date early, nor one ahead accept a date that has passed.
    let now = st.store.now().await?;
    let mut errors = FieldErrors::default();
    let expires_at = input
        .expires_at
        .as_deref()
        .and_then(|raw| expiry(raw, now, &mut errors));
    // Under moderation the job opens at its approval, which gives it its default date.
    let (status, expires_at) = if st.config.job_moderation {
        (JobStatus::PendingReview, expires_at)
    } else {
        (
            JobStatus::Open,
            Some(expires_at.unwrap_or(now + posting(&st))),
        )
    };
    let fields = validate_job(
        Draft {
            title: input.title,
            description: input.description,
            pay: PayPlaceIn {
                workplace: input.workplace.map(Some),
                locations: input.locations,
                salary: input.salary,
                location: input.location.map(Some),
                remote: input.remote.map(Some),
                salary_min: input.salary_min.map(Some),
                salary_max: input.salary_max.map(Some),
            },
            current: None,
            require_salary: st.config.job_require_salary,
            employment_type: input.employment_type,
            status,
            expires_at,
            resume_required: input.resume_required,
            new_questions: input.questions.filter(|q| !q.is_null()),
            questions: Vec::new(),
        },
        errors,
    )?;
    let done = idem.completion(StatusCode::CREATED, &json_of::<JobRow, JobOut>)?;
    let job = st
        .store
        .create_job(input.company_id, fields, done.as_ref())
        .await?;
    super::search::job_written(&st).await;
    Ok((StatusCode::CREATED, Json(JobOut::from(job))))
}

/// Whether `user` may see a job waiting for review or rejected: a member of its company, or an
/// operator.
async fn may_see_unpublished(st: &AppState, user: &UserRow, job: &JobRow) -> ApiResult<bool> {
    if user.role() == Role::Employer && st.store.is_member(job.company_id, user.id).await? {
        return Ok(true);
    }
    Ok(st.store.is_operator(user.id).await?)
}

/// The job, if `user` (none: anonymous) may see it; 404 otherwise.
pub(super) async fn visible_job(
    st: &AppState,
    user: Option<&UserRow>,
    id: i64,
) -> ApiResult<JobRow> {
    let job = st.store.job(id).await?;
    if job.status.is_public() {
        return Ok(job);
    }
    match user {
        Some(user) if may_see_unpublished(st, user, &job).await? => Ok(job),
        _ => Err(ApiError::not_found()),
    }
}

/// One job (public; closed and expired jobs included; a job waiting for review, or rejected,
/// only to its company's members and to operators).
#[utoipa::path(get, operation_id = "get_job", path = "/api/jobs/{id}", tag = "jobs", security((), ("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = JobOut), (status = 404, body = Problem)))]
async fn show(State(st): State<AppState>, user: MaybeUser, ids: Ids) -> ApiResult<Json<JobOut>> {
    Ok(Json(
        visible_job(&st, user.0.as_ref(), ids.one()).await?.into(),
    ))
}

async fn member_job(st: &AppState, user: &AuthUser, id: i64) -> ApiResult<JobRow> {
    user.require(Role::Employer, "manage jobs")?;
    let job = st.store.job(id).await?;
    member_company(st, user, job.company_id).await?;
    Ok(job)
}

/// Update a job (members of its company) as a JSON Merge Patch; `status` may go open ↔ closed,
/// a rejected job goes back to review, `expires_at` is set while the job is open (or waiting
/// for review); reopening a job whose date has passed gives it `JOB_POSTING_DAYS` from now.
#[utoipa::path(patch, operation_id = "update_job", path = "/api/jobs/{id}", tag = "jobs", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    request_body(content = JobPatch, content_type = "application/merge-patch+json"),
    responses((status = 200, body = JobOut), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem),
              (status = 409, description = "invalid-transition: a status move other than open ↔ closed; job-not-open: expires_at on a closed or expired job", body = Problem),
              (status = 422, description = "invalid, unknown or read-only field", body = Problem)))]
async fn update(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<Json<JobOut>> {
    let mut job = member_job(&st, &user, ids.one()).await?;
    let patch: JobPatch = idem.body.json(false)?;
    let done = idem.completion(StatusCode::OK, &json_of::<JobRow, JobOut>)?;
    // Merge and write conditionally on updated_at; a concurrent write makes us merge again.
    for _ in 0..5 {
        let fields = merge(
            &job,
            &patch,
            st.store.now().await?,
            posting(&st),
            st.config.job_require_salary,
        )?;
        if let Some(updated) = st
            .store
            .update_job(job.id, fields, job.updated_at, done.as_ref())
            .await?
        {
            super::search::job_written(&st).await;
            return Ok(Json(JobOut::from(updated)));
        }
        job = st.store.job(job.id).await?;
    }
    Err(ApiError::internal(anyhow::anyhow!(
        "job {} kept changing during the update",
        job.id
    )))
}

/// Delete a job with its applications and their history; no email is sent.
#[utoipa::path(delete, operation_id = "delete_job", path = "/api/jobs/{id}", tag = "jobs", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    responses((status = 204), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem)))]
async fn remove(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    let job = member_job(&st, &user, ids.one()).await?;
    let done = idem.no_content()?;
    st.store.delete_job(job.id, done.as_ref()).await?;
    super::search::job_written(&st).await;
    Ok(StatusCode::NO_CONTENT)
}

/// Renewal's body: no field (send nothing, or `{}`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenewIn {}

impl JsonBody for RenewIn {
    const FIELDS: &'static [&'static str] = &[];
}

/// Renew a job (members of its company): an open or expired job is open until
/// `JOB_POSTING_DAYS` from now.
#[utoipa::path(post, operation_id = "renew_job", path = "/api/jobs/{id}/renew", tag = "jobs", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)), request_body(content = Option<RenewIn>, description = "nothing, or {}"),
    responses((status = 200, body = JobOut), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem),
              (status = 409, description = "not-renewable: the job is neither open nor expired", body = Problem),
              (status = 422, description = "a body with a field: renewal takes none (send nothing, or {})", body = Problem)))]
async fn renew(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<Json<JobOut>> {
    let job = member_job(&st, &user, ids.one()).await?;
    // Renewal takes no field: a body that asks for something (an `expires_at`) is refused
    // rather than ignored.
    // An empty body is nothing only when it names no type (a text/plain one is 415).
    let bare = !idem
        .body
        .headers
        .contains_key(axum::http::header::CONTENT_TYPE);
    let RenewIn {} = idem.body.json(bare)?;
    let done = idem.completion(StatusCode::OK, &json_of::<JobRow, JobOut>)?;
    let expires_at = st.store.now().await? + posting(&st);
    let renewed = st
        .store
        .renew_job(job.id, expires_at, done.as_ref())
        .await?;
    super::search::job_written(&st).await;
    Ok(Json(JobOut::from(renewed)))
}
