//! The ceilings the scenarios are held against: pgbench running the worker's per-event work,
//! and the SQS test server's own rates with no worker.

use super::scenarios::{Db, POOL, SECTION};
use super::seed::{Seed, copy_seed};
use crate::Opts;
use crate::common::progress;
use anyhow::{Context, Result, bail};
use futures::{StreamExt, TryStreamExt};
use std::sync::Arc;
use std::time::Instant;

/// pgbench running the worker's per-event work as one transaction, over a copy of the seed.
pub(super) async fn pgbench_worker_shaped(opts: &Opts, seed: &Seed) -> Result<f64> {
    progress(SECTION, "ceiling: pgbench worker-shaped transaction");
    let copy = copy_seed(opts, seed, Db::Postgres).await?;
    let pending: i64 = {
        let mut c = crate::common::pg_connect(&copy.url).await?;
        sqlx::query_scalar("SELECT COUNT(*) FROM outbox")
            .fetch_one(&mut c)
            .await?
    };
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("worker.sql");
    // The same statements the worker runs per event (receive, claim, email data, record,
    // acknowledge), one transaction.
    std::fs::write(
        &script,
        "BEGIN;\n\
         UPDATE outbox SET visible_at = (extract(epoch from clock_timestamp()) * 1000)::bigint + 30000, \
           receive_count = receive_count + 1, receipt = md5(random()::text) \
           WHERE id = (SELECT id FROM outbox WHERE visible_at <= (extract(epoch from clock_timestamp()) * 1000)::bigint \
           ORDER BY visible_at, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
           RETURNING id AS oid, event_id AS eid, application_id AS aid, receipt AS rc \\gset\n\
         INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, updated_at) \
           VALUES (:eid, 'in_progress', :rc, (extract(epoch from clock_timestamp()) * 1000)::bigint + 30000, 0, \
           (extract(epoch from clock_timestamp()) * 1000)::bigint) ON CONFLICT (event_id) DO NOTHING;\n\
         SELECT u.id, u.email, u.name, j.title, c.name FROM application_history h \
           JOIN applications a ON a.id = h.application_id JOIN users u ON u.id = a.candidate_id \
           JOIN jobs j ON j.id = a.job_id JOIN companies c ON c.id = j.company_id \
           WHERE a.id = :aid AND h.event_id = :eid;\n\
         UPDATE processed_events SET status = 'done', lease_id = NULL, locked_until = NULL, \
           updated_at = (extract(epoch from clock_timestamp()) * 1000)::bigint \
           WHERE event_id = :eid AND lease_id = :rc AND status = 'in_progress';\n\
         DELETE FROM outbox WHERE id = :oid AND receipt = :rc;\n\
         END;\n",
    )?;
    let per_client = (pending as u32 / POOL).max(1);
    let out = tokio::process::Command::new("pgbench")
        .args([
            "-n",
            "-Mprepared",
            &format!("-c{POOL}"),
            "-j2",
            &format!("-t{per_client}"),
            "-f",
        ])
        .arg(&script)
        .arg(&copy.url)
        .output()
        .await
        .context("cannot run pgbench")?;
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    if !out.status.success() {
        bail!(
            "pgbench failed: {}{}",
            text,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let tps = text
        .lines()
        .find(|l| l.starts_with("tps") && l.contains("without initial connection time"))
        .or_else(|| text.lines().find(|l| l.starts_with("tps")))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|v| v.parse::<f64>().ok())
        .with_context(|| format!("no tps in pgbench's output: {text}"))?;
    let left: i64 = {
        let mut c = crate::common::pg_connect(&copy.url).await?;
        sqlx::query_scalar("SELECT COUNT(*) FROM outbox")
            .fetch_one(&mut c)
            .await?
    };
    anyhow::ensure!(
        left == pending - (per_client * POOL) as i64,
        "pgbench left {left} of {pending} events (expected {})",
        pending - (per_client * POOL) as i64
    );
    Ok(tps)
}

/// The SQS server's own rates with no worker: sending `n` messages in batches of 10, then
/// receiving and deleting them in batches of 10, four callers at once.
pub(super) async fn sqs_ceiling(n: usize) -> Result<(f64, f64)> {
    progress(SECTION, "ceiling: SQS server send and receive+delete");
    let client = sqs_client().await;
    let url = create_queue(&client).await?;
    let body = serde_json::json!({"type": "application.status_changed", "event_id": uuid::Uuid::new_v4().to_string(),
        "application_id": 1, "old_status": "submitted", "new_status": "reviewing", "occurred_at": "2026-12-02T10:00:00Z"}).to_string();
    let start = Instant::now();
    let batches = n.div_ceil(10);
    futures::stream::iter(0..batches)
        .map(|b| {
            let (client, url, body) = (client.clone(), url.clone(), body.clone());
            async move {
                let mut req = client.send_message_batch().queue_url(&url);
                for i in 0..10.min(n - b * 10) {
                    req = req.entries(
                        aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .message_body(&body)
                            .build()?,
                    );
                }
                let out = req.send().await?;
                anyhow::ensure!(out.failed().is_empty(), "send failed: {:?}", out.failed());
                anyhow::Ok(())
            }
        })
        .buffer_unordered(4)
        .try_collect::<Vec<()>>()
        .await?;
    let send = n as f64 / start.elapsed().as_secs_f64();
    let start = Instant::now();
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let callers = (0..4).map(|_| {
        let (client, url, done) = (client.clone(), url.clone(), done.clone());
        async move {
            let mut empty = 0;
            while done.load(std::sync::atomic::Ordering::SeqCst) < n && empty < 3 {
                let out = client
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(10)
                    .wait_time_seconds(1)
                    .send()
                    .await?;
                let msgs = out.messages();
                if msgs.is_empty() {
                    empty += 1;
                    continue;
                }
                let mut req = client.delete_message_batch().queue_url(&url);
                for (i, m) in msgs.iter().enumerate() {
                    req = req.entries(
                        aws_sdk_sqs::types::DeleteMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .receipt_handle(m.receipt_handle().unwrap_or_default())
                            .build()?,
                    );
                }
                req.send().await?;
                done.fetch_add(msgs.len(), std::sync::atomic::Ordering::SeqCst);
            }
            anyhow::Ok(())
        }
    });
    futures::future::try_join_all(callers).await?;
    let received = done.load(std::sync::atomic::Ordering::SeqCst);
    anyhow::ensure!(received >= n, "received {received} of {n}");
    let recv = n as f64 / start.elapsed().as_secs_f64();
    let _ = client.delete_queue().queue_url(&url).send().await;
    Ok((send, recv))
}

pub(super) async fn sqs_client() -> aws_sdk_sqs::Client {
    let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    aws_sdk_sqs::Client::new(&shared)
}

pub(super) async fn create_queue(client: &aws_sdk_sqs::Client) -> Result<String> {
    let name = format!("jbbench-{}", uuid::Uuid::new_v4().simple());
    let out = client.create_queue().queue_name(&name).send().await?;
    out.queue_url()
        .map(str::to_string)
        .context("no queue URL from CreateQueue")
}
