//! The worker: receives the events of docs/guarantee.md, claims each event id, sends its email,
//! records it, and acknowledges the message, keeping docs/guarantee.md for every outcome. Every
//! type takes the same path: only loading its data (the store) and rendering its text
//! (`email::templates`) know one type from another.
//!
//! Two claim modes (`CLAIM_MODE`):
//! - `lease` (default): the claim commits at once with a lease on the database clock; the send
//!   runs outside any transaction with a deadline, while a heartbeat extends the lease and the
//!   message's visibility; the result is recorded only if the lease is still ours.
//! - `transaction`: the claim, the send and the record share one database transaction, so a
//!   connection is held during every send (the original design).

mod alert_digests;
mod batch;
mod digests;
mod heartbeat;
mod lease;
mod mail;
mod record;
mod run_loop;
mod transaction;
mod upkeep;
mod upkeep_files;
pub mod upkeep_jobs;
pub mod webhooks;

pub use alert_digests::{
    ALERTS_PER_BATCH, WINDOW_JOBS_PER_PAGE, write_alert_digests, write_alert_digests_paged,
};
pub use digests::{DIGEST_GRACE, DIGEST_LOOKBACK_HOURS};

use crate::config::{ClaimMode, Config};
use crate::domain::event::{Event, parse_event};
use crate::domain::mail::{Absent, EmailData};
use crate::email::{Mailer, Sender, templates};
use crate::queue::{DeadLetterReason, Message, Queue};
use crate::store::WorkerStore;
use crate::telemetry as t;
use futures::FutureExt;
use secrecy::ExposeSecret;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::time::{Duration, Instant};
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
    /// The mail service refused the session: released, no attempt counted.
    MailUnavailable,
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
            Outcome::MailUnavailable => "mail_unavailable",
        }
    }
}

/// The span of one event's handling: its id and type in every log line.
fn span(e: &Event) -> tracing::Span {
    tracing::info_span!("event", event_id = %e.event_id, r#type = e.type_name())
}

/// Counts one handled message in the metrics.
fn count(kind: &'static str, outcome: Outcome, start: Instant) {
    metrics::counter!(t::EVENTS_HANDLED_TOTAL, "type" => kind, "outcome" => outcome.as_str())
        .increment(1);
    metrics::histogram!(t::EVENT_HANDLE_DURATION_SECONDS).record(start.elapsed().as_secs_f64());
}

const MAX_BACKOFF_SECS: f64 = 900.0;

/// The panics while handling one event after which it is dead-lettered (docs/guarantee.md,
/// "A panic while handling an event"): each releases its claim, and the event is retried with
/// the backoff of a failed send.
pub const PANIC_LIMIT: i64 = 3;

/// What a panic said, for a log line and a dead letter's reason (addresses masked).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    let text = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a non-text panic payload".to_string());
    crate::email::mask_addresses(&text)
}

pub struct Worker {
    store: Arc<dyn WorkerStore>,
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
    /// False while the mail service refuses its session (`checks.mail` of `/readyz`), from the
    /// first refused session until a send or a probe of the session succeeds.
    pub mail_up: Arc<AtomicBool>,
    /// The receive loop's current wait between probes of a refusing mail service, in ms: also
    /// how long a message that met the refusal stays invisible.
    mail_wait_ms: AtomicU64,
    /// How many outages of the mail service have ended: a refusal from a session begun before
    /// the last recovery does not start a new outage.
    mail_recoveries: AtomicU64,
    /// Wakes the receive loop from its wait between probes when a send ends the outage.
    mail_recovered: tokio::sync::Notify,
    /// The upkeep's job steps (`upkeep_jobs.rs`).
    jobs: upkeep_jobs::JobUpkeep,
    /// What the digests' unsubscribe links are made of: `PUBLIC_BASE_URL` and the secret that
    /// signs them (`UNSUBSCRIBE_SECRET`, else `JWT_SECRET`; in one process, the API's own).
    /// Without a secret the API could check, digests go out without the link.
    links: Option<Links>,
    /// `WEBHOOK_ALLOW_PRIVATE`: deliveries may reach private addresses over `http`.
    webhook_allow_private: bool,
    /// `WEBHOOK_TIMEOUT_SECS` and `WEBHOOK_RETRY_SECS`: an attempt's deadline, a first retry's wait.
    pub(crate) webhook_timeout: Duration,
    webhook_retry_secs: u64,
    /// `APPLICATION_RETENTION_DAYS` and the file store (`upkeep_files.rs`).
    keep: upkeep_files::Keep,
}

/// `PUBLIC_BASE_URL` and the secret that signs unsubscribe tokens.
struct Links {
    base_url: String,
    secret: secrecy::SecretSlice<u8>,
}

impl Worker {
    pub fn new(
        config: &Config,
        store: Arc<dyn WorkerStore>,
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
            mail_up: Arc::new(AtomicBool::new(true)),
            mail_wait_ms: AtomicU64::new(mail::MAIL_FIRST_WAIT.as_millis() as u64),
            mail_recoveries: AtomicU64::new(0),
            mail_recovered: tokio::sync::Notify::new(),
            jobs: upkeep_jobs::JobUpkeep::from_config(config),
            webhook_allow_private: config.webhook_allow_private,
            webhook_timeout: Duration::from_secs(config.webhook_timeout_secs),
            webhook_retry_secs: config.webhook_retry_secs,
            keep: upkeep_files::Keep::from_config(config),
            links: (config.unsubscribe_secret.as_ref())
                .or(config.jwt_secret.as_ref())
                .map(|secret| Links {
                    base_url: config.public_base_url.clone(),
                    secret: secrecy::SecretSlice::from(secret.expose_secret().as_bytes().to_vec()),
                }),
        }
    }

    /// Signs the unsubscribe links with `secret`: in one process with the API, the API's own
    /// signing key (`UNSUBSCRIBE_SECRET`, else `JWT_SECRET` or a random one when that is not
    /// set), so that the links it checks are the ones this worker wrote.
    pub fn with_link_secret(mut self, base_url: &str, secret: &[u8]) -> Worker {
        self.links = Some(Links {
            base_url: base_url.to_string(),
            secret: secrecy::SecretSlice::from(secret.to_vec()),
        });
        self
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
        let (kind, outcome) = match parse_event(&m.body) {
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
                            invalid: true,
                        },
                    )
                    .await?;
                ("unknown", Outcome::Invalid)
            }
            Ok(event) => {
                let outcome = match self.mode {
                    ClaimMode::Lease => {
                        self.handle_lease(m, &event)
                            .instrument(span(&event))
                            .await?
                    }
                    ClaimMode::Transaction => {
                        // A panic unwinds through the send's transaction, which is dropped and so
                        // rolled back; the mark it left (no lease) is counted here.
                        let handled = AssertUnwindSafe(self.handle_transaction(m, &event))
                            .catch_unwind()
                            .instrument(span(&event))
                            .await;
                        match handled {
                            Ok(outcome) => outcome?,
                            Err(panic) => {
                                self.panicked(m, &event, None, panic)
                                    .instrument(span(&event))
                                    .await?
                            }
                        }
                    }
                };
                (event.type_name(), outcome)
            }
        };
        count(kind, outcome, start);
        Ok(outcome)
    }

    /// Handling `e` panicked (a bug, or stored data the code did not expect), under the claim of
    /// `lease_id` (`None`: a transaction-mode mark). Nothing of it is left behind: its futures
    /// were dropped during the unwinding, and with them any transaction they held, which rolls
    /// back (and a connection returned inside one is closed, `store::connect`). The panic is
    /// counted and the claim released, to be retried after a backoff like a failed send; at the
    /// [`PANIC_LIMIT`]th panic the event is dead-lettered with `panicked: <message>`.
    pub(super) async fn panicked(
        &self,
        m: &Message,
        e: &Event,
        lease_id: Option<&str>,
        panic: Box<dyn std::any::Any + Send>,
    ) -> anyhow::Result<Outcome> {
        let what = panic_message(panic.as_ref());
        metrics::counter!(t::WORKER_TASK_PANICS_TOTAL).increment(1);
        let reason = format!("panicked: {what}");
        let counted = self
            .store
            .record_panic(&e.event_id, lease_id, &reason, PANIC_LIMIT)
            .await?;
        let Some(claim) = counted else {
            tracing::error!(panic = %what,
                "handling the event panicked after its claim ended; the message will be delivered again");
            return Ok(Outcome::Failed);
        };
        if claim.dead {
            self.queue
                .dead_letter(
                    m,
                    DeadLetterReason {
                        event_id: Some(e.event_id.clone()),
                        reason: format!("{reason} ({} times)", claim.panics),
                        attempts: claim.attempts,
                        first_failed_at: Some(claim.first_failed_at),
                        invalid: false,
                    },
                )
                .await?;
            tracing::error!(panics = claim.panics, panic = %what,
                "handling the event panicked {} times; dead-lettered", claim.panics);
            return Ok(Outcome::DeadLettered);
        }
        let delay = self.backoff(claim.panics);
        self.queue.retry_later(m, delay).await?;
        tracing::error!(panics = claim.panics, panic = %what, retry_in_secs = delay.as_secs(),
            "handling the event panicked ({} of {PANIC_LIMIT}); claim released, retrying in {}s",
            claim.panics, delay.as_secs());
        Ok(Outcome::Failed)
    }

    /// A copy of an event that was dead-lettered: it goes to the dead letters too (where the
    /// store keeps one per event), so that nothing is lost even if the first dead-lettering
    /// never completed.
    async fn dead_letter_copy(&self, m: &Message, e: &Event) -> anyhow::Result<Outcome> {
        self.queue
            .dead_letter(
                m,
                DeadLetterReason {
                    event_id: Some(e.event_id.clone()),
                    reason: "the event was dead-lettered earlier; this is a later copy".to_string(),
                    attempts: 0,
                    first_failed_at: None,
                    invalid: false,
                },
            )
            .await?;
        tracing::info!("already dead-lettered; this copy joins it");
        Ok(Outcome::DeadLettered)
    }

    /// The email of `e`, rendered from `data`; a message that cannot be built fails for good.
    fn message(
        &self,
        e: &Event,
        data: &EmailData,
    ) -> Result<lettre::Message, crate::domain::mail::SendError> {
        let link = self.unsubscribe_link(e);
        crate::email::event_email(&self.sender, e, data, link.as_deref())
            .map_err(|err| crate::email::not_sent(&err))
    }

    /// The link that stops the kind of email `e` is (digests carry one, docs/guarantee.md): with
    /// it the email carries `List-Unsubscribe` and `List-Unsubscribe-Post`.
    fn unsubscribe_link(&self, e: &Event) -> Option<String> {
        let target = templates::unsubscribe(&e.kind)?;
        let links = self.links.as_ref()?;
        Some(crate::unsubscribe::link(
            &links.base_url,
            links.secret.expose_secret(),
            target,
        ))
    }

    /// docs/guarantee.md's line: the user and what the event is about, by id, never an address.
    fn log_sent(&self, data: &EmailData, e: &Event) {
        tracing::info!(
            "emailed user {} about {} (event {})",
            data.to.user_id,
            templates::about(&e.kind),
            e.event_id
        );
    }

    /// Nothing to send for the event, in either mode.
    fn log_missing(&self, e: &Event, absent: Absent) {
        match absent {
            Absent::Gone => tracing::warn!(
                "{} for event {} no longer exists; nothing to send",
                templates::reported(&e.kind),
                e.event_id
            ),
            Absent::TurnedOff => tracing::warn!(
                "the person turned this email off; nothing to send for {} (event {})",
                templates::about(&e.kind),
                e.event_id
            ),
        }
    }

    /// Another worker holds the event under a live lease, in either mode: the message comes
    /// back when that lease ends.
    async fn defer(&self, m: &Message, remaining_ms: i64) -> anyhow::Result<Outcome> {
        let delay = Duration::from_millis(remaining_ms.max(0) as u64 + 100);
        self.queue.retry_later(m, delay).await?;
        tracing::info!(
            delay_ms = delay.as_millis() as u64,
            "event claimed by another worker; deferred until its lease ends"
        );
        Ok(Outcome::Deferred)
    }
}
