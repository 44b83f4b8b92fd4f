//! The upkeep's job steps (docs/api.md Lifecycle, §5): every [`JOB_UPKEEP_EVERY`], open jobs
//! past their `expires_at` are expired (a `job.expired` to each member of the company), members
//! get their `job.expiring` `JOB_EXPIRY_NOTICE_DAYS` ahead, and jobs written before jobs expired
//! get their date (see `store::job_upkeep`). Safe in any number of workers at once.
//!
//! The worker has no search index and no cache handle: its expiries reach every API process
//! through the job-change log it writes in each batch's transaction. Searches never wait for
//! it (a job past its `expires_at` is left out at search time), and a cached page is keyed by
//! the log's position its index has applied, so none from before an expiry is served once the
//! index has applied it.

use super::Worker;
use crate::domain::event::{JOB_EXPIRED, JOB_EXPIRING};
use crate::store::job_upkeep::{JobUpkeepReport, JobUpkeepSettings, run_job_upkeep};
use crate::telemetry as t;
use std::time::Duration;

/// How often the job steps run: a job reads expired at once (the API judges `expires_at` when
/// it reads), and the upkeep writes it, with its events, within this.
pub const JOB_UPKEEP_EVERY: Duration = Duration::from_secs(30);

/// The job steps' settings, from the configuration.
pub struct JobUpkeep {
    settings: JobUpkeepSettings,
    /// Set while runs fail, so a run of failures is logged once when it starts and once when
    /// it ends.
    failing: std::sync::atomic::AtomicBool,
}

impl JobUpkeep {
    pub fn from_config(config: &crate::config::Config) -> JobUpkeep {
        JobUpkeep {
            settings: JobUpkeepSettings::new(
                config.job_posting_days,
                config.job_expiry_notice_days,
            ),
            failing: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

impl Worker {
    /// One run of the job steps, as of now; a failure is counted
    /// (`upkeep_failures_total{task="jobs"}`) and logged, and the next run tries again.
    pub async fn upkeep_jobs(&self) -> Option<JobUpkeepReport> {
        use std::sync::atomic::Ordering;
        let jobs = &self.jobs;
        // Judged on the database's clock, as the digests are: a worker whose clock runs fast
        // must not expire a job (and send `job.expired`) early.
        let run = async {
            let ms = self.store.now_ms().await?;
            let now = chrono::DateTime::from_timestamp_millis(ms)
                .ok_or_else(|| anyhow::anyhow!("the database's clock reads {ms} ms"))?;
            anyhow::Ok(run_job_upkeep(&*self.store, &jobs.settings, now).await?)
        };
        match run.await {
            Ok(report) => {
                if jobs.failing.swap(false, Ordering::SeqCst) {
                    tracing::info!("the upkeep's job steps run again");
                }
                metrics::counter!(t::UPKEEP_EVENTS_WRITTEN_TOTAL, "type" => JOB_EXPIRED)
                    .increment(report.expired_events);
                metrics::counter!(t::UPKEEP_EVENTS_WRITTEN_TOTAL, "type" => JOB_EXPIRING)
                    .increment(report.notice_events);
                if report != JobUpkeepReport::default() {
                    tracing::info!(
                        expired = report.expired,
                        expired_events = report.expired_events,
                        noticed = report.noticed,
                        notice_events = report.notice_events,
                        backfilled = report.backfilled,
                        "upkeep: expired {} jobs, wrote expiry notices for {}, gave {} jobs their expires_at",
                        report.expired,
                        report.noticed,
                        report.backfilled
                    );
                }
                // With QUEUE=db the outbox is the queue: committed is published (with SQS the
                // relay counts what it publishes).
                if self.queue.kind() == "db" {
                    metrics::counter!(t::EVENTS_PUBLISHED_TOTAL)
                        .increment(report.expired_events + report.notice_events);
                }
                Some(report)
            }
            Err(e) => {
                metrics::counter!(t::UPKEEP_FAILURES_TOTAL, "task" => "jobs").increment(1);
                if !jobs.failing.swap(true, Ordering::SeqCst) {
                    tracing::warn!(
                        error = format!("{e:#}"),
                        "the upkeep's job steps failed (expiries, expiry notices); trying again every {} s",
                        JOB_UPKEEP_EVERY.as_secs()
                    );
                }
                None
            }
        }
    }
}
