//! [`DigestStore`]: the hours whose digests are written, the members of an hour, and the
//! writing of the upkeep's events.

use super::{S, sql};
use crate::domain::event::{DIGEST_APPLICATIONS, Event};
use crate::store::{DigestMember, DigestStore, Step, StoreError, StoreResult};
use anyhow::Context;
use chrono::{DateTime, Utc};

/// A failed step, named.
fn step(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |e| StoreError::Other(anyhow::Error::new(e).context(what))
}

#[async_trait::async_trait]
impl DigestStore for S {
    async fn digest_hours_done(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> StoreResult<Vec<DateTime<Utc>>> {
        sqlx::query_scalar(sql::DIGEST_HOURS_DONE)
            .bind(from)
            .bind(to)
            .fetch_all(&self.pool)
            .await
            .map_err(step("reading the hours whose digests are written"))
    }

    async fn any_digest_hour_done(&self) -> StoreResult<bool> {
        let n: i64 = sqlx::query_scalar(sql::DIGEST_HOURS_ANY)
            .fetch_one(&self.pool)
            .await
            .map_err(step("reading whether any hour's digests were written"))?;
        Ok(n > 0)
    }

    async fn digest_members(
        &self,
        hour: DateTime<Utc>,
        after_user: i64,
        limit: i64,
    ) -> StoreResult<Vec<DigestMember>> {
        let rows: Vec<(i64, i64)> = sqlx::query_as(sql::DIGEST_MEMBERS)
            .bind(hour)
            .bind(hour + chrono::Duration::hours(1))
            .bind(after_user)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(step(
                "reading the members and applications of an hour's digests",
            ))?;
        let mut members: Vec<DigestMember> = Vec::new();
        for (user_id, application) in rows {
            match members.last_mut() {
                Some(m) if m.user_id == user_id => {
                    if m.applications.len() < DIGEST_APPLICATIONS {
                        m.applications.push(application)
                    } else {
                        m.further += 1
                    }
                }
                _ => members.push(DigestMember {
                    user_id,
                    applications: vec![application],
                    further: 0,
                }),
            }
        }
        Ok(members)
    }

    async fn mark_digest_hours(&self, hours: &[DateTime<Utc>]) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let now = Self::clock(&mut *tx).await?;
        for hour in hours {
            sqlx::query(sql::DIGEST_HOUR_MARK)
                .bind(hour)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(step("marking an hour's digests written"))?;
        }
        tx.commit()
            .await
            .step("committing the written digest hours")?;
        Ok(())
    }

    async fn delete_digest_hours(&self, before: DateTime<Utc>) -> StoreResult<u64> {
        Ok(sqlx::query(sql::DIGEST_HOURS_DELETE)
            .bind(before)
            .execute(&self.pool)
            .await
            .map_err(step("deleting old marks of written digest hours"))?
            .rows_affected())
    }

    async fn write_events(&self, events: &[Event]) -> StoreResult<u64> {
        let mut tx = self.begin_write().await?;
        let mut written = 0;
        for event in events {
            if Self::write_event(&mut tx, event).await.with_context(|| {
                format!("writing {} event {}", event.type_name(), event.event_id)
            })? {
                written += 1;
            }
        }
        tx.commit().await.step("committing the digest events")?;
        Ok(written)
    }
}
