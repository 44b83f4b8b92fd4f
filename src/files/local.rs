//! `FILE_STORE=local`: files in a folder (`FILE_STORE_DIR`), one per key, put in place by a
//! rename of the finished spool (the same file system) and made durable with the folder's
//! `fsync` before the row that names it commits.

use super::{ByteStream, FileStore, Spooled, valid_key};
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::path::{Path, PathBuf};
use tokio_util::io::ReaderStream;

/// How much one read of a download takes (a 100 KiB résumé is one read).
const READ_CHUNK: usize = 256 * 1024;

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
            file.temp
                .persist(&path)
                .with_context(|| format!("moving the upload to {}", path.display()))?;
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
        match tokio::fs::File::open(&path).await {
            Ok(file) => {
                let size = file.metadata().await?.len();
                // Large reads: each is a hop to the blocking pool.
                let stream = ReaderStream::with_capacity(file, READ_CHUNK);
                Ok(Some((Box::pin(stream), size)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("opening {}", path.display())),
        }
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
