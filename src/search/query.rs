//! A search against the index: the query every filter makes, a match's place in the order, and
//! the facets as the API shows them.

use super::schema::{Fields, micros};
use crate::domain::EmploymentType;
use crate::domain::pay_place::Workplace;
use crate::store::JobSearch;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;
use tantivy::query::{
    AllQuery, BooleanQuery, EmptyQuery, Occur, Query, RangeQuery, TermQuery, TermSetQuery,
};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, DocId, Searcher, SegmentOrdinal, Term};

/// Every distinct location of the searcher's documents, from each segment's term dictionary
/// (one term per distinct location), sorted.
pub fn distinct_locations(searcher: &Searcher, f: &Fields) -> anyhow::Result<Vec<String>> {
    let mut found = BTreeSet::new();
    for segment in searcher.segment_readers() {
        let index = segment.inverted_index(f.location)?;
        let mut terms = index.terms().stream()?;
        while terms.advance() {
            if let Ok(location) = std::str::from_utf8(terms.key()) {
                found.insert(location.to_string());
            }
        }
    }
    Ok(found.into_iter().collect())
}

/// The query of every filter of `s` but the order (all of them must hold); `locations`: the
/// searcher's distinct locations when known (else its term dictionaries are read).
pub fn build(
    searcher: &Searcher,
    f: &Fields,
    s: &JobSearch,
    locations: Option<&[String]>,
) -> anyhow::Result<Box<dyn Query>> {
    let mut must: Vec<Box<dyn Query>> = Vec::new();
    let term =
        |t: Term| -> Box<dyn Query> { Box::new(TermQuery::new(t, IndexRecordOption::Basic)) };
    for t in &s.terms {
        must.push(term(Term::from_field_text(f.text, t)));
    }
    if let Some(needle) = &s.location {
        // The distinct locations that contain the substring (a few thousand on a real board).
        let scanned;
        let all: &[String] = match locations {
            Some(known) => known,
            None => {
                scanned = distinct_locations(searcher, f)?;
                &scanned
            }
        };
        let found: Vec<&String> = all.iter().filter(|l| l.contains(needle.as_str())).collect();
        if found.is_empty() {
            return Ok(Box::new(EmptyQuery));
        }
        must.push(Box::new(TermSetQuery::new(
            found
                .into_iter()
                .map(|l| Term::from_field_text(f.location, l)),
        )));
    }
    if let Some(remote) = s.remote {
        must.push(term(Term::from_field_u64(f.remote, remote as u64)));
    }
    if let Some(w) = s.workplace.as_deref().and_then(Workplace::parse) {
        must.push(term(Term::from_field_u64(
            f.workplace,
            super::schema::workplace_code(w),
        )));
    }
    if let Some(country) = &s.country {
        must.push(term(Term::from_field_text(f.country, country)));
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
    match (s.salary_min, &s.salary_currency) {
        (Some(min), None) => must.push(Box::new(RangeQuery::new(
            Bound::Included(Term::from_field_u64(f.salary_max, min.max(0) as u64)),
            Bound::Unbounded,
        ))),
        // Paid in the currency with a yearly top at least `min`, or stating no pay (whose
        // yearly top is NO_SALARY_MAX).
        (min, Some(currency)) => {
            must.push(Box::new(TermSetQuery::new([
                Term::from_field_text(f.salary_currency, currency),
                Term::from_field_text(f.salary_currency, super::schema::NO_PAY_CURRENCY),
            ])));
            if let Some(min) = min {
                must.push(Box::new(RangeQuery::new(
                    Bound::Included(Term::from_field_u64(f.salary_yearly, min.max(0) as u64)),
                    Bound::Unbounded,
                )));
            }
        }
        (None, None) => {}
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
    pub score: u32,
    pub created_at: i64,
    pub id: u64,
    pub segment: SegmentOrdinal,
    pub doc: DocId,
}

/// Matches per value, over every match.
#[derive(Debug, Default)]
pub struct FacetCounts {
    /// By [`employment_code`](super::schema::employment_code).
    pub employment_type: [u64; 4],
    /// `[false, true]`.
    pub remote: [u64; 2],
    /// By [`workplace_code`](super::schema::workplace_code).
    pub workplace: [u64; 3],
    /// Company id → (matches, one of its matches, to read its name from).
    pub company: HashMap<u64, (u64, DocAddress)>,
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
    if asked.workplace {
        out.workplace = Some(
            Workplace::ALL
                .iter()
                .map(|w| {
                    let code = super::schema::workplace_code(*w) as usize;
                    (w.as_str(), counted.workplace[code])
                })
                .collect(),
        );
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
