//! Migrations at size: a PostgreSQL database at migration 0011 (the schema before the job-change
//! log) with `--scale-jobs` jobs (1 000 000 by default; `--jobs` when that is 0), migrated to
//! this release by `jobboard migrate` (the release binary, as an operator runs it) while the
//! previous release's reads and writes of `jobs` go on at a steady rate:
//!
//! - reads: a job by its id (three tasks), the newest open jobs' first page (one task);
//! - writes: a job's title and `updated_at` by its id, and one new job in five (two tasks);
//!
//! each task 50 a second, on a pool of its own, with no statement timeout, so a statement that
//! waits for a lock shows its whole wait. Each migration's window is read from
//! `_sqlx_migrations` as the run goes (a row appears when its migration has finished: polled
//! every 50 ms), and every statement is counted in the window it started in. The figure is the
//! longest any read or write took while the migrations ran, beside the same load before them.
//! The job-change log needs no backfill (an index is built from the tables), so its migration
//! is a `CREATE TABLE`; the other migrations that touch `jobs` (0015's constraint, checked
//! after a catalogue-only `NOT VALID`; 0018's index, built `CONCURRENTLY`) are in the same run.

use crate::Opts;
use crate::common::{FreshDb, fmt_int, fmt_ms, progress, record_failure};
use crate::report::{Section, Target};
use anyhow::{Context, Result, ensure};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const SECTION: &str = "migrate";
/// The schema the database starts at: the last migration before the job-change log.
const FROM_VERSION: i64 = 11;
/// Statements a second of each load task.
const TASK_RATE: u64 = 50;
/// Seconds of load before the migrations, and after them.
const BEFORE_SECS: u64 = 10;
const AFTER_SECS: u64 = 5;
/// Jobs inserted per statement while seeding.
const SEED_CHUNK: i64 = 100_000;
/// The bound on the longest wait of a read or write during the migrations (ms).
const LONGEST_WAIT_MS: f64 = 1_000.0;

/// One statement of the load: when it started (s since the load began), how long it took (ms),
/// whether it wrote, and its error, if any.
#[derive(Debug, Clone)]
struct Op {
    at: f64,
    ms: f64,
    write: bool,
    failed: Option<String>,
}

pub async fn run(opts: &Opts) -> Result<Vec<Section>> {
    let jobs = if opts.scale_jobs == 0 {
        opts.jobs
    } else {
        opts.scale_jobs
    };
    let mut section = Section {
        name: SECTION.into(),
        columns: [
            "step",
            "seconds",
            "reads",
            "writes",
            "longest read ms",
            "longest write ms",
            "p99 ms",
            "failed",
        ]
        .map(String::from)
        .to_vec(),
        json: json!({"jobs": jobs, "from_version": FROM_VERSION}),
        ..Section::default()
    };
    if opts.wants("migrate pg")
        && let Err(e) = run_pg(opts, jobs as i64, &mut section).await
    {
        record_failure(&mut section, "migrate pg", &e);
    }
    Ok(vec![section])
}

async fn run_pg(opts: &Opts, jobs: i64, section: &mut Section) -> Result<()> {
    ensure!(jobs > 0, "no jobs to seed");
    let db = FreshDb::create(&opts.pg_url).await?;
    let pool = db.pool(4).await?;
    progress(
        SECTION,
        format!("database {} at migration {FROM_VERSION}", db.name),
    );
    // This release's migration files up to FROM_VERSION, applied by sqlx as the release that
    // shipped them did.
    let dir = tempfile::tempdir()?;
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/postgres");
    for entry in
        std::fs::read_dir(&source).with_context(|| format!("reading {}", source.display()))?
    {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_string();
        let version: i64 = name
            .split('_')
            .next()
            .and_then(|v| v.parse().ok())
            .unwrap_or(i64::MAX);
        if version <= FROM_VERSION {
            std::fs::copy(&path, dir.path().join(&name))?;
        }
    }
    sqlx::migrate::Migrator::new(dir.path())
        .await?
        .run(&pool)
        .await
        .context("applying the migrations up to 0011")?;

    let t = Instant::now();
    seed(&pool, jobs).await?;
    let seed_s = t.elapsed().as_secs_f64();
    progress(SECTION, format!("{jobs} jobs seeded in {seed_s:.1} s"));

    // The load, on a pool of its own.
    let load_pool = db.pool(8).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (n, kind) in [0u8, 0, 0, 1, 2, 2].into_iter().enumerate() {
        let pool = load_pool.clone();
        let stop = stop.clone();
        tasks.push(tokio::spawn(async move {
            load_task(&pool, kind, n as u64, jobs, started, &stop).await
        }));
    }
    tokio::time::sleep(Duration::from_secs(BEFORE_SECS)).await;

    // The migrations, with their ends as `_sqlx_migrations` shows them.
    let migrate_at = started.elapsed().as_secs_f64();
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let pool = pool.clone();
        let watching = watching.clone();
        tokio::spawn(async move {
            let mut ends: Vec<(i64, String, f64)> = Vec::new();
            while watching.load(Ordering::SeqCst) {
                let rows: Vec<(i64, String)> = sqlx::query_as(
                    "SELECT version, description FROM _sqlx_migrations WHERE version > $1 \
                     ORDER BY version",
                )
                .bind(ends.last().map(|e| e.0).unwrap_or(FROM_VERSION))
                .fetch_all(&pool)
                .await?;
                let at = started.elapsed().as_secs_f64();
                ends.extend(rows.into_iter().map(|(v, d)| (v, d, at)));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            anyhow::Ok(ends)
        })
    };
    let out = tokio::process::Command::new(&opts.bin)
        .arg("migrate")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &db.url)
        .env("RUST_LOG", "warn")
        .env("LOG_FORMAT", "json")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .context("running jobboard migrate")?;
    let migrated_at = started.elapsed().as_secs_f64();
    ensure!(
        out.status.success(),
        "jobboard migrate failed ({}): {}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    watching.store(false, Ordering::SeqCst);
    let ends = watcher.await.context("the migration watcher panicked")??;
    tokio::time::sleep(Duration::from_secs(AFTER_SECS)).await;
    stop.store(true, Ordering::SeqCst);
    let mut ops: Vec<Op> = Vec::new();
    for task in tasks {
        ops.extend(task.await.context("a load task panicked")??);
    }
    let ended_at = started.elapsed().as_secs_f64();
    ensure!(
        !ends.is_empty(),
        "jobboard migrate applied no migration after {FROM_VERSION}"
    );

    // The windows: before, each migration (from the previous one's end), after.
    let mut windows: Vec<(String, f64, f64)> = vec![("before (same load)".into(), 0.0, migrate_at)];
    let mut from = migrate_at;
    for (version, description, end) in &ends {
        windows.push((format!("{version:04} {description}"), from, *end));
        from = *end;
    }
    if migrated_at > from {
        windows.push(("the rest of `jobboard migrate`".into(), from, migrated_at));
    }
    windows.push(("after".into(), migrated_at, ended_at));
    let mut json_rows = Vec::new();
    for (name, from, to) in &windows {
        let inside: Vec<&Op> = ops.iter().filter(|o| o.at >= *from && o.at < *to).collect();
        let stats = Stats::of(&inside);
        section.rows.push(vec![
            name.clone(),
            format!("{:.2}", to - from),
            fmt_int(stats.reads as f64),
            fmt_int(stats.writes as f64),
            fmt_ms(stats.longest_read),
            fmt_ms(stats.longest_write),
            fmt_ms(stats.p99),
            stats.failed.to_string(),
        ]);
        json_rows.push(
            json!({"step": name, "from_s": from, "to_s": to, "reads": stats.reads,
            "writes": stats.writes, "longest_read_ms": stats.longest_read,
            "longest_write_ms": stats.longest_write, "p99_ms": stats.p99,
            "failed": stats.failed, "first_error": stats.first_error}),
        );
    }
    let before: Vec<&Op> = ops.iter().filter(|o| o.at < migrate_at).collect();
    let during: Vec<&Op> = ops
        .iter()
        .filter(|o| o.at >= migrate_at && o.at < migrated_at)
        .collect();
    let b = Stats::of(&before);
    let d = Stats::of(&during);
    let longest = d.longest_read.max(d.longest_write);
    section.targets.push(Target::at_most(
        "migrate pg: longest read or write of jobs during the migrations (ms)",
        longest,
        LONGEST_WAIT_MS,
        format!(
            "{} reads and {} writes over {:.1} s of `jobboard migrate` ({} to {}) on {} jobs: \
             longest read {} ms, write {} ms, p99 {} ms; before it, the same load: longest \
             read {} ms, write {} ms, p99 {} ms",
            d.reads,
            d.writes,
            migrated_at - migrate_at,
            ends.first()
                .map(|e| format!("{:04}", e.0))
                .unwrap_or_default(),
            ends.last()
                .map(|e| format!("{:04}", e.0))
                .unwrap_or_default(),
            fmt_int(jobs as f64),
            fmt_ms(d.longest_read),
            fmt_ms(d.longest_write),
            fmt_ms(d.p99),
            fmt_ms(b.longest_read),
            fmt_ms(b.longest_write),
            fmt_ms(b.p99),
        ),
    ));
    section.targets.push(Target::at_most(
        "migrate pg: reads and writes that failed during the migrations",
        d.failed as f64,
        0.0,
        d.first_error.clone().unwrap_or_else(|| "none".into()),
    ));
    section.notes.push(format!(
        "PostgreSQL at migration {FROM_VERSION} with {} jobs (seeded in {seed_s:.1} s by \
         generate_series, 10 % closed, the indexes of jobs built after the rows, then VACUUM \
         ANALYZE), migrated to this release by `jobboard migrate` in {:.2} s while 6 tasks \
         ran the previous release's statements at {TASK_RATE}/s each (3 reads of a job by id, \
         1 read of the newest open page, 2 writes: a title by id, one insert in five), with no \
         statement timeout. A row per migration, from the previous one's end (polled every 50 \
         ms from _sqlx_migrations) to its own; statements are counted where they started.",
        fmt_int(jobs as f64),
        migrated_at - migrate_at
    ));
    section.json["windows"] = json!(json_rows);
    section.json["seed_s"] = json!(seed_s);
    section.json["migrate_s"] = json!(migrated_at - migrate_at);
    drop(load_pool);
    drop(pool);
    if opts.keep_db {
        progress(SECTION, format!("kept the database {}", db.keep()));
    } else {
        db.drop_now().await?;
    }
    Ok(())
}

#[derive(Default)]
struct Stats {
    reads: usize,
    writes: usize,
    longest_read: f64,
    longest_write: f64,
    p99: f64,
    failed: usize,
    first_error: Option<String>,
}

impl Stats {
    fn of(ops: &[&Op]) -> Stats {
        let mut s = Stats::default();
        let mut all: Vec<f64> = Vec::with_capacity(ops.len());
        for o in ops {
            if o.write {
                s.writes += 1;
                s.longest_write = s.longest_write.max(o.ms);
            } else {
                s.reads += 1;
                s.longest_read = s.longest_read.max(o.ms);
            }
            if let Some(e) = &o.failed {
                s.failed += 1;
                s.first_error.get_or_insert_with(|| e.clone());
            }
            all.push(o.ms);
        }
        all.sort_by(f64::total_cmp);
        if !all.is_empty() {
            s.p99 = all[((all.len() as f64 * 0.99).ceil() as usize).clamp(1, all.len()) - 1];
        }
        s
    }
}

/// Companies, then `jobs` jobs (ids in creation order, 10 % closed), with the indexes of
/// `jobs` dropped during the insert and built again from their own definitions.
async fn seed(pool: &sqlx::PgPool, jobs: i64) -> Result<()> {
    let companies = (jobs / 500).clamp(10, 5_000);
    sqlx::query(
        "INSERT INTO companies (name, created_at) \
         SELECT 'Company ' || i, now() - interval '2 years' FROM generate_series(1, $1) i",
    )
    .bind(companies)
    .execute(pool)
    .await
    .context("inserting the companies")?;
    let indexes: Vec<(String, String)> = sqlx::query_as(
        "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'jobs' \
         AND indexname <> 'jobs_pkey'",
    )
    .fetch_all(pool)
    .await?;
    for (name, _) in &indexes {
        sqlx::query(&format!("DROP INDEX {name}"))
            .execute(pool)
            .await
            .with_context(|| format!("dropping {name} for the bulk insert"))?;
    }
    let mut from = 1;
    while from <= jobs {
        let to = (from + SEED_CHUNK - 1).min(jobs);
        sqlx::query(
            "INSERT INTO jobs (company_id, title, description, location, location_key, remote, \
             salary_min, salary_max, employment_type, status, search_terms, title_terms, \
             created_at, updated_at) \
             SELECT (i % $3) + 1, 'Engineer ' || i, 'Builds things with tool' || (i % 977), \
             'Town ' || (i % 400), 'town ' || (i % 400), i % 3 = 0, 30000, 60000 + i % 50000, \
             'full_time', CASE WHEN i % 10 = 0 THEN 'closed' ELSE 'open' END, \
             'engineer tool' || (i % 977) || ' town ' || (i % 400), 'engineer', \
             now() - make_interval(secs => (($2 - i) * 30)::float8), \
             now() - make_interval(secs => (($2 - i) * 30)::float8) \
             FROM generate_series($1::bigint, $2::bigint) i",
        )
        .bind(from)
        .bind(to)
        .bind(companies)
        .execute(pool)
        .await
        .context("inserting jobs")?;
        from = to + 1;
    }
    for (name, def) in &indexes {
        sqlx::query(def)
            .execute(pool)
            .await
            .with_context(|| format!("building {name} again"))?;
    }
    sqlx::query("VACUUM ANALYZE jobs").execute(pool).await?;
    let n: i64 = sqlx::query_scalar("SELECT count(*) FROM jobs")
        .fetch_one(pool)
        .await?;
    ensure!(n == jobs, "{n} jobs seeded of {jobs}");
    Ok(())
}

/// One task of the previous release's load until `stop`: `kind` 0 reads a job by id, 1 reads
/// the newest open page, 2 writes (a title by id; every fifth statement a new job).
async fn load_task(
    pool: &sqlx::PgPool,
    kind: u8,
    seed: u64,
    jobs: i64,
    started: Instant,
    stop: &AtomicBool,
) -> Result<Vec<Op>> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ops = Vec::new();
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / TASK_RATE));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut n = 0u64;
    while !stop.load(Ordering::SeqCst) {
        tick.tick().await;
        n += 1;
        let id = rng.gen_range(1..=jobs);
        let t = Instant::now();
        let result = match kind {
            0 => sqlx::query("SELECT id, title, status, company_id FROM jobs WHERE id = $1")
                .bind(id)
                .fetch_optional(pool)
                .await
                .map(|_| ()),
            1 => sqlx::query(
                "SELECT id FROM jobs WHERE status = 'open' ORDER BY created_at DESC, id DESC \
                 LIMIT 20",
            )
            .fetch_all(pool)
            .await
            .map(|_| ()),
            _ if n.is_multiple_of(5) => sqlx::query(
                "INSERT INTO jobs (company_id, title, description, location, location_key, \
                 remote, employment_type, status, search_terms, title_terms, created_at, \
                 updated_at) VALUES (1, 'New Engineer', 'Written during the migration', \
                 'Lisbon', 'lisbon', false, 'full_time', 'open', 'new engineer', \
                 'new engineer', now(), now())",
            )
            .execute(pool)
            .await
            .map(|_| ()),
            _ => sqlx::query("UPDATE jobs SET title = $2, updated_at = now() WHERE id = $1")
                .bind(id)
                .bind(format!("Engineer {id} (edited {n})"))
                .execute(pool)
                .await
                .map(|_| ()),
        };
        ops.push(Op {
            at: t.duration_since(started).as_secs_f64(),
            ms: t.elapsed().as_secs_f64() * 1000.0,
            write: kind == 2,
            failed: result.err().map(|e| format!("{e:#}")),
        });
    }
    Ok(ops)
}
