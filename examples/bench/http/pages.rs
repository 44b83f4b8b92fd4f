//! The public pages at scale, on the mixes' server and database: a job's page (uncached: a
//! sample of pages far larger than the cache; cached: a hundred of them) beside the API's
//! `job_detail`, a feed beside the same search on the API, and the whole sitemap of the board
//! read once, with the time it took and how far the API's RSS rose.

use super::bench::Bench;
use super::rows::{Kind, Mix, mix_detail_row};
use super::scenario::Measured;
use super::search_mixes::MixScenario;
use crate::common;
use crate::report::{Section, Target};
use anyhow::{Context, Result, bail, ensure};
use futures::StreamExt;
use rand::{Rng, SeedableRng, rngs::StdRng};
use std::time::Instant;

/// Job pages in the uncached row's sample: with descriptions of 2–5 KB a page is 6–9 KB, so the
/// sample is many times the in-process cache (8 MB by default) and nearly every request renders.
const UNCACHED_PAGES: usize = 20_000;

/// Job pages in the cached row: each is asked for again and again.
const CACHED_PAGES: usize = 100;

/// Searches of the feed rows (each distinct: a common word and a `salary_min` below every seeded
/// salary, so that every request misses the cache and finds the same jobs as without it).
const FEED_SEARCHES: usize = 60_000;

/// The rows of the pages on this kind of run: the job page uncached and cached, the feed and
/// the same searches on the API, and the sitemap read once.
pub(super) fn page_rows(kind: Kind) -> [&'static str; 5] {
    if kind == Kind::Sqlite {
        [
            "page_job_uncached_sqlite",
            "page_job_cached_sqlite",
            "page_feed_sqlite",
            "page_feed_search_sqlite",
            "page_sitemap_sqlite",
        ]
    } else {
        [
            "page_job_uncached_pg",
            "page_job_cached_pg",
            "page_feed_pg",
            "page_feed_search_pg",
            "page_sitemap_pg",
        ]
    }
}

impl Bench<'_> {
    /// The page rows `--scenario` keeps, each at 16 connections, and the sitemap; their targets
    /// against `job_detail` (measured by the mixes just before, on this server) and the API's
    /// search.
    pub(super) async fn run_pages(&mut self, section: &mut Section, out: &mut Vec<Measured>) {
        let [uncached, cached, feed, feed_search, sitemap] = page_rows(self.kind);
        // The sitemap first: nothing has asked for it yet, so it is made, not read from the cache.
        if self.opts.wants(sitemap) {
            common::progress(super::rows::SECTION, format!("{sitemap}: every file, once"));
            match self.read_sitemap().await {
                Ok((check, secs, grew_mb)) => {
                    section.targets.push(Target::at_most(
                        &format!("{sitemap}: the whole sitemap made in <= 10 s"),
                        secs,
                        10.0,
                        check.clone(),
                    ));
                    section.targets.push(Target::at_most(
                        &format!("{sitemap}: the API's RSS rises by <= 20 MB while it is made"),
                        grew_mb,
                        20.0,
                        check.clone(),
                    ));
                    self.checks.push(format!("{sitemap}: {check}"));
                }
                Err(e) => common::record_failure(section, sitemap, &e),
            }
        }
        let dir = self.dir.path().to_path_buf();
        if self.opts.wants(uncached) || self.opts.wants(cached) {
            match self.page_paths(UNCACHED_PAGES).await {
                Ok(paths) => {
                    for (name, paths) in [
                        (uncached, paths.clone()),
                        (cached, paths[..CACHED_PAGES.min(paths.len())].to_vec()),
                    ] {
                        if !self.opts.wants(name) {
                            continue;
                        }
                        match common::wrk_script(&dir, name, include_str!("wrk_search_mix.lua")) {
                            Ok(s) => {
                                // Pages, unlike searches, are meant to be asked for again.
                                let mut sc = MixScenario::new(
                                    name,
                                    s,
                                    dir.join(format!("{name}.params.lua")),
                                    paths,
                                    true,
                                );
                                self.run_levels(&mut sc, section, out, &[16]).await;
                            }
                            Err(e) => common::record_failure(section, name, &e),
                        }
                    }
                }
                Err(e) => common::record_failure(section, uncached, &e),
            }
        }
        if self.opts.wants(feed) || self.opts.wants(feed_search) {
            let (feeds, searches) = self.feed_paths();
            for (name, paths) in [(feed_search, searches), (feed, feeds)] {
                if !self.opts.wants(name) {
                    continue;
                }
                match common::wrk_script(&dir, name, include_str!("wrk_search_mix.lua")) {
                    Ok(s) => {
                        let mut sc = MixScenario::new(
                            name,
                            s,
                            dir.join(format!("{name}.params.lua")),
                            paths,
                            false,
                        );
                        self.run_levels(&mut sc, section, out, &[16]).await;
                    }
                    Err(e) => common::record_failure(section, name, &e),
                }
            }
        }
    }

    /// The canonical paths of `n` seeded jobs drawn at random: each job's address without its
    /// slug answers 301 to it (which also renders the page once).
    async fn page_paths(&self, n: usize) -> Result<Vec<String>> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        let mut rng = StdRng::seed_from_u64(7_000 + self.kind as u64);
        let ids: Vec<i64> = (0..n)
            .map(|_| self.first_job_id + rng.gen_range(0..self.njobs.max(1)))
            .collect();
        let base = self.base.clone();
        let found: Vec<Result<String>> = futures::stream::iter(ids)
            .map(|id| {
                let (client, base) = (client.clone(), base.clone());
                async move {
                    let res = client.get(format!("{base}/jobs/{id}")).send().await?;
                    match res.status().as_u16() {
                        200 => Ok(format!("/jobs/{id}")),
                        301 => {
                            let to = res
                                .headers()
                                .get("location")
                                .and_then(|v| v.to_str().ok())
                                .context("a 301 without Location")?;
                            Ok(format!("/jobs/{}", to.strip_prefix("./").unwrap_or(to)))
                        }
                        s => bail!("GET /jobs/{id}: {s}"),
                    }
                }
            })
            .buffer_unordered(16)
            .collect()
            .await;
        found.into_iter().collect()
    }

    /// The feed rows' searches, and the same on the API (50 a page, as a feed lists).
    fn feed_paths(&self) -> (Vec<String>, Vec<String>) {
        let words: Vec<String> = self
            .mixes
            .iter()
            .filter(|(m, _)| *m == Mix::Common)
            .flat_map(|(_, qs)| qs.iter().map(|q| q.words().to_string()))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        let mut feeds = Vec::with_capacity(FEED_SEARCHES);
        let mut searches = Vec::with_capacity(FEED_SEARCHES);
        if words.is_empty() {
            return (feeds, searches);
        }
        for i in 0..FEED_SEARCHES {
            let q = words[i % words.len()].replace(' ', "+");
            let salary = i / words.len();
            feeds.push(format!("/jobs.atom?q={q}&salary_min={salary}"));
            searches.push(format!("/api/jobs?q={q}&salary_min={salary}&page_size=50"));
        }
        (feeds, searches)
    }

    /// Reads the sitemap index and every file it lists, one after the other; the time that
    /// took, and how far the API's RSS (its peak, reset first) rose above where it started.
    async fn read_sitemap(&mut self) -> Result<(String, f64, f64)> {
        let client = common::http_client();
        let pid = self.server()?.pid;
        let start_mb = common::rss_mb(pid)?;
        common::reset_peak_rss(pid)?;
        let started = Instant::now();
        let index = client
            .get(format!("{}/sitemap.xml", self.base))
            .send()
            .await?
            .error_for_status()?
            .text()
            .await?;
        let files: Vec<String> = index
            .split("<loc>")
            .skip(1)
            .filter_map(|s| s.split("</loc>").next())
            .map(str::to_string)
            .collect();
        ensure!(
            !files.is_empty(),
            "the sitemap index lists no file: {index}"
        );
        let (mut urls, mut bytes) = (0usize, index.len());
        for file in &files {
            let path = file
                .find("/sitemaps/")
                .map(|i| &file[i..])
                .with_context(|| format!("{file} is not a sitemap file"))?;
            let body = client
                .get(format!("{}{path}", self.base))
                .send()
                .await?
                .error_for_status()?
                .text()
                .await?;
            urls += body.matches("<url>").count();
            bytes += body.len();
        }
        let secs = started.elapsed().as_secs_f64();
        let peak_mb = common::peak_rss_mb(pid)?;
        ensure!(
            urls as i64 >= self.njobs,
            "the sitemap lists {urls} jobs of the {} seeded",
            self.njobs
        );
        let grew = (peak_mb - start_mb).max(0.0);
        Ok((
            format!(
                "{} files, {urls} jobs, {:.1} MB, read one after the other in {secs:.2} s; the \
                 API's RSS {start_mb:.1} MB before, peak {peak_mb:.1} MB (+{grew:.1} MB)",
                files.len(),
                bytes as f64 / 1e6
            ),
            secs,
            grew,
        ))
    }
}

/// The page rows' targets against the rows they are measured beside: a job's page at least
/// half of `job_detail`'s req/s, uncached and cached; a feed at least half of the same searches
/// on the API.
pub(super) fn page_targets(kind: Kind, measured: &[Measured]) -> Vec<Target> {
    let find = |scenario: &str| {
        measured
            .iter()
            .find(|m| m.scenario == scenario && m.conns == 16 && m.failed.is_none())
    };
    let [uncached, cached, feed, feed_search, _] = page_rows(kind);
    let detail = mix_detail_row(kind);
    let mut out = Vec::new();
    for (row, ceiling) in [(uncached, detail), (cached, detail), (feed, feed_search)] {
        if let (Some(m), Some(c)) = (find(row), find(ceiling)) {
            out.push(Target::at_least(
                &format!("{row}: req/s >= 0.5x {ceiling} @16 conns"),
                m.wrk.rps / c.wrk.rps,
                0.5,
                format!(
                    "{} req/s / {} req/s ({ceiling}, same run, same database); p99 {} ms / {} ms; \
                     {} B / {} B a response",
                    common::fmt_int(m.wrk.rps),
                    common::fmt_int(c.wrk.rps),
                    common::fmt_ms(m.wrk.latency_ms.p99),
                    common::fmt_ms(c.wrk.latency_ms.p99),
                    m.wrk.bytes / m.wrk.requests.max(1),
                    c.wrk.bytes / c.wrk.requests.max(1),
                ),
            ));
        }
    }
    out
}
