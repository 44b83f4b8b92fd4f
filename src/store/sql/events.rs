//! [`EventStore`]: claims of events, dead events, the outbox relay (the database queue is
//! `db_queue.rs`).

use super::{D, Db, S, Tx, sql};
use crate::domain::event::Event;
use crate::domain::mail::{Loaded, NOT_SENT, SendError};
use crate::store::dialect::{Dialect, placeholders};
use crate::store::events::*;
use crate::store::{Step, StoreError, StoreResult};

impl S {
    /// Writes `event` to the outbox inside `tx`, the transaction of what it reports, with its
    /// record in `events` (a status change's record is its history row, which the caller
    /// writes). `false`, and nothing written, when an event with that id was written before:
    /// the upkeep's derived ids make a second writing of one event a no-op.
    pub(super) async fn write_event(
        tx: &mut Tx,
        event: &crate::domain::event::Event,
    ) -> StoreResult<bool> {
        let body = event.to_json();
        if !matches!(
            event.kind,
            crate::domain::event::EventKind::StatusChanged { .. }
        ) {
            let recorded = sqlx::query(sql::EVENT_RECORD_INSERT)
                .bind(&event.event_id)
                .bind(event.type_name())
                .bind(&body)
                .bind(event.occurred_at)
                .execute(&mut **tx)
                .await
                .with_step(|| format!("recording event {}", event.event_id))?;
            if recorded.rows_affected() == 0 {
                return Ok(false);
            }
        }
        sqlx::query(sql::OUTBOX_INSERT)
            .bind(&event.event_id)
            .bind(event.kind.application_id())
            .bind(&body)
            .bind(event.occurred_at)
            .execute(&mut **tx)
            .await
            .with_step(|| format!("writing event {} to the outbox", event.event_id))?;
        Self::fan_out(tx, event).await?;
        Ok(true)
    }

    pub(super) async fn dead_letter_in(tx: &mut Tx, d: &NewDeadLetter) -> StoreResult<()> {
        let reason = stored_text(&d.reason);
        sqlx::query(sql::DEAD_LETTER_INSERT)
            .bind(&d.event_id)
            .bind(reason.as_ref())
            .bind(d.attempts)
            .bind(&d.body)
            .bind(d.first_failed_at)
            .bind(d.invalid)
            .execute(&mut **tx)
            .await
            .step("inserting the dead letter")?;
        Ok(())
    }

    /// Counts a failed send, creating the record if the claim was rolled back.
    async fn record_failure<'c, E>(
        e: E,
        event_id: &str,
        lease_id: Option<&str>,
        error: &str,
        max_attempts: i64,
        permanent: bool,
        kept: bool,
    ) -> StoreResult<Option<FailedClaim>>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        let statement = match (lease_id, kept) {
            (Some(_), false) => sql::CLAIM_FAIL_LEASED,
            (None, false) => sql::CLAIM_FAIL_UNLEASED,
            (Some(_), true) => sql::CLAIM_KEEP_LEASED,
            (None, true) => sql::CLAIM_KEEP_UNLEASED,
        };
        let error = stored_text(error);
        let query = sqlx::query_as::<_, (i64, String, i64)>(statement)
            .bind(event_id)
            .bind(error.as_ref())
            .bind(permanent)
            .bind(max_attempts);
        let query = match lease_id {
            Some(lease) => query.bind(lease),
            None => query,
        };
        let row = query
            .fetch_optional(e)
            .await
            .with_step(|| format!("counting the failed send of event {event_id}"))?;
        Ok(row.map(|(attempts, status, first)| FailedClaim {
            attempts,
            dead: status == "dead",
            first_failed_at: first,
        }))
    }
}

#[async_trait::async_trait]
impl EventStore for S {
    async fn claim_event(&self, event_id: &str, lease_ms: i64) -> StoreResult<Claim> {
        let lease_id = uuid::Uuid::new_v4().to_string();
        let mut tx = self.begin_write().await?;
        // The UNIQUE event_id decides between racing workers.
        let inserted = sqlx::query(sql::CLAIM_INSERT)
            .bind(event_id)
            .bind(&lease_id)
            .bind(lease_ms)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("claiming event {event_id}"))?;
        if inserted.rows_affected() == 1 {
            tx.commit()
                .await
                .with_step(|| format!("committing the claim of event {event_id}"))?;
            return Ok(Claim::Claimed {
                lease_id,
                reclaimed: false,
                attempts: 0,
            });
        }
        let (status, locked_until, attempts, now): (String, Option<i64>, i64, i64) =
            sqlx::query_as(sql::CLAIM_READ_LOCKED)
                .bind(event_id)
                .fetch_one(&mut *tx)
                .await
                .with_step(|| format!("reading the claim of event {event_id}"))?;
        let claim = match status.as_str() {
            "in_progress" if locked_until.unwrap_or(0) > now => {
                return Ok(Claim::Deferred {
                    remaining_ms: locked_until.unwrap_or(now) - now,
                });
            }
            "in_progress" | "pending" => Claim::Claimed {
                lease_id: lease_id.clone(),
                reclaimed: status == "in_progress",
                attempts,
            },
            "dead" => return Ok(Claim::Dead),
            _ => return Ok(Claim::Duplicate),
        };
        sqlx::query(sql::CLAIM_TAKE)
            .bind(event_id)
            .bind(&lease_id)
            .bind(lease_ms)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("taking over the claim of event {event_id}"))?;
        tx.commit()
            .await
            .with_step(|| format!("committing the claim of event {event_id}"))?;
        Ok(claim)
    }

    // Its text is pinned by the protocol model (`tests/model/statements.rs`), which hashes it for
    // review: its one statement's error goes up without a step of its own until that review.
    async fn claim_new_events(
        &self,
        event_ids: &[String],
        lease_ms: i64,
    ) -> StoreResult<(String, Vec<String>)> {
        let lease_id = uuid::Uuid::new_v4().to_string();
        if event_ids.is_empty() {
            return Ok((lease_id, Vec::new()));
        }
        let now = <D as Dialect>::NOW_MS;
        let values = (0..event_ids.len())
            .map(|i| format!("(${}, 'in_progress', $1, {now} + $2, 0, {now})", i + 3))
            .collect::<Vec<_>>()
            .join(", ");
        // The UNIQUE event_id decides between racing workers, as for one claim.
        let statement = format!(
            "INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, \
             updated_at) VALUES {values} ON CONFLICT (event_id) DO NOTHING RETURNING event_id"
        );
        let mut query = sqlx::query_scalar::<_, String>(&statement)
            .bind(&lease_id)
            .bind(lease_ms);
        for id in event_ids {
            query = query.bind(id);
        }
        let claimed = query.fetch_all(&self.pool).await?;
        Ok((lease_id, claimed))
    }

    // Pinned by the protocol model like `claim_new_events`: no step of its own until reviewed.
    async fn finish_claims(
        &self,
        event_ids: &[String],
        lease_id: &str,
        finished: Finished,
    ) -> StoreResult<Vec<String>> {
        if event_ids.is_empty() {
            return Ok(Vec::new());
        }
        let statement = format!(
            "UPDATE processed_events SET status = $2, lease_id = NULL, locked_until = NULL, \
             updated_at = {} WHERE lease_id = $1 AND status = 'in_progress' AND event_id IN ({}) \
             RETURNING event_id",
            <D as Dialect>::NOW_MS,
            placeholders(3, event_ids.len())
        );
        let mut query = sqlx::query_scalar::<_, String>(&statement)
            .bind(lease_id)
            .bind(finished.as_str());
        for id in event_ids {
            query = query.bind(id);
        }
        Ok(query.fetch_all(&self.pool).await?)
    }

    async fn email_data_many(&self, events: &[Event]) -> StoreResult<Vec<(String, Loaded)>> {
        self.load_email_data_many(events).await
    }

    async fn extend_claim(
        &self,
        event_id: &str,
        lease_id: &str,
        lease_ms: i64,
    ) -> StoreResult<bool> {
        let done = sqlx::query(sql::CLAIM_EXTEND)
            .bind(event_id)
            .bind(lease_id)
            .bind(lease_ms)
            .execute(&self.pool)
            .await
            .with_step(|| format!("extending the lease of event {event_id}"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn finish_claim(
        &self,
        event_id: &str,
        lease_id: &str,
        finished: Finished,
    ) -> StoreResult<bool> {
        let done = sqlx::query(sql::CLAIM_FINISH)
            .bind(event_id)
            .bind(lease_id)
            .bind(finished.as_str())
            .execute(&self.pool)
            .await
            .with_step(|| format!("finishing the claim of event {event_id}"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn fail_claim(
        &self,
        event_id: &str,
        lease_id: &str,
        error: &str,
        max_attempts: i64,
        permanent: bool,
    ) -> StoreResult<Option<FailedClaim>> {
        Self::record_failure(
            &self.pool,
            event_id,
            Some(lease_id),
            error,
            max_attempts,
            permanent,
            false,
        )
        .await
    }

    async fn keep_failed_claim(
        &self,
        event_id: &str,
        lease_id: &str,
        error: &str,
        max_attempts: i64,
    ) -> StoreResult<Option<FailedClaim>> {
        Self::record_failure(
            &self.pool,
            event_id,
            Some(lease_id),
            error,
            max_attempts,
            false,
            true,
        )
        .await
    }

    async fn record_panic(
        &self,
        event_id: &str,
        lease_id: Option<&str>,
        reason: &str,
        limit: i64,
    ) -> StoreResult<Option<PanickedClaim>> {
        let reason = stored_text(reason);
        let row: Option<(i64, i64, String, i64)> = sqlx::query_as(sql::CLAIM_PANICKED)
            .bind(event_id)
            .bind(reason.as_ref())
            .bind(limit)
            .bind(lease_id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("counting the panic while handling event {event_id}"))?;
        Ok(row.map(|(panics, attempts, status, first)| PanickedClaim {
            panics,
            attempts,
            dead: status == "dead",
            first_failed_at: first,
        }))
    }

    async fn release_claim(
        &self,
        event_id: &str,
        lease_id: Option<&str>,
        error: &str,
    ) -> StoreResult<bool> {
        let error = stored_text(error);
        let done = sqlx::query(sql::CLAIM_RELEASE)
            .bind(event_id)
            .bind(error.as_ref())
            .bind(lease_id)
            .execute(&self.pool)
            .await
            .with_step(|| format!("releasing the claim of event {event_id}"))?;
        Ok(done.rows_affected() == 1)
    }

    async fn process_in_transaction(
        &self,
        event: &Event,
        max_attempts: i64,
        send: SendFn<'_>,
    ) -> StoreResult<TxOutcome> {
        let event_id = event.event_id.as_str();
        // The mark, in a short transaction of its own.
        let mut tx = self.begin_write().await?;
        let state: Option<(String, Option<i64>, i64)> = sqlx::query_as(sql::CLAIM_TX_PEEK)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("reading the claim of event {event_id}"))?;
        let reclaimed = match state {
            None => false,
            Some((status, locked_until, now)) => match status.as_str() {
                "in_progress" if locked_until.unwrap_or(0) > now => {
                    return Ok(TxOutcome::Deferred {
                        remaining_ms: locked_until.unwrap_or(now) - now,
                    });
                }
                // Its holder vanished mid-send: a lease that expired, or a mark whose
                // transaction never ended.
                "in_progress" => true,
                "pending" => false,
                "dead" => return Ok(TxOutcome::Dead),
                _ => return Ok(TxOutcome::Duplicate),
            },
        };
        sqlx::query(sql::CLAIM_TX_MARK)
            .bind(event_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("marking event {event_id} in progress"))?;
        tx.commit()
            .await
            .with_step(|| format!("committing the mark of event {event_id}"))?;

        let mut tx = self.begin_write().await?;
        // The claim. A concurrent transaction on the same event blocks here until it ends.
        let claimed: Option<i64> = sqlx::query_scalar(sql::CLAIM_IN_TRANSACTION)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("claiming event {event_id} in the send's transaction"))?;
        let Some(attempts) = claimed else {
            let (status, locked_until, now): (String, Option<i64>, i64) =
                sqlx::query_as(sql::CLAIM_STATE)
                    .bind(event_id)
                    .fetch_one(&mut *tx)
                    .await
                    .with_step(|| format!("reading the claim of event {event_id}"))?;
            return Ok(match (status.as_str(), locked_until) {
                ("dead", _) => TxOutcome::Dead,
                ("in_progress", Some(until)) if until > now => TxOutcome::Deferred {
                    remaining_ms: until - now,
                },
                _ => TxOutcome::Duplicate,
            });
        };
        let error = match Self::load_email_data(&mut *tx, event)
            .await
            .with_step(|| format!("loading the email data of event {event_id}"))?
        {
            Loaded::Missing(absent) => {
                sqlx::query(sql::CLAIM_MISSING)
                    .bind(event_id)
                    .execute(&mut *tx)
                    .await
                    .with_step(|| format!("recording event {event_id} as missing"))?;
                tx.commit()
                    .await
                    .with_step(|| format!("committing event {event_id} as missing"))?;
                return Ok(TxOutcome::Missing(absent));
            }
            // Never handed to a mail service: it fails for good, as an email that cannot be
            // built does.
            Loaded::Unsendable(reason) => SendError::Permanent(format!("{NOT_SENT}{reason}")),
            Loaded::Ready(data) => {
                let claim = TxClaim {
                    attempts,
                    reclaimed,
                };
                match send(data, claim).await {
                    Ok(()) => {
                        tx.commit().await.with_step(|| {
                            format!("committing the claim of event {event_id} after its send")
                        })?;
                        return Ok(TxOutcome::Sent);
                    }
                    Err(error) => error,
                }
            }
        };
        tx.rollback()
            .await
            .with_step(|| format!("rolling back the failed send of event {event_id}"))?;
        if let SendError::Unavailable(_) = &error {
            // Not this message's failure: the mark goes back to pending, nothing counted.
            self.release_claim(event_id, None, &error.to_string())
                .await?;
            return Ok(TxOutcome::Released { error });
        }
        let dead = matches!(error, SendError::Permanent(_)) || max_attempts <= 1;
        // The server may have the message: keep the mark, so the retry is a counted reclaim.
        let kept = matches!(error, SendError::Unknown(_));
        let mut tx = self.begin_write().await?;
        sqlx::query(sql::CLAIM_FOR_FAILURE)
            .bind(event_id)
            .execute(&mut *tx)
            .await
            .with_step(|| format!("taking the claim of event {event_id} to count its failure"))?;
        let failure = Self::record_failure(
            &mut *tx,
            event_id,
            None,
            &error.to_string(),
            max_attempts,
            dead,
            kept,
        )
        .await?;
        let Some(failure) = failure else {
            // A copy waiting on this transaction took the event after the rollback (in either
            // mode), and has sent it or is sending it under its own claim: this copy is done.
            let status = Self::claim_status(&mut tx, event_id).await?;
            tx.commit()
                .await
                .with_step(|| format!("committing the failure of event {event_id}"))?;
            return match status.as_deref() {
                Some("done" | "missing" | "in_progress") => Ok(TxOutcome::Duplicate),
                Some("dead") => Ok(TxOutcome::Dead),
                _ => Err(StoreError::Other(anyhow::anyhow!(
                    "event {event_id} changed while recording its failure"
                ))),
            };
        };
        tx.commit()
            .await
            .with_step(|| format!("committing the failure of event {event_id}"))?;
        Ok(TxOutcome::Failed { failure, error })
    }

    async fn email_data(&self, event: &Event) -> StoreResult<Loaded> {
        Self::load_email_data(&self.pool, event).await
    }

    async fn reset_dead_event(&self, event_id: &str) -> StoreResult<()> {
        sqlx::query(sql::CLAIM_RESET)
            .bind(event_id)
            .execute(&self.pool)
            .await
            .with_step(|| format!("forgetting the failures of event {event_id}"))?;
        Ok(())
    }

    async fn note_redrive(
        &self,
        event_id: &str,
        attempts: i64,
        at_ms: Option<i64>,
    ) -> StoreResult<()> {
        sqlx::query(sql::REDRIVE_TRACE)
            .bind(event_id)
            .bind(attempts)
            .bind(at_ms)
            .execute(&self.pool)
            .await
            .with_step(|| format!("noting the redrive of event {event_id}"))?;
        Ok(())
    }

    async fn relay_outbox(
        &self,
        limit: i64,
        lease_ms: i64,
        publish: PublishFn<'_>,
    ) -> StoreResult<usize> {
        let mut rows: Vec<(i64, String, String)> = sqlx::query_as(sql::OUTBOX_TAKE)
            .bind(limit)
            .bind(lease_ms)
            .fetch_all(&self.pool)
            .await
            .step("taking outbox rows to publish")?;
        if rows.is_empty() {
            return Ok(0);
        }
        rows.sort_by_key(|(id, _, _)| *id);
        let published = publish(rows.iter().map(|(_, _, b)| b.clone()).collect()).await;
        let done = match &published {
            Ok(done) => done.clone(),
            Err(_) => Published::default(),
        };
        // Only what the queue accepted leaves the outbox, and what it can never accept as a dead
        // letter; the rest is the next sweep's.
        let mut tx = self.begin_write().await?;
        let mut deleted = 0;
        for (i, (id, event_id, body)) in rows.iter().enumerate() {
            let refused = done.too_long.iter().find(|(j, _)| *j == i);
            if let Some((_, reason)) = refused {
                let now: i64 = sqlx::query_scalar(sql::NOW_MS)
                    .fetch_one(&mut *tx)
                    .await
                    .step("reading the database clock")?;
                let reason = stored_text(reason);
                sqlx::query(super::sqs_dead_letters::INSERT)
                    .bind(format!("outbox-{event_id}"))
                    .bind(event_id)
                    .bind(reason.as_ref())
                    .bind(0_i64)
                    .bind(body)
                    .bind(now)
                    .bind(now)
                    .execute(&mut *tx)
                    .await
                    .with_step(|| format!("dead-lettering outbox row {id}, too long to publish"))?;
                tracing::error!(
                    event_id = event_id.as_str(),
                    reason = reason.as_ref(),
                    "the queue refused an event as too long; dead-lettered"
                );
            }
            let statement = if done.accepted.contains(&i) || refused.is_some() {
                sql::OUTBOX_DELETE
            } else {
                sql::OUTBOX_RETURN
            };
            let settled = sqlx::query(statement)
                .bind(id)
                .execute(&mut *tx)
                .await
                .with_step(|| format!("settling outbox row {id} after its publish"))?;
            if statement == sql::OUTBOX_DELETE && refused.is_none() {
                deleted += settled.rows_affected() as usize;
            }
        }
        tx.commit()
            .await
            .step("committing the published outbox rows")?;
        published?;
        Ok(deleted)
    }

    async fn outbox_pending(&self) -> StoreResult<i64> {
        Ok(sqlx::query_scalar(sql::OUTBOX_COUNT)
            .fetch_one(&self.pool)
            .await
            .step("counting the outbox rows")?)
    }

    async fn delete_processed_events(&self, older_than_ms: i64, batch: i64) -> StoreResult<u64> {
        let records = sqlx::query(sql::CLAIMS_EXPIRED_DELETE)
            .bind(older_than_ms)
            .bind(batch)
            .execute(&self.pool)
            .await
            .step("deleting finished processed-event records")?;
        let traces = sqlx::query(sql::REDRIVE_TRACES_EXPIRED_DELETE)
            .bind(older_than_ms)
            .bind(batch)
            .execute(&self.pool)
            .await
            .step("deleting old redrive traces")?;
        Ok(records.rows_affected() + traces.rows_affected())
    }

    async fn delete_event_records(
        &self,
        older_than: chrono::DateTime<chrono::Utc>,
        batch: i64,
    ) -> StoreResult<u64> {
        let done = sqlx::query(sql::EVENT_RECORDS_EXPIRED_DELETE)
            .bind(older_than)
            .bind(batch)
            .execute(&self.pool)
            .await
            .step("deleting old event records")?;
        Ok(done.rows_affected())
    }

    async fn now_ms(&self) -> StoreResult<i64> {
        Ok(sqlx::query_scalar(sql::NOW_MS)
            .fetch_one(&self.pool)
            .await
            .step("reading the database clock")?)
    }
}

impl S {
    async fn claim_status(tx: &mut Tx, event_id: &str) -> StoreResult<Option<String>> {
        sqlx::query_scalar(sql::CLAIM_STATUS)
            .bind(event_id)
            .fetch_optional(&mut **tx)
            .await
            .with_step(|| format!("reading the claim status of event {event_id}"))
    }
}
