//! `GET /jobs.atom?<the filters of GET /api/jobs>`: the newest [`FEED_SIZE`] matches of a search
//! as an Atom 1.0 feed (RFC 4287), for feed readers and aggregators. The search is the API's,
//! answered by the same index once it has applied every job change that committed before the
//! request; the feed is kept in the search cache under the change the index had applied, like
//! a page of the search, and not past the first `expires_at` among its jobs.
//!
//! Ids are stable: an entry's is its job's permanent address (`/jobs/{id}`, which redirects to
//! the page), the feed's is its own address with its filters in a fixed order.

use super::job::summary;
use super::listing::Listing;
use super::markup::{w3c, xml};
use super::{Rendered, base, cached, keep, respond};
use crate::domain::search::SearchFilters;
use crate::http::AppState;
use crate::http::error::{ApiError, ApiResult, FieldErrors, Problem};
use crate::http::extract::QueryParams;
use crate::http::filters::search_filters;
use crate::http::search::INDEX_WAIT;
use crate::store::{JobSearch, Page, PostedWithin, SearchSort};
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use std::fmt::Write;

/// How many of the newest matches a feed lists.
pub(super) const FEED_SIZE: i64 = 50;

const ATOM: &str = "application/atom+xml; charset=utf-8";

/// The filters a feed takes, in the order its id names them.
const FILTERS: [&str; 10] = [
    "q",
    "location",
    "remote",
    "workplace",
    "country",
    "company_id",
    "salary_min",
    "salary_currency",
    "employment_type",
    "posted_within_days",
];

/// What `GET /api/jobs` takes that a feed does not: it lists the newest matches, one page.
const NOT_TAKEN: [&str; 6] = ["page", "page_size", "sort", "facets", "ids", "after"];

/// A search's newest matches as a feed.
#[utoipa::path(get, operation_id = "get_jobs_feed", path = "/jobs.atom", tag = "pages",
    params(
        ("q" = Option<String>, Query, description = "words that must all match, as `GET /api/jobs`"),
        ("location" = Option<String>, Query, description = "case-insensitive substring of the location"),
        ("remote" = Option<bool>, Query),
        ("workplace" = Option<crate::domain::pay_place::Workplace>, Query),
        ("country" = Option<String>, Query, pattern = "^[A-Za-z]{2}$", description = "ISO 3166-1 alpha-2, as `GET /api/jobs`"),
        ("company_id" = Option<i64>, Query, minimum = 1),
        ("salary_min" = Option<i64>, Query, minimum = 0, maximum = 1000000000),
        ("salary_currency" = Option<crate::domain::pay_place::Currency>, Query, description = "ISO 4217, as `GET /api/jobs`"),
        ("employment_type" = Option<crate::domain::EmploymentType>, Query),
        ("posted_within_days" = Option<i64>, Query, minimum = 1, maximum = 365)),
    responses(
        (status = 200, description = "an Atom 1.0 feed (RFC 4287) of the newest 50 matches, newest first; each entry's id is its job's permanent address, its link the job's page", content_type = "application/atom+xml"),
        (status = 304, description = "not modified: `If-None-Match` names the current ETag"),
        (status = 422, body = Problem, description = "a filter `GET /api/jobs` would refuse, or one of its parameters a feed does not take (`page`, `page_size`, `sort`, `facets`, `ids`, `after`)"),
        (status = 503, body = Problem, description = "the search index is behind the newest job change for more than a second; retry after Retry-After")))]
pub(in crate::http) async fn jobs_feed(
    State(st): State<AppState>,
    q: QueryParams,
    request: HeaderMap,
) -> ApiResult<Response> {
    let mut errors = FieldErrors::default();
    q.refuse_repeated(&mut errors);
    let filters = search_filters(&q, &mut errors);
    let posted_within_days = q.int("posted_within_days", 1, 365, &mut errors);
    for name in NOT_TAKEN {
        if q.get(name).is_some() || q.given_empty(name) {
            errors.add(
                name,
                format!("a feed lists the newest {FEED_SIZE} matches: it takes the filters only"),
            );
        }
    }
    errors.into_result()?;

    let now = crate::timefmt::now();
    let search = JobSearch::of_filters(&filters)
        .map(|s| JobSearch {
            posted_within: posted_within_days.map(|d| PostedWithin::days_before(d, now)),
            sort: SearchSort::Newest,
            page: Page {
                page: 1,
                size: FEED_SIZE,
            },
            count_limit: Some(FEED_SIZE as u64),
            ..s
        })
        // A word too long to be indexed, or a NUL in the place, matches nothing.
        .filter(|s| !s.location.as_deref().is_some_and(|l| l.contains('\0')));
    let id = feed_address(&st, &q);
    let Some(search) = search else {
        let page = render(&st, &id, &filters, posted_within_days, &[], now);
        return Ok(respond(&request, &page, ATOM));
    };

    let search_key = hex::encode(Sha256::digest(
        serde_json::to_vec(&search).unwrap_or_default(),
    ));
    let key = format!("pages:feed:{}:{search_key}", st.search.applied());
    let version = match cached(&st, &key).await {
        (Some(page), _) => return Ok(respond(&request, &page, ATOM)),
        (None, version) => version,
    };
    let newest = st.store.newest_job_change().await?;
    if !st.search.wait_for(newest, INDEX_WAIT).await {
        return Err(ApiError::index_behind());
    }
    let computed_at = st.search.applied();
    let index = st.search.clone();
    let found = tokio::task::spawn_blocking(move || index.search(&search))
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("a feed's search panicked: {e}")))??;
    let jobs: Vec<Listing> = found.rows.iter().map(|j| Listing::brief(j, now)).collect();
    let page = render(&st, &id, &filters, posted_within_days, &jobs, now);
    let key = format!("pages:feed:{computed_at}:{search_key}");
    keep(&st, version, &key, &page, found.valid_until).await;
    Ok(respond(&request, &page, ATOM))
}

/// The feed's own address: its filters, as given, in the order of [`FILTERS`].
fn feed_address(st: &AppState, q: &QueryParams) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    for name in FILTERS {
        if let Some(value) = q.get(name) {
            query.append_pair(name, value);
        }
    }
    let query = query.finish();
    if query.is_empty() {
        format!("{}/jobs.atom", base(st))
    } else {
        format!("{}/jobs.atom?{query}", base(st))
    }
}

/// The feed's title: what it lists, in words.
fn title(filters: &SearchFilters, posted_within_days: Option<i64>, host: &str) -> String {
    let mut parts = Vec::new();
    if let Some(q) = &filters.q {
        parts.push(format!("“{q}”"));
    }
    if let Some(l) = &filters.location {
        parts.push(format!("in {l}"));
    }
    match filters.remote {
        Some(true) => parts.push("remote".to_string()),
        Some(false) => parts.push("not remote".to_string()),
        None => {}
    }
    if let Some(w) = filters.workplace {
        parts.push(w.as_str().to_string());
    }
    if let Some(c) = &filters.country {
        parts.push(format!("in country {c}"));
    }
    if let Some(c) = filters.company_id {
        parts.push(format!("at company {c}"));
    }
    match (filters.salary_min, &filters.salary_currency) {
        (Some(s), Some(c)) => parts.push(format!("paying up to at least {s} {c} a year")),
        (Some(s), None) => parts.push(format!("paying up to at least {s}")),
        (None, Some(c)) => parts.push(format!("paid in {c}")),
        (None, None) => {}
    }
    if let Some(k) = filters.employment_type {
        parts.push(super::listing::kind_words(k).to_lowercase());
    }
    if let Some(d) = posted_within_days {
        parts.push(format!("posted within {d} days"));
    }
    if parts.is_empty() {
        format!("The newest jobs on {host}")
    } else {
        format!("The newest jobs on {host}: {}", parts.join(", "))
    }
}

fn render(
    st: &AppState,
    id: &str,
    filters: &SearchFilters,
    posted_within_days: Option<i64>,
    jobs: &[Listing],
    now: DateTime<Utc>,
) -> Rendered {
    let base = base(st);
    let host = url::Url::parse(base)
        .ok()
        .and_then(|u| u.host_str().map(str::to_string))
        .unwrap_or_else(|| base.to_string());
    // The feed changed when its newest-written entry did (or, empty, never: the epoch).
    let updated = jobs
        .iter()
        .map(|j| j.updated_at)
        .max()
        .unwrap_or(DateTime::UNIX_EPOCH);
    let mut body = String::with_capacity(1024 + jobs.len() * 1024);
    let _ = write!(
        body,
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n\
         <id>{id}</id>\n<title type=\"text\">{title}</title>\n<updated>{updated}</updated>\n\
         <author><name>{host}</name></author>\n\
         <link rel=\"self\" type=\"application/atom+xml\" href=\"{id}\"/>\n\
         <generator>jobboard</generator>\n",
        id = xml(id),
        title = xml(&title(filters, posted_within_days, &host)),
        updated = w3c(updated),
        host = xml(&host),
    );
    for job in jobs {
        let page = format!("{base}/jobs/{}", job.path_key());
        let _ = write!(
            body,
            "<entry>\n<id>{id}</id>\n<title type=\"text\">{title}</title>\n\
             <link rel=\"alternate\" type=\"text/html\" href=\"{page}\"/>\n\
             <published>{published}</published>\n<updated>{updated}</updated>\n\
             <author><name>{company}</name></author>\n\
             <category term=\"{kind}\" label=\"{kind_words}\"/>\n\
             <summary type=\"text\">{facts}\n\n{summary}</summary>\n</entry>\n",
            id = xml(&format!("{base}/jobs/{}", job.id)),
            title = xml(&format!("{} – {}", job.title, job.company)),
            page = xml(&page),
            published = w3c(job.created_at),
            updated = w3c(job.updated_at),
            company = xml(&job.company),
            kind = job.kind.as_str(),
            kind_words = job.kind_words(),
            facts = xml(&format!(
                "{} · {} · {}",
                job.place_words(),
                job.pay_words(),
                job.kind_words()
            )),
            summary = xml(&summary(&job.description)),
        );
    }
    body.push_str("</feed>\n");
    Rendered::new(body, now, None)
}
