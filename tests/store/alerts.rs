//! Job alerts ([`jobboard::store::AlertStore`]): each owner sees, changes and deletes only their
//! own; the limit holds under concurrent creations; alerts go with their user.

use crate::harness::*;
use jobboard::domain::alert::{Frequency, Watermark};
use jobboard::domain::search::SearchFilters;
use jobboard::domain::{Conflict, EmploymentType, Role};
use jobboard::store::{AlertChange, NewAlert, Page, Store};
use std::sync::Arc;

crate::each_backend!(
    alerts_are_created_read_and_listed_newest_first,
    an_alert_is_changed_and_deleted_by_its_owner_only,
    the_limit_is_decided_under_a_lock,
    alerts_go_with_their_user,
);

fn new_alert(q: &str) -> NewAlert {
    NewAlert {
        filters: SearchFilters {
            q: Some(q.to_string()),
            ..SearchFilters::default()
        },
        frequency: Frequency::Daily,
    }
}

async fn alerts_are_created_read_and_listed_newest_first(store: Arc<dyn Store>) {
    let u = user(&store, Role::Candidate).await;
    let before = jobboard::timefmt::now();
    let full = NewAlert {
        filters: SearchFilters {
            q: Some("Rust engineers".into()),
            location: Some("München".into()),
            remote: Some(false),
            company_id: Some(42),
            salary_min: Some(1_000_000_000),
            employment_type: Some(EmploymentType::Internship),
            workplace: Some(jobboard::domain::pay_place::Workplace::Hybrid),
            country: Some("DE".into()),
            salary_currency: Some("EUR".into()),
        },
        frequency: Frequency::Weekly,
    };
    let a = store
        .create_alert(u.id, full.clone(), 20, None)
        .await
        .expect("create");
    assert_eq!(a.user_id, u.id);
    assert_eq!(a.filters().unwrap(), full.filters, "every field as given");
    assert_eq!(a.frequency, Frequency::Weekly);
    assert!(!a.paused);
    assert!(a.created_at >= before);
    assert_eq!(a.last_sent_at, None);
    assert_eq!(
        a.watermark(),
        Watermark::creation(a.created_at),
        "no digest yet"
    );

    let b = store
        .create_alert(
            u.id,
            NewAlert {
                filters: SearchFilters {
                    company_id: Some(1),
                    ..SearchFilters::default()
                },
                frequency: Frequency::Daily,
            },
            20,
            None,
        )
        .await
        .expect("create");
    let read = store.alert_of(u.id, b.id).await.expect("read");
    assert_eq!(read.filters().unwrap().q, None, "unset is NULL");
    assert_eq!(read.created_at, b.created_at);

    let c = store
        .create_alert(u.id, new_alert("go"), 20, None)
        .await
        .unwrap();
    let (rows, total) = store.alerts_of(u.id, Page::default()).await.unwrap();
    assert_eq!(total, 3);
    let ids: Vec<i64> = rows.iter().map(|r| r.id).collect();
    assert_eq!(ids, [c.id, b.id, a.id]);
    let (rows, total) = store
        .alerts_of(u.id, Page { page: 2, size: 2 })
        .await
        .unwrap();
    assert_eq!((rows.len(), rows[0].id, total), (1, a.id, 3));
    let (rows, total) = store
        .alerts_of(u.id, Page { page: 3, size: 2 })
        .await
        .unwrap();
    assert_eq!((rows.len(), total), (0, 3));
}

async fn an_alert_is_changed_and_deleted_by_its_owner_only(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Candidate).await;
    let other = user(&store, Role::Candidate).await;
    let a = store
        .create_alert(owner.id, new_alert("rust"), 20, None)
        .await
        .unwrap();
    assert_not_found(store.alert_of(other.id, a.id).await);
    assert_not_found(store.alert_of(owner.id, a.id + 1000).await);
    let (rows, total) = store.alerts_of(other.id, Page::default()).await.unwrap();
    assert_eq!((rows.len(), total), (0, 0));
    let pause = AlertChange {
        paused: Some(true),
        frequency: None,
    };
    assert_not_found(store.update_alert(other.id, a.id, pause, None).await);
    assert_not_found(store.delete_alert(other.id, a.id, None).await);
    assert!(!store.alert_of(owner.id, a.id).await.unwrap().paused);

    let paused = store
        .update_alert(owner.id, a.id, pause, None)
        .await
        .unwrap();
    assert!(paused.paused);
    assert_eq!(paused.frequency, Frequency::Daily, "kept");
    let weekly = store
        .update_alert(
            owner.id,
            a.id,
            AlertChange {
                frequency: Some(Frequency::Weekly),
                paused: None,
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!((weekly.frequency, weekly.paused), (Frequency::Weekly, true));
    let both = store
        .update_alert(
            owner.id,
            a.id,
            AlertChange {
                frequency: Some(Frequency::Daily),
                paused: Some(false),
            },
            None,
        )
        .await
        .unwrap();
    assert_eq!((both.frequency, both.paused), (Frequency::Daily, false));
    let same = store
        .update_alert(owner.id, a.id, AlertChange::default(), None)
        .await
        .unwrap();
    assert_eq!((same.frequency, same.paused), (Frequency::Daily, false));
    assert_eq!(
        same.filters().unwrap(),
        a.filters().unwrap(),
        "the search never changes"
    );

    store.delete_alert(owner.id, a.id, None).await.unwrap();
    assert_not_found(store.alert_of(owner.id, a.id).await);
    assert_not_found(store.delete_alert(owner.id, a.id, None).await);
    assert_not_found(store.update_alert(owner.id, a.id, pause, None).await);
    // Ids are never reused.
    let again = store
        .create_alert(owner.id, new_alert("rust"), 20, None)
        .await
        .unwrap();
    assert!(again.id > a.id);
}

/// Creations at `max - 1`, all at once: exactly one passes, whatever the interleaving.
async fn the_limit_is_decided_under_a_lock(store: Arc<dyn Store>) {
    for max in [1, 3] {
        let u = user(&store, Role::Candidate).await;
        for i in 0..max - 1 {
            store
                .create_alert(u.id, new_alert(&format!("w{i}")), max, None)
                .await
                .unwrap();
        }
        let attempts = (0..4).map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.create_alert(u.id, new_alert("x"), max, None).await })
        });
        let results = futures::future::join_all(attempts).await;
        let mut created = 0;
        for r in results {
            match r.expect("the task ran") {
                Ok(_) => created += 1,
                refused => assert_conflict(refused, Conflict::TooManyAlerts),
            }
        }
        assert_eq!(created, 1, "max {max}");
        let (_, total) = store.alerts_of(u.id, Page::default()).await.unwrap();
        assert_eq!(total, max);
        assert_conflict(
            store.create_alert(u.id, new_alert("y"), max, None).await,
            Conflict::TooManyAlerts,
        );
    }
    // A user who is gone has no alerts to make.
    assert_not_found(store.create_alert(999_999, new_alert("x"), 20, None).await);
}

async fn alerts_go_with_their_user(store: Arc<dyn Store>) {
    let gone = user(&store, Role::Candidate).await;
    let stays = user(&store, Role::Candidate).await;
    let a = store
        .create_alert(gone.id, new_alert("a"), 20, None)
        .await
        .unwrap();
    store
        .create_alert(gone.id, new_alert("b"), 20, None)
        .await
        .unwrap();
    let kept = store
        .create_alert(stays.id, new_alert("c"), 20, None)
        .await
        .unwrap();
    store.delete_user(gone.id).await.unwrap();
    assert_not_found(store.alert_of(gone.id, a.id).await);
    let (rows, total) = store.alerts_of(gone.id, Page::default()).await.unwrap();
    assert_eq!((rows.len(), total), (0, 0));
    let (rows, _) = store.alerts_of(stays.id, Page::default()).await.unwrap();
    assert_eq!(rows.iter().map(|r| r.id).collect::<Vec<_>>(), [kept.id]);
}
