//! The chaos run: the worker's promise (docs/guarantee.md) checked by breaking many things at once
//! and counting. Against PostgreSQL, a real SMTP listener and the real binary, it
//!
//! - drives `--events` status changes through the API (`jobboard serve`), each application
//!   confirmed to its candidate (`application.submitted`), and, with moderation on, has an
//!   operator approve and reject `--notice-jobs` jobs (`job.reviewed`) that expire during the run
//!   (`job.expiring`, `job.expired`, written by the workers' upkeep while they are being killed),
//!   and the applications' hour digested (`applications.digest`, by the upkeep too): every type
//!   of docs/guarantee.md that the system writes, counted type by type,
//! - runs `--workers` worker processes and SIGKILLs a random one every 0.5–2 s, restarting it,
//! - re-injects a share of the events into the queue as duplicates,
//! - has the SMTP listener refuse a share of deliveries (451) and stall some past the send
//!   timeout, and, halfway through, accept new sessions without ever greeting them for
//!   `--mail-stall-secs` (a tarpit, an overloaded relay: an outage, never a dead letter),
//! - restarts PostgreSQL once mid-run (the API and the workers must recover on their own),
//! - posts a job about every second through the API, and once, mid-run, has the API process
//!   unable to open a file for `--index-fault-ms` while its search index writes (a failed index
//!   write: EMFILE, as a full descriptor table or a full disk gives it),
//! - once switches half the workers to the other claim mode,
//! - has two webhook endpoints of the company take every event type it can: one answers at once,
//!   the other fails a share of the deliveries (500) and hangs past the deadline on another,
//!
//! then waits (bounded) for the queue to drain, looks up every job posted (`GET /api/jobs?ids=`),
//! and prints, and writes as JSON, what happened: events, emails, lost, duplicated, dead letters,
//! kills, injections, reclaims, jobs posted and not searchable, webhook deliveries, seconds. It
//! exits 1 on any loss, on more duplicates than reclaims, on a posted job the search does not
//! find, on an (event, endpoint) whose delivery never got a 2xx, or on more webhook requests
//! repeated than attempts recorded as failed plus webhook reclaims (2 when the run itself could
//! not be made).
//!
//! With `--email ses` the workers send through Amazon SES's v2 API on the SQS test server
//! instead, and the emails are counted in its store of sent messages (it refuses and stalls
//! nothing).
//!
//! `scripts/chaos` builds the binaries, starts the services and passes its arguments on:
//!   scripts/chaos --queue db --mode mixed --events 2000 --workers 4
//!   scripts/chaos --queue sqs --mode lease --email ses --events 160 --workers 3 --rate 10

#[allow(dead_code)] // the test fixture has more than the chaos run uses
#[path = "../tests/api/smtp/fixture.rs"]
mod smtp;

#[path = "chaos/hooks.rs"]
mod hooks;

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
use futures::StreamExt;
use rand::Rng;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Mutex;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum QueueArg {
    Db,
    Sqs,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum EmailArg {
    /// The test SMTP listener, which also refuses and stalls a share of the deliveries.
    Smtp,
    /// Amazon SES's v2 API on the SQS test server (moto, in AWS_ENDPOINT_URL), which takes
    /// every message: no refusals or stalls then.
    Ses,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Lease,
    Transaction,
    /// Half the workers in each mode.
    Mixed,
}

/// Breaks the system in many ways at once and counts lost and repeated emails.
#[derive(Parser, Debug)]
#[command(name = "chaos")]
struct Opts {
    /// The jobboard binary (default: the one beside this example).
    #[arg(long)]
    bin: Option<PathBuf>,
    /// A PostgreSQL URL whose user may create databases; the run gets a database of its own
    /// (scripts/chaos gives the throwaway test cluster's).
    #[arg(
        long,
        env = "JOBBOARD_TEST_DATABASE_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/postgres"
    )]
    pg_url: String,
    #[arg(long, value_enum, default_value = "db")]
    queue: QueueArg,
    /// The claim mode the workers start in.
    #[arg(long, value_enum, default_value = "lease")]
    mode: ModeArg,
    /// Status changes to drive (four per application).
    #[arg(long, default_value_t = 400)]
    events: usize,
    #[arg(long, default_value_t = 3)]
    workers: usize,
    /// Jobs, beside the one applied to, that an operator reviews and that expire during the
    /// run: each a `job.reviewed`, a `job.expiring` and (approved ones) a `job.expired` to each
    /// of the company's two members.
    #[arg(long, default_value_t = 4)]
    notice_jobs: usize,
    /// Status changes per second (so that the trouble spreads over the run).
    #[arg(long, default_value_t = 20.0)]
    rate: f64,
    /// Share of the events re-injected into the queue as duplicates.
    #[arg(long, default_value_t = 0.1)]
    duplicate_share: f64,
    /// Where the workers send: `EMAIL_BACKEND=smtp` or `ses`.
    #[arg(long, value_enum, default_value = "smtp")]
    email: EmailArg,
    /// Share of deliveries the SMTP listener refuses with a 451.
    #[arg(long, default_value_t = 0.1)]
    refuse_share: f64,
    /// Share of deliveries the SMTP listener stalls past the send timeout.
    #[arg(long, default_value_t = 0.02)]
    stall_share: f64,
    /// Halfway through the status changes, the SMTP listener accepts new sessions and never
    /// greets them for this many seconds, then recovers (0: never).
    #[arg(long, default_value_t = 5)]
    mail_stall_secs: u64,
    /// At three fifths of the status changes, the API process cannot open a file for this
    /// many milliseconds (its soft RLIMIT_NOFILE lowered to its lowest free descriptor, with
    /// `prlimit`), while its search index applies a job change: the index's write fails, and
    /// every job must still be searchable at the end (0: never).
    #[arg(long, default_value_t = 1500)]
    index_fault_ms: u64,
    /// The shell command that restarts PostgreSQL [default: JOBBOARD_TEST_PG_RESTART, the
    /// throwaway test cluster's, from the env file scripts/services writes]. Never the
    /// machine's own cluster unless given here.
    #[arg(long)]
    pg_restart: Option<String>,
    /// Do not restart PostgreSQL.
    #[arg(long)]
    no_pg_restart: bool,
    /// Seconds to wait for the queue to drain after the last status change.
    #[arg(long, default_value_t = 120)]
    drain_timeout_secs: u64,
    /// Share of webhook deliveries the flaky endpoint answers with a 500.
    #[arg(long, default_value_t = 0.2)]
    webhook_fail_share: f64,
    /// Share of webhook deliveries the flaky endpoint answers only after the deadline.
    #[arg(long, default_value_t = 0.03)]
    webhook_hang_share: f64,
    /// Where to write the result as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
}

/// The send deadline the workers get; stalls last longer than this.
const SEND_TIMEOUT_SECS: u64 = 2;
const VISIBILITY_SECS: u64 = 6;
/// A webhook attempt's deadline (a claim's lease is six of them) and the first retry's wait.
const WEBHOOK_TIMEOUT_SECS: u64 = 2;
const WEBHOOK_RETRY_SECS: u64 = 1;

fn main() -> ExitCode {
    let opts = Opts::parse();
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("chaos: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match rt.block_on(run(opts)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("chaos: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn progress(msg: impl std::fmt::Display) {
    eprintln!("[chaos] {msg}");
}

// ------------------------------------------------------------------------------- processes

/// A child process with its log in a folder of its own.
struct Proc {
    name: String,
    child: tokio::process::Child,
    log: PathBuf,
}

impl Proc {
    fn spawn(
        bin: &Path,
        dir: &Path,
        name: &str,
        args: &[&str],
        env: &[(String, String)],
    ) -> Result<Proc> {
        let log = dir.join(format!("{name}.log"));
        let out = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let mut cmd = tokio::process::Command::new(bin);
        cmd.args(args)
            .stdin(std::process::Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {} ({name})", bin.display()))?;
        Ok(Proc {
            name: name.to_string(),
            child,
            log,
        })
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The reclaims it logged: of events, and of webhook deliveries.
    fn reclaims(&self) -> (usize, usize) {
        let log = self.log_text();
        let webhooks = log
            .matches("reclaiming expired claim of a webhook delivery")
            .count();
        (
            log.matches("reclaiming expired claim").count() - webhooks,
            webhooks,
        )
    }

    async fn sigkill(&mut self) {
        let _ = self.child.kill().await;
    }

    /// SIGTERM, then up to 20 s for a graceful stop (SIGKILL after that).
    async fn sigterm(&mut self) {
        if let Some(pid) = self.child.id() {
            let _ = tokio::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status()
                .await;
        }
        if tokio::time::timeout(Duration::from_secs(20), self.child.wait())
            .await
            .is_err()
        {
            let _ = self.child.kill().await;
        }
    }

    fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }
}

/// A worker slot: its process, its claim mode and the reclaims its earlier lives logged.
struct Worker {
    proc: Proc,
    mode: &'static str,
    lives: usize,
}

struct Run {
    bin: PathBuf,
    dir: tempfile::TempDir,
    worker_env: Vec<(String, String)>,
    workers: Mutex<Vec<Worker>>,
    kills: AtomicUsize,
    reclaims_of_dead: AtomicUsize,
    webhook_reclaims_of_dead: AtomicUsize,
}

impl Run {
    fn spawn_worker(&self, slot: usize, life: usize, mode: &'static str) -> Result<Proc> {
        let mut env = self.worker_env.clone();
        env.push(("CLAIM_MODE".into(), mode.into()));
        Proc::spawn(
            &self.bin,
            self.dir.path(),
            &format!("worker-{slot}-{life}"),
            &["worker"],
            &env,
        )
    }

    /// Replaces the slot's process (already stopped) by a new one in `mode`.
    fn respawn(&self, slot: usize, w: &mut Worker, mode: &'static str) -> Result<()> {
        let (events, webhooks) = w.proc.reclaims();
        self.reclaims_of_dead.fetch_add(events, Ordering::SeqCst);
        self.webhook_reclaims_of_dead
            .fetch_add(webhooks, Ordering::SeqCst);
        w.lives += 1;
        w.mode = mode;
        w.proc = self.spawn_worker(slot, w.lives, mode)?;
        Ok(())
    }

    async fn kill_one(&self) -> Result<()> {
        let mut workers = self.workers.lock().await;
        let slot = rand::thread_rng().gen_range(0..workers.len());
        let w = &mut workers[slot];
        w.proc.sigkill().await;
        self.kills.fetch_add(1, Ordering::SeqCst);
        let mode = w.mode;
        self.respawn(slot, w, mode)
    }

    /// Stops half the workers gracefully and starts them again in the other claim mode.
    async fn switch_modes(&self) -> Result<usize> {
        let mut workers = self.workers.lock().await;
        let half = workers.len().div_ceil(2);
        for (slot, w) in workers.iter_mut().enumerate().take(half) {
            w.proc.sigterm().await;
            let other = if w.mode == "lease" {
                "transaction"
            } else {
                "lease"
            };
            self.respawn(slot, w, other)?;
        }
        Ok(half)
    }

    /// Restarts any worker that exited on its own (a crash is a finding: it is reported).
    async fn revive(&self) -> Result<usize> {
        let mut workers = self.workers.lock().await;
        let mut revived = 0;
        for (slot, w) in workers.iter_mut().enumerate() {
            if let Some(status) = w.proc.exited() {
                progress(format!(
                    "{} exited on its own ({status}); restarting it",
                    w.proc.name
                ));
                let mode = w.mode;
                self.respawn(slot, w, mode)?;
                revived += 1;
            }
        }
        Ok(revived)
    }

    /// Stops every worker gracefully; returns the reclaims of all their lives: of events, and
    /// of webhook deliveries.
    async fn stop_all(&self) -> (usize, usize) {
        let mut workers = self.workers.lock().await;
        let mut events = self.reclaims_of_dead.load(Ordering::SeqCst);
        let mut webhooks = self.webhook_reclaims_of_dead.load(Ordering::SeqCst);
        for w in workers.iter_mut() {
            w.proc.sigterm().await;
            let (e, h) = w.proc.reclaims();
            events += e;
            webhooks += h;
        }
        (events, webhooks)
    }
}

/// Starves the API process `pid` of file descriptors for `window`: its soft RLIMIT_NOFILE is
/// lowered to its lowest free descriptor (`prlimit`), so every file it opens meanwhile fails
/// with EMFILE (the sockets and files it holds keep working), and a row naming `job` again is
/// added to the job-change log (applying a row twice is harmless), so that its search index's
/// follower writes within the window. The limit is put back whatever happened.
async fn starve_api(pid: u32, pool: &sqlx::PgPool, job: i64, window: Duration) -> Result<()> {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits"))?;
    let soft = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .context("no \"Max open files\" in /proc/<pid>/limits")?
        .to_string();
    let open: std::collections::BTreeSet<u64> = std::fs::read_dir(format!("/proc/{pid}/fd"))?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    let lowest = (0..).find(|fd| !open.contains(fd)).unwrap_or(0);
    prlimit(pid, &format!("{lowest}:")).await?;
    let named = sqlx::query("INSERT INTO job_changes (job_id) VALUES ($1)")
        .bind(job)
        .execute(pool)
        .await;
    tokio::time::sleep(window).await;
    prlimit(pid, &format!("{soft}:")).await?;
    named.context("adding a row to the job-change log")?;
    Ok(())
}

/// Sets the soft and/or hard RLIMIT_NOFILE of `pid` (`soft:hard`, either may be left out).
async fn prlimit(pid: u32, limits: &str) -> Result<()> {
    let status = tokio::process::Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--nofile={limits}")])
        .status()
        .await
        .context("running prlimit (util-linux)")?;
    if !status.success() {
        bail!("prlimit --pid {pid} --nofile={limits} failed ({status})");
    }
    Ok(())
}

/// How many windows of the index fault a run tries before it counts a fault that no write
/// of the index felt as a failure.
const INDEX_FAULT_TRIES: usize = 3;

/// The API's log lines where writing its search index failed for want of a file descriptor.
fn index_write_failures(log: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("Too many open files"))
        .filter(|l| {
            [
                "search index's",
                "committing the search index",
                "creating the search index",
            ]
            .iter()
            .any(|w| l.contains(w))
        })
        .count()
}

fn default_bin() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("jobboard")))
        .unwrap_or_else(|| PathBuf::from("target/release/jobboard"))
}

fn default_pg_restart() -> Result<String> {
    std::env::var("JOBBOARD_TEST_PG_RESTART").context(
        "JOBBOARD_TEST_PG_RESTART is not set: run through scripts/chaos (which restarts the \
         throwaway test cluster), or give --pg-restart or --no-pg-restart",
    )
}

// ------------------------------------------------------------------------------ the API side

/// The API through HTTP, retrying what a restart of the database or a dropped connection
/// failed; writes carry an Idempotency-Key so that a retry is safe.
struct Api {
    base: String,
    http: reqwest::Client,
}

impl Api {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
        want: u16,
    ) -> Result<Value> {
        let key = uuid::Uuid::new_v4().to_string();
        let deadline = Instant::now() + Duration::from_secs(90);
        let mut last = String::new();
        while Instant::now() < deadline {
            let mut req = self
                .http
                .request(method.clone(), format!("{}{path}", self.base))
                .timeout(Duration::from_secs(15));
            if method != reqwest::Method::GET {
                req = req.header("idempotency-key", &key);
            }
            if let Some(t) = token {
                req = req.bearer_auth(t);
            }
            if let Some(b) = &body {
                req = req.json(b);
            }
            match req.send().await {
                Ok(res) => {
                    let status = res.status().as_u16();
                    let text = res.text().await.unwrap_or_default();
                    if status == want {
                        return Ok(serde_json::from_str(&text).unwrap_or(Value::Null));
                    }
                    if status < 500 && status != 429 && status != 409 {
                        bail!("{method} {path}: {status} {text}");
                    }
                    // 409 idempotency-in-flight: the first try still runs.
                    if status == 409 && !text.contains("idempotency-in-flight") {
                        bail!("{method} {path}: {status} {text}");
                    }
                    last = format!("{status} {text}");
                }
                Err(e) => last = e.to_string(),
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
        bail!("{method} {path} kept failing: {last}")
    }

    /// A new account of `role`: its id, a token, its email.
    async fn user(&self, role: &str, i: usize) -> Result<(i64, String, String)> {
        let email = format!("{role}{i}-{}@chaos.example", uuid::Uuid::new_v4().simple());
        let password = "a long enough passphrase";
        let body = json!({"email": email, "password": password, "name": format!("{role} {i}"), "role": role});
        let u = self
            .call(
                reqwest::Method::POST,
                "/api/auth/register",
                None,
                Some(body),
                201,
            )
            .await?;
        let t = self
            .call(
                reqwest::Method::POST,
                "/api/auth/token",
                None,
                Some(json!({"email": email, "password": password})),
                200,
            )
            .await?;
        let token = t["access_token"]
            .as_str()
            .context("no access_token")?
            .to_string();
        Ok((u["id"].as_i64().context("no user id")?, token, email))
    }
}

// --------------------------------------------------------------------------------- the run

async fn run(opts: Opts) -> Result<bool> {
    let started = Instant::now();
    let bin = opts.bin.clone().unwrap_or_else(default_bin);
    if !bin.exists() {
        bail!(
            "no jobboard binary at {} (build it, or give --bin)",
            bin.display()
        );
    }
    let pg_restart = if opts.no_pg_restart {
        None
    } else {
        Some(match &opts.pg_restart {
            Some(c) => c.clone(),
            None => default_pg_restart()?,
        })
    };
    // A database of its own.
    let db_name = format!("jbchaos_{}", uuid::Uuid::new_v4().simple());
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&opts.pg_url)
        .await
        .with_context(|| format!("cannot connect to {}", opts.pg_url))?;
    sqlx::query(&format!("CREATE DATABASE {db_name}"))
        .execute(&mut admin)
        .await?;
    let mut db_url = url::Url::parse(&opts.pg_url)?;
    db_url.set_path(&db_name);
    let db_url = db_url.to_string();
    let outcome = run_in(&opts, &bin, &db_url, pg_restart, started).await;
    // The database goes whatever happened (a fresh connection: the server may have restarted).
    if let Ok(mut admin) = <sqlx::PgConnection as sqlx::Connection>::connect(&opts.pg_url).await {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {db_name} WITH (FORCE)"))
            .execute(&mut admin)
            .await;
    }
    outcome
}

async fn run_in(
    opts: &Opts,
    bin: &Path,
    db_url: &str,
    pg_restart: Option<String>,
    started: Instant,
) -> Result<bool> {
    let dir = tempfile::Builder::new().prefix("jbchaos-").tempdir()?;
    let smtp = smtp::SmtpServer::start().await;
    let mail = Mail::start(opts.email, &smtp).await?;
    let hooks = hooks::Receivers::start(hooks::Flakiness {
        fail: opts.webhook_fail_share,
        hang: opts.webhook_hang_share,
        hang_for: Duration::from_secs(WEBHOOK_TIMEOUT_SECS + 1),
    })
    .await?;
    let mut common: Vec<(String, String)> = vec![
        ("DATABASE_URL".into(), db_url.into()),
        ("LOG_FORMAT".into(), "json".into()),
        (
            "VISIBILITY_TIMEOUT_SECS".into(),
            VISIBILITY_SECS.to_string(),
        ),
        (
            "EMAIL_SEND_TIMEOUT_SECS".into(),
            SEND_TIMEOUT_SECS.to_string(),
        ),
        // The receivers listen on 127.0.0.1, over http.
        ("WEBHOOK_ALLOW_PRIVATE".into(), "true".into()),
        (
            "WEBHOOK_TIMEOUT_SECS".into(),
            WEBHOOK_TIMEOUT_SECS.to_string(),
        ),
        ("WEBHOOK_RETRY_SECS".into(), WEBHOOK_RETRY_SECS.to_string()),
    ];
    let sqs = match opts.queue {
        QueueArg::Db => None,
        QueueArg::Sqs => {
            let (client, url, dlq) = sqs_queues().await?;
            common.push(("QUEUE".into(), "sqs".into()));
            common.push(("SQS_QUEUE_URL".into(), url.clone()));
            common.push(("SQS_DLQ_URL".into(), dlq));
            common.push(("SQS_TIMEOUT_SECS".into(), "3".into()));
            Some((client, url))
        }
    };

    // The API.
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut api_env = common.clone();
    api_env.push(("BIND_ADDR".into(), format!("127.0.0.1:{port}")));
    api_env.push((
        "JWT_SECRET".into(),
        "chaos-run-secret-of-enough-length-0123456789".into(),
    ));
    // Every new job waits for an operator: each review is a `job.reviewed` per member.
    api_env.push(("JOB_MODERATION".into(), "true".into()));
    // A search index of the run's own, fresh.
    api_env.push((
        "SEARCH_INDEX_DIR".into(),
        dir.path().join("search").display().to_string(),
    ));
    let mut api_proc = Proc::spawn(bin, dir.path(), "api", &["serve"], &api_env)?;
    let api = Api {
        base: format!("http://127.0.0.1:{port}"),
        http: reqwest::Client::new(),
    };
    let ready = Instant::now();
    loop {
        if let Some(status) = api_proc.exited() {
            bail!("the API exited ({status}):\n{}", api_proc.log_text());
        }
        if let Ok(r) = api.http.get(format!("{}/readyz", api.base)).send().await
            && r.status().is_success()
        {
            break;
        }
        if ready.elapsed() > Duration::from_secs(30) {
            bail!("the API did not become ready:\n{}", api_proc.log_text());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // The people: a company of two employers, an operator, one candidate per four status
    // changes.
    progress("registering candidates and applying");
    let (_, employer, _) = api.user("employer", 0).await?;
    let (_, _, second) = api.user("employer", 1).await?;
    let (_, operator, operator_email) = api.user("employer", 2).await?;
    grant_operator(bin, dir.path(), &common, &operator_email).await?;
    let company = api
        .call(
            reqwest::Method::POST,
            "/api/companies",
            Some(&employer),
            Some(json!({"name": "Chaos"})),
            201,
        )
        .await?;
    api.call(
        reqwest::Method::POST,
        &format!("/api/companies/{}/members", company["id"]),
        Some(&employer),
        Some(json!({"email": second})),
        204,
    )
    .await?;
    // Two endpoints that take every type an endpoint can: whatever the company's events, each
    // is delivered to both.
    let mut endpoints: Vec<(i64, &str)> = Vec::new();
    for name in [hooks::STEADY, hooks::FLAKY] {
        let created = api
            .call(
                reqwest::Method::POST,
                &format!("/api/companies/{}/webhooks", company["id"]),
                Some(&employer),
                Some(json!({"url": hooks.url(name), "events": jobboard::domain::webhook::EVENT_TYPES})),
                201,
            )
            .await?;
        endpoints.push((created["id"].as_i64().context("no endpoint id")?, name));
    }
    let new_job = |title: String, expires_at: Option<String>| {
        let mut job = json!({"company_id": company["id"], "title": title,
            "description": "Under fire", "location": "Anywhere", "remote": true,
            "employment_type": "full_time"});
        if let Some(at) = expires_at {
            job["expires_at"] = json!(at);
        }
        let (api, employer, operator) = (&api, &employer, &operator);
        async move {
            let job = api
                .call(
                    reqwest::Method::POST,
                    "/api/jobs",
                    Some(employer),
                    Some(job),
                    201,
                )
                .await?;
            let id = job["id"].as_i64().context("no job id")?;
            api.call(
                reqwest::Method::POST,
                &format!("/api/admin/jobs/{id}/approve"),
                Some(operator),
                None,
                200,
            )
            .await?;
            anyhow::Ok(id)
        }
    };
    let job_id = new_job("Engineer".into(), None).await?;
    // Jobs that expire 30–45 s from now: the workers' upkeep (every 30 s) writes their notices
    // at once and their expiry during the run. One more is rejected.
    for i in 0..opts.notice_jobs {
        let at = chrono::Utc::now()
            + chrono::Duration::seconds(30 + (15 * i / opts.notice_jobs.max(1)) as i64);
        new_job(format!("Lapsing {i}"), Some(at.to_rfc3339())).await?;
    }
    let rejected = api
        .call(
            reqwest::Method::POST,
            "/api/jobs",
            Some(&employer),
            Some(
                json!({"company_id": company["id"], "title": "Unclear", "description": "?",
                "location": "Anywhere", "remote": true, "employment_type": "full_time"}),
            ),
            201,
        )
        .await?;
    api.call(
        reqwest::Method::POST,
        &format!("/api/admin/jobs/{}/reject", rejected["id"]),
        Some(&operator),
        Some(json!({"reason": "Please say more."})),
        200,
    )
    .await?;
    let apps_wanted = opts.events.div_ceil(4);
    let applications: Vec<i64> = futures::stream::iter(0..apps_wanted)
        .map(|i| {
            let api = &api;
            async move {
                let (_, token, _) = api.user("candidate", i + 1).await?;
                let a = api
                    .call(
                        reqwest::Method::POST,
                        &format!("/api/jobs/{job_id}/applications"),
                        Some(&token),
                        Some(json!({})),
                        201,
                    )
                    .await?;
                a["id"].as_i64().context("no application id")
            }
        })
        .buffer_unordered(4)
        .collect::<Vec<Result<i64>>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;

    // The applications move into the hour that has just ended, so that the workers' upkeep
    // writes each member's `applications.digest` of it during the run.
    {
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect(db_url)
            .await?;
        sqlx::query(
            "UPDATE applications SET created_at = \
             date_trunc('hour', now() - interval '2 minutes') - interval '30 minutes'",
        )
        .execute(&pool)
        .await?;
    }

    // The workers, and the trouble.
    let mut worker_env = common.clone();
    worker_env.extend(mail.env(&smtp));
    worker_env.extend([
        ("EMAIL_FROM".into(), mail.from.clone()),
        ("WORKER_HTTP_ADDR".into(), "127.0.0.1:0".into()),
        ("MAX_ATTEMPTS".into(), "50".into()),
        ("SHUTDOWN_GRACE_SECS".into(), "5".into()),
    ]);
    let run = Arc::new(Run {
        bin: bin.to_path_buf(),
        dir,
        worker_env,
        workers: Mutex::new(Vec::new()),
        kills: AtomicUsize::new(0),
        reclaims_of_dead: AtomicUsize::new(0),
        webhook_reclaims_of_dead: AtomicUsize::new(0),
    });
    {
        let mut workers = run.workers.lock().await;
        for slot in 0..opts.workers {
            let mode = match opts.mode {
                ModeArg::Lease => "lease",
                ModeArg::Transaction => "transaction",
                ModeArg::Mixed if slot % 2 == 0 => "lease",
                ModeArg::Mixed => "transaction",
            };
            workers.push(Worker {
                proc: run.spawn_worker(slot, 0, mode)?,
                mode,
                lives: 0,
            });
        }
    }
    smtp.set_chaos(smtp::Chaos {
        refuse: opts.refuse_share,
        stall: opts.stall_share,
        stall_for: Duration::from_secs(SEND_TIMEOUT_SECS + 1),
    });
    progress(format!(
        "driving {} status changes; {} workers ({:?}), queue {:?}",
        applications.len() * 4,
        opts.workers,
        opts.mode,
        opts.queue
    ));

    let moves_done = Arc::new(AtomicUsize::new(0));
    let driving = Arc::new(AtomicBool::new(true));
    let total_moves = applications.len() * 4;

    // Kills every 0.5–2 s, the database restart at a third of the moves, the index fault at
    // three fifths, the mode switch at two thirds.
    let api_pid = api_proc.child.id().context("the API process has no pid")?;
    let chaos = {
        let (run, moves_done, driving) = (run.clone(), moves_done.clone(), driving.clone());
        let (smtp, mut mail_stall) = (smtp.clone(), Some(opts.mail_stall_secs).filter(|s| *s > 0));
        let index_fault = Some(Duration::from_millis(opts.index_fault_ms)).filter(|d| !d.is_zero());
        let api_log = api_proc.log.clone();
        let log_pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy(db_url)?;
        tokio::spawn(async move {
            let (mut restarted, mut switched, mut starved) = (0usize, 0usize, 0usize);
            let mut restart = pg_restart;
            while driving.load(Ordering::SeqCst) {
                let pause = rand::thread_rng().gen_range(500..2000);
                tokio::time::sleep(Duration::from_millis(pause)).await;
                run.revive().await?;
                run.kill_one().await?;
                let done = moves_done.load(Ordering::SeqCst);
                if done * 3 >= total_moves
                    && let Some(cmd) = restart.take()
                {
                    progress(format!("restarting PostgreSQL: {cmd}"));
                    let status = tokio::process::Command::new("sh")
                        .args(["-c", &cmd])
                        .status()
                        .await?;
                    if !status.success() {
                        bail!("restarting PostgreSQL failed ({status}): {cmd}");
                    }
                    restarted += 1;
                }
                if done * 2 >= total_moves
                    && let Some(secs) = mail_stall.take()
                {
                    progress(format!(
                        "the SMTP listener stops greeting new sessions for {secs} s"
                    ));
                    smtp.refuse_sessions(Some(smtp::SessionRefusal::Silent));
                    let smtp = smtp.clone();
                    tokio::spawn(async move {
                        tokio::time::sleep(Duration::from_secs(secs)).await;
                        smtp.refuse_sessions(None);
                        progress("the SMTP listener greets new sessions again");
                    });
                }
                // A window can fall where the follower fails first at reading the database
                // (a connection to open) and waits out its backoff: then another window, up
                // to INDEX_FAULT_TRIES, until a write of the index has failed in one.
                if done * 5 >= total_moves * 3
                    && let Some(window) = index_fault
                    && starved < INDEX_FAULT_TRIES
                    && index_write_failures(&std::fs::read_to_string(&api_log).unwrap_or_default())
                        == 0
                {
                    progress(format!(
                        "the API process cannot open a file for {} ms while its search index writes",
                        window.as_millis()
                    ));
                    starve_api(api_pid, &log_pool, job_id, window).await?;
                    progress("the API process may open files again");
                    starved += 1;
                }
                if done * 3 >= total_moves * 2 && switched == 0 {
                    switched = run.switch_modes().await?;
                    progress(format!(
                        "switched {switched} workers to the other claim mode"
                    ));
                }
            }
            anyhow::Ok((restarted, switched, starved))
        })
    };

    // Copies of committed events, up to the duplicate share of what has been driven.
    let injections = Arc::new(AtomicUsize::new(0));
    let injector = {
        let (injections, moves_done, driving) =
            (injections.clone(), moves_done.clone(), driving.clone());
        let share = opts.duplicate_share;
        let db_url = db_url.to_string();
        tokio::spawn(async move {
            let pool = sqlx::postgres::PgPoolOptions::new()
                .max_connections(2)
                .connect_lazy(&db_url)?;
            let mut failures = 0usize;
            while driving.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(100)).await;
                let due = (moves_done.load(Ordering::SeqCst) as f64 * share) as usize;
                while injections.load(Ordering::SeqCst) < due {
                    match inject(&pool, sqs.as_ref()).await {
                        Ok(true) => {
                            injections.fetch_add(1, Ordering::SeqCst);
                        }
                        // Nothing committed yet: later.
                        Ok(false) => break,
                        // The database restarting, say: said once in a while, tried again.
                        Err(e) => {
                            failures += 1;
                            if failures % 20 == 1 {
                                progress(format!("injecting a copy failed: {e:#}"));
                            }
                            break;
                        }
                    }
                }
            }
            anyhow::Ok(())
        })
    };

    // The status changes, each application's in order, several applications at once, at
    // `--rate` in all.
    let pace = Mutex::new(tokio::time::interval(Duration::from_secs_f64(
        1.0 / opts.rate.max(0.1),
    )));
    let moving = async {
        let moved: Vec<Result<()>> = futures::stream::iter(applications.clone())
            .map(|app| {
                let (api, employer, moves_done, pace) =
                    (&api, &employer, moves_done.clone(), &pace);
                async move {
                    for to in ["reviewing", "interview", "offered", "hired"] {
                        pace.lock().await.tick().await;
                        api.call(
                            reqwest::Method::PATCH,
                            &format!("/api/applications/{app}"),
                            Some(employer),
                            Some(json!({"status": to})),
                            200,
                        )
                        .await?;
                        moves_done.fetch_add(1, Ordering::SeqCst);
                    }
                    anyhow::Ok(())
                }
            })
            .buffer_unordered(8)
            .collect()
            .await;
        driving.store(false, Ordering::SeqCst);
        moved
    };
    // A job posted (and approved) about every second while the status changes go on, the
    // index fault's window included: each must be searchable at the end.
    let posting = async {
        let mut posted = Vec::new();
        while driving.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_secs(1)).await;
            posted.push(new_job(format!("Posted {}", posted.len()), None).await?);
        }
        anyhow::Ok(posted)
    };
    let (moved, posted) = tokio::join!(moving, posting);
    let (pg_restarts, mode_switches, index_faults) = chaos.await??;
    injector.await??;
    moved.into_iter().collect::<Result<Vec<()>>>()?;
    let posted = posted?;
    progress("status changes driven; the trouble stops, waiting for the queue to drain");
    smtp.set_chaos(smtp::Chaos {
        refuse: 0.0,
        stall: 0.0,
        stall_for: Duration::ZERO,
    });
    hooks.calm();
    run.revive().await?;

    // Drained: every event emailed or dead-lettered, and nothing left in the queue.
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(2)
        .connect(db_url)
        .await?;
    // Every committed event, with its type: the status changes (their history rows) and every
    // other event (its record), the upkeep's included, which keeps writing while the run drains.
    let committed = async |pool: &sqlx::PgPool| -> Result<HashMap<String, String>> {
        Ok(sqlx::query_as::<_, (String, String)>(
            "SELECT event_id, type FROM events UNION SELECT event_id, \
             'application.status_changed' FROM application_history WHERE old_status IS NOT NULL",
        )
        .fetch_all(pool)
        .await?
        .into_iter()
        .collect())
    };
    let deadline = Instant::now() + Duration::from_secs(opts.drain_timeout_secs);
    let mut dead = Vec::new();
    for round in 0usize.. {
        let events = committed(&pool).await.unwrap_or_default();
        let emailed = mail.per_event(&smtp).await?;
        if round % 4 == 0 {
            dead = dead_letters(bin, &common).await.unwrap_or(dead);
        }
        let open = events
            .keys()
            .filter(|e| !emailed.contains_key(*e) && !dead.contains(e))
            .count();
        let queued: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM outbox")
            .fetch_one(&pool)
            .await
            .unwrap_or(1);
        // The lapsing jobs' expiries are still to be written by the upkeep.
        let lapsing: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs WHERE status = 'open' AND title LIKE 'Lapsing %'",
        )
        .fetch_one(&pool)
        .await
        .unwrap_or(1);
        let undelivered: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'")
                .fetch_one(&pool)
                .await
                .unwrap_or(1);
        if open == 0 && queued == 0 && lapsing == 0 && undelivered == 0 {
            break;
        }
        if Instant::now() > deadline {
            progress(format!(
                "not drained within {} s: {open} events open, {queued} in the outbox, \
                 {lapsing} jobs not expired yet, {undelivered} webhook deliveries pending",
                opts.drain_timeout_secs
            ));
            break;
        }
        run.revive().await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    // Copies still in flight settle before the count.
    tokio::time::sleep(Duration::from_secs(VISIBILITY_SECS)).await;
    let (reclaims, webhook_reclaims) = run.stop_all().await;
    // Every job posted, the first one included, is open: the search must find each (a search
    // waits for the API's index to apply every change committed before it began).
    let mut wanted: Vec<i64> = posted.clone();
    wanted.push(job_id);
    let mut unsearchable: Vec<i64> = Vec::new();
    for ids in wanted.chunks(100) {
        let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let page = api
            .call(
                reqwest::Method::GET,
                &format!("/api/jobs?ids={list}&page_size=100"),
                None,
                None,
                200,
            )
            .await?;
        let found: Vec<i64> = page["items"]
            .as_array()
            .context("no items in a search's answer")?
            .iter()
            .filter_map(|j| j["id"].as_i64())
            .collect();
        unsearchable.extend(ids.iter().filter(|id| !found.contains(id)));
    }
    api_proc.sigterm().await;
    let api_log = api_proc.log_text();
    let index_write_failures = index_write_failures(&api_log);

    let emailed = mail.per_event(&smtp).await?;
    let events = committed(&pool).await?;
    let lost = events
        .keys()
        .filter(|e| !emailed.contains_key(*e) && !dead.contains(e))
        .count();
    let duplicated: usize = emailed.values().map(|n| n - 1).sum();
    let strangers = emailed.keys().filter(|e| !events.contains_key(*e)).count();
    let hooked = webhook_figures(&pool, &hooks, &endpoints).await?;
    // Type by type: the promise does not depend on what an event is about.
    let mut by_type: std::collections::BTreeMap<&str, [usize; 4]> = Default::default();
    for (event, kind) in &events {
        let row = by_type.entry(kind.as_str()).or_default();
        row[0] += 1;
        let sent = emailed.get(event).copied().unwrap_or(0);
        row[1] += sent;
        if sent == 0 && !dead.contains(event) {
            row[2] += 1;
        }
        row[3] += sent.saturating_sub(1);
    }
    for (kind, [n, sent, lost, repeats]) in &by_type {
        println!("  {kind:<28} events {n:>5} emails {sent:>5} lost {lost} duplicated {repeats}");
    }
    let (refused, stalled) = smtp.troubles();
    let result = json!({
        "queue": format!("{:?}", opts.queue).to_lowercase(),
        "mode": format!("{:?}", opts.mode).to_lowercase(),
        "workers": opts.workers,
        "events": events.len(),
        "email": format!("{:?}", opts.email).to_lowercase(),
        "emails": emailed.values().sum::<usize>(),
        "lost": lost,
        "duplicated": duplicated,
        "dead_letters": dead.len(),
        "kills": run.kills.load(Ordering::SeqCst),
        "injections": injections.load(Ordering::SeqCst),
        "reclaims": reclaims,
        "refused": refused,
        "stalled": stalled,
        "sessions_never_greeted": smtp.sessions_refused(),
        "pg_restarts": pg_restarts,
        "mode_switches": mode_switches,
        "jobs_posted": wanted.len(),
        "unsearchable": unsearchable.len(),
        "index_faults": index_faults,
        "index_write_failures": index_write_failures,
        "unknown_event_emails": strangers,
        "webhooks": {
            "facts": hooked.facts,
            "endpoints": endpoints.len(),
            "deliveries": hooked.deliveries,
            "missing": hooked.missing,
            "undelivered": hooked.undelivered.len(),
            "requests": hooked.requests,
            "repeats": hooked.repeats,
            "repeats_after_2xx": hooked.repeats_after_2xx,
            "failed_attempts": hooked.failed_attempts,
            "reclaims": webhook_reclaims,
            "answered_500": hooked.answered_500,
            "hung": hooked.hung,
        },
        "by_type": by_type.iter().map(|(kind, [n, sent, lost, repeats])| {
            (kind.to_string(), json!({"events": n, "emails": sent, "lost": lost, "duplicated": repeats}))
        }).collect::<serde_json::Map<String, Value>>(),
        "seconds": (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    });
    println!(
        "chaos queue={} mode={} email={} workers={}: events {} emails {} lost {} duplicated {} dead letters {} \
         kills {} injections {} reclaims {} refused {} stalled {} never greeted {} pg restarts {} mode switches {} \
         jobs posted {} unsearchable {} index faults {} (index writes failed {}) \
         webhooks: deliveries {} undelivered {} missing {} requests {} repeats {} failed attempts {} \
         reclaims {} (500s {} hangs {}) seconds {}",
        result["queue"].as_str().unwrap_or(""),
        result["mode"].as_str().unwrap_or(""),
        result["email"].as_str().unwrap_or(""),
        opts.workers,
        result["events"],
        result["emails"],
        lost,
        duplicated,
        result["dead_letters"],
        result["kills"],
        result["injections"],
        reclaims,
        refused,
        stalled,
        result["sessions_never_greeted"],
        pg_restarts,
        mode_switches,
        wanted.len(),
        unsearchable.len(),
        index_faults,
        index_write_failures,
        hooked.deliveries,
        hooked.undelivered.len(),
        hooked.missing,
        hooked.requests,
        hooked.repeats,
        hooked.failed_attempts,
        webhook_reclaims,
        hooked.answered_500,
        hooked.hung,
        result["seconds"],
    );
    if let Some(path) = &opts.json {
        std::fs::write(path, serde_json::to_string_pretty(&result)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    let mut ok = true;
    if lost > 0 {
        eprintln!("chaos: FAILED: {lost} events have neither an email nor a dead letter");
        ok = false;
    }
    if duplicated > reclaims {
        eprintln!("chaos: FAILED: {duplicated} duplicate emails but only {reclaims} reclaims");
        ok = false;
    }
    // Every type the run makes must have been written, or it proved nothing of that type.
    let mut expected = vec![
        "application.status_changed",
        "application.submitted",
        "applications.digest",
        "job.reviewed",
    ];
    if opts.notice_jobs > 0 {
        expected.extend(["job.expiring", "job.expired"]);
    }
    for kind in expected {
        if !by_type.contains_key(kind) {
            eprintln!("chaos: FAILED: no {kind} event was written");
            ok = false;
        }
    }
    if !unsearchable.is_empty() {
        eprintln!(
            "chaos: FAILED: {} of {} jobs posted are not found by the search: {unsearchable:?}",
            unsearchable.len(),
            wanted.len()
        );
        ok = false;
    }
    // The index fault must have failed a write of the index, or it proved nothing.
    if index_faults > 0 && index_write_failures == 0 {
        eprintln!(
            "chaos: FAILED: the API's search index never failed a write in the index fault's \
             window (no \"Too many open files\" from it in api.log); what the API logged of it:"
        );
        for line in api_log.lines().filter(|l| l.contains("search index")) {
            eprintln!("  {line}");
        }
        ok = false;
    }
    if strangers > 0 {
        eprintln!("chaos: FAILED: {strangers} emails for events that were never committed");
        ok = false;
    }
    if hooked.missing > 0 {
        eprintln!(
            "chaos: FAILED: {} (event, endpoint) pairs have no webhook delivery",
            hooked.missing
        );
        ok = false;
    }
    if !hooked.undelivered.is_empty() {
        eprintln!(
            "chaos: FAILED: {} webhook deliveries never got a 2xx: {:?}",
            hooked.undelivered.len(),
            hooked.undelivered.iter().take(10).collect::<Vec<_>>()
        );
        ok = false;
    }
    let allowed = hooked.failed_attempts as usize + webhook_reclaims;
    if hooked.repeats > allowed {
        eprintln!(
            "chaos: FAILED: {} webhook requests repeated, but only {} attempts recorded as \
             failed and {webhook_reclaims} reclaims",
            hooked.repeats, hooked.failed_attempts
        );
        ok = false;
    }
    if hooked.repeats_after_2xx > webhook_reclaims {
        eprintln!(
            "chaos: FAILED: {} webhook deliveries repeated after a 2xx, but only \
             {webhook_reclaims} reclaims",
            hooked.repeats_after_2xx
        );
        ok = false;
    }
    if hooked.facts == 0 || hooked.answered_500 == 0 {
        eprintln!(
            "chaos: FAILED: the webhooks proved nothing ({} facts, {} answered 500)",
            hooked.facts, hooked.answered_500
        );
        ok = false;
    }
    Ok(ok)
}

/// What came of the webhook deliveries.
struct HookFigures {
    /// Facts an endpoint that takes every type must get: each status change, and the fact of
    /// every other event of a type an endpoint can receive (one per member share one).
    facts: usize,
    /// Delivery rows, over both endpoints.
    deliveries: usize,
    /// (fact, endpoint) pairs without a delivery row.
    missing: usize,
    /// Deliveries whose receiver never answered 2xx to their `webhook-id`.
    undelivered: Vec<String>,
    /// Requests the receivers got, and those beyond the first per `webhook-id`.
    requests: usize,
    repeats: usize,
    /// Requests with a `webhook-id` its receiver had already answered 2xx.
    repeats_after_2xx: usize,
    /// Attempts recorded without a 2xx: each may repeat its delivery.
    failed_attempts: i64,
    answered_500: usize,
    hung: usize,
}

/// Counts the webhook deliveries against what the receivers saw.
async fn webhook_figures(
    pool: &sqlx::PgPool,
    hooks: &hooks::Receivers,
    endpoints: &[(i64, &str)],
) -> Result<HookFigures> {
    let mut facts: std::collections::HashSet<String> =
        sqlx::query_scalar("SELECT event_id FROM application_history WHERE old_status IS NOT NULL")
            .fetch_all(pool)
            .await?
            .into_iter()
            .collect();
    let records: Vec<String> = sqlx::query_scalar("SELECT body FROM events")
        .fetch_all(pool)
        .await?;
    for body in records {
        let event = jobboard::domain::event::parse_event(&body)
            .map_err(|e| anyhow::anyhow!("an event record does not parse: {e:?}"))?;
        if let Some(fact) = jobboard::domain::webhook::fact(&event) {
            facts.insert(fact.key);
        }
    }
    let rows: Vec<(String, i64, String)> =
        sqlx::query_as("SELECT webhook_id, endpoint_id, event_id FROM webhook_deliveries")
            .fetch_all(pool)
            .await?;
    let failed_attempts: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM webhook_attempts WHERE status IS NULL OR status NOT BETWEEN 200 AND 299",
    )
    .fetch_one(pool)
    .await?;
    let (answered_500, hung) = hooks.troubles();
    let mut figures = HookFigures {
        facts: facts.len(),
        deliveries: rows.len(),
        missing: 0,
        undelivered: Vec::new(),
        requests: 0,
        repeats: 0,
        repeats_after_2xx: 0,
        failed_attempts,
        answered_500,
        hung,
    };
    for (endpoint, name) in endpoints {
        let seen = hooks.seen(name);
        let mine: HashMap<&str, &str> = rows
            .iter()
            .filter(|(_, e, _)| e == endpoint)
            .map(|(webhook_id, _, fact)| (fact.as_str(), webhook_id.as_str()))
            .collect();
        figures.missing += facts
            .iter()
            .filter(|f| !mine.contains_key(f.as_str()))
            .count();
        for webhook_id in mine.values() {
            if seen.get(*webhook_id).is_none_or(|s| s.answered_2xx == 0) {
                figures.undelivered.push(format!("{name} {webhook_id}"));
            }
        }
        for s in seen.values() {
            figures.requests += s.requests;
            figures.repeats += s.requests.saturating_sub(1);
            figures.repeats_after_2xx += s.answered_2xx.saturating_sub(1);
        }
    }
    Ok(figures)
}

/// Where the workers send, and how the run counts what was accepted.
struct Mail {
    email: EmailArg,
    /// `EMAIL_FROM`; with SES unique to the run, so that its messages are told from others
    /// on the shared test server.
    from: String,
}

impl Mail {
    async fn start(email: EmailArg, _smtp: &smtp::SmtpServer) -> Result<Mail> {
        let from = match email {
            EmailArg::Smtp => "jobs@chaos.example".to_string(),
            EmailArg::Ses => {
                // The sender's domain, verified; a second run finds it there already.
                let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
                let ses = aws_sdk_sesv2::Client::new(&shared);
                if let Err(e) = ses
                    .create_email_identity()
                    .email_identity("chaos.example")
                    .send()
                    .await
                {
                    let text = aws_sdk_sesv2::error::DisplayErrorContext(&e).to_string();
                    anyhow::ensure!(
                        text.contains("AlreadyExists"),
                        "verifying chaos.example: {text}"
                    );
                }
                format!("jobs-{}@chaos.example", uuid::Uuid::new_v4().simple())
            }
        };
        Ok(Mail { email, from })
    }

    fn env(&self, smtp: &smtp::SmtpServer) -> Vec<(String, String)> {
        match self.email {
            EmailArg::Smtp => vec![
                ("EMAIL_BACKEND".into(), "smtp".into()),
                ("SMTP_URL".into(), smtp.url()),
            ],
            EmailArg::Ses => vec![("EMAIL_BACKEND".into(), "ses".into())],
        }
    }

    /// Emails accepted per event id: the SMTP listener's, or the messages from this run's
    /// sender in the test server's SES store (`GET /moto-api/data.json`, `ses.RawMessage`).
    async fn per_event(&self, smtp: &smtp::SmtpServer) -> Result<HashMap<String, usize>> {
        let mut counts = HashMap::new();
        match self.email {
            EmailArg::Smtp => {
                for m in smtp.mails() {
                    *counts.entry(m.event_id()).or_insert(0) += 1;
                }
            }
            EmailArg::Ses => {
                let server = std::env::var("AWS_ENDPOINT_URL").context("AWS_ENDPOINT_URL")?;
                let data: Value = reqwest::get(format!("{server}/moto-api/data.json"))
                    .await?
                    .json()
                    .await?;
                let header = "X-Jobboard-Event-Id: ";
                for m in data["ses"]["RawMessage"].as_array().into_iter().flatten() {
                    if m["source"].as_str() != Some(self.from.as_str()) {
                        continue;
                    }
                    let raw = m["raw_data"].as_str().unwrap_or("");
                    if let Some(at) = raw.find(header) {
                        let id = raw[at + header.len()..].lines().next().unwrap_or("").trim();
                        *counts.entry(id.to_string()).or_insert(0) += 1;
                    }
                }
            }
        }
        Ok(counts)
    }
}

/// Makes the account with `email` an operator (`jobboard admin grant`).
async fn grant_operator(
    bin: &Path,
    dir: &Path,
    env: &[(String, String)],
    email: &str,
) -> Result<()> {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(["admin", "grant", email]).current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await?;
    if !out.status.success() {
        bail!(
            "admin grant failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// The event ids `jobboard dlq list --json` reports.
async fn dead_letters(bin: &Path, env: &[(String, String)]) -> Result<Vec<String>> {
    let mut cmd = tokio::process::Command::new(bin);
    cmd.args(["dlq", "list", "--json"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().await?;
    if !out.status.success() {
        bail!("dlq list failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            serde_json::from_str::<Value>(l).ok()?["event_id"]
                .as_str()
                .map(str::to_string)
        })
        .collect())
}

/// Re-enqueues a copy of a random committed event (a status change, or any other event of its
/// record in `events`); false when there is none yet.
async fn inject(pool: &sqlx::PgPool, sqs: Option<&(aws_sdk_sqs::Client, String)>) -> Result<bool> {
    type Row = (
        String,
        Option<i64>,
        Option<String>,
        Option<String>,
        chrono::DateTime<chrono::Utc>,
        Option<String>,
    );
    let row: Option<Row> = sqlx::query_as(
        "SELECT * FROM (SELECT event_id, application_id, old_status, new_status, at, \
         NULL AS body FROM application_history WHERE old_status IS NOT NULL \
         UNION ALL SELECT event_id, NULL, NULL, NULL, created_at, body FROM events) e \
         ORDER BY random() LIMIT 1",
    )
    .fetch_optional(pool)
    .await?;
    let Some((event_id, application_id, old, new, at, body)) = row else {
        return Ok(false);
    };
    let status = |s: Option<String>| {
        let s = s.context("a status change without its statuses")?;
        jobboard::domain::ApplicationStatus::parse(&s)
            .with_context(|| format!("a stored status {s:?}"))
    };
    let event = match body {
        Some(body) => jobboard::domain::event::parse_event(&body)
            .map_err(|e| anyhow::anyhow!("a stored event: {}", e.reason))?,
        None => jobboard::domain::event::Event {
            event_id: event_id.clone(),
            occurred_at: at,
            kind: jobboard::domain::event::EventKind::StatusChanged {
                application_id: application_id
                    .context("a status change without its application")?,
                old_status: status(old)?,
                new_status: status(new)?,
            },
        },
    };
    let application_id = event.kind.application_id();
    let body = event.to_json();
    match sqs {
        None => {
            sqlx::query(
                "INSERT INTO outbox (event_id, application_id, body, created_at, visible_at) \
                 VALUES ($1, $2, $3, now(), CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT))",
            )
            .bind(&event_id)
            .bind(application_id)
            .bind(&body)
            .execute(pool)
            .await?;
        }
        Some((client, url)) => {
            client
                .send_message()
                .queue_url(url)
                .message_body(body)
                .send()
                .await?;
        }
    }
    Ok(true)
}

/// A queue and its DLQ on the SQS of the AWS environment (`AWS_ENDPOINT_URL` for a local one).
async fn sqs_queues() -> Result<(aws_sdk_sqs::Client, String, String)> {
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_sqs::Client::new(&config);
    let name = format!("jbchaos-{}", uuid::Uuid::new_v4().simple());
    let dlq = client
        .create_queue()
        .queue_name(format!("{name}-dlq"))
        .send()
        .await?;
    let dlq = dlq.queue_url().context("no DLQ URL")?.to_string();
    let url = client.create_queue().queue_name(name).send().await?;
    let url = url.queue_url().context("no queue URL")?.to_string();
    Ok((client, url, dlq))
}
