//! Companies and their members. Membership is read from the database on every request.

use super::error::Problem;
use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{AuthUser, Body, Ids, JsonBody, MaybeUser, QueryParams, double_option};
use super::idempotency::{Idempotent, json_of};
use crate::domain::values::Email;
use crate::domain::{Role, validate};
use crate::http::AppState;
use crate::store::{CompanyFields, CompanyRow, MemberRow};
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{delete, get};
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/api/companies", get(list).post(create))
        .route(
            "/api/companies/{id}",
            get(show).patch(update).delete(remove),
        )
        .route("/api/companies/{id}/members", get(members).post(add_member))
        .route(
            "/api/companies/{id}/members/{user_id}",
            delete(remove_member),
        )
}

#[derive(Serialize, ToSchema)]
pub struct CompanyOut {
    pub id: i64,
    pub name: String,
    #[schema(required = true)]
    pub website: Option<String>,
    #[schema(required = true)]
    pub description: Option<String>,
    #[serde(with = "crate::timefmt")]
    pub created_at: DateTime<Utc>,
}

impl From<CompanyRow> for CompanyOut {
    fn from(c: CompanyRow) -> Self {
        CompanyOut {
            id: c.id,
            name: c.name,
            website: c.website,
            description: c.description,
            created_at: c.created_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct CompanyList {
    pub items: Vec<CompanyOut>,
    pub page: i64,
    pub page_size: i64,
    pub total: i64,
}

#[derive(Serialize, ToSchema)]
pub struct MemberOut {
    pub id: i64,
    pub name: String,
    pub email: String,
}

impl From<MemberRow> for MemberOut {
    fn from(m: MemberRow) -> Self {
        MemberOut {
            id: m.id,
            name: m.name,
            email: m.email,
        }
    }
}

#[derive(Deserialize, ToSchema)]
pub struct CompanyIn {
    pub name: String,
    /// An http or https URL.
    #[serde(default)]
    pub website: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
}

impl JsonBody for CompanyIn {
    const FIELDS: &'static [&'static str] = &["name", "website", "description"];
}

/// JSON Merge Patch of a company: absent fields stay, `null` clears an optional one.
#[derive(Deserialize, ToSchema)]
pub struct CompanyPatch {
    #[serde(default, deserialize_with = "double_option")]
    pub name: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    pub website: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    pub description: Option<Option<String>>,
}

impl JsonBody for CompanyPatch {
    const FIELDS: &'static [&'static str] = &["name", "website", "description"];
    const READ_ONLY: &'static [&'static str] = &["id", "created_at"];
}

#[derive(Deserialize, ToSchema)]
pub struct MemberIn {
    pub email: String,
}

impl JsonBody for MemberIn {
    const FIELDS: &'static [&'static str] = &["email"];
}

fn validate_fields(
    name: &str,
    website: Option<&str>,
    description: Option<&str>,
) -> ApiResult<CompanyFields> {
    let mut errors = FieldErrors::default();
    let name = errors.check("name", validate::company_name(name));
    let website = website.and_then(|w| errors.check("website", validate::website(w)));
    let description = description.and_then(|d| {
        errors.check(
            "description",
            validate::description(d, validate::COMPANY_DESCRIPTION_MAX),
        )
    });
    match name {
        Some(name) if errors.is_empty() => Ok(CompanyFields {
            name,
            website,
            description,
        }),
        _ => Err(ApiError::validation(errors)),
    }
}

/// The company, if the caller is one of its members; 404 otherwise (never 403, so existence
/// does not leak).
pub async fn member_company(st: &AppState, user: &AuthUser, id: i64) -> ApiResult<CompanyRow> {
    user.require(Role::Employer, "manage companies")?;
    let company = st.store.company(id).await?;
    if !st.store.is_member(id, user.id()).await? {
        return Err(ApiError::not_found());
    }
    Ok(company)
}

/// Create a company; the caller becomes its first member.
#[utoipa::path(post, operation_id = "create_company", path = "/api/companies", params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")), tag = "companies", security(("bearer" = [])), request_body = CompanyIn,
    responses((status = 201, body = CompanyOut), (status = 403, body = Problem), (status = 422, body = Problem)))]
async fn create(
    State(st): State<AppState>,
    user: AuthUser,
    idem: Idempotent<Body>,
) -> ApiResult<(StatusCode, Json<CompanyOut>)> {
    user.require(Role::Employer, "create companies")?;
    let input: CompanyIn = idem.body.json(false)?;
    let fields = validate_fields(
        &input.name,
        input.website.as_deref(),
        input.description.as_deref(),
    )?;
    let done = idem.completion(StatusCode::CREATED, &json_of::<CompanyRow, CompanyOut>)?;
    let company = st
        .store
        .create_company(user.id(), fields, done.as_ref())
        .await?;
    Ok((StatusCode::CREATED, Json(CompanyOut::from(company))))
}

/// An employer's own companies; for anyone else, all companies.
#[utoipa::path(get, operation_id = "list_companies", path = "/api/companies", tag = "companies", security((), ("bearer" = [])),
    params(("page" = Option<i64>, Query, minimum = 1, maximum = 1000000, description = "from 1"), ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20")),
    responses((status = 200, body = CompanyList), (status = 422, body = Problem)))]
async fn list(
    State(st): State<AppState>,
    MaybeUser(user): MaybeUser,
    q: QueryParams,
) -> ApiResult<Json<CompanyList>> {
    let mut errors = FieldErrors::default();
    let page = q.page(&mut errors);
    errors.into_result()?;
    let member = user.filter(|u| u.role() == Role::Employer).map(|u| u.id);
    let (rows, total) = st.store.list_companies(member, page).await?;
    Ok(Json(CompanyList {
        items: rows.into_iter().map(Into::into).collect(),
        page: page.page,
        page_size: page.size,
        total,
    }))
}

/// One company (public).
#[utoipa::path(get, operation_id = "get_company", path = "/api/companies/{id}", tag = "companies", security((), ("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = CompanyOut), (status = 404, body = Problem)))]
async fn show(
    State(st): State<AppState>,
    _user: MaybeUser,
    ids: Ids,
) -> ApiResult<Json<CompanyOut>> {
    Ok(Json(st.store.company(ids.one()).await?.into()))
}

/// Update a company (members only), as a JSON Merge Patch.
#[utoipa::path(patch, operation_id = "update_company", path = "/api/companies/{id}", tag = "companies", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    request_body(content = CompanyPatch, content_type = "application/merge-patch+json"),
    responses((status = 200, body = CompanyOut), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem), (status = 422, body = Problem)))]
async fn update(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<Json<CompanyOut>> {
    let current = member_company(&st, &user, ids.one()).await?;
    let patch: CompanyPatch = idem.body.json(false)?;
    let name = match patch.name {
        None => current.name.clone(),
        Some(Some(n)) => n,
        Some(None) => return Err(ApiError::field("name", "must not be null")),
    };
    let website = patch.website.unwrap_or(current.website.clone());
    let description = patch.description.unwrap_or(current.description.clone());
    let fields = validate_fields(&name, website.as_deref(), description.as_deref())?;
    let renamed = fields.name != current.name;
    let done = idem.completion(StatusCode::OK, &json_of::<CompanyRow, CompanyOut>)?;
    let company = st
        .store
        .update_company(current.id, fields, done.as_ref())
        .await?;
    if renamed {
        // The company name appears in job search results.
        super::search::job_written(&st).await;
    }
    Ok(Json(CompanyOut::from(company)))
}

/// Delete a company that has no jobs (members only).
#[utoipa::path(delete, operation_id = "delete_company", path = "/api/companies/{id}", tag = "companies", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    responses((status = 204), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem), (status = 409, description = "the company still has jobs", body = Problem)))]
async fn remove(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    let company = member_company(&st, &user, ids.one()).await?;
    let done = idem.no_content()?;
    st.store.delete_company(company.id, done.as_ref()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// The company's members (members only).
#[utoipa::path(get, operation_id = "list_company_members", path = "/api/companies/{id}/members", tag = "companies", security(("bearer" = [])), params(("id" = i64, Path)),
    responses((status = 200, body = Vec<MemberOut>), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem)))]
async fn members(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
) -> ApiResult<Json<Vec<MemberOut>>> {
    let company = member_company(&st, &user, ids.one()).await?;
    let rows = st.store.members(company.id).await?;
    Ok(Json(rows.into_iter().map(Into::into).collect()))
}

/// Add an employer account to the company by email (members only).
#[utoipa::path(post, operation_id = "add_company_member", path = "/api/companies/{id}/members", tag = "companies", security(("bearer" = [])), params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path)),
    request_body = MemberIn,
    responses((status = 204, description = "added, or already a member"), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem),
              (status = 422, description = "no employer account has this email", body = Problem)))]
async fn add_member(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent<Body>,
) -> ApiResult<StatusCode> {
    let company = member_company(&st, &user, ids.one()).await?;
    let input: MemberIn = idem.body.json(false)?;
    let email = Email::parse(&input.email).map_err(|m| ApiError::field("email", m))?;
    let done = idem.no_content()?;
    match st.store.add_member(company.id, &email, done.as_ref()).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        // The same answer for an unknown email and a candidate's, so accounts are not probed.
        Err(crate::store::StoreError::NotFound) => Err(ApiError::field(
            "email",
            "no employer account with this email",
        )),
        Err(e) => Err(e.into()),
    }
}

/// Remove a member (members only); the last member cannot be removed.
#[utoipa::path(delete, operation_id = "remove_company_member", path = "/api/companies/{id}/members/{user_id}", tag = "companies", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters"), ("id" = i64, Path), ("user_id" = i64, Path)),
    responses((status = 204), (status = 403, description = "the caller is a candidate: only employers can", body = Problem), (status = 404, body = Problem), (status = 409, description = "the last member", body = Problem)))]
async fn remove_member(
    State(st): State<AppState>,
    user: AuthUser,
    ids: Ids,
    idem: Idempotent,
) -> ApiResult<StatusCode> {
    let company = member_company(&st, &user, ids.0[0]).await?;
    let done = idem.no_content()?;
    st.store
        .remove_member(company.id, ids.0[1], done.as_ref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
