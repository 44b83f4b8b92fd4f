//! Event processing: claims with leases (one and many at once), failures counted up to a dead
//! letter, claims released with nothing counted (the mail service refused the session), redrive
//! and purge, the transaction mode, the email's data, and retention.

use crate::harness::*;
use futures::FutureExt;
use jobboard::domain::event::{Event, EventKind};
use jobboard::domain::mail::{About, Absent, EmailData, Loaded, Recipient, SendError};
use jobboard::domain::{Actor, ApplicationStatus};
use jobboard::store::{
    Claim, FailedClaim, Finished, NewDeadLetter, RedriveResult, Store, TxOutcome,
};
use std::sync::{Arc, Mutex};

crate::each_backend!(
    a_claim_holds_a_lease_until_finished,
    an_expired_lease_is_taken_over,
    failures_count_up_to_dead,
    many_new_events_are_claimed_at_once,
    dead_letters_are_redriven_and_purged,
    transaction_mode_sends_once,
    a_vanished_transaction_holder_is_reclaimed,
    email_data_follows_the_application,
    finished_records_are_deleted_in_batches,
    redrive_traces_last_as_long_as_their_records,
    a_released_claim_counts_no_attempt,
    an_unknown_outcome_keeps_the_claim_to_lapse,
);

const LEASE: i64 = 60_000;

/// Claims `event_id`; panics unless it was claimed.
async fn claim(store: &Arc<dyn Store>, event_id: &str) -> (String, bool, i64) {
    claim_for(store, event_id, LEASE).await
}

async fn claim_for(store: &Arc<dyn Store>, event_id: &str, lease_ms: i64) -> (String, bool, i64) {
    match store.claim_event(event_id, lease_ms).await.expect("claim") {
        Claim::Claimed {
            lease_id,
            reclaimed,
            attempts,
        } => (lease_id, reclaimed, attempts),
        other => panic!("expected a claim on {event_id}, got {other:?}"),
    }
}

async fn a_claim_holds_a_lease_until_finished(store: Arc<dyn Store>) {
    let (lease, reclaimed, attempts) = claim(&store, "ev-1").await;
    assert!(!reclaimed);
    assert_eq!(attempts, 0);
    match store.claim_event("ev-1", LEASE).await.unwrap() {
        Claim::Deferred { remaining_ms } => {
            assert!(remaining_ms > 0 && remaining_ms <= LEASE, "{remaining_ms}")
        }
        other => panic!("expected Deferred, got {other:?}"),
    }
    assert!(store.extend_claim("ev-1", &lease, LEASE).await.unwrap());
    assert!(!store.extend_claim("ev-1", "not-ours", LEASE).await.unwrap());
    assert!(!store.extend_claim("ev-2", &lease, LEASE).await.unwrap());
    assert!(
        !store
            .finish_claim("ev-1", "not-ours", Finished::Done)
            .await
            .unwrap()
    );
    assert!(
        store
            .finish_claim("ev-1", &lease, Finished::Done)
            .await
            .unwrap()
    );
    assert_eq!(
        store.claim_event("ev-1", LEASE).await.unwrap(),
        Claim::Duplicate
    );
    assert!(
        !store
            .finish_claim("ev-1", &lease, Finished::Done)
            .await
            .unwrap(),
        "finished once"
    );
    assert!(!store.extend_claim("ev-1", &lease, LEASE).await.unwrap());

    // A missing application ends the event the same way.
    let (lease, ..) = claim(&store, "ev-2").await;
    assert!(
        store
            .finish_claim("ev-2", &lease, Finished::Missing)
            .await
            .unwrap()
    );
    assert_eq!(
        store.claim_event("ev-2", LEASE).await.unwrap(),
        Claim::Duplicate
    );
}

async fn an_expired_lease_is_taken_over(store: Arc<dyn Store>) {
    // A claim whose lease is already over, as if its worker had died.
    let (old, ..) = claim_for(&store, "ev", -1000).await;
    let (new, reclaimed, attempts) = claim(&store, "ev").await;
    assert!(reclaimed, "taken over from a lease that ran out");
    assert_eq!(attempts, 0);
    assert_ne!(new, old);
    // The old holder can no longer touch it.
    assert!(!store.extend_claim("ev", &old, LEASE).await.unwrap());
    assert!(
        !store
            .finish_claim("ev", &old, Finished::Done)
            .await
            .unwrap()
    );
    assert_eq!(
        store
            .fail_claim("ev", &old, "late", 3, false)
            .await
            .unwrap(),
        None
    );
    assert!(
        store
            .finish_claim("ev", &new, Finished::Done)
            .await
            .unwrap()
    );
}

/// A send whose outcome is unknown counts its attempt but keeps the claim: a live lease defers
/// the retry, and once it lapses the retry is a takeover (a counted reclaim), never a plain
/// claim; the last allowed attempt makes the event dead as any failure does.
async fn an_unknown_outcome_keeps_the_claim_to_lapse(store: Arc<dyn Store>) {
    let (lease, ..) = claim(&store, "ev").await;
    assert_eq!(
        store
            .keep_failed_claim("ev", "not-ours", "timed out", 2)
            .await
            .unwrap(),
        None
    );
    let kept = store
        .keep_failed_claim("ev", &lease, "timed out", 2)
        .await
        .unwrap()
        .expect("our lease");
    assert_eq!((kept.attempts, kept.dead), (1, false));
    assert!(
        matches!(
            store.claim_event("ev", LEASE).await.unwrap(),
            Claim::Deferred { .. }
        ),
        "the lease still runs"
    );
    // A lease that has already lapsed when the send gives up.
    let (lease, ..) = claim_for(&store, "ev-2", -1000).await;
    store
        .keep_failed_claim("ev-2", &lease, "timed out", 2)
        .await
        .unwrap()
        .expect("our lease, lapsed but not taken");
    let (lease, reclaimed, attempts) = claim(&store, "ev-2").await;
    assert_eq!((reclaimed, attempts), (true, 1), "a takeover, counted");
    let last = store
        .keep_failed_claim("ev-2", &lease, "timed out", 2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((last.attempts, last.dead), (2, true), "max attempts");
    assert_eq!(store.claim_event("ev-2", LEASE).await.unwrap(), Claim::Dead);
}

async fn failures_count_up_to_dead(store: Arc<dyn Store>) {
    let (lease, ..) = claim(&store, "ev").await;
    assert_eq!(
        store
            .fail_claim("ev", "not-ours", "x", 3, false)
            .await
            .unwrap(),
        None
    );
    let first = store
        .fail_claim("ev", &lease, "timeout", 3, false)
        .await
        .unwrap()
        .expect("our lease");
    assert_eq!((first.attempts, first.dead), (1, false));
    assert!(first.first_failed_at > 0);
    // Released: claimable at once, not as a takeover, with the attempts so far.
    let (lease, reclaimed, attempts) = claim(&store, "ev").await;
    assert_eq!((reclaimed, attempts), (false, 1));
    let second = store
        .fail_claim("ev", &lease, "timeout", 3, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        second,
        FailedClaim {
            attempts: 2,
            dead: false,
            first_failed_at: first.first_failed_at
        }
    );
    let (lease, _, attempts) = claim(&store, "ev").await;
    assert_eq!(attempts, 2);
    let third = store
        .fail_claim("ev", &lease, "timeout", 3, false)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((third.attempts, third.dead), (3, true), "max attempts");
    assert_eq!(store.claim_event("ev", LEASE).await.unwrap(), Claim::Dead);

    // A permanent failure is dead at once.
    let (lease, ..) = claim(&store, "perm").await;
    let failed = store
        .fail_claim("perm", &lease, "550 no such user", 10, true)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((failed.attempts, failed.dead), (1, true));
    assert_eq!(store.claim_event("perm", LEASE).await.unwrap(), Claim::Dead);

    // Forgetting a dead event's failures lets a redriven copy start from zero; finished events
    // are not forgotten.
    store.reset_dead_event("perm").await.unwrap();
    assert_eq!(claim(&store, "perm").await.2, 0);
    let (lease, ..) = claim(&store, "done").await;
    store
        .finish_claim("done", &lease, Finished::Done)
        .await
        .unwrap();
    store.reset_dead_event("done").await.unwrap();
    assert_eq!(
        store.claim_event("done", LEASE).await.unwrap(),
        Claim::Duplicate
    );
}

async fn many_new_events_are_claimed_at_once(store: Arc<dyn Store>) {
    let (held, ..) = claim(&store, "a").await;
    let (lease, ..) = claim(&store, "done").await;
    store
        .finish_claim("done", &lease, Finished::Done)
        .await
        .unwrap();

    let ids = ["a", "b", "c", "done"].map(String::from);
    let (lease, mut claimed) = store.claim_new_events(&ids, LEASE).await.expect("claim");
    claimed.sort();
    assert_eq!(claimed, ["b", "c"], "only ids with no record yet");
    assert_ne!(lease, held);
    match store.claim_event("b", LEASE).await.unwrap() {
        Claim::Deferred { .. } => {}
        other => panic!("b is leased: {other:?}"),
    }
    let (_, none) = store.claim_new_events(&[], LEASE).await.unwrap();
    assert!(none.is_empty());

    let mut finished = store
        .finish_claims(&ids, &lease, Finished::Done)
        .await
        .expect("finish");
    finished.sort();
    assert_eq!(finished, ["b", "c"], "only the ids under this lease");
    assert_eq!(
        store.claim_event("b", LEASE).await.unwrap(),
        Claim::Duplicate
    );
    assert!(matches!(
        store.claim_event("a", LEASE).await.unwrap(),
        Claim::Deferred { .. }
    ));
    assert!(
        store
            .finish_claims(&ids, &lease, Finished::Missing)
            .await
            .unwrap()
            .is_empty(),
        "finished once"
    );
    assert!(
        store
            .finish_claims(&[], &lease, Finished::Done)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .finish_claim("a", &held, Finished::Done)
            .await
            .unwrap()
    );
}

fn letter(event_id: Option<&str>) -> NewDeadLetter {
    NewDeadLetter {
        event_id: event_id.map(str::to_string),
        reason: "failed".to_string(),
        attempts: 3,
        body: format!("body {event_id:?}"),
        first_failed_at: None,
        invalid: false,
    }
}

/// Puts a message on the queue and moves it to the dead letters at once.
async fn dead_letter(store: &Arc<dyn Store>, event_id: Option<&str>) {
    let id = store.queue_enqueue(event_id, None, "b").await.unwrap();
    // Received with no visibility, so that other waiting messages stay visible.
    let m = store
        .queue_receive(100, -1000)
        .await
        .unwrap()
        .into_iter()
        .find(|m| m.id == id)
        .expect("the new message");
    store
        .queue_dead_letter(m.id, &m.receipt, letter(event_id))
        .await
        .unwrap();
}

async fn dead_letters_are_redriven_and_purged(store: Arc<dyn Store>) {
    // "ev" died after its attempts ran out; the other letter has no usable event id.
    let (lease, ..) = claim(&store, "ev").await;
    store
        .fail_claim("ev", &lease, "boom", 1, false)
        .await
        .unwrap();
    dead_letter(&store, Some("ev")).await;
    dead_letter(&store, None).await;
    let letters = store.dead_letters().await.unwrap();
    assert_eq!(letters.len(), 2);
    assert_eq!(store.outbox_pending().await.unwrap(), 0);

    let result = store.redrive(None, false).await.expect("redrive");
    assert_eq!(
        result,
        RedriveResult {
            redriven: 1,
            not_found: 0,
            skipped_invalid: 1
        }
    );
    let left = store.dead_letters().await.unwrap();
    assert_eq!(
        left.iter().map(|d| d.id).collect::<Vec<_>>(),
        [letters[1].id]
    );
    // Back on the queue with its body, and its attempts start again.
    let m = store.queue_receive(10, 60_000).await.unwrap();
    assert_eq!(m.len(), 1);
    assert_eq!(
        (m[0].event_id.as_deref(), m[0].body.as_str()),
        (Some("ev"), "body Some(\"ev\")")
    );
    assert_eq!(claim(&store, "ev").await.2, 0);
    assert!(store.queue_ack(m[0].id, &m[0].receipt).await.unwrap());

    let result = store
        .redrive(Some(&[letters[1].id, 9_999]), true)
        .await
        .unwrap();
    assert_eq!(
        result,
        RedriveResult {
            redriven: 1,
            not_found: 1,
            skipped_invalid: 0
        }
    );
    assert!(store.dead_letters().await.unwrap().is_empty());
    assert_eq!(store.outbox_pending().await.unwrap(), 1);
    assert_eq!(
        store.redrive(None, true).await.unwrap(),
        RedriveResult::default()
    );

    for id in ["x", "y", "z"] {
        dead_letter(&store, Some(id)).await;
    }
    let ids: Vec<i64> = store
        .dead_letters()
        .await
        .unwrap()
        .iter()
        .map(|d| d.id)
        .collect();
    assert_eq!(
        store
            .purge_dead_letters(Some(&[ids[0], 9_999]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(store.dead_letters().await.unwrap().len(), 2);
    assert_eq!(store.purge_dead_letters(None).await.unwrap(), 2);
    assert!(store.dead_letters().await.unwrap().is_empty());
    assert_eq!(store.purge_dead_letters(None).await.unwrap(), 0);
}

/// A send that records what it was given and answers `result`.
fn sender(
    calls: &Arc<Mutex<Vec<(EmailData, i64)>>>,
    result: Result<(), SendError>,
) -> jobboard::store::SendFn<'static> {
    let calls = calls.clone();
    Box::new(move |data, claim| {
        calls.lock().unwrap().push((data, claim.attempts));
        async move { result }.boxed()
    })
}

/// Moves the scenario's application on, returning the new event.
async fn status_event(store: &Arc<dyn Store>, s: &Scenario, to: ApplicationStatus) -> Event {
    let from = store.application(s.application.id).await.unwrap().status();
    let event_id = store
        .change_status(s.application.id, to, Actor::Employer, s.employer.id, None)
        .await
        .unwrap()
        .event_id
        .expect("an event");
    Event {
        event_id,
        occurred_at: chrono::Utc::now(),
        kind: EventKind::StatusChanged {
            application_id: s.application.id,
            old_status: from,
            new_status: to,
        },
    }
}

/// The candidate's email data for the scenario's application.
fn candidate_data(s: &Scenario, company: &str) -> Loaded {
    Loaded::Ready(EmailData {
        to: Recipient {
            user_id: s.candidate.id,
            email: s.candidate.email.clone(),
            name: s.candidate.name.clone(),
        },
        about: About::Application {
            job_title: s.job.title.clone(),
            company: company.to_string(),
            resume: None,
        },
    })
}

async fn transaction_mode_sends_once(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let calls = Arc::new(Mutex::new(Vec::new()));
    let ev = status_event(&store, &s, ApplicationStatus::Reviewing).await;

    let out = store
        .process_in_transaction(&ev, 3, sender(&calls, Ok(())))
        .await
        .expect("process");
    assert_eq!(out, TxOutcome::Sent);
    {
        let calls = calls.lock().unwrap();
        assert_eq!(calls.len(), 1);
        let (data, attempts) = &calls[0];
        assert_eq!(*attempts, 0);
        assert_eq!(
            Loaded::Ready(data.clone()),
            candidate_data(&s, &s.company.name)
        );
    }
    let out = store
        .process_in_transaction(&ev, 3, sender(&calls, Ok(())))
        .await
        .unwrap();
    assert_eq!(out, TxOutcome::Duplicate);
    assert_eq!(calls.lock().unwrap().len(), 1, "not sent twice");
    assert_eq!(
        store.claim_event(&ev.event_id, LEASE).await.unwrap(),
        Claim::Duplicate
    );

    // A failed send rolls the claim back and counts the attempt; the next try sees it.
    let ev = status_event(&store, &s, ApplicationStatus::Interview).await;
    let out = store
        .process_in_transaction(
            &ev,
            3,
            sender(&calls, Err(SendError::Transient("421".into()))),
        )
        .await
        .unwrap();
    let TxOutcome::Failed { failure, error } = out else {
        panic!("expected Failed, got {out:?}")
    };
    assert_eq!((failure.attempts, failure.dead), (1, false));
    assert_eq!(error, SendError::Transient("421".into()));
    let out = store
        .process_in_transaction(&ev, 3, sender(&calls, Ok(())))
        .await
        .unwrap();
    assert_eq!(out, TxOutcome::Sent);
    assert_eq!(
        calls.lock().unwrap().last().unwrap().1,
        1,
        "attempts so far"
    );

    // A permanent failure, or the last attempt, is dead; a dead event is not sent again.
    let ev = status_event(&store, &s, ApplicationStatus::Offered).await;
    let out = store
        .process_in_transaction(
            &ev,
            3,
            sender(&calls, Err(SendError::Permanent("550".into()))),
        )
        .await
        .unwrap();
    assert!(
        matches!(&out, TxOutcome::Failed { failure, .. } if failure.dead && failure.attempts == 1),
        "{out:?}"
    );
    let sent = calls.lock().unwrap().len();
    let out = store
        .process_in_transaction(&ev, 3, sender(&calls, Ok(())))
        .await
        .unwrap();
    assert_eq!(out, TxOutcome::Dead);
    assert_eq!(calls.lock().unwrap().len(), sent);
    let ev = status_event(&store, &s, ApplicationStatus::Hired).await;
    let out = store
        .process_in_transaction(
            &ev,
            1,
            sender(&calls, Err(SendError::Transient("421".into()))),
        )
        .await
        .unwrap();
    assert!(
        matches!(&out, TxOutcome::Failed { failure, .. } if failure.dead),
        "{out:?}"
    );

    // An event whose application is gone ends as missing, without a send.
    let other = scenario(&store).await;
    let ev = status_event(&store, &other, ApplicationStatus::Reviewing).await;
    store
        .delete_application(other.application.id, None)
        .await
        .unwrap();
    let sent = calls.lock().unwrap().len();
    let out = store
        .process_in_transaction(&ev, 3, sender(&calls, Ok(())))
        .await
        .unwrap();
    assert_eq!(out, TxOutcome::Missing(Absent::Gone));
    assert_eq!(calls.lock().unwrap().len(), sent);
    let out = store
        .process_in_transaction(&ev, 3, sender(&calls, Ok(())))
        .await
        .unwrap();
    assert_eq!(out, TxOutcome::Duplicate);
}

async fn email_data_follows_the_application(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let other = scenario(&store).await;
    let ev = status_event(&store, &s, ApplicationStatus::Reviewing).await;
    let other_ev = status_event(&store, &other, ApplicationStatus::Rejected).await;
    let want = candidate_data(&s, &s.company.name);
    assert_eq!(store.email_data(&ev).await.unwrap(), want);
    let unknown = Event {
        event_id: "unknown".into(),
        ..ev.clone()
    };
    let gone = Loaded::Missing(Absent::Gone);
    assert_eq!(store.email_data(&unknown).await.unwrap(), gone);
    // A hand-made copy naming another application than the one its id wrote.
    let misnamed = Event {
        kind: EventKind::StatusChanged {
            application_id: other.application.id,
            old_status: ApplicationStatus::Submitted,
            new_status: ApplicationStatus::Reviewing,
        },
        ..ev.clone()
    };
    assert_eq!(store.email_data(&misnamed).await.unwrap(), gone);

    let mut got = store
        .email_data_many(&[
            ev.clone(),
            other_ev.clone(),
            unknown.clone(),
            misnamed.clone(),
        ])
        .await
        .unwrap();
    let other_data = store.email_data(&other_ev).await.unwrap();
    assert_eq!(other_data, candidate_data(&other, &other.company.name));
    let mut want_many = vec![
        (ev.event_id.clone(), want.clone()),
        (other_ev.event_id.clone(), other_data),
        ("unknown".to_string(), gone.clone()),
        (ev.event_id.clone(), gone.clone()),
    ];
    got.sort_by(|a, b| (&a.0, format!("{:?}", a.1)).cmp(&(&b.0, format!("{:?}", b.1))));
    want_many.sort_by(|a, b| (&a.0, format!("{:?}", a.1)).cmp(&(&b.0, format!("{:?}", b.1))));
    assert_eq!(got, want_many);
    assert!(store.email_data_many(&[]).await.unwrap().is_empty());

    // The data is read at send time: a rename shows, a deletion leaves nothing.
    store
        .update_company(s.company.id, company_fields("Renamed"), None)
        .await
        .unwrap();
    assert_eq!(
        store.email_data(&ev).await.unwrap(),
        candidate_data(&s, "Renamed")
    );
    store
        .delete_application(s.application.id, None)
        .await
        .unwrap();
    assert_eq!(store.email_data(&ev).await.unwrap(), gone);
    assert_eq!(
        store
            .email_data_many(std::slice::from_ref(&ev))
            .await
            .unwrap(),
        vec![(ev.event_id.clone(), gone)]
    );
}

async fn finished_records_are_deleted_in_batches(store: Arc<dyn Store>) {
    for (id, finished) in [("done", Finished::Done), ("missing", Finished::Missing)] {
        let (lease, ..) = claim(&store, id).await;
        store.finish_claim(id, &lease, finished).await.unwrap();
    }
    let (lease, ..) = claim(&store, "dead").await;
    store
        .fail_claim("dead", &lease, "x", 1, true)
        .await
        .unwrap();
    let (lease, ..) = claim(&store, "pending").await;
    store
        .fail_claim("pending", &lease, "x", 5, false)
        .await
        .unwrap();
    claim(&store, "leased").await;

    assert_eq!(store.delete_processed_events(0, 10).await.unwrap(), 0);
    let soon = store.now_ms().await.unwrap() + 1000;
    assert_eq!(store.delete_processed_events(soon, 2).await.unwrap(), 2);
    assert_eq!(
        store.delete_processed_events(soon, 10).await.unwrap(),
        1,
        "only finished and dead records"
    );
    // The deleted ones are forgotten: a new copy of such an event is claimed afresh.
    for id in ["done", "missing", "dead"] {
        assert_eq!(claim(&store, id).await.2, 0, "{id}");
    }
    // The others keep their state.
    assert_eq!(claim(&store, "pending").await.2, 1);
    assert!(matches!(
        store.claim_event("leased", LEASE).await.unwrap(),
        Claim::Deferred { .. }
    ));
}

/// A redrive leaves a trace in the event's story (how many, the failed sends they forgot, when);
/// retention deletes a trace once its event has no processed-event record left, never before.
async fn redrive_traces_last_as_long_as_their_records(store: Arc<dyn Store>) {
    // Each dead after a failed send, and redriven: "sent" is then sent; "kept" fails again and
    // waits for a retry; "waiting" is redriven once more, its copy not yet taken.
    for id in ["sent", "kept", "waiting"] {
        let (lease, ..) = claim(&store, id).await;
        store.fail_claim(id, &lease, "x", 1, true).await.unwrap();
        dead_letter(&store, Some(id)).await;
    }
    let before = store.now_ms().await.unwrap();
    assert_eq!(store.redrive(None, false).await.unwrap().redriven, 3);
    let (lease, ..) = claim(&store, "sent").await;
    store
        .finish_claim("sent", &lease, Finished::Done)
        .await
        .unwrap();
    let (lease, ..) = claim(&store, "kept").await;
    store
        .fail_claim("kept", &lease, "x", 5, false)
        .await
        .unwrap();
    // The SQS queue notes its redrives itself, at the time it gives.
    store
        .note_redrive("waiting", 2, Some(before + 5))
        .await
        .unwrap();

    let trace = |id: &'static str| {
        let store = store.clone();
        async move {
            store
                .event_story(id)
                .await
                .unwrap()
                .redrive
                .map(|r| (r.redrives, r.attempts_before, r.last_redriven_at))
        }
    };
    let (n, attempts, at) = trace("sent").await.expect("a trace");
    assert_eq!(
        (n, attempts),
        (1, 3),
        "one redrive, of a letter that counted 3"
    );
    assert!(
        at >= before,
        "{at} is the redrive's time, on the database's clock"
    );
    assert_eq!(trace("waiting").await, Some((2, 5, before + 5)));
    assert!(trace("kept").await.is_some());

    // A cutoff before the redrives deletes nothing. A later one deletes the record of "sent"
    // and its trace with it, and the trace of "waiting", which has no record; "kept" waits for
    // a retry, so its record stays, and its trace.
    assert_eq!(
        store
            .delete_processed_events(before - 1000, 10)
            .await
            .unwrap(),
        0
    );
    let soon = store.now_ms().await.unwrap() + 1000;
    assert_eq!(store.delete_processed_events(soon, 10).await.unwrap(), 3);
    assert_eq!(trace("sent").await, None);
    assert_eq!(trace("waiting").await, None);
    assert!(trace("kept").await.is_some());
    assert!(store.event_story("sent").await.unwrap().is_unknown());
    assert_eq!(store.delete_processed_events(soon, 10).await.unwrap(), 0);
}

/// A `transaction`-mode holder that vanishes mid-send (its transaction never commits) leaves
/// its mark: the next claim, in either mode, reports the takeover. A claim with no such past
/// does not.
async fn a_vanished_transaction_holder_is_reclaimed(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let noting = |result: Result<(), SendError>| -> jobboard::store::SendFn<'static> {
        let seen = seen.clone();
        Box::new(move |_data, claim| {
            seen.lock().unwrap().push(claim);
            async move { result }.boxed()
        })
    };
    let ev = status_event(&store, &s, ApplicationStatus::Reviewing).await;
    abandon_mid_send(&store, &ev).await;
    let out = store
        .process_in_transaction(&ev, 3, noting(Ok(())))
        .await
        .expect("process");
    assert_eq!(out, TxOutcome::Sent);
    assert_eq!(
        seen.lock().unwrap().last().map(|c| c.reclaimed),
        Some(true),
        "the takeover is reported"
    );

    // In lease mode too.
    let ev = status_event(&store, &s, ApplicationStatus::Interview).await;
    abandon_mid_send(&store, &ev).await;
    let (_, reclaimed, _) = claim(&store, &ev.event_id).await;
    assert!(reclaimed, "a lease-mode claim reports it too");

    // A new event, and one whose earlier send failed and was counted, are no takeovers.
    let ev = status_event(&store, &s, ApplicationStatus::Offered).await;
    let out = store
        .process_in_transaction(&ev, 3, noting(Err(SendError::Transient("451".into()))))
        .await
        .unwrap();
    assert!(matches!(out, TxOutcome::Failed { .. }), "{out:?}");
    store
        .process_in_transaction(&ev, 3, noting(Ok(())))
        .await
        .unwrap();
    let seen = seen.lock().unwrap();
    let last_two: Vec<bool> = seen.iter().rev().take(2).map(|c| c.reclaimed).collect();
    assert_eq!(last_two, vec![false, false]);
}

/// Starts a transaction-mode send that never ends and abandons it, as a killed worker does.
async fn abandon_mid_send(store: &Arc<dyn Store>, event: &Event) {
    let hangs: jobboard::store::SendFn<'static> =
        Box::new(|_data, _claim| futures::future::pending().boxed());
    let abandoned = tokio::time::timeout(
        std::time::Duration::from_millis(200),
        store.process_in_transaction(event, 3, hangs),
    )
    .await;
    assert!(abandoned.is_err(), "the send was abandoned");
}

/// The mail service refused the session: the claim is released, in either mode, with its
/// attempts as they were and the reason noted, and claimable again at once.
async fn a_released_claim_counts_no_attempt(store: Arc<dyn Store>) {
    let (lease, ..) = claim(&store, "ev").await;
    store
        .fail_claim("ev", &lease, "451 later", 5, false)
        .await
        .unwrap()
        .expect("our lease");
    let (lease, ..) = claim(&store, "ev").await;
    let refused = "mail service unavailable: 535 credentials refused";
    assert!(
        !store
            .release_claim("ev", Some("not-ours"), refused)
            .await
            .unwrap()
    );
    assert!(
        !store.release_claim("ev", None, refused).await.unwrap(),
        "a lease is not a transaction's mark"
    );
    assert!(
        store
            .release_claim("ev", Some(&lease), refused)
            .await
            .unwrap()
    );
    let (lease, reclaimed, attempts) = claim(&store, "ev").await;
    assert_eq!((reclaimed, attempts), (false, 1), "nothing more counted");
    assert!(
        store
            .finish_claim("ev", &lease, Finished::Done)
            .await
            .unwrap()
    );
    assert!(
        !store
            .release_claim("ev", Some(&lease), refused)
            .await
            .unwrap(),
        "a finished claim stays finished"
    );

    // Transaction mode: the mark goes back to pending, nothing counted, not a takeover.
    let s = scenario(&store).await;
    let ev = status_event(&store, &s, ApplicationStatus::Reviewing).await;
    let calls = Arc::new(Mutex::new(Vec::new()));
    let error = SendError::Unavailable("535 credentials refused".into());
    let out = store
        .process_in_transaction(&ev, 3, sender(&calls, Err(error.clone())))
        .await
        .unwrap();
    assert_eq!(out, TxOutcome::Released { error });
    let (lease, reclaimed, attempts) = claim(&store, &ev.event_id).await;
    assert_eq!((reclaimed, attempts), (false, 0));
    assert!(
        store
            .finish_claim(&ev.event_id, &lease, Finished::Done)
            .await
            .unwrap()
    );
}
