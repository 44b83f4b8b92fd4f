//! The upkeep's `alert.digest` events (docs/api.md "Digest rule", §5): after each period (a
//! UTC day for daily alerts, an ISO week for weekly ones) ends, one event per alert with new
//! matches, listing the newest [`DIGEST_JOBS`](crate::domain::alert::DIGEST_JOBS) of them and
//! counting the rest. The design, and why no job is listed twice, is migration 0021's header.
//!
//! A run, per frequency: unless the last ended period is marked written, it reads the open jobs
//! created since the oldest watermark among the due alerts (bounded by the period's lookback)
//! once, a page of [`WINDOW_JOBS_PER_PAGE`] at a time into an index in a temporary folder
//! ([`AlertWindow`]: a worker holds one page of them, not the period's, in memory at once),
//! then pages through the due alerts by id in
//! batches: each batch is matched (on a blocking thread) and written in one transaction, where
//! each alert's watermark moves to the period's end only if it is still due, and only the
//! alerts this transaction moved get their events. Any number of workers run it at once: they
//! start their pages at different places, and an alert another has moved is no longer read as
//! due; where two still meet, the move is the fence and the derived event id the second. A run
//! that dies leaves the unmoved alerts due and the period unmarked, for the next run.

use super::{DIGEST_GRACE, Worker};
use crate::domain::alert::{Frequency, Period};
use crate::domain::event::{ALERT_DIGEST, Event, EventKind};
use crate::search::{AlertWindow, WindowBuilder};
use crate::store::AlertDigest;
use crate::store::AlertDigestStore;
use crate::telemetry as t;
use anyhow::Context;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// Alerts matched and written in one transaction.
pub const ALERTS_PER_BATCH: i64 = 500;

/// The window's jobs read from the store at once.
pub const WINDOW_JOBS_PER_PAGE: i64 = 250;

impl Worker {
    /// [`write_alert_digests`] on this worker's store.
    pub async fn write_alert_digests(&self, now: DateTime<Utc>) -> anyhow::Result<u64> {
        write_alert_digests(&*self.store, now).await
    }
}

/// Writes the digests of the last ended period (by `now`, less [`DIGEST_GRACE`]) of each
/// frequency, unless marked written; returns how many events it wrote.
pub async fn write_alert_digests(
    store: &dyn AlertDigestStore,
    now: DateTime<Utc>,
) -> anyhow::Result<u64> {
    write_alert_digests_paged(store, now, WINDOW_JOBS_PER_PAGE).await
}

/// [`write_alert_digests`], reading the window's jobs `jobs_per_page` at a time.
pub async fn write_alert_digests_paged(
    store: &dyn AlertDigestStore,
    now: DateTime<Utc>,
    jobs_per_page: i64,
) -> anyhow::Result<u64> {
    let mut written = 0;
    for frequency in Frequency::ALL {
        let period = frequency.last_ended(now - DIGEST_GRACE);
        if store.alert_period_written(&period.label).await? {
            continue;
        }
        let n = write_period(store, &period, now, jobs_per_page)
            .await
            .with_context(|| {
                format!("writing the {frequency} alert digests of {}", period.label)
            })?;
        store.mark_alert_period(&period.label).await?;
        tracing::info!(
            period = %period.label,
            "wrote {n} {frequency} alert digests of {}",
            period.label
        );
        written += n;
    }
    Ok(written)
}

/// The digests of one period, in batches of alerts.
async fn write_period(
    store: &dyn AlertDigestStore,
    period: &Period,
    now: DateTime<Utc>,
    jobs_per_page: i64,
) -> anyhow::Result<u64> {
    let frequency = period.frequency;
    let Some(oldest) = store.oldest_due_alert(frequency, period.end).await? else {
        return Ok(0);
    };
    let from = oldest.max(period.lookback_start());
    let window = Arc::new(read_window(store, period, from, now, jobs_per_page).await?);
    tracing::info!(
        period = %period.label,
        jobs = window.jobs(),
        "indexed the {} new jobs the {frequency} alert digests of {} are matched against",
        window.jobs(),
        period.label
    );
    // Workers running at once start at different places and wrap around, so that each
    // mostly meets alerts the others have not moved yet.
    let last = store.last_alert_id().await?;
    let start = if last > 0 {
        rand::Rng::gen_range(&mut rand::thread_rng(), 0..last)
    } else {
        0
    };
    let mut written = write_range(store, period, &window, start, last, now).await?;
    written += write_range(store, period, &window, 0, start, now).await?;
    Ok(written)
}

/// The window of the period's new jobs from `from`, read a page at a time into its index, so
/// that one page of them is in memory at once.
async fn read_window(
    store: &dyn AlertDigestStore,
    period: &Period,
    from: DateTime<Utc>,
    now: DateTime<Utc>,
    jobs_per_page: i64,
) -> anyhow::Result<AlertWindow> {
    let per_page = jobs_per_page.max(1);
    let mut builder = blocking(WindowBuilder::new).await?;
    let mut after = (from, 0);
    loop {
        let page = store
            .open_jobs_created(from, period.end, now, after, per_page)
            .await?;
        let full = page.len() as i64 == per_page;
        if let Some(last) = page.last() {
            after = (last.created_at, last.id);
        }
        builder = blocking(move || builder.add(&page).map(|()| builder)).await?;
        if !full {
            break;
        }
    }
    blocking(move || builder.finish()).await
}

/// `f` on a blocking thread (indexing and its files).
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> anyhow::Result<T> + Send + 'static,
) -> anyhow::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .context("indexing the window of jobs")?
}

/// The digests of the due alerts with ids in `(after, upto]`.
async fn write_range(
    store: &dyn AlertDigestStore,
    period: &Period,
    window: &Arc<AlertWindow>,
    mut after: i64,
    upto: i64,
    now: DateTime<Utc>,
) -> anyhow::Result<u64> {
    let frequency = period.frequency;
    let mut written = 0;
    while after < upto {
        let alerts = store
            .due_alerts(frequency, period.end, after, upto, ALERTS_PER_BATCH)
            .await?;
        let Some(last) = alerts.last() else {
            break;
        };
        let full = alerts.len() as i64 == ALERTS_PER_BATCH;
        after = last.id;
        let w = Arc::clone(window);
        let (alerts, found) = tokio::task::spawn_blocking(move || {
            let found = w.matches(&alerts);
            (alerts, found)
        })
        .await
        .context("matching a batch of alerts")?;
        let mut digests = Vec::with_capacity(alerts.len());
        let mut unreadable = Vec::new();
        for (alert, found) in alerts.iter().zip(found) {
            match found {
                Ok(m) => digests.push(AlertDigest {
                    alert_id: alert.id,
                    event: (!m.jobs.is_empty()).then(|| {
                        Event::new(
                            EventKind::AlertDigest {
                                alert_id: alert.id,
                                period: period.label.clone(),
                                jobs: m.jobs,
                                more: m.further,
                            },
                            now,
                        )
                    }),
                }),
                // Stays due, its watermark where it was: a later release may read it.
                Err(e) => unreadable.push((alert.id, format!("{e:#}"))),
            }
        }
        if let Some((id, error)) = unreadable.first() {
            tracing::warn!(
                period = %period.label,
                alerts = unreadable.len(),
                error = %error,
                "{} alerts cannot be matched by this release and get no digest for {} \
                 (the first, alert {id}: {error})",
                unreadable.len(),
                period.label
            );
        }
        let n = store
            .write_alert_digests(frequency, period.end, &digests, now)
            .await?;
        metrics::counter!(t::UPKEEP_EVENTS_WRITTEN_TOTAL, "type" => ALERT_DIGEST).increment(n);
        written += n;
        if !full {
            break;
        }
    }
    Ok(written)
}
