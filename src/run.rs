//! Runs a subcommand.

use crate::app;
use crate::cli::Command;
use crate::config::Config;
use tokio_util::sync::CancellationToken;

/// Runs `command` (`None`: everything in one process) and returns the exit code.
pub async fn run(command: Option<Command>, config: Config) -> anyhow::Result<u8> {
    match command {
        None => serve(config, true).await,
        Some(Command::Serve { no_migrate }) => serve(config, !no_migrate).await,
        Some(Command::Migrate) => {
            let state = app::build(config, CancellationToken::new(), true).await?;
            tracing::info!(backend = state.store.backend(), "migrations applied");
            Ok(0)
        }
    }
}

async fn serve(config: Config, migrate: bool) -> anyhow::Result<u8> {
    let shutdown = crate::shutdown::on_signal();
    let listener = app::bind(config.bind_addr, "BIND_ADDR").await?;
    let metrics_listener = match config.metrics_addr {
        Some(addr) => Some(app::bind(addr, "METRICS_ADDR").await?),
        None => None,
    };
    let state = app::build(config, shutdown, migrate).await?;
    tracing::info!(
        "jobboard {} listening on http://{} ({} database, {} search cache)",
        env!("CARGO_PKG_VERSION"),
        listener.local_addr()?,
        state.store.backend(),
        state.cache.kind()
    );
    let clean = app::serve(listener, metrics_listener, state).await?;
    tracing::info!(clean, "stopped");
    Ok(if clean { 0 } else { 1 })
}
