//! The one HTTP error type. Every failure leaves the API as RFC 9457 problem details, rendered
//! here and nowhere else.

use crate::domain::Conflict;
use crate::store::StoreError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::collections::BTreeMap;

pub const PROBLEM_JSON: &str = "application/problem+json";

/// RFC 9457 problem details, the body of every error.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct Problem {
    /// A stable URI per kind of problem, e.g. `/problems/already-applied`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// On 422: field name → messages.
    pub errors: Option<std::collections::BTreeMap<String, Vec<String>>>,
}

/// Field name → messages, for 422 answers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FieldErrors(pub BTreeMap<String, Vec<String>>);

impl FieldErrors {
    pub fn add(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.0.entry(field.into()).or_default().push(message.into());
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(())` when nothing was added, else the 422.
    pub fn into_result(self) -> Result<(), ApiError> {
        if self.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation(self))
        }
    }

    /// Records the error of a validation `result` under `field` and passes the value on.
    pub fn check<T>(&mut self, field: &str, result: Result<T, String>) -> Option<T> {
        match result {
            Ok(v) => Some(v),
            Err(m) => {
                self.add(field, m);
                None
            }
        }
    }
}

/// An error answer: status, a stable problem type, a title and a detail.
#[derive(Debug)]
pub struct ApiError {
    pub status: StatusCode,
    /// The last segment of the problem type URI, `/problems/{kind}`.
    pub kind: &'static str,
    pub title: String,
    pub detail: String,
    pub errors: Option<FieldErrors>,
    pub retry_after: Option<u64>,
}

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(
        status: StatusCode,
        kind: &'static str,
        title: &str,
        detail: impl Into<String>,
    ) -> Self {
        ApiError {
            status,
            kind,
            title: title.to_string(),
            detail: detail.into(),
            errors: None,
            retry_after: None,
        }
    }

    pub fn unauthorized(detail: &str) -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "Unauthorized",
            detail,
        )
    }

    pub fn forbidden(detail: &str) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", "Forbidden", detail)
    }

    pub fn not_found() -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "not-found",
            "Not Found",
            "no such resource, or it is not visible to you",
        )
    }

    pub fn bad_request(kind: &'static str, detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, kind, "Bad Request", detail)
    }

    pub fn validation(errors: FieldErrors) -> Self {
        let mut e = Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
            "Validation failed",
            "one or more fields are invalid; see errors",
        );
        e.errors = Some(errors);
        e
    }

    /// A 422 for one field.
    pub fn field(field: &str, message: impl Into<String>) -> Self {
        let mut errors = FieldErrors::default();
        errors.add(field, message);
        Self::validation(errors)
    }

    pub fn conflict(c: Conflict) -> Self {
        Self::new(StatusCode::CONFLICT, c.slug(), c.title(), c.detail())
    }

    /// PostgreSQL cancelled a statement past `DATABASE_STATEMENT_TIMEOUT_SECS` or a lock wait
    /// past `DATABASE_LOCK_TIMEOUT_SECS`: nothing was written; the client may retry.
    pub fn database_timeout(err: anyhow::Error) -> Self {
        tracing::warn!(
            error = format!("{err:#}"),
            "a database statement ran out of time"
        );
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "database-timeout",
            "Service Unavailable",
            "the database did not answer in time; nothing was changed, retry later",
        );
        e.retry_after = Some(1);
        e
    }

    /// The request ran past `REQUEST_TIMEOUT_SECS`; its work was abandoned.
    pub fn request_timeout(secs: u64) -> Self {
        tracing::warn!(
            timeout_secs = secs,
            "a request ran past its deadline and was abandoned"
        );
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "request-timeout",
            "Service Unavailable",
            format!("the request took longer than {secs} s and was abandoned; retry later"),
        );
        e.retry_after = Some(1);
        e
    }

    /// 503: the API is serving `MAX_CONCURRENT_REQUESTS` requests already; this one did nothing.
    pub fn overloaded() -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "overloaded",
            "Service Unavailable",
            "the server is serving as many requests as it takes at once; nothing was done, retry later",
        );
        e.retry_after = Some(1);
        e
    }

    pub fn too_many_requests(retry_after: u64) -> Self {
        let mut e = Self::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            "Too Many Requests",
            "too many failed attempts; try again later",
        );
        e.retry_after = Some(retry_after.max(1));
        e
    }

    /// 503: this process's search index has not applied, within a second, a job change the
    /// search must see.
    pub fn index_behind() -> Self {
        let mut e = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "search-index-behind",
            "Service Unavailable",
            "the search index is catching up with recent job changes; try again shortly",
        );
        e.retry_after = Some(1);
        e
    }

    /// An unexpected failure: logged once with its cause chain, answered generically.
    pub fn internal(err: anyhow::Error) -> Self {
        tracing::error!(error = format!("{err:#}"), "internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "Internal Server Error",
            "the server failed to handle this request",
        )
    }

    /// A problem for a status with no more specific kind (used for framework-made errors).
    pub fn from_status(status: StatusCode) -> Self {
        let (kind, detail) = match status {
            StatusCode::NOT_FOUND => return Self::not_found(),
            StatusCode::METHOD_NOT_ALLOWED => (
                "method-not-allowed",
                "this method is not allowed on this resource",
            ),
            StatusCode::PAYLOAD_TOO_LARGE => (
                "payload-too-large",
                "the request body is larger than 64 KiB",
            ),
            StatusCode::UNSUPPORTED_MEDIA_TYPE => (
                "unsupported-media-type",
                "send the body as application/json",
            ),
            StatusCode::REQUEST_TIMEOUT => ("timeout", "the request took too long"),
            StatusCode::URI_TOO_LONG => (
                "uri-too-long",
                "the request's URI is longer than the server reads (64 KiB)",
            ),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => (
                "request-header-fields-too-large",
                "the request's header fields are larger than the server reads",
            ),
            s if s.is_server_error() => ("internal", "the server failed to handle this request"),
            _ => ("bad-request", "the request could not be handled"),
        };
        Self::new(
            status,
            kind,
            status.canonical_reason().unwrap_or("Error"),
            detail,
        )
    }

    pub fn body(&self) -> serde_json::Value {
        let mut body = serde_json::json!({
            "type": format!("/problems/{}", self.kind),
            "title": self.title,
            "status": self.status.as_u16(),
            "detail": self.detail,
        });
        if let Some(errors) = &self.errors {
            body["errors"] = serde_json::to_value(&errors.0).unwrap_or_default();
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = self.body().to_string();
        let mut res = (self.status, body).into_response();
        let headers = res.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
        if self.status == StatusCode::UNAUTHORIZED {
            headers.insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(secs) = self.retry_after {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::NotFound => ApiError::not_found(),
            StoreError::Conflict(c) => ApiError::conflict(c),
            StoreError::Invalid { field, message } => ApiError::field(field, message),
            StoreError::Other(e) if crate::store::is_database_timeout(&e) => {
                ApiError::database_timeout(e)
            }
            StoreError::Other(e) => ApiError::internal(e),
        }
    }
}

impl From<anyhow::Error> for ApiError {
    fn from(e: anyhow::Error) -> Self {
        ApiError::internal(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_errors_map_to_statuses() {
        assert_eq!(
            ApiError::from(StoreError::NotFound).status,
            StatusCode::NOT_FOUND
        );
        let e = ApiError::from(StoreError::Conflict(Conflict::AlreadyApplied));
        assert_eq!(e.status, StatusCode::CONFLICT);
        assert_eq!(e.body()["type"], "/problems/already-applied");
        let e = ApiError::from(StoreError::Other(anyhow::anyhow!("db down")));
        assert_eq!(e.status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(
            !e.body().to_string().contains("db down"),
            "internals stay hidden"
        );
    }

    #[test]
    fn validation_body_lists_fields() {
        let mut errs = FieldErrors::default();
        errs.add("title", "must not be empty");
        let body = ApiError::validation(errs).body();
        assert_eq!(body["status"], 422);
        assert_eq!(body["errors"]["title"][0], "must not be empty");
    }
}
