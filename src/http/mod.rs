//! The HTTP API: one router per resource, the layers every request goes through, and the
//! fallbacks that turn anything the framework answers on its own into problem+json.

pub mod accounts;
pub mod admin;
pub mod admin_jobs;
pub mod alerts;
pub mod applications;
pub mod companies;
pub mod console;
mod cursor;
pub mod error;
pub mod export;
pub mod extract;
pub(crate) mod filters;
pub mod idempotency;
mod job_patch;
mod job_pay;
mod job_view;
pub mod jobs;
mod multipart;
pub mod notifications;
pub mod openapi;
pub mod ops;
pub mod pages;
mod refusals;
pub mod resumes;
pub mod search;
mod serve;
mod state;
pub mod unsubscribe;
pub mod webhooks;

pub use refusals::{GuardedListener, guarded};
pub use serve::{bind, serve};
pub use state::AppState;

use crate::telemetry::{
    HTTP_REQUEST_DURATION_SECONDS, HTTP_REQUESTS_SHED_TOTAL, HTTP_REQUESTS_TOTAL,
};
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use error::{ApiError, PROBLEM_JSON};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

/// Request bodies larger than this are answered 413.
pub const BODY_LIMIT: usize = 64 * 1024;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The policy of the pages the binary serves (`/docs`, `/console`, the jobs' pages): their own
/// script, style and API only, nothing inline, nothing from elsewhere, never framed. (A job
/// page's `application/ld+json` block is data, never run: no policy is needed for it.)
pub const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";
/// Every other answer (JSON, text): nothing to load, never framed.
const API_CSP: &str = "default-src 'none'; frame-ancestors 'none'";

/// A page or one of its assets (`/docs`, `/console`), served by the binary with the pages'
/// policy and `Cache-Control: no-cache` with a strong ETag of its content. Their URLs stay the
/// same from one release to the next, so a copy a browser kept without asking (a `max-age`)
/// would pair an old script with a newer page and API; asked each time instead, the answer is
/// a 304 with no body while the content is the same.
pub(crate) struct Asset {
    body: &'static str,
    content_type: &'static str,
    /// FNV-1a of the body, computed when the binary is built.
    hash: u64,
}

impl Asset {
    pub(crate) const fn new(body: &'static str, content_type: &'static str) -> Asset {
        Asset {
            body,
            content_type,
            hash: fnv1a(body.as_bytes()),
        }
    }

    /// The asset; or 304 when the request's `If-None-Match` names its ETag (weakly compared, as
    /// RFC 9110 has it for that header) or is `*`. A 304 carries what a 200 would in the headers
    /// a browser keeps from it: the ETag, `Cache-Control` and the pages' policy.
    pub(crate) fn serve(&self, request: &HeaderMap) -> Response {
        let etag = format!("\"{:016x}\"", self.hash);
        let headers = [
            (header::CONTENT_SECURITY_POLICY, PAGE_CSP.to_string()),
            (header::CACHE_CONTROL, "no-cache".to_string()),
            (header::ETAG, etag.clone()),
        ];
        let current = request
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag);
        if current {
            return (StatusCode::NOT_MODIFIED, headers).into_response();
        }
        (
            headers,
            [(header::CONTENT_TYPE, self.content_type)],
            self.body,
        )
            .into_response()
    }
}

/// FNV-1a, 64 bits: a content hash that needs nothing at run time (not for anything secret).
const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

/// The headers the OWASP REST Security Cheat Sheet asks of every answer: no sniffing, never
/// framed (`X-Frame-Options` and the CSP's `frame-ancestors`), a CSP where the handler set none,
/// no referrer, and `Cache-Control: no-store` on whatever answered a token (a request with
/// `Authorization`), issued one (`/api/auth/`) or is an operator's (`/api/admin/`).
pub async fn security_headers(req: Request, next: Next) -> Response {
    let path = req.uri().path();
    let private = req.headers().contains_key(header::AUTHORIZATION)
        || path.starts_with("/api/auth/")
        || path.starts_with("/api/admin/");
    let mut res = next.run(req).await;
    let headers = res.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(API_CSP));
    // A handler's own `no-store` (`private, no-store` on a file) stays.
    let stores_nothing = headers
        .get(header::CACHE_CONTROL)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.contains("no-store"));
    if private && !stores_nothing {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    res
}

/// The whole API (with `/metrics` unless it has a listener of its own).
pub fn router(state: AppState) -> Router {
    let mut app = Router::new()
        .merge(accounts::router())
        .merge(companies::router())
        .merge(jobs::router())
        .merge(applications::router())
        .merge(alerts::router())
        .merge(webhooks::router())
        .merge(ops::router())
        .route("/api/openapi.json", axum::routing::get(openapi::document))
        .merge(admin::router())
        .merge(admin_jobs::router())
        .merge(console::router())
        .merge(notifications::router())
        .merge(export::router())
        .merge(resumes::router())
        .merge(unsubscribe::router())
        .merge(pages::router());
    if state.config.metrics_addr.is_none() {
        app = app.merge(ops::metrics_router());
    }
    let deadline = Duration::from_secs(state.config.request_timeout_secs);
    let slots = Arc::new(Semaphore::new(
        usize::try_from(state.config.max_concurrent_requests).unwrap_or(usize::MAX),
    ));
    let app = app
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async {
            ApiError::from_status(StatusCode::METHOD_NOT_ALLOWED)
        })
        // Inside `settle`, so that a request cut short frees its Idempotency-Key like any 5xx.
        .layer(middleware::from_fn(move |req: Request, next: Next| {
            request_deadline(deadline, req, next)
        }))
        .layer(middleware::from_fn(idempotency::settle))
        .layer(middleware::from_fn(problem_fallback))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .layer(middleware::from_fn(record_metrics));
    let app = match cors(&state.config.cors_allowed_origins) {
        Some(cors) => app.layer(cors),
        None => app,
    };
    app.layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
        ApiError::internal(anyhow::anyhow!("a request handler panicked")).into_response()
    }))
    .layer(middleware::from_fn(move |req: Request, next: Next| {
        concurrency_limit(slots.clone(), req, next)
    }))
    .layer(
        TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let request_id = req
                .headers()
                .get(&REQUEST_ID)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            tracing::info_span!("request", method = %req.method(), path = %unsubscribe::logged_path(req.uri().path()), request_id = %request_id)
        }),
    )
    .layer(PropagateRequestIdLayer::new(REQUEST_ID))
    .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
    .layer(middleware::from_fn(security_headers))
    .with_state(state)
}

/// The separate `/metrics` listener's router (`METRICS_ADDR`).
pub fn metrics_router(state: AppState) -> Router {
    ops::metrics_router()
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

fn cors(origins: &[String]) -> Option<CorsLayer> {
    if origins.is_empty() {
        return None;
    }
    let origins: Vec<HeaderValue> = origins.iter().filter_map(|o| o.parse().ok()).collect();
    Some(
        CorsLayer::new()
            .allow_origin(AllowOrigin::list(origins))
            .allow_methods([Method::GET, Method::POST, Method::PATCH, Method::DELETE])
            .allow_headers([
                header::AUTHORIZATION,
                header::CONTENT_TYPE,
                HeaderName::from_static("idempotency-key"),
            ])
            .expose_headers([
                HeaderName::from_static("x-cache"),
                HeaderName::from_static("idempotent-replayed"),
                header::RETRY_AFTER,
                REQUEST_ID,
            ]),
    )
}

/// Answers 503 problem+json with `Retry-After` in place of a request that runs past
/// `REQUEST_TIMEOUT_SECS`, never a hung connection. The handler is dropped: a transaction it
/// had open is rolled back. (tower-http's `TimeoutLayer` answers with an empty body and no
/// `Retry-After`.)
async fn request_deadline(deadline: Duration, req: Request, next: Next) -> Response {
    match tokio::time::timeout(deadline, next.run(req)).await {
        Ok(res) => res,
        Err(_) => ApiError::request_timeout(deadline.as_secs()).into_response(),
    }
}

/// Serves a request only while fewer than `MAX_CONCURRENT_REQUESTS` are being served; past it
/// the request is answered 503 with `Retry-After` at once, before any handler ran (tower's
/// `ConcurrencyLimit` would queue it instead, holding its connection). The operations
/// endpoints are not counted, so an overloaded process still answers its probes.
async fn concurrency_limit(slots: Arc<Semaphore>, req: Request, next: Next) -> Response {
    if matches!(req.uri().path(), "/healthz" | "/readyz" | "/metrics") {
        return next.run(req).await;
    }
    match slots.try_acquire_owned() {
        Ok(_slot) => next.run(req).await,
        Err(_) => {
            metrics::counter!(HTTP_REQUESTS_SHED_TOTAL).increment(1);
            ApiError::overloaded().into_response()
        }
    }
}

/// Counts every request by method, route template and status, and times it.
async fn record_metrics(req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let res = next.run(req).await;
    let status = res.status().as_u16().to_string();
    metrics::counter!(HTTP_REQUESTS_TOTAL, "method" => method.clone(), "route" => route.clone(), "status" => status)
        .increment(1);
    metrics::histogram!(HTTP_REQUEST_DURATION_SECONDS, "method" => method, "route" => route)
        .record(start.elapsed().as_secs_f64());
    res
}

/// Any error the framework or a layer produced without a problem body gets one; a page's own
/// error page (HTML: a job's page that is gone) stays as it is.
async fn problem_fallback(req: Request, next: Next) -> Response {
    // `/readyz` answers 503 with its checks, which say what is not ready.
    let readiness = req.uri().path() == "/readyz";
    let res = next.run(req).await;
    if readiness {
        return res;
    }
    let status = res.status();
    let kept = res.headers().get(header::CONTENT_TYPE).is_some_and(|v| {
        v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()) || v.as_bytes().starts_with(b"text/html")
    });
    if (status.is_client_error() || status.is_server_error()) && !kept {
        let allow = res.headers().get(header::ALLOW).cloned();
        let mut replaced = ApiError::from_status(status).into_response();
        if let Some(allow) = allow {
            replaced.headers_mut().insert(header::ALLOW, allow);
        }
        return replaced;
    }
    res
}
