//! The command line (CONTRACT.md §2). Configuration comes from the environment; see `--help`.

use clap::{Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "jobboard",
    version,
    about = "A job-board backend: jobs, search, applications, and one email per status change.",
    long_about = "A job-board backend: jobs, search, applications, and one email per status change.\n\n\
        With no command, runs everything in one process on the default SQLite database \
        (migrations, then the API on BIND_ADDR).",
    after_help = crate::config::HELP
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply migrations (unless --no-migrate) and serve the API.
    Serve {
        /// Do not apply migrations at start-up.
        #[arg(long)]
        no_migrate: bool,
    },
    /// Apply migrations and exit.
    Migrate,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn parses_commands() {
        assert!(Cli::try_parse_from(["jobboard"]).unwrap().command.is_none());
        assert!(matches!(
            Cli::try_parse_from(["jobboard", "serve", "--no-migrate"])
                .unwrap()
                .command,
            Some(Command::Serve { no_migrate: true })
        ));
        assert!(Cli::try_parse_from(["jobboard", "bogus"]).is_err());
    }
}
