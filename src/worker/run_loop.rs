//! The receive loop: receiving and handling messages, backing off while the queue, the database
//! or the mail service is unavailable, and shutdown.

use super::mail::{MAIL_FIRST_WAIT, MAIL_MAX_WAIT};
use super::{Outcome, Worker};
use crate::domain::mail::SendError;
use crate::email::Probe;
use crate::queue::Message;
use crate::telemetry as t;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

impl Worker {
    /// Handles messages until none is visible; for tests and one-off runs.
    pub async fn run_until_empty(&self) -> anyhow::Result<Vec<Outcome>> {
        let mut outcomes = Vec::new();
        loop {
            let batch = self
                .queue
                .receive(self.queue.max_receive(), Duration::ZERO)
                .await?;
            if batch.is_empty() {
                return Ok(outcomes);
            }
            for r in self.handle_batch(&batch).await {
                outcomes.push(r?);
            }
        }
    }

    /// Receives and handles messages, `WORKER_CONCURRENCY` at once, until `shutdown`; then
    /// in-flight work gets the grace period. Returns whether it all finished.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) -> bool {
        let slots = Arc::new(Semaphore::new(self.concurrency));
        let mut tasks = JoinSet::new();
        let mut idle = Duration::from_millis(20);
        let mut down_for = Duration::from_secs(1);
        let mut down = false;
        let mut mail_wait = MAIL_FIRST_WAIT;
        metrics::gauge!(t::MAIL_SERVICE_UP).set(if self.mail_is_up() { 1.0 } else { 0.0 });
        tracing::info!(queue = self.queue.kind(), mailer = self.mailer.kind(), concurrency = self.concurrency,
            mode = ?self.mode, "worker started");
        loop {
            while let Some(done) = tasks.try_join_next() {
                joined(done);
            }
            // While the mail service refuses its session, receive nothing (as while the
            // database is away): wait, and probe it. A probe that opens a session ends the
            // outage, and receiving resumes at once; where the mailer cannot tell without
            // sending, one message goes through and its send tells.
            let mut probing = false;
            if self.mail_is_up() {
                if mail_wait != MAIL_FIRST_WAIT {
                    mail_wait = MAIL_FIRST_WAIT;
                    self.set_mail_wait(mail_wait);
                }
            } else {
                tokio::select! {
                    _ = tokio::time::sleep(mail_wait) => {},
                    _ = self.mail_recovered.notified() => {},
                    _ = shutdown.cancelled() => break,
                }
                if !self.mail_is_up() {
                    mail_wait = (mail_wait * 2).min(MAIL_MAX_WAIT);
                    self.set_mail_wait(mail_wait);
                    let began = self.mail_recoveries();
                    match tokio::time::timeout(self.send_timeout, self.mailer.probe()).await {
                        Ok(Ok(Probe::Opened)) => self.mail_accepts(),
                        Ok(Err(SendError::Unavailable(error))) => {
                            self.mail_refuses(&error, began);
                            continue;
                        }
                        Err(_) => {
                            self.mail_refuses("no session within the send's deadline", began);
                            continue;
                        }
                        Ok(Ok(Probe::CannotTell) | Err(_)) => probing = true,
                    }
                }
            }
            let first = tokio::select! {
                p = slots.clone().acquire_owned() => match p { Ok(p) => p, Err(_) => break },
                _ = shutdown.cancelled() => break,
            };
            // A batch holds its slots until its last event is done: a quarter of the slots at most,
            // so that several batches overlap instead of one waiting for the next.
            let most = if self.batch {
                (self.concurrency / 4).max(1)
            } else {
                self.concurrency
            };
            let want = if probing {
                1
            } else {
                (slots.available_permits() + 1)
                    .min(most)
                    .min(self.queue.max_receive())
            };
            // A message that failed on the database (not the queue) makes us check the database
            // before receiving more: with SQS the queue answers while the database is away, and
            // receiving on would only wear out the messages' receive counts.
            let received = if self.store_trouble.load(Ordering::SeqCst) {
                match tokio::time::timeout(Duration::from_secs(1), self.store.ping()).await {
                    Ok(Ok(())) => {
                        self.store_trouble.store(false, Ordering::SeqCst);
                        self.queue.receive(want, Duration::from_secs(1)).await
                    }
                    Ok(Err(e)) => Err(e.context("database unreachable")),
                    Err(_) => Err(anyhow::anyhow!(
                        "database unreachable: no answer within 1 s"
                    )),
                }
            } else {
                self.queue.receive(want, Duration::from_secs(1)).await
            };
            let batch = match received {
                Err(err) => {
                    drop(first);
                    if !down {
                        tracing::error!(
                            error = format!("{err:#}"),
                            "queue or database unreachable; stopped receiving, reconnecting with backoff"
                        );
                        down = true;
                        self.healthy.store(false, Ordering::SeqCst);
                    }
                    tokio::select! { _ = tokio::time::sleep(down_for) => {}, _ = shutdown.cancelled() => break }
                    down_for = (down_for * 2).min(Duration::from_secs(30));
                    continue;
                }
                Ok(batch) => batch,
            };
            if down {
                tracing::info!("queue and database reachable again; receiving");
                down = false;
                down_for = Duration::from_secs(1);
                self.healthy.store(true, Ordering::SeqCst);
            }
            if batch.is_empty() {
                drop(first);
                tokio::select! { _ = tokio::time::sleep(idle) => {}, _ = shutdown.cancelled() => break }
                idle = (idle * 2).min(Duration::from_millis(500));
                continue;
            }
            idle = Duration::from_millis(20);
            let mut permit = Some(first);
            let mut started = Vec::new();
            let mut not_returned = 0;
            let mut return_error = None;
            for m in batch {
                let slot = permit
                    .take()
                    .or_else(|| slots.clone().try_acquire_owned().ok());
                match slot {
                    Some(slot) if !shutdown.is_cancelled() => started.push((m, slot)),
                    // Received but not started: back to the queue, not an attempt.
                    _ => {
                        if let Err(e) = self.queue.retry_later(&m, Duration::ZERO).await {
                            not_returned += 1;
                            return_error = Some(format!("{e:#}"));
                        }
                    }
                }
            }
            if let Some(error) = return_error {
                // Nothing is lost: each comes back once its visibility timeout ends, later.
                tracing::warn!(
                    messages = not_returned,
                    error,
                    "could not return received messages to the queue; they are delivered again after their visibility timeout"
                );
            }
            if self.batch {
                let worker = self.clone();
                tasks.spawn(async move {
                    let (messages, _slots): (Vec<Message>, Vec<_>) = started.into_iter().unzip();
                    let results = worker.handle_batch(&messages).await;
                    for (m, r) in messages.iter().zip(results) {
                        worker.handled(m, r);
                    }
                });
            } else {
                for (m, slot) in started {
                    let worker = self.clone();
                    tasks.spawn(async move {
                        let _slot = slot;
                        let r = worker.handle(&m).await;
                        worker.handled(&m, r);
                    });
                }
            }
        }
        self.healthy.store(false, Ordering::SeqCst);
        let finished = tokio::time::timeout(self.grace, async {
            while let Some(done) = tasks.join_next().await {
                joined(done);
            }
        })
        .await
        .is_ok();
        if !finished {
            tracing::warn!(
                abandoned = tasks.len(),
                "in-flight events did not finish within the shutdown grace period"
            );
            tasks.abort_all();
        }
        self.healthy.store(false, Ordering::SeqCst);
        tracing::info!(clean = finished, "worker stopped");
        finished
    }

    /// Notes a message whose handling failed on the database or the queue.
    fn handled(&self, m: &Message, r: anyhow::Result<Outcome>) {
        if let Err(err) = r {
            self.store_trouble.store(true, Ordering::SeqCst);
            tracing::error!(error = format!("{err:#}"), message_id = %m.id,
                "could not handle a message; it will be delivered again");
        }
    }
}

/// Reports a finished handler task: one that panicked is a bug someone must see. Its messages
/// were neither acknowledged nor recorded, so they come back after their visibility timeout
/// (and a claim it left is taken over when its lease ends).
fn joined(done: Result<(), tokio::task::JoinError>) {
    let Err(err) = done else { return };
    if err.is_panic() {
        let what = super::panic_message(err.into_panic().as_ref());
        metrics::counter!(crate::telemetry::WORKER_TASK_PANICS_TOTAL).increment(1);
        tracing::error!(panic = %what, "a handler task panicked; its messages will be delivered again");
    }
}
