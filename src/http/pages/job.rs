//! `GET /jobs/{id}` and `GET /jobs/{id}-{slug}`: a job's page, for people and crawlers. An open
//! job's page carries its `JobPosting` data; a closed or expired one says so, asks not to be
//! indexed and carries none; a deleted job is 410, a job no one but its company may see (or
//! none at all) 404. Any other form of the address than the canonical one (no slug, a stale
//! slug, a zero in front) is 301 to it.

use super::listing::{Listing, SUMMARY_MAX, day, head};
use super::markup::{html, paragraphs, script_json, w3c};
use super::{PAGES_CSS, Rendered, base, cached, jsonld, keep, respond};
use crate::domain::JobStatus;
use crate::domain::validate::fold_one_line;
use crate::http::AppState;
use crate::http::error::ApiResult;
use crate::store::StoreError;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};

const HTML: &str = "text/html; charset=utf-8";

/// A job's page.
#[utoipa::path(get, operation_id = "get_job_page", path = "/jobs/{id}", tag = "pages",
    params(("id" = String, Path, description = "the job's id, perhaps followed by `-` and the slug of its title (`42-senior-rust-engineer`)")),
    responses(
        (status = 200, description = "the job's page: an open job's with its JobPosting JSON-LD; a closed or expired job's with `noindex`", content_type = "text/html"),
        (status = 301, description = "not the canonical address (no slug, or a stale one): `Location` names it"),
        (status = 304, description = "not modified: `If-None-Match` names the current ETag, or `If-Modified-Since` is not before `Last-Modified`"),
        (status = 404, description = "no such job, or one only its company may see", content_type = "text/html"),
        (status = 410, description = "the job was deleted", content_type = "text/html")))]
pub(in crate::http) async fn job_page(
    State(st): State<AppState>,
    Path(key): Path<String>,
    request: HeaderMap,
) -> ApiResult<Response> {
    let Some(id) = job_id(&key) else {
        return Ok(missing(StatusCode::NOT_FOUND));
    };
    let seq = st.store.newest_job_change().await?;
    let cache_key = format!("pages:job:{seq}:{id}");
    let (hit, version) = cached(&st, &cache_key).await;
    let page = match hit {
        Some(page) => page,
        None => {
            let job = match st.store.job(id).await {
                Ok(job) => job,
                Err(StoreError::NotFound) if st.store.job_deleted(id).await? => {
                    return Ok(missing(StatusCode::GONE));
                }
                Err(StoreError::NotFound) => return Ok(missing(StatusCode::NOT_FOUND)),
                Err(e) => return Err(e.into()),
            };
            let now = crate::timefmt::now();
            let listing = Listing::of(&job, now);
            if !listing.status.is_public() {
                return Ok(missing(StatusCode::NOT_FOUND));
            }
            let page = render(&st, &listing, now);
            // An open job's page changes when its date passes.
            let until = listing
                .expires_at
                .filter(|_| listing.status == JobStatus::Open);
            keep(&st, version, &cache_key, &page, until).await;
            page
        }
    };
    match &page.canonical {
        Some(canonical) if *canonical != key => Ok(moved(canonical)),
        _ => Ok(respond(&request, &page, HTML)),
    }
}

/// The pages' style sheet.
#[utoipa::path(get, operation_id = "get_pages_style", path = "/pages/pages.css", tag = "pages", responses((status = 200, description = "CSS", content_type = "text/css"), (status = 304, description = "not modified: `If-None-Match` names the current ETag")))]
pub(in crate::http) async fn pages_css(request: HeaderMap) -> Response {
    PAGES_CSS.serve(&request)
}

/// The id a page's address names: its digits up to the first `-` (the slug after it may be
/// anything), a job id in range.
fn job_id(key: &str) -> Option<i64> {
    let digits = key.split_once('-').map_or(key, |(id, _)| id);
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let id: i64 = digits.parse().ok()?;
    (1..=crate::http::extract::ID_MAX)
        .contains(&id)
        .then_some(id)
}

/// 301 to the canonical address, written relative to this one (`./42-slug`), so that it holds
/// behind a proxy that serves the board under a path. Revalidated (`no-cache`), since a title
/// that changes back would otherwise meet a browser's kept redirect going the other way.
fn moved(canonical: &str) -> Response {
    let location =
        HeaderValue::from_str(&format!("./{canonical}")).unwrap_or(HeaderValue::from_static("./"));
    (
        StatusCode::MOVED_PERMANENTLY,
        [
            (header::LOCATION, location),
            (header::CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        ],
    )
        .into_response()
}

/// A page for an address with no job to show: 404, or 410 for a deleted job; never indexed.
fn missing(status: StatusCode) -> Response {
    let (title, text) = if status == StatusCode::GONE {
        (
            "This job was removed",
            "Its company took it off the board; it no longer takes applications.",
        )
    } else {
        ("No such job", "There is no job to show at this address.")
    };
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{title}</title>\n<meta name=\"robots\" content=\"noindex\">\n\
         <link rel=\"stylesheet\" href=\"../pages/pages.css\">\n</head>\n<body>\n<main>\n\
         <h1>{title}</h1>\n<p>{text}</p>\n</main>\n</body>\n</html>\n"
    );
    (
        status,
        [
            (header::CONTENT_TYPE, HTML),
            (header::CONTENT_SECURITY_POLICY, super::super::PAGE_CSP),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// When what the page shows last changed: the job's last write, or the moment its date passed.
fn last_modified(job: &Listing, now: DateTime<Utc>) -> DateTime<Utc> {
    match job.expires_at {
        Some(at) if at <= now => job.updated_at.max(at),
        _ => job.updated_at,
    }
}

/// The page of a job anyone may see.
fn render(st: &AppState, job: &Listing, now: DateTime<Utc>) -> Rendered {
    let base = base(st);
    let key = job.path_key();
    let canonical = format!("{base}/jobs/{key}");
    let feed = format!("{base}/jobs.atom?company_id={}", job.company_id);
    let open = job.status == JobStatus::Open;
    let apply_url = st
        .config
        .apply_url_template
        .as_ref()
        .map(|t| t.replace("{id}", &job.id.to_string()));
    let posting = open
        .then(|| jsonld::job_posting(job, &canonical, apply_url.is_some()))
        .flatten()
        .map(|p| {
            format!(
                "<script type=\"application/ld+json\">{}</script>\n",
                script_json(&p)
            )
        })
        .unwrap_or_default();
    let robots = if open {
        ""
    } else {
        "<meta name=\"robots\" content=\"noindex\">\n"
    };
    let heading = format!("{} – {}", job.title, job.company);
    let summary = html(&summary(&job.description));
    let company = html(&job.company);
    let host = url::Url::parse(base)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_default();
    let (notice, date) = match (job.status, job.expires_at) {
        (JobStatus::Closed, _) => (
            "<p class=\"notice\" role=\"status\">This job is closed: it no longer takes \
             applications.</p>\n"
                .to_string(),
            String::new(),
        ),
        (JobStatus::Expired, Some(at)) => (
            format!(
                "<p class=\"notice\" role=\"status\">This job expired on {}: it no longer \
                 takes applications.</p>\n",
                day(at)
            ),
            fact("Expired", &time(at)),
        ),
        (JobStatus::Expired, None) => (
            "<p class=\"notice\" role=\"status\">This job has expired: it no longer takes \
             applications.</p>\n"
                .to_string(),
            String::new(),
        ),
        (_, Some(at)) => (String::new(), fact("Closes", &time(at))),
        (_, None) => (String::new(), String::new()),
    };
    let apply = match (open, &apply_url) {
        (false, _) => "<p>This job no longer takes applications.</p>".to_string(),
        (true, Some(url)) => format!(
            "<p><a class=\"apply\" href=\"{}\">Apply for this job</a></p>",
            html(url)
        ),
        (true, None) => format!(
            "<p>Apply through the board's API: sign in as a candidate (<code>POST \
             {base}/api/auth/token</code>), then send <code>POST {base}/api/jobs/{id}/applications\
             </code> with your cover letter. The <a href=\"{docs}\">API reference</a> has the \
             details.</p>",
            base = html(base),
            id = job.id,
            docs = html(&format!("{base}/docs")),
        ),
    };
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>{heading}</title>\n<meta name=\"description\" content=\"{summary}\">\n{robots}\
         <link rel=\"canonical\" href=\"{canonical}\">\n\
         <link rel=\"alternate\" type=\"application/atom+xml\" title=\"Jobs at {company}\" \
         href=\"{feed}\">\n<link rel=\"stylesheet\" href=\"../pages/pages.css\">\n\
         <meta property=\"og:type\" content=\"website\">\n\
         <meta property=\"og:title\" content=\"{heading}\">\n\
         <meta property=\"og:description\" content=\"{summary}\">\n\
         <meta property=\"og:url\" content=\"{canonical}\">\n{posting}</head>\n<body>\n\
         <header class=\"site\"><p>{host}</p></header>\n<main>\n<article>\n<header>\n\
         <h1 dir=\"auto\">{title}</h1>\n<p class=\"company\" dir=\"auto\">{company}</p>\n\
         </header>\n{notice}<dl class=\"facts\">\n{place}{pay}{kind}{posted}{date}</dl>\n\
         <section aria-labelledby=\"about\">\n<h2 id=\"about\">About the job</h2>\n\
         <div class=\"description\" dir=\"auto\">\n{description}</div>\n</section>\n\
         <section aria-labelledby=\"apply\">\n<h2 id=\"apply\">Apply</h2>\n{apply}\n\
         </section>\n</article>\n</main>\n<footer>\n<p><a href=\"{feed}\" \
         type=\"application/atom+xml\">The jobs at {company}, as a feed</a></p>\n</footer>\n\
         </body>\n</html>\n",
        heading = html(&heading),
        canonical = html(&canonical),
        feed = html(&feed),
        host = html(&host),
        title = html(&job.title),
        place = fact("Place", &html(&job.place_words())),
        pay = fact("Pay", &html(&job.pay_words())),
        kind = fact("Kind", job.kind_words()),
        posted = fact("Posted", &time(job.created_at)),
        description = paragraphs(&job.description),
    );
    Rendered::new(body, last_modified(job, now), Some(key))
}

/// One fact of the page's list; `value` is HTML already.
fn fact(name: &str, value: &str) -> String {
    format!("<div><dt>{name}</dt><dd dir=\"auto\">{value}</dd></div>\n")
}

fn time(at: DateTime<Utc>) -> String {
    format!("<time datetime=\"{}\">{}</time>", w3c(at), day(at))
}

/// The description's start on one line, for the meta description: cut at a word, with `…`.
pub(super) fn summary(description: &str) -> String {
    // Only the start can show: it is folded alone, unless it folds to no more than a summary.
    let start = head(description, 8 * SUMMARY_MAX);
    let mut line = fold_one_line(start);
    if start.len() < description.len() && line.chars().count() <= SUMMARY_MAX {
        line = fold_one_line(description);
    }
    if line.chars().count() <= SUMMARY_MAX {
        return line;
    }
    let cut: String = line.chars().take(SUMMARY_MAX).collect();
    let cut = match cut.rfind(' ') {
        Some(i) if i > 0 => &cut[..i],
        _ => &cut,
    };
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_names_a_job_by_its_digits() {
        assert_eq!(job_id("42"), Some(42));
        assert_eq!(job_id("42-senior-rust"), Some(42));
        assert_eq!(job_id("42-"), Some(42));
        assert_eq!(job_id("042-x"), Some(42));
        for bad in [
            "",
            "x1",
            "-42",
            "4 2",
            "0",
            "9007199254740992",
            "+42",
            "42x",
        ] {
            assert_eq!(job_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_summary_is_one_line_cut_at_a_word() {
        assert_eq!(summary("Build\nthe API"), "Build the API");
        let long = "word ".repeat(50);
        let s = summary(&long);
        assert!(
            s.ends_with("word…") && s.chars().count() <= SUMMARY_MAX + 1,
            "{s}"
        );
    }
}
