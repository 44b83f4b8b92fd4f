//! The alert matcher's window being built ([`WindowBuilder`]): the jobs are handed over a page
//! at a time and go into an index of their own in a temporary folder, so that what a run holds
//! in memory is one page of jobs, the writer's budget and the documents handed to the writer
//! since its last commit, whatever the window's size; the rest is files, read through the page
//! cache. The documents hold what the matcher reads and nothing a page shows
//! ([`Fields::document_to_match`]).
//!
//! The folder, `jobboard-alert-window-*` under the system's temporary folder (`TMPDIR`, else
//! `/tmp`), goes with its window. A process killed while it held one leaves it behind: making
//! a window removes every such folder whose lock (`holder.lock`) no process holds.

use super::schema::{self, Fields};
use crate::domain::JobStatus;
use crate::store::JobRow;
use anyhow::Context;
use std::fs::File;
use std::path::{Path, PathBuf};
use tantivy::indexer::NoMergePolicy;
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy};

/// The writer's memory for documents not yet written out (tantivy's least is 15 MB).
const WRITER_MEMORY: usize = 16 * 1024 * 1024;
/// Text handed to the writer after which it commits: the documents waiting in its queue are
/// bounded by this, not by the window.
const COMMIT_AFTER_BYTES: usize = 16 * 1024 * 1024;

const PREFIX: &str = "jobboard-alert-window-";
const LOCK: &str = "holder.lock";

/// A window's folder: removed, then unlocked, when dropped.
pub(super) struct Folder {
    dir: tempfile::TempDir,
    _lock: File,
}

impl Folder {
    /// A new folder under `parent`, locked, after removing the ones left behind there.
    fn create_in(parent: &Path) -> anyhow::Result<Folder> {
        remove_left_behind(parent);
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .tempdir_in(parent)
            .with_context(|| {
                format!(
                    "creating a folder for the alert window's index in {}",
                    parent.display()
                )
            })?;
        // Locked before it has its name, so that no other window's sweep takes this one for a
        // folder left behind.
        let new = dir.path().join("holder.lock.new");
        let lock = File::create(&new).with_context(|| format!("creating {}", new.display()))?;
        lock.try_lock()
            .with_context(|| format!("locking {}", new.display()))?;
        std::fs::rename(&new, dir.path().join(LOCK))
            .with_context(|| format!("renaming {}", new.display()))?;
        let index = dir.path().join("index");
        std::fs::create_dir(&index).with_context(|| format!("creating {}", index.display()))?;
        Ok(Folder { dir, _lock: lock })
    }

    fn index(&self) -> PathBuf {
        self.dir.path().join("index")
    }
}

/// Removes the window folders under `parent` that no process holds (a window's process was
/// killed); a folder that cannot be removed is named in a WARN and left.
fn remove_left_behind(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        if !entry.file_name().to_string_lossy().starts_with(PREFIX) {
            continue;
        }
        let path = entry.path();
        // No lock file yet: a window being made, or not a window's folder.
        let Ok(lock) = File::open(path.join(LOCK)) else {
            continue;
        };
        if lock.try_lock().is_err() {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::info!(
                folder = %path.display(),
                "removed an alert window's folder left behind by a process that stopped"
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(
                folder = %path.display(),
                error = %e,
                "cannot remove an alert window's folder left behind: {e}"
            ),
        }
    }
}

/// An alert window being built: [`WindowBuilder::add`] each page of the window's jobs, then
/// `WindowBuilder::finish` (beside the window, in [`super::alerts`]).
pub struct WindowBuilder {
    fields: Fields,
    index: Index,
    writer: IndexWriter,
    /// Text handed to the writer since its last commit.
    pending: usize,
    folder: Folder,
}

impl WindowBuilder {
    /// An empty window in a new folder under the system's temporary folder.
    pub fn new() -> anyhow::Result<WindowBuilder> {
        WindowBuilder::new_in(&std::env::temp_dir())
    }

    fn new_in(parent: &Path) -> anyhow::Result<WindowBuilder> {
        let folder = Folder::create_in(parent)?;
        let (schema, fields) = schema::schema();
        let index = Index::create_in_dir(folder.index(), schema)
            .context("creating the alert window's index")?;
        super::register(&index);
        let writer = index
            .writer_with_num_threads(1, WRITER_MEMORY)
            .context("opening the alert window's index writer")?;
        // Segments stay as written: a merge would hold more in memory and on disk at once.
        writer.set_merge_policy(Box::new(NoMergePolicy));
        Ok(WindowBuilder {
            fields,
            index,
            writer,
            pending: 0,
            folder,
        })
    }

    /// Adds the open jobs of `jobs` (others are ignored, as the search index holds only open
    /// jobs).
    pub fn add(&mut self, jobs: &[JobRow]) -> anyhow::Result<()> {
        for job in jobs.iter().filter(|j| j.status == JobStatus::Open) {
            self.writer
                .add_document(self.fields.document_to_match(job))
                .with_context(|| format!("indexing job {} for the alerts", job.id))?;
            self.pending += job.title.len()
                + job.description.len()
                + job.company_name.len()
                + job.location.len();
        }
        if self.pending >= COMMIT_AFTER_BYTES {
            self.commit()?;
        }
        Ok(())
    }

    fn commit(&mut self) -> anyhow::Result<()> {
        self.writer
            .commit()
            .context("committing the alert window's index")?;
        self.pending = 0;
        Ok(())
    }

    /// The index, committed and ready to be read, with what it was made with: the window's
    /// parts.
    pub(super) fn into_parts(mut self) -> anyhow::Result<(Fields, IndexReader, Folder)> {
        self.commit()?;
        drop(self.writer);
        let reader = self
            .index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .context("opening the alert window's reader")?;
        Ok((self.fields, reader, self.folder))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows(parent: &Path) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(parent)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        found.sort();
        found
    }

    #[test]
    fn a_folder_left_behind_goes_and_one_in_use_stays() {
        let parent = tempfile::tempdir().unwrap();
        let in_use = WindowBuilder::new_in(parent.path()).unwrap();
        // As a killed process leaves it: its files, its lock file, no lock held.
        let left = parent.path().join(format!("{PREFIX}left"));
        std::fs::create_dir_all(left.join("index")).unwrap();
        std::fs::write(left.join(LOCK), b"").unwrap();
        std::fs::write(left.join("index").join("meta.json"), b"{}").unwrap();
        // Another program's folder, and one being made (no lock file yet).
        let other = parent.path().join("another-program");
        let making = parent.path().join(format!("{PREFIX}making"));
        std::fs::create_dir(&other).unwrap();
        std::fs::create_dir(&making).unwrap();

        let next = WindowBuilder::new_in(parent.path()).unwrap();
        let mut want = vec![
            other.clone(),
            making.clone(),
            in_use.folder.dir.path().to_path_buf(),
            next.folder.dir.path().to_path_buf(),
        ];
        want.sort();
        assert_eq!(windows(parent.path()), want);

        let (_, reader, folder) = next.into_parts().unwrap();
        assert_eq!(reader.searcher().num_docs(), 0);
        drop((reader, folder));
        drop(in_use);
        let mut want = vec![other, making];
        want.sort();
        assert_eq!(
            windows(parent.path()),
            want,
            "a window's folder goes with it"
        );
    }
}
