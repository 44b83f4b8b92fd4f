//! `GET /console`: the operators' page, with its style sheet and script, all served by the
//! binary (nothing loaded from elsewhere, no build step) under the pages' policy, which allows
//! no inline code. The page calls `/api/admin/*` as the signed-in operator; to anyone else the
//! page is only a sign-in form.

use crate::http::AppState;
use axum::Router;
use axum::response::Response;
use axum::routing::get;

const CONSOLE_HTML: &str = include_str!("../../assets/console.html");
const CONSOLE_CSS: &str = include_str!("../../assets/console.css");
const CONSOLE_JS: &str = include_str!("../../assets/console.js");

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/console", get(console))
        .route("/console/console.css", get(console_css))
        .route("/console/console.js", get(console_js))
}

/// The operator console: the queue's figures, the dead letters, any event's story.
#[utoipa::path(get, operation_id = "get_console_page", path = "/console", tag = "operations", responses((status = 200, description = "HTML", content_type = "text/html")))]
pub(super) async fn console() -> Response {
    super::page(CONSOLE_HTML, "text/html; charset=utf-8")
}

/// The console's style sheet.
#[utoipa::path(get, operation_id = "get_console_style", path = "/console/console.css", tag = "operations", responses((status = 200, description = "CSS", content_type = "text/css")))]
pub(super) async fn console_css() -> Response {
    super::page(CONSOLE_CSS, "text/css; charset=utf-8")
}

/// The console's script.
#[utoipa::path(get, operation_id = "get_console_script", path = "/console/console.js", tag = "operations", responses((status = 200, description = "JavaScript", content_type = "text/javascript")))]
pub(super) async fn console_js() -> Response {
    super::page(CONSOLE_JS, "text/javascript; charset=utf-8")
}
