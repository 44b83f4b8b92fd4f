//! The alerts' boards, which the alert digests' scenarios and the alert week both seed: a
//! Zipf-like vocabulary of letters-only words, places and companies named in it, jobs of it, the
//! alerts, their candidates (20 alerts each), and the candidates' and alerts' bulk inserts.

use anyhow::{Context, Result};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use jobboard::domain::EmploymentType;
use jobboard::domain::alert::Frequency;
use rand::Rng;
use rand::rngs::StdRng;

use super::SeedJob;

/// Distinct words of the vocabulary.
pub(crate) const WORDS: usize = 20_000;

/// An alerts board's 300 places and 500 companies (by rank), named in words of the vocabulary.
pub(crate) fn places_and_companies() -> (Vec<String>, Vec<String>) {
    let locations = (0..300).map(|i| format!("{} City", word(i))).collect();
    let companies = (0..500).map(|i| format!("{} Corp", word(i + 50))).collect();
    (locations, companies)
}

/// The `i`-th word of the vocabulary: letters only, never ending in `s` (so never a plural).
pub(crate) fn word(i: usize) -> String {
    const SYLLABLES: &[&str] = &[
        "ka", "lo", "mi", "nu", "pe", "ri", "to", "va", "ze", "du", "fo", "gi", "bo", "xa", "le",
        "ro",
    ];
    let mut w = String::new();
    let mut i = i + SYLLABLES.len();
    while i > 0 {
        w.push_str(SYLLABLES[i % SYLLABLES.len()]);
        i /= SYLLABLES.len();
    }
    w
}

/// A Zipf-like pick among `n` items: rank `r` (from 0) with weight 1 / (r + 1).
pub(crate) fn zipf(rng: &mut StdRng, n: usize) -> usize {
    let x = ((n as f64 + 1.0).ln() * rng.r#gen::<f64>()).exp();
    (x as usize - 1).min(n - 1)
}

/// Between `fewest` and `most` words of the vocabulary, drawn Zipf-like.
pub(crate) fn words(rng: &mut StdRng, fewest: usize, most: usize) -> String {
    let n = rng.gen_range(fewest..=most);
    (0..n)
        .map(|_| word(zipf(rng, WORDS)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A job of an alerts board: its company, title, description and creation as given, then its
/// pay, place, `remote` and kind drawn (in that order) as every alerts seed draws them; open for
/// `open_days`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn seed_job(
    rng: &mut StdRng,
    companies: &[String],
    locations: &[String],
    company: usize,
    title: String,
    description: String,
    created_at: DateTime<Utc>,
    open_days: i64,
) -> SeedJob {
    let salary_max = rng.gen_bool(0.8).then(|| rng.gen_range(30..=250) * 1_000);
    let location = locations[zipf(rng, locations.len())].clone();
    let remote = rng.gen_bool(0.3);
    let employment_type = EmploymentType::ALL[zipf(rng, 4)].as_str();
    SeedJob {
        search_terms: jobboard::domain::search::document_terms(&[
            &title,
            &description,
            &companies[company],
        ]),
        core_len: description.len(),
        title_terms: jobboard::domain::search::document_terms(&[&title]),
        company,
        title,
        description,
        location,
        remote,
        salary_min: salary_max.map(|m| m / 2),
        salary_max,
        employment_type,
        created_at,
        expires_at: Some(created_at + ChronoDuration::days(open_days)),
    }
}

/// A seeded alert.
pub(crate) struct SeedAlert {
    pub(crate) q: Option<String>,
    pub(crate) location: Option<String>,
    pub(crate) remote: Option<bool>,
    pub(crate) company: Option<usize>,
    pub(crate) salary_min: Option<i64>,
    pub(crate) employment_type: Option<&'static str>,
}

pub(crate) fn generate_alerts(
    rng: &mut StdRng,
    n: usize,
    locations: &[String],
    companies: usize,
) -> Vec<SeedAlert> {
    (0..n)
        .map(|_| {
            let q = rng.gen_bool(0.8).then(|| words(rng, 1, 2));
            let location = (q.is_none() || rng.gen_bool(0.2)).then(|| {
                let l = &locations[zipf(rng, locations.len())];
                l[..l.len().min(rng.gen_range(3..=8))].to_lowercase()
            });
            SeedAlert {
                q,
                location,
                remote: rng.gen_bool(0.15).then(|| rng.gen_bool(0.5)),
                company: rng.gen_bool(0.1).then(|| zipf(rng, companies)),
                salary_min: rng.gen_bool(0.2).then(|| rng.gen_range(20..=200) * 1_000),
                employment_type: rng
                    .gen_bool(0.15)
                    .then(|| EmploymentType::ALL[rng.gen_range(0..4)].as_str()),
            }
        })
        .collect()
}

/// Candidates: one per 20 alerts.
pub(crate) fn candidates(alerts: usize) -> Vec<String> {
    (0..alerts.div_ceil(20))
        .map(|i| format!("candidate{i}@bench.example"))
        .collect()
}

/// The candidates of `alerts` alerts ([`candidates`]), their ids in order.
pub(crate) async fn insert_pg_candidates(pool: &sqlx::PgPool, alerts: usize) -> Result<Vec<i64>> {
    let emails = candidates(alerts);
    let mut user_ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO users (email, email_key, name, role, password_hash, created_at) \
         SELECT e, e, 'Candidate', 'candidate', 'not-a-login', $2 \
         FROM UNNEST($1::text[]) WITH ORDINALITY AS t(e, k) ORDER BY k RETURNING id",
    )
    .bind(&emails)
    .bind(Utc::now())
    .fetch_all(pool)
    .await
    .context("inserting candidates")?;
    user_ids.sort();
    Ok(user_ids)
}

/// The alerts of `frequency`, 20 to a candidate, made 30 days before `watermark`, each with its
/// watermark there (its digest of the period before written).
pub(crate) async fn insert_pg_alerts(
    pool: &sqlx::PgPool,
    company_ids: &[i64],
    user_ids: &[i64],
    alerts: &[SeedAlert],
    frequency: Frequency,
    watermark: DateTime<Utc>,
) -> Result<()> {
    for (c, chunk) in alerts.chunks(10_000).enumerate() {
        let first = c * 10_000;
        sqlx::query(
            "INSERT INTO alerts (user_id, q, location, remote, company_id, salary_min, \
             employment_type, frequency, created_at, watermark_created_at, watermark_job_id) \
             SELECT t.u, t.q, t.l, t.r, t.c, t.s, t.e, $10, $8, $9, 0 \
             FROM UNNEST($1::bigint[], $2::text[], $3::text[], $4::bool[], $5::bigint[], \
             $6::bigint[], $7::text[]) AS t(u, q, l, r, c, s, e)",
        )
        .bind(
            (first..first + chunk.len())
                .map(|i| user_ids[i / 20])
                .collect::<Vec<_>>(),
        )
        .bind(chunk.iter().map(|a| a.q.clone()).collect::<Vec<_>>())
        .bind(chunk.iter().map(|a| a.location.clone()).collect::<Vec<_>>())
        .bind(chunk.iter().map(|a| a.remote).collect::<Vec<_>>())
        .bind(
            chunk
                .iter()
                .map(|a| a.company.map(|c| company_ids[c]))
                .collect::<Vec<_>>(),
        )
        .bind(chunk.iter().map(|a| a.salary_min).collect::<Vec<_>>())
        .bind(chunk.iter().map(|a| a.employment_type).collect::<Vec<_>>())
        .bind(watermark - ChronoDuration::days(30))
        .bind(watermark)
        .bind(frequency.as_str())
        .execute(pool)
        .await
        .context("inserting alerts")?;
    }
    Ok(())
}
