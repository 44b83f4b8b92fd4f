//! The upkeep's hourly `applications.digest` events (docs/guarantee.md): after each UTC hour ends,
//! one event per member whose companies' jobs received applications in it, listing them. Any
//! number of workers run this at once, with no leader: each event's id is made from the member
//! and the hour, so a second writing (another run, another worker) is refused by the outbox.
//! An hour is marked written once all its members' events are, so later runs skip it; a run that
//! dies before the mark leaves the hour to the next one, which writes only what is missing.

use super::Worker;
use crate::domain::event::{APPLICATIONS_DIGEST, Event, EventKind};
use crate::telemetry as t;
use anyhow::Context;
use chrono::{DateTime, DurationRound, TimeDelta, Utc};

/// An hour's digests are written this long after it ends: an application stamped just before
/// the hour's end (by the database's clock, read in its transaction) commits a moment later.
pub const DIGEST_GRACE: TimeDelta = TimeDelta::minutes(2);
/// How far back the upkeep looks for hours whose digests are not written yet, after an outage
/// of every worker; the hours before get no digest.
pub const DIGEST_LOOKBACK_HOURS: i64 = 24;
/// Members whose events are written in one transaction.
const MEMBERS_PER_BATCH: i64 = 500;

impl Worker {
    /// Writes the digests of every hour that ended (by `now`, less [`DIGEST_GRACE`]) in the last
    /// [`DIGEST_LOOKBACK_HOURS`] and is not marked written; returns how many events it wrote.
    /// The first run of all (no hour marked yet) starts with the hour that just ended: the
    /// applications before this version are not digested.
    pub async fn write_digests(&self, now: DateTime<Utc>) -> anyhow::Result<u64> {
        let end = (now - DIGEST_GRACE)
            .duration_trunc(TimeDelta::hours(1))
            .context("the hour of now")?;
        let start = end - TimeDelta::hours(DIGEST_LOOKBACK_HOURS);
        let hours: Vec<DateTime<Utc>> = (0..DIGEST_LOOKBACK_HOURS)
            .map(|i| start + TimeDelta::hours(i))
            .collect();
        if !self.store.any_digest_hour_done().await? {
            self.store
                .mark_digest_hours(&hours[..hours.len() - 1])
                .await?;
        }
        let done = self.store.digest_hours_done(start, end).await?;
        let mut written = 0;
        for hour in hours.into_iter().filter(|h| !done.contains(h)) {
            let n = self.write_hour(hour, now).await.with_context(|| {
                format!(
                    "writing the applications digests of the hour from {}",
                    hour.to_rfc3339()
                )
            })?;
            self.store.mark_digest_hours(&[hour]).await?;
            if n > 0 {
                tracing::info!(
                    hour = %hour.to_rfc3339(),
                    "wrote {n} applications digests of the hour from {}",
                    hour.to_rfc3339()
                );
            }
            written += n;
        }
        // The marks before the lookback are never read again.
        self.store.delete_digest_hours(start).await?;
        Ok(written)
    }

    /// The digests of one hour, in batches of members.
    async fn write_hour(&self, hour: DateTime<Utc>, now: DateTime<Utc>) -> anyhow::Result<u64> {
        let mut after = 0;
        let mut written = 0;
        loop {
            let members = self
                .store
                .digest_members(hour, after, MEMBERS_PER_BATCH)
                .await?;
            let Some(last) = members.last() else {
                return Ok(written);
            };
            after = last.user_id;
            let full = members.len() as i64 == MEMBERS_PER_BATCH;
            let events: Vec<Event> = members
                .into_iter()
                .map(|m| {
                    Event::new(
                        EventKind::ApplicationsDigest {
                            user_id: m.user_id,
                            hour,
                            applications: m.applications,
                            further: m.further,
                        },
                        now,
                    )
                })
                .collect();
            let n = self.store.write_events(&events).await?;
            metrics::counter!(t::UPKEEP_EVENTS_WRITTEN_TOTAL, "type" => APPLICATIONS_DIGEST)
                .increment(n);
            written += n;
            if !full {
                return Ok(written);
            }
        }
    }
}
