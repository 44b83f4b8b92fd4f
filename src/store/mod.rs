//! Persistence: one [`Store`] trait of use-case methods, each one transaction inside the
//! implementation, with a PostgreSQL and a SQLite implementation that share everything but the
//! SQL dialect (see `dialect.rs` and `sql/`).
//!
//! This file holds the trait and the map; what the trait speaks of lives beside it: the error
//! (`error.rs`), the API's rows (`rows.rs`), a job search's request (`query.rs`), opening the
//! database (`connect.rs`), and each narrower part of the trait in a file of its own.

pub mod alert_digests;
pub mod alerts;
mod api;
pub(crate) mod combine;
mod connect;
pub mod console;
pub mod db_queue;
mod dialect;
pub mod digests;
mod error;
pub mod events;
pub mod idempotency;
pub mod job_upkeep;
pub mod joblog;
pub mod pages;
mod postgres;
mod query;
pub mod resumes;
mod rows;
mod sqlite;
pub mod sqs_dead_letters;
pub mod upkeep;
pub mod webhooks;

pub use alert_digests::*;
pub use alerts::*;
pub use api::*;
pub use connect::*;
pub use console::*;
pub use db_queue::*;
pub use digests::*;
pub use error::*;
pub use events::*;
pub use idempotency::*;
pub use job_upkeep::JobUpkeepStore;
pub use joblog::*;
pub use pages::*;
pub use query::*;
pub use resumes::*;
pub use rows::*;
pub use sqs_dead_letters::*;
pub use webhooks::*;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

/// Every use case the application needs from its database: the sum of the narrower traits,
/// which is what [`connect`] opens. Each holder takes only the part it uses (the relay the
/// [`EventStore`], the queues and the worker a sum of their own, the API's handlers all of it),
/// so that a fake for a test implements that part alone; an `Arc<dyn Store>` coerces to any of
/// them.
pub trait Store:
    ApiStore
    + DatabaseStore
    + DbQueueStore
    + SqsQueueStore
    + WorkerStore
    + IdempotencyStore
    + ConsoleStore
    + JobLogStore
    + AlertStore
    + PageStore
    + WebhookStore
    + ResumeStore
    + Send
    + Sync
    + 'static
{
}

impl<T> Store for T where
    T: ApiStore
        + DatabaseStore
        + DbQueueStore
        + SqsQueueStore
        + WorkerStore
        + IdempotencyStore
        + ConsoleStore
        + JobLogStore
        + AlertStore
        + PageStore
        + WebhookStore
        + ResumeStore
        + Send
        + Sync
        + 'static
{
}

/// What the database queue (`queue::db`) uses: the outbox as a queue, and a ping.
pub trait DbQueueStore: QueueStore + DatabaseStore {}
impl<T: QueueStore + DatabaseStore> DbQueueStore for T {}

/// What the SQS queue (`queue::sqs`) uses: its dead letters' records, and the events' own
/// (a redrive forgets an event's failures and leaves a trace).
pub trait SqsQueueStore: EventStore + SqsDeadLetterStore {}
impl<T: EventStore + SqsDeadLetterStore> SqsQueueStore for T {}

/// What the worker uses: claims and records of events, the hourly digests, the alerts'
/// digests, the jobs' upkeep, the webhook deliveries, and a ping.
pub trait WorkerStore:
    EventStore
    + DigestStore
    + AlertDigestStore
    + JobUpkeepStore
    + WebhookDeliveryStore
    + ResumeStore
    + DatabaseStore
{
}
impl<T> WorkerStore for T where
    T: EventStore
        + DigestStore
        + AlertDigestStore
        + JobUpkeepStore
        + WebhookDeliveryStore
        + ResumeStore
        + DatabaseStore
{
}
