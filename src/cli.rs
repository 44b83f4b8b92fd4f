//! The command line (docs/running.md). Configuration comes from the environment; see `--help`.

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "jobboard",
    version,
    about = "A job-board backend: jobs, search, applications, and one email per event (status changes, confirmations, hourly digests).",
    long_about = "A job-board backend: jobs, search, applications, and one email per event (status changes, confirmations, hourly digests).\n\n\
        With no command, runs everything in one process on the default SQLite database: \
        migrations, the API on BIND_ADDR, the worker and the hourly cleanup.",
    after_help = crate::config::help()
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
    /// Consume the events and send their emails, and run the upkeep (the hourly applications
    /// digests, retention); serves /healthz, /readyz and /metrics on WORKER_HTTP_ADDR.
    Worker,
    /// Apply migrations and exit.
    Migrate,
    /// Delete expired processed-event records, idempotency keys and sign-in failure counters,
    /// print the counts, exit.
    Cleanup,
    /// Inspect and act on dead letters.
    #[command(subcommand)]
    Dlq(DlqCommand),
    /// Give or take an account's operator rights (the console and /api/admin/*).
    #[command(subcommand)]
    Admin(AdminCommand),
    /// The search index in SEARCH_INDEX_DIR.
    #[command(subcommand)]
    Search(SearchCommand),
}

#[derive(Debug, Subcommand)]
pub enum SearchCommand {
    /// Print the index: documents, the last job change it applied, the newest in the log, the
    /// lag.
    Status,
    /// Rebuild the index from the database and exit; refused while a running process holds the
    /// folder.
    Rebuild,
}

#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Give the account with this email operator rights; exits 1 if there is no such account.
    Grant {
        /// The account's email, as it signs in.
        email: String,
    },
    /// Take the account's operator rights away; exits 1 if there is no such account.
    Revoke {
        /// The account's email, as it signs in.
        email: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum DlqCommand {
    /// One dead letter per line: id, event_id (or -), reason, attempts, first and last failure.
    List {
        /// One JSON object per line instead.
        #[arg(long)]
        json: bool,
    },
    /// Re-queue dead letters with their attempts reset; exits 0 only if every id was found.
    Redrive {
        #[command(flatten)]
        which: Which,
        /// Also re-queue messages that have no usable event_id.
        #[arg(long)]
        include_invalid: bool,
    },
    /// Delete dead letters and print how many.
    Purge {
        #[command(flatten)]
        which: Which,
    },
}

/// `--all` or a list of ids.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct Which {
    /// Every dead letter.
    #[arg(long)]
    pub all: bool,
    /// Dead-letter ids, as `dlq list` shows them.
    pub ids: Vec<String>,
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
        assert!(matches!(
            Cli::try_parse_from(["jobboard", "dlq", "redrive", "3", "4", "--include-invalid"])
                .unwrap()
                .command,
            Some(Command::Dlq(DlqCommand::Redrive {
                include_invalid: true,
                ..
            }))
        ));
        assert!(
            Cli::try_parse_from(["jobboard", "dlq", "redrive"]).is_err(),
            "needs --all or ids"
        );
        assert!(
            Cli::try_parse_from(["jobboard", "dlq", "purge", "--all", "3"]).is_err(),
            "not both"
        );
        assert!(matches!(
            Cli::try_parse_from(["jobboard", "admin", "grant", "ops@example.com"])
                .unwrap()
                .command,
            Some(Command::Admin(AdminCommand::Grant { email })) if email == "ops@example.com"
        ));
        assert!(
            Cli::try_parse_from(["jobboard", "admin", "grant"]).is_err(),
            "needs an email"
        );
        assert!(matches!(
            Cli::try_parse_from(["jobboard", "search", "rebuild"])
                .unwrap()
                .command,
            Some(Command::Search(SearchCommand::Rebuild))
        ));
        assert!(Cli::try_parse_from(["jobboard", "bogus"]).is_err());
    }
}
