//! Helpers shared by every part of the benchmark: fresh PostgreSQL databases, child processes
//! that are stopped when dropped, peak RSS, the wrk and pgbench runners, Prometheus scraping and
//! the failure convention of a [`Section`].
//!
//! Failure convention: a scenario that fails adds a row whose cells say `FAILED` and an entry to
//! the section's `json["failures"]` array ([`record_failure`]); `main` prints every failure and
//! exits non-zero when any section has one. A missed target is not a failure.

use crate::report::Section;
use anyhow::{Context, Result, bail};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Seek, SeekFrom};
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// wrk threads: the machine the targets were set for has two cores.
pub const WRK_THREADS: u32 = 2;
/// Seconds of load before every measured run (not measured).
pub const WARMUP_SECS: u64 = 1;
/// Connection levels of the load runs.
pub const CONN_LEVELS: [u32; 3] = [16, 64, 256];
/// PostgreSQL here allows 100 connections; pgbench stays below with room for the others.
pub const MAX_PG_CLIENTS: u32 = 90;

// ------------------------------------------------------------------------------ databases

/// A database of its own on the server of an admin URL, dropped (`WITH (FORCE)`) when this value
/// is dropped.
pub struct FreshDb {
    admin_url: String,
    pub name: String,
    /// The URL of the new database.
    pub url: String,
    dropped: bool,
}

impl FreshDb {
    /// Creates `jbbench_<uuid>` on the server of `admin_url` (a URL whose user may create
    /// databases).
    pub async fn create(admin_url: &str) -> Result<FreshDb> {
        let name = format!("jbbench_{}", uuid::Uuid::new_v4().simple());
        let mut admin = pg_connect(admin_url).await?;
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&mut admin)
            .await
            .with_context(|| format!("cannot create the database {name}"))?;
        let mut url = url::Url::parse(admin_url)
            .with_context(|| format!("--pg-url {admin_url:?} is not a URL"))?;
        url.set_path(&name);
        Ok(FreshDb {
            admin_url: admin_url.to_string(),
            name,
            url: url.to_string(),
            dropped: false,
        })
    }

    /// A connection pool on the new database.
    pub async fn pool(&self, max: u32) -> Result<sqlx::PgPool> {
        sqlx::postgres::PgPoolOptions::new()
            .max_connections(max)
            .acquire_timeout(Duration::from_secs(30))
            .connect(&self.url)
            .await
            .with_context(|| format!("cannot connect to the database {}", self.name))
    }

    /// Leaves the database in place when this value is dropped (for a look afterwards).
    pub fn keep(mut self) -> String {
        self.dropped = true;
        self.url.clone()
    }

    /// Drops the database now, reporting any error.
    pub async fn drop_now(mut self) -> Result<()> {
        self.dropped = true;
        drop_database(&self.admin_url, &self.name).await
    }
}

impl Drop for FreshDb {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        // Not dropped explicitly (an early return or an error): drop it from a thread of its
        // own, since this may run inside the async runtime.
        let (admin, name) = (self.admin_url.clone(), self.name.clone());
        let done = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(drop_database(&admin, &name))
        })
        .join();
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => eprintln!("bench: could not drop database {}: {e:#}", self.name),
            Err(_) => eprintln!("bench: could not drop database {}", self.name),
        }
    }
}

async fn drop_database(admin_url: &str, name: &str) -> Result<()> {
    let mut admin = pg_connect(admin_url).await?;
    sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        .execute(&mut admin)
        .await
        .with_context(|| format!("cannot drop the database {name}"))?;
    Ok(())
}

/// One connection to `url`.
pub async fn pg_connect(url: &str) -> Result<sqlx::PgConnection> {
    use sqlx::Connection;
    sqlx::PgConnection::connect(url)
        .await
        .with_context(|| format!("cannot connect to PostgreSQL at {}", redact(url)))
}

/// `url` with its password replaced by `***`.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

// ------------------------------------------------------------------------- child processes

/// The configuration variables of `jobboard` itself (and `RUST_LOG`): never inherited by a
/// child, so that the caller's shell cannot change what a scenario runs.
fn jobboard_vars() -> Vec<String> {
    let mut vars = jobboard::config::variable_names();
    vars.push("RUST_LOG".to_string());
    vars
}

/// A child process with its output in a log file of its own temporary folder (also its working
/// directory). Dropping it stops it: SIGTERM, then SIGKILL after 15 s.
pub struct Child {
    name: String,
    child: std::process::Child,
    pub pid: u32,
    pub log: PathBuf,
    dir: tempfile::TempDir,
}

impl Child {
    /// Starts `program args…` with the caller's environment minus jobboard's own variables,
    /// plus `env`.
    pub fn spawn(
        name: &str,
        program: &Path,
        args: &[&str],
        env: &[(&str, String)],
    ) -> Result<Child> {
        let dir = tempfile::Builder::new()
            .prefix("jbbench-")
            .tempdir()
            .context("cannot create a temporary folder")?;
        let log = dir.path().join(format!("{name}.log"));
        let out = std::fs::File::create(&log)
            .with_context(|| format!("cannot create {}", log.display()))?;
        let err = out.try_clone()?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        for var in jobboard_vars() {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {} ({name})", program.display()))?;
        Ok(Child {
            name: name.to_string(),
            pid: child.id(),
            child,
            log,
            dir,
        })
    }

    /// The folder the child runs in (removed when this value is dropped).
    #[allow(dead_code)] // not every part needs it
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Waits until a GET of `url` answers 200, for up to `timeout`; an error names the last
    /// answer and shows the end of the child's log.
    pub async fn wait_ready(&mut self, url: &str, timeout: Duration) -> Result<()> {
        let client = http_client();
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait()? {
                bail!(
                    "{} exited ({status}) before {url} answered\n{}",
                    self.name,
                    self.log_tail(30)
                );
            }
            let last = match client.get(url).timeout(Duration::from_secs(2)).send().await {
                Ok(res) if res.status().is_success() => return Ok(()),
                Ok(res) => format!("status {}", res.status()),
                Err(e) => format!("{e}"),
            };
            if Instant::now() >= deadline {
                bail!(
                    "{} did not answer 200 on {url} within {} s (last: {last})\n{}",
                    self.name,
                    timeout.as_secs(),
                    self.log_tail(30)
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// An error (with the log's end) if the child has exited.
    pub fn check_running(&mut self) -> Result<()> {
        match self.child.try_wait()? {
            None => Ok(()),
            Some(status) => bail!("{} exited ({status})\n{}", self.name, self.log_tail(30)),
        }
    }

    /// The last `lines` lines of the child's log (at most 64 KiB are read).
    pub fn log_tail(&self, lines: usize) -> String {
        let read = || -> std::io::Result<String> {
            let mut f = std::fs::File::open(&self.log)?;
            let len = f.metadata()?.len();
            f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)))?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf)?;
            Ok(String::from_utf8_lossy(&buf).into_owned())
        };
        match read() {
            Ok(text) => {
                let all: Vec<&str> = text.lines().collect();
                let tail = all[all.len().saturating_sub(lines)..].join("\n");
                format!("--- last lines of {} ---\n{tail}", self.log.display())
            }
            Err(e) => format!("(cannot read {}: {e})", self.log.display()),
        }
    }

    /// SIGTERM, then waits up to 15 s (SIGKILL after that). Returns the exit status.
    pub fn stop(&mut self) -> Result<ExitStatus> {
        if let Some(status) = self.child.try_wait()? {
            return Ok(status);
        }
        // `kill` from procps keeps this free of unsafe signal code.
        let _ = Command::new("kill")
            .args(["-TERM", &self.pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status);
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                return Ok(self.child.wait()?);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if let Err(e) = self.stop() {
            eprintln!(
                "bench: could not stop {} (pid {}): {e:#}",
                self.name, self.pid
            );
        }
    }
}

/// A free TCP port on 127.0.0.1 (free when this returns; a child binds it right after).
pub fn free_addr() -> Result<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0").context("cannot find a free port")?;
    Ok(l.local_addr()?)
}

/// A plain HTTP client for set-up requests.
pub fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap_or_else(|_| reqwest::Client::new())
}

// ---------------------------------------------------------------------------------- memory

/// Resets the peak RSS (`VmHWM`) of `pid` to its current RSS.
pub fn reset_peak_rss(pid: u32) -> Result<()> {
    let path = format!("/proc/{pid}/clear_refs");
    std::fs::write(&path, "5").with_context(|| format!("cannot write 5 to {path}"))
}

/// The current RSS (`VmRSS`) of `pid`, in MiB.
pub fn rss_mb(pid: u32) -> Result<f64> {
    status_kb(pid, "VmRSS:").map(|kb| kb / 1024.0)
}

fn status_kb(pid: u32, field: &str) -> Result<f64> {
    let path = format!("/proc/{pid}/status");
    let status = std::fs::read_to_string(&path).with_context(|| format!("cannot read {path}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse::<f64>().ok())
        .with_context(|| format!("no {field} line in {path}"))
}

/// The peak RSS (`VmHWM`) of `pid` since start or the last [`reset_peak_rss`], in MiB.
pub fn peak_rss_mb(pid: u32) -> Result<f64> {
    status_kb(pid, "VmHWM:").map(|kb| kb / 1024.0)
}

// -------------------------------------------------------------------------------------- wrk

/// The Lua every load script starts with: numbers the threads, prints the result line.
const WRK_COMMON_LUA: &str = include_str!("wrk_common.lua");

/// Writes `<dir>/<name>.lua`: the shared reporting code followed by `body` (which may define
/// `init` and `request`, and counts its requests in the global `count`).
pub fn wrk_script(dir: &Path, name: &str, body: &str) -> Result<PathBuf> {
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, format!("{WRK_COMMON_LUA}\n{body}"))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// A value in a parameters file for a load script.
pub enum LuaValue {
    Int(i64),
    Str(String),
    Ints(Vec<i64>),
}

/// Writes a Lua chunk returning a table of `params`; a load script reads it with `dofile` in
/// `init`. Long lists are best passed as one comma-separated string (`Str`): Lua limits the
/// constants of one chunk.
pub fn lua_params(path: &Path, params: &[(&str, LuaValue)]) -> Result<()> {
    let mut out = String::from("return {\n");
    for (k, v) in params {
        let value = match v {
            LuaValue::Int(n) => n.to_string(),
            LuaValue::Str(s) => lua_string(s),
            LuaValue::Ints(ns) => format!(
                "{{{}}}",
                ns.iter().map(i64::to_string).collect::<Vec<_>>().join(",")
            ),
        };
        let _ = writeln!(out, "  {k} = {value},");
    }
    out.push_str("}\n");
    std::fs::write(path, out).with_context(|| format!("cannot write {}", path.display()))
}

fn lua_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for b in s.bytes() {
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            0x20..=0x7e => out.push(b as char),
            other => {
                let _ = write!(out, "\\{other:03}");
            }
        }
    }
    out.push('"');
    out
}

/// One wrk run.
pub struct Wrk<'a> {
    pub url: &'a str,
    pub conns: u32,
    pub secs: u64,
    pub script: &'a Path,
    /// Passed to the script's `init(args)` (e.g. a parameters file).
    pub args: Vec<String>,
}

/// Socket-level errors wrk counted.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct WrkErrors {
    pub connect: u64,
    pub read: u64,
    pub write: u64,
    /// Responses with a status above 399 (wrk's own count).
    pub status: u64,
    pub timeout: u64,
}

impl WrkErrors {
    /// Connect, read, write and timeout errors (not statuses).
    pub fn socket(&self) -> u64 {
        self.connect + self.read + self.write + self.timeout
    }
}

/// Latency percentiles in ms.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
}

/// What the result line of a load script says.
#[derive(Debug, Clone, Default, Serialize, serde::Deserialize)]
pub struct WrkResult {
    pub requests: u64,
    pub duration_s: f64,
    pub rps: f64,
    pub bytes: u64,
    pub errors: WrkErrors,
    /// Responses that were not 2xx (this API answers no 1xx or 3xx on these routes, so it is
    /// wrk's count of statuses above 399).
    pub non_2xx: u64,
    pub latency_ms: Latency,
    /// Per wrk thread, the script's `count` at the end (its next request number).
    pub counts: Vec<u64>,
}

impl WrkResult {
    pub fn non_2xx_ratio(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.non_2xx as f64 / self.requests as f64
        }
    }
}

/// The wrk threads of a run at `conns` connections: [`WRK_THREADS`], or one per connection
/// below that (one connection is one request at a time).
pub fn wrk_threads(conns: u32) -> u32 {
    WRK_THREADS.min(conns.max(1))
}

/// Runs `wrk -t<threads> -c<conns> -d<secs>s --timeout 5s -s <script> <url> -- <args>` (threads
/// from [`wrk_threads`]) and parses the script's result line.
pub async fn run_wrk(w: &Wrk<'_>) -> Result<WrkResult> {
    let threads = wrk_threads(w.conns);
    let conns = w.conns.max(threads);
    let mut cmd = tokio::process::Command::new("wrk");
    cmd.arg(format!("-t{threads}"))
        .arg(format!("-c{conns}"))
        .arg(format!("-d{}s", w.secs.max(1)))
        .args(["--timeout", "5s", "-s"])
        .arg(w.script)
        .arg(w.url);
    if !w.args.is_empty() {
        cmd.arg("--").args(&w.args);
    }
    cmd.kill_on_drop(true);
    let out = cmd
        .output()
        .await
        .context("cannot run wrk (is it installed? scripts/bench installs it)")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stdout.lines().find_map(|l| l.strip_prefix("WRK_JSON "));
    match line {
        Some(json) if out.status.success() => serde_json::from_str(json)
            .with_context(|| format!("cannot parse wrk's result line {json:?}")),
        _ => bail!(
            "wrk against {} failed ({}):\n{}{}",
            w.url,
            out.status,
            stdout.trim_end(),
            if stderr.trim().is_empty() {
                String::new()
            } else {
                format!("\n{}", stderr.trim_end())
            }
        ),
    }
}

/// `wrk -v`'s first line.
pub fn wrk_version() -> Option<String> {
    let out = Command::new("wrk").arg("-v").output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .next()
        .map(|l| l.split("Copyright").next().unwrap_or(l).trim().to_string())
        .filter(|l| l.starts_with("wrk"))
}

// ---------------------------------------------------------------------------------- pgbench

/// What pgbench reported.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PgbenchResult {
    pub clients: u32,
    pub tps: f64,
    pub latency_avg_ms: f64,
    pub transactions: u64,
    pub failed: u64,
}

/// `clients` capped at [`MAX_PG_CLIENTS`]; the flag says whether it was.
pub fn cap_pg_clients(clients: u32) -> (u32, bool) {
    (clients.min(MAX_PG_CLIENTS), clients > MAX_PG_CLIENTS)
}

/// Runs `pgbench -n -c <clients> -j 2 -T <secs> -f <script> <db_url>`; `clients` is capped at
/// [`MAX_PG_CLIENTS`].
pub async fn run_pgbench(
    db_url: &str,
    clients: u32,
    secs: u64,
    script: &Path,
) -> Result<PgbenchResult> {
    let (clients, _) = cap_pg_clients(clients);
    let threads = WRK_THREADS.min(clients.max(1));
    let out = tokio::process::Command::new("pgbench")
        .arg("-n")
        .arg(format!("-c{clients}"))
        .arg(format!("-j{threads}"))
        .arg(format!("-T{}", secs.max(1)))
        .arg("-f")
        .arg(script)
        .arg(db_url)
        .kill_on_drop(true)
        .output()
        .await
        .context("cannot run pgbench (it comes with the PostgreSQL client)")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!(
            "pgbench failed ({}):\n{}\n{}",
            out.status,
            stdout.trim_end(),
            stderr.trim_end()
        );
    }
    let after = |prefix: &str| -> Option<&str> {
        stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix(prefix))
            .map(str::trim)
    };
    let first_number = |s: &str| -> Option<f64> { s.split_whitespace().next()?.parse().ok() };
    // PostgreSQL 14+ prints one tps line "(without initial connection time)"; older versions
    // print "(including …)" and "(excluding connections establishing)": take the excluding one.
    let tps = stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("tps = "))
        .find(|l| !l.contains("including"))
        .and_then(first_number)
        .with_context(|| format!("no tps line in pgbench's output:\n{stdout}"))?;
    Ok(PgbenchResult {
        clients,
        tps,
        latency_avg_ms: after("latency average =")
            .and_then(first_number)
            .unwrap_or(0.0),
        transactions: after("number of transactions actually processed:")
            .and_then(first_number)
            .map(|n| n as u64)
            .unwrap_or(0),
        failed: after("number of failed transactions:")
            .and_then(first_number)
            .map(|n| n as u64)
            .unwrap_or(0),
    })
}

// ---------------------------------------------------------------------------------- metrics

/// The Prometheus samples of `url` (a `/metrics` page) named `name`, keyed by their label set
/// (`""` for none), e.g. `{result="hit"}`.
pub async fn scrape(url: &str, name: &str) -> Result<BTreeMap<String, f64>> {
    let text = http_client()
        .get(url)
        .send()
        .await
        .with_context(|| format!("cannot read {url}"))?
        .error_for_status()?
        .text()
        .await?;
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let (labels, value) = if rest.starts_with('{') {
            match rest.find('}') {
                Some(end) => (&rest[..=end], rest[end + 1..].trim()),
                None => continue,
            }
        } else if rest.starts_with(' ') {
            ("", rest.trim())
        } else {
            continue; // another metric whose name starts with `name`
        };
        if let Some(v) = value.split_whitespace().next().and_then(|v| v.parse().ok()) {
            out.insert(labels.to_string(), v);
        }
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------- reports

/// Adds a failed row (first cell `what`, the error in the other cells' place) and an entry in
/// `json["failures"]`, and prints the error.
pub fn record_failure(section: &mut Section, what: &str, err: &anyhow::Error) {
    let message = format!("{err:#}");
    eprintln!("bench: {} / {what} FAILED: {message}", section.name);
    let mut row = vec![what.to_string()];
    let width = section.columns.len().max(2);
    while row.len() < width - 1 {
        row.push("FAILED".into());
    }
    row.push(first_line(&message));
    section.rows.push(row);
    push_failure(&mut section.json, what, &message);
}

/// Adds `{what, error}` to `json["failures"]` (making `json` an object if it is not one).
pub fn push_failure(json: &mut serde_json::Value, what: &str, message: &str) {
    if !json.is_object() {
        *json = serde_json::json!({});
    }
    let failures = json
        .as_object_mut()
        .map(|o| o.entry("failures").or_insert_with(|| serde_json::json!([])));
    if let Some(serde_json::Value::Array(list)) = failures {
        list.push(serde_json::json!({ "what": what, "error": message }));
    }
}

/// The failures a section recorded.
pub fn failures(section: &Section) -> Vec<(String, String)> {
    section.json["failures"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|f| {
                    (
                        f["what"].as_str().unwrap_or("?").to_string(),
                        f["error"].as_str().unwrap_or("?").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The first line of `s`, at most 160 characters.
pub fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or("");
    if line.chars().count() > 160 {
        format!("{}…", line.chars().take(159).collect::<String>())
    } else {
        line.to_string()
    }
}

/// `n` with thin grouping: 12345.6 → "12 346".
pub fn fmt_int(n: f64) -> String {
    if !n.is_finite() {
        return n.to_string();
    }
    let digits = format!("{:.0}", n.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    if n < -0.5 { format!("-{out}") } else { out }
}

/// A latency or size with sensible digits: 0.123, 1.23, 12.3, 123.
pub fn fmt_ms(x: f64) -> String {
    if x < 1.0 {
        format!("{x:.3}")
    } else if x < 10.0 {
        format!("{x:.2}")
    } else if x < 100.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.0}")
    }
}

/// Prints a progress line to standard error.
pub fn progress(section: &str, msg: impl std::fmt::Display) {
    eprintln!("[{section}] {msg}");
}
