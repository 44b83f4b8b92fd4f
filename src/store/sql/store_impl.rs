//! [`DatabaseStore`]: the schema here. [`ApiStore`]: each resource's methods in a file of its
//! own (`accounts.rs`, `companies.rs`, `jobs.rs` with `search.rs`, `applications.rs`), to which
//! the trait forwards.

use super::{D, Db, S, sql};
use crate::domain::values::Email;
use crate::domain::{Actor, ApplicationStatus, search};
use crate::store::dialect::Dialect;
use crate::store::*;
use anyhow::Context;
use chrono::{DateTime, Utc};
use sqlx::QueryBuilder;

pub(super) fn push_page(qb: &mut QueryBuilder<'_, Db>, order: &str, page: Page) {
    qb.push(order)
        .push(" LIMIT ")
        .push_bind(page.size)
        .push(" OFFSET ")
        .push_bind(page.offset());
}

/// The pay-and-place columns (migration 0029) of jobs written without them, from the older
/// ones, over a range of ids; `$1`: `DEFAULT_SALARY_CURRENCY`.
const JOBS_PAY_PLACE_BACKFILL: &str = const_format::concatcp!(
    "UPDATE jobs SET workplace = CASE WHEN remote THEN 'remote' ELSE 'onsite' END, \
     locations = CASE WHEN location = '' THEN '[]' ELSE ",
    <D as Dialect>::PLACES_OF_LOCATION,
    " END, \
     salary_currency = CASE WHEN salary_min IS NULL AND salary_max IS NULL THEN NULL ELSE $1 END, \
     salary_period = CASE WHEN salary_min IS NULL AND salary_max IS NULL THEN NULL \
     ELSE 'year' END \
     WHERE id > $2 AND id <= $3 AND workplace IS NULL"
);
/// Ids per statement of the backfill: each a short transaction of its own.
const PAY_PLACE_BATCH: i64 = 5_000;

impl S {
    /// Gives every job written before pay and place its `workplace`, `locations`, and its
    /// salary's currency (`DEFAULT_SALARY_CURRENCY`) and period (`year`), as its older columns
    /// read: what every reader already derives, written down, in batches of ids so that no
    /// statement holds many rows' locks for long (expand/contract: a later release may then
    /// stop reading the older columns). A job an older release writes afterwards reads right
    /// still (`JobRow::workplace`, `JobRow::places`).
    async fn backfill_pay_and_place(&self) -> anyhow::Result<()> {
        let last: Option<i64> =
            sqlx::query_scalar("SELECT MAX(id) FROM jobs WHERE workplace IS NULL")
                .fetch_one(&self.pool)
                .await
                .context("reading the last job without pay and place")?;
        let first: Option<i64> =
            sqlx::query_scalar("SELECT MIN(id) FROM jobs WHERE workplace IS NULL")
                .fetch_one(&self.pool)
                .await
                .context("reading the first job without pay and place")?;
        let (Some(first), Some(last)) = (first, last) else {
            return Ok(());
        };
        let currency = crate::domain::pay_place::default_currency();
        let mut after = first - 1;
        while after < last {
            let until = after.saturating_add(PAY_PLACE_BATCH).min(last);
            sqlx::query(JOBS_PAY_PLACE_BACKFILL)
                .bind(currency)
                .bind(after)
                .bind(until)
                .execute(&self.pool)
                .await
                .with_context(|| {
                    format!("writing the pay and place of jobs {}..={until}", after + 1)
                })?;
            after = until;
        }
        tracing::info!(
            first,
            last,
            currency,
            "jobs written before pay and place have theirs"
        );
        Ok(())
    }
}

#[async_trait::async_trait]
impl DatabaseStore for S {
    fn backend(&self) -> &'static str {
        D::NAME
    }

    async fn migrate(&self) -> anyhow::Result<()> {
        // On a connection of its own, closed afterwards, so the session's settings never reach
        // the pool's other users.
        let mut conn = self
            .pool
            .acquire()
            .await
            .context("connecting to run the migrations")?;
        if let Some(setup) = D::MIGRATION_SESSION {
            sqlx::query(setup)
                .execute(&mut *conn)
                .await
                .context("preparing the migrations' session")?;
        }
        Self::MIGRATOR
            .run_direct(&mut *conn)
            .await
            .context("applying the migrations")?;
        conn.close()
            .await
            .context("closing the migrations' connection")?;
        // Jobs written before titles had terms of their own get them here, in batches, by id.
        let mut after = 0_i64;
        loop {
            let batch: Vec<(i64, String)> = sqlx::query_as(sql::JOB_TITLES_UNINDEXED)
                .bind(after)
                .fetch_all(&self.pool)
                .await
                .context("reading the jobs whose titles have no terms")?;
            if batch.is_empty() {
                break;
            }
            after = batch.last().map(|(id, _)| *id).unwrap_or(after);
            let mut tx = self.begin_write().await?;
            for (id, title) in batch {
                sqlx::query(sql::JOB_SET_TITLE_TERMS)
                    .bind(search::document_terms(&[&title]))
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .with_context(|| format!("setting the title terms of job {id}"))?;
            }
            tx.commit()
                .await
                .context("committing a batch of title terms")?;
        }
        self.backfill_pay_and_place().await
    }

    async fn check_schema(&self) -> anyhow::Result<Vec<String>> {
        let applied: Vec<(i64, String)> = match sqlx::query_as(sql::MIGRATIONS_APPLIED)
            .fetch_all(&self.pool)
            .await
        {
            Ok(v) => v,
            // The database answered but has no migrations table: nothing applied yet.
            Err(sqlx::Error::Database(_)) => Vec::new(),
            // Anything else (the database unreachable) is not a verdict on the schema.
            Err(e) => {
                return Err(anyhow::Error::from(e).context("cannot read the applied migrations"));
            }
        };
        let known: Vec<(i64, String)> = Self::MIGRATOR
            .iter()
            .map(|m| (m.version, m.description.to_string()))
            .collect();
        crate::store::schema_verdict(&applied, &known)
    }

    async fn ping(&self) -> anyhow::Result<()> {
        let mut tx = self
            .begin_write()
            .await
            .context("pinging the database: starting a write")?;
        sqlx::query(D::WRITE_PROBE)
            .execute(&mut *tx)
            .await
            .context("pinging the database: a write transaction")?;
        tx.rollback()
            .await
            .context("pinging the database: rolling back")?;
        Ok(())
    }
}

#[async_trait::async_trait]
impl ApiStore for S {
    async fn now(&self) -> StoreResult<DateTime<Utc>> {
        S::clock(&self.pool).await
    }

    async fn create_user(&self, u: NewUser) -> StoreResult<UserRow> {
        S::create_user(self, u).await
    }

    async fn user_by_id(&self, id: i64) -> StoreResult<UserRow> {
        S::user_by_id(self, id).await
    }

    async fn user_by_email_key(&self, key: &str) -> StoreResult<UserRow> {
        S::user_by_email_key(self, key).await
    }

    async fn change_password(
        &self,
        user_id: i64,
        hash: &str,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        S::change_password(self, user_id, hash, idem).await
    }

    async fn delete_user(&self, user_id: i64) -> StoreResult<Vec<String>> {
        S::delete_user(self, user_id).await
    }

    async fn notifications(&self, user_id: i64) -> StoreResult<Notifications> {
        S::notifications(self, user_id).await
    }

    async fn update_notifications(
        &self,
        user_id: i64,
        application_digest: Option<bool>,
        idem: Idem<'_, Notifications>,
    ) -> StoreResult<Notifications> {
        S::update_notifications(self, user_id, application_digest, idem).await
    }

    async fn auth_failures(&self, keys: AuthKeys<'_>, window_ms: i64) -> StoreResult<AuthCounters> {
        S::auth_failures(self, keys, window_ms).await
    }

    async fn count_auth_failure(
        &self,
        keys: AuthKeys<'_>,
        window_ms: i64,
    ) -> StoreResult<AuthCounters> {
        S::count_auth_failure(self, keys, window_ms).await
    }

    async fn forgive_auth_failure(&self, keys: AuthKeys<'_>) -> StoreResult<()> {
        S::forgive_auth_failure(self, keys).await
    }

    async fn delete_expired_auth_failures(&self, window_ms: i64, limit: i64) -> StoreResult<u64> {
        S::delete_expired_auth_failures(self, window_ms, limit).await
    }

    async fn create_company(
        &self,
        owner: i64,
        f: CompanyFields,
        idem: Idem<'_, CompanyRow>,
    ) -> StoreResult<CompanyRow> {
        S::create_company(self, owner, f, idem).await
    }

    async fn company(&self, id: i64) -> StoreResult<CompanyRow> {
        S::company(self, id).await
    }

    async fn list_companies(
        &self,
        member: Option<i64>,
        page: Page,
    ) -> StoreResult<(Vec<CompanyRow>, i64)> {
        S::list_companies(self, member, page).await
    }

    async fn is_member(&self, company_id: i64, user_id: i64) -> StoreResult<bool> {
        S::is_member(self, company_id, user_id).await
    }

    async fn update_company(
        &self,
        id: i64,
        f: CompanyFields,
        idem: Idem<'_, CompanyRow>,
    ) -> StoreResult<CompanyRow> {
        S::update_company(self, id, f, idem).await
    }

    async fn delete_company(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        S::delete_company(self, id, idem).await
    }

    async fn members(&self, company_id: i64) -> StoreResult<Vec<MemberRow>> {
        S::members(self, company_id).await
    }

    async fn add_member(
        &self,
        company_id: i64,
        email: &Email,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        S::add_member(self, company_id, email, idem).await
    }

    async fn remove_member(
        &self,
        company_id: i64,
        user_id: i64,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        S::remove_member(self, company_id, user_id, idem).await
    }

    async fn create_job(
        &self,
        company_id: i64,
        f: JobFields,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow> {
        S::create_job(self, company_id, f, idem).await
    }

    async fn job(&self, id: i64) -> StoreResult<JobRow> {
        S::job(self, id).await
    }

    async fn update_job(
        &self,
        id: i64,
        f: JobFields,
        expected: DateTime<Utc>,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<Option<JobRow>> {
        S::update_job(self, id, f, expected, idem).await
    }

    async fn delete_job(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        S::delete_job(self, id, idem).await
    }

    async fn renew_job(
        &self,
        id: i64,
        expires_at: DateTime<Utc>,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow> {
        S::renew_job(self, id, expires_at, idem).await
    }

    async fn review_job(
        &self,
        id: i64,
        review: Review,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow> {
        S::review_job(self, id, review, idem).await
    }

    async fn jobs_in_status(
        &self,
        status: crate::domain::JobStatus,
        now: DateTime<Utc>,
        page: Page,
    ) -> StoreResult<(Vec<JobRow>, i64)> {
        S::jobs_in_status(self, status, now, page).await
    }

    async fn apply(
        &self,
        job_id: i64,
        candidate_id: i64,
        input: NewApplication,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<ApplicationRow> {
        S::apply(self, job_id, candidate_id, input, idem).await
    }

    async fn apply_unread(
        &self,
        job_id: i64,
        claim: TokenClaim,
        input: &NewApplication,
    ) -> StoreResult<Option<ApplicationRow>> {
        S::apply_unread(self, job_id, claim, input).await
    }

    async fn application(&self, id: i64) -> StoreResult<ApplicationRow> {
        S::application(self, id).await
    }

    async fn list_applications(
        &self,
        viewer: ApplicationViewer,
        job_id: Option<i64>,
        status: Option<ApplicationStatus>,
        page: Page,
    ) -> StoreResult<(Vec<ApplicationRow>, i64)> {
        S::list_applications(self, viewer, job_id, status, page).await
    }

    async fn change_status(
        &self,
        id: i64,
        to: ApplicationStatus,
        actor: Actor,
        changed_by: i64,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<StatusChange> {
        S::change_status(self, id, to, actor, changed_by, idem).await
    }

    async fn delete_application(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        S::delete_application(self, id, idem).await
    }

    async fn history(&self, application_id: i64) -> StoreResult<Vec<HistoryRow>> {
        S::history(self, application_id).await
    }
}
