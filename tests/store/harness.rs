//! Fresh databases per test, and the fixtures the cases build on. Everything goes through the
//! store's public constructors and trait methods, as the application itself uses them.

use jobboard::config::DatabaseUrl;
pub use jobboard::domain::values::{Email, Title};
use jobboard::domain::{EmploymentType, JobStatus, Role};
use jobboard::store::{
    ApplicationRow, CompanyFields, CompanyRow, JobFields, JobRow, NewUser, Store, StoreError,
    UserRow,
};
use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A store on a database of its own, removed when this is dropped.
pub struct TestDb {
    pub store: Arc<dyn Store>,
    /// Where the database is, for a case that writes rows the store's methods cannot (such as a
    /// corpus with chosen creation times).
    pub url: DatabaseUrl,
    _cleanup: Cleanup,
}

enum Cleanup {
    /// The folder of the SQLite file.
    Dir(#[allow(dead_code)] tempfile::TempDir),
    /// The PostgreSQL database to drop.
    Postgres(String),
}

/// A small pool: the suite runs many databases at once.
const POOL: Option<u32> = Some(4);

pub async fn sqlite() -> TestDb {
    let dir = tempfile::tempdir().expect("temp dir");
    let url = DatabaseUrl::Sqlite(format!("sqlite://{}/store.db", dir.path().display()));
    let store = jobboard::store::connect_with_pool(&url, POOL)
        .await
        .expect("open SQLite");
    TestDb {
        store,
        url,
        _cleanup: Cleanup::Dir(dir),
    }
}

/// The PostgreSQL server the tests create their databases on.
pub fn postgres_admin_url() -> String {
    std::env::var("JOBBOARD_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

pub async fn postgres() -> TestDb {
    let name = format!("jbs_{}", uuid::Uuid::new_v4().simple());
    let admin = postgres_admin_url();
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
        .await
        .unwrap_or_else(|e| {
            panic!(
                "PostgreSQL is required for these tests ({admin}): {e}; run scripts/test, \
                 which starts it"
            )
        });
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("create test database");
    // From here on the guard drops the database, even if opening the store fails.
    let cleanup = Cleanup::Postgres(name.clone());
    let mut url = url::Url::parse(&admin).expect("admin url");
    url.set_path(&name);
    let url = DatabaseUrl::Postgres(url.to_string());
    let store = jobboard::store::connect_with_pool(&url, POOL)
        .await
        .expect("open PostgreSQL");
    TestDb {
        store,
        url,
        _cleanup: cleanup,
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let Cleanup::Postgres(name) = self else {
            return;
        };
        let name = std::mem::take(name);
        // On a thread of its own: Drop cannot await on the test's runtime.
        let admin = postgres_admin_url();
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(async move {
                if let Ok(mut c) = <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await {
                    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .execute(&mut c)
                        .await;
                }
            });
        })
        .join();
    }
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A name no other fixture of this process uses.
pub fn unique(prefix: &str) -> String {
    format!("{prefix}{}", COUNTER.fetch_add(1, Ordering::SeqCst))
}

/// Asserts that a store call failed with `NotFound`.
#[track_caller]
pub fn assert_not_found<T: Debug>(result: Result<T, StoreError>) {
    match result {
        Err(StoreError::NotFound) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
}

/// Asserts that a store call failed with this conflict.
#[track_caller]
pub fn assert_conflict<T: Debug>(result: Result<T, StoreError>, want: jobboard::domain::Conflict) {
    match result {
        Err(StoreError::Conflict(c)) if c == want => {}
        other => panic!("expected Conflict({want:?}), got {other:?}"),
    }
}

pub fn new_user(role: Role) -> NewUser {
    let email = format!("{}@Example.com", unique(role.as_str()));
    NewUser {
        email: Email::parse(&email).expect("a valid email"),
        name: unique("Name "),
        role,
        password_hash: "hash-1".to_string(),
    }
}

pub async fn user(store: &Arc<dyn Store>, role: Role) -> UserRow {
    store
        .create_user(new_user(role))
        .await
        .expect("create user")
}

pub fn company_fields(name: &str) -> CompanyFields {
    CompanyFields {
        name: name.to_string(),
        website: Some("https://example.com".to_string()),
        description: None,
    }
}

pub async fn company(store: &Arc<dyn Store>, owner: i64, name: &str) -> CompanyRow {
    store
        .create_company(owner, company_fields(name), None)
        .await
        .expect("create company")
}

pub fn job_fields(title: &str) -> JobFields {
    JobFields {
        title: Title::parse(title).expect("a valid title"),
        description: "Build things with us".to_string(),
        locations: jobboard::domain::pay_place::places_of_text("Berlin, Germany"),
        workplace: jobboard::domain::pay_place::Workplace::of_remote(false),
        salary: jobboard::domain::pay_place::Salary::older(Some(50_000), Some(70_000)),
        employment_type: EmploymentType::FullTime,
        status: JobStatus::Open,
        expires_at: Some(jobboard::timefmt::now() + chrono::Duration::days(30)),
        resume_required: false,
        questions: None,
    }
}

pub async fn job(store: &Arc<dyn Store>, company_id: i64, fields: JobFields) -> JobRow {
    store
        .create_job(company_id, fields, None)
        .await
        .expect("create job")
}

/// Jobs an apply cannot be judged against without reading them: one asking a question, one
/// requiring a résumé, one closed.
pub struct Declining {
    pub asks: JobRow,
    pub wants: JobRow,
    pub closed: JobRow,
}

pub async fn declining(store: &Arc<dyn Store>, company_id: i64) -> Declining {
    let mut asks = job_fields("Asks");
    asks.questions = Some(r#"[{"id":1,"text":"Rust?","kind":"yes_no","required":true}]"#.into());
    let mut wants = job_fields("Wants a résumé");
    wants.resume_required = true;
    let mut closed = job_fields("Closed");
    closed.status = JobStatus::Closed;
    Declining {
        asks: job(store, company_id, asks).await,
        wants: job(store, company_id, wants).await,
        closed: job(store, company_id, closed).await,
    }
}

/// A résumé's row named `filename`, under a storage key no other fixture uses.
pub fn new_resume(filename: &str) -> jobboard::store::NewResume {
    jobboard::store::NewResume {
        filename: filename.to_string(),
        content_type: "application/pdf".into(),
        size: 10,
        sha256: "0".repeat(64),
        storage_key: format!("resumes/{}", uuid::Uuid::new_v4().simple()),
    }
}

/// An employer with a company, an open job, and a candidate's submitted application to it.
pub struct Scenario {
    pub employer: UserRow,
    pub company: CompanyRow,
    pub job: JobRow,
    pub candidate: UserRow,
    pub application: ApplicationRow,
}

pub async fn scenario(store: &Arc<dyn Store>) -> Scenario {
    let employer = user(store, Role::Employer).await;
    let company = company(store, employer.id, &unique("Acme ")).await;
    let job = job(store, company.id, job_fields("Rust engineer")).await;
    let candidate = user(store, Role::Candidate).await;
    let application = store
        .apply(
            job.id,
            candidate.id,
            jobboard::store::NewApplication {
                cover_letter: Some("Hello".to_string()),
                ..Default::default()
            },
            None,
        )
        .await
        .expect("apply");
    Scenario {
        employer,
        company,
        job,
        candidate,
        application,
    }
}

/// A search as the API answers it: from a search index (in a temporary folder) that has
/// followed the store's job-change log from its start.
pub async fn searched(
    store: &Arc<dyn Store>,
    search: &jobboard::store::JobSearch,
) -> jobboard::search::Found {
    let dir = tempfile::tempdir().expect("temp dir");
    let index = Arc::new(jobboard::search::SearchIndex::open(dir.path()).expect("open the index"));
    let feed = jobboard::search::StoreFeed(store.clone());
    jobboard::search::catch_up(&index, &feed)
        .await
        .expect("follow the log");
    index.search(search).expect("search")
}

/// Runs a query returning one integer on the test database, for facts the store does not
/// show (rows of a table, by type).
pub async fn count(db: &TestDb, sql: &str) -> i64 {
    match &db.url {
        DatabaseUrl::Sqlite(url) => {
            let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(url)
                .await
                .expect("open SQLite");
            sqlx::query_scalar(sql)
                .fetch_one(&mut c)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
        DatabaseUrl::Postgres(url) => {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(url)
                .await
                .expect("open PostgreSQL");
            sqlx::query_scalar(sql)
                .fetch_one(&mut c)
                .await
                .unwrap_or_else(|e| panic!("{sql}: {e}"))
        }
    }
}

/// Runs a statement on the test database; its error, if any, as text.
pub async fn exec(db: &TestDb, sql: &str) -> Result<(), String> {
    let done = match &db.url {
        DatabaseUrl::Sqlite(url) => {
            let mut c = <sqlx::SqliteConnection as sqlx::Connection>::connect(url)
                .await
                .expect("open SQLite");
            sqlx::raw_sql(sql).execute(&mut c).await.map(|_| ())
        }
        DatabaseUrl::Postgres(url) => {
            let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(url)
                .await
                .expect("open PostgreSQL");
            sqlx::raw_sql(sql).execute(&mut c).await.map(|_| ())
        }
    };
    done.map_err(|e| e.to_string())
}

/// Runs statements on the test database itself, for what no store method writes (a chosen
/// creation time, a preference another part of the application sets); panics on an error.
pub async fn run_sql(db: &TestDb, sql: &str) {
    if let Err(e) = exec(db, sql).await {
        panic!("{sql}: {e}");
    }
}

/// A time as an SQL literal both backends read as the store writes it.
pub fn at(t: chrono::DateTime<chrono::Utc>) -> String {
    format!(
        "'{}'",
        t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, false)
    )
}
