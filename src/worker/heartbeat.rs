//! The send under a lease: a deadline, and a heartbeat that keeps the claim and the message ours.

use super::Worker;
use crate::domain::event::Event;
use crate::domain::mail::{EmailData, SendError};
use crate::queue::Message;
use crate::telemetry as t;

impl Worker {
    /// Sends with a deadline while a heartbeat keeps the claim and the message ours.
    pub(super) async fn send_with_heartbeat(
        &self,
        m: &Message,
        e: &Event,
        lease_id: &str,
        data: &EmailData,
    ) -> Result<(), SendError> {
        let message = self.message(e, data)?;
        let lease_ms = self.visibility.as_millis() as i64;
        let beat = async {
            let mut every = tokio::time::interval(self.visibility / 3);
            every.tick().await;
            loop {
                every.tick().await;
                match self
                    .store
                    .extend_claim(&e.event_id, lease_id, lease_ms)
                    .await
                {
                    Ok(true) => {}
                    Ok(false) => {
                        // Another worker took the event over: the message and the claim are
                        // its to keep now. The send runs to its end (stopping it midway could
                        // not take back what the server already has), and its record will
                        // find the lease gone.
                        tracing::warn!("lost the lease during the send; no longer extending it");
                        metrics::counter!(t::LEASES_LOST_TOTAL).increment(1);
                        return std::future::pending::<()>().await;
                    }
                    Err(err) => {
                        tracing::warn!(error = format!("{err:#}"), "could not extend the lease")
                    }
                }
                if let Err(err) = self.queue.extend(m, self.visibility).await {
                    tracing::warn!(
                        error = format!("{err:#}"),
                        "could not extend the message's visibility"
                    );
                }
            }
        };
        let began = self.mail_recoveries();
        let sent = tokio::select! {
            sent = tokio::time::timeout(self.send_timeout, self.mailer.send(&message)) => {
                sent.unwrap_or_else(|_| Err(SendError::Unknown(format!("timed out after {}s", self.send_timeout.as_secs()))))
            }
            _ = beat => unreachable!("the heartbeat never ends"),
        };
        self.note_send(&sent, began);
        sent
    }
}
