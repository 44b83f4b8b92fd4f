//! Job alerts (docs/api.md): a candidate's saved search, emailed as a digest once per period.
//! The rules here: how often, how many, what a saved search must narrow, and the watermark that
//! keeps a digest from listing a job twice.

use super::search::SearchFilters;
use super::{EmploymentType, UnknownValue, stored};
use chrono::{DateTime, Datelike, DurationRound, TimeDelta, Utc};
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

impl Frequency {
    /// How long one period is: a day, or a week.
    pub fn length(self) -> TimeDelta {
        match self {
            Frequency::Daily => TimeDelta::days(1),
            Frequency::Weekly => TimeDelta::weeks(1),
        }
    }

    /// The last period of this frequency that ended at or before `at`: the UTC day, or the ISO
    /// week (Monday 00:00 UTC to the next Monday), before the one `at` is in.
    pub fn last_ended(self, at: DateTime<Utc>) -> Period {
        let day = at
            .duration_trunc(TimeDelta::days(1))
            .unwrap_or_else(|_| unreachable!("a day divides every time of chrono's range"));
        let end = match self {
            Frequency::Daily => day,
            Frequency::Weekly => {
                day - TimeDelta::days(i64::from(day.weekday().num_days_from_monday()))
            }
        };
        Period::ending(self, end)
    }
}

/// One period of a frequency, `[start, end)`, and its name in an event id (`2026-12-04`, a UTC
/// day; `2026-W49`, an ISO week).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Period {
    pub frequency: Frequency,
    pub label: String,
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
}

impl Period {
    /// The period of `frequency` that ends at `end` (a period's boundary).
    fn ending(frequency: Frequency, end: DateTime<Utc>) -> Period {
        let start = end - frequency.length();
        let label = match frequency {
            Frequency::Daily => start.format("%Y-%m-%d").to_string(),
            Frequency::Weekly => start.format("%G-W%V").to_string(),
        };
        Period {
            frequency,
            label,
            start,
            end,
        }
    }

    /// The period before this one.
    pub fn previous(&self) -> Period {
        Period::ending(self.frequency, self.start)
    }

    /// How far back a digest of this period looks at most: the start of the period before. An
    /// alert that was paused, or an upkeep that was down, longer than that lists the matches of
    /// these two periods, not of every one it missed (which would make the window of jobs
    /// unbounded).
    pub fn lookback_start(&self) -> DateTime<Utc> {
        self.start - self.frequency.length()
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
///   `company_id` (docs/api.md), reported under `""` (the search itself).
/// - `q` and `location` are one-line texts (no NUL, which PostgreSQL cannot store, no control,
///   separator or bidi control) as long as the job field they match at most (title, location).
pub fn check_saved_search(f: &SearchFilters) -> Vec<(&'static str, String)> {
    use super::validate::{JOB_TITLE_MAX as Q, LOCATION_MAX as L, one_line};
    let mut errors = Vec::new();
    for (field, value, max) in [("q", &f.q, Q), ("location", &f.location, L)] {
        if let Some(Err(message)) = value.as_deref().map(|v| one_line(v, 0, max)) {
            errors.push((field, message));
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

/// A saved search in words, for an email's subject and the unsubscribe page: the words
/// quoted, then where, at which company (its name, `company` when known), then the other
/// filters: `"rust engineer" in Berlin at Acme, remote, full-time, salary from 80000`.
/// Control characters become spaces, so it is one line.
pub fn describe(f: &SearchFilters, company: Option<&str>) -> String {
    let mut head = String::new();
    if let Some(q) = &f.q {
        head.push_str(&format!("\"{q}\""));
    }
    let mut add = |joiner: &str, text: String| {
        if !head.is_empty() {
            head.push_str(joiner);
        }
        head.push_str(&text);
    };
    if let Some(location) = &f.location {
        add(" in ", location.clone());
    }
    if let Some(id) = f.company_id {
        add(
            " at ",
            company.map_or_else(|| format!("company {id}"), str::to_string),
        );
    }
    let mut parts = vec![head];
    match f.remote {
        Some(true) => parts.push("remote".into()),
        Some(false) => parts.push("on site".into()),
        None => {}
    }
    if let Some(t) = f.employment_type {
        parts.push(
            match t {
                EmploymentType::FullTime => "full-time",
                EmploymentType::PartTime => "part-time",
                EmploymentType::Contract => "contract",
                EmploymentType::Internship => "internship",
            }
            .into(),
        );
    }
    if let Some(salary) = f.salary_min {
        parts.push(format!("salary from {salary}"));
    }
    parts.extend(f.pay_and_place_words());
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
        .chars()
        .map(|c| {
            if super::validate::breaks_one_line(c) {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// Where an alert's next digest starts: jobs strictly after this point in the order
/// (`created_at`, then `id`) are new to the alert.
///
/// Before the first digest the watermark is the alert's creation. The digest of a period that
/// ends at E considers the matches after the watermark created before E, lists the newest
/// [`DIGEST_JOBS`], newest first, counts the rest, and moves the watermark to E
/// ([`Watermark::period_end`]): every matching job before E was listed or counted, and every
/// job a later digest considers was created at or after E, so no job is ever listed twice by
/// one alert (migration 0021).
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

    /// The watermark after the digest of a period that ended at `end`: every job created
    /// before `end` is behind it (each one that matched was listed or counted by that digest),
    /// every job created at or after `end` is new.
    pub fn period_end(end: DateTime<Utc>) -> Watermark {
        Watermark {
            created_at: end,
            job_id: 0,
        }
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

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn periods_are_utc_days_and_iso_weeks() {
        // Friday 2026-12-04.
        let now = t("2026-12-04T00:00:00.5Z");
        let day = Frequency::Daily.last_ended(now);
        assert_eq!(day.label, "2026-12-03");
        assert_eq!(
            (day.start, day.end),
            (t("2026-12-03T00:00:00Z"), t("2026-12-04T00:00:00Z"))
        );
        assert_eq!(day.previous().label, "2026-12-02");
        assert_eq!(day.lookback_start(), t("2026-12-02T00:00:00Z"));
        // At a day's very start, that day has not ended.
        assert_eq!(
            Frequency::Daily
                .last_ended(t("2026-12-04T00:00:00Z") - TimeDelta::microseconds(1))
                .label,
            "2026-12-02"
        );
        let week = Frequency::Weekly.last_ended(now);
        assert_eq!(week.label, "2026-W48");
        assert_eq!(
            (week.start, week.end),
            (t("2026-11-23T00:00:00Z"), t("2026-11-30T00:00:00Z"))
        );
        // On Monday 00:00 the week before has just ended.
        assert_eq!(
            Frequency::Weekly
                .last_ended(t("2026-12-07T00:00:00Z"))
                .label,
            "2026-W49"
        );
        // ISO years differ from calendar years around the new year.
        let w = Frequency::Weekly.last_ended(t("2027-01-05T12:00:00Z"));
        assert_eq!(
            (w.label.as_str(), w.start),
            ("2026-W53", t("2026-12-28T00:00:00Z"))
        );
        assert_eq!(
            Frequency::Weekly
                .last_ended(t("2026-01-06T00:00:00Z"))
                .label,
            "2026-W01"
        );
        for p in [day, week, w] {
            assert!(crate::domain::event::valid_period(&p.label), "{p:?}");
        }
    }

    #[test]
    fn a_search_in_words() {
        let mut f = filters(Some("rust engineer"), Some("Berlin"), None);
        assert_eq!(describe(&f, None), "\"rust engineer\" in Berlin");
        f.remote = Some(true);
        f.company_id = Some(4);
        f.employment_type = Some(EmploymentType::FullTime);
        f.salary_min = Some(80_000);
        assert_eq!(
            describe(&f, Some("Acme")),
            "\"rust engineer\" in Berlin at Acme, remote, full-time, salary from 80000"
        );
        assert_eq!(describe(&filters(None, Some("Wien"), None), None), "Wien");
        let mut by_company = filters(None, None, Some(9));
        by_company.remote = Some(false);
        assert_eq!(describe(&by_company, None), "company 9, on site");
        assert_eq!(
            describe(&filters(Some("a\r\nBcc: x"), None, None), None),
            "\"a  Bcc: x\""
        );
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
        let end = Watermark::period_end(t);
        assert!(!end.admits(t - chrono::Duration::microseconds(1), i64::MAX));
        assert!(
            end.admits(t, 1),
            "a job at the end belongs to the next period"
        );
    }
}
