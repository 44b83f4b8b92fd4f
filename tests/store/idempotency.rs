//! Idempotency records: claiming a key, replaying its first response, and storing that response
//! in the same transaction as the write it answers.

use crate::harness::*;
use jobboard::domain::{Actor, ApplicationStatus, JobStatus, Role};
use jobboard::store::{
    ApplicationRow, CompanyRow, Completion, IdemBegin, JobRow, KEY_TTL_MS, Page, Store, StoreError,
};
use std::sync::Arc;

crate::each_backend!(
    idem_begin_answers_each_state,
    a_key_whose_lock_ran_out_is_taken_over,
    every_write_stores_its_completion,
    a_taken_over_key_rolls_the_write_back,
    a_refused_write_stores_no_completion,
    old_keys_are_deleted_in_batches,
);

const LOCK_MS: i64 = 60_000;

async fn begin_with(
    store: &Arc<dyn Store>,
    user: i64,
    key: &str,
    hash: &str,
    lock_ms: i64,
) -> IdemBegin {
    store
        .idem_begin(user, "POST", "/things", key, hash, lock_ms, KEY_TTL_MS)
        .await
        .expect("idem_begin")
}

/// Takes `key` for `user`; panics unless it was free.
async fn begin(store: &Arc<dyn Store>, user: i64, key: &str) -> (i64, String) {
    match begin_with(store, user, key, "h", LOCK_MS).await {
        IdemBegin::Started { record_id, token } => (record_id, token),
        other => panic!("expected Started, got {other:?}"),
    }
}

/// What a retry of `key` finds.
async fn retry(store: &Arc<dyn Store>, user: i64, key: &str) -> IdemBegin {
    begin_with(store, user, key, "h", LOCK_MS).await
}

fn replay(status: u16, body: impl Into<String>) -> IdemBegin {
    IdemBegin::Replay {
        status,
        body: body.into(),
    }
}

async fn idem_begin_answers_each_state(store: Arc<dyn Store>) {
    let a = user(&store, Role::Candidate).await.id;
    let b = user(&store, Role::Candidate).await.id;
    let (record, token) = begin(&store, a, "k").await;
    assert_eq!(retry(&store, a, "k").await, IdemBegin::InFlight);
    assert_eq!(
        begin_with(&store, a, "k", "other body", LOCK_MS).await,
        IdemBegin::Mismatch
    );
    // The key is scoped to the user, the method and the route.
    begin(&store, b, "k").await;
    assert!(matches!(
        store
            .idem_begin(a, "PATCH", "/things", "k", "h", LOCK_MS, KEY_TTL_MS)
            .await
            .unwrap(),
        IdemBegin::Started { .. }
    ));
    assert!(matches!(
        store
            .idem_begin(a, "POST", "/others", "k", "h", LOCK_MS, KEY_TTL_MS)
            .await
            .unwrap(),
        IdemBegin::Started { .. }
    ));

    // Only the holder's token completes it.
    store
        .idem_complete(record, "not-the-token", 200, "forged")
        .await
        .unwrap();
    assert_eq!(retry(&store, a, "k").await, IdemBegin::InFlight);
    store
        .idem_complete(record, &token, 422, "{\"e\":1}")
        .await
        .unwrap();
    assert_eq!(retry(&store, a, "k").await, replay(422, "{\"e\":1}"));
    assert_eq!(retry(&store, a, "k").await, replay(422, "{\"e\":1}"));
    assert_eq!(
        begin_with(&store, a, "k", "other body", LOCK_MS).await,
        IdemBegin::Mismatch
    );
    // A completed record is neither completed again nor released.
    store.idem_complete(record, &token, 200, "x").await.unwrap();
    store.idem_release(record, &token).await.unwrap();
    assert_eq!(retry(&store, a, "k").await, replay(422, "{\"e\":1}"));

    // Releasing frees the key, for its holder only.
    let (record, token) = begin(&store, a, "k2").await;
    store.idem_release(record, "not-the-token").await.unwrap();
    assert_eq!(retry(&store, a, "k2").await, IdemBegin::InFlight);
    store.idem_release(record, &token).await.unwrap();
    begin(&store, a, "k2").await;

    // A record older than the time to live is replaced, whatever its state.
    let expired = store
        .idem_begin(a, "POST", "/things", "k", "new body", LOCK_MS, -1000)
        .await
        .unwrap();
    assert!(matches!(expired, IdemBegin::Started { .. }), "{expired:?}");
}

async fn a_key_whose_lock_ran_out_is_taken_over(store: Arc<dyn Store>) {
    let a = user(&store, Role::Candidate).await.id;
    // A request whose lock is already over, as if it had died.
    let IdemBegin::Started {
        record_id: first,
        token: dead,
    } = begin_with(&store, a, "k", "h", -1000).await
    else {
        panic!("free key")
    };
    let (second, token) = begin(&store, a, "k").await;
    assert_eq!(second, first, "the same record, taken over");
    assert_ne!(token, dead);
    assert_eq!(retry(&store, a, "k").await, IdemBegin::InFlight);
    // The dead request's token no longer completes or releases it.
    store.idem_complete(first, &dead, 201, "old").await.unwrap();
    store.idem_release(first, &dead).await.unwrap();
    assert_eq!(retry(&store, a, "k").await, IdemBegin::InFlight);
    store
        .idem_complete(first, &token, 201, "new")
        .await
        .unwrap();
    assert_eq!(retry(&store, a, "k").await, replay(201, "new"));
}

async fn every_write_stores_its_completion(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let u = s.employer.id;
    let done = |_: &()| "done".to_string();
    // Takes a fresh key, runs `$call` with its completion as `$idem`, and checks that a retry
    // replays what `$render` made of the result.
    macro_rules! check {
        ($key:literal, $status:literal, $render:expr, |$idem:ident| $call:expr) => {{
            let (record_id, token) = begin(&store, u, $key).await;
            let completion = Completion {
                record_id,
                token: &token,
                status: $status,
                render: $render,
            };
            let $idem = Some(&completion);
            let out = $call.await.expect($key);
            let IdemBegin::Replay { status, body } = retry(&store, u, $key).await else {
                panic!("{} stored no completion", $key)
            };
            assert_eq!(status, $status, $key);
            (out, body)
        }};
    }

    let (_, body) = check!("password", 204, &done, |idem| store
        .change_password(u, "hash-2", idem));
    assert_eq!(body, "done");
    assert_eq!(store.user_by_id(u).await.unwrap().password_hash, "hash-2");

    let company = |c: &CompanyRow| format!("company {} {}", c.id, c.name);
    let (c, body) = check!("create company", 201, &company, |idem| store
        .create_company(u, company_fields("Initech"), idem));
    assert_eq!(body, format!("company {} Initech", c.id));
    let (c, body) = check!("update company", 200, &company, |idem| store
        .update_company(c.id, company_fields("Initrode"), idem));
    assert_eq!(body, format!("company {} Initrode", c.id));
    let colleague = user(&store, Role::Employer).await;
    let colleague_key = Email::parse(&colleague.email).unwrap();
    check!("add member", 204, &done, |idem| store.add_member(
        c.id,
        &colleague_key,
        idem
    ));
    check!("remove member", 204, &done, |idem| store.remove_member(
        c.id,
        colleague.id,
        idem
    ));
    assert!(!store.is_member(c.id, colleague.id).await.unwrap());
    check!("delete company", 204, &done, |idem| store
        .delete_company(c.id, idem));
    assert_not_found(store.company(c.id).await);

    let job = |j: &JobRow| format!("job {} {}", j.id, j.title);
    let (j, body) = check!("create job", 201, &job, |idem| store.create_job(
        s.company.id,
        job_fields("Tester"),
        idem
    ));
    assert_eq!(body, format!("job {} Tester", j.id));
    let mut renamed = j.fields().unwrap();
    renamed.title = Title::parse("Lead tester").unwrap();
    let (updated, body) = check!("update job", 200, &job, |idem| store.update_job(
        j.id,
        renamed,
        j.updated_at,
        idem
    ));
    assert!(updated.is_some());
    assert_eq!(body, format!("job {} Lead tester", j.id));

    let application = |a: &ApplicationRow| format!("application {} {}", a.id, a.status);
    let candidate = user(&store, Role::Candidate).await;
    let (a, body) = check!("apply", 201, &application, |idem| store.apply(
        j.id,
        candidate.id,
        Default::default(),
        idem
    ));
    assert_eq!(body, format!("application {} submitted", a.id));
    let (change, body) = check!("change status", 200, &application, |idem| store
        .change_status(a.id, ApplicationStatus::Reviewing, Actor::Employer, u, idem));
    assert!(change.event_id.is_some());
    assert_eq!(body, format!("application {} reviewing", a.id));
    // A request for the status it has moves nothing, and its answer is stored all the same.
    let (change, body) = check!("same status", 200, &application, |idem| store
        .change_status(a.id, ApplicationStatus::Reviewing, Actor::Employer, u, idem));
    assert!(change.event_id.is_none());
    assert_eq!(body, format!("application {} reviewing", a.id));
    check!("delete application", 204, &done, |idem| store
        .delete_application(a.id, idem));
    assert_not_found(store.application(a.id).await);
    check!("delete job", 204, &done, |idem| store
        .delete_job(j.id, idem));
    assert_not_found(store.job(j.id).await);
}

/// A completion whose key a retry took over after its lock ran out.
async fn taken_over(store: &Arc<dyn Store>, user: i64, key: &str) -> (i64, String) {
    let IdemBegin::Started { record_id, token } = begin_with(store, user, key, "h", -1000).await
    else {
        panic!("free key")
    };
    begin(store, user, key).await;
    (record_id, token)
}

#[track_caller]
fn assert_refused<T: std::fmt::Debug>(result: Result<T, StoreError>) {
    match result {
        Err(StoreError::Other(e)) => assert!(e.to_string().contains("taken over"), "{e}"),
        other => panic!("expected the write to be refused, got {other:?}"),
    }
}

async fn a_taken_over_key_rolls_the_write_back(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let u = s.employer.id;
    let render_company = |c: &CompanyRow| c.id.to_string();
    let render_job = |j: &JobRow| j.id.to_string();
    let render_application = |a: &ApplicationRow| a.id.to_string();

    let (record_id, token) = taken_over(&store, u, "company").await;
    let completion = Completion {
        record_id,
        token: &token,
        status: 201,
        render: &render_company,
    };
    assert_refused(
        store
            .create_company(u, company_fields("Twice"), Some(&completion))
            .await,
    );
    let (_, total) = store
        .list_companies(Some(u), Page::default())
        .await
        .unwrap();
    assert_eq!(total, 1, "no company was created");

    let (record_id, token) = taken_over(&store, u, "job").await;
    let completion = Completion {
        record_id,
        token: &token,
        status: 200,
        render: &render_job,
    };
    let mut closed = s.job.fields().unwrap();
    closed.status = JobStatus::Closed;
    assert_refused(
        store
            .update_job(s.job.id, closed, s.job.updated_at, Some(&completion))
            .await,
    );
    let read = store.job(s.job.id).await.unwrap();
    assert_eq!(read.fields().unwrap(), s.job.fields().unwrap());
    assert_eq!(read.updated_at, s.job.updated_at);

    let (record_id, token) = taken_over(&store, u, "status").await;
    let completion = Completion {
        record_id,
        token: &token,
        status: 200,
        render: &render_application,
    };
    assert_refused(
        store
            .change_status(
                s.application.id,
                ApplicationStatus::Reviewing,
                Actor::Employer,
                u,
                Some(&completion),
            )
            .await,
    );
    assert_eq!(
        store.application(s.application.id).await.unwrap().status(),
        ApplicationStatus::Submitted
    );
    assert_eq!(store.history(s.application.id).await.unwrap().len(), 1);
    assert_eq!(
        store.outbox_pending().await.unwrap(),
        1,
        "no event but the submission's"
    );

    let (record_id, token) = taken_over(&store, u, "delete").await;
    let done = |_: &()| String::new();
    let completion = Completion {
        record_id,
        token: &token,
        status: 204,
        render: &done,
    };
    assert_refused(
        store
            .delete_application(s.application.id, Some(&completion))
            .await,
    );
    store
        .application(s.application.id)
        .await
        .expect("not deleted");
    // The retry that took the keys over still holds them.
    for key in ["company", "job", "status", "delete"] {
        assert_eq!(retry(&store, u, key).await, IdemBegin::InFlight, "{key}");
    }
}

async fn a_refused_write_stores_no_completion(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let (record_id, token) = begin(&store, s.candidate.id, "apply").await;
    let render = |a: &ApplicationRow| a.id.to_string();
    let completion = Completion {
        record_id,
        token: &token,
        status: 201,
        render: &render,
    };
    assert_conflict(
        store
            .apply(
                s.job.id,
                s.candidate.id,
                Default::default(),
                Some(&completion),
            )
            .await,
        jobboard::domain::Conflict::AlreadyApplied,
    );
    // Still the request's own, for it to complete with the refusal (or release).
    assert_eq!(
        retry(&store, s.candidate.id, "apply").await,
        IdemBegin::InFlight
    );
    store
        .idem_complete(record_id, &token, 409, "already")
        .await
        .unwrap();
    assert_eq!(
        retry(&store, s.candidate.id, "apply").await,
        replay(409, "already")
    );
}

async fn old_keys_are_deleted_in_batches(store: Arc<dyn Store>) {
    let a = user(&store, Role::Candidate).await.id;
    for key in ["a", "b", "c"] {
        begin(&store, a, key).await;
    }
    assert_eq!(store.delete_idempotency_keys(0, 10).await.unwrap(), 0);
    let soon = store.now_ms().await.unwrap() + 1000;
    assert_eq!(store.delete_idempotency_keys(soon, 2).await.unwrap(), 2);
    assert_eq!(store.delete_idempotency_keys(soon, 2).await.unwrap(), 1);
    assert_eq!(store.delete_idempotency_keys(soon, 2).await.unwrap(), 0);
    // Deleted keys are free again.
    for key in ["a", "b", "c"] {
        begin(&store, a, key).await;
    }
}
