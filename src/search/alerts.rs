//! The alert matcher: which of a window of new jobs each alert's digest lists, by exactly the
//! rules of `GET /api/jobs`. The window's open jobs go into an index of their own, on disk
//! ([`super::alert_window`]), with the search index's own schema, tokenizer and documents less
//! the stored job ([`super::schema`]), and each alert runs as the
//! query a search with its filters runs ([`super::query::build`]), restricted to the jobs after
//! its [`Watermark`]. For each alert: the newest [`DIGEST_JOBS`] matches, newest first
//! (`created_at`, then `id`, descending, as `sort=newest`), and the count of the others.
//!
//! The upkeep hands it the jobs opened since the oldest watermark among the alerts it is
//! about to digest (up to two weeks of new jobs, not the whole table), a page at a time
//! ([`WindowBuilder`]), once per window, and asks it per batch of alerts with
//! [`AlertWindow::matches`] ([`match_alerts`] does both on jobs in memory).

use super::alert_window::{Folder, WindowBuilder};
use super::query;
use super::schema::{self, micros};
use crate::domain::alert::{DIGEST_JOBS, Watermark};
use crate::store::{AlertRow, JobRow, JobSearch};
use anyhow::Context;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::{DocId, IndexReader, Score, Searcher, SegmentOrdinal, SegmentReader};

/// What one alert's digest would list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertMatches {
    pub alert_id: i64,
    /// The newest matches after the alert's watermark, newest first, at most [`DIGEST_JOBS`].
    pub jobs: Vec<i64>,
    /// The other matches after the watermark, counted and not listed.
    pub further: u64,
}

impl WindowBuilder {
    /// The window, ready to be matched.
    pub fn finish(self) -> anyhow::Result<AlertWindow> {
        let (fields, reader, folder) = self.into_parts()?;
        AlertWindow::from_parts(fields, reader, folder)
    }
}

/// The jobs of a window, indexed (in a temporary folder of its own, removed with it), ready to
/// be matched by any number of alerts.
pub struct AlertWindow {
    fields: schema::Fields,
    searcher: Searcher,
    /// The window's distinct locations, read once for every alert with a `location`.
    locations: Vec<String>,
    _folder: Folder,
}

impl AlertWindow {
    /// Indexes the open jobs of `jobs` (others are ignored, as the search index holds only
    /// open jobs); a window too large to hold in memory at once is built a page at a time
    /// with [`WindowBuilder`].
    pub fn new(jobs: &[JobRow]) -> anyhow::Result<AlertWindow> {
        let mut builder = WindowBuilder::new()?;
        builder.add(jobs)?;
        builder.finish()
    }

    fn from_parts(
        fields: schema::Fields,
        reader: IndexReader,
        folder: Folder,
    ) -> anyhow::Result<AlertWindow> {
        let searcher = reader.searcher();
        let locations = query::distinct_locations(&searcher, &fields)
            .context("reading the alert window's locations")?;
        Ok(AlertWindow {
            fields,
            searcher,
            locations,
            _folder: folder,
        })
    }

    /// How many open jobs the window holds.
    pub fn jobs(&self) -> u64 {
        self.searcher.num_docs()
    }

    /// What each alert's digest would list, in the order of `alerts`, each on its own: an
    /// alert whose stored values this release does not know (a newer release's, after a
    /// rollback) fails alone, and the others are answered. An alert whose search can match
    /// nothing (a word too long to be indexed) gets no jobs.
    pub fn matches(&self, alerts: &[AlertRow]) -> Vec<anyhow::Result<AlertMatches>> {
        alerts.iter().map(|a| self.match_one(a)).collect()
    }

    fn match_one(&self, alert: &AlertRow) -> anyhow::Result<AlertMatches> {
        let filters = alert
            .filters()
            .with_context(|| format!("reading alert {}", alert.id))?;
        let none = AlertMatches {
            alert_id: alert.id,
            jobs: Vec::new(),
            further: 0,
        };
        let Some(search) = JobSearch::of_filters(&filters) else {
            return Ok(none);
        };
        let query = query::build(&self.searcher, &self.fields, &search, Some(&self.locations))
            .with_context(|| format!("building alert {}'s query", alert.id))?;
        let (total, newest) = self
            .searcher
            .search(
                &*query,
                &Newest {
                    after: alert.watermark(),
                },
            )
            .with_context(|| format!("matching alert {}", alert.id))?;
        Ok(AlertMatches {
            jobs: newest.iter().map(|(_, id)| *id as i64).collect(),
            further: total - newest.len() as u64,
            ..none
        })
    }
}

/// What each alert's digest would list from the open jobs of `window_jobs` (see the module's
/// page), in the order of `alerts`, each alert's answer on its own
/// ([`AlertWindow::matches`]); fails as a whole only if the window cannot be indexed.
pub fn match_alerts(
    window_jobs: &[JobRow],
    alerts: &[AlertRow],
) -> anyhow::Result<Vec<anyhow::Result<AlertMatches>>> {
    Ok(AlertWindow::new(window_jobs)?.matches(alerts))
}

/// Counts the matches after a watermark and keeps the newest [`DIGEST_JOBS`] of them as
/// (`created_at` in µs, `id`), newest first.
struct Newest {
    after: Watermark,
}

struct NewestSegment {
    /// The watermark in the index's units.
    after: (i64, u64),
    ids: Column<u64>,
    created: Column<i64>,
    total: u64,
    heap: BinaryHeap<Reverse<(i64, u64)>>,
}

impl Collector for Newest {
    type Fruit = (u64, Vec<(i64, u64)>);
    type Child = NewestSegment;

    fn for_segment(
        &self,
        _: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<Self::Child> {
        let fast = reader.fast_fields();
        Ok(NewestSegment {
            // Ids are positive; a negative watermark id (none is stored) admits every id.
            after: (
                micros(&self.after.created_at),
                u64::try_from(self.after.job_id).unwrap_or(0),
            ),
            ids: fast.u64("id")?,
            created: fast.i64("created_at")?,
            total: 0,
            heap: BinaryHeap::with_capacity(DIGEST_JOBS + 1),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<(u64, Vec<(i64, u64)>)>) -> tantivy::Result<Self::Fruit> {
        let mut total = 0;
        let mut newest = Vec::new();
        for (n, part) in fruits {
            total += n;
            newest.extend(part);
        }
        newest.sort_unstable_by(|a, b| b.cmp(a));
        newest.truncate(DIGEST_JOBS);
        Ok((total, newest))
    }
}

impl SegmentCollector for NewestSegment {
    type Fruit = (u64, Vec<(i64, u64)>);

    fn collect(&mut self, doc: DocId, _: Score) {
        let key = (
            self.created.first(doc).unwrap_or(i64::MIN),
            self.ids.first(doc).unwrap_or(0),
        );
        if key <= self.after {
            return;
        }
        self.total += 1;
        if self.heap.len() < DIGEST_JOBS {
            self.heap.push(Reverse(key));
        } else if let Some(Reverse(oldest)) = self.heap.peek()
            && key > *oldest
        {
            self.heap.pop();
            self.heap.push(Reverse(key));
        }
    }

    fn harvest(self) -> Self::Fruit {
        let mut newest: Vec<(i64, u64)> = self.heap.into_iter().map(|Reverse(k)| k).collect();
        newest.sort_unstable_by(|a, b| b.cmp(a));
        (self.total, newest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::alert::Frequency;
    use crate::domain::{EmploymentType, JobStatus};
    use chrono::{DateTime, Duration, TimeZone, Utc};

    fn at(minutes: i64) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 0, 0, 0).unwrap() + Duration::minutes(minutes)
    }

    fn job(id: i64, title: &str, location: &str, minutes: i64) -> JobRow {
        JobRow {
            id,
            company_id: 1,
            company_name: "Acme".into(),
            title: title.into(),
            description: "We build things".into(),
            location: location.into(),
            remote: false,
            salary_min: None,
            salary_max: Some(90_000),
            workplace: None,
            locations: None,
            salary_currency: None,
            salary_period: None,
            employment_type: EmploymentType::FullTime,
            status: JobStatus::Open,
            expires_at: None,
            rejection_reason: None,
            resume_required: false,
            questions: None,
            created_at: at(minutes),
            updated_at: at(minutes),
        }
    }

    fn alert(id: i64, q: Option<&str>, location: Option<&str>, created: i64) -> AlertRow {
        AlertRow {
            id,
            user_id: 1,
            q: q.map(String::from),
            location: location.map(String::from),
            remote: None,
            company_id: None,
            salary_min: None,
            employment_type: None,
            workplace: None,
            country: None,
            salary_currency: None,
            frequency: Frequency::Daily,
            paused: false,
            created_at: at(created),
            last_sent_at: None,
            watermark_created_at: None,
            watermark_job_id: None,
        }
    }

    #[test]
    fn newest_first_after_the_watermark_with_the_rest_counted() {
        // 30 rust jobs, one a minute; job 31 closed; job 32 another word.
        let mut jobs: Vec<JobRow> = (1..=30)
            .map(|i| job(i, "Rust Engineers", "Berlin, Germany", i))
            .collect();
        let mut closed = job(31, "Rust engineer", "Berlin", 31);
        closed.status = JobStatus::Closed;
        jobs.push(closed);
        jobs.push(job(32, "Welder", "Berlin", 32));
        let window = AlertWindow::new(&jobs).unwrap();
        assert_eq!(window.jobs(), 31);

        let listed = alert(1, Some("engineer"), Some("BERLIN"), 0);
        let mut after = alert(2, Some("rust"), None, 0);
        after.watermark_created_at = Some(at(25));
        after.watermark_job_id = Some(25);
        let created_late = alert(3, Some("rusts"), None, 28);
        let too_long = alert(4, Some(&"x".repeat(200)), None, 0);
        let found: Vec<AlertMatches> = window
            .matches(&[listed, after, created_late, too_long])
            .into_iter()
            .collect::<anyhow::Result<_>>()
            .unwrap();
        assert_eq!(found[0].jobs, (11..=30).rev().collect::<Vec<i64>>());
        assert_eq!(found[0].further, 10);
        assert_eq!(
            (found[1].jobs.clone(), found[1].further),
            (vec![30, 29, 28, 27, 26], 0)
        );
        assert_eq!((found[2].jobs.clone(), found[2].further), (vec![30, 29], 0));
        assert_eq!((found[3].jobs.clone(), found[3].further), (vec![], 0));
        assert_eq!(
            found.iter().map(|m| m.alert_id).collect::<Vec<_>>(),
            [1, 2, 3, 4]
        );
    }

    #[test]
    fn a_tie_on_the_time_is_broken_by_id() {
        let jobs = vec![
            job(5, "Nurse", "Wien", 10),
            job(6, "Nurse", "Wien", 10),
            job(7, "Nurse", "Wien", 10),
        ];
        let mut a = alert(1, Some("nurses"), None, 0);
        a.watermark_created_at = Some(at(10));
        a.watermark_job_id = Some(6);
        let found = match_alerts(&jobs, &[a]).unwrap();
        let found = found[0].as_ref().unwrap();
        assert_eq!((found.jobs.clone(), found.further), (vec![7], 0));
    }

    #[test]
    fn an_alert_this_release_cannot_read_fails_alone() {
        let jobs = vec![job(1, "Nurse", "Wien", 10)];
        let mut unknown = alert(1, Some("nurse"), None, 0);
        unknown.employment_type = Some("apprenticeship".into());
        let found = match_alerts(&jobs, &[unknown, alert(2, Some("nurse"), None, 0)]).unwrap();
        let error = found[0].as_ref().expect_err("an unknown employment type");
        assert!(format!("{error:#}").contains("apprenticeship"), "{error:#}");
        assert_eq!(found[1].as_ref().unwrap().jobs, [1]);
    }
}
