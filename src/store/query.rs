//! A job search's request: its filters, facets, order and page.

use chrono::{DateTime, Utc};

/// The filters of a job search, already validated and normalised.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct JobSearch {
    /// Terms every result must contain (see `domain::search`).
    pub terms: Vec<String>,
    /// Lower-cased substring of the location.
    pub location: Option<String>,
    pub remote: Option<bool>,
    /// `onsite`, `hybrid` or `remote`.
    pub workplace: Option<String>,
    /// A place's country (ISO 3166-1 alpha-2, upper-case).
    pub country: Option<String>,
    pub company_id: Option<i64>,
    /// Only these jobs (`ids=`, at most [`MAX_SEARCH_IDS`], ascending and distinct).
    pub ids: Option<Vec<i64>>,
    pub salary_min: Option<i64>,
    /// With it, `salary_min` compares the yearly top of ranges in this currency, and only
    /// jobs paid in it (or stating no pay) are kept.
    pub salary_currency: Option<String>,
    pub employment_type: Option<String>,
    /// Only jobs created at or after this instant (`posted_within_days`).
    pub posted_within: Option<PostedWithin>,
    pub sort: SearchSort,
    pub page: Page,
    /// The facets to count over every match.
    pub facets: Facets,
    /// Only the results after this place in the order (`after=`), from the page before.
    pub after: Option<After>,
    /// `total` is exact up to this many matches (none: [`SEARCH_WINDOW`]); past it `total` is
    /// this many (or the page's last position, if further) and not exact. A search with facets
    /// counts every match.
    #[serde(skip)]
    pub count_limit: Option<u64>,
    /// The instant whose open jobs are searched: a job whose `expires_at` is not after it is
    /// left out. `None`: the moment the search runs. Not part of a cached page's key (a cached
    /// page is never served past its earliest match's `expires_at`).
    #[serde(skip)]
    pub at: Option<DateTime<Utc>>,
}

/// A place in a search's order: the last result of a page, and how many results come up to it
/// (the page's last position). The next page holds the results that come after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct After {
    /// How many of `q`'s words its title holds (relevance; 0 newest first).
    pub score: u32,
    /// Its `created_at`, in µs since the epoch.
    pub created_at: i64,
    pub id: i64,
    pub position: i64,
}

/// Which facets a search counts (`facets=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Facets {
    pub employment_type: bool,
    pub remote: bool,
    pub workplace: bool,
    pub company: bool,
}

impl Facets {
    /// Whether any is asked for.
    pub fn any(&self) -> bool {
        self.employment_type || self.remote || self.workplace || self.company
    }
}

/// `posted_within_days`: the days asked for (what a cached page is keyed by) and the instant
/// they reach back to, taken once when the request arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct PostedWithin {
    pub days: i64,
    #[serde(skip)]
    pub since: DateTime<Utc>,
}

impl PostedWithin {
    /// The jobs posted within the last `days` days before `now`.
    pub fn days_before(days: i64, now: DateTime<Utc>) -> PostedWithin {
        PostedWithin {
            days,
            since: now - chrono::Duration::days(days),
        }
    }
}

/// The order of a search's results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchSort {
    /// `created_at` descending, then `id` descending.
    #[default]
    Newest,
    /// Jobs whose title holds the most distinct query terms first, then newest.
    Relevance,
}

impl SearchSort {
    pub fn parse(s: &str) -> Option<SearchSort> {
        match s {
            "newest" => Some(SearchSort::Newest),
            "relevance" => Some(SearchSort::Relevance),
            _ => None,
        }
    }
}

/// A search serves its first this many results; a page that ends past them is refused.
pub const SEARCH_WINDOW: i64 = 10_000;

/// The most job ids one search may name (`ids=`): a page's worth.
pub const MAX_SEARCH_IDS: usize = 100;

impl JobSearch {
    /// Whether results are ordered by title relevance (asked for, and there are words).
    pub fn by_relevance(&self) -> bool {
        self.sort == SearchSort::Relevance && !self.terms.is_empty()
    }
}

/// A page of a list: `page` from 1, `size` 1–100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Page {
    pub page: i64,
    pub size: i64,
}

impl Default for Page {
    fn default() -> Self {
        Page { page: 1, size: 20 }
    }
}

impl Page {
    pub fn offset(&self) -> i64 {
        (self.page - 1).saturating_mul(self.size)
    }
}
