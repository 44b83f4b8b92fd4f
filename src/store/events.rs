//! What the worker and the relay need from the store: idempotency claims per event id, the
//! outbox, dead events, and retention (the database queue's own part is `db_queue.rs`). Every
//! time here is in ms since the epoch on the database's clock, so that all workers judge leases
//! on one clock.

use super::StoreResult;
use crate::domain::event::Event;
use crate::domain::mail::{Absent, EmailData, Loaded, SendError};
use async_trait::async_trait;
use futures::future::BoxFuture;
use std::borrow::Cow;

/// The most characters of a worker's last error or a dead letter's reason that are stored. A
/// mail server's reply may run to 100 000 bytes, which no operator reads whole and which every
/// read of an event's story or of the dead letters would carry; its start says what went wrong.
pub const STORED_TEXT_MAX_CHARS: usize = 2000;

/// `text` as it is stored (see [`STORED_TEXT_MAX_CHARS`]): whole when it fits; otherwise its
/// start, cut at a character's boundary, and a note of the cut with the whole text's length,
/// ` … [cut: 91234 characters in all]`, the two in no more than the limit.
pub fn stored_text(text: &str) -> Cow<'_, str> {
    if text.char_indices().nth(STORED_TEXT_MAX_CHARS).is_none() {
        return Cow::Borrowed(text);
    }
    let note = format!(" … [cut: {} characters in all]", text.chars().count());
    let keep = STORED_TEXT_MAX_CHARS - note.chars().count();
    let end = text.char_indices().nth(keep).map_or(text.len(), |(i, _)| i);
    Cow::Owned(format!("{}{note}", &text[..end]))
}

/// A message received from the database queue.
#[derive(Debug, Clone)]
pub struct QueuedMessage {
    pub id: i64,
    /// Proves this receive: acknowledging or delaying needs it, so a stale receiver cannot
    /// touch a message that was redelivered to someone else.
    pub receipt: String,
    pub body: String,
    pub receive_count: i64,
    pub event_id: Option<String>,
}

/// The answer to a claim on an event id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This worker holds the lease. `reclaimed`: it took over an expired lease.
    Claimed {
        lease_id: String,
        reclaimed: bool,
        attempts: i64,
    },
    /// The event was already handled (sent, or its application was missing).
    Duplicate,
    /// The event was dead-lettered.
    Dead,
    /// Another worker holds a live lease for this long.
    Deferred { remaining_ms: i64 },
}

/// How a claim ended well.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    Done,
    Missing,
}

impl Finished {
    pub fn as_str(self) -> &'static str {
        match self {
            Finished::Done => "done",
            Finished::Missing => "missing",
        }
    }
}

/// The failed-send count after a failure, and whether the event is now dead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedClaim {
    pub attempts: i64,
    pub dead: bool,
    pub first_failed_at: i64,
}

/// A claim after a panic while handling its event was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PanickedClaim {
    /// The panics counted so far, this one included.
    pub panics: i64,
    /// The failed sends counted so far.
    pub attempts: i64,
    pub dead: bool,
    pub first_failed_at: i64,
}

/// What `process_in_transaction`'s claim found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxClaim {
    /// The failed sends counted so far.
    pub attempts: i64,
    /// The claim took over from a holder that vanished mid-send: an expired lease, or the mark
    /// of a `transaction`-mode worker whose transaction never ended.
    pub reclaimed: bool,
}

/// The send that `process_in_transaction` runs between its claim and its commit; it is given
/// the email's data and what the claim found.
pub type SendFn<'a> =
    Box<dyn FnOnce(EmailData, TxClaim) -> BoxFuture<'a, Result<(), SendError>> + Send + 'a>;

/// What a publish of outbox bodies did: the indexes the queue accepted, and those it refused
/// because the body alone is too long for it, with the queue's words (never accepted on a
/// retry, so dead-lettered rather than left in the outbox).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Published {
    pub accepted: Vec<usize>,
    pub too_long: Vec<(usize, String)>,
}

impl From<Vec<usize>> for Published {
    /// All of these accepted, nothing refused.
    fn from(accepted: Vec<usize>) -> Self {
        Published {
            accepted,
            too_long: Vec::new(),
        }
    }
}

impl FromIterator<usize> for Published {
    fn from_iter<I: IntoIterator<Item = usize>>(accepted: I) -> Self {
        Vec::from_iter(accepted).into()
    }
}

/// Publishes outbox bodies.
pub type PublishFn<'a> =
    Box<dyn FnOnce(Vec<String>) -> BoxFuture<'a, anyhow::Result<Published>> + Send + 'a>;

/// How a transaction-mode attempt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxOutcome {
    Sent,
    Duplicate,
    /// The event was dead-lettered earlier.
    Dead,
    /// Nothing to send: what the event reports is gone, or its person turned the email off.
    Missing(Absent),
    /// A `lease`-mode worker holds the event under a live lease for this long.
    Deferred {
        remaining_ms: i64,
    },
    Failed {
        failure: FailedClaim,
        error: SendError,
    },
    /// The mail service refused the session: the claim was released, no attempt counted.
    Released {
        error: SendError,
    },
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeadLetterRow {
    pub id: i64,
    pub event_id: Option<String>,
    pub reason: String,
    pub attempts: i64,
    pub body: String,
    pub first_failed_at: i64,
    pub last_failed_at: i64,
}

#[derive(Debug, Clone)]
pub struct NewDeadLetter {
    pub event_id: Option<String>,
    pub reason: String,
    pub attempts: i64,
    pub body: String,
    /// When the first failure happened; `None`: now.
    pub first_failed_at: Option<i64>,
    /// Not readable as an event: kept whatever event id it claims (see `DeadLetterReason`).
    pub invalid: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RedriveResult {
    pub redriven: u64,
    pub not_found: u64,
    /// Dead letters with no usable event id, left alone without `--include-invalid`.
    pub skipped_invalid: u64,
}

#[derive(Debug, Clone, Default)]
pub struct QueueStats {
    /// Messages waiting in the database queue (visible or in flight).
    pub pending: i64,
    /// Age of the oldest waiting message.
    pub oldest_age_ms: Option<i64>,
    pub dead_letters: i64,
}

#[async_trait]
pub trait EventStore: Send + Sync {
    /// Claims `event_id` for `lease_ms` (lease mode).
    async fn claim_event(&self, event_id: &str, lease_ms: i64) -> StoreResult<Claim>;
    /// Claims every id in `event_ids` that has no record yet, in one statement, all under one
    /// new lease id. Returns the lease id and the ids claimed; an id with a record (a duplicate,
    /// a live or expired lease, a released or dead event) is left for `claim_event`.
    async fn claim_new_events(
        &self,
        event_ids: &[String],
        lease_ms: i64,
    ) -> StoreResult<(String, Vec<String>)>;
    /// Records the end of several claims held under `lease_id`, in one statement. Returns the
    /// ids whose lease was still ours.
    async fn finish_claims(
        &self,
        event_ids: &[String],
        lease_id: &str,
        finished: Finished,
    ) -> StoreResult<Vec<String>>;
    /// What the emails of several events need, as `(event_id, loaded)`, one for each event:
    /// one query per type present, the application types' batched.
    async fn email_data_many(&self, events: &[Event]) -> StoreResult<Vec<(String, Loaded)>>;
    /// Extends a live claim; `false` if the lease is no longer ours.
    async fn extend_claim(
        &self,
        event_id: &str,
        lease_id: &str,
        lease_ms: i64,
    ) -> StoreResult<bool>;
    /// Records the end of a claim; `false` if the lease is no longer ours.
    async fn finish_claim(
        &self,
        event_id: &str,
        lease_id: &str,
        finished: Finished,
    ) -> StoreResult<bool>;
    /// Releases a claim after a failed send, counting the attempt; dead after `max_attempts` or
    /// a permanent failure. `None` if the lease is no longer ours.
    async fn fail_claim(
        &self,
        event_id: &str,
        lease_id: &str,
        error: &str,
        max_attempts: i64,
        permanent: bool,
    ) -> StoreResult<Option<FailedClaim>>;
    /// Counts a panic while handling the claim held under `lease_id` (`None`: a
    /// transaction-mode mark) and releases it, with `reason` as its last error; dead at the
    /// `limit`th panic. Failed sends (`attempts`) are not counted. `None` if the claim is no longer
    /// that holder's.
    async fn record_panic(
        &self,
        event_id: &str,
        lease_id: Option<&str>,
        reason: &str,
        limit: i64,
    ) -> StoreResult<Option<PanickedClaim>>;
    /// Counts a failed send whose outcome is unknown (the server may have accepted the message)
    /// but keeps the claim until its lease lapses, unextended, so that the retry takes it over as
    /// an expired claim and counts the reclaim; dead (and released) after `max_attempts`. `None`
    /// if the lease is no longer ours.
    async fn keep_failed_claim(
        &self,
        event_id: &str,
        lease_id: &str,
        error: &str,
        max_attempts: i64,
    ) -> StoreResult<Option<FailedClaim>>;
    /// Releases a claim with no attempt counted, noting `error` (the mail service refused the
    /// session, not the message): the claim held under `lease_id`, or with `None` the mark of
    /// a transaction-mode attempt that rolled back. `false` if it is no longer ours.
    async fn release_claim(
        &self,
        event_id: &str,
        lease_id: Option<&str>,
        error: &str,
    ) -> StoreResult<bool>;
    /// Transaction mode: claims, reads the email data, runs `send`, and commits, all in one
    /// transaction; a failed send rolls the claim back and counts the attempt (none when the
    /// mail service refused the session: `Released`). Before that
    /// transaction a mark is committed (`in_progress` with no lease), so that a holder that
    /// dies mid-send leaves a trace: the next claim sees it and reports `reclaimed`.
    async fn process_in_transaction(
        &self,
        event: &Event,
        max_attempts: i64,
        send: SendFn<'_>,
    ) -> StoreResult<TxOutcome>;
    /// What the event's email needs, read now: only while the database holds the event as
    /// committed (a status change's history row, any other event's record) and what it reports
    /// still exists; `Missing(TurnedOff)` when its person turned that email off.
    async fn email_data(&self, event: &Event) -> StoreResult<Loaded>;

    /// Forgets a dead-lettered event's failures, so that a redriven copy starts from zero.
    async fn reset_dead_event(&self, event_id: &str) -> StoreResult<()>;
    /// Notes that `event_id` was redriven (its copy is on the queue), its dead letter having
    /// counted `attempts` failed sends, at `at_ms` (ms since the epoch; `None`: the database's
    /// clock): the trace the event's story keeps, since the redrive forgot its failures.
    /// [`redrive`](Self::redrive) notes its own, in its transaction.
    async fn note_redrive(
        &self,
        event_id: &str,
        attempts: i64,
        at_ms: Option<i64>,
    ) -> StoreResult<()>;
    /// Publishes up to `limit` outbox rows with `publish`, which returns the indexes the queue
    /// accepted; those rows are deleted and the rest made visible again, except a row whose
    /// body the queue refused as too long: it leaves the outbox as a recorded SQS dead letter
    /// (its message id `outbox-{event_id}`, with the queue's reason), in the same transaction. The rows are taken for
    /// `lease_ms` by a statement that commits before `publish` runs, so no transaction waits on
    /// the queue and concurrent relays skip each other's rows (a relay that dies mid-publish
    /// leaves its rows to the next after the lease). Returns how many were published.
    async fn relay_outbox(
        &self,
        limit: i64,
        lease_ms: i64,
        publish: PublishFn<'_>,
    ) -> StoreResult<usize>;
    /// Rows waiting in the outbox.
    async fn outbox_pending(&self) -> StoreResult<i64>;

    /// Deletes up to `batch` finished processed-event records older than `older_than_ms`, and up
    /// to `batch` redrive traces last written before then of events that have no record left;
    /// returns how many rows went.
    async fn delete_processed_events(&self, older_than_ms: i64, batch: i64) -> StoreResult<u64>;
    /// Deletes up to `batch` event records (`events`) written before `older_than` that no
    /// message can need any more: their processed record is gone or finished, no copy waits in
    /// the outbox, and no dead letter holds them (a redrive sends again).
    async fn delete_event_records(
        &self,
        older_than: chrono::DateTime<chrono::Utc>,
        batch: i64,
    ) -> StoreResult<u64>;
    /// The database clock, ms since the epoch.
    async fn now_ms(&self) -> StoreResult<i64>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_that_fits_is_stored_whole() {
        for text in ["", "554 rejected", &"é".repeat(STORED_TEXT_MAX_CHARS)] {
            assert!(matches!(stored_text(text), Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn a_longer_text_keeps_its_start_and_says_it_was_cut() {
        let text = format!("BEGIN {}", "x".repeat(90_000));
        let stored = stored_text(&text);
        assert_eq!(stored.chars().count(), STORED_TEXT_MAX_CHARS);
        assert!(stored.starts_with("BEGIN xxx"));
        assert!(
            stored.ends_with("x … [cut: 90006 characters in all]"),
            "{stored}"
        );
        // One character over is cut too.
        let text = "y".repeat(STORED_TEXT_MAX_CHARS + 1);
        assert_eq!(stored_text(&text).chars().count(), STORED_TEXT_MAX_CHARS);
    }

    #[test]
    fn a_cut_falls_between_characters() {
        // Two-, three- and four-byte characters, whatever the cut lands on.
        for c in ["é", "€", "😀"] {
            for pad in 0..4 {
                let text = format!("{}{}", "a".repeat(pad), c.repeat(3000));
                let stored = stored_text(&text);
                assert_eq!(stored.chars().count(), STORED_TEXT_MAX_CHARS, "{c} {pad}");
                let head = stored.split(" … [cut: ").next().unwrap();
                assert!(head.ends_with(c), "{c} {pad}: whole characters only");
                assert!(stored.ends_with(&format!("[cut: {} characters in all]", pad + 3000)));
            }
        }
    }
}
