//! The public job search: open jobs by words, place, pay, kind and age, newest first or by
//! relevance, within a window of the first 10 000 results, with facets, answered from this
//! process's search index (`crate::search`) once it has applied every job change that committed
//! before the search began, with pages cached per search-cache version (`crate::cache`).

use super::cursor::{Cursor, fingerprint};
use super::error::Problem;
use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{MaybeUser, QueryParams};
use super::job_view::JobOut;
use crate::cache::Lookup;
use crate::domain::EmploymentType;
use crate::domain::pay_place::Workplace;
use crate::http::AppState;
use crate::store::{Facets, JobSearch, MAX_SEARCH_IDS, PostedWithin, SEARCH_WINDOW, SearchSort};
use crate::telemetry::SEARCH_CACHE_REQUESTS_TOTAL;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::time::Duration;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct JobList {
    pub items: Vec<JobOut>,
    pub page: i64,
    pub page_size: i64,
    /// The matches, counted exactly up to 10 000 (the result window); when more match, 10 000.
    /// Never below the page's last position. A search with `facets` counts every match.
    pub total: i64,
    /// Whether `total` counts every match (false: at least that many match).
    pub total_exact: bool,
    /// The cursor of the next page (`after=`), or null on the last page and on the page that
    /// reaches the result window.
    #[schema(required = true)]
    pub next: Option<String>,
    /// With `facets=`: the matches per value, over every match of the search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub facets: Option<SearchFacets>,
}

/// The facets asked for, each counted over every match of the search (not the page).
#[derive(Serialize, ToSchema)]
pub struct SearchFacets {
    /// Matches per employment type, every type listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub employment_type: Option<BTreeMap<String, u64>>,
    /// Matches per `remote` value, `"true"` and `"false"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<BTreeMap<String, u64>>,
    /// Matches per workplace, `onsite`, `hybrid` and `remote`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workplace: Option<BTreeMap<String, u64>>,
    /// The ten companies with the most matches, then by id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub company: Option<Vec<CompanyFacet>>,
}

#[derive(Serialize, ToSchema)]
pub struct CompanyFacet {
    pub id: i64,
    pub name: String,
    pub count: u64,
}

/// A search waits at most this long for the index to apply the changes it must see.
pub(super) const INDEX_WAIT: Duration = Duration::from_secs(1);

fn facets_out(f: crate::search::FacetCounts) -> SearchFacets {
    let map =
        |m: BTreeMap<&'static str, u64>| m.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    SearchFacets {
        employment_type: f.employment_type.map(map),
        remote: f.remote.map(map),
        workplace: f.workplace.map(map),
        company: f.company.map(|c| {
            c.into_iter()
                .map(|c| CompanyFacet {
                    id: c.id,
                    name: c.name,
                    count: c.count,
                })
                .collect()
        }),
    }
}

/// `facets=`: a comma-separated subset of `employment_type`, `remote`, `workplace`, `company`.
fn parse_facets(value: &str) -> Option<Facets> {
    let mut f = Facets::default();
    for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        match name {
            "employment_type" => f.employment_type = true,
            "remote" => f.remote = true,
            "workplace" => f.workplace = true,
            "company" => f.company = true,
            _ => return None,
        }
    }
    Some(f)
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
/// query syntax. A job past its `expires_at` is never in a search. A search serves its first
/// 10 000 results.
#[utoipa::path(get, operation_id = "search_jobs", path = "/api/jobs", tag = "jobs", security((), ("bearer" = [])),
    params(
        ("q" = Option<String>, Query, description = "words that must all match"),
        ("location" = Option<String>, Query, description = "case-insensitive substring of any of the job's places (as text)"),
        ("remote" = Option<bool>, Query, description = "workplace == remote (or not)"),
        ("workplace" = Option<Workplace>, Query),
        ("country" = Option<String>, Query, pattern = "^[A-Za-z]{2}$", description = "ISO 3166-1 alpha-2 (any case): keeps jobs with a place in that country"),
        ("company_id" = Option<i64>, Query, minimum = 1),
        ("ids" = Option<String>, Query, description = "comma-separated job ids (at most 100): only these jobs, each found by its key; such a search is never cached"),
        ("salary_min" = Option<i64>, Query, minimum = 0, maximum = 1000000000, description = "keeps jobs whose salary.max is at least this, or that state no pay; with salary_currency, compared over the yearly top of the range"),
        ("salary_currency" = Option<crate::domain::pay_place::Currency>, Query, description = "ISO 4217: keeps jobs paid in this currency (whose yearly top is at least salary_min, when given) and jobs that state no pay"),
        ("employment_type" = Option<EmploymentType>, Query),
        ("posted_within_days" = Option<i64>, Query, minimum = 1, maximum = 365, description = "keeps jobs created in the last this many days"),
        ("facets" = Option<String>, Query, description = "comma-separated: employment_type, remote, workplace, company; each counted over every match"),
        ("sort" = Option<SearchOrder>, Query, description = "newest (default): created_at then id, descending; relevance: jobs whose title holds the most distinct words of q first, then newest"),
        ("page" = Option<i64>, Query, minimum = 1, maximum = 10000, description = "from 1; page × page_size at most 10 000 (a search serves its first 10 000 results; past them: 422 naming page)"),
        ("page_size" = Option<i64>, Query, minimum = 1, maximum = 100, description = "default 20"),
        ("after" = Option<String>, Query, description = "the `next` cursor of the page before, with the same other parameters and no `page`: the next page, at the cost of a first page; 422 naming `after` when the cursor is malformed or belongs to another search")),
    responses((status = 200, body = JobList, headers(("X-Cache" = CacheResult, description = "whether the page came from the search cache"))),
              (status = 422, body = Problem),
              (status = 503, body = Problem, description = "the search index is behind the newest job change for more than a second; retry after Retry-After")))]
pub(super) async fn search_jobs(
    State(st): State<AppState>,
    _user: MaybeUser,
    q: QueryParams,
) -> ApiResult<Response> {
    let mut errors = FieldErrors::default();
    q.refuse_repeated(&mut errors);
    // The filters an alert saves too, validated by the same function.
    let filters = super::filters::search_filters(&q, &mut errors);
    let facets = match q.get("facets") {
        None => Facets::default(),
        Some(v) => parse_facets(v).unwrap_or_else(|| {
            errors.add(
                "facets",
                "must be a comma-separated list of employment_type, remote, company",
            );
            Facets::default()
        }),
    };
    // An empty `ids=` asks for no job, not for every job.
    if q.given_empty("ids") {
        errors.add(
            "ids",
            "must be job ids (positive integers) separated by commas",
        );
    }
    let ids = q
        .get("ids")
        .and_then(|v| parse_ids(v).map_err(|why| errors.add("ids", why)).ok());
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
    let cursor = q.get("after").and_then(|v| {
        if q.get("page").is_some() {
            errors.add(
                "after",
                "a page is asked for by page= or by after=, not both",
            );
            return None;
        }
        Cursor::decode(v)
            .map_err(|why| errors.add("after", why))
            .ok()
    });
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

    // A word too long to be indexed matches nothing (no search), and no stored location holds
    // a NUL (which PostgreSQL could not even compare).
    let search = JobSearch::of_filters(&filters).map(|s| JobSearch {
        ids,
        posted_within,
        sort,
        page,
        facets,
        ..s
    });
    let Some(search) = search.filter(|s| !s.location.as_deref().is_some_and(|l| l.contains('\0')))
    else {
        return Ok(page_response(
            render(&JobList {
                items: vec![],
                page: page.page,
                page_size: page.size,
                total: 0,
                total_exact: true,
                next: None,
                facets: facets
                    .any()
                    .then(|| facets_out(crate::search::FacetCounts::empty(facets))),
            }),
            "MISS",
        ));
    };

    // A cursor belongs to one search: the same parameters but the page.
    let fingerprint = fingerprint(&search);
    let (search, page) = match cursor {
        None => (search, page),
        Some(c) => {
            if c.fingerprint != fingerprint
                || c.after.position % page.size != 0
                || c.after.position.saturating_add(page.size) > SEARCH_WINDOW
            {
                let mut errors = FieldErrors::default();
                errors.add(
                    "after",
                    "this cursor belongs to another search: send the other parameters as they were",
                );
                errors.into_result()?;
            }
            let page = crate::store::Page {
                page: c.after.position / page.size + 1,
                size: page.size,
            };
            (
                JobSearch {
                    after: Some(c.after),
                    page,
                    ..search
                },
                page,
            )
        }
    };

    // A page's key names, besides the search, the last job change the index had applied when
    // it was computed: a change written where no cache version is bumped (the worker's upkeep
    // expiring jobs, dating old ones) makes the pages before it unreachable as soon as the
    // index has applied it (within its round, a second), in every process.
    let search_key = hex::encode(Sha256::digest(
        serde_json::to_vec(&search).unwrap_or_default(),
    ));
    let key = format!("{}:{search_key}", st.search.applied());
    // A lookup by ids is a key read per job, about what a cache's round trip costs, and each
    // client's list is its own: caching it would only fill the cache with single-use pages.
    let version = if search.ids.is_some() {
        None
    } else {
        match st.cache.lookup(&key).await {
            Lookup::Hit(body) => {
                metrics::counter!(SEARCH_CACHE_REQUESTS_TOTAL, "result" => "hit").increment(1);
                return Ok(page_response(body, "HIT"));
            }
            Lookup::Miss { version } => Some(version),
            Lookup::Unavailable => None,
        }
    };
    if search.ids.is_none() {
        metrics::counter!(SEARCH_CACHE_REQUESTS_TOTAL, "result" => "miss").increment(1);
    }
    // The index must have applied every job change that committed before this search began.
    let newest = st.store.newest_job_change().await?;
    if !st.search.wait_for(newest, INDEX_WAIT).await {
        return Err(ApiError::index_behind());
    }
    // Read before the search: the index's reader is reloaded before `applied` moves, so the
    // page reflects at least this change.
    let computed_at = st.search.applied();
    let index = st.search.clone();
    let asked = search.clone();
    let found = tokio::task::spawn_blocking(move || index.search(&asked))
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!("a search panicked: {e}")))??;
    let body = render(&JobList {
        items: found.rows.into_iter().map(Into::into).collect(),
        page: page.page,
        page_size: page.size,
        total: found.total,
        total_exact: found.total_exact,
        next: found
            .next
            .map(|after| Cursor { fingerprint, after }.encode()),
        facets: found.facets.map(facets_out),
    });
    if let Some(version) = version {
        // Not served past the earliest `expires_at` among the matches: from then on the search
        // leaves that job out, and the page, its total and its facets would count it.
        let key = format!("{computed_at}:{search_key}");
        st.cache
            .store(&version, &key, body.clone(), found.valid_until)
            .await;
    }
    Ok(page_response(body, "MISS"))
}

/// After a job write (or a company rename) has committed: the search cache's version moves on,
/// and this process's index is woken to apply the change now instead of at its next round.
pub(super) async fn job_written(st: &AppState) {
    st.cache.bump().await;
    st.search.nudge();
}

/// `ids=`: comma-separated job ids, 1 to [`MAX_SEARCH_IDS`] of them, as a sorted set.
fn parse_ids(value: &str) -> Result<Vec<i64>, String> {
    let mut ids = Vec::new();
    for part in value.split(',') {
        match part.trim().parse::<i64>() {
            Ok(id) if (1..=super::extract::ID_MAX).contains(&id) => ids.push(id),
            _ => return Err("must be job ids (positive integers) separated by commas".into()),
        }
    }
    ids.sort_unstable();
    ids.dedup();
    if ids.len() > MAX_SEARCH_IDS {
        return Err(format!("at most {MAX_SEARCH_IDS} job ids"));
    }
    Ok(ids)
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
