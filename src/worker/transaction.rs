//! Transaction mode: the claim, the send and the record share one database transaction.

use super::{Outcome, Worker};
use crate::domain::event::Event;
use crate::domain::mail::{EmailData, SendError};
use crate::queue::Message;
use crate::store::{SendFn, TxClaim, TxOutcome};
use crate::telemetry as t;
use std::sync::Arc;

impl Worker {
    pub(super) async fn handle_transaction(
        &self,
        m: &Message,
        e: &Event,
    ) -> anyhow::Result<Outcome> {
        let mailer = self.mailer.clone();
        let timeout = self.send_timeout;
        let sent_to: Arc<std::sync::Mutex<Option<EmailData>>> = Arc::default();
        let record = sent_to.clone();
        let send: SendFn<'_> = Box::new(move |data: EmailData, claim: TxClaim| {
            Box::pin(async move {
                // An earlier holder died (or lost the database) mid-send: its mark is all that
                // is left, and its email may have gone out.
                if claim.reclaimed {
                    tracing::warn!("reclaiming expired claim");
                    metrics::counter!(t::EVENTS_RECLAIMED_TOTAL).increment(1);
                }
                let message = self.message(e, &data)?;
                let result = tokio::time::timeout(timeout, mailer.send(&message))
                    .await
                    .unwrap_or_else(|_| {
                        Err(SendError::Unknown(format!(
                            "timed out after {}s",
                            timeout.as_secs()
                        )))
                    });
                if result.is_ok() {
                    *record.lock().unwrap_or_else(|p| p.into_inner()) = Some(data);
                }
                result
            })
        });
        // The transaction may wait on another worker's; keep the message hidden meanwhile.
        let keep_hidden = async {
            let mut every = tokio::time::interval(self.visibility / 3);
            every.tick().await;
            loop {
                every.tick().await;
                if let Err(err) = self.queue.extend(m, self.visibility).await {
                    tracing::warn!(
                        error = format!("{err:#}"),
                        "could not extend the message's visibility"
                    );
                }
            }
        };
        let began = self.mail_recoveries();
        let outcome = tokio::select! {
            o = self.store.process_in_transaction(e, self.max_attempts, send) => o?,
            _ = keep_hidden => unreachable!("the heartbeat never ends"),
        };
        match outcome {
            TxOutcome::Sent => {
                self.note_send(&Ok(()), began);
                self.queue.ack(m).await?;
                if let Some(data) = sent_to.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
                    self.log_sent(data, e);
                }
                Ok(Outcome::Sent)
            }
            TxOutcome::Dead => self.dead_letter_copy(m, e).await,
            TxOutcome::Duplicate => {
                self.queue.ack(m).await?;
                tracing::info!("already processed; skipping duplicate");
                Ok(Outcome::Duplicate)
            }
            TxOutcome::Deferred { remaining_ms } => self.defer(m, remaining_ms).await,
            TxOutcome::Missing(absent) => {
                self.queue.ack(m).await?;
                self.log_missing(e, absent);
                Ok(Outcome::Missing)
            }
            TxOutcome::Released { error } => {
                self.note_send(&Err(error.clone()), began);
                self.mail_unavailable(m, e, None, &error).await
            }
            TxOutcome::Failed { failure, error } => {
                self.after_failure(
                    m,
                    e,
                    &error,
                    failure.attempts,
                    failure.dead,
                    Some(failure.first_failed_at),
                )
                .await
            }
        }
    }
}
