//! Users, passwords and the failed-login counters.

use crate::harness::*;
use jobboard::domain::{Conflict, Role};
use jobboard::store::{ApplicationViewer, AuthCounters, AuthKeys, Notifications, Page, Store};
use std::sync::Arc;

crate::each_backend!(
    users_are_created_and_found,
    email_keys_are_unique,
    change_password_bumps_the_token_generation,
    delete_user_takes_applications_and_memberships,
    auth_failures_are_counted_per_kind_and_key,
    notifications_default_on_and_change_per_user,
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

async fn notifications_default_on_and_change_per_user(store: Arc<dyn Store>) {
    let on = Notifications {
        application_digest: true,
    };
    let off = Notifications {
        application_digest: false,
    };
    let u = user(&store, Role::Employer).await;
    let other = user(&store, Role::Employer).await;
    assert_eq!(store.notifications(u.id).await.unwrap(), on);
    assert_eq!(
        store
            .update_notifications(u.id, Some(false), None)
            .await
            .unwrap(),
        off
    );
    assert_eq!(store.notifications(u.id).await.unwrap(), off);
    assert_eq!(store.notifications(other.id).await.unwrap(), on, "per user");
    // `None` keeps the preference as it is, and answers it.
    assert_eq!(
        store.update_notifications(u.id, None, None).await.unwrap(),
        off
    );
    assert_eq!(
        store
            .update_notifications(u.id, Some(false), None)
            .await
            .unwrap(),
        off,
        "again is the same"
    );
    assert_eq!(
        store
            .update_notifications(u.id, Some(true), None)
            .await
            .unwrap(),
        on
    );
    assert_not_found(store.notifications(u.id + 1000).await);
    assert_not_found(
        store
            .update_notifications(u.id + 1000, Some(false), None)
            .await,
    );
    store.delete_user(u.id).await.unwrap();
    assert_not_found(store.notifications(u.id).await);
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
    let minute = 60_000;
    let ann = AuthKeys {
        email: "login:ann@example.com",
        addr: "login:10.0.0.1",
    };
    let bob = AuthKeys {
        email: "login:bob@example.com",
        addr: "login:10.0.0.1",
    };
    let count = |keys: AuthKeys<'static>, window| {
        let store = store.clone();
        async move { store.count_auth_failure(keys, window).await.expect("count") }
    };
    let read = |keys: AuthKeys<'static>, window| {
        let store = store.clone();
        async move { store.auth_failures(keys, window).await.expect("read") }
    };
    for n in 1..=3 {
        let c = count(ann, minute).await;
        assert_eq!((c.email.failures, c.addr.failures), (n, n));
    }
    // Bob shares Ann's address: his email counter is his own, the address's is shared.
    let c = count(bob, minute).await;
    assert_eq!((c.email.failures, c.addr.failures), (1, 4));
    let c = read(ann, minute).await;
    assert_eq!((c.email.failures, c.addr.failures), (3, 4));
    assert!(
        (1..=minute).contains(&c.email.remaining_ms),
        "{}",
        c.email.remaining_ms
    );
    // A window that has ended counts nothing, and the next failure starts a new one.
    assert_eq!(read(ann, 0).await, AuthCounters::default());
    let c = count(bob, 0).await;
    assert_eq!((c.email.failures, c.addr.failures), (1, 1));
    let c = count(bob, minute).await;
    assert_eq!((c.email.failures, c.addr.failures), (2, 2));

    // A right password clears its email's counter and gives back its own failure.
    store.forgive_auth_failure(ann).await.expect("forgive");
    let c = read(ann, minute).await;
    assert_eq!((c.email.failures, c.addr.failures), (0, 1));
    assert_eq!(read(bob, minute).await.email.failures, 2);

    // Concurrent failures each see their own count.
    let carl = AuthKeys {
        email: "login:carl@example.com",
        addr: "login:10.0.0.2",
    };
    let mut seen: Vec<i64> = futures::future::join_all((0..20).map(|_| count(carl, minute)))
        .await
        .into_iter()
        .map(|c| c.email.failures)
        .collect();
    seen.sort();
    assert_eq!(seen, (1..=20).collect::<Vec<i64>>());

    // Rows: the shared address, Bob's email, Carl's email and address.
    let expired = |window, limit| {
        let store = store.clone();
        async move {
            store
                .delete_expired_auth_failures(window, limit)
                .await
                .expect("delete")
        }
    };
    assert_eq!(expired(minute, 100).await, 0, "all still counting");
    assert_eq!(expired(0, 3).await, 3, "a bounded batch");
    assert_eq!(expired(0, 100).await, 1);
    assert_eq!(read(carl, minute).await, AuthCounters::default());
}
