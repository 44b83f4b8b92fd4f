//! The `Store` implementation shared by both backends. The SQL is portable (`$n` parameters,
//! `RETURNING`, `ON CONFLICT`) except where a backend needs its own statement; those few pieces
//! come from the backend's [`Dialect`]. The macro below is expanded once per backend because
//! sqlx executors are concrete per database; the code it holds is written once.

use super::StoreError;
use crate::domain::{Conflict, search};

/// The statements that differ between PostgreSQL and SQLite.
pub(super) trait Dialect {
    type Db: sqlx::Database;
    /// Appended to a SELECT that must lock the rows it reads for the rest of the transaction
    /// (SQLite needs nothing: its write transactions start with the database write lock).
    const FOR_UPDATE: &'static str;
    /// Appended to a SELECT whose rows must not change or vanish until the transaction ends.
    const FOR_SHARE: &'static str;
    /// Whether the outbox relay may keep its rows locked while it publishes them.
    const LOCK_WHILE_PUBLISHING: bool;
    /// Appended to the SELECT that picks queue messages: concurrent receivers skip each other's
    /// rows (SQLite's single writer needs nothing).
    const SKIP_LOCKED: &'static str;
    /// The database clock as ms since the epoch, as an SQL expression.
    const NOW_MS: &'static str;
    /// Adds `AND <every term matches>` to a job query whose jobs table is aliased `j`.
    fn push_terms_match(qb: &mut sqlx::QueryBuilder<'_, Self::Db>, terms: &[String]);
    /// Adds `AND <location_key contains needle>`.
    fn push_location_match(qb: &mut sqlx::QueryBuilder<'_, Self::Db>, needle: String);
}

/// Maps a constraint violation to the given conflict; anything else stays an error.
pub(super) fn constraint(e: sqlx::Error, conflict: Conflict) -> StoreError {
    if let Some(db) = e.as_database_error()
        && matches!(
            db.kind(),
            sqlx::error::ErrorKind::UniqueViolation | sqlx::error::ErrorKind::ForeignKeyViolation
        )
    {
        return StoreError::Conflict(conflict);
    }
    e.into()
}

pub(super) fn job_terms(title: &str, description: &str, company: &str) -> String {
    search::document_terms(&[title, description, company])
}

pub(super) const JOB_SELECT: &str = "SELECT j.id, j.company_id, c.name AS company_name, j.title, \
     j.description, j.location, j.remote, j.salary_min, j.salary_max, j.employment_type, \
     j.status, j.created_at, j.updated_at FROM jobs j JOIN companies c ON c.id = j.company_id";

pub(super) const APPLICATION_SELECT: &str = "SELECT a.id, a.job_id, j.title AS job_title, \
     j.company_id, c.name AS company_name, a.candidate_id, u.name AS candidate_name, \
     u.email AS candidate_email, a.status, a.cover_letter, a.created_at, a.updated_at \
     FROM applications a JOIN jobs j ON j.id = a.job_id JOIN companies c ON c.id = j.company_id \
     JOIN users u ON u.id = a.candidate_id";

pub(super) const USER_SELECT: &str =
    "SELECT id, email, name, role, password_hash, token_generation, created_at FROM users";

/// Implements `Store` for `$store`, which has a `pool` field and the inherent methods
/// `begin_write` and `begin_read`; `$dialect` implements [`Dialect`].
macro_rules! impl_store {
    ($store:ty, $db:ty, $dialect:ty, $backend:literal) => {
        use $crate::domain::{Actor, ApplicationStatus, Conflict};
        use $crate::store::sql::{
            constraint, job_terms, APPLICATION_SELECT, JOB_SELECT, USER_SELECT,
        };
        use $crate::store::*;
        use chrono::{DateTime, Utc};
        use sqlx::QueryBuilder;

        fn push_job_filters(qb: &mut QueryBuilder<'_, $db>, s: &JobSearch) {
            qb.push(" WHERE j.status = 'open'");
            if !s.terms.is_empty() {
                <$dialect>::push_terms_match(qb, &s.terms);
            }
            if let Some(loc) = &s.location {
                <$dialect>::push_location_match(qb, loc.clone());
            }
            if let Some(remote) = s.remote {
                qb.push(" AND j.remote = ").push_bind(remote);
            }
            if let Some(company) = s.company_id {
                qb.push(" AND j.company_id = ").push_bind(company);
            }
            if let Some(min) = s.salary_min {
                qb.push(" AND (j.salary_max IS NULL OR j.salary_max >= ")
                    .push_bind(min)
                    .push(")");
            }
            if let Some(t) = &s.employment_type {
                qb.push(" AND j.employment_type = ").push_bind(t.clone());
            }
        }

        fn push_application_filters(
            qb: &mut QueryBuilder<'_, $db>,
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

        impl $store {
            /// Stores the idempotent request's response in the write's own transaction.
            async fn complete_in<T>(
                tx: &mut sqlx::Transaction<'static, $db>,
                idem: Idem<'_, T>,
                value: &T,
            ) -> StoreResult<()> {
                if let Some(c) = idem {
                    let done = sqlx::query(
                        "UPDATE idempotency_keys SET state = 'done', locked_until = NULL, \
                         response_status = $2, response_body = $3 \
                         WHERE id = $1 AND state = 'in_flight' AND lock_token = $4",
                    )
                    .bind(c.record_id)
                    .bind(c.status as i64)
                    .bind((c.render)(value))
                    .bind(c.token)
                    .execute(&mut **tx)
                    .await?;
                    if done.rows_affected() == 0 {
                        // A retry took the key over (this request ran past its lock): the write
                        // must not happen twice, so this one rolls back.
                        return Err(StoreError::Other(anyhow::anyhow!(
                            "the idempotency key was taken over by a retry; not writing twice"
                        )));
                    }
                }
                Ok(())
            }

            async fn job_in<'c, E>(e: E, id: i64) -> StoreResult<JobRow>
            where
                E: sqlx::Executor<'c, Database = $db>,
            {
                sqlx::query_as::<_, JobRow>(&format!("{JOB_SELECT} WHERE j.id = $1"))
                    .bind(id)
                    .fetch_optional(e)
                    .await?
                    .ok_or(StoreError::NotFound)
            }

            async fn application_in<'c, E>(e: E, id: i64) -> StoreResult<ApplicationRow>
            where
                E: sqlx::Executor<'c, Database = $db>,
            {
                sqlx::query_as::<_, ApplicationRow>(&format!("{APPLICATION_SELECT} WHERE a.id = $1"))
                    .bind(id)
                    .fetch_optional(e)
                    .await?
                    .ok_or(StoreError::NotFound)
            }
        }

        #[async_trait::async_trait]
        impl Store for $store {
            fn backend(&self) -> &'static str {
                $backend
            }

            async fn migrate(&self) -> anyhow::Result<()> {
                Self::MIGRATOR.run(&self.pool).await?;
                Ok(())
            }

            async fn check_schema(&self) -> anyhow::Result<()> {
                let applied: Vec<i64> = match sqlx::query_scalar(
                    "SELECT version FROM _sqlx_migrations WHERE success ORDER BY version",
                )
                .fetch_all(&self.pool)
                .await
                {
                    Ok(v) => v,
                    // The database answered but has no migrations table: nothing applied yet.
                    Err(sqlx::Error::Database(_)) => Vec::new(),
                    // Anything else (the database unreachable) is not a verdict on the schema.
                    Err(e) => {
                        return Err(anyhow::Error::from(e).context("cannot read the applied migrations"))
                    }
                };
                let known: Vec<(i64, String)> = Self::MIGRATOR
                    .iter()
                    .map(|m| (m.version, m.description.to_string()))
                    .collect();
                $crate::store::schema_verdict(&applied, &known)
            }

            async fn ping(&self) -> anyhow::Result<()> {
                sqlx::query("SELECT 1").execute(&self.pool).await?;
                Ok(())
            }

            async fn create_user(&self, u: NewUser) -> StoreResult<UserRow> {
                let now = $crate::timefmt::now();
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO users (email, email_key, name, role, password_hash, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING id",
                )
                .bind(&u.email)
                .bind(&u.email_key)
                .bind(&u.name)
                .bind(u.role.as_str())
                .bind(&u.password_hash)
                .bind(now)
                .fetch_one(&self.pool)
                .await
                .map_err(|e| constraint(e, Conflict::EmailTaken))?;
                self.user_by_id(id).await
            }

            async fn user_by_id(&self, id: i64) -> StoreResult<UserRow> {
                sqlx::query_as::<_, UserRow>(&format!("{USER_SELECT} WHERE id = $1"))
                    .bind(id)
                    .fetch_optional(&self.pool)
                    .await?
                    .ok_or(StoreError::NotFound)
            }

            async fn user_by_email_key(&self, key: &str) -> StoreResult<UserRow> {
                sqlx::query_as::<_, UserRow>(&format!("{USER_SELECT} WHERE email_key = $1"))
                    .bind(key)
                    .fetch_optional(&self.pool)
                    .await?
                    .ok_or(StoreError::NotFound)
            }

            async fn change_password(&self, user_id: i64, hash: &str, idem: Idem<'_, ()>) -> StoreResult<()> {
                let mut tx = self.begin_write().await?;
                let done = sqlx::query(
                    "UPDATE users SET password_hash = $1, token_generation = token_generation + 1 \
                     WHERE id = $2",
                )
                .bind(hash)
                .bind(user_id)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                Self::complete_in(&mut tx, idem, &()).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn delete_user(&self, user_id: i64) -> StoreResult<()> {
                let done = sqlx::query("DELETE FROM users WHERE id = $1")
                    .bind(user_id)
                    .execute(&self.pool)
                    .await?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                Ok(())
            }

            async fn record_auth_failure(
                &self,
                kind: FailureKind,
                key: &str,
                at: DateTime<Utc>,
            ) -> StoreResult<i64> {
                Ok(sqlx::query_scalar("INSERT INTO auth_failures (kind, key, at) VALUES ($1, $2, $3) RETURNING id")
                    .bind(kind.as_str())
                    .bind(key)
                    .bind(at)
                    .fetch_one(&self.pool)
                    .await?)
            }

            async fn delete_auth_failures(&self, ids: &[i64]) -> StoreResult<()> {
                for id in ids {
                    sqlx::query("DELETE FROM auth_failures WHERE id = $1").bind(id).execute(&self.pool).await?;
                }
                Ok(())
            }

            async fn nth_recent_auth_failure(
                &self,
                kind: FailureKind,
                key: &str,
                since: DateTime<Utc>,
                n: i64,
            ) -> StoreResult<Option<DateTime<Utc>>> {
                Ok(sqlx::query_scalar(
                    "SELECT at FROM auth_failures WHERE kind = $1 AND key = $2 AND at > $3 \
                     ORDER BY at DESC LIMIT 1 OFFSET $4",
                )
                .bind(kind.as_str())
                .bind(key)
                .bind(since)
                .bind(n - 1)
                .fetch_optional(&self.pool)
                .await?)
            }

            async fn clear_auth_failures(&self, kind: FailureKind, key: &str) -> StoreResult<()> {
                sqlx::query("DELETE FROM auth_failures WHERE kind = $1 AND key = $2")
                    .bind(kind.as_str())
                    .bind(key)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn create_company(&self, owner: i64, f: CompanyFields, idem: Idem<'_, CompanyRow>) -> StoreResult<CompanyRow> {
                let mut tx = self.begin_write().await?;
                let row = sqlx::query_as::<_, CompanyRow>(
                    "INSERT INTO companies (name, website, description, created_at) \
                     VALUES ($1, $2, $3, $4) RETURNING id, name, website, description, created_at",
                )
                .bind(&f.name)
                .bind(&f.website)
                .bind(&f.description)
                .bind($crate::timefmt::now())
                .fetch_one(&mut *tx)
                .await?;
                sqlx::query("INSERT INTO company_members (company_id, user_id) VALUES ($1, $2)")
                    .bind(row.id)
                    .bind(owner)
                    .execute(&mut *tx)
                    .await?;
                Self::complete_in(&mut tx, idem, &row).await?;
                tx.commit().await?;
                Ok(row)
            }

            async fn company(&self, id: i64) -> StoreResult<CompanyRow> {
                sqlx::query_as::<_, CompanyRow>(
                    "SELECT id, name, website, description, created_at FROM companies WHERE id = $1",
                )
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
                let filter = |qb: &mut QueryBuilder<'_, $db>| {
                    if let Some(user) = member {
                        qb.push(" WHERE id IN (SELECT company_id FROM company_members WHERE user_id = ")
                            .push_bind(user)
                            .push(")");
                    }
                };
                let mut tx = self.begin_read().await?;
                let mut count = QueryBuilder::<$db>::new("SELECT COUNT(*) FROM companies");
                filter(&mut count);
                let total: i64 = count.build_query_scalar().fetch_one(&mut *tx).await?;
                let mut list = QueryBuilder::<$db>::new(
                    "SELECT id, name, website, description, created_at FROM companies",
                );
                filter(&mut list);
                list.push(" ORDER BY created_at DESC, id DESC LIMIT ")
                    .push_bind(page.size)
                    .push(" OFFSET ")
                    .push_bind(page.offset());
                let rows = list.build_query_as::<CompanyRow>().fetch_all(&mut *tx).await?;
                tx.commit().await?;
                Ok((rows, total))
            }

            async fn is_member(&self, company_id: i64, user_id: i64) -> StoreResult<bool> {
                let found: Option<i64> = sqlx::query_scalar(
                    "SELECT company_id FROM company_members WHERE company_id = $1 AND user_id = $2",
                )
                .bind(company_id)
                .bind(user_id)
                .fetch_optional(&self.pool)
                .await?;
                Ok(found.is_some())
            }

            async fn update_company(&self, id: i64, f: CompanyFields, idem: Idem<'_, CompanyRow>) -> StoreResult<CompanyRow> {
                let mut tx = self.begin_write().await?;
                let old_name: String = sqlx::query_scalar(&format!(
                    "SELECT name FROM companies WHERE id = $1{}",
                    <$dialect>::FOR_UPDATE
                ))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
                let row = sqlx::query_as::<_, CompanyRow>(
                    "UPDATE companies SET name = $1, website = $2, description = $3 WHERE id = $4 \
                     RETURNING id, name, website, description, created_at",
                )
                .bind(&f.name)
                .bind(&f.website)
                .bind(&f.description)
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
                if old_name != f.name {
                    // The company name is searchable text of every one of its jobs.
                    let jobs: Vec<(i64, String, String)> = sqlx::query_as(
                        "SELECT id, title, description FROM jobs WHERE company_id = $1",
                    )
                    .bind(id)
                    .fetch_all(&mut *tx)
                    .await?;
                    for (job_id, title, description) in jobs {
                        sqlx::query("UPDATE jobs SET search_terms = $1 WHERE id = $2")
                            .bind(job_terms(&title, &description, &f.name))
                            .bind(job_id)
                            .execute(&mut *tx)
                            .await?;
                    }
                }
                Self::complete_in(&mut tx, idem, &row).await?;
                tx.commit().await?;
                Ok(row)
            }

            async fn delete_company(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
                let mut tx = self.begin_write().await?;
                sqlx::query_scalar::<_, i64>(&format!(
                    "SELECT id FROM companies WHERE id = $1{}",
                    <$dialect>::FOR_UPDATE
                ))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
                let jobs: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM jobs WHERE company_id = $1")
                    .bind(id)
                    .fetch_one(&mut *tx)
                    .await?;
                if jobs > 0 {
                    return Err(StoreError::Conflict(Conflict::CompanyHasJobs));
                }
                sqlx::query("DELETE FROM companies WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| constraint(e, Conflict::CompanyHasJobs))?;
                Self::complete_in(&mut tx, idem, &()).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn members(&self, company_id: i64) -> StoreResult<Vec<MemberRow>> {
                Ok(sqlx::query_as::<_, MemberRow>(
                    "SELECT u.id, u.name, u.email FROM company_members m JOIN users u ON u.id = m.user_id \
                     WHERE m.company_id = $1 ORDER BY u.id",
                )
                .bind(company_id)
                .fetch_all(&self.pool)
                .await?)
            }

            async fn add_member(&self, company_id: i64, email_key: &str, idem: Idem<'_, ()>) -> StoreResult<()> {
                let mut tx = self.begin_write().await?;
                let user: Option<i64> = sqlx::query_scalar(
                    "SELECT id FROM users WHERE email_key = $1 AND role = 'employer'",
                )
                .bind(email_key)
                .fetch_optional(&mut *tx)
                .await?;
                let user = user.ok_or(StoreError::NotFound)?;
                sqlx::query(
                    "INSERT INTO company_members (company_id, user_id) VALUES ($1, $2) \
                     ON CONFLICT DO NOTHING",
                )
                .bind(company_id)
                .bind(user)
                .execute(&mut *tx)
                .await
                .map_err(|e| constraint(e, Conflict::LastMember))
                .map_err(|e| match e {
                    // The company vanished meanwhile.
                    StoreError::Conflict(_) => StoreError::NotFound,
                    other => other,
                })?;
                Self::complete_in(&mut tx, idem, &()).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn remove_member(&self, company_id: i64, user_id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
                let mut tx = self.begin_write().await?;
                // Lock the company so that two removals cannot both see two members.
                sqlx::query_scalar::<_, i64>(&format!(
                    "SELECT id FROM companies WHERE id = $1{}",
                    <$dialect>::FOR_UPDATE
                ))
                .bind(company_id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
                let members: Vec<i64> =
                    sqlx::query_scalar("SELECT user_id FROM company_members WHERE company_id = $1")
                        .bind(company_id)
                        .fetch_all(&mut *tx)
                        .await?;
                if !members.contains(&user_id) {
                    return Err(StoreError::NotFound);
                }
                if members.len() == 1 {
                    return Err(StoreError::Conflict(Conflict::LastMember));
                }
                sqlx::query("DELETE FROM company_members WHERE company_id = $1 AND user_id = $2")
                    .bind(company_id)
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await?;
                Self::complete_in(&mut tx, idem, &()).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn create_job(&self, company_id: i64, f: JobFields, idem: Idem<'_, JobRow>) -> StoreResult<JobRow> {
                let mut tx = self.begin_write().await?;
                let company: String = sqlx::query_scalar(&format!(
                    "SELECT name FROM companies WHERE id = $1{}",
                    <$dialect>::FOR_UPDATE
                ))
                .bind(company_id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
                let now = $crate::timefmt::now();
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO jobs (company_id, title, description, location, location_key, remote, \
                     salary_min, salary_max, employment_type, status, search_terms, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $12) RETURNING id",
                )
                .bind(company_id)
                .bind(&f.title)
                .bind(&f.description)
                .bind(&f.location)
                .bind(f.location.to_lowercase())
                .bind(f.remote)
                .bind(f.salary_min)
                .bind(f.salary_max)
                .bind(f.employment_type.as_str())
                .bind(f.status.as_str())
                .bind(job_terms(&f.title, &f.description, &company))
                .bind(now)
                .fetch_one(&mut *tx)
                .await?;
                let row = Self::job_in(&mut *tx, id).await?;
                Self::complete_in(&mut tx, idem, &row).await?;
                tx.commit().await?;
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
                let company: String = sqlx::query_scalar(
                    "SELECT c.name FROM jobs j JOIN companies c ON c.id = j.company_id WHERE j.id = $1",
                )
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
                let mut now = $crate::timefmt::now();
                if now <= expected {
                    // updated_at is the version the next merge checks; it must move forward.
                    now = expected + chrono::Duration::microseconds(1);
                }
                let done = sqlx::query(
                    "UPDATE jobs SET title = $1, description = $2, location = $3, location_key = $4, \
                     remote = $5, salary_min = $6, salary_max = $7, employment_type = $8, status = $9, \
                     search_terms = $10, updated_at = $11 WHERE id = $12 AND updated_at = $13",
                )
                .bind(&f.title)
                .bind(&f.description)
                .bind(&f.location)
                .bind(f.location.to_lowercase())
                .bind(f.remote)
                .bind(f.salary_min)
                .bind(f.salary_max)
                .bind(f.employment_type.as_str())
                .bind(f.status.as_str())
                .bind(job_terms(&f.title, &f.description, &company))
                .bind(now)
                .bind(id)
                .bind(expected)
                .execute(&mut *tx)
                .await?;
                if done.rows_affected() == 0 {
                    return Ok(None);
                }
                let row = Self::job_in(&mut *tx, id).await?;
                Self::complete_in(&mut tx, idem, &row).await?;
                tx.commit().await?;
                Ok(Some(row))
            }

            async fn delete_job(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
                let mut tx = self.begin_write().await?;
                let done = sqlx::query("DELETE FROM jobs WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                Self::complete_in(&mut tx, idem, &()).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn search_jobs(&self, s: &JobSearch) -> StoreResult<(Vec<JobRow>, i64)> {
                let mut tx = self.begin_read().await?;
                let mut count = QueryBuilder::<$db>::new("SELECT COUNT(*) FROM jobs j");
                push_job_filters(&mut count, s);
                let total: i64 = count.build_query_scalar().fetch_one(&mut *tx).await?;
                let rows = if total > s.page.offset() {
                    let mut list = QueryBuilder::<$db>::new(JOB_SELECT);
                    push_job_filters(&mut list, s);
                    list.push(" ORDER BY j.created_at DESC, j.id DESC LIMIT ")
                        .push_bind(s.page.size)
                        .push(" OFFSET ")
                        .push_bind(s.page.offset());
                    list.build_query_as::<JobRow>().fetch_all(&mut *tx).await?
                } else {
                    Vec::new()
                };
                tx.commit().await?;
                Ok((rows, total))
            }

            async fn apply(
                &self,
                job_id: i64,
                candidate_id: i64,
                cover_letter: Option<String>,
                idem: Idem<'_, ApplicationRow>,
            ) -> StoreResult<ApplicationRow> {
                let mut tx = self.begin_write().await?;
                // Locked so that a concurrent close or delete waits for this application.
                let status: String = sqlx::query_scalar(&format!(
                    "SELECT status FROM jobs WHERE id = $1{}",
                    <$dialect>::FOR_SHARE
                ))
                .bind(job_id)
                    .fetch_optional(&mut *tx)
                    .await?
                    .ok_or(StoreError::NotFound)?;
                if status != "open" {
                    return Err(StoreError::Conflict(Conflict::JobClosed));
                }
                let now = $crate::timefmt::now();
                // The UNIQUE (job_id, candidate_id) constraint decides races, not a prior check.
                let id: i64 = sqlx::query_scalar(
                    "INSERT INTO applications (job_id, candidate_id, status, cover_letter, created_at, updated_at) \
                     VALUES ($1, $2, 'submitted', $3, $4, $4) RETURNING id",
                )
                .bind(job_id)
                .bind(candidate_id)
                .bind(&cover_letter)
                .bind(now)
                .fetch_one(&mut *tx)
                .await
                .map_err(|e| constraint(e, Conflict::AlreadyApplied))?;
                sqlx::query(
                    "INSERT INTO application_history (application_id, old_status, new_status, changed_by, event_id, at) \
                     VALUES ($1, NULL, 'submitted', $2, NULL, $3)",
                )
                .bind(id)
                .bind(candidate_id)
                .bind(now)
                .execute(&mut *tx)
                .await?;
                let row = Self::application_in(&mut *tx, id).await?;
                Self::complete_in(&mut tx, idem, &row).await?;
                tx.commit().await?;
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
                let mut count = QueryBuilder::<$db>::new(
                    "SELECT COUNT(*) FROM applications a JOIN jobs j ON j.id = a.job_id",
                );
                push_application_filters(&mut count, viewer, job_id, status);
                let total: i64 = count.build_query_scalar().fetch_one(&mut *tx).await?;
                let mut list = QueryBuilder::<$db>::new(APPLICATION_SELECT);
                push_application_filters(&mut list, viewer, job_id, status);
                list.push(" ORDER BY a.created_at DESC, a.id DESC LIMIT ")
                    .push_bind(page.size)
                    .push(" OFFSET ")
                    .push_bind(page.offset());
                let rows = list.build_query_as::<ApplicationRow>().fetch_all(&mut *tx).await?;
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
                let current: String = sqlx::query_scalar(&format!(
                    "SELECT status FROM applications WHERE id = $1{}",
                    <$dialect>::FOR_UPDATE
                ))
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or(StoreError::NotFound)?;
                let from = ApplicationStatus::parse(&current)
                    .ok_or_else(|| anyhow::anyhow!("unknown stored status {current:?}"))?;
                let moves = from
                    .check_move(to, actor)
                    .map_err(|e| StoreError::Conflict(Conflict::InvalidTransition(e)))?;
                let mut event_id = None;
                if moves {
                    let now = $crate::timefmt::now();
                    let event = $crate::domain::event::StatusChanged::new(id, from, to, now);
                    sqlx::query("UPDATE applications SET status = $1, updated_at = $2 WHERE id = $3")
                        .bind(to.as_str())
                        .bind(now)
                        .bind(id)
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query(
                        "INSERT INTO application_history (application_id, old_status, new_status, changed_by, event_id, at) \
                         VALUES ($1, $2, $3, $4, $5, $6)",
                    )
                    .bind(id)
                    .bind(from.as_str())
                    .bind(to.as_str())
                    .bind(changed_by)
                    .bind(&event.event_id)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    // The transactional outbox: the event commits with the change or not at all.
                    sqlx::query(&format!(
                        "INSERT INTO outbox (event_id, application_id, body, created_at, visible_at) \
                         VALUES ($1, $2, $3, $4, {})",
                        <$dialect>::NOW_MS
                    ))
                    .bind(&event.event_id)
                    .bind(id)
                    .bind(event.to_json())
                    .bind(now)
                    .execute(&mut *tx)
                    .await?;
                    event_id = Some(event.event_id);
                }
                let application = Self::application_in(&mut *tx, id).await?;
                Self::complete_in(&mut tx, idem, &application).await?;
                tx.commit().await?;
                Ok(StatusChange {
                    application,
                    event_id,
                })
            }

            async fn delete_application(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
                let mut tx = self.begin_write().await?;
                let done = sqlx::query("DELETE FROM applications WHERE id = $1")
                    .bind(id)
                    .execute(&mut *tx)
                    .await?;
                if done.rows_affected() == 0 {
                    return Err(StoreError::NotFound);
                }
                Self::complete_in(&mut tx, idem, &()).await?;
                tx.commit().await?;
                Ok(())
            }

            async fn history(&self, application_id: i64) -> StoreResult<Vec<HistoryRow>> {
                Ok(sqlx::query_as::<_, HistoryRow>(
                    "SELECT old_status, new_status, changed_by, event_id, at FROM application_history \
                     WHERE application_id = $1 ORDER BY id",
                )
                .bind(application_id)
                .fetch_all(&self.pool)
                .await?)
            }
        }
    };
}

pub(super) use impl_store;
