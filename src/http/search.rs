//! The public job search: open jobs by words, place, pay, kind and age, newest first or by
//! relevance, within a window of the first 10 000 results, with pages
//! cached per search-cache version (`crate::cache`).

use super::error::{ApiResult, FieldErrors};
use super::extract::{MaybeUser, QueryParams};
use super::jobs::JobOut;
use super::openapi::Problem;
use crate::cache::Lookup;
use crate::domain::{EmploymentType, search, validate};
use crate::http::AppState;
use crate::store::{JobSearch, PostedWithin, SEARCH_WINDOW, SearchSort};
use crate::telemetry::SEARCH_CACHE_REQUESTS_TOTAL;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct JobList {
    pub items: Vec<JobOut>,
    pub page: i64,
    pub page_size: i64,
    /// Matches are counted up to 100 or to the end of this page, whichever is further: `total`
    /// is exact when `total_exact` is true, and a lower bound otherwise.
    pub total: i64,
    pub total_exact: bool,
}

/// Whether a search page came from the cache (`X-Cache`).
#[derive(ToSchema)]
#[allow(clippy::upper_case_acronyms, dead_code)]
pub enum CacheResult {
    HIT,
    MISS,
}

/// The order of a search's results.
#[derive(ToSchema)]
#[allow(non_camel_case_types, dead_code)]
pub enum SearchOrder {
    newest,
    relevance,
}

/// Search open jobs, newest first or by title relevance. Every word of `q` must match a whole
/// word of the title, description or company name (singular and plural alike); `q` is never
/// query syntax. A search serves its first 10 000 results.
#[utoipa::path(get, operation_id = "search_jobs", path = "/api/jobs", tag = "jobs", security((), ("bearer" = [])),
    params(
        ("q" = Option<String>, Query, description = "words that must all match"),
        ("location" = Option<String>, Query, description = "case-insensitive substring of the location"),
        ("remote" = Option<bool>, Query),
        ("company_id" = Option<i64>, Query, minimum = 1),
        ("salary_min" = Option<i64>, Query, minimum = 0, maximum = 1000000000, description = "keeps jobs whose salary_max is at least this, or unknown"),
        ("employment_type" = Option<EmploymentType>, Query),
        ("posted_within_days" = Option<i64>, Query, minimum = 1, maximum = 365, description = "keeps jobs created in the last this many days"),
        ("sort" = Option<SearchOrder>, Query, description = "newest (default): created_at then id, descending; relevance: jobs whose title holds the most distinct words of q first, then newest"),
        ("page" = Option<i64>, Query, minimum = 1, maximum = 10000, description = "from 1; page × page_size at most 10 000 (a search serves its first 10 000 results; past them: 422 naming page)"),
        ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20")),
    responses((status = 200, body = JobList, headers(("X-Cache" = CacheResult, description = "whether the page came from the search cache"))),
              (status = 422, body = Problem)))]
pub(super) async fn search_jobs(
    State(st): State<AppState>,
    _user: MaybeUser,
    q: QueryParams,
) -> ApiResult<Response> {
    let mut errors = FieldErrors::default();
    let terms = q.get("q").map(search::query_terms);
    let location = q
        .get("location")
        .map(|l| l.trim().to_lowercase())
        .filter(|l| !l.is_empty());
    let remote = q.bool("remote", &mut errors);
    let company_id = q.int("company_id", 1, i64::MAX, &mut errors);
    let salary_min = q.int("salary_min", 0, validate::SALARY_MAX, &mut errors);
    let employment_type = q.get("employment_type").and_then(|t| {
        let parsed = EmploymentType::parse(t).map(|t| t.as_str().to_string());
        if parsed.is_none() {
            errors.add(
                "employment_type",
                "must be full_time, part_time, contract or internship",
            );
        }
        parsed
    });
    let posted_within = q
        .int("posted_within_days", 1, 365, &mut errors)
        .map(|days| PostedWithin::days_before(days, crate::timefmt::now()));
    let sort = match q.get("sort") {
        None => SearchSort::Newest,
        Some(s) => SearchSort::parse(s).unwrap_or_else(|| {
            errors.add("sort", "must be newest or relevance");
            SearchSort::Newest
        }),
    };
    let page = q.page(&mut errors);
    if page.page.saturating_mul(page.size) > SEARCH_WINDOW {
        errors.add(
            "page",
            format!(
                "a search serves its first {SEARCH_WINDOW} results: page × page_size must be at \
                 most {SEARCH_WINDOW}; narrow the search instead"
            ),
        );
    }
    errors.into_result()?;

    let search = JobSearch {
        terms: terms.clone().flatten().unwrap_or_default(),
        location,
        remote,
        company_id,
        salary_min,
        employment_type,
        posted_within,
        sort,
        page,
    };
    // A word too long to be indexed matches nothing, and no stored location holds a NUL (which
    // PostgreSQL could not even compare).
    if matches!(terms, Some(None)) || search.location.as_deref().is_some_and(|l| l.contains('\0')) {
        return Ok(page_response(
            render(&JobList {
                items: vec![],
                page: page.page,
                page_size: page.size,
                total: 0,
                total_exact: true,
            }),
            "MISS",
        ));
    }

    let key = hex::encode(Sha256::digest(
        serde_json::to_vec(&search).unwrap_or_default(),
    ));
    let version = match st.cache.lookup(&key).await {
        Lookup::Hit(body) => {
            metrics::counter!(SEARCH_CACHE_REQUESTS_TOTAL, "result" => "hit").increment(1);
            return Ok(page_response(body, "HIT"));
        }
        Lookup::Miss { version } => Some(version),
        Lookup::Unavailable => None,
    };
    metrics::counter!(SEARCH_CACHE_REQUESTS_TOTAL, "result" => "miss").increment(1);
    let found = st.store.search_jobs(&search).await?;
    let body = render(&JobList {
        items: found.rows.into_iter().map(Into::into).collect(),
        page: page.page,
        page_size: page.size,
        total: found.total,
        total_exact: found.total_exact,
    });
    if let Some(version) = version {
        st.cache.store(&version, &key, body.clone()).await;
    }
    Ok(page_response(body, "MISS"))
}

fn render(list: &JobList) -> bytes::Bytes {
    bytes::Bytes::from(serde_json::to_vec(list).unwrap_or_default())
}

fn page_response(body: bytes::Bytes, cache: &'static str) -> Response {
    let mut res = body.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert("x-cache", HeaderValue::from_static(cache));
    res
}
