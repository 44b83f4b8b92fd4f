//! Each segment's table for the newest-first traversal ([`super::driver`]): its blocks' oldest
//! and newest `created_at` and earliest `expires_at`, and its facets' values per document, read
//! once per segment as the reader reloads.

use super::schema::NO_EXPIRY;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tantivy::columnar::Column;
use tantivy::index::SegmentId;
use tantivy::{DocId, Searcher, SegmentReader};

/// Documents per block.
pub const BLOCK: u32 = 1024;

/// What a block holds, at the least and the most.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    pub min_created: i64,
    pub max_created: i64,
    /// The earliest `expires_at` of its documents ([`NO_EXPIRY`]: none). Each bound is over the
    /// documents alive when the table was built.
    pub min_expiry: i64,
}

/// A segment's blocks and its facets' values per document.
#[derive(Debug)]
pub struct SegmentTable {
    pub(super) block: u32,
    pub blocks: Vec<Block>,
    /// Per document: the employment type's code (255: none).
    pub(super) employment: Vec<u8>,
    /// Per document: 0, 1, or 255 (none).
    pub(super) remote: Vec<u8>,
    /// Per document: the workplace's code (255: none).
    pub(super) workplace: Vec<u8>,
    /// Per document: the company's ordinal in `companies`.
    pub(super) company: Vec<u32>,
    pub(super) companies: Vec<u64>,
}

impl SegmentTable {
    /// Reads a segment's columns once.
    pub fn build(reader: &SegmentReader, block: u32) -> tantivy::Result<SegmentTable> {
        let fast = reader.fast_fields();
        let created: Column<i64> = fast.i64("created_at")?;
        let expires: Column<i64> = fast.i64("expires_at")?;
        let employment_col: Column<u64> = fast.u64("employment_type")?;
        let remote_col: Column<u64> = fast.u64("remote")?;
        let workplace_col: Column<u64> = fast.u64("workplace")?;
        let company_col: Column<u64> = fast.u64("company_id")?;
        let max_doc = reader.max_doc();
        let alive = reader.alive_bitset();
        let mut blocks = Vec::with_capacity(max_doc.div_ceil(block) as usize);
        let mut employment = Vec::with_capacity(max_doc as usize);
        let mut remote = Vec::with_capacity(max_doc as usize);
        let mut workplace = Vec::with_capacity(max_doc as usize);
        let mut company = Vec::with_capacity(max_doc as usize);
        let mut companies = Vec::new();
        let mut ordinals: HashMap<u64, u32> = HashMap::new();
        let mut start = 0;
        while start < max_doc {
            let end = start.saturating_add(block).min(max_doc);
            let mut b = Block {
                min_created: i64::MAX,
                max_created: i64::MIN,
                min_expiry: NO_EXPIRY,
            };
            for doc in start..end {
                // A segment only ever loses documents: the bounds of those alive now hold for
                // those alive later.
                if alive.is_none_or(|a| a.is_alive(doc)) {
                    let c = created.first(doc).unwrap_or(i64::MIN);
                    b.min_created = b.min_created.min(c);
                    b.max_created = b.max_created.max(c);
                    b.min_expiry = b.min_expiry.min(expires.first(doc).unwrap_or(NO_EXPIRY));
                }
                employment.push(employment_col.first(doc).map_or(255, |v| v.min(254) as u8));
                remote.push(remote_col.first(doc).map_or(255, |v| v.min(254) as u8));
                workplace.push(workplace_col.first(doc).map_or(255, |v| v.min(254) as u8));
                let id = company_col.first(doc).unwrap_or(0);
                let next = companies.len() as u32;
                let ord = *ordinals.entry(id).or_insert_with(|| {
                    companies.push(id);
                    next
                });
                company.push(ord);
            }
            blocks.push(b);
            start = end;
        }
        Ok(SegmentTable {
            block,
            blocks,
            employment,
            remote,
            workplace,
            company,
            companies,
        })
    }

    pub(super) fn range(&self, b: u32, max_doc: DocId) -> (DocId, DocId) {
        let start = b.saturating_mul(self.block);
        (start, start.saturating_add(self.block).min(max_doc))
    }
}

/// The tables of the segments a searcher sees, built once per segment.
pub struct Tables {
    block: u32,
    by_segment: Mutex<HashMap<SegmentId, Arc<SegmentTable>>>,
}

impl Tables {
    pub fn new(block: u32) -> Tables {
        Tables {
            block: block.max(1),
            by_segment: Mutex::new(HashMap::new()),
        }
    }

    /// The table of each of the searcher's segments, in its order; those not built yet are
    /// built now, and those of segments the searcher no longer has are dropped.
    pub fn of(&self, searcher: &Searcher) -> tantivy::Result<Vec<Arc<SegmentTable>>> {
        let readers = searcher.segment_readers();
        let mut known: Vec<Option<Arc<SegmentTable>>> = {
            let map = self.by_segment.lock().unwrap_or_else(|p| p.into_inner());
            readers
                .iter()
                .map(|r| map.get(&r.segment_id()).cloned())
                .collect()
        };
        let mut built = Vec::new();
        for (reader, slot) in readers.iter().zip(known.iter_mut()) {
            if slot.is_none() {
                let table = Arc::new(SegmentTable::build(reader, self.block)?);
                built.push((reader.segment_id(), table.clone()));
                *slot = Some(table);
            }
        }
        if !built.is_empty() {
            let mut map = self.by_segment.lock().unwrap_or_else(|p| p.into_inner());
            map.retain(|id, _| readers.iter().any(|r| r.segment_id() == *id));
            map.extend(built);
        }
        Ok(known.into_iter().flatten().collect())
    }
}
