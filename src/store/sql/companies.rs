//! Companies and their members.

use super::joblog::Changed;
use super::store_impl::push_page;
use super::{Db, S, sql};
use crate::domain::Conflict;
use crate::domain::values::Email;
use crate::store::dialect::{constraint, job_terms};
use crate::store::*;
use sqlx::QueryBuilder;

impl S {
    pub(super) async fn create_company(
        &self,
        owner: i64,
        f: CompanyFields,
        idem: Idem<'_, CompanyRow>,
    ) -> StoreResult<CompanyRow> {
        let mut tx = self.begin_write().await?;
        let now = Self::clock(&mut *tx).await?;
        let row = sqlx::query_as::<_, CompanyRow>(sql::COMPANY_INSERT)
            .bind(&f.name)
            .bind(&f.website)
            .bind(&f.description)
            .bind(now)
            .fetch_one(&mut *tx)
            .await
            .step("inserting the company")?;
        sqlx::query(sql::MEMBER_INSERT)
            .bind(row.id)
            .bind(owner)
            .execute(&mut *tx)
            .await
            .step("adding the company's owner as its first member")?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    pub(super) async fn company(&self, id: i64) -> StoreResult<CompanyRow> {
        sqlx::query_as::<_, CompanyRow>(sql::COMPANY_BY_ID)
            .bind(id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("reading company {id}"))?
            .ok_or(StoreError::NotFound)
    }

    pub(super) async fn list_companies(
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
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .step("counting the companies")?;
        let mut list = QueryBuilder::<Db>::new(sql::COMPANY_SELECT);
        filter(&mut list);
        push_page(&mut list, " ORDER BY created_at DESC, id DESC", page);
        let rows = list
            .build_query_as::<CompanyRow>()
            .fetch_all(&mut *tx)
            .await
            .step("reading a page of companies")?;
        tx.commit()
            .await
            .step("committing the read of the companies")?;
        Ok((rows, total))
    }

    pub(super) async fn is_member(&self, company_id: i64, user_id: i64) -> StoreResult<bool> {
        let found: Option<i64> = sqlx::query_scalar(sql::MEMBER_IS)
            .bind(company_id)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| {
                format!("reading whether user {user_id} is a member of company {company_id}")
            })?;
        Ok(found.is_some())
    }

    pub(super) async fn update_company(
        &self,
        id: i64,
        f: CompanyFields,
        idem: Idem<'_, CompanyRow>,
    ) -> StoreResult<CompanyRow> {
        let mut tx = self.begin_write().await?;
        let old_name: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, id)
            .await
            .with_step(|| format!("locking company {id}"))?;
        let row = sqlx::query_as::<_, CompanyRow>(sql::COMPANY_UPDATE)
            .bind(&f.name)
            .bind(&f.website)
            .bind(&f.description)
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .with_step(|| format!("updating company {id}"))?;
        if old_name != f.name {
            // The company name is searchable text of every one of its jobs.
            let jobs: Vec<(i64, String, String)> = sqlx::query_as(sql::COMPANY_JOB_TEXTS)
                .bind(id)
                .fetch_all(&mut *tx)
                .await
                .with_step(|| format!("reading the texts of company {id}'s jobs"))?;
            for (job_id, title, description) in jobs {
                sqlx::query(sql::JOB_SET_TERMS)
                    .bind(job_terms(&title, &description, &f.name))
                    .bind(job_id)
                    .execute(&mut *tx)
                    .await
                    .with_step(|| format!("updating the search terms of a job of company {id}"))?;
            }
            Self::log_change(&mut tx, Changed::Company(id)).await?;
        }
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    pub(super) async fn delete_company(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let _: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, id)
            .await
            .with_step(|| format!("locking company {id}"))?;
        let jobs: i64 = sqlx::query_scalar(sql::COMPANY_JOB_COUNT)
            .bind(id)
            .fetch_one(&mut *tx)
            .await
            .with_step(|| format!("counting the jobs of company {id}"))?;
        if jobs > 0 {
            return Err(StoreError::Conflict(Conflict::CompanyHasJobs));
        }
        sqlx::query(sql::COMPANY_DELETE)
            .bind(id)
            .execute(&mut *tx)
            .await
            .map_err(|e| constraint(e, Conflict::CompanyHasJobs))
            .with_step(|| format!("deleting company {id}"))?;
        Self::log_change(&mut tx, Changed::Company(id)).await?;
        Self::commit_with(tx, idem, &()).await
    }

    pub(super) async fn members(&self, company_id: i64) -> StoreResult<Vec<MemberRow>> {
        sqlx::query_as::<_, MemberRow>(sql::MEMBERS)
            .bind(company_id)
            .fetch_all(&self.pool)
            .await
            .with_step(|| format!("reading the members of company {company_id}"))
    }

    pub(super) async fn add_member(
        &self,
        company_id: i64,
        email: &Email,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        let user: i64 = sqlx::query_scalar(sql::EMPLOYER_BY_EMAIL_KEY)
            .bind(email.key())
            .fetch_optional(&mut *tx)
            .await
            .step("reading an employer by email")?
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
            })
            .with_step(|| format!("adding a member to company {company_id}"))?;
        Self::commit_with(tx, idem, &()).await
    }

    pub(super) async fn remove_member(
        &self,
        company_id: i64,
        user_id: i64,
        idem: Idem<'_, ()>,
    ) -> StoreResult<()> {
        let mut tx = self.begin_write().await?;
        // Lock the company so that two removals cannot both see two members.
        let _: String = Self::locked(&mut tx, sql::COMPANY_NAME_LOCKED, company_id)
            .await
            .with_step(|| format!("locking company {company_id}"))?;
        let members: Vec<i64> = sqlx::query_scalar(sql::MEMBER_IDS)
            .bind(company_id)
            .fetch_all(&mut *tx)
            .await
            .with_step(|| format!("reading the members of company {company_id}"))?;
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
            .await
            .with_step(|| format!("removing user {user_id} from company {company_id}"))?;
        Self::commit_with(tx, idem, &()).await
    }
}
