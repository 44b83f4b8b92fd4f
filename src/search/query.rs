//! A search against the index: the query every filter makes, and one collector that counts
//! every match, counts the facets over them and keeps the best page's worth in order.

use super::schema::{Fields, NO_EXPIRY, micros};
use crate::domain::EmploymentType;
use crate::store::{Facets, JobSearch};
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap};
use std::ops::Bound;
use tantivy::collector::{Collector, SegmentCollector};
use tantivy::columnar::Column;
use tantivy::postings::SegmentPostings;
use tantivy::query::{
    AllQuery, BooleanQuery, EmptyQuery, Occur, Query, RangeQuery, TermQuery, TermSetQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, DocId, DocSet, Score, Searcher, SegmentOrdinal, SegmentReader, Term};

/// The query of every filter of `s` but the order (all of them must hold).
pub fn build(searcher: &Searcher, f: &Fields, s: &JobSearch) -> anyhow::Result<Box<dyn Query>> {
    let mut must: Vec<Box<dyn Query>> = Vec::new();
    let term =
        |t: Term| -> Box<dyn Query> { Box::new(TermQuery::new(t, IndexRecordOption::Basic)) };
    for t in &s.terms {
        must.push(term(Term::from_field_text(f.text, t)));
    }
    if let Some(needle) = &s.location {
        // The locations that contain the substring, from each segment's term dictionary (one
        // term per distinct location: a few thousand on a real board).
        let mut found = BTreeSet::new();
        for segment in searcher.segment_readers() {
            let index = segment.inverted_index(f.location)?;
            let mut terms = index.terms().stream()?;
            while terms.advance() {
                if let Ok(location) = std::str::from_utf8(terms.key())
                    && location.contains(needle.as_str())
                {
                    found.insert(location.to_string());
                }
            }
        }
        if found.is_empty() {
            return Ok(Box::new(EmptyQuery));
        }
        must.push(Box::new(TermSetQuery::new(
            found.iter().map(|l| Term::from_field_text(f.location, l)),
        )));
    }
    if let Some(remote) = s.remote {
        must.push(term(Term::from_field_u64(f.remote, remote as u64)));
    }
    if let Some(ids) = &s.ids {
        // A term per job, each looked up in the term dictionary: found by key, like a read of
        // each row (at most a page's worth of them).
        must.push(match ids.as_slice() {
            [id] => term(f.id_term(*id)),
            _ => Box::new(BooleanQuery::new(
                ids.iter()
                    .map(|&id| (Occur::Should, term(f.id_term(id))))
                    .collect(),
            )),
        });
    }
    if let Some(company) = s.company_id {
        must.push(term(Term::from_field_u64(f.company_id, company as u64)));
    }
    if let Some(min) = s.salary_min {
        must.push(Box::new(RangeQuery::new(
            Bound::Included(Term::from_field_u64(f.salary_max, min.max(0) as u64)),
            Bound::Unbounded,
        )));
    }
    if let Some(t) = s.employment_type.as_deref().and_then(EmploymentType::parse) {
        must.push(term(Term::from_field_u64(
            f.employment_type,
            super::schema::employment_code(t),
        )));
    }
    if let Some(p) = s.posted_within {
        must.push(Box::new(RangeQuery::new(
            Bound::Included(Term::from_field_i64(f.created_at, micros(&p.since))),
            Bound::Unbounded,
        )));
    }
    Ok(match must.len() {
        0 => Box::new(AllQuery),
        1 => must.remove(0),
        _ => Box::new(BooleanQuery::new(
            must.into_iter().map(|q| (Occur::Must, q)).collect(),
        )),
    })
}

/// A match's place in the order: more title words, then newer, then higher id, first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key {
    score: u32,
    created_at: i64,
    id: u64,
    segment: SegmentOrdinal,
    doc: DocId,
}

/// What one search collects.
#[derive(Debug)]
pub struct Collected {
    /// Every match.
    pub total: u64,
    /// The earliest `expires_at` of every match (µs; [`NO_EXPIRY`] for none): from then on the
    /// search's answer is another, and a cached copy of it must not be served.
    pub earliest_expiry: i64,
    /// The first `keep` matches, in order.
    pub best: Vec<DocAddress>,
    pub facets: FacetCounts,
}

impl Default for Collected {
    fn default() -> Self {
        Collected {
            total: 0,
            earliest_expiry: NO_EXPIRY,
            best: Vec::new(),
            facets: FacetCounts::default(),
        }
    }
}

/// Matches per value, over every match.
#[derive(Debug, Default)]
pub struct FacetCounts {
    /// By [`employment_code`](super::schema::employment_code).
    pub employment_type: [u64; 4],
    /// `[false, true]`.
    pub remote: [u64; 2],
    /// Company id → (matches, one of its documents, to read its name from).
    pub company: HashMap<u64, (u64, DocAddress)>,
}

/// Counts every match and keeps the first `keep` in the search's order. A job whose
/// `expires_at` is not after `now` (µs) is no match: it is left out here, where every match is
/// counted, so the page, `total` and the facets agree.
pub struct JobCollector {
    pub now: i64,
    pub keep: usize,
    /// The title terms that relevance counts (none: newest first).
    pub title_terms: Vec<Term>,
    pub facets: Facets,
}

pub struct JobSegmentCollector {
    segment: SegmentOrdinal,
    now: i64,
    keep: usize,
    ids: Column<u64>,
    created: Column<i64>,
    expires: Column<i64>,
    titles: Vec<SegmentPostings>,
    heap: BinaryHeap<Reverse<Key>>,
    facets: Facets,
    employment: Option<Column<u64>>,
    remote: Option<Column<u64>>,
    company: Option<Column<u64>>,
    out: Collected,
}

impl Collector for JobCollector {
    type Fruit = Collected;
    type Child = JobSegmentCollector;

    fn for_segment(
        &self,
        segment: SegmentOrdinal,
        reader: &SegmentReader,
    ) -> tantivy::Result<JobSegmentCollector> {
        let fast = reader.fast_fields();
        let mut titles = Vec::new();
        if !self.title_terms.is_empty() {
            let title = self.title_terms[0].field();
            let index = reader.inverted_index(title)?;
            for t in &self.title_terms {
                if let Some(p) = index.read_postings(t, IndexRecordOption::Basic)? {
                    titles.push(p);
                }
            }
        }
        Ok(JobSegmentCollector {
            segment,
            now: self.now,
            keep: self.keep,
            ids: fast.u64("id")?,
            created: fast.i64("created_at")?,
            expires: fast.i64("expires_at")?,
            titles,
            heap: BinaryHeap::with_capacity(self.keep.min(10_000) + 1),
            facets: self.facets,
            employment: if self.facets.employment_type {
                Some(fast.u64("employment_type")?)
            } else {
                None
            },
            remote: if self.facets.remote {
                Some(fast.u64("remote")?)
            } else {
                None
            },
            company: if self.facets.company {
                Some(fast.u64("company_id")?)
            } else {
                None
            },
            out: Collected::default(),
        })
    }

    fn requires_scoring(&self) -> bool {
        false
    }

    fn merge_fruits(&self, fruits: Vec<(Collected, Vec<Key>)>) -> tantivy::Result<Collected> {
        let mut out = Collected::default();
        let mut keys = Vec::new();
        for (part, best) in fruits {
            out.total += part.total;
            out.earliest_expiry = out.earliest_expiry.min(part.earliest_expiry);
            for (i, n) in part.facets.employment_type.iter().enumerate() {
                out.facets.employment_type[i] += n;
            }
            for (i, n) in part.facets.remote.iter().enumerate() {
                out.facets.remote[i] += n;
            }
            for (company, (n, doc)) in part.facets.company {
                out.facets.company.entry(company).or_insert((0, doc)).0 += n;
            }
            keys.extend(best);
        }
        keys.sort_unstable_by(|a, b| b.cmp(a));
        keys.truncate(self.keep);
        out.best = keys
            .into_iter()
            .map(|k| DocAddress::new(k.segment, k.doc))
            .collect();
        Ok(out)
    }
}

impl SegmentCollector for JobSegmentCollector {
    type Fruit = (Collected, Vec<Key>);

    fn collect(&mut self, doc: DocId, _score: Score) {
        let expires = self.expires.first(doc).unwrap_or(NO_EXPIRY);
        if expires <= self.now {
            return;
        }
        self.out.earliest_expiry = self.out.earliest_expiry.min(expires);
        self.out.total += 1;
        if self.facets.any() {
            if let Some(c) = &self.employment
                && let Some(n) = c
                    .first(doc)
                    .and_then(|v| self.out.facets.employment_type.get_mut(v as usize))
            {
                *n += 1;
            }
            if let Some(c) = &self.remote
                && let Some(n) = c
                    .first(doc)
                    .and_then(|v| self.out.facets.remote.get_mut(v as usize))
            {
                *n += 1;
            }
            if let Some(c) = &self.company
                && let Some(company) = c.first(doc)
            {
                let address = DocAddress::new(self.segment, doc);
                self.out
                    .facets
                    .company
                    .entry(company)
                    .or_insert((0, address))
                    .0 += 1;
            }
        }
        if self.keep == 0 {
            return;
        }
        let mut score = 0;
        for p in &mut self.titles {
            if p.doc() < doc {
                p.seek(doc);
            }
            if p.doc() == doc {
                score += 1;
            }
        }
        let key = Key {
            score,
            created_at: self.created.first(doc).unwrap_or(i64::MIN),
            id: self.ids.first(doc).unwrap_or(0),
            segment: self.segment,
            doc,
        };
        if self.heap.len() < self.keep {
            self.heap.push(Reverse(key));
        } else if let Some(Reverse(worst)) = self.heap.peek()
            && key > *worst
        {
            self.heap.pop();
            self.heap.push(Reverse(key));
        }
    }

    fn harvest(self) -> (Collected, Vec<Key>) {
        let keys = self.heap.into_iter().map(|Reverse(k)| k).collect();
        (self.out, keys)
    }
}

/// The facets `asked`, from what the collector counted; `name` reads a company's name from one
/// of its documents.
pub fn facet_counts(
    asked: crate::store::Facets,
    counted: &FacetCounts,
    name: impl Fn(tantivy::DocAddress) -> anyhow::Result<String>,
) -> anyhow::Result<super::FacetCounts> {
    let mut out = super::FacetCounts::default();
    if asked.employment_type {
        out.employment_type = Some(
            EmploymentType::ALL
                .iter()
                .map(|t| {
                    let code = super::schema::employment_code(*t) as usize;
                    (t.as_str(), counted.employment_type[code])
                })
                .collect(),
        );
    }
    if asked.remote {
        out.remote = Some(BTreeMap::from([
            ("false", counted.remote[0]),
            ("true", counted.remote[1]),
        ]));
    }
    if asked.company {
        let mut companies: Vec<(u64, u64, tantivy::DocAddress)> = counted
            .company
            .iter()
            .map(|(id, (n, doc))| (*id, *n, *doc))
            .collect();
        companies.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut top = Vec::new();
        for (id, count, address) in companies.into_iter().take(10) {
            top.push(super::CompanyCount {
                id: id as i64,
                name: name(address)?,
                count,
            });
        }
        out.company = Some(top);
    }
    Ok(out)
}
