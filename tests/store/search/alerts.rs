//! The alert matcher (`jobboard::search::match_alerts`) against the reference of `queries.rs`
//! (the contract's search rules written plainly): for random corpora and random alerts (typed
//! words with plurals and upper case, location substrings, every filter, watermarks on ties
//! and between jobs, closed jobs in the window), each alert's digest is the reference's
//! matches after its watermark, newest first, the first 20 listed and the rest counted. Then
//! the same on the conformance corpus with the conformance searches as alerts.

use super::corpus::{
    COMPANIES, Job, LOCATIONS, PAY_CURRENCIES, PLACES, TEXT_WORDS, TITLE_WORDS, gen_corpus,
    gen_description, gen_pay_and_place, gen_title, made_up, pick, zipf,
};
use super::queries::{gen_search, reference_matches, surface, vocabulary};
use chrono::{DateTime, Duration, Utc};
use jobboard::domain::alert::{DIGEST_JOBS, Frequency, Watermark};
use jobboard::domain::pay_place::{Period, Workplace, places_to_stored};
use jobboard::domain::{EmploymentType, JobStatus, search};
use jobboard::search::{AlertMatches, match_alerts};
use jobboard::store::{AlertRow, JobRow, JobSearch, SearchSort};
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;

/// An alert with what the reference needs to answer it.
struct Case {
    row: AlertRow,
    /// The search as `GET /api/jobs` would make it from the same filters, `company_id` left out.
    search: JobSearch,
    /// Index of the company filtered by.
    company: Option<usize>,
}

fn companies() -> Vec<String> {
    COMPANIES.iter().map(|c| c.to_string()).collect()
}

fn row_of(job: &Job, companies: &[String]) -> JobRow {
    JobRow {
        id: job.id,
        company_id: job.company as i64 + 1,
        company_name: companies[job.company].clone(),
        title: job.title.clone(),
        description: job.description.clone(),
        location: job.location.clone(),
        remote: job.remote,
        salary_min: job.salary_min,
        salary_max: job.salary_max,
        // A job stored before pay and place has only the older columns.
        workplace: (!job.legacy).then(|| job.workplace.as_str().to_string()),
        locations: (!job.legacy).then(|| places_to_stored(&job.places)),
        salary_currency: (!job.legacy).then(|| job.currency.clone()),
        salary_period: (!job.legacy).then(|| job.period.as_str().to_string()),
        employment_type: job.employment_type,
        status: if job.open {
            JobStatus::Open
        } else {
            JobStatus::Closed
        },
        expires_at: job.expires_at,
        rejection_reason: None,
        resume_required: false,
        questions: None,
        created_at: job.created_at,
        updated_at: job.created_at,
    }
}

/// `n` jobs over ten days, a fifth of them tied on `created_at` with the one before.
fn gen_jobs(rng: &mut StdRng, n: usize, companies: &[String]) -> Vec<Job> {
    let mut at = super::fixed_now() - Duration::days(10);
    (0..n)
        .map(|i| {
            if !rng.gen_bool(0.2) {
                at += Duration::microseconds(rng.gen_range(1..3_600_000_000));
            }
            let salary_max = (!rng.gen_bool(0.2)).then(|| rng.gen_range(30..=250) * 1_000);
            let mut job = Job {
                id: i as i64 + 1,
                company: zipf(rng, companies.len()),
                title: gen_title(rng, i),
                description: gen_description(rng, i),
                location: String::new(),
                remote: false,
                salary_min: None,
                salary_max,
                workplace: Workplace::Onsite,
                places: Vec::new(),
                currency: "USD".into(),
                period: Period::Year,
                legacy: false,
                employment_type: *EmploymentType::ALL.choose(rng).unwrap(),
                open: !rng.gen_bool(0.15),
                expired: false,
                deleted: false,
                created_at: at,
                expires_at: None,
                terms: Default::default(),
                title_terms: Default::default(),
            };
            gen_pay_and_place(rng, &mut job);
            job.reindex(companies);
            job
        })
        .collect()
}

/// A word as a user types it: a term of some job (maybe as a plural or in upper case), a title
/// or description word as the corpus writes it, or a word no job has.
fn gen_word(rng: &mut StdRng, jobs: &[Job]) -> String {
    match rng.gen_range(0..10) {
        0..=5 if !jobs.is_empty() => {
            let job = jobs.choose(rng).unwrap();
            let terms: Vec<&String> = job.terms.iter().collect();
            match terms.choose(rng) {
                Some(t) => surface(rng, t),
                None => "nothing".to_string(),
            }
        }
        6 | 7 => pick(rng, TITLE_WORDS).to_string(),
        8 => pick(rng, TEXT_WORDS).to_string(),
        _ => made_up(10_000 + rng.gen_range(0..5)),
    }
}

/// A watermark: none (the alert's creation, sometimes exactly a job's time), a job's own
/// (`created_at`, `id`), or a time between jobs.
fn gen_watermark(rng: &mut StdRng, jobs: &[Job]) -> (DateTime<Utc>, Option<(DateTime<Utc>, i64)>) {
    let some_time = |rng: &mut StdRng| match jobs.choose(rng) {
        Some(j) => j.created_at + Duration::microseconds(rng.gen_range(-1..=1)),
        None => super::fixed_now(),
    };
    match rng.gen_range(0..3) {
        0 => (some_time(rng), None),
        1 => match jobs.choose(rng) {
            Some(j) => (some_time(rng), Some((j.created_at, j.id))),
            None => (some_time(rng), None),
        },
        _ => {
            let at = some_time(rng);
            (at, Some((at, rng.gen_range(0..=jobs.len() as i64 + 1))))
        }
    }
}

fn gen_case(rng: &mut StdRng, id: i64, jobs: &[Job]) -> Case {
    let words: Vec<String> = (0..rng.gen_range(0..=3))
        .map(|_| gen_word(rng, jobs))
        .collect();
    let q = words.join(pick(rng, &[" ", ", ", " - ", "  "]));
    let location = rng
        .gen_bool(0.25)
        .then(|| {
            let loc: Vec<char> = pick(rng, LOCATIONS).chars().collect();
            let from = rng.gen_range(0..loc.len());
            let to = rng.gen_range(from + 1..=loc.len().min(from + 7));
            // As typed (any case), trimmed as the API stores it.
            loc[from..to].iter().collect::<String>().trim().to_string()
        })
        .filter(|l| !l.is_empty());
    let remote = rng.gen_bool(0.15).then(|| rng.r#gen());
    let company = rng.gen_bool(0.2).then(|| zipf(rng, COMPANIES.len()));
    let salary_min = rng.gen_bool(0.2).then(|| match rng.gen_range(0..3) {
        0 => *[0, 1, 250_000, 1_000_000_000].choose(rng).unwrap(),
        1 => jobs
            .choose(rng)
            .and_then(|j| j.salary_max)
            .unwrap_or(100_000),
        _ => rng.gen_range(20..=260) * 1_000,
    });
    let employment_type = rng
        .gen_bool(0.15)
        .then(|| *EmploymentType::ALL.choose(rng).unwrap());
    let workplace = rng
        .gen_bool(0.15)
        .then(|| Workplace::ALL.choose(rng).unwrap().as_str().to_string());
    let country = rng
        .gen_bool(0.15)
        .then(|| PLACES.choose(rng).unwrap().2.to_string());
    let salary_currency = rng
        .gen_bool(0.2)
        .then(|| pick(rng, PAY_CURRENCIES).to_string());
    let (created_at, watermark) = gen_watermark(rng, jobs);
    let search = JobSearch {
        terms: search::query_terms(&q).expect("short words"),
        location: location.as_ref().map(|l| l.to_lowercase()),
        remote,
        workplace: workplace.clone(),
        country: country.clone(),
        salary_min,
        salary_currency: salary_currency.clone(),
        employment_type: employment_type.map(|t| t.as_str().to_string()),
        sort: SearchSort::Newest,
        ..JobSearch::default()
    };
    let row = AlertRow {
        id,
        user_id: 1,
        q: Some(q).filter(|q| !q.trim().is_empty()),
        location,
        remote,
        company_id: company.map(|c| c as i64 + 1),
        salary_min,
        employment_type: employment_type.map(|t| t.as_str().to_string()),
        workplace,
        country,
        salary_currency,
        frequency: Frequency::Daily,
        paused: false,
        created_at,
        last_sent_at: None,
        watermark_created_at: watermark.map(|w| w.0),
        watermark_job_id: watermark.map(|w| w.1),
    };
    Case {
        row,
        search,
        company,
    }
}

/// The reference's digest: its matches (newest first) after the watermark, 20 listed.
fn reference(jobs: &[Job], by_id: &BTreeMap<i64, &Job>, case: &Case) -> AlertMatches {
    let watermark: Watermark = case.row.watermark();
    let after: Vec<i64> = reference_matches(jobs, &case.search, case.company)
        .into_iter()
        .filter(|id| watermark.admits(by_id[id].created_at, *id))
        .collect();
    let listed: Vec<i64> = after.iter().take(DIGEST_JOBS).copied().collect();
    AlertMatches {
        alert_id: case.row.id,
        further: (after.len() - listed.len()) as u64,
        jobs: listed,
    }
}

/// Runs `cases` against `jobs` (handed to the matcher in a shuffled order) and compares each
/// answer with the reference's; returns how many alerts listed at least one job.
fn check(rng: &mut StdRng, jobs: &[Job], cases: &[Case], companies: &[String]) -> usize {
    let mut window: Vec<JobRow> = jobs.iter().map(|j| row_of(j, companies)).collect();
    window.shuffle(rng);
    let alerts: Vec<AlertRow> = cases.iter().map(|c| c.row.clone()).collect();
    let found: Vec<AlertMatches> = match_alerts(&window, &alerts)
        .expect("index the window")
        .into_iter()
        .collect::<anyhow::Result<_>>()
        .expect("match every alert");
    assert_eq!(found.len(), cases.len());
    let by_id: BTreeMap<i64, &Job> = jobs.iter().map(|j| (j.id, j)).collect();
    let mut listing = 0;
    for (case, got) in cases.iter().zip(&found) {
        let want = reference(jobs, &by_id, case);
        assert_eq!(
            got, &want,
            "alert {:?}\nsearch {:?} company {:?}",
            case.row, case.search, case.company
        );
        if !got.jobs.is_empty() {
            listing += 1;
        }
    }
    listing
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Random corpora, random alerts: the matcher is the reference.
    #[test]
    fn digests_are_the_reference_matches_after_the_watermark(
        seed in any::<u64>(),
        n_jobs in 0usize..400,
        n_alerts in 1usize..60,
    ) {
        let mut rng = StdRng::seed_from_u64(seed);
        let companies = companies();
        let jobs = gen_jobs(&mut rng, n_jobs, &companies);
        let cases: Vec<Case> = (0..n_alerts)
            .map(|i| gen_case(&mut rng, i as i64 + 1, &jobs))
            .collect();
        check(&mut rng, &jobs, &cases, &companies);
    }
}

/// The conformance corpus (6 000 jobs: skewed and correlated words, plurals, Unicode
/// locations, ties on `created_at`, closed jobs) with the conformance searches' filters as
/// alerts, each with a random watermark.
#[test]
fn digests_on_the_conformance_corpus_are_the_reference() {
    let mut rng = StdRng::seed_from_u64(super::seed() ^ 0xA1E7);
    let companies = companies();
    let jobs = gen_corpus(&mut rng, &companies);
    let vocabulary = vocabulary(&jobs);
    let cases: Vec<Case> = (0..600)
        .map(|i| {
            let s = gen_search(&mut rng, &vocabulary, &jobs);
            let (created_at, watermark) = gen_watermark(&mut rng, &jobs);
            let location = s.search.location.clone();
            Case {
                row: AlertRow {
                    id: i + 1,
                    user_id: 1,
                    q: Some(s.q.clone()).filter(|q| !q.trim().is_empty()),
                    location: location.clone(),
                    remote: s.search.remote,
                    company_id: s.company.map(|c| c as i64 + 1),
                    salary_min: s.search.salary_min,
                    employment_type: s.search.employment_type.clone(),
                    workplace: s.search.workplace.clone(),
                    country: s.search.country.clone(),
                    salary_currency: s.search.salary_currency.clone(),
                    frequency: Frequency::Weekly,
                    paused: false,
                    created_at,
                    last_sent_at: None,
                    watermark_created_at: watermark.map(|w| w.0),
                    watermark_job_id: watermark.map(|w| w.1),
                },
                // An alert saves only the filters: newest first, no age, no page.
                search: JobSearch {
                    terms: s.search.terms.clone(),
                    location,
                    remote: s.search.remote,
                    workplace: s.search.workplace.clone(),
                    country: s.search.country.clone(),
                    salary_min: s.search.salary_min,
                    salary_currency: s.search.salary_currency.clone(),
                    employment_type: s.search.employment_type.clone(),
                    ..JobSearch::default()
                },
                company: s.company,
            }
        })
        .collect();
    let listing = check(&mut rng, &jobs, &cases, &companies);
    assert!(
        listing > cases.len() / 4,
        "the alerts list jobs: {listing} of {}",
        cases.len()
    );
}
