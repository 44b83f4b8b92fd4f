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

pub mod alerts;
mod follow;
mod query;
mod schema;

pub use alerts::{AlertMatches, AlertWindow, match_alerts};
pub use follow::{JobFeed, StoreFeed, catch_up, follow, rebuild};
pub use schema::SCHEMA_VERSION;

use crate::store::{JobRow, JobSearch};
use anyhow::Context;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};
use tantivy::collector::Count;
use tantivy::directory::{DirectoryLock, Lock, MmapDirectory, error::LockError};
use tantivy::query::AllQuery;
use tantivy::schema::Schema;
use tantivy::{
    Directory, DocAddress, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy,
    TantivyDocument,
};
use tokio::sync::{Notify, watch};

/// The index's memory for documents not yet written out.
const WRITER_MEMORY: usize = 32 * 1024 * 1024;

/// What the commit payload records.
#[derive(serde::Serialize, serde::Deserialize)]
struct Payload {
    schema: u32,
    seq: i64,
}

/// A job change that has waited unapplied this long makes `/readyz` 503 (CONTRACT.md §4 Index).
pub const UNAPPLIED_LIMIT: Duration = Duration::from_secs(10);

/// Where the index's files live.
enum Place {
    /// `SEARCH_INDEX_DIR/index`. Started afresh by removing the folder and creating it again.
    Folder(PathBuf),
    /// A directory handed over by the caller ([`SearchIndex::open_with_directory`]). Started
    /// afresh by writing a new, empty index over it.
    Given(Box<dyn Directory>),
}

impl Place {
    fn open(&self) -> tantivy::Result<Index> {
        match self {
            Place::Folder(path) => Index::open_in_dir(path),
            Place::Given(directory) => Index::open(directory.box_clone()),
        }
    }

    /// Whether an index was ever written here (its `meta.json` exists).
    fn holds_an_index(&self) -> bool {
        match self {
            Place::Folder(path) => path.join("meta.json").exists(),
            Place::Given(directory) => Index::exists(&**directory).unwrap_or(true),
        }
    }

    /// A new, empty index here, in place of whatever was there.
    fn create(&self, schema: Schema) -> anyhow::Result<Index> {
        let index = match self {
            Place::Folder(path) => {
                match std::fs::remove_dir_all(path) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(e).with_context(|| {
                            format!("removing the old search index {}", path.display())
                        });
                    }
                }
                std::fs::create_dir_all(path)
                    .with_context(|| format!("creating the search index {}", path.display()))?;
                Index::create_in_dir(path, schema)
                    .with_context(|| format!("creating the search index {}", path.display()))?
            }
            Place::Given(directory) => {
                Index::create(directory.box_clone(), schema, IndexSettings::default())
                    .context("creating the search index")?
            }
        };
        register(&index);
        Ok(index)
    }
}

/// The index being written, the reader of its commits, and its writer.
struct Writing {
    index: Index,
    reader: IndexReader,
    /// None once a write failed: a new writer is opened for the next write.
    writer: Option<IndexWriter>,
}

impl Writing {
    fn new(index: Index) -> anyhow::Result<Writing> {
        let reader = manual_reader(&index)?;
        Ok(Writing {
            index,
            reader,
            writer: None,
        })
    }

    fn writer(&mut self) -> anyhow::Result<&mut IndexWriter> {
        if self.writer.is_none() {
            self.writer = Some(
                self.index
                    .writer_with_num_threads(1, WRITER_MEMORY)
                    .context("opening the search index's writer")?,
            );
        }
        self.writer
            .as_mut()
            .context("the search index's writer is missing")
    }
}

/// What the follower last saw, for `/readyz`.
#[derive(Default)]
struct Following {
    /// The last round failed.
    failed: bool,
    /// The newest log `seq` seen unapplied, and when it was first seen so.
    waiting: Option<(i64, Instant)>,
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
    /// Every match, exactly.
    pub total: i64,
    pub facets: Option<FacetCounts>,
    /// The earliest `expires_at` among every match (none: no match expires): the answer holds
    /// until then, and a cached copy of it may be served no later.
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

fn manual_reader(index: &Index) -> anyhow::Result<IndexReader> {
    index
        .reader_builder()
        .reload_policy(ReloadPolicy::Manual)
        .try_into()
        .context("opening the search index's reader")
}

/// The index already in `place`, with a reader, once every part of it has been read: its
/// `meta.json`, its schema and this version's commit payload, each segment's files (a
/// document read from each segment's store, every posting list counted) and their checksums.
/// An error says why it cannot be used.
fn open_existing(place: &Place, schema: &Schema) -> anyhow::Result<(Index, IndexReader)> {
    let index = place.open().context("reading its meta.json")?;
    anyhow::ensure!(index.schema() == *schema, "its schema is another version's");
    let version = payload(&index)
        .context("it has no commit of this jobboard")?
        .schema;
    anyhow::ensure!(
        version == schema::SCHEMA_VERSION,
        "its schema version is {version}, not {}",
        schema::SCHEMA_VERSION
    );
    register(&index);
    let reader = manual_reader(&index)?;
    let searcher = reader.searcher();
    for (ord, segment) in searcher.segment_readers().iter().enumerate() {
        if segment.max_doc() > 0 {
            let ord = u32::try_from(ord).context("too many segments")?;
            let _: TantivyDocument = searcher
                .doc(DocAddress::new(ord, 0))
                .context("reading a stored document")?;
        }
    }
    searcher
        .search(&AllQuery, &Count)
        .context("reading every document")?;
    let damaged = index
        .validate_checksum()
        .context("checking its files' checksums")?;
    if !damaged.is_empty() {
        let mut damaged: Vec<String> = damaged.iter().map(|p| p.display().to_string()).collect();
        damaged.sort();
        anyhow::bail!("damaged files: {}", damaged.join(", "));
    }
    Ok((index, reader))
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

    /// `/readyz`'s `checks.search`: `ok`, or why not: `catching_up` (it has not applied the
    /// log as it was at start), `failing` (the follower's last round failed) or `behind` (the
    /// newest change it saw has waited unapplied for more than [`UNAPPLIED_LIMIT`]).
    pub fn readiness(&self) -> &'static str {
        if !self.is_caught_up() {
            return "catching_up";
        }
        let following = self
            .following
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if following.failed {
            return "failing";
        }
        match following.waiting {
            Some((seq, since)) if seq > self.applied() && since.elapsed() > UNAPPLIED_LIMIT => {
                "behind"
            }
            _ => "ok",
        }
    }

    /// Records the follower's round: whether it failed, and the newest `seq` in the log then.
    fn record_round(&self, failed: bool, newest: Option<i64>) {
        let mut following = self
            .following
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        following.failed = failed;
        let applied = self.applied();
        if let Some(newest) = newest {
            following.waiting = match following.waiting {
                // The change first seen waiting still waits: its clock runs on.
                Some((seq, since)) if seq > applied => Some((seq, since)),
                _ if newest > applied => Some((newest, Instant::now())),
                _ => None,
            };
        }
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

    /// The start of a rebuild: after a rebuild that failed to write, a new, empty index in
    /// place of the old one (whose last commit searches still read until the rebuild commits).
    /// Blocking.
    fn begin_rebuild(&self) -> anyhow::Result<()> {
        self.rebuilding.store(true, Ordering::SeqCst);
        if self.afresh.load(Ordering::SeqCst) {
            let mut writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
            // The old writer goes first: it holds the old index's writer lock.
            writing.writer = None;
            let (schema, _) = schema::schema();
            *writing = Writing::new(self.place.create(schema)?)?;
            tracing::info!(dir = %self.dir.display(), "the search index is started afresh");
            self.afresh.store(false, Ordering::SeqCst);
        }
        Ok(())
    }

    /// The end of a rebuild that committed.
    fn end_rebuild(&self) {
        self.rebuilding.store(false, Ordering::SeqCst);
        self.stale.store(false, Ordering::SeqCst);
    }

    /// Replaces the documents of `touched` jobs, and of every job of `companies`, by those of
    /// `rows` that are open, and commits with `seq` as the last change applied (none when
    /// `seq` is negative). Blocking (it writes files).
    ///
    /// After any error the writer is dropped with whatever it held (tantivy's writer may have
    /// lost its indexing thread, and would then commit later changes without their
    /// documents), and the index is marked for a rebuild from the tables: `applied` did not
    /// move, so no change is skipped. A rebuild that fails to write starts the next one afresh.
    fn apply(
        &self,
        touched: &[i64],
        companies: &[i64],
        rows: &[JobRow],
        seq: i64,
        clear: bool,
    ) -> anyhow::Result<()> {
        let mut writing = self.writing.lock().unwrap_or_else(PoisonError::into_inner);
        match self.write(&mut writing, touched, companies, rows, seq, clear) {
            Ok(()) => {
                if seq >= 0 {
                    *self
                        .searching
                        .write()
                        .unwrap_or_else(PoisonError::into_inner) = writing.reader.clone();
                    self.applied.send_replace(seq);
                    metrics::gauge!(crate::telemetry::SEARCH_INDEX_APPLIED_SEQ).set(seq as f64);
                }
                Ok(())
            }
            Err(e) => {
                writing.writer = None;
                self.mark_stale();
                if self.rebuilding.load(Ordering::SeqCst) {
                    self.afresh.store(true, Ordering::SeqCst);
                }
                Err(e)
            }
        }
    }

    fn write(
        &self,
        writing: &mut Writing,
        touched: &[i64],
        companies: &[i64],
        rows: &[JobRow],
        seq: i64,
        clear: bool,
    ) -> anyhow::Result<()> {
        let writer = writing.writer()?;
        if clear {
            writer
                .delete_all_documents()
                .context("clearing the search index")?;
        }
        for id in touched {
            writer.delete_term(self.fields.id_term(*id));
        }
        for company in companies {
            writer.delete_term(self.fields.company_term(*company));
        }
        for row in rows
            .iter()
            .filter(|r| r.status == crate::domain::JobStatus::Open)
        {
            writer
                .add_document(self.fields.document(row)?)
                .with_context(|| format!("indexing job {}", row.id))?;
        }
        if seq >= 0 {
            let mut commit = writer
                .prepare_commit()
                .context("preparing the search index's commit")?;
            commit.set_payload(&serde_json::to_string(&Payload {
                schema: schema::SCHEMA_VERSION,
                seq,
            })?);
            commit.commit().context("committing the search index")?;
            writing
                .reader
                .reload()
                .context("reloading the search index's reader")?;
        }
        Ok(())
    }

    /// One page of `s`, with every match counted and the facets it asks for. Blocking.
    pub fn search(&self, s: &JobSearch) -> anyhow::Result<Found> {
        let searcher = self.searcher();
        let query = query::build(&searcher, &self.fields, s)?;
        let offset = usize::try_from(s.page.offset()).unwrap_or(usize::MAX);
        let size = usize::try_from(s.page.size).unwrap_or(0);
        let title_terms = if s.by_relevance() {
            s.terms
                .iter()
                .map(|t| tantivy::Term::from_field_text(self.fields.title, t))
                .collect()
        } else {
            Vec::new()
        };
        let at = s.at.unwrap_or_else(chrono::Utc::now);
        let collected = searcher
            .search(
                &*query,
                &query::JobCollector {
                    now: schema::micros(&at),
                    keep: offset.saturating_add(size),
                    title_terms,
                    facets: s.facets,
                },
            )
            .context("searching the index")?;
        let mut rows = Vec::new();
        for address in collected.best.iter().skip(offset) {
            let doc: TantivyDocument = searcher.doc(*address).context("reading a found job")?;
            rows.push(self.fields.job(&doc)?);
        }
        let facets = if s.facets.any() {
            Some(query::facet_counts(
                s.facets,
                &collected.facets,
                |address| {
                    let doc: TantivyDocument =
                        searcher.doc(address).context("reading a company's name")?;
                    Ok(self.fields.job(&doc)?.company_name)
                },
            )?)
        } else {
            None
        };
        let valid_until = (collected.earliest_expiry != schema::NO_EXPIRY)
            .then(|| chrono::DateTime::from_timestamp_micros(collected.earliest_expiry))
            .flatten();
        Ok(Found {
            rows,
            total: collected.total as i64,
            facets,
            valid_until,
        })
    }
}
