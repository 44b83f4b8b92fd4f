//! The outbox relay (`QUEUE=sqs`): publishes committed outbox rows to SQS right after the commit
//! that wrote them (the API pokes it) and in a sweep every second for anything a crash left
//! behind. A row leaves the outbox only after SQS accepted it, so an event may be published
//! twice (the worker's claim makes that harmless) but never lost. Several relays may run at once:
//! each takes rows for a lease the others respect, and no database transaction stays open
//! while SQS answers.

use crate::queue::sqs::SqsQueue;
use crate::store::EventStore;
use crate::telemetry as t;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

const BATCH: i64 = 10;

pub struct Relay {
    store: Arc<dyn EventStore>,
    sqs: Arc<SqsQueue>,
    wake: Notify,
    /// One publish at a time in this process (SQLite has no row locks to keep two apart).
    busy: tokio::sync::Mutex<()>,
}

impl Relay {
    pub fn new(store: Arc<dyn EventStore>, sqs: Arc<SqsQueue>) -> Relay {
        Relay {
            store,
            sqs,
            wake: Notify::new(),
            busy: tokio::sync::Mutex::new(()),
        }
    }

    /// Whether SQS answers (reported by the API's `/readyz`, never required by it).
    pub async fn ping(&self) -> anyhow::Result<()> {
        use crate::queue::Queue;
        self.sqs.ping().await
    }

    /// Called after a commit that wrote outbox rows.
    pub fn poke(&self) {
        self.wake.notify_one();
    }

    /// Publishes one batch; returns how many rows left the outbox.
    pub async fn publish_once(&self) -> anyhow::Result<usize> {
        let _turn = self.busy.lock().await;
        let sqs = self.sqs.clone();
        let n = self
            .store
            .relay_outbox(
                BATCH,
                self.sqs.publish_lease().as_millis() as i64,
                Box::new(move |bodies| Box::pin(async move { sqs.publish(&bodies).await })),
            )
            .await?;
        metrics::counter!(t::EVENTS_PUBLISHED_TOTAL).increment(n as u64);
        Ok(n)
    }

    /// Publishes everything waiting; returns how many rows were published.
    pub async fn drain(&self) -> anyhow::Result<usize> {
        let mut total = 0;
        loop {
            let n = self.publish_once().await?;
            total += n;
            if n < BATCH as usize {
                return Ok(total);
            }
        }
    }

    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        let mut failing = false;
        loop {
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                _ = shutdown.cancelled() => return,
            }
            match self.drain().await {
                Ok(_) if failing => {
                    failing = false;
                    tracing::info!("outbox relay publishing again");
                }
                Ok(_) => {}
                Err(e) if !failing => {
                    failing = true;
                    tracing::error!(
                        error = format!("{e:#}"),
                        "outbox relay cannot publish; events wait in the outbox"
                    );
                }
                Err(_) => {}
            }
            if let Ok(n) = self.store.outbox_pending().await {
                metrics::gauge!(t::OUTBOX_PENDING).set(n as f64);
            }
        }
    }
}
