//! The seeded boards' rows, inserted in bulk the way the store writes them: companies and open
//! jobs on PostgreSQL and on SQLite. The HTTP section's board and the alert scenarios' boards
//! draw their jobs differently and insert them here; the alert scenarios' boards themselves are
//! [`alert_board`].

pub(crate) mod alert_board;

use anyhow::{Context, Result};
use chrono::{DateTime, Utc};

/// Rows per INSERT on SQLite (its statements take at most 32 766 parameters).
const SQLITE_CHUNK: usize = 2_000;

/// An open job as it is inserted.
pub(crate) struct SeedJob {
    /// Index into the seeded companies.
    pub(crate) company: usize,
    pub(crate) title: String,
    pub(crate) description: String,
    pub(crate) location: String,
    pub(crate) remote: bool,
    pub(crate) salary_min: Option<i64>,
    pub(crate) salary_max: Option<i64>,
    pub(crate) employment_type: &'static str,
    /// The terms of the title, the description's first `core_len` bytes and the company: what
    /// the database's terms columns hold (only a release before the index reads them).
    pub(crate) search_terms: String,
    /// How much of the description, from its start, the search terms were made of: the first
    /// paragraph of the HTTP section's jobs (the rest is prose no search asks for), all of an
    /// alerts board's.
    pub(crate) core_len: usize,
    pub(crate) title_terms: String,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) expires_at: Option<DateTime<Utc>>,
}

/// The companies, their ids in the order of `companies`.
pub(crate) async fn insert_pg_companies(
    pool: &sqlx::PgPool,
    companies: &[String],
) -> Result<Vec<i64>> {
    // Inserted in order, so that sorted ids are the companies' by rank.
    let mut company_ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO companies (name, website, description, created_at) \
         SELECT n, NULL, 'A seeded company.', $2 FROM UNNEST($1::text[]) WITH ORDINALITY \
         AS t(n, k) ORDER BY k RETURNING id",
    )
    .bind(companies.to_vec())
    .bind(Utc::now())
    .fetch_all(pool)
    .await
    .context("inserting companies")?;
    company_ids.sort();
    Ok(company_ids)
}

/// The companies in one transaction, their ids in the order of `companies`.
pub(crate) async fn insert_sqlite_companies(
    pool: &sqlx::SqlitePool,
    companies: &[String],
) -> Result<Vec<i64>> {
    let now = Utc::now();
    let mut tx = pool.begin().await?;
    let mut company_ids = Vec::new();
    for name in companies {
        let id: i64 = sqlx::query_scalar(
            "INSERT INTO companies (name, website, description, created_at) \
             VALUES ($1, NULL, 'A seeded company.', $2) RETURNING id",
        )
        .bind(name)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?;
        company_ids.push(id);
    }
    tx.commit().await?;
    Ok(company_ids)
}

/// Open jobs, in the order given (ids follow it); PostgreSQL computes `search_vector` from
/// `search_terms` itself.
pub(crate) async fn insert_pg_jobs(
    pool: &sqlx::PgPool,
    company_ids: &[i64],
    chunk: &[SeedJob],
) -> Result<()> {
    let strings =
        |f: &dyn Fn(&SeedJob) -> &str| chunk.iter().map(|j| f(j).to_string()).collect::<Vec<_>>();
    sqlx::query(
        "INSERT INTO jobs (company_id, title, description, location, location_key, remote, \
         salary_min, salary_max, employment_type, status, search_terms, title_terms, \
         expires_at, created_at, updated_at) \
         SELECT t.company_id, t.title, t.description, t.location, t.location_key, t.remote, \
         t.salary_min, t.salary_max, t.employment_type, 'open', t.search_terms, \
         t.title_terms, t.expires_at, t.created_at, t.created_at \
         FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], \
         $6::bool[], $7::bigint[], $8::bigint[], $9::text[], $10::text[], $11::text[], \
         $12::timestamptz[], $13::timestamptz[]) WITH ORDINALITY AS t(company_id, title, \
         description, location, location_key, remote, salary_min, salary_max, \
         employment_type, search_terms, title_terms, expires_at, created_at, n) \
         ORDER BY t.n",
    )
    .bind(
        chunk
            .iter()
            .map(|j| company_ids[j.company])
            .collect::<Vec<_>>(),
    )
    .bind(strings(&|j| &j.title))
    .bind(strings(&|j| &j.description))
    .bind(strings(&|j| &j.location))
    .bind(
        chunk
            .iter()
            .map(|j| j.location.to_lowercase())
            .collect::<Vec<_>>(),
    )
    .bind(chunk.iter().map(|j| j.remote).collect::<Vec<_>>())
    .bind(chunk.iter().map(|j| j.salary_min).collect::<Vec<_>>())
    .bind(chunk.iter().map(|j| j.salary_max).collect::<Vec<_>>())
    .bind(strings(&|j| j.employment_type))
    .bind(strings(&|j| &j.search_terms))
    .bind(strings(&|j| &j.title_terms))
    .bind(chunk.iter().map(|j| j.expires_at).collect::<Vec<_>>())
    .bind(chunk.iter().map(|j| j.created_at).collect::<Vec<_>>())
    .execute(pool)
    .await
    .context("inserting jobs")?;
    Ok(())
}

/// Open jobs into SQLite, in the order given (ids follow it), through the table so that the
/// triggers fill both full-text indexes (documents and titles): one transaction per
/// `per_transaction` jobs.
pub(crate) async fn insert_sqlite_jobs(
    pool: &sqlx::SqlitePool,
    company_ids: &[i64],
    jobs: &[SeedJob],
    per_transaction: usize,
) -> Result<()> {
    for group in jobs.chunks(per_transaction) {
        let mut tx = pool.begin().await?;
        for chunk in group.chunks(SQLITE_CHUNK) {
            let mut qb = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
                "INSERT INTO jobs (company_id, title, description, location, location_key, \
                 remote, salary_min, salary_max, employment_type, status, search_terms, \
                 title_terms, expires_at, created_at, updated_at) ",
            );
            qb.push_values(chunk, |mut b, j| {
                b.push_bind(company_ids[j.company])
                    .push_bind(&j.title)
                    .push_bind(&j.description)
                    .push_bind(&j.location)
                    .push_bind(j.location.to_lowercase())
                    .push_bind(j.remote)
                    .push_bind(j.salary_min)
                    .push_bind(j.salary_max)
                    .push_bind(j.employment_type)
                    .push_bind("open")
                    .push_bind(&j.search_terms)
                    .push_bind(&j.title_terms)
                    .push_bind(j.expires_at)
                    .push_bind(j.created_at)
                    .push_bind(j.created_at);
            });
            qb.build()
                .execute(&mut *tx)
                .await
                .context("inserting jobs into SQLite")?;
        }
        tx.commit().await?;
    }
    Ok(())
}
