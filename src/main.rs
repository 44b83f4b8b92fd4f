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
    raise_open_file_limit();
    match jobboard::run::run(cli.command, config).await {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            tracing::error!(error = format!("{e:#}"), "fatal");
            eprintln!("jobboard: {e:#}");
            ExitCode::from(1)
        }
    }
}

/// Raises the soft limit on open files to the hard one, and logs both: every connection, pooled
/// database connection and search-index segment is a descriptor, and a common soft default of
/// 1 024 is reached by a burst of clients long before `MAX_CONCURRENT_REQUESTS` refuses any.
fn raise_open_file_limit() {
    use rlimit::Resource;
    let Ok((soft, hard)) = Resource::NOFILE.get() else {
        tracing::warn!("the open-file limit could not be read; left as it is");
        return;
    };
    match rlimit::increase_nofile_limit(hard) {
        Ok(now) => tracing::info!(
            soft_before = soft,
            soft = now,
            hard,
            "open-file limit: soft raised to the hard limit"
        ),
        Err(e) => tracing::warn!(
            soft,
            hard,
            error = %e,
            "open-file limit: the soft limit could not be raised"
        ),
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
