//! The configuration as start-up sees it: defaults, every rule, and no secret shown.

use super::*;

mod unsubscribe;

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
    assert_eq!(c.search_cache_max_mb, 8);
    assert_eq!(c.claim_mode, ClaimMode::Lease);
    assert!(c.worker_batch);
    assert_eq!(c.database_pool_size, None);
    assert_eq!(c.worker_concurrency, 32);
    assert_eq!(c.shutdown_drain_secs, 0);
    assert!(!c.job_moderation && c.job_posting_days == 30 && c.job_expiry_notice_days == 5);
    // Words are matched without regard to case, `true` included.
    let c = parse(&[("JOB_MODERATION", "TRUE"), ("WORKER_BATCH", "TRUE")]).unwrap();
    assert!(c.job_moderation && c.worker_batch);
    let c = parse(&[("WORKER_BATCH", "false"), ("DATABASE_POOL_SIZE", "4")]).unwrap();
    assert!(!c.worker_batch);
    assert_eq!(c.database_pool_size, Some(4));
    assert_eq!(c.log_format, LogFormat::Json);
    assert!(c.jwt_secret.is_none());
    assert_eq!(c.public_base_url, "http://127.0.0.1:8000");
    let c = parse(&[("BIND_ADDR", "[::1]:8080")]).unwrap();
    assert_eq!(c.public_base_url, "http://[::1]:8080", "follows BIND_ADDR");
}

#[test]
fn public_base_url_is_required_and_https_in_production() {
    let secret = "s".repeat(32);
    let prod = |url: Option<&str>| {
        let mut pairs = vec![
            ("APP_ENV", "production"),
            ("JWT_SECRET", secret.as_str()),
            ("UNSUBSCRIBE_SECRET", secret.as_str()),
            ("EMAIL_BACKEND", "file"),
        ];
        pairs.extend(url.map(|u| ("PUBLIC_BASE_URL", u)));
        parse(&pairs)
    };
    let e = prod(None).unwrap_err();
    assert_eq!(e.var, "PUBLIC_BASE_URL");
    assert!(e.message.contains("required in production"), "{e}");
    let e = prod(Some("http://jobs.example.com")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "configuration error: PUBLIC_BASE_URL: must be https in production"
    );
    let c = prod(Some("https://jobs.example.com/")).unwrap();
    assert_eq!(c.public_base_url, "https://jobs.example.com");
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
        (vec![("JOB_MODERATION", "yes")], "JOB_MODERATION"),
        (vec![("DATABASE_POOL_SIZE", "0")], "DATABASE_POOL_SIZE"),
        (vec![("DATABASE_POOL_SIZE", "many")], "DATABASE_POOL_SIZE"),
        (
            vec![
                ("QUEUE", "sqs"),
                ("SQS_QUEUE_URL", "https://sqs.x/1/q.fifo"),
            ],
            "SQS_QUEUE_URL",
        ),
        (
            vec![("QUEUE", "sqs"), ("SQS_QUEUE_URL", "http://q")],
            "SQS_DLQ_URL",
        ),
        (
            vec![("QUEUE", "sqs"), ("SQS_DLQ_URL", "http://q-dlq")],
            "SQS_QUEUE_URL",
        ),
        (vec![("RUST_LOG", "info,=[")], "RUST_LOG"),
        (
            vec![("PUBLIC_BASE_URL", "jobs.example.com")],
            "PUBLIC_BASE_URL",
        ),
        (
            vec![("CORS_ALLOWED_ORIGINS", "not an origin")],
            "CORS_ALLOWED_ORIGINS",
        ),
        (vec![("EMAIL_BACKEND", "smtp")], "SMTP_URL"),
        // No mail service without SMTPUTF8, nor SES, takes a non-ASCII local part.
        (vec![("EMAIL_FROM", "josé@example.com")], "EMAIL_FROM"),
        (
            vec![
                ("QUEUE", "sqs"),
                ("SQS_QUEUE_URL", "http://q"),
                ("SQS_DLQ_URL", "http://q-dlq"),
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
            ("UNSUBSCRIBE_SECRET", &secret),
            ("EMAIL_BACKEND", "smtp"),
            ("SMTP_URL", "smtp://u:p@mail:587?tls=required"),
            ("PUBLIC_BASE_URL", "https://jobs.example.com"),
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
        ("JWT_SECRET_PREVIOUS", "previoussecret-previoussecret"),
        ("SMTP_URL", "smtp://mailer:smtppw@mail:25"),
    ])
    .unwrap();
    let dbg = format!("{c:?}");
    for secret in [
        "supersecretvalue",
        "hunter2",
        "redispw",
        "previoussecret",
        "smtppw",
    ] {
        assert!(!dbg.contains(secret), "{secret} in {dbg}");
    }
    assert!(
        dbg.contains("REDACTED") && dbg.contains("postgres://app:***@db/app"),
        "{dbg}"
    );
    assert_eq!(
        c.smtp_url.unwrap().expose_secret(),
        "smtp://mailer:smtppw@mail:25"
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

#[test]
fn definition_is_valid() {
    command(false).debug_assert();
    command(true).debug_assert();
}

#[test]
fn the_log_format_default_follows_the_terminal() {
    let map = HashMap::new();
    let on_terminal = Config::from_map(&map, true).unwrap();
    assert_eq!(on_terminal.log_format, LogFormat::Pretty);
    let c = parse(&[("LOG_FORMAT", "pretty")]).unwrap();
    assert_eq!(c.log_format, LogFormat::Pretty);
}

#[test]
fn values_are_trimmed_and_empty_ones_are_unset() {
    let c = parse(&[
        ("BIND_ADDR", " 127.0.0.1:8001 "),
        ("SEARCH_CACHE_TTL_SECS", ""),
        ("SEARCH_CACHE_MAX_MB", "   "),
        ("JWT_SECRET", ""),
        (
            "CORS_ALLOWED_ORIGINS",
            " https://a.example , ,https://b.example/,",
        ),
        ("QUEUE", "DB"),
        ("WORKER_BATCH", "False"),
        ("APP_ENV", "Development"),
    ])
    .unwrap();
    assert_eq!(c.bind_addr.to_string(), "127.0.0.1:8001");
    assert_eq!(c.search_cache_ttl_secs, 300);
    assert_eq!(c.search_cache_max_mb, 8);
    assert!(c.jwt_secret.is_none());
    assert_eq!(
        c.cors_allowed_origins,
        vec!["https://a.example", "https://b.example"]
    );
    assert_eq!(c.queue, QueueKind::Db);
    assert!(!c.worker_batch);
}

#[test]
fn an_error_is_one_line_with_the_rule_not_clap_usage() {
    for (pairs, line) in [
        (
            vec![("APP_ENV", "prod")],
            "configuration error: APP_ENV: must be one of development, production (got \"prod\")",
        ),
        (
            vec![("SEARCH_CACHE_TTL_SECS", "soon")],
            "configuration error: SEARCH_CACHE_TTL_SECS: must be an integer from 1 to 86400 (got \"soon\")",
        ),
        (
            vec![("BIND_ADDR", "nowhere")],
            "configuration error: BIND_ADDR: must be an address such as 127.0.0.1:8000 (got \"nowhere\")",
        ),
        (
            vec![("WORKER_BATCH", "sometimes")],
            "configuration error: WORKER_BATCH: must be one of true, false (got \"sometimes\")",
        ),
        (
            vec![("REDIS_URL", "http://u:pw@x")],
            "configuration error: REDIS_URL: must start with redis:// or rediss://",
        ),
    ] {
        let e = parse(&pairs).unwrap_err();
        assert_eq!(e.to_string(), line);
    }
}

/// Every numeric variable's help text starts with its range; the parser enforces exactly it.
#[test]
fn the_ranges_in_the_help_are_the_ones_enforced() {
    let cmd = command(false);
    let mut checked = 0;
    for arg in cmd.get_arguments() {
        let var = arg.get_env().unwrap().to_str().unwrap();
        let help = arg.get_help().unwrap().to_string();
        let Some((min, max)) = help
            .split(':')
            .next()
            .and_then(|r| r.split_once('-'))
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        else {
            continue;
        };
        // A value the parser accepts may still break a rule naming another variable.
        let names = |v: u64| {
            let v = v.to_string();
            parse(&[("VISIBILITY_TIMEOUT_SECS", "43200"), (var, &v)])
                .err()
                .map(|e| e.var)
        };
        assert_ne!(names(min).as_deref(), Some(var), "{var}={min} is accepted");
        assert_ne!(names(max).as_deref(), Some(var), "{var}={max} is accepted");
        assert_eq!(
            names(max + 1).as_deref(),
            Some(var),
            "{var}={} is refused",
            max + 1
        );
        if min > 0 {
            assert_eq!(
                names(min - 1).as_deref(),
                Some(var),
                "{var}={} is refused",
                min - 1
            );
        }
        checked += 1;
    }
    assert_eq!(checked, 22, "every numeric variable states its range");
}

#[test]
fn help_lists_every_variable_with_its_default() {
    let help = help();
    for arg in command(false).get_arguments() {
        let var = arg.get_env().unwrap().to_str().unwrap();
        let line = help
            .lines()
            .find(|l| l.split_whitespace().next() == Some(var))
            .unwrap_or_else(|| panic!("--help lists {var}:\n{help}"));
        for d in arg.get_default_values() {
            assert!(
                line.contains(&format!("[{}]", d.to_string_lossy())) || var == "LOG_FORMAT",
                "{line}"
            );
        }
    }
    assert!(help.contains("development | production"), "{help}");
    assert!(help.contains("[sqlite://data/jobboard.db]"), "{help}");
}

#[test]
fn smtp_credentials_need_tls_in_production_by_the_first_tls_parameter() {
    let secret = "s".repeat(32);
    let prod = |url: &str| {
        parse(&[
            ("APP_ENV", "production"),
            ("JWT_SECRET", &secret),
            ("UNSUBSCRIBE_SECRET", &secret),
            ("EMAIL_BACKEND", "smtp"),
            ("SMTP_URL", url),
            ("PUBLIC_BASE_URL", "https://jobs.example.com"),
        ])
    };
    assert!(prod("smtps://u:p@mail:465").is_ok());
    assert!(prod("smtp://mail:25").is_ok(), "no credentials");
    // The mailer obeys the first `tls`.
    assert_eq!(
        prod("smtp://u:p@mail:25?tls=none&tls=required")
            .unwrap_err()
            .var,
        "SMTP_URL"
    );
    assert!(prod("smtp://u:p@mail:587?tls=required&tls=none").is_ok());
    assert_eq!(
        parse(&[("SMTP_URL", "smtp://mail?tls=maybe")])
            .unwrap_err()
            .var,
        "SMTP_URL"
    );
    assert_eq!(
        parse(&[("SMTP_URL", "smtp://mail?x=1")]).unwrap_err().var,
        "SMTP_URL"
    );
    assert_eq!(
        parse(&[("SMTP_URL", "http://mail")]).unwrap_err().var,
        "SMTP_URL"
    );
}
