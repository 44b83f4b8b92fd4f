//! Runs a subcommand.

use crate::app;
use crate::cli::{Command, DlqCommand, Which};
use crate::config::{Config, QueueKind};
use crate::queue::{Queue, Selection, db::DbQueue, sqs::SqsQueue};
use crate::store::{self, Store};
use crate::worker::Worker;
use anyhow::Context;
use std::sync::Arc;
use std::time::Duration;

/// Runs `command` (`None`: everything in one process) and returns the exit code.
pub async fn run(command: Option<Command>, config: Config) -> anyhow::Result<u8> {
    match command {
        None => serve(config, true, true).await,
        Some(Command::Serve { no_migrate }) => serve(config, !no_migrate, false).await,
        Some(Command::Worker) => worker(config).await,
        Some(Command::Migrate) => {
            let store = open_store(&config).await?;
            tracing::info!(backend = store.backend(), "migrations applied");
            Ok(0)
        }
        Some(Command::Cleanup) => {
            let store = open_store(&config).await?;
            let worker = build_worker(&config, store.clone()).await?;
            let events = worker.delete_expired().await?;
            let keys = worker.delete_expired_keys().await?;
            println!("deleted {events} processed-event records, {keys} idempotency keys");
            Ok(0)
        }
        Some(Command::Dlq(cmd)) => dlq(config, cmd).await,
    }
}

/// Opens the database and applies pending migrations.
async fn open_store(config: &Config) -> anyhow::Result<Arc<dyn Store>> {
    let store = store::connect_with_pool(&config.database_url, config.database_pool_size)
        .await
        .with_context(|| {
            format!(
                "cannot open the database {}",
                crate::config::redact_url(config.database_url.as_str())
            )
        })?;
    store.migrate().await.context("migrations failed")?;
    Ok(store)
}

/// The SQS queue of `SQS_QUEUE_URL`.
pub async fn sqs_queue(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<Arc<SqsQueue>> {
    let url = config
        .sqs_queue_url
        .clone()
        .context("SQS_QUEUE_URL is required with QUEUE=sqs")?;
    Ok(Arc::new(
        SqsQueue::connect(
            &url,
            config.sqs_dlq_url.clone(),
            Duration::from_secs(config.visibility_timeout_secs),
            store,
        )
        .await?,
    ))
}

/// The queue `QUEUE` names.
pub async fn build_queue(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<Arc<dyn Queue>> {
    match config.queue {
        QueueKind::Db => Ok(Arc::new(DbQueue::new(
            store,
            Duration::from_secs(config.visibility_timeout_secs),
        ))),
        QueueKind::Sqs => Ok(sqs_queue(config, store).await?),
    }
}

pub async fn build_worker(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<Worker> {
    let queue = build_queue(config, store.clone()).await?;
    let mailer = crate::email::from_config(config)?;
    Ok(Worker::new(config, store, queue, mailer))
}

async fn serve(config: Config, migrate: bool, with_worker: bool) -> anyhow::Result<u8> {
    let shutdown = crate::shutdown::on_signal();
    let listener = app::bind(config.bind_addr, "BIND_ADDR").await?;
    let metrics_listener = match config.metrics_addr {
        Some(addr) => Some(app::bind(addr, "METRICS_ADDR").await?),
        None => None,
    };
    let state = app::build(config, shutdown.clone(), migrate).await?;
    let worker = if with_worker {
        Some(Arc::new(
            build_worker(&state.config, state.store.clone()).await?,
        ))
    } else {
        None
    };
    tracing::info!(
        "jobboard {} listening on http://{} ({} database, {} search cache{})",
        env!("CARGO_PKG_VERSION"),
        listener.local_addr()?,
        state.store.backend(),
        state.cache.kind(),
        if worker.is_some() {
            ", worker in process"
        } else {
            ""
        }
    );
    let worker_done = worker.map(|w| {
        tokio::spawn(w.clone().maintain(shutdown.clone()));
        tokio::spawn(w.run(shutdown.clone()))
    });
    let mut clean = app::serve(listener, metrics_listener, state).await?;
    if let Some(done) = worker_done {
        clean &= done.await.unwrap_or(false);
    }
    tracing::info!(clean, "stopped");
    Ok(if clean { 0 } else { 1 })
}

async fn worker(config: Config) -> anyhow::Result<u8> {
    let shutdown = crate::shutdown::on_signal();
    let listener = app::bind(config.worker_http_addr, "WORKER_HTTP_ADDR").await?;
    let store = open_store(&config).await?;
    let worker = Arc::new(build_worker(&config, store.clone()).await?);
    let http_state = crate::http::ops::WorkerState {
        store,
        queue: worker.queue().clone(),
        metrics: crate::telemetry::metrics_handle(),
        shutdown: shutdown.clone(),
    };
    tracing::info!(
        "worker health and metrics on http://{}",
        listener.local_addr()?
    );
    let http = tokio::spawn(
        axum::serve(listener, crate::http::ops::worker_router(http_state))
            .with_graceful_shutdown(shutdown.clone().cancelled_owned())
            .into_future(),
    );
    tokio::spawn(worker.clone().maintain(shutdown.clone()));
    let clean = worker.run(shutdown).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), http).await;
    Ok(if clean { 0 } else { 1 })
}

fn selection(which: Which) -> Selection {
    if which.all {
        Selection::All
    } else {
        Selection::Ids(which.ids)
    }
}

async fn dlq(config: Config, cmd: DlqCommand) -> anyhow::Result<u8> {
    let store = open_store(&config).await?;
    let queue = build_queue(&config, store).await?;
    match cmd {
        DlqCommand::List { json } => {
            for d in queue.dead_letters().await? {
                if json {
                    println!("{}", serde_json::to_string(&d)?);
                } else {
                    println!(
                        "{}\t{}\t{}\t{}\t{}\t{}",
                        d.id,
                        d.event_id.as_deref().unwrap_or("-"),
                        d.reason.replace(['\n', '\t'], " "),
                        d.attempts,
                        crate::timefmt::format(&d.first_failed_at),
                        crate::timefmt::format(&d.last_failed_at),
                    );
                }
            }
            Ok(0)
        }
        DlqCommand::Redrive {
            which,
            include_invalid,
        } => {
            let r = queue.redrive(selection(which), include_invalid).await?;
            if r.skipped_invalid > 0 {
                eprintln!(
                    "skipped {} dead letters without a usable event_id (add --include-invalid to re-queue them)",
                    r.skipped_invalid
                );
            }
            println!("redriven {}, not found {}", r.redriven, r.not_found);
            Ok(if r.not_found == 0 { 0 } else { 1 })
        }
        DlqCommand::Purge { which } => {
            let n = queue.purge(selection(which)).await?;
            println!("purged {n}");
            Ok(0)
        }
    }
}
