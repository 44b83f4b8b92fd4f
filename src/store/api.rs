//! The API's own use cases: accounts and their sign-in failures, companies, jobs and
//! applications ([`ApiStore`]). Each method is one transaction.

use super::*;
use crate::domain::values::Email;
use crate::domain::{ApplicationStatus, JobStatus};
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// What the API's handlers of accounts, companies, jobs and applications need.
#[async_trait]
pub trait ApiStore: Send + Sync {
    /// The database's clock, to the microsecond: what a request judges a member's `expires_at`
    /// against and starts a default expiry from, as the write's own times do (one clock, not
    /// this host's).
    async fn now(&self) -> StoreResult<DateTime<Utc>>;

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
    /// Deletes the user with their applications, memberships and résumés, and gives the keys of
    /// the résumés' files, for the caller to delete after the commit.
    async fn delete_user(&self, user_id: i64) -> StoreResult<Vec<String>>;
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
    /// `Conflict(AlreadyApplied)` from the unique constraint, `Conflict(JobClosed)`, `Invalid`
    /// naming `resume_id` when the résumé is not the candidate's.
    async fn apply(
        &self,
        job_id: i64,
        candidate_id: i64,
        input: NewApplication,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<ApplicationRow>;
    /// An apply to a job by a caller whose account and job have not been read, when the
    /// store can judge both as it writes: `None`, having written nothing, unless the claim's
    /// account is a candidate's whose token generation is the claim's, the job is open and
    /// asks nothing the input lacks (no questions; a résumé, if it requires one) and the write
    /// needs nothing more (PostgreSQL's one statement); the caller then reads the account and
    /// the job and calls [`apply`]. Errors as [`apply`]'s.
    ///
    /// [`apply`]: Self::apply
    async fn apply_unread(
        &self,
        job_id: i64,
        claim: TokenClaim,
        input: &NewApplication,
    ) -> StoreResult<Option<ApplicationRow>>;
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
