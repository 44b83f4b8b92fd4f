//! Jobs: publishing (company members) and reading one; the search is in `search.rs`.

use super::companies::member_company;
use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{AuthUser, Body, Ids, JsonBody, MaybeUser, double_option};
use super::idempotency::{Idempotent, json_of};
use super::openapi::Problem;
use super::search::search_jobs;
use crate::domain::values::{SalaryRange, Title};
use crate::domain::{EmploymentType, JobStatus, Role, validate};
use crate::http::AppState;
use crate::store::{JobFields, JobRow};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/jobs", get(search_jobs).post(create))
        .route("/api/jobs/{id}", get(show).patch(update).delete(remove))
}

#[derive(Serialize, ToSchema)]
pub struct CompanyRef {
    pub id: i64,
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct JobOut {
    pub id: i64,
    pub company: CompanyRef,
    pub title: String,
    pub description: String,
    pub location: String,
    pub remote: bool,
    #[schema(required = true)]
    pub salary_min: Option<i64>,
    #[schema(required = true)]
    pub salary_max: Option<i64>,
    pub employment_type: EmploymentType,
    pub status: JobStatus,
    #[serde(with = "crate::timefmt")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "crate::timefmt")]
    pub updated_at: DateTime<Utc>,
}

impl From<JobRow> for JobOut {
    fn from(j: JobRow) -> Self {
        JobOut {
            id: j.id,
            company: CompanyRef {
                id: j.company_id,
                name: j.company_name,
            },
            title: j.title,
            description: j.description,
            location: j.location,
            remote: j.remote,
            salary_min: j.salary_min,
            salary_max: j.salary_max,
            employment_type: j.employment_type,
            status: j.status,
            created_at: j.created_at,
            updated_at: j.updated_at,
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub struct JobIn {
    pub company_id: i64,
    pub title: String,
    pub description: String,
    pub location: String,
    pub remote: bool,
    #[serde(default)]
    pub salary_min: Option<i64>,
    #[serde(default)]
    pub salary_max: Option<i64>,
    #[schema(value_type = EmploymentType)]
    pub employment_type: String,
}

impl JsonBody for JobIn {
    const FIELDS: &'static [&'static str] = &[
        "company_id",
        "title",
        "description",
        "location",
        "remote",
        "salary_min",
        "salary_max",
        "employment_type",
    ];
    const READ_ONLY: &'static [&'static str] =
        &["id", "company", "status", "created_at", "updated_at"];
}

/// JSON Merge Patch of a job: absent fields stay, `null` clears `salary_min` / `salary_max`.
#[derive(Deserialize, ToSchema, Default)]
pub struct JobPatch {
    #[serde(default, deserialize_with = "double_option")]
    pub title: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    pub location: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    pub remote: Option<Option<bool>>,
    #[serde(default, deserialize_with = "double_option")]
    pub salary_min: Option<Option<i64>>,
    #[serde(default, deserialize_with = "double_option")]
    pub salary_max: Option<Option<i64>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = EmploymentType)]
    pub employment_type: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = JobStatus)]
    pub status: Option<Option<String>>,
}

impl JsonBody for JobPatch {
    const FIELDS: &'static [&'static str] = &[
        "title",
        "description",
        "location",
        "remote",
        "salary_min",
        "salary_max",
        "employment_type",
        "status",
    ];
    const READ_ONLY: &'static [&'static str] =
        &["id", "company", "company_id", "created_at", "updated_at"];
}

/// The raw values of a job before validation.
struct Draft {
    title: String,
    description: String,
    location: String,
    remote: bool,
    salary_min: Option<i64>,
    salary_max: Option<i64>,
    employment_type: String,
    status: String,
}

fn validate_job(d: Draft, mut errors: FieldErrors) -> ApiResult<JobFields> {
    let title = errors.check("title", Title::parse(&d.title));
    let description = errors.check(
        "description",
        validate::text(&d.description, 0, validate::DESCRIPTION_MAX),
    );
    let location = errors.check(
        "location",
        validate::text(&d.location, 0, validate::LOCATION_MAX),
    );
    let salary = SalaryRange::parse(d.salary_min, d.salary_max)
        .map_err(|problems| {
            for (field, message) in problems {
                errors.add(field, message);
            }
        })
        .ok();
    let employment_type = errors.check(
        "employment_type",
        EmploymentType::parse(&d.employment_type)
            .ok_or_else(|| "must be full_time, part_time, contract or internship".to_string()),
    );
    let status = errors.check(
        "status",
        JobStatus::parse(&d.status).ok_or_else(|| "must be open or closed".to_string()),
    );
    match (
        title,
        description,
        location,
        salary,
        employment_type,
        status,
    ) {
        (
            Some(title),
            Some(description),
            Some(location),
            Some(salary),
            Some(employment_type),
            Some(status),
        ) if errors.is_empty() => Ok(JobFields {
            title,
            description,
            location,
            remote: d.remote,
            salary,
            employment_type,
            status,
        }),
        _ => Err(ApiError::validation(errors)),
    }
}

/// Publish a job for one of the caller's companies.
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
    let fields = validate_job(
        Draft {
            title: input.title,
            description: input.description,
            location: input.location,
            remote: input.remote,
            salary_min: input.salary_min,
            salary_max: input.salary_max,
            employment_type: input.employment_type,
            status: "open".to_string(),
        },
        FieldErrors::default(),
    )?;
    let done = idem.completion(StatusCode::CREATED, &json_of::<JobRow, JobOut>)?;
    let job = st
        .store
        .create_job(input.company_id, fields, done.as_ref())
        .await?;
    st.cache.bump().await;
    Ok((StatusCode::CREATED, Json(JobOut::from(job))))
}

/// One job (public; closed jobs included).
#[utoipa::path(get, operation_id = "get_job", path = "/api/jobs/{id}", tag = "jobs", security((), ("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = JobOut), (status = 404, body = Problem)))]
async fn show(State(st): State<AppState>, _user: MaybeUser, ids: Ids) -> ApiResult<Json<JobOut>> {
    Ok(Json(st.store.job(ids.one()).await?.into()))
}

async fn member_job(st: &AppState, user: &AuthUser, id: i64) -> ApiResult<JobRow> {
    user.require(Role::Employer, "manage jobs")?;
    let job = st.store.job(id).await?;
    member_company(st, user, job.company_id).await?;
    Ok(job)
}

/// Update a job (members of its company) as a JSON Merge Patch; `status` may go open ↔ closed.
#[utoipa::path(patch, operation_id = "update_job", path = "/api/jobs/{id}", tag = "jobs", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    request_body(content = JobPatch, content_type = "application/merge-patch+json"),
    responses((status = 200, body = JobOut), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem),
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
        let fields = merge(&job, &patch)?;
        if let Some(updated) = st
            .store
            .update_job(job.id, fields, job.updated_at, done.as_ref())
            .await?
        {
            st.cache.bump().await;
            return Ok(Json(JobOut::from(updated)));
        }
        job = st.store.job(job.id).await?;
    }
    Err(ApiError::internal(anyhow::anyhow!(
        "job {} kept changing during the update",
        job.id
    )))
}

fn merge(job: &JobRow, p: &JobPatch) -> ApiResult<JobFields> {
    // The stored values stand in for absent fields and are judged again with the patch.
    let cur = job.clone();
    let mut errors = FieldErrors::default();
    fn required<T: Clone>(
        errors: &mut FieldErrors,
        name: &str,
        v: &Option<Option<T>>,
        current: T,
    ) -> T {
        match v {
            None => current,
            Some(Some(x)) => x.clone(),
            Some(None) => {
                errors.add(name, "must not be null");
                current
            }
        }
    }
    let draft = Draft {
        title: required(&mut errors, "title", &p.title, cur.title),
        description: required(&mut errors, "description", &p.description, cur.description),
        location: required(&mut errors, "location", &p.location, cur.location),
        remote: required(&mut errors, "remote", &p.remote, cur.remote),
        salary_min: p.salary_min.unwrap_or(cur.salary_min),
        salary_max: p.salary_max.unwrap_or(cur.salary_max),
        employment_type: required(
            &mut errors,
            "employment_type",
            &p.employment_type,
            cur.employment_type.as_str().to_string(),
        ),
        status: required(
            &mut errors,
            "status",
            &p.status,
            cur.status.as_str().to_string(),
        ),
    };
    validate_job(draft, errors)
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
    st.cache.bump().await;
    Ok(StatusCode::NO_CONTENT)
}
