//! Ceilings: what this machine can do at most, for the HTTP targets to be judged against.
//! - a bare axum server (its own process, this executable with `--bare-axum ADDR`) answering a
//!   ~1 KB JSON body serialised per request, loaded by wrk like the real server;
//! - pgbench inserting one row per transaction into a table shaped like an application row.

use crate::Opts;
use crate::common::{self, Child, FreshDb, Wrk};
use crate::report::Section;
use anyhow::{Context, Result};
use serde::Serialize;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

/// The figures the HTTP section's targets are judged against, by connection (client) level as
/// requested (a pgbench level above the cap ran with the cap).
#[derive(Debug, Default, Clone, Serialize)]
pub struct Ceilings {
    pub bare_rps: BTreeMap<u32, f64>,
    /// Bare axum answering a fixed body as large as a cached search page.
    pub bare_page_rps: BTreeMap<u32, f64>,
    pub insert_tps: BTreeMap<u32, f64>,
}

pub async fn run(opts: &Opts) -> (Section, Ceilings) {
    let mut section = Section {
        name: "ceilings".into(),
        columns: [
            "ceiling", "level", "per s", "p50 ms", "p99 ms", "avg ms", "errors", "note",
        ]
        .map(String::from)
        .to_vec(),
        json: json!({}),
        ..Section::default()
    };
    let mut ceilings = Ceilings::default();
    let secs = opts.duration_secs;

    // ------------------------------------------------------------------ bare axum
    let mut bare_json = Vec::new();
    match start_bare().await {
        Err(e) => common::record_failure(&mut section, "bare axum", &e),
        Ok((child, bare_url, script)) => {
            let page_url = bare_url.replace("/bare", "/bare-page");
            let runs = common::CONN_LEVELS
                .iter()
                .map(|&c| ("bare axum", c, &bare_url))
                .chain(
                    common::CONN_LEVELS
                        .iter()
                        .map(|&c| ("bare axum, 15 KB page", c, &page_url)),
                );
            for (what, conns, url) in runs {
                common::progress("ceilings", format!("{what}, {conns} connections"));
                let run = async {
                    let mut wrk = Wrk {
                        url,
                        conns,
                        secs: common::WARMUP_SECS,
                        script: &script.1,
                        args: vec![],
                    };
                    common::run_wrk(&wrk).await.context("warm-up")?;
                    wrk.secs = secs;
                    common::run_wrk(&wrk).await
                };
                match run.await {
                    Ok(r) => {
                        if what == "bare axum" {
                            ceilings.bare_rps.insert(conns, r.rps);
                        } else {
                            ceilings.bare_page_rps.insert(conns, r.rps);
                        }
                        section.rows.push(vec![
                            what.into(),
                            format!("{conns} conns"),
                            common::fmt_int(r.rps),
                            common::fmt_ms(r.latency_ms.p50),
                            common::fmt_ms(r.latency_ms.p99),
                            common::fmt_ms(r.latency_ms.mean),
                            (r.non_2xx + r.errors.socket()).to_string(),
                            format!("{} B/resp", r.bytes / r.requests.max(1)),
                        ]);
                        bare_json.push(json!({ "what": what, "conns": conns, "wrk": r }));
                    }
                    Err(e) => {
                        common::record_failure(&mut section, &format!("bare axum {conns}"), &e)
                    }
                }
            }
            drop(child);
        }
    }
    section.json["bare_axum"] = json!(bare_json);

    // ------------------------------------------------------------------ pgbench
    let mut insert_json = Vec::new();
    let mut capped_any = false;
    match prepare_pgbench(opts).await {
        Err(e) => common::record_failure(&mut section, "pgbench insert", &e),
        Ok((db, dir, script)) => {
            for requested in common::CONN_LEVELS {
                let (clients, capped) = common::cap_pg_clients(requested);
                capped_any |= capped;
                common::progress(
                    "ceilings",
                    format!("pgbench one-row insert, {clients} clients"),
                );
                let run = async {
                    common::run_pgbench(&db.url, clients, common::WARMUP_SECS, &script)
                        .await
                        .context("warm-up")?;
                    common::run_pgbench(&db.url, clients, secs, &script).await
                };
                match run.await {
                    Ok(r) => {
                        ceilings.insert_tps.insert(requested, r.tps);
                        section.rows.push(vec![
                            "pgbench insert".into(),
                            if capped {
                                format!("{clients} clients ({requested} capped)")
                            } else {
                                format!("{clients} clients")
                            },
                            common::fmt_int(r.tps),
                            "-".into(),
                            "-".into(),
                            common::fmt_ms(r.latency_avg_ms),
                            r.failed.to_string(),
                            "tps".into(),
                        ]);
                        insert_json.push(json!({
                            "clients_requested": requested,
                            "capped": capped,
                            "pgbench": r,
                        }));
                    }
                    Err(e) => common::record_failure(
                        &mut section,
                        &format!("pgbench insert {requested}"),
                        &e,
                    ),
                }
            }
            drop(dir);
            if let Err(e) = db.drop_now().await {
                common::record_failure(&mut section, "pgbench drop database", &e);
            }
        }
    }
    section.json["pgbench_insert"] = json!(insert_json);
    section.json["ceilings"] = json!(ceilings);

    section.notes = vec![
        format!(
            "bare axum: this executable with --bare-axum (its own process, default multi-thread \
             tokio runtime), GET /bare answering a ~1 KB job-like JSON serialised per request \
             (the ceiling the targets use), and GET /bare-page answering a fixed ~15 KB body, \
             the size of a cached search page, as the cache serves it (to tell the cost of the page's size from the API's own work); \
             wrk -t{} -c16/64/256, {} s warm-up then {secs} s each, --timeout 5s.",
            common::WRK_THREADS,
            common::WARMUP_SECS
        ),
        format!(
            "pgbench: pgbench -n -j {} -T {secs} (after a {} s warm-up) in a fresh database, one \
             INSERT per transaction into a table shaped like an application row (identity key, \
             two bigint ids with a unique index on the pair, text cover letter, text status, \
             timestamptz), random id pairs, ON CONFLICT DO NOTHING.",
            common::WRK_THREADS,
            common::WARMUP_SECS
        ),
    ];
    if capped_any {
        section.notes.push(format!(
            "pgbench clients are capped at {} (PostgreSQL's max_connections is 100 here): the \
             256 level ran with {} clients.",
            common::MAX_PG_CLIENTS,
            common::MAX_PG_CLIENTS
        ));
    }
    (section, ceilings)
}

/// Starts the bare server; returns it, its URL and its load script (with the folder holding it).
async fn start_bare() -> Result<(Child, String, (tempfile::TempDir, std::path::PathBuf))> {
    let exe = std::env::current_exe().context("cannot find this executable")?;
    let addr = common::free_addr()?;
    let mut child = Child::spawn("bare-axum", &exe, &["--bare-axum", &addr.to_string()], &[])?;
    let url = format!("http://{addr}/bare");
    child.wait_ready(&url, Duration::from_secs(30)).await?;
    let dir = tempfile::tempdir()?;
    let script = common::wrk_script(dir.path(), "bare", "")?;
    Ok((child, url, (dir, script)))
}

/// A fresh database with the insert table, and the pgbench script (in the returned folder).
async fn prepare_pgbench(opts: &Opts) -> Result<(FreshDb, tempfile::TempDir, std::path::PathBuf)> {
    let db = FreshDb::create(&opts.pg_url).await?;
    let pool = db.pool(1).await?;
    sqlx::query(
        "CREATE TABLE bench_rows (
             id           BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
             job_id       BIGINT NOT NULL,
             candidate_id BIGINT NOT NULL,
             cover_letter TEXT,
             status       TEXT NOT NULL,
             created_at   TIMESTAMPTZ NOT NULL
         )",
    )
    .execute(&pool)
    .await?;
    sqlx::query("CREATE UNIQUE INDEX bench_rows_pair ON bench_rows (job_id, candidate_id)")
        .execute(&pool)
        .await?;
    pool.close().await;
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("insert.sql");
    std::fs::write(
        &script,
        "\\set job random(1, 1000000000)\n\
         \\set cand random(1, 1000000000)\n\
         INSERT INTO bench_rows (job_id, candidate_id, cover_letter, status, created_at) \
         VALUES (:job, :cand, 'I would love to work on this team.', 'submitted', now()) \
         ON CONFLICT DO NOTHING;\n",
    )?;
    Ok((db, dir, script))
}

// ------------------------------------------------------------------ the bare server

#[derive(Serialize)]
struct BareCompany {
    id: i64,
    name: String,
}

/// Shaped like a job of the API, about 1 KB as JSON.
#[derive(Serialize)]
struct BareJob {
    id: i64,
    company: BareCompany,
    title: String,
    description: String,
    location: String,
    remote: bool,
    salary_min: Option<i64>,
    salary_max: Option<i64>,
    employment_type: &'static str,
    status: &'static str,
    created_at: String,
    updated_at: String,
}

const BARE_DESCRIPTION: &str = "We are a fast-growing logistics company based in Berlin. You \
    will build and scale our payment systems and data pipelines with a small, friendly team of \
    eight engineers. Our stack includes Rust, PostgreSQL, Redis and Kubernetes on AWS. \
    Experience with distributed systems, observability and testing is a plus; curiosity and \
    clear writing matter more than any particular tool. We offer flexible hours, private health \
    insurance, a learning budget, thirty days of holiday and a home office stipend. The role is \
    hybrid with two days a week in the office and occasional travel to meet customers. We \
    review every application within a week and answer everyone who applies.";

/// Serves `GET /bare` on `addr` until killed (the `--bare-axum` mode).
pub async fn serve_bare(addr: SocketAddr) -> Result<()> {
    use axum::{Json, Router, extract::State, routing::get};
    async fn bare(State(next): State<Arc<AtomicI64>>) -> Json<BareJob> {
        let id = next.fetch_add(1, Ordering::Relaxed);
        Json(BareJob {
            id,
            company: BareCompany {
                id: 1,
                name: "Northwind Labs".to_string(),
            },
            title: "Senior Rust Engineer".to_string(),
            description: BARE_DESCRIPTION.to_string(),
            location: "Berlin, Germany".to_string(),
            remote: id % 3 == 0,
            salary_min: Some(70_000),
            salary_max: Some(95_000),
            employment_type: "full_time",
            status: "open",
            created_at: "2026-12-02T10:00:00.000000Z".to_string(),
            updated_at: "2026-12-02T10:00:00.000000Z".to_string(),
        })
    }
    // A fixed body of the size of a cached search page (20 jobs), served as the cache serves it.
    let page = {
        let jobs: Vec<serde_json::Value> = (0..17)
            .map(|i| {
                serde_json::json!({"id": i, "title": "Senior Rust Engineer",
                    "description": BARE_DESCRIPTION, "location": "Berlin, Germany"})
            })
            .collect();
        bytes::Bytes::from(
            serde_json::to_vec(&serde_json::json!({"items": jobs})).unwrap_or_default(),
        )
    };
    let app = Router::new()
        .route(
            "/bare-page",
            get(move || {
                let page = page.clone();
                async move { ([("content-type", "application/json")], page) }
            }),
        )
        .route("/bare", get(bare))
        .with_state(Arc::new(AtomicI64::new(1)));
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .with_context(|| format!("cannot listen on {addr}"))?;
    axum::serve(listener, app).await?;
    Ok(())
}
