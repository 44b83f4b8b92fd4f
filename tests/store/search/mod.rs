//! Search conformance: the search index (`src/search/`), fed through each backend's job-change
//! log, gives exactly the pages and facets the contract's rules give, on a corpus made to find
//! wrong pages.
//!
//! A seeded corpus of [`JOBS`] jobs (or `JOBBOARD_TEST_SEARCH_JOBS`) goes into each backend (the same jobs, the same ids): a
//! Zipf-like vocabulary (a few words in most jobs, many words in few), correlated pairs
//! ("account executive"), two common words that almost never meet, words only in old jobs,
//! only in new jobs or mostly in closed jobs, plurals and irregular plurals, Unicode locations,
//! ties on `created_at`, creation times spread over 400 days, some jobs exactly on a
//! `posted_within_days` boundary, expiry dates ahead of the searches' instant, past it (the
//! upkeep not having run: a search leaves them out at once), exactly on it, or none. Then jobs
//! are closed, reopened, retitled and deleted, and a company renamed, through the store; then
//! the upkeep expires the jobs whose date passed, and jobs are renewed. The corpus's rows go into the log as they go into the
//! tables, so each backend's index is built by following its log from the start; a second
//! index per backend is rebuilt from the tables; both then follow the edits through the log. Then [`SEARCHES`]
//! seeded searches over every parameter, several pages each (deep ones too, up to the
//! 10 000-result window), some with facets, are checked page by page (ids in order, `total`,
//! `total_exact`, facets, and the earliest `expires_at` among every match, which bounds a
//! cached copy) against the reference of `queries.rs`: the contract's rules written
//! plainly over the corpus in memory.
//!
//! `search::<backend>::pages_match_the_reference` checks one backend;
//! `search::both::backends_give_the_same_pages` runs both side by side and compares their pages
//! with each other as well. A mismatch prints the search, the page and both id lists.

use crate::harness::{TestDb, company, user};
use chrono::{DateTime, TimeZone, Utc};
use jobboard::config::DatabaseUrl;
use jobboard::domain::Role;
use jobboard::domain::pay_place::places_to_stored;
use jobboard::search::{SearchIndex, StoreFeed};
use jobboard::store::{CompanyFields, JobSearch, Page, Store};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::fmt::Write as _;
use std::sync::Arc;

mod alerts;
mod corpus;
mod props;
mod queries;

use corpus::{COMPANIES, Job, gen_corpus, gen_title};
use queries::{
    Answer, Search, fixed_searches, gen_pages, gen_search, reference_after, reference_facets,
    reference_keyed, reference_matches, reference_page, reference_valid_until, vocabulary,
};

crate::each_backend!(with_db: pages_match_the_reference);

/// Both backends in one test, each page compared with the other backend's and the reference's.
/// Its backends are listed here by hand: a new backend joins this list as well.
mod both {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn backends_give_the_same_pages() {
        let (sqlite, postgres) = tokio::join!(crate::harness::sqlite(), crate::harness::postgres());
        let dbs = [sqlite, postgres];
        for db in &dbs {
            db.store.migrate().await.expect("migrations run");
        }
        super::conform(&dbs.iter().collect::<Vec<_>>()).await;
    }
}

/// How many jobs the corpus has: [`JOBS`], or `JOBBOARD_TEST_SEARCH_JOBS` (at least that many).
static CORPUS_SIZE: std::sync::LazyLock<usize> =
    std::sync::LazyLock::new(|| match std::env::var("JOBBOARD_TEST_SEARCH_JOBS") {
        Ok(s) => s
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= JOBS)
            .unwrap_or_else(|| panic!("JOBBOARD_TEST_SEARCH_JOBS={s:?} is not a number ≥ {JOBS}")),
        Err(_) => JOBS,
    });
const JOBS: usize = 6_000;
/// The log-fed index's block size.
const SMALL_BLOCK: u32 = 8;
/// The count limit every other search is made with (the rest: the result window, which the
/// corpus never reaches), so that the count rule is judged past its limit too.
const COUNT_LIMIT: u64 = 400;
/// How many searches run (each over several pages).
const SEARCHES: usize = 320;
const SEED: u64 = 0x5EA2_C4F0;

/// The seed of corpus and searches: [`SEED`], or `JOBBOARD_TEST_SEARCH_SEED` to try others.
fn seed() -> u64 {
    match std::env::var("JOBBOARD_TEST_SEARCH_SEED") {
        Ok(s) => s
            .parse()
            .unwrap_or_else(|_| panic!("JOBBOARD_TEST_SEARCH_SEED={s:?} is not a number")),
        Err(_) => SEED,
    }
}

async fn pages_match_the_reference(db: &TestDb) {
    conform(&[db]).await;
}

/// The instant the searches are made at: every `posted_within_days` reaches back from it.
fn fixed_now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 6, 1, 12, 0, 0).unwrap()
}

/// The `posted_within_days` values some jobs were created exactly at the boundary of.
const BOUNDARY_DAYS: &[i64] = &[7, 30, 90, 365];

/// The terms and location key stored for each job of `made`.
macro_rules! stored_terms {
    ($pool:expr, $made:expr) => {{
        let mut stored: Vec<(String, Option<String>, String)> = Vec::new();
        for (id, _) in &$made {
            let row = sqlx::query_as(
                "SELECT search_terms, title_terms, location_key FROM jobs WHERE id = $1",
            )
            .bind(*id)
            .fetch_one(&$pool)
            .await
            .expect("read the stored terms");
            stored.push(row);
        }
        stored
    }};
}

/// Writes the corpus as `create_job` would (the same columns, the same terms), with its ids and
/// creation times, in one transaction.
macro_rules! insert_corpus {
    ($pool:expr, $db:ty, $jobs:expr, $companies:expr, $company_ids:expr) => {{
        let mut tx = $pool.begin().await.expect("begin");
        for chunk in $jobs.chunks(500) {
            let mut qb = sqlx::QueryBuilder::<$db>::new(
                "INSERT INTO jobs (id, company_id, title, description, location, location_key, \
                 remote, salary_min, salary_max, employment_type, status, search_terms, \
                 title_terms, expires_at, created_at, updated_at, workplace, locations, \
                 salary_currency, salary_period) ",
            );
            qb.push_values(chunk, |mut b, j: &Job| {
                b.push_bind(j.id)
                    .push_bind($company_ids[j.company])
                    .push_bind(j.title.clone())
                    .push_bind(j.description.clone())
                    .push_bind(j.location.clone())
                    .push_bind(j.location.to_lowercase())
                    .push_bind(j.remote)
                    .push_bind(j.salary_min)
                    .push_bind(j.salary_max)
                    .push_bind(j.employment_type.as_str())
                    .push_bind(if j.open { "open" } else { "closed" })
                    .push_bind(j.search_terms($companies))
                    .push_bind(j.title_terms_joined())
                    .push_bind(j.expires_at)
                    .push_bind(j.created_at)
                    .push_bind(j.created_at);
                // A job stored before pay and place has none of its columns.
                let paid = !j.legacy && (j.salary_min.is_some() || j.salary_max.is_some());
                b.push_bind((!j.legacy).then(|| j.workplace.as_str()))
                    .push_bind((!j.legacy).then(|| places_to_stored(&j.places)))
                    .push_bind(paid.then(|| j.currency.clone()))
                    .push_bind(paid.then(|| j.period.as_str()));
            });
            qb.build()
                .execute(&mut *tx)
                .await
                .expect("insert the corpus");
            // The log gets the rows' changes as a job write would add them.
            let mut log = sqlx::QueryBuilder::<$db>::new("INSERT INTO job_changes (job_id) ");
            log.push_values(chunk, |mut b, j: &Job| {
                b.push_bind(j.id);
            });
            log.build().execute(&mut *tx).await.expect("log the corpus");
            // The upkeep's agenda gets the open jobs' dates as a job write would add them.
            let dated: Vec<&Job> = chunk
                .iter()
                .filter(|j| j.open && j.expires_at.is_some())
                .collect();
            if !dated.is_empty() {
                let mut agenda = sqlx::QueryBuilder::<$db>::new(
                    "INSERT INTO job_expiries (job_id, expires_at) ",
                );
                agenda.push_values(dated, |mut b, j: &Job| {
                    b.push_bind(j.id).push_bind(j.expires_at);
                });
                agenda
                    .build()
                    .execute(&mut *tx)
                    .await
                    .expect("put the corpus on the agenda");
            }
        }
        tx.commit().await.expect("commit the corpus");
    }};
}

/// One backend with the corpus in it.
struct Backend<'a> {
    name: &'static str,
    store: &'a Arc<dyn Store>,
    url: &'a DatabaseUrl,
    /// The backend's id of each company of the corpus.
    company_ids: Vec<i64>,
    /// Its indexes: one that followed the log from the start (in blocks of [`SMALL_BLOCK`]
    /// documents, so that its searches stop early in many places), one rebuilt from the tables.
    indexes: Vec<(&'static str, Arc<SearchIndex>)>,
    _dirs: Vec<tempfile::TempDir>,
}

impl Backend<'_> {
    async fn seed(&mut self, jobs: &[Job], companies: &[String]) {
        let owner = user(self.store, Role::Employer).await;
        for name in companies {
            self.company_ids
                .push(company(self.store, owner.id, name).await.id);
        }
        // The bulk path writes what `create_job` writes: a few of the jobs are made through the
        // store first and their stored terms compared with the bulk path's, then deleted (the
        // corpus takes their ids).
        let mut made = Vec::new();
        for j in jobs.iter().take(40) {
            let company = self.company_ids[j.company];
            let row = self.store.create_job(company, j.fields(), None).await;
            made.push((row.expect("create job").id, j));
        }
        let stored = match self.url {
            DatabaseUrl::Sqlite(url) => {
                let pool = sqlx::SqlitePool::connect(url).await.expect("open SQLite");
                let stored = stored_terms!(pool, made);
                pool.close().await;
                stored
            }
            DatabaseUrl::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.expect("open PostgreSQL");
                let stored = stored_terms!(pool, made);
                pool.close().await;
                stored
            }
        };
        for ((id, j), stored) in made.iter().zip(stored) {
            let bulk = (
                j.search_terms(companies),
                Some(j.title_terms_joined()),
                j.location.to_lowercase(),
            );
            assert_eq!(
                stored, bulk,
                "{}: job {id} made by create_job from {j:?}",
                self.name
            );
            self.store.delete_job(*id, None).await.expect("delete job");
        }

        let ids = &self.company_ids;
        match self.url {
            DatabaseUrl::Sqlite(url) => {
                let pool = sqlx::SqlitePool::connect(url).await.expect("open SQLite");
                insert_corpus!(pool, sqlx::Sqlite, jobs, companies, ids);
                pool.close().await;
            }
            DatabaseUrl::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.expect("open PostgreSQL");
                insert_corpus!(pool, sqlx::Postgres, jobs, companies, ids);
                sqlx::query("SELECT setval(pg_get_serial_sequence('jobs', 'id'), $1)")
                    .bind(jobs.len() as i64)
                    .execute(&pool)
                    .await
                    .expect("move the id sequence past the corpus");
                pool.close().await;
            }
        }

        // The store reads the corpus back as it was written.
        for j in jobs.iter().step_by(97).chain(jobs.last()) {
            let row = self.store.job(j.id).await.expect("read job");
            assert_eq!(
                row.fields().expect("valid fields"),
                j.fields(),
                "{}",
                self.name
            );
            assert_eq!(row.created_at, j.created_at, "{}: job {}", self.name, j.id);
            assert_eq!(row.expires_at, j.expires_at, "{}: job {}", self.name, j.id);
            assert_eq!(row.company_name, companies[j.company], "{}", self.name);
        }
    }

    /// Its two indexes: one follows the whole log from the start, one is rebuilt from the
    /// tables (then follows the log).
    async fn index(&mut self) {
        let feed = StoreFeed(self.store.clone());
        for (kind, rebuilt) in [("log", false), ("rebuilt", true)] {
            let dir = tempfile::tempdir().expect("temp dir");
            let index = Arc::new(if rebuilt {
                SearchIndex::open(dir.path()).expect("open the index")
            } else {
                SearchIndex::open_with_block_size(dir.path(), SMALL_BLOCK).expect("open the index")
            });
            if rebuilt {
                jobboard::search::rebuild(&index, &feed)
                    .await
                    .expect("rebuild the index");
            }
            jobboard::search::catch_up(&index, &feed)
                .await
                .expect("follow the log");
            self.indexes.push((kind, index));
            self._dirs.push(dir);
        }
    }

    /// Brings its indexes up to the log's newest change.
    async fn follow(&self) {
        let feed = StoreFeed(self.store.clone());
        for (_, index) in &self.indexes {
            jobboard::search::catch_up(index, &feed)
                .await
                .expect("follow the log");
        }
    }

    /// The search as this backend is asked it: the corpus's company index becomes its id.
    fn search(&self, s: &Search) -> JobSearch {
        JobSearch {
            company_id: s.company.map(|c| self.company_ids[c]),
            ..s.search.clone()
        }
    }
}

/// Changes made through the store after the bulk load, so the trigger and update paths are
/// exercised too: jobs closed, reopened, retitled, deleted, and a company renamed.
async fn edit_through_the_store(
    backends: &[Backend<'_>],
    jobs: &mut [Job],
    companies: &mut [String],
    rng: &mut StdRng,
) {
    let mut apply = Vec::new();
    for _ in 0..120 {
        let i = rng.gen_range(0..jobs.len());
        if jobs[i].deleted {
            continue;
        }
        match rng.gen_range(0..10) {
            0..=4 => jobs[i].open = false,
            5..=7 => jobs[i].open = true,
            8 => {
                jobs[i].title = gen_title(rng, i);
                jobs[i].reindex(companies);
            }
            _ => {
                jobs[i].deleted = true;
                apply.push((i, true));
                continue;
            }
        }
        apply.push((i, false));
    }
    for b in backends {
        for &(i, delete) in &apply {
            let job = &jobs[i];
            if delete {
                b.store.delete_job(job.id, None).await.expect("delete job");
                continue;
            }
            let current = b.store.job(job.id).await.expect("read job");
            b.store
                .update_job(job.id, job.fields(), current.updated_at, None)
                .await
                .expect("update job")
                .expect("the version matched");
        }
    }
    // A renamed company: its jobs' terms change.
    let renamed = 6;
    companies[renamed] = "Nucleus Labs".to_string();
    for b in backends {
        b.store
            .update_company(
                b.company_ids[renamed],
                CompanyFields {
                    name: companies[renamed].clone(),
                    website: None,
                    description: None,
                },
                None,
            )
            .await
            .expect("rename company");
    }
    for job in jobs.iter_mut().filter(|j| j.company == renamed) {
        job.reindex(companies);
    }

    // The upkeep expires the open jobs whose date passed ten days before the searches'
    // instant: the index drops them through the log (no search found them before either);
    // those whose date passed since, exactly at the instant included, are still stored open
    // for the searches to leave out by themselves.
    let upkept = fixed_now() - chrono::Duration::days(10);
    for b in backends {
        let mut expired = 0;
        loop {
            let batch = b.store.expire_jobs(upkept, 500).await.expect("expire jobs");
            expired += batch.jobs;
            if batch.taken < 500 {
                break;
            }
        }
        let due = jobs
            .iter()
            .filter(|j| !j.deleted && j.open && j.expires_at.is_some_and(|t| t <= upkept))
            .count() as u64;
        assert_eq!(expired, due, "{}: the jobs whose date passed", b.name);
    }
    for j in jobs.iter_mut() {
        if !j.deleted && j.open && j.expires_at.is_some_and(|t| t <= upkept) {
            j.expired = true;
        }
    }
    // Renewals: expired and open jobs open again with a new date; a closed one is refused.
    let mut renew = Vec::new();
    while renew.len() < 60 {
        let i = rng.gen_range(0..jobs.len());
        if !jobs[i].deleted && !renew.iter().any(|(r, _)| *r == i) {
            let days = rng.gen_range(1..=60);
            renew.push((i, fixed_now() + chrono::Duration::days(days)));
        }
    }
    for b in backends {
        for &(i, until) in &renew {
            let got = b.store.renew_job(jobs[i].id, until, None).await;
            if jobs[i].open || jobs[i].expired {
                assert_eq!(got.expect("renew").expires_at, Some(until), "{}", b.name);
            } else {
                assert!(
                    matches!(
                        got,
                        Err(jobboard::store::StoreError::Conflict(
                            jobboard::domain::Conflict::NotRenewable(_)
                        ))
                    ),
                    "{}: a closed job is not renewable: {got:?}",
                    b.name
                );
            }
        }
    }
    for &(i, until) in &renew {
        if jobs[i].open || jobs[i].expired {
            jobs[i].open = true;
            jobs[i].expired = false;
            jobs[i].expires_at = Some(until);
        }
    }
}

/// A found page as the reference states it (company ids as the corpus's indexes).
fn answer(b: &Backend<'_>, found: &jobboard::search::Found) -> Answer {
    Answer {
        ids: found.rows.iter().map(|r| r.id).collect(),
        total: found.total,
        total_exact: found.total_exact,
        next: found.next.map(|a| a.position),
        facets: found.facets.as_ref().map(|f| {
            let mut f = serde_json::to_value(f).expect("facets as JSON");
            // Company ids differ by backend: the corpus's index stands for them.
            if let Some(list) = f.get_mut("company").and_then(|c| c.as_array_mut()) {
                for c in list {
                    let id = c["id"].as_i64().expect("an id");
                    let at = b.company_ids.iter().position(|x| *x == id);
                    c["id"] = serde_json::json!(at);
                }
            }
            f
        }),
    }
}

/// A cached page is served no later than the earliest `expires_at` of a match it could lose,
/// and not one that has passed already.
fn check_bound(
    name: &str,
    got: Option<DateTime<Utc>>,
    bound: Option<DateTime<Utc>>,
    problems: &mut Vec<String>,
) {
    let ok = match (got, bound) {
        (None, None) => true,
        (Some(g), Some(b)) => g <= b && g > fixed_now(),
        (Some(g), None) => g > fixed_now(),
        (None, Some(_)) => false,
    };
    if !ok {
        problems.push(format!(
            "{name}: served until {got:?}, but a match it could lose expires at {bound:?}"
        ));
    }
}

async fn conform(dbs: &[&TestDb]) {
    let started = std::time::Instant::now();
    let seed = seed();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut companies: Vec<String> = COMPANIES.iter().map(|c| c.to_string()).collect();
    let mut jobs = gen_corpus(&mut rng, &companies);
    let mut backends: Vec<Backend<'_>> = dbs
        .iter()
        .map(|db| Backend {
            name: db.store.backend(),
            store: &db.store,
            url: &db.url,
            company_ids: Vec::new(),
            indexes: Vec::new(),
            _dirs: Vec::new(),
        })
        .collect();
    futures::future::join_all(backends.iter_mut().map(|b| b.seed(&jobs, &companies))).await;
    // The indexes are made from the bulk load, then follow the edits through the log.
    futures::future::join_all(backends.iter_mut().map(Backend::index)).await;
    edit_through_the_store(&backends, &mut jobs, &mut companies, &mut rng).await;
    futures::future::join_all(backends.iter().map(Backend::follow)).await;
    let seeded = started.elapsed();

    let open = jobs.iter().filter(|j| j.searchable_at(fixed_now())).count();
    let v = vocabulary(&jobs);
    let mut searches = fixed_searches();
    for _ in 0..SEARCHES {
        searches.push(gen_search(&mut rng, &v, &jobs));
    }
    for s in &mut searches {
        let matches = reference_matches(&jobs, &s.search, s.company).len() as i64;
        s.pages = gen_pages(&mut rng, s.pages[0].1, matches);
    }

    let mut report = String::new();
    let mut mismatches = 0;
    let mut pages_read = 0;
    let mut sizes = [0usize; 4]; // searches with 0, 1–100, 101–1 000 and more matches
    let indexes: Vec<(String, &Backend<'_>, &Arc<SearchIndex>)> = backends
        .iter()
        .flat_map(|b| {
            b.indexes
                .iter()
                .map(move |(kind, index)| (format!("{}/{kind}", b.name), b, index))
        })
        .collect();
    for (n, s) in searches.iter().enumerate() {
        let keyed = reference_keyed(&jobs, &s.search, s.company);
        let matches: Vec<i64> = keyed.iter().map(|k| k.2).collect();
        sizes[match matches.len() {
            0 => 0,
            1..=100 => 1,
            101..=1_000 => 2,
            _ => 3,
        }] += 1;
        let limit = if n % 2 == 0 { Some(COUNT_LIMIT) } else { None };
        let limit_n = limit.map_or(jobboard::store::SEARCH_WINDOW, |l| l as i64);
        let faceted = s.search.facets.any();
        for &(page, size) in &s.pages {
            let mut expected = reference_page(&matches, page, size, limit_n, faceted);
            if faceted {
                expected.facets = Some(reference_facets(
                    &jobs,
                    &matches,
                    &companies,
                    s.search.facets,
                ));
            }
            let asked = |b: &Backend<'_>| JobSearch {
                page: Page { page, size },
                count_limit: limit,
                ..b.search(s)
            };
            let bound = reference_valid_until(
                &jobs,
                &matches,
                (page * size) as usize,
                expected.total_exact,
            );
            let mut got: Vec<Answer> = Vec::new();
            let mut problems: Vec<String> = Vec::new();
            for (name, b, index) in &indexes {
                let asked = asked(b);
                let found = index
                    .search(&asked)
                    .unwrap_or_else(|e| panic!("{name}: search #{n} {asked:?} failed: {e}"));
                check_bound(name, found.valid_until, bound, &mut problems);
                let answer = answer(b, &found);
                // The page after it, by its cursor: the reference's next page, and the cursor
                // names the page's last result.
                if let (Some(after), Some(end)) = (found.next, expected.next)
                    && answer == expected
                {
                    let k = keyed[end as usize - 1];
                    if (after.score, after.created_at, after.id, after.position)
                        != (k.0, k.1, k.2, end)
                    {
                        problems.push(format!("{name}: the cursor {after:?} is not the page's last result {k:?} at {end}"));
                    }
                    let next = index
                        .search(&JobSearch {
                            after: Some(after),
                            ..asked.clone()
                        })
                        .unwrap_or_else(|e| {
                            panic!("{name}: search #{n} after {after:?} failed: {e}")
                        });
                    let mut want = reference_after(&matches, end, size, limit_n, faceted);
                    want.facets = expected.facets.clone();
                    let got_next = self::answer(b, &next);
                    if got_next != want {
                        problems.push(format!(
                            "{name}: the page after position {end}: expected total {} exact {} ids {:?}, got total {} exact {} ids {:?}",
                            want.total, want.total_exact, want.ids, got_next.total, got_next.total_exact, got_next.ids
                        ));
                    }
                }
                got.push(answer);
            }
            pages_read += 1;
            let wrong: Vec<usize> = (0..got.len()).filter(|i| got[*i] != expected).collect();
            let disagree = got.windows(2).any(|w| w[0] != w[1]);
            if wrong.is_empty() && !disagree && problems.is_empty() {
                continue;
            }
            mismatches += 1;
            if mismatches > 12 {
                continue;
            }
            let _ = writeln!(
                report,
                "\nsearch #{n}: q={:?}, page {page} of size {size}, {} matches in all\n  {:?}",
                s.q,
                matches.len(),
                asked(&backends[0])
            );
            let _ = writeln!(
                report,
                "  expected: total {} exact {} next {:?} ids {:?}",
                expected.total, expected.total_exact, expected.next, expected.ids
            );
            if let Some(f) = &expected.facets {
                let _ = writeln!(report, "  expected facets: {f}");
            }
            for ((name, _, _), g) in indexes.iter().zip(&got) {
                let verdict = if *g == expected { "right" } else { "WRONG" };
                let _ = writeln!(
                    report,
                    "  {name:<16} {verdict}: total {} exact {} next {:?} ids {:?}",
                    g.total, g.total_exact, g.next, g.ids
                );
                if let Some(f) = &g.facets {
                    let _ = writeln!(report, "  {name:<16} facets: {f}");
                }
            }
            for p in &problems {
                let _ = writeln!(report, "  {p}");
            }
        }
    }
    let names: Vec<&str> = indexes.iter().map(|(name, _, _)| name.as_str()).collect();
    eprintln!(
        "search conformance on {names:?}, seed {seed}: {} jobs ({open} open), seeded in {:.1?}; {} searches \
         ({} with no match, {} with 1–100, {} with 101–1 000, {} with more), {pages_read} \
         pages, in {:.1?} all told",
        jobs.len(),
        seeded,
        searches.len(),
        sizes[0],
        sizes[1],
        sizes[2],
        sizes[3],
        started.elapsed()
    );
    assert!(
        mismatches == 0,
        "seed {seed}: {mismatches} of {pages_read} pages differ from the reference (or between \
         backends); the first ones:{report}"
    );
    assert!(
        searches.len() >= 300 && sizes.iter().all(|n| *n >= 20),
        "{sizes:?}"
    );
}
