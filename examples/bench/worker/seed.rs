//! The seeded databases every scenario copies (status changes waiting in the outbox, and
//! applications left for the latency phase), and a scenario's copy of one.

use super::scenarios::Db;
use super::sql::{database_url, sqlx_exec};
use crate::Opts;
use crate::common::FreshDb;
use anyhow::{Context, Result};
use futures::{StreamExt, TryStreamExt};
use jobboard::domain::values::{Email, Title};
use jobboard::domain::{Actor, ApplicationStatus, EmploymentType, JobStatus, Role};
use jobboard::store::{CompanyFields, JobFields, NewUser};
use std::path::PathBuf;

/// The seeded databases every scenario copies: `events` status changes waiting in the outbox,
/// and `latency` applications still `submitted` for the latency phase to move.
pub(super) struct Seed {
    pg: FreshDb,
    sqlite: PathBuf,
    _dir: tempfile::TempDir,
    /// The applications left `submitted`, in each database.
    pg_latency_apps: Vec<i64>,
    sqlite_latency_apps: Vec<i64>,
    pub(super) employer: i64,
}

pub(super) async fn seed(opts: &Opts, events: usize, latency: usize) -> Result<Seed> {
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
                anyhow::Ok(
                    store
                        .apply(job, candidate.id, Default::default(), None)
                        .await?
                        .id,
                )
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
                locations: jobboard::domain::pay_place::places_of_text("Anywhere"),
                workplace: jobboard::domain::pay_place::Workplace::Remote,
                salary: None,
                employment_type: EmploymentType::FullTime,
                status: JobStatus::Open,
                expires_at: Some(jobboard::timefmt::now() + chrono::Duration::days(30)),
                resume_required: false,
                questions: None,
            },
            None,
        )
        .await?;
    Ok((employer, job))
}

/// A copy of the seed for one scenario: its URL, and what to remove afterwards.
pub(super) struct Copy {
    pub(super) url: String,
    /// PostgreSQL: the admin URL and the copy's name, dropped with this value.
    pg: Option<(String, String)>,
    _dir: Option<tempfile::TempDir>,
    pub(super) latency_apps: Vec<i64>,
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

pub(super) async fn copy_seed(opts: &Opts, seed: &Seed, db: Db) -> Result<Copy> {
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
