//! Idempotency records of retry-safe writes (`Idempotency-Key`). Times are ms on the database
//! clock.

use super::StoreResult;
use async_trait::async_trait;

/// How long an idempotency key lives.
pub const KEY_TTL_MS: i64 = 24 * 3600 * 1000;

/// What a request with an `Idempotency-Key` finds when it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdemBegin {
    /// The key is this request's: run it, and store its response under `record_id`.
    Started { record_id: i64, token: String },
    /// The first response, to be replayed.
    Replay { status: u16, body: String },
    /// The key was used with a different body.
    Mismatch,
    /// Another request with this key is still running.
    InFlight,
}

#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Takes the key for (user, method, route) unless a live record has it. A record older than
    /// `ttl_ms` is expired and replaced; an in-flight record whose request died (its lock ran
    /// out) is taken over.
    #[allow(clippy::too_many_arguments)]
    async fn idem_begin(
        &self,
        user_id: i64,
        method: &str,
        route: &str,
        key: &str,
        request_hash: &str,
        lock_ms: i64,
        ttl_ms: i64,
    ) -> StoreResult<IdemBegin>;
    /// Stores a response that came with no write (a 4xx).
    async fn idem_complete(
        &self,
        record_id: i64,
        token: &str,
        status: u16,
        body: &str,
    ) -> StoreResult<()>;
    /// Frees the key (a 5xx stores nothing), if this request still holds it.
    async fn idem_release(&self, record_id: i64, token: &str) -> StoreResult<()>;
    /// Deletes up to `batch` records created before `older_than_ms`.
    async fn delete_idempotency_keys(&self, older_than_ms: i64, batch: i64) -> StoreResult<u64>;
}

/// Stores an idempotent request's first response in the same transaction as its write.
pub struct Completion<'a, T> {
    /// The idempotency record the request holds, and the token that proves it still does.
    pub record_id: i64,
    pub token: &'a str,
    pub status: u16,
    /// Renders the response body from what the write produced, inside its transaction.
    pub render: &'a (dyn Fn(&T) -> String + Send + Sync),
}

/// An optional completion, passed to every write a client may retry with an `Idempotency-Key`.
pub type Idem<'a, T> = Option<&'a Completion<'a, T>>;
