//! HTTP-level tests of the whole API: the real server on port 0, a real client, real databases
//! and a real Redis. Most cases run four times: SQLite and PostgreSQL, in-process cache and Redis.

mod helpers;

mod accounts;
mod applications;
mod architecture;
mod cli;
mod companies;
mod crash;
mod docs;
mod errors;
mod idempotency;
mod jobs;
mod ops;
mod proxy;
mod readme;
mod search;
mod smtp;
mod sqs;
mod worker;
