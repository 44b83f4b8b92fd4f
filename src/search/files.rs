//! The index's files: where they live, reading every part of them before they are used, and
//! writing to them. Any failed write drops the writer and marks the index for a rebuild.

use super::{Payload, SearchIndex, WRITER_MEMORY, payload, register, schema};
use crate::store::JobRow;
use anyhow::Context;
use std::path::PathBuf;
use std::sync::PoisonError;
use std::sync::atomic::Ordering;
use tantivy::collector::Count;
use tantivy::query::AllQuery;
use tantivy::schema::Schema;
use tantivy::{
    Directory, DocAddress, Index, IndexReader, IndexSettings, IndexWriter, ReloadPolicy,
    TantivyDocument,
};

/// Where the index's files live.
pub(super) enum Place {
    /// `SEARCH_INDEX_DIR/index`. Started afresh by removing the folder and creating it again.
    Folder(PathBuf),
    /// A directory handed over by the caller ([`SearchIndex::open_with_directory`]). Started
    /// afresh by writing a new, empty index over it.
    Given(Box<dyn Directory>),
}

impl Place {
    pub(super) fn open(&self) -> tantivy::Result<Index> {
        match self {
            Place::Folder(path) => Index::open_in_dir(path),
            Place::Given(directory) => Index::open(directory.box_clone()),
        }
    }

    /// Whether an index was ever written here (its `meta.json` exists).
    pub(super) fn holds_an_index(&self) -> bool {
        match self {
            Place::Folder(path) => path.join("meta.json").exists(),
            Place::Given(directory) => Index::exists(&**directory).unwrap_or(true),
        }
    }

    /// A new, empty index here, in place of whatever was there.
    pub(super) fn create(&self, schema: Schema) -> anyhow::Result<Index> {
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
pub(super) struct Writing {
    pub(super) index: Index,
    pub(super) reader: IndexReader,
    /// None once a write failed: a new writer is opened for the next write.
    pub(super) writer: Option<IndexWriter>,
}

impl Writing {
    pub(super) fn new(index: Index) -> anyhow::Result<Writing> {
        let reader = manual_reader(&index)?;
        Ok(Writing {
            index,
            reader,
            writer: None,
        })
    }

    pub(super) fn writer(&mut self) -> anyhow::Result<&mut IndexWriter> {
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

pub(super) fn manual_reader(index: &Index) -> anyhow::Result<IndexReader> {
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
pub(super) fn open_existing(
    place: &Place,
    schema: &Schema,
) -> anyhow::Result<(Index, IndexReader)> {
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
    /// The start of a rebuild: after a rebuild that failed to write, a new, empty index in
    /// place of the old one (whose last commit searches still read until the rebuild commits).
    /// Blocking.
    pub(super) fn begin_rebuild(&self) -> anyhow::Result<()> {
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
    pub(super) fn end_rebuild(&self) {
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
    pub(super) fn apply(
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
            // The new segments' tables are built here rather than by the next search.
            self.tables
                .of(&writing.reader.searcher())
                .context("building the search index's block tables")?;
        }
        Ok(())
    }
}
