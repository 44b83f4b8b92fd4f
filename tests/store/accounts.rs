//! Users, passwords and the failed-login counters.

use crate::harness::*;
use jobboard::domain::{Conflict, Role};
use jobboard::store::{ApplicationViewer, FailureKind, Page, Store};
use std::sync::Arc;

crate::each_backend!(
    users_are_created_and_found,
    email_keys_are_unique,
    change_password_bumps_the_token_generation,
    delete_user_takes_applications_and_memberships,
    auth_failures_are_counted_per_kind_and_key,
);

async fn users_are_created_and_found(store: Arc<dyn Store>) {
    let new = new_user(Role::Employer);
    let before = jobboard::timefmt::now();
    let created = store.create_user(new.clone()).await.expect("create");
    assert!(created.id > 0);
    assert_eq!(created.email, new.email.as_str(), "stored as given");
    assert_eq!(created.name, new.name);
    assert_eq!(created.role(), Role::Employer);
    assert_eq!(created.password_hash, "hash-1");
    assert!(created.created_at >= before);

    let by_id = store.user_by_id(created.id).await.expect("by id");
    assert_eq!(by_id.email, new.email.as_str());
    assert_eq!(by_id.token_generation, created.token_generation);
    assert_eq!(by_id.created_at, created.created_at);
    let by_key = store
        .user_by_email_key(&new.email.key())
        .await
        .expect("by key");
    assert_eq!(by_key.id, created.id);

    let candidate = user(&store, Role::Candidate).await;
    assert_eq!(candidate.role(), Role::Candidate);
    assert_ne!(candidate.id, created.id);

    assert_not_found(store.user_by_id(created.id + 1000).await);
    assert_not_found(store.user_by_email_key("nobody@example.com").await);
    // The key is what is compared, not the address as typed.
    assert_not_found(store.user_by_email_key(new.email.as_str()).await);
}

async fn email_keys_are_unique(store: Arc<dyn Store>) {
    let first = new_user(Role::Candidate);
    store.create_user(first.clone()).await.expect("create");
    let mut again = new_user(Role::Employer);
    again.email = Email::parse(&first.email.as_str().to_uppercase()).unwrap();
    assert_conflict(store.create_user(again).await, Conflict::EmailTaken);
    // The refused user was not stored.
    let found = store.user_by_email_key(&first.email.key()).await.unwrap();
    assert_eq!(found.email, first.email.as_str());
    assert_eq!(found.role(), Role::Candidate);
}

async fn change_password_bumps_the_token_generation(store: Arc<dyn Store>) {
    let u = user(&store, Role::Candidate).await;
    store
        .change_password(u.id, "hash-2", None)
        .await
        .expect("change");
    let after = store.user_by_id(u.id).await.unwrap();
    assert_eq!(after.password_hash, "hash-2");
    assert_eq!(after.token_generation, u.token_generation + 1);
    store.change_password(u.id, "hash-3", None).await.unwrap();
    assert_eq!(
        store.user_by_id(u.id).await.unwrap().token_generation,
        u.token_generation + 2
    );
    assert_not_found(store.change_password(u.id + 1000, "x", None).await);
}

async fn delete_user_takes_applications_and_memberships(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    let colleague = user(&store, Role::Employer).await;
    let colleague_key = Email::parse(&colleague.email).unwrap();
    store
        .add_member(s.company.id, &colleague_key, None)
        .await
        .unwrap();

    store.delete_user(s.candidate.id).await.expect("delete");
    assert_not_found(store.user_by_id(s.candidate.id).await);
    assert_not_found(store.application(s.application.id).await);
    let (apps, total) = store
        .list_applications(
            ApplicationViewer::Employer(s.employer.id),
            None,
            None,
            Page::default(),
        )
        .await
        .unwrap();
    assert!(apps.is_empty());
    assert_eq!(total, 0);

    store
        .delete_user(colleague.id)
        .await
        .expect("delete member");
    let members = store.members(s.company.id).await.unwrap();
    assert_eq!(
        members.iter().map(|m| m.id).collect::<Vec<_>>(),
        [s.employer.id]
    );
    assert!(!store.is_member(s.company.id, colleague.id).await.unwrap());
    // The company and its job stay.
    store.job(s.job.id).await.expect("job stays");

    assert_not_found(store.delete_user(s.candidate.id).await);
}

async fn auth_failures_are_counted_per_kind_and_key(store: Arc<dyn Store>) {
    let base = jobboard::timefmt::now();
    let at = |s: i64| base - chrono::Duration::seconds(s);
    let mut ids = Vec::new();
    for s in [30, 20, 10] {
        ids.push(
            store
                .record_auth_failure(FailureKind::Email, "ann@example.com", at(s))
                .await
                .expect("record"),
        );
    }
    assert!(ids[0] < ids[1] && ids[1] < ids[2], "{ids:?}");
    // Other counters that must not be mixed in.
    store
        .record_auth_failure(FailureKind::Addr, "ann@example.com", at(5))
        .await
        .unwrap();
    store
        .record_auth_failure(FailureKind::Email, "bob@example.com", at(5))
        .await
        .unwrap();

    let nth = |n, since| {
        let store = store.clone();
        async move {
            store
                .nth_recent_auth_failure(FailureKind::Email, "ann@example.com", since, n)
                .await
                .expect("nth")
        }
    };
    let long_ago = at(3600);
    assert_eq!(nth(1, long_ago).await, Some(at(10)));
    assert_eq!(nth(2, long_ago).await, Some(at(20)));
    assert_eq!(nth(3, long_ago).await, Some(at(30)));
    assert_eq!(nth(4, long_ago).await, None);
    // Only failures after `since` count, and `since` itself is not after.
    assert_eq!(nth(2, at(25)).await, Some(at(20)));
    assert_eq!(nth(3, at(25)).await, None);
    assert_eq!(nth(1, at(20)).await, Some(at(10)));
    assert_eq!(nth(2, at(20)).await, None);

    store.delete_auth_failures(&ids[1..]).await.expect("delete");
    assert_eq!(nth(1, long_ago).await, Some(at(30)));
    assert_eq!(nth(2, long_ago).await, None);
    store
        .delete_auth_failures(&[])
        .await
        .expect("nothing to delete");

    store
        .clear_auth_failures(FailureKind::Email, "ann@example.com")
        .await
        .expect("clear");
    assert_eq!(nth(1, long_ago).await, None);
    // The other kind and the other key keep theirs.
    for (kind, key) in [
        (FailureKind::Addr, "ann@example.com"),
        (FailureKind::Email, "bob@example.com"),
    ] {
        assert_eq!(
            store
                .nth_recent_auth_failure(kind, key, long_ago, 1)
                .await
                .unwrap(),
            Some(at(5)),
            "{kind:?} {key}"
        );
    }
}
