//! The window of new jobs that a period's alert digests are matched against is read from the
//! store a page at a time (keyset by `created_at`, then `id`): no answer of the store holds more
//! than a page of its jobs, every job of the window is read once, and the digests are the
//! contract's whatever the page (ties on `created_at` across pages, closed and expired jobs
//! among them).

use crate::alert_digests::{RefJob, alert_at, digests, expected, job_at, reference, t};
use crate::harness::*;
use chrono::{DateTime, Duration, Utc};
use jobboard::domain::Role;
use jobboard::domain::alert::Frequency;
use jobboard::domain::search::document_terms;
use jobboard::store::{AlertDigest, AlertDigestStore, AlertRow, JobRow, Store, StoreResult};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

crate::each_backend!(with_db:
    the_window_is_read_a_page_at_a_time,
);

/// The store, counting the window's jobs in each of its answers.
struct Counting {
    inner: Arc<dyn Store>,
    /// The most jobs of the window one answer held.
    most: AtomicUsize,
    /// The window's jobs in all answers.
    rows: AtomicUsize,
    answers: AtomicUsize,
}

impl Counting {
    fn saw(&self, rows: &[JobRow]) {
        self.most.fetch_max(rows.len(), Ordering::SeqCst);
        self.rows.fetch_add(rows.len(), Ordering::SeqCst);
        self.answers.fetch_add(1, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl AlertDigestStore for Counting {
    async fn alert_period_written(&self, period: &str) -> StoreResult<bool> {
        self.inner.alert_period_written(period).await
    }
    async fn mark_alert_period(&self, period: &str) -> StoreResult<()> {
        self.inner.mark_alert_period(period).await
    }
    async fn oldest_due_alert(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
    ) -> StoreResult<Option<DateTime<Utc>>> {
        self.inner.oldest_due_alert(frequency, end).await
    }
    async fn due_alerts(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
        after_id: i64,
        upto_id: i64,
        limit: i64,
    ) -> StoreResult<Vec<AlertRow>> {
        self.inner
            .due_alerts(frequency, end, after_id, upto_id, limit)
            .await
    }
    async fn last_alert_id(&self) -> StoreResult<i64> {
        self.inner.last_alert_id().await
    }
    async fn open_jobs_created(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        at: DateTime<Utc>,
        after: (DateTime<Utc>, i64),
        limit: i64,
    ) -> StoreResult<Vec<JobRow>> {
        let rows = self
            .inner
            .open_jobs_created(from, to, at, after, limit)
            .await?;
        self.saw(&rows);
        Ok(rows)
    }
    async fn write_alert_digests(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
        digests: &[AlertDigest],
        now: DateTime<Utc>,
    ) -> StoreResult<u64> {
        self.inner
            .write_alert_digests(frequency, end, digests, now)
            .await
    }
}

async fn the_window_is_read_a_page_at_a_time(db: &TestDb) {
    const PAGE: i64 = 7;
    let store = &db.store;
    let owner = user(store, Role::Employer).await;
    let c = company(store, owner.id, &unique("Acme ")).await;
    const TITLES: [&str; 3] = ["Rust engineer", "Nurse", "Rust nurses"];
    const PLACES: [&str; 2] = ["Wien", "Berlin, Germany"];
    // 60 jobs of 2020-03-04, five to each instant (so pages end inside a tie), every eleventh
    // closed and one past its date when the digests are written.
    let first = t("2020-03-04T08:00:00Z");
    let expired_at = t("2020-03-04T20:00:00Z");
    let mut corpus = Vec::new();
    for i in 0..60usize {
        let j = job_at(
            db,
            c.id,
            TITLES[i % TITLES.len()],
            PLACES[i % PLACES.len()],
            first + Duration::minutes(i as i64 / 5),
        )
        .await;
        let closed = i % 11 == 4;
        if closed {
            run_sql(
                db,
                &format!("UPDATE jobs SET status = 'closed' WHERE id = {}", j.id),
            )
            .await;
        }
        let expired = i == 17;
        if expired {
            run_sql(
                db,
                &format!(
                    "UPDATE jobs SET expires_at = {} WHERE id = {}",
                    at(expired_at),
                    j.id
                ),
            )
            .await;
        }
        corpus.push(RefJob {
            id: j.id,
            terms: document_terms(&[&j.title, &j.description, &c.name])
                .split(' ')
                .map(String::from)
                .collect(),
            location: j.location.clone(),
            open: !closed && !expired,
            created_at: j.created_at,
        });
    }
    let u = user(store, Role::Candidate).await;
    let created = t("2020-03-03T12:00:00Z");
    let searches = [
        (Some("rust"), None),
        (Some("nurse"), None),
        (Some("rust nurses"), Some("wien")),
        (None, Some("BERLIN")),
        (Some("engineers"), Some("berlin")),
        (Some("pilot"), None),
    ];
    let mut alerts = Vec::new();
    for (q, location) in searches {
        alerts.push((
            alert_at(db, &u, q, location, Frequency::Daily, created).await,
            q,
            location,
        ));
    }

    let counting = Counting {
        inner: store.clone(),
        most: AtomicUsize::new(0),
        rows: AtomicUsize::new(0),
        answers: AtomicUsize::new(0),
    };
    let end = t("2020-03-05T00:00:00Z");
    let written =
        jobboard::worker::write_alert_digests_paged(&counting, end + Duration::minutes(3), PAGE)
            .await
            .expect("the digests are written");

    let mut want = BTreeMap::new();
    for (a, q, location) in &alerts {
        if let Some(d) = expected(&reference(&corpus, *q, *location, created, end)) {
            want.insert((a.id, "2020-03-04".to_string()), d);
        }
    }
    assert_eq!(digests(db).await, want);
    assert_eq!(written, want.len() as u64);
    assert!(
        want.values().any(|(_, more)| *more > 0),
        "a digest counts more"
    );
    let open = corpus.iter().filter(|j| j.open).count();
    let most = counting.most.load(Ordering::SeqCst);
    assert!(
        most <= PAGE as usize,
        "one answer of the store held {most} of the window's {open} jobs; pages of {PAGE} were asked"
    );
    assert_eq!(
        counting.rows.load(Ordering::SeqCst),
        open,
        "each job of the window read once"
    );
    assert!(counting.answers.load(Ordering::SeqCst) >= open.div_ceil(PAGE as usize));
}
