//! The read rows of the main run: the cached search (`search_cached_memory`,
//! `search_cached_redis`) and `job_detail` (also measured beside the mixes).

use super::bench::Bench;
use super::rows::CACHED_QUERY;
use super::scenario::{Measured, Scenario};
use crate::common::{self, LuaValue};
use crate::report::Section;
use anyhow::Result;
use std::path::{Path, PathBuf};

impl Bench<'_> {
    /// A cached search (`name`): the same page every request.
    pub(super) async fn run_cached(
        &mut self,
        section: &mut Section,
        out: &mut Vec<Measured>,
        name: &'static str,
    ) {
        match common::wrk_script(self.dir.path(), "fixed", "") {
            Ok(s) => {
                let mut sc = Fixed::new(name, CACHED_QUERY, s);
                self.levels(&mut sc, section, out).await;
            }
            Err(e) => common::record_failure(section, name, &e),
        }
    }

    /// job_detail: a random seeded job every request.
    pub(super) async fn run_job_detail(&mut self, section: &mut Section, out: &mut Vec<Measured>) {
        let dir = self.dir.path().to_path_buf();
        match common::wrk_script(&dir, "job_detail", include_str!("wrk_job_detail.lua")) {
            Ok(s) => {
                let mut sc = JobDetail {
                    name: "job_detail",
                    script: s,
                    params: dir.join("job_detail.params.lua"),
                    first_id: self.first_job_id,
                    njobs: self.njobs,
                    runs: 0,
                };
                self.levels(&mut sc, section, out).await;
            }
            Err(e) => common::record_failure(section, "job_detail", &e),
        }
    }
}

/// The same GET every request.
struct Fixed {
    name: &'static str,
    path: &'static str,
    script: PathBuf,
}

impl Fixed {
    fn new(name: &'static str, path: &'static str, script: PathBuf) -> Fixed {
        Fixed { name, path, script }
    }
}

impl Scenario for Fixed {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn path(&self) -> String {
        self.path.to_string()
    }
}

pub(super) struct JobDetail {
    pub(super) name: &'static str,
    pub(super) script: PathBuf,
    pub(super) params: PathBuf,
    pub(super) first_id: i64,
    pub(super) njobs: i64,
    pub(super) runs: i64,
}

impl Scenario for JobDetail {
    fn name(&self) -> &'static str {
        self.name
    }
    fn script(&self) -> &Path {
        &self.script
    }
    fn prepare(&mut self, _conns: u32, _secs: u64, _warmup: bool) -> Result<Vec<String>> {
        self.runs += 1;
        common::lua_params(
            &self.params,
            &[
                ("first_id", LuaValue::Int(self.first_id)),
                ("njobs", LuaValue::Int(self.njobs)),
                ("seed", LuaValue::Int(1000 + self.runs)),
            ],
        )?;
        Ok(vec![self.params.display().to_string()])
    }
}
