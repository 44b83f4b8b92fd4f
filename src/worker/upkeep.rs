//! The worker's upkeep: retention of its processed-event records, and the queue gauges. (The
//! API's data, idempotency keys and sign-in failure counters, is the API's to keep: see
//! `store::upkeep`.)

use super::Worker;
use crate::telemetry as t;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

impl Worker {
    /// Deletes processed-event records older than the retention, in bounded batches.
    pub async fn delete_expired(&self) -> anyhow::Result<u64> {
        let total =
            crate::store::upkeep::delete_expired_events(&*self.store, self.retention).await?;
        metrics::counter!(t::PROCESSED_EVENTS_DELETED_TOTAL).increment(total);
        Ok(total)
    }

    /// Hourly retention and queue gauges every 15 s, until `shutdown`. A failure of either is
    /// counted in `upkeep_failures_total` (by `task`), which an alert reads: failed statistics
    /// leave the gauges, and the alerts on them, stale. A run of failures is logged once when
    /// it starts and once when it ends.
    pub async fn maintain(self: Arc<Self>, shutdown: CancellationToken) {
        let mut hourly = tokio::time::interval(Duration::from_secs(3600));
        let mut gauges = tokio::time::interval(Duration::from_secs(15));
        // With SQS: dead letters in the DLQ without a record (see `SqsQueue::reconcile`).
        let mut records = tokio::time::interval(Duration::from_secs(60));
        let mut jobs = tokio::time::interval(super::upkeep_jobs::JOB_UPKEEP_EVERY);
        let mut stats_failing = false;
        let mut records_failing = false;
        loop {
            tokio::select! {
                _ = hourly.tick() => match self.delete_expired().await {
                    Ok(deleted) => tracing::info!(deleted, "deleted {deleted} expired processed-event records"),
                    Err(e) => {
                        metrics::counter!(t::UPKEEP_FAILURES_TOTAL, "task" => "retention").increment(1);
                        tracing::warn!(error = format!("{e:#}"), "retention cleanup failed; will try again in an hour");
                    }
                },
                _ = gauges.tick() => match self.queue.stats().await {
                    Ok((pending, oldest, dead)) => {
                        if stats_failing {
                            stats_failing = false;
                            tracing::info!("queue statistics readable again; gauges current");
                        }
                        // With SQS the outbox is the relay's to report; here the depth is the queue's.
                        if self.queue.kind() == "db" {
                            metrics::gauge!(t::OUTBOX_PENDING).set(pending as f64);
                        }
                        metrics::gauge!(t::DEAD_LETTERS).set(dead as f64);
                        metrics::gauge!(t::QUEUE_OLDEST_AGE_SECONDS).set(oldest.map(|d| d.as_secs_f64()).unwrap_or(0.0));
                    }
                    Err(e) => {
                        metrics::counter!(t::UPKEEP_FAILURES_TOTAL, "task" => "queue_stats").increment(1);
                        if !stats_failing {
                            stats_failing = true;
                            tracing::warn!(error = format!("{e:#}"),
                                "cannot read the queue statistics: dead_letters, outbox_pending and queue_oldest_age_seconds keep their last values until it works again");
                        }
                    }
                },
                _ = records.tick() => match self.queue.reconcile_dead_letters().await {
                    Ok(_) => {
                        if records_failing {
                            records_failing = false;
                            tracing::info!("the dead letters' records are kept in step with the DLQ again");
                        }
                    }
                    Err(e) => {
                        metrics::counter!(t::UPKEEP_FAILURES_TOTAL, "task" => "dead_letter_records").increment(1);
                        if !records_failing {
                            records_failing = true;
                            tracing::warn!(error = format!("{e:#}"),
                                "cannot look for dead letters without a record; a message SQS's redrive policy moved is not listed until it works again");
                        }
                    }
                },
                _ = jobs.tick() => { self.upkeep_jobs().await; },
                _ = shutdown.cancelled() => return,
            }
        }
    }
}
