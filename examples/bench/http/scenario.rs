//! A load scenario, and how one is measured: a warm-up and a measured run of wrk at each
//! connection level, with the API's RSS and its search-cache hits.

use super::bench::Bench;
use super::rows::SECTION;
use crate::common::{self, Wrk, WrkResult};
use crate::report::Section;
use anyhow::{Context, Result, ensure};
use std::path::Path;

/// One load scenario: its script, and the parameters of each run.
pub(super) trait Scenario {
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

/// A measured run of one scenario at one connection level.
pub(super) struct Measured {
    pub(super) scenario: &'static str,
    pub(super) conns: u32,
    pub(super) wrk: WrkResult,
    pub(super) rss_start_mb: Option<f64>,
    pub(super) peak_rss_mb: Option<f64>,
    /// Search-cache hits and misses during the measured run (from `/metrics`).
    pub(super) cache: Option<(f64, f64)>,
    pub(super) notes: Vec<String>,
    /// Why the row counts as failed although it has figures.
    pub(super) failed: Option<String>,
}

impl Measured {
    pub(super) fn hit_ratio(&self) -> Option<f64> {
        self.cache
            .filter(|(h, m)| h + m > 0.0)
            .map(|(h, m)| h / (h + m))
    }
}

impl Bench<'_> {
    /// Runs `sc` at every connection level.
    pub(super) async fn levels(
        &mut self,
        sc: &mut dyn Scenario,
        section: &mut Section,
        out: &mut Vec<Measured>,
    ) {
        self.levels_at(sc, section, out, &common::CONN_LEVELS).await;
    }

    /// Runs `sc` at these connection levels (unless `--scenario` leaves it out).
    pub(super) async fn levels_at(
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
    pub(super) async fn run_levels(
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

    /// A run of `sc` at `conns` connections for `secs`, measuring nothing: what comes before
    /// a scenario whose first runs would otherwise find the server or the database cold.
    pub(super) async fn prime(
        &mut self,
        sc: &mut dyn Scenario,
        conns: u32,
        secs: u64,
    ) -> Result<()> {
        let url = format!("{}{}", self.base, sc.path());
        let args = sc.prepare(conns, secs, true)?;
        let run = common::run_wrk(&Wrk {
            url: &url,
            conns,
            secs,
            script: sc.script(),
            args,
        })
        .await
        .context("priming run")?;
        sc.finish(&run, true)?;
        self.server()?.check_running()
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

/// The highest request number any thread reached (counts are per thread, numbers interleave).
/// Takes each wrk thread's request counter from a finished run (the next run continues from
/// there); returns how many request numbers are used up.
pub(super) fn advance(start: &mut Vec<u64>, r: &WrkResult) -> Result<u64> {
    ensure!(
        r.counts.len() == start.len(),
        "wrk reported {} threads, expected {}",
        r.counts.len(),
        start.len()
    );
    *start = r.counts.clone();
    Ok(requests_numbered(start))
}

pub(super) fn requests_numbered(start: &[u64]) -> u64 {
    start
        .iter()
        .enumerate()
        .map(|(t, c)| c * start.len() as u64 + t as u64)
        .max()
        .unwrap_or(0)
}
