//! `GET /api/me/export`: everything the service holds about the caller, as one JSON document
//! (CONTRACT.md §4, "Retention and export"): the account, the companies they are a member of,
//! their applications with each one's history, their job alerts and their email preferences.
//! Each part has the shape its own route answers with, so a reader of the API reads the export.

use super::accounts::UserOut;
use super::alerts::AlertOut;
use super::applications::{ApplicationOut, HistoryOut};
use super::companies::CompanyOut;
use super::error::ApiResult;
use super::extract::AuthUser;
use super::notifications::NotificationsOut;
use crate::domain::Role;
use crate::http::AppState;
use crate::store::{ApplicationViewer, Page};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use axum::{Json, Router};
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/me/export", get(export))
}

/// Rows read per page while the export is gathered.
const PAGE: i64 = 100;

/// An application of the caller's, with its history.
#[derive(Serialize, ToSchema)]
pub struct ExportedApplication {
    #[serde(flatten)]
    pub application: ApplicationOut,
    /// Oldest first, as `GET /api/applications/{id}/history`.
    pub history: Vec<HistoryOut>,
}

/// Everything the service holds about the caller.
#[derive(Serialize, ToSchema)]
pub struct Export {
    /// When the document was made (the database's clock).
    #[serde(with = "crate::timefmt")]
    pub exported_at: DateTime<Utc>,
    pub account: UserOut,
    /// The companies the caller is a member of (employers).
    pub companies: Vec<CompanyOut>,
    /// The caller's applications (candidates), newest first, each with its history.
    pub applications: Vec<ExportedApplication>,
    /// The caller's job alerts, as `GET /api/alerts` lists them.
    pub alerts: Vec<AlertOut>,
    /// The caller's email preferences.
    pub notifications: NotificationsOut,
    /// The caller's résumés, newest first, each with the link that downloads it.
    pub resumes: Vec<ExportedResume>,
}

/// A résumé of the caller's, with its download link.
#[derive(Serialize, ToSchema)]
pub struct ExportedResume {
    #[serde(flatten)]
    pub resume: super::resumes::ResumeOut,
    /// `PUBLIC_BASE_URL` + `/api/me/resumes/{id}/file` (with the caller's token).
    pub download_url: String,
}

/// Reads every page of a list, `PAGE` rows at a time, until `total` are read.
async fn every_page<T, F, Fut>(mut read: F) -> ApiResult<Vec<T>>
where
    F: FnMut(Page) -> Fut,
    Fut: std::future::Future<Output = crate::store::StoreResult<(Vec<T>, i64)>>,
{
    let mut all = Vec::new();
    for page in 1.. {
        let (rows, total) = read(Page { page, size: PAGE }).await?;
        let short = (rows.len() as i64) < PAGE;
        all.extend(rows);
        if short || all.len() as i64 >= total {
            break;
        }
    }
    Ok(all)
}

/// Everything the service holds about the caller, as one JSON document (a download:
/// `Content-Disposition: attachment`; like every answer of the API, `Cache-Control: no-store`).
#[utoipa::path(get, operation_id = "export_me", path = "/api/me/export", tag = "accounts", security(("bearer" = [])),
    responses((status = 200, body = Export, description = "the caller's data, as an attachment"), (status = 401, body = super::error::Problem)))]
async fn export(State(st): State<AppState>, user: AuthUser) -> ApiResult<impl IntoResponse> {
    let id = user.id();
    let now = st.store.now_ms().await?;
    let companies = match user.role() {
        Role::Employer => every_page(|page| st.store.list_companies(Some(id), page)).await?,
        Role::Candidate => Vec::new(),
    };
    let rows = match user.role() {
        Role::Candidate => {
            every_page(|page| {
                st.store
                    .list_applications(ApplicationViewer::Candidate(id), None, None, page)
            })
            .await?
        }
        Role::Employer => Vec::new(),
    };
    let mut applications = Vec::with_capacity(rows.len());
    for row in rows {
        let history = st
            .store
            .history(row.id)
            .await?
            .into_iter()
            .map(TryInto::try_into)
            .collect::<ApiResult<Vec<HistoryOut>>>()?;
        applications.push(ExportedApplication {
            application: row.into(),
            history,
        });
    }
    let alerts = every_page(|page| st.store.alerts_of(id, page))
        .await?
        .into_iter()
        .map(super::alerts::out)
        .collect::<ApiResult<Vec<AlertOut>>>()?;
    let document = Export {
        exported_at: DateTime::from_timestamp_millis(now).unwrap_or_default(),
        account: user.0.clone().into(),
        companies: companies.into_iter().map(Into::into).collect(),
        applications,
        alerts,
        notifications: st.store.notifications(id).await?.into(),
        resumes: st
            .store
            .resumes_of(id)
            .await?
            .into_iter()
            .map(|r| ExportedResume {
                download_url: format!(
                    "{}/api/me/resumes/{}/file",
                    st.config.public_base_url.trim_end_matches('/'),
                    r.id
                ),
                resume: r.into(),
            })
            .collect(),
    };
    Ok((
        [(
            header::CONTENT_DISPOSITION,
            "attachment; filename=\"jobboard-export.json\"",
        )],
        Json(document),
    ))
}
