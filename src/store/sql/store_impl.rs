//! [`Store`]: accounts, companies, jobs and applications.

use super::{D, Db, S, sql};
use crate::domain::values::Email;
use crate::domain::{Actor, ApplicationStatus, Conflict, search};
use crate::store::dialect::{Dialect, constraint, job_terms};
use crate::store::*;
use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row};

fn push_application_filters(
    qb: &mut QueryBuilder<'_, Db>,
    viewer: ApplicationViewer,
    job_id: Option<i64>,
    status: Option<ApplicationStatus>,
) {
    match viewer {
        ApplicationViewer::Candidate(id) => {
            qb.push(" WHERE a.candidate_id = ").push_bind(id);
        }
        ApplicationViewer::Employer(id) => {
            qb.push(
                " WHERE j.company_id IN (SELECT company_id FROM company_members WHERE user_id = ",
            )
            .push_bind(id)
            .push(")");
        }
    }
    if let Some(job) = job_id {
        qb.push(" AND a.job_id = ").push_bind(job);
    }
    if let Some(st) = status {
        qb.push(" AND a.status = ").push_bind(st.as_str());
    }
}

type Query<'q> = sqlx::query::Query<'q, Db, <Db as sqlx::Database>::Arguments<'q>>;

/// Binds a job's fields in the order `JOB_INSERT` and `JOB_UPDATE` share.
fn bind_job<'q>(query: Query<'q>, f: &'q JobFields, company: &str) -> Query<'q> {
    query
        .bind(f.title.as_str())
        .bind(&f.description)
        .bind(&f.location)
        .bind(f.location.to_lowercase())
        .bind(f.remote)
        .bind(f.salary.min())
        .bind(f.salary.max())
        .bind(f.employment_type.as_str())
        .bind(f.status.as_str())
        .bind(job_terms(f.title.as_str(), &f.description, company))
        .bind(search::document_terms(&[f.title.as_str()]))
}

fn push_page(qb: &mut QueryBuilder<'_, Db>, order: &str, page: Page) {
    qb.push(order)
        .push(" LIMIT ")
        .push_bind(page.size)
        .push(" OFFSET ")
        .push_bind(page.offset());
}

#[async_trait::async_trait]
impl Store for S {
    fn backend(&self) -> &'static str {
        D::NAME
    }

    async fn migrate(&self) -> anyhow::Result<()> {
        Self::MIGRATOR.run(&self.pool).await?;
        // Jobs written before titles had terms of their own get them here, in batches.
        loop {
            let batch: Vec<(i64, String)> = sqlx::query_as(sql::JOB_TITLES_UNINDEXED)
                .fetch_all(&self.pool)
                .await?;
            if batch.is_empty() {
                return Ok(());
            }
            let mut tx = self.begin_write().await?;
            for (id, title) in batch {
                sqlx::query(sql::JOB_SET_TITLE_TERMS)
                    .bind(search::document_terms(&[&title]))
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
        }
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
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    async fn create_user(&self, u: NewUser) -> StoreResult<UserRow> {
        let id: i64 = sqlx::query_scalar(sql::USER_INSERT)
            .bind(u.email.as_str())
            .bind(u.email.key())
            .bind(&u.name)
            .bind(u.role.as_str())
            .bind(&u.password_hash)
            .bind(crate::timefmt::now())
            .fetch_one(&self.pool)
            .await
            .map_err(|e| constraint(e, Conflict::EmailTaken))?;
        self.user_by_id(id).await
    }

    async fn user_by_id(&self, id: i64) -> StoreResult<UserRow> {
        sqlx::query_as::<_, UserRow>(sql::USER_BY_ID)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)
    }

    async fn user_by_email_key(&self, key: &str) -> StoreResult<UserRow> {
        sqlx::query_as::<_, UserRow>(sql::USER_BY_EMAIL_KEY)
            .bind(key)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)
    }

    async fn change_password(
        &self,
        user_id: i64,
        hash: &str,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let done = sqlx::query(sql::USER_SET_PASSWORD)
            .bind(hash)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Self::commit_with(tx, idem, &()).await
    }

    async fn delete_user(&self, user_id: i64) -> StoreResult<()> {
        let done = sqlx::query(sql::USER_DELETE)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NotFound);
        }
        Ok(())
    }

    async fn auth_failures(&self, keys: AuthKeys<'_>, window_ms: i64) -> StoreResult<AuthCounters> {
        self.auth_counters(sql::AUTH_FAILURES_READ, keys, window_ms)
            .await
    }

    async fn count_auth_failure(
        &self,
        keys: AuthKeys<'_>,
        window_ms: i64,
    ) -> StoreResult<AuthCounters> {
        self.auth_counters(sql::AUTH_FAILURES_COUNT, keys, window_ms)
            .await
    }

    async fn forgive_auth_failure(&self, keys: AuthKeys<'_>) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        sqlx::query(sql::AUTH_FAILURES_FORGIVE_EMAIL)
            .bind(keys.email)
            .execute(&mut *tx)
            .await?;
        sqlx::query(sql::AUTH_FAILURES_FORGIVE_ADDR)
            .bind(keys.addr)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(())
    }

    async fn delete_expired_auth_failures(&self, window_ms: i64, limit: i64) -> StoreResult<u64> {
        let done = sqlx::query(sql::AUTH_FAILURES_EXPIRED_DELETE)
            .bind(window_ms)
            .bind(limit)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    async fn create_company(
        &self,
        owner: i64,
        f: CompanyFields,
        idem: Idem<'_, CompanyRow>,
    ) -> StoreResult<CompanyRow> {
        let mut tx = self.begin_write().await?;
        let row = sqlx::query_as::<_, CompanyRow>(sql::COMPANY_INSERT)
            .bind(&f.name)
            .bind(&f.website)
            .bind(&f.description)
            .bind(crate::timefmt::now())
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query(sql::MEMBER_INSERT)
            .bind(row.id)
            .bind(owner)
            .execute(&mut *tx)
            .await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn company(&self, id: i64) -> StoreResult<CompanyRow> {
        sqlx::query_as::<_, CompanyRow>(sql::COMPANY_BY_ID)
            .bind(id)
            .fetch_optional(&self.pool)
            .await?
            .ok_or(StoreError::NotFound)
    }

    async fn list_companies(
        &self,
        member: Option<i64>,
        page: Page,
    ) -> StoreResult<(Vec<CompanyRow>, i64)> {
        let filter = |qb: &mut QueryBuilder<'_, Db>| {
            if let Some(user) = member {
                qb.push(" WHERE id IN (SELECT company_id FROM company_members WHERE user_id = ")
                    .push_bind(user)
                    .push(")");
            }
        };
        let mut tx = self.begin_read().await?;
        let mut count = QueryBuilder::<Db>::new("SELECT COUNT(*) FROM companies");
        filter(&mut count);
        let total: i64 = count.build_query_scalar().fetch_one(&mut *tx).await?;
        let mut list = QueryBuilder::<Db>::new(sql::COMPANY_SELECT);
        filter(&mut list);
        push_page(&mut list, " ORDER BY created_at DESC, id DESC", page);
        let rows = list
            .build_query_as::<CompanyRow>()
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((rows, total))
    }

    async fn is_member(&self, company_id: i64, user_id: i64) -> StoreResult<bool> {
        let found: Option<i64> = sqlx::query_scalar(sql::MEMBER_IS)
            .bind(company_id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(found.is_some())
    }

    async fn update_company(
        &self,
        id: i64,
        f: CompanyFields,
        idem: Idem<'_, CompanyRow>,
    ) -> StoreResult<CompanyRow> {
        let mut tx = self.begin_write().await?;
        let old_name: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, id).await?;
        let row = sqlx::query_as::<_, CompanyRow>(sql::COMPANY_UPDATE)
            .bind(&f.name)
            .bind(&f.website)
            .bind(&f.description)
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        if old_name != f.name {
            // The company name is searchable text of every one of its jobs.
            let jobs: Vec<(i64, String, String)> = sqlx::query_as(sql::COMPANY_JOB_TEXTS)
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
            for (job_id, title, description) in jobs {
                sqlx::query(sql::JOB_SET_TERMS)
                    .bind(job_terms(&title, &description, &f.name))
                    .bind(job_id)
                    .execute(&mut *tx)
                    .await?;
            }
        }
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn delete_company(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let _: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, id).await?;
        let jobs: i64 = sqlx::query_scalar(sql::COMPANY_JOB_COUNT)
            .bind(id)
            .fetch_one(&mut *tx)
            .await?;
        if jobs > 0 {
            return Err(StoreError::Conflict(Conflict::CompanyHasJobs));
        }
        sqlx::query(sql::COMPANY_DELETE)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, Conflict::CompanyHasJobs))?;
        Self::commit_with(tx, idem, &()).await
    }

    async fn members(&self, company_id: i64) -> StoreResult<Vec<MemberRow>> {
        Ok(sqlx::query_as::<_, MemberRow>(sql::MEMBERS)
            .bind(company_id)
            .fetch_all(&self.pool)
            .await?)
    }

    async fn add_member(
        &self,
        company_id: i64,
        email: &Email,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let user: i64 = sqlx::query_scalar(sql::EMPLOYER_BY_EMAIL_KEY)
            .bind(email.key())
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        sqlx::query(sql::MEMBER_INSERT)
            .bind(company_id)
            .bind(user)
            .execute(&mut *tx)
            .await
            // The only constraint that can fail: the company vanished meanwhile.
            .map_err(|e| match constraint(e, Conflict::LastMember) {
                StoreError::Conflict(_) => StoreError::NotFound,
                other => other,
            })?;
        Self::commit_with(tx, idem, &()).await
    }

    async fn remove_member(
        &self,
        company_id: i64,
        user_id: i64,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        // Lock the company so that two removals cannot both see two members.
        let _: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, company_id).await?;
        let members: Vec<i64> = sqlx::query_scalar(sql::MEMBER_IDS)
            .bind(company_id)
            .fetch_all(&mut *tx)
            .await?;
        if !members.contains(&user_id) {
            return Err(StoreError::NotFound);
        }
        if members.len() == 1 {
            return Err(StoreError::Conflict(Conflict::LastMember));
        }
        sqlx::query(sql::MEMBER_DELETE)
            .bind(company_id)
            .bind(user_id)
            .execute(&mut *tx)
            .await?;
        Self::commit_with(tx, idem, &()).await
    }

    async fn create_job(
        &self,
        company_id: i64,
        f: JobFields,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<JobRow> {
        let mut tx = self.begin_write().await?;
        let company: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, company_id).await?;
        // Ids follow creation time (the search's newest-first order is the id order): under a
        // lock that orders job inserts, a job is created no earlier than the newest one.
        if let Some(lock) = D::JOB_INSERT_LOCK {
            sqlx::query(lock).execute(&mut *tx).await?;
        }
        let latest: Option<DateTime<Utc>> = sqlx::query_scalar(sql::JOB_LATEST_CREATED)
            .fetch_optional(&mut *tx)
            .await?;
        let now = latest.map_or(crate::timefmt::now(), |l| l.max(crate::timefmt::now()));
        let id: i64 = bind_job(sqlx::query(sql::JOB_INSERT).bind(company_id), &f, &company)
            .bind(now)
            .fetch_one(&mut *tx)
            .await?
            .try_get(0)?;
        let row = Self::job_in(&mut *tx, id).await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn job(&self, id: i64) -> StoreResult<JobRow> {
        Self::job_in(&self.pool, id).await
    }

    async fn update_job(
        &self,
        id: i64,
        f: JobFields,
        expected: DateTime<Utc>,
        idem: Idem<'_, JobRow>,
    ) -> StoreResult<Option<JobRow>> {
        let mut tx = self.begin_write().await?;
        let company: String = sqlx::query_scalar(sql::JOB_COMPANY_NAME)
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?
            .ok_or(StoreError::NotFound)?;
        let mut now = crate::timefmt::now();
        if now <= expected {
            // updated_at is the version the next merge checks; it must move forward.
            now = expected + chrono::Duration::microseconds(1);
        }
        let done = bind_job(sqlx::query(sql::JOB_UPDATE), &f, &company)
            .bind(now)
            .bind(id)
            .bind(expected)
            .execute(&mut *tx)
            .await?;
        if done.rows_affected() == 0 {
            return Ok(None);
        }
        let row = Self::job_in(&mut *tx, id).await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(Some(row))
    }

    async fn delete_job(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        self.delete_one(sql::JOB_DELETE, id, idem).await
    }

    async fn search_jobs(&self, s: &JobSearch) -> StoreResult<SearchPage> {
        if super::search::branches(s).len() > 1 {
            // Several statements, one snapshot.
            let mut tx = self.begin_read().await?;
            let page = super::search::search(&mut tx, s).await?;
            tx.commit().await?;
            Ok(page)
        } else {
            let mut conn = self.pool.acquire().await?;
            super::search::search(&mut conn, s).await
        }
    }

    async fn apply(
        &self,
        job_id: i64,
        candidate_id: i64,
        cover_letter: Option<String>,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<ApplicationRow> {
        let mut tx = self.begin_write().await?;
        let status: String = Self::locked(&mut tx, sql::JOB_STATUS_SHARED, job_id).await?;
        if status != "open" {
            return Err(StoreError::Conflict(Conflict::JobClosed));
        }
        let now = crate::timefmt::now();
        // The UNIQUE (job_id, candidate_id) constraint decides races, not a prior check.
        let id: i64 = sqlx::query_scalar(sql::APPLICATION_INSERT)
            .bind(job_id)
            .bind(candidate_id)
            .bind(&cover_letter)
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| constraint(e, Conflict::AlreadyApplied))?;
        sqlx::query(sql::HISTORY_INSERT)
            .bind(id)
            .bind(None::<&str>)
            .bind(ApplicationStatus::Submitted.as_str())
            .bind(candidate_id)
            .bind(None::<&str>)
            .bind(now)
            .execute(&mut *tx)
            .await?;
        let row = Self::application_in(&mut *tx, id).await?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    async fn application(&self, id: i64) -> StoreResult<ApplicationRow> {
        Self::application_in(&self.pool, id).await
    }

    async fn list_applications(
        &self,
        viewer: ApplicationViewer,
        job_id: Option<i64>,
        status: Option<ApplicationStatus>,
        page: Page,
    ) -> StoreResult<(Vec<ApplicationRow>, i64)> {
        let mut tx = self.begin_read().await?;
        let mut count = QueryBuilder::<Db>::new(
            "SELECT COUNT(*) FROM applications a JOIN jobs j ON j.id = a.job_id",
        );
        push_application_filters(&mut count, viewer, job_id, status);
        let total: i64 = count.build_query_scalar().fetch_one(&mut *tx).await?;
        let mut list = QueryBuilder::<Db>::new(sql::APPLICATION_SELECT);
        push_application_filters(&mut list, viewer, job_id, status);
        push_page(&mut list, " ORDER BY a.created_at DESC, a.id DESC", page);
        let rows = list
            .build_query_as::<ApplicationRow>()
            .fetch_all(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((rows, total))
    }

    async fn change_status(
        &self,
        id: i64,
        to: ApplicationStatus,
        actor: Actor,
        changed_by: i64,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<StatusChange> {
        let mut tx = self.begin_write().await?;
        let current: String = Self::locked(&mut tx, sql::APPLICATION_STATUS_LOCKED, id).await?;
        let from = ApplicationStatus::parse(&current)
            .ok_or_else(|| anyhow::anyhow!("unknown stored status {current:?}"))?;
        let moves = from
            .check_move(to, actor)
            .map_err(|e| StoreError::Conflict(Conflict::InvalidTransition(e)))?;
        let mut event_id = None;
        if moves {
            let now = crate::timefmt::now();
            let event = crate::domain::event::StatusChanged::new(id, from, to, now);
            sqlx::query(sql::APPLICATION_SET_STATUS)
                .bind(to.as_str())
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await?;
            sqlx::query(sql::HISTORY_INSERT)
                .bind(id)
                .bind(from.as_str())
                .bind(to.as_str())
                .bind(changed_by)
                .bind(&event.event_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            // The transactional outbox: the event commits with the change or not at all.
            sqlx::query(sql::OUTBOX_INSERT)
                .bind(&event.event_id)
                .bind(id)
                .bind(event.to_json())
                .bind(now)
                .execute(&mut *tx)
                .await?;
            event_id = Some(event.event_id);
        }
        let application = Self::application_in(&mut *tx, id).await?;
        Self::commit_with(tx, idem, &application).await?;
        Ok(StatusChange {
            application,
            event_id,
        })
    }

    async fn delete_application(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        self.delete_one(sql::APPLICATION_DELETE, id, idem).await
    }

    async fn history(&self, application_id: i64) -> StoreResult<Vec<HistoryRow>> {
        Ok(sqlx::query_as::<_, HistoryRow>(sql::HISTORY)
            .bind(application_id)
            .fetch_all(&self.pool)
            .await?)
    }
}

impl S {
    /// Runs one of the `AUTH_FAILURES_*` statements that answer both counters.
    async fn auth_counters(
        &self,
        statement: &'static str,
        keys: AuthKeys<'_>,
        window_ms: i64,
    ) -> StoreResult<AuthCounters> {
        let rows = sqlx::query_as(statement)
            .bind(keys.email)
            .bind(keys.addr)
            .bind(window_ms)
            .fetch_all(&self.pool)
            .await?;
        counters(rows)
    }
}

/// The counters in `(kind, failures, remaining_ms)` rows; a kind the schema does not allow is
/// an error, never silently dropped.
fn counters(rows: Vec<(String, i64, i64)>) -> StoreResult<AuthCounters> {
    let mut out = AuthCounters::default();
    for (kind, failures, remaining_ms) in rows {
        let count = FailureCount {
            failures,
            remaining_ms,
        };
        match kind.as_str() {
            "email" => out.email = count,
            "addr" => out.addr = count,
            _ => {
                return Err(StoreError::Other(anyhow::anyhow!(
                    "unknown auth failure counter kind {kind:?}"
                )));
            }
        }
    }
    Ok(out)
}
