//! Seeding a run's database: the employer and the first company through the API, the other
//! companies and the generated jobs in bulk, then the candidates through the API; and the check
//! that the API finds what was seeded.

use super::bench::{Bench, api};
use super::corpus::{COMPANY, company_count, company_names, document_frequencies, generate_jobs};
use super::queries::{BROAD_QUERIES, MIX_QUERIES, broad_queries, mix_queries, query_words};
use super::rows::{CACHED_QUERY, Kind, SECTION};
use crate::common;
use crate::seed;
use anyhow::{Context, Result, bail, ensure};
use futures::StreamExt;
use serde_json::{Value, json};
use std::time::Instant;

const PASSWORD: &str = "bench harness passphrase 7";

/// Rows per bulk INSERT while seeding.
const SEED_CHUNK: usize = 5_000;
/// One account beside the registered candidates per this many seeded jobs (10 000 at 100 000
/// jobs): see [`Bench::seed_other_accounts`].
const JOBS_PER_ACCOUNT: usize = 10;

/// Rows per transaction while seeding SQLite.
const SQLITE_SEED_TX: usize = 100_000;

impl Bench<'_> {
    /// The employer, the companies, the jobs (and the searches drawn from them) and the
    /// candidates.
    pub(super) async fn seed(&mut self) -> Result<()> {
        let client = common::http_client();
        // The employer and the company, through the API.
        self.employer_token = self
            .account(
                &client,
                "employer@bench.example",
                "Erin Employer",
                "employer",
            )
            .await?;
        let company: Value = api(
            client
                .post(format!("{}/api/companies", self.base))
                .bearer_auth(&self.employer_token)
                .json(
                    &json!({"name": COMPANY, "website": "https://northwind.example",
                              "description": "Makers of dependable software."}),
                ),
            201,
        )
        .await
        .context("creating the company")?;
        let company_id = company["id"]
            .as_i64()
            .context("the company has no integer id")?;
        self.company_id = company_id;

        // The companies and the jobs, in bulk.
        let t = Instant::now();
        let njobs = self.kind.jobs(self.opts);
        common::progress(SECTION, format!("generating {njobs} jobs"));
        let company_names = company_names(company_count(njobs));
        let jobs = generate_jobs(njobs, &company_names)?;
        let df = document_frequencies(&jobs);
        self.words = query_words(&df, jobs.len());
        self.broad = broad_queries(&jobs, &df, BROAD_QUERIES);
        self.seed_steps
            .push(("generate", t.elapsed().as_secs_f64()));
        let t = Instant::now();
        let company_ids = insert_companies(
            self.pg.as_ref(),
            self.sqlite.as_ref().map(|s| &s.1),
            company_id,
            &company_names,
        )
        .await?;
        // The employer of the first company (made through the API) is made a member of every
        // seeded company, so that the applications `apply` makes to any seeded job are theirs
        // to move in `status_change` (to anyone else an application is 404).
        let members = format!(
            "INSERT INTO company_members (company_id, user_id) SELECT c.id, m.user_id \
             FROM companies c JOIN company_members m ON m.company_id = {company_id} \
             WHERE c.id <> {company_id}"
        );
        match (&self.pg, &self.sqlite) {
            (Some(pool), _) => {
                sqlx::query(&members).execute(pool).await?;
            }
            (None, Some((_, pool))) => {
                sqlx::query(&members).execute(pool).await?;
            }
            (None, None) => bail!("no database"),
        }
        if self.kind != Kind::Main {
            self.mixes = mix_queries(&df, jobs.len(), &company_ids, MIX_QUERIES);
        }
        self.seed_steps.push(("queries", t.elapsed().as_secs_f64()));
        common::progress(
            SECTION,
            format!("inserting {njobs} jobs of {} companies", company_ids.len()),
        );
        let t = Instant::now();
        const IDS: &str = "SELECT MIN(id), MAX(id), COUNT(*) FROM jobs WHERE status = 'open'";
        let (min, max, count): (i64, i64, i64) = match (&self.pg, &self.sqlite) {
            (Some(pool), _) => {
                // Bulk loading goes faster with the search indexes built afterwards, from the
                // definitions the migrations gave them.
                let indexes: Vec<String> = sqlx::query_scalar(
                    "SELECT indexdef FROM pg_indexes WHERE tablename = 'jobs' \
                     AND indexname IN ('jobs_search', 'jobs_open_newest')",
                )
                .fetch_all(pool)
                .await?;
                sqlx::query("DROP INDEX jobs_search, jobs_open_newest")
                    .execute(pool)
                    .await?;
                for chunk in jobs.chunks(SEED_CHUNK) {
                    seed::insert_pg_jobs(pool, &company_ids, chunk).await?;
                }
                self.seed_steps.push(("insert", t.elapsed().as_secs_f64()));
                let t = Instant::now();
                for def in indexes {
                    sqlx::query(&def).execute(pool).await?;
                }
                self.seed_steps.push(("indexes", t.elapsed().as_secs_f64()));
                sqlx::query_as(IDS).fetch_one(pool).await?
            }
            (None, Some((_, pool))) => {
                // Through the table, so the triggers index every job (both full-text indexes);
                // one transaction per SQLITE_SEED_TX rows.
                seed::insert_sqlite_jobs(pool, &company_ids, &jobs, SQLITE_SEED_TX).await?;
                self.seed_steps
                    .push(("insert+index", t.elapsed().as_secs_f64()));
                sqlx::query_as(IDS).fetch_one(pool).await?
            }
            (None, None) => bail!("no database"),
        };
        drop(jobs);
        ensure!(
            count == njobs as i64 && max - min + 1 == count,
            "the seeded job ids are not contiguous ({count} jobs, ids {min}..{max})"
        );
        // The store relies on ids following created_at (SQLite reads FTS5 in rowid order as the
        // newest-first order): check that the load kept it.
        const BACKWARDS: &str = "SELECT COUNT(*) FROM (SELECT created_at < LAG(created_at) \
                                 OVER (ORDER BY id) AS back FROM jobs) t WHERE back";
        let backwards: i64 = match (&self.pg, &self.sqlite) {
            (Some(pool), _) => sqlx::query_scalar(BACKWARDS).fetch_one(pool).await?,
            (None, Some((_, pool))) => sqlx::query_scalar(BACKWARDS).fetch_one(pool).await?,
            (None, None) => 0,
        };
        ensure!(
            backwards == 0,
            "{backwards} seeded jobs have a created_at earlier than a lower id's"
        );
        self.first_job_id = min;
        self.njobs = count;
        common::progress(
            SECTION,
            format!(
                "jobs inserted in {:.1} s; {}",
                t.elapsed().as_secs_f64(),
                if self.pg.is_some() {
                    "VACUUM ANALYZE"
                } else {
                    "ANALYZE"
                }
            ),
        );
        let t = Instant::now();
        match (&self.pg, &self.sqlite) {
            (Some(pool), _) => {
                sqlx::query("VACUUM (ANALYZE)").execute(pool).await?;
            }
            (None, Some((_, pool))) => {
                sqlx::query("ANALYZE").execute(pool).await?;
                sqlx::query("PRAGMA wal_checkpoint(TRUNCATE)")
                    .execute(pool)
                    .await?;
            }
            (None, None) => {}
        }
        self.seed_steps.push(("analyze", t.elapsed().as_secs_f64()));

        // Candidates, through the API (each costs two password hashes on the server); the
        // search-only runs need none.
        let n = match self.kind {
            Kind::Main if self.opts.quick => 40,
            Kind::Main => 100,
            _ => 0,
        };
        let t = Instant::now();
        let results: Vec<Result<String>> = futures::stream::iter(0..n)
            .map(|i| {
                let client = client.clone();
                let this = &*self;
                async move {
                    this.account(
                        &client,
                        &format!("candidate{i}@bench.example"),
                        &format!("Candidate {i}"),
                        "candidate",
                    )
                    .await
                }
            })
            .buffer_unordered(4)
            .collect()
            .await;
        self.candidate_tokens = results.into_iter().collect::<Result<_>>()?;
        common::progress(
            SECTION,
            format!(
                "{n} candidates registered in {:.1} s",
                t.elapsed().as_secs_f64()
            ),
        );
        if self.kind == Kind::Main {
            self.seed_other_accounts(njobs).await?;
        }

        Ok(())
    }

    /// The API finds what was seeded.
    pub(super) async fn check_seeded(&mut self) -> Result<()> {
        let client = common::http_client();
        let found: Value = api(client.get(format!("{}{CACHED_QUERY}", self.base)), 200)
            .await
            .context("searching the seeded jobs")?;
        self.cached_total = found["total"].as_i64().unwrap_or(0);
        ensure!(
            self.cached_total > 0 && found["items"].as_array().is_some_and(|a| !a.is_empty()),
            "a search for the seeded jobs found nothing: {}",
            common::first_line(&found.to_string())
        );
        let other = format!("{}/api/jobs?q={}", self.base, self.words[0]);
        let found: Value = api(client.get(&other), 200).await?;
        ensure!(
            found["total"].as_i64().unwrap_or(0) > 0,
            "a search for {:?} found nothing",
            self.words[0]
        );
        api(
            client.get(format!("{}/api/jobs/{}", self.base, self.first_job_id)),
            200,
        )
        .await
        .context("reading a seeded job")?;
        Ok(())
    }

    /// The accounts a board of `njobs` jobs has beside the candidates who apply here (one per
    /// [`JOBS_PER_ACCOUNT`] jobs, by bulk SQL, with a password hash no password matches), then
    /// the statistics of the tables the seed filled since its `VACUUM ANALYZE`. With the 101
    /// accounts registered alone, PostgreSQL's planner reads the two-page `users` table from end
    /// to end for every foreign-key check of an apply, which no board of this size would see.
    async fn seed_other_accounts(&mut self, njobs: usize) -> Result<()> {
        let t = Instant::now();
        let n = njobs / JOBS_PER_ACCOUNT;
        let insert = format!(
            "INSERT INTO users (email, email_key, name, role, password_hash, created_at) \
             SELECT 'seeded' || g || '@bench.example', 'seeded' || g || '@bench.example', \
             'Seeded ' || g, CASE WHEN g % 10 = 0 THEN 'employer' ELSE 'candidate' END, \
             '!', '2026-01-01T00:00:00Z' FROM generate_series(1, {n}) g"
        );
        // The main database, the only one with candidates, is PostgreSQL's.
        let pool = self
            .pg
            .as_ref()
            .context("the accounts are seeded on PostgreSQL")?;
        sqlx::query(&insert).execute(pool).await?;
        sqlx::query("ANALYZE").execute(pool).await?;
        common::progress(
            SECTION,
            format!(
                "{n} other accounts inserted and the tables analyzed in {:.1} s",
                t.elapsed().as_secs_f64()
            ),
        );
        self.seed_steps
            .push(("accounts", t.elapsed().as_secs_f64()));
        Ok(())
    }

    /// Registers and logs in; returns the access token.
    pub(super) async fn account(
        &self,
        client: &reqwest::Client,
        email: &str,
        name: &str,
        role: &str,
    ) -> Result<String> {
        api(
            client
                .post(format!("{}/api/auth/register", self.base))
                .json(&json!({"email": email, "password": PASSWORD, "name": name, "role": role})),
            201,
        )
        .await
        .with_context(|| format!("registering {email}"))?;
        let token: Value = api(
            client
                .post(format!("{}/api/auth/token", self.base))
                .json(&json!({"email": email, "password": PASSWORD})),
            200,
        )
        .await
        .with_context(|| format!("logging in {email}"))?;
        token["access_token"]
            .as_str()
            .map(str::to_string)
            .context("the token answer has no access_token")
    }
}

/// Inserts the companies of ranks 1.. (rank 0, made through the API, exists already); returns
/// every company's id by rank.
async fn insert_companies(
    pg: Option<&sqlx::PgPool>,
    sqlite: Option<&sqlx::SqlitePool>,
    first_id: i64,
    names: &[String],
) -> Result<Vec<i64>> {
    let rest = names.get(1..).unwrap_or(&[]);
    let ids = match (pg, sqlite) {
        (Some(pool), _) => seed::insert_pg_companies(pool, rest).await?,
        (None, Some(pool)) => seed::insert_sqlite_companies(pool, rest).await?,
        (None, None) => bail!("no database"),
    };
    Ok(std::iter::once(first_id).chain(ids).collect())
}
