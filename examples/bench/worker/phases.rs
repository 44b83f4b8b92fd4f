//! One scenario's run on its copy of the seed: the drain, then the latency phase; and the
//! worker processes and the wait for their emails, which the alert and upkeep parts use too.

use super::ceilings::{create_queue, sqs_client};
use super::scenarios::{CONCURRENCY, Db, Mail, POOL, SECTION, Scenario};
use super::seed::{Seed, copy_seed};
use super::sinks::{SesSink, Sink, SmtpSink};
use super::sql::{database_url, sqlx_exec, sqlx_scalar_i64, sqlx_strings};
use crate::Opts;
use crate::common::{Child, progress};
use anyhow::{Context, Result, bail};
use jobboard::domain::{Actor, ApplicationStatus};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// What one scenario measured.
#[derive(Debug, Default, serde::Serialize)]
pub(super) struct Figures {
    pub(super) events: usize,
    /// From the first email accepted to the last.
    pub(super) seconds: f64,
    /// From the processes' start to the first email.
    pub(super) startup_seconds: f64,
    pub(super) events_per_sec: f64,
    /// PostgreSQL transactions committed in the database during the drain, per event.
    pub(super) commits_per_event: Option<f64>,
    pub(super) latency_events: usize,
    pub(super) offered_per_sec: f64,
    pub(super) latency_p50_ms: f64,
    pub(super) latency_p99_ms: f64,
    pub(super) duplicates: usize,
    pub(super) losses: usize,
}

pub(super) async fn run_scenario(
    opts: &Opts,
    seed: &Seed,
    sc: &Scenario,
    latency_events: usize,
) -> Result<Figures> {
    let copy = copy_seed(opts, seed, sc.db).await?;
    let dir = tempfile::tempdir()?;
    let sink = match sc.mail {
        Mail::File => Sink::Files(dir.path().join("mail")),
        Mail::Smtp(ms) => Sink::Smtp(SmtpSink::start(Duration::from_millis(ms)).await?),
        Mail::Ses => Sink::Ses(SesSink::start().await?),
    };
    let store = jobboard::store::connect_with_pool(&database_url(&copy.url)?, Some(4)).await?;
    // Keep only the scenario's number of events (the first ones).
    let cut: Option<i64> = sqlx_scalar_i64(
        &copy.url,
        &format!(
            "SELECT id FROM outbox ORDER BY id LIMIT 1 OFFSET {}",
            sc.events
        ),
    )
    .await?;
    if let Some(cut) = cut {
        sqlx_exec(&copy.url, &format!("DELETE FROM outbox WHERE id >= {cut}")).await?;
    }
    let expected: HashSet<String> = sqlx_strings(&copy.url, "SELECT event_id FROM outbox").await?;
    anyhow::ensure!(
        expected.len() == sc.events,
        "the seed has {} events, not {}",
        expected.len(),
        sc.events
    );

    let mut env: Vec<(&'static str, String)> = vec![
        ("DATABASE_URL", copy.url.clone()),
        ("CLAIM_MODE", sc.mode.into()),
        ("RUST_LOG", "warn".into()),
        ("LOG_FORMAT", "json".into()),
        ("EMAIL_FROM", "jobs@bench.example".into()),
    ];
    if !sc.defaults {
        env.extend([
            ("DATABASE_POOL_SIZE", POOL.to_string()),
            ("WORKER_CONCURRENCY", CONCURRENCY.to_string()),
            ("WORKER_BATCH", sc.batch.to_string()),
        ]);
    }
    env.extend(sink.env());
    // Beside a hanging endpoint: every event also has a webhook delivery to it.
    let _hanging = if sc.hanging_hook {
        let (url, server) = super::webhooks::hanging_receiver().await?;
        super::webhooks::hook_every_event(&copy.url, &url).await?;
        env.push(("WEBHOOK_ALLOW_PRIVATE", "true".into()));
        Some(AbortOnDrop(server))
    } else {
        None
    };
    let mut relay = None;
    if sc.sqs {
        let client = sqs_client().await;
        let url = create_queue(&client).await?;
        let dlq = create_queue(&client).await?;
        env.push(("QUEUE", "sqs".into()));
        env.push(("SQS_QUEUE_URL", url.clone()));
        env.push(("SQS_DLQ_URL", dlq));
        let vars: HashMap<String, String> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let config = jobboard::config::Config::from_map(&vars, false)?;
        let sqs = jobboard::run::sqs_queue(&config, store.clone()).await?;
        let r = Arc::new(jobboard::relay::Relay::new(store.clone(), sqs));
        progress(SECTION, format!("publishing {} events to SQS", sc.events));
        let published = r.drain().await?;
        anyhow::ensure!(
            published == sc.events,
            "published {published} of {}",
            sc.events
        );
        relay = Some(r);
    }

    // Drain.
    let commits_before = match sc.db {
        Db::Postgres => Some(xact_commit(&copy.url).await?),
        Db::Sqlite => None,
    };
    let start = SystemTime::now();
    let mut workers = start_workers(opts, sc.procs, &env)?;
    let timeout = Duration::from_secs(120 + sc.events as u64 / 10);
    wait_for_emails(&sink, &expected, &mut workers, timeout).await?;
    let drained = sink.accepted()?;
    let first = drained
        .iter()
        .map(|(_, t)| *t)
        .min()
        .context("no email accepted")?;
    let last = drained.iter().map(|(_, t)| *t).max().unwrap_or(first);
    let seconds = last.duration_since(first).unwrap_or_default().as_secs_f64();
    let startup = first
        .duration_since(start)
        .unwrap_or_default()
        .as_secs_f64();
    for w in &mut workers {
        w.stop()?;
    }
    drop(workers);
    let commits_per_event = match commits_before {
        Some(before) => {
            // An exiting backend reports its counts; give the statistics a moment.
            tokio::time::sleep(Duration::from_millis(700)).await;
            let after = xact_commit(&copy.url).await?;
            Some((after - before) as f64 / sc.events as f64)
        }
        None => None,
    };
    let rate = (sc.events - 1) as f64 / seconds.max(1e-9);

    // Latency: fresh processes, status changes committed at half the drain rate.
    let mut workers = start_workers(opts, sc.procs, &env)?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let relay_task = relay.clone().map(|r| {
        let stop = tokio_util::sync::CancellationToken::new();
        let task = tokio::spawn(r.run(stop.clone()));
        (stop, task)
    });
    let offered = (rate / 2.0).clamp(1.0, 2_000.0);
    let apps = &copy.latency_apps[..latency_events.min(copy.latency_apps.len())];
    let committed: Arc<Mutex<HashMap<String, SystemTime>>> = Arc::default();
    let every = Duration::from_secs_f64(1.0 / offered);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
    let mut tasks = tokio::task::JoinSet::new();
    for &app in apps {
        tick.tick().await;
        let (store, committed, relay) = (store.clone(), committed.clone(), relay.clone());
        let employer = seed.employer;
        tasks.spawn(async move {
            let change = store
                .change_status(
                    app,
                    ApplicationStatus::Reviewing,
                    Actor::Employer,
                    employer,
                    None,
                )
                .await?;
            let at = SystemTime::now();
            if let Some(r) = relay {
                r.poke();
            }
            let id = change.event_id.context("no event for a status change")?;
            committed
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id, at);
            anyhow::Ok(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let committed = committed.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut all_expected = expected.clone();
    all_expected.extend(committed.keys().cloned());
    wait_for_emails(&sink, &all_expected, &mut workers, timeout).await?;
    for w in &mut workers {
        w.stop()?;
    }
    if let Some((stop, task)) = relay_task {
        stop.cancel();
        let _ = task.await;
    }
    // A moment for anything late (a duplicate would show up here).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let accepted = sink.accepted()?;
    let mut per_event: HashMap<&str, usize> = HashMap::new();
    for (id, _) in &accepted {
        *per_event.entry(id.as_str()).or_default() += 1;
    }
    let duplicates = per_event
        .iter()
        .map(|(id, n)| {
            if all_expected.contains(*id) {
                n - 1
            } else {
                *n
            }
        })
        .sum();
    let losses = all_expected
        .iter()
        .filter(|id| !per_event.contains_key(id.as_str()))
        .count();
    let mut latencies: Vec<f64> = accepted
        .iter()
        .filter_map(|(id, at)| {
            let c = committed.get(id)?;
            Some(at.duration_since(*c).unwrap_or_default().as_secs_f64() * 1000.0)
        })
        .collect();
    latencies.sort_by(|a, b| a.total_cmp(b));
    let pct = |p: f64| {
        if latencies.is_empty() {
            0.0
        } else {
            latencies[((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1]
        }
    };
    // Nothing may be left on a database queue.
    if !sc.sqs {
        let left = sqlx_scalar_i64(&copy.url, "SELECT COUNT(*) FROM outbox")
            .await?
            .unwrap_or(0);
        anyhow::ensure!(left == 0, "{left} messages left on the queue");
    }
    drop(store);
    Ok(Figures {
        events: sc.events,
        seconds,
        startup_seconds: startup,
        events_per_sec: rate,
        commits_per_event,
        latency_events: committed.len(),
        offered_per_sec: offered,
        latency_p50_ms: pct(0.50),
        latency_p99_ms: pct(0.99),
        duplicates,
        losses,
    })
}

pub(crate) fn start_workers(
    opts: &Opts,
    procs: usize,
    env: &[(&'static str, String)],
) -> Result<Vec<Child>> {
    (0..procs)
        .map(|i| {
            let mut env = env.to_vec();
            // Port 0: each process listens where the system puts it, so none can collide.
            env.push(("WORKER_HTTP_ADDR", "127.0.0.1:0".to_string()));
            Child::spawn(&format!("worker-{i}"), &opts.bin, &["worker"], &env)
        })
        .collect()
}

/// Waits until every event of `expected` has an email; fails on a stall or a dead process.
pub(crate) async fn wait_for_emails(
    sink: &Sink,
    expected: &HashSet<String>,
    workers: &mut [Child],
    timeout: Duration,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut last_count = 0;
    let mut last_progress = Instant::now();
    loop {
        // Counting is cheap; the whole check only once there are enough emails (the harness
        // shares the machine with the workers, so it keeps its own work small).
        let count = sink.count()?;
        let mut missing = expected.len().saturating_sub(count);
        if missing == 0 {
            let accepted = sink.accepted()?;
            let seen: HashSet<&str> = accepted.iter().map(|(id, _)| id.as_str()).collect();
            missing = expected
                .iter()
                .filter(|id| !seen.contains(id.as_str()))
                .count();
            if missing == 0 {
                return Ok(());
            }
        }
        for w in workers.iter_mut() {
            w.check_running()?;
        }
        if count != last_count {
            last_count = count;
            last_progress = Instant::now();
        }
        if Instant::now() > deadline || last_progress.elapsed() > Duration::from_secs(60) {
            bail!(
                "{missing} of {} events still without an email after {} s\n{}",
                expected.len(),
                timeout.as_secs(),
                workers.first().map(|w| w.log_tail(20)).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(super) async fn xact_commit(url: &str) -> Result<i64> {
    let mut c = crate::common::pg_connect(url).await?;
    Ok(sqlx::query_scalar(
        "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut c)
    .await?)
}

/// Stops a server task when the scenario ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
