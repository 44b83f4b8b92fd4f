use clap::Parser;
use jobboard::{cli::Cli, config::Config, telemetry};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    telemetry::init_logging(config.log_format);
    match jobboard::run::run(cli.command, config).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "fatal");
            eprintln!("jobboard: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Every Argon2 hash allocates 19 MiB. glibc serves the first such block with mmap, but after
/// it is freed raises its mmap threshold and keeps later ones in its heaps: a burst of
/// registrations left the process above 1 GB. jemalloc serves blocks over its oversize threshold
/// (8 MiB) from an arena of their own that it purges as soon as they are freed, so the memory
/// goes back to the system after each hash.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
