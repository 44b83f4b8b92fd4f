//! The application: its shared state, built once from the configuration, and `serve`, the only
//! way to run the HTTP API (tests use it too, on port 0).

use crate::auth::{self, Tokens};
use crate::cache::{MemoryCache, RedisCache, SearchCache};
use crate::config::{Config, redact_url};
use crate::store::{self, Store};
use anyhow::Context;
use metrics_exporter_prometheus::PrometheusHandle;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Everything a request handler needs. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub cache: Arc<dyn SearchCache>,
    pub tokens: Arc<Tokens>,
    pub metrics: PrometheusHandle,
    /// Cancelled when shutdown begins; `/readyz` turns 503 at once.
    pub shutdown: CancellationToken,
    /// A hash that unknown emails are checked against, so a login takes as long either way.
    pub dummy_hash: Arc<str>,
    /// With `QUEUE=sqs`, the relay that publishes the outbox.
    pub relay: Option<Arc<crate::relay::Relay>>,
}

impl AppState {
    /// Called after a status change committed its event to the outbox.
    pub fn event_committed(&self) {
        match &self.relay {
            Some(relay) => relay.poke(),
            // With QUEUE=db the outbox is the queue: committed is published.
            None => metrics::counter!(crate::telemetry::EVENTS_PUBLISHED_TOTAL).increment(1),
        }
    }
}

/// Connects to the database (migrating it unless `migrate` is false) and the cache.
pub async fn build(
    config: Config,
    shutdown: CancellationToken,
    migrate: bool,
) -> anyhow::Result<AppState> {
    tracing::info!(database = %redact_url(config.database_url.as_str()), "connecting to the database");
    let store = store::connect_with_pool(&config.database_url, config.database_pool_size)
        .await
        .with_context(|| {
            format!(
                "cannot open the database {}",
                redact_url(config.database_url.as_str())
            )
        })?;
    if migrate {
        store.migrate().await.context("migrations failed")?;
    }
    let ttl = Duration::from_secs(config.search_cache_ttl_secs);
    let cache: Arc<dyn SearchCache> = match &config.redis_url {
        Some(url) => {
            tracing::info!(redis = %redact_url(&url.0), "search cache in Redis");
            Arc::new(RedisCache::new(&url.0, &config.redis_key_prefix, ttl)?)
        }
        None => Arc::new(MemoryCache::new(
            ttl,
            config.search_cache_max_mb * 1024 * 1024,
        )),
    };
    {
        // A version bump that failed while Redis was away is retried until it lands.
        let (cache, shutdown) = (cache.clone(), shutdown.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                tokio::select! {
                    _ = every.tick() => cache.retry_owed_bump().await,
                    _ = shutdown.cancelled() => return,
                }
            }
        });
    }
    let relay = match config.queue {
        crate::config::QueueKind::Sqs => {
            let sqs = crate::run::sqs_queue(&config, store.clone()).await?;
            let relay = Arc::new(crate::relay::Relay::new(store.clone(), sqs));
            tokio::spawn(relay.clone().run(shutdown.clone()));
            Some(relay)
        }
        crate::config::QueueKind::Db => None,
    };
    let tokens = Arc::new(Tokens::from_config(&config));
    let dummy_hash: Arc<str> =
        tokio::task::spawn_blocking(|| auth::hash_password(&uuid::Uuid::new_v4().to_string()))
            .await??
            .into();
    Ok(AppState {
        config: Arc::new(config),
        store,
        cache,
        tokens,
        metrics: crate::telemetry::metrics_handle(),
        shutdown,
        dummy_hash,
        relay,
    })
}

/// Serves the API on `listener` (and `/metrics` on `metrics_listener`, if given) until the
/// state's shutdown token is cancelled; then in-flight requests get `SHUTDOWN_GRACE_SECS`.
/// `Ok(true)` means everything finished in time, `Ok(false)` that work was abandoned.
pub async fn serve(
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    state: AppState,
) -> anyhow::Result<bool> {
    let grace = Duration::from_secs(state.config.shutdown_grace_secs);
    let shutdown = state.shutdown.clone();
    let mut servers = Vec::new();
    let app = crate::http::router(state.clone());
    servers.push(spawn_server(listener, app, shutdown.clone()));
    if let Some(l) = metrics_listener {
        servers.push(spawn_server(
            l,
            crate::http::metrics_router(state),
            shutdown.clone(),
        ));
    }
    shutdown.cancelled().await;
    let mut clean = true;
    let deadline = tokio::time::Instant::now() + grace;
    for server in servers {
        match tokio::time::timeout_at(deadline, server).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => return Err(e.context("the HTTP server failed")),
            Ok(Err(e)) => return Err(anyhow::anyhow!("the HTTP server task failed: {e}")),
            Err(_) => {
                tracing::warn!(
                    "in-flight requests did not finish within the shutdown grace period"
                );
                clean = false;
            }
        }
    }
    Ok(clean)
}

fn spawn_server(
    listener: TcpListener,
    app: axum::Router,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<anyhow::Result<()>> {
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(shutdown.cancelled_owned())
        .await
        .map_err(anyhow::Error::from)
    })
}

/// Binds an address with a clear error.
pub async fn bind(addr: SocketAddr, var: &str) -> anyhow::Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr} ({var})"))
}
