//! The HTTP section: the real API (`jobboard serve` on PostgreSQL) under wrk, on a fresh
//! database seeded with `--jobs` open jobs.
//!
//! One server with the in-process cache runs `search_cached_memory`, `job_detail`, `apply`,
//! `status_change` and `search_uncached` (last, since every uncached page it stores grows the
//! in-process cache); a second one with `REDIS_URL` runs `search_cached_redis`. Each scenario
//! runs at 16, 64 and 256 connections, each run after a warm-up.
//!
//! [`rows`] names the kinds of run and their rows, in the report's order. A run's state (the
//! database, the API on it) is [`bench`]; its seeding [`seed`], of the jobs [`corpus`] draws from
//! the lists of [`vocabulary`]; what the searches search for [`queries`]; how a scenario is run at
//! a connection level [`scenario`]. The rows: [`reads`] (the cached searches, job_detail),
//! [`writes`] (apply, status_change), [`console`], [`searches`] (search_uncached, search_broad),
//! [`search_mixes`] (the mixes at scale, with the pages of their ids and cursor rows from
//! [`mix_pages`]), [`index_lag`] and [`pages`] (the job pages, the feeds, the sitemap);
//! [`targets`] judges them.

mod bench;
mod console;
mod corpus;
mod index_lag;
mod mix_pages;
mod pages;
mod queries;
mod reads;
mod resumes;
mod rows;
mod scenario;
mod search_mixes;
mod searches;
mod seed;
mod targets;
mod vocabulary;
mod writes;

use crate::Opts;
use crate::ceilings::Ceilings;
use crate::common;
use crate::report::Section;
use bench::Bench;
use console::{CONSOLE_DEAD_LETTERS, CONSOLE_EVENTS};
use mix_pages::IDS_PAGES_PER_MIX;
use rows::{CACHED_QUERY, Kind, SECTION, order};
use scenario::Measured;
use searches::UNCACHED_PAGES;
use serde_json::json;
use std::time::Instant;
use targets::targets;

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
                        bench.run_pages(&mut section, &mut measured).await;
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
         jobboard::domain::search::document_terms. Beside the 100 candidates and the employer \
         registered through the API, the main database holds one account per 10 jobs (bulk \
         SQL, a password hash no password matches), and its tables are analyzed once they are \
         in."
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
        "page_*_pg / page_*_sqlite, on the mixes' server and database, after the mixes: \
         page_sitemap reads /sitemap.xml and every file it lists, one after the other, before \
         anything else asks for them (so each is made, not read from the cache), with the API's \
         RSS before and its peak (reset first); page_job_uncached: GET /jobs/{id}-{slug} over \
         20 000 seeded jobs drawn at random (their addresses found by following each job's \
         301 once), many times what the 8 MB in-process cache holds, so nearly every request \
         renders; page_job_cached: the first 100 of them, again and again; page_feed: GET \
         /jobs.atom?q=<common word>&salary_min=<n>, every request distinct (every seeded \
         salary_max is higher, so each finds the jobs the word finds); page_feed_search: the \
         same searches on GET /api/jobs with page_size=50. Targets: the job pages >= 0.5x \
         mix_job_detail's req/s, the feed >= 0.5x page_feed_search's, the sitemap made in <= \
         10 s with the RSS rising by <= 20 MB."
            .into(),
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

impl Bench<'_> {
    /// Every row of the main run, in order: the cached search, job_detail, the writes, the
    /// console, the uncached searches, then the cached search again on a server with Redis.
    async fn run_all(&mut self, section: &mut Section, out: &mut Vec<Measured>) {
        self.run_cached(section, out, "search_cached_memory").await;
        self.run_job_detail(section, out).await;
        let apply_rps = self.run_apply(section, out).await;
        self.run_status_change(section, out, apply_rps).await;
        self.run_resumes(section).await;
        if self.opts.wants("console_") {
            self.run_console(section, out).await;
        }

        self.run_searches(section, out, &common::CONN_LEVELS).await;

        // search_cached_redis, on a restarted server
        let prefix = format!("jbbench:{}:", uuid::Uuid::new_v4().simple());
        self.redis_prefix = Some(prefix.clone());
        match self.start_server(Some(prefix)).await {
            Ok(()) => self.run_cached(section, out, "search_cached_redis").await,
            Err(e) => common::record_failure(section, "search_cached_redis", &e),
        }
    }
}
