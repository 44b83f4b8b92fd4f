//! The job-change log commits in `seq` order (on PostgreSQL, thanks to the advisory lock every
//! job write takes just before its log row and holds to its commit): a follower that reads
//! `job_changes_after(applied)` in small batches and moves `applied` to the last seq it read,
//! while many writers commit, never skips a change. Without the lock, a writer that drew a
//! smaller seq but committed after one with a larger seq was read would be skipped for good.

use crate::harness::*;
use jobboard::store::Store;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

crate::each_backend!(a_follower_reading_while_many_writers_commit_sees_every_change);

const WRITERS: usize = 16;
const WRITES: usize = 50;

async fn a_follower_reading_while_many_writers_commit_sees_every_change(store: Arc<dyn Store>) {
    let owner = user(&store, jobboard::domain::Role::Employer).await;
    let company = company(&store, owner.id, "Acme").await;
    let start = store.newest_job_change().await.unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let follower = {
        let store = store.clone();
        let done = done.clone();
        tokio::spawn(async move {
            let mut applied = start;
            let mut seen = BTreeSet::new();
            loop {
                // Read whether the writers are done before reading: an empty read after they
                // all committed means nothing is left.
                let finished = done.load(Ordering::SeqCst);
                let batch = store.job_changes_after(applied, 5).await.unwrap();
                if let Some(last) = batch.last() {
                    applied = last.seq;
                }
                if batch.is_empty() && finished {
                    return seen;
                }
                seen.extend(batch.iter().map(|c| c.seq));
                if batch.is_empty() {
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| {
            let store = store.clone();
            let company = company.id;
            tokio::spawn(async move {
                for i in 0..WRITES {
                    store
                        .create_job(company, job_fields(&format!("Job {w}-{i}")), None)
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let seen = follower.await.unwrap();
    let all: BTreeSet<i64> = store
        .job_changes_after(start, (WRITERS * WRITES * 2) as i64)
        .await
        .unwrap()
        .iter()
        .map(|c| c.seq)
        .collect();
    assert_eq!(all.len(), WRITERS * WRITES);
    let skipped: Vec<&i64> = all.difference(&seen).collect();
    assert!(
        skipped.is_empty(),
        "the follower skipped {} of {} changes: {skipped:?}",
        skipped.len(),
        all.len()
    );
    assert_eq!(seen, all);
}
