//! A property: any sequence of job writes (creates with or without an expiry date, before or
//! after the searches' instant, patches that retitle, close or reopen, renewals, the upkeep's
//! expiries, deletes, company renames), made through the store and applied to an index through
//! the job-change log, whether the index follows along the way or only at the end, gives the
//! reference's pages on the final state.

use super::corpus::Job;
use super::queries::{reference_facets, reference_matches, reference_page};
use crate::harness::{company, user};
use chrono::{DateTime, Duration, Utc};
use jobboard::domain::pay_place::{Period, Place, Workplace};
use jobboard::domain::{EmploymentType, Role, search};
use jobboard::search::{SearchIndex, StoreFeed};
use jobboard::store::{CompanyFields, Facets, JobSearch, Page, SearchSort, Store};
use proptest::prelude::*;
use std::sync::Arc;

const WORDS: &[&str] = &["rust", "welders", "nurse", "engineer", "analyses", "people"];
const NAMES: &[&str] = &["Acme", "Globex Rust", "Nurses United", "Initech"];
const LOCATIONS: &[&str] = &["Berlin", "MÜNCHEN", "Zürich", "berlin-Mitte"];
/// The country of each of [`LOCATIONS`].
const COUNTRIES: &[&str] = &["DE", "DE", "CH", "DE"];
const CURRENCIES: &[&str] = &["USD", "EUR"];
const PERIODS: &[Period] = &[Period::Year, Period::Month, Period::Hour];

#[derive(Debug, Clone)]
enum Op {
    Create {
        company: usize,
        title: (usize, usize),
        description: usize,
        location: usize,
        /// A second place, in Canada.
        toronto: bool,
        workplace: usize,
        kind: usize,
        salary_max: Option<i64>,
        /// Indexes into [`CURRENCIES`] and [`PERIODS`].
        pay: (usize, usize),
        /// Hours from the searches' instant (none: no date).
        expires_in: Option<i64>,
    },
    /// Retitles the `job`-th job made so far (modulo), and opens or closes it.
    Patch {
        job: usize,
        title: usize,
        open: bool,
    },
    Delete {
        job: usize,
    },
    /// Renews the `job`-th job until `hours` after the searches' instant (refused unless it is
    /// open or expired).
    Renew {
        job: usize,
        hours: i64,
    },
    /// The upkeep expires the jobs whose date is at or before `hours` after the searches'
    /// instant (so, with a negative value, some of those the searches will find past theirs).
    Expire {
        hours: i64,
    },
    Rename {
        company: usize,
        name: usize,
    },
    /// The index applies the log up to here.
    Follow,
}

fn op() -> impl Strategy<Value = Op> {
    let w = 0..WORDS.len();
    prop_oneof![
        4 => (0..2usize, (w.clone(), w.clone()), w.clone(), (0..LOCATIONS.len(), any::<bool>()), 0..3usize, 0..4usize,
              proptest::option::of(prop_oneof![Just(50_000i64), Just(90_000), Just(120_000)]),
              (0..CURRENCIES.len(), 0..PERIODS.len()),
              proptest::option::of(-3i64..4))
            .prop_map(|(company, title, description, (location, toronto), workplace, kind, salary_max, pay, expires_in)| Op::Create {
                company, title, description, location, toronto, workplace, kind, salary_max, pay, expires_in,
            }),
        1 => (0..20usize, -2i64..4).prop_map(|(job, hours)| Op::Renew { job, hours }),
        1 => (-2i64..3).prop_map(|hours| Op::Expire { hours }),
        3 => (0..20usize, w.clone(), any::<bool>()).prop_map(|(job, title, open)| Op::Patch { job, title, open }),
        1 => (0..20usize).prop_map(|job| Op::Delete { job }),
        1 => (0..2usize, 0..NAMES.len()).prop_map(|(company, name)| Op::Rename { company, name }),
        1 => Just(Op::Follow),
    ]
}

/// The searches every case checks: each word and pair, both sorts, the filters, facets, all
/// at the instant `at`.
fn searches(company_ids: &[i64], at: DateTime<Utc>) -> Vec<(JobSearch, Option<usize>)> {
    let mut out = Vec::new();
    let all = Facets {
        employment_type: true,
        remote: true,
        workplace: true,
        company: true,
    };
    let mut qs: Vec<String> = vec![String::new()];
    qs.extend(WORDS.iter().map(|w| w.to_string()));
    qs.extend(NAMES.iter().map(|n| n.to_string()));
    qs.push("rust engineers".into());
    for q in &qs {
        for sort in [SearchSort::Newest, SearchSort::Relevance] {
            out.push((
                JobSearch {
                    terms: search::query_terms(q).expect("short words"),
                    sort,
                    page: Page { page: 1, size: 7 },
                    facets: all,
                    ..JobSearch::default()
                },
                None,
            ));
        }
    }
    for (i, id) in company_ids.iter().enumerate() {
        out.push((
            JobSearch {
                company_id: Some(*id),
                location: Some("berlin".into()),
                page: Page { page: 2, size: 2 },
                ..JobSearch::default()
            },
            Some(i),
        ));
    }
    out.push((
        JobSearch {
            salary_min: Some(100_000),
            remote: Some(true),
            employment_type: Some("part_time".into()),
            ..JobSearch::default()
        },
        None,
    ));
    for (workplace, country, currency, min) in [
        (Some("hybrid"), None, None, None),
        (None, Some("CA"), None, None),
        (None, Some("CH"), Some("EUR"), Some(100_000)),
        (Some("remote"), None, Some("USD"), Some(60_000)),
        (None, None, Some("EUR"), None),
    ] {
        out.push((
            JobSearch {
                workplace: workplace.map(str::to_string),
                country: country.map(str::to_string),
                salary_currency: currency.map(str::to_string),
                salary_min: min,
                facets: all,
                page: Page { page: 1, size: 5 },
                ..JobSearch::default()
            },
            None,
        ));
    }
    for (s, _) in &mut out {
        s.at = Some(at);
    }
    out
}

async fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let db = crate::harness::sqlite().await;
    db.store.migrate().await.expect("migrate");
    let store: &Arc<dyn Store> = &db.store;
    let owner = user(store, Role::Employer).await;
    let mut companies: Vec<String> = vec!["Acme".into(), "Globex".into()];
    let mut company_ids = Vec::new();
    for name in &companies {
        company_ids.push(company(store, owner.id, name).await.id);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let index = Arc::new(SearchIndex::open(dir.path()).expect("open the index"));
    let small_dir = tempfile::tempdir().expect("temp dir");
    let small = Arc::new(
        SearchIndex::open_with_block_size(small_dir.path(), 2).expect("open the small index"),
    );
    let feed = StoreFeed(store.clone());
    let mut jobs: Vec<Job> = Vec::new();
    // The searches' instant; dates are set around it.
    let at = jobboard::timefmt::now() + Duration::days(1);
    let hours = |h: i64| at + Duration::hours(h);
    for op in ops {
        match op {
            Op::Create {
                company,
                title,
                description,
                location,
                toronto,
                workplace,
                kind,
                salary_max,
                pay,
                expires_in,
            } => {
                let mut places = vec![Place {
                    city: LOCATIONS[location].to_string(),
                    region: None,
                    country: Some(COUNTRIES[location].to_string()),
                }];
                if toronto {
                    places.push(Place {
                        city: "Toronto".into(),
                        region: Some("Ontario".into()),
                        country: Some("CA".into()),
                    });
                }
                let workplace = Workplace::ALL[workplace];
                let period = PERIODS[pay.1];
                let mut job = Job {
                    id: 0,
                    company,
                    title: format!("{} {}", WORDS[title.0], WORDS[title.1]),
                    description: format!("We need {}", WORDS[description]),
                    location: places[0].text(),
                    remote: workplace == Workplace::Remote,
                    salary_min: None,
                    salary_max: salary_max.map(|m| m / period.yearly(1)),
                    workplace,
                    places,
                    currency: CURRENCIES[pay.0].to_string(),
                    period,
                    legacy: false,
                    employment_type: EmploymentType::ALL[kind],
                    open: true,
                    expired: false,
                    deleted: false,
                    created_at: chrono::Utc::now(),
                    expires_at: expires_in.map(hours),
                    terms: Default::default(),
                    title_terms: Default::default(),
                };
                let row = store
                    .create_job(company_ids[company], job.fields(), None)
                    .await
                    .expect("create job");
                job.id = row.id;
                job.created_at = row.created_at;
                job.reindex(&companies);
                jobs.push(job);
            }
            Op::Patch { job, title, open } => {
                let live: Vec<usize> = (0..jobs.len()).filter(|i| !jobs[*i].deleted).collect();
                let Some(&i) = live.get(job % live.len().max(1)) else {
                    continue;
                };
                jobs[i].title = format!("{} lead", WORDS[title]);
                jobs[i].open = open;
                jobs[i].expired = false;
                jobs[i].reindex(&companies);
                let current = store.job(jobs[i].id).await.expect("read job");
                store
                    .update_job(jobs[i].id, jobs[i].fields(), current.updated_at, None)
                    .await
                    .expect("update job")
                    .expect("the version matched");
            }
            Op::Delete { job } => {
                let live: Vec<usize> = (0..jobs.len()).filter(|i| !jobs[*i].deleted).collect();
                let Some(&i) = live.get(job % live.len().max(1)) else {
                    continue;
                };
                jobs[i].deleted = true;
                store
                    .delete_job(jobs[i].id, None)
                    .await
                    .expect("delete job");
            }
            Op::Renew { job, hours: h } => {
                let live: Vec<usize> = (0..jobs.len()).filter(|i| !jobs[*i].deleted).collect();
                let Some(&i) = live.get(job % live.len().max(1)) else {
                    continue;
                };
                let renewed = store.renew_job(jobs[i].id, hours(h), None).await;
                if jobs[i].open || jobs[i].expired {
                    prop_assert!(renewed.is_ok(), "{:?}", renewed);
                    jobs[i].open = true;
                    jobs[i].expired = false;
                    jobs[i].expires_at = Some(hours(h));
                } else {
                    prop_assert!(renewed.is_err(), "a closed job is not renewable");
                }
            }
            Op::Expire { hours: h } => {
                let now = hours(h);
                store.expire_jobs(now, 500).await.expect("expire jobs");
                for j in jobs.iter_mut() {
                    if !j.deleted && j.open && !j.expired && j.expires_at.is_some_and(|t| t <= now)
                    {
                        j.expired = true;
                    }
                }
            }
            Op::Rename { company, name } => {
                companies[company] = NAMES[name].to_string();
                store
                    .update_company(
                        company_ids[company],
                        CompanyFields {
                            name: companies[company].clone(),
                            website: None,
                            description: None,
                        },
                        None,
                    )
                    .await
                    .expect("rename company");
                for j in jobs.iter_mut().filter(|j| j.company == company) {
                    j.reindex(&companies);
                }
            }
            Op::Follow => {
                for index in [&index, &small] {
                    jobboard::search::catch_up(index, &feed)
                        .await
                        .expect("follow the log");
                }
            }
        }
    }
    for index in [&index, &small] {
        jobboard::search::catch_up(index, &feed)
            .await
            .expect("follow the log");
    }
    for (s, company) in searches(&company_ids, at) {
        // The index as served (one block: every match visited), then in blocks of two with a
        // count limit of three (the newest-first traversal stops early): the same pages.
        for (index, limit) in [(&index, None), (&small, Some(3u64))] {
            let s = JobSearch {
                count_limit: limit,
                ..s.clone()
            };
            let matches = reference_matches(&jobs, &s, company);
            let limit_n = limit.map_or(jobboard::store::SEARCH_WINDOW, |l| l as i64);
            let mut expected =
                reference_page(&matches, s.page.page, s.page.size, limit_n, s.facets.any());
            if s.facets.any() {
                expected.facets = Some(reference_facets(&jobs, &matches, &companies, s.facets));
            }
            let found = index.search(&s).expect("search");
            let ids: Vec<i64> = found.rows.iter().map(|r| r.id).collect();
            prop_assert_eq!(&ids, &expected.ids, "{:?}", s);
            prop_assert_eq!(found.total, expected.total, "{:?}", s);
            prop_assert_eq!(found.total_exact, expected.total_exact, "{:?}", s);
            prop_assert_eq!(found.next.map(|a| a.position), expected.next, "{:?}", s);
            if let Some(f) = found.facets {
                let mut f = serde_json::to_value(f).expect("facets as JSON");
                if let Some(list) = f.get_mut("company").and_then(|c| c.as_array_mut()) {
                    for c in list {
                        let id = c["id"].as_i64().expect("an id");
                        c["id"] = serde_json::json!(company_ids.iter().position(|x| *x == id));
                    }
                }
                prop_assert_eq!(Some(f), expected.facets, "{:?}", s);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn any_writes_through_the_log_give_the_reference_pages(ops in proptest::collection::vec(op(), 1..40)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(run(ops))?;
    }
}

/// An index resumes from the `seq` its last commit recorded; one that has applied changes the
/// database's log does not have (the folder kept while the database was replaced) is rebuilt.
#[tokio::test]
async fn an_index_resumes_where_it_stopped_and_is_rebuilt_for_another_database() {
    let (first, second) = (
        crate::harness::sqlite().await,
        crate::harness::sqlite().await,
    );
    let mut ids = Vec::new();
    for (db, titles) in [
        (&first, &["Welder", "Fitter"][..]),
        (&second, &["Painter"][..]),
    ] {
        db.store.migrate().await.expect("migrate");
        let owner = user(&db.store, Role::Employer).await;
        let c = company(&db.store, owner.id, "Acme").await;
        for title in titles {
            let job = crate::harness::job_fields(title);
            ids.push(crate::harness::job(&db.store, c.id, job).await.id);
        }
    }
    let dir = tempfile::tempdir().expect("temp dir");
    {
        let index = Arc::new(SearchIndex::open(dir.path()).expect("open"));
        let feed = StoreFeed(first.store.clone());
        jobboard::search::rebuild(&index, &feed)
            .await
            .expect("rebuild");
        assert_eq!(
            jobboard::search::catch_up(&index, &feed)
                .await
                .expect("follow"),
            2
        );
    }
    // Reopened: the commit's payload says where it stopped.
    let index = Arc::new(SearchIndex::open(dir.path()).expect("reopen"));
    assert_eq!((index.applied(), index.documents()), (2, 2));
    drop(index);

    // Against another database whose log is shorter: rebuilt from its tables.
    let index = Arc::new(SearchIndex::open(dir.path()).expect("reopen"));
    let stop = tokio_util::sync::CancellationToken::new();
    let follower = tokio::spawn(jobboard::search::follow(
        index.clone(),
        Arc::new(StoreFeed(second.store.clone())),
        stop.clone(),
    ));
    for _ in 0..200 {
        if index.is_caught_up() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    stop.cancel();
    follower.await.expect("the follower stops");
    let found = index.search(&JobSearch::default()).expect("search");
    let titles: Vec<&str> = found.rows.iter().map(|r| r.title.as_str()).collect();
    assert_eq!(titles, ["Painter"]);
    assert_eq!(index.applied(), 1);
}

/// An index that the log no longer reaches back to (the rows after its last `seq` were
/// trimmed) is rebuilt from the tables, then follows the log.
#[tokio::test]
async fn an_index_older_than_the_log_is_rebuilt() {
    let db = crate::harness::sqlite().await;
    db.store.migrate().await.expect("migrate");
    let owner = user(&db.store, Role::Employer).await;
    let c = company(&db.store, owner.id, "Acme").await;
    let welder = crate::harness::job(&db.store, c.id, crate::harness::job_fields("Welder")).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let index = Arc::new(SearchIndex::open(dir.path()).expect("open"));
    let feed: Arc<dyn jobboard::search::JobFeed> = Arc::new(StoreFeed(db.store.clone()));
    jobboard::search::catch_up(&index, &*feed)
        .await
        .expect("follow");
    assert_eq!(index.applied(), 1);
    // Two more writes, and the log trimmed up to the first of them.
    db.store.delete_job(welder.id, None).await.expect("delete");
    crate::harness::job(&db.store, c.id, crate::harness::job_fields("Painter")).await;
    let jobboard::config::DatabaseUrl::Sqlite(url) = &db.url else {
        unreachable!("a SQLite database")
    };
    let pool = sqlx::SqlitePool::connect(url).await.expect("open SQLite");
    sqlx::query("DELETE FROM job_changes WHERE seq <= 2")
        .execute(&pool)
        .await
        .expect("trim the log");
    pool.close().await;

    let stop = tokio_util::sync::CancellationToken::new();
    let follower = tokio::spawn(jobboard::search::follow(index.clone(), feed, stop.clone()));
    for _ in 0..200 {
        if index.is_caught_up() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    stop.cancel();
    follower.await.expect("the follower stops");
    let found = index.search(&JobSearch::default()).expect("search");
    let titles: Vec<&str> = found.rows.iter().map(|r| r.title.as_str()).collect();
    assert_eq!(
        titles,
        ["Painter"],
        "the deleted job is gone although its row was trimmed"
    );
    assert_eq!(index.applied(), 3);
}

/// The log keeps its newest rows; trimming deletes the older ones only.
#[tokio::test]
async fn the_log_is_trimmed_to_its_newest_rows() {
    let db = crate::harness::sqlite().await;
    db.store.migrate().await.expect("migrate");
    let owner = user(&db.store, Role::Employer).await;
    let c = company(&db.store, owner.id, "Acme").await;
    for title in ["Welder", "Painter", "Fitter", "Nurse", "Driver"] {
        crate::harness::job(&db.store, c.id, crate::harness::job_fields(title)).await;
    }
    let upkeep = jobboard::store::upkeep::trim_job_changes;
    assert_eq!(upkeep(&*db.store, 10).await.expect("trim"), 0);
    assert_eq!(upkeep(&*db.store, 2).await.expect("trim"), 3);
    assert_eq!(db.store.oldest_job_change().await.expect("oldest"), Some(4));
    assert_eq!(db.store.newest_job_change().await.expect("newest"), 5);
    assert_eq!(upkeep(&*db.store, 2).await.expect("trim"), 0);
}
