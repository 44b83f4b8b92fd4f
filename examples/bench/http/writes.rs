//! The write rows: `apply` (a candidate applies to a job) and `status_change` (the employer
//! moves the applications apply made).

use super::bench::Bench;
use super::rows::SECTION;
use super::scenario::{Measured, Scenario, advance};
use crate::common::{self, LuaValue, WrkResult};
use crate::report::Section;
use anyhow::{Context, Result, ensure};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

impl Bench<'_> {
    /// apply; returns its req/s by connection level (what status_change expects to keep up with).
    pub(super) async fn run_apply(
        &mut self,
        section: &mut Section,
        out: &mut Vec<Measured>,
    ) -> BTreeMap<u32, f64> {
        let dir = self.dir.path().to_path_buf();
        let mut apply_rps = BTreeMap::new();
        match common::wrk_script(&dir, "apply", include_str!("wrk_apply.lua")) {
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
                if self.opts.wants(sc.name())
                    && let Err(e) = self.prime_apply(&mut sc).await
                {
                    common::record_failure(section, "apply priming", &e);
                }
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
        apply_rps
    }

    /// status_change, on the applications apply made.
    pub(super) async fn run_status_change(
        &mut self,
        section: &mut Section,
        out: &mut Vec<Measured>,
        apply_rps: BTreeMap<u32, f64>,
    ) {
        let dir = self.dir.path().to_path_buf();
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
            common::wrk_script(&dir, "status_change", include_str!("wrk_status_change.lua")),
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
    }
}

impl Bench<'_> {
    /// Applies for a few seconds, then analyzes the tables an apply writes. The seed analyzed
    /// them empty, and PostgreSQL plans its foreign-key checks (cached for the life of each
    /// connection) from that: a sequential scan of `applications` for every history row, on a
    /// table that grows with every run, until autovacuum analyzes it within its first minute (as
    /// it does on a real board, where these tables are never empty for long). The rows then
    /// measure the board after that minute, not the minute itself.
    async fn prime_apply(&mut self, sc: &mut Apply) -> Result<()> {
        self.prime(sc, 16, 3).await?;
        sqlx::query("ANALYZE applications, application_history, events, outbox")
            .execute(self.pg()?)
            .await
            .context("analyzing the tables apply writes")?;
        Ok(())
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
