//! Configuration from the environment (docs/running.md), validated once at start-up. One clap
//! definition, [`Config`], names every variable with its default, meaning and parser; it gives
//! `--help` its table and does the validation. A bad value becomes one line naming the variable
//! and the rule; secrets never appear in messages or in `Debug` output.

mod parse;
mod render;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgAction, Args, FromArgMatches, ValueEnum};
use secrecy::{ExposeSecret, SecretString};
use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

pub use parse::redact_url;
use render::from_clap;
pub use render::help;

/// A configuration problem, rendered as the one line start-up prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("configuration error: {var}: {message}")]
pub struct ConfigError {
    pub var: String,
    pub message: String,
}

pub(super) fn err(var: &str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        var: var.to_string(),
        message: message.into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AppEnv {
    Development,
    Production,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum QueueKind {
    Db,
    Sqs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ClaimMode {
    Lease,
    Transaction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EmailBackend {
    Console,
    File,
    Smtp,
    Ses,
}

/// Where résumés live (`FILE_STORE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FileStoreKind {
    Local,
    S3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

/// Which database `DATABASE_URL` names.
#[derive(Clone, PartialEq, Eq)]
pub enum DatabaseUrl {
    Sqlite(String),
    Postgres(String),
}

impl DatabaseUrl {
    pub fn as_str(&self) -> &str {
        match self {
            DatabaseUrl::Sqlite(s) | DatabaseUrl::Postgres(s) => s,
        }
    }

    pub fn is_sqlite(&self) -> bool {
        matches!(self, DatabaseUrl::Sqlite(_))
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact_url(self.as_str()))
    }
}

/// The whole configuration: each field is one environment variable (`env`), its default, its
/// meaning (the doc comment, shown by `--help`) and its parser. Numeric ranges are stated at the
/// start of the help text; a test checks them against the parsers.
#[derive(Debug, Clone, Args)]
pub struct Config {
    /// production enforces the rules for JWT_SECRET, UNSUBSCRIBE_SECRET, EMAIL_BACKEND, SMTP_URL
    /// and PUBLIC_BASE_URL
    #[arg(
        long,
        env = "APP_ENV",
        value_enum,
        ignore_case = true,
        default_value = "development"
    )]
    pub app_env: AppEnv,
    /// sqlite://PATH (created) or postgres://user:pass@host/db
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite://data/jobboard.db",
          value_parser = parse::database_url)]
    pub database_url: DatabaseUrl,
    /// API listener
    #[arg(long, env = "BIND_ADDR", default_value = "127.0.0.1:8000", value_parser = parse::addr)]
    pub bind_addr: SocketAddr,
    /// separate /metrics listener [unset: /metrics on BIND_ADDR]
    #[arg(long, env = "METRICS_ADDR", value_parser = parse::addr)]
    pub metrics_addr: Option<SocketAddr>,
    /// the worker's health/metrics listener
    #[arg(long, env = "WORKER_HTTP_ADDR", default_value = "127.0.0.1:9000",
          value_parser = parse::addr)]
    pub worker_http_addr: SocketAddr,
    /// where people reach the API, for the links in emails: an absolute http(s) URL without
    /// query or fragment; https and required in production [unset: http:// + BIND_ADDR]
    #[arg(long = "public-base-url", env = "PUBLIC_BASE_URL",
          value_parser = parse::public_base_url)]
    public_base_url_given: Option<String>,
    /// `PUBLIC_BASE_URL` as links are built on: without a trailing `/`, `http://` + `BIND_ADDR`
    /// when unset.
    #[arg(skip)]
    pub public_base_url: String,
    /// the public job page's Apply link for a board with its own front end: an absolute
    /// http(s) URL holding {id}, which is replaced by the job's id [unset: the page says how to
    /// apply through the API]
    #[arg(long, env = "APPLY_URL_TEMPLATE", value_parser = parse::apply_url_template)]
    pub apply_url_template: Option<String>,
    /// comma-separated origins such as https://app.example.com [none]
    #[arg(long, env = "CORS_ALLOWED_ORIGINS", value_delimiter = ',', value_parser = parse::origin)]
    pub cors_allowed_origins: Vec<String>,
    /// job-search cache in Redis, shared by every API process [unset: in-process cache]
    #[arg(long, env = "REDIS_URL", value_parser = parse::redis_url)]
    pub redis_url: Option<SecretString>,
    /// prefix of every Redis key, to share one Redis between deployments
    #[arg(long, env = "REDIS_KEY_PREFIX", default_value = "jobboard:")]
    pub redis_key_prefix: String,
    /// 1-86400: seconds a search result stays cached
    #[arg(long, env = "SEARCH_CACHE_TTL_SECS", default_value = "300",
          value_parser = parse::ranged(1, 86_400))]
    pub search_cache_ttl_secs: u64,
    /// 1-65536: the in-process search cache's budget, in MiB of cached pages
    #[arg(long, env = "SEARCH_CACHE_MAX_MB", default_value = "8",
          value_parser = parse::ranged(1, 65_536))]
    pub search_cache_max_mb: u64,
    /// this process's search index (created); every process that serves the API keeps its own
    #[arg(long, env = "SEARCH_INDEX_DIR", default_value = "data/search")]
    pub search_index_dir: PathBuf,
    /// the database is the queue, or Amazon SQS (standard queues)
    #[arg(
        long,
        env = "QUEUE",
        value_enum,
        ignore_case = true,
        default_value = "db"
    )]
    pub queue: QueueKind,
    /// required with QUEUE=sqs; AWS_REGION, AWS_ENDPOINT_URL and the AWS credentials apply
    #[arg(long, env = "SQS_QUEUE_URL", value_parser = parse::sqs_url)]
    pub sqs_queue_url: Option<String>,
    /// the dead-letter queue; required with QUEUE=sqs
    #[arg(long, env = "SQS_DLQ_URL", value_parser = parse::sqs_url)]
    pub sqs_dlq_url: Option<String>,
    /// the SQS endpoint, for SQS alone (over AWS_ENDPOINT_URL), as the AWS SDKs read it
    #[arg(long, env = "AWS_ENDPOINT_URL_SQS", value_parser = parse::url)]
    pub sqs_endpoint_url: Option<String>,
    /// 1-60: seconds one SQS request may take (a long poll gets its wait on top); a call gives up
    /// after three tries
    #[arg(long, env = "SQS_TIMEOUT_SECS", default_value = "10",
          value_parser = parse::ranged(1, 60))]
    pub sqs_timeout_secs: u64,
    /// 1-43200: seconds before an unfinished event is delivered again; also the claim lease
    #[arg(long, env = "VISIBILITY_TIMEOUT_SECS", default_value = "30",
          value_parser = parse::ranged(1, 43_200))]
    pub visibility_timeout_secs: u64,
    /// 1-3600: one send's deadline, at most half of VISIBILITY_TIMEOUT_SECS
    #[arg(long, env = "EMAIL_SEND_TIMEOUT_SECS", default_value = "10",
          value_parser = parse::ranged(1, 3_600))]
    pub email_send_timeout_secs: u64,
    /// 1-100: failed sends before an event is dead-lettered
    #[arg(long, env = "MAX_ATTEMPTS", default_value = "5",
          value_parser = parse::ranged(1, 100).map(|n| n as u32))]
    pub max_attempts: u32,
    /// 1-1024: events handled at once per worker process (in transaction mode each one in
    /// flight also holds a database connection)
    #[arg(long, env = "WORKER_CONCURRENCY", default_value = "32",
          value_parser = parse::ranged(1, 1024).map(|n| n as usize))]
    pub worker_concurrency: usize,
    /// transaction is refused with SQLite
    #[arg(
        long,
        env = "CLAIM_MODE",
        value_enum,
        ignore_case = true,
        default_value = "lease"
    )]
    pub claim_mode: ClaimMode,
    /// lease mode claims, records and acknowledges each received batch in one statement each
    #[arg(long, env = "WORKER_BATCH", action = ArgAction::Set, ignore_case = true,
          default_value = "true",
          value_parser = PossibleValuesParser::new(["true", "false"]).map(|s| s.eq_ignore_ascii_case("true")))]
    pub worker_batch: bool,
    /// 1-3600: seconds the API gives a request before it answers 503 with Retry-After in its
    /// place (the work is abandoned and its transaction rolled back)
    #[arg(long, env = "REQUEST_TIMEOUT_SECS", default_value = "30",
          value_parser = parse::ranged(1, 3_600))]
    pub request_timeout_secs: u64,
    /// 1-65536: requests the API serves at once; past it a request is answered 503 with
    /// Retry-After at once (/healthz, /readyz and /metrics are not counted)
    #[arg(long, env = "MAX_CONCURRENT_REQUESTS", default_value = "1024",
          value_parser = parse::ranged(1, 65_536))]
    pub max_concurrent_requests: u64,
    /// 1-3600: PostgreSQL's statement_timeout on every connection of the API and the worker;
    /// migrations run without it and set their own (SQLite: ignored)
    #[arg(long, env = "DATABASE_STATEMENT_TIMEOUT_SECS", default_value = "30",
          value_parser = parse::ranged(1, 3_600))]
    pub database_statement_timeout_secs: u64,
    /// 1-3600: PostgreSQL's lock_timeout on every connection: the longest a statement waits for
    /// a lock (SQLite: ignored; it waits up to 10 s for its write lock)
    #[arg(long, env = "DATABASE_LOCK_TIMEOUT_SECS", default_value = "10",
          value_parser = parse::ranged(1, 3_600))]
    pub database_lock_timeout_secs: u64,
    /// 1-1000: most database connections per process [unset: 32 PostgreSQL, 8 SQLite]
    #[arg(long, env = "DATABASE_POOL_SIZE", value_parser = parse::ranged(1, 1000).map(|n| n as u32))]
    pub database_pool_size: Option<u32>,
    /// 1-36500: days processed-event records are kept; at least 14 with QUEUE=sqs
    #[arg(long, env = "PROCESSED_EVENTS_RETENTION_DAYS", default_value = "14",
          value_parser = parse::ranged(1, 36_500))]
    pub processed_events_retention_days: u64,
    /// 1-365: days a job stays open before it expires (from its creation, or its approval)
    #[arg(long, env = "JOB_POSTING_DAYS", default_value = "30",
          value_parser = parse::ranged(1, 365))]
    pub job_posting_days: u64,
    /// 0-30: days before a job expires that its company's members are emailed (0: never)
    #[arg(long, env = "JOB_EXPIRY_NOTICE_DAYS", default_value = "5",
          value_parser = parse::ranged(0, 30))]
    pub job_expiry_notice_days: u64,
    /// true: a new job waits for an operator's approval before anyone else sees it
    #[arg(long, env = "JOB_MODERATION", action = ArgAction::Set, ignore_case = true,
          default_value = "false",
          value_parser = PossibleValuesParser::new(["true", "false"]).map(|s| s.eq_ignore_ascii_case("true")))]
    pub job_moderation: bool,
    /// true: webhook URLs may be http and reach private, loopback and link-local addresses
    /// (tests, private deployments); refused in production
    #[arg(long, env = "WEBHOOK_ALLOW_PRIVATE", action = ArgAction::Set, ignore_case = true,
          default_value = "false",
          value_parser = PossibleValuesParser::new(["true", "false"]).map(|s| s.eq_ignore_ascii_case("true")))]
    pub webhook_allow_private: bool,
    /// true: a job without a pay range is refused (422 naming `salary`), for boards under
    /// pay-transparency rules
    #[arg(long, env = "JOB_REQUIRE_SALARY", action = ArgAction::Set, ignore_case = true,
          default_value = "false",
          value_parser = PossibleValuesParser::new(["true", "false"]).map(|s| s.eq_ignore_ascii_case("true")))]
    pub job_require_salary: bool,
    /// the ISO 4217 currency of salaries stored before pay had a currency (USD, EUR, ...)
    #[arg(long, env = "DEFAULT_SALARY_CURRENCY", default_value = "USD",
          value_parser = parse::currency)]
    pub default_salary_currency: &'static str,
    /// 0-3650: days an application stays in a final status (hired, rejected, withdrawn)
    /// before the worker's upkeep deletes it with its history (0: kept until deleted)
    #[arg(long, env = "APPLICATION_RETENTION_DAYS", default_value = "365",
          value_parser = parse::ranged(0, 3_650))]
    pub application_retention_days: u64,
    /// where résumés live: local (a folder, FILE_STORE_DIR) or s3 (Amazon S3 through the AWS
    /// SDK: S3_BUCKET, S3_PREFIX, the usual AWS variables and AWS_ENDPOINT_URL_S3)
    #[arg(
        long,
        env = "FILE_STORE",
        value_enum,
        ignore_case = true,
        default_value = "local"
    )]
    pub file_store: FileStoreKind,
    /// the folder of FILE_STORE=local (created)
    #[arg(long, env = "FILE_STORE_DIR", default_value = "data/files")]
    pub file_store_dir: PathBuf,
    /// the bucket of FILE_STORE=s3 (required with it)
    #[arg(long, env = "S3_BUCKET")]
    pub s3_bucket: Option<String>,
    /// the prefix of every key FILE_STORE=s3 writes (`resumes/…` follows it)
    #[arg(long, env = "S3_PREFIX", default_value = "")]
    pub s3_prefix: String,
    /// the S3 endpoint, for S3 alone (over AWS_ENDPOINT_URL), as the AWS SDKs read it
    #[arg(long, env = "AWS_ENDPOINT_URL_S3", value_parser = parse::url)]
    pub s3_endpoint_url: Option<String>,
    /// 1024-52428800: the largest résumé accepted, in bytes (5 MiB by default)
    #[arg(long, env = "RESUME_MAX_BYTES", default_value = "5242880",
          value_parser = parse::ranged(1_024, 52_428_800))]
    pub resume_max_bytes: u64,
    /// 1-60: one webhook attempt's deadline, from the connection to the last byte of the answer;
    /// a claimed delivery's lease is six times it
    #[arg(long, env = "WEBHOOK_TIMEOUT_SECS", default_value = "10",
          value_parser = parse::ranged(1, 60))]
    pub webhook_timeout_secs: u64,
    /// 1-3600: seconds before a failed webhook delivery is tried again the first time; each
    /// later wait doubles, to at most 6 hours
    #[arg(long, env = "WEBHOOK_RETRY_SECS", default_value = "30",
          value_parser = parse::ranged(1, 3_600))]
    pub webhook_retry_secs: u64,
    /// console prints (refused in production), file writes .eml files, smtp sends, ses sends
    /// through Amazon SES (API v2; AWS_REGION and the AWS credentials apply)
    #[arg(
        long,
        env = "EMAIL_BACKEND",
        value_enum,
        ignore_case = true,
        default_value = "console"
    )]
    pub email_backend: EmailBackend,
    /// where the file backend writes one .eml per message
    #[arg(long, env = "EMAIL_FILE_DIR", default_value = "data/mail")]
    pub email_file_dir: PathBuf,
    /// the SES endpoint, for SES alone (over AWS_ENDPOINT_URL), as the AWS SDKs read it
    #[arg(long, env = "AWS_ENDPOINT_URL_SESV2", value_parser = parse::url)]
    pub ses_endpoint_url: Option<String>,
    /// smtp://[user:pass@]host:port[?tls=opportunistic|required|none] (STARTTLS) or smtps://...
    #[arg(long, env = "SMTP_URL", value_parser = parse::smtp_url)]
    pub smtp_url: Option<SecretString>,
    /// the sender; its domain is the Message-ID domain
    #[arg(long, env = "EMAIL_FROM", default_value = "jobboard@localhost",
          value_parser = parse::email_from)]
    pub email_from: String,
    /// signs tokens; >= 32 bytes, required in production [unset: random per start]
    #[arg(long, env = "JWT_SECRET", value_parser = parse::secret)]
    pub jwt_secret: Option<SecretString>,
    /// verifies only, for rotation; >= 32 bytes in production
    #[arg(long, env = "JWT_SECRET_PREVIOUS", value_parser = parse::secret)]
    pub jwt_secret_previous: Option<SecretString>,
    /// signs unsubscribe links, rotated apart from JWT_SECRET (links signed with JWT_SECRET's key
    /// still verify); >= 32 bytes, required in production [unset: JWT_SECRET's key]
    #[arg(long, env = "UNSUBSCRIBE_SECRET", value_parser = parse::secret)]
    pub unsubscribe_secret: Option<SecretString>,
    /// verifies unsubscribe links only, for rotation; >= 32 bytes in production
    #[arg(long, env = "UNSUBSCRIBE_SECRET_PREVIOUS", value_parser = parse::secret)]
    pub unsubscribe_secret_previous: Option<SecretString>,
    /// 60-2592000: token lifetime in seconds
    #[arg(long, env = "JWT_TTL_SECS", default_value = "3600",
          value_parser = parse::ranged(60, 30 * 86_400))]
    pub jwt_ttl_secs: u64,
    /// 0-3600: seconds in-flight work gets on SIGTERM/SIGINT
    #[arg(long, env = "SHUTDOWN_GRACE_SECS", default_value = "20",
          value_parser = parse::ranged(0, 3_600))]
    pub shutdown_grace_secs: u64,
    /// 0-300: seconds the API keeps serving after /readyz turns 503 on SIGTERM/SIGINT, so a load
    /// balancer notices first (its check interval times its failure threshold)
    #[arg(long, env = "SHUTDOWN_DRAIN_SECS", default_value = "0",
          value_parser = parse::ranged(0, 300))]
    pub shutdown_drain_secs: u64,
    /// pretty on a terminal, else json (one object per line)
    #[arg(
        long,
        env = "LOG_FORMAT",
        value_enum,
        ignore_case = true,
        default_value = "json"
    )]
    pub log_format: LogFormat,
    /// log filter, such as info or jobboard=debug (the logger reads it; checked here)
    #[arg(long, env = "RUST_LOG", default_value = "info", value_parser = parse::log_filter)]
    pub rust_log: String,
}

/// The definition as a command of its own, `terminal` choosing the log format's default. It
/// reads only the values given to it: the environment is read once, by [`Config::from_env`].
pub(super) fn command(terminal: bool) -> clap::Command {
    let cmd = Config::augment_args(
        clap::Command::new("jobboard")
            .no_binary_name(true)
            .disable_help_flag(true),
    );
    if terminal {
        cmd.mut_arg("log_format", |a| a.default_value("pretty"))
    } else {
        cmd
    }
}

/// Each variable and the long flag its value is given to the parser as.
pub(super) fn variables(cmd: &clap::Command) -> Vec<(String, String)> {
    cmd.get_arguments()
        .filter_map(|a| {
            let var = a.get_env()?.to_str()?;
            Some((var.to_string(), a.get_long()?.to_string()))
        })
        .collect()
}

/// Every variable the configuration reads, as `--help` lists them.
pub fn variable_names() -> Vec<String> {
    variables(&command(false))
        .into_iter()
        .map(|(var, _)| var)
        .collect()
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        let mut vars = HashMap::new();
        let mut not_unicode = Vec::new();
        for (k, v) in std::env::vars_os() {
            match (k.into_string(), v.into_string()) {
                (Ok(k), Ok(v)) => {
                    vars.insert(k, v);
                }
                (Ok(k), Err(_)) => not_unicode.push(k),
                (Err(_), _) => {}
            }
        }
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        if let Some((var, _)) = variables(&command(terminal))
            .into_iter()
            .find(|(var, _)| not_unicode.contains(var))
        {
            return Err(err(&var, "is not valid UTF-8"));
        }
        Self::from_map(&vars, terminal)
    }

    /// Reads the given variables; `terminal` picks the default log format. A value is trimmed,
    /// and an empty one counts as unset.
    pub fn from_map(vars: &HashMap<String, String>, terminal: bool) -> Result<Config, ConfigError> {
        let cmd = command(terminal);
        let table = variables(&cmd);
        let args = table.iter().filter_map(|(var, long)| {
            let value = vars.get(var).map(|v| v.trim()).filter(|v| !v.is_empty())?;
            Some(format!("--{long}={value}"))
        });
        // Only the values given count: the definition's own reading of the process
        // environment is switched off.
        let matches = cmd
            .mut_args(|a| a.env(None))
            .try_get_matches_from(args)
            .map_err(|e| from_clap(&e, &table))?;
        let config = Config::from_arg_matches(&matches).map_err(|e| from_clap(&e, &table))?;
        config.checked()
    }

    /// The rules that involve more than one variable.
    fn checked(mut self) -> Result<Config, ConfigError> {
        let prod = self.app_env == AppEnv::Production;
        self.cors_allowed_origins.retain(|o| !o.is_empty());
        if self.queue == QueueKind::Sqs {
            // Without its own DLQ a dead event would circle through the queue until its redrive
            // policy moved it where `dlq list` cannot read it (or forever, with no policy).
            for (var, url) in [
                ("SQS_QUEUE_URL", &self.sqs_queue_url),
                ("SQS_DLQ_URL", &self.sqs_dlq_url),
            ] {
                if url.is_none() {
                    return Err(err(var, "is required with QUEUE=sqs"));
                }
            }
        }
        if self.file_store == FileStoreKind::S3 && self.s3_bucket.is_none() {
            return Err(err("S3_BUCKET", "is required with FILE_STORE=s3"));
        }
        if self.email_send_timeout_secs * 2 > self.visibility_timeout_secs {
            return Err(err(
                "EMAIL_SEND_TIMEOUT_SECS",
                format!(
                    "must be at most half of VISIBILITY_TIMEOUT_SECS ({} > {}/2)",
                    self.email_send_timeout_secs, self.visibility_timeout_secs
                ),
            ));
        }
        if self.claim_mode == ClaimMode::Transaction && self.database_url.is_sqlite() {
            return Err(err(
                "CLAIM_MODE",
                "transaction is refused with SQLite: it would hold the database's single write lock during every send; use lease",
            ));
        }
        let days = self.processed_events_retention_days;
        if self.queue == QueueKind::Sqs && days < 14 {
            return Err(err(
                "PROCESSED_EVENTS_RETENTION_DAYS",
                parse::range_message(14, 36_500, &days.to_string()),
            ));
        }
        if prod && self.webhook_allow_private {
            return Err(err(
                "WEBHOOK_ALLOW_PRIVATE",
                "true is refused with APP_ENV=production: webhooks could reach the network the \
                 board runs in",
            ));
        }
        if prod && self.email_backend == EmailBackend::Console {
            return Err(err(
                "EMAIL_BACKEND",
                "console is refused with APP_ENV=production",
            ));
        }
        if prod
            && self
                .smtp_url
                .as_ref()
                .is_some_and(|u| parse::smtp_credentials_without_tls(u.expose_secret()))
        {
            return Err(err(
                "SMTP_URL",
                "credentials need TLS in production: use smtps:// or ?tls=required",
            ));
        }
        if self.email_backend == EmailBackend::Smtp && self.smtp_url.is_none() {
            return Err(err("SMTP_URL", "is required with EMAIL_BACKEND=smtp"));
        }
        for (var, s) in [
            ("JWT_SECRET", &self.jwt_secret),
            ("JWT_SECRET_PREVIOUS", &self.jwt_secret_previous),
            ("UNSUBSCRIBE_SECRET", &self.unsubscribe_secret),
            (
                "UNSUBSCRIBE_SECRET_PREVIOUS",
                &self.unsubscribe_secret_previous,
            ),
        ] {
            if prod && s.as_ref().is_some_and(|s| s.expose_secret().len() < 32) {
                return Err(err(var, "must be at least 32 bytes in production"));
            }
        }
        if prod && self.jwt_secret.is_none() {
            return Err(err(
                "JWT_SECRET",
                "is required in production (at least 32 bytes)",
            ));
        }
        match &self.public_base_url_given {
            // The links in emails leave the network: in production they must name the public,
            // encrypted address, never a listener's.
            Some(url) if prod && !url.starts_with("https://") => {
                return Err(err("PUBLIC_BASE_URL", "must be https in production"));
            }
            Some(url) => self.public_base_url = url.clone(),
            None if prod => {
                return Err(err(
                    "PUBLIC_BASE_URL",
                    "is required in production (an https URL such as https://jobs.example.com)",
                ));
            }
            None => self.public_base_url = format!("http://{}", self.bind_addr),
        }
        // Unsubscribe links never expire: in production they get a key of their own, so that
        // rotating the sign-in secret twice does not break the links already mailed.
        if prod && self.unsubscribe_secret.is_none() {
            return Err(err(
                "UNSUBSCRIBE_SECRET",
                "is required in production (at least 32 bytes)",
            ));
        }
        Ok(self)
    }
}

#[cfg(test)]
mod tests;
