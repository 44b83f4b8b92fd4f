//! Résumés: the most a user may keep, decided under a lock on the user, however many uploads
//! name their files at once.

use crate::harness::*;
use jobboard::domain::{Conflict, Role};
use jobboard::store::{Store, StoreError};
use std::sync::Arc;

crate::each_backend!(concurrent_uploads_stop_at_the_most_a_user_may_keep);

async fn concurrent_uploads_stop_at_the_most_a_user_may_keep(store: Arc<dyn Store>) {
    const MAX: i64 = 4;
    // Several candidates, each with three times their room in uploads at once: a count read
    // before another upload of theirs commits would let one of them past the most.
    let mut candidates = Vec::new();
    for _ in 0..8 {
        candidates.push(user(&store, Role::Candidate).await.id);
    }
    let tries: Vec<_> = candidates
        .iter()
        .flat_map(|&c| std::iter::repeat_n(c, 3 * MAX as usize))
        .enumerate()
        .map(|(i, candidate)| {
            let store = store.clone();
            tokio::spawn(async move {
                let stored = store
                    .create_resume(candidate, new_resume(&format!("cv{i}.pdf")), MAX, None)
                    .await;
                (candidate, stored)
            })
        })
        .collect();
    let mut stored = std::collections::HashMap::<i64, i64>::new();
    for t in tries {
        let (candidate, result) = t.await.expect("no panic");
        match result {
            Ok(row) => {
                assert_eq!(row.user_id, candidate);
                *stored.entry(candidate).or_default() += 1;
            }
            Err(StoreError::Conflict(Conflict::TooManyResumes)) => {}
            Err(e) => panic!("neither stored nor refused as too many: {e:?}"),
        }
    }
    for candidate in candidates {
        assert_eq!(
            (
                stored.get(&candidate).copied(),
                store.resume_count(candidate).await.unwrap()
            ),
            (Some(MAX), MAX),
            "exactly the most allowed were stored for candidate {candidate}"
        );
    }
    assert_not_found(
        store
            .create_resume(i64::MAX, new_resume("cv.pdf"), MAX, None)
            .await,
    );
}
