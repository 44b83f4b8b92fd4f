//! Applications: applying, listing, the status workflow with its history and outbox event.

use crate::harness::*;
use jobboard::domain::event::{EventKind, parse_event};
use jobboard::domain::{Actor, ApplicationStatus, Conflict, JobStatus, Role, TransitionError};
use jobboard::store::{ApplicationViewer, Page, Store, TokenClaim};
use std::sync::Arc;

crate::each_backend!(
    apply_records_the_submission,
    apply_refuses_twice_closed_and_missing_jobs,
    apply_unread_writes_only_what_needs_no_read,
    list_applications_shows_each_viewer_theirs,
    change_status_writes_history_and_one_event,
    change_status_refuses_what_the_workflow_forbids,
    delete_application_takes_its_history,
);

async fn apply_records_the_submission(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let a = &s.application;
    assert_eq!(a.status(), ApplicationStatus::Submitted);
    assert_eq!(
        (a.job_id, a.job_title.as_str()),
        (s.job.id, "Rust engineer")
    );
    assert_eq!(
        (a.company_id, a.company_name.as_str()),
        (s.company.id, s.company.name.as_str())
    );
    assert_eq!(
        (a.candidate_id, &a.candidate_name, &a.candidate_email),
        (s.candidate.id, &s.candidate.name, &s.candidate.email)
    );
    assert_eq!(a.cover_letter.as_deref(), Some("Hello"));
    assert_eq!(a.created_at, a.updated_at);
    let read = store.application(a.id).await.expect("read");
    assert_eq!((read.status, read.created_at), (a.status, a.created_at));

    let history = store.history(a.id).await.unwrap();
    assert_eq!(history.len(), 1);
    let h = &history[0];
    assert_eq!(h.old_status().unwrap(), None);
    assert_eq!(h.new_status, ApplicationStatus::Submitted);
    assert_eq!(h.changed_by, s.candidate.id);
    assert_eq!(h.at, a.created_at);
    // One event, the candidate's confirmation, with its id on the history row.
    let event_id = h.event_id.clone().expect("a submission emits its event");
    assert_eq!(store.outbox_pending().await.unwrap(), 1);
    let messages = store.queue_receive(10, 60_000).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].event_id.as_deref(), Some(event_id.as_str()));
    let event = parse_event(&messages[0].body).expect("an event");
    assert_eq!(event.event_id, event_id);
    assert_eq!(
        event.kind,
        EventKind::Submitted {
            application_id: a.id
        }
    );
    assert_eq!(event.occurred_at, a.created_at);
    // PostgreSQL's one-statement apply writes the body in SQL: the bytes must be those the
    // process writes for every other event.
    assert_eq!(messages[0].body, event.to_json());

    // No cover letter is stored as none.
    let other = user(&store, Role::Candidate).await;
    let bare = store
        .apply(s.job.id, other.id, Default::default(), None)
        .await
        .unwrap();
    assert_eq!(bare.cover_letter, None);
    assert_not_found(store.application(bare.id + 1000).await);
    assert!(store.history(bare.id + 1000).await.unwrap().is_empty());
}

async fn apply_refuses_twice_closed_and_missing_jobs(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    assert_conflict(
        store
            .apply(s.job.id, s.candidate.id, Default::default(), None)
            .await,
        Conflict::AlreadyApplied,
    );
    let mut closed = job_fields("Closed");
    closed.status = JobStatus::Closed;
    let closed = job(&store, s.company.id, closed).await;
    assert_conflict(
        store
            .apply(closed.id, s.candidate.id, Default::default(), None)
            .await,
        Conflict::JobClosed,
    );
    assert_not_found(
        store
            .apply(closed.id + 1000, s.candidate.id, Default::default(), None)
            .await,
    );
    let (_, total) = store
        .list_applications(
            ApplicationViewer::Candidate(s.candidate.id),
            None,
            None,
            Page::default(),
        )
        .await
        .unwrap();
    assert_eq!(total, 1, "nothing refused was stored");

    // A withdrawn application still counts; a deleted one does not.
    store
        .change_status(
            s.application.id,
            ApplicationStatus::Withdrawn,
            Actor::Candidate,
            s.candidate.id,
            None,
        )
        .await
        .unwrap();
    assert_conflict(
        store
            .apply(s.job.id, s.candidate.id, Default::default(), None)
            .await,
        Conflict::AlreadyApplied,
    );
    store
        .delete_application(s.application.id, None)
        .await
        .unwrap();
    store
        .apply(s.job.id, s.candidate.id, Default::default(), None)
        .await
        .expect("apply again after deleting");
}

/// An apply by an account and to a job the caller has not read: PostgreSQL's one statement
/// writes it when the claim is a candidate's own token generation and the job is open and asks
/// nothing the application lacks, and writes nothing otherwise (the caller then reads the
/// account and the job); SQLite always leaves it to the reads and the transaction.
async fn apply_unread_writes_only_what_needs_no_read(store: Arc<dyn Store>) {
    let employer = user(&store, Role::Employer).await;
    let company = company(&store, employer.id, "Unread").await;
    let candidate = user(&store, Role::Candidate).await;
    let plain = job(&store, company.id, job_fields("Plain")).await;
    let Declining {
        asks,
        wants,
        closed,
    } = declining(&store, company.id).await;
    let letter = jobboard::store::NewApplication {
        cover_letter: Some("Hello".into()),
        ..Default::default()
    };
    let claim = TokenClaim {
        candidate_id: candidate.id,
        generation: candidate.token_generation,
    };
    // Jobs that need a read, then claims that are not a candidate's own: a token of another
    // generation (revoked by a password change), an employer's, an account that is gone.
    let not_own = [
        TokenClaim {
            generation: candidate.token_generation + 1,
            ..claim
        },
        TokenClaim {
            candidate_id: employer.id,
            generation: employer.token_generation,
        },
        TokenClaim {
            candidate_id: candidate.id + employer.id + 1000,
            ..claim
        },
    ];
    let declines = [asks.id, wants.id, closed.id, closed.id + 1000]
        .map(|job| (job, claim))
        .into_iter()
        .chain(not_own.map(|c| (plain.id, c)));
    for (declined, claim) in declines {
        assert!(
            store
                .apply_unread(declined, claim, &letter)
                .await
                .expect("declined, not refused")
                .is_none(),
            "job {declined}, {claim:?}"
        );
    }
    assert_eq!(store.outbox_pending().await.unwrap(), 0, "nothing written");
    let applied = store.apply_unread(plain.id, claim, &letter).await.unwrap();
    // The résumé a job requires, given: the statement attaches it.
    let resume = store
        .create_resume(candidate.id, new_resume("cv.pdf"), 10, None)
        .await
        .unwrap();
    let with_resume = jobboard::store::NewApplication {
        resume_id: Some(resume.id),
        ..Default::default()
    };
    let attached = store
        .apply_unread(wants.id, claim, &with_resume)
        .await
        .unwrap();
    if store.backend() == "postgres" {
        let a = attached.expect("a required résumé, given");
        assert_eq!(a.resume_id, Some(resume.id));
        assert_eq!(a.resume_filename.as_deref(), Some("cv.pdf"));
        let a = applied.expect("one statement, without reading the job");
        assert_eq!((a.job_id, a.candidate_id), (plain.id, candidate.id));
        assert_eq!(a.cover_letter.as_deref(), Some("Hello"));
        assert_eq!(store.outbox_pending().await.unwrap(), 2);
        assert_conflict(
            store.apply_unread(plain.id, claim, &letter).await,
            Conflict::AlreadyApplied,
        );
    } else {
        assert!(
            applied.is_none() && attached.is_none(),
            "SQLite reads the job first"
        );
        assert_eq!(store.outbox_pending().await.unwrap(), 0);
    }
}

async fn list_applications_shows_each_viewer_theirs(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let second_job = job(&store, s.company.id, job_fields("Second")).await;
    let other_candidate = user(&store, Role::Candidate).await;
    let a2 = store
        .apply(second_job.id, s.candidate.id, Default::default(), None)
        .await
        .unwrap();
    let a3 = store
        .apply(second_job.id, other_candidate.id, Default::default(), None)
        .await
        .unwrap();
    store
        .change_status(
            a3.id,
            ApplicationStatus::Reviewing,
            Actor::Employer,
            s.employer.id,
            None,
        )
        .await
        .unwrap();
    // Another company's application, which this employer must not see.
    let other = scenario(&store).await;

    let list = |viewer, job_id, status, page| {
        let store = store.clone();
        async move {
            let (rows, total) = store
                .list_applications(viewer, job_id, status, page)
                .await
                .expect("list");
            (rows.iter().map(|r| r.id).collect::<Vec<_>>(), total)
        }
    };
    let all = Page::default();
    let employer = ApplicationViewer::Employer(s.employer.id);
    // Newest first.
    assert_eq!(
        list(employer, None, None, all).await,
        (vec![a3.id, a2.id, s.application.id], 3)
    );
    assert_eq!(
        list(
            ApplicationViewer::Candidate(s.candidate.id),
            None,
            None,
            all
        )
        .await,
        (vec![a2.id, s.application.id], 2)
    );
    assert_eq!(
        list(employer, Some(second_job.id), None, all).await,
        (vec![a3.id, a2.id], 2)
    );
    assert_eq!(
        list(employer, None, Some(ApplicationStatus::Reviewing), all).await,
        (vec![a3.id], 1)
    );
    assert_eq!(
        list(
            employer,
            Some(s.job.id),
            Some(ApplicationStatus::Reviewing),
            all
        )
        .await,
        (vec![], 0)
    );
    let two = |page| Page { page, size: 2 };
    assert_eq!(
        list(employer, None, None, two(1)).await,
        (vec![a3.id, a2.id], 3)
    );
    assert_eq!(
        list(employer, None, None, two(2)).await,
        (vec![s.application.id], 3)
    );
    assert_eq!(list(employer, None, None, two(3)).await, (vec![], 3));
    assert_eq!(
        list(
            ApplicationViewer::Employer(other.employer.id),
            None,
            None,
            all
        )
        .await,
        (vec![other.application.id], 1)
    );
    // A candidate is not an employer of anything, and an employer applied to nothing.
    assert_eq!(
        list(ApplicationViewer::Employer(s.candidate.id), None, None, all).await,
        (vec![], 0)
    );
    assert_eq!(
        list(ApplicationViewer::Candidate(s.employer.id), None, None, all).await,
        (vec![], 0)
    );
}

async fn change_status_writes_history_and_one_event(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let id = s.application.id;
    let s_event = store.history(id).await.unwrap()[0].event_id.clone();
    let change = store
        .change_status(
            id,
            ApplicationStatus::Reviewing,
            Actor::Employer,
            s.employer.id,
            None,
        )
        .await
        .expect("move");
    let event_id = change.event_id.expect("a move emits an event");
    assert_eq!(change.application.status(), ApplicationStatus::Reviewing);
    assert!(change.application.updated_at > s.application.updated_at);
    assert_eq!(
        store.application(id).await.unwrap().status(),
        ApplicationStatus::Reviewing
    );

    let history = store.history(id).await.unwrap();
    assert_eq!(history.len(), 2);
    let h = &history[1];
    assert_eq!(
        (h.old_status().unwrap(), h.new_status),
        (
            Some(ApplicationStatus::Submitted),
            ApplicationStatus::Reviewing
        )
    );
    assert_eq!(h.changed_by, s.employer.id);
    assert_eq!(h.event_id.as_deref(), Some(event_id.as_str()));
    assert_eq!(h.at, change.application.updated_at);

    // Exactly one event, on the outbox beside the submission's, carrying the move.
    assert_eq!(store.outbox_pending().await.unwrap(), 2);
    let messages: Vec<_> = store
        .queue_receive(10, 60_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|m| m.event_id != s_event)
        .collect();
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].event_id.as_deref(), Some(event_id.as_str()));
    let body: serde_json::Value = serde_json::from_str(&messages[0].body).expect("JSON body");
    assert_eq!(body["type"], "application.status_changed");
    assert_eq!(body["event_id"], event_id.as_str());
    assert_eq!(body["application_id"], id);
    assert_eq!(body["old_status"], "submitted");
    assert_eq!(body["new_status"], "reviewing");

    // Asking for the status it already has is no move: no history, no event.
    let same = store
        .change_status(
            id,
            ApplicationStatus::Reviewing,
            Actor::Employer,
            s.employer.id,
            None,
        )
        .await
        .expect("no move");
    assert_eq!(same.event_id, None);
    assert_eq!(same.application.status(), ApplicationStatus::Reviewing);
    assert_eq!(same.application.updated_at, change.application.updated_at);
    assert_eq!(store.history(id).await.unwrap().len(), 2);
    assert_eq!(store.outbox_pending().await.unwrap(), 2);

    // The candidate withdraws: a second event with an id of its own.
    let withdrawn = store
        .change_status(
            id,
            ApplicationStatus::Withdrawn,
            Actor::Candidate,
            s.candidate.id,
            None,
        )
        .await
        .expect("withdraw");
    let second = withdrawn.event_id.expect("an event");
    assert_ne!(second, event_id);
    assert_eq!(store.outbox_pending().await.unwrap(), 3);
    let history = store.history(id).await.unwrap();
    assert_eq!(history.len(), 3);
    assert_eq!(history[2].changed_by, s.candidate.id);
    assert_eq!(history[2].new_status, ApplicationStatus::Withdrawn);
}

async fn change_status_refuses_what_the_workflow_forbids(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let id = s.application.id;
    let refused = store
        .change_status(
            id,
            ApplicationStatus::Hired,
            Actor::Employer,
            s.employer.id,
            None,
        )
        .await;
    assert_conflict(
        refused,
        Conflict::InvalidTransition(TransitionError {
            from: ApplicationStatus::Submitted,
            to: ApplicationStatus::Hired,
            allowed: vec![ApplicationStatus::Reviewing, ApplicationStatus::Rejected],
        }),
    );
    // Candidates only withdraw.
    assert!(matches!(
        store
            .change_status(
                id,
                ApplicationStatus::Reviewing,
                Actor::Candidate,
                s.candidate.id,
                None
            )
            .await,
        Err(jobboard::store::StoreError::Conflict(
            Conflict::InvalidTransition(_)
        ))
    ));
    store
        .change_status(
            id,
            ApplicationStatus::Rejected,
            Actor::Employer,
            s.employer.id,
            None,
        )
        .await
        .unwrap();
    // A final status allows nothing.
    assert_conflict(
        store
            .change_status(
                id,
                ApplicationStatus::Withdrawn,
                Actor::Candidate,
                s.candidate.id,
                None,
            )
            .await,
        Conflict::InvalidTransition(TransitionError {
            from: ApplicationStatus::Rejected,
            to: ApplicationStatus::Withdrawn,
            allowed: vec![],
        }),
    );
    // Nothing refused was written: the submission and the one rejection, with their events.
    assert_eq!(store.history(id).await.unwrap().len(), 2);
    assert_eq!(store.outbox_pending().await.unwrap(), 2);
    assert_eq!(
        store.application(id).await.unwrap().status(),
        ApplicationStatus::Rejected
    );

    assert_not_found(
        store
            .change_status(
                id + 1000,
                ApplicationStatus::Reviewing,
                Actor::Employer,
                s.employer.id,
                None,
            )
            .await,
    );
}

async fn delete_application_takes_its_history(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let id = s.application.id;
    store
        .change_status(
            id,
            ApplicationStatus::Reviewing,
            Actor::Employer,
            s.employer.id,
            None,
        )
        .await
        .unwrap();
    store.delete_application(id, None).await.expect("delete");
    assert_not_found(store.application(id).await);
    assert!(store.history(id).await.unwrap().is_empty());
    assert_not_found(store.delete_application(id, None).await);
    // The job stays.
    store.job(s.job.id).await.expect("job stays");
}
