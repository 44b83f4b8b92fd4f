//! The benchmark harness: ceilings of this machine (bare axum, pgbench), the HTTP API under
//! load, the worker, the job upkeep, the job alerts' digests, and migrations at size. Prints one table per section and a summary of the targets, and writes
//! everything as JSON to `<out>/bench-<UTC time>.json` and `<out>/latest.json` (the text to
//! `<out>/latest.txt`).
//!
//! ```sh
//! scripts/bench                  # builds, starts the services, runs everything
//! scripts/bench --quick --only ceilings --only http
//! cargo run --release --example bench -- --help
//! ```
//! Needs wrk, pgbench, PostgreSQL (`--pg-url`, a URL allowed to create databases: every
//! scenario makes its own `jbbench_<uuid>` and drops it), Redis, and the release `jobboard`
//! binary (`--bin`). Exits non-zero when a scenario failed; a missed target is reported, not a
//! failure.

mod alert_week;
mod alerts;
mod ceilings;
mod common;
mod http;
mod migrate;
mod report;
mod seed;
mod upkeep;
mod worker;

use anyhow::{Context, Result};
use clap::{CommandFactory, FromArgMatches, parser::ValueSource};
use report::Section;
use serde::Serialize;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Clone, clap::Parser, Serialize)]
#[command(
    name = "bench",
    about = "Benchmarks jobboard: machine ceilings, the HTTP API under wrk, the worker, the job alerts' digests."
)]
pub struct Opts {
    /// Short runs for a smoke check: 2 s per load run and 10 000 jobs (unless --duration or
    /// --jobs say otherwise).
    #[arg(long)]
    pub quick: bool,
    /// Run only these parts (repeatable); all when absent.
    #[arg(long, value_name = "PART",
          value_parser = ["ceilings", "http", "worker", "upkeep", "alerts", "migrate"])]
    pub only: Vec<String>,
    /// PostgreSQL admin URL: each scenario creates (and drops) a database of its own there.
    #[arg(long, default_value = "postgres://postgres@127.0.0.1:5432/postgres")]
    pub pg_url: String,
    /// Redis for the Redis-cache scenarios (keys under a unique prefix, deleted afterwards).
    #[arg(long, default_value = "redis://127.0.0.1:6379")]
    pub redis_url: String,
    /// The release `jobboard` binary [default: `jobboard` next to target/…/examples/].
    #[arg(long, default_value_os_t = default_bin(), hide_default_value = true,
          overrides_with = "bin")]
    pub bin: PathBuf,
    /// Where the reports go.
    #[arg(long = "out", default_value = "target/bench")]
    pub out_dir: PathBuf,
    /// Seconds per measured load run (after a 1 s warm-up) [default: 10; 2 with --quick].
    #[arg(long = "duration", value_name = "SECS", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(1..=3600), hide_default_value = true)]
    pub duration_secs: u64,
    /// Open jobs seeded for the HTTP scenarios [default: 100000; 10000 with --quick].
    #[arg(long, default_value_t = 100_000, hide_default_value = true)]
    pub jobs: usize,
    /// Status-change events per worker scenario [default: 20000; 2000 with --quick].
    #[arg(long)]
    pub events: Option<usize>,
    /// Run only the scenarios (HTTP and worker) whose name contains this text (repeatable), e.g.
    /// `--scenario "pg db file"`, `--scenario search_broad`, or `--scenario mix_` for the
    /// search mixes at scale (with their job_detail rows) and nothing else.
    #[arg(long, value_name = "TEXT")]
    pub scenario: Vec<String>,
    /// Open jobs seeded for the search rows at scale: `search_*_scale` and `mix_*_pg` on
    /// PostgreSQL, `search_*_sqlite` and `mix_*_sqlite` on SQLite; 0 leaves the PostgreSQL ones
    /// out and seeds SQLite with --jobs [default: 1000000; 0 with --quick].
    #[arg(
        long,
        value_name = "JOBS",
        hide_default_value = true,
        default_value_t = 1_000_000
    )]
    pub scale_jobs: usize,
    /// Jobs of the upkeep rows (of --scale-jobs, or --jobs when that is 0) that cross their
    /// notice time at once.
    #[arg(long, value_name = "JOBS", default_value_t = 10_000)]
    pub upkeep_notices: usize,
    /// Jobs in the database of the alert-digest scenarios, 10 000 of them new in the day whose
    /// digests are written [default: 100000; 20000 with --quick].
    #[arg(
        long,
        value_name = "JOBS",
        default_value_t = 100_000,
        hide_default_value = true
    )]
    pub alert_jobs: usize,
    /// Alerts of the alert-digest scenarios [default: 100000; 10000 with --quick].
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100_000,
        hide_default_value = true
    )]
    pub alerts: usize,
    /// New open jobs of the week whose weekly alert digests the `alert_week` scenario writes
    /// (descriptions of about 3 KB).
    #[arg(long, value_name = "JOBS", default_value_t = 70_000)]
    pub alert_week_jobs: usize,
    /// Keep the HTTP section's database instead of dropping it (to look at it afterwards).
    #[arg(long, hide = true)]
    pub keep_db: bool,
    /// Serve the bare-axum ceiling on this address and nothing else (used by the harness).
    #[arg(long, value_name = "ADDR", hide = true)]
    #[serde(skip)]
    pub bare_axum: Option<SocketAddr>,
}

impl Opts {
    /// Whether `--scenario` keeps the scenario of this name (all when it is absent).
    pub fn wants(&self, name: &str) -> bool {
        self.scenario.is_empty() || self.scenario.iter().any(|s| name.contains(s.as_str()))
    }

    /// Whether `part` (`ceilings`, `http`, `worker`) runs.
    pub fn runs(&self, part: &str) -> bool {
        self.only.is_empty() || self.only.iter().any(|p| p == part)
    }
}

/// `jobboard` in the folder above this executable's (examples live in target/<profile>/examples/).
fn default_bin() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("jobboard")))
        .unwrap_or_else(|| PathBuf::from("target/release/jobboard"))
}

fn parse_opts() -> Opts {
    let matches = Opts::command().get_matches();
    let mut opts = match Opts::from_arg_matches(&matches) {
        Ok(o) => o,
        Err(e) => e.exit(),
    };
    let defaulted = |id: &str| {
        matches!(
            matches.value_source(id),
            None | Some(ValueSource::DefaultValue)
        )
    };
    if opts.quick {
        if defaulted("duration_secs") {
            opts.duration_secs = 2;
        }
        if defaulted("jobs") {
            opts.jobs = 10_000;
        }
        if defaulted("scale_jobs") {
            opts.scale_jobs = 0;
        }
        if defaulted("alert_jobs") {
            opts.alert_jobs = 20_000;
        }
        if defaulted("alerts") {
            opts.alerts = 10_000;
        }
    }
    opts
}

fn main() -> ExitCode {
    let opts = parse_opts();
    // The default multi-thread runtime, as the real server uses.
    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("bench: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    if let Some(addr) = opts.bare_axum {
        return match rt.block_on(ceilings::serve_bare(addr)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("bench --bare-axum: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    match rt.block_on(run(opts)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs the selected parts, prints and writes the report; `Ok(false)` if anything failed.
async fn run(opts: Opts) -> Result<bool> {
    let started = chrono::Utc::now();
    let clock = std::time::Instant::now();
    std::fs::create_dir_all(&opts.out_dir)
        .with_context(|| format!("cannot create {}", opts.out_dir.display()))?;
    let machine = machine_info(&opts, started).await;
    eprintln!(
        "bench: {}",
        serde_json::to_string(&machine).unwrap_or_default()
    );

    let mut sections: Vec<Section> = Vec::new();
    let mut ceilings = None;
    if opts.runs("ceilings") {
        let (section, c) = ceilings::run(&opts).await;
        sections.push(section);
        ceilings = Some(c);
    }
    if opts.runs("http") {
        sections.push(http::run(&opts, ceilings.as_ref()).await);
    }
    if opts.runs("worker") {
        sections.extend(part("worker", worker::run(&opts).await));
    }
    if opts.runs("upkeep") {
        sections.extend(part("upkeep", upkeep::run(&opts).await));
    }
    if opts.runs("alerts") {
        sections.extend(part("alerts", alerts::run(&opts).await));
    }
    if opts.runs("migrate") {
        sections.extend(part("migrate", migrate::run(&opts).await));
    }

    // The text report.
    let mut text = String::new();
    for s in &sections {
        text.push_str(&format!("\n== {} ==\n", s.name));
        text.push_str(&report::table(&s.columns, &s.rows));
        for note in &s.notes {
            text.push_str(&format!("  * {note}\n"));
        }
        for plan in &s.plans {
            text.push_str(&format!("\n-- plan: {plan}\n"));
        }
    }
    let target_columns: Vec<String> = ["target", "measured", "relation", "bound", "met", "detail"]
        .map(String::from)
        .to_vec();
    let mut target_rows = Vec::new();
    let mut targets_json = Vec::new();
    for s in &sections {
        for t in &s.targets {
            target_rows.push(vec![
                t.name.clone(),
                format!("{:.3}", t.measured),
                t.relation.to_string(),
                format!("{}", t.bound),
                if t.met() { "yes" } else { "NO" }.to_string(),
                t.detail.clone(),
            ]);
            targets_json.push(json!({
                "section": s.name,
                "name": t.name,
                "measured": t.measured,
                "relation": t.relation,
                "bound": t.bound,
                "met": t.met(),
                "detail": t.detail,
            }));
        }
    }
    text.push_str("\n== Targets ==\n");
    if target_rows.is_empty() {
        text.push_str("(none judged)\n");
    } else {
        text.push_str(&report::table(&target_columns, &target_rows));
    }
    let failures: Vec<(String, String, String)> = sections
        .iter()
        .flat_map(|s| {
            common::failures(s)
                .into_iter()
                .map(|(what, err)| (s.name.clone(), what, err))
        })
        .collect();
    if !failures.is_empty() {
        text.push_str(&format!("\n== Failures ({}) ==\n", failures.len()));
        for (section, what, err) in &failures {
            text.push_str(&format!("{section} / {what}: {err}\n"));
        }
    }
    let elapsed = clock.elapsed().as_secs_f64();
    text.push_str(&format!("\nTotal time {elapsed:.0} s.\n"));

    // The JSON report.
    let report = json!({
        "machine": machine,
        "elapsed_s": elapsed,
        "sections": sections,
        "targets": targets_json,
        "failures": failures.iter().map(|(s, w, e)| json!({"section": s, "what": w, "error": e})).collect::<Vec<_>>(),
        "ok": failures.is_empty(),
    });
    let stamp = started.format("%Y%m%dT%H%M%SZ");
    let path = opts.out_dir.join(format!("bench-{stamp}.json"));
    let body = serde_json::to_string_pretty(&report)?;
    write(&path, &body)?;
    write(&opts.out_dir.join("latest.json"), &body)?;
    text.push_str(&format!("Report: {}\n", path.display()));
    write(&opts.out_dir.join("latest.txt"), &text)?;
    print!("{text}");
    Ok(failures.is_empty())
}

/// A part's sections, or one section that records why the part failed.
fn part(name: &str, result: Result<Vec<Section>>) -> Vec<Section> {
    result.unwrap_or_else(|e| {
        let mut section = Section {
            name: name.into(),
            columns: vec!["scenario".into(), "result".into()],
            json: json!({}),
            ..Section::default()
        };
        common::record_failure(&mut section, name, &e);
        vec![section]
    })
}

fn write(path: &Path, body: &str) -> Result<()> {
    std::fs::write(path, body).with_context(|| format!("cannot write {}", path.display()))
}

/// What the figures were measured on; an item that cannot be found is null.
async fn machine_info(opts: &Opts, started: chrono::DateTime<chrono::Utc>) -> Value {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu_model = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string());
    let mem_total_mb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        })
        .map(|kb| (kb / 1024.0).round());
    let pg_version = async {
        let mut conn = common::pg_connect(&opts.pg_url).await?;
        let v: String = sqlx::query_scalar("SHOW server_version")
            .fetch_one(&mut conn)
            .await?;
        anyhow::Ok(v)
    }
    .await;
    let redis_version = async {
        let client = redis::Client::open(opts.redis_url.as_str())?;
        let mut conn = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            client.get_multiplexed_async_connection(),
        )
        .await
        .context("timed out")??;
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query_async(&mut conn)
            .await?;
        info.lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map(|v| v.trim().to_string())
            .context("no redis_version in INFO")
    }
    .await;
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    json!({
        "nproc": std::thread::available_parallelism().map(|n| n.get()).ok(),
        "cpu_model": cpu_model,
        "mem_total_mb": mem_total_mb,
        "kernel": command_line("uname", &["-r"]),
        "postgres_version": pg_version.map_err(|e| eprintln!("bench: PostgreSQL version: {e:#}")).ok(),
        "redis_version": redis_version.map_err(|e| eprintln!("bench: Redis version: {e:#}")).ok(),
        "wrk_version": common::wrk_version(),
        "git_commit": git(&["rev-parse", "--short", "HEAD"]),
        "git_dirty": git(&["status", "--porcelain"]).map(|s| !s.is_empty()),
        "started_utc": started.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "options": opts,
    })
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    std::process::Command::new(program)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
}
