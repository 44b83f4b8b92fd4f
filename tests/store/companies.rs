//! Companies and their members.

use crate::harness::*;
use jobboard::domain::{Conflict, Role};
use jobboard::store::{CompanyFields, JobSearch, Page, Store};
use std::sync::Arc;

crate::each_backend!(
    companies_are_created_with_their_owner,
    list_companies_pages_and_filters_by_member,
    update_company_reindexes_its_jobs,
    delete_company_refuses_while_it_has_jobs,
    members_are_added_and_removed,
);

async fn companies_are_created_with_their_owner(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let other = user(&store, Role::Employer).await;
    let fields = CompanyFields {
        name: "Acme".to_string(),
        website: Some("https://acme.example".to_string()),
        description: Some("Anvils".to_string()),
    };
    let created = store
        .create_company(owner.id, fields.clone(), None)
        .await
        .expect("create");
    assert_eq!(
        (created.name.as_str(), created.website.as_deref()),
        ("Acme", Some("https://acme.example"))
    );
    assert_eq!(created.description.as_deref(), Some("Anvils"));
    let read = store.company(created.id).await.expect("read");
    assert_eq!(
        CompanyFields {
            name: read.name,
            website: read.website,
            description: read.description
        },
        fields
    );
    assert_eq!(read.created_at, created.created_at);

    let members = store.members(created.id).await.unwrap();
    assert_eq!(members.len(), 1);
    assert_eq!(
        (members[0].id, &members[0].name, &members[0].email),
        (owner.id, &owner.name, &owner.email)
    );
    assert!(store.is_member(created.id, owner.id).await.unwrap());
    assert!(!store.is_member(created.id, other.id).await.unwrap());
    assert!(!store.is_member(created.id + 1000, owner.id).await.unwrap());

    assert_not_found(store.company(created.id + 1000).await);
    assert!(store.members(created.id + 1000).await.unwrap().is_empty());
}

async fn list_companies_pages_and_filters_by_member(store: Arc<dyn Store>) {
    let a = user(&store, Role::Employer).await;
    let b = user(&store, Role::Employer).await;
    let first = company(&store, a.id, "First").await;
    let second = company(&store, b.id, "Second").await;
    let third = company(&store, a.id, "Third").await;

    let page = |page, size| Page { page, size };
    let (rows, total) = store.list_companies(None, page(1, 2)).await.unwrap();
    assert_eq!(total, 3);
    // Newest first.
    assert_eq!(
        rows.iter().map(|c| c.id).collect::<Vec<_>>(),
        [third.id, second.id]
    );
    let (rows, total) = store.list_companies(None, page(2, 2)).await.unwrap();
    assert_eq!(total, 3, "the total is of all pages");
    assert_eq!(rows.iter().map(|c| c.id).collect::<Vec<_>>(), [first.id]);
    let (rows, total) = store.list_companies(None, page(3, 2)).await.unwrap();
    assert!(rows.is_empty());
    assert_eq!(total, 3);

    let (rows, total) = store
        .list_companies(Some(a.id), Page::default())
        .await
        .unwrap();
    assert_eq!(total, 2);
    assert_eq!(
        rows.iter().map(|c| c.id).collect::<Vec<_>>(),
        [third.id, first.id]
    );
    let (rows, total) = store.list_companies(Some(b.id), page(1, 1)).await.unwrap();
    assert_eq!((rows.len(), total), (1, 1));
    assert_eq!(rows[0].name, "Second");
    let nobody = user(&store, Role::Employer).await;
    let (rows, total) = store
        .list_companies(Some(nobody.id), Page::default())
        .await
        .unwrap();
    assert!(rows.is_empty());
    assert_eq!(total, 0);
}

async fn update_company_reindexes_its_jobs(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let j = job(&store, c.id, job_fields("Welder")).await;
    let finds = |word: &str| {
        let store = store.clone();
        let search = JobSearch {
            terms: vec![word.to_string()],
            ..JobSearch::default()
        };
        async move {
            let found = crate::harness::searched(&store, &search).await;
            found.rows.iter().map(|r| r.id).collect::<Vec<_>>()
        }
    };
    assert_eq!(finds("acme").await, [j.id]);

    let fields = CompanyFields {
        name: "Globex".to_string(),
        website: None,
        description: Some("New".to_string()),
    };
    let updated = store
        .update_company(c.id, fields.clone(), None)
        .await
        .expect("update");
    assert_eq!(updated.id, c.id);
    assert_eq!(updated.name, "Globex");
    assert_eq!(updated.website, None);
    assert_eq!(updated.created_at, c.created_at);
    let read = store.company(c.id).await.unwrap();
    assert_eq!(
        (read.name, read.website, read.description),
        (fields.name, fields.website, fields.description)
    );
    assert_eq!(finds("globex").await, [j.id]);
    assert!(finds("acme").await.is_empty());
    assert_eq!(store.job(j.id).await.unwrap().company_name, "Globex");
    assert_eq!(finds("welder").await, [j.id], "its own words stay");

    assert_not_found(
        store
            .update_company(c.id + 1000, company_fields("X"), None)
            .await,
    );
}

async fn delete_company_refuses_while_it_has_jobs(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let mut closed = job_fields("Closed one");
    closed.status = jobboard::domain::JobStatus::Closed;
    let j = job(&store, c.id, closed).await;
    assert_conflict(
        store.delete_company(c.id, None).await,
        Conflict::CompanyHasJobs,
    );
    store.company(c.id).await.expect("still there");
    assert!(store.is_member(c.id, owner.id).await.unwrap());

    store.delete_job(j.id, None).await.unwrap();
    store.delete_company(c.id, None).await.expect("delete");
    assert_not_found(store.company(c.id).await);
    assert!(store.members(c.id).await.unwrap().is_empty());
    assert!(!store.is_member(c.id, owner.id).await.unwrap());
    assert_not_found(store.delete_company(c.id, None).await);
}

async fn members_are_added_and_removed(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let colleague = user(&store, Role::Employer).await;
    let candidate = user(&store, Role::Candidate).await;
    let key = |u: &jobboard::store::UserRow| Email::parse(&u.email).unwrap();
    let c = company(&store, owner.id, "Acme").await;
    let ids = |store: Arc<dyn Store>| async move {
        store
            .members(c.id)
            .await
            .unwrap()
            .iter()
            .map(|m| m.id)
            .collect::<Vec<_>>()
    };

    store
        .add_member(c.id, &key(&colleague), None)
        .await
        .expect("add");
    assert_eq!(ids(store.clone()).await, [owner.id, colleague.id]);
    assert!(store.is_member(c.id, colleague.id).await.unwrap());
    store
        .add_member(c.id, &key(&colleague), None)
        .await
        .expect("adding a member again changes nothing");
    assert_eq!(ids(store.clone()).await, [owner.id, colleague.id]);

    assert_not_found(store.add_member(c.id, &key(&candidate), None).await);
    assert_not_found(
        store
            .add_member(c.id, &Email::parse("nobody@example.com").unwrap(), None)
            .await,
    );
    assert_not_found(store.add_member(c.id + 1000, &key(&colleague), None).await);
    assert_eq!(ids(store.clone()).await, [owner.id, colleague.id]);

    assert_not_found(store.remove_member(c.id, candidate.id, None).await);
    assert_not_found(store.remove_member(c.id + 1000, owner.id, None).await);
    store
        .remove_member(c.id, owner.id, None)
        .await
        .expect("remove");
    assert_eq!(ids(store.clone()).await, [colleague.id]);
    assert_conflict(
        store.remove_member(c.id, colleague.id, None).await,
        Conflict::LastMember,
    );
    assert_eq!(ids(store.clone()).await, [colleague.id]);
    assert_not_found(store.remove_member(c.id, owner.id, None).await);
}
