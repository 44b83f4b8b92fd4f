//! Runs a subcommand: the top of the crate, the one place that puts the parts together.

pub mod build;

pub use build::{app_state, build_queue, build_worker, check_worker_queues, open_store, sqs_queue};

use crate::cli::{AdminCommand, Command, DlqCommand, SearchCommand, Which};
use crate::config::Config;
use crate::http::{self, bind};
use crate::queue::Selection;
use crate::store::Store;
use crate::store::upkeep::upkeep;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Runs `command` (`None`: everything in one process) and returns the exit code.
pub async fn run(command: Option<Command>, config: Config) -> anyhow::Result<u8> {
    // One configuration per process: every job stored before pay had a currency reads as this
    // one, wherever it is shown, indexed or matched.
    crate::domain::pay_place::set_default_currency(config.default_salary_currency);
    match command {
        None => serve(config, true, true).await,
        Some(Command::Serve { no_migrate }) => serve(config, !no_migrate, false).await,
        Some(Command::Worker) => worker(config).await,
        Some(Command::Migrate) => {
            let store = open_store(&config, true).await?;
            tracing::info!(backend = store.backend(), "migrations applied");
            Ok(0)
        }
        Some(Command::Cleanup) => {
            // Rows to delete: the database is all it needs (no queue, no mailer).
            let store = open_store(&config, false).await?;
            let retention = Duration::from_secs(config.processed_events_retention_days * 86_400);
            println!("{}", upkeep(&*store, retention).await?);
            Ok(0)
        }
        Some(Command::Dlq(cmd)) => dlq(config, cmd).await,
        Some(Command::Admin(cmd)) => admin(config, cmd).await,
        Some(Command::Search(cmd)) => search(config, cmd).await,
    }
}

/// `jobboard search status|rebuild`: the index in `SEARCH_INDEX_DIR`.
async fn search(config: Config, cmd: SearchCommand) -> anyhow::Result<u8> {
    use crate::search::{JobFeed, SearchIndex, StoreFeed};
    let dir = config.search_index_dir.clone();
    let store = open_store(&config, false).await?;
    let feed = StoreFeed(store);
    match cmd {
        SearchCommand::Status => {
            let newest = feed.newest().await?;
            match SearchIndex::status(&dir) {
                Ok(status) => {
                    let applied = status.applied.unwrap_or(0);
                    println!(
                        "search index {}: {} documents, last job change applied {applied}, \
                         newest in the log {newest}, lag {}",
                        dir.display(),
                        status.documents,
                        (newest - applied).max(0)
                    );
                    Ok(0)
                }
                Err(e) => {
                    println!(
                        "search index {}: none readable ({e:#}); newest job change in the log \
                         {newest}; it is built at the next start, or by `jobboard search rebuild`",
                        dir.display()
                    );
                    Ok(1)
                }
            }
        }
        SearchCommand::Rebuild => {
            let index = match SearchIndex::open(&dir) {
                Ok(index) => Arc::new(index),
                Err(e) => {
                    eprintln!("{e:#}");
                    return Ok(1);
                }
            };
            let documents = crate::search::rebuild(&index, &feed).await?;
            let applied = crate::search::catch_up(&index, &feed).await?;
            println!(
                "rebuilt the search index {}: {documents} documents, last job change applied {applied}",
                dir.display()
            );
            Ok(0)
        }
    }
}

/// `jobboard admin grant|revoke EMAIL`: operator rights are given here and nowhere else.
async fn admin(config: Config, cmd: AdminCommand) -> anyhow::Result<u8> {
    let (email, grant) = match cmd {
        AdminCommand::Grant { email } => (email, true),
        AdminCommand::Revoke { email } => (email, false),
    };
    let Ok(parsed) = crate::domain::values::Email::parse(&email) else {
        eprintln!("no account has the email {email:?}: it is not an email address");
        return Ok(1);
    };
    let store = open_store(&config, false).await?;
    match store.set_operator(&parsed.key(), grant).await {
        Ok(change) => {
            let what = match (grant, change.changed) {
                (true, true) => "now has operator rights",
                (true, false) => "already had operator rights; nothing changed",
                (false, true) => "no longer has operator rights",
                (false, false) => "had no operator rights; nothing changed",
            };
            if change.changed {
                tracing::info!(user_id = change.user_id, grant, "operator rights changed");
            }
            println!("{} (user {}) {what}", parsed.as_str(), change.user_id);
            Ok(0)
        }
        Err(crate::store::StoreError::NotFound) => {
            eprintln!("no account has the email {email}");
            Ok(1)
        }
        Err(e) => Err(e.into()),
    }
}

async fn serve(config: Config, migrate: bool, with_worker: bool) -> anyhow::Result<u8> {
    let shutdown = crate::shutdown::on_signal();
    let listener = bind(config.bind_addr, "BIND_ADDR").await?;
    let metrics_listener = match config.metrics_addr {
        Some(addr) => {
            let l = bind(addr, "METRICS_ADDR").await?;
            tracing::info!("metrics on http://{}", l.local_addr()?);
            Some(l)
        }
        None => None,
    };
    let state = app_state(config, shutdown.clone(), migrate).await?;
    let worker = if with_worker {
        check_worker_queues(&state.config, state.store.clone()).await?;
        Some(Arc::new(
            build_worker(&state.config, state.store.clone())
                .await?
                .with_link_secret(&state.config.public_base_url, state.tokens.signing_secret()),
        ))
    } else {
        None
    };
    tokio::spawn(api_upkeep(state.store.clone(), shutdown.clone()));
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
    // In one process the worker stops with the API's listener, after the drain.
    let stopping = state.stopping.clone();
    let worker_done = worker.map(|w| {
        tokio::spawn(w.clone().maintain(stopping.clone()));
        tokio::spawn(w.clone().deliver_webhooks(stopping.clone()));
        tokio::spawn(w.run(stopping.clone()))
    });
    let mut clean = http::serve(listener, metrics_listener, state).await?;
    if let Some(done) = worker_done {
        clean &= done.await.unwrap_or(false);
    }
    tracing::info!(clean, "stopped");
    Ok(if clean { 0 } else { 1 })
}

async fn worker(config: Config) -> anyhow::Result<u8> {
    let shutdown = crate::shutdown::on_signal();
    let listener = bind(config.worker_http_addr, "WORKER_HTTP_ADDR").await?;
    let store = open_store(&config, false).await?;
    check_worker_queues(&config, store.clone()).await?;
    let worker = Arc::new(build_worker(&config, store.clone()).await?);
    let http_state = crate::http::ops::WorkerState::new(
        store,
        worker.queue().clone(),
        worker.healthy.clone(),
        shutdown.clone(),
    )
    .with_mail(worker.mail_up.clone());
    tracing::info!(
        "worker health and metrics on http://{}",
        listener.local_addr()?
    );
    // Without its listener a worker is invisible to its orchestrator (no /readyz, no
    // /metrics): if the listener ends before shutdown, the worker stops too, with the error,
    // and exits non-zero so that it is restarted.
    let listener_failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let serving = tokio::spawn(
        axum::serve(
            crate::http::guarded(listener),
            crate::http::ops::worker_router(http_state),
        )
        .with_graceful_shutdown(shutdown.clone().cancelled_owned())
        .into_future(),
    );
    let http = tokio::spawn({
        let shutdown = shutdown.clone();
        let listener_failed = listener_failed.clone();
        async move {
            let ended = serving.await;
            if !shutdown.is_cancelled() {
                let error = match &ended {
                    Ok(Err(e)) => format!("{e}"),
                    Ok(Ok(())) => "it stopped on its own".to_string(),
                    Err(e) => format!("it panicked: {e}"),
                };
                tracing::error!(
                    error,
                    "the worker's health and metrics listener (WORKER_HTTP_ADDR) failed; the \
                     worker stops"
                );
                listener_failed.store(true, std::sync::atomic::Ordering::SeqCst);
                shutdown.cancel();
            }
        }
    });
    tokio::spawn(worker.clone().maintain(shutdown.clone()));
    let webhooks = tokio::spawn(worker.clone().deliver_webhooks(shutdown.clone()));
    let webhook_deadline = worker.webhook_timeout;
    let clean = worker.run(shutdown).await;
    // Deliveries in flight end within their deadline; their claims lapse if not recorded.
    let _webhooks_stopped =
        tokio::time::timeout(webhook_deadline + Duration::from_secs(2), webhooks).await;
    // Connections still open after a second are dropped with the process.
    let _listener_stopped = tokio::time::timeout(Duration::from_secs(1), http).await;
    let listener_ok = !listener_failed.load(std::sync::atomic::Ordering::SeqCst);
    Ok(if clean && listener_ok { 0 } else { 1 })
}

/// The API's upkeep of its own data (idempotency keys, sign-in failure counters, the oldest
/// rows of the job-change log): at start, then hourly, until `shutdown`. Any API process may
/// run it; the deletes are idempotent.
async fn api_upkeep(store: Arc<dyn Store>, shutdown: CancellationToken) {
    use crate::store::upkeep::{JOB_CHANGES_KEPT, trim_job_changes};
    let mut hourly = tokio::time::interval(Duration::from_secs(3600));
    loop {
        tokio::select! {
            _ = hourly.tick() => {
                match crate::store::upkeep::api_upkeep(&*store).await {
                    Ok((keys, auth_failures)) => tracing::info!(keys, auth_failures,
                        "deleted {keys} expired idempotency keys, {auth_failures} expired sign-in failure counters"),
                    Err(e) => tracing::warn!(error = format!("{e:#}"),
                        "deleting expired idempotency keys and sign-in failure counters failed; will try again in an hour"),
                }
                match trim_job_changes(&*store, JOB_CHANGES_KEPT).await {
                    Ok(0) => {}
                    Ok(n) => tracing::info!(deleted = n, "trimmed the job-change log to its newest {JOB_CHANGES_KEPT} rows"),
                    Err(e) => tracing::warn!(error = format!("{e:#}"),
                        "trimming the job-change log failed; will try again in an hour"),
                }
            }
            _ = shutdown.cancelled() => return,
        }
    }
}

fn selection(which: Which) -> Selection {
    if which.all {
        Selection::All
    } else {
        Selection::Ids(which.ids)
    }
}

async fn dlq(config: Config, cmd: DlqCommand) -> anyhow::Result<u8> {
    let store = open_store(&config, false).await?;
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
