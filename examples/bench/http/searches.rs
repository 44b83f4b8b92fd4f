//! The uncached searches: word pairs (`search_uncached`) and broad words with a pay filter
//! (`search_broad`), and the unloaded sample every search row starts with.

use super::bench::{Bench, api};
use super::queries::BroadQuery;
use super::scenario::{Measured, Scenario, advance};
use crate::common::{self, LuaValue, WrkResult};
use crate::report::Section;
use anyhow::{Result, ensure};
use jobboard::store::{JobSearch, Page};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Pages 1..=this in the uncached searches.
pub(super) const UNCACHED_PAGES: u64 = 4;

impl Bench<'_> {
    /// The uncached searches: word pairs (search_uncached) and broad words with a pay filter
    /// (search_broad), each with a sample without load and the plans of its slowest searches.
    pub(super) async fn run_searches(
        &mut self,
        section: &mut Section,
        out: &mut Vec<Measured>,
        levels: &[u32],
    ) {
        let dir = self.dir.path().to_path_buf();
        let (uncached, broad) = self.kind.search_names();
        if self.opts.wants(uncached) {
            match common::wrk_script(&dir, uncached, include_str!("wrk_search_uncached.lua")) {
                Ok(s) => {
                    let mut sc = Uncached::new(
                        uncached,
                        s,
                        dir.join(format!("{uncached}.params.lua")),
                        self.words.clone(),
                    );
                    let far = (0..100u64).map(|i| sc.combos.saturating_sub(1 + i * 7));
                    let sample: Vec<(String, JobSearch)> =
                        far.map(|n| (sc.path(n), sc.search(n))).collect();
                    self.sample(section, uncached, sample).await;
                    self.levels_at(&mut sc, section, out, levels).await;
                }
                Err(e) => common::record_failure(section, uncached, &e),
            }
        }
        if self.opts.wants(broad) {
            match common::wrk_script(&dir, broad, include_str!("wrk_search_broad.lua")) {
                Ok(s) => {
                    // The sample comes from the far end of the list, which the runs do not reach.
                    let sample: Vec<(String, JobSearch)> = self
                        .broad
                        .iter()
                        .rev()
                        .take(100)
                        .map(|q| (q.path(), q.search()))
                        .collect();
                    let mut sc = Broad {
                        name: broad,
                        script: s,
                        params: dir.join(format!("{broad}.params.lua")),
                        paths: self.broad.iter().map(BroadQuery::path).collect(),
                        start: vec![0; common::WRK_THREADS as usize],
                    };
                    self.sample(section, broad, sample).await;
                    self.levels_at(&mut sc, section, out, levels).await;
                }
                Err(e) => common::record_failure(section, broad, &e),
            }
        }
    }

    /// Sends the searches one at a time without load, to show what they find and how long one
    /// takes.
    pub(super) async fn sample(
        &mut self,
        section: &mut Section,
        name: &str,
        sample: Vec<(String, JobSearch)>,
    ) {
        let client = common::http_client();
        let mut found = Vec::new();
        for (path, search) in sample {
            let t = Instant::now();
            match api(client.get(format!("{}{path}", self.base)), 200).await {
                Ok(body) => found.push((
                    t.elapsed().as_secs_f64() * 1000.0,
                    body["total"].as_i64().unwrap_or(0),
                    body["total_exact"].as_bool().unwrap_or(true),
                    path,
                    search,
                )),
                Err(e) => {
                    common::record_failure(section, &format!("{name} sample {path}"), &e);
                    return;
                }
            }
        }
        if found.is_empty() {
            return;
        }
        let n = found.len();
        let mut totals: Vec<i64> = found.iter().map(|f| f.1).collect();
        totals.sort_unstable();
        let capped = found.iter().filter(|f| !f.2).count();
        found.sort_by(|a, b| b.0.total_cmp(&a.0));
        let median_ms = found[n / 2].0;
        self.checks.push(format!(
            "{name}: {n} sample searches without load: {} find jobs, median total {}, {capped} \
             counted to the limit (total_exact false); median {} ms, slowest {} ms ({})",
            totals.iter().filter(|&&t| t > 0).count(),
            totals[n / 2],
            common::fmt_ms(median_ms),
            common::fmt_ms(found[0].0),
            found[0].3
        ));
        // The search index answers every search: there is no SQL plan to keep.
        let plans: Vec<serde_json::Value> = Vec::new();
        section.json[format!("{name}_sample")] = json!({
            "latency_ms": found.iter().map(|f| f.0).collect::<Vec<_>>(),
            "totals": totals,
            "capped": capped,
            "plans": plans,
        });
    }
}

struct Uncached {
    name: &'static str,
    script: PathBuf,
    params: PathBuf,
    words: Vec<String>,
    start: Vec<u64>,
    combos: u64,
    mult: u64,
}

impl Uncached {
    fn new(name: &'static str, script: PathBuf, params: PathBuf, words: Vec<String>) -> Uncached {
        let w = words.len() as u64;
        let combos = (w * w.saturating_sub(1) / 2).max(1) * UNCACHED_PAGES * 3;
        // A multiplier coprime with the number of combinations spreads consecutive requests
        // over the whole space (and keeps them distinct).
        let mut mult = (combos as f64 * 0.618) as u64 | 1;
        while gcd(mult, combos) != 1 {
            mult += 2;
        }
        Uncached {
            name,
            script,
            params,
            words,
            start: vec![0; common::WRK_THREADS as usize],
            combos,
            mult,
        }
    }
}

impl Uncached {
    /// The path of request number `n`, as the load script makes it.
    fn path(&self, n: u64) -> String {
        let (a, b, page, remote) = self.parts(n);
        let mut path = format!("/api/jobs?q={a}+{b}&page={page}");
        match remote {
            Some(true) => path.push_str("&remote=true"),
            Some(false) => path.push_str("&remote=false"),
            None => {}
        }
        path
    }

    /// The search of request number `n`, as the API makes it from the path.
    fn search(&self, n: u64) -> JobSearch {
        let (a, b, page, remote) = self.parts(n);
        JobSearch {
            terms: jobboard::domain::search::query_terms(&format!("{a} {b}")).unwrap_or_default(),
            remote,
            page: Page {
                page: page as i64,
                size: 20,
            },
            ..JobSearch::default()
        }
    }

    /// The two words, the page and the remote filter of request number `n`.
    fn parts(&self, n: u64) -> (&str, &str, u64, Option<bool>) {
        let w = self.words.len() as u64;
        let npairs = (w * w.saturating_sub(1) / 2).max(1);
        let idx = ((n as u128 * self.mult as u128) % self.combos as u128) as u64;
        let mut pair = idx % npairs;
        let rest = idx / npairs;
        let page = rest % UNCACHED_PAGES + 1;
        let remote = rest / UNCACHED_PAGES;
        // Pairs are numbered (0,1), (0,2), …, (0,w-1), (1,2), …
        let mut a = 0u64;
        while a + 1 < w && pair >= w - 1 - a {
            pair -= w - 1 - a;
            a += 1;
        }
        let b = a + 1 + pair;
        let word = |i: u64| self.words.get(i as usize).map(String::as_str).unwrap_or("");
        let remote = match remote {
            1 => Some(true),
            2 => Some(false),
            _ => None,
        };
        (word(a), word(b), page, remote)
    }
}

impl Scenario for Uncached {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        ensure!(self.words.len() >= 2, "too few query words");
        common::lua_params(
            &self.params,
            &[
                ("words", LuaValue::Str(self.words.join(","))),
                ("pages", LuaValue::Int(UNCACHED_PAGES as i64)),
                ("nthreads", LuaValue::Int(common::WRK_THREADS as i64)),
                ("mult", LuaValue::Int(self.mult as i64)),
                (
                    "start",
                    LuaValue::Ints(self.start.iter().map(|&c| c as i64).collect()),
                ),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
    fn finish(&mut self, r: &WrkResult, warmup: bool) -> Result<Vec<String>> {
        let used = advance(&mut self.start, r)?;
        let mut notes = Vec::new();
        if used >= self.combos && !warmup {
            notes.push(format!(
                "query space exhausted ({used} requests, {} combinations): some repeat",
                self.combos
            ));
        }
        Ok(notes)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

/// search_broad: the prepared broad searches in order, continuing from the previous run.
struct Broad {
    name: &'static str,
    script: PathBuf,
    params: PathBuf,
    paths: Vec<String>,
    start: Vec<u64>,
}

impl Scenario for Broad {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        ensure!(!self.paths.is_empty(), "no broad searches");
        common::lua_params(
            &self.params,
            &[
                ("paths", LuaValue::Str(self.paths.join(","))),
                ("nthreads", LuaValue::Int(common::WRK_THREADS as i64)),
                (
                    "start",
                    LuaValue::Ints(self.start.iter().map(|&c| c as i64).collect()),
                ),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
    fn finish(&mut self, r: &WrkResult, warmup: bool) -> Result<Vec<String>> {
        let used = advance(&mut self.start, r)?;
        let mut notes = Vec::new();
        // The sample uses the last 100 searches.
        if used + 100 >= self.paths.len() as u64 && !warmup {
            notes.push(format!(
                "searches exhausted ({used} requests, {} searches): some repeat",
                self.paths.len()
            ));
        }
        Ok(notes)
    }
}
