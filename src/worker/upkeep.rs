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

    /// Hourly retention and queue gauges every 15 s, until `shutdown`.
    pub async fn maintain(self: Arc<Self>, shutdown: CancellationToken) {
        let mut hourly = tokio::time::interval(Duration::from_secs(3600));
        let mut gauges = tokio::time::interval(Duration::from_secs(15));
        loop {
            tokio::select! {
                _ = hourly.tick() => match self.delete_expired().await {
                    Ok(deleted) => tracing::info!(deleted, "deleted {deleted} expired processed-event records"),
                    Err(e) => tracing::warn!(error = format!("{e:#}"), "retention cleanup failed; will try again"),
                },
                _ = gauges.tick() => {
                    if let Ok((pending, oldest, dead)) = self.queue.stats().await {
                        // With SQS the outbox is the relay's to report; here the depth is the queue's.
                        if self.queue.kind() == "db" {
                            metrics::gauge!(t::OUTBOX_PENDING).set(pending as f64);
                        }
                        metrics::gauge!(t::DEAD_LETTERS).set(dead as f64);
                        metrics::gauge!(t::QUEUE_OLDEST_AGE_SECONDS).set(oldest.map(|d| d.as_secs_f64()).unwrap_or(0.0));
                    }
                }
                _ = shutdown.cancelled() => return,
            }
        }
    }
}
