//! The upkeep's part of the files beside the database (DESIGN.md, "Files beside the database"):
//! a résumé attached to no application and unused for `APPLICATION_RETENTION_DAYS` goes with its
//! file, and a file that no row names a day after it was written (a crash between the file and
//! its row, or a deletion whose file delete failed) is deleted, with the spool's leftovers.

use super::Worker;
use crate::files::{Files, RESUMES};
use crate::telemetry as t;
use std::time::Duration;

/// How long a file may be without a row before the sweep deletes it: far longer than an upload
/// takes from its file to its row's commit, and than the clocks of the file store and the
/// database (which judges it, as every worker's period) can differ.
pub const ORPHAN_AFTER: Duration = Duration::from_secs(86_400);
/// Keys read (and asked about) at once.
const PAGE: usize = 500;

/// What the upkeep keeps and for how long.
pub(super) struct Keep {
    /// `APPLICATION_RETENTION_DAYS`; `None` (0) keeps applications until they are deleted.
    pub(super) applications: Option<Duration>,
    /// The file store, for the sweep (a worker built without one sweeps nothing).
    pub(super) files: Option<Files>,
}

impl Keep {
    pub(super) fn from_config(config: &crate::config::Config) -> Keep {
        Keep {
            applications: (config.application_retention_days > 0)
                .then(|| Duration::from_secs(config.application_retention_days * 86_400)),
            files: None,
        }
    }
}

impl Worker {
    /// The worker with its file store: the retention deletes résumés' files, the sweep orphans.
    pub fn with_files(mut self, files: Files) -> Worker {
        self.keep.files = Some(files);
        self
    }

    /// Deletes the résumés past the retention (in batches) and their files, then the files no
    /// row names that were written over [`ORPHAN_AFTER`] ago; how many résumés and files went.
    pub async fn delete_unused_files(&self) -> anyhow::Result<(u64, u64)> {
        let Some(files) = &self.keep.files else {
            return Ok((0, 0));
        };
        let mut resumes = 0;
        if let Some(retention) = self.keep.applications {
            let keys = crate::store::upkeep::delete_unused_resumes(&*self.store, retention).await?;
            resumes = keys.len() as u64;
            for key in keys {
                // A failed delete leaves a file no row names: the sweep below, or the next one.
                if let Err(e) = files.store.delete(&key).await {
                    tracing::warn!(key = %key, "a résumé's file was not deleted: {e:#}");
                }
            }
        }
        let swept = self
            .sweep_files_before(self.database_now().await? - ORPHAN_AFTER)
            .await?;
        metrics::counter!(t::FILES_DELETED_TOTAL, "reason" => "retention").increment(resumes);
        Ok((resumes, swept))
    }

    /// Deletes the files no row names that were written before `before`, and the spool's
    /// leftovers as old; how many.
    pub async fn sweep_files_before(
        &self,
        before: chrono::DateTime<chrono::Utc>,
    ) -> anyhow::Result<u64> {
        let Some(files) = &self.keep.files else {
            return Ok(0);
        };
        let mut swept = 0;
        let mut after: Option<String> = None;
        loop {
            let keys = files
                .store
                .list_before(RESUMES, before, after.as_deref(), PAGE)
                .await?;
            let named = self.store.named_keys(&keys).await?;
            for key in keys.iter().filter(|k| !named.contains(k)) {
                files.store.delete(key).await?;
                tracing::info!(key = %key, "deleted a file that no résumé names");
                swept += 1;
            }
            if keys.len() < PAGE {
                break;
            }
            after = keys.last().cloned();
        }
        let spool = files.sweep_spool(before).await?;
        metrics::counter!(t::FILES_DELETED_TOTAL, "reason" => "orphan").increment(swept + spool);
        Ok(swept + spool)
    }
}
