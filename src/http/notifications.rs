//! The caller's email preferences (docs/api.md, "Job alerts and email preferences"): whether
//! the hourly digest of new applications is sent to them. The digest's unsubscribe link
//! (`unsubscribe.rs`) turns the same preference off.

use super::error::Problem;
use super::error::{ApiError, ApiResult};
use super::extract::{AuthUser, Body, JsonBody, double_option};
use super::idempotency::{Idempotent, json_of};
use crate::http::AppState;
use crate::store::Notifications;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/me/notifications", get(show).patch(update))
}

/// The caller's email preferences.
#[derive(Serialize, ToSchema)]
pub struct NotificationsOut {
    /// Whether the hourly digest of the applications to their companies' jobs is sent to them
    /// (employers); `true` unless they turned it off.
    pub application_digest: bool,
}

impl From<Notifications> for NotificationsOut {
    fn from(n: Notifications) -> Self {
        NotificationsOut {
            application_digest: n.application_digest,
        }
    }
}

/// JSON Merge Patch of the preferences: an absent field stays as it is.
#[derive(Deserialize, ToSchema)]
pub struct NotificationsPatch {
    /// `false` stops the hourly digest of new applications, `true` starts it again.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = bool)]
    pub application_digest: Option<Option<bool>>,
}

impl JsonBody for NotificationsPatch {
    const FIELDS: &'static [&'static str] = &["application_digest"];
}

/// The caller's email preferences.
#[utoipa::path(get, operation_id = "get_notifications", path = "/api/me/notifications", tag = "accounts", security(("bearer" = [])),
    responses((status = 200, body = NotificationsOut), (status = 401, body = Problem)))]
async fn show(State(st): State<AppState>, user: AuthUser) -> ApiResult<Json<NotificationsOut>> {
    Ok(Json(st.store.notifications(user.id()).await?.into()))
}

/// Change the caller's email preferences, as a JSON Merge Patch.
#[utoipa::path(patch, operation_id = "update_notifications", path = "/api/me/notifications", tag = "accounts", security(("bearer" = [])),
    params(("Idempotency-Key" = Option<String>, Header, description = "makes a retry of this request safe: 1-255 visible ASCII characters")),
    request_body(content = NotificationsPatch, content_type = "application/merge-patch+json"),
    responses((status = 200, body = NotificationsOut), (status = 401, body = Problem),
              (status = 422, description = "an unknown field, or `application_digest` not a boolean", body = Problem)))]
async fn update(
    State(st): State<AppState>,
    user: AuthUser,
    idem: Idempotent<Body>,
) -> ApiResult<Json<NotificationsOut>> {
    let patch: NotificationsPatch = idem.body.json(false)?;
    let application_digest = match patch.application_digest {
        Some(None) => return Err(ApiError::field("application_digest", "must not be null")),
        Some(Some(on)) => Some(on),
        None => None,
    };
    let done = idem.completion(StatusCode::OK, &json_of::<Notifications, NotificationsOut>)?;
    let now = st
        .store
        .update_notifications(user.id(), application_digest, done.as_ref())
        .await?;
    if let Some(on) = application_digest {
        tracing::info!(
            user_id = user.id(),
            application_digest = on,
            "user {} turned the application digest {}",
            user.id(),
            if on { "on" } else { "off" }
        );
    }
    Ok(Json(now.into()))
}
