//! The worker's upkeep: the events it writes (the hourly applications digests, the job alerts'
//! digests), the retention of its records, and the queue gauges. Every worker runs it, in any
//! number at once: each step is safe to run twice or side by side. (The API's data, idempotency keys and sign-in failure
//! counters, is the API's to keep: see `store::upkeep`.)

use super::Worker;
use crate::telemetry as t;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// One step of the upkeep: its `task` label (`upkeep_failures_total`) and how often it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// The hourly `applications.digest` events of the hours that ended.
    Digests,
    /// The job alerts' `alert.digest` events of the days and weeks that ended.
    Alerts,
    /// Processed-event records and event records older than the retention.
    Retention,
    /// The queue gauges (`outbox_pending`, `dead_letters`, `queue_oldest_age_seconds`).
    QueueStats,
    /// With SQS: dead letters in the DLQ without a record (see `SqsQueue::reconcile`).
    DeadLetterRecords,
    /// Jobs' expiries, expiry notices and dates (`upkeep_jobs.rs`), which count and log their
    /// own failures (`task="jobs"`).
    Jobs,
}

/// The steps, each on its own interval: a new step is a row here and an arm in `run_step`.
const STEPS: [(Step, Duration); 6] = [
    (Step::Digests, Duration::from_secs(30)),
    (Step::Alerts, Duration::from_secs(60)),
    (Step::Retention, Duration::from_secs(3600)),
    (Step::QueueStats, Duration::from_secs(15)),
    (Step::DeadLetterRecords, Duration::from_secs(60)),
    (Step::Jobs, super::upkeep_jobs::JOB_UPKEEP_EVERY),
];

impl Step {
    fn task(self) -> &'static str {
        match self {
            Step::Digests => "digests",
            Step::Alerts => "alerts",
            Step::Retention => "retention",
            Step::QueueStats => "queue_stats",
            Step::DeadLetterRecords => "dead_letter_records",
            Step::Jobs => "jobs",
        }
    }

    /// What a failure of this step leaves undone, for the log line that starts a failing run.
    fn failing(self) -> &'static str {
        match self {
            Step::Digests => {
                "cannot write the hourly applications digests; they are written late once it works again"
            }
            Step::Alerts => {
                "cannot write the job alerts' digests; they are written late once it works again"
            }
            Step::Retention => {
                "retention cleanup failed; expired records stay until it works again"
            }
            Step::QueueStats => {
                "cannot read the queue statistics: dead_letters, outbox_pending and queue_oldest_age_seconds keep their last values until it works again"
            }
            Step::DeadLetterRecords => {
                "cannot look for dead letters without a record; a message SQS's redrive policy moved is not listed until it works again"
            }
            Step::Jobs => "the upkeep's job steps failed (expiries, expiry notices)",
        }
    }
}

impl Worker {
    /// Deletes processed-event records older than the retention, the event records no
    /// message needs any more, the webhook deliveries that ended before the retention, and the
    /// applications in a final status for longer than `APPLICATION_RETENTION_DAYS`, in
    /// bounded batches. Returns how many processed-event records went.
    pub async fn delete_expired(&self) -> anyhow::Result<u64> {
        let records =
            crate::store::upkeep::delete_expired_event_records(&*self.store, self.retention)
                .await?;
        let total =
            crate::store::upkeep::delete_expired_events(&*self.store, self.retention).await?;
        let deliveries =
            crate::store::upkeep::delete_finished_deliveries(&*self.store, self.retention).await?;
        metrics::counter!(t::PROCESSED_EVENTS_DELETED_TOTAL).increment(total);
        // Applications last: a queued event of one deleted here ends as `missing`.
        let applications = match self.keep.applications {
            Some(retention) => {
                crate::store::upkeep::delete_retired_applications(&*self.store, retention).await?
            }
            None => 0,
        };
        metrics::counter!(t::APPLICATIONS_DELETED_TOTAL).increment(applications);
        let (resumes, files) = self.delete_unused_files().await?;
        tracing::info!(
            deleted = total,
            event_records = records,
            webhook_deliveries = deliveries,
            applications,
            resumes,
            files,
            "deleted {total} expired processed-event records, {records} event records, \
             {deliveries} finished webhook deliveries, {applications} applications and \
             {resumes} résumés past their retention, and {files} files no row names"
        );
        Ok(total)
    }

    /// Runs every step of [`STEPS`] on its interval until `shutdown`. A failure is counted in
    /// `upkeep_failures_total` (by `task`), which an alert reads; a run of failures is logged
    /// once when it starts and once when it ends.
    pub async fn maintain(self: Arc<Self>, shutdown: CancellationToken) {
        let mut intervals: Vec<tokio::time::Interval> = STEPS
            .iter()
            .map(|(_, every)| tokio::time::interval(*every))
            .collect();
        let mut failing = [false; STEPS.len()];
        loop {
            let ticks = intervals
                .iter_mut()
                .map(|i| Box::pin(async move { i.tick().await }));
            let due = tokio::select! {
                (_, due, _) = futures::future::select_all(ticks) => due,
                _ = shutdown.cancelled() => return,
            };
            let (step, _) = STEPS[due];
            match self.run_step(step).await {
                Ok(()) => {
                    if std::mem::take(&mut failing[due]) {
                        tracing::info!(
                            task = step.task(),
                            "the upkeep's {} step works again",
                            step.task()
                        );
                    }
                }
                Err(e) => {
                    metrics::counter!(t::UPKEEP_FAILURES_TOTAL, "task" => step.task()).increment(1);
                    if !std::mem::replace(&mut failing[due], true) {
                        tracing::warn!(
                            task = step.task(),
                            error = format!("{e:#}"),
                            "{}",
                            step.failing()
                        );
                    }
                }
            }
        }
    }

    /// The database's clock: every worker judges the periods by the same one.
    pub(super) async fn database_now(&self) -> anyhow::Result<chrono::DateTime<chrono::Utc>> {
        let now = self.store.now_ms().await?;
        chrono::DateTime::from_timestamp_millis(now)
            .ok_or_else(|| anyhow::anyhow!("the database clock reads {now} ms"))
    }

    async fn run_step(&self, step: Step) -> anyhow::Result<()> {
        match step {
            Step::Digests => {
                self.write_digests(self.database_now().await?).await?;
            }
            Step::Alerts => {
                self.write_alert_digests(self.database_now().await?).await?;
            }
            Step::Retention => {
                self.delete_expired().await?;
            }
            Step::QueueStats => {
                let (pending, oldest, dead) = self.queue.stats().await?;
                // With SQS the outbox is the relay's to report; here the depth is the queue's.
                if self.queue.kind() == "db" {
                    metrics::gauge!(t::OUTBOX_PENDING).set(pending as f64);
                }
                metrics::gauge!(t::DEAD_LETTERS).set(dead as f64);
                metrics::gauge!(t::QUEUE_OLDEST_AGE_SECONDS)
                    .set(oldest.map(|d| d.as_secs_f64()).unwrap_or(0.0));
            }
            Step::DeadLetterRecords => {
                self.queue.reconcile_dead_letters().await?;
            }
            Step::Jobs => {
                // Counted and logged by the step itself, so a failure is never counted twice.
                self.upkeep_jobs().await;
            }
        }
        Ok(())
    }
}
