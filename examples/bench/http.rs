//! The HTTP section: the real API (`jobboard serve` on PostgreSQL) under wrk, on a fresh
//! database seeded with `--jobs` open jobs.
//!
//! One server with the in-process cache runs `search_cached_memory`, `job_detail`, `apply`,
//! `status_change` and `search_uncached` (last, since every uncached page it stores grows the
//! in-process cache); a second one with `REDIS_URL` runs `search_cached_redis`. Each scenario
//! runs at 16, 64 and 256 connections, each run after a warm-up.

use crate::Opts;
use crate::ceilings::Ceilings;
use crate::common::{self, Child, FreshDb, LuaValue, Wrk, WrkResult};
use crate::report::{Section, Target};
use crate::seed::{self, SeedJob};
use anyhow::{Context, Result, bail, ensure};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use futures::StreamExt;
use jobboard::store::{JobSearch, Page, PostedWithin, SearchSort};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const SECTION: &str = "http";
const JWT_SECRET: &str = "jobboard-bench-secret-0123456789abcdefghijklmnop";
const PASSWORD: &str = "bench harness passphrase 7";
const COMPANY: &str = "Northwind Labs";
/// The query of the cached-search scenarios.
const CACHED_QUERY: &str = "/api/jobs?q=senior+engineer";
/// Pages 1..=this in the uncached searches.
const UNCACHED_PAGES: u64 = 4;
/// Rows per bulk INSERT while seeding.
const SEED_CHUNK: usize = 5_000;
/// The order scenarios are reported in.
fn order() -> Vec<&'static str> {
    let mut order = vec![
        "search_cached_memory",
        "search_cached_redis",
        "search_uncached",
        "search_broad",
        "search_uncached_scale",
        "search_broad_scale",
        "search_uncached_sqlite",
        "search_broad_sqlite",
    ];
    for kind in [Kind::Scale, Kind::Sqlite] {
        order.push(mix_detail_row(kind));
        order.push(ids_row(kind));
        order.extend(MIXES.iter().flat_map(|m| [m.ids_row(kind), m.row(kind)]));
        order.push(facets_row(kind));
        order.extend([cursor_ids_row(kind), cursor_row(kind)]);
    }
    order.extend([
        "job_detail",
        "apply",
        "status_change",
        "console_queue",
        "console_dead_letters",
    ]);
    order
}

/// The searches of search_broad prepared per run (distinct; they repeat past this many).
const BROAD_QUERIES: usize = 400_000;
/// Rows per transaction while seeding SQLite.
const SQLITE_SEED_TX: usize = 100_000;

/// What one server of this section measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// PostgreSQL with `--jobs` jobs: every scenario, at every connection level.
    Main,
    /// PostgreSQL with `--scale-jobs` jobs: the uncached searches at 16 connections.
    Scale,
    /// SQLite with `--jobs` jobs: the uncached searches at 16 connections.
    Sqlite,
}

impl Kind {
    fn jobs(self, opts: &Opts) -> usize {
        match self {
            Kind::Scale => opts.scale_jobs,
            Kind::Sqlite if opts.scale_jobs > 0 => opts.scale_jobs,
            _ => opts.jobs,
        }
    }

    /// Every row this kind of run can report.
    fn rows(self) -> Vec<&'static str> {
        match self {
            Kind::Main => vec![
                "search_cached_memory",
                "search_cached_redis",
                "search_uncached",
                "search_broad",
                "job_detail",
                "apply",
                "status_change",
                "console_queue",
                "console_dead_letters",
            ],
            _ => {
                let (a, b) = self.search_names();
                let mut rows = vec![a, b, mix_detail_row(self), ids_row(self), lag_row(self)];
                rows.extend(MIXES.iter().flat_map(|m| [m.ids_row(self), m.row(self)]));
                rows.push(facets_row(self));
                rows.extend([cursor_ids_row(self), cursor_row(self)]);
                rows
            }
        }
    }

    /// The names of its uncached search rows (search_uncached, search_broad).
    fn search_names(self) -> (&'static str, &'static str) {
        match self {
            Kind::Main => ("search_uncached", "search_broad"),
            Kind::Scale => ("search_uncached_scale", "search_broad_scale"),
            Kind::Sqlite => ("search_uncached_sqlite", "search_broad_sqlite"),
        }
    }
}

/// A measured run of one scenario at one connection level.
struct Measured {
    scenario: &'static str,
    conns: u32,
    wrk: WrkResult,
    rss_start_mb: Option<f64>,
    peak_rss_mb: Option<f64>,
    /// Search-cache hits and misses during the measured run (from `/metrics`).
    cache: Option<(f64, f64)>,
    notes: Vec<String>,
    /// Why the row counts as failed although it has figures.
    failed: Option<String>,
}

impl Measured {
    fn hit_ratio(&self) -> Option<f64> {
        self.cache
            .filter(|(h, m)| h + m > 0.0)
            .map(|(h, m)| h / (h + m))
    }
}

pub async fn run(opts: &Opts, ceilings: Option<&Ceilings>) -> Section {
    let mut section = Section {
        name: SECTION.into(),
        columns: [
            "scenario",
            "conns",
            "req/s",
            "p50 ms",
            "p99 ms",
            "non-2xx",
            "sock err",
            "RSS start MB",
            "peak RSS MB",
            "note",
        ]
        .map(String::from)
        .to_vec(),
        json: json!({}),
        ..Section::default()
    };
    let started = Instant::now();
    let mut measured: Vec<Measured> = Vec::new();
    let mut setup_json = json!({});
    let mut words = Vec::new();
    let mut checks = Vec::new();
    let mut plans = Vec::new();
    let mut kinds = vec![Kind::Main];
    if opts.scale_jobs > 0 {
        kinds.push(Kind::Scale);
    }
    kinds.push(Kind::Sqlite);
    for kind in kinds {
        // A run is skipped when --scenario leaves out every one of its rows.
        if !kind.rows().iter().any(|r| opts.wants(r)) {
            continue;
        }
        let key = format!("{kind:?}").to_lowercase();
        match Bench::start(opts, kind).await {
            Err(e) => common::record_failure(&mut section, &format!("setup ({key})"), &e),
            Ok(mut bench) => {
                match kind {
                    Kind::Main => bench.run_all(&mut section, &mut measured).await,
                    _ => {
                        bench.run_searches(&mut section, &mut measured, &[16]).await;
                        bench.run_mixes(&mut section, &mut measured).await;
                        bench.run_index_lag(&mut section).await;
                    }
                }
                bench.finish(&mut section).await;
                setup_json[&key] = bench.setup_json();
                if kind == Kind::Main {
                    words = bench.words.clone();
                    if let (Some(before), Some(after)) = bench.seed_rss {
                        bench.checks.push(format!(
                            "seeding: the API's RSS went from {before:.1} to {after:.1} MB while {} \
                             accounts registered and logged in (4 at a time); the measured runs use a \
                             restarted process",
                            bench.candidate_tokens.len() + 1
                        ));
                    }
                }
                checks.append(&mut bench.checks);
                plans.append(&mut bench.plans);
            }
        }
    }
    section.json["checks"] = json!(checks);
    section.json["plans"] = json!(plans);
    section.notes.append(&mut checks);
    section.plans = plans;

    // Rows in the report's order; failures recorded meanwhile are already rows.
    let mut rows = Vec::new();
    let mut rows_json = Vec::new();
    for name in order() {
        for m in measured.iter().filter(|m| m.scenario == name) {
            let mut note = m.notes.join("; ");
            if let Some(f) = &m.failed {
                note = if note.is_empty() {
                    format!("FAILED: {f}")
                } else {
                    format!("FAILED: {f}; {note}")
                };
            }
            rows.push(vec![
                m.scenario.to_string(),
                m.conns.to_string(),
                common::fmt_int(m.wrk.rps),
                common::fmt_ms(m.wrk.latency_ms.p50),
                common::fmt_ms(m.wrk.latency_ms.p99),
                m.wrk.non_2xx.to_string(),
                m.wrk.errors.socket().to_string(),
                m.rss_start_mb
                    .map(|r| format!("{r:.1}"))
                    .unwrap_or_else(|| "?".into()),
                m.peak_rss_mb
                    .map(|r| format!("{r:.1}"))
                    .unwrap_or_else(|| "?".into()),
                note,
            ]);
            rows_json.push(json!({
                "scenario": m.scenario,
                "conns": m.conns,
                "rps": m.wrk.rps,
                "latency_ms": m.wrk.latency_ms,
                "requests": m.wrk.requests,
                "non_2xx": m.wrk.non_2xx,
                "errors": m.wrk.errors,
                "rss_start_mb": m.rss_start_mb,
                "peak_rss_mb": m.peak_rss_mb,
                "bytes_per_response": m.wrk.bytes / m.wrk.requests.max(1),
                "cache_hits": m.cache.map(|c| c.0),
                "cache_misses": m.cache.map(|c| c.1),
                "cache_hit_ratio": m.hit_ratio(),
                "notes": m.notes,
                "failed": m.failed,
            }));
        }
    }
    // Failure rows recorded during the run go after the measured ones.
    rows.append(&mut section.rows);
    section.rows = rows;
    section.json["setup"] = setup_json;
    section.json["rows"] = json!(rows_json);
    section.json["elapsed_s"] = json!(started.elapsed().as_secs_f64());
    targets(&mut section, &measured, ceilings);
    section.notes.splice(0..0, notes(opts, &words));
    section
}

fn notes(opts: &Opts, words: &[String]) -> Vec<String> {
    let secs = opts.duration_secs;
    vec![
        format!(
            "Server: `jobboard serve` (release) on a fresh PostgreSQL database, APP_ENV=development, \
             RUST_LOG=warn, default pool; {} open jobs seeded by bulk SQL (search_terms from \
             jobboard::domain::search::document_terms, like the store), then VACUUM ANALYZE; \
             one employer, one company and the candidates made through the API.",
            opts.jobs
        ),
        format!(
            "Load: wrk -t{} -c16/64/256 --timeout 5s, a {} s warm-up then {secs} s measured per row; \
             peak RSS is the server's VmHWM over the measured run (reset before it).",
            common::WRK_THREADS,
            common::WARMUP_SECS
        ),
        format!(
            "search_cached_memory / search_cached_redis: GET {CACHED_QUERY} every request \
             (page 1, 20 jobs); in-process cache, then a restarted server with REDIS_URL and a \
             prefix of its own (deleted afterwards)."
        ),
        format!(
            "search_uncached: GET /api/jobs?q=<w1>+<w2>&page=<1..{UNCACHED_PAGES}>[&remote=true|false], \
             every request a combination no earlier request made (two distinct words of the {} \
             title, technology, skill, industry and place words of the seed vocabulary), so each \
             misses the cache; the hit ratio is read from search_cache_requests_total on /metrics.",
            words.len()
        ),
        "search_broad: GET /api/jobs?q=<word>&salary_min=<20000..200000, step 500>&page=<1..3>, \
         every request a combination no earlier request made; the word is drawn from the seeded \
         titles and descriptions weighted by how often it occurs there, among the words in at \
         least 1 % of the jobs (so from hundreds of matches to every job)."
            .into(),
        format!(
            "search_*_scale: the same two searches at 16 connections on a second PostgreSQL \
             database seeded with {} jobs (no other scenario runs there); search_*_sqlite: the \
             same on SQLite (a WAL database file, the default pool) seeded with {} jobs. The \
             search indexes of a seeded PostgreSQL database are dropped during the bulk insert \
             and built again from the migrations' definitions; SQLite's jobs go through the \
             table, so its triggers fill both full-text indexes.",
            opts.scale_jobs,
            Kind::Sqlite.jobs(opts)
        ),
        "Seed: jobs of 1 company per 500 jobs (10 to 5 000; a Zipf law of exponent 1 over them, \
         the first made through the API), oldest first so that ids follow created_at (checked \
         after the load), posted over a year with more of them recently (the last day ~5 %, 7 \
         days ~14 %, 30 days ~29 %, 90 days 50 %); titles from level, technology and role \
         lists; descriptions name three of 20 000 tail words (specific tools and skills) drawn \
         Zipf-like, so a word of rank r is in ~0.29/r of the jobs (rank 3 000: 0.01 %), and \
         run to 2 000-5 000 bytes (uniform), the rest paragraphs of generic prose in words no \
         search asks for; 5 % of the jobs are in one of 400 small towns; search_terms (of the \
         title, the first paragraph and the company) and title_terms from \
         jobboard::domain::search::document_terms."
            .into(),
        format!(
            "mix_*_pg (PostgreSQL, {} jobs) and mix_*_sqlite (SQLite, {} jobs): each mix a \
             list of distinct searches sent in order (none repeats, so every one misses the \
             cache), at 16 connections and then at 1 (one request at a time: the unloaded \
             p99), beside mix_job_detail_* (GET /api/jobs/{{id}}) measured on the same server \
             and database just before. Every search but deep_page has page_size 10-40 and \
             remote absent, true or false. rare_word: one tail word in 0.005-0.05 % of the \
             jobs, page 1-2; common_word: a word in 5-50 % of the jobs, page 1-10; pair: two \
             words of a phrase of the seed lists (account executive, machine learning, \
             distributed systems…), page 1-20; word_filter: a common word with company_id (a \
             company other than the largest, drawn evenly, so mostly small ones) or location \
             (one of the small towns), page 1-3; relevance: sort=relevance with one or two \
             title words, page 1-5; deep_page: page 400 of 20 of a word in at least 12 000 \
             jobs, remote absent or false, salary_min 0-30 000 (every seeded salary_max is \
             higher: it only makes each request distinct); posted_within: a common word with \
             posted_within_days 1, 2, 3, 7, 14, 30 or 90, page 1-3; facets: every mix's \
             searches in turn, each with facets=employment_type,remote,company. mix_ids_page_*: \
             {IDS_PAGES_PER_MIX} pages of each mix (searches the runs do not reach), each asked \
             once unloaded beforehand, then asked by their job ids (ids=..., page_size = their \
             number): the same jobs read from the index and rendered as a search renders them, \
             found by key (an ids search is never cached). Targets: p99 <= 3x and req/s >= 0.5x \
             mix_ids_page's at 16 connections, p99 <= 5 ms at 1; mix_job_detail stays as the \
             board's ceiling.",
            opts.scale_jobs,
            Kind::Sqlite.jobs(opts)
        ),
        "Samples: before each search scenario's runs, 100 of its searches (from the far end \
         of its list) one at a time, not part of any row: what they find and how long one takes."
            .into(),
        "job_detail: GET /api/jobs/{id} of a random seeded job.".into(),
        "apply: POST /api/jobs/{id}/applications {\"cover_letter\":…} as one of the candidates \
         (rotating), never the same candidate and job twice across threads and runs; a row with \
         more than 1 % non-2xx fails."
            .into(),
        "status_change: PATCH /api/applications/{id} by the employer, moving applications made \
         by apply one step (reviewing, interview, offered, hired), each application once per \
         status; each run takes applications no earlier run touched. No Idempotency-Key is sent \
         (it is optional)."
            .into(),
        format!(
            "console_queue / console_dead_letters: an operator (given the rights by `jobboard \
             admin grant`) reads GET /api/admin/queue, or GET /api/admin/dead-letters?page_size=20 \
             at a random page of {CONSOLE_DEAD_LETTERS} dead letters, after {CONSOLE_EVENTS} \
             processed events (sent, retried, dead, updated over the last two hours; about 48 000 \
             sent in the last hour) were added beside what the other rows wrote, then VACUUM \
             ANALYZE, as autovacuum leaves them. Each answer is one statement on the database."
        ),
    ]
}

/// Judges the targets on this run's figures.
fn targets(section: &mut Section, measured: &[Measured], ceilings: Option<&Ceilings>) {
    let find = |scenario: &str, conns: u32| {
        measured
            .iter()
            .find(|m| m.scenario == scenario && m.conns == conns && m.failed.is_none())
    };
    match ceilings {
        Some(c) => {
            for (scenario, label, factor) in [
                ("search_cached_memory", "search cached (memory)", 0.6),
                ("search_cached_redis", "search cached (redis)", 0.4),
            ] {
                for conns in common::CONN_LEVELS {
                    if let (Some(m), Some(bare)) = (find(scenario, conns), c.bare_rps.get(&conns)) {
                        section.targets.push(Target::at_least(
                            &format!("{label} >= {factor}x bare axum @{conns} conns"),
                            m.wrk.rps / bare,
                            factor,
                            format!(
                                "{} req/s / {} req/s (bare axum), both at {conns} connections; \
                                 {:.2}x bare axum answering a 15 KB page",
                                common::fmt_int(m.wrk.rps),
                                common::fmt_int(*bare),
                                c.bare_page_rps
                                    .get(&conns)
                                    .map(|p| m.wrk.rps / p)
                                    .unwrap_or(f64::NAN)
                            ),
                        ));
                    }
                }
            }
            match (find("apply", 16), c.insert_tps.get(&16)) {
                (Some(m), Some(tps)) => section.targets.push(Target::at_least(
                    "apply >= 0.5x pgbench one-insert TPS @16",
                    m.wrk.rps / tps,
                    0.5,
                    format!(
                        "{} req/s (16 connections) / {} tps (pgbench, 16 clients)",
                        common::fmt_int(m.wrk.rps),
                        common::fmt_int(*tps)
                    ),
                )),
                _ => section.notes.push(
                    "apply vs pgbench: not judged (a figure is missing or its row failed).".into(),
                ),
            }
        }
        None => section.notes.push(
            "The ratio targets against bare axum and pgbench need the ceilings section in the \
             same run; not judged."
                .into(),
        ),
    }
    for (scenario, what) in [
        (
            "search_uncached",
            "uncached search (word pairs), PostgreSQL",
        ),
        (
            "search_broad",
            "uncached broad search + salary_min, PostgreSQL",
        ),
        (
            "search_uncached_scale",
            "uncached search (word pairs), PostgreSQL at scale",
        ),
        (
            "search_broad_scale",
            "uncached broad search + salary_min, PostgreSQL at scale",
        ),
        (
            "search_uncached_sqlite",
            "uncached search (word pairs), SQLite",
        ),
        (
            "search_broad_sqlite",
            "uncached broad search + salary_min, SQLite",
        ),
    ] {
        let Some(m) = find(scenario, 16) else {
            continue;
        };
        section.targets.push(Target::at_most(
            &format!("{what}: p99 <= 20 ms @16 conns"),
            m.wrk.latency_ms.p99,
            20.0,
            format!(
                "{scenario}: p99 {} ms at 16 connections over {} requests (cache hit ratio {})",
                common::fmt_ms(m.wrk.latency_ms.p99),
                m.wrk.requests,
                m.hit_ratio()
                    .map(|r| format!("{:.2} %", r * 100.0))
                    .unwrap_or_else(|| "?".into())
            ),
        ));
    }
    for kind in [Kind::Scale, Kind::Sqlite] {
        let detail_name = mix_detail_row(kind);
        let detail = find(detail_name, 16);
        let ids_name = ids_row(kind);
        let ceiling = find(ids_name, 16);
        if let (Some(i), Some(d)) = (ceiling, detail) {
            section.notes.push(format!(
                "{ids_name} @16 conns (the mixes' pages by their ids): {} req/s = {:.2}x \
                 {detail_name}'s, p99 {} ms = {:.2}x its {} ms",
                common::fmt_int(i.wrk.rps),
                i.wrk.rps / d.wrk.rps,
                common::fmt_ms(i.wrk.latency_ms.p99),
                i.wrk.latency_ms.p99 / d.wrk.latency_ms.p99,
                common::fmt_ms(d.wrk.latency_ms.p99),
            ));
        }
        // Each mix against its own pages by ids; the facets row, which takes every mix's
        // searches, against all of them.
        let rows = MIXES.iter().map(|m| (m.row(kind), m.ids_row(kind))).chain([
            (facets_row(kind), ids_name),
            (cursor_row(kind), cursor_ids_row(kind)),
        ]);
        for (name, ids_name) in rows {
            let ceiling = find(ids_name, 16);
            if let Some(m) = find(name, 16) {
                match ceiling {
                    Some(c) => {
                        section.targets.push(Target::at_most(
                            &format!("{name}: p99 <= 3x {ids_name} p99 @16 conns"),
                            m.wrk.latency_ms.p99 / c.wrk.latency_ms.p99,
                            3.0,
                            format!(
                                "p99 {} ms / {} ms ({ids_name}, same run, same database)",
                                common::fmt_ms(m.wrk.latency_ms.p99),
                                common::fmt_ms(c.wrk.latency_ms.p99)
                            ),
                        ));
                        section.targets.push(Target::at_least(
                            &format!("{name}: req/s >= 0.5x {ids_name} @16 conns"),
                            m.wrk.rps / c.wrk.rps,
                            0.5,
                            format!(
                                "{} req/s / {} req/s ({ids_name}){}; cache hit ratio {}",
                                common::fmt_int(m.wrk.rps),
                                common::fmt_int(c.wrk.rps),
                                detail
                                    .map(|d| format!(
                                        "; {:.2}x {detail_name}'s {} req/s",
                                        m.wrk.rps / d.wrk.rps,
                                        common::fmt_int(d.wrk.rps)
                                    ))
                                    .unwrap_or_default(),
                                m.hit_ratio()
                                    .map(|r| format!("{:.2} %", r * 100.0))
                                    .unwrap_or_else(|| "?".into())
                            ),
                        ));
                    }
                    None => section.notes.push(format!(
                        "{name}: the ratios to {ids_name} are not judged (its row is missing \
                         or failed)."
                    )),
                }
            }
            if let Some(m) = find(name, 1) {
                section.targets.push(Target::at_most(
                    &format!("{name}: unloaded p99 <= 5 ms (1 conn)"),
                    m.wrk.latency_ms.p99,
                    5.0,
                    format!(
                        "p99 {} ms over {} requests one at a time (p50 {} ms)",
                        common::fmt_ms(m.wrk.latency_ms.p99),
                        m.wrk.requests,
                        common::fmt_ms(m.wrk.latency_ms.p50)
                    ),
                ));
            }
        }
    }
    let at_256: Vec<&Measured> = measured
        .iter()
        .filter(|m| m.conns == 256 && m.peak_rss_mb.is_some())
        .collect();
    if let Some(worst) = at_256.iter().max_by(|a, b| {
        a.peak_rss_mb
            .unwrap_or(0.0)
            .total_cmp(&b.peak_rss_mb.unwrap_or(0.0))
    }) {
        let all = at_256
            .iter()
            .map(|m| format!("{} {:.1}", m.scenario, m.peak_rss_mb.unwrap_or(0.0)))
            .collect::<Vec<_>>()
            .join(", ");
        section.targets.push(Target::at_most(
            "API peak RSS <= 50 MB @256 conns",
            worst.peak_rss_mb.unwrap_or(0.0),
            50.0,
            format!(
                "worst of the rows at 256 connections ({}); all: {all}",
                worst.scenario
            ),
        ));
    }
}

// ---------------------------------------------------------------------- the bench state

struct Bench<'a> {
    opts: &'a Opts,
    /// What this run measures on which database.
    kind: Kind,
    db: Option<FreshDb>,
    /// PostgreSQL runs only.
    pg: Option<sqlx::PgPool>,
    /// The SQLite run: its database file (in `dir`) and a pool on it.
    sqlite: Option<(String, sqlx::SqlitePool)>,
    /// Scripts and parameter files.
    dir: tempfile::TempDir,
    server: Option<Child>,
    base: String,
    employer_token: String,
    candidate_tokens: Vec<String>,
    first_job_id: i64,
    /// The company the employer made through the API.
    company_id: i64,
    njobs: i64,
    words: Vec<String>,
    /// The broad searches (search_broad), in the order they are sent.
    broad: Vec<BroadQuery>,
    /// The searches of each mix (runs at scale only).
    mixes: Vec<(Mix, Vec<MixQuery>)>,
    /// Query plans of the slowest sample searches.
    plans: Vec<String>,
    seed_s: f64,
    /// Seconds each seeding step took.
    seed_steps: Vec<(&'static str, f64)>,
    cached_total: i64,
    /// The API's RSS before and after seeding (MiB).
    seed_rss: (Option<f64>, Option<f64>),
    redis_prefix: Option<String>,
    /// `jobboard search rebuild` on the seeded database: seconds, MiB on disk.
    index_build: Option<(f64, f64)>,
    /// Facts checked along the way (also in the JSON).
    checks: Vec<String>,
}

impl<'a> Bench<'a> {
    /// A fresh database, the API on it, the seeded data.
    async fn start(opts: &'a Opts, kind: Kind) -> Result<Bench<'a>> {
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

    fn setup_json(&self) -> Value {
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
    async fn start_server(&mut self, redis: Option<String>) -> Result<()> {
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
        ];
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

    fn pg(&self) -> Result<&sqlx::PgPool> {
        self.pg.as_ref().context("this run is not on PostgreSQL")
    }

    async fn pg_count(&self, sql: &str) -> Result<i64> {
        Ok(sqlx::query_scalar(sql).fetch_one(self.pg()?).await?)
    }

    fn server(&mut self) -> Result<&mut Child> {
        self.server.as_mut().context("the API is not running")
    }

    // ------------------------------------------------------------------ seeding

    async fn seed(&mut self) -> Result<()> {
        let client = common::http_client();
        // The employer and the company, through the API.
        self.employer_token = self
            .account(
                &client,
                "employer@bench.example",
                "Erin Employer",
                "employer",
            )
            .await?;
        let company: Value = api(
            client
                .post(format!("{}/api/companies", self.base))
                .bearer_auth(&self.employer_token)
                .json(
                    &json!({"name": COMPANY, "website": "https://northwind.example",
                              "description": "Makers of dependable software."}),
                ),
            201,
        )
        .await
        .context("creating the company")?;
        let company_id = company["id"]
            .as_i64()
            .context("the company has no integer id")?;
        self.company_id = company_id;

        // The companies and the jobs, in bulk.
        let t = Instant::now();
        let njobs = self.kind.jobs(self.opts);
        common::progress(SECTION, format!("generating {njobs} jobs"));
        let company_names = company_names(company_count(njobs));
        let jobs = generate_jobs(njobs, &company_names)?;
        let df = document_frequencies(&jobs);
        self.words = query_words(&df, jobs.len());
        self.broad = broad_queries(&jobs, &df, BROAD_QUERIES);
        self.seed_steps
            .push(("generate", t.elapsed().as_secs_f64()));
        let t = Instant::now();
        let company_ids = insert_companies(
            self.pg.as_ref(),
            self.sqlite.as_ref().map(|s| &s.1),
            company_id,
            &company_names,
        )
        .await?;
        // The employer of the first company (made through the API) is made a member of every
        // seeded company, so that the applications `apply` makes to any seeded job are theirs
        // to move in `status_change` (to anyone else an application is 404).
        let members = format!(
            "INSERT INTO company_members (company_id, user_id) SELECT c.id, m.user_id \
             FROM companies c JOIN company_members m ON m.company_id = {company_id} \
             WHERE c.id <> {company_id}"
        );
        match (&self.pg, &self.sqlite) {
            (Some(pool), _) => {
                sqlx::query(&members).execute(pool).await?;
            }
            (None, Some((_, pool))) => {
                sqlx::query(&members).execute(pool).await?;
            }
            (None, None) => bail!("no database"),
        }
        if self.kind != Kind::Main {
            self.mixes = mix_queries(&df, jobs.len(), &company_ids, MIX_QUERIES);
        }
        self.seed_steps.push(("queries", t.elapsed().as_secs_f64()));
        common::progress(
            SECTION,
            format!("inserting {njobs} jobs of {} companies", company_ids.len()),
        );
        let t = Instant::now();
        const IDS: &str = "SELECT MIN(id), MAX(id), COUNT(*) FROM jobs WHERE status = 'open'";
        let (min, max, count): (i64, i64, i64) = match (&self.pg, &self.sqlite) {
            (Some(pool), _) => {
                // Bulk loading goes faster with the search indexes built afterwards, from the
                // definitions the migrations gave them.
                let indexes: Vec<String> = sqlx::query_scalar(
                    "SELECT indexdef FROM pg_indexes WHERE tablename = 'jobs' \
                     AND indexname IN ('jobs_search', 'jobs_open_newest')",
                )
                .fetch_all(pool)
                .await?;
                sqlx::query("DROP INDEX jobs_search, jobs_open_newest")
                    .execute(pool)
                    .await?;
                for chunk in jobs.chunks(SEED_CHUNK) {
                    seed::insert_pg_jobs(pool, &company_ids, chunk).await?;
                }
                self.seed_steps.push(("insert", t.elapsed().as_secs_f64()));
                let t = Instant::now();
                for def in indexes {
                    sqlx::query(&def).execute(pool).await?;
                }
                self.seed_steps.push(("indexes", t.elapsed().as_secs_f64()));
                sqlx::query_as(IDS).fetch_one(pool).await?
            }
            (None, Some((_, pool))) => {
                // Through the table, so the triggers index every job (both full-text indexes);
                // one transaction per SQLITE_SEED_TX rows.
                seed::insert_sqlite_jobs(pool, &company_ids, &jobs, SQLITE_SEED_TX).await?;
                self.seed_steps
                    .push(("insert+index", t.elapsed().as_secs_f64()));
                sqlx::query_as(IDS).fetch_one(pool).await?
            }
            (None, None) => bail!("no database"),
        };
        drop(jobs);
        ensure!(
            count == njobs as i64 && max - min + 1 == count,
            "the seeded job ids are not contiguous ({count} jobs, ids {min}..{max})"
        );
        // The store relies on ids following created_at (SQLite reads FTS5 in rowid order as the
        // newest-first order): check that the load kept it.
        const BACKWARDS: &str = "SELECT COUNT(*) FROM (SELECT created_at < LAG(created_at) \
                                 OVER (ORDER BY id) AS back FROM jobs) t WHERE back";
        let backwards: i64 = match (&self.pg, &self.sqlite) {
            (Some(pool), _) => sqlx::query_scalar(BACKWARDS).fetch_one(pool).await?,
            (None, Some((_, pool))) => sqlx::query_scalar(BACKWARDS).fetch_one(pool).await?,
            (None, None) => 0,
        };
        ensure!(
            backwards == 0,
            "{backwards} seeded jobs have a created_at earlier than a lower id's"
        );
        self.first_job_id = min;
        self.njobs = count;
        common::progress(
            SECTION,
            format!(
                "jobs inserted in {:.1} s; {}",
                t.elapsed().as_secs_f64(),
                if self.pg.is_some() {
                    "VACUUM ANALYZE"
                } else {
                    "ANALYZE"
                }
            ),
        );
        let t = Instant::now();
        match (&self.pg, &self.sqlite) {
            (Some(pool), _) => {
                sqlx::query("VACUUM (ANALYZE)").execute(pool).await?;
            }
            (None, Some((_, pool))) => {
                sqlx::query("ANALYZE").execute(pool).await?;
                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                    .execute(pool)
                    .await?;
            }
            (None, None) => {}
        }
        self.seed_steps.push(("analyze", t.elapsed().as_secs_f64()));

        // Candidates, through the API (each costs two password hashes on the server); the
        // search-only runs need none.
        let n = match self.kind {
            Kind::Main if self.opts.quick => 40,
            Kind::Main => 100,
            _ => 0,
        };
        let t = Instant::now();
        let results: Vec<Result<String>> = futures::stream::iter(0..n)
            .map(|i| {
                let client = client.clone();
                let this = &*self;
                async move {
                    this.account(
                        &client,
                        &format!("candidate{i}@bench.example"),
                        &format!("Candidate {i}"),
                        "candidate",
                    )
                    .await
                }
            })
            .buffer_unordered(4)
            .collect()
            .await;
        self.candidate_tokens = results.into_iter().collect::<Result<_>>()?;
        common::progress(
            SECTION,
            format!(
                "{n} candidates registered in {:.1} s",
                t.elapsed().as_secs_f64()
            ),
        );

        Ok(())
    }

    /// The API finds what was seeded.
    async fn check_seeded(&mut self) -> Result<()> {
        let client = common::http_client();
        let found: Value = api(client.get(format!("{}{CACHED_QUERY}", self.base)), 200)
            .await
            .context("searching the seeded jobs")?;
        self.cached_total = found["total"].as_i64().unwrap_or(0);
        ensure!(
            self.cached_total > 0 && found["items"].as_array().is_some_and(|a| !a.is_empty()),
            "a search for the seeded jobs found nothing: {}",
            common::first_line(&found.to_string())
        );
        let other = format!("{}/api/jobs?q={}", self.base, self.words[0]);
        let found: Value = api(client.get(&other), 200).await?;
        ensure!(
            found["total"].as_i64().unwrap_or(0) > 0,
            "a search for {:?} found nothing",
            self.words[0]
        );
        api(
            client.get(format!("{}/api/jobs/{}", self.base, self.first_job_id)),
            200,
        )
        .await
        .context("reading a seeded job")?;
        Ok(())
    }

    /// The console rows' data: processed events and dead letters, and an operator given the
    /// rights by the binary, as an operator would; returns the operator's token.
    async fn seed_console(&mut self) -> Result<String> {
        let t = Instant::now();
        let pool = self.pg()?.clone();
        sqlx::query(&format!(
            "INSERT INTO processed_events (event_id, status, attempts, last_error, \
             first_failed_at, updated_at) \
             SELECT 'bench-' || g, \
               CASE WHEN g % 50 = 0 THEN 'dead' WHEN g % 40 = 0 THEN 'pending' ELSE 'done' END, \
               CASE WHEN g % 50 = 0 THEN 5 WHEN g % 40 = 0 THEN 1 ELSE 0 END, \
               CASE WHEN g % 40 = 0 OR g % 50 = 0 THEN '451 try again later' END, \
               NULL, \
               (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT - g * (7200000 / {CONSOLE_EVENTS}) \
             FROM generate_series(1, {CONSOLE_EVENTS}) g"
        ))
        .execute(&pool)
        .await
        .context("seeding processed events")?;
        sqlx::query(&format!(
            "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, \
             last_failed_at, invalid) \
             SELECT 'bench-dead-' || g, 'permanent failure: 550 mailbox unavailable', 5, \
               '{{\"type\":\"application.status_changed\",\"event_id\":\"bench-dead-' || g || '\"}}', \
               (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT - g * 1000, \
               (EXTRACT(EPOCH FROM clock_timestamp()) * 1000)::BIGINT - g * 100, FALSE \
             FROM generate_series(1, {CONSOLE_DEAD_LETTERS}) g"
        ))
        .execute(&pool)
        .await
        .context("seeding dead letters")?;
        sqlx::query("VACUUM ANALYZE processed_events, dead_letters")
            .execute(&pool)
            .await?;
        let client = common::http_client();
        let email = "operator@bench.example";
        let token = self
            .account(&client, email, "Operator", "candidate")
            .await?;
        let db_url = self.db.as_ref().context("no database")?.url.clone();
        let out = std::process::Command::new(&self.opts.bin)
            .args(["admin", "grant", email])
            .env("DATABASE_URL", db_url)
            .env("RUST_LOG", "warn")
            .output()
            .context("running jobboard admin grant")?;
        ensure!(
            out.status.success(),
            "jobboard admin grant failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        self.seed_steps
            .push(("console events and dead letters", t.elapsed().as_secs_f64()));
        self.checks.push(format!(
            "console: {CONSOLE_EVENTS} processed events and {CONSOLE_DEAD_LETTERS} dead letters \
             added in {:.1} s",
            t.elapsed().as_secs_f64()
        ));
        Ok(token)
    }

    /// Registers and logs in; returns the access token.
    async fn account(
        &self,
        client: &reqwest::Client,
        email: &str,
        name: &str,
        role: &str,
    ) -> Result<String> {
        api(
            client
                .post(format!("{}/api/auth/register", self.base))
                .json(&json!({"email": email, "password": PASSWORD, "name": name, "role": role})),
            201,
        )
        .await
        .with_context(|| format!("registering {email}"))?;
        let token: Value = api(
            client
                .post(format!("{}/api/auth/token", self.base))
                .json(&json!({"email": email, "password": PASSWORD})),
            200,
        )
        .await
        .with_context(|| format!("logging in {email}"))?;
        token["access_token"]
            .as_str()
            .map(str::to_string)
            .context("the token answer has no access_token")
    }

    // ------------------------------------------------------------------ scenarios

    async fn run_all(&mut self, section: &mut Section, out: &mut Vec<Measured>) {
        let script = |dir: &Path, name: &str, body: &str| common::wrk_script(dir, name, body);
        let dir = self.dir.path().to_path_buf();

        // search_cached_memory
        match script(&dir, "fixed", "") {
            Ok(s) => {
                let mut sc = Fixed::new("search_cached_memory", CACHED_QUERY, s);
                self.levels(&mut sc, section, out).await;
            }
            Err(e) => common::record_failure(section, "search_cached_memory", &e),
        }

        // job_detail
        match script(&dir, "job_detail", include_str!("wrk_job_detail.lua")) {
            Ok(s) => {
                let mut sc = JobDetail {
                    name: "job_detail",
                    script: s,
                    params: dir.join("job_detail.params.lua"),
                    first_id: self.first_job_id,
                    njobs: self.njobs,
                    runs: 0,
                };
                self.levels(&mut sc, section, out).await;
            }
            Err(e) => common::record_failure(section, "job_detail", &e),
        }

        // apply
        let mut apply_rps = BTreeMap::new();
        match script(&dir, "apply", include_str!("wrk_apply.lua")) {
            Ok(s) => {
                let mut sc = Apply {
                    script: s,
                    params: dir.join("apply.params.lua"),
                    tokens: self.candidate_tokens.join(","),
                    ncand: self.candidate_tokens.len() as u64,
                    first_id: self.first_job_id,
                    njobs: self.njobs as u64,
                    start: vec![0; common::WRK_THREADS as usize],
                };
                let before = out.len();
                self.levels(&mut sc, section, out).await;
                for m in &out[before..] {
                    apply_rps.insert(m.conns, m.wrk.rps);
                }
                match self.pg_count("SELECT COUNT(*) FROM applications").await {
                    Ok(n) => self.checks.push(format!(
                        "apply: {n} applications in the database after its runs (warm-ups included)"
                    )),
                    Err(e) => common::record_failure(section, "apply count", &e),
                }
            }
            Err(e) => common::record_failure(section, "apply", &e),
        }

        // status_change, on the applications apply made
        let ids: Result<Vec<i64>> = match self.pg() {
            Ok(pool) => sqlx::query_scalar(
                "SELECT id FROM applications WHERE status = 'submitted' ORDER BY id",
            )
            .fetch_all(pool)
            .await
            .context("listing the applications"),
            Err(e) => Err(e),
        };
        match (
            ids,
            script(&dir, "status_change", include_str!("wrk_status_change.lua")),
        ) {
            (Ok(ids), Ok(s)) => {
                common::progress(
                    SECTION,
                    format!("{} applications to move through the workflow", ids.len()),
                );
                let mut sc = StatusChange {
                    script: s,
                    params: dir.join("status_change.params.lua"),
                    token: self.employer_token.clone(),
                    ids,
                    cursor: 0,
                    slice: Vec::new(),
                    last_rps: None,
                    apply_rps,
                };
                self.levels(&mut sc, section, out).await;
                match self.status_counts().await {
                    Ok(line) => self.checks.push(line),
                    Err(e) => common::record_failure(section, "status_change count", &e),
                }
            }
            (Err(e), _) | (_, Err(e)) => common::record_failure(section, "status_change", &e),
        }

        // console_queue, console_dead_letters
        if self.opts.wants("console_") {
            match self.seed_console().await {
                Ok(token) => {
                    for (name, mode) in [
                        ("console_queue", "queue"),
                        ("console_dead_letters", "dead_letters"),
                    ] {
                        match script(&dir, name, include_str!("wrk_console.lua")) {
                            Ok(s) => {
                                let mut sc = Console {
                                    name,
                                    mode,
                                    params: dir.join(format!("{name}.params.lua")),
                                    script: s,
                                    token: token.clone(),
                                    runs: 0,
                                };
                                self.levels(&mut sc, section, out).await;
                            }
                            Err(e) => common::record_failure(section, name, &e),
                        }
                    }
                }
                Err(e) => common::record_failure(section, "console seeding", &e),
            }
        }

        self.run_searches(section, out, &common::CONN_LEVELS).await;

        // search_cached_redis, on a restarted server
        let prefix = format!("jbbench:{}:", uuid::Uuid::new_v4().simple());
        self.redis_prefix = Some(prefix.clone());
        match self.start_server(Some(prefix)).await {
            Ok(()) => match script(&dir, "fixed", "") {
                Ok(s) => {
                    let mut sc = Fixed::new("search_cached_redis", CACHED_QUERY, s);
                    self.levels(&mut sc, section, out).await;
                }
                Err(e) => common::record_failure(section, "search_cached_redis", &e),
            },
            Err(e) => common::record_failure(section, "search_cached_redis", &e),
        }
    }

    /// The search mixes (those `--scenario` keeps), each with a sample without load and the
    /// plans of its slowest searches, at 16 connections and at one; `job_detail` first, on the
    /// same server and database, whenever a mix runs.
    async fn run_mixes(&mut self, section: &mut Section, out: &mut Vec<Measured>) {
        let kind = self.kind;
        let wanted: Vec<Mix> = MIXES
            .into_iter()
            .filter(|m| self.opts.wants(m.row(kind)))
            .collect();
        let detail = mix_detail_row(kind);
        let facets = facets_row(kind);
        let ids = ids_row(kind);
        if wanted.is_empty()
            && !self.opts.wants(detail)
            && !self.opts.wants(facets)
            && !self.opts.wants(ids)
            && !self.opts.wants(cursor_row(kind))
        {
            return;
        }
        let dir = self.dir.path().to_path_buf();
        match common::wrk_script(&dir, detail, include_str!("wrk_job_detail.lua")) {
            Ok(s) => {
                let mut sc = JobDetail {
                    name: detail,
                    script: s,
                    params: dir.join(format!("{detail}.params.lua")),
                    first_id: self.first_job_id,
                    njobs: self.njobs,
                    runs: 0,
                };
                self.run_levels(&mut sc, section, out, &MIX_LEVELS).await;
            }
            Err(e) => common::record_failure(section, detail, &e),
        }
        // The pages of the mixes by their ids: all of them (the ceiling of the facets row),
        // then each mix's just before it.
        let wants_ids = self.opts.wants(ids)
            || MIXES
                .iter()
                .any(|m| wanted.contains(m) && self.opts.wants(m.ids_row(kind)));
        let mut by_ids: Vec<(Mix, Vec<String>)> = Vec::new();
        if wants_ids {
            match self.ids_pages().await {
                Ok(pages) => by_ids = pages,
                Err(e) => common::record_failure(section, ids, &e),
            }
        }
        if self.opts.wants(ids) && !by_ids.is_empty() {
            match common::wrk_script(&dir, ids, include_str!("wrk_search_mix.lua")) {
                Ok(s) => {
                    // Taken in turn from each mix, as the facets row takes the searches.
                    let longest = by_ids.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
                    let paths = (0..longest)
                        .flat_map(|i| by_ids.iter().filter_map(move |(_, p)| p.get(i)))
                        .cloned()
                        .collect();
                    let mut sc = MixScenario {
                        name: ids,
                        script: s,
                        params: dir.join(format!("{ids}.params.lua")),
                        paths,
                        base: 0,
                        repeats_ok: true,
                    };
                    self.run_levels(&mut sc, section, out, &MIX_LEVELS).await;
                }
                Err(e) => common::record_failure(section, ids, &e),
            }
        }
        let mixes = std::mem::take(&mut self.mixes);
        for (mix, queries) in &mixes {
            let name = mix.row(kind);
            if !wanted.contains(mix) {
                continue;
            }
            if queries.len() < 200 {
                common::record_failure(
                    section,
                    name,
                    &anyhow::anyhow!(
                        "only {} distinct searches could be made from the seeded jobs",
                        queries.len()
                    ),
                );
                continue;
            }
            let ids_name = mix.ids_row(kind);
            if self.opts.wants(ids_name)
                && let Some((_, paths)) = by_ids.iter().find(|(m, _)| m == mix)
            {
                match common::wrk_script(&dir, ids_name, include_str!("wrk_search_mix.lua")) {
                    Ok(s) => {
                        let mut sc = MixScenario {
                            name: ids_name,
                            script: s,
                            params: dir.join(format!("{ids_name}.params.lua")),
                            paths: paths.clone(),
                            base: 0,
                            repeats_ok: true,
                        };
                        self.run_levels(&mut sc, section, out, &[16]).await;
                    }
                    Err(e) => common::record_failure(section, ids_name, &e),
                }
            }
            match common::wrk_script(&dir, name, include_str!("wrk_search_mix.lua")) {
                Ok(s) => {
                    // The sample comes from the far end of the list, which the runs do not reach.
                    let sample: Vec<(String, JobSearch)> = queries
                        .iter()
                        .rev()
                        .take(100)
                        .map(|q| (q.path(), q.search()))
                        .collect();
                    self.sample(section, name, sample).await;
                    let mut sc = MixScenario {
                        name,
                        script: s,
                        params: dir.join(format!("{name}.params.lua")),
                        paths: queries.iter().map(MixQuery::path).collect(),
                        base: 0,
                        repeats_ok: false,
                    };
                    self.run_levels(&mut sc, section, out, &MIX_LEVELS).await;
                }
                Err(e) => common::record_failure(section, name, &e),
            }
        }
        if self.opts.wants(facets) {
            // Every mix's searches, taken in turn, each asking for the three facets.
            let lists: Vec<Vec<String>> = mixes
                .iter()
                .map(|(_, q)| q.iter().map(MixQuery::path).collect())
                .collect();
            let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
            let paths: Vec<String> = (0..longest)
                .flat_map(|i| lists.iter().filter_map(move |l| l.get(i)))
                .map(|p| format!("{p}&facets={FACETS}"))
                .collect();
            match common::wrk_script(&dir, facets, include_str!("wrk_search_mix.lua")) {
                Ok(s) => {
                    let mut sc = MixScenario {
                        name: facets,
                        script: s,
                        params: dir.join(format!("{facets}.params.lua")),
                        paths,
                        base: 0,
                        repeats_ok: false,
                    };
                    self.run_levels(&mut sc, section, out, &MIX_LEVELS).await;
                }
                Err(e) => common::record_failure(section, facets, &e),
            }
        }
        let (cursor, cursor_ids) = (cursor_row(kind), cursor_ids_row(kind));
        if self.opts.wants(cursor) || self.opts.wants(cursor_ids) {
            match self.cursor_pages(&mixes).await {
                Ok((paths, by_ids)) => {
                    for (name, paths, repeats_ok, levels) in [
                        (cursor_ids, by_ids, true, &[16][..]),
                        (cursor, paths, false, &MIX_LEVELS[..]),
                    ] {
                        if !self.opts.wants(name) {
                            continue;
                        }
                        match common::wrk_script(&dir, name, include_str!("wrk_search_mix.lua")) {
                            Ok(s) => {
                                let mut sc = MixScenario {
                                    name,
                                    script: s,
                                    params: dir.join(format!("{name}.params.lua")),
                                    paths,
                                    base: 0,
                                    repeats_ok,
                                };
                                self.run_levels(&mut sc, section, out, levels).await;
                            }
                            Err(e) => common::record_failure(section, name, &e),
                        }
                    }
                }
                Err(e) => common::record_failure(section, cursor, &e),
            }
        }
        self.mixes = mixes;
    }

    /// The newest `seq` of the job-change log.
    async fn newest_change(&self) -> Result<i64> {
        newest_change(self.pg.as_ref(), self.sqlite.as_ref().map(|(_, p)| p)).await
    }

    /// How far the API's search index runs behind job writes at [`LAG_WRITES_PER_SEC`] for
    /// [`LAG_SECS`]: creates and title edits through the API, one at a time on a clock; after
    /// each answer, the log's newest `seq`. Meanwhile, every 10 ms, the index's applied `seq`
    /// (`search_index_applied_seq` on `/metrics`) and the log's newest: a write's lag is the
    /// time from its answer to the first sample whose applied `seq` reaches it, and each sample
    /// gives `search_index_lag` (newest - applied) as it was then.
    async fn run_index_lag(&mut self, section: &mut Section) {
        let name = lag_row(self.kind);
        if !self.opts.wants(name) {
            return;
        }
        common::progress(
            SECTION,
            format!("{name}: {LAG_WRITES_PER_SEC} job writes/s for {LAG_SECS} s"),
        );
        match self.index_lag().await {
            Ok((check, p99_s)) => {
                section.targets.push(Target::at_most(
                    &format!(
                        "{name}: a write's index lag p99 <= 1 s at {LAG_WRITES_PER_SEC} writes/s"
                    ),
                    p99_s,
                    1.0,
                    check.clone(),
                ));
                self.checks.push(format!("{name}: {check}"));
            }
            Err(e) => common::record_failure(section, name, &e),
        }
    }

    async fn index_lag(&self) -> Result<(String, f64)> {
        let client = common::http_client();
        let metrics_url = format!("{}/metrics", self.base);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        // The gauge is there once the follower has finished a round since /metrics was first
        // read: wait for it (a process that has served nothing yet may not show it at once).
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let text = client.get(&metrics_url).send().await?.text().await?;
            if metric_value(&text, "search_index_applied_seq").is_some() {
                break;
            }
            ensure!(
                Instant::now() < deadline,
                "no search_index_applied_seq on /metrics after 10 s: {}",
                text.lines()
                    .filter(|l| l.contains("search_index"))
                    .collect::<Vec<_>>()
                    .join(" / ")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Samples: (when, applied, newest).
        let sampler = {
            let client = client.clone();
            let metrics_url = metrics_url.clone();
            let stop = stop.clone();
            let pg = self.pg.clone();
            let sqlite = self.sqlite.as_ref().map(|(_, p)| p.clone());
            tokio::spawn(async move {
                let mut samples: Vec<(Instant, i64, i64)> = Vec::new();
                let mut tick = tokio::time::interval(Duration::from_millis(10));
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    tick.tick().await;
                    let at = Instant::now();
                    let text = client.get(&metrics_url).send().await?.text().await?;
                    let applied =
                        metric_value(&text, "search_index_applied_seq").with_context(|| {
                            format!(
                                "no search_index_applied_seq on /metrics: {}",
                                text.lines()
                                    .filter(|l| l.contains("search_index"))
                                    .collect::<Vec<_>>()
                                    .join(" / ")
                            )
                        })? as i64;
                    let newest = newest_change(pg.as_ref(), sqlite.as_ref()).await?;
                    samples.push((at, applied, newest));
                }
                anyhow::Ok(samples)
            })
        };
        let applies = |text: &str| {
            (
                metric_value(text, "search_index_apply_seconds_sum").unwrap_or(0.0),
                metric_value(text, "search_index_apply_seconds_count").unwrap_or(0.0),
            )
        };
        let applies_before = applies(&client.get(&metrics_url).send().await?.text().await?);
        let total = LAG_WRITES_PER_SEC * LAG_SECS;
        let mut writes: Vec<(Instant, i64)> = Vec::with_capacity(total as usize);
        let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / LAG_WRITES_PER_SEC));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let started = Instant::now();
        let mut job = 0;
        let result: Result<()> = async {
            for i in 0..total {
                tick.tick().await;
                let title = format!("Index lag probe {i}");
                if i % 2 == 0 {
                    let created = api(
                        client
                            .post(format!("{}/api/jobs", self.base))
                            .bearer_auth(&self.employer_token)
                            .json(&json!({"company_id": self.company_id, "title": title,
                                "description": "A job written while the index's lag is measured.",
                                "location": "Lisbon", "remote": false,
                                "employment_type": "full_time"})),
                        201,
                    )
                    .await?;
                    job = created["id"].as_i64().context("a created job's id")?;
                } else {
                    api(
                        client
                            .patch(format!("{}/api/jobs/{job}", self.base))
                            .bearer_auth(&self.employer_token)
                            .json(&json!({"title": title})),
                        200,
                    )
                    .await?;
                }
                let answered = Instant::now();
                writes.push((answered, self.newest_change().await?));
            }
            // Until the index has applied the last write (or 10 s).
            let last = writes.last().map(|w| w.1).unwrap_or(0);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                let text = client.get(&metrics_url).send().await?.text().await?;
                if metric_value(&text, "search_index_applied_seq").unwrap_or(0.0) as i64 >= last {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(())
        }
        .await;
        let elapsed = started.elapsed().as_secs_f64();
        stop.store(true, std::sync::atomic::Ordering::SeqCst);
        let applies_after = applies(&client.get(&metrics_url).send().await?.text().await?);
        let batches = applies_after.1 - applies_before.1;
        let apply_ms = if batches > 0.0 {
            (applies_after.0 - applies_before.0) / batches * 1000.0
        } else {
            0.0
        };
        let samples = sampler.await.context("the lag sampler panicked")??;
        result?;
        let mut lags: Vec<f64> = Vec::with_capacity(writes.len());
        let mut never = 0;
        for (answered, seq) in &writes {
            match samples
                .iter()
                .find(|(at, applied, _)| at >= answered && applied >= seq)
            {
                Some((at, _, _)) => lags.push(at.duration_since(*answered).as_secs_f64()),
                None => never += 1,
            }
        }
        ensure!(
            never == 0,
            "{never} of {} writes were never seen applied by the index within 10 s",
            writes.len()
        );
        lags.sort_by(f64::total_cmp);
        let mut behind: Vec<i64> = samples.iter().map(|(_, a, n)| (n - a).max(0)).collect();
        behind.sort_unstable();
        let pct =
            |v: &[f64], p: f64| v[((v.len() as f64 * p).ceil() as usize).clamp(1, v.len()) - 1];
        let p99 = pct(&lags, 0.99);
        let behind_p99 =
            behind[((behind.len() as f64 * 0.99).ceil() as usize).clamp(1, behind.len()) - 1];
        let check = format!(
            "{} writes in {elapsed:.1} s ({:.0}/s); a write's lag until the index applied it \
             (10 ms samples): p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; search_index_lag \
             sampled {} times: p99 {behind_p99}, max {} job changes; {batches} batches \
             applied, {apply_ms:.1} ms each on average (search_index_apply_seconds, commit \
             included)",
            writes.len(),
            writes.len() as f64 / elapsed,
            pct(&lags, 0.5) * 1000.0,
            p99 * 1000.0,
            lags.last().copied().unwrap_or(0.0) * 1000.0,
            behind.len(),
            behind.last().copied().unwrap_or(0),
        );
        Ok((check, p99))
    }

    /// The pages of the mixes as `ids=` lookups: [`IDS_PAGES_PER_MIX`] searches of each mix
    /// (from the far end of its list, which the runs do not reach, before the 100 the sample
    /// takes), each asked once, unloaded; each non-empty page becomes
    /// `/api/jobs?ids=<its ids>&page_size=<as many>`, so the same jobs are read and rendered as
    /// the search rendered them, found by key instead of searched for.
    async fn ids_pages(&self) -> Result<Vec<(Mix, Vec<String>)>> {
        let client = common::http_client();
        let mut all = Vec::new();
        for (mix, queries) in &self.mixes {
            let mut paths = Vec::new();
            for q in queries.iter().rev().skip(100).take(IDS_PAGES_PER_MIX) {
                let page = api(client.get(format!("{}{}", self.base, q.path())), 200).await?;
                let ids: Vec<String> = page["items"]
                    .as_array()
                    .context("a search's items")?
                    .iter()
                    .filter_map(|j| j["id"].as_i64())
                    .map(|id| id.to_string())
                    .collect();
                if !ids.is_empty() {
                    // Commas encoded: the wrk script's list of paths is comma-separated.
                    paths.push(format!(
                        "/api/jobs?ids={}&page_size={}",
                        ids.join("%2C"),
                        ids.len()
                    ));
                }
            }
            ensure!(
                paths.len() >= 20,
                "only {} of {}'s pages held a job",
                paths.len(),
                mix.row(self.kind)
            );
            all.push((*mix, paths));
        }
        common::progress(
            SECTION,
            format!(
                "{} pages of the mixes to ask for by their ids",
                all.iter().map(|(_, p)| p.len()).sum::<usize>()
            ),
        );
        Ok(all)
    }

    /// The pages 2 to [`CURSOR_PAGES`] of up to [`CURSOR_SEARCHES`] distinct searches of the
    /// word mixes, each asked for by the `next` cursor of the page before (walked here once),
    /// and the same pages by their ids. A job write afterwards moves the search cache on, so
    /// that the walk leaves no cached page for the measured runs.
    async fn cursor_pages(
        &self,
        mixes: &[(Mix, Vec<MixQuery>)],
    ) -> Result<(Vec<String>, Vec<String>)> {
        let client = common::http_client();
        let mut bases = Vec::new();
        let mut seen = HashSet::new();
        for (mix, queries) in mixes {
            if !matches!(mix, Mix::Common | Mix::Pair | Mix::Filter) {
                continue;
            }
            for q in queries.iter().rev().skip(100) {
                let base = q.path().replace(&format!("&page={}&", q.page), "&");
                if seen.insert(base.clone()) {
                    bases.push(base);
                }
                if bases.len() >= CURSOR_SEARCHES {
                    break;
                }
            }
        }
        let (mut paths, mut by_ids) = (Vec::new(), Vec::new());
        for base in &bases {
            let mut page = api(client.get(format!("{}{base}&page=1", self.base)), 200).await?;
            for _ in 2..=CURSOR_PAGES {
                let Some(next) = page["next"].as_str().map(str::to_string) else {
                    break;
                };
                let path = format!("{base}&after={next}");
                page = api(client.get(format!("{}{path}", self.base)), 200).await?;
                let ids: Vec<String> = page["items"]
                    .as_array()
                    .context("a search's items")?
                    .iter()
                    .filter_map(|j| j["id"].as_i64())
                    .map(|id| id.to_string())
                    .collect();
                if ids.is_empty() {
                    break;
                }
                by_ids.push(format!(
                    "/api/jobs?ids={}&page_size={}",
                    ids.join("%2C"),
                    ids.len()
                ));
                paths.push(path);
            }
        }
        ensure!(
            paths.len() >= 200,
            "only {} pages could be reached by cursor from {} searches",
            paths.len(),
            bases.len()
        );
        api(
            client
                .post(format!("{}/api/jobs", self.base))
                .bearer_auth(&self.employer_token)
                .json(
                    &json!({"company_id": self.company_id, "title": "Cursor walk marker",
                    "description": "Written after the cursors were walked.",
                    "location": "Lisbon", "remote": false,
                    "employment_type": "full_time"}),
                ),
            201,
        )
        .await?;
        common::progress(
            SECTION,
            format!(
                "{} pages of {} searches to ask for by cursor",
                paths.len(),
                bases.len()
            ),
        );
        Ok((paths, by_ids))
    }

    /// The uncached searches: word pairs (search_uncached) and broad words with a pay filter
    /// (search_broad), each with a sample without load and the plans of its slowest searches.
    async fn run_searches(
        &mut self,
        section: &mut Section,
        out: &mut Vec<Measured>,
        levels: &[u32],
    ) {
        let dir = self.dir.path().to_path_buf();
        let (uncached, broad) = self.kind.search_names();
        if self.opts.wants(uncached) {
            match common::wrk_script(&dir, uncached, include_str!("wrk_search_uncached.lua")) {
                Ok(s) => {
                    let mut sc = Uncached::new(
                        uncached,
                        s,
                        dir.join(format!("{uncached}.params.lua")),
                        self.words.clone(),
                    );
                    let far = (0..100u64).map(|i| sc.combos.saturating_sub(1 + i * 7));
                    let sample: Vec<(String, JobSearch)> =
                        far.map(|n| (sc.path(n), sc.search(n))).collect();
                    self.sample(section, uncached, sample).await;
                    self.levels_at(&mut sc, section, out, levels).await;
                }
                Err(e) => common::record_failure(section, uncached, &e),
            }
        }
        if self.opts.wants(broad) {
            match common::wrk_script(&dir, broad, include_str!("wrk_search_broad.lua")) {
                Ok(s) => {
                    // The sample comes from the far end of the list, which the runs do not reach.
                    let sample: Vec<(String, JobSearch)> = self
                        .broad
                        .iter()
                        .rev()
                        .take(100)
                        .map(|q| (q.path(), q.search()))
                        .collect();
                    let mut sc = Broad {
                        name: broad,
                        script: s,
                        params: dir.join(format!("{broad}.params.lua")),
                        paths: self.broad.iter().map(BroadQuery::path).collect(),
                        start: vec![0; common::WRK_THREADS as usize],
                    };
                    self.sample(section, broad, sample).await;
                    self.levels_at(&mut sc, section, out, levels).await;
                }
                Err(e) => common::record_failure(section, broad, &e),
            }
        }
    }

    /// Sends the searches one at a time without load, to show what they find and how long one
    /// takes.
    async fn sample(
        &mut self,
        section: &mut Section,
        name: &str,
        sample: Vec<(String, JobSearch)>,
    ) {
        let client = common::http_client();
        let mut found = Vec::new();
        for (path, search) in sample {
            let t = Instant::now();
            match api(client.get(format!("{}{path}", self.base)), 200).await {
                Ok(body) => found.push((
                    t.elapsed().as_secs_f64() * 1000.0,
                    body["total"].as_i64().unwrap_or(0),
                    body["total_exact"].as_bool().unwrap_or(true),
                    path,
                    search,
                )),
                Err(e) => {
                    common::record_failure(section, &format!("{name} sample {path}"), &e);
                    return;
                }
            }
        }
        if found.is_empty() {
            return;
        }
        let n = found.len();
        let mut totals: Vec<i64> = found.iter().map(|f| f.1).collect();
        totals.sort_unstable();
        let capped = found.iter().filter(|f| !f.2).count();
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        let median_ms = found[n / 2].0;
        self.checks.push(format!(
            "{name}: {n} sample searches without load: {} find jobs, median total {}, {capped} \
             counted to the limit (total_exact false); median {} ms, slowest {} ms ({})",
            totals.iter().filter(|&&t| t > 0).count(),
            totals[n / 2],
            common::fmt_ms(median_ms),
            common::fmt_ms(found[0].0),
            found[0].3
        ));
        // The search index answers every search: there is no SQL plan to keep.
        let plans: Vec<serde_json::Value> = Vec::new();
        section.json[format!("{name}_sample")] = json!({
            "latency_ms": found.iter().map(|f| f.0).collect::<Vec<_>>(),
            "totals": totals,
            "capped": capped,
            "plans": plans,
        });
    }

    /// What status_change did, from the database.
    async fn status_counts(&self) -> Result<String> {
        let rows: Vec<(String, i64)> = sqlx::query_as(
            "SELECT status, COUNT(*) FROM applications GROUP BY status ORDER BY COUNT(*) DESC",
        )
        .fetch_all(self.pg()?)
        .await?;
        let events = self.pg_count("SELECT COUNT(*) FROM outbox").await?;
        Ok(format!(
            "status_change: {events} status-change events in the outbox (warm-ups included); \
             applications by status: {}",
            rows.iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// Runs `sc` at every connection level.
    async fn levels(
        &mut self,
        sc: &mut dyn Scenario,
        section: &mut Section,
        out: &mut Vec<Measured>,
    ) {
        self.levels_at(sc, section, out, &common::CONN_LEVELS).await;
    }

    /// Runs `sc` at these connection levels (unless `--scenario` leaves it out).
    async fn levels_at(
        &mut self,
        sc: &mut dyn Scenario,
        section: &mut Section,
        out: &mut Vec<Measured>,
        levels: &[u32],
    ) {
        if !self.opts.wants(sc.name()) {
            return;
        }
        self.run_levels(sc, section, out, levels).await;
    }

    /// Runs `sc` at these connection levels.
    async fn run_levels(
        &mut self,
        sc: &mut dyn Scenario,
        section: &mut Section,
        out: &mut Vec<Measured>,
        levels: &[u32],
    ) {
        for &conns in levels {
            common::progress(SECTION, format!("{}, {conns} connections", sc.name()));
            match self.level(sc, conns).await {
                Ok(m) => {
                    if let Some(f) = &m.failed {
                        common::push_failure(
                            &mut section.json,
                            &format!("{} {conns}", m.scenario),
                            f,
                        );
                        eprintln!("bench: {SECTION} / {} {conns} FAILED: {f}", m.scenario);
                    }
                    out.push(m);
                }
                Err(e) => common::record_failure(section, &format!("{} {conns}", sc.name()), &e),
            }
        }
    }

    /// A warm-up and a measured run of `sc` at `conns` connections.
    async fn level(&mut self, sc: &mut dyn Scenario, conns: u32) -> Result<Measured> {
        let secs = self.opts.duration_secs;
        let url = format!("{}{}", self.base, sc.path());
        let metrics = format!("{}/metrics", self.base);

        let args = sc.prepare(conns, common::WARMUP_SECS, true)?;
        let warm = common::run_wrk(&Wrk {
            url: &url,
            conns,
            secs: common::WARMUP_SECS,
            script: sc.script(),
            args,
        })
        .await
        .context("warm-up")?;
        sc.finish(&warm, true)?;
        self.server()?.check_running()?;

        let args = sc.prepare(conns, secs, false)?;
        let pid = self.server()?.pid;
        let rss_start = common::rss_mb(pid).ok();
        common::reset_peak_rss(pid)?;
        let before = cache_counts(&metrics).await?;
        let wrk = common::run_wrk(&Wrk {
            url: &url,
            conns,
            secs,
            script: sc.script(),
            args,
        })
        .await?;
        let peak = common::peak_rss_mb(pid).ok();
        self.server()?.check_running()?;
        let after = cache_counts(&metrics).await?;
        let cache = Some((after.0 - before.0, after.1 - before.1)).filter(|(h, m)| h + m > 0.0);
        let mut notes = sc.finish(&wrk, false)?;
        if let Some((h, m)) = cache {
            notes.insert(0, format!("cache hits {:.1} %", 100.0 * h / (h + m)));
        }
        notes.insert(0, format!("{} B/resp", wrk.bytes / wrk.requests.max(1)));
        let failed = if wrk.requests == 0 {
            Some("no request completed".to_string())
        } else if wrk.non_2xx_ratio() > 0.01 {
            Some(format!(
                "{:.1} % of the answers were not 2xx",
                100.0 * wrk.non_2xx_ratio()
            ))
        } else {
            None
        };
        Ok(Measured {
            scenario: sc.name(),
            conns,
            wrk,
            rss_start_mb: rss_start,
            peak_rss_mb: peak,
            cache,
            notes,
            failed,
        })
    }

    /// Stops the server, deletes the Redis keys and drops the database.
    async fn finish(&mut self, section: &mut Section) {
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
async fn api(req: reqwest::RequestBuilder, want: u16) -> Result<Value> {
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

/// The newest `seq` of the job-change log, on whichever database the run has.
async fn newest_change(
    pg: Option<&sqlx::PgPool>,
    sqlite: Option<&sqlx::SqlitePool>,
) -> Result<i64> {
    const SQL: &str = "SELECT COALESCE(MAX(seq), 0) FROM job_changes";
    Ok(match (pg, sqlite) {
        (Some(pool), _) => sqlx::query_scalar(SQL).fetch_one(pool).await?,
        (None, Some(pool)) => sqlx::query_scalar(SQL).fetch_one(pool).await?,
        (None, None) => bail!("no database"),
    })
}

/// The value of an unlabelled metric in a Prometheus text page.
fn metric_value(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

/// Search-cache hits and misses so far, from `/metrics`.
async fn cache_counts(metrics_url: &str) -> Result<(f64, f64)> {
    let samples = common::scrape(
        metrics_url,
        jobboard::telemetry::SEARCH_CACHE_REQUESTS_TOTAL,
    )
    .await?;
    let get = |result: &str| {
        samples
            .iter()
            .filter(|(labels, _)| labels.contains(&format!("result=\"{result}\"")))
            .map(|(_, v)| *v)
            .sum::<f64>()
    };
    Ok((get("hit"), get("miss")))
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

// ---------------------------------------------------------------------- scenarios

/// One load scenario: its script, and the parameters of each run.
trait Scenario {
    fn name(&self) -> &'static str;
    fn script(&self) -> &Path;
    /// The URL path wrk is given (dynamic scripts build their own paths).
    fn path(&self) -> String {
        String::new()
    }
    /// Writes the parameters of the next run; returns the script's arguments.
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
    /// Takes note of a finished run; returns remarks for the row.
    fn finish(&mut self, _r: &WrkResult, _warmup: bool) -> Result<Vec<String>> {
        Ok(Vec::new())
    }
}

/// Processed events and dead letters added for the console rows.
const CONSOLE_EVENTS: i64 = 100_000;
const CONSOLE_DEAD_LETTERS: i64 = 10_000;

/// An operator's reads (`wrk_console.lua`).
struct Console {
    name: &'static str,
    mode: &'static str,
    script: PathBuf,
    params: PathBuf,
    token: String,
    runs: i64,
}

impl Scenario for Console {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        self.runs += 1;
        common::lua_params(
            &self.params,
            &[
                ("token", LuaValue::Str(self.token.clone())),
                ("mode", LuaValue::Str(self.mode.to_string())),
                ("pages", LuaValue::Int(CONSOLE_DEAD_LETTERS / 20)),
                ("seed", LuaValue::Int(3000 + self.runs)),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
}

/// The same GET every request.
struct Fixed {
    name: &'static str,
    path: &'static str,
    script: PathBuf,
}

impl Fixed {
    fn new(name: &'static str, path: &'static str, script: PathBuf) -> Fixed {
        Fixed { name, path, script }
    }
}

impl Scenario for Fixed {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn path(&self) -> String {
        self.path.to_string()
    }
}

struct JobDetail {
    name: &'static str,
    script: PathBuf,
    params: PathBuf,
    first_id: i64,
    njobs: i64,
    runs: i64,
}

impl Scenario for JobDetail {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        self.runs += 1;
        common::lua_params(
            &self.params,
            &[
                ("first_id", LuaValue::Int(self.first_id)),
                ("njobs", LuaValue::Int(self.njobs)),
                ("seed", LuaValue::Int(1000 + self.runs)),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
}

/// The highest request number any thread reached (counts are per thread, numbers interleave).
/// Takes each wrk thread's request counter from a finished run (the next run continues from
/// there); returns how many request numbers are used up.
fn advance(start: &mut Vec<u64>, r: &WrkResult) -> Result<u64> {
    ensure!(
        r.counts.len() == start.len(),
        "wrk reported {} threads, expected {}",
        r.counts.len(),
        start.len()
    );
    *start = r.counts.clone();
    Ok(requests_numbered(start))
}

fn requests_numbered(start: &[u64]) -> u64 {
    start
        .iter()
        .enumerate()
        .map(|(t, c)| c * start.len() as u64 + t as u64)
        .max()
        .unwrap_or(0)
}

struct Apply {
    script: PathBuf,
    params: PathBuf,
    tokens: String,
    ncand: u64,
    first_id: i64,
    njobs: u64,
    /// Per wrk thread, its next request number (continues across runs).
    start: Vec<u64>,
}

impl Scenario for Apply {
    fn name(&self) -> &'static str {
        "apply"
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        ensure!(self.ncand > 0, "no candidates");
        let stride = (self.njobs / self.ncand).max(1);
        common::lua_params(
            &self.params,
            &[
                ("tokens", LuaValue::Str(self.tokens.clone())),
                ("first_id", LuaValue::Int(self.first_id)),
                ("njobs", LuaValue::Int(self.njobs as i64)),
                ("stride", LuaValue::Int(stride as i64)),
                ("nthreads", LuaValue::Int(common::WRK_THREADS as i64)),
                (
                    "start",
                    LuaValue::Ints(self.start.iter().map(|&c| c as i64).collect()),
                ),
                (
                    "body",
                    LuaValue::Str(
                        r#"{"cover_letter":"I have followed your work for years and would love to join the team."}"#
                            .into(),
                    ),
                ),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
    fn finish(&mut self, r: &WrkResult, _warmup: bool) -> Result<Vec<String>> {
        // Beyond ncand * njobs the (candidate, job) pairs would repeat.
        let used = advance(&mut self.start, r)?;
        ensure!(
            used < self.ncand * self.njobs,
            "apply ran out of distinct (candidate, job) pairs ({used} of {})",
            self.ncand * self.njobs
        );
        Ok(Vec::new())
    }
}

struct StatusChange {
    script: PathBuf,
    params: PathBuf,
    token: String,
    /// Applications in `submitted`, taken in slices, one per run.
    ids: Vec<i64>,
    cursor: usize,
    slice: Vec<i64>,
    last_rps: Option<f64>,
    apply_rps: BTreeMap<u32, f64>,
}

impl Scenario for StatusChange {
    fn name(&self) -> &'static str {
        "status_change"
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, conns: u32, secs: u64, _warmup: bool) -> Result<Vec<String>> {
        // Enough applications for this run's moves (four each) at twice the rate expected,
        // and more per thread than it has requests in flight.
        let rate = self
            .last_rps
            .or_else(|| self.apply_rps.get(&conns).copied())
            .unwrap_or(3000.0);
        let wanted = (rate * secs as f64 * 2.0 / 4.0).ceil() as usize + 2 * conns as usize + 2;
        let left = self.ids.len() - self.cursor;
        let minimum = 2 * conns as usize + 2;
        ensure!(
            left >= minimum,
            "not enough applications left for status_change ({left}; apply made {}, a run at \
             {conns} connections needs at least {minimum})",
            self.ids.len()
        );
        let take = wanted.min(left);
        self.slice = self.ids[self.cursor..self.cursor + take].to_vec();
        self.cursor += take;
        common::lua_params(
            &self.params,
            &[
                (
                    "ids",
                    LuaValue::Str(
                        self.slice
                            .iter()
                            .map(i64::to_string)
                            .collect::<Vec<_>>()
                            .join(","),
                    ),
                ),
                ("nthreads", LuaValue::Int(common::WRK_THREADS as i64)),
                ("token", LuaValue::Str(self.token.clone())),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
    fn finish(&mut self, r: &WrkResult, warmup: bool) -> Result<Vec<String>> {
        self.last_rps = Some(r.rps);
        let threads = common::WRK_THREADS as usize;
        let mut exhausted = 0u64;
        for (t, &count) in r.counts.iter().enumerate() {
            let owned = (self.slice.len() + threads - 1 - t) / threads;
            exhausted += count.saturating_sub(4 * owned as u64);
        }
        let mut notes = vec![format!("{} applications", self.slice.len())];
        if exhausted > 0 && !warmup {
            notes.push(format!(
                "{exhausted} requests re-sent 'hired' (the slice ran out of moves)"
            ));
        }
        Ok(notes)
    }
}

struct Uncached {
    name: &'static str,
    script: PathBuf,
    params: PathBuf,
    words: Vec<String>,
    start: Vec<u64>,
    combos: u64,
    mult: u64,
}

impl Uncached {
    fn new(name: &'static str, script: PathBuf, params: PathBuf, words: Vec<String>) -> Uncached {
        let w = words.len() as u64;
        let combos = (w * w.saturating_sub(1) / 2).max(1) * UNCACHED_PAGES * 3;
        // A multiplier coprime with the number of combinations spreads consecutive requests
        // over the whole space (and keeps them distinct).
        let mut mult = (combos as f64 * 0.618) as u64 | 1;
        while gcd(mult, combos) != 1 {
            mult += 2;
        }
        Uncached {
            name,
            script,
            params,
            words,
            start: vec![0; common::WRK_THREADS as usize],
            combos,
            mult,
        }
    }
}

impl Uncached {
    /// The path of request number `n`, as the load script makes it.
    fn path(&self, n: u64) -> String {
        let (a, b, page, remote) = self.parts(n);
        let mut path = format!("/api/jobs?q={a}+{b}&page={page}");
        match remote {
            Some(true) => path.push_str("&remote=true"),
            Some(false) => path.push_str("&remote=false"),
            None => {}
        }
        path
    }

    /// The search of request number `n`, as the API makes it from the path.
    fn search(&self, n: u64) -> JobSearch {
        let (a, b, page, remote) = self.parts(n);
        JobSearch {
            terms: jobboard::domain::search::query_terms(&format!("{a} {b}")).unwrap_or_default(),
            remote,
            page: Page {
                page: page as i64,
                size: 20,
            },
            ..JobSearch::default()
        }
    }

    /// The two words, the page and the remote filter of request number `n`.
    fn parts(&self, n: u64) -> (&str, &str, u64, Option<bool>) {
        let w = self.words.len() as u64;
        let npairs = (w * w.saturating_sub(1) / 2).max(1);
        let idx = ((n as u128 * self.mult as u128) % self.combos as u128) as u64;
        let mut pair = idx % npairs;
        let rest = idx / npairs;
        let page = rest % UNCACHED_PAGES + 1;
        let remote = rest / UNCACHED_PAGES;
        // Pairs are numbered (0,1), (0,2), …, (0,w-1), (1,2), …
        let mut a = 0u64;
        while a + 1 < w && pair >= w - 1 - a {
            pair -= w - 1 - a;
            a += 1;
        }
        let b = a + 1 + pair;
        let word = |i: u64| self.words.get(i as usize).map(String::as_str).unwrap_or("");
        let remote = match remote {
            1 => Some(true),
            2 => Some(false),
            _ => None,
        };
        (word(a), word(b), page, remote)
    }
}

/// One broad search: a common word of the seeded text, a pay filter and a page.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct BroadQuery {
    word: String,
    salary_min: i64,
    page: i64,
}

impl BroadQuery {
    fn path(&self) -> String {
        format!(
            "/api/jobs?q={}&salary_min={}&page={}",
            self.word, self.salary_min, self.page
        )
    }

    fn search(&self) -> JobSearch {
        JobSearch {
            terms: jobboard::domain::search::query_terms(&self.word).unwrap_or_default(),
            salary_min: Some(self.salary_min),
            page: Page {
                page: self.page,
                size: 20,
            },
            ..JobSearch::default()
        }
    }
}

/// `n` distinct broad searches: words drawn from the seeded titles and descriptions weighted by
/// how often they occur there, among those in at least 1 % of the jobs (hundreds to all of the
/// jobs match each), with `salary_min` a multiple of 500 from 20 000 to 200 000 and pages 1–3.
fn broad_queries(jobs: &[SeedJob], df: &HashMap<String, usize>, n: usize) -> Vec<BroadQuery> {
    let mut occurrences: BTreeMap<String, u64> = BTreeMap::new();
    for job in jobs {
        for text in [&job.title, &job.description[..job.core_len]] {
            for w in jobboard::domain::search::words(text) {
                *occurrences.entry(w).or_default() += 1;
            }
        }
    }
    let common: Vec<(&str, u64)> = occurrences
        .iter()
        .filter(|(w, _)| {
            w.chars().all(|c| c.is_ascii_alphanumeric())
                && df.get(w.as_str()).copied().unwrap_or(0) * 100 >= jobs.len()
        })
        .map(|(w, count)| (w.as_str(), *count))
        .collect();
    if common.is_empty() {
        return Vec::new();
    }
    let weights = rand::distributions::WeightedIndex::new(common.iter().map(|c| c.1));
    let Ok(weights) = weights else {
        return Vec::new();
    };
    let mut rng = StdRng::seed_from_u64(14);
    let space = common.len() * 361 * 3;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    while out.len() < n.min(space / 2) {
        let q = BroadQuery {
            word: common[rng.sample(&weights)].0.to_string(),
            salary_min: 20_000 + 500 * rng.gen_range(0..361),
            page: rng.gen_range(1..=3),
        };
        if seen.insert(q.clone()) {
            out.push(q);
        }
    }
    out
}

/// search_broad: the prepared broad searches in order, continuing from the previous run.
struct Broad {
    name: &'static str,
    script: PathBuf,
    params: PathBuf,
    paths: Vec<String>,
    start: Vec<u64>,
}

impl Scenario for Broad {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        ensure!(!self.paths.is_empty(), "no broad searches");
        common::lua_params(
            &self.params,
            &[
                ("paths", LuaValue::Str(self.paths.join(","))),
                ("nthreads", LuaValue::Int(common::WRK_THREADS as i64)),
                (
                    "start",
                    LuaValue::Ints(self.start.iter().map(|&c| c as i64).collect()),
                ),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
    fn finish(&mut self, r: &WrkResult, warmup: bool) -> Result<Vec<String>> {
        let used = advance(&mut self.start, r)?;
        let mut notes = Vec::new();
        // The sample uses the last 100 searches.
        if used + 100 >= self.paths.len() as u64 && !warmup {
            notes.push(format!(
                "searches exhausted ({used} requests, {} searches): some repeat",
                self.paths.len()
            ));
        }
        Ok(notes)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

impl Scenario for Uncached {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        ensure!(self.words.len() >= 2, "too few query words");
        common::lua_params(
            &self.params,
            &[
                ("words", LuaValue::Str(self.words.join(","))),
                ("pages", LuaValue::Int(UNCACHED_PAGES as i64)),
                ("nthreads", LuaValue::Int(common::WRK_THREADS as i64)),
                ("mult", LuaValue::Int(self.mult as i64)),
                (
                    "start",
                    LuaValue::Ints(self.start.iter().map(|&c| c as i64).collect()),
                ),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
    fn finish(&mut self, r: &WrkResult, warmup: bool) -> Result<Vec<String>> {
        let used = advance(&mut self.start, r)?;
        let mut notes = Vec::new();
        if used >= self.combos && !warmup {
            notes.push(format!(
                "query space exhausted ({used} requests, {} combinations): some repeat",
                self.combos
            ));
        }
        Ok(notes)
    }
}

// ---------------------------------------------------------------------- seed data

const LEVELS: &[&str] = &[
    "Junior",
    "Mid-level",
    "Senior",
    "Staff",
    "Principal",
    "Lead",
    "Graduate",
    "Associate",
];
const TECH: &[&str] = &[
    "Rust",
    "Go",
    "Python",
    "Java",
    "Kotlin",
    "Swift",
    "TypeScript",
    "React",
    "Node.js",
    "Ruby",
    "Rails",
    "PHP",
    "Laravel",
    "Scala",
    "Elixir",
    "Haskell",
    "C++",
    "C#",
    ".NET",
    "Django",
    "Flutter",
    "Android",
    "iOS",
    "Kubernetes",
    "AWS",
    "Azure",
    "GCP",
    "Terraform",
    "PostgreSQL",
    "Data",
    "Machine Learning",
    "Security",
    "Embedded",
    "Linux",
    "Frontend",
    "Backend",
    "Fullstack",
    "Cloud",
    "Platform",
    "QA",
];
const ROLES: &[&str] = &[
    "Engineer",
    "Developer",
    "Architect",
    "Analyst",
    "Consultant",
    "Administrator",
    "Scientist",
    "Specialist",
    "Tester",
    "Engineering Manager",
    "Team Lead",
    "Site Reliability Engineer",
];
const OTHER_ROLES: &[&str] = &[
    "Accountant",
    "Nurse",
    "Teacher",
    "Chef",
    "Warehouse Operative",
    "Customer Support Agent",
    "Marketing Manager",
    "Sales Representative",
    "Financial Analyst",
    "HR Partner",
    "Recruiter",
    "Office Manager",
    "Electrician",
    "Truck Driver",
    "Pharmacist",
    "Barista",
    "Project Manager",
    "Logistics Coordinator",
    "Copywriter",
    "Graphic Designer",
    "Legal Counsel",
    "Product Owner",
    "UX Designer",
    "Account Executive",
];
const ADJECTIVES: &[&str] = &[
    "fast-growing",
    "established",
    "bootstrapped",
    "remote-first",
    "award-winning",
    "family-owned",
    "venture-backed",
    "profitable",
    "international",
    "small",
    "friendly",
    "mission-driven",
];
const DOMAINS: &[&str] = &[
    "fintech",
    "healthcare",
    "logistics",
    "retail",
    "gaming",
    "education",
    "energy",
    "insurance",
    "travel",
    "media",
    "agriculture",
    "automotive",
    "biotech",
    "government",
    "telecom",
    "ecommerce",
    "cybersecurity",
    "robotics",
    "aerospace",
    "hospitality",
];
const VERBS: &[&str] = &[
    "build", "design", "maintain", "scale", "improve", "own", "operate", "test", "document",
    "migrate", "support", "plan",
];
const OBJECTS: &[&str] = &[
    "payment systems",
    "data pipelines",
    "mobile apps",
    "customer dashboards",
    "internal tools",
    "public APIs",
    "search infrastructure",
    "the billing platform",
    "monthly reporting",
    "a recommendation engine",
    "warehouse software",
    "booking flows",
    "patient records",
    "supplier contracts",
    "marketing campaigns",
    "training programmes",
];
const SKILLS: &[&str] = &[
    "distributed systems",
    "SQL",
    "automated testing",
    "CI/CD",
    "observability",
    "accessibility",
    "performance tuning",
    "mentoring",
    "agile delivery",
    "stakeholder management",
    "Excel",
    "negotiation",
    "customer service",
    "budgeting",
    "compliance",
    "scheduling",
    "forecasting",
    "Docker",
    "GraphQL",
    "Kafka",
];
const BENEFITS: &[&str] = &[
    "flexible hours",
    "private health insurance",
    "a learning budget",
    "stock options",
    "30 days of holiday",
    "a pension plan",
    "generous parental leave",
    "a home office stipend",
    "a gym membership",
    "four-day weeks",
    "a yearly bonus",
    "free lunches",
];
const WORK_MODES: &[&str] = &[
    "fully remote",
    "hybrid, two days a week in the office",
    "on site",
    "remote within Europe",
    "hybrid with flexible office days",
];
const CITIES: &[&str] = &[
    "Berlin, Germany",
    "Munich, Germany",
    "Hamburg, Germany",
    "London, United Kingdom",
    "Manchester, United Kingdom",
    "Paris, France",
    "Lyon, France",
    "Amsterdam, Netherlands",
    "Rotterdam, Netherlands",
    "Madrid, Spain",
    "Barcelona, Spain",
    "Lisbon, Portugal",
    "Dublin, Ireland",
    "Warsaw, Poland",
    "Prague, Czechia",
    "Vienna, Austria",
    "Zurich, Switzerland",
    "Stockholm, Sweden",
    "Copenhagen, Denmark",
    "Oslo, Norway",
    "Helsinki, Finland",
    "Milan, Italy",
    "Rome, Italy",
    "Brussels, Belgium",
    "New York, USA",
    "San Francisco, USA",
    "Austin, USA",
    "Toronto, Canada",
    "Montréal, Canada",
    "São Paulo, Brazil",
    "Tokyo, Japan",
    "Singapore",
    "Sydney, Australia",
    "Bangalore, India",
    "Remote",
];

/// Each description's length in bytes, drawn uniformly: postings on job boards run to a few
/// thousand characters (a first paragraph, responsibilities, requirements, what is offered,
/// how to apply).
const DESCRIPTION_BYTES: std::ops::Range<usize> = 2_000..5_001;

/// The body's sentences: the generic prose of a posting, in words outside every list the
/// searches are drawn from (so that the mixes find what they found with short descriptions),
/// with one slot each for a word of [`BODY_WORDS`].
const BODY_SENTENCES: &[&str] = &[
    "You will own {} from the first sketch to the day it reaches our customers.",
    "Every week you will review {} with colleagues and agree what to improve next.",
    "We value clear writing, honest estimates and {} over heroics.",
    "Most days start with a short meeting about {} and end with a written summary.",
    "You will mentor newer colleagues and help them grow through {}.",
    "The people we serve rely on {} every day, so steadiness matters more than novelty.",
    "We measure our work by outcomes, not hours, and {} is part of that.",
    "You will join an onboarding programme covering {} during your first month.",
    "Decisions are written down, discussed openly and revisited when {} changes.",
    "We expect curiosity, care for quality and a willingness to learn {}.",
    "The hiring process has three conversations and a practical exercise about {}.",
    "Part of the role is improving documentation, tooling and {} for everyone.",
    "You will split your time between planned projects and {} as needs arise.",
    "Our premises are open for those who want them, and {} is supported throughout.",
    "Feedback flows both ways, and {} is reviewed twice a year.",
    "We publish our salary bands internally, and progression depends on {}.",
    "Occasional journeys to meet colleagues are expected, usually for {}.",
    "Please include a short note on why {} interests you when you apply.",
];

/// The words of the body's slots.
const BODY_WORDS: &[&str] = &[
    "quarterly planning",
    "incident reviews",
    "user interviews",
    "onboarding",
    "yearly forecasts",
    "roadmaps",
    "handover notes",
    "weekly demos",
    "process changes",
    "supplier contracts",
    "internal training",
    "usability sessions",
    "policy reviews",
    "release notes",
    "capacity planning",
    "workplace arrangements",
];

/// Appends paragraphs of [`BODY_SENTENCES`] to `description` until it holds at least `target`
/// bytes (the last sentence may pass it by one sentence's length).
fn add_body(rng: &mut StdRng, description: &mut String, target: usize) {
    while description.len() < target {
        description.push_str("\n\n");
        for _ in 0..rng.gen_range(3..7) {
            let sentence = pick(rng, BODY_SENTENCES);
            description.push_str(&sentence.replacen("{}", pick(rng, BODY_WORDS), 1));
            description.push(' ');
        }
        description.pop();
    }
}

fn pick<'a>(rng: &mut StdRng, list: &[&'a str]) -> &'a str {
    list.choose(rng).copied().unwrap_or("")
}

/// Words of the long tail: specific technologies, skills and tools that few jobs name, drawn
/// Zipf-like (the word of rank r in about 0.29 / r of the jobs, so rank 3 000 in 0.01 %).
const TAIL_WORDS: usize = 20_000;
/// Places a few jobs each are in (5 % of the jobs, spread evenly): a narrow `location`.
const TOWNS: usize = 400;
/// What the tail words are drawn from: three consonant–vowel syllables, never ending in `s`
/// (so the tokenizer's plural rule leaves them alone).
const CONSONANTS: &[u8] = b"bdfgklmnprtvz";
const VOWELS: &[u8] = b"aeiou";
/// Pseudo-word numbers, all distinct: tail words first, then company names, then towns.
const COMPANY_WORDS_FROM: usize = TAIL_WORDS;
const TOWN_WORDS_FROM: usize = TAIL_WORDS + 10_000;
const COMPANY_SUFFIXES: &[&str] = &[
    "Labs",
    "Group",
    "Systems",
    "Health",
    "Logistics",
    "Studio",
    "Partners",
    "Foods",
    "Energy",
    "Works",
];

/// The `i`-th pseudo-word (distinct for every `i` below 13³·5³ = 274 625), lower case.
fn pseudo_word(i: usize) -> String {
    const SYLLABLES: usize = 13 * 5;
    const SPACE: usize = SYLLABLES * SYLLABLES * SYLLABLES;
    // A multiplier coprime with the space scatters neighbouring numbers.
    let mut n = (i % SPACE) * 104_729 % SPACE;
    let mut out = String::with_capacity(6);
    for _ in 0..3 {
        let s = n % SYLLABLES;
        n /= SYLLABLES;
        out.push(CONSONANTS[s / 5] as char);
        out.push(VOWELS[s % 5] as char);
    }
    out
}

fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The tail word of Zipf rank `rank` (from 0), capitalised as a product name.
fn tail_word(rank: usize) -> String {
    capitalised(&pseudo_word(rank))
}

/// How many companies a board of `njobs` jobs has: one per 500 jobs, 10 to 5 000.
fn company_count(njobs: usize) -> usize {
    (njobs / 500).clamp(10, 5_000)
}

/// The names of the seeded companies, by rank (rank 0 is [`COMPANY`], made through the API).
fn company_names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            if i == 0 {
                COMPANY.to_string()
            } else {
                format!(
                    "{} {}",
                    capitalised(&pseudo_word(COMPANY_WORDS_FROM + i)),
                    COMPANY_SUFFIXES[i % COMPANY_SUFFIXES.len()]
                )
            }
        })
        .collect()
}

/// The narrow places: "<Town>, <a country of CITIES>".
fn town_names() -> Vec<String> {
    let countries: Vec<&str> = CITIES
        .iter()
        .filter_map(|c| c.split_once(", "))
        .map(|(_, k)| k)
        .collect();
    (0..TOWNS)
        .map(|i| {
            format!(
                "{}, {}",
                capitalised(&pseudo_word(TOWN_WORDS_FROM + i)),
                countries[i % countries.len()]
            )
        })
        .collect()
}

/// Weights 1 / (rank + 1) for ranks 0..n (a Zipf law of exponent 1).
fn zipf(n: usize) -> Result<rand::distributions::WeightedIndex<f64>> {
    rand::distributions::WeightedIndex::new((0..n.max(1)).map(|r| 1.0 / (r + 1) as f64))
        .context("cannot build a Zipf distribution")
}

/// How long ago a job was posted, in days: 365 · u² for u uniform in [0, 1), so that the last
/// day holds about 5 % of the jobs, the last 7 days 14 %, the last 30 days 29 %, the last 90 days
/// 50 %, and the oldest is a year old.
fn age_days(rng: &mut StdRng) -> f64 {
    let u: f64 = rng.r#gen();
    365.0 * u * u
}

/// `n` varied jobs (deterministic) of the companies `companies` (by rank, drawn Zipf-like),
/// oldest first, posted over the last year (more of them recently: [`age_days`]).
fn generate_jobs(n: usize, companies: &[String]) -> Result<Vec<SeedJob>> {
    let mut rng = StdRng::seed_from_u64(20_261_202);
    let tail = zipf(TAIL_WORDS)?;
    let company_law = zipf(companies.len())?;
    let towns = town_names();
    // Whole microseconds, as the store writes them.
    let now = Utc::now();
    let now = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
    const DAY_US: f64 = 86_400_000_000.0;
    let mut jobs: Vec<SeedJob> = (0..n)
        .map(|_| {
            let tech = rng.gen_bool(0.7);
            let title = if tech {
                format!(
                    "{} {} {}",
                    pick(&mut rng, LEVELS),
                    pick(&mut rng, TECH),
                    pick(&mut rng, ROLES)
                )
            } else {
                format!("{} {}", pick(&mut rng, LEVELS), pick(&mut rng, OTHER_ROLES))
            };
            let location = if rng.gen_bool(0.05) {
                towns[rng.gen_range(0..towns.len())].clone()
            } else {
                pick(&mut rng, CITIES).to_string()
            };
            let city = location.split(',').next().unwrap_or("").to_string();
            let company = rng.sample(&company_law);
            let company_name = companies
                .get(company)
                .map(String::as_str)
                .unwrap_or(COMPANY);
            let mut description = format!(
                "We are a {} {} company in {city}. As a {title} you will {} {} and {} {} with a \
                 team of {} people. ",
                pick(&mut rng, ADJECTIVES),
                pick(&mut rng, DOMAINS),
                pick(&mut rng, VERBS),
                pick(&mut rng, OBJECTS),
                pick(&mut rng, VERBS),
                pick(&mut rng, OBJECTS),
                rng.gen_range(3..40),
            );
            if tech {
                description.push_str(&format!(
                    "Our stack includes {}, {} and {}. ",
                    pick(&mut rng, TECH),
                    pick(&mut rng, TECH),
                    pick(&mut rng, TECH)
                ));
            }
            description.push_str(&format!(
                "Experience with {}, {} or {} is a plus; you will also meet {}, {} and {}. We \
                 offer {}, {} and {}. The role is {}.",
                pick(&mut rng, SKILLS),
                pick(&mut rng, SKILLS),
                pick(&mut rng, SKILLS),
                tail_word(rng.sample(&tail)),
                tail_word(rng.sample(&tail)),
                tail_word(rng.sample(&tail)),
                pick(&mut rng, BENEFITS),
                pick(&mut rng, BENEFITS),
                pick(&mut rng, BENEFITS),
                pick(&mut rng, WORK_MODES),
            ));
            let core_len = description.len();
            let target = rng.gen_range(DESCRIPTION_BYTES);
            add_body(&mut rng, &mut description, target);
            let (salary_min, salary_max) = if rng.gen_bool(0.15) {
                (None, None)
            } else {
                let min = rng.gen_range(25..150) * 1_000;
                (Some(min), Some(min + rng.gen_range(5..50) * 1_000))
            };
            let employment_type = match rng.gen_range(0..100) {
                0..70 => "full_time",
                70..80 => "part_time",
                80..95 => "contract",
                _ => "internship",
            };
            let age_us = (age_days(&mut rng) * DAY_US) as i64;
            let created_at = now - ChronoDuration::microseconds(age_us);
            SeedJob {
                search_terms: jobboard::domain::search::document_terms(&[
                    &title,
                    &description[..core_len],
                    company_name,
                ]),
                core_len,
                title_terms: jobboard::domain::search::document_terms(&[&title]),
                remote: location == "Remote" || rng.gen_bool(0.25),
                title,
                description,
                location,
                salary_min,
                salary_max,
                employment_type,
                company,
                created_at,
                expires_at: None,
            }
        })
        .collect();
    // Ids follow creation time, as the store guarantees (create_job never writes a created_at
    // earlier than the newest job's): inserted oldest first, they get increasing ids.
    jobs.sort_by_key(|j| j.created_at);
    Ok(jobs)
}

/// Inserts the companies of ranks 1.. (rank 0, made through the API, exists already); returns
/// every company's id by rank.
async fn insert_companies(
    pg: Option<&sqlx::PgPool>,
    sqlite: Option<&sqlx::SqlitePool>,
    first_id: i64,
    names: &[String],
) -> Result<Vec<i64>> {
    let rest = names.get(1..).unwrap_or(&[]);
    let ids = match (pg, sqlite) {
        (Some(pool), _) => seed::insert_pg_companies(pool, rest).await?,
        (None, Some(pool)) => seed::insert_sqlite_companies(pool, rest).await?,
        (None, None) => bail!("no database"),
    };
    Ok(std::iter::once(first_id).chain(ids).collect())
}

/// The words uncached searches combine: what people search a job board for (titles,
/// technologies, skills, industries, places) from the seed vocabulary, as the tokenizer makes
/// them; ASCII only (they go into URLs as they are), at least three letters, and not in more
/// than half of the jobs (such words, like "team", act as stop words of this corpus).
fn query_words(df: &HashMap<String, usize>, njobs: usize) -> Vec<String> {
    let mut words = BTreeSet::new();
    for list in [TECH, ROLES, OTHER_ROLES, DOMAINS, SKILLS, CITIES] {
        for phrase in list {
            for w in jobboard::domain::search::words(phrase) {
                if w.len() >= 3 && w.chars().all(|c| c.is_ascii_alphanumeric()) {
                    words.insert(w);
                }
            }
        }
    }
    words
        .into_iter()
        .filter(|w| df.get(w.as_str()).copied().unwrap_or(0) * 2 <= njobs)
        .collect()
}

/// How many jobs hold each term (document frequency).
fn document_frequencies(jobs: &[SeedJob]) -> HashMap<String, usize> {
    let mut df: HashMap<String, usize> = HashMap::new();
    for job in jobs {
        for term in job.search_terms.split(' ') {
            match df.get_mut(term) {
                Some(n) => *n += 1,
                None => {
                    df.insert(term.to_string(), 1);
                }
            }
        }
    }
    df
}

// ---------------------------------------------------------------------- search mixes

/// The search mixes measured at scale, each a row of its own beside `job_detail` in the same
/// run on the same database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mix {
    /// One word of the long tail, in 0.005–0.05 % of the jobs.
    Rare,
    /// One word in 5–50 % of the jobs.
    Common,
    /// Two words that occur together (`account executive`, `machine learning`).
    Pair,
    /// A common word and a selective filter: a company, or a place few jobs are in.
    Filter,
    /// `sort=relevance` with one or two words of the titles.
    Relevance,
    /// Page 400 of 20 (results 7 981–8 000) of a word with enough matches to fill it.
    DeepPage,
    /// A common word with `posted_within_days` 1, 2, 3, 7, 14, 30 or 90.
    Posted,
}

const MIXES: [Mix; 7] = [
    Mix::Rare,
    Mix::Common,
    Mix::Pair,
    Mix::Filter,
    Mix::Relevance,
    Mix::DeepPage,
    Mix::Posted,
];

/// Searches prepared per mix (distinct; they repeat past this many).
const MIX_QUERIES: usize = 150_000;
/// Connection levels of every mix row: loaded, then one request at a time.
const MIX_LEVELS: [u32; 2] = [16, 1];

impl Mix {
    /// The row of this mix's pages asked for by their ids (its ceiling), on this kind of run.
    fn ids_row(self, kind: Kind) -> &'static str {
        let pg = kind != Kind::Sqlite;
        match (self, pg) {
            (Mix::Rare, true) => "mix_rare_word_ids_pg",
            (Mix::Rare, false) => "mix_rare_word_ids_sqlite",
            (Mix::Common, true) => "mix_common_word_ids_pg",
            (Mix::Common, false) => "mix_common_word_ids_sqlite",
            (Mix::Pair, true) => "mix_pair_ids_pg",
            (Mix::Pair, false) => "mix_pair_ids_sqlite",
            (Mix::Filter, true) => "mix_word_filter_ids_pg",
            (Mix::Filter, false) => "mix_word_filter_ids_sqlite",
            (Mix::Relevance, true) => "mix_relevance_ids_pg",
            (Mix::Relevance, false) => "mix_relevance_ids_sqlite",
            (Mix::DeepPage, true) => "mix_deep_page_ids_pg",
            (Mix::DeepPage, false) => "mix_deep_page_ids_sqlite",
            (Mix::Posted, true) => "mix_posted_within_ids_pg",
            (Mix::Posted, false) => "mix_posted_within_ids_sqlite",
        }
    }

    /// The row's name on this kind of run.
    fn row(self, kind: Kind) -> &'static str {
        let pg = kind != Kind::Sqlite;
        match (self, pg) {
            (Mix::Rare, true) => "mix_rare_word_pg",
            (Mix::Rare, false) => "mix_rare_word_sqlite",
            (Mix::Common, true) => "mix_common_word_pg",
            (Mix::Common, false) => "mix_common_word_sqlite",
            (Mix::Pair, true) => "mix_pair_pg",
            (Mix::Pair, false) => "mix_pair_sqlite",
            (Mix::Filter, true) => "mix_word_filter_pg",
            (Mix::Filter, false) => "mix_word_filter_sqlite",
            (Mix::Relevance, true) => "mix_relevance_pg",
            (Mix::Relevance, false) => "mix_relevance_sqlite",
            (Mix::DeepPage, true) => "mix_deep_page_pg",
            (Mix::DeepPage, false) => "mix_deep_page_sqlite",
            (Mix::Posted, true) => "mix_posted_within_pg",
            (Mix::Posted, false) => "mix_posted_within_sqlite",
        }
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

/// The facets the `mix_facets` rows ask for: every one there is (the commas encoded, since
/// the wrk script's list of paths is comma-separated).
const FACETS: &str = "employment_type%2Cremote%2Ccompany";

/// The row of every mix's searches with [`FACETS`], on this kind of run.
fn facets_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_facets_sqlite"
    } else {
        "mix_facets_pg"
    }
}

/// The row of pages 2–50 of the word mixes' searches asked for by cursor (`after=`), on this kind
/// of run.
fn cursor_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_cursor_sqlite"
    } else {
        "mix_cursor_pg"
    }
}

/// The cursor row's pages asked for by their ids: its ceiling.
fn cursor_ids_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_cursor_ids_sqlite"
    } else {
        "mix_cursor_ids_pg"
    }
}

/// Distinct searches the cursor rows walk, and the last page they walk to.
const CURSOR_SEARCHES: usize = 300;
const CURSOR_PAGES: usize = 50;

/// The row of the mixes' pages asked for by their job ids (`ids=`), on this kind of run: the
/// ceiling a search is judged against (the same pages read and rendered, nothing to find).
fn ids_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_ids_page_sqlite"
    } else {
        "mix_ids_page_pg"
    }
}

/// The index-lag step of this kind of run (not a wrk row: selected by `--scenario` like one).
fn lag_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "index_lag_sqlite"
    } else {
        "index_lag_pg"
    }
}

/// Job writes per second, and seconds, of the index-lag step.
const LAG_WRITES_PER_SEC: u64 = 100;
const LAG_SECS: u64 = 30;

/// Pages of each mix the `ids_page` rows ask for by their ids.
const IDS_PAGES_PER_MIX: usize = 300;

/// The `job_detail` row measured beside the mixes of this kind of run.
fn mix_detail_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_job_detail_sqlite"
    } else {
        "mix_job_detail_pg"
    }
}

/// One search of a mix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct MixQuery {
    /// Words, separated by single spaces.
    q: String,
    /// A town's name in lower case (letters only).
    location: Option<String>,
    company_id: Option<i64>,
    remote: Option<bool>,
    salary_min: Option<i64>,
    posted_within_days: Option<i64>,
    relevance: bool,
    page: i64,
    page_size: i64,
}

impl MixQuery {
    fn new(q: String, page: i64, page_size: i64) -> MixQuery {
        MixQuery {
            q,
            location: None,
            company_id: None,
            remote: None,
            salary_min: None,
            posted_within_days: None,
            relevance: false,
            page,
            page_size,
        }
    }

    fn path(&self) -> String {
        let mut p = format!("/api/jobs?q={}", self.q.replace(' ', "+"));
        if let Some(l) = &self.location {
            p.push_str(&format!("&location={l}"));
        }
        if let Some(c) = self.company_id {
            p.push_str(&format!("&company_id={c}"));
        }
        if let Some(r) = self.remote {
            p.push_str(&format!("&remote={r}"));
        }
        if let Some(s) = self.salary_min {
            p.push_str(&format!("&salary_min={s}"));
        }
        if let Some(d) = self.posted_within_days {
            p.push_str(&format!("&posted_within_days={d}"));
        }
        if self.relevance {
            p.push_str("&sort=relevance");
        }
        p.push_str(&format!("&page={}&page_size={}", self.page, self.page_size));
        p
    }

    /// The search the API makes of the path (`posted_within_days` counted back from now).
    fn search(&self) -> JobSearch {
        JobSearch {
            terms: jobboard::domain::search::query_terms(&self.q).unwrap_or_default(),
            location: self.location.clone(),
            remote: self.remote,
            company_id: self.company_id,
            salary_min: self.salary_min,
            posted_within: self
                .posted_within_days
                .map(|d| PostedWithin::days_before(d, Utc::now())),
            sort: if self.relevance {
                SearchSort::Relevance
            } else {
                SearchSort::Newest
            },
            page: Page {
                page: self.page,
                size: self.page_size,
            },
            ..JobSearch::default()
        }
    }
}

/// Words that are ASCII letters and digits, at least three long, not a stop word.
fn searchable(w: &str) -> bool {
    w.len() >= 3
        && w.chars().all(|c| c.is_ascii_alphanumeric())
        && !["the", "and", "with", "for", "our", "you", "are"].contains(&w)
}

/// The two-word phrases of the seed vocabulary whose words occur together: job titles
/// (`account executive`), technologies (`machine learning`), skills, products and benefits.
fn correlated_pairs(df: &HashMap<String, usize>) -> Vec<String> {
    let mut pairs = BTreeSet::new();
    for list in [TECH, ROLES, OTHER_ROLES, OBJECTS, SKILLS, BENEFITS] {
        for phrase in list {
            let words: Vec<String> = jobboard::domain::search::words(phrase).collect();
            for w in words.windows(2) {
                if w.iter().all(|w| searchable(w) && df.contains_key(w)) && w[0] != w[1] {
                    pairs.insert(format!("{} {}", w[0], w[1]));
                }
            }
        }
    }
    pairs.into_iter().collect()
}

/// Up to `n` distinct searches of every mix, drawn from what the seeded jobs hold.
fn mix_queries(
    df: &HashMap<String, usize>,
    njobs: usize,
    company_ids: &[i64],
    n: usize,
) -> Vec<(Mix, Vec<MixQuery>)> {
    let words_where = |keep: &dyn Fn(usize) -> bool| -> Vec<String> {
        let mut w: Vec<String> = df
            .iter()
            .filter(|(w, d)| searchable(w) && keep(**d))
            .map(|(w, _)| w.clone())
            .collect();
        w.sort();
        w
    };
    let njobs_f = njobs.max(1) as f64;
    // Rare: tail words in 0.005–0.05 % of the jobs (at least one job).
    let tail: HashSet<String> = (0..TAIL_WORDS).map(pseudo_word).collect();
    let lo = (njobs_f * 0.000_05).ceil().max(1.0) as usize;
    let hi = (njobs_f * 0.000_5).ceil().max(lo as f64 + 1.0) as usize;
    let mut rare: Vec<String> = words_where(&|d| d >= lo && d <= hi)
        .into_iter()
        .filter(|w| tail.contains(w))
        .collect();
    if rare.is_empty() {
        rare = words_where(&|d| d <= hi)
            .into_iter()
            .filter(|w| tail.contains(w))
            .collect();
    }
    let common = words_where(&|d| d as f64 >= njobs_f * 0.05 && d as f64 <= njobs_f * 0.5);
    // Deep page: words with matches enough to fill page 400 of 20 without remote jobs (75 %).
    let mut deep = words_where(&|d| d >= 12_000 && d as f64 <= njobs_f * 0.95);
    if deep.is_empty() {
        let mut by_df: Vec<(&String, &usize)> = df
            .iter()
            .filter(|(w, d)| searchable(w) && (**d as f64) <= njobs_f * 0.95)
            .collect();
        by_df.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        deep = by_df.into_iter().take(20).map(|(w, _)| w.clone()).collect();
    }
    let pairs = correlated_pairs(df);
    // Title words: the first of a title (a level or a technology) and the last (a role).
    let title_list = |lists: &[&[&str]]| -> Vec<String> {
        let mut words = BTreeSet::new();
        for list in lists {
            for phrase in *list {
                for w in jobboard::domain::search::words(phrase) {
                    if searchable(&w) && df.contains_key(&w) {
                        words.insert(w);
                    }
                }
            }
        }
        words.into_iter().collect()
    };
    let title_words = title_list(&[LEVELS, TECH, ROLES, OTHER_ROLES]);
    let title_heads = title_list(&[LEVELS, TECH]);
    let title_roles = title_list(&[ROLES, OTHER_ROLES]);
    let towns: Vec<String> = (0..TOWNS)
        .map(|i| pseudo_word(TOWN_WORDS_FROM + i))
        .filter(|t| df.contains_key(t))
        .collect();
    let companies = company_ids.get(1..).unwrap_or(&[]);

    let remote = |rng: &mut StdRng| match rng.gen_range(0..3) {
        0 => None,
        1 => Some(true),
        _ => Some(false),
    };
    let size = |rng: &mut StdRng| rng.gen_range(10..=40);
    let mut out = Vec::new();
    for (i, mix) in MIXES.into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(4_000 + i as u64);
        let draw = |rng: &mut StdRng| -> Option<MixQuery> {
            let pick_word = |rng: &mut StdRng, list: &[String]| list.choose(rng).cloned();
            Some(match mix {
                Mix::Rare => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &rare)?, rng.gen_range(1..=2), size(rng));
                    m.remote = remote(rng);
                    m
                }
                Mix::Common => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &common)?, rng.gen_range(1..=10), size(rng));
                    m.remote = remote(rng);
                    m
                }
                Mix::Pair => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &pairs)?, rng.gen_range(1..=20), size(rng));
                    m.remote = remote(rng);
                    m
                }
                Mix::Filter => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &common)?, rng.gen_range(1..=3), size(rng));
                    if rng.gen_bool(0.5) && !companies.is_empty() {
                        m.company_id = companies.choose(rng).copied();
                    } else {
                        m.location = Some(pick_word(rng, &towns)?);
                    }
                    m.remote = remote(rng);
                    m
                }
                Mix::Relevance => {
                    // One title word, or a level or technology with a role (`senior
                    // accountant`, `python engineer`), as people search for a title.
                    let q = if rng.gen_bool(0.5) {
                        pick_word(rng, &title_words)?
                    } else {
                        let head = pick_word(rng, &title_heads)?;
                        let role = pick_word(rng, &title_roles)?;
                        if head == role {
                            head
                        } else {
                            format!("{head} {role}")
                        }
                    };
                    let mut m = MixQuery::new(q, rng.gen_range(1..=5), size(rng));
                    m.relevance = true;
                    m.remote = remote(rng);
                    m
                }
                Mix::DeepPage => {
                    let mut m = MixQuery::new(pick_word(rng, &deep)?, 400, 20);
                    m.remote = if rng.gen_bool(0.5) { None } else { Some(false) };
                    // Every seeded salary_max is at least 30 000: a salary_min up to that keeps
                    // every job, so the page stays page 400 of the word, and each request is
                    // still one the cache has not seen.
                    m.salary_min = Some(100 * rng.gen_range(0..=300));
                    m
                }
                Mix::Posted => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &common)?, rng.gen_range(1..=3), size(rng));
                    m.posted_within_days = Some(*[1, 2, 3, 7, 14, 30, 90].choose(rng)?);
                    m.remote = remote(rng);
                    m
                }
            })
        };
        let mut seen = HashSet::new();
        let mut list = Vec::new();
        // A small corpus has fewer distinct searches than asked for: stop when draws keep
        // repeating.
        let mut misses = 0;
        while list.len() < n && misses < 1_000 + n / 4 {
            match draw(&mut rng) {
                Some(q) if seen.insert(q.clone()) => list.push(q),
                Some(_) => misses += 1,
                None => break,
            }
        }
        out.push((mix, list));
    }
    out
}

/// A search mix: its prepared searches in order, each run continuing where the last stopped.
struct MixScenario {
    name: &'static str,
    script: PathBuf,
    params: PathBuf,
    paths: Vec<String>,
    /// The next request number.
    base: u64,
    /// Whether a repeat is as good as a new request (pages by ids, which are never cached).
    repeats_ok: bool,
}

impl Scenario for MixScenario {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        ensure!(!self.paths.is_empty(), "no searches for {}", self.name);
        common::lua_params(
            &self.params,
            &[
                ("paths", LuaValue::Str(self.paths.join(","))),
                ("nthreads", LuaValue::Int(common::wrk_threads(conns) as i64)),
                ("base", LuaValue::Int(self.base as i64)),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
    fn finish(&mut self, r: &WrkResult, warmup: bool) -> Result<Vec<String>> {
        self.base += requests_numbered(&r.counts);
        let mut notes = Vec::new();
        // The sample uses the last 100 searches.
        if self.base + 100 >= self.paths.len() as u64 && !warmup && !self.repeats_ok {
            notes.push(format!(
                "searches exhausted ({} requests, {} searches): some repeat",
                self.base,
                self.paths.len()
            ));
        }
        Ok(notes)
    }
}
