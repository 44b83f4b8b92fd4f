//! The wiring: every adapter (store, cache, queue, mailer, relay, worker) and the API's state
//! built from the configuration. Only `run` and the binary use this module; nothing below it
//! knows how its parts are chosen.

use crate::auth::{self, Tokens};
use crate::cache::{MemoryCache, RedisCache, SearchCache};
use crate::config::{Config, QueueKind, redact_url};
use crate::http::AppState;
use crate::queue::{Queue, db::DbQueue, sqs::SqsQueue};
use crate::relay::Relay;
use crate::search::{JobFeed, SearchIndex, StoreFeed};
use crate::store::{self, Store};
use crate::worker::Worker;
use anyhow::Context;
use secrecy::ExposeSecret;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Opens the database. With `migrate`, applies pending migrations; without, refuses a schema
/// that is behind this binary, so only the commands asked to migrate ever do. A schema ahead of
/// it (a newer release migrated it; a rollback) is used as it is, with a warning naming the
/// migrations this binary does not know, and never migrated: migrations follow expand/contract,
/// so the previous release runs on the schema of the next.
pub async fn open_store(config: &Config, migrate: bool) -> anyhow::Result<Arc<dyn Store>> {
    tracing::info!(database = %redact_url(config.database_url.as_str()), "connecting to the database");
    let timeouts = store::DbTimeouts {
        statement: Duration::from_secs(config.database_statement_timeout_secs),
        lock: Duration::from_secs(config.database_lock_timeout_secs),
    };
    let store = store::connect_with(
        &config.database_url,
        config.database_pool_size,
        Some(timeouts),
    )
    .await
    .with_context(|| {
        format!(
            "cannot open the database {}",
            redact_url(config.database_url.as_str())
        )
    })?;
    let ahead = if migrate {
        match store.check_schema().await {
            Ok(ahead) if !ahead.is_empty() => ahead,
            // Behind or current; a schema both ahead and behind is refused by the migrator,
            // which names the migration it does not know.
            _ => {
                store.migrate().await.context("migrations failed")?;
                Vec::new()
            }
        }
    } else {
        store.check_schema().await?
    };
    if !ahead.is_empty() {
        tracing::warn!(
            unknown_migrations = %ahead.join(", "),
            "the database schema is ahead of this jobboard: it has migrations this version does \
             not know ({}); running on it without migrating it (a newer release migrated it, and \
             its migrations keep the schema usable by this one)",
            ahead.join(", ")
        );
    }
    Ok(store)
}

/// The SQS queue of `SQS_QUEUE_URL`.
pub async fn sqs_queue(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<Arc<SqsQueue>> {
    let url = config
        .sqs_queue_url
        .clone()
        .context("SQS_QUEUE_URL is required with QUEUE=sqs")?;
    let dlq_url = config
        .sqs_dlq_url
        .clone()
        .context("SQS_DLQ_URL is required with QUEUE=sqs")?;
    Ok(Arc::new(
        SqsQueue::connect(
            &url,
            dlq_url,
            Duration::from_secs(config.visibility_timeout_secs),
            store,
            crate::queue::sqs::ClientOptions {
                endpoint_url: config.sqs_endpoint_url.clone(),
                timeout: Duration::from_secs(config.sqs_timeout_secs),
            },
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

/// With `QUEUE=sqs`, the start-up check of a worker's queues ([`SqsQueue::check_queues`]).
pub async fn check_worker_queues(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<()> {
    if config.queue == QueueKind::Sqs {
        sqs_queue(config, store)
            .await?
            .check_queues(config.max_attempts)
            .await?;
    }
    Ok(())
}

pub async fn build_worker(config: &Config, store: Arc<dyn Store>) -> anyhow::Result<Worker> {
    let queue = build_queue(config, store.clone()).await?;
    let mailer = crate::email::from_config(config).await?;
    let files = crate::files::from_config(config).await?;
    Ok(Worker::new(config, store, queue, mailer).with_files(files))
}

/// Opens this process's search index in `SEARCH_INDEX_DIR` (refused, naming the folder and its
/// holder, when another process holds it) and follows the job-change log into it until `stop`.
/// The keys of unsubscribe links: `UNSUBSCRIBE_SECRET` (and its previous value) over the JWT
/// secrets `tokens` holds (`JWT_SECRET`, or this process's random one, and the previous one).
pub fn unsubscribe_keys(config: &Config, tokens: &Tokens) -> crate::unsubscribe::Keys {
    let bytes = |s: &Option<secrecy::SecretString>| {
        s.as_ref().map(|s| s.expose_secret().as_bytes().to_vec())
    };
    crate::unsubscribe::Keys::new(
        bytes(&config.unsubscribe_secret).as_deref(),
        bytes(&config.unsubscribe_secret_previous).as_deref(),
        tokens.signing_secret(),
        tokens.previous_secret(),
    )
}

pub fn open_search_index(
    config: &Config,
    store: Arc<dyn Store>,
    stop: CancellationToken,
) -> anyhow::Result<Arc<SearchIndex>> {
    let index = Arc::new(SearchIndex::open(&config.search_index_dir)?);
    tracing::info!(dir = %config.search_index_dir.display(), seq = index.applied(),
        "search index opened");
    let feed: Arc<dyn JobFeed> = Arc::new(StoreFeed(store));
    tokio::spawn(crate::search::follow(index.clone(), feed, stop));
    Ok(index)
}

/// Connects to the database (migrating it unless `migrate` is false) and the cache.
pub async fn app_state(
    config: Config,
    shutdown: CancellationToken,
    migrate: bool,
) -> anyhow::Result<AppState> {
    let store = open_store(&config, migrate).await?;
    let stopping =
        crate::shutdown::after_drain(&shutdown, Duration::from_secs(config.shutdown_drain_secs));
    let ttl = Duration::from_secs(config.search_cache_ttl_secs);
    let cache: Arc<dyn SearchCache> = match &config.redis_url {
        Some(url) => {
            tracing::info!(redis = %redact_url(url.expose_secret()), "search cache in Redis");
            Arc::new(RedisCache::new(
                url.expose_secret(),
                &config.redis_key_prefix,
                ttl,
                config.search_cache_max_mb * 1024 * 1024,
            )?)
        }
        None => Arc::new(MemoryCache::new(
            ttl,
            config.search_cache_max_mb * 1024 * 1024,
        )),
    };
    {
        // A version bump that failed while Redis was away is retried until it lands.
        let (cache, stopping) = (cache.clone(), stopping.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = every.tick() => cache.retry_owed_bump().await,
                    _ = stopping.cancelled() => return,
                }
            }
        });
    }
    let (relay, queue): (_, Arc<dyn Queue>) = match config.queue {
        QueueKind::Sqs => {
            let sqs = sqs_queue(&config, store.clone()).await?;
            let relay = Arc::new(Relay::new(store.clone(), sqs.clone()));
            // Requests served during the drain still write events: the relay publishes them.
            tokio::spawn(relay.clone().run(stopping.clone()));
            (Some(relay), sqs)
        }
        // The operator endpoints' view of the queue; the API never receives from it.
        QueueKind::Db => (None, build_queue(&config, store.clone()).await?),
    };
    let search = open_search_index(&config, store.clone(), stopping.clone())?;
    let files = crate::files::from_config(&config).await?;
    let tokens = Arc::new(Tokens::from_config(&config));
    let unsubscribe = Arc::new(unsubscribe_keys(&config, &tokens));
    let dummy_hash: Arc<str> =
        tokio::task::spawn_blocking(|| auth::hash_password(&uuid::Uuid::new_v4().to_string()))
            .await??
            .into();
    Ok(AppState {
        config: Arc::new(config),
        store,
        cache,
        search,
        tokens,
        unsubscribe,
        metrics: crate::telemetry::metrics_handle(),
        shutdown,
        stopping,
        dummy_hash,
        relay,
        queue,
        files,
    })
}
