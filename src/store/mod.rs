//! Persistence: one [`Store`] trait of use-case methods, each one transaction inside the
//! implementation, with a PostgreSQL and a SQLite implementation that share everything but the
//! SQL dialect (see `dialect.rs` and `sql/`).

pub mod alert_digests;
pub mod alerts;
pub mod console;
mod dialect;
pub mod digests;
pub mod events;
pub mod idempotency;
pub mod job_upkeep;
pub mod joblog;
mod postgres;
mod sqlite;
pub mod sqs_dead_letters;
pub mod upkeep;

pub use alert_digests::*;
pub use alerts::*;
pub use console::*;
pub use digests::*;
pub use events::*;
pub use idempotency::*;
pub use job_upkeep::JobUpkeepStore;
pub use joblog::*;
pub use sqs_dead_letters::*;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;

use crate::domain::values::{Email, SalaryRange, Title};
use crate::domain::{ApplicationStatus, Conflict, EmploymentType, JobStatus, Role, UnknownValue};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::sync::Arc;

/// What a store call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("not found")]
    NotFound,
    #[error("conflict: {0:?}")]
    Conflict(Conflict),
    #[error(transparent)]
    Other(#[from] anyhow::Error),
}

pub type StoreResult<T> = Result<T, StoreError>;

impl From<sqlx::Error> for StoreError {
    fn from(e: sqlx::Error) -> Self {
        match e {
            sqlx::Error::RowNotFound => StoreError::NotFound,
            other => StoreError::Other(anyhow::Error::new(other)),
        }
    }
}

/// A user as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub email: String,
    pub name: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub password_hash: String,
    pub token_generation: i64,
    pub created_at: DateTime<Utc>,
}

impl UserRow {
    pub fn role(&self) -> Role {
        self.role
    }
}

/// A user's email preferences (CONTRACT.md §4, "Job alerts and email preferences").
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Notifications {
    /// Whether the hourly `applications.digest` is sent to them.
    pub application_digest: bool,
}

/// A new account; its email is unique by [`Email::key`].
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: Email,
    pub name: String,
    pub role: Role,
    pub password_hash: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CompanyRow {
    pub id: i64,
    pub name: String,
    pub website: Option<String>,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A company's editable fields, complete (a PATCH is merged before it reaches the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompanyFields {
    pub name: String,
    pub website: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MemberRow {
    pub id: i64,
    pub name: String,
    pub email: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: i64,
    pub company_id: i64,
    pub company_name: String,
    pub title: String,
    pub description: String,
    pub location: String,
    pub remote: bool,
    pub salary_min: Option<i64>,
    pub salary_max: Option<i64>,
    #[sqlx(try_from = "String")]
    pub employment_type: EmploymentType,
    /// The stored status: an open job past its `expires_at` reads as expired
    /// ([`JobRow::status_at`]) before the upkeep writes it.
    #[sqlx(try_from = "String")]
    pub status: JobStatus,
    /// When the job expires; `None` for a job written before jobs expired (the upkeep gives
    /// it one) and for a job waiting for review without one (its approval gives it one).
    pub expires_at: Option<DateTime<Utc>>,
    /// An operator's reason, while the job is rejected.
    pub rejection_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl JobRow {
    /// The status the job reads as at `now` (see [`crate::domain::job::status_at`]).
    pub fn status_at(&self, now: DateTime<Utc>) -> JobStatus {
        crate::domain::job::status_at(self.status, self.expires_at, now)
    }

    /// The job's fields, parsed again by today's rules.
    pub fn fields(&self) -> Result<JobFields, UnknownValue> {
        let invalid = |kind, value: String| UnknownValue { kind, value };
        Ok(JobFields {
            title: Title::parse(&self.title)
                .map_err(|_| invalid("job title", self.title.clone()))?,
            description: self.description.clone(),
            location: self.location.clone(),
            remote: self.remote,
            salary: SalaryRange::parse(self.salary_min, self.salary_max).map_err(|_| {
                invalid(
                    "salary range",
                    format!("{:?}..{:?}", self.salary_min, self.salary_max),
                )
            })?,
            employment_type: self.employment_type,
            status: self.status,
            expires_at: self.expires_at,
        })
    }
}

/// A job's editable fields, complete and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFields {
    pub title: Title,
    pub description: String,
    pub location: String,
    pub remote: bool,
    pub salary: SalaryRange,
    pub employment_type: EmploymentType,
    pub status: JobStatus,
    /// When the job expires (see [`JobRow::expires_at`]).
    pub expires_at: Option<DateTime<Utc>>,
}

/// An operator's decision on a job waiting for review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    /// The job opens now (its `created_at` becomes the approval), until the `expires_at` its
    /// members set if that is still ahead, else for `posting` (`JOB_POSTING_DAYS`).
    Approve { posting: chrono::Duration },
    /// The job is rejected with this reason (already checked: 1–1000 code points).
    Reject { reason: String },
}

/// The filters of a job search, already validated and normalised.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct JobSearch {
    /// Terms every result must contain (see `domain::search`).
    pub terms: Vec<String>,
    /// Lower-cased substring of the location.
    pub location: Option<String>,
    pub remote: Option<bool>,
    pub company_id: Option<i64>,
    /// Only these jobs (`ids=`, at most [`MAX_SEARCH_IDS`], ascending and distinct).
    pub ids: Option<Vec<i64>>,
    pub salary_min: Option<i64>,
    pub employment_type: Option<String>,
    /// Only jobs created at or after this instant (`posted_within_days`).
    pub posted_within: Option<PostedWithin>,
    pub sort: SearchSort,
    pub page: Page,
    /// The facets to count over every match.
    pub facets: Facets,
    /// The instant whose open jobs are searched: a job whose `expires_at` is not after it is
    /// left out. `None`: the moment the search runs. Not part of a cached page's key (a cached
    /// page is never served past its earliest match's `expires_at`).
    #[serde(skip)]
    pub at: Option<DateTime<Utc>>,
}

/// Which facets a search counts (`facets=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Facets {
    pub employment_type: bool,
    pub remote: bool,
    pub company: bool,
}

impl Facets {
    /// Whether any is asked for.
    pub fn any(&self) -> bool {
        self.employment_type || self.remote || self.company
    }
}

/// `posted_within_days`: the days asked for (what a cached page is keyed by) and the instant
/// they reach back to, taken once when the request arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct PostedWithin {
    pub days: i64,
    #[serde(skip)]
    pub since: DateTime<Utc>,
}

impl PostedWithin {
    /// The jobs posted within the last `days` days before `now`.
    pub fn days_before(days: i64, now: DateTime<Utc>) -> PostedWithin {
        PostedWithin {
            days,
            since: now - chrono::Duration::days(days),
        }
    }
}

/// The order of a search's results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchSort {
    /// `created_at` descending, then `id` descending.
    #[default]
    Newest,
    /// Jobs whose title holds the most distinct query terms first, then newest.
    Relevance,
}

impl SearchSort {
    pub fn parse(s: &str) -> Option<SearchSort> {
        match s {
            "newest" => Some(SearchSort::Newest),
            "relevance" => Some(SearchSort::Relevance),
            _ => None,
        }
    }
}

/// A search serves its first this many results; a page that ends past them is refused.
pub const SEARCH_WINDOW: i64 = 10_000;

/// The most job ids one search may name (`ids=`): a page's worth.
pub const MAX_SEARCH_IDS: usize = 100;

impl JobSearch {
    /// Whether results are ordered by title relevance (asked for, and there are words).
    pub fn by_relevance(&self) -> bool {
        self.sort == SearchSort::Relevance && !self.terms.is_empty()
    }
}

/// A page of a list: `page` from 1, `size` 1–100.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
pub struct Page {
    pub page: i64,
    pub size: i64,
}

impl Default for Page {
    fn default() -> Self {
        Page { page: 1, size: 20 }
    }
}

impl Page {
    pub fn offset(&self) -> i64 {
        (self.page - 1).saturating_mul(self.size)
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApplicationRow {
    pub id: i64,
    pub job_id: i64,
    pub job_title: String,
    pub company_id: i64,
    pub company_name: String,
    pub candidate_id: i64,
    pub candidate_name: String,
    pub candidate_email: String,
    #[sqlx(try_from = "String")]
    pub status: ApplicationStatus,
    pub cover_letter: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl ApplicationRow {
    pub fn status(&self) -> ApplicationStatus {
        self.status
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HistoryRow {
    /// Read through [`HistoryRow::old_status`].
    old_status: Option<String>,
    #[sqlx(try_from = "String")]
    pub new_status: ApplicationStatus,
    pub changed_by: i64,
    pub event_id: Option<String>,
    pub at: DateTime<Utc>,
}

impl HistoryRow {
    /// The status before the change (none for the first row), read strictly.
    pub fn old_status(&self) -> Result<Option<ApplicationStatus>, UnknownValue> {
        self.old_status
            .clone()
            .map(ApplicationStatus::try_from)
            .transpose()
    }
}

/// Whose applications a listing shows.
#[derive(Debug, Clone, Copy)]
pub enum ApplicationViewer {
    Candidate(i64),
    /// Applications to jobs of the companies this employer is a member of.
    Employer(i64),
}

/// The outcome of a status change.
#[derive(Debug, Clone)]
pub struct StatusChange {
    pub application: ApplicationRow,
    /// The event written to the outbox; `None` when the status was already the requested one.
    pub event_id: Option<String>,
}

/// Stores an idempotent request's first response in the same transaction as its write.
pub struct Completion<'a, T> {
    /// The idempotency record the request holds, and the token that proves it still does.
    pub record_id: i64,
    pub token: &'a str,
    pub status: u16,
    /// Renders the response body from what the write produced, inside its transaction.
    pub render: &'a (dyn Fn(&T) -> String + Send + Sync),
}

/// An optional completion, passed to every write a client may retry with an `Idempotency-Key`.
pub type Idem<'a, T> = Option<&'a Completion<'a, T>>;

/// How long a sign-in failure counts: 15 minutes.
pub const AUTH_FAILURE_WINDOW_MS: i64 = 15 * 60 * 1000;

/// The keys of the two counters a sign-in's failures are charged to: its email's and its
/// client address's.
#[derive(Debug, Clone, Copy)]
pub struct AuthKeys<'a> {
    pub email: &'a str,
    pub addr: &'a str,
}

/// One failure counter: the failures of its current window and the ms until that window ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FailureCount {
    pub failures: i64,
    pub remaining_ms: i64,
}

/// Both counters of a sign-in; one with no failures in a live window is the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuthCounters {
    pub email: FailureCount,
    pub addr: FailureCount,
}

/// Every use case the application needs from its database.
#[async_trait]
pub trait Store:
    EventStore
    + DigestStore
    + IdempotencyStore
    + ConsoleStore
    + SqsDeadLetterStore
    + JobLogStore
    + JobUpkeepStore
    + AlertStore
    + AlertDigestStore
    + Send
    + Sync
    + 'static
{
    /// `postgres` or `sqlite`.
    fn backend(&self) -> &'static str;
    /// Applies pending migrations.
    async fn migrate(&self) -> anyhow::Result<()>;
    /// Fails, saying what to do, unless the database has every migration of this binary; returns
    /// the applied ones it does not know (a newer release's, `NNNN_description`), if any.
    async fn check_schema(&self) -> anyhow::Result<Vec<String>>;
    /// A trivial query, for readiness.
    async fn ping(&self) -> anyhow::Result<()>;

    // Accounts
    async fn create_user(&self, user: NewUser) -> StoreResult<UserRow>;
    async fn user_by_id(&self, id: i64) -> StoreResult<UserRow>;
    async fn user_by_email_key(&self, email_key: &str) -> StoreResult<UserRow>;
    /// Stores a new hash and invalidates every earlier token.
    async fn change_password(
        &self,
        user_id: i64,
        password_hash: &str,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()>;
    /// Deletes the user with their applications and memberships.
    async fn delete_user(&self, user_id: i64) -> StoreResult<()>;
    /// The user's email preferences; `NotFound` for no such user.
    async fn notifications(&self, user_id: i64) -> StoreResult<Notifications>;
    /// Sets the preferences given (`None` keeps one as it is) and returns them all;
    /// `NotFound` for no such user.
    async fn update_notifications(
        &self,
        user_id: i64,
        application_digest: Option<bool>,
        idem: Idem<'_, Notifications>,
    ) -> StoreResult<Notifications>;
    /// The failures counted against `keys` in windows that have not ended (`window_ms` long).
    async fn auth_failures(&self, keys: AuthKeys<'_>, window_ms: i64) -> StoreResult<AuthCounters>;
    /// Counts one failure against both counters, at once and atomically, and returns the new
    /// counts; a counter whose window has ended starts a new one.
    async fn count_auth_failure(
        &self,
        keys: AuthKeys<'_>,
        window_ms: i64,
    ) -> StoreResult<AuthCounters>;
    /// A sign-in that turned out right: the email's counter is cleared and the address's
    /// gives back the one failure this attempt counted.
    async fn forgive_auth_failure(&self, keys: AuthKeys<'_>) -> StoreResult<()>;
    /// Deletes up to `limit` counters whose window (`window_ms` long) has ended.
    async fn delete_expired_auth_failures(&self, window_ms: i64, limit: i64) -> StoreResult<u64>;

    // Companies
    /// Creates the company with `owner` as its first member.
    async fn create_company(
        &self,
        owner: i64,
        fields: CompanyFields,
        idem: Idem<'_, CompanyRow>,
    ) -> StoreResult<CompanyRow>;
    async fn company(&self, id: i64) -> StoreResult<CompanyRow>;
    /// All companies, or those `member` belongs to.
    async fn list_companies(
        &self,
        member: Option<i64>,
        page: Page,
    ) -> StoreResult<(Vec<CompanyRow>, i64)>;
    async fn is_member(&self, company_id: i64, user_id: i64) -> StoreResult<bool>;
    /// Updates the company (and the search terms of its jobs when the name changes).
    async fn update_company(
        &self,
        id: i64,
        fields: CompanyFields,
        idem: Idem<'_, CompanyRow>,
    ) -> StoreResult<CompanyRow>;
    /// `Conflict(CompanyHasJobs)` while it has jobs.
    async fn delete_company(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()>;
    async fn members(&self, company_id: i64) -> StoreResult<Vec<MemberRow>>;
    /// Adds an existing employer; `NotFound` for an unknown email or a non-employer.
    async fn add_member(
        &self,
        company_id: i64,
        email: &Email,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()>;
    /// `NotFound` if not a member, `Conflict(LastMember)` for the last one.
    async fn remove_member(
        &self,
        company_id: i64,
        user_id: i64,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()>;

    // Jobs
    async fn create_job(
        &self,
        company_id: i64,
        fields: JobFields,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow>;
    async fn job(&self, id: i64) -> StoreResult<JobRow>;
    /// Replaces the fields if the job still has `expected_updated_at`; `Ok(None)` if it changed
    /// meanwhile (the caller merges again).
    async fn update_job(
        &self,
        id: i64,
        fields: JobFields,
        expected_updated_at: DateTime<Utc>,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<Option<JobRow>>;
    /// Deletes the job with its applications and their history.
    async fn delete_job(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()>;
    /// Opens an open or expired job until `expires_at`; `Conflict(NotRenewable)` otherwise.
    async fn renew_job(
        &self,
        id: i64,
        expires_at: DateTime<Utc>,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow>;
    /// An operator's decision on a job waiting for review, with one `job.reviewed` event per
    /// member of its company in the same transaction; `Conflict(JobTransition)` unless it is
    /// waiting for review.
    async fn review_job(
        &self,
        id: i64,
        review: Review,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow>;
    /// The jobs in `status` at `now` (an open job past its `expires_at` counts as expired),
    /// oldest first (`created_at`, then id).
    async fn jobs_in_status(
        &self,
        status: JobStatus,
        now: DateTime<Utc>,
        page: Page,
    ) -> StoreResult<(Vec<JobRow>, i64)>;

    // Applications
    /// `Conflict(AlreadyApplied)` from the unique constraint, `Conflict(JobClosed)`.
    async fn apply(
        &self,
        job_id: i64,
        candidate_id: i64,
        cover_letter: Option<String>,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<ApplicationRow>;
    async fn application(&self, id: i64) -> StoreResult<ApplicationRow>;
    async fn list_applications(
        &self,
        viewer: ApplicationViewer,
        job_id: Option<i64>,
        status: Option<ApplicationStatus>,
        page: Page,
    ) -> StoreResult<(Vec<ApplicationRow>, i64)>;
    /// Moves the application, writing its history row and outbox event in one transaction.
    async fn change_status(
        &self,
        id: i64,
        to: ApplicationStatus,
        actor: crate::domain::Actor,
        changed_by: i64,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<StatusChange>;
    async fn delete_application(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()>;
    async fn history(&self, application_id: i64) -> StoreResult<Vec<HistoryRow>>;
}

/// Limits PostgreSQL puts on each statement of a connection (`statement_timeout`,
/// `lock_timeout`). SQLite has one writer and its own busy timeout, and ignores them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DbTimeouts {
    pub statement: std::time::Duration,
    pub lock: std::time::Duration,
}

/// Opens the store that `url` names, with the default pool size.
pub async fn connect(url: &crate::config::DatabaseUrl) -> anyhow::Result<Arc<dyn Store>> {
    connect_with_pool(url, None).await
}

/// Opens the store that `url` names with at most `pool_size` connections (default: 32 on
/// PostgreSQL, 8 on SQLite).
pub async fn connect_with_pool(
    url: &crate::config::DatabaseUrl,
    pool_size: Option<u32>,
) -> anyhow::Result<Arc<dyn Store>> {
    connect_with(url, pool_size, None).await
}

/// Opens the store that `url` names with at most `pool_size` connections, each with
/// `timeouts` on PostgreSQL (none: the server's defaults).
pub async fn connect_with(
    url: &crate::config::DatabaseUrl,
    pool_size: Option<u32>,
    timeouts: Option<DbTimeouts>,
) -> anyhow::Result<Arc<dyn Store>> {
    Ok(match url {
        crate::config::DatabaseUrl::Sqlite(u) => {
            Arc::new(SqliteStore::connect(u, pool_size.unwrap_or(8)).await?)
        }
        crate::config::DatabaseUrl::Postgres(u) => {
            Arc::new(PgStore::connect(u, pool_size.unwrap_or(32), timeouts).await?)
        }
    })
}

/// Whether `e` is PostgreSQL cancelling a statement that ran past `statement_timeout`
/// (57014) or waited past `lock_timeout` for a lock (55P03).
pub fn is_database_timeout(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<sqlx::Error>()
            .and_then(|e| e.as_database_error())
            .and_then(|d| d.code())
            .is_some_and(|code| code == "57014" || code == "55P03")
    })
}

/// The verdict on a database whose applied migrations are `applied`, for a binary that knows
/// `known` (version, description each): an error when one of `known` is missing, else the
/// applied migrations this binary does not know. Those are a newer release's; its migrations
/// follow expand/contract, so the schema stays usable by this one (a rollback).
pub fn schema_verdict(
    applied: &[(i64, String)],
    known: &[(i64, String)],
) -> anyhow::Result<Vec<String>> {
    let name = |(v, d): &(i64, String)| format!("{v:04}_{d}");
    let unknown: Vec<String> = applied
        .iter()
        .filter(|(v, _)| !known.iter().any(|(k, _)| k == v))
        .map(name)
        .collect();
    let pending: Vec<String> = known
        .iter()
        .filter(|(k, _)| !applied.iter().any(|(v, _)| v == k))
        .map(name)
        .collect();
    if !pending.is_empty() && !unknown.is_empty() {
        anyhow::bail!(
            "the database schema has migrations this jobboard does not know ({}) and lacks some \
             of its own ({}): it was migrated by another line of releases; run a release that \
             has both",
            unknown.join(", "),
            pending.join(", ")
        );
    }
    if !pending.is_empty() {
        anyhow::bail!(
            "the database schema is behind this jobboard (pending migrations: {}): run \
             `jobboard migrate` first",
            pending.join(", ")
        );
    }
    Ok(unknown)
}

#[cfg(test)]
mod tests {
    /// Both backends must have the same migrations, by number and name.
    #[test]
    fn migration_folders_match() {
        let names = |dir: &str| {
            let mut v: Vec<String> =
                std::fs::read_dir(format!("{}/migrations/{dir}", env!("CARGO_MANIFEST_DIR")))
                    .unwrap()
                    .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                    .collect();
            v.sort();
            v
        };
        let pg = names("postgres");
        assert!(!pg.is_empty());
        assert_eq!(pg, names("sqlite"));
    }
}
