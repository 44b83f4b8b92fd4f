//! Configuration from the environment (CONTRACT.md §3), validated once at start-up. A bad value
//! becomes one line naming the variable and the rule; secrets never appear in messages or in
//! `Debug` output.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

/// A configuration problem, rendered as the one line start-up prints.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("configuration error: {var}: {message}")]
pub struct ConfigError {
    pub var: &'static str,
    pub message: String,
}

fn err(var: &'static str, message: impl Into<String>) -> ConfigError {
    ConfigError {
        var,
        message: message.into(),
    }
}

/// A value that must never be printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppEnv {
    Development,
    Production,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueKind {
    Db,
    Sqs,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimMode {
    Lease,
    Transaction,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EmailBackend {
    Console,
    File,
    Smtp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// A URL with its password replaced by `***`, for logs.
pub fn redact_url(raw: &str) -> String {
    match url::Url::parse(raw) {
        Ok(mut u) => {
            if u.password().is_some() {
                let _ = u.set_password(Some("***"));
            }
            // libpq-style URLs may carry the password as a query parameter too.
            if u.query_pairs()
                .any(|(k, _)| k.eq_ignore_ascii_case("password"))
            {
                let pairs: Vec<(String, String)> = u
                    .query_pairs()
                    .map(|(k, v)| {
                        let v = if k.eq_ignore_ascii_case("password") {
                            "***".to_string()
                        } else {
                            v.into_owned()
                        };
                        (k.into_owned(), v)
                    })
                    .collect();
                u.query_pairs_mut().clear().extend_pairs(pairs);
            }
            u.to_string()
        }
        Err(_) => "<unparsable url>".to_string(),
    }
}

/// The whole configuration.
#[derive(Debug, Clone)]
pub struct Config {
    pub app_env: AppEnv,
    pub database_url: DatabaseUrl,
    pub bind_addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    pub worker_http_addr: SocketAddr,
    pub cors_allowed_origins: Vec<String>,
    pub redis_url: Option<Secret>,
    /// Prefix of every Redis key, so that several deployments (or test runs) can share a server.
    pub redis_key_prefix: String,
    pub search_cache_ttl_secs: u64,
    /// The in-process search cache's budget, in MiB of cached pages.
    pub search_cache_max_mb: u64,
    pub queue: QueueKind,
    pub sqs_queue_url: Option<String>,
    pub sqs_dlq_url: Option<String>,
    pub visibility_timeout_secs: u64,
    pub email_send_timeout_secs: u64,
    pub max_attempts: u32,
    pub worker_concurrency: usize,
    pub claim_mode: ClaimMode,
    /// Lease mode: claim, record and acknowledge each received batch in one statement each.
    pub worker_batch: bool,
    /// Most database connections per process; `None`: the backend's default.
    pub database_pool_size: Option<u32>,
    pub processed_events_retention_days: u64,
    pub email_backend: EmailBackend,
    pub email_file_dir: PathBuf,
    pub smtp_url: Option<Secret>,
    pub email_from: String,
    pub jwt_secret: Option<Secret>,
    pub jwt_secret_previous: Option<Secret>,
    pub jwt_ttl_secs: u64,
    pub shutdown_grace_secs: u64,
    pub log_format: LogFormat,
}

/// The variables, their defaults and meaning, for `--help`.
pub const HELP: &str = "\
Environment (defaults in brackets):
  APP_ENV                 development | production [development]
  DATABASE_URL            sqlite://PATH or postgres://... [sqlite://data/jobboard.db]
  BIND_ADDR               API listener [127.0.0.1:8000]
  METRICS_ADDR            separate /metrics listener [unset: /metrics on BIND_ADDR]
  WORKER_HTTP_ADDR        worker's health/metrics listener [127.0.0.1:9000]
  CORS_ALLOWED_ORIGINS    comma-separated origins [none]
  REDIS_URL               job-search cache in Redis [unset: in-process cache]
  REDIS_KEY_PREFIX        prefix of every Redis key [jobboard:]
  SEARCH_CACHE_TTL_SECS   1-86400 [300]
  SEARCH_CACHE_MAX_MB     in-process cache budget, MiB of pages [16]
  QUEUE                   db | sqs [db]
  SQS_QUEUE_URL, SQS_DLQ_URL  with QUEUE=sqs
  VISIBILITY_TIMEOUT_SECS 1-43200 [30]
  EMAIL_SEND_TIMEOUT_SECS 1-3600, at most half the visibility timeout [10]
  MAX_ATTEMPTS            1-100 [5]
  WORKER_CONCURRENCY      1-1024 [8]
  CLAIM_MODE              lease | transaction (not with SQLite) [lease]
  WORKER_BATCH            true | false: lease mode claims and records a batch per statement [true]
  DATABASE_POOL_SIZE      1-1000 connections per process [32 PostgreSQL, 8 SQLite]
  PROCESSED_EVENTS_RETENTION_DAYS  >= 14 with SQS [14]
  EMAIL_BACKEND           console | file | smtp [console]
  EMAIL_FILE_DIR          where the file backend writes .eml files [data/mail]
  SMTP_URL                smtp://[user:pass@]host:port[?tls=opportunistic|required|none] or smtps://...
  EMAIL_FROM              sender; its domain is the Message-ID domain [jobboard@localhost]
  JWT_SECRET              >= 32 bytes; required in production [random per start]
  JWT_SECRET_PREVIOUS     verifies only, for rotation
  JWT_TTL_SECS            token lifetime [3600]
  SHUTDOWN_GRACE_SECS     time in-flight work gets on SIGTERM/SIGINT [20]
  LOG_FORMAT              pretty | json [pretty on a terminal, else json]
  RUST_LOG                log filter [info]";

struct Env<'a>(&'a HashMap<String, String>);

impl Env<'_> {
    /// The value, with an empty one treated as unset.
    fn get(&self, var: &str) -> Option<&str> {
        self.0.get(var).map(|s| s.trim()).filter(|s| !s.is_empty())
    }

    fn number(
        &self,
        var: &'static str,
        default: u64,
        min: u64,
        max: u64,
    ) -> Result<u64, ConfigError> {
        let Some(raw) = self.get(var) else {
            return Ok(default);
        };
        match raw.parse::<u64>() {
            Ok(n) if (min..=max).contains(&n) => Ok(n),
            _ => Err(err(
                var,
                format!("must be an integer from {min} to {max} (got {raw:?})"),
            )),
        }
    }

    fn addr(&self, var: &'static str) -> Result<Option<SocketAddr>, ConfigError> {
        self.get(var)
            .map(|raw| {
                raw.parse().map_err(|_| {
                    err(
                        var,
                        format!("must be an address such as 127.0.0.1:8000 (got {raw:?})"),
                    )
                })
            })
            .transpose()
    }

    fn word<T: Copy>(
        &self,
        var: &'static str,
        default: T,
        words: &[(&str, T)],
    ) -> Result<T, ConfigError> {
        let Some(raw) = self.get(var) else {
            return Ok(default);
        };
        words
            .iter()
            .find(|(w, _)| w.eq_ignore_ascii_case(raw))
            .map(|(_, v)| *v)
            .ok_or_else(|| {
                let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
                err(
                    var,
                    format!("must be one of {} (got {raw:?})", names.join(", ")),
                )
            })
    }
}

impl Config {
    /// Reads the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Self::from_map(
            &std::env::vars().collect(),
            std::io::IsTerminal::is_terminal(&std::io::stderr()),
        )
    }

    /// Reads the given variables; `terminal` picks the default log format.
    pub fn from_map(vars: &HashMap<String, String>, terminal: bool) -> Result<Config, ConfigError> {
        let env = Env(vars);
        let app_env = env.word(
            "APP_ENV",
            AppEnv::Development,
            &[
                ("development", AppEnv::Development),
                ("production", AppEnv::Production),
            ],
        )?;
        let prod = app_env == AppEnv::Production;

        let database_url = parse_database_url(
            env.get("DATABASE_URL")
                .unwrap_or("sqlite://data/jobboard.db"),
        )?;
        let bind_addr = env
            .addr("BIND_ADDR")?
            .unwrap_or_else(|| ([127, 0, 0, 1], 8000).into());
        let metrics_addr = env.addr("METRICS_ADDR")?;
        let worker_http_addr = env
            .addr("WORKER_HTTP_ADDR")?
            .unwrap_or_else(|| ([127, 0, 0, 1], 9000).into());

        let cors_allowed_origins = match env.get("CORS_ALLOWED_ORIGINS") {
            None => vec![],
            Some(raw) => raw
                .split(',')
                .map(str::trim)
                .filter(|o| !o.is_empty())
                .map(|o| {
                    let ok = url::Url::parse(o)
                        .map(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
                        .unwrap_or(false);
                    if ok && o.parse::<axum::http::HeaderValue>().is_ok() {
                        Ok(o.trim_end_matches('/').to_string())
                    } else {
                        Err(err(
                            "CORS_ALLOWED_ORIGINS",
                            format!("each origin must look like https://example.com (got {o:?})"),
                        ))
                    }
                })
                .collect::<Result<_, _>>()?,
        };

        let redis_url = match env.get("REDIS_URL") {
            None => None,
            Some(raw) => {
                let u = url::Url::parse(raw).map_err(|_| err("REDIS_URL", "is not a valid URL"))?;
                if !matches!(u.scheme(), "redis" | "rediss") {
                    return Err(err("REDIS_URL", "must start with redis:// or rediss://"));
                }
                Some(Secret(raw.to_string()))
            }
        };
        let redis_key_prefix = env
            .get("REDIS_KEY_PREFIX")
            .unwrap_or("jobboard:")
            .to_string();
        let search_cache_ttl_secs = env.number("SEARCH_CACHE_TTL_SECS", 300, 1, 86_400)?;
        let search_cache_max_mb = env.number("SEARCH_CACHE_MAX_MB", 16, 1, 65_536)?;

        let queue = env.word(
            "QUEUE",
            QueueKind::Db,
            &[("db", QueueKind::Db), ("sqs", QueueKind::Sqs)],
        )?;
        let sqs_queue_url = env.get("SQS_QUEUE_URL").map(str::to_string);
        let sqs_dlq_url = env.get("SQS_DLQ_URL").map(str::to_string);
        if queue == QueueKind::Sqs && sqs_queue_url.is_none() {
            return Err(err("SQS_QUEUE_URL", "is required with QUEUE=sqs"));
        }
        for (var, v) in [
            ("SQS_QUEUE_URL", &sqs_queue_url),
            ("SQS_DLQ_URL", &sqs_dlq_url),
        ] {
            if let Some(v) = v
                && url::Url::parse(v).is_err()
            {
                return Err(err(var, "is not a valid URL"));
            }
            if v.as_deref()
                .is_some_and(|u| u.trim_end_matches('/').ends_with(".fifo"))
            {
                return Err(err(
                    var,
                    "FIFO queues are not supported; use a standard queue",
                ));
            }
        }

        let visibility_timeout_secs = env.number("VISIBILITY_TIMEOUT_SECS", 30, 1, 43_200)?;
        let email_send_timeout_secs = env.number("EMAIL_SEND_TIMEOUT_SECS", 10, 1, 3_600)?;
        if email_send_timeout_secs * 2 > visibility_timeout_secs {
            return Err(err(
                "EMAIL_SEND_TIMEOUT_SECS",
                format!(
                    "must be at most half of VISIBILITY_TIMEOUT_SECS ({email_send_timeout_secs} > {visibility_timeout_secs}/2)"
                ),
            ));
        }
        let max_attempts = env.number("MAX_ATTEMPTS", 5, 1, 100)? as u32;
        let worker_concurrency = env.number("WORKER_CONCURRENCY", 8, 1, 1024)? as usize;
        let claim_mode = env.word(
            "CLAIM_MODE",
            ClaimMode::Lease,
            &[
                ("lease", ClaimMode::Lease),
                ("transaction", ClaimMode::Transaction),
            ],
        )?;
        let worker_batch = env.word("WORKER_BATCH", true, &[("true", true), ("false", false)])?;
        let database_pool_size = if env.get("DATABASE_POOL_SIZE").is_some() {
            Some(env.number("DATABASE_POOL_SIZE", 32, 1, 1000)? as u32)
        } else {
            None
        };
        if claim_mode == ClaimMode::Transaction && database_url.is_sqlite() {
            return Err(err(
                "CLAIM_MODE",
                "transaction is refused with SQLite: it would hold the database's single write lock during every send; use lease",
            ));
        }
        let min_retention = if queue == QueueKind::Sqs { 14 } else { 1 };
        let processed_events_retention_days =
            env.number("PROCESSED_EVENTS_RETENTION_DAYS", 14, min_retention, 36_500)?;

        let email_backend = env.word(
            "EMAIL_BACKEND",
            EmailBackend::Console,
            &[
                ("console", EmailBackend::Console),
                ("file", EmailBackend::File),
                ("smtp", EmailBackend::Smtp),
            ],
        )?;
        if prod && email_backend == EmailBackend::Console {
            return Err(err(
                "EMAIL_BACKEND",
                "console is refused with APP_ENV=production",
            ));
        }
        let email_file_dir = PathBuf::from(env.get("EMAIL_FILE_DIR").unwrap_or("data/mail"));
        let smtp_url = env.get("SMTP_URL").map(|s| Secret(s.to_string()));
        if let Some(Secret(raw)) = &smtp_url {
            check_smtp_url(raw, prod)?;
        }
        if email_backend == EmailBackend::Smtp && smtp_url.is_none() {
            return Err(err("SMTP_URL", "is required with EMAIL_BACKEND=smtp"));
        }
        let email_from = env
            .get("EMAIL_FROM")
            .unwrap_or("jobboard@localhost")
            .to_string();
        if crate::domain::validate::email(&email_from).is_err() {
            return Err(err(
                "EMAIL_FROM",
                "must be an email address such as jobs@example.com",
            ));
        }

        let jwt_secret = env.get("JWT_SECRET").map(|s| Secret(s.to_string()));
        let jwt_secret_previous = env
            .get("JWT_SECRET_PREVIOUS")
            .map(|s| Secret(s.to_string()));
        for (var, s) in [
            ("JWT_SECRET", &jwt_secret),
            ("JWT_SECRET_PREVIOUS", &jwt_secret_previous),
        ] {
            if let Some(Secret(s)) = s
                && prod
                && s.len() < 32
            {
                return Err(err(var, "must be at least 32 bytes in production"));
            }
        }
        if prod && jwt_secret.is_none() {
            return Err(err(
                "JWT_SECRET",
                "is required in production (at least 32 bytes)",
            ));
        }
        let jwt_ttl_secs = env.number("JWT_TTL_SECS", 3600, 60, 30 * 86_400)?;
        let shutdown_grace_secs = env.number("SHUTDOWN_GRACE_SECS", 20, 0, 3_600)?;
        if let Some(filter) = env.get("RUST_LOG")
            && tracing_subscriber::EnvFilter::try_new(filter).is_err()
        {
            return Err(err(
                "RUST_LOG",
                format!("is not a valid log filter (got {filter:?})"),
            ));
        }
        let log_format = env.word(
            "LOG_FORMAT",
            if terminal {
                LogFormat::Pretty
            } else {
                LogFormat::Json
            },
            &[("pretty", LogFormat::Pretty), ("json", LogFormat::Json)],
        )?;

        Ok(Config {
            app_env,
            database_url,
            bind_addr,
            metrics_addr,
            worker_http_addr,
            cors_allowed_origins,
            redis_url,
            redis_key_prefix,
            search_cache_ttl_secs,
            search_cache_max_mb,
            queue,
            sqs_queue_url,
            sqs_dlq_url,
            visibility_timeout_secs,
            email_send_timeout_secs,
            max_attempts,
            worker_concurrency,
            claim_mode,
            worker_batch,
            database_pool_size,
            processed_events_retention_days,
            email_backend,
            email_file_dir,
            smtp_url,
            email_from,
            jwt_secret,
            jwt_secret_previous,
            jwt_ttl_secs,
            shutdown_grace_secs,
            log_format,
        })
    }
}

fn parse_database_url(raw: &str) -> Result<DatabaseUrl, ConfigError> {
    if let Some(path) = raw.strip_prefix("sqlite:") {
        let path = path.trim_start_matches("//");
        if path.is_empty() {
            return Err(err(
                "DATABASE_URL",
                "sqlite:// needs a file path, e.g. sqlite://data/jobboard.db",
            ));
        }
        Ok(DatabaseUrl::Sqlite(raw.to_string()))
    } else if raw.starts_with("postgres://") || raw.starts_with("postgresql://") {
        url::Url::parse(raw).map_err(|_| err("DATABASE_URL", "is not a valid postgres:// URL"))?;
        Ok(DatabaseUrl::Postgres(raw.to_string()))
    } else {
        Err(err(
            "DATABASE_URL",
            "must start with sqlite:// or postgres://",
        ))
    }
}

fn check_smtp_url(raw: &str, prod: bool) -> Result<(), ConfigError> {
    let u = url::Url::parse(raw).map_err(|_| err("SMTP_URL", "is not a valid URL"))?;
    let implicit_tls = match u.scheme() {
        "smtp" => false,
        "smtps" => true,
        _ => return Err(err("SMTP_URL", "must start with smtp:// or smtps://")),
    };
    if u.host_str().is_none_or(str::is_empty) {
        return Err(err("SMTP_URL", "needs a host"));
    }
    let mut tls = "opportunistic".to_string();
    for (k, v) in u.query_pairs() {
        match k.as_ref() {
            "tls" if matches!(v.as_ref(), "opportunistic" | "required" | "none") => {
                tls = v.to_string()
            }
            "tls" => {
                return Err(err(
                    "SMTP_URL",
                    "tls must be opportunistic, required or none",
                ));
            }
            other => return Err(err("SMTP_URL", format!("unknown parameter {other:?}"))),
        }
    }
    let has_credentials = !u.username().is_empty() || u.password().is_some();
    if prod && has_credentials && !implicit_tls && tls != "required" {
        return Err(err(
            "SMTP_URL",
            "credentials need TLS in production: use smtps:// or ?tls=required",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(pairs: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_map(&map, false)
    }

    #[test]
    fn defaults() {
        let c = parse(&[]).unwrap();
        assert_eq!(
            c.database_url,
            DatabaseUrl::Sqlite("sqlite://data/jobboard.db".into())
        );
        assert_eq!(c.bind_addr.to_string(), "127.0.0.1:8000");
        assert_eq!(c.search_cache_ttl_secs, 300);
        assert_eq!(c.search_cache_max_mb, 16);
        assert_eq!(c.claim_mode, ClaimMode::Lease);
        assert!(c.worker_batch);
        assert_eq!(c.database_pool_size, None);
        let c = parse(&[("WORKER_BATCH", "false"), ("DATABASE_POOL_SIZE", "4")]).unwrap();
        assert!(!c.worker_batch);
        assert_eq!(c.database_pool_size, Some(4));
        assert_eq!(c.log_format, LogFormat::Json);
        assert!(c.jwt_secret.is_none());
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (pairs, var) in [
            (
                vec![("SEARCH_CACHE_TTL_SECS", "0")],
                "SEARCH_CACHE_TTL_SECS",
            ),
            (
                vec![("SEARCH_CACHE_TTL_SECS", "86401")],
                "SEARCH_CACHE_TTL_SECS",
            ),
            (vec![("BIND_ADDR", "nowhere")], "BIND_ADDR"),
            (vec![("SEARCH_CACHE_MAX_MB", "0")], "SEARCH_CACHE_MAX_MB"),
            (vec![("DATABASE_URL", "mysql://x")], "DATABASE_URL"),
            (vec![("QUEUE", "kafka")], "QUEUE"),
            (vec![("APP_ENV", "prod")], "APP_ENV"),
            (vec![("REDIS_URL", "http://x")], "REDIS_URL"),
            (
                vec![
                    ("VISIBILITY_TIMEOUT_SECS", "10"),
                    ("EMAIL_SEND_TIMEOUT_SECS", "6"),
                ],
                "EMAIL_SEND_TIMEOUT_SECS",
            ),
            (vec![("CLAIM_MODE", "transaction")], "CLAIM_MODE"),
            (vec![("WORKER_BATCH", "sometimes")], "WORKER_BATCH"),
            (vec![("DATABASE_POOL_SIZE", "0")], "DATABASE_POOL_SIZE"),
            (vec![("DATABASE_POOL_SIZE", "many")], "DATABASE_POOL_SIZE"),
            (
                vec![
                    ("QUEUE", "sqs"),
                    ("SQS_QUEUE_URL", "https://sqs.x/1/q.fifo"),
                ],
                "SQS_QUEUE_URL",
            ),
            (vec![("RUST_LOG", "info,=[")], "RUST_LOG"),
            (
                vec![("CORS_ALLOWED_ORIGINS", "not an origin")],
                "CORS_ALLOWED_ORIGINS",
            ),
            (vec![("EMAIL_BACKEND", "smtp")], "SMTP_URL"),
            (
                vec![
                    ("QUEUE", "sqs"),
                    ("SQS_QUEUE_URL", "http://q"),
                    ("PROCESSED_EVENTS_RETENTION_DAYS", "7"),
                ],
                "PROCESSED_EVENTS_RETENTION_DAYS",
            ),
        ] {
            let e = parse(&pairs).expect_err(&format!("{pairs:?} must be refused"));
            assert_eq!(e.var, var, "{e}");
            assert!(e.to_string().starts_with("configuration error: "), "{e}");
        }
    }

    #[test]
    fn production_rules() {
        let e = parse(&[("APP_ENV", "production"), ("EMAIL_BACKEND", "file")]).unwrap_err();
        assert_eq!(e.var, "JWT_SECRET");
        let e = parse(&[
            ("APP_ENV", "production"),
            ("EMAIL_BACKEND", "file"),
            ("JWT_SECRET", "short"),
        ])
        .unwrap_err();
        assert_eq!(e.var, "JWT_SECRET");
        let secret = "s".repeat(32);
        let e = parse(&[("APP_ENV", "production"), ("JWT_SECRET", &secret)]).unwrap_err();
        assert_eq!(e.var, "EMAIL_BACKEND");
        let e = parse(&[
            ("APP_ENV", "production"),
            ("JWT_SECRET", &secret),
            ("EMAIL_BACKEND", "smtp"),
            ("SMTP_URL", "smtp://u:p@mail:25"),
        ])
        .unwrap_err();
        assert_eq!(e.var, "SMTP_URL");
        assert!(
            parse(&[
                ("APP_ENV", "production"),
                ("JWT_SECRET", &secret),
                ("EMAIL_BACKEND", "smtp"),
                ("SMTP_URL", "smtp://u:p@mail:587?tls=required"),
            ])
            .is_ok()
        );
    }

    #[test]
    fn secrets_stay_out_of_messages_and_debug() {
        let c = parse(&[
            ("JWT_SECRET", "supersecretvalue-supersecretvalue"),
            ("DATABASE_URL", "postgres://app:hunter2@db/app"),
            ("REDIS_URL", "redis://:redispw@cache:6379"),
        ])
        .unwrap();
        let dbg = format!("{c:?}");
        assert!(
            !dbg.contains("supersecretvalue")
                && !dbg.contains("hunter2")
                && !dbg.contains("redispw"),
            "{dbg}"
        );
        let e = parse(&[
            ("APP_ENV", "production"),
            ("EMAIL_BACKEND", "file"),
            ("JWT_SECRET", "tiny-secret"),
        ])
        .unwrap_err();
        assert!(!e.to_string().contains("tiny-secret"));
        assert_eq!(
            redact_url("postgres://app:hunter2@db/app"),
            "postgres://app:***@db/app"
        );
        assert!(!redact_url("postgres://db/app?user=a&password=hunter2").contains("hunter2"));
    }
}
