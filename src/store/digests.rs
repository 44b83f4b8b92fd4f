//! What the worker's upkeep needs from the store to write the hourly `applications.digest`
//! events (docs/guarantee.md): which hours are written, who gets a digest for an hour, and the
//! writing itself, each event with its record and its outbox row.

use super::StoreResult;
use crate::domain::event::Event;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// One member's digest of one hour: the applications their companies' jobs received in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestMember {
    pub user_id: i64,
    /// The first [`DIGEST_APPLICATIONS`](crate::domain::event::DIGEST_APPLICATIONS), ascending.
    pub applications: Vec<i64>,
    /// How many more there are.
    pub further: u64,
}

#[async_trait]
pub trait DigestStore: Send + Sync {
    /// The hours (each by its start) in `[from, to)` whose digests are all written.
    async fn digest_hours_done(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<DateTime<Utc>>>;
    /// Whether any hour was ever marked written (none: the upkeep's first run).
    async fn any_digest_hour_done(&self) -> StoreResult<bool>;
    /// Up to `limit` members, by id after `after_user`, with the application digest on, whose
    /// companies' jobs received applications created in the hour from `hour`; each with those
    /// applications.
    async fn digest_members(
        &self,
        hour: DateTime<Utc>,
        after_user: i64,
        limit: i64,
    ) -> StoreResult<Vec<DigestMember>>;
    /// Marks these hours' digests written; an hour marked already stays as it was.
    async fn mark_digest_hours(&self, hours: &[DateTime<Utc>]) -> StoreResult<()>;
    /// Forgets the marks of hours before `before` (the upkeep no longer looks that far back).
    async fn delete_digest_hours(&self, before: DateTime<Utc>) -> StoreResult<u64>;
    /// Writes the upkeep's events in one transaction, each with its record and outbox row;
    /// an event whose id was written before is skipped. Returns how many were written.
    async fn write_events(&self, events: &[Event]) -> StoreResult<u64>;
}
