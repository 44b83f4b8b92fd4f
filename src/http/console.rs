//! `GET /console`: the operators' page, with its style sheet and script, all served by the
//! binary (nothing loaded from elsewhere, no build step) under the pages' policy, which allows
//! no inline code, revalidated by their ETags; and `/favicon.ico`, the pages' icon. The page calls `/api/admin/*` as the signed-in
//! operator; to anyone else the page is only a sign-in form.

use super::Asset;
use crate::http::AppState;
use axum::Router;
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

static CONSOLE_HTML: Asset = Asset::new(
    include_str!("../../assets/console.html"),
    "text/html; charset=utf-8",
);
static CONSOLE_CSS: Asset = Asset::new(
    include_str!("../../assets/console.css"),
    "text/css; charset=utf-8",
);
static CONSOLE_JS: Asset = Asset::new(
    include_str!("../../assets/console.js"),
    "text/javascript; charset=utf-8",
);
/// The pages' icon, 16×16 and 32×32 (written by `scripts/favicon.py`).
static FAVICON: &[u8] = include_bytes!("../../assets/favicon.ico");

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(console))
        .route("/console/console.css", get(console_css))
        .route("/console/console.js", get(console_js))
        .route("/favicon.ico", get(favicon))
}

/// The operator console: the queue's figures, the jobs waiting for review, the dead letters, any
/// event's story.
#[utoipa::path(get, operation_id = "get_console_page", path = "/console", tag = "operations", responses((status = 200, description = "HTML", content_type = "text/html"), (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(super) async fn console(request: HeaderMap) -> Response {
    CONSOLE_HTML.serve(&request)
}

/// The console's style sheet.
#[utoipa::path(get, operation_id = "get_console_style", path = "/console/console.css", tag = "operations", responses((status = 200, description = "CSS", content_type = "text/css"), (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(super) async fn console_css(request: HeaderMap) -> Response {
    CONSOLE_CSS.serve(&request)
}

/// The console's script.
#[utoipa::path(get, operation_id = "get_console_script", path = "/console/console.js", tag = "operations", responses((status = 200, description = "JavaScript", content_type = "text/javascript"), (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(super) async fn console_js(request: HeaderMap) -> Response {
    CONSOLE_JS.serve(&request)
}

/// The icon of the pages (`/console`, `/docs`), which link it; browsers also ask for it by
/// themselves. An icon that is a release old harms nothing, so caches may keep it for a week.
#[utoipa::path(get, operation_id = "get_favicon", path = "/favicon.ico", tag = "operations", responses((status = 200, description = "the icon (ICO)", content_type = "image/x-icon")))]
pub(super) async fn favicon() -> Response {
    (
        [
            (header::CONTENT_TYPE, "image/x-icon"),
            (header::CACHE_CONTROL, "public, max-age=604800"),
        ],
        FAVICON,
    )
        .into_response()
}
