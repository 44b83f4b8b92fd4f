//! `serve`, the only way to run the HTTP API (the binary and the tests both use it).

use super::AppState;
use anyhow::Context;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// Serves the API on `listener` (and `/metrics` on `metrics_listener`, if given) until the
/// state's `stopping` token is cancelled (`SHUTDOWN_DRAIN_SECS` after shutdown began, `/readyz`
/// answering 503 meanwhile); then in-flight requests get `SHUTDOWN_GRACE_SECS`.
/// `Ok(true)` means everything finished in time, `Ok(false)` that work was abandoned.
pub async fn serve(
    listener: TcpListener,
    metrics_listener: Option<TcpListener>,
    state: AppState,
) -> anyhow::Result<bool> {
    let grace = Duration::from_secs(state.config.shutdown_grace_secs);
    let shutdown = state.stopping.clone();
    let mut servers = Vec::new();
    let app = super::router(state.clone());
    servers.push(spawn_server(listener, app, shutdown.clone()));
    if let Some(l) = metrics_listener {
        servers.push(spawn_server(
            l,
            super::metrics_router(state),
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
    // The connections are guarded (`refusals.rs`): hyper's own answers get the headers too.
    // `tap_io` is there for the peer's address, which axum hands a handler only through it.
    let listener = axum::serve::ListenerExt::tap_io(super::guarded(listener), |_| {});
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
