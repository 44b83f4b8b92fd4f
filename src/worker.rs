//! The worker: receives status-change events, claims each event id, sends the email, records
//! it, and acknowledges the message, keeping CONTRACT.md §6 for every outcome.
//!
//! Two claim modes (`CLAIM_MODE`):
//! - `lease` (default): the claim commits at once with a lease on the database clock; the send
//!   runs outside any transaction with a deadline, while a heartbeat extends the lease and the
//!   message's visibility; the result is recorded only if the lease is still ours.
//! - `transaction`: the claim, the send and the record share one database transaction, so a
//!   connection is held during every send (the original design).

use crate::config::{ClaimMode, Config};
use crate::domain::event::{StatusChanged, parse_message};
use crate::domain::mail::{EmailData, SendError};
use crate::email::{self, Mailer, Sender};
use crate::queue::{DeadLetterReason, Message, Queue};
use crate::store::{Claim, Finished, SendFn, Store, TxOutcome};
use crate::telemetry as t;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How one message ended (the `outcome` label of `events_handled_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    Sent,
    Duplicate,
    Deferred,
    Missing,
    Failed,
    DeadLettered,
    Invalid,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Sent => "sent",
            Outcome::Duplicate => "duplicate",
            Outcome::Deferred => "deferred",
            Outcome::Missing => "missing",
            Outcome::Failed => "failed",
            Outcome::DeadLettered => "dead_lettered",
            Outcome::Invalid => "invalid",
        }
    }
}

/// Counts one handled message in the metrics.
fn count(kind: &'static str, outcome: Outcome, start: Instant) {
    metrics::counter!(t::EVENTS_HANDLED_TOTAL, "type" => kind, "outcome" => outcome.as_str())
        .increment(1);
    metrics::histogram!(t::EVENT_HANDLE_DURATION_SECONDS).record(start.elapsed().as_secs_f64());
}

/// Records older than the retention are deleted in batches of this many.
const RETENTION_BATCH: i64 = 1000;
const MAX_BACKOFF_SECS: f64 = 900.0;

pub struct Worker {
    store: Arc<dyn Store>,
    queue: Arc<dyn Queue>,
    mailer: Arc<dyn Mailer>,
    sender: Sender,
    mode: ClaimMode,
    batch: bool,
    visibility: Duration,
    send_timeout: Duration,
    max_attempts: i64,
    concurrency: usize,
    retention: Duration,
    grace: Duration,
    /// False while the queue (the database, with `QUEUE=db`) cannot be reached.
    pub healthy: Arc<AtomicBool>,
    /// Set when handling a message failed: the database is checked before receiving more.
    store_trouble: AtomicBool,
}

impl Worker {
    pub fn new(
        config: &Config,
        store: Arc<dyn Store>,
        queue: Arc<dyn Queue>,
        mailer: Arc<dyn Mailer>,
    ) -> Worker {
        Worker {
            store,
            queue,
            mailer,
            sender: Sender::from_config(config),
            mode: config.claim_mode,
            batch: config.worker_batch && config.claim_mode == ClaimMode::Lease,
            visibility: Duration::from_secs(config.visibility_timeout_secs),
            send_timeout: Duration::from_secs(config.email_send_timeout_secs),
            max_attempts: config.max_attempts as i64,
            concurrency: config.worker_concurrency,
            retention: Duration::from_secs(config.processed_events_retention_days * 86_400),
            grace: Duration::from_secs(config.shutdown_grace_secs),
            healthy: Arc::new(AtomicBool::new(true)),
            store_trouble: AtomicBool::new(false),
        }
    }

    pub fn queue(&self) -> &Arc<dyn Queue> {
        &self.queue
    }

    /// The delay before retry `n` (1-based): `min(visibility · 2^(n−1), 900)` s ± 10 %.
    pub fn backoff(&self, attempts: i64) -> Duration {
        let exp = (attempts.clamp(1, 32) - 1) as i32;
        let base = (self.visibility.as_secs_f64() * 2f64.powi(exp)).min(MAX_BACKOFF_SECS);
        let jitter: f64 = rand::Rng::gen_range(&mut rand::thread_rng(), 0.9..=1.1);
        Duration::from_secs_f64(base * jitter)
    }

    /// Handles one message. An error means the infrastructure failed (not the send): the message
    /// is left to reappear after its visibility timeout, and nothing counts as an attempt.
    pub async fn handle(&self, m: &Message) -> anyhow::Result<Outcome> {
        let start = Instant::now();
        let (kind, outcome) = match parse_message(&m.body) {
            Err(invalid) => {
                tracing::warn!(event_id = invalid.event_id.as_deref().unwrap_or("-"), reason = %invalid.reason,
                    "invalid message dead-lettered: {}", invalid.reason);
                self.queue
                    .dead_letter(
                        m,
                        DeadLetterReason {
                            event_id: invalid.event_id,
                            reason: format!("invalid message: {}", invalid.reason),
                            attempts: 0,
                            first_failed_at: None,
                            copy_of_dead: false,
                        },
                    )
                    .await?;
                ("unknown", Outcome::Invalid)
            }
            Ok(event) => {
                let span = tracing::info_span!("event", event_id = %event.event_id, application_id = event.application_id);
                let outcome = match self.mode {
                    ClaimMode::Lease => self.handle_lease(m, &event).instrument(span).await?,
                    ClaimMode::Transaction => {
                        self.handle_transaction(m, &event).instrument(span).await?
                    }
                };
                (crate::domain::event::STATUS_CHANGED, outcome)
            }
        };
        count(kind, outcome, start);
        Ok(outcome)
    }

    /// Handles one receive's messages. In lease mode with `WORKER_BATCH`, the new events of the
    /// batch are claimed in one statement, their email data read in one query, the sent ones
    /// recorded in one statement and acknowledged in one call; each event is still sent once,
    /// and a failed send releases only its own claim. Anything unusual (an invalid message, an
    /// event seen before, a copy of an event in the same batch) goes through `handle`.
    pub async fn handle_batch(&self, batch: &[Message]) -> Vec<anyhow::Result<Outcome>> {
        if !self.batch || batch.len() < 2 {
            return futures::future::join_all(batch.iter().map(|m| self.handle(m))).await;
        }
        let start = Instant::now();
        let mut seen = std::collections::HashSet::new();
        let mut alone = Vec::new();
        let mut fresh: Vec<(usize, StatusChanged)> = Vec::new();
        for (i, m) in batch.iter().enumerate() {
            match parse_message(&m.body) {
                Ok(e) if seen.insert(e.event_id.clone()) => fresh.push((i, e)),
                _ => alone.push(i),
            }
        }
        let ids: Vec<String> = fresh.iter().map(|(_, e)| e.event_id.clone()).collect();
        let lease_ms = self.visibility.as_millis() as i64;
        let mut results: Vec<Option<anyhow::Result<Outcome>>> =
            batch.iter().map(|_| None).collect();
        let (lease_id, claimed) = match self.store.claim_new_events(&ids, lease_ms).await {
            Ok((lease_id, claimed)) => (lease_id, claimed),
            Err(err) => {
                let err = anyhow::Error::from(err);
                for (i, _) in &fresh {
                    results[*i] = Some(Err(anyhow::anyhow!("{err:#}")));
                }
                (String::new(), Vec::new())
            }
        };
        let claimed: std::collections::HashSet<String> = claimed.into_iter().collect();
        let mut mine = Vec::new();
        for (i, e) in fresh {
            if claimed.contains(&e.event_id) {
                mine.push((i, e));
            } else if results[i].is_none() {
                alone.push(i);
            }
        }
        let singles = futures::future::join_all(alone.iter().map(|&i| self.handle(&batch[i])));
        let together = self.handle_claimed(batch, &mine, &lease_id);
        let (single_results, claimed_results) = futures::future::join(singles, together).await;
        for (i, r) in alone.into_iter().zip(single_results) {
            results[i] = Some(r);
        }
        for ((i, _), r) in mine.iter().zip(claimed_results) {
            if let Ok(outcome) = &r {
                count(crate::domain::event::STATUS_CHANGED, *outcome, start);
            }
            results[*i] = Some(r);
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(anyhow::anyhow!("message left unhandled"))))
            .collect()
    }

    /// The rest of `handle_batch` for the events claimed under `lease_id`.
    async fn handle_claimed(
        &self,
        batch: &[Message],
        mine: &[(usize, StatusChanged)],
        lease_id: &str,
    ) -> Vec<anyhow::Result<Outcome>> {
        if mine.is_empty() {
            return Vec::new();
        }
        let all_failed = |err: anyhow::Error| {
            mine.iter()
                .map(|_| Err(anyhow::anyhow!("{err:#}")))
                .collect::<Vec<_>>()
        };
        let wanted: Vec<(i64, String)> = mine
            .iter()
            .map(|(_, e)| (e.application_id, e.event_id.clone()))
            .collect();
        let mut data: std::collections::HashMap<String, EmailData> =
            match self.store.email_data_many(&wanted).await {
                Ok(rows) => rows.into_iter().collect(),
                Err(err) => return all_failed(err.into()),
            };
        let sends = mine.iter().map(|(i, e)| {
            let data = data.remove(&e.event_id);
            async move {
                let m = &batch[*i];
                let span = tracing::info_span!("event", event_id = %e.event_id, application_id = e.application_id);
                let Some(data) = data else {
                    return (None, self.missing(m, e, lease_id).instrument(span).await);
                };
                let sent = self
                    .send_with_heartbeat(m, e, lease_id, &data)
                    .instrument(span.clone())
                    .await;
                match sent {
                    Ok(()) => (Some(data), Ok(Outcome::Sent)),
                    Err(error) => (
                        None,
                        self.failed_send(m, e, lease_id, error)
                            .instrument(span)
                            .await,
                    ),
                }
            }
        });
        // The data of each sent email (none if it was not sent), and each outcome.
        let mut results: Vec<(Option<EmailData>, anyhow::Result<Outcome>)> =
            futures::future::join_all(sends).await;
        let sent: Vec<usize> = results
            .iter()
            .enumerate()
            .filter(|(_, (d, _))| d.is_some())
            .map(|(k, _)| k)
            .collect();
        if sent.is_empty() {
            return results.into_iter().map(|(_, r)| r).collect();
        }
        let sent_ids: Vec<String> = sent.iter().map(|&k| mine[k].1.event_id.clone()).collect();
        let recorded = match self
            .store
            .finish_claims(&sent_ids, lease_id, Finished::Done)
            .await
        {
            Ok(ids) => ids.into_iter().collect::<std::collections::HashSet<_>>(),
            Err(err) => {
                let err = anyhow::Error::from(err);
                for &k in &sent {
                    results[k].1 = Err(anyhow::anyhow!("{err:#}"));
                }
                return results.into_iter().map(|(_, r)| r).collect();
            }
        };
        for id in &sent_ids {
            if !recorded.contains(id) {
                tracing::warn!(event_id = %id,
                    "the lease ended before the send was recorded; another attempt may send it again");
            }
        }
        let acked: Vec<Message> = sent.iter().map(|&k| batch[mine[k].0].clone()).collect();
        if let Err(err) = self.queue.ack_many(&acked).await {
            for &k in &sent {
                results[k].1 = Err(anyhow::anyhow!("{err:#}"));
            }
            return results.into_iter().map(|(_, r)| r).collect();
        }
        for &k in &sent {
            if let Some(data) = &results[k].0 {
                self.log_sent(data, &mine[k].1);
            }
        }
        results.into_iter().map(|(_, r)| r).collect()
    }

    /// The event's application or history row is gone: nothing to send.
    async fn missing(
        &self,
        m: &Message,
        e: &StatusChanged,
        lease_id: &str,
    ) -> anyhow::Result<Outcome> {
        self.store
            .finish_claim(&e.event_id, lease_id, Finished::Missing)
            .await?;
        self.queue.ack(m).await?;
        tracing::warn!(
            "application {} or its history row for event {} no longer exists; nothing to send",
            e.application_id,
            e.event_id
        );
        Ok(Outcome::Missing)
    }

    /// A failed send under a lease: releases this claim only, counting the attempt.
    async fn failed_send(
        &self,
        m: &Message,
        e: &StatusChanged,
        lease_id: &str,
        error: SendError,
    ) -> anyhow::Result<Outcome> {
        let permanent = matches!(error, SendError::Permanent(_));
        let failed = self
            .store
            .fail_claim(
                &e.event_id,
                lease_id,
                &error.to_string(),
                self.max_attempts,
                permanent,
            )
            .await?;
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

    async fn handle_lease(&self, m: &Message, e: &StatusChanged) -> anyhow::Result<Outcome> {
        let lease_ms = self.visibility.as_millis() as i64;
        let (lease_id, reclaimed) = match self.store.claim_event(&e.event_id, lease_ms).await? {
            Claim::Duplicate => {
                self.queue.ack(m).await?;
                tracing::info!("already processed; skipping duplicate");
                return Ok(Outcome::Duplicate);
            }
            Claim::Dead => return self.dead_letter_copy(m, e).await,
            Claim::Deferred { remaining_ms } => {
                let delay = Duration::from_millis(remaining_ms.max(0) as u64 + 100);
                self.queue.retry_later(m, delay).await?;
                tracing::info!(
                    delay_ms = delay.as_millis() as u64,
                    "event claimed by another worker; deferred until its lease ends"
                );
                return Ok(Outcome::Deferred);
            }
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
        let Some(data) = self.store.email_data(e.application_id, &e.event_id).await? else {
            return self.missing(m, e, &lease_id).await;
        };
        let result = self.send_with_heartbeat(m, e, &lease_id, &data).await;
        match result {
            Ok(()) => {
                if !self
                    .store
                    .finish_claim(&e.event_id, &lease_id, Finished::Done)
                    .await?
                {
                    tracing::warn!(
                        "the lease ended before the send was recorded; another attempt may send it again"
                    );
                }
                self.queue.ack(m).await?;
                self.log_sent(&data, e);
                Ok(Outcome::Sent)
            }
            Err(error) => self.failed_send(m, e, &lease_id, error).await,
        }
    }

    async fn after_failure(
        &self,
        m: &Message,
        e: &StatusChanged,
        error: &SendError,
        attempts: i64,
        dead: bool,
        first_failed_at: Option<i64>,
    ) -> anyhow::Result<Outcome> {
        if dead {
            let reason = match error {
                SendError::Permanent(_) => format!("rejected by the mail server: {error}"),
                SendError::Transient(_) => {
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
                        copy_of_dead: false,
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

    /// Sends with a deadline while a heartbeat keeps the claim and the message ours.
    async fn send_with_heartbeat(
        &self,
        m: &Message,
        e: &StatusChanged,
        lease_id: &str,
        data: &EmailData,
    ) -> Result<(), SendError> {
        let message =
            email::status_email(&self.sender, data, &e.event_id, e.old_status, e.new_status)
                .map_err(|err| SendError::Permanent(format!("{err:#}")))?;
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
                    Ok(false) => tracing::warn!("lost the lease during the send"),
                    Err(err) => tracing::warn!(error = %err, "could not extend the lease"),
                }
                if let Err(err) = self.queue.extend(m, self.visibility).await {
                    tracing::warn!(error = %err, "could not extend the message's visibility");
                }
            }
        };
        tokio::select! {
            sent = tokio::time::timeout(self.send_timeout, self.mailer.send(&message)) => {
                sent.unwrap_or_else(|_| Err(SendError::Transient(format!("timed out after {}s", self.send_timeout.as_secs()))))
            }
            _ = beat => unreachable!("the heartbeat never ends"),
        }
    }

    async fn handle_transaction(&self, m: &Message, e: &StatusChanged) -> anyhow::Result<Outcome> {
        let mailer = self.mailer.clone();
        let sender = self.sender.clone();
        let timeout = self.send_timeout;
        let event = e.clone();
        let sent_to: Arc<std::sync::Mutex<Option<EmailData>>> = Arc::default();
        let record = sent_to.clone();
        let deliveries = m.receive_count;
        let send: SendFn<'_> = Box::new(move |data: EmailData, attempts: i64| {
            Box::pin(async move {
                // Each failed send accounts for one delivery. A delivery beyond those found no
                // recorded outcome: an earlier holder died (or lost the database) mid-send, and
                // its claim ended with its transaction.
                if deliveries > attempts + 1 {
                    tracing::warn!("reclaiming expired claim");
                    metrics::counter!(t::EVENTS_RECLAIMED_TOTAL).increment(1);
                }
                let message = email::status_email(
                    &sender,
                    &data,
                    &event.event_id,
                    event.old_status,
                    event.new_status,
                )
                .map_err(|err| SendError::Permanent(format!("{err:#}")))?;
                let result = tokio::time::timeout(timeout, mailer.send(&message))
                    .await
                    .unwrap_or_else(|_| {
                        Err(SendError::Transient(format!(
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
                    tracing::warn!(error = %err, "could not extend the message's visibility");
                }
            }
        };
        let outcome = tokio::select! {
            o = self.store.process_in_transaction(&e.event_id, e.application_id, self.max_attempts, send) => o?,
            _ = keep_hidden => unreachable!("the heartbeat never ends"),
        };
        match outcome {
            TxOutcome::Sent => {
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
            TxOutcome::Missing => {
                self.queue.ack(m).await?;
                tracing::warn!(
                    "application {} or its history row for event {} no longer exists; nothing to send",
                    e.application_id,
                    e.event_id
                );
                Ok(Outcome::Missing)
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

    /// A copy of an event that was dead-lettered: it goes to the dead letters too (where the
    /// store keeps one per event), so that nothing is lost even if the first dead-lettering
    /// never completed.
    async fn dead_letter_copy(&self, m: &Message, e: &StatusChanged) -> anyhow::Result<Outcome> {
        self.queue
            .dead_letter(
                m,
                DeadLetterReason {
                    event_id: Some(e.event_id.clone()),
                    reason: "the event was dead-lettered earlier; this is a later copy".to_string(),
                    attempts: 0,
                    first_failed_at: None,
                    copy_of_dead: true,
                },
            )
            .await?;
        tracing::info!("already dead-lettered; this copy joins it");
        Ok(Outcome::DeadLettered)
    }

    fn log_sent(&self, data: &EmailData, e: &StatusChanged) {
        tracing::info!(
            "emailed user {} about application {}: {} -> {} (event {})",
            data.candidate_id,
            e.application_id,
            e.old_status,
            e.new_status,
            e.event_id
        );
    }

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
        tracing::info!(queue = self.queue.kind(), mailer = self.mailer.kind(), concurrency = self.concurrency,
            mode = ?self.mode, "worker started");
        loop {
            while tasks.try_join_next().is_some() {}
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
            let want = (slots.available_permits() + 1)
                .min(most)
                .min(self.queue.max_receive());
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
            for m in batch {
                let slot = permit
                    .take()
                    .or_else(|| slots.clone().try_acquire_owned().ok());
                match slot {
                    Some(slot) if !shutdown.is_cancelled() => started.push((m, slot)),
                    // Received but not started: back to the queue, not an attempt.
                    _ => {
                        let _ = self.queue.retry_later(&m, Duration::ZERO).await;
                    }
                }
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
            while tasks.join_next().await.is_some() {}
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

    /// Deletes processed-event records older than the retention, in bounded batches.
    pub async fn delete_expired(&self) -> anyhow::Result<u64> {
        let cutoff = self.store.now_ms().await? - self.retention.as_millis() as i64;
        let mut total = 0;
        loop {
            let n = self
                .store
                .delete_processed_events(cutoff, RETENTION_BATCH)
                .await?;
            total += n;
            if n < RETENTION_BATCH as u64 {
                break;
            }
        }
        metrics::counter!(t::PROCESSED_EVENTS_DELETED_TOTAL).increment(total);
        Ok(total)
    }

    /// Deletes idempotency keys older than 24 h, in bounded batches.
    pub async fn delete_expired_keys(&self) -> anyhow::Result<u64> {
        let cutoff = self.store.now_ms().await? - crate::store::KEY_TTL_MS;
        let mut total = 0;
        loop {
            let n = self
                .store
                .delete_idempotency_keys(cutoff, RETENTION_BATCH)
                .await?;
            total += n;
            if n < RETENTION_BATCH as u64 {
                return Ok(total);
            }
        }
    }

    /// Hourly retention and queue gauges every 15 s, until `shutdown`.
    pub async fn maintain(self: Arc<Self>, shutdown: CancellationToken) {
        let mut hourly = tokio::time::interval(Duration::from_secs(3600));
        let mut gauges = tokio::time::interval(Duration::from_secs(15));
        loop {
            tokio::select! {
                _ = hourly.tick() => match (self.delete_expired().await, self.delete_expired_keys().await) {
                    (Ok(n), Ok(k)) => tracing::info!(deleted = n, keys = k, "deleted {n} expired processed-event records, {k} idempotency keys"),
                    (Err(e), _) | (_, Err(e)) => tracing::warn!(error = format!("{e:#}"), "retention cleanup failed; will try again"),
                },
                _ = gauges.tick() => {
                    if let Ok((pending, oldest, dead)) = self.queue.stats().await {
                        // With SQS the outbox is the relay's to report; here the depth is the queue's.
                        if self.queue.kind() == "db" {
                            metrics::gauge!(t::OUTBOX_PENDING).set(pending as f64);
                        }
                        metrics::gauge!(t::DEAD_LETTERS).set(dead as f64);
                        metrics::gauge!(t::QUEUE_OLDEST_AGE_SECONDS).set(oldest.map(|d| d.as_secs_f64()).unwrap_or(0.0));
                    }
                }
                _ = shutdown.cancelled() => return,
            }
        }
    }
}
