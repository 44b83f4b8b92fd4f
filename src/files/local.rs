//! `FILE_STORE=local`: files in a folder (`FILE_STORE_DIR`), one per key, put in place by a
//! rename of the finished spool (the same file system) and made durable with its own and the
//! folder's `fsync` before the row that names it commits.

use super::{ByteStream, FileStore, Spooled, valid_key};
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::io::Read;
use std::path::{Path, PathBuf};
use tokio_util::io::ReaderStream;

/// How much one read of a download takes; a file no larger is read whole (a 100 KiB résumé).
const READ_CHUNK: usize = 256 * 1024;

/// A file [`LocalFiles::get`] opened: read whole, or to be streamed.
enum Opened {
    Whole(bytes::Bytes),
    Large(std::fs::File, u64),
}

pub struct LocalFiles {
    root: PathBuf,
}

impl LocalFiles {
    /// The store in `root`, its folders created.
    pub async fn open(root: &Path) -> anyhow::Result<LocalFiles> {
        let resumes = root.join(super::RESUMES);
        tokio::fs::create_dir_all(&resumes)
            .await
            .with_context(|| format!("creating FILE_STORE_DIR's folder {}", resumes.display()))?;
        Ok(LocalFiles {
            root: root.to_path_buf(),
        })
    }

    /// The path of a key; only keys the server makes are turned into one.
    fn path(&self, key: &str) -> anyhow::Result<PathBuf> {
        anyhow::ensure!(valid_key(key), "not a file key: {key:?}");
        Ok(self.root.join(key))
    }
}

#[async_trait]
impl FileStore for LocalFiles {
    fn kind(&self) -> &'static str {
        "local"
    }

    async fn put(&self, key: &str, file: Spooled) -> anyhow::Result<()> {
        let path = self.path(key)?;
        tokio::task::spawn_blocking(move || {
            let folder = path.parent().map(Path::to_path_buf);
            // Renamed first, then made durable: until both `fsync`s return no row names the key
            // (a crash leaves a file the upkeep's sweep deletes), and a journaling file system
            // commits the rename with the file's `fsync`, so the folder's has little left to do.
            let stored = file
                .temp
                .persist(&path)
                .with_context(|| format!("moving the upload to {}", path.display()))?;
            stored
                .sync_all()
                .with_context(|| format!("syncing {}", path.display()))?;
            if let Some(folder) = folder {
                std::fs::File::open(&folder)
                    .and_then(|d| d.sync_all())
                    .with_context(|| format!("syncing {}", folder.display()))?;
            }
            Ok(())
        })
        .await?
    }

    async fn get(&self, key: &str) -> anyhow::Result<Option<(ByteStream, u64)>> {
        let path = self.path(key)?;
        // One hop to the blocking pool opens the file, reads its size and, for a file no larger
        // than one read, its bytes: a 100 KiB résumé costs one hop instead of four.
        let opened = tokio::task::spawn_blocking(move || -> anyhow::Result<Option<Opened>> {
            let file = match std::fs::File::open(&path) {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e).with_context(|| format!("opening {}", path.display())),
            };
            let size = file
                .metadata()
                .with_context(|| format!("reading the size of {}", path.display()))?
                .len();
            if size > READ_CHUNK as u64 {
                return Ok(Some(Opened::Large(file, size)));
            }
            // No larger than the stream's own buffer would be: memory is as it was.
            let mut bytes = Vec::with_capacity(size as usize);
            file.take(size)
                .read_to_end(&mut bytes)
                .with_context(|| format!("reading {}", path.display()))?;
            Ok(Some(Opened::Whole(bytes::Bytes::from(bytes))))
        })
        .await??;
        Ok(opened.map(|opened| match opened {
            Opened::Whole(bytes) => {
                let size = bytes.len() as u64;
                let stream: ByteStream = Box::pin(futures::stream::once(async move { Ok(bytes) }));
                (stream, size)
            }
            Opened::Large(file, size) => {
                // Large reads: each is a hop to the blocking pool.
                let stream =
                    ReaderStream::with_capacity(tokio::fs::File::from_std(file), READ_CHUNK);
                (Box::pin(stream) as ByteStream, size)
            }
        }))
    }

    async fn delete(&self, key: &str) -> anyhow::Result<()> {
        let path = self.path(key)?;
        match tokio::fs::remove_file(&path).await {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("deleting {}", path.display()))
            }
            _ => Ok(()),
        }
    }

    async fn list_before(
        &self,
        prefix: &str,
        before: DateTime<Utc>,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Vec<String>> {
        let folder = self.root.join(prefix);
        let mut keys = Vec::new();
        let mut entries = tokio::fs::read_dir(&folder)
            .await
            .with_context(|| format!("listing {}", folder.display()))?;
        while let Some(entry) = entries.next_entry().await? {
            let key = format!("{prefix}{}", entry.file_name().to_string_lossy());
            if !valid_key(&key) || after.is_some_and(|a| key.as_str() <= a) {
                continue;
            }
            let written: DateTime<Utc> = entry.metadata().await?.modified()?.into();
            if written < before {
                keys.push(key);
            }
        }
        keys.sort();
        keys.truncate(limit);
        Ok(keys)
    }
}

/// Deletes the files of `folder` last written before `before` (the spool's leftovers).
pub(super) async fn delete_files_before(
    folder: &Path,
    before: DateTime<Utc>,
) -> std::io::Result<u64> {
    let mut deleted = 0;
    let mut entries = tokio::fs::read_dir(folder).await?;
    while let Some(entry) = entries.next_entry().await? {
        let meta = entry.metadata().await?;
        let written: DateTime<Utc> = meta.modified()?.into();
        if meta.is_file() && written < before {
            match tokio::fs::remove_file(entry.path()).await {
                Ok(()) => deleted += 1,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(deleted)
}
