//! The search mixes at scale: each mix's row beside its pages asked for by their ids (its
//! ceiling), every mix with facets, pages walked by cursor, and `job_detail` on the same server.

use super::bench::Bench;
use super::queries::MixQuery;
use super::reads::JobDetail;
use super::rows::{MIXES, Mix, cursor_ids_row, cursor_row, facets_row, ids_row, mix_detail_row};
use super::scenario::{Measured, Scenario, requests_numbered};
use crate::common::{self, LuaValue, WrkResult};
use crate::report::Section;
use anyhow::{Result, ensure};
use jobboard::store::JobSearch;
use std::path::{Path, PathBuf};

/// Connection levels of every mix row: loaded, then one request at a time.
const MIX_LEVELS: [u32; 2] = [16, 1];

/// The facets the `mix_facets` rows ask for: every one there is (the commas encoded, since
/// the wrk script's list of paths is comma-separated).
const FACETS: &str = "employment_type%2Cremote%2Ccompany";

impl Bench<'_> {
    /// The search mixes (those `--scenario` keeps), each with a sample without load and the
    /// plans of its slowest searches, at 16 connections and at one; `job_detail` first, on the
    /// same server and database, whenever a mix runs.
    pub(super) async fn run_mixes(&mut self, section: &mut Section, out: &mut Vec<Measured>) {
        let kind = self.kind;
        let wanted: Vec<Mix> = MIXES
            .into_iter()
            .filter(|m| self.opts.wants(m.row(kind)))
            .collect();
        let detail = mix_detail_row(kind);
        let facets = facets_row(kind);
        let ids = ids_row(kind);
        if wanted.is_empty()
            && !self.opts.wants(detail)
            && !self.opts.wants(facets)
            && !self.opts.wants(ids)
            && !self.opts.wants(cursor_row(kind))
        {
            return;
        }
        let dir = self.dir.path().to_path_buf();
        match common::wrk_script(&dir, detail, include_str!("wrk_job_detail.lua")) {
            Ok(s) => {
                let mut sc = JobDetail {
                    name: detail,
                    script: s,
                    params: dir.join(format!("{detail}.params.lua")),
                    first_id: self.first_job_id,
                    njobs: self.njobs,
                    runs: 0,
                };
                self.run_levels(&mut sc, section, out, &MIX_LEVELS).await;
            }
            Err(e) => common::record_failure(section, detail, &e),
        }
        // The pages of the mixes by their ids: all of them (the ceiling of the facets row),
        // then each mix's just before it.
        let wants_ids = self.opts.wants(ids)
            || MIXES
                .iter()
                .any(|m| wanted.contains(m) && self.opts.wants(m.ids_row(kind)));
        let mut by_ids: Vec<(Mix, Vec<String>)> = Vec::new();
        if wants_ids {
            match self.ids_pages().await {
                Ok(pages) => by_ids = pages,
                Err(e) => common::record_failure(section, ids, &e),
            }
        }
        if self.opts.wants(ids) && !by_ids.is_empty() {
            match common::wrk_script(&dir, ids, include_str!("wrk_search_mix.lua")) {
                Ok(s) => {
                    // Taken in turn from each mix, as the facets row takes the searches.
                    let longest = by_ids.iter().map(|(_, p)| p.len()).max().unwrap_or(0);
                    let paths = (0..longest)
                        .flat_map(|i| by_ids.iter().filter_map(move |(_, p)| p.get(i)))
                        .cloned()
                        .collect();
                    let mut sc = MixScenario {
                        name: ids,
                        script: s,
                        params: dir.join(format!("{ids}.params.lua")),
                        paths,
                        base: 0,
                        repeats_ok: true,
                    };
                    self.run_levels(&mut sc, section, out, &MIX_LEVELS).await;
                }
                Err(e) => common::record_failure(section, ids, &e),
            }
        }
        let mixes = std::mem::take(&mut self.mixes);
        for (mix, queries) in &mixes {
            let name = mix.row(kind);
            if !wanted.contains(mix) {
                continue;
            }
            if queries.len() < 200 {
                common::record_failure(
                    section,
                    name,
                    &anyhow::anyhow!(
                        "only {} distinct searches could be made from the seeded jobs",
                        queries.len()
                    ),
                );
                continue;
            }
            let ids_name = mix.ids_row(kind);
            if self.opts.wants(ids_name)
                && let Some((_, paths)) = by_ids.iter().find(|(m, _)| m == mix)
            {
                match common::wrk_script(&dir, ids_name, include_str!("wrk_search_mix.lua")) {
                    Ok(s) => {
                        let mut sc = MixScenario {
                            name: ids_name,
                            script: s,
                            params: dir.join(format!("{ids_name}.params.lua")),
                            paths: paths.clone(),
                            base: 0,
                            repeats_ok: true,
                        };
                        self.run_levels(&mut sc, section, out, &[16]).await;
                    }
                    Err(e) => common::record_failure(section, ids_name, &e),
                }
            }
            match common::wrk_script(&dir, name, include_str!("wrk_search_mix.lua")) {
                Ok(s) => {
                    // The sample comes from the far end of the list, which the runs do not reach.
                    let sample: Vec<(String, JobSearch)> = queries
                        .iter()
                        .rev()
                        .take(100)
                        .map(|q| (q.path(), q.search()))
                        .collect();
                    self.sample(section, name, sample).await;
                    let mut sc = MixScenario {
                        name,
                        script: s,
                        params: dir.join(format!("{name}.params.lua")),
                        paths: queries.iter().map(MixQuery::path).collect(),
                        base: 0,
                        repeats_ok: false,
                    };
                    self.run_levels(&mut sc, section, out, &MIX_LEVELS).await;
                }
                Err(e) => common::record_failure(section, name, &e),
            }
        }
        if self.opts.wants(facets) {
            // Every mix's searches, taken in turn, each asking for the three facets.
            let lists: Vec<Vec<String>> = mixes
                .iter()
                .map(|(_, q)| q.iter().map(MixQuery::path).collect())
                .collect();
            let longest = lists.iter().map(Vec::len).max().unwrap_or(0);
            let paths: Vec<String> = (0..longest)
                .flat_map(|i| lists.iter().filter_map(move |l| l.get(i)))
                .map(|p| format!("{p}&facets={FACETS}"))
                .collect();
            match common::wrk_script(&dir, facets, include_str!("wrk_search_mix.lua")) {
                Ok(s) => {
                    let mut sc = MixScenario {
                        name: facets,
                        script: s,
                        params: dir.join(format!("{facets}.params.lua")),
                        paths,
                        base: 0,
                        repeats_ok: false,
                    };
                    self.run_levels(&mut sc, section, out, &MIX_LEVELS).await;
                }
                Err(e) => common::record_failure(section, facets, &e),
            }
        }
        let (cursor, cursor_ids) = (cursor_row(kind), cursor_ids_row(kind));
        if self.opts.wants(cursor) || self.opts.wants(cursor_ids) {
            match self.cursor_pages(&mixes).await {
                Ok((paths, by_ids)) => {
                    for (name, paths, repeats_ok, levels) in [
                        (cursor_ids, by_ids, true, &[16][..]),
                        (cursor, paths, false, &MIX_LEVELS[..]),
                    ] {
                        if !self.opts.wants(name) {
                            continue;
                        }
                        match common::wrk_script(&dir, name, include_str!("wrk_search_mix.lua")) {
                            Ok(s) => {
                                let mut sc = MixScenario {
                                    name,
                                    script: s,
                                    params: dir.join(format!("{name}.params.lua")),
                                    paths,
                                    base: 0,
                                    repeats_ok,
                                };
                                self.run_levels(&mut sc, section, out, levels).await;
                            }
                            Err(e) => common::record_failure(section, name, &e),
                        }
                    }
                }
                Err(e) => common::record_failure(section, cursor, &e),
            }
        }
        self.mixes = mixes;
    }
}

/// A search mix: its prepared searches in order, each run continuing where the last stopped.
pub(super) struct MixScenario {
    name: &'static str,
    script: PathBuf,
    params: PathBuf,
    paths: Vec<String>,
    /// The next request number.
    base: u64,
    /// Whether a repeat is as good as a new request (pages by ids, which are never cached).
    repeats_ok: bool,
}

impl MixScenario {
    /// A row of `paths`, sent in order from the first.
    pub(super) fn new(
        name: &'static str,
        script: PathBuf,
        params: PathBuf,
        paths: Vec<String>,
        repeats_ok: bool,
    ) -> MixScenario {
        MixScenario {
            name,
            script,
            params,
            paths,
            base: 0,
            repeats_ok,
        }
    }
}

impl Scenario for MixScenario {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        ensure!(!self.paths.is_empty(), "no searches for {}", self.name);
        common::lua_params(
            &self.params,
            &[
                ("paths", LuaValue::Str(self.paths.join(","))),
                ("nthreads", LuaValue::Int(common::wrk_threads(conns) as i64)),
                ("base", LuaValue::Int(self.base as i64)),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
    fn finish(&mut self, r: &WrkResult, warmup: bool) -> Result<Vec<String>> {
        self.base += requests_numbered(&r.counts);
        let mut notes = Vec::new();
        // The sample uses the last 100 searches.
        if self.base + 100 >= self.paths.len() as u64 && !warmup && !self.repeats_ok {
            notes.push(format!(
                "searches exhausted ({} requests, {} searches): some repeat",
                self.base,
                self.paths.len()
            ));
        }
        Ok(notes)
    }
}
