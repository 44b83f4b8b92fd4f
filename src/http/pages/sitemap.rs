//! `GET /sitemap.xml`, `GET /sitemaps/jobs-{n}.xml` and `GET /robots.txt`: how crawlers find the
//! job pages. The sitemap is an index of files of at most [`PER_FILE`] open jobs each, by id,
//! each job's canonical page with its `updated_at` as `lastmod` (the sitemap protocol,
//! sitemaps.org). A file is made from its own jobs, streamed from the database as they are
//! written out, after a walk of the index of open jobs by id to where it starts, so what a
//! request holds is bounded by a file, never by the board; each answer is kept in the search cache under the
//! newest job change, like a job's page, and not past the first `expires_at` of an open job.

use super::listing::path_key;
use super::markup::{w3c, xml};
use super::{Rendered, base, cached, keep, respond};
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult, Problem};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::{IntoResponse, Response};
use std::fmt::Write;

/// The most jobs in one file of the sitemap (the protocol's limit).
pub(super) const PER_FILE: i64 = 50_000;

const XML: &str = "application/xml; charset=utf-8";
const SITEMAP_NS: &str = "http://www.sitemaps.org/schemas/sitemap/0.9";

/// The sitemap index.
#[utoipa::path(get, operation_id = "get_sitemap_index", path = "/sitemap.xml", tag = "pages",
    responses(
        (status = 200, description = "a sitemap index (sitemaps.org): one `/sitemaps/jobs-{n}.xml` per 50 000 open jobs", content_type = "application/xml"),
        (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(in crate::http) async fn sitemap_index(
    State(st): State<AppState>,
    request: HeaderMap,
) -> ApiResult<Response> {
    let seq = st.store.newest_job_change().await?;
    let key = format!("pages:sitemap:{seq}");
    let page = match cached(&st, &key).await {
        (Some(page), _) => page,
        (None, version) => {
            let now = crate::timefmt::now();
            let open = st.store.open_jobs(now).await?;
            let base = base(&st);
            let mut body = format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<sitemapindex xmlns=\"{SITEMAP_NS}\">\n"
            );
            for n in 1..=files(open.count) {
                let _ = writeln!(
                    body,
                    "<sitemap><loc>{}</loc></sitemap>",
                    xml(&format!("{base}/sitemaps/jobs-{n}.xml"))
                );
            }
            body.push_str("</sitemapindex>\n");
            let page = Rendered::new(body, now, None);
            keep(&st, version, &key, &page, open.first_expiry).await;
            page
        }
    };
    Ok(respond(&request, &page, XML))
}

/// A file of the sitemap.
#[utoipa::path(get, operation_id = "get_sitemap_file", path = "/sitemaps/{file}", tag = "pages",
    params(("file" = String, Path, description = "`jobs-{n}.xml`, n from 1 to the number of files the index lists")),
    responses(
        (status = 200, description = "a sitemap (sitemaps.org) of up to 50 000 open jobs' pages, by id, each with its `lastmod`", content_type = "application/xml"),
        (status = 304, description = "not modified: `If-None-Match` names the current ETag"),
        (status = 404, body = Problem, description = "no such file: a number past the last file the index lists, or another name")))]
pub(in crate::http) async fn sitemap_file(
    State(st): State<AppState>,
    Path(file): Path<String>,
    request: HeaderMap,
) -> ApiResult<Response> {
    let Some(n) = file_number(&file) else {
        return Err(ApiError::not_found());
    };
    let seq = st.store.newest_job_change().await?;
    let key = format!("pages:sitemap:{seq}:{n}");
    let page = match cached(&st, &key).await {
        (Some(page), _) => page,
        (None, version) => {
            let now = crate::timefmt::now();
            let open = st.store.open_jobs(now).await?;
            if n > files(open.count) {
                return Err(ApiError::not_found());
            }
            let base = base(&st);
            let jobs = (open.count - (n - 1) * PER_FILE).clamp(0, PER_FILE) as usize;
            let mut body = String::with_capacity(128 + jobs * (base.len() + 100));
            let _ = write!(
                body,
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"{SITEMAP_NS}\">\n"
            );
            st.store
                .open_jobs_by_id(now, (n - 1) * PER_FILE, PER_FILE, &mut |job| {
                    let _ = writeln!(
                        body,
                        "<url><loc>{}</loc><lastmod>{}</lastmod></url>",
                        xml(&format!("{base}/jobs/{}", path_key(job.id, &job.title))),
                        w3c(job.updated_at)
                    );
                })
                .await?;
            body.push_str("</urlset>\n");
            let page = Rendered::new(body, now, None);
            keep(&st, version, &key, &page, open.first_expiry).await;
            page
        }
    };
    Ok(respond(&request, &page, XML))
}

/// What crawlers may read, and where the sitemap is.
#[utoipa::path(get, operation_id = "get_robots_txt", path = "/robots.txt", tag = "pages",
    responses((status = 200, description = "the job pages, the sitemap and the feeds may be crawled, the API and the console not; names the sitemap", content_type = "text/plain")))]
pub(in crate::http) async fn robots_txt(State(st): State<AppState>) -> Response {
    let body = format!(
        "User-agent: *\nDisallow: /api/\nDisallow: /console\nDisallow: /unsubscribe\n\
         Allow: /\n\nSitemap: {}/sitemap.xml\n",
        base(&st)
    );
    (
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        body,
    )
        .into_response()
}

/// How many files `count` open jobs take.
fn files(count: i64) -> i64 {
    (count.max(0) + PER_FILE - 1) / PER_FILE
}

/// `jobs-{n}.xml` → n (from 1, no zero in front).
fn file_number(file: &str) -> Option<i64> {
    let digits = file.strip_prefix("jobs-")?.strip_suffix(".xml")?;
    if digits.is_empty() || digits.len() > 9 || digits.starts_with('0') {
        return None;
    }
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_hold_at_most_50_000_jobs() {
        assert_eq!(files(0), 0);
        assert_eq!(files(1), 1);
        assert_eq!(files(50_000), 1);
        assert_eq!(files(50_001), 2);
        assert_eq!(files(120_000), 3);
    }

    #[test]
    fn a_file_is_named_by_its_number() {
        assert_eq!(file_number("jobs-1.xml"), Some(1));
        assert_eq!(file_number("jobs-20.xml"), Some(20));
        for bad in [
            "jobs-0.xml",
            "jobs-01.xml",
            "jobs-.xml",
            "jobs-1.xml.gz",
            "jobs-x.xml",
            "jobs-+1.xml",
            "jobs-1234567890.xml",
            "companies-1.xml",
        ] {
            assert_eq!(file_number(bad), None, "{bad}");
        }
    }
}
