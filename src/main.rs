use clap::Parser;
use jobboard::{cli::Cli, config::Config, telemetry};
use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    bounded_heap();
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

/// Every Argon2 hash allocates 19 MiB. glibc serves blocks that large with mmap, but after the
/// first one is freed it raises its threshold and keeps later ones in its heaps: a burst of
/// logins left the process above 1 GB. A fixed threshold keeps large blocks on mmap, so they go
/// back to the system when freed.
fn bounded_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of glibc's allocator, under the allocator's own
    // lock; nothing has allocated a large block yet.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20);
    }
}
