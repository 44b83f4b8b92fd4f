//! jobboard: a job-board backend.
//!
//! A map of the code, in the direction a request flows:
//! - [`cli`], [`config`], [`telemetry`], [`shutdown`]: the process around the application.
//! - [`app`]: the shared state and `serve`, the one way to run the API.
//! - [`http`]: routes, extractors and problem+json errors; handlers parse, call, map.
//! - [`domain`]: the rules (validation, the status workflow, search terms, events), free of I/O.
//! - [`store`]: the `Store` trait with its PostgreSQL and SQLite implementations.
//! - [`cache`]: the job-search cache (in-process or Redis) under versioned keys.
//! - [`auth`]: password hashing and access tokens.
#![forbid(unsafe_code)]

pub mod app;
pub mod auth;
pub mod cache;
pub mod cli;
pub mod config;
pub mod domain;
pub mod email;
pub mod http;
pub mod queue;
pub mod relay;
pub mod run;
pub mod shutdown;
pub mod store;
pub mod telemetry;
pub mod timefmt;
pub mod worker;
