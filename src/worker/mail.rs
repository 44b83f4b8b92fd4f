//! The mail service's outages (docs/guarantee.md): a send that meets a refused session (the
//! service cannot be reached, TLS fails, the greeting or the login is refused, it throttles the
//! sender) releases its claim with no attempt counted and puts its message back after the
//! current backoff; the worker reports itself not ready, and its receive loop stops receiving
//! and probes the service with backoff (1 s doubling to 30 s), until a probe opens a session or
//! a send succeeds; receiving then resumes at once.

use super::{Outcome, Worker};
use crate::domain::event::Event;
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

    /// The outages ended so far: taken before a send or a probe, and handed back with what it
    /// found.
    pub(super) fn mail_recoveries(&self) -> u64 {
        self.mail_recoveries.load(Ordering::SeqCst)
    }

    /// Notes what a send begun after `began` recoveries says about the mail service: a success
    /// means it takes sessions, a refused session that it does not. A refused message says
    /// nothing about the service.
    pub(super) fn note_send(&self, result: &Result<(), SendError>, began: u64) {
        match result {
            Ok(()) => self.mail_accepts(),
            Err(SendError::Unavailable(error)) => self.mail_refuses(error, began),
            Err(_) => {}
        }
    }

    /// The mail service took a session (a send, or a probe): an outage ends, logged once at
    /// INFO, and a receive loop waiting to probe again wakes.
    pub(super) fn mail_accepts(&self) {
        if !self.mail_up.swap(true, Ordering::SeqCst) {
            self.mail_recoveries.fetch_add(1, Ordering::SeqCst);
            metrics::gauge!(t::MAIL_SERVICE_UP).set(1.0);
            tracing::info!("the mail service accepts sessions again; sending");
            self.mail_recovered.notify_one();
        }
    }

    /// Counts a refused session; the first of an outage is logged at ERROR, once. A session
    /// begun before the last recovery (`began` is older) says nothing new: it starts no outage.
    pub(super) fn mail_refuses(&self, error: &str, began: u64) {
        metrics::counter!(t::MAIL_SESSION_REFUSALS_TOTAL).increment(1);
        if began != self.mail_recoveries() {
            return;
        }
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
        e: &Event,
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
