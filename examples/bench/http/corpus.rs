//! The generated jobs of the HTTP section's board: titles, descriptions, places, companies
//! (drawn Zipf-like), pay and ages, deterministic for a number of jobs; and how often each term
//! occurs in them, which the searches are drawn by.

use super::vocabulary::{
    ADJECTIVES, BENEFITS, BODY_SENTENCES, BODY_WORDS, CITIES, COMPANY_SUFFIXES, DOMAINS, LEVELS,
    OBJECTS, OTHER_ROLES, ROLES, SKILLS, TECH, VERBS, WORK_MODES,
};
use crate::seed::SeedJob;
use anyhow::{Context, Result};
use chrono::{DateTime, Duration as ChronoDuration, Utc};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;

pub(super) const COMPANY: &str = "Northwind Labs";

/// `n` varied jobs (deterministic) of the companies `companies` (by rank, drawn Zipf-like),
/// oldest first, posted over the last year (more of them recently: [`age_days`]).
pub(super) fn generate_jobs(n: usize, companies: &[String]) -> Result<Vec<SeedJob>> {
    let mut rng = StdRng::seed_from_u64(20_261_202);
    let tail = zipf(TAIL_WORDS)?;
    let company_law = zipf(companies.len())?;
    let towns = town_names();
    // Whole microseconds, as the store writes them.
    let now = Utc::now();
    let now = DateTime::from_timestamp_micros(now.timestamp_micros()).unwrap_or(now);
    const DAY_US: f64 = 86_400_000_000.0;
    let mut jobs: Vec<SeedJob> = (0..n)
        .map(|_| {
            let tech = rng.gen_bool(0.7);
            let title = if tech {
                format!(
                    "{} {} {}",
                    pick(&mut rng, LEVELS),
                    pick(&mut rng, TECH),
                    pick(&mut rng, ROLES)
                )
            } else {
                format!("{} {}", pick(&mut rng, LEVELS), pick(&mut rng, OTHER_ROLES))
            };
            let location = if rng.gen_bool(0.05) {
                towns[rng.gen_range(0..towns.len())].clone()
            } else {
                pick(&mut rng, CITIES).to_string()
            };
            let city = location.split(',').next().unwrap_or("").to_string();
            let company = rng.sample(&company_law);
            let company_name = companies
                .get(company)
                .map(String::as_str)
                .unwrap_or(COMPANY);
            let mut description = format!(
                "We are a {} {} company in {city}. As a {title} you will {} {} and {} {} with a \
                 team of {} people. ",
                pick(&mut rng, ADJECTIVES),
                pick(&mut rng, DOMAINS),
                pick(&mut rng, VERBS),
                pick(&mut rng, OBJECTS),
                pick(&mut rng, VERBS),
                pick(&mut rng, OBJECTS),
                rng.gen_range(3..40),
            );
            if tech {
                description.push_str(&format!(
                    "Our stack includes {}, {} and {}. ",
                    pick(&mut rng, TECH),
                    pick(&mut rng, TECH),
                    pick(&mut rng, TECH)
                ));
            }
            description.push_str(&format!(
                "Experience with {}, {} or {} is a plus; you will also meet {}, {} and {}. We \
                 offer {}, {} and {}. The role is {}.",
                pick(&mut rng, SKILLS),
                pick(&mut rng, SKILLS),
                pick(&mut rng, SKILLS),
                tail_word(rng.sample(&tail)),
                tail_word(rng.sample(&tail)),
                tail_word(rng.sample(&tail)),
                pick(&mut rng, BENEFITS),
                pick(&mut rng, BENEFITS),
                pick(&mut rng, BENEFITS),
                pick(&mut rng, WORK_MODES),
            ));
            let core_len = description.len();
            let target = rng.gen_range(DESCRIPTION_BYTES);
            add_body(&mut rng, &mut description, target);
            let (salary_min, salary_max) = if rng.gen_bool(0.15) {
                (None, None)
            } else {
                let min = rng.gen_range(25..150) * 1_000;
                (Some(min), Some(min + rng.gen_range(5..50) * 1_000))
            };
            let employment_type = match rng.gen_range(0..100) {
                0..70 => "full_time",
                70..80 => "part_time",
                80..95 => "contract",
                _ => "internship",
            };
            let age_us = (age_days(&mut rng) * DAY_US) as i64;
            let created_at = now - ChronoDuration::microseconds(age_us);
            SeedJob {
                search_terms: jobboard::domain::search::document_terms(&[
                    &title,
                    &description[..core_len],
                    company_name,
                ]),
                core_len,
                title_terms: jobboard::domain::search::document_terms(&[&title]),
                remote: location == "Remote" || rng.gen_bool(0.25),
                title,
                description,
                location,
                salary_min,
                salary_max,
                employment_type,
                company,
                created_at,
                expires_at: None,
            }
        })
        .collect();
    // Ids follow creation time, as the store guarantees (create_job never writes a created_at
    // earlier than the newest job's): inserted oldest first, they get increasing ids.
    jobs.sort_by_key(|j| j.created_at);
    Ok(jobs)
}

/// How many jobs hold each term (document frequency).
pub(super) fn document_frequencies(jobs: &[SeedJob]) -> HashMap<String, usize> {
    let mut df: HashMap<String, usize> = HashMap::new();
    for job in jobs {
        for term in job.search_terms.split(' ') {
            match df.get_mut(term) {
                Some(n) => *n += 1,
                None => {
                    df.insert(term.to_string(), 1);
                }
            }
        }
    }
    df
}

/// Each description's length in bytes, drawn uniformly: postings on job boards run to a few
/// thousand characters (a first paragraph, responsibilities, requirements, what is offered,
/// how to apply).
const DESCRIPTION_BYTES: std::ops::Range<usize> = 2_000..5_001;

/// Appends paragraphs of [`BODY_SENTENCES`] to `description` until it holds at least `target`
/// bytes (the last sentence may pass it by one sentence's length).
fn add_body(rng: &mut StdRng, description: &mut String, target: usize) {
    while description.len() < target {
        description.push_str("\n\n");
        for _ in 0..rng.gen_range(3..7) {
            let sentence = pick(rng, BODY_SENTENCES);
            description.push_str(&sentence.replacen("{}", pick(rng, BODY_WORDS), 1));
            description.push(' ');
        }
        description.pop();
    }
}

fn pick<'a>(rng: &mut StdRng, list: &[&'a str]) -> &'a str {
    list.choose(rng).copied().unwrap_or("")
}

/// Words of the long tail: specific technologies, skills and tools that few jobs name, drawn
/// Zipf-like (the word of rank r in about 0.29 / r of the jobs, so rank 3 000 in 0.01 %).
pub(super) const TAIL_WORDS: usize = 20_000;

/// Places a few jobs each are in (5 % of the jobs, spread evenly): a narrow `location`.
pub(super) const TOWNS: usize = 400;

/// What the tail words are drawn from: three consonant–vowel syllables, never ending in `s`
/// (so the tokenizer's plural rule leaves them alone).
const CONSONANTS: &[u8] = b"bdfgklmnprtvz";

const VOWELS: &[u8] = b"aeiou";

/// Pseudo-word numbers, all distinct: tail words first, then company names, then towns.
const COMPANY_WORDS_FROM: usize = TAIL_WORDS;

pub(super) const TOWN_WORDS_FROM: usize = TAIL_WORDS + 10_000;

/// The `i`-th pseudo-word (distinct for every `i` below 13³·5³ = 274 625), lower case.
pub(super) fn pseudo_word(i: usize) -> String {
    const SYLLABLES: usize = 13 * 5;
    const SPACE: usize = SYLLABLES * SYLLABLES * SYLLABLES;
    // A multiplier coprime with the space scatters neighbouring numbers.
    let mut n = (i % SPACE) * 104_729 % SPACE;
    let mut out = String::with_capacity(6);
    for _ in 0..3 {
        let s = n % SYLLABLES;
        n /= SYLLABLES;
        out.push(CONSONANTS[s / 5] as char);
        out.push(VOWELS[s % 5] as char);
    }
    out
}

fn capitalised(w: &str) -> String {
    let mut c = w.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// The tail word of Zipf rank `rank` (from 0), capitalised as a product name.
fn tail_word(rank: usize) -> String {
    capitalised(&pseudo_word(rank))
}

/// How many companies a board of `njobs` jobs has: one per 500 jobs, 10 to 5 000.
pub(super) fn company_count(njobs: usize) -> usize {
    (njobs / 500).clamp(10, 5_000)
}

/// The names of the seeded companies, by rank (rank 0 is [`COMPANY`], made through the API).
pub(super) fn company_names(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            if i == 0 {
                COMPANY.to_string()
            } else {
                format!(
                    "{} {}",
                    capitalised(&pseudo_word(COMPANY_WORDS_FROM + i)),
                    COMPANY_SUFFIXES[i % COMPANY_SUFFIXES.len()]
                )
            }
        })
        .collect()
}

/// The narrow places: "<Town>, <a country of CITIES>".
fn town_names() -> Vec<String> {
    let countries: Vec<&str> = CITIES
        .iter()
        .filter_map(|c| c.split_once(", "))
        .map(|(_, k)| k)
        .collect();
    (0..TOWNS)
        .map(|i| {
            format!(
                "{}, {}",
                capitalised(&pseudo_word(TOWN_WORDS_FROM + i)),
                countries[i % countries.len()]
            )
        })
        .collect()
}

/// Weights 1 / (rank + 1) for ranks 0..n (a Zipf law of exponent 1).
fn zipf(n: usize) -> Result<rand::distributions::WeightedIndex<f64>> {
    rand::distributions::WeightedIndex::new((0..n.max(1)).map(|r| 1.0 / (r + 1) as f64))
        .context("cannot build a Zipf distribution")
}

/// How long ago a job was posted, in days: 365 · u² for u uniform in [0, 1), so that the last
/// day holds about 5 % of the jobs, the last 7 days 14 %, the last 30 days 29 %, the last 90 days
/// 50 %, and the oldest is a year old.
fn age_days(rng: &mut StdRng) -> f64 {
    let u: f64 = rng.r#gen();
    365.0 * u * u
}
