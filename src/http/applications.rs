//! Applications: apply, the status workflow, withdraw, delete and history. An application is
//! visible to its candidate and to the members of the job's company, and to no one else (404).

use super::error::Problem;
use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{AuthUser, Body, Claimant, Ids, JsonBody, QueryParams};
use super::idempotency::{Idempotent, json_of};
use crate::domain::{Actor, ApplicationStatus, Role, validate};
use crate::http::AppState;
use crate::store::{ApplicationRow, ApplicationViewer, HistoryRow, TokenClaim};
use axum::extract::{FromRequest, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/jobs/{id}/applications", post(apply))
        .route("/api/applications", get(list))
        .route(
            "/api/applications/{id}",
            get(show).patch(change_status).delete(remove),
        )
        .route("/api/applications/{id}/withdraw", post(withdraw))
        .route("/api/applications/{id}/history", get(history))
}

#[derive(Serialize, ToSchema)]
pub struct JobRef {
    pub id: i64,
    pub title: String,
    pub company: super::job_view::CompanyRef,
}

#[derive(Serialize, ToSchema)]
pub struct CandidateRef {
    pub id: i64,
    pub name: String,
    pub email: String,
}

#[derive(Serialize, ToSchema)]
pub struct ApplicationOut {
    pub id: i64,
    pub job: JobRef,
    pub candidate: CandidateRef,
    pub status: ApplicationStatus,
    #[schema(required = true)]
    pub cover_letter: Option<String>,
    /// The attached résumé (`GET /api/applications/{id}/resume` downloads it), or `null`.
    #[schema(required = true)]
    pub resume: Option<AttachedResume>,
    /// The answers to the job's screening questions, in the questions' order.
    pub answers: Vec<crate::domain::questions::Answer>,
    #[serde(with = "crate::timefmt")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "crate::timefmt")]
    pub updated_at: DateTime<Utc>,
}

/// A résumé as an application shows it.
#[derive(Serialize, ToSchema)]
pub struct AttachedResume {
    pub id: i64,
    pub filename: String,
    pub content_type: String,
    pub size: i64,
}

impl From<ApplicationRow> for ApplicationOut {
    fn from(a: ApplicationRow) -> Self {
        let status = a.status();
        let resume = match (
            a.resume_id,
            a.resume_filename,
            a.resume_content_type,
            a.resume_size,
        ) {
            (Some(id), Some(filename), Some(content_type), Some(size)) => Some(AttachedResume {
                id,
                filename,
                content_type,
                size,
            }),
            _ => None,
        };
        let answers = a
            .answers
            .as_deref()
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        ApplicationOut {
            resume,
            answers,
            id: a.id,
            status,
            job: JobRef {
                id: a.job_id,
                title: a.job_title,
                company: super::job_view::CompanyRef {
                    id: a.company_id,
                    name: a.company_name,
                },
            },
            candidate: CandidateRef {
                id: a.candidate_id,
                name: a.candidate_name,
                email: a.candidate_email,
            },
            cover_letter: a.cover_letter,
            created_at: a.created_at,
            updated_at: a.updated_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ApplicationList {
    pub items: Vec<ApplicationOut>,
    pub page: i64,
    pub page_size: i64,
    pub total: i64,
}

#[derive(Serialize, ToSchema)]
pub struct HistoryOut {
    /// `null` for the application itself.
    #[schema(required = true)]
    pub old_status: Option<ApplicationStatus>,
    pub new_status: ApplicationStatus,
    /// The id of the user who made the change.
    pub changed_by: i64,
    /// The id of the event this change emitted; `null` for the application itself.
    #[schema(required = true)]
    pub event_id: Option<String>,
    #[serde(with = "crate::timefmt")]
    pub at: DateTime<Utc>,
}

impl TryFrom<HistoryRow> for HistoryOut {
    type Error = ApiError;
    fn try_from(h: HistoryRow) -> Result<Self, ApiError> {
        Ok(HistoryOut {
            old_status: h.old_status().map_err(|e| ApiError::internal(e.into()))?,
            new_status: h.new_status,
            changed_by: h.changed_by,
            event_id: h.event_id,
            at: h.at,
        })
    }
}

#[derive(Deserialize, ToSchema)]
pub struct ApplyIn {
    #[serde(default)]
    pub cover_letter: Option<String>,
    /// One of the caller's résumés (`/api/me/resumes`); required when the job's
    /// `resume_required` is true.
    #[serde(default)]
    pub resume_id: Option<i64>,
    /// Answers to the job's questions: `[{question_id, answer}]`, `answer` a boolean
    /// (`yes_no`), a string (`short_text`, at most 1 000 characters) or a number (`number`).
    #[serde(default)]
    #[schema(value_type = Option<Vec<crate::domain::questions::Answer>>)]
    pub answers: Option<serde_json::Value>,
}

impl JsonBody for ApplyIn {
    const FIELDS: &'static [&'static str] = &["cover_letter", "resume_id", "answers"];
}

#[derive(Deserialize, ToSchema)]
pub struct StatusIn {
    /// The new status: `reviewing`, `interview`, `offered`, `hired` or `rejected` (any other
    /// is a 409 that names the allowed moves).
    #[schema(value_type = ApplicationStatus)]
    pub status: String,
}

impl JsonBody for StatusIn {
    const FIELDS: &'static [&'static str] = &["status"];
}

/// The application if the caller may see it; 404 otherwise.
async fn visible(st: &AppState, user: &AuthUser, id: i64) -> ApiResult<ApplicationRow> {
    let app = st.store.application(id).await?;
    let allowed = match user.role() {
        Role::Candidate => app.candidate_id == user.id(),
        Role::Employer => st.store.is_member(app.company_id, user.id()).await?,
    };
    if allowed {
        Ok(app)
    } else {
        Err(ApiError::not_found())
    }
}

/// Apply to an open job (candidates). Once per job: a second application is 409, even when
/// concurrent, until the first is deleted. A job past its `expires_at` is 409 `job-closed`.
#[utoipa::path(post, operation_id = "apply_to_job", path = "/api/jobs/{id}/applications", tag = "applications", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)), request_body = ApplyIn,
    responses((status = 201, body = ApplicationOut), (status = 403, body = Problem), (status = 404, body = Problem),
              (status = 409, description = "already-applied, or job-closed (the job is closed, expired, or not open yet)", body = Problem), (status = 422, body = Problem)))]
async fn apply(
    State(st): State<AppState>,
    claimant: Claimant,
    ids: Result<Ids, ApiError>,
    req: Request,
) -> Response {
    // A path or body refused before the caller's account is read is answered after its 401,
    // as on every route; a refused path before the body and its key are looked at.
    let ids = match ids {
        Ok(ids) => ids,
        Err(e) => return after_caller(&st, claimant, e.into_response()).await,
    };
    let idem = match Idempotent::<Body>::from_request(req, &st).await {
        Ok(idem) => idem,
        Err(refused) => return after_caller(&st, claimant, refused).await,
    };
    match apply_as(st, claimant, ids, idem).await {
        Ok(created) => created.into_response(),
        Err(e) => e.into_response(),
    }
}

/// `refused`, unless the caller's token is no longer theirs (401).
async fn after_caller(st: &AppState, claimant: Claimant, refused: Response) -> Response {
    match claimant.user(st).await {
        Err(e) => e.into_response(),
        Ok(_) => refused,
    }
}

async fn apply_as(
    st: AppState,
    claimant: Claimant,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<(StatusCode, Json<ApplicationOut>)> {
    // Read and checked now, refused only after the job's 404, as every write words it.
    let input = idem.body.json::<ApplyIn>(true).and_then(|input| {
        let cover_letter = match &input.cover_letter {
            Some(c) => Some(
                validate::multi_line(c, 0, validate::COVER_LETTER_MAX)
                    .map_err(|m| ApiError::field("cover_letter", m))?,
            ),
            None => None,
        };
        Ok((input, cover_letter))
    });
    // Without a key or answers, the store may judge the caller's account and the job as it
    // writes, unread (one round trip on PostgreSQL); when it declines, both are read and
    // judged here, in the contract's order.
    if let Some((user_id, generation)) = claimant.unread()
        && let Ok((input, cover_letter)) = &input
        && idem.without_key()
        && input.answers.is_none()
        && let Some(app) = st
            .store
            .apply_unread(
                ids.one(),
                TokenClaim {
                    candidate_id: user_id,
                    generation,
                },
                &crate::store::NewApplication {
                    cover_letter: cover_letter.clone(),
                    resume_id: input.resume_id,
                    answers: None,
                },
            )
            .await?
    {
        tracing::info!(
            application_id = app.id,
            "user {user_id} applied to job {}",
            app.job_id
        );
        return Ok((StatusCode::CREATED, Json(ApplicationOut::from(app))));
    }
    let user = claimant.user(&st).await?;
    user.require(Role::Candidate, "apply to jobs")?;
    // A job waiting for review, or rejected, is not there for a candidate (404).
    let job = super::jobs::visible_job(&st, Some(&user.0), ids.one()).await?;
    let (input, cover_letter) = input?;
    if job.resume_required && input.resume_id.is_none() {
        return Err(ApiError::field(
            "resume_id",
            "this job asks for a résumé: upload one (POST /api/me/resumes) and send its id",
        ));
    }
    let questions = crate::domain::questions::stored(job.questions.as_deref());
    let answers = crate::domain::questions::check_answers(&questions, input.answers.as_ref())
        .map_err(|(field, message)| ApiError::field(&field, message))?;
    let done = idem.completion(
        StatusCode::CREATED,
        &json_of::<ApplicationRow, ApplicationOut>,
    )?;
    let new = crate::store::NewApplication {
        cover_letter,
        resume_id: input.resume_id,
        answers: (!answers.is_empty())
            .then(|| serde_json::to_string(&answers))
            .transpose()
            .map_err(|e| ApiError::internal(e.into()))?,
    };
    let app = st
        .store
        .apply(job.id, user.id(), new, done.as_ref())
        .await?;
    tracing::info!(
        application_id = app.id,
        "user {} applied to job {}",
        user.id(),
        job.id
    );
    Ok((StatusCode::CREATED, Json(ApplicationOut::from(app))))
}

/// A candidate's own applications, or an employer's: those to their companies' jobs.
#[utoipa::path(get, operation_id = "list_applications", path = "/api/applications", tag = "applications", security(("bearer" = [])),
    params(("job_id" = Option<i64>, Query), ("status" = Option<ApplicationStatus>, Query), ("page" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "from 1"), ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20")),
    responses((status = 200, body = ApplicationList), (status = 422, body = Problem)))]
async fn list(
    State(st): State<AppState>,
    user: AuthUser,
    q: QueryParams,
) -> ApiResult<Json<ApplicationList>> {
    let mut errors = FieldErrors::default();
    let job_id = q.int("job_id", i64::MIN, i64::MAX, &mut errors);
    let status = q.get("status").and_then(|s| {
        let parsed = ApplicationStatus::parse(s);
        if parsed.is_none() {
            errors.add("status", "must be one of submitted, reviewing, interview, offered, hired, rejected, withdrawn");
        }
        parsed
    });
    let page = q.page(&mut errors);
    errors.into_result()?;
    let viewer = match user.role() {
        Role::Candidate => ApplicationViewer::Candidate(user.id()),
        Role::Employer => ApplicationViewer::Employer(user.id()),
    };
    let (rows, total) = st
        .store
        .list_applications(viewer, job_id, status, page)
        .await?;
    Ok(Json(ApplicationList {
        items: rows.into_iter().map(Into::into).collect(),
        page: page.page,
        page_size: page.size,
        total,
    }))
}

/// One application (its candidate and the company's members).
#[utoipa::path(get, operation_id = "get_application", path = "/api/applications/{id}", tag = "applications", security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = ApplicationOut), (status = 404, body = Problem)))]
async fn show(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
) -> ApiResult<Json<ApplicationOut>> {
    Ok(Json(visible(&st, &user, ids.one()).await?.into()))
}

/// Move an application through the workflow (company members). Each move emits one
/// `application.status_changed` event; setting the current (non-final) status again changes
/// nothing, and a final status refuses every move, itself included.
#[utoipa::path(patch, operation_id = "change_application_status", path = "/api/applications/{id}", tag = "applications", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    request_body = StatusIn,
    responses((status = 200, body = ApplicationOut), (status = 403, body = Problem), (status = 404, body = Problem),
              (status = 409, description = "invalid-transition; the detail names the allowed moves", body = Problem),
              (status = 422, body = Problem)))]
async fn change_status(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<Json<ApplicationOut>> {
    user.require(Role::Employer, "change an application's status")?;
    let app = visible(&st, &user, ids.one()).await?;
    let input: StatusIn = idem.body.json(false)?;
    let to = ApplicationStatus::parse(&input.status).ok_or_else(|| {
        ApiError::field(
            "status",
            "must be one of reviewing, interview, offered, hired, rejected",
        )
    })?;
    let done = idem.completion(StatusCode::OK, &json_of::<ApplicationRow, ApplicationOut>)?;
    let change = st
        .store
        .change_status(app.id, to, Actor::Employer, user.id(), done.as_ref())
        .await?;
    if let Some(event_id) = &change.event_id {
        st.event_committed();
        tracing::info!(application_id = app.id, event_id = %event_id, "user {} moved application {} from {} to {}", user.id(), app.id, app.status, to);
    }
    Ok(Json(ApplicationOut::from(change.application)))
}

/// Withdraw one's own application (candidates); the candidate is emailed a confirmation.
#[utoipa::path(post, operation_id = "withdraw_application", path = "/api/applications/{id}/withdraw", tag = "applications", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    responses((status = 200, body = ApplicationOut), (status = 403, body = Problem), (status = 404, body = Problem),
              (status = 409, description = "the application is final", body = Problem)))]
async fn withdraw(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<Json<ApplicationOut>> {
    user.require(Role::Candidate, "withdraw applications")?;
    let app = visible(&st, &user, ids.one()).await?;
    let done = idem.completion(StatusCode::OK, &json_of::<ApplicationRow, ApplicationOut>)?;
    let withdrawn = ApplicationStatus::Withdrawn;
    let change = st
        .store
        .change_status(
            app.id,
            withdrawn,
            Actor::Candidate,
            user.id(),
            done.as_ref(),
        )
        .await?;
    if let Some(event_id) = &change.event_id {
        st.event_committed();
        tracing::info!(application_id = app.id, event_id = %event_id, "user {} withdrew application {}", user.id(), app.id);
    }
    Ok(Json(ApplicationOut::from(change.application)))
}

/// Delete one's own application and its history (candidates); one may then apply again.
#[utoipa::path(delete, operation_id = "delete_application", path = "/api/applications/{id}", tag = "applications", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    responses((status = 204), (status = 403, body = Problem), (status = 404, body = Problem)))]
async fn remove(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    user.require(Role::Candidate, "delete applications")?;
    let app = visible(&st, &user, ids.one()).await?;
    let done = idem.no_content()?;
    st.store.delete_application(app.id, done.as_ref()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The application's status history, oldest first.
#[utoipa::path(get, operation_id = "get_application_history", path = "/api/applications/{id}/history", tag = "applications", security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = Vec<HistoryOut>), (status = 404, body = Problem)))]
async fn history(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
) -> ApiResult<Json<Vec<HistoryOut>>> {
    let app = visible(&st, &user, ids.one()).await?;
    let rows = st.store.history(app.id).await?;
    let rows: ApiResult<Vec<HistoryOut>> = rows.into_iter().map(TryInto::try_into).collect();
    Ok(Json(rows?))
}
