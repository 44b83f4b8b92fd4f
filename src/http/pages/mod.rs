//! The board on the open web (docs/api.md, "Public pages"): a server-rendered page per job
//! with its `JobPosting` data (`job.rs`, `jsonld.rs`), the sitemap and `robots.txt`
//! (`sitemap.rs`) and Atom feeds of searches (`feed.rs`). Anonymous, outside `/api`: a token
//! sent along is not read.
//!
//! Every answer is rendered once per state of the jobs and kept in the search cache under its
//! versioned keys (`crate::cache`): a job page under the newest job change in the database's
//! log. A write bumps the cache's version before it answers and adds a row to the log, so a
//! request after it never gets what was rendered before it; a rendering is never kept past the
//! first `expires_at` that changes it. Each carries a strong `ETag` (a hash of its bytes) and a
//! `Last-Modified`, and a conditional request that names them is answered 304.

pub(super) mod feed;
pub(super) mod job;
mod jsonld;
mod listing;
pub(super) mod markup;
pub(super) mod sitemap;

use super::Asset;
use crate::cache::Lookup;
use crate::http::AppState;
use axum::Router;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

pub(super) static PAGES_CSS: Asset = Asset::new(
    include_str!("../../../assets/pages.css"),
    "text/css; charset=utf-8",
);

pub fn router() -> Router<AppState> {
    Router::new()
        .route("/jobs/{id}", get(job::job_page))
        .route("/jobs.atom", get(feed::jobs_feed))
        .route("/sitemap.xml", get(sitemap::sitemap_index))
        .route("/sitemaps/{file}", get(sitemap::sitemap_file))
        .route("/robots.txt", get(sitemap::robots_txt))
        .route("/pages/pages.css", get(job::pages_css))
}

/// One rendering: its bytes, their hash, when what it shows last changed, and, for a job's
/// page, the last segment of its canonical path.
#[derive(Debug, Clone)]
pub(super) struct Rendered {
    pub body: Bytes,
    pub etag: String,
    pub last_modified: DateTime<Utc>,
    pub canonical: Option<String>,
}

impl Rendered {
    pub fn new(body: String, last_modified: DateTime<Utc>, canonical: Option<String>) -> Self {
        let hash = Sha256::digest(body.as_bytes());
        Rendered {
            etag: format!("\"{}\"", hex::encode(&hash[..16])),
            body: Bytes::from(body),
            last_modified,
            canonical,
        }
    }

    /// As the cache keeps it: a line `{etag} {last modified, Unix seconds} {canonical or -}`,
    /// then the body.
    fn encode(&self) -> Bytes {
        let head = format!(
            "{} {} {}\n",
            self.etag,
            self.last_modified.timestamp(),
            self.canonical.as_deref().unwrap_or("-")
        );
        let mut out = Vec::with_capacity(head.len() + self.body.len());
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(&self.body);
        Bytes::from(out)
    }

    fn decode(stored: Bytes) -> Option<Rendered> {
        let end = stored.iter().position(|b| *b == b'\n')?;
        let head = std::str::from_utf8(&stored[..end]).ok()?;
        let mut parts = head.split(' ');
        let etag = parts.next()?.to_string();
        let last_modified = DateTime::from_timestamp(parts.next()?.parse().ok()?, 0)?;
        let canonical = match parts.next()? {
            "-" => None,
            c => Some(c.to_string()),
        };
        Some(Rendered {
            body: stored.slice(end + 1..),
            etag,
            last_modified,
            canonical,
        })
    }
}

/// What the cache holds under `key` (pages are never kept where it cannot be reached), and
/// the version to keep a new rendering under.
pub(super) async fn cached(st: &AppState, key: &str) -> (Option<Rendered>, Option<String>) {
    match st.cache.lookup(key).await {
        Lookup::Hit(stored) => match Rendered::decode(stored) {
            Some(r) => (Some(r), None),
            None => {
                tracing::warn!("a cached page could not be read; rendering it again");
                (None, None)
            }
        },
        Lookup::Miss { version } => (None, Some(version)),
        Lookup::Unavailable => (None, None),
    }
}

/// Keeps a rendering under `key` for the version it was looked up under, until `until`.
pub(super) async fn keep(
    st: &AppState,
    version: Option<String>,
    key: &str,
    page: &Rendered,
    until: Option<DateTime<Utc>>,
) {
    if let Some(version) = version {
        st.cache.store(&version, key, page.encode(), until).await;
    }
}

/// The answer to a GET of `page`: 304 when `If-None-Match` names its ETag (or is `*`), or,
/// without `If-None-Match`, when `If-Modified-Since` is not before its `Last-Modified`;
/// otherwise 200 with the body. Either way with its `ETag`, `Last-Modified` and
/// `Cache-Control: no-cache` (a copy is revalidated before each use), and, for HTML, the
/// pages' policy.
pub(super) fn respond(
    request: &HeaderMap,
    page: &Rendered,
    content_type: &'static str,
) -> Response {
    respond_with(
        request,
        &page.etag,
        page.last_modified,
        content_type,
        || Body::from(page.body.clone()),
    )
}

/// [`respond`] for an answer whose validators are known before its body is made: `body` is
/// called only when the answer is not 304.
pub(super) fn respond_with(
    request: &HeaderMap,
    etag: &str,
    last_modified: DateTime<Utc>,
    content_type: &'static str,
    body: impl FnOnce() -> Body,
) -> Response {
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(etag) {
        headers.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&markup::http_date(last_modified)) {
        headers.insert(header::LAST_MODIFIED, v);
    }
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    if content_type.starts_with("text/html") {
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(super::PAGE_CSP),
        );
    }
    if not_modified(request, etag, last_modified) {
        return (StatusCode::NOT_MODIFIED, headers).into_response();
    }
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    (headers, body()).into_response()
}

fn not_modified(request: &HeaderMap, etag: &str, last_modified: DateTime<Utc>) -> bool {
    let mut tags = request
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .peekable();
    if tags.peek().is_some() {
        // Weak comparison (RFC 9110 §13.1.2); `If-Modified-Since` is then not read.
        return tags.any(|t| t == "*" || t.strip_prefix("W/").unwrap_or(t) == etag);
    }
    request
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(markup::parse_http_date)
        .is_some_and(|since| last_modified.timestamp() <= since.timestamp())
}

/// `PUBLIC_BASE_URL`, which every absolute link of the pages is built on.
pub(super) fn base(st: &AppState) -> &str {
    &st.config.public_base_url
}
