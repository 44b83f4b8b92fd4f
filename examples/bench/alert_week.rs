//! `alert_week`: the weekly alert digests of a large week, by three worker processes at once,
//! each under the worker manifest's memory limit. On PostgreSQL: `--alert-week-jobs` open jobs
//! (default 70 000) created in the last ended ISO week (by the database's clock), with
//! descriptions of 2 500–3 500 bytes (3 000 on average) of the `alerts` part's Zipf-like
//! vocabulary, and `--alerts` weekly alerts (default 100 000, 20 to a candidate, as the `alerts`
//! part draws them) whose watermarks are the week's start (their digest of the week before was
//! written).
//!
//! Three `jobboard worker` processes start at once, as deployed workers meet a new week: each
//! one's upkeep writes the week's digests (they share the alerts between them). Every 100 ms the
//! harness reads each one's `/proc/<pid>/status` (`VmRSS`, `RssAnon`, `RssFile`) and the size of
//! its temporary folder (a `TMPDIR` of its own), until the week is marked written and every
//! worker has logged its run; then `VmHWM`, the kernel's peak RSS of the process. Checks: every
//! alert's watermark moved to the week's end; at most one `alert.digest` per alert, of that
//! week, as many as the workers' logs say they wrote. The digests' fingerprint (SHA-256 of every
//! alert's listed jobs and count, by alert) is the same for two runs of one seed whatever the
//! code, so a run of a new matcher can be held against a run of the old one. Judged: each
//! worker's peak RSS against the memory limit of `deploy/kubernetes/worker-deployment.yaml`.

use crate::Opts;

use crate::common::{Child, FreshDb, progress, record_failure};
use crate::report::{Section, Target};
use crate::seed::alert_board::{
    WORDS, generate_alerts, insert_pg_alerts, insert_pg_candidates, places_and_companies, seed_job,
    word, words, zipf,
};
use crate::seed::{SeedJob, insert_pg_companies, insert_pg_jobs};
use crate::worker::scenarios::{CONCURRENCY, POOL};
use crate::worker::sinks::{Sink, SmtpSink};
use crate::worker::sql::{database_url, lit, sqlx_scalar_i64};
use anyhow::{Context, Result, bail, ensure};
use chrono::Duration as ChronoDuration;
use jobboard::domain::alert::Frequency;
use jobboard::domain::event::{EventKind, parse_event};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub const NAME: &str = "alert_week";
const WORKERS: usize = 3;
const MANIFEST: &str = "deploy/kubernetes/worker-deployment.yaml";
/// How long the workers may take to write the week.
const TIMEOUT: Duration = Duration::from_secs(3600);

/// One worker's memory and folder at their highest, in MiB.
#[derive(Debug, Default, Clone, serde::Serialize)]
struct Peaks {
    /// `VmHWM` at the end: the kernel's own peak of the RSS.
    rss_hwm: f64,
    /// The highest of the samples.
    rss: f64,
    anon: f64,
    file: f64,
    tmp: f64,
}

#[derive(Debug, Default, serde::Serialize)]
struct WorkerFigures {
    peaks: Peaks,
    /// The digests its log says it wrote.
    digests: u64,
    /// The new jobs its log says its window held (a release that logs it).
    window_jobs: Option<u64>,
}

#[derive(Debug, Default, serde::Serialize)]
struct Figures {
    jobs: usize,
    alerts: usize,
    week: String,
    description_bytes_mean: f64,
    seed_seconds: f64,
    digests: u64,
    write_seconds: f64,
    fingerprint: String,
    limit_mib: f64,
    workers: Vec<WorkerFigures>,
}

pub async fn run(opts: &Opts) -> Section {
    let mut section = Section {
        name: NAME.into(),
        columns: [
            "scenario",
            "jobs",
            "alerts",
            "window",
            "digests",
            "write s",
            "peak RSS MiB",
            "peak anon MiB",
            "peak file MiB",
            "peak tmp MiB",
            "limit MiB",
        ]
        .map(String::from)
        .to_vec(),
        json: json!({}),
        ..Section::default()
    };
    progress(NAME, "starting");
    match run_week(opts).await {
        Ok(f) => {
            for (i, w) in f.workers.iter().enumerate() {
                let name = format!("{NAME} pg worker-{i}");
                section.rows.push(vec![
                    name.clone(),
                    f.jobs.to_string(),
                    f.alerts.to_string(),
                    w.window_jobs.map_or("-".into(), |n| n.to_string()),
                    w.digests.to_string(),
                    format!("{:.1}", f.write_seconds),
                    format!("{:.0}", w.peaks.rss_hwm),
                    format!("{:.0}", w.peaks.anon),
                    format!("{:.0}", w.peaks.file),
                    format!("{:.0}", w.peaks.tmp),
                    format!("{:.0}", f.limit_mib),
                ]);
                section.targets.push(Target::at_most(
                    &format!("{name}: peak RSS (MiB) under the manifest's limit"),
                    w.peaks.rss_hwm,
                    f.limit_mib,
                    format!(
                        "VmHWM; {} new jobs of {}, {} weekly alerts",
                        f.jobs, f.week, f.alerts
                    ),
                ));
            }
            section.notes.push(format!(
                "{} digests of {} written once each in {:.1} s by {WORKERS} workers at once \
                 (fingerprint {}); descriptions of {:.0} bytes on average; seeded in {:.0} s",
                f.digests,
                f.week,
                f.write_seconds,
                f.fingerprint,
                f.description_bytes_mean,
                f.seed_seconds
            ));
            section.json = json!({"figures": f});
        }
        Err(e) => record_failure(&mut section, NAME, &e),
    }
    section.notes.push(format!(
        "each worker: {CONCURRENCY} in flight, {POOL} connections, mail to a sink taking 50 ms \
         a message; peak RSS is VmHWM, anon and file the highest RssAnon and RssFile of samples \
         every 100 ms, tmp the highest size of its TMPDIR; the limit is {MANIFEST}'s"
    ));
    section
}

/// The memory limit of the worker's container in the manifest, in MiB.
fn manifest_limit_mib() -> Result<f64> {
    let text =
        std::fs::read_to_string(MANIFEST).with_context(|| format!("cannot read {MANIFEST}"))?;
    let value = text
        .lines()
        .skip_while(|l| l.trim() != "limits:")
        .find_map(|l| l.trim().strip_prefix("memory:"))
        .map(str::trim)
        .with_context(|| format!("no memory limit in {MANIFEST}"))?;
    let (n, unit) = value.split_at(
        value
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(value.len()),
    );
    let n: f64 = n
        .parse()
        .with_context(|| format!("{MANIFEST}: memory {value}"))?;
    Ok(match unit {
        "Mi" => n,
        "Gi" => n * 1024.0,
        _ => bail!("{MANIFEST}: memory {value}: not in Mi or Gi"),
    })
}

/// The jobs `first..first + n` of the week's `total`, created in order across it.
fn generate_jobs(
    rng: &mut StdRng,
    first: usize,
    n: usize,
    total: usize,
    week: &jobboard::domain::alert::Period,
    locations: &[String],
    companies: &[String],
) -> Vec<SeedJob> {
    let span_us = (week.end - week.start).num_microseconds().unwrap_or(1) as f64;
    (first..first + n)
        .map(|i| {
            let at = span_us * (i as f64 + rng.r#gen::<f64>()) / total as f64;
            let created_at = week.start + ChronoDuration::microseconds(at as i64);
            let company = zipf(rng, companies.len());
            let title = words(rng, 1, 4);
            let target = rng.gen_range(2_500..=3_500);
            let mut description = String::with_capacity(target + 32);
            while description.len() < target {
                if !description.is_empty() {
                    description.push(' ');
                }
                description.push_str(&word(zipf(rng, WORDS)));
            }
            seed_job(
                rng,
                companies,
                locations,
                company,
                title,
                description,
                created_at,
                60,
            )
        })
        .collect()
}

async fn run_week(opts: &Opts) -> Result<Figures> {
    let limit_mib = manifest_limit_mib()?;
    let fresh = FreshDb::create(&opts.pg_url).await?;
    let url = fresh.url.clone();
    let store = jobboard::store::connect_with_pool(&database_url(&url)?, Some(2)).await?;
    store.migrate().await?;
    let now = chrono::DateTime::from_timestamp_millis(store.now_ms().await?).context("clock")?;
    let week = Frequency::Weekly.last_ended(now - jobboard::worker::DIGEST_GRACE);
    drop(store);

    // Seed.
    let t = Instant::now();
    let mut rng = StdRng::seed_from_u64(20_261_207);
    let (locations, companies) = places_and_companies();
    let total = opts.alert_week_jobs;
    let pool = fresh.pool(4).await?;
    let company_ids = insert_pg_companies(&pool, &companies).await?;
    let mut description_bytes = 0usize;
    const CHUNK: usize = 5_000;
    for first in (0..total).step_by(CHUNK) {
        let n = CHUNK.min(total - first);
        let jobs = generate_jobs(&mut rng, first, n, total, &week, &locations, &companies);
        description_bytes += jobs.iter().map(|j| j.description.len()).sum::<usize>();
        insert_pg_jobs(&pool, &company_ids, &jobs).await?;
        progress(
            NAME,
            format!("{} of {total} jobs of {}", first + n, week.label),
        );
    }
    let alerts = generate_alerts(&mut rng, opts.alerts, &locations, companies.len());
    let user_ids = insert_pg_candidates(&pool, alerts.len()).await?;
    insert_pg_alerts(
        &pool,
        &company_ids,
        &user_ids,
        &alerts,
        Frequency::Weekly,
        week.start,
    )
    .await?;
    sqlx::query("VACUUM (ANALYZE)").execute(&pool).await?;
    pool.close().await;
    let seed_seconds = t.elapsed().as_secs_f64();
    progress(
        NAME,
        format!(
            "seeded in {seed_seconds:.0} s; {WORKERS} workers write the digests of {}",
            week.label
        ),
    );

    // Three workers, each with a temporary folder of its own.
    let sink = Sink::Smtp(SmtpSink::start(Duration::from_millis(50)).await?);
    let mut env: Vec<(&'static str, String)> = vec![
        ("DATABASE_URL", url.clone()),
        (
            "RUST_LOG",
            "warn,jobboard::worker::alert_digests=info".into(),
        ),
        ("LOG_FORMAT", "json".into()),
        ("EMAIL_FROM", "jobs@bench.example".into()),
        ("PUBLIC_BASE_URL", "https://jobs.bench.example".into()),
        (
            "JWT_SECRET",
            "bench-secret-bench-secret-bench-secret".into(),
        ),
        ("DATABASE_POOL_SIZE", POOL.to_string()),
        ("WORKER_CONCURRENCY", CONCURRENCY.to_string()),
        ("WORKER_HTTP_ADDR", "127.0.0.1:0".into()),
    ];
    env.extend(sink.env());
    let tmps = (0..WORKERS)
        .map(|_| tempfile::Builder::new().prefix("jbbench-tmp-").tempdir())
        .collect::<std::io::Result<Vec<_>>>()?;
    let t = Instant::now();
    let mut workers = Vec::new();
    for (i, tmp) in tmps.iter().enumerate() {
        let mut env = env.clone();
        env.push(("TMPDIR", tmp.path().display().to_string()));
        workers.push(Child::spawn(
            &format!("worker-{i}"),
            &opts.bin,
            &["worker"],
            &env,
        )?);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let watched: Vec<(u32, std::path::PathBuf)> = workers
            .iter()
            .zip(&tmps)
            .map(|(w, d)| (w.pid, d.path().to_path_buf()))
            .collect();
        let stop = stop.clone();
        std::thread::spawn(move || sample(&watched, &stop))
    };
    let waited = wait_for_week(&url, &week.label, &mut workers).await;
    let write_seconds = t.elapsed().as_secs_f64();
    let hwm: Vec<Result<f64>> = workers
        .iter()
        .map(|w| crate::common::peak_rss_mb(w.pid))
        .collect();
    stop.store(true, Ordering::SeqCst);
    let mut peaks = sampler
        .join()
        .map_err(|_| anyhow::anyhow!("the sampler panicked"))?;
    for w in &mut workers {
        w.stop()?;
    }
    let logged = waited?;
    for (p, h) in peaks.iter_mut().zip(hwm) {
        p.rss_hwm = h?;
    }

    // Checks.
    let moved = sqlx_scalar_i64(
        &url,
        &format!(
            "SELECT COUNT(*) FROM alerts WHERE watermark_created_at = {}",
            lit(week.end)
        ),
    )
    .await?
    .unwrap_or(0);
    ensure!(
        moved as usize == opts.alerts,
        "{moved} of {} alerts moved to the week's end",
        opts.alerts
    );
    let (digests, fingerprint) = check_digests(&url, &week.label).await?;
    let said: u64 = logged.iter().map(|(n, _)| n).sum();
    ensure!(
        said == digests,
        "the workers say they wrote {said} digests; the database holds {digests}"
    );
    fresh.drop_now().await?;
    Ok(Figures {
        jobs: total,
        alerts: opts.alerts,
        week: week.label.clone(),
        description_bytes_mean: description_bytes as f64 / total.max(1) as f64,
        seed_seconds,
        digests,
        write_seconds,
        fingerprint,
        limit_mib,
        workers: peaks
            .into_iter()
            .zip(logged)
            .map(|(peaks, (digests, window_jobs))| WorkerFigures {
                peaks,
                digests,
                window_jobs,
            })
            .collect(),
    })
}

/// Samples each `(pid, folder)` every 100 ms until `stop`; the highest of each figure.
fn sample(watched: &[(u32, std::path::PathBuf)], stop: &AtomicBool) -> Vec<Peaks> {
    let mut peaks = vec![Peaks::default(); watched.len()];
    while !stop.load(Ordering::SeqCst) {
        for ((pid, dir), p) in watched.iter().zip(&mut peaks) {
            if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
                let mib = |field: &str| {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(field))
                        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
                        .map_or(0.0, |kb| kb / 1024.0)
                };
                p.rss = p.rss.max(mib("VmRSS:"));
                p.anon = p.anon.max(mib("RssAnon:"));
                p.file = p.file.max(mib("RssFile:"));
            }
            p.tmp = p.tmp.max(folder_bytes(dir) as f64 / (1024.0 * 1024.0));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    peaks
}

/// The size of the files under `dir`.
fn folder_bytes(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => folder_bytes(&e.path()),
            Ok(_) => e.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// Waits until the week is marked written and every worker has logged its run of it; returns,
/// per worker, the digests it wrote and the window it logged.
async fn wait_for_week(
    url: &str,
    label: &str,
    workers: &mut [Child],
) -> Result<Vec<(u64, Option<u64>)>> {
    let deadline = Instant::now() + TIMEOUT;
    let wrote = format!("weekly alert digests of {label}");
    loop {
        for w in workers.iter_mut() {
            w.check_running()?;
        }
        // A poll that does not answer within its time is a poll that says "not yet".
        let marked = match tokio::time::timeout(
            Duration::from_secs(10),
            sqlx_scalar_i64(
                url,
                &format!("SELECT COUNT(*) FROM alert_digest_periods WHERE period = '{label}'"),
            ),
        )
        .await
        {
            Ok(answer) => answer?.unwrap_or(0),
            Err(_) => 0,
        };
        let logged: Vec<Option<(u64, Option<u64>)>> = workers
            .iter()
            .map(|w| {
                let log = std::fs::read_to_string(&w.log).unwrap_or_default();
                let number_after = |line: &str, word: &str| {
                    let rest = &line[line.find(word)? + word.len()..];
                    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                    digits.parse::<u64>().ok()
                };
                let window = log
                    .lines()
                    .find(|l| l.contains(&format!("alert digests of {label} are matched")))
                    .and_then(|l| number_after(l, "indexed the "));
                // The window's line names the period too: the run's is the one that says
                // what it wrote.
                log.lines()
                    .find(|l| l.contains(&wrote) && l.contains("\"wrote "))
                    .and_then(|l| number_after(l, "wrote "))
                    .map(|n| (n, window))
            })
            .collect();
        if marked == 1 && logged.iter().all(Option::is_some) {
            return Ok(logged.into_iter().flatten().collect());
        }
        if Instant::now() > deadline {
            bail!(
                "after {} s: week marked written: {}; workers that logged their run: {:?}\n{}",
                TIMEOUT.as_secs(),
                marked == 1,
                logged.iter().map(Option::is_some).collect::<Vec<_>>(),
                workers.first().map(|w| w.log_tail(20)).unwrap_or_default()
            );
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The week's digests: at most one per alert, all of the week; their number and fingerprint.
async fn check_digests(url: &str, label: &str) -> Result<(u64, String)> {
    let mut c = crate::common::pg_connect(url).await?;
    let bodies: Vec<String> =
        sqlx::query_scalar("SELECT body FROM events WHERE type = 'alert.digest'")
            .fetch_all(&mut c)
            .await?;
    let mut by_alert: BTreeMap<i64, (Vec<i64>, u64)> = BTreeMap::new();
    for body in &bodies {
        let event = parse_event(body).map_err(|e| anyhow::anyhow!("{e:?}: {body}"))?;
        let EventKind::AlertDigest {
            alert_id,
            period,
            jobs,
            more,
        } = event.kind
        else {
            bail!("not an alert digest: {body}");
        };
        ensure!(period == label, "a digest of {period}, not {label}");
        ensure!(
            by_alert.insert(alert_id, (jobs, more)).is_none(),
            "alert {alert_id} has two digests of {label}"
        );
    }
    let mut hash = Sha256::new();
    for (alert, (jobs, more)) in &by_alert {
        hash.update(format!("{alert}:{jobs:?}+{more};"));
    }
    let fingerprint = hex::encode(&hash.finalize()[..8]);
    Ok((by_alert.len() as u64, fingerprint))
}
