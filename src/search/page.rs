//! A search's page: the query, the newest-first traversal ([`super::driver`]), the count rule,
//! the rows read from the index, the facets and the cursor of the next page.

use super::{Found, SearchIndex, driver, query, schema};
use crate::store::{JobSearch, SEARCH_WINDOW};
use anyhow::Context;
use std::sync::Arc;
use tantivy::TantivyDocument;
use tantivy::query::EnableScoring;

impl SearchIndex {
    /// One page of `s`, with its matches counted by the count rule and the facets it asks for.
    /// Blocking.
    pub fn search(&self, s: &JobSearch) -> anyhow::Result<Found> {
        let searcher = self.searcher();
        let locations = match &s.location {
            Some(_) => Some(self.locations(&searcher)?),
            None => None,
        };
        let query = query::build(
            &searcher,
            &self.fields,
            s,
            locations.as_deref().map(|l| &l[..]),
        )?;
        let weight = query
            .weight(EnableScoring::disabled_from_searcher(&searcher))
            .context("preparing the search")?;
        let tables = self
            .tables
            .of(&searcher)
            .context("reading the index's block tables")?;
        let size = usize::try_from(s.page.size).unwrap_or(0);
        // How many results come before the page.
        let (skip, before) = match s.after {
            Some(a) => (0, a.position.max(0) as u64),
            None => {
                let offset = u64::try_from(s.page.offset()).unwrap_or(0);
                (usize::try_from(offset).unwrap_or(usize::MAX), offset)
            }
        };
        let limit = s.count_limit.unwrap_or(SEARCH_WINDOW as u64);
        // `total` is never below the page's last position.
        let cap = limit.max(before.saturating_add(size as u64));
        let title_terms: Vec<tantivy::Term> = if s.by_relevance() {
            s.terms
                .iter()
                .map(|t| tantivy::Term::from_field_text(self.fields.title, t))
                .collect()
        } else {
            Vec::new()
        };
        let at = s.at.unwrap_or_else(chrono::Utc::now);
        let plan = driver::Plan {
            now: schema::micros(&at),
            keep: skip.saturating_add(size),
            skip,
            title_terms: &title_terms,
            facets: s.facets,
            after: s.after.map(|a| (a.score, a.created_at, a.id.max(0) as u64)),
            since: s.posted_within.map(|p| schema::micros(&p.since)),
            count_limit: Some(cap),
            estimate: self.estimate(&searcher, s)?,
        };
        let traversed =
            driver::traverse(&searcher, &*weight, &tables, &plan).context("searching the index")?;
        let mut rows = Vec::new();
        let page: Vec<&query::Key> = traversed.best.iter().take(size).collect();
        for key in &page {
            let address = tantivy::DocAddress::new(key.segment, key.doc);
            let doc: TantivyDocument = searcher.doc(address).context("reading a found job")?;
            rows.push(self.fields.job(&doc)?);
        }
        let facets = if s.facets.any() {
            Some(query::facet_counts(
                s.facets,
                &traversed.facets,
                |address| {
                    let doc: TantivyDocument =
                        searcher.doc(address).context("reading a company's name")?;
                    Ok(self.fields.job(&doc)?.company_name)
                },
            )?)
        } else {
            None
        };
        let (total, total_exact) = if traversed.exhausted {
            (traversed.counted, true)
        } else {
            (cap, false)
        };
        let end = before.saturating_add(rows.len() as u64);
        let next = match page.last() {
            Some(last)
                if rows.len() == size
                    && end < SEARCH_WINDOW as u64
                    && (!total_exact || total > end) =>
            {
                Some(crate::store::After {
                    score: last.score,
                    created_at: last.created_at,
                    id: last.id as i64,
                    position: end as i64,
                })
            }
            _ => None,
        };
        let valid_until = (traversed.earliest_expiry != schema::NO_EXPIRY)
            .then(|| chrono::DateTime::from_timestamp_micros(traversed.earliest_expiry))
            .flatten();
        Ok(Found {
            rows,
            total: total as i64,
            total_exact,
            next,
            facets,
            valid_until,
        })
    }

    /// The distinct locations of the searcher's documents, read once per searcher generation.
    fn locations(&self, searcher: &tantivy::Searcher) -> anyhow::Result<Arc<Vec<String>>> {
        let generation = searcher.generation().generation_id();
        {
            let known = self.locations.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((g, list)) = &*known
                && *g == generation
            {
                return Ok(list.clone());
            }
        }
        let list = Arc::new(query::distinct_locations(searcher, &self.fields)?);
        *self.locations.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((generation, list.clone()));
        Ok(list)
    }

    /// At most how many documents can match `s`, when that is cheap to know: the `ids=` it names,
    /// or the document frequency of its rarest word.
    fn estimate(&self, searcher: &tantivy::Searcher, s: &JobSearch) -> anyhow::Result<Option<u64>> {
        if let Some(ids) = &s.ids {
            return Ok(Some(ids.len() as u64));
        }
        let mut least: Option<u64> = None;
        for t in &s.terms {
            let n = searcher
                .doc_freq(&tantivy::Term::from_field_text(self.fields.text, t))
                .context("reading a word's frequency")?;
            least = Some(least.map_or(n, |l| l.min(n)));
        }
        Ok(least)
    }
}
