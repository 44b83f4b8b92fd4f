//! Jobs: creation, the optimistic update, deletion, and search with its filters and totals.

use crate::harness::*;
use jobboard::domain::pay_place::places_of_text;
use jobboard::domain::{EmploymentType, JobStatus, Role, search};
use jobboard::store::{JobSearch, Page, Store};
use std::sync::Arc;

crate::each_backend!(
    jobs_are_created_and_read,
    update_job_refuses_a_stale_version,
    delete_job_takes_its_applications,
    search_applies_every_filter,
    search_pages_keep_their_total,
    a_broad_search_counts_every_match,
    job_ids_follow_created_at,
);

async fn jobs_are_created_and_read(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let fields = jobboard::store::JobFields {
        title: Title::parse("Data analyst").unwrap(),
        description: "Numbers".to_string(),
        locations: jobboard::domain::pay_place::places_of_text("Remote EU"),
        workplace: jobboard::domain::pay_place::Workplace::of_remote(true),
        salary: jobboard::domain::pay_place::Salary::older(None, Some(90_000)),
        employment_type: EmploymentType::Contract,
        status: JobStatus::Closed,
        expires_at: Some(jobboard::timefmt::now() + chrono::Duration::days(3)),
        resume_required: false,
        questions: None,
    };
    let created = store
        .create_job(c.id, fields.clone(), None)
        .await
        .expect("create");
    assert_eq!(created.fields().unwrap(), fields);
    assert_eq!(
        (created.company_id, created.company_name.as_str()),
        (c.id, "Acme")
    );
    assert_eq!(created.created_at, created.updated_at);
    let read = store.job(created.id).await.expect("read");
    assert_eq!(read.fields().unwrap(), fields);
    assert_eq!(read.updated_at, created.updated_at);

    assert_not_found(store.job(created.id + 1000).await);
    assert_not_found(
        store
            .create_job(c.id + 1000, job_fields("Nowhere"), None)
            .await,
    );
}

async fn update_job_refuses_a_stale_version(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let original = job(&store, c.id, job_fields("Welder")).await;

    let mut changed = original.fields().unwrap();
    changed.title = Title::parse("Senior welder").unwrap();
    changed.status = JobStatus::Closed;
    let updated = store
        .update_job(original.id, changed.clone(), original.updated_at, None)
        .await
        .expect("update")
        .expect("the version matched");
    assert_eq!(updated.fields().unwrap(), changed);
    assert!(
        updated.updated_at > original.updated_at,
        "the version moves"
    );
    assert_eq!(updated.created_at, original.created_at);

    // A writer that read the original version loses, and changes nothing.
    let mut stale = original.fields().unwrap();
    stale.title = Title::parse("Junior welder").unwrap();
    let refused = store
        .update_job(original.id, stale, original.updated_at, None)
        .await
        .expect("no error");
    assert!(refused.is_none(), "{refused:?}");
    let read = store.job(original.id).await.unwrap();
    assert_eq!(read.fields().unwrap(), changed);
    assert_eq!(read.updated_at, updated.updated_at);

    // A version the job never had is stale too, even a later one.
    let future = updated.updated_at + chrono::Duration::seconds(5);
    let refused = store
        .update_job(original.id, original.fields().unwrap(), future, None)
        .await
        .unwrap();
    assert!(refused.is_none(), "{refused:?}");
    assert_eq!(
        store.job(original.id).await.unwrap().fields().unwrap(),
        changed
    );

    assert_not_found(
        store
            .update_job(original.id + 1000, changed, updated.updated_at, None)
            .await,
    );
}

async fn delete_job_takes_its_applications(store: Arc<dyn Store>) {
    let s = scenario(&store).await;
    store.delete_job(s.job.id, None).await.expect("delete");
    assert_not_found(store.job(s.job.id).await);
    assert_not_found(store.application(s.application.id).await);
    assert!(store.history(s.application.id).await.unwrap().is_empty());
    assert_not_found(store.delete_job(s.job.id, None).await);
    store.company(s.company.id).await.expect("company stays");
}

fn search_for(q: &str) -> JobSearch {
    JobSearch {
        terms: search::query_terms(q).expect("short words"),
        ..JobSearch::default()
    }
}

async fn search_applies_every_filter(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let acme = company(&store, owner.id, "Acme").await;
    let globex = company(&store, owner.id, "Globex").await;
    let mut f = job_fields("Rust Engineers");
    f.locations = places_of_text("Berlin, Germany");
    let rust_berlin = job(&store, acme.id, f).await;
    let mut f = job_fields("Rust engineer");
    f.locations = places_of_text("Paris");
    f.workplace = jobboard::domain::pay_place::Workplace::Remote;
    f.salary = None;
    f.employment_type = EmploymentType::PartTime;
    let rust_remote = job(&store, globex.id, f).await;
    let mut f = job_fields("Go engineer");
    f.salary = jobboard::domain::pay_place::Salary::older(Some(30_000), Some(40_000));
    let go = job(&store, acme.id, f).await;
    let mut f = job_fields("Rust engineer, closed");
    f.status = JobStatus::Closed;
    job(&store, acme.id, f).await;

    let ids = |search: JobSearch| {
        let store = store.clone();
        async move {
            let found = crate::harness::searched(&store, &search).await;
            assert_eq!(
                found.total,
                found.rows.len() as i64,
                "one page holds them all"
            );
            found.rows.iter().map(|r| r.id).collect::<Vec<_>>()
        }
    };
    // Open jobs only, newest first.
    assert_eq!(
        ids(JobSearch::default()).await,
        [go.id, rust_remote.id, rust_berlin.id]
    );
    // Every term must match; plurals meet singulars; the company name is searchable.
    assert_eq!(
        ids(search_for("rust engineer")).await,
        [rust_remote.id, rust_berlin.id]
    );
    assert_eq!(ids(search_for("ENGINEERS")).await.len(), 3);
    assert_eq!(ids(search_for("rust acme")).await, [rust_berlin.id]);
    assert!(ids(search_for("rust cobol")).await.is_empty());
    assert!(
        ids(search_for("closed")).await.is_empty(),
        "closed is hidden"
    );
    assert!(
        ids(search_for("rus")).await.is_empty(),
        "whole words, not prefixes"
    );

    let with = |edit: &dyn Fn(&mut JobSearch)| {
        let mut s = JobSearch::default();
        edit(&mut s);
        s
    };
    assert_eq!(
        ids(with(&|s| s.location = Some("berlin".into()))).await,
        [go.id, rust_berlin.id]
    );
    assert_eq!(
        ids(with(&|s| s.location = Some("germ".into()))).await,
        [go.id, rust_berlin.id],
        "a substring of the location"
    );
    assert_eq!(
        ids(with(&|s| s.remote = Some(true))).await,
        [rust_remote.id]
    );
    assert_eq!(
        ids(with(&|s| s.remote = Some(false))).await,
        [go.id, rust_berlin.id]
    );
    assert_eq!(
        ids(with(&|s| s.company_id = Some(globex.id))).await,
        [rust_remote.id]
    );
    // A job pays enough when its maximum reaches the minimum asked for, or it names none.
    assert_eq!(
        ids(with(&|s| s.salary_min = Some(60_000))).await,
        [rust_remote.id, rust_berlin.id]
    );
    assert_eq!(
        ids(with(&|s| s.salary_min = Some(40_000))).await,
        [go.id, rust_remote.id, rust_berlin.id]
    );
    assert_eq!(
        ids(with(&|s| s.salary_min = Some(70_001))).await,
        [rust_remote.id]
    );
    assert_eq!(
        ids(with(&|s| s.employment_type = Some("part_time".into()))).await,
        [rust_remote.id]
    );
    // Filters combine.
    let mut all = search_for("engineer");
    all.location = Some("berlin".into());
    all.salary_min = Some(50_000);
    all.remote = Some(false);
    all.company_id = Some(acme.id);
    all.employment_type = Some("full_time".into());
    assert_eq!(ids(all).await, [rust_berlin.id]);
}

async fn search_pages_keep_their_total(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let mut made = Vec::new();
    for i in 0..5 {
        made.push(
            job(&store, c.id, job_fields(&format!("Welder {i}")))
                .await
                .id,
        );
    }
    made.reverse();
    let mut seen = Vec::new();
    for page in 1..=3 {
        let search = JobSearch {
            terms: vec!["welder".into()],
            page: Page { page, size: 2 },
            ..JobSearch::default()
        };
        let found = crate::harness::searched(&store, &search).await;
        let (rows, total) = (found.rows, found.total);
        assert_eq!(total, 5, "page {page}");
        assert_eq!(rows.len(), if page < 3 { 2 } else { 1 }, "page {page}");
        seen.extend(rows.iter().map(|r| r.id));
    }
    assert_eq!(seen, made, "pages in order, none twice");
    let past = JobSearch {
        page: Page { page: 4, size: 2 },
        ..JobSearch::default()
    };
    let found = crate::harness::searched(&store, &past).await;
    assert!(found.rows.is_empty());
    assert_eq!(found.total, 5, "a page past the end still counts them");
}

async fn a_broad_search_counts_every_match(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let over = 105;
    let mut newest = 0;
    for i in 0..over {
        newest = job(&store, c.id, job_fields(&format!("Welder {i}")))
            .await
            .id;
    }
    let welders = |page: Page| JobSearch {
        terms: vec!["welder".into()],
        page,
        ..JobSearch::default()
    };
    let first = crate::harness::searched(&store, &welders(Page::default())).await;
    assert_eq!(first.total, over, "every match is counted");
    assert_eq!(first.rows[0].id, newest, "the page is newest first");
    let last = crate::harness::searched(
        &store,
        &welders(Page {
            page: over / 100 + 1,
            size: 100,
        }),
    )
    .await;
    assert_eq!(last.rows.len() as i64, over % 100);
    assert_eq!(last.total, over);
    // A selective search among them.
    let one = JobSearch {
        terms: vec!["welder".into(), "7".into()],
        ..JobSearch::default()
    };
    assert_eq!(crate::harness::searched(&store, &one).await.total, 1);
}

/// Ids follow creation time (the newest-first order is also the id order), so a job
/// created later never gets a lower id, even when jobs are created at once on many connections.
async fn job_ids_follow_created_at(store: Arc<dyn Store>) {
    let owner = user(&store, Role::Employer).await;
    let c = company(&store, owner.id, "Acme").await;
    let mut made = Vec::new();
    for i in 0..5 {
        made.push(job(&store, c.id, job_fields(&format!("Welder {i}"))).await);
    }
    // A company each, so that the inserts do not take turns on one company's row.
    let mut companies = Vec::new();
    for t in 0..8 {
        companies.push(company(&store, owner.id, &format!("Company {t}")).await.id);
    }
    let tasks: Vec<_> = companies
        .into_iter()
        .enumerate()
        .map(|(t, company_id)| {
            let store = store.clone();
            tokio::spawn(async move {
                let mut made = Vec::new();
                for i in 0..10 {
                    let f = job_fields(&format!("Fitter {t} {i}"));
                    let created = store.create_job(company_id, f, None).await;
                    made.push(created.expect("create job"));
                }
                made
            })
        })
        .collect();
    for t in tasks {
        made.extend(t.await.expect("task"));
    }
    made.sort_by_key(|j| j.id);
    for w in made.windows(2) {
        assert!(
            w[0].created_at <= w[1].created_at,
            "job {} was created at {}, after job {} at {}",
            w[0].id,
            w[0].created_at,
            w[1].id,
            w[1].created_at
        );
    }

    // The newest-first order is the id order, highest first.
    let found = crate::harness::searched(
        &store,
        &JobSearch {
            page: Page { page: 1, size: 100 },
            ..JobSearch::default()
        },
    )
    .await;
    let ids: Vec<i64> = found.rows.iter().map(|r| r.id).collect();
    let by_id: Vec<i64> = made.iter().rev().map(|j| j.id).collect();
    assert_eq!(ids, by_id);
    let words: Vec<i64> = crate::harness::searched(
        &store,
        &JobSearch {
            terms: vec!["fitter".into()],
            page: Page { page: 1, size: 100 },
            ..JobSearch::default()
        },
    )
    .await
    .rows
    .iter()
    .map(|r| r.id)
    .collect();
    let fitters: Vec<i64> = by_id
        .iter()
        .copied()
        .filter(|id| *id > made[4].id)
        .collect();
    assert_eq!(words, fitters, "a word search reads the same order");
}
