//! The search index: a tantivy index of the open jobs (a search leaves out those past their
//! `expires_at` at the instant it runs), beside the database, in
//! `SEARCH_INDEX_DIR`. Every process that serves the API keeps its own and follows the
//! job-change log into it ([`follow`]): each batch of log rows is applied by re-reading the jobs
//! they name, and committed with the last `seq` applied as the commit's payload, so a restart
//! resumes where it stopped. An index that is missing, unreadable, of another schema version,
//! or older than the log reaches back, is rebuilt from the tables.
//!
//! A search first waits until this process's index has applied the newest log row that
//! committed before it started ([`SearchIndex::wait_for`]), so it never answers from a state
//! before a write whose response was received, whatever the number of API processes.
//!
//! The directory is held by one process at a time: a lock file (`holder.lock`, with the
//! holder's pid in `holder.pid`) refuses a second one.

mod alert_window;
pub mod alerts;
mod best;
mod driver;
mod files;
mod follow;
mod page;
mod query;
mod schema;
mod tables;

pub use alert_window::WindowBuilder;
pub use alerts::{AlertMatches, AlertWindow, match_alerts};
use follow::Following;
pub use follow::{JobFeed, StoreFeed, catch_up, follow, rebuild};
pub use schema::SCHEMA_VERSION;

use crate::store::JobRow;
use anyhow::Context;
use files::{Place, Writing, manual_reader, open_existing};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::Duration;
use tantivy::directory::{DirectoryLock, Lock, MmapDirectory, error::LockError};
use tantivy::{Directory, Index, IndexReader};
use tokio::sync::{Notify, watch};

/// The index's memory for documents not yet written out.
const WRITER_MEMORY: usize = 32 * 1024 * 1024;

/// What the commit payload records.
#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    schema: u32,
    seq: i64,
}

/// This process's search index.
pub struct SearchIndex {
    dir: PathBuf,
    place: Place,
    fields: schema::Fields,
    /// Where the writes go.
    writing: Mutex<Writing>,
    /// What searches read: the reader of the last commit that succeeded (during a rebuild
    /// into a new index, still the old index's).
    searching: RwLock<IndexReader>,
    /// Each segment's block table, for the newest-first traversal.
    tables: driver::Tables,
    /// The distinct locations of a searcher generation (`location=`).
    locations: Mutex<Option<(u64, std::sync::Arc<Vec<String>>)>>,
    /// The last log `seq` whose changes searches see.
    applied: watch::Sender<i64>,
    /// Wakes the follower before its next tick.
    nudge: Notify,
    /// Set once the index has applied the log as it was at start.
    caught_up: AtomicBool,
    /// Set when the index must be rebuilt from the tables before following the log.
    stale: AtomicBool,
    /// Set while a rebuild runs.
    rebuilding: AtomicBool,
    /// Set when a rebuild failed to write: the next one starts from a new, empty index (the
    /// folder may be gone or damaged).
    afresh: AtomicBool,
    following: Mutex<Following>,
    _lock: Option<DirectoryLock>,
}

/// One page of a search, and what it counted.
#[derive(Debug)]
pub struct Found {
    pub rows: Vec<JobRow>,
    /// The matches, counted exactly up to the count limit (`JobSearch::count_limit`), or to the
    /// page's last position if further; past it, that many.
    pub total: i64,
    /// Whether `total` counts every match.
    pub total_exact: bool,
    /// The place after the page's last result, when more results follow inside the window.
    pub next: Option<crate::store::After>,
    pub facets: Option<FacetCounts>,
    /// No later than the earliest `expires_at` of a match the page or the count could lose
    /// (none: no such match expires): the answer holds until then, and a cached copy of it may be
    /// served no later.
    pub valid_until: Option<chrono::DateTime<chrono::Utc>>,
}

/// The facets a search asked for, counted over every match.
#[derive(Debug, Default, serde::Serialize)]
pub struct FacetCounts {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub employment_type: Option<BTreeMap<&'static str, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<BTreeMap<&'static str, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workplace: Option<BTreeMap<&'static str, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub company: Option<Vec<CompanyCount>>,
}

impl FacetCounts {
    /// The facets `asked` with no match at all.
    pub fn empty(asked: crate::store::Facets) -> FacetCounts {
        query::facet_counts(asked, &query::FacetCounts::default(), |_| Ok(String::new()))
            .unwrap_or_default()
    }
}

#[derive(Debug, serde::Serialize)]
pub struct CompanyCount {
    pub id: i64,
    pub name: String,
    pub count: u64,
}

/// What `jobboard search status` shows of an index.
#[derive(Debug)]
pub struct IndexStatus {
    pub documents: u64,
    /// The last log `seq` applied (none: the index has never been committed).
    pub applied: Option<i64>,
    pub schema: Option<u32>,
}

fn holder_pid(dir: &Path) -> String {
    std::fs::read_to_string(dir.join("holder.pid"))
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string())
}

fn register(index: &Index) {
    index
        .tokenizers()
        .register(schema::TOKENIZER, schema::analyzer());
}

fn payload(index: &Index) -> Option<Payload> {
    let metas = index.load_metas().ok()?;
    serde_json::from_str(metas.payload.as_deref()?).ok()
}

impl SearchIndex {
    /// Opens (creating it if needed) the index in `dir`, holding the directory for this process.
    /// Refused when another process holds it, or when the folder cannot be created or written
    /// (the error names it). An index that cannot be used as it is (missing, unreadable in any
    /// part, another schema) is started afresh and marked for a rebuild: an unreadable one is
    /// logged (WARN, with the reason) and its folder `dir/index` removed, not kept aside (a
    /// copy would take the volume's room the rebuild needs).
    pub fn open(dir: &Path) -> anyhow::Result<SearchIndex> {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "SEARCH_INDEX_DIR: cannot create the search index folder {}",
                dir.display()
            )
        })?;
        let root = MmapDirectory::open(dir).with_context(|| {
            format!(
                "SEARCH_INDEX_DIR: cannot open the search index folder {}",
                dir.display()
            )
        })?;
        let lock = match root.acquire_lock(&Lock {
            filepath: PathBuf::from("holder.lock"),
            is_blocking: false,
        }) {
            Ok(lock) => lock,
            Err(LockError::LockBusy) => anyhow::bail!(
                "SEARCH_INDEX_DIR: the search index {} is held by another running process \
                 (pid {}); every process that serves the API needs a folder of its own",
                dir.display(),
                holder_pid(dir)
            ),
            Err(e) => {
                return Err(anyhow::Error::new(e)).with_context(|| {
                    format!(
                        "SEARCH_INDEX_DIR: cannot lock the search index {}",
                        dir.display()
                    )
                });
            }
        };
        std::fs::write(dir.join("holder.pid"), std::process::id().to_string())
            .with_context(|| format!("SEARCH_INDEX_DIR: cannot write to {}", dir.display()))?;
        SearchIndex::start(dir, Place::Folder(dir.join("index")), Some(lock)).with_context(|| {
            format!(
                "SEARCH_INDEX_DIR: cannot use the search index folder {}",
                dir.display()
            )
        })
    }

    /// Opens (creating it if needed) an index kept in `directory`, which the caller owns (no
    /// lock is taken); otherwise as [`SearchIndex::open`]. For tests that make its files fail.
    pub fn open_with_directory(directory: Box<dyn Directory>) -> anyhow::Result<SearchIndex> {
        SearchIndex::start(
            Path::new("(a given directory)"),
            Place::Given(directory),
            None,
        )
    }

    fn start(dir: &Path, place: Place, lock: Option<DirectoryLock>) -> anyhow::Result<SearchIndex> {
        let (schema, fields) = schema::schema();
        let (index, reader, stale) = match open_existing(&place, &schema) {
            Ok((index, reader)) => (index, reader, false),
            Err(e) => {
                if place.holds_an_index() {
                    tracing::warn!(dir = %dir.display(), error = format!("{e:#}"),
                        "the search index is unreadable or of another version; removing it and \
                         rebuilding it from the database");
                }
                let index = place.create(schema)?;
                let reader = manual_reader(&index)?;
                (index, reader, true)
            }
        };
        let applied = if stale {
            0
        } else {
            payload(&index).map_or(0, |p| p.seq)
        };
        let mut writing = Writing {
            index,
            reader: reader.clone(),
            writer: None,
        };
        writing.writer()?;
        Ok(SearchIndex {
            dir: dir.to_path_buf(),
            place,
            fields,
            writing: Mutex::new(writing),
            searching: RwLock::new(reader),
            tables: driver::Tables::new(driver::BLOCK),
            locations: Mutex::new(None),
            applied: watch::Sender::new(applied),
            nudge: Notify::new(),
            caught_up: AtomicBool::new(false),
            stale: AtomicBool::new(stale),
            rebuilding: AtomicBool::new(false),
            afresh: AtomicBool::new(false),
            following: Mutex::new(Following::default()),
            _lock: lock,
        })
    }

    /// [`SearchIndex::open`] with blocks of `block` documents for the newest-first traversal
    /// instead of [`driver::BLOCK`]: small blocks make small test corpora stop early.
    #[doc(hidden)]
    pub fn open_with_block_size(dir: &Path, block: u32) -> anyhow::Result<SearchIndex> {
        let mut index = SearchIndex::open(dir)?;
        index.tables = driver::Tables::new(block);
        Ok(index)
    }

    /// What the index in `dir` holds, read without taking the directory (a running process
    /// may hold it).
    pub fn status(dir: &Path) -> anyhow::Result<IndexStatus> {
        let path = dir.join("index");
        let index = Index::open_in_dir(&path)
            .with_context(|| format!("no readable search index in {}", dir.display()))?;
        register(&index);
        let reader = manual_reader(&index)?;
        let p = payload(&index);
        Ok(IndexStatus {
            documents: reader.searcher().num_docs(),
            applied: p.as_ref().map(|p| p.seq),
            schema: p.map(|p| p.schema),
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The last log `seq` searches see.
    pub fn applied(&self) -> i64 {
        *self.applied.borrow()
    }

    fn searcher(&self) -> tantivy::Searcher {
        self.searching
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .searcher()
    }

    /// How many open jobs the index holds.
    pub fn documents(&self) -> u64 {
        self.searcher().num_docs()
    }

    /// Whether the index has applied the log as it was at start.
    pub fn is_caught_up(&self) -> bool {
        self.caught_up.load(Ordering::SeqCst)
    }

    /// Marks the index for a rebuild from the tables before it follows the log again.
    pub fn mark_stale(&self) {
        self.stale.store(true, Ordering::SeqCst);
    }

    /// Whether the index waits for a rebuild from the tables.
    pub fn is_stale(&self) -> bool {
        self.stale.load(Ordering::SeqCst)
    }

    /// Wakes the follower now.
    pub fn nudge(&self) {
        self.nudge.notify_one();
    }

    /// Waits (at most `timeout`) until searches see every log row up to `seq`; false if they
    /// do not by then.
    pub async fn wait_for(&self, seq: i64, timeout: Duration) -> bool {
        if self.applied() >= seq {
            return true;
        }
        self.nudge();
        let mut rx = self.applied.subscribe();
        matches!(
            tokio::time::timeout(timeout, rx.wait_for(|applied| *applied >= seq)).await,
            Ok(Ok(_))
        )
    }
}
