//! Worker throughput: seeds N status-change events on the database queue, then times one worker
//! process draining them with the file mailer, and checks that exactly N emails were written.
//!
//! ```sh
//! cargo run --release --example worker_throughput -- \
//!     --database-url postgres://postgres@127.0.0.1:5432/postgres --events 2000 --mode lease
//! ```
//! With a `postgres://` URL the run uses a fresh database that it creates and drops. With
//! `--sqs` the events go through SQS (the queue named by the usual AWS environment, e.g.
//! `AWS_ENDPOINT_URL` for a local SQS-compatible server): the run creates a fresh queue, lets the
//! outbox relay publish everything, and then times the worker alone.

use clap::Parser;
use jobboard::config::Config;
use jobboard::domain::{Actor, ApplicationStatus, EmploymentType, JobStatus, Role};
use jobboard::store::{CompanyFields, JobFields, NewUser, Store};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(Parser)]
struct Args {
    /// `postgres://…` (a fresh database is created on that server) or `sqlite://PATH`.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    database_url: String,
    /// Status-change events to seed (rounded down to a multiple of 4).
    #[arg(long, default_value_t = 2000)]
    events: usize,
    /// `lease` or `transaction`.
    #[arg(long, default_value = "lease")]
    mode: String,
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    /// Use SQS (QUEUE=sqs) instead of the database queue.
    #[arg(long)]
    sqs: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let dir = tempfile::tempdir()?;
    let (url, drop_db) = if args.database_url.starts_with("postgres") {
        let name = format!("jbbench_{}", uuid::Uuid::new_v4().simple());
        let mut admin =
            <sqlx::PgConnection as sqlx::Connection>::connect(&args.database_url).await?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await?;
        let mut u = url::Url::parse(&args.database_url)?;
        u.set_path(&name);
        (u.to_string(), Some(name))
    } else {
        (args.database_url.clone(), None)
    };
    let mut extra = Vec::new();
    if args.sqs {
        let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let client = aws_sdk_sqs::Client::new(&shared);
        let name = format!("jbbench-{}", uuid::Uuid::new_v4().simple());
        let out = client.create_queue().queue_name(&name).send().await?;
        extra.push(("QUEUE", "sqs".to_string()));
        extra.push((
            "SQS_QUEUE_URL",
            out.queue_url().unwrap_or_default().to_string(),
        ));
    }
    let mut vars: HashMap<String, String> = [
        ("DATABASE_URL", url.as_str()),
        ("EMAIL_BACKEND", "file"),
        (
            "EMAIL_FILE_DIR",
            &dir.path().join("mail").display().to_string(),
        ),
        ("CLAIM_MODE", &args.mode),
        ("WORKER_CONCURRENCY", &args.concurrency.to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    for (k, v) in extra {
        vars.insert(k.to_string(), v);
    }
    let config = Config::from_map(&vars, false)?;
    let store = jobboard::store::connect(&config.database_url).await?;
    store.migrate().await?;

    let seeded = seed(store.as_ref(), args.events / 4).await?;
    if args.sqs {
        let sqs = jobboard::run::sqs_queue(&config, store.clone()).await?;
        let published = jobboard::relay::Relay::new(store.clone(), sqs)
            .drain()
            .await?;
        anyhow::ensure!(published == seeded, "published {published} of {seeded}");
    }
    let worker = Arc::new(jobboard::run::build_worker(&config, store.clone()).await?);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let start = Instant::now();
    let running = tokio::spawn(worker.clone().run(shutdown.clone()));
    while worker.queue().stats().await?.0 > 0 {
        tokio::time::sleep(Duration::from_millis(if args.sqs { 100 } else { 5 })).await;
    }
    let elapsed = start.elapsed();
    shutdown.cancel();
    running.await?;
    let emails = std::fs::read_dir(dir.path().join("mail"))?
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "eml"))
        })
        .count();
    println!(
        "{} {} {} mode, concurrency {}: {} events in {:.2} s = {:.0} events/s; emails written: {} (duplicates {}, losses {})",
        store.backend(),
        worker.queue().kind(),
        args.mode,
        args.concurrency,
        seeded,
        elapsed.as_secs_f64(),
        seeded as f64 / elapsed.as_secs_f64(),
        emails,
        emails.saturating_sub(seeded),
        seeded.saturating_sub(emails),
    );
    drop(store);
    if let Some(name) = drop_db {
        let mut admin =
            <sqlx::PgConnection as sqlx::Connection>::connect(&args.database_url).await?;
        sqlx::query(&format!("DROP DATABASE {name} WITH (FORCE)"))
            .execute(&mut admin)
            .await?;
    }
    Ok(())
}

/// `applications` applications, each moved four times: four events each.
async fn seed(store: &dyn Store, applications: usize) -> anyhow::Result<usize> {
    let user = |i: usize, role: Role| NewUser {
        email: format!("u{i}@bench.example"),
        email_key: format!("u{i}@bench.example"),
        name: format!("User {i}"),
        role,
        password_hash: "not-a-login".into(),
    };
    let employer = store.create_user(user(0, Role::Employer)).await?;
    let company = store
        .create_company(
            employer.id,
            CompanyFields {
                name: "Bench".into(),
                website: None,
                description: None,
            },
            None,
        )
        .await?;
    let job = store
        .create_job(
            company.id,
            JobFields {
                title: "Engineer".into(),
                description: "Benchmark".into(),
                location: "Anywhere".into(),
                remote: true,
                salary_min: None,
                salary_max: None,
                employment_type: EmploymentType::FullTime,
                status: JobStatus::Open,
            },
            None,
        )
        .await?;
    let mut events = 0;
    for i in 1..=applications {
        let candidate = store.create_user(user(i, Role::Candidate)).await?;
        let app = store.apply(job.id, candidate.id, None, None).await?;
        for to in [
            ApplicationStatus::Reviewing,
            ApplicationStatus::Interview,
            ApplicationStatus::Offered,
            ApplicationStatus::Hired,
        ] {
            store
                .change_status(app.id, to, Actor::Employer, employer.id, None)
                .await?;
            events += 1;
        }
    }
    Ok(events)
}
