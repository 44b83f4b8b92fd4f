//! One run of the HTTP section: a fresh database (PostgreSQL or SQLite), the API serving it,
//! its search index built from the seeded tables, and what the run found along the way; stopped
//! and dropped by [`Bench::finish`].

use super::queries::{BroadQuery, MixQuery};
use super::rows::{CACHED_QUERY, Kind, Mix, SECTION};
use crate::Opts;
use crate::common::{self, Child, FreshDb};
use crate::report::Section;
use anyhow::{Context, Result, bail, ensure};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const JWT_SECRET: &str = "jobboard-bench-secret-0123456789abcdefghijklmnop";

/// One run of the section: its database, the API serving it, and what was seeded and found.
pub(super) struct Bench<'a> {
    pub(super) opts: &'a Opts,
    /// What this run measures on which database.
    pub(super) kind: Kind,
    pub(super) db: Option<FreshDb>,
    /// PostgreSQL runs only.
    pub(super) pg: Option<sqlx::PgPool>,
    /// The SQLite run: its database file (in `dir`) and a pool on it.
    pub(super) sqlite: Option<(String, sqlx::SqlitePool)>,
    /// Scripts and parameter files.
    pub(super) dir: tempfile::TempDir,
    pub(super) server: Option<Child>,
    pub(super) base: String,
    pub(super) employer_token: String,
    pub(super) candidate_tokens: Vec<String>,
    pub(super) first_job_id: i64,
    /// The company the employer made through the API.
    pub(super) company_id: i64,
    pub(super) njobs: i64,
    pub(super) words: Vec<String>,
    /// The broad searches (search_broad), in the order they are sent.
    pub(super) broad: Vec<BroadQuery>,
    /// The searches of each mix (runs at scale only).
    pub(super) mixes: Vec<(Mix, Vec<MixQuery>)>,
    /// Query plans of the slowest sample searches.
    pub(super) plans: Vec<String>,
    pub(super) seed_s: f64,
    /// Seconds each seeding step took.
    pub(super) seed_steps: Vec<(&'static str, f64)>,
    pub(super) cached_total: i64,
    /// The API's RSS before and after seeding (MiB).
    pub(super) seed_rss: (Option<f64>, Option<f64>),
    pub(super) redis_prefix: Option<String>,
    /// `jobboard search rebuild` on the seeded database: seconds, MiB on disk.
    pub(super) index_build: Option<(f64, f64)>,
    /// Facts checked along the way (also in the JSON).
    pub(super) checks: Vec<String>,
    /// More environment for the next [`Bench::start_server`] (the résumé rows' S3 store).
    pub(super) extra_env: Vec<(&'static str, String)>,
}

impl<'a> Bench<'a> {
    /// A fresh database, the API on it, the seeded data.
    pub(super) async fn start(opts: &'a Opts, kind: Kind) -> Result<Bench<'a>> {
        ensure!(
            opts.bin.is_file(),
            "the jobboard binary {} does not exist (build it with `cargo build --release --bin \
             jobboard`, or pass --bin)",
            opts.bin.display()
        );
        ensure!(opts.jobs > 0, "--jobs must be at least 1");
        let dir = tempfile::Builder::new().prefix("jbbench-http-").tempdir()?;
        let (db, pg, sqlite) = if kind == Kind::Sqlite {
            let url = format!("sqlite://{}/bench.db", dir.path().display());
            let pool = sqlx::sqlite::SqlitePoolOptions::new()
                .max_connections(1)
                .connect_with(
                    url.parse::<sqlx::sqlite::SqliteConnectOptions>()?
                        .create_if_missing(true)
                        .journal_mode(sqlx::sqlite::SqliteJournalMode::Wal)
                        .busy_timeout(Duration::from_secs(30)),
                )
                .await?;
            common::progress(SECTION, format!("database {url}"));
            (None, None, Some((url, pool)))
        } else {
            let db = FreshDb::create(&opts.pg_url).await?;
            common::progress(SECTION, format!("database {}", db.name));
            let pool = db.pool(4).await?;
            (Some(db), Some(pool), None)
        };
        let mut bench = Bench {
            opts,
            kind,
            pg,
            sqlite,
            dir,
            db,
            server: None,
            base: String::new(),
            employer_token: String::new(),
            candidate_tokens: Vec::new(),
            first_job_id: 0,
            company_id: 0,
            njobs: 0,
            words: Vec::new(),
            broad: Vec::new(),
            mixes: Vec::new(),
            plans: Vec::new(),
            seed_s: 0.0,
            seed_steps: Vec::new(),
            cached_total: 0,
            seed_rss: (None, None),
            redis_prefix: None,
            index_build: None,
            checks: Vec::new(),
            extra_env: Vec::new(),
        };
        bench.start_server(None).await?;
        let t = Instant::now();
        let pid = bench.server()?.pid;
        let before = common::rss_mb(pid).ok();
        bench.seed().await?;
        bench.seed_rss = (before, common::rss_mb(pid).ok());
        bench.seed_s = t.elapsed().as_secs_f64();
        bench.checks.push(format!(
            "seeding ({}): {} jobs in {:.1} s ({})",
            match kind {
                Kind::Main => "PostgreSQL",
                Kind::Scale => "PostgreSQL at scale",
                Kind::Sqlite => "SQLite",
            },
            bench.njobs,
            bench.seed_s,
            bench
                .seed_steps
                .iter()
                .map(|(k, v)| format!("{k} {v:.1} s"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        // The seed writes the tables, not the job-change log: the index is built from them,
        // the API stopped, as an operator would after a restore.
        bench.build_index().await?;
        // The measured runs start on a fresh process: what registering the accounts left in
        // memory is reported on its own (seed_rss), not mixed into every row.
        bench.start_server(None).await?;
        bench.check_seeded().await?;
        Ok(bench)
    }

    pub(super) fn setup_json(&self) -> Value {
        json!({
            "jobs": self.njobs,
            "first_job_id": self.first_job_id,
            "candidates": self.candidate_tokens.len(),
            "query_words": self.words,
            "seed_s": self.seed_s,
            "seed_steps_s": self.seed_steps.iter().map(|(k, v)| json!({"step": k, "s": v})).collect::<Vec<_>>(),
            "mix_searches": self.mixes.iter().map(|(m, l)| json!({"mix": m.row(self.kind), "searches": l.len()})).collect::<Vec<_>>(),
            "cached_query": CACHED_QUERY,
            "cached_query_total": self.cached_total,
            "api_rss_before_seeding_mb": self.seed_rss.0,
            "api_rss_after_seeding_mb": self.seed_rss.1,
            "index_build_s": self.index_build.map(|b| b.0),
            "index_mb": self.index_build.map(|b| b.1),
        })
    }

    /// (Re)starts the API; with `redis`, on Redis under a prefix of its own.
    pub(super) async fn start_server(&mut self, redis: Option<String>) -> Result<()> {
        if let Some(mut old) = self.server.take() {
            old.stop()?;
        }
        let db_url = match (&self.db, &self.sqlite) {
            (Some(d), _) => d.url.clone(),
            (None, Some((url, _))) => url.clone(),
            (None, None) => bail!("no database"),
        };
        let addr = common::free_addr()?;
        let mut env = vec![
            ("DATABASE_URL", db_url),
            ("SEARCH_INDEX_DIR", self.index_dir().display().to_string()),
            ("BIND_ADDR", addr.to_string()),
            ("APP_ENV", "development".to_string()),
            ("JWT_SECRET", JWT_SECRET.to_string()),
            ("JWT_TTL_SECS", "86400".to_string()),
            ("RUST_LOG", "warn".to_string()),
            ("LOG_FORMAT", "json".to_string()),
            ("SHUTDOWN_GRACE_SECS", "5".to_string()),
            (
                "FILE_STORE_DIR",
                self.dir.path().join("files").display().to_string(),
            ),
            // The résumé rows' RSS row uploads a 40 MiB file.
            ("RESUME_MAX_BYTES", "52428800".to_string()),
        ];
        env.extend(self.extra_env.iter().cloned());
        if let Some(prefix) = &redis {
            env.push(("REDIS_URL", self.opts.redis_url.clone()));
            env.push(("REDIS_KEY_PREFIX", prefix.clone()));
        }
        let what = if redis.is_some() { "api-redis" } else { "api" };
        let mut child = Child::spawn(what, &self.opts.bin, &["serve"], &env)?;
        self.base = format!("http://{addr}");
        child
            .wait_ready(&format!("{}/readyz", self.base), Duration::from_secs(30))
            .await?;
        if redis.is_some() {
            let ready: Value = common::http_client()
                .get(format!("{}/readyz", self.base))
                .send()
                .await?
                .json()
                .await?;
            ensure!(
                ready["checks"]["cache_backend"] == "redis" && ready["checks"]["cache"] == "ok",
                "the API does not report a working Redis cache: {ready}"
            );
        }
        common::progress(
            SECTION,
            format!("{what} serving on {} (pid {})", self.base, child.pid),
        );
        self.server = Some(child);
        Ok(())
    }

    /// The API's search index, kept across its restarts.
    fn index_dir(&self) -> PathBuf {
        self.dir.path().join("search")
    }

    /// `jobboard search rebuild` on the seeded database (the API stopped), timed, with the
    /// index's size on disk.
    async fn build_index(&mut self) -> Result<()> {
        if let Some(mut old) = self.server.take() {
            old.stop()?;
        }
        let db_url = match (&self.db, &self.sqlite) {
            (Some(d), _) => d.url.clone(),
            (None, Some((url, _))) => url.clone(),
            (None, None) => bail!("no database"),
        };
        let env = [
            ("DATABASE_URL", db_url),
            ("SEARCH_INDEX_DIR", self.index_dir().display().to_string()),
            ("RUST_LOG", "warn".to_string()),
            ("LOG_FORMAT", "json".to_string()),
        ];
        let t = Instant::now();
        let out = tokio::process::Command::new(&self.opts.bin)
            .args(["search", "rebuild"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(env)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .context("running jobboard search rebuild")?;
        let secs = t.elapsed().as_secs_f64();
        let log = String::from_utf8_lossy(&out.stdout).into_owned();
        ensure!(
            out.status.success(),
            "jobboard search rebuild failed ({}): {log}{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let documents: u64 = log
            .split(": ")
            .nth(1)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .with_context(|| format!("no document count in the rebuild's output: {log}"))?;
        ensure!(
            documents as i64 == self.njobs,
            "the index holds {documents} documents for {} seeded jobs",
            self.njobs
        );
        let mb = dir_bytes(&self.index_dir())? as f64 / (1024.0 * 1024.0);
        self.index_build = Some((secs, mb));
        common::progress(
            SECTION,
            format!(
                "search index built: {documents} documents in {secs:.1} s, {mb:.1} MiB on disk"
            ),
        );
        self.checks.push(format!(
            "search index (`jobboard search rebuild` on the seeded database): {documents} \
             documents in {secs:.1} s, {mb:.1} MiB on disk"
        ));
        Ok(())
    }

    pub(super) fn pg(&self) -> Result<&sqlx::PgPool> {
        self.pg.as_ref().context("this run is not on PostgreSQL")
    }

    pub(super) async fn pg_count(&self, sql: &str) -> Result<i64> {
        Ok(sqlx::query_scalar(sql).fetch_one(self.pg()?).await?)
    }

    pub(super) fn server(&mut self) -> Result<&mut Child> {
        self.server.as_mut().context("the API is not running")
    }

    /// Stops the server, deletes the Redis keys and drops the database.
    pub(super) async fn finish(&mut self, section: &mut Section) {
        if let Some(mut server) = self.server.take() {
            match server.stop() {
                Ok(status) if !status.success() => section.notes.push(format!(
                    "The API exited with {status} on SIGTERM (log tail: {})",
                    common::first_line(&server.log_tail(1))
                )),
                Ok(_) => {}
                Err(e) => common::record_failure(section, "stopping the API", &e),
            }
        }
        if let Some(prefix) = self.redis_prefix.take()
            && let Err(e) = delete_redis_keys(&self.opts.redis_url, &prefix).await
        {
            common::record_failure(section, "deleting the Redis keys", &e);
        }
        if let Some(pool) = self.pg.take() {
            pool.close().await;
        }
        if let Some((_, pool)) = self.sqlite.take() {
            pool.close().await;
        }
        if let Some(db) = self.db.take() {
            if self.opts.keep_db {
                let url = db.keep();
                common::progress(SECTION, format!("kept the database {url}"));
                section
                    .notes
                    .push(format!("The database was kept (--keep-db): {url}"));
            } else if let Err(e) = db.drop_now().await {
                common::record_failure(section, "dropping the database", &e);
            }
        }
    }
}

/// Sends `req`; the JSON answer if its status is `want`, an error with the body otherwise.
pub(super) async fn api(req: reqwest::RequestBuilder, want: u16) -> Result<Value> {
    let res = req.send().await?;
    let status = res.status();
    let body = res.text().await.unwrap_or_default();
    if status.as_u16() != want {
        bail!(
            "expected {want}, got {status}: {}",
            common::first_line(&body)
        );
    }
    serde_json::from_str(&body)
        .with_context(|| format!("the answer is not JSON: {}", common::first_line(&body)))
}

async fn delete_redis_keys(url: &str, prefix: &str) -> Result<()> {
    let client = redis::Client::open(url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg(format!("{prefix}*"))
            .arg("COUNT")
            .arg(1000)
            .query_async(&mut conn)
            .await?;
        if !keys.is_empty() {
            let _: i64 = redis::cmd("DEL").arg(&keys).query_async(&mut conn).await?;
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// The bytes of every file under `dir`.
fn dir_bytes(dir: &Path) -> Result<u64> {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry?;
        let meta = entry.metadata()?;
        total += if meta.is_dir() {
            dir_bytes(&entry.path())?
        } else {
            meta.len()
        };
    }
    Ok(total)
}
