//! Worker scenarios: status-change events drained by `jobboard worker` processes, by queue
//! (`db` on PostgreSQL and SQLite, `sqs`), mail backend (file, a local SMTP sink with 0 ms or
//! 50 ms per message, or SES v2 on the SQS test server behind a recording proxy), claim mode and
//! batching, with one and four processes.
//!
//! Each scenario starts from a copy of one seeded database, so every run sees the same data:
//! - **drain**: the seeded events wait on the queue; the worker processes start and the harness
//!   counts the emails (from the sink, or the files) until every event has one. Events/s is the
//!   events over the time from the start of the processes to the last email accepted. The
//!   processes then stop (SIGTERM), so PostgreSQL has counted their commits.
//! - **latency**: fresh worker processes, and the harness commits status changes at half the
//!   drain rate; the end-to-end latency of each event runs from its commit returning to its
//!   email being accepted.
//!
//! Every event must end with exactly one email: duplicates and losses are counted over both
//! phases, and an email for an event the harness did not make counts as a duplicate.
//!
//! Ceilings measured in the same run: pgbench running the worker's per-event work (receive,
//! claim, read the email data, record, acknowledge) as one transaction per event over the same
//! seeded events, at as many clients as a worker has database connections; and the SQS server's
//! own send and receive+delete rates with no worker.

use crate::Opts;
use crate::common::{Child, FreshDb, progress, record_failure};
use crate::report::{Section, Target};
use anyhow::{Context, Result, bail};
use jobboard::domain::values::{Email, SalaryRange, Title};
use jobboard::domain::{Actor, ApplicationStatus, EmploymentType, JobStatus, Role};
use jobboard::store::{CompanyFields, JobFields, NewUser};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Database connections per worker process, and pgbench clients for the worker-shaped ceiling.
pub(crate) const POOL: u32 = 8;
/// Events in flight per worker process.
pub(crate) const CONCURRENCY: usize = 64;
const SECTION: &str = "worker";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Db {
    Postgres,
    Sqlite,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mail {
    File,
    /// The SMTP sink, with this many ms added per message.
    Smtp(u64),
    /// Amazon SES's v2 API on the SQS test server (moto), behind a recording proxy.
    Ses,
}

#[derive(Debug, Clone)]
struct Scenario {
    db: Db,
    sqs: bool,
    mail: Mail,
    mode: &'static str,
    batch: bool,
    procs: usize,
    events: usize,
    /// Every setting the scenario does not need left at its default (pool, concurrency, batch).
    defaults: bool,
}

impl Scenario {
    fn name(&self) -> String {
        format!(
            "{} {} {} {}{} x{}{}",
            match self.db {
                Db::Postgres => "pg",
                Db::Sqlite => "sqlite",
            },
            if self.sqs { "sqs" } else { "db" },
            match self.mail {
                Mail::File => "file".to_string(),
                Mail::Smtp(ms) => format!("smtp+{ms}ms"),
                Mail::Ses => "ses".to_string(),
            },
            self.mode,
            if self.mode == "lease" && !self.batch {
                " unbatched"
            } else {
                ""
            },
            self.procs,
            if self.defaults { " defaults" } else { "" }
        )
    }
}

/// What one scenario measured.
#[derive(Debug, Default, serde::Serialize)]
struct Figures {
    events: usize,
    /// From the first email accepted to the last.
    seconds: f64,
    /// From the processes' start to the first email.
    startup_seconds: f64,
    events_per_sec: f64,
    /// PostgreSQL transactions committed in the database during the drain, per event.
    commits_per_event: Option<f64>,
    latency_events: usize,
    offered_per_sec: f64,
    latency_p50_ms: f64,
    latency_p99_ms: f64,
    duplicates: usize,
    losses: usize,
}

/// The seeded databases every scenario copies: `events` status changes waiting in the outbox,
/// and `latency` applications still `submitted` for the latency phase to move.
struct Seed {
    pg: FreshDb,
    sqlite: PathBuf,
    _dir: tempfile::TempDir,
    /// The applications left `submitted`, in each database.
    pg_latency_apps: Vec<i64>,
    sqlite_latency_apps: Vec<i64>,
    employer: i64,
}

pub async fn run(opts: &Opts) -> Result<Vec<Section>> {
    let events = opts
        .events
        .unwrap_or(if opts.quick { 2_000 } else { 20_000 })
        .max(40);
    let sqs_events = (events / 20).max(100);
    let latency = events / 10;
    let mut section = Section {
        name: SECTION.into(),
        columns: [
            "scenario",
            "events",
            "events/s",
            "e2e p50 ms",
            "e2e p99 ms",
            "commits/event",
            "dup",
            "lost",
            "vs ceiling",
        ]
        .map(String::from)
        .to_vec(),
        json: json!({"scenarios": [], "ceilings": {}}),
        ..Section::default()
    };
    progress(SECTION, format!("seeding {events} events"));
    let seed = match seed(opts, events, latency).await {
        Ok(s) => s,
        Err(e) => {
            record_failure(&mut section, "seeding", &e);
            return Ok(vec![section]);
        }
    };

    // Ceilings first, on copies of the same seed.
    let pgbench = match pgbench_worker_shaped(opts, &seed).await {
        Ok(tps) => {
            section.rows.push(vec![
                format!("ceiling: pgbench worker-shaped, {POOL} clients"),
                events.to_string(),
                format!("{tps:.0}"),
                "-".into(),
                "-".into(),
                "1".into(),
                "-".into(),
                "-".into(),
                "1.00".into(),
            ]);
            section.json["ceilings"]["pgbench_worker_tps"] = json!(tps);
            Some(tps)
        }
        Err(e) => {
            record_failure(&mut section, "pgbench worker-shaped ceiling", &e);
            None
        }
    };
    let sqs_available = std::env::var("AWS_ENDPOINT_URL").is_ok();
    let moto = if sqs_available {
        match sqs_ceiling(sqs_events).await {
            Ok((send, recv)) => {
                section.rows.push(vec![
                    "ceiling: SQS server send (batches of 10)".into(),
                    sqs_events.to_string(),
                    format!("{send:.0}"),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                ]);
                section.rows.push(vec![
                    "ceiling: SQS server receive+delete (batches of 10)".into(),
                    sqs_events.to_string(),
                    format!("{recv:.0}"),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "-".into(),
                    "1.00".into(),
                ]);
                section.json["ceilings"]["sqs_send_per_sec"] = json!(send);
                section.json["ceilings"]["sqs_receive_delete_per_sec"] = json!(recv);
                Some(recv)
            }
            Err(e) => {
                record_failure(&mut section, "SQS server ceiling", &e);
                None
            }
        }
    } else {
        section
            .notes
            .push("AWS_ENDPOINT_URL is not set: the SQS scenarios did not run.".into());
        None
    };

    let s = |db, sqs, mail, mode, batch, procs, events| Scenario {
        db,
        sqs,
        mail,
        mode,
        batch,
        procs,
        events,
        defaults: false,
    };
    let defaults = |mode, events| Scenario {
        defaults: true,
        ..s(Db::Postgres, false, Mail::Smtp(50), mode, true, 1, events)
    };
    let slow = (events / 5).max(200);
    let mut scenarios = vec![
        s(Db::Postgres, false, Mail::File, "lease", true, 1, events),
        s(Db::Postgres, false, Mail::File, "lease", false, 1, events),
        s(
            Db::Postgres,
            false,
            Mail::File,
            "transaction",
            true,
            1,
            events,
        ),
        s(Db::Postgres, false, Mail::File, "lease", true, 4, events),
        s(
            Db::Postgres,
            false,
            Mail::File,
            "transaction",
            true,
            4,
            events,
        ),
        s(Db::Postgres, false, Mail::Smtp(0), "lease", true, 1, events),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(0),
            "transaction",
            true,
            1,
            events,
        ),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "lease",
            true,
            1,
            events,
        ),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "transaction",
            true,
            1,
            slow,
        ),
        s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "lease",
            true,
            4,
            events,
        ),
    ];
    // SES against the SQS test server, beside the SMTP rows: a send there is a Python
    // request, so it gets the SQS rows' smaller count.
    if sqs_available {
        scenarios.push(s(
            Db::Postgres,
            false,
            Mail::Ses,
            "lease",
            true,
            1,
            sqs_events,
        ));
    }
    scenarios.extend([
        defaults("lease", slow),
        defaults("transaction", slow),
        s(Db::Sqlite, false, Mail::File, "lease", true, 1, events),
        s(Db::Sqlite, false, Mail::File, "lease", false, 1, events),
        s(Db::Sqlite, false, Mail::File, "lease", true, 4, events),
        s(Db::Sqlite, false, Mail::Smtp(0), "lease", true, 1, events),
        s(Db::Sqlite, false, Mail::Smtp(50), "lease", true, 1, events),
    ]);
    if sqs_available {
        scenarios.push(s(
            Db::Postgres,
            true,
            Mail::File,
            "lease",
            true,
            1,
            sqs_events,
        ));
        scenarios.push(s(
            Db::Postgres,
            true,
            Mail::File,
            "lease",
            true,
            4,
            sqs_events,
        ));
    }

    if !opts.scenario.is_empty() {
        scenarios.retain(|s| opts.scenario.iter().any(|o| s.name().contains(o.as_str())));
    }
    let mut results: HashMap<String, Figures> = HashMap::new();
    for sc in &scenarios {
        let name = sc.name();
        progress(SECTION, format!("{name}: {} events", sc.events));
        match run_scenario(opts, &seed, sc, latency.min(sc.events)).await {
            Ok(f) => {
                let ceiling = if sc.sqs {
                    moto.map(|m| f.events_per_sec / m)
                } else if sc.db == Db::Postgres && sc.procs == 1 && sc.mail == Mail::File {
                    pgbench.map(|p| f.events_per_sec / p)
                } else {
                    None
                };
                section.rows.push(vec![
                    name.clone(),
                    f.events.to_string(),
                    format!("{:.0}", f.events_per_sec),
                    format!("{:.1}", f.latency_p50_ms),
                    format!("{:.1}", f.latency_p99_ms),
                    f.commits_per_event
                        .map(|c| format!("{c:.2}"))
                        .unwrap_or_else(|| "-".into()),
                    f.duplicates.to_string(),
                    f.losses.to_string(),
                    ceiling
                        .map(|c| format!("{c:.2}"))
                        .unwrap_or_else(|| "-".into()),
                ]);
                let mut j = serde_json::to_value(&f)?;
                j["scenario"] = json!(name);
                j["ratio_to_ceiling"] = json!(ceiling);
                if let Some(a) = section.json["scenarios"].as_array_mut() {
                    a.push(j);
                }
                if f.duplicates > 0 || f.losses > 0 {
                    record_failure(
                        &mut section,
                        &name,
                        &anyhow::anyhow!(
                            "{} duplicates and {} losses in a run without faults",
                            f.duplicates,
                            f.losses
                        ),
                    );
                }
                results.insert(name, f);
            }
            Err(e) => record_failure(&mut section, &name, &e),
        }
    }

    let rate = |sc: Scenario| results.get(&sc.name()).map(|f| f.events_per_sec);
    if let Some(p) = pgbench {
        if let Some(r) = rate(s(Db::Postgres, false, Mail::File, "lease", false, 1, 0)) {
            section.targets.push(Target::at_least(
                "worker PG file, unbatched >= 0.5x pgbench worker-shaped",
                r / p,
                0.5,
                format!("{r:.0} events/s / {p:.0} tps ({POOL} connections each)"),
            ));
        }
        if let Some(r) = rate(s(Db::Postgres, false, Mail::File, "lease", true, 1, 0)) {
            section.targets.push(Target::at_least(
                "worker PG file, batched >= 3x pgbench worker-shaped",
                r / p,
                3.0,
                format!("{r:.0} events/s / {p:.0} tps ({POOL} connections each)"),
            ));
        }
    }
    if let (Some(l), Some(t)) = (
        rate(s(Db::Postgres, false, Mail::Smtp(50), "lease", true, 1, 0)),
        rate(s(
            Db::Postgres,
            false,
            Mail::Smtp(50),
            "transaction",
            true,
            1,
            0,
        )),
    ) {
        section.targets.push(Target::at_least(
            "50 ms mail: lease >= 5x transaction",
            l / t,
            5.0,
            format!("{l:.0} / {t:.0} events/s, pool of {POOL} each"),
        ));
    }
    if let (Some(l), Some(t)) = (rate(defaults("lease", 0)), rate(defaults("transaction", 0))) {
        section.targets.push(Target::at_least(
            "50 ms mail, all defaults: lease >= 3x transaction",
            l / t,
            3.0,
            format!(
                "{l:.0} / {t:.0} events/s with DATABASE_POOL_SIZE, WORKER_CONCURRENCY and \
                 WORKER_BATCH unset"
            ),
        ));
    }
    section.notes.extend([
        format!(
            "Every worker process: DATABASE_POOL_SIZE={POOL}, WORKER_CONCURRENCY={CONCURRENCY}, \
             batch = WORKER_BATCH (lease mode); events/s = (events - 1) / (first .. last email \
             accepted), so process start-up (in the JSON) is left out. Rows ending in \
             `defaults` set none of those three (DATABASE_POOL_SIZE, WORKER_CONCURRENCY, \
             WORKER_BATCH): every setting a user would not think to change is at its default."
        ),
        "e2e = status-change commit returning in the harness .. email accepted (sink's 250 \
         after DATA, the .eml file written, or the SES test server's answer to SendEmail), with \
         the harness committing at half the scenario's drain rate."
            .into(),
        "commits/event: xact_commit of the scenario's database over the drain (processes \
         stopped, so their counts are flushed), divided by the events."
            .into(),
        format!(
            "vs ceiling: PostgreSQL file scenarios with one process against pgbench running the \
             worker's per-event work as one transaction ({POOL} clients, same seeded events); \
             SQS scenarios against the SQS server's own receive+delete rate."
        ),
        format!(
            "50 ms transaction-mode runs use {slow} events (each holds a connection for the \
             whole send; the rate, not the count, is the figure); SQS and SES runs use \
             {sqs_events} (the test server answers each call in Python)."
        ),
    ]);
    drop(seed);
    Ok(vec![section])
}

// ------------------------------------------------------------------------------------ seeding

async fn seed(opts: &Opts, events: usize, latency: usize) -> Result<Seed> {
    let dir = tempfile::tempdir()?;
    let pg = FreshDb::create(&opts.pg_url).await?;
    let sqlite = dir.path().join("seed.db");
    let (pg_latency_apps, employer) = seed_store(&pg.url, events, latency).await?;
    let (sqlite_latency_apps, sqlite_employer) =
        seed_store(&format!("sqlite://{}", sqlite.display()), events, latency).await?;
    anyhow::ensure!(
        employer == sqlite_employer,
        "the two seeds differ in their employer"
    );
    Ok(Seed {
        pg,
        sqlite,
        _dir: dir,
        pg_latency_apps,
        sqlite_latency_apps,
        employer,
    })
}

pub(crate) fn database_url(url: &str) -> Result<jobboard::config::DatabaseUrl> {
    let vars: HashMap<String, String> = [("DATABASE_URL".to_string(), url.to_string())].into();
    Ok(jobboard::config::Config::from_map(&vars, false)?.database_url)
}

/// Seeds `events / 4` applications moved four times each (one event per move), then `latency`
/// applications left `submitted`. Returns the latter's ids and the employer's id.
async fn seed_store(url: &str, events: usize, latency: usize) -> Result<(Vec<i64>, i64)> {
    let store = jobboard::store::connect_with_pool(&database_url(url)?, Some(16)).await?;
    store.migrate().await?;
    let user = |i: usize, role: Role| NewUser {
        email: Email::parse(&format!("u{i}@bench.example")).expect("a valid email"),
        name: format!("User {i}"),
        role,
        password_hash: "not-a-login".into(),
    };
    let (employer, job) = employer_with_job(&*store, user(0, Role::Employer)).await?;
    let moved = events / 4;
    let apps: Vec<i64> = futures::stream::iter(1..=moved + latency)
        .map(|i| {
            let store = store.clone();
            let job = job.id;
            let candidate = user(i, Role::Candidate);
            async move {
                let candidate = store.create_user(candidate).await?;
                anyhow::Ok(store.apply(job, candidate.id, None, None).await?.id)
            }
        })
        .buffered(8)
        .try_collect()
        .await?;
    let store2 = store.clone();
    let employer_id = employer.id;
    futures::stream::iter(apps[..moved].to_vec())
        .map(|app| {
            let store = store2.clone();
            async move {
                for to in [
                    ApplicationStatus::Reviewing,
                    ApplicationStatus::Interview,
                    ApplicationStatus::Offered,
                    ApplicationStatus::Hired,
                ] {
                    store
                        .change_status(app, to, Actor::Employer, employer_id, None)
                        .await?;
                }
                anyhow::Ok(())
            }
        })
        .buffer_unordered(8)
        .try_collect::<Vec<()>>()
        .await?;
    let latency_apps = apps[moved..].to_vec();
    // Applying writes the candidate's confirmation too: the scenarios measure the status
    // changes alone, as the rows before that event type did.
    sqlx_exec(
        url,
        "DELETE FROM outbox WHERE event_id IN \
         (SELECT event_id FROM events WHERE type = 'application.submitted')",
    )
    .await?;
    if url.starts_with("sqlite") {
        // Everything into the main file, so that a copy of it is whole.
        sqlx_exec(url, "PRAGMA wal_checkpoint(TRUNCATE)").await?;
    }
    Ok((latency_apps, employer_id))
}

/// `employer`'s company "Bench" and its open job "Engineer", expiring in 30 days: what every
/// seed starts from.
pub(crate) async fn employer_with_job(
    store: &dyn jobboard::store::Store,
    employer: NewUser,
) -> Result<(jobboard::store::UserRow, jobboard::store::JobRow)> {
    let employer = store.create_user(employer).await?;
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
                title: Title::parse("Engineer").expect("a valid title"),
                description: "Benchmark".into(),
                location: "Anywhere".into(),
                remote: true,
                salary: SalaryRange::default(),
                employment_type: EmploymentType::FullTime,
                status: JobStatus::Open,
                expires_at: Some(jobboard::timefmt::now() + chrono::Duration::days(30)),
            },
            None,
        )
        .await?;
    Ok((employer, job))
}

use futures::{StreamExt, TryStreamExt};

/// A copy of the seed for one scenario: its URL, and what to remove afterwards.
struct Copy {
    url: String,
    /// PostgreSQL: the admin URL and the copy's name, dropped with this value.
    pg: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
    latency_apps: Vec<i64>,
}

impl Drop for Copy {
    fn drop(&mut self) {
        let Some((admin, name)) = self.pg.take() else {
            return;
        };
        let dropped = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(async {
                let mut c = crate::common::pg_connect(&admin).await?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut c)
                    .await?;
                anyhow::Ok(())
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("bench: could not drop a scenario database");
        }
    }
}

async fn copy_seed(opts: &Opts, seed: &Seed, db: Db) -> Result<Copy> {
    match db {
        Db::Postgres => {
            let name = format!("jbbench_{}", uuid::Uuid::new_v4().simple());
            let mut admin = crate::common::pg_connect(&opts.pg_url).await?;
            // A template may have no other session.
            sqlx::query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
            )
            .bind(&seed.pg.name)
            .execute(&mut admin)
            .await?;
            sqlx::query(&format!("CREATE DATABASE {name} TEMPLATE {}", seed.pg.name))
                .execute(&mut admin)
                .await
                .context("copying the PostgreSQL seed")?;
            let mut url = url::Url::parse(&opts.pg_url)?;
            url.set_path(&name);
            Ok(Copy {
                url: url.to_string(),
                pg: Some((opts.pg_url.clone(), name)),
                _dir: None,
                latency_apps: seed.pg_latency_apps.clone(),
            })
        }
        Db::Sqlite => {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("bench.db");
            std::fs::copy(&seed.sqlite, &path).context("copying the SQLite seed")?;
            Ok(Copy {
                url: format!("sqlite://{}", path.display()),
                pg: None,
                _dir: Some(dir),
                latency_apps: seed.sqlite_latency_apps.clone(),
            })
        }
    }
}

// ---------------------------------------------------------------------------------- ceilings

/// pgbench running the worker's per-event work as one transaction, over a copy of the seed.
async fn pgbench_worker_shaped(opts: &Opts, seed: &Seed) -> Result<f64> {
    progress(SECTION, "ceiling: pgbench worker-shaped transaction");
    let copy = copy_seed(opts, seed, Db::Postgres).await?;
    let pending: i64 = {
        let mut c = crate::common::pg_connect(&copy.url).await?;
        sqlx::query_scalar("SELECT COUNT(*) FROM outbox")
            .fetch_one(&mut c)
            .await?
    };
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("worker.sql");
    // The same statements the worker runs per event (receive, claim, email data, record,
    // acknowledge), one transaction.
    std::fs::write(
        &script,
        "BEGIN;\n\
         UPDATE outbox SET visible_at = (extract(epoch from clock_timestamp()) * 1000)::bigint + 30000, \
           receive_count = receive_count + 1, receipt = md5(random()::text) \
           WHERE id = (SELECT id FROM outbox WHERE visible_at <= (extract(epoch from clock_timestamp()) * 1000)::bigint \
           ORDER BY visible_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
           RETURNING id AS oid, event_id AS eid, application_id AS aid, receipt AS rc \\gset\n\
         INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, updated_at) \
           VALUES (:eid, 'in_progress', :rc, (extract(epoch from clock_timestamp()) * 1000)::bigint + 30000, 0, \
           (extract(epoch from clock_timestamp()) * 1000)::bigint) ON CONFLICT (event_id) DO NOTHING;\n\
         SELECT u.id, u.email, u.name, j.title, c.name FROM application_history h \
           JOIN applications a ON a.id = h.application_id JOIN users u ON u.id = a.candidate_id \
           JOIN jobs j ON j.id = a.job_id JOIN companies c ON c.id = j.company_id \
           WHERE a.id = :aid AND h.event_id = :eid;\n\
         UPDATE processed_events SET status = 'done', lease_id = NULL, locked_until = NULL, \
           updated_at = (extract(epoch from clock_timestamp()) * 1000)::bigint \
           WHERE event_id = :eid AND lease_id = :rc AND status = 'in_progress';\n\
         DELETE FROM outbox WHERE id = :oid AND receipt = :rc;\n\
         END;\n",
    )?;
    let per_client = (pending as u32 / POOL).max(1);
    let out = tokio::process::Command::new("pgbench")
        .args([
            "-n",
            "-Mprepared",
            &format!("-c{POOL}"),
            "-j2",
            &format!("-t{per_client}"),
            "-f",
        ])
        .arg(&script)
        .arg(&copy.url)
        .output()
        .await
        .context("cannot run pgbench")?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        bail!(
            "pgbench failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tps = text
        .lines()
        .find(|l| l.starts_with("tps") && l.contains("without initial connection time"))
        .or_else(|| text.lines().find(|l| l.starts_with("tps")))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse::<f64>().ok())
        .with_context(|| format!("no tps in pgbench's output: {text}"))?;
    let left: i64 = {
        let mut c = crate::common::pg_connect(&copy.url).await?;
        sqlx::query_scalar("SELECT COUNT(*) FROM outbox")
            .fetch_one(&mut c)
            .await?
    };
    anyhow::ensure!(
        left == pending - (per_client * POOL) as i64,
        "pgbench left {left} of {pending} events (expected {})",
        pending - (per_client * POOL) as i64
    );
    Ok(tps)
}

/// The SQS server's own rates with no worker: sending `n` messages in batches of 10, then
/// receiving and deleting them in batches of 10, four callers at once.
async fn sqs_ceiling(n: usize) -> Result<(f64, f64)> {
    progress(SECTION, "ceiling: SQS server send and receive+delete");
    let client = sqs_client().await;
    let url = create_queue(&client).await?;
    let body = serde_json::json!({"type": "application.status_changed", "event_id": uuid::Uuid::new_v4().to_string(),
        "application_id": 1, "old_status": "submitted", "new_status": "reviewing", "occurred_at": "2026-12-02T10:00:00Z"}).to_string();
    let start = Instant::now();
    let batches = n.div_ceil(10);
    futures::stream::iter(0..batches)
        .map(|b| {
            let (client, url, body) = (client.clone(), url.clone(), body.clone());
            async move {
                let mut req = client.send_message_batch().queue_url(&url);
                for i in 0..10.min(n - b * 10) {
                    req = req.entries(
                        aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .message_body(&body)
                            .build()?,
                    );
                }
                let out = req.send().await?;
                anyhow::ensure!(out.failed().is_empty(), "send failed: {:?}", out.failed());
                anyhow::Ok(())
            }
        })
        .buffer_unordered(4)
        .try_collect::<Vec<()>>()
        .await?;
    let send = n as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let callers = (0..4).map(|_| {
        let (client, url, done) = (client.clone(), url.clone(), done.clone());
        async move {
            let mut empty = 0;
            while done.load(std::sync::atomic::Ordering::SeqCst) < n && empty < 3 {
                let out = client
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(10)
                    .wait_time_seconds(1)
                    .send()
                    .await?;
                let msgs = out.messages();
                if msgs.is_empty() {
                    empty += 1;
                    continue;
                }
                let mut req = client.delete_message_batch().queue_url(&url);
                for (i, m) in msgs.iter().enumerate() {
                    req = req.entries(
                        aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .receipt_handle(m.receipt_handle().unwrap_or_default())
                            .build()?,
                    );
                }
                req.send().await?;
                done.fetch_add(msgs.len(), std::sync::atomic::Ordering::SeqCst);
            }
            anyhow::Ok(())
        }
    });
    futures::future::try_join_all(callers).await?;
    let received = done.load(std::sync::atomic::Ordering::SeqCst);
    anyhow::ensure!(received >= n, "received {received} of {n}");
    let recv = n as f64 / start.elapsed().as_secs_f64();
    let _ = client.delete_queue().queue_url(&url).send().await;
    Ok((send, recv))
}

async fn sqs_client() -> aws_sdk_sqs::Client {
    let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    aws_sdk_sqs::Client::new(&shared)
}

async fn create_queue(client: &aws_sdk_sqs::Client) -> Result<String> {
    let name = format!("jbbench-{}", uuid::Uuid::new_v4().simple());
    let out = client.create_queue().queue_name(&name).send().await?;
    out.queue_url()
        .map(str::to_string)
        .context("no queue URL from CreateQueue")
}

// --------------------------------------------------------------------------------- scenarios

/// Emails accepted, by event id, with the time each was accepted.
#[derive(Default, Clone)]
struct Accepted(Arc<Mutex<Vec<(String, SystemTime)>>>);

impl Accepted {
    fn snapshot(&self) -> Vec<(String, SystemTime)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Where a scenario's emails go, and how the harness reads them back.
pub(crate) enum Sink {
    Files(PathBuf),
    Smtp(SmtpSink),
    Ses(SesSink),
}

impl Sink {
    pub(crate) fn accepted(&self) -> Result<Vec<(String, SystemTime)>> {
        match self {
            Sink::Smtp(s) => Ok(s.accepted.snapshot()),
            Sink::Ses(s) => Ok(s.accepted.snapshot()),
            Sink::Files(dir) => {
                let mut out = Vec::new();
                let entries = match std::fs::read_dir(dir) {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
                    Err(e) => return Err(e.into()),
                };
                for entry in entries {
                    let entry = entry?;
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if !name.ends_with(".eml") || name.len() < 36 {
                        continue;
                    }
                    out.push((name[..36].to_string(), entry.metadata()?.modified()?));
                }
                Ok(out)
            }
        }
    }

    /// How many emails were accepted (cheap: no file metadata).
    pub(crate) fn count(&self) -> Result<usize> {
        match self {
            Sink::Smtp(s) => Ok(s.accepted.0.lock().unwrap_or_else(|p| p.into_inner()).len()),
            Sink::Ses(s) => Ok(s.accepted.0.lock().unwrap_or_else(|p| p.into_inner()).len()),
            Sink::Files(dir) => match std::fs::read_dir(dir) {
                Ok(entries) => Ok(entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_name().as_encoded_bytes().ends_with(b".eml"))
                    .count()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
                Err(e) => Err(e.into()),
            },
        }
    }

    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Sink::Files(dir) => vec![
                ("EMAIL_BACKEND", "file".into()),
                ("EMAIL_FILE_DIR", dir.display().to_string()),
            ],
            Sink::Smtp(s) => vec![
                ("EMAIL_BACKEND", "smtp".into()),
                ("SMTP_URL", format!("smtp://{}?tls=none", s.addr)),
            ],
            Sink::Ses(s) => vec![
                ("EMAIL_BACKEND", "ses".into()),
                ("AWS_ENDPOINT_URL_SESV2", format!("http://{}", s.addr)),
            ],
        }
    }
}

async fn run_scenario(
    opts: &Opts,
    seed: &Seed,
    sc: &Scenario,
    latency_events: usize,
) -> Result<Figures> {
    let copy = copy_seed(opts, seed, sc.db).await?;
    let dir = tempfile::tempdir()?;
    let sink = match sc.mail {
        Mail::File => Sink::Files(dir.path().join("mail")),
        Mail::Smtp(ms) => Sink::Smtp(SmtpSink::start(Duration::from_millis(ms)).await?),
        Mail::Ses => Sink::Ses(SesSink::start().await?),
    };
    let store = jobboard::store::connect_with_pool(&database_url(&copy.url)?, Some(4)).await?;
    // Keep only the scenario's number of events (the first ones).
    let cut: Option<i64> = sqlx_scalar_i64(
        &copy.url,
        &format!(
            "SELECT id FROM outbox ORDER BY id LIMIT 1 OFFSET {}",
            sc.events
        ),
    )
    .await?;
    if let Some(cut) = cut {
        sqlx_exec(&copy.url, &format!("DELETE FROM outbox WHERE id >= {cut}")).await?;
    }
    let expected: HashSet<String> = sqlx_strings(&copy.url, "SELECT event_id FROM outbox").await?;
    anyhow::ensure!(
        expected.len() == sc.events,
        "the seed has {} events, not {}",
        expected.len(),
        sc.events
    );

    let mut env: Vec<(&'static str, String)> = vec![
        ("DATABASE_URL", copy.url.clone()),
        ("CLAIM_MODE", sc.mode.into()),
        ("RUST_LOG", "warn".into()),
        ("LOG_FORMAT", "json".into()),
        ("EMAIL_FROM", "jobs@bench.example".into()),
    ];
    if !sc.defaults {
        env.extend([
            ("DATABASE_POOL_SIZE", POOL.to_string()),
            ("WORKER_CONCURRENCY", CONCURRENCY.to_string()),
            ("WORKER_BATCH", sc.batch.to_string()),
        ]);
    }
    env.extend(sink.env());
    let mut relay = None;
    if sc.sqs {
        let client = sqs_client().await;
        let url = create_queue(&client).await?;
        let dlq = create_queue(&client).await?;
        env.push(("QUEUE", "sqs".into()));
        env.push(("SQS_QUEUE_URL", url.clone()));
        env.push(("SQS_DLQ_URL", dlq));
        let vars: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let config = jobboard::config::Config::from_map(&vars, false)?;
        let sqs = jobboard::run::sqs_queue(&config, store.clone()).await?;
        let r = Arc::new(jobboard::relay::Relay::new(store.clone(), sqs));
        progress(SECTION, format!("publishing {} events to SQS", sc.events));
        let published = r.drain().await?;
        anyhow::ensure!(
            published == sc.events,
            "published {published} of {}",
            sc.events
        );
        relay = Some(r);
    }

    // Drain.
    let commits_before = match sc.db {
        Db::Postgres => Some(xact_commit(&copy.url).await?),
        Db::Sqlite => None,
    };
    let start = SystemTime::now();
    let mut workers = start_workers(opts, sc.procs, &env)?;
    let timeout = Duration::from_secs(120 + sc.events as u64 / 10);
    wait_for_emails(&sink, &expected, &mut workers, timeout).await?;
    let drained = sink.accepted()?;
    let first = drained
        .iter()
        .map(|(_, t)| *t)
        .min()
        .context("no email accepted")?;
    let last = drained.iter().map(|(_, t)| *t).max().unwrap_or(first);
    let seconds = last.duration_since(first).unwrap_or_default().as_secs_f64();
    let startup = first
        .duration_since(start)
        .unwrap_or_default()
        .as_secs_f64();
    for w in &mut workers {
        w.stop()?;
    }
    drop(workers);
    let commits_per_event = match commits_before {
        Some(before) => {
            // An exiting backend reports its counts; give the statistics a moment.
            tokio::time::sleep(Duration::from_millis(700)).await;
            let after = xact_commit(&copy.url).await?;
            Some((after - before) as f64 / sc.events as f64)
        }
        None => None,
    };
    let rate = (sc.events - 1) as f64 / seconds.max(1e-9);

    // Latency: fresh processes, status changes committed at half the drain rate.
    let mut workers = start_workers(opts, sc.procs, &env)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let relay_task = relay.clone().map(|r| {
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(r.run(stop.clone()));
        (stop, task)
    });
    let offered = (rate / 2.0).clamp(1.0, 2_000.0);
    let apps = &copy.latency_apps[..latency_events.min(copy.latency_apps.len())];
    let committed: Arc<Mutex<HashMap<String, SystemTime>>> = Arc::default();
    let every = Duration::from_secs_f64(1.0 / offered);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = tokio::task::JoinSet::new();
    for &app in apps {
        tick.tick().await;
        let (store, committed, relay) = (store.clone(), committed.clone(), relay.clone());
        let employer = seed.employer;
        tasks.spawn(async move {
            let change = store
                .change_status(
                    app,
                    ApplicationStatus::Reviewing,
                    Actor::Employer,
                    employer,
                    None,
                )
                .await?;
            let at = SystemTime::now();
            if let Some(r) = relay {
                r.poke();
            }
            let id = change.event_id.context("no event for a status change")?;
            committed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, at);
            anyhow::Ok(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let committed = committed.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut all_expected = expected.clone();
    all_expected.extend(committed.keys().cloned());
    wait_for_emails(&sink, &all_expected, &mut workers, timeout).await?;
    for w in &mut workers {
        w.stop()?;
    }
    if let Some((stop, task)) = relay_task {
        stop.cancel();
        let _ = task.await;
    }
    // A moment for anything late (a duplicate would show up here).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let accepted = sink.accepted()?;
    let mut per_event: HashMap<&str, usize> = HashMap::new();
    for (id, _) in &accepted {
        *per_event.entry(id.as_str()).or_default() += 1;
    }
    let duplicates = per_event
        .iter()
        .map(|(id, n)| {
            if all_expected.contains(*id) {
                n - 1
            } else {
                *n
            }
        })
        .sum();
    let losses = all_expected
        .iter()
        .filter(|id| !per_event.contains_key(id.as_str()))
        .count();
    let mut latencies: Vec<f64> = accepted
        .iter()
        .filter_map(|(id, at)| {
            let c = committed.get(id)?;
            Some(at.duration_since(*c).unwrap_or_default().as_secs_f64() * 1000.0)
        })
        .collect();
    latencies.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        if latencies.is_empty() {
            0.0
        } else {
            latencies[((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1]
        }
    };
    // Nothing may be left on a database queue.
    if !sc.sqs {
        let left = sqlx_scalar_i64(&copy.url, "SELECT COUNT(*) FROM outbox")
            .await?
            .unwrap_or(0);
        anyhow::ensure!(left == 0, "{left} messages left on the queue");
    }
    drop(store);
    Ok(Figures {
        events: sc.events,
        seconds,
        startup_seconds: startup,
        events_per_sec: rate,
        commits_per_event,
        latency_events: committed.len(),
        offered_per_sec: offered,
        latency_p50_ms: pct(0.50),
        latency_p99_ms: pct(0.99),
        duplicates,
        losses,
    })
}

pub(crate) fn start_workers(
    opts: &Opts,
    procs: usize,
    env: &[(&'static str, String)],
) -> Result<Vec<Child>> {
    (0..procs)
        .map(|i| {
            let mut env = env.to_vec();
            // Port 0: each process listens where the system puts it, so none can collide.
            env.push(("WORKER_HTTP_ADDR", "127.0.0.1:0".to_string()));
            Child::spawn(&format!("worker-{i}"), &opts.bin, &["worker"], &env)
        })
        .collect()
}

/// Waits until every event of `expected` has an email; fails on a stall or a dead process.
pub(crate) async fn wait_for_emails(
    sink: &Sink,
    expected: &HashSet<String>,
    workers: &mut [Child],
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut last_count = 0;
    let mut last_progress = Instant::now();
    loop {
        // Counting is cheap; the whole check only once there are enough emails (the harness
        // shares the machine with the workers, so it keeps its own work small).
        let count = sink.count()?;
        let mut missing = expected.len().saturating_sub(count);
        if missing == 0 {
            let accepted = sink.accepted()?;
            let seen: HashSet<&str> = accepted.iter().map(|(id, _)| id.as_str()).collect();
            missing = expected
                .iter()
                .filter(|id| !seen.contains(id.as_str()))
                .count();
            if missing == 0 {
                return Ok(());
            }
        }
        for w in workers.iter_mut() {
            w.check_running()?;
        }
        if count != last_count {
            last_count = count;
            last_progress = Instant::now();
        }
        if Instant::now() > deadline || last_progress.elapsed() > Duration::from_secs(60) {
            bail!(
                "{missing} of {} events still without an email after {} s\n{}",
                expected.len(),
                timeout.as_secs(),
                workers.first().map(|w| w.log_tail(20)).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn xact_commit(url: &str) -> Result<i64> {
    let mut c = crate::common::pg_connect(url).await?;
    Ok(sqlx::query_scalar(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut c)
    .await?)
}

pub(crate) async fn sqlx_exec(url: &str, sql: &str) -> Result<()> {
    if url.starts_with("sqlite") {
        let mut c = sqlite_connect(url).await?;
        sqlx::query(sql).execute(&mut c).await?;
    } else {
        let mut c = crate::common::pg_connect(url).await?;
        sqlx::query(sql).execute(&mut c).await?;
    }
    Ok(())
}

pub(crate) async fn sqlx_scalar_i64(url: &str, sql: &str) -> Result<Option<i64>> {
    Ok(if url.starts_with("sqlite") {
        let mut c = sqlite_connect(url).await?;
        sqlx::query_scalar(sql).fetch_optional(&mut c).await?
    } else {
        let mut c = crate::common::pg_connect(url).await?;
        sqlx::query_scalar(sql).fetch_optional(&mut c).await?
    })
}

pub(crate) async fn sqlx_strings(url: &str, sql: &str) -> Result<HashSet<String>> {
    let rows: Vec<Option<String>> = if url.starts_with("sqlite") {
        let mut c = sqlite_connect(url).await?;
        sqlx::query_scalar(sql).fetch_all(&mut c).await?
    } else {
        let mut c = crate::common::pg_connect(url).await?;
        sqlx::query_scalar(sql).fetch_all(&mut c).await?
    };
    Ok(rows.into_iter().flatten().collect())
}

pub(crate) async fn sqlite_connect(url: &str) -> Result<sqlx::SqliteConnection> {
    use sqlx::Connection;
    Ok(sqlx::SqliteConnection::connect(url).await?)
}

// -------------------------------------------------------------------------------- SMTP sink

/// A local SMTP server that accepts every message after `delay`, and notes the event id
/// (`X-Jobboard-Event-Id`) and the time of each.
/// SES v2 on the SQS test server, behind a proxy that notes each `SendEmail` the server
/// accepted, with its event id and the time of the answer, as the SMTP sink notes its 250s.
pub(crate) struct SesSink {
    addr: std::net::SocketAddr,
    accepted: Accepted,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SesSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SesSink {
    async fn start() -> Result<SesSink> {
        let server = std::env::var("AWS_ENDPOINT_URL").context("AWS_ENDPOINT_URL")?;
        // The sender's domain (EMAIL_FROM's), verified; a second run finds it there already.
        let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let ses = aws_sdk_sesv2::Client::new(&shared);
        if let Err(e) = ses
            .create_email_identity()
            .email_identity("bench.example")
            .send()
            .await
        {
            let text = aws_sdk_sesv2::error::DisplayErrorContext(&e).to_string();
            anyhow::ensure!(
                text.contains("AlreadyExists"),
                "verifying bench.example: {text}"
            );
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let accepted = Accepted::default();
        let (sink, client) = (accepted.clone(), reqwest::Client::new());
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let (sink, client, server) = (sink.clone(), client.clone(), server.clone());
            async move { forward_ses(req, &client, &server, &sink).await }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(SesSink {
            addr,
            accepted,
            task,
        })
    }
}

/// Passes one request on to the test server; a `SendEmail` it accepts is noted.
async fn forward_ses(
    req: axum::extract::Request,
    client: &reqwest::Client,
    server: &str,
    sink: &Accepted,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
        return (axum::http::StatusCode::BAD_REQUEST, "body").into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let method = reqwest::Method::from_bytes(parts.method.as_str().as_bytes())
        .unwrap_or(reqwest::Method::POST);
    let mut out = client.request(method, format!("{server}{path}"));
    for (name, value) in &parts.headers {
        if name != axum::http::header::HOST {
            out = out.header(name.as_str(), value.as_bytes());
        }
    }
    let answer = match out.body(body.clone()).send().await {
        Ok(answer) => answer,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = answer.status().as_u16();
    let kind = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let bytes = answer.bytes().await.unwrap_or_default();
    if status == 200
        && let Some(id) = ses_event_id(&body)
    {
        sink.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, SystemTime::now()));
    }
    let status = axum::http::StatusCode::from_u16(status).unwrap_or(axum::http::StatusCode::OK);
    (
        status,
        [(axum::http::header::CONTENT_TYPE, kind)],
        bytes.to_vec(),
    )
        .into_response()
}

/// The `X-Jobboard-Event-Id` of a `SendEmail` request's raw message, if it is one.
fn ses_event_id(body: &[u8]) -> Option<String> {
    let request: serde_json::Value = serde_json::from_slice(body).ok()?;
    let data = request["Content"]["Raw"]["Data"].as_str()?;
    let raw = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data).ok()?;
    let raw = String::from_utf8_lossy(&raw);
    let at = raw.find("X-Jobboard-Event-Id: ")? + "X-Jobboard-Event-Id: ".len();
    Some(raw[at..].lines().next()?.trim().to_string())
}

pub(crate) struct SmtpSink {
    addr: std::net::SocketAddr,
    accepted: Accepted,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SmtpSink {
    pub(crate) async fn start(delay: Duration) -> Result<SmtpSink> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let accepted = Accepted::default();
        let sink = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let sink = sink.clone();
                tokio::spawn(async move {
                    let _ = serve_smtp(conn, delay, sink).await;
                });
            }
        });
        Ok(SmtpSink {
            addr,
            accepted,
            task,
        })
    }
}

async fn serve_smtp(conn: tokio::net::TcpStream, delay: Duration, sink: Accepted) -> Result<()> {
    let (read, mut write) = conn.into_split();
    let mut read = BufReader::new(read);
    write.write_all(b"220 bench ESMTP\r\n").await?;
    let mut line = String::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
        match verb.as_str() {
            "EHLO" => write.write_all(b"250-bench\r\n250 8BITMIME\r\n").await?,
            "HELO" | "MAIL" | "RCPT" | "RSET" | "NOOP" => write.write_all(b"250 OK\r\n").await?,
            "DATA" => {
                write.write_all(b"354 go on\r\n").await?;
                let mut event = None;
                loop {
                    line.clear();
                    if read.read_line(&mut line).await? == 0 {
                        return Ok(());
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    if event.is_none()
                        && let Some(v) = line.strip_prefix("X-Jobboard-Event-Id:")
                    {
                        event = Some(v.trim().to_string());
                    }
                }
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if let Some(id) = event {
                    sink.0
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((id, SystemTime::now()));
                }
                write.write_all(b"250 accepted\r\n").await?;
            }
            "QUIT" => {
                write.write_all(b"221 bye\r\n").await?;
                return Ok(());
            }
            _ => write.write_all(b"502 not here\r\n").await?,
        }
    }
}
