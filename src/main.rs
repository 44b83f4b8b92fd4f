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
