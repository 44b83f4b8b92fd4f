//! The mail service's outages (CONTRACT.md §6): a send that meets a refused session (the
//! service cannot be reached, TLS fails, the greeting or the login is refused, it throttles the
//! sender) releases its claim with no attempt counted and puts its message back after the
//! current backoff; the worker reports itself not ready, and its receive loop stops receiving
//! and probes the service with backoff (1 s doubling to 30 s), until a send succeeds.

use super::{Outcome, Worker};
use crate::domain::event::StatusChanged;
use crate::domain::mail::SendError;
use crate::queue::Message;
use crate::telemetry as t;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The first wait after the mail service refused a session; it doubles up to [`MAIL_MAX_WAIT`].
pub(super) const MAIL_FIRST_WAIT: Duration = Duration::from_secs(1);
pub(super) const MAIL_MAX_WAIT: Duration = Duration::from_secs(30);

impl Worker {
    /// Whether the last word from the mail service was a session it took.
    pub fn mail_is_up(&self) -> bool {
        self.mail_up.load(Ordering::SeqCst)
    }

    /// Notes what a send says about the mail service: a success means it takes sessions, a
    /// refused session that it does not. A refused message says nothing about the service.
    pub(super) fn note_send(&self, result: &Result<(), SendError>) {
        match result {
            Ok(()) => self.mail_accepts(),
            Err(SendError::Unavailable(error)) => self.mail_refuses(error),
            Err(_) => {}
        }
    }

    fn mail_accepts(&self) {
        if !self.mail_up.swap(true, Ordering::SeqCst) {
            metrics::gauge!(t::MAIL_SERVICE_UP).set(1.0);
            tracing::info!("the mail service accepts sessions again; sending");
        }
    }

    /// Counts a refused session; the first of an outage is logged at ERROR, once.
    pub(super) fn mail_refuses(&self, error: &str) {
        metrics::counter!(t::MAIL_SESSION_REFUSALS_TOTAL).increment(1);
        if self.mail_up.swap(false, Ordering::SeqCst) {
            metrics::gauge!(t::MAIL_SERVICE_UP).set(0.0);
            tracing::error!(
                error,
                "the mail service refuses the session; stopped sending, retrying with backoff \
                 (1 s doubling to 30 s); no attempt is counted meanwhile"
            );
        }
    }

    /// How long a message whose send met a refused session waits before it is visible again:
    /// the receive loop's current backoff.
    fn mail_retry_delay(&self) -> Duration {
        Duration::from_millis(self.mail_wait_ms.load(Ordering::SeqCst))
    }

    pub(super) fn set_mail_wait(&self, wait: Duration) {
        self.mail_wait_ms
            .store(wait.as_millis() as u64, Ordering::SeqCst);
    }

    /// A send that met a refused session: its claim is released with no attempt counted
    /// (`lease_id`; `None` when the store already released a transaction-mode claim), and its
    /// message comes back after the current backoff.
    pub(super) async fn mail_unavailable(
        &self,
        m: &Message,
        e: &StatusChanged,
        lease_id: Option<&str>,
        error: &SendError,
    ) -> anyhow::Result<Outcome> {
        if let Some(lease_id) = lease_id {
            let released = self
                .store
                .release_claim(&e.event_id, Some(lease_id), &error.to_string())
                .await?;
            if !released {
                tracing::warn!(error = %error, "send failed after the lease ended; the message will be redelivered");
                return Ok(Outcome::MailUnavailable);
            }
        }
        let delay = self.mail_retry_delay();
        self.queue.retry_later(m, delay).await?;
        tracing::info!(
            retry_in_ms = delay.as_millis() as u64,
            "mail service unavailable; claim released with no attempt counted: {error}"
        );
        Ok(Outcome::MailUnavailable)
    }
}
