//! Retry-safe writes: the `Idempotency-Key` header (CONTRACT.md §4). The key is scoped by
//! (user, method, route template) and lives 24 h. The first response is stored in the same
//! transaction as the write it describes (the handler passes a [`Completion`] to its store call);
//! a response with no write (a 4xx) is stored on its own; a 5xx frees the key.

use super::error::{ApiError, ApiResult, PROBLEM_JSON};
use super::extract::AuthUser;
use crate::http::AppState;
use crate::store::{Completion, IdemBegin};
use axum::extract::FromRequestParts;
use axum::http::{HeaderValue, Method, StatusCode, header, request::Parts};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub use crate::store::KEY_TTL_MS;
/// How long a request may hold its key before a retry may take it over (a request that died
/// before its write committed wrote nothing).
const LOCK_MS: i64 = 60_000;

/// The request's `Idempotency-Key`, with the method and route template it is scoped by.
pub struct IdemKey {
    /// `Err`: the header was malformed; the 400 comes after the role and visibility checks.
    key: Result<Option<String>, ()>,
    method: Method,
    route: String,
}

fn malformed_key() -> ApiError {
    ApiError::bad_request(
        "invalid-idempotency-key",
        "Idempotency-Key must be 1 to 255 visible ASCII characters",
    )
}

impl<S: Send + Sync> FromRequestParts<S> for IdemKey {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> ApiResult<Self> {
        let route = parts
            .extensions
            .get::<axum::extract::MatchedPath>()
            .map(|p| p.as_str().to_string())
            .unwrap_or_else(|| parts.uri.path().to_string());
        let key = match parts.headers.get("idempotency-key") {
            None => Ok(None),
            Some(v) => {
                let bytes = v.as_bytes();
                // 1–255 visible ASCII characters.
                if bytes.is_empty()
                    || bytes.len() > 255
                    || !bytes.iter().all(|b| (0x21..=0x7e).contains(b))
                {
                    Err(())
                } else {
                    Ok(Some(String::from_utf8_lossy(bytes).into_owned()))
                }
            }
        };
        Ok(IdemKey {
            key,
            method: parts.method.clone(),
            route,
        })
    }
}

/// Handed to a handler that runs under a key: its store call stores the response.
#[derive(Clone)]
pub struct IdemCtx {
    /// The key was malformed: the handler answers 400 where it would store its response.
    malformed: bool,
    record_id: i64,
    token: String,
    stored: Arc<AtomicBool>,
}

impl IdemCtx {
    /// The completion for a store call that answers `status` with `render(value)`.
    pub fn completion<'a, T>(
        &'a self,
        status: StatusCode,
        render: &'a (dyn Fn(&T) -> String + Send + Sync),
    ) -> ApiResult<Completion<'a, T>> {
        self.check()?;
        self.stored.store(true, Ordering::SeqCst);
        Ok(Completion {
            record_id: self.record_id,
            token: &self.token,
            status: status.as_u16(),
            render,
        })
    }

    /// 400 if the key was malformed. Every write calls this (through `completion`) before it
    /// writes, after its role and visibility checks.
    pub fn check(&self) -> ApiResult<()> {
        if self.malformed {
            Err(malformed_key())
        } else {
            Ok(())
        }
    }
}

/// The completion for an optional context (400 if the key was malformed).
pub fn completion<'a, T>(
    ctx: &'a Option<IdemCtx>,
    status: StatusCode,
    render: &'a (dyn Fn(&T) -> String + Send + Sync),
) -> ApiResult<Option<Completion<'a, T>>> {
    ctx.as_ref()
        .map(|c| c.completion(status, render))
        .transpose()
}

/// A JSON body exactly as `Json` would send it.
pub fn json_body<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn replay(status: u16, body: String) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    let mut res = if status == StatusCode::NO_CONTENT {
        status.into_response()
    } else {
        (status, body).into_response()
    };
    let h = res.headers_mut();
    if status != StatusCode::NO_CONTENT {
        let ct = if status.is_client_error() || status.is_server_error() {
            PROBLEM_JSON
        } else {
            "application/json"
        };
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    }
    h.insert("idempotent-replayed", HeaderValue::from_static("true"));
    res
}

/// Runs `handler` under the request's key, if it has one.
pub async fn run<F, Fut>(
    st: &AppState,
    user: &AuthUser,
    key: IdemKey,
    body: &[u8],
    handler: F,
) -> Response
where
    F: FnOnce(Option<IdemCtx>) -> Fut,
    Fut: Future<Output = ApiResult<Response>>,
{
    let k = match key.key {
        Ok(Some(k)) => k,
        Ok(None) => {
            return handler(None)
                .await
                .unwrap_or_else(IntoResponse::into_response);
        }
        Err(()) => {
            let refuse = IdemCtx {
                malformed: true,
                record_id: 0,
                token: String::new(),
                stored: Arc::default(),
            };
            return match handler(Some(refuse)).await {
                // Every write asks for its completion (and so gets the 400) before writing; a
                // request that reached no write still must not be accepted with this key.
                Ok(_) => malformed_key().into_response(),
                Err(e) => e.into_response(),
            };
        }
    };
    let hash = hex::encode(Sha256::digest(body));
    let begun = st
        .store
        .idem_begin(
            user.id(),
            key.method.as_str(),
            &key.route,
            &k,
            &hash,
            LOCK_MS,
            KEY_TTL_MS,
        )
        .await;
    let (record_id, token) = match begun {
        Err(e) => return ApiError::from(e).into_response(),
        Ok(IdemBegin::Replay { status, body }) => return replay(status, body),
        Ok(IdemBegin::Mismatch) => {
            return ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "idempotency-key-reused",
                "Idempotency key reused",
                "this Idempotency-Key was used with a different request body",
            )
            .into_response();
        }
        Ok(IdemBegin::InFlight) => {
            return ApiError::new(
                StatusCode::CONFLICT,
                "idempotency-in-flight",
                "Request in flight",
                "a request with this Idempotency-Key is still running; retry later",
            )
            .into_response();
        }
        Ok(IdemBegin::Started { record_id, token }) => (record_id, token),
    };
    let ctx = IdemCtx {
        malformed: false,
        record_id,
        token: token.clone(),
        stored: Arc::default(),
    };
    let stored = ctx.stored.clone();
    match handler(Some(ctx)).await {
        Ok(res) if stored.load(Ordering::SeqCst) => res,
        Ok(res) => {
            // A success with no store call to carry it (none of the handlers does this today).
            let (parts, body) = res.into_parts();
            let bytes = axum::body::to_bytes(body, usize::MAX)
                .await
                .unwrap_or_default();
            if let Err(e) = st
                .store
                .idem_complete(
                    record_id,
                    &token,
                    parts.status.as_u16(),
                    &String::from_utf8_lossy(&bytes),
                )
                .await
            {
                tracing::warn!(error = %e, "could not store an idempotent response");
            }
            Response::from_parts(parts, axum::body::Body::from(bytes))
        }
        Err(e) if e.status.is_server_error() => {
            let _ = st.store.idem_release(record_id, &token).await;
            e.into_response()
        }
        Err(e)
            if e.status == StatusCode::UNAUTHORIZED
                || e.status == StatusCode::TOO_MANY_REQUESTS =>
        {
            let _ = st.store.idem_release(record_id, &token).await;
            e.into_response()
        }
        Err(e) => {
            if let Err(err) = st
                .store
                .idem_complete(record_id, &token, e.status.as_u16(), &e.body().to_string())
                .await
            {
                tracing::warn!(error = %err, "could not store an idempotent response");
            }
            e.into_response()
        }
    }
}
