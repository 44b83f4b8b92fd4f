//! The pages the mixes' ids rows and cursor rows ask for, walked once through the API before
//! the runs: each search's page by its job ids, and pages reached by the `next` cursor.

use super::bench::{Bench, api};
use super::queries::MixQuery;
use super::rows::{Mix, SECTION};
use crate::common;
use anyhow::{Context, Result, ensure};
use serde_json::json;
use std::collections::HashSet;

/// Pages of each mix the `ids_page` rows ask for by their ids.
pub(super) const IDS_PAGES_PER_MIX: usize = 300;

/// Distinct searches the cursor rows walk, and the last page they walk to.
const CURSOR_SEARCHES: usize = 300;

const CURSOR_PAGES: usize = 50;

impl Bench<'_> {
    /// The pages of the mixes as `ids=` lookups: [`IDS_PAGES_PER_MIX`] searches of each mix
    /// (from the far end of its list, which the runs do not reach, before the 100 the sample
    /// takes), each asked once, unloaded; each non-empty page becomes
    /// `/api/jobs?ids=<its ids>&page_size=<as many>`, so the same jobs are read and rendered as
    /// the search rendered them, found by key instead of searched for.
    pub(super) async fn ids_pages(&self) -> Result<Vec<(Mix, Vec<String>)>> {
        let client = common::http_client();
        let mut all = Vec::new();
        for (mix, queries) in &self.mixes {
            let mut paths = Vec::new();
            for q in queries.iter().rev().skip(100).take(IDS_PAGES_PER_MIX) {
                let page = api(client.get(format!("{}{}", self.base, q.path())), 200).await?;
                let ids: Vec<String> = page["items"]
                    .as_array()
                    .context("a search's items")?
                    .iter()
                    .filter_map(|j| j["id"].as_i64())
                    .map(|id| id.to_string())
                    .collect();
                if !ids.is_empty() {
                    // Commas encoded: the wrk script's list of paths is comma-separated.
                    paths.push(format!(
                        "/api/jobs?ids={}&page_size={}",
                        ids.join("%2C"),
                        ids.len()
                    ));
                }
            }
            ensure!(
                paths.len() >= 20,
                "only {} of {}'s pages held a job",
                paths.len(),
                mix.row(self.kind)
            );
            all.push((*mix, paths));
        }
        common::progress(
            SECTION,
            format!(
                "{} pages of the mixes to ask for by their ids",
                all.iter().map(|(_, p)| p.len()).sum::<usize>()
            ),
        );
        Ok(all)
    }

    /// The pages 2 to [`CURSOR_PAGES`] of up to [`CURSOR_SEARCHES`] distinct searches of the
    /// word mixes, each asked for by the `next` cursor of the page before (walked here once),
    /// and the same pages by their ids. A job write afterwards moves the search cache on, so
    /// that the walk leaves no cached page for the measured runs.
    pub(super) async fn cursor_pages(
        &self,
        mixes: &[(Mix, Vec<MixQuery>)],
    ) -> Result<(Vec<String>, Vec<String>)> {
        let client = common::http_client();
        let mut bases = Vec::new();
        let mut seen = HashSet::new();
        for (mix, queries) in mixes {
            if !matches!(mix, Mix::Common | Mix::Pair | Mix::Filter) {
                continue;
            }
            for q in queries.iter().rev().skip(100) {
                let base = q.path().replace(&format!("&page={}&", q.page), "&");
                if seen.insert(base.clone()) {
                    bases.push(base);
                }
                if bases.len() >= CURSOR_SEARCHES {
                    break;
                }
            }
        }
        let (mut paths, mut by_ids) = (Vec::new(), Vec::new());
        for base in &bases {
            let mut page = api(client.get(format!("{}{base}&page=1", self.base)), 200).await?;
            for _ in 2..=CURSOR_PAGES {
                let Some(next) = page["next"].as_str().map(str::to_string) else {
                    break;
                };
                let path = format!("{base}&after={next}");
                page = api(client.get(format!("{}{path}", self.base)), 200).await?;
                let ids: Vec<String> = page["items"]
                    .as_array()
                    .context("a search's items")?
                    .iter()
                    .filter_map(|j| j["id"].as_i64())
                    .map(|id| id.to_string())
                    .collect();
                if ids.is_empty() {
                    break;
                }
                by_ids.push(format!(
                    "/api/jobs?ids={}&page_size={}",
                    ids.join("%2C"),
                    ids.len()
                ));
                paths.push(path);
            }
        }
        ensure!(
            paths.len() >= 200,
            "only {} pages could be reached by cursor from {} searches",
            paths.len(),
            bases.len()
        );
        api(
            client
                .post(format!("{}/api/jobs", self.base))
                .bearer_auth(&self.employer_token)
                .json(
                    &json!({"company_id": self.company_id, "title": "Cursor walk marker",
                    "description": "Written after the cursors were walked.",
                    "location": "Lisbon", "remote": false,
                    "employment_type": "full_time"}),
                ),
            201,
        )
        .await?;
        common::progress(
            SECTION,
            format!(
                "{} pages of {} searches to ask for by cursor",
                paths.len(),
                bases.len()
            ),
        );
        Ok((paths, by_ids))
    }
}
