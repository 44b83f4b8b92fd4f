//! Retention: deleting expired rows in bounded batches. Each kind of data has one owner that
//! runs its part: the API (`serve`, and the all-in-one process) its idempotency keys and sign-in
//! failure counters, the worker its processed-event records and the event records (`events`)
//! no message needs any more; `cleanup` runs them all and needs nothing but the database.

use super::{EventStore, JobLogStore, KEY_TTL_MS, Store, StoreResult};
use std::time::Duration;

/// Rows are deleted in batches of this many.
const BATCH: i64 = 1000;

/// Runs `delete` (one batch of at most [`BATCH`]) until a batch comes back short.
async fn in_batches<F, Fut>(mut delete: F) -> StoreResult<u64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = StoreResult<u64>>,
{
    let mut total = 0;
    loop {
        let n = delete().await?;
        total += n;
        if n < BATCH as u64 {
            return Ok(total);
        }
    }
}

/// The time `retention` before `now_ms` (the database's clock, ms since the epoch).
fn time_before(now_ms: i64, retention: Duration) -> StoreResult<chrono::DateTime<chrono::Utc>> {
    chrono::DateTime::from_timestamp_millis(now_ms - retention.as_millis() as i64)
        .ok_or_else(|| anyhow::anyhow!("the database clock reads {now_ms} ms, out of range").into())
}

/// Deletes finished processed-event records older than `retention`.
pub async fn delete_expired_events(
    store: &dyn EventStore,
    retention: Duration,
) -> StoreResult<u64> {
    let cutoff = store.now_ms().await? - retention.as_millis() as i64;
    in_batches(|| store.delete_processed_events(cutoff, BATCH)).await
}

/// Deletes the event records (`events`) older than `retention` that no message can need any
/// more (see [`EventStore::delete_event_records`](super::EventStore::delete_event_records)).
pub async fn delete_expired_event_records(
    store: &dyn EventStore,
    retention: Duration,
) -> StoreResult<u64> {
    let cutoff = time_before(store.now_ms().await?, retention)?;
    in_batches(|| store.delete_event_records(cutoff, BATCH)).await
}

/// Deletes the webhook deliveries that ended (delivered or given up) longer than `retention`
/// ago, with their attempts.
pub async fn delete_finished_deliveries(
    store: &dyn super::WorkerStore,
    retention: Duration,
) -> StoreResult<u64> {
    let cutoff = time_before(store.now_ms().await?, retention)?;
    in_batches(|| store.delete_finished_deliveries(cutoff, BATCH)).await
}

/// Deletes the applications that have been in a final status for longer than `retention`, with
/// their history.
pub async fn delete_retired_applications(
    store: &dyn super::WorkerStore,
    retention: Duration,
) -> StoreResult<u64> {
    let cutoff = time_before(store.now_ms().await?, retention)?;
    in_batches(|| store.delete_retired_applications(cutoff, BATCH)).await
}

/// Deletes idempotency keys older than 24 h.
pub async fn delete_expired_keys(store: &dyn Store) -> StoreResult<u64> {
    let cutoff = store.now_ms().await? - KEY_TTL_MS;
    in_batches(|| store.delete_idempotency_keys(cutoff, BATCH)).await
}

/// Deletes the sign-in failure counters whose window has ended.
pub async fn delete_expired_auth_failures(store: &dyn Store) -> StoreResult<u64> {
    in_batches(|| store.delete_expired_auth_failures(super::AUTH_FAILURE_WINDOW_MS, BATCH)).await
}

/// How many of the newest job changes the log keeps: an index further behind than this is
/// rebuilt from the tables rather than fed the log.
pub const JOB_CHANGES_KEPT: i64 = 1_000_000;

/// Deletes the job changes older than the newest `keep`.
pub async fn trim_job_changes(store: &dyn JobLogStore, keep: i64) -> StoreResult<u64> {
    let upto = store.newest_job_change().await? - keep;
    if upto <= 0 {
        return Ok(0);
    }
    in_batches(|| store.delete_job_changes_upto(upto, BATCH)).await
}

/// The API's own data: idempotency keys and sign-in failure counters.
pub async fn api_upkeep(store: &dyn Store) -> StoreResult<(u64, u64)> {
    Ok((
        delete_expired_keys(store).await?,
        delete_expired_auth_failures(store).await?,
    ))
}

/// What one full upkeep (`jobboard cleanup`) deleted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Upkept {
    pub events: u64,
    pub keys: u64,
    pub auth_failures: u64,
    pub event_records: u64,
}

/// Everything that expires: processed-event records and event records older than `retention`,
/// idempotency keys and sign-in failure counters.
pub async fn upkeep(store: &dyn Store, retention: Duration) -> StoreResult<Upkept> {
    let event_records = delete_expired_event_records(store, retention).await?;
    let events = delete_expired_events(store, retention).await?;
    let (keys, auth_failures) = api_upkeep(store).await?;
    Ok(Upkept {
        events,
        keys,
        auth_failures,
        event_records,
    })
}

impl std::fmt::Display for Upkept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "deleted {} processed-event records, {} idempotency keys, {} expired sign-in failure counters, {} event records",
            self.events, self.keys, self.auth_failures, self.event_records
        )
    }
}

/// Deletes the résumés attached to no application and unused for `retention`, in batches, and
/// gives their files' keys.
pub async fn delete_unused_resumes(
    store: &dyn super::WorkerStore,
    retention: Duration,
) -> StoreResult<Vec<String>> {
    let cutoff = time_before(store.now_ms().await?, retention)?;
    let mut keys = Vec::new();
    loop {
        let batch = store.delete_unused_resumes(cutoff, BATCH).await?;
        let done = (batch.len() as i64) < BATCH;
        keys.extend(batch);
        if done {
            return Ok(keys);
        }
    }
}
