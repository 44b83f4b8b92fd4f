//! SIGTERM and SIGINT become one cancellation token shared by everything the process runs.

use tokio_util::sync::CancellationToken;

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
