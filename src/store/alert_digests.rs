//! What the worker's upkeep needs from the store to write the job alerts' `alert.digest` events
//! (docs/api.md and docs/guarantee.md; the design is migration 0021's header): which periods are written,
//! which alerts are due, the window of jobs to match them against, and the writing itself,
//! each alert's watermark moved and its event written in one transaction, once.

use super::{AlertRow, JobRow, StoreResult};
use crate::domain::alert::Frequency;
use crate::domain::event::Event;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// One due alert's outcome of a period: its watermark moves to the period's end, and, if it
/// had new matches, its event is written with the move.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertDigest {
    pub alert_id: i64,
    /// Its `alert.digest` (none when nothing new matched).
    pub event: Option<Event>,
}

#[async_trait]
pub trait AlertDigestStore: Send + Sync {
    /// Whether the digests of the period named `period` (`2026-12-04`, `2026-W49`) are all
    /// written.
    async fn alert_period_written(&self, period: &str) -> StoreResult<bool>;
    /// Marks the period's digests written; a period marked already stays as it was.
    async fn mark_alert_period(&self, period: &str) -> StoreResult<()>;
    /// The oldest watermark among the alerts of `frequency` due for the period that ends at
    /// `end` (not paused, watermark before `end`); `None` when none is due.
    async fn oldest_due_alert(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
    ) -> StoreResult<Option<DateTime<Utc>>>;
    /// Up to `limit` alerts of `frequency` due for the period that ends at `end`, by id after
    /// `after_id` and up to `upto_id` included.
    async fn due_alerts(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
        after_id: i64,
        upto_id: i64,
        limit: i64,
    ) -> StoreResult<Vec<AlertRow>>;
    /// The highest alert id (0 when there is none): where a run's pages end.
    async fn last_alert_id(&self) -> StoreResult<i64>;
    /// A page of the window a period's digests are matched against: up to `limit` of the jobs
    /// open at `at` (status `open`, not past their `expires_at`) created in `[from, to)`, by
    /// (`created_at`, `id`), after `after` (`(from, 0)` for the first page, then the last
    /// row's). A job's `created_at` never changes, so the pages miss none and repeat none.
    async fn open_jobs_created(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        at: DateTime<Utc>,
        after: (DateTime<Utc>, i64),
        limit: i64,
    ) -> StoreResult<Vec<JobRow>>;
    /// In one transaction: moves the watermark of each of `digests`' alerts to `(end, 0)` if it
    /// is still of `frequency`, not paused and before `end`, and, for each alert moved, writes
    /// its event (with its record and outbox row; an id written before is skipped) and sets its
    /// `last_sent_at` to `now`. Returns how many events it wrote. An alert another run moved
    /// first is left alone and writes nothing.
    async fn write_alert_digests(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
        digests: &[AlertDigest],
        now: DateTime<Utc>,
    ) -> StoreResult<u64>;
}
