//! Upkeep: retention of processed events, idempotency keys and sign-in failure counters, and
//! the queue gauges.

use super::Worker;
use crate::telemetry as t;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Records older than the retention are deleted in batches of this many.
const RETENTION_BATCH: i64 = 1000;

impl Worker {
    /// Deletes processed-event records older than the retention, in bounded batches.
    pub async fn delete_expired(&self) -> anyhow::Result<u64> {
        let cutoff = self.store.now_ms().await? - self.retention.as_millis() as i64;
        let mut total = 0;
        loop {
            let n = self
                .store
                .delete_processed_events(cutoff, RETENTION_BATCH)
                .await?;
            total += n;
            if n < RETENTION_BATCH as u64 {
                break;
            }
        }
        metrics::counter!(t::PROCESSED_EVENTS_DELETED_TOTAL).increment(total);
        Ok(total)
    }

    /// Deletes idempotency keys older than 24 h, in bounded batches.
    pub async fn delete_expired_keys(&self) -> anyhow::Result<u64> {
        let cutoff = self.store.now_ms().await? - crate::store::KEY_TTL_MS;
        let mut total = 0;
        loop {
            let n = self
                .store
                .delete_idempotency_keys(cutoff, RETENTION_BATCH)
                .await?;
            total += n;
            if n < RETENTION_BATCH as u64 {
                return Ok(total);
            }
        }
    }

    /// Deletes the sign-in failure counters whose window has ended, in bounded batches.
    pub async fn delete_expired_auth_failures(&self) -> anyhow::Result<u64> {
        let mut total = 0;
        loop {
            let n = self
                .store
                .delete_expired_auth_failures(crate::store::AUTH_FAILURE_WINDOW_MS, RETENTION_BATCH)
                .await?;
            total += n;
            if n < RETENTION_BATCH as u64 {
                return Ok(total);
            }
        }
    }

    /// Everything the hourly upkeep deletes: expired processed-event records, idempotency keys
    /// and sign-in failure counters (the `cleanup` command runs this too).
    pub async fn upkeep(&self) -> anyhow::Result<Upkept> {
        Ok(Upkept {
            events: self.delete_expired().await?,
            keys: self.delete_expired_keys().await?,
            auth_failures: self.delete_expired_auth_failures().await?,
        })
    }

    /// Hourly retention and queue gauges every 15 s, until `shutdown`.
    pub async fn maintain(self: Arc<Self>, shutdown: CancellationToken) {
        let mut hourly = tokio::time::interval(Duration::from_secs(3600));
        let mut gauges = tokio::time::interval(Duration::from_secs(15));
        loop {
            tokio::select! {
                _ = hourly.tick() => match self.upkeep().await {
                    Ok(done) => tracing::info!(deleted = done.events, keys = done.keys,
                        auth_failures = done.auth_failures, "{done}"),
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

/// What one upkeep deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upkept {
    pub events: u64,
    pub keys: u64,
    pub auth_failures: u64,
}

impl std::fmt::Display for Upkept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "deleted {} processed-event records, {} idempotency keys, {} expired sign-in failure counters",
            self.events, self.keys, self.auth_failures
        )
    }
}
