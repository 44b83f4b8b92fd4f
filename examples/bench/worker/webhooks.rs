//! Webhook scenarios: deliveries drained by one `jobboard worker` process on PostgreSQL at the
//! email rows' settings (`DATABASE_POOL_SIZE`, `WORKER_CONCURRENCY`, `WORKER_BATCH`), to a
//! receiver that answers each in 50 ms, as the `smtp+50ms` mail sink does.
//!
//! A delivery holds one of its endpoint's lanes (`worker::webhooks::LANE`, 4) for its whole
//! exchange, so one endpoint alone cannot go past 4 / 50 ms = 80 deliveries/s per process. The
//! deliveries are spread round-robin over [`ENDPOINTS`] endpoints, as many lanes in all as the
//! email rows have sends in flight (`WORKER_CONCURRENCY`): the figure is the channel's, at the
//! same concurrency. The second scenario adds one more endpoint, given the same share of
//! deliveries, whose receiver never answers within the worker's deadline
//! (`WEBHOOK_TIMEOUT_SECS`, 10 s): the others' rate is measured while it hangs.
//!
//! The deliveries are written straight into a copy of the seed (its outbox emptied, so the
//! emails' loop has nothing to do), due at once; the endpoints belong to the seed's company and
//! have no secret rotation. Events/s = (deliveries - 1) / (first .. last delivery answered) of
//! the answering endpoints.

use super::phases::xact_commit;
use super::scenarios::{CONCURRENCY, Db, POOL};
use super::seed::{Seed, copy_seed};
use super::sql::{sqlx_exec, sqlx_scalar_i64};
use crate::Opts;
use crate::common::Child;
use anyhow::{Context, Result, bail};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// Endpoints that answer: times `LANE` (4) is the email rows' `WORKER_CONCURRENCY`.
pub(super) const ENDPOINTS: usize = CONCURRENCY / 4;

/// How long the answering receiver takes per delivery.
const ANSWER_IN: Duration = Duration::from_millis(50);

/// What one webhook scenario measured.
#[derive(Debug, Default, serde::Serialize)]
pub(super) struct HookFigures {
    /// Deliveries to the answering endpoints.
    pub(super) deliveries: usize,
    pub(super) seconds: f64,
    pub(super) startup_seconds: f64,
    pub(super) deliveries_per_sec: f64,
    pub(super) commits_per_delivery: f64,
    /// Requests the hanging endpoint got while the others drained.
    pub(super) hanging_requests: usize,
    pub(super) duplicates: usize,
    pub(super) losses: usize,
}

/// The scenario's name in the report.
pub(super) fn name(hanging: bool) -> String {
    format!(
        "pg webhooks+50ms x1, {ENDPOINTS} endpoints{}",
        if hanging { " + 1 hanging" } else { "" }
    )
}

#[derive(Default)]
struct Book {
    /// webhook-id -> when each request of it was answered.
    answered: HashMap<String, Vec<SystemTime>>,
    hanging: usize,
}

async fn receive(
    State(book): State<Arc<Mutex<Book>>>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> StatusCode {
    if name == "hang" {
        if let Ok(mut b) = book.lock() {
            b.hanging += 1;
        }
        // Past the worker's deadline: it gives up first.
        tokio::time::sleep(Duration::from_secs(60)).await;
        return StatusCode::NO_CONTENT;
    }
    tokio::time::sleep(ANSWER_IN).await;
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    if let Ok(mut b) = book.lock() {
        b.answered.entry(id).or_default().push(SystemTime::now());
    }
    StatusCode::NO_CONTENT
}

/// A receiver whose every request hangs past the worker's deadline, for the mail rows run beside
/// a hanging endpoint: its URL, and the server (aborted when dropped by the caller).
pub(super) async fn hanging_receiver() -> Result<(String, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/hang", listener.local_addr()?);
    let app = axum::Router::new()
        .route("/{name}", axum::routing::post(receive))
        .with_state(Arc::new(Mutex::new(Book::default())));
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((url, server))
}

/// Gives the seed's company an endpoint at `url` that takes every status change, and a delivery
/// of each event on the outbox to it, due now: the events' webhooks, as the store writes them.
pub(super) async fn hook_every_event(db_url: &str, url: &str) -> Result<()> {
    let company = sqlx_scalar_i64(db_url, "SELECT MIN(id) FROM companies")
        .await?
        .context("the seed has no company")?;
    let endpoint = sqlx_scalar_i64(
        db_url,
        &format!(
            "INSERT INTO webhook_endpoints (company_id, url, events, secret, created_at, \
             updated_at) VALUES ({company}, '{url}', 'application.status_changed', \
             'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/0Xr7zd7Q/0=', now(), now()) RETURNING id"
        ),
    )
    .await?
    .context("no endpoint id")?;
    sqlx_exec(
        db_url,
        &format!(
            "INSERT INTO webhook_deliveries (webhook_id, endpoint_id, event_id, type, body, \
             next_attempt_at, created_at) SELECT 'msg_hang' || id, {endpoint}, event_id, \
             'application.status_changed', '{{}}', now(), now() FROM outbox"
        ),
    )
    .await
}

pub(super) async fn run_webhooks(
    opts: &Opts,
    seed: &Seed,
    deliveries: usize,
    hanging: bool,
) -> Result<HookFigures> {
    let copy = copy_seed(opts, seed, Db::Postgres).await?;
    let book: Arc<Mutex<Book>> = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let app = axum::Router::new()
        .route("/{name}", axum::routing::post(receive))
        .with_state(book.clone());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    sqlx_exec(&copy.url, "DELETE FROM outbox").await?;
    let company = sqlx_scalar_i64(&copy.url, "SELECT MIN(id) FROM companies")
        .await?
        .context("the seed has no company")?;
    let mut endpoints = Vec::new();
    let names: Vec<String> = (0..ENDPOINTS)
        .map(|i| format!("e{i}"))
        .chain(hanging.then(|| "hang".to_string()))
        .collect();
    for name in &names {
        let id = sqlx_scalar_i64(
            &copy.url,
            &format!(
                "INSERT INTO webhook_endpoints (company_id, url, events, secret, created_at, \
                 updated_at) VALUES ({company}, '{base}/{name}', \
                 'application.status_changed', 'whsec_{}', now(), now()) RETURNING id",
                // 32 bytes, base64: a secret as the API makes one.
                "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/0Xr7zd7Q/0=",
            ),
        )
        .await?
        .context("no endpoint id")?;
        endpoints.push(id);
    }
    // `deliveries` to the answering endpoints round-robin, and (hanging) as many more per
    // endpoint to the hanging one, interleaved with the others by their ids.
    let answering = &endpoints[..ENDPOINTS];
    let per_endpoint = deliveries.div_ceil(ENDPOINTS);
    let total = if hanging {
        deliveries + per_endpoint
    } else {
        deliveries
    };
    let ids = endpoints
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let k = endpoints.len();
    sqlx_exec(
        &copy.url,
        &format!(
            "INSERT INTO webhook_deliveries (webhook_id, endpoint_id, event_id, type, body, \
             next_attempt_at, created_at) \
             SELECT 'msg_bench' || g, (ARRAY[{ids}])[1 + g % {k}], 'bench-' || g, \
             'application.status_changed', \
             '{{\"type\":\"application.status_changed\",\"timestamp\":\"2026-01-01T00:00:00Z\",\
             \"data\":{{\"application_id\":' || g || '}}}}', now(), now() \
             FROM generate_series(0, {}) g",
            total - 1
        ),
    )
    .await?;
    // Which ids the answering endpoints get: every g whose endpoint index is below ENDPOINTS
    // (the hanging one, when there, is the last).
    let expected: HashSet<String> = (0..total)
        .filter(|g| !hanging || g % k < ENDPOINTS)
        .map(|g| format!("msg_bench{g}"))
        .collect();
    anyhow::ensure!(
        expected.len() >= answering.len(),
        "too few deliveries for {} endpoints",
        answering.len()
    );

    let file_dir = tempfile::tempdir()?;
    let env: Vec<(&'static str, String)> = vec![
        ("DATABASE_URL", copy.url.clone()),
        ("RUST_LOG", "warn".into()),
        ("LOG_FORMAT", "json".into()),
        ("EMAIL_FROM", "jobs@bench.example".into()),
        ("EMAIL_BACKEND", "file".into()),
        ("EMAIL_FILE_DIR", file_dir.path().display().to_string()),
        ("DATABASE_POOL_SIZE", POOL.to_string()),
        ("WORKER_CONCURRENCY", CONCURRENCY.to_string()),
        ("WORKER_BATCH", "true".into()),
        ("WEBHOOK_ALLOW_PRIVATE", "true".into()),
        ("WORKER_HTTP_ADDR", "127.0.0.1:0".into()),
    ];
    let commits_before = xact_commit(&copy.url).await?;
    let start = SystemTime::now();
    let mut worker = Child::spawn("worker-webhooks", &opts.bin, &["worker"], &env)?;
    let deadline = Instant::now() + Duration::from_secs(120 + expected.len() as u64 / 10);
    let mut last = (0, Instant::now());
    loop {
        let got = book.lock().map(|b| b.answered.len()).unwrap_or(0);
        if got >= expected.len() {
            break;
        }
        worker.check_running()?;
        if got != last.0 {
            last = (got, Instant::now());
        }
        if Instant::now() > deadline || last.1.elapsed() > Duration::from_secs(60) {
            bail!(
                "{got} of {} webhook deliveries answered\n{}",
                expected.len(),
                worker.log_tail(20)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (answered, hanging_requests) = book
        .lock()
        .map(|b| (b.answered.clone(), b.hanging))
        .map_err(|_| anyhow::anyhow!("the receiver's book is poisoned"))?;
    worker.stop()?;
    server.abort();
    tokio::time::sleep(Duration::from_millis(700)).await;
    let commits = xact_commit(&copy.url).await? - commits_before;
    let times: Vec<SystemTime> = answered.values().flatten().copied().collect();
    let first = *times.iter().min().context("nothing answered")?;
    let last = *times.iter().max().unwrap_or(&first);
    let seconds = last.duration_since(first).unwrap_or_default().as_secs_f64();
    let duplicates = answered.values().map(|v| v.len() - 1).sum::<usize>()
        + answered.keys().filter(|id| !expected.contains(*id)).count();
    let losses = expected
        .iter()
        .filter(|id| !answered.contains_key(*id))
        .count();
    Ok(HookFigures {
        deliveries: expected.len(),
        seconds,
        startup_seconds: first
            .duration_since(start)
            .unwrap_or_default()
            .as_secs_f64(),
        deliveries_per_sec: (expected.len() - 1) as f64 / seconds.max(1e-9),
        commits_per_delivery: commits as f64 / expected.len() as f64,
        hanging_requests,
        duplicates,
        losses,
    })
}
