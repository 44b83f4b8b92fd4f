//! The index-lag step: how far the API's search index runs behind job writes.

use super::bench::{Bench, api};
use super::rows::{SECTION, lag_row};
use crate::common;
use crate::report::{Section, Target};
use anyhow::{Context, Result, bail, ensure};
use serde_json::json;
use std::time::{Duration, Instant};

/// Job writes per second, and seconds, of the index-lag step.
const LAG_WRITES_PER_SEC: u64 = 100;

const LAG_SECS: u64 = 30;

impl Bench<'_> {
    /// How far the API's search index runs behind job writes at [`LAG_WRITES_PER_SEC`] for
    /// [`LAG_SECS`]: creates and title edits through the API, one at a time on a clock; after
    /// each answer, the log's newest `seq`. Meanwhile, every 10 ms, the index's applied `seq`
    /// (`search_index_applied_seq` on `/metrics`) and the log's newest: a write's lag is the
    /// time from its answer to the first sample whose applied `seq` reaches it, and each sample
    /// gives `search_index_lag` (newest - applied) as it was then.
    pub(super) async fn run_index_lag(&mut self, section: &mut Section) {
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

    /// The newest `seq` of the job-change log.
    async fn newest_change(&self) -> Result<i64> {
        newest_change(self.pg.as_ref(), self.sqlite.as_ref().map(|(_, p)| p)).await
    }
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
