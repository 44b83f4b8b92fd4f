//! Recording accepted sends: retried within the lease, and in a batch each group of sends as
//! soon as the mail server has accepted it.

use super::Worker;
use crate::store::Finished;
use crate::telemetry as t;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Sends of one batch accepted within this long of each other are recorded together.
pub(super) const GROUP_WINDOW: Duration = Duration::from_millis(5);
/// The first wait before recording again after the database failed; it doubles.
const FIRST_RETRY: Duration = Duration::from_millis(50);

impl Worker {
    /// Records sent events as done under `lease_id`. A failing database is retried with backoff
    /// for up to a third of the lease (the heartbeat renewed it at most a third of it ago, so
    /// it is still ours), since giving up now would let a redelivery send the emails again.
    /// Returns the ids whose lease was still ours.
    pub(super) async fn record_done(
        &self,
        event_ids: &[String],
        lease_id: &str,
    ) -> anyhow::Result<HashSet<String>> {
        let deadline = Instant::now() + self.visibility / 3;
        let mut wait = FIRST_RETRY;
        let mut retries = 0u32;
        loop {
            match self
                .store
                .finish_claims(event_ids, lease_id, Finished::Done)
                .await
            {
                Ok(recorded) => {
                    if retries > 0 {
                        metrics::counter!(t::RECORD_RETRIES_TOTAL, "result" => "recovered")
                            .increment(1);
                        tracing::info!(retries, "recorded the sent emails after retrying");
                    }
                    let recorded: HashSet<String> = recorded.into_iter().collect();
                    for id in event_ids.iter().filter(|id| !recorded.contains(*id)) {
                        tracing::warn!(event_id = %id,
                            "the lease ended before the send was recorded; another attempt may send it again");
                    }
                    return Ok(recorded);
                }
                Err(err) if Instant::now() + wait < deadline => {
                    retries += 1;
                    tracing::warn!(
                        error = format!("{err:#}"),
                        retry_in_ms = wait.as_millis() as u64,
                        "could not record the sent emails; retrying within the lease"
                    );
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
                Err(err) => {
                    metrics::counter!(t::RECORD_RETRIES_TOTAL, "result" => "gave_up").increment(1);
                    return Err(anyhow::Error::from(err).context(format!(
                        "could not record the sent emails after {retries} retries"
                    )));
                }
            }
        }
    }
}
