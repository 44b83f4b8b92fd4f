//! The operators' review of jobs (docs/api.md, Operators, and `JOB_MODERATION`): the jobs
//! in a status (the review queue, oldest first), approve and reject. Like every `/api/admin/*`
//! route, 404 to anyone but an operator ([`Operator`]); each write is logged at INFO with the
//! operator's id, and writes one `job.reviewed` per member of the job's company.

use super::error::Problem;
use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{Body, Ids, JsonBody, Operator, QueryParams, wrong_method};
use super::idempotency::{Idempotent, json_of};
use super::job_view::JobOut;
use crate::domain::job::REJECTION_REASON_MAX;
use crate::domain::{JobStatus, validate};
use crate::http::AppState;
use crate::store::{JobRow, Review};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/api/admin/jobs",
            get(list).fallback(wrong_method("GET,HEAD")),
        )
        .route(
            "/api/admin/jobs/{id}/approve",
            post(approve).fallback(wrong_method("POST")),
        )
        .route(
            "/api/admin/jobs/{id}/reject",
            post(reject).fallback(wrong_method("POST")),
        )
}

/// Jobs in one status, oldest first.
#[derive(Serialize, ToSchema)]
pub struct AdminJobList {
    pub items: Vec<JobOut>,
    pub page: i64,
    pub page_size: i64,
    pub total: i64,
}

/// The jobs in one status (default `pending_review`: the review queue), oldest first
/// (`created_at`, then id). `open` and `expired` are read as the jobs read: an open job past its
/// `expires_at` is expired.
#[utoipa::path(get, operation_id = "admin_jobs", path = "/api/admin/jobs", tag = "operators", security(("bearer" = [])),
    params(("status" = Option<JobStatus>, Query, description = "default pending_review"),
           ("page" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "from 1"),
           ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20")),
    responses((status = 200, body = AdminJobList), (status = 404, body = Problem, description = "not an operator (signed in or not)"), (status = 422, body = Problem)))]
async fn list(
    State(st): State<AppState>,
    _op: Operator,
    q: QueryParams,
) -> ApiResult<Json<AdminJobList>> {
    let mut errors = FieldErrors::default();
    let status = match q.get("status") {
        None => JobStatus::PendingReview,
        Some(s) => JobStatus::parse(s).unwrap_or_else(|| {
            errors.add(
                "status",
                "must be one of open, closed, expired, pending_review, rejected",
            );
            JobStatus::PendingReview
        }),
    };
    let page = q.page(&mut errors);
    errors.into_result()?;
    let (rows, total) = st
        .store
        .jobs_in_status(status, crate::timefmt::now(), page)
        .await?;
    Ok(Json(AdminJobList {
        items: rows.into_iter().map(Into::into).collect(),
        page: page.page,
        page_size: page.size,
        total,
    }))
}

/// Approve a job waiting for review: it opens now (its `created_at` becomes the approval) until
/// the `expires_at` its members set, if still ahead, or `JOB_POSTING_DAYS` from now; it is in
/// searches at once. Each member of its company gets a `job.reviewed` (approved).
#[utoipa::path(post, operation_id = "admin_approve_job", path = "/api/admin/jobs/{id}/approve", tag = "operators", security(("bearer" = [])),
    params(("id" = i64, Path), ("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")),
    responses((status = 200, body = JobOut), (status = 404, body = Problem, description = "no such job, or not an operator"),
              (status = 409, body = Problem, description = "invalid-transition: the job is not waiting for review")))]
async fn approve(
    State(st): State<AppState>,
    op: Operator,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<Json<JobOut>> {
    let job = st.store.job(ids.one()).await?;
    let done = idem.completion(StatusCode::OK, &json_of::<JobRow, JobOut>)?;
    let posting = chrono::Duration::days(st.config.job_posting_days as i64);
    let row = review(&st, &op, job.id, Review::Approve { posting }, done.as_ref()).await?;
    Ok(Json(JobOut::from(row)))
}

/// An operator's decision, written with its events: the cache moves on (the job enters or
/// stays out of searches), the events are counted, the decision logged.
async fn review(
    st: &AppState,
    op: &Operator,
    job_id: i64,
    review: Review,
    done: crate::store::Idem<'_, JobRow>,
) -> ApiResult<JobRow> {
    let verb = match review {
        Review::Approve { .. } => "approved",
        Review::Reject { .. } => "rejected",
    };
    let row = st.store.review_job(job_id, review, done).await?;
    super::search::job_written(st).await;
    events_committed(st, &row).await;
    tracing::info!(
        operator = op.user_id,
        job_id = row.id,
        "an operator {verb} job {}",
        row.id
    );
    Ok(row)
}

/// The decision wrote one `job.reviewed` per member of the job's company: each is published (with
/// `QUEUE=sqs`, the relay is woken).
async fn events_committed(st: &AppState, job: &JobRow) {
    match st.store.members(job.company_id).await {
        Ok(members) => {
            for _ in &members {
                st.event_committed();
            }
        }
        // The events are committed whatever this count says; the relay sweeps on its own too.
        Err(e) => {
            tracing::warn!(
                error = format!("{e:#}"),
                "could not count the review's events for the metrics"
            );
            st.event_committed();
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub struct RejectIn {
    /// Why, for the job's members: 1–1000 characters after trimming.
    pub reason: String,
}

impl JsonBody for RejectIn {
    const FIELDS: &'static [&'static str] = &["reason"];
}

/// Reject a job waiting for review, with a reason its members see (`rejection_reason`) and get
/// in their `job.reviewed` (rejected). A member's PATCH sends it back to review.
#[utoipa::path(post, operation_id = "admin_reject_job", path = "/api/admin/jobs/{id}/reject", tag = "operators", security(("bearer" = [])), request_body = RejectIn,
    params(("id" = i64, Path), ("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")),
    responses((status = 200, body = JobOut), (status = 404, body = Problem, description = "no such job, or not an operator"),
              (status = 409, body = Problem, description = "invalid-transition: the job is not waiting for review"),
              (status = 422, body = Problem)))]
async fn reject(
    State(st): State<AppState>,
    op: Operator,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<Json<JobOut>> {
    let job = st.store.job(ids.one()).await?;
    let input: RejectIn = idem.body.json(false)?;
    let reason = validate::text(&input.reason, 1, REJECTION_REASON_MAX)
        .and_then(|r| {
            if has_visible(&r) {
                Ok(r)
            } else {
                Err("must hold a visible character".to_string())
            }
        })
        .map_err(|m| ApiError::field("reason", m))?;
    let done = idem.completion(StatusCode::OK, &json_of::<JobRow, JobOut>)?;
    let row = review(&st, &op, job.id, Review::Reject { reason }, done.as_ref()).await?;
    Ok(Json(JobOut::from(row)))
}

/// Whether `value` holds a character that shows: not whitespace, not a control, and not one
/// of the format characters that draw nothing (zero-width space and joiners, word joiner,
/// invisible operators, byte-order mark, soft hyphen, fillers, bidi controls).
fn has_visible(value: &str) -> bool {
    value.chars().any(|c| {
        !(c.is_whitespace()
            || c.is_control()
            || validate::is_bidi_control(c)
            || matches!(c,
                '\u{00AD}' | '\u{034F}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}'
                | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}' | '\u{2060}'..='\u{206F}'
                | '\u{3164}' | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}'))
    })
}
