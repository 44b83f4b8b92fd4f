//! Operations: health, readiness, metrics, the OpenAPI document and its rendered page.

use super::Asset;
use crate::http::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use metrics_exporter_prometheus::PrometheusHandle;
use serde_json::json;
use std::time::Duration;

/// Each readiness check answers within this.
const CHECK_TIMEOUT: Duration = Duration::from_secs(1);

/// The API's page that renders the OpenAPI document, with its style and script; all served by
/// the binary, so it works offline, and none inline, so its CSP needs no `unsafe-inline`.
static DOCS_HTML: Asset = Asset::new(
    include_str!("../../assets/docs.html"),
    "text/html; charset=utf-8",
);
static DOCS_CSS: Asset = Asset::new(
    include_str!("../../assets/docs.css"),
    "text/css; charset=utf-8",
);
static DOCS_JS: Asset = Asset::new(
    include_str!("../../assets/docs.js"),
    "text/javascript; charset=utf-8",
);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/docs", get(docs))
        .route("/docs/docs.css", get(docs_css))
        .route("/docs/docs.js", get(docs_js))
}

/// `/metrics` in Prometheus text format.
pub fn metrics_router() -> Router<AppState> {
    Router::new().route("/metrics", get(metrics))
}

/// Liveness: 200 while the process runs; touches no dependency.
#[utoipa::path(get, operation_id = "healthz", path = "/healthz", tag = "operations", responses((status = 200, description = "the process runs", body = Object, example = json!({"status": "ok"}))))]
pub(super) async fn healthz() -> Json<serde_json::Value> {
    Json(json!({"status": "ok"}))
}

async fn check<F>(f: F) -> &'static str
where
    F: std::future::Future<Output = anyhow::Result<()>>,
{
    match tokio::time::timeout(CHECK_TIMEOUT, f).await {
        Ok(Ok(())) => "ok",
        Ok(Err(e)) => {
            tracing::warn!(error = format!("{e:#}"), "readiness check failed");
            "error"
        }
        Err(_) => "timeout",
    }
}

/// Readiness: 503 when the database fails, the search index does not follow the job-change
/// log (it has not caught up since start, its follower's last round failed, or the newest change
/// has waited unapplied for more than 10 s), or shutdown has begun; the cache is reported only.
#[utoipa::path(get, operation_id = "readyz", path = "/readyz", tag = "operations",
    responses((status = 200, description = "ready, with each check", body = Object),
              (status = 503, description = "not ready: the database fails, the search index does not follow the job-change log (not caught up since start, its last attempt failed, or a change has waited unapplied for more than 10 s), or shutdown has begun", body = Object)))]
pub(super) async fn readyz(State(st): State<AppState>) -> Response {
    let queue_check = async {
        match &st.relay {
            Some(relay) => check(relay.ping()).await,
            // With QUEUE=db the queue is the database.
            None => "ok",
        }
    };
    let (database, cache, queue) =
        tokio::join!(check(st.store.ping()), check(st.cache.ping()), queue_check);
    let search = st.search.readiness();
    let checks = json!({"database": database, "cache": cache, "cache_backend": st.cache.kind(),
        "queue": queue, "queue_backend": if st.relay.is_some() { "sqs" } else { "db" },
        "search": search});
    readiness(
        database == "ok" && search == "ok",
        st.shutdown.is_cancelled(),
        checks,
    )
}

/// 200 `ready` when `healthy` and not shutting down; else 503 saying which.
fn readiness(healthy: bool, shutting_down: bool, checks: serde_json::Value) -> Response {
    let (code, status) = if shutting_down {
        (StatusCode::SERVICE_UNAVAILABLE, "shutting_down")
    } else if healthy {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable")
    };
    (code, Json(json!({"status": status, "checks": checks}))).into_response()
}

/// Prometheus metrics in text format.
#[utoipa::path(get, operation_id = "metrics", path = "/metrics", tag = "operations", responses((status = 200, description = "Prometheus text format", content_type = "text/plain")))]
pub(super) async fn metrics(State(st): State<AppState>) -> Response {
    prometheus(&st.metrics)
}

fn prometheus(handle: &PrometheusHandle) -> Response {
    let mut res = handle.render().into_response();
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    res
}

/// A page that renders this document, with no internet access needed.
#[utoipa::path(get, operation_id = "get_docs_page", path = "/docs", tag = "operations", responses((status = 200, description = "HTML", content_type = "text/html"), (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(super) async fn docs(request: HeaderMap) -> Response {
    DOCS_HTML.serve(&request)
}

/// The docs page's style sheet.
#[utoipa::path(get, operation_id = "get_docs_style", path = "/docs/docs.css", tag = "operations", responses((status = 200, description = "CSS", content_type = "text/css"), (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(super) async fn docs_css(request: HeaderMap) -> Response {
    DOCS_CSS.serve(&request)
}

/// The docs page's script.
#[utoipa::path(get, operation_id = "get_docs_script", path = "/docs/docs.js", tag = "operations", responses((status = 200, description = "JavaScript", content_type = "text/javascript"), (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(super) async fn docs_js(request: HeaderMap) -> Response {
    DOCS_JS.serve(&request)
}

/// What the worker's own listener (`WORKER_HTTP_ADDR`) needs.
#[derive(Clone)]
pub struct WorkerState {
    pub store: std::sync::Arc<dyn crate::store::DatabaseStore>,
    pub queue: std::sync::Arc<dyn crate::queue::Queue>,
    /// The worker's own health flag (false while its receive loop cannot reach the queue or
    /// the database, and once it stops).
    pub healthy: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// False while the mail service refuses the worker's session, until a send succeeds.
    pub mail: std::sync::Arc<std::sync::atomic::AtomicBool>,
    pub metrics: PrometheusHandle,
    pub shutdown: tokio_util::sync::CancellationToken,
}

impl WorkerState {
    /// The listener's state for a worker using `store` and `queue`, with its health flag.
    pub fn new(
        store: std::sync::Arc<dyn crate::store::DatabaseStore>,
        queue: std::sync::Arc<dyn crate::queue::Queue>,
        healthy: std::sync::Arc<std::sync::atomic::AtomicBool>,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> WorkerState {
        WorkerState {
            store,
            queue,
            healthy,
            mail: std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true)),
            metrics: crate::telemetry::metrics_handle(),
            shutdown,
        }
    }

    /// Reports the worker's view of the mail service (`checks.mail`) from `mail`.
    pub fn with_mail(mut self, mail: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        self.mail = mail;
        self
    }
}

/// The worker's `/healthz`, `/readyz` (503 when its database or queue fails, when the worker
/// reports itself unhealthy, while the mail service refuses its session, or from the moment
/// shutdown begins) and `/metrics`.
pub fn worker_router(state: WorkerState) -> axum::Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(worker_readyz))
        .route(
            "/metrics",
            get(|State(st): State<WorkerState>| async move { prometheus(&st.metrics) }),
        )
        .fallback(|| async { super::error::ApiError::not_found() })
        .layer(axum::middleware::from_fn(super::security_headers))
        .with_state(state)
}

async fn worker_readyz(State(st): State<WorkerState>) -> Response {
    let (database, queue) = tokio::join!(check(st.store.ping()), check(st.queue.ping()));
    // The receive loop's own view: it stops receiving while the queue or the database fails
    // for it, and when it stops.
    let worker = if st.healthy.load(std::sync::atomic::Ordering::SeqCst) {
        "ok"
    } else {
        "unavailable"
    };
    // Refusing the worker's session, the mail service makes the worker useless until it
    // takes one again (docs/guarantee.md).
    let mail = if st.mail.load(std::sync::atomic::Ordering::SeqCst) {
        "ok"
    } else {
        "refused"
    };
    let checks = json!({"database": database, "queue": queue, "queue_backend": st.queue.kind(),
        "worker": worker, "mail": mail});
    readiness(
        database == "ok" && queue == "ok" && worker == "ok" && mail == "ok",
        st.shutdown.is_cancelled(),
        checks,
    )
}
