//! Job alerts (CONTRACT.md §4): a candidate's saved search, emailed as a digest once per period.
//! The rules here: how often, how many, what a saved search must narrow, and the watermark that
//! keeps a digest from listing a job twice.

use super::search::SearchFilters;
use super::{UnknownValue, stored};
use chrono::{DateTime, Utc};
use std::fmt;

/// The most alerts one user may have.
pub const MAX_ALERTS_PER_USER: i64 = 20;

/// The most jobs one digest lists; the further matches are counted.
pub const DIGEST_JOBS: usize = 20;

/// How often an alert's digest is written: after each UTC day, or after each ISO week.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Frequency {
    Daily,
    Weekly,
}

impl Frequency {
    pub const ALL: [Frequency; 2] = [Frequency::Daily, Frequency::Weekly];

    pub fn as_str(self) -> &'static str {
        match self {
            Frequency::Daily => "daily",
            Frequency::Weekly => "weekly",
        }
    }

    pub fn parse(s: &str) -> Option<Frequency> {
        Self::ALL.into_iter().find(|f| f.as_str() == s)
    }
}

impl fmt::Display for Frequency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl TryFrom<String> for Frequency {
    type Error = UnknownValue;
    fn try_from(value: String) -> Result<Self, UnknownValue> {
        stored("alert frequency", value, Frequency::parse)
    }
}

/// What a saved search needs beyond the rules of `GET /api/jobs` (which it is validated by
/// first): the field errors, `(field, message)`, with the field as the search names it.
///
/// - It narrows the jobs: at least one of `q` (with at least one word), `location`,
///   `company_id` (CONTRACT.md §4), reported under `""` (the search itself).
/// - Its text can be stored: no NUL character (PostgreSQL's text cannot hold one), which a
///   search by query string merely finds nothing for.
pub fn check_saved_search(f: &SearchFilters) -> Vec<(&'static str, String)> {
    let mut errors = Vec::new();
    for (field, value) in [("q", &f.q), ("location", &f.location)] {
        if value.as_deref().is_some_and(|v| v.contains('\0')) {
            errors.push((field, "must not contain NUL characters".to_string()));
        }
    }
    let has_word =
        f.q.as_deref()
            .is_some_and(|q| super::search::words(q).next().is_some());
    if !has_word && f.location.is_none() && f.company_id.is_none() {
        errors.push((
            "",
            "needs at least one of q (with a word), location or company_id".to_string(),
        ));
    }
    errors
}

/// Where an alert's next digest starts: jobs strictly after this point in the order
/// (`created_at`, then `id`) are new to the alert.
///
/// A digest lists the newest [`DIGEST_JOBS`] matches after the watermark, newest first, counts
/// the rest, and moves the watermark to the first job it listed (the newest). Every job it
/// counted but did not list is older than that job, so no later digest lists it; every job a
/// later digest lists is newer, so it is not one this digest listed: no job is ever listed twice
/// by one alert. Before the first digest the watermark is the alert's creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Watermark {
    pub created_at: DateTime<Utc>,
    /// The listed job's id; `i64::MAX` for the alert's creation, so that only jobs created
    /// strictly after it are new.
    pub job_id: i64,
}

impl Watermark {
    /// The watermark of an alert created at `created_at` that has listed nothing yet.
    pub fn creation(created_at: DateTime<Utc>) -> Watermark {
        Watermark {
            created_at,
            job_id: i64::MAX,
        }
    }

    /// The watermark after listing the job (`created_at`, `job_id`).
    pub fn listed(created_at: DateTime<Utc>, job_id: i64) -> Watermark {
        Watermark { created_at, job_id }
    }

    /// Whether the job (`created_at`, `id`) is new to the alert.
    pub fn admits(&self, created_at: DateTime<Utc>, id: i64) -> bool {
        (created_at, id) > (self.created_at, self.job_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn filters(q: Option<&str>, location: Option<&str>, company: Option<i64>) -> SearchFilters {
        SearchFilters {
            q: q.map(String::from),
            location: location.map(String::from),
            company_id: company,
            ..SearchFilters::default()
        }
    }

    #[test]
    fn a_saved_search_narrows_the_jobs() {
        assert!(check_saved_search(&filters(Some("rust"), None, None)).is_empty());
        assert!(check_saved_search(&filters(None, Some("Berlin"), None)).is_empty());
        assert!(check_saved_search(&filters(None, None, Some(3))).is_empty());
        for f in [
            SearchFilters::default(),
            // A q without a word would match every job, as no q does.
            filters(Some("*** !!"), None, None),
            SearchFilters {
                remote: Some(true),
                salary_min: Some(1),
                ..SearchFilters::default()
            },
        ] {
            let errors = check_saved_search(&f);
            assert_eq!(errors.len(), 1, "{f:?}");
            assert_eq!(errors[0].0, "");
        }
    }

    #[test]
    fn stored_text_has_no_nul() {
        let errors = check_saved_search(&filters(Some("a\0b"), Some("x\0"), None));
        let fields: Vec<&str> = errors.iter().map(|(f, _)| *f).collect();
        assert_eq!(fields, ["q", "location"]);
    }

    #[test]
    fn frequencies_read_strictly() {
        assert_eq!(Frequency::parse("daily"), Some(Frequency::Daily));
        assert_eq!(Frequency::parse("Weekly"), None);
        assert!(Frequency::try_from("hourly".to_string()).is_err());
    }

    #[test]
    fn the_watermark_orders_by_time_then_id() {
        let t = Utc.with_ymd_and_hms(2026, 12, 1, 9, 0, 0).unwrap();
        let later = t + chrono::Duration::microseconds(1);
        let w = Watermark::listed(t, 10);
        assert!(!w.admits(t, 10), "the listed job itself is not new");
        assert!(!w.admits(t, 9));
        assert!(w.admits(t, 11), "a tie on the time is broken by id");
        assert!(w.admits(later, 1));
        let created = Watermark::creation(t);
        assert!(
            !created.admits(t, 1_000_000),
            "created with the alert: not after it"
        );
        assert!(created.admits(later, 1));
    }
}
