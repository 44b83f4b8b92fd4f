//! SIGTERM and SIGINT become one cancellation token shared by everything the process runs, and
//! the API's drain: a second token, cancelled `SHUTDOWN_DRAIN_SECS` after the first.

use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// A token cancelled `drain` after `begun` is: between the two the API still serves while
/// `/readyz` answers 503, so that load balancers steer away before the listener closes.
pub fn after_drain(begun: &CancellationToken, drain: Duration) -> CancellationToken {
    let stop = CancellationToken::new();
    let (begun, s) = (begun.clone(), stop.clone());
    tokio::spawn(async move {
        begun.cancelled().await;
        if !drain.is_zero() {
            tracing::info!(
                drain_secs = drain.as_secs(),
                "draining: /readyz answers 503 while requests are still served"
            );
            tokio::time::sleep(drain).await;
        }
        s.cancel();
    });
    stop
}

/// A token that is cancelled on the first SIGTERM or SIGINT.
pub fn on_signal() -> CancellationToken {
    let token = CancellationToken::new();
    let t = token.clone();
    tokio::spawn(async move {
        wait_for_signal().await;
        tracing::info!("shutdown signal received; finishing in-flight work");
        t.cancel();
    });
    token
}

async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => {
            // Without Unix signal handlers, Ctrl-C is still honoured.
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}
