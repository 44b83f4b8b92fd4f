//! jobboard: a job-board backend.
//!
//! # Module map
//!
//! Dependencies point one way, down this table: a module may use only the modules its row
//! names (a test in `tests/api/architecture.rs` reads this table and checks every `crate::`
//! path in `src/` against it). `run` is the wiring, the only place that chooses and builds the
//! adapters; nothing imports it but the binary and the tests.
//!
//! | module | what it is | may use |
//! |---|---|---|
//! | `run` | the subcommands and the wiring: config → store, search index, cache, queue, mailer, file store, relay, worker, API state | `cli` `config` `http` `worker` `relay` `queue` `store` `search` `cache` `email` `files` `auth` `unsubscribe` `webhooks` `domain` `telemetry` `shutdown` `timefmt` |
//! | `cli` | the command line | `config` |
//! | `http` | routes, extractors, problem+json, `AppState` and `serve` | `relay` `queue` `store` `search` `cache` `files` `auth` `unsubscribe` `webhooks` `domain` `config` `telemetry` `timefmt` |
//! | `worker` | receive → claim → send → record → ack, both claim modes; the upkeep's events (the alerts' digests matched by `search`'s alert matcher); the webhook deliveries, in lanes per endpoint; the files' retention and sweep | `queue` `store` `search` `email` `files` `unsubscribe` `webhooks` `domain` `config` `telemetry` |
//! | `relay` | publishes the outbox to SQS | `queue` `store` `telemetry` |
//! | `queue` | the `Queue` trait; the database queue and SQS | `store` `domain` `timefmt` |
//! | `search` | the search index (tantivy) of the open jobs, kept in step by the job-change log; the job-alert matcher | `store` `domain` `telemetry` |
//! | `store` | the `Store` trait; PostgreSQL and SQLite | `domain` `config` `timefmt` |
//! | `cache` | the job-search cache, in process or in Redis | |
//! | `files` | the `FileStore` trait (a folder, or S3); uploads spooled and recognised by their content | `domain` `config` |
//! | `email` | the `Mailer` trait; console, file, SMTP and Amazon SES | `unsubscribe` `domain` `config` |
//! | `auth` | password hashing and access tokens | `config` |
//! | `unsubscribe` | the signed tokens of unsubscribe links | |
//! | `webhooks` | webhook URLs and the addresses a delivery may reach; Standard Webhooks signatures | |
//! | `domain` | the rules: validated values, the status workflow, search terms, events, email data; no I/O | `timefmt` |
//! | `config` | the environment, parsed and validated once | `domain` |
//! | `telemetry` | logging and the metric names | `config` |
//! | `shutdown` | SIGTERM/SIGINT → one cancellation token, and the API's drain after it | |
//! | `timefmt` | the one timestamp format | |
#![forbid(unsafe_code)]

pub mod auth;
pub mod cache;
pub mod cli;
pub mod config;
pub mod domain;
pub mod email;
pub mod files;
pub mod http;
pub mod queue;
pub mod relay;
pub mod run;
pub mod search;
pub mod shutdown;
pub mod store;
pub mod telemetry;
pub mod timefmt;
pub mod unsubscribe;
pub mod webhooks;
pub mod worker;
