//! The job upkeep at size: `--scale-jobs` open jobs (1 000 000 by default), of which
//! `--upkeep-notices` (10 000) cross their notice time at once (`expires_at` two days ahead,
//! `JOB_EXPIRY_NOTICE_DAYS` 5) and the rest expire in 30 days; one member per company, so one
//! `job.expiring` per noticed job. On PostgreSQL and on SQLite:
//!
//! - **write**: one run of the upkeep's job steps (`run_job_upkeep`, as a worker runs it every
//!   30 s, with a worker's pool), from its start to its return with every notice written; the
//!   events/s beside it.
//! - **send**: one `jobboard worker` process (lease mode, the SMTP sink adding 50 ms per
//!   message) started on the written notices; events/s as the worker rows count it, (events - 1)
//!   over the first to the last email accepted (the start-up is in the JSON).
//!
//! Its ceiling is the status-change row of the worker section with the same mail, `pg db
//! smtp+50ms lease x1` (run both with `--only worker --only upkeep --scenario "smtp+50ms lease
//! x1"`): the upkeep's emails take the one path every event takes, so their send rate should
//! match it.

use crate::Opts;
use crate::common::{FreshDb, progress, record_failure};
use crate::report::Section;
use crate::worker::phases::{start_workers, wait_for_emails};
use crate::worker::sinks::{Sink, SmtpSink};
use anyhow::{Context, Result};
use jobboard::domain::Role;
use jobboard::domain::values::Email;
use jobboard::store::job_upkeep::{JobUpkeepSettings, run_job_upkeep};
use jobboard::store::{NewUser, Store};
use serde_json::json;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

const SECTION: &str = "upkeep";
/// A worker's database connections (its default pool).
const POOL: u32 = 8;

pub async fn run(opts: &Opts) -> Result<Vec<Section>> {
    let jobs = if opts.scale_jobs == 0 {
        opts.jobs
    } else {
        opts.scale_jobs
    };
    let notices = opts.upkeep_notices.min(jobs);
    let mut section = Section {
        name: SECTION.into(),
        columns: [
            "scenario", "jobs", "events", "seconds", "events/s", "dup", "lost",
        ]
        .map(String::from)
        .to_vec(),
        json: json!({"scenarios": []}),
        ..Section::default()
    };
    for db in ["pg", "sqlite"] {
        if !opts.wants(&format!(
            "upkeep {db} write notices, send smtp+50ms lease x1"
        )) {
            continue;
        }
        if let Err(e) = run_db(opts, db, jobs, notices, &mut section).await {
            record_failure(&mut section, &format!("upkeep {db}"), &e);
        }
    }
    Ok(vec![section])
}

async fn run_db(
    opts: &Opts,
    db: &str,
    jobs: usize,
    notices: usize,
    section: &mut Section,
) -> Result<()> {
    let dir = tempfile::tempdir()?;
    let pg = if db == "pg" {
        Some(FreshDb::create(&opts.pg_url).await?)
    } else {
        None
    };
    let url = match &pg {
        Some(pg) => pg.url.clone(),
        None => format!("sqlite://{}", dir.path().join("upkeep.db").display()),
    };
    progress(
        SECTION,
        format!("{db}: seeding {jobs} jobs, {notices} of them within their notice time"),
    );
    let seeded = Instant::now();
    let store = seed(&url, jobs, notices).await?;
    progress(
        SECTION,
        format!("{db}: seeded in {:.0} s", seeded.elapsed().as_secs_f64()),
    );

    // Write: one run of the job steps, as a worker's upkeep does it.
    progress(SECTION, format!("{db}: the upkeep writes the notices"));
    let settings = JobUpkeepSettings::new(30, 5);
    let started = Instant::now();
    let report = run_job_upkeep(&*store, &settings, jobboard::timefmt::now()).await?;
    let write_secs = started.elapsed().as_secs_f64();
    anyhow::ensure!(
        report.notice_events as usize == notices && report.expired == 0,
        "the upkeep wrote {report:?}, not {notices} notices"
    );
    let expected = event_ids(&url).await?;
    anyhow::ensure!(expected.len() == notices, "{} events", expected.len());
    let row = |what: &str, n: usize, secs: f64| {
        vec![
            format!("upkeep {db} {what}"),
            jobs.to_string(),
            n.to_string(),
            format!("{secs:.1}"),
            format!("{:.0}", n as f64 / secs),
        ]
    };
    let mut write_row = row("write notices", notices, write_secs);
    write_row.extend(["-".into(), "-".into()]);
    section.rows.push(write_row);

    // Send: one worker process with the 50 ms mail.
    progress(
        SECTION,
        format!("{db}: written in {write_secs:.1} s; one worker sends them"),
    );
    let sink = Sink::Smtp(SmtpSink::start(Duration::from_millis(50)).await?);
    let mut env = sink.env();
    env.extend([
        ("DATABASE_URL", url.clone()),
        ("EMAIL_FROM", "jobs@bench.example".to_string()),
        ("CLAIM_MODE", "lease".to_string()),
        // As the worker rows it is measured against (not their `defaults` rows).
        ("DATABASE_POOL_SIZE", POOL.to_string()),
        ("WORKER_CONCURRENCY", "64".to_string()),
        ("WORKER_BATCH", "true".to_string()),
        ("LOG_LEVEL", "warn".to_string()),
    ]);
    let started = Instant::now();
    let mut workers = start_workers(opts, 1, &env)?;
    wait_for_emails(&sink, &expected, &mut workers, Duration::from_secs(3600)).await?;
    let send_secs = started.elapsed().as_secs_f64();
    for w in &mut workers {
        let _ = w.stop();
    }
    let accepted = sink.accepted()?;
    // As the worker rows count: (events - 1) over the first to the last email accepted, the
    // process's start-up left out (it is in the JSON).
    let times: Vec<std::time::SystemTime> = accepted.iter().map(|(_, at)| *at).collect();
    let (first, last) = (
        times.iter().min().copied().context("no email")?,
        times.iter().max().copied().context("no email")?,
    );
    let drain_secs = last.duration_since(first).unwrap_or_default().as_secs_f64();
    let startup_secs = send_secs - drain_secs;
    let seen: HashSet<&str> = accepted.iter().map(|(id, _)| id.as_str()).collect();
    let lost = expected
        .iter()
        .filter(|id| !seen.contains(id.as_str()))
        .count();
    let dup =
        accepted.len() - seen.len() + seen.iter().filter(|id| !expected.contains(**id)).count();
    let mut send_row = vec![
        format!("upkeep {db} send smtp+50ms lease x1"),
        jobs.to_string(),
        notices.to_string(),
        format!("{drain_secs:.1}"),
        format!("{:.0}", (notices - 1) as f64 / drain_secs),
    ];
    send_row.extend([dup.to_string(), lost.to_string()]);
    section.rows.push(send_row);
    section.json["scenarios"]
        .as_array_mut()
        .context("scenarios")?
        .push(json!({
            "db": db, "jobs": jobs, "notices": notices,
            "write_seconds": write_secs, "write_events_per_sec": notices as f64 / write_secs,
            "send_seconds": drain_secs, "send_startup_seconds": startup_secs,
            "send_events_per_sec": (notices - 1) as f64 / drain_secs,
            "duplicates": dup, "losses": lost,
        }));
    drop(store);
    if let Some(pg) = pg {
        pg.drop_now().await?;
    }
    Ok(())
}

/// A store at `url`, migrated, with one employer's company, `jobs` open jobs and their agenda
/// rows: `notices` of them expire in two days (within the notice time), the others in 30.
async fn seed(url: &str, jobs: usize, notices: usize) -> Result<Arc<dyn Store>> {
    let store =
        jobboard::store::connect_with_pool(&crate::worker::sql::database_url(url)?, Some(POOL))
            .await?;
    store.migrate().await?;
    let (_, template) = crate::worker::seed::employer_with_job(
        &*store,
        NewUser {
            email: Email::parse("member@bench.example").expect("a valid email"),
            name: "Member".into(),
            role: Role::Employer,
            password_hash: "not-a-login".into(),
        },
    )
    .await?;
    let sqlite = url.starts_with("sqlite");
    // Every column but the id, copied from the template; `expires_at` set per row.
    let columns: Vec<String> = if sqlite {
        sqlx::query_scalar("SELECT name FROM pragma_table_info('jobs') WHERE name <> 'id'")
            .fetch_all(&mut crate::worker::sql::sqlite_connect(url).await?)
            .await?
    } else {
        sqlx::query_scalar(
            "SELECT column_name::text FROM information_schema.columns WHERE table_name = 'jobs' \
             AND column_name <> 'id' AND is_generated = 'NEVER' ORDER BY ordinal_position",
        )
        .fetch_all(&mut crate::common::pg_connect(url).await?)
        .await?
    };
    // Bound as the store binds times, so that SQLite's text compares as the store's own.
    let (soon, later) = if sqlite { ("?1", "?2") } else { ("$1", "$2") };
    let now = jobboard::timefmt::now();
    let (soon_at, later_at) = (
        now + chrono::Duration::days(2),
        now + chrono::Duration::days(30),
    );
    let select: Vec<String> = columns
        .iter()
        .map(|c| {
            if c == "expires_at" {
                format!("CASE WHEN s.i <= {notices} THEN {soon} ELSE {later} END")
            } else {
                format!("t.{c}")
            }
        })
        .collect();
    let series = if sqlite {
        format!(
            "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {}) ",
            jobs - 1
        )
    } else {
        String::new()
    };
    let from = if sqlite {
        "s, jobs t".to_string()
    } else {
        format!("generate_series(1, {}) AS s(i), jobs t", jobs - 1)
    };
    let insert = format!(
        "{series}INSERT INTO jobs ({}) SELECT {} FROM {from} WHERE t.id = {}",
        columns.join(", "),
        select.join(", "),
        template.id
    );
    // The template itself is one of the `jobs`: one of the later ones.
    let agenda = format!(
        "INSERT INTO job_expiries (job_id, expires_at) SELECT id, expires_at FROM jobs \
         WHERE id <> {} ON CONFLICT DO NOTHING",
        template.id
    );
    if sqlite {
        let mut c = crate::worker::sql::sqlite_connect(url).await?;
        sqlx::query(&insert)
            .bind(soon_at)
            .bind(later_at)
            .execute(&mut c)
            .await?;
        sqlx::query(&agenda).execute(&mut c).await?;
        sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
            .execute(&mut c)
            .await?;
    } else {
        let mut c = crate::common::pg_connect(url).await?;
        sqlx::query(&insert)
            .bind(soon_at)
            .bind(later_at)
            .execute(&mut c)
            .await?;
        sqlx::query(&agenda).execute(&mut c).await?;
        sqlx::query("ANALYZE").execute(&mut c).await?;
    }
    Ok(store)
}

/// The ids of the events the upkeep wrote.
async fn event_ids(url: &str) -> Result<HashSet<String>> {
    crate::worker::sql::sqlx_strings(
        url,
        "SELECT event_id FROM events WHERE type = 'job.expiring'",
    )
    .await
}
