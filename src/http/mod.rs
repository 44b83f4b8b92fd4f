//! The HTTP API: one router per resource, the layers every request goes through, and the
//! fallbacks that turn anything the framework answers on its own into problem+json.

pub mod accounts;
pub mod applications;
pub mod companies;
pub mod error;
pub mod extract;
pub mod idempotency;
pub mod jobs;
pub mod openapi;
pub mod ops;
pub mod search;
mod serve;
mod state;

pub use serve::{bind, serve};
pub use state::AppState;

use crate::telemetry::{HTTP_REQUEST_DURATION_SECONDS, HTTP_REQUESTS_TOTAL};
use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::{HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use error::{ApiError, PROBLEM_JSON};
use std::time::Instant;
use tower_http::cors::{AllowOrigin, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

/// Request bodies larger than this are answered 413.
pub const BODY_LIMIT: usize = 64 * 1024;

const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The whole API (with `/metrics` unless it has a listener of its own).
pub fn router(state: AppState) -> Router {
    let mut app = Router::new()
        .merge(accounts::router())
        .merge(companies::router())
        .merge(jobs::router())
        .merge(applications::router())
        .merge(ops::router());
    if state.config.metrics_addr.is_none() {
        app = app.merge(ops::metrics_router());
    }
    let app = app
        .fallback(|| async { ApiError::not_found() })
        .method_not_allowed_fallback(|| async {
            ApiError::from_status(StatusCode::METHOD_NOT_ALLOWED)
        })
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
    .layer(
        TraceLayer::new_for_http().make_span_with(|req: &Request| {
            let request_id = req
                .headers()
                .get(&REQUEST_ID)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            tracing::info_span!("request", method = %req.method(), path = %req.uri().path(), request_id = %request_id)
        }),
    )
    .layer(PropagateRequestIdLayer::new(REQUEST_ID))
    .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
    .with_state(state)
}

/// The separate `/metrics` listener's router (`METRICS_ADDR`).
pub fn metrics_router(state: AppState) -> Router {
    ops::metrics_router().with_state(state)
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

/// Any error the framework or a layer produced without a problem body gets one.
async fn problem_fallback(req: Request, next: Next) -> Response {
    let res = next.run(req).await;
    let status = res.status();
    let is_problem = res
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    if (status.is_client_error() || status.is_server_error()) && !is_problem {
        let allow = res.headers().get(header::ALLOW).cloned();
        let mut replaced = ApiError::from_status(status).into_response();
        if let Some(allow) = allow {
            replaced.headers_mut().insert(header::ALLOW, allow);
        }
        return replaced;
    }
    res
}
