//! HTTP-level tests of the whole API: the real server on port 0, a real client, real databases
//! and a real Redis. Every case runs on SQLite and on PostgreSQL (`each_store!`); the cases that
//! read cached searches run with the in-process cache and with Redis too (`each_backend!`).

mod helpers;

mod accounts;
mod addresses;
mod admin;
mod alert_digests;
mod alert_scale;
mod alerts;
mod applications;
mod architecture;
mod authz;
mod browser;
mod cli;
mod clock;
mod companies;
mod console;
mod crash;
mod digest_bounds;
mod docs;
mod errors;
mod events;
mod feeds;
mod headers;
mod idempotency;
mod index;
mod index_faults;
mod index_proof;
mod input_edges;
mod jobs;
mod lifecycle;
mod moderation;
mod notifications;
mod openapi;
mod ops;
mod overload;
mod pages;
mod pages_browser;
mod panics;
mod proxy;
mod query_rules;
mod readme;
mod reliability;
mod rollout;
mod search;
mod services;
mod ses;
mod smtp;
mod sqs;
mod text_rules;
mod timeouts;
mod upkeep_mail;
mod webhook_deliveries;
mod webhooks;
mod worker;
