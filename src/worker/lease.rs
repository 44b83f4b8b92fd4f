//! Lease mode: the claim of a single event, its send and record, and what follows a failure.

use super::{Outcome, Worker};
use crate::domain::event::Event;
use crate::domain::mail::{Absent, Loaded, NOT_SENT, SendError};
use crate::email;
use crate::queue::{DeadLetterReason, Message};
use crate::store::{Claim, Finished};
use crate::telemetry as t;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;

impl Worker {
    /// What the event reports is gone, or its person turned the email off: nothing to send.
    pub(super) async fn missing(
        &self,
        m: &Message,
        e: &Event,
        lease_id: &str,
        absent: Absent,
    ) -> anyhow::Result<Outcome> {
        self.store
            .finish_claim(&e.event_id, lease_id, Finished::Missing)
            .await?;
        self.queue.ack(m).await?;
        self.log_missing(e, absent);
        Ok(Outcome::Missing)
    }

    /// What follows the load of a claimed event's data when there is nothing to send: `None`
    /// when it is ready to be sent.
    pub(super) async fn unless_ready(
        &self,
        m: &Message,
        e: &Event,
        lease_id: &str,
        loaded: Loaded,
    ) -> anyhow::Result<Result<crate::domain::mail::EmailData, Outcome>> {
        Ok(Err(match loaded {
            Loaded::Ready(data) => return Ok(Ok(data)),
            Loaded::Missing(absent) => self.missing(m, e, lease_id, absent).await?,
            // Never handed to a mail service: it fails for good, as an email that cannot be
            // built does.
            Loaded::Unsendable(reason) => {
                let error = SendError::Permanent(format!("{NOT_SENT}{reason}"));
                self.failed_send(m, e, lease_id, error).await?
            }
        }))
    }

    /// A failed send under a lease: releases this claim only, counting the attempt (none when
    /// the mail service refused the session); a send whose outcome is unknown counts the attempt
    /// but leaves the claim to lapse instead of releasing it.
    pub(super) async fn failed_send(
        &self,
        m: &Message,
        e: &Event,
        lease_id: &str,
        error: SendError,
    ) -> anyhow::Result<Outcome> {
        if let SendError::Unavailable(_) = &error {
            return self.mail_unavailable(m, e, Some(lease_id), &error).await;
        }
        let permanent = matches!(error, SendError::Permanent(_));
        let failed = if let SendError::Unknown(_) = &error {
            // The server may have the message: the claim stays ours until its lease lapses (the
            // heartbeat has stopped), so the retry is a takeover, logged and counted as a reclaim.
            self.store
                .keep_failed_claim(&e.event_id, lease_id, &error.to_string(), self.max_attempts)
                .await?
        } else {
            self.store
                .fail_claim(
                    &e.event_id,
                    lease_id,
                    &error.to_string(),
                    self.max_attempts,
                    permanent,
                )
                .await?
        };
        match failed {
            None => {
                tracing::warn!(error = %error, "send failed after the lease ended; the message will be redelivered");
                Ok(Outcome::Failed)
            }
            Some(f) => {
                self.after_failure(m, e, &error, f.attempts, f.dead, Some(f.first_failed_at))
                    .await
            }
        }
    }

    pub(super) async fn handle_lease(&self, m: &Message, e: &Event) -> anyhow::Result<Outcome> {
        let lease_ms = self.visibility.as_millis() as i64;
        let (lease_id, reclaimed) = match self.store.claim_event(&e.event_id, lease_ms).await? {
            Claim::Duplicate => {
                self.queue.ack(m).await?;
                tracing::info!("already processed; skipping duplicate");
                return Ok(Outcome::Duplicate);
            }
            Claim::Dead => return self.dead_letter_copy(m, e).await,
            Claim::Deferred { remaining_ms } => return self.defer(m, remaining_ms).await,
            Claim::Claimed {
                lease_id,
                reclaimed,
                ..
            } => (lease_id, reclaimed),
        };
        if reclaimed {
            tracing::warn!("reclaiming expired claim");
            metrics::counter!(t::EVENTS_RECLAIMED_TOTAL).increment(1);
        }
        match AssertUnwindSafe(self.handle_claim(m, e, &lease_id))
            .catch_unwind()
            .await
        {
            Ok(outcome) => outcome,
            Err(panic) => self.panicked(m, e, Some(&lease_id), panic).await,
        }
    }

    /// The rest of [`handle_lease`](Self::handle_lease), under the claim of `lease_id`.
    async fn handle_claim(
        &self,
        m: &Message,
        e: &Event,
        lease_id: &str,
    ) -> anyhow::Result<Outcome> {
        let lease_id = lease_id.to_string();
        let loaded = self.store.email_data(e).await?;
        let data = match self.unless_ready(m, e, &lease_id, loaded).await? {
            Ok(data) => data,
            Err(outcome) => return Ok(outcome),
        };
        let result = self.send_with_heartbeat(m, e, &lease_id, &data).await;
        match result {
            Ok(()) => {
                self.record_done(std::slice::from_ref(&e.event_id), &lease_id)
                    .await?;
                self.queue.ack(m).await?;
                self.log_sent(&data, e);
                Ok(Outcome::Sent)
            }
            Err(error) => self.failed_send(m, e, &lease_id, error).await,
        }
    }

    pub(super) async fn after_failure(
        &self,
        m: &Message,
        e: &Event,
        error: &SendError,
        attempts: i64,
        dead: bool,
        first_failed_at: Option<i64>,
    ) -> anyhow::Result<Outcome> {
        if dead {
            let reason = match error {
                SendError::Permanent(reason) if reason.starts_with(email::NOT_SENT) => {
                    reason.clone()
                }
                SendError::Permanent(_) => format!("rejected by the mail server: {error}"),
                SendError::Transient(_) | SendError::Unavailable(_) | SendError::Unknown(_) => {
                    format!("gave up after {attempts} failed sends; last: {error}")
                }
            };
            self.queue
                .dead_letter(
                    m,
                    DeadLetterReason {
                        event_id: Some(e.event_id.clone()),
                        reason: reason.clone(),
                        attempts,
                        first_failed_at,
                        invalid: false,
                    },
                )
                .await?;
            tracing::error!(attempts, "event dead-lettered: {reason}");
            return Ok(Outcome::DeadLettered);
        }
        let delay = self.backoff(attempts);
        self.queue.retry_later(m, delay).await?;
        tracing::warn!(attempts, retry_in_secs = delay.as_secs(), error = %error,
            "send failed (attempt {attempts} of {}); retrying in {}s: {error}", self.max_attempts, delay.as_secs());
        Ok(Outcome::Failed)
    }
}
