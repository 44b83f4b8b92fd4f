//! The job alerts' digests at scale, on PostgreSQL and on SQLite: `--alerts` alerts (default
//! 100 000: words of a Zipf-like vocabulary of 20 000, a place in a fifth, a company, remote,
//! a salary or an employment type now and then) over `--alert-jobs` jobs (default 100 000),
//! 10 000 of them opened in the day whose digests are due, the others in the 60 days before.
//! Each alert had its digest of the day before (its watermark is the day's start), as on a
//! board in its steady state.
//!
//! - **write**: the upkeep's step (`jobboard::worker::write_alert_digests`, what every worker
//!   runs every minute) in this process, on the database's clock: from the first read to the
//!   day marked written, every digest event written (the target: under 5 minutes).
//! - **send**: one `jobboard worker` process (64 in flight, 8 connections) sends them to the
//!   local SMTP sink that takes 50 ms per message, as the worker scenarios' `smtp+50ms` rows
//!   do; emails/s from the first email accepted to the last, every digest exactly once.

use crate::Opts;
use crate::alert_week;
use crate::common::{FreshDb, progress, record_failure};
use crate::report::{Section, Target};
use crate::seed::alert_board::{
    SeedAlert, candidates, generate_alerts, insert_pg_alerts, insert_pg_candidates,
    places_and_companies, seed_job, words, zipf,
};
use crate::seed::{
    SeedJob, insert_pg_companies, insert_pg_jobs, insert_sqlite_companies, insert_sqlite_jobs,
};
use crate::worker::phases::{start_workers, wait_for_emails};
use crate::worker::scenarios::{CONCURRENCY, POOL};
use crate::worker::sinks::{Sink, SmtpSink};
use crate::worker::sql::{database_url, lit, sqlx_scalar_i64, sqlx_strings};
use anyhow::{Context, Result, ensure};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use jobboard::domain::alert::Frequency;
use jobboard::store::Store;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SECTION: &str = "alerts";
/// Jobs opened in the day whose digests are written.
const NEW_JOBS: usize = 10_000;
/// The target: every digest written within this.
const WRITE_TARGET_SECS: f64 = 300.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Db {
    Postgres,
    Sqlite,
}

/// What one database's run measured.
#[derive(Debug, Default, serde::Serialize)]
struct Figures {
    jobs: usize,
    alerts: usize,
    seed_seconds: f64,
    /// Open jobs in the day's window.
    window_jobs: i64,
    digests: u64,
    write_seconds: f64,
    digests_per_sec: f64,
    send_seconds: f64,
    emails_per_sec: f64,
    duplicates: usize,
    losses: usize,
}

pub async fn run(opts: &Opts) -> Result<Vec<Section>> {
    let mut section = Section {
        name: SECTION.into(),
        columns: [
            "scenario",
            "jobs",
            "alerts",
            "window",
            "digests",
            "write s",
            "digests/s",
            "send s",
            "emails/s",
            "dup",
            "lost",
        ]
        .map(String::from)
        .to_vec(),
        json: json!({"scenarios": []}),
        ..Section::default()
    };
    // `--scenario` picks among this part's scenarios when it names one of them; otherwise
    // (a worker scenario's name, say) all of them run.
    let names = ["alert digests pg", "alert digests sqlite", alert_week::NAME];
    let picks = opts
        .scenario
        .iter()
        .any(|s| names.iter().any(|n| n.contains(s.as_str())));
    let chosen = |name: &str| !picks || opts.wants(name);
    for db in [Db::Postgres, Db::Sqlite] {
        let name = format!(
            "alert digests {}",
            match db {
                Db::Postgres => "pg",
                Db::Sqlite => "sqlite",
            }
        );
        if !chosen(&name) {
            continue;
        }
        progress(SECTION, format!("{name}: starting"));
        match run_db(opts, db).await {
            Ok(f) => {
                section.rows.push(vec![
                    name.clone(),
                    f.jobs.to_string(),
                    f.alerts.to_string(),
                    f.window_jobs.to_string(),
                    f.digests.to_string(),
                    format!("{:.1}", f.write_seconds),
                    format!("{:.0}", f.digests_per_sec),
                    format!("{:.1}", f.send_seconds),
                    format!("{:.0}", f.emails_per_sec),
                    f.duplicates.to_string(),
                    f.losses.to_string(),
                ]);
                section.targets.push(Target::at_most(
                    &format!("{name}: every digest written (s)"),
                    f.write_seconds,
                    WRITE_TARGET_SECS,
                    format!("{} digests of {} alerts", f.digests, f.alerts),
                ));
                if f.duplicates > 0 || f.losses > 0 {
                    record_failure(
                        &mut section,
                        &name,
                        &anyhow::anyhow!("{} duplicates, {} losses", f.duplicates, f.losses),
                    );
                }
                section.json["scenarios"]
                    .as_array_mut()
                    .expect("an array")
                    .push(json!({"name": name, "figures": f}));
            }
            Err(e) => record_failure(&mut section, &name, &e),
        }
    }
    section.notes.push(format!(
        "write: the upkeep's alerts step in one process (the window of the day's {NEW_JOBS} new \
         jobs read and indexed once, the alerts matched 500 at a time on one blocking thread, \
         each batch's watermarks and events in one transaction); send: one worker process, \
         {CONCURRENCY} in flight, {POOL} connections, mail taking 50 ms per message"
    ));
    let mut sections = Vec::new();
    if !section.rows.is_empty() {
        sections.push(section);
    }
    if chosen(alert_week::NAME) {
        sections.push(alert_week::run(opts).await);
    }
    Ok(sections)
}

/// `n` jobs, the last [`NEW_JOBS`] in `[start, end)`, the others in the 60 days before, oldest
/// first (ids follow creation, as the store keeps them).
fn generate_jobs(
    rng: &mut StdRng,
    n: usize,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    locations: &[String],
    companies: &[String],
) -> Vec<SeedJob> {
    let new = NEW_JOBS.min(n);
    let old = n - new;
    let span_us = (end - start).num_microseconds().unwrap_or(1);
    let old_span_us = ChronoDuration::days(60).num_microseconds().unwrap_or(1);
    let mut jobs: Vec<SeedJob> = (0..n)
        .map(|i| {
            let is_new = i >= old;
            let created_at = if is_new {
                start + ChronoDuration::microseconds(rng.gen_range(0..span_us))
            } else {
                start - ChronoDuration::microseconds(rng.gen_range(1..=old_span_us))
            };
            let company = zipf(rng, companies.len());
            let title = words(rng, 1, 4);
            // The day's jobs are matched, so they carry a real description; the older ones
            // only fill the table.
            let description = if is_new {
                words(rng, 20, 80)
            } else {
                words(rng, 5, 12)
            };
            seed_job(
                rng,
                companies,
                locations,
                company,
                title,
                description,
                created_at,
                90,
            )
        })
        .collect();
    jobs.sort_by_key(|j| j.created_at);
    jobs
}

/// The database of one run: a fresh PostgreSQL database, or a SQLite file in a folder of its
/// own; removed when dropped.
enum Place {
    Pg(FreshDb),
    /// The folder (removed with it) and the URL.
    Sqlite(#[allow(dead_code)] tempfile::TempDir, String),
}

impl Place {
    fn url(&self) -> &str {
        match self {
            Place::Pg(db) => &db.url,
            Place::Sqlite(_, url) => url,
        }
    }
}

async fn run_db(opts: &Opts, db: Db) -> Result<Figures> {
    let place = match db {
        Db::Postgres => Place::Pg(FreshDb::create(&opts.pg_url).await?),
        Db::Sqlite => {
            let dir = tempfile::tempdir()?;
            let url = format!("sqlite://{}", dir.path().join("alerts.db").display());
            Place::Sqlite(dir, url)
        }
    };
    let url = place.url().to_string();
    let store: Arc<dyn Store> =
        jobboard::store::connect_with_pool(&database_url(&url)?, Some(POOL)).await?;
    store.migrate().await?;

    // The day whose digests are due, on the database's clock, as the worker judges it.
    let now = DateTime::from_timestamp_millis(store.now_ms().await?).context("the clock")?;
    let day = Frequency::Daily.last_ended(now - jobboard::worker::DIGEST_GRACE);
    let t = Instant::now();
    let mut rng = StdRng::seed_from_u64(20_261_204);
    let (locations, companies) = places_and_companies();
    let njobs = opts.alert_jobs.max(NEW_JOBS);
    progress(
        SECTION,
        format!("generating {njobs} jobs and {} alerts", opts.alerts),
    );
    let jobs = generate_jobs(&mut rng, njobs, day.start, day.end, &locations, &companies);
    let alerts = generate_alerts(&mut rng, opts.alerts, &locations, companies.len());
    progress(SECTION, "inserting");
    match &place {
        Place::Pg(fresh) => {
            let pool = fresh.pool(4).await?;
            seed_pg(&pool, &companies, &jobs, &alerts, day.start).await?;
            sqlx::query("VACUUM (ANALYZE)").execute(&pool).await?;
        }
        Place::Sqlite(_, url) => {
            let pool = sqlx::sqlite::SqlitePoolOptions::new()
                .max_connections(1)
                .connect(url)
                .await?;
            seed_sqlite(&pool, &companies, &jobs, &alerts, day.start).await?;
            sqlx::query("ANALYZE").execute(&pool).await?;
            sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                .execute(&pool)
                .await?;
        }
    }
    drop(jobs);
    let seed_seconds = t.elapsed().as_secs_f64();
    let window_jobs = sqlx_scalar_i64(
        &url,
        &format!(
            "SELECT COUNT(*) FROM jobs WHERE status = 'open' AND created_at >= {} \
             AND created_at < {}",
            lit(day.start),
            lit(day.end)
        ),
    )
    .await?
    .unwrap_or(0);
    progress(
        SECTION,
        format!(
            "seeded in {seed_seconds:.0} s; writing the digests of {} ({window_jobs} new jobs)",
            day.label
        ),
    );

    // Write.
    let t = Instant::now();
    let digests = jobboard::worker::write_alert_digests(&*store, now).await?;
    let write_seconds = t.elapsed().as_secs_f64();
    let recorded = sqlx_scalar_i64(
        &url,
        "SELECT COUNT(*) FROM events WHERE type = 'alert.digest'",
    )
    .await?
    .unwrap_or(0);
    ensure!(
        recorded as u64 == digests,
        "{recorded} digests recorded, {digests} written"
    );
    let moved = sqlx_scalar_i64(
        &url,
        &format!(
            "SELECT COUNT(*) FROM alerts WHERE watermark_created_at = {}",
            lit(day.end)
        ),
    )
    .await?
    .unwrap_or(0);
    ensure!(
        moved as usize == opts.alerts,
        "{moved} of {} alerts moved to the day's end",
        opts.alerts
    );
    progress(
        SECTION,
        format!("{digests} digests written in {write_seconds:.1} s; sending"),
    );

    // Send.
    let expected = sqlx_strings(&url, "SELECT event_id FROM outbox").await?;
    ensure!(
        expected.len() as u64 == digests,
        "the outbox holds {}",
        expected.len()
    );
    let sink = Sink::Smtp(SmtpSink::start(Duration::from_millis(50)).await?);
    let mut env: Vec<(&'static str, String)> = vec![
        ("DATABASE_URL", url.clone()),
        ("RUST_LOG", "warn".into()),
        ("LOG_FORMAT", "json".into()),
        ("EMAIL_FROM", "jobs@bench.example".into()),
        ("PUBLIC_BASE_URL", "https://jobs.bench.example".into()),
        (
            "JWT_SECRET",
            "bench-secret-bench-secret-bench-secret".into(),
        ),
        ("DATABASE_POOL_SIZE", POOL.to_string()),
        ("WORKER_CONCURRENCY", CONCURRENCY.to_string()),
    ];
    env.extend(sink.env());
    let mut workers = start_workers(opts, 1, &env)?;
    let timeout = Duration::from_secs(300 + expected.len() as u64 / 20);
    wait_for_emails(&sink, &expected, &mut workers, timeout).await?;
    for w in &mut workers {
        w.stop()?;
    }
    drop(workers);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let accepted = sink.accepted()?;
    let first = accepted.iter().map(|(_, t)| *t).min().context("no email")?;
    let last = accepted.iter().map(|(_, t)| *t).max().unwrap_or(first);
    let send_seconds = last.duration_since(first).unwrap_or_default().as_secs_f64();
    let mut per_event: HashMap<&str, usize> = HashMap::new();
    for (id, _) in &accepted {
        *per_event.entry(id.as_str()).or_default() += 1;
    }
    let duplicates = per_event
        .iter()
        .map(|(id, n)| if expected.contains(*id) { n - 1 } else { *n })
        .sum();
    let losses = expected
        .iter()
        .filter(|id| !per_event.contains_key(id.as_str()))
        .count();
    drop(store);
    if let Place::Pg(fresh) = place {
        fresh.drop_now().await?;
    }
    Ok(Figures {
        jobs: njobs,
        alerts: opts.alerts,
        seed_seconds,
        window_jobs,
        digests,
        write_seconds,
        digests_per_sec: digests as f64 / write_seconds.max(1e-9),
        send_seconds,
        emails_per_sec: (expected.len().saturating_sub(1)) as f64 / send_seconds.max(1e-9),
        duplicates,
        losses,
    })
}

async fn seed_pg(
    pool: &sqlx::PgPool,
    companies: &[String],
    jobs: &[SeedJob],
    alerts: &[SeedAlert],
    day_start: DateTime<Utc>,
) -> Result<()> {
    let company_ids = insert_pg_companies(pool, companies).await?;
    for chunk in jobs.chunks(5_000) {
        insert_pg_jobs(pool, &company_ids, chunk).await?;
    }
    let user_ids = insert_pg_candidates(pool, alerts.len()).await?;
    insert_pg_alerts(
        pool,
        &company_ids,
        &user_ids,
        alerts,
        Frequency::Daily,
        day_start,
    )
    .await
}

async fn seed_sqlite(
    pool: &sqlx::SqlitePool,
    companies: &[String],
    jobs: &[SeedJob],
    alerts: &[SeedAlert],
    day_start: DateTime<Utc>,
) -> Result<()> {
    let now = Utc::now();
    let company_ids = insert_sqlite_companies(pool, companies).await?;
    insert_sqlite_jobs(pool, &company_ids, jobs, 50_000).await?;
    let mut tx = pool.begin().await?;
    let mut user_ids = Vec::new();
    for chunk in candidates(alerts.len()).chunks(2_000) {
        let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
            "INSERT INTO users (email, email_key, name, role, password_hash, created_at) ",
        );
        qb.push_values(chunk, |mut b, e| {
            b.push_bind(e)
                .push_bind(e)
                .push_bind("Candidate")
                .push_bind("candidate")
                .push_bind("not-a-login")
                .push_bind(now);
        });
        qb.push(" RETURNING id");
        let ids: Vec<i64> = qb.build_query_scalar().fetch_all(&mut *tx).await?;
        user_ids.extend(ids);
    }
    user_ids.sort();
    for (c, chunk) in alerts.chunks(2_000).enumerate() {
        let first = c * 2_000;
        let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
            "INSERT INTO alerts (user_id, q, location, remote, company_id, salary_min, \
             employment_type, frequency, created_at, watermark_created_at, watermark_job_id) ",
        );
        qb.push_values(chunk.iter().enumerate(), |mut b, (k, a)| {
            b.push_bind(user_ids[(first + k) / 20])
                .push_bind(&a.q)
                .push_bind(&a.location)
                .push_bind(a.remote)
                .push_bind(a.company.map(|c| company_ids[c]))
                .push_bind(a.salary_min)
                .push_bind(a.employment_type)
                .push_bind("daily")
                .push_bind(day_start - ChronoDuration::days(30))
                .push_bind(day_start)
                .push_bind(0i64);
        });
        qb.build()
            .execute(&mut *tx)
            .await
            .context("inserting alerts into SQLite")?;
    }
    tx.commit().await?;
    Ok(())
}
