//! The traversal that answers a search: the newest part of the index first, stopping as soon as
//! nothing left can enter the page, then a count of the matches up to the count limit without
//! reading a column.
//!
//! Documents sit in each segment roughly oldest first (a job enters the index when it is
//! written), so a newest-first page is at the end of each segment. Each segment is cut into
//! blocks of [`BLOCK`] documents; a [`SegmentTable`], built once per segment (segments never
//! change but for their deletions), keeps each block's oldest and newest `created_at` and its
//! earliest `expires_at`, and dense per-document arrays of the facets' values. The blocks of every
//! segment are visited in rounds, newest block first, each round four times the documents of
//! the one before; between rounds the page is known once the page is full and the newest
//! document of any block left is older than the page's last (a strict comparison: a block whose
//! newest document has the same `created_at` as the page's last may hold a higher id, which comes
//! first). A search whose matches cannot outnumber the count limit (its rarest word's document
//! frequency, or its `ids=`) is visited in one round: it must all be counted anyway.
//!
//! The count goes on over the blocks not visited until it passes the limit (`total` is then the
//! limit, not exact); a search that asks for facets counts every match, but its page is found
//! in rounds all the same, and the blocks left are then counted and tallied without reading a
//! column. A block whose earliest
//! `expires_at` is after the search's instant holds no expired job, so its matches are counted
//! without reading their dates; the cached answer's bound is the earliest date of the blocks in
//! which a counted match was found (never later than the earliest date of a job the page or the
//! total could lose).

pub use super::tables::{BLOCK, Block, SegmentTable, Tables};

use super::best::Best;
use super::query::{FacetCounts, Key};
use super::schema::NO_EXPIRY;
use crate::store::Facets;
use std::sync::Arc;
use tantivy::columnar::Column;
use tantivy::postings::SegmentPostings;
use tantivy::query::Weight;
use tantivy::schema::IndexRecordOption;
use tantivy::{DocAddress, DocId, DocSet, Searcher, SegmentOrdinal, SegmentReader, Term};

/// What a traversal is asked.
pub struct Plan<'a> {
    /// The search's instant (µs): a job whose `expires_at` is not after it is no match.
    pub now: i64,
    /// How many of the best matches to keep (the page's end; 0: count only).
    pub keep: usize,
    /// How many of the best `keep` to pass over (the page's start): only the rest are sorted
    /// and handed back.
    pub skip: usize,
    /// The title terms relevance counts (none: newest first).
    pub title_terms: &'a [Term],
    pub facets: Facets,
    /// Only matches after this place in the order (a cursor).
    pub after: Option<(u32, i64, u64)>,
    /// Only jobs created at or after this instant (µs), as the query also says.
    pub since: Option<i64>,
    /// Count up to this many matches and one more (none: every match).
    pub count_limit: Option<u64>,
    /// At most how many documents can match (none: unknown).
    pub estimate: Option<u64>,
}

/// What a traversal found.
#[derive(Debug, Default)]
pub struct Traversed {
    /// The matches counted: every one, or more than the limit.
    pub counted: u64,
    /// Whether every match was counted.
    pub exhausted: bool,
    /// The best `keep` keys after the cursor but the first `skip` of them (the page), best first.
    pub best: Vec<Key>,
    /// The earliest `expires_at` that can change the answer ([`NO_EXPIRY`]: none).
    pub earliest_expiry: i64,
    pub facets: FacetCounts,
}

/// One segment's share of the work: its reader, table and the facet tallies by ordinal.
struct Part<'a> {
    ordinal: SegmentOrdinal,
    reader: &'a SegmentReader,
    table: &'a SegmentTable,
    created: Column<i64>,
    ids: Column<u64>,
    expires: Column<i64>,
    company_counts: Vec<(u64, DocId)>,
    /// Which blocks were visited.
    visited: Vec<bool>,
}

struct State<'p> {
    plan: &'p Plan<'p>,
    best: Best,
    counted: u64,
    earliest_expiry: i64,
    employment: [u64; 4],
    remote: [u64; 2],
    workplace: [u64; 3],
    /// Stop counting past this many (none: count all).
    stop_after: Option<u64>,
}

impl State<'_> {
    fn counting_done(&self) -> bool {
        self.stop_after.is_some_and(|n| self.counted > n)
    }
}

/// Visits `blocks` (ascending) of one segment with a fresh scorer; `page`: the matches enter the
/// page's heap too.
fn visit(
    weight: &dyn Weight,
    part: &mut Part<'_>,
    blocks: &[u32],
    page: bool,
    st: &mut State<'_>,
) -> tantivy::Result<()> {
    let reader = part.reader;
    let mut scorer = weight.scorer(reader, 1.0)?;
    let alive = reader.alive_bitset();
    let plan = st.plan;
    let mut titles: Vec<SegmentPostings> = Vec::new();
    if page && let Some(first) = plan.title_terms.first() {
        let index = reader.inverted_index(first.field())?;
        for t in plan.title_terms {
            if let Some(p) = index.read_postings(t, IndexRecordOption::Basic)? {
                titles.push(p);
            }
        }
    }
    let max_doc = reader.max_doc();
    let facets = plan.facets.any();
    for &b in blocks {
        part.visited[b as usize] = true;
        let block = part.table.blocks[b as usize];
        let (start, end) = part.table.range(b, max_doc);
        let dated = block.min_expiry <= plan.now;
        let mut found = false;
        let mut doc = scorer.doc();
        if doc < start {
            doc = scorer.seek(start);
        }
        while doc < end {
            if alive.is_none_or(|a| a.is_alive(doc)) {
                let live = if dated {
                    let e = part.expires.first(doc).unwrap_or(NO_EXPIRY);
                    if e > plan.now {
                        st.earliest_expiry = st.earliest_expiry.min(e);
                        true
                    } else {
                        false
                    }
                } else {
                    true
                };
                if live {
                    found = true;
                    st.counted += 1;
                    if facets {
                        let d = doc as usize;
                        if let Some(n) = st.employment.get_mut(part.table.employment[d] as usize) {
                            *n += 1;
                        }
                        if let Some(n) = st.remote.get_mut(part.table.remote[d] as usize) {
                            *n += 1;
                        }
                        if let Some(n) = st.workplace.get_mut(part.table.workplace[d] as usize) {
                            *n += 1;
                        }
                        if let Some(c) = part.company_counts.get_mut(part.table.company[d] as usize)
                        {
                            if c.0 == 0 {
                                c.1 = doc;
                            }
                            c.0 += 1;
                        }
                    }
                    if page {
                        offer(part, &mut titles, doc, st);
                    } else if st.counting_done() {
                        return Ok(());
                    }
                }
            }
            doc = scorer.advance();
        }
        if found && !dated {
            st.earliest_expiry = st.earliest_expiry.min(block.min_expiry);
        }
    }
    Ok(())
}

/// Offers a match to the page's heap.
fn offer(part: &Part<'_>, titles: &mut [SegmentPostings], doc: DocId, st: &mut State<'_>) {
    let keep = st.plan.keep;
    if keep == 0 {
        return;
    }
    let mut score = 0;
    for p in titles.iter_mut() {
        if p.doc() < doc {
            p.seek(doc);
        }
        if p.doc() == doc {
            score += 1;
        }
    }
    let created_at = part.created.first(doc).unwrap_or(i64::MIN);
    // Older than the worst kept (or fewer title words): no id can lift it in, so it is not read.
    if st
        .best
        .floor()
        .is_some_and(|f| (score, created_at) < (f.score, f.created_at))
    {
        return;
    }
    let key = Key {
        score,
        created_at,
        id: part.ids.first(doc).unwrap_or(0),
        segment: part.ordinal,
        doc,
    };
    if st
        .plan
        .after
        .is_some_and(|a| (key.score, key.created_at, key.id) >= a)
    {
        return;
    }
    st.best.offer(key);
}

/// Whether no block whose newest document is `max_created` (or any older) can enter the page.
fn page_known(st: &mut State<'_>, max_created: i64, max_score: u32) -> bool {
    let Some(worst) = st.best.worst() else {
        return false;
    };
    // Strict: a block whose newest document was created at the same instant as the page's last
    // may hold a higher id, which comes first.
    worst.score >= max_score && max_created < worst.created_at
}

/// Whether a block can hold a match the page may show: `since` and the cursor.
fn eligible(plan: &Plan<'_>, block: &Block) -> bool {
    // Strict: a block whose newest document is exactly at `since` holds a match.
    if plan.since.is_some_and(|since| block.max_created < since) {
        return false;
    }
    // Newest first, every document of a block created after the cursor's comes before it.
    // Strict: one created at the cursor's instant may have a lower id, which comes after.
    if plan.title_terms.is_empty()
        && let Some((_, created, _)) = plan.after
        && block.min_created > created
    {
        return false;
    }
    true
}

/// Runs a plan over the searcher's segments.
pub fn traverse(
    searcher: &Searcher,
    weight: &dyn Weight,
    tables: &[Arc<SegmentTable>],
    plan: &Plan<'_>,
) -> tantivy::Result<Traversed> {
    let mut parts = Vec::with_capacity(tables.len());
    for (i, (reader, table)) in searcher.segment_readers().iter().zip(tables).enumerate() {
        let fast = reader.fast_fields();
        parts.push(Part {
            ordinal: i as SegmentOrdinal,
            reader,
            table,
            created: fast.i64("created_at")?,
            ids: fast.u64("id")?,
            expires: fast.i64("expires_at")?,
            company_counts: if plan.facets.company {
                vec![(0, 0); table.companies.len()]
            } else {
                Vec::new()
            },
            visited: vec![false; table.blocks.len()],
        });
    }
    let mut st = State {
        plan,
        best: Best::new(plan.keep),
        counted: 0,
        earliest_expiry: NO_EXPIRY,
        employment: [0; 4],
        remote: [0; 2],
        workplace: [0; 3],
        stop_after: if plan.facets.any() {
            None
        } else {
            plan.count_limit
        },
    };
    let max_score = plan.title_terms.len() as u32;

    // The page: the eligible blocks, newest first, in rounds.
    let mut order: Vec<(i64, u32, u32)> = Vec::new();
    for (s, part) in parts.iter().enumerate() {
        for (b, block) in part.table.blocks.iter().enumerate() {
            if eligible(plan, block) {
                order.push((block.max_created, s as u32, b as u32));
            }
        }
    }
    order.sort_unstable_by(|a, b| b.cmp(a));
    // Every match is counted anyway, or cannot outnumber the limit: one round. A search with
    // facets counts every match too, but goes in rounds all the same: once the page is known,
    // the blocks left are counted without reading a column (the count below).
    let small = match plan.count_limit {
        None => true,
        Some(limit) => plan.estimate.is_some_and(|e| e <= limit),
    };
    let mut round_docs: u64 = if small || plan.keep == 0 {
        u64::MAX
    } else {
        let block = tables.first().map_or(BLOCK, |t| t.block);
        // The documents in which the rarest word's frequency expects the page's end, and a
        // quarter more: a deep page of a word is then mostly one round, not several.
        let max_doc: u64 = parts.iter().map(|p| u64::from(p.reader.max_doc())).sum();
        let expected = plan.estimate.filter(|e| *e > 0).map_or(0, |e| {
            (plan.keep as u64).saturating_mul(max_doc) / e * 5 / 4
        });
        (plan.keep as u64)
            .saturating_mul(4)
            .max(4 * u64::from(block))
            .max(expected)
    };
    let mut i = 0;
    while i < order.len() && plan.keep > 0 {
        if page_known(&mut st, order[i].0, max_score) {
            break;
        }
        let mut round: Vec<(u32, u32)> = Vec::new();
        let mut docs = 0u64;
        while i < order.len() && docs < round_docs {
            let (_, s, b) = order[i];
            let (start, end) = parts[s as usize]
                .table
                .range(b, parts[s as usize].reader.max_doc());
            docs += u64::from(end - start);
            round.push((s, b));
            i += 1;
        }
        round_docs = round_docs.saturating_mul(4);
        round.sort_unstable();
        for (s, chunk) in chunk_by_segment(&round) {
            visit(weight, &mut parts[s as usize], &chunk, true, &mut st)?;
        }
    }

    // The count: every block not visited, until the limit is passed.
    if !st.counting_done() {
        for part in parts.iter_mut() {
            let rest: Vec<u32> = (0..part.visited.len() as u32)
                .filter(|b| !part.visited[*b as usize])
                .collect();
            if rest.is_empty() {
                continue;
            }
            visit(weight, part, &rest, false, &mut st)?;
            if st.counting_done() {
                break;
            }
        }
    }

    let mut out = Traversed {
        counted: st.counted,
        exhausted: !st.counting_done(),
        earliest_expiry: st.earliest_expiry,
        ..Traversed::default()
    };
    out.facets.employment_type = st.employment;
    out.facets.remote = st.remote;
    out.facets.workplace = st.workplace;
    for part in &parts {
        for (ord, (n, doc)) in part.company_counts.iter().enumerate() {
            if *n > 0 {
                let address = DocAddress::new(part.ordinal, *doc);
                out.facets
                    .company
                    .entry(part.table.companies[ord])
                    .or_insert((0, address))
                    .0 += n;
            }
        }
    }
    out.best = st.best.into_sorted_after(plan.skip);
    Ok(out)
}

/// The (segment, blocks) runs of a sorted list of (segment, block).
fn chunk_by_segment(round: &[(u32, u32)]) -> Vec<(u32, Vec<u32>)> {
    let mut out: Vec<(u32, Vec<u32>)> = Vec::new();
    for &(s, b) in round {
        match out.last_mut() {
            Some((last, blocks)) if *last == s => blocks.push(b),
            _ => out.push((s, vec![b])),
        }
    }
    out
}

#[cfg(test)]
mod tests;
