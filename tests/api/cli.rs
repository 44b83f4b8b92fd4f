//! The `jobboard` binary: help and version, configuration errors, `migrate`, and `serve` with
//! its JSON logs and graceful stop on SIGTERM and SIGINT.

use crate::helpers::*;
use serde_json::Value;
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

const BIN: &str = env!("CARGO_BIN_EXE_jobboard");

type Vars<'a> = Vec<(&'a str, &'a str)>;

/// The binary with an empty environment except `PATH` and `vars`, run in `dir`.
fn jobboard(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(vars.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    cmd
}

struct Output {
    status: ExitStatus,
    stdout: String,
    stderr: String,
}

/// Runs the binary to completion (at most 60 s).
async fn run(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let out = tokio::time::timeout(Duration::from_secs(60), jobboard(dir, args, vars).output())
        .await
        .unwrap_or_else(|_| panic!("jobboard {args:?} did not finish within 60 s"))
        .expect("run jobboard");
    Output {
        status: out.status,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test]
async fn help_lists_every_command_and_variable() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--help"], &[]).await;
    assert!(out.status.success(), "{}", out.stderr);
    for word in [
        "serve",
        "worker",
        "migrate",
        "cleanup",
        "dlq",
        "--help",
        "--version",
    ] {
        assert!(
            out.stdout.contains(word),
            "--help mentions {word}:\n{}",
            out.stdout
        );
    }
    // Every variable of the configuration.
    for var in [
        "APP_ENV",
        "DATABASE_URL",
        "BIND_ADDR",
        "METRICS_ADDR",
        "WORKER_HTTP_ADDR",
        "CORS_ALLOWED_ORIGINS",
        "REDIS_URL",
        "REDIS_KEY_PREFIX",
        "SEARCH_CACHE_TTL_SECS",
        "SEARCH_CACHE_MAX_MB",
        "SEARCH_INDEX_DIR",
        "QUEUE",
        "SQS_QUEUE_URL",
        "SQS_DLQ_URL",
        "AWS_ENDPOINT_URL_SQS",
        "SQS_TIMEOUT_SECS",
        "VISIBILITY_TIMEOUT_SECS",
        "EMAIL_SEND_TIMEOUT_SECS",
        "MAX_ATTEMPTS",
        "WORKER_CONCURRENCY",
        "CLAIM_MODE",
        "WORKER_BATCH",
        "DATABASE_POOL_SIZE",
        "PROCESSED_EVENTS_RETENTION_DAYS",
        "EMAIL_BACKEND",
        "EMAIL_FILE_DIR",
        "AWS_ENDPOINT_URL_SESV2",
        "SMTP_URL",
        "EMAIL_FROM",
        "JWT_SECRET",
        "JWT_SECRET_PREVIOUS",
        "JWT_TTL_SECS",
        "PUBLIC_BASE_URL",
        "SHUTDOWN_GRACE_SECS",
        "SHUTDOWN_DRAIN_SECS",
        "LOG_FORMAT",
        "RUST_LOG",
    ] {
        assert!(
            out.stdout.contains(var),
            "--help mentions {var}:\n{}",
            out.stdout
        );
    }
    // With its default and its rule.
    for line in [
        "[sqlite://data/jobboard.db]",
        "1-86400: seconds a search result stays cached [300]",
        "development | production",
    ] {
        assert!(
            out.stdout.contains(line),
            "--help shows {line}:\n{}",
            out.stdout
        );
    }
    let serve = run(dir.path(), &["serve", "--help"], &[]).await;
    assert!(serve.status.success());
    assert!(serve.stdout.contains("--no-migrate"), "{}", serve.stdout);
    let dlq = run(dir.path(), &["dlq", "--help"], &[]).await;
    assert!(dlq.status.success());
    for sub in ["list", "redrive", "purge"] {
        assert!(
            dlq.stdout.contains(sub),
            "dlq --help mentions {sub}:\n{}",
            dlq.stdout
        );
    }

    let bogus = run(dir.path(), &["bogus"], &[]).await;
    assert!(!bogus.status.success(), "an unknown command fails");
    assert!(bogus.stderr.contains("bogus"), "{}", bogus.stderr);
    assert!(!dir.path().join("data").exists(), "nothing was created");
}

#[tokio::test]
async fn version_prints_the_version() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--version"], &[]).await;
    assert!(out.status.success());
    assert_eq!(
        out.stdout.trim(),
        format!("jobboard {}", env!("CARGO_PKG_VERSION"))
    );
}

#[tokio::test]
async fn bad_configuration_stops_with_one_line_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let strong = "s".repeat(40);
    // (variables, the variable the error names, a secret that must not be printed)
    let cases: Vec<(Vars, &str, Option<&str>)> = vec![
        (
            vec![("SEARCH_CACHE_TTL_SECS", "0")],
            "SEARCH_CACHE_TTL_SECS",
            None,
        ),
        (
            vec![("SEARCH_CACHE_TTL_SECS", "86401")],
            "SEARCH_CACHE_TTL_SECS",
            None,
        ),
        (
            vec![("SEARCH_CACHE_TTL_SECS", "soon")],
            "SEARCH_CACHE_TTL_SECS",
            None,
        ),
        (vec![("DATABASE_URL", "mysql://x")], "DATABASE_URL", None),
        (vec![("BIND_ADDR", "nowhere")], "BIND_ADDR", None),
        (vec![("APP_ENV", "staging")], "APP_ENV", None),
        (vec![("LOG_FORMAT", "xml")], "LOG_FORMAT", None),
        (
            vec![("CORS_ALLOWED_ORIGINS", "not an origin")],
            "CORS_ALLOWED_ORIGINS",
            None,
        ),
        (
            vec![("APP_ENV", "production"), ("EMAIL_BACKEND", "file")],
            "JWT_SECRET",
            None,
        ),
        (
            vec![
                ("APP_ENV", "production"),
                ("EMAIL_BACKEND", "file"),
                ("JWT_SECRET", "short"),
            ],
            "JWT_SECRET",
            Some("short"),
        ),
        (
            vec![
                ("APP_ENV", "production"),
                ("EMAIL_BACKEND", "file"),
                ("JWT_SECRET", strong.as_str()),
                ("JWT_SECRET_PREVIOUS", "tiny-previous-secret"),
            ],
            "JWT_SECRET_PREVIOUS",
            Some("tiny-previous-secret"),
        ),
        (
            vec![("REDIS_URL", "http://cacheuser:redis-pass-4321@cache:6379")],
            "REDIS_URL",
            Some("redis-pass-4321"),
        ),
        (
            vec![
                ("APP_ENV", "production"),
                ("JWT_SECRET", strong.as_str()),
                ("EMAIL_BACKEND", "smtp"),
                ("SMTP_URL", "smtp://mailer:smtp-pass-9876@mail:25"),
            ],
            "SMTP_URL",
            Some("smtp-pass-9876"),
        ),
        (vec![("WORKER_BATCH", "sometimes")], "WORKER_BATCH", None),
        (
            vec![
                ("APP_ENV", "production"),
                ("JWT_SECRET", strong.as_str()),
                ("EMAIL_BACKEND", "file"),
                ("WEBHOOK_ALLOW_PRIVATE", "true"),
            ],
            "WEBHOOK_ALLOW_PRIVATE",
            None,
        ),
        (
            vec![("WEBHOOK_ALLOW_PRIVATE", "yes")],
            "WEBHOOK_ALLOW_PRIVATE",
            None,
        ),
        (
            vec![("WEBHOOK_TIMEOUT_SECS", "61")],
            "WEBHOOK_TIMEOUT_SECS",
            None,
        ),
        (
            vec![("WEBHOOK_RETRY_SECS", "0")],
            "WEBHOOK_RETRY_SECS",
            None,
        ),
        (
            vec![("APPLICATION_RETENTION_DAYS", "3651")],
            "APPLICATION_RETENTION_DAYS",
            None,
        ),
        (
            vec![("PUBLIC_BASE_URL", "https://jobs.example.com/?from=mail")],
            "PUBLIC_BASE_URL",
            None,
        ),
        (
            vec![(
                "PUBLIC_BASE_URL",
                "https://link-user:link-pass-5555@jobs.example.com",
            )],
            "PUBLIC_BASE_URL",
            Some("link-pass-5555"),
        ),
        (
            vec![
                ("APP_ENV", "production"),
                ("EMAIL_BACKEND", "file"),
                ("JWT_SECRET", strong.as_str()),
            ],
            "PUBLIC_BASE_URL",
            None,
        ),
        (
            vec![
                ("APP_ENV", "production"),
                ("EMAIL_BACKEND", "file"),
                ("JWT_SECRET", strong.as_str()),
                ("PUBLIC_BASE_URL", "http://jobs.example.com"),
            ],
            "PUBLIC_BASE_URL",
            None,
        ),
        (
            vec![
                ("APP_ENV", "production"),
                ("EMAIL_BACKEND", "file"),
                ("JWT_SECRET", strong.as_str()),
                ("PUBLIC_BASE_URL", "https://jobs.example.com"),
            ],
            "UNSUBSCRIBE_SECRET",
            None,
        ),
        (
            vec![
                ("APP_ENV", "production"),
                ("EMAIL_BACKEND", "file"),
                ("JWT_SECRET", strong.as_str()),
                ("PUBLIC_BASE_URL", "https://jobs.example.com"),
                ("UNSUBSCRIBE_SECRET", "short-unsubscribe-key-7777"),
            ],
            "UNSUBSCRIBE_SECRET",
            Some("short-unsubscribe-key-7777"),
        ),
        (
            vec![
                ("APP_ENV", "production"),
                ("EMAIL_BACKEND", "file"),
                ("JWT_SECRET", strong.as_str()),
                ("PUBLIC_BASE_URL", "https://jobs.example.com"),
                ("UNSUBSCRIBE_SECRET", strong.as_str()),
                ("UNSUBSCRIBE_SECRET_PREVIOUS", "short-previous-key-8888"),
            ],
            "UNSUBSCRIBE_SECRET_PREVIOUS",
            Some("short-previous-key-8888"),
        ),
        (
            vec![
                ("QUEUE", "sqs"),
                (
                    "SQS_QUEUE_URL",
                    "https://sqs.us-east-1.amazonaws.com/1/jobs",
                ),
            ],
            "SQS_DLQ_URL",
            None,
        ),
        (
            vec![("DEFAULT_SALARY_CURRENCY", "usd")],
            "DEFAULT_SALARY_CURRENCY",
            None,
        ),
        (
            vec![("DEFAULT_SALARY_CURRENCY", "XYZ")],
            "DEFAULT_SALARY_CURRENCY",
            None,
        ),
        (
            vec![("JOB_REQUIRE_SALARY", "yes")],
            "JOB_REQUIRE_SALARY",
            None,
        ),
    ];
    for (vars, var, secret) in cases {
        for args in [&["serve"][..], &["migrate"][..]] {
            let out = run(dir.path(), args, &vars).await;
            assert_eq!(out.status.code(), Some(2), "{vars:?} must stop start-up");
            let lines: Vec<&str> = out
                .stderr
                .lines()
                .filter(|l| !l.trim().is_empty())
                .collect();
            assert_eq!(
                lines.len(),
                1,
                "{vars:?}: exactly one line on stderr, got:\n{}",
                out.stderr
            );
            assert!(
                lines[0].contains(var),
                "{vars:?}: the line names {var}: {}",
                lines[0]
            );
            if let Some(secret) = secret {
                assert!(
                    !out.stderr.contains(secret) && !out.stdout.contains(secret),
                    "{vars:?}: the secret is printed: {}",
                    out.stderr
                );
            }
        }
    }
    assert!(!dir.path().join("data").exists(), "nothing was created");
}

async fn versions(conn: &mut sqlx::SqliteConnection) -> Vec<i64> {
    sqlx::query_scalar("SELECT version FROM _sqlx_migrations ORDER BY 1")
        .fetch_all(conn)
        .await
        .unwrap()
}

/// Only `migrate`, and `serve` unless told otherwise, change the schema; every other command
/// refuses a database whose schema is behind the binary, and changes nothing.
#[tokio::test]
async fn only_migrate_and_serve_migrate_the_others_refuse_a_schema_behind() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("old.db").display());
    // A new database: nothing applied, so every migration is pending, and none is applied.
    let fresh = format!("sqlite://{}", dir.path().join("new.db").display());
    let out = run(
        dir.path(),
        &["cleanup"],
        &[("DATABASE_URL", fresh.as_str())],
    )
    .await;
    assert_eq!(out.status.code(), Some(1), "{}", out.stderr);
    assert!(
        out.stderr.contains("schema is behind") && out.stderr.contains("0001_init"),
        "{}",
        out.stderr
    );
    // An old schema: only the first migration, as an earlier release left it.
    let first = dir.path().join("first");
    std::fs::create_dir(&first).unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/sqlite/0001_init.sql");
    std::fs::copy(&src, first.join("0001_init.sql")).unwrap();
    let opts = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("old.db"))
        .create_if_missing(true);
    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect_with(&opts)
        .await
        .unwrap();
    sqlx::migrate::Migrator::new(first.as_path())
        .await
        .unwrap()
        .run(&mut conn)
        .await
        .unwrap();
    let vars = [
        ("DATABASE_URL", url.as_str()),
        ("BIND_ADDR", "127.0.0.1:0"),
        ("WORKER_HTTP_ADDR", "127.0.0.1:0"),
        ("LOG_FORMAT", "json"),
    ];
    let refusing: [&[&str]; 5] = [
        &["worker"],
        &["cleanup"],
        &["dlq", "list"],
        &["dlq", "purge", "--all"],
        &["serve", "--no-migrate"],
    ];
    for args in refusing {
        let out = run(dir.path(), args, &vars).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains("schema is behind")
                && out.stderr.contains("0002_worker")
                && out.stderr.contains("`jobboard migrate`"),
            "{args:?} names the pending migrations and the fix: {}",
            out.stderr
        );
        assert_eq!(
            versions(&mut conn).await,
            vec![1],
            "{args:?} migrated nothing"
        );
    }

    let out = run(dir.path(), &["migrate"], &vars).await;
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(versions(&mut conn).await, known_versions());
    let out = run(dir.path(), &["cleanup"], &vars).await;
    assert!(
        out.status.success(),
        "a current schema is accepted: {}",
        out.stderr
    );
}

/// A rollback: a newer release migrated the database, following expand/contract so that the
/// schema stays usable by the release before it. Every command starts on it with a WARN naming
/// the migrations it does not know, and none migrates it. A schema that is ahead and also lacks
/// one of this binary's own migrations is still refused.
#[tokio::test]
async fn a_schema_ahead_is_used_with_a_warning_and_never_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("ahead.db");
    let url = format!("sqlite://{}", db.display());
    let vars = [
        ("DATABASE_URL", url.as_str()),
        ("BIND_ADDR", "127.0.0.1:0"),
        ("WORKER_HTTP_ADDR", "127.0.0.1:0"),
        ("LOG_FORMAT", "json"),
    ];
    let out = run(dir.path(), &["migrate"], &vars).await;
    assert!(out.status.success(), "{}", out.stderr);
    let opts = sqlx::sqlite::SqliteConnectOptions::new().filename(&db);
    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect_with(&opts)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (9999, 'from a newer release', TRUE, X'00', 0)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    let warns = |text: &str| {
        text.lines().any(|l| {
            l.contains("\"level\":\"WARN\"")
                && l.contains("ahead")
                && l.contains("9999_from a newer release")
        })
    };
    let once: [&[&str]; 4] = [
        &["migrate"],
        &["cleanup"],
        &["dlq", "list"],
        &["dlq", "purge", "--all"],
    ];
    for args in once {
        let out = run(dir.path(), args, &vars).await;
        assert!(out.status.success(), "{args:?}: {}", out.stderr);
        assert!(
            warns(&out.stderr),
            "{args:?} warns and names the unknown migration: {}",
            out.stderr
        );
    }
    let running: [(&[&str], &str); 3] = [
        (&["serve"], "listening on"),
        (&["serve", "--no-migrate"], "listening on"),
        (&["worker"], "worker health and metrics on"),
    ];
    for (args, ready) in running {
        let mut server = Server::start(dir.path(), args, &vars);
        server.wait_for(ready).await;
        let (status, lines) = server.stop("TERM").await;
        assert_eq!(status.code(), Some(0), "{args:?}: {lines:#?}");
        assert!(
            warns(&lines.join("\n")),
            "{args:?} warns and names the unknown migration: {lines:#?}"
        );
    }
    assert_eq!(
        versions(&mut conn).await,
        [known_versions(), vec![9999]].concat(),
        "nothing migrated the newer schema"
    );

    // Ahead and behind at once (one of this binary's migrations missing): no command runs on it.
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = 1")
        .execute(&mut conn)
        .await
        .unwrap();
    let every: [&[&str]; 6] = [
        &["worker"],
        &["cleanup"],
        &["dlq", "list"],
        &["serve", "--no-migrate"],
        &["migrate"],
        &["serve"],
    ];
    for args in every {
        let out = run(dir.path(), args, &vars).await;
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("9999"), "{args:?}: {}", out.stderr);
    }
    assert_eq!(
        versions(&mut conn).await,
        [&known_versions()[1..], &[9999]].concat()
    );
}

#[tokio::test]
async fn migrate_creates_the_sqlite_database() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nested").join("x.db");
    let url = format!("sqlite://{}", db.display());
    let vars = [("DATABASE_URL", url.as_str()), ("LOG_FORMAT", "json")];
    let out = run(dir.path(), &["migrate"], &vars).await;
    assert!(out.status.success(), "{}", out.stderr);
    assert!(db.exists(), "the database file is created");
    // Again: nothing to do, still fine.
    let again = run(dir.path(), &["migrate"], &vars).await;
    assert!(again.status.success(), "{}", again.stderr);
    assert!(
        !dir.path().join("data/jobboard.db").exists(),
        "the default database was not touched"
    );

    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    let jobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(jobs, 0);
}

/// `jobboard migrate` writes down the pay and place of jobs stored before them, their salary
/// in `DEFAULT_SALARY_CURRENCY` per year, as the process was configured.
#[tokio::test]
async fn migrate_gives_older_jobs_the_default_salary_currency() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("x.db");
    let url = format!("sqlite://{}", db.display());
    let vars = [("DATABASE_URL", url.as_str()), ("LOG_FORMAT", "json")];
    let out = run(dir.path(), &["migrate"], &vars).await;
    assert!(out.status.success(), "{}", out.stderr);
    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&url)
        .await
        .unwrap();
    // Two jobs as a release before pay and place writes them: the older columns alone.
    for statement in [
        "INSERT INTO companies (name, created_at) VALUES ('Acme', '2026-01-01T00:00:00+00:00')",
        "INSERT INTO jobs (company_id, title, description, location, location_key, remote, \
         salary_min, salary_max, employment_type, status, search_terms, title_terms, \
         created_at, updated_at) VALUES \
         (1, 'Welder', 'd', 'Lyon', 'lyon', 0, 40000, 50000, 'full_time', 'open', 'welder', \
          'welder', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00'), \
         (1, 'Nurse', 'd', 'Nice', 'nice', 1, NULL, NULL, 'full_time', 'open', 'nurse', \
          'nurse', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00')",
    ] {
        sqlx::query(statement).execute(&mut conn).await.unwrap();
    }
    let eur = [
        ("DATABASE_URL", url.as_str()),
        ("LOG_FORMAT", "json"),
        ("DEFAULT_SALARY_CURRENCY", "EUR"),
    ];
    let out = run(dir.path(), &["migrate"], &eur).await;
    assert!(out.status.success(), "{}", out.stderr);
    let rows: Vec<(String, String, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT workplace, locations, salary_currency, salary_period FROM jobs ORDER BY id",
    )
    .fetch_all(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows[0].0, "onsite");
    assert_eq!(rows[1].0, "remote");
    let places: Value = serde_json::from_str(&rows[0].1).unwrap();
    assert_eq!(
        places,
        serde_json::json!([{"city": "Lyon", "region": null, "country": null}])
    );
    assert_eq!(
        (rows[0].2.as_deref(), rows[0].3.as_deref()),
        (Some("EUR"), Some("year"))
    );
    assert_eq!((rows[1].2.as_deref(), rows[1].3.as_deref()), (None, None));
}

#[tokio::test]
async fn migrate_on_postgres_never_logs_the_password() {
    let admin = postgres_admin_url();
    let name = format!("jbt_cli_{}", uuid::Uuid::new_v4().simple());
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
        .await
        .expect("PostgreSQL is required for this test");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .unwrap();
    let mut url = url::Url::parse(&admin).unwrap();
    url.set_path(&name);
    // The test server trusts local connections, so any password is accepted and must be hidden.
    url.set_password(Some("pg-secret-pw-77")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["migrate"],
        &[
            ("DATABASE_URL", url.as_str()),
            ("LOG_FORMAT", "json"),
            ("RUST_LOG", "debug"),
        ],
    )
    .await;
    let migrated = out.status.success();
    let mut check = <sqlx::PgConnection as sqlx::Connection>::connect(url.as_str())
        .await
        .unwrap();
    let tables: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.tables WHERE table_name IN ('users', 'jobs', 'applications')",
    )
    .fetch_one(&mut check)
    .await
    .unwrap();
    drop(check);
    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut conn)
        .await;
    assert!(migrated, "{}", out.stderr);
    assert_eq!(tables, 3);
    assert!(
        !out.stderr.contains("pg-secret-pw-77") && !out.stdout.contains("pg-secret-pw-77"),
        "the password is printed:\n{}",
        out.stderr
    );
}

/// A running `jobboard` process and the lines it has written to stderr so far.
struct Server {
    child: Child,
    lines: mpsc::UnboundedReceiver<String>,
    seen: Vec<String>,
}

impl Server {
    fn start(dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Server {
        let mut child = jobboard(dir, args, vars).spawn().expect("start jobboard");
        let (tx, lines) = mpsc::unbounded_channel();
        let stderr = child.stderr.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        for reader in [
            Box::new(stderr) as Box<dyn tokio::io::AsyncRead + Unpin + Send>,
            Box::new(stdout),
        ] {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut reader = BufReader::new(reader).lines();
                while let Ok(Some(line)) = reader.next_line().await {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            });
        }
        Server {
            child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a line containing `text` (at most 60 s) and returns it.
    async fn wait_for(&mut self, text: &str) -> String {
        let found = tokio::time::timeout(Duration::from_secs(60), async {
            while let Some(line) = self.lines.recv().await {
                self.seen.push(line.clone());
                if line.contains(text) {
                    return Some(line);
                }
            }
            None
        })
        .await;
        match found {
            Ok(Some(line)) => line,
            _ => panic!(
                "no line containing {text:?}; output so far:\n{}",
                self.seen.join("\n")
            ),
        }
    }

    /// The address the process says it bound, from the first line with `marker` (it binds
    /// port 0: no port is picked for it that something else could take first).
    async fn address(&mut self, marker: &str) -> String {
        let line = self.wait_for(marker).await;
        address_after(&line, marker)
    }

    /// Sends `signal` and waits (at most 15 s) for the exit; returns the status and every line.
    async fn stop(mut self, signal: &str) -> (ExitStatus, Vec<String>) {
        let pid = self.child.id().expect("running").to_string();
        let kill = std::process::Command::new("kill")
            .args([format!("-{signal}"), pid])
            .status()
            .expect("run kill");
        assert!(kill.success());
        let status = tokio::time::timeout(Duration::from_secs(15), self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("jobboard did not exit within 15 s of SIG{signal}"))
            .expect("wait");
        while let Some(line) = self.lines.recv().await {
            self.seen.push(line);
        }
        (status, self.seen)
    }
}

/// Every line is one JSON object with a timestamp, a level, a message and a target.
fn assert_json_logs(lines: &[String]) {
    assert!(!lines.is_empty(), "the process logged something");
    for line in lines {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        let obj = v
            .as_object()
            .unwrap_or_else(|| panic!("not an object: {line}"));
        for field in ["timestamp", "level", "message", "target"] {
            assert!(
                obj.get(field).is_some_and(Value::is_string),
                "{field} in {line}"
            );
        }
        let ts = obj["timestamp"].as_str().unwrap();
        assert!(
            chrono::DateTime::parse_from_rfc3339(ts).is_ok(),
            "RFC 3339 timestamp: {line}"
        );
    }
}

async fn serve_and_stop(signal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("serve.db");
    let url = format!("sqlite://{}", db.display());
    let mut server = Server::start(
        dir.path(),
        &["serve"],
        &[
            ("DATABASE_URL", url.as_str()),
            ("BIND_ADDR", "127.0.0.1:0"),
            ("METRICS_ADDR", "127.0.0.1:0"),
            ("LOG_FORMAT", "json"),
            ("SHUTDOWN_GRACE_SECS", "5"),
        ],
    );
    let metrics_addr = server.address("metrics on http://").await;
    let addr = server.address("listening on http://").await;

    let client = reqwest::Client::new();
    let health = client
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.status().as_u16(), 200);
    let body: Value = health.json().await.unwrap();
    assert_eq!(body, serde_json::json!({"status": "ok"}));
    // Ready once its search index has caught up with the job-change log (at once here).
    let mut ready = 0;
    for _ in 0..100 {
        let r = client
            .get(format!("http://{addr}/readyz"))
            .send()
            .await
            .expect("readyz");
        ready = r.status().as_u16();
        if ready == 200 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(ready, 200);
    let jobs = client
        .get(format!("http://{addr}/api/jobs"))
        .send()
        .await
        .expect("jobs");
    assert_eq!(jobs.status().as_u16(), 200);

    // /metrics lives on its own listener.
    let metrics = client
        .get(format!("http://{metrics_addr}/metrics"))
        .send()
        .await
        .expect("metrics");
    assert_eq!(metrics.status().as_u16(), 200);
    let text = metrics.text().await.unwrap();
    assert!(text.contains("http_requests_total"), "{text}");
    assert!(text.contains(r#"route="/healthz""#), "{text}");
    let on_api = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .expect("metrics on API");
    assert_eq!(on_api.status().as_u16(), 404);
    drop(client);

    let (status, lines) = server.stop(signal).await;
    assert_eq!(
        status.code(),
        Some(0),
        "a clean stop exits 0; output:\n{}",
        lines.join("\n")
    );
    assert_json_logs(&lines);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"WARN\"") && l.contains("JWT_SECRET")),
        "a random JWT secret is warned about:\n{}",
        lines.join("\n")
    );
    assert!(db.exists());
    assert!(
        !dir.path().join("data/jobboard.db").exists(),
        "the default database was not touched"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_and_stops_cleanly_on_sigterm() {
    serve_and_stop("TERM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_answers_and_stops_cleanly_on_sigint() {
    serve_and_stop("INT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_command_runs_everything_on_the_default_database() {
    let dir = tempfile::tempdir().unwrap();
    let secret = "cli-secret-value-0123456789-abcdefgh";
    // No LOG_FORMAT: stderr is not a terminal, so the logs are JSON.
    let mut server = Server::start(
        dir.path(),
        &[],
        &[("BIND_ADDR", "127.0.0.1:0"), ("JWT_SECRET", secret)],
    );
    let addr = server.address("listening on http://").await;
    let client = reqwest::Client::new();
    let health = client
        .get(format!("http://{addr}/healthz"))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.status().as_u16(), 200);
    let register = client
        .post(format!("http://{addr}/api/auth/register"))
        .json(
            &serde_json::json!({"email": "cli@example.com", "password": "a long enough passphrase",
                                  "name": "Cli", "role": "employer"}),
        )
        .send()
        .await
        .expect("register");
    assert_eq!(register.status().as_u16(), 201);
    let metrics = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .expect("metrics");
    assert_eq!(
        metrics.status().as_u16(),
        200,
        "without METRICS_ADDR, /metrics is on BIND_ADDR"
    );
    drop(client);
    assert!(
        dir.path().join("data").join("jobboard.db").exists(),
        "the default database is created"
    );

    let (status, lines) = server.stop("TERM").await;
    assert_eq!(status.code(), Some(0), "output:\n{}", lines.join("\n"));
    assert_json_logs(&lines);
    let all = lines.join("\n");
    assert!(!all.contains(secret), "the JWT secret is never logged");
    assert!(
        !all.contains("cli@example.com"),
        "email addresses are never logged:\n{all}"
    );
    assert!(
        !all.contains("a long enough passphrase"),
        "passwords are never logged"
    );
}

/// Every password hash allocates 19 MiB: a burst of registrations must not leave them behind
/// (the allocator once kept them all, over 1 GB after a hundred).
#[tokio::test]
async fn password_hashing_gives_its_memory_back() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("rss.db").display());
    let mut server = Server::start(
        dir.path(),
        &["serve"],
        &[
            ("DATABASE_URL", url.as_str()),
            ("BIND_ADDR", "127.0.0.1:0"),
            ("LOG_FORMAT", "json"),
        ],
    );
    let addr = server.address("listening on http://").await;
    let pid = server.child.id().expect("running");
    let rss_mb = || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let kb: f64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        kb / 1024.0
    };
    let client = reqwest::Client::new();
    let register = |i: usize| {
        let client = client.clone();
        let addr = addr.clone();
        async move {
            let r = client
                .post(format!("http://{addr}/api/auth/register"))
                .json(&serde_json::json!({"email": format!("u{i}@rss.example"),
                    "password": "correct horse battery", "name": "U", "role": "candidate"}))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 201);
        }
    };
    futures::StreamExt::for_each_concurrent(futures::stream::iter(0..48), 8, register).await;
    let after = rss_mb();
    assert!(
        after < 64.0,
        "RSS after 48 registrations: {after:.0} MB (48 hashes weigh 912 MB)"
    );
}

/// The versions of this binary's PostgreSQL migrations (1 to the number of files).
fn known_versions() -> Vec<i64> {
    // The numbers the files start with (a number taken on another branch may be missing).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
    let mut versions: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.ok()?.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".sql")?.split('_').next()?.parse().ok()
        })
        .collect();
    versions.sort_unstable();
    versions
}
