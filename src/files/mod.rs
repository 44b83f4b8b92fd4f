//! Files beside the database (DESIGN.md, "Files beside the database"): résumés' bytes live in a
//! file store, a folder (`FILE_STORE=local`) or an S3 bucket (`FILE_STORE=s3`), under keys the
//! server makes (`resumes/<32 hex digits>`), never under a name a user gave. A row in the
//! database names each file; the file is written before its row commits, and the worker's
//! upkeep deletes a file that no row names a day after it was written, so a crash between the
//! two leaves no orphan for long and never a row without its file.
//!
//! An upload is spooled to a temporary file first ([`Upload`]), its kind recognised and its
//! SHA-256 taken as the bytes arrive, so memory does not grow with its size; only a whole,
//! recognised file is put in the store.

pub mod kind;
mod local;
mod s3;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use chrono::{DateTime, Utc};
use futures::Stream;
use sha2::{Digest, Sha256};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

pub use kind::{Kind, Refusal};
pub use local::LocalFiles;
pub use s3::S3Files;

/// A stored file's bytes, as they are read.
pub type ByteStream = Pin<Box<dyn Stream<Item = std::io::Result<Bytes>> + Send>>;

/// How much of an upload is gathered before it is written to its spool file.
const WRITE_CHUNK: usize = 256 * 1024;
/// A chunk smaller than this is copied into [`Upload`]'s small buffer instead of held as it
/// came: each chunk held keeps an allocation of its own (and a few dozen bytes beside it), so a
/// body sent in tiny pieces would otherwise hold many times its size until the next write.
const SMALL_CHUNK: usize = 8 * 1024;

/// The prefix of every résumé's key.
pub const RESUMES: &str = "resumes/";

/// Where files live. Keys are the server's own ([`new_key`]); every method is safe to repeat.
#[async_trait]
pub trait FileStore: Send + Sync {
    /// `local` or `s3`, for logs and metrics.
    fn kind(&self) -> &'static str;
    /// Stores a finished spool under `key`.
    async fn put(&self, key: &str, file: Spooled) -> anyhow::Result<()>;
    /// The file's bytes and its size, or `None` when no file has that key.
    async fn get(&self, key: &str) -> anyhow::Result<Option<(ByteStream, u64)>>;
    /// Deletes the file; a key with no file is not an error.
    async fn delete(&self, key: &str) -> anyhow::Result<()>;
    /// Up to `limit` keys under `prefix` written before `before`, in key order after `after`:
    /// the upkeep's sweep of files no row names.
    async fn list_before(
        &self,
        prefix: &str,
        before: DateTime<Utc>,
        after: Option<&str>,
        limit: usize,
    ) -> anyhow::Result<Vec<String>>;
}

/// The store `FILE_STORE` names, with its spool folder (`FILE_STORE_DIR/tmp`, for both).
pub async fn from_config(config: &crate::config::Config) -> anyhow::Result<Files> {
    let spool = config.file_store_dir.join("tmp");
    tokio::fs::create_dir_all(&spool).await.map_err(|e| {
        anyhow::anyhow!("creating FILE_STORE_DIR's folder {}: {e}", spool.display())
    })?;
    let store: Arc<dyn FileStore> = match config.file_store {
        crate::config::FileStoreKind::Local => {
            Arc::new(LocalFiles::open(&config.file_store_dir).await?)
        }
        crate::config::FileStoreKind::S3 => Arc::new(
            S3Files::connect(
                config.s3_bucket.as_deref().unwrap_or_default(),
                &config.s3_prefix,
                config.s3_endpoint_url.as_deref(),
            )
            .await,
        ),
    };
    Ok(Files { store, spool })
}

/// The file store and the folder uploads are spooled in.
#[derive(Clone)]
pub struct Files {
    pub store: Arc<dyn FileStore>,
    spool: PathBuf,
}

impl Files {
    pub fn new(store: Arc<dyn FileStore>, spool: PathBuf) -> Files {
        Files { store, spool }
    }

    /// A new upload of at most `max` bytes.
    pub fn upload(&self, max: u64) -> std::io::Result<Upload> {
        let temp = tempfile::Builder::new()
            .prefix("upload-")
            .tempfile_in(&self.spool)?;
        let file = temp.reopen()?;
        Ok(Upload {
            temp,
            file: Some(file),
            pending: Vec::new(),
            small: BytesMut::new(),
            pending_len: 0,
            hash: Sha256::new(),
            recognizer: kind::Recognizer::new(),
            size: 0,
            max,
        })
    }

    /// Deletes spooled uploads older than `before` that a crash left behind; how many.
    pub async fn sweep_spool(&self, before: DateTime<Utc>) -> std::io::Result<u64> {
        local::delete_files_before(&self.spool, before).await
    }
}

/// A new key for a file: random, so that it says nothing and cannot collide.
pub fn new_key(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::new_v4().simple())
}

/// Whether `key` is one [`new_key`] could have made: the only keys a store turns into a path.
pub fn valid_key(key: &str) -> bool {
    key.strip_prefix(RESUMES)
        .is_some_and(|rest| rest.len() == 32 && rest.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// Why an upload stopped.
#[derive(Debug)]
pub enum UploadError {
    /// More than the most allowed (413).
    TooLarge,
    /// Not a kind the board takes (415), or empty (422).
    Refused(Refusal),
    /// The spool could not be written.
    Io(std::io::Error),
}

/// An upload being spooled.
pub struct Upload {
    temp: tempfile::NamedTempFile,
    /// The spool file; `None` only after a write to it failed.
    file: Option<std::fs::File>,
    /// The chunks received since the last write, in order, until [`WRITE_CHUNK`] bytes of them
    /// go to the spool file in one hop to the blocking pool: large ones held as they came (not
    /// copied), runs of small ones copied together into `small` ([`SMALL_CHUNK`]).
    pending: Vec<Bytes>,
    small: BytesMut,
    pending_len: usize,
    hash: Sha256,
    recognizer: kind::Recognizer,
    size: u64,
    max: u64,
}

impl Upload {
    /// Takes the next chunk; stops at the first byte past the most allowed, or the first that
    /// shows the file is of another kind.
    pub async fn write(&mut self, chunk: Bytes) -> Result<(), UploadError> {
        self.size += chunk.len() as u64;
        if self.size > self.max {
            return Err(UploadError::TooLarge);
        }
        self.recognizer.feed(&chunk).map_err(UploadError::Refused)?;
        self.hash.update(&chunk);
        self.pending_len += chunk.len();
        if chunk.len() < SMALL_CHUNK {
            self.small.extend_from_slice(&chunk);
        } else {
            self.end_small_run();
            self.pending.push(chunk);
        }
        if self.pending_len >= WRITE_CHUNK {
            self.flush().await?;
        }
        Ok(())
    }

    /// The small chunks copied so far take their place in the order.
    fn end_small_run(&mut self) {
        if !self.small.is_empty() {
            self.pending.push(self.small.split().freeze());
        }
    }

    /// Writes the pending chunks to the spool file, off the runtime.
    async fn flush(&mut self) -> Result<(), UploadError> {
        self.end_small_run();
        if self.pending.is_empty() {
            return Ok(());
        }
        let chunks = std::mem::take(&mut self.pending);
        self.pending_len = 0;
        let mut file = self.file.take().ok_or_else(|| {
            UploadError::Io(std::io::Error::other(
                "an earlier write to the spool file failed",
            ))
        })?;
        let file = tokio::task::spawn_blocking(move || {
            for chunk in &chunks {
                file.write_all(chunk)?;
            }
            Ok::<_, std::io::Error>(file)
        })
        .await
        .map_err(|e| UploadError::Io(std::io::Error::other(e)))?
        .map_err(UploadError::Io)?;
        self.file = Some(file);
        Ok(())
    }

    /// The whole file, recognised and written to its spool file; made durable by the store
    /// that keeps it (a local store's `fsync`, an S3 store's PUT), not here.
    pub async fn finish(mut self) -> Result<Spooled, UploadError> {
        self.flush().await?;
        let Upload {
            temp,
            mut recognizer,
            hash,
            size,
            ..
        } = self;
        let sha256 = hex::encode(hash.finalize());
        // Only a ZIP's kind needs its file read again (its directory), off the runtime.
        if let Some(kind) = recognizer.finish_read().map_err(UploadError::Refused)? {
            return Ok(Spooled {
                temp,
                kind,
                size,
                sha256,
            });
        }
        let (temp, kind) = tokio::task::spawn_blocking(move || {
            let read = temp.reopen().map_err(UploadError::Io)?;
            let kind = recognizer.finish(read).map_err(UploadError::Refused)?;
            Ok::<_, UploadError>((temp, kind))
        })
        .await
        .map_err(|e| UploadError::Io(std::io::Error::other(e)))??;
        Ok(Spooled {
            temp,
            kind,
            size,
            sha256,
        })
    }
}

/// A whole upload in its spool file, ready for the store.
pub struct Spooled {
    temp: tempfile::NamedTempFile,
    pub kind: Kind,
    pub size: u64,
    pub sha256: String,
}

impl Spooled {
    pub fn path(&self) -> &Path {
        self.temp.path()
    }
}

/// The name an uploaded file is shown and downloaded under: its last path segment, without
/// what a one-line text may not hold (`validate::breaks_one_line`: controls, line and paragraph
/// separators, bidirectional controls), at most 255 characters; `resume` when nothing is left.
pub fn display_name(raw: Option<&str>) -> String {
    let last = raw
        .unwrap_or_default()
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default();
    let clean: String = last
        .chars()
        .filter(|c| !crate::domain::validate::breaks_one_line(*c))
        .take(255)
        .collect();
    let clean = clean.trim();
    if clean.is_empty() || clean == "." || clean == ".." {
        "resume".to_string()
    } else {
        clean.to_string()
    }
}

/// `Content-Disposition: attachment` for `name` (RFC 6266): an ASCII fallback, and the name
/// itself percent-encoded as UTF-8 (RFC 8187).
pub fn attachment(name: &str) -> String {
    let fallback: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    const ATTR: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'!')
        .remove(b'#')
        .remove(b'$')
        .remove(b'&')
        .remove(b'+')
        .remove(b'-')
        .remove(b'.')
        .remove(b'^')
        .remove(b'_')
        .remove(b'`')
        .remove(b'|')
        .remove(b'~');
    let encoded = percent_encoding::utf8_percent_encode(name, ATTR);
    format!("attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_never_becomes_a_path() {
        assert_eq!(display_name(Some("../../etc/passwd")), "passwd");
        assert_eq!(display_name(Some("C:\\Users\\jane\\CV.pdf")), "CV.pdf");
        assert_eq!(display_name(Some("..")), "resume");
        assert_eq!(display_name(Some("a\r\nb.txt")), "ab.txt");
        assert_eq!(display_name(Some("cv\u{202E}fdp.exe\u{2028}")), "cvfdp.exe");
        assert_eq!(display_name(None), "resume");
        assert_eq!(display_name(Some(&"x".repeat(300))).len(), 255);
        assert!(valid_key(&new_key(RESUMES)));
        assert!(!valid_key("resumes/../../etc/passwd"));
        assert!(!valid_key("resumes/"));
    }

    /// Chunks of any size, tiny ones among large ones, are spooled in order: the file and its
    /// hash are the bytes as sent, and tiny chunks are gathered, not held one by one.
    #[tokio::test]
    async fn chunks_of_any_size_are_spooled_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let files = Files::new(
            Arc::new(LocalFiles::open(&dir.path().join("store")).await.unwrap()),
            dir.path().to_path_buf(),
        );
        let mut sent = b"%PDF-1.7\n".to_vec();
        let mut upload = files.upload(8 << 20).unwrap();
        upload.write(Bytes::from(sent.clone())).await.unwrap();
        for round in 0..40u32 {
            for i in 0..3000u32 {
                let byte = Bytes::from(vec![(round * 7 + i) as u8]);
                sent.extend_from_slice(&byte);
                upload.write(byte).await.unwrap();
                assert!(upload.pending.len() <= 2 * WRITE_CHUNK / SMALL_CHUNK + 2);
            }
            let large = Bytes::from(vec![round as u8; SMALL_CHUNK + round as usize]);
            sent.extend_from_slice(&large);
            upload.write(large).await.unwrap();
        }
        let spooled = upload.finish().await.unwrap();
        assert_eq!(spooled.kind, Kind::Pdf);
        assert_eq!(spooled.size, sent.len() as u64);
        assert_eq!(spooled.sha256, hex::encode(Sha256::digest(&sent)));
        assert_eq!(std::fs::read(spooled.path()).unwrap(), sent);
    }

    #[test]
    fn the_disposition_carries_the_name_safely() {
        assert_eq!(
            attachment("Zoë \"CV\".pdf"),
            "attachment; filename=\"Zo_ _CV_.pdf\"; filename*=UTF-8''Zo%C3%AB%20%22CV%22.pdf"
        );
        assert_eq!(
            attachment("cv.pdf\r\nX-Evil: 1"),
            "attachment; filename=\"cv.pdf__X-Evil: 1\"; filename*=UTF-8''cv.pdf%0D%0AX-Evil%3A%201"
        );
    }
}
