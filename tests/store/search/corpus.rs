//! The corpus: seeded jobs made to find the wrong pages of bounded plans.

use super::{BOUNDARY_DAYS, CORPUS_SIZE, fixed_now};
use chrono::{DateTime, Duration, Utc};
use jobboard::domain::pay_place::{self, Period, Place, Salary, Workplace};
use jobboard::domain::values::{SalaryRange, Title};
use jobboard::domain::{EmploymentType, JobStatus, search};
use jobboard::store::JobFields;
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use std::collections::BTreeSet;

pub const COMPANIES: &[&str] = &[
    "Acme Engineering",
    "Globex Corporation",
    "Initech",
    "Women Who Code",
    "Müller & Söhne",
    "The People Company",
    "Hooli",
    "Vandelay Industries",
    "Stark Industries",
    "Wayne Enterprises",
    "Tyrell",
    "Ünïcode Labs",
];

pub const LOCATIONS: &[&str] = &[
    "Berlin, Germany",
    "MÜNCHEN, Deutschland",
    "München",
    "Zürich",
    "ZÜRICH, Schweiz",
    "São Paulo, Brasil",
    "İstanbul, Türkiye",
    "Straße 5, Köln",
    "STRASSE 7, Wien",
    "Remote",
    "Remote (100% async)",
    "Paris_Nord",
    "東京",
    "Montréal, QC",
    "ÅRHUS",
    "ΟΔΟΣ ΑΘΗΝΑΣ",
    "London, UK",
    "New York, USA",
];

/// Places of jobs written with pay and place: city, region, country.
pub const PLACES: &[(&str, Option<&str>, &str)] = &[
    ("Berlin", None, "DE"),
    ("München", Some("Bayern"), "DE"),
    ("Zürich", None, "CH"),
    ("São Paulo", Some("SP"), "BR"),
    ("İstanbul", None, "TR"),
    ("Toronto", Some("Ontario"), "CA"),
    ("Montréal", Some("QC"), "CA"),
    ("New York", Some("NY"), "US"),
    ("Austin", Some("Texas"), "US"),
    ("London", None, "GB"),
    ("東京", None, "JP"),
    ("Paris", Some("Île-de-France"), "FR"),
];

/// The currencies the corpus pays in (the default first).
pub const PAY_CURRENCIES: &[&str] = &["USD", "EUR", "GBP", "CAD"];

/// Words of the descriptions, in the surface form they are written in, most frequent first.
pub const TEXT_WORDS: &[&str] = &[
    "team",
    "work",
    "experience",
    "with",
    "our",
    "customers",
    "product",
    "data",
    "build",
    "systems",
    "people",
    "growth",
    "support",
    "design",
    "companies",
    "benefits",
    "office",
    "travel",
    "hours",
    "training",
    "children",
    "women",
    "men",
    "analysis",
    "analyses",
    "status",
    "news",
    "sales",
    "boxes",
    "matches",
    "classes",
    "cloud",
    "security",
    "finance",
    "health",
    "logistics",
    "Ingénieur",
    "Straße",
    "école",
    "東京",
    "mañana",
    // Words that are operators of full-text query syntax, and an accent written decomposed.
    "and",
    "or",
    "NOT",
    "near",
    "Cafe\u{301}",
];

/// Words of the titles, most frequent first.
pub const TITLE_WORDS: &[&str] = &[
    "Engineer",
    "Senior",
    "Manager",
    "Developers",
    "Engineers",
    "Analyst",
    "Lead",
    "Designer",
    "Nurse",
    "Teacher",
    "Driver",
    "Scientist",
    "Director",
    "Intern",
    "Research and Development",
    "Consultant",
    "Companies",
    "Women",
    "People",
    "Children",
    "Sales",
    "Status",
    "Ingénieur",
];

/// Syllables of the made-up rare words (none ends in `s`, so none is read as a plural).
pub const SYLLABLES: &[&str] = &[
    "ka", "lo", "mi", "nu", "pe", "ri", "to", "va", "ze", "du", "fo", "gi", "bo", "xa",
];

/// The `i`-th made-up word: three syllables.
pub fn made_up(i: usize) -> String {
    let n = SYLLABLES.len();
    format!(
        "{}{}{}",
        SYLLABLES[i % n],
        SYLLABLES[(i / n) % n],
        SYLLABLES[(i / n / n) % n]
    )
}

/// How many made-up words the descriptions draw from, and the first one never used.
pub const MADE_UP: usize = 900;

#[derive(Debug, Clone)]
pub struct Job {
    pub id: i64,
    /// Index into the companies.
    pub company: usize,
    pub title: String,
    pub description: String,
    /// The first place as text (what the older `location` column holds).
    pub location: String,
    /// `workplace == remote`.
    pub remote: bool,
    pub salary_min: Option<i64>,
    pub salary_max: Option<i64>,
    pub workplace: Workplace,
    pub places: Vec<Place>,
    /// The salary's currency and period, as it reads (the default, `USD` a year, for a job
    /// stored before pay and place).
    pub currency: String,
    pub period: Period,
    /// Stored before pay and place: its new columns are null, and it reads from the older.
    pub legacy: bool,
    pub employment_type: EmploymentType,
    /// Stored `open` (else closed, or `expired` below).
    pub open: bool,
    /// Stored `expired`: the upkeep expired it.
    pub expired: bool,
    pub deleted: bool,
    pub created_at: DateTime<Utc>,
    /// `None`: written before jobs expired.
    pub expires_at: Option<DateTime<Utc>>,
    /// `document_terms` of title, description and company name, as a set.
    pub terms: BTreeSet<String>,
    /// `document_terms` of the title alone.
    pub title_terms: BTreeSet<String>,
}

pub fn term_set(joined: &str) -> BTreeSet<String> {
    joined
        .split(' ')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

impl Job {
    /// The terms as `create_job` writes them.
    pub fn search_terms(&self, companies: &[String]) -> String {
        search::document_terms(&[&self.title, &self.description, &companies[self.company]])
    }

    pub fn title_terms_joined(&self) -> String {
        search::document_terms(&[&self.title])
    }

    pub fn reindex(&mut self, companies: &[String]) {
        self.terms = term_set(&self.search_terms(companies));
        self.title_terms = term_set(&self.title_terms_joined());
    }

    pub fn fields(&self) -> JobFields {
        JobFields {
            title: Title::parse(&self.title).expect("a valid title"),
            description: self.description.clone(),
            workplace: self.workplace,
            locations: self.places.clone(),
            salary: self.salary(),
            employment_type: self.employment_type,
            status: if self.expired {
                JobStatus::Expired
            } else if self.open {
                JobStatus::Open
            } else {
                JobStatus::Closed
            },
            expires_at: self.expires_at,
            resume_required: false,
            questions: None,
        }
    }

    /// The pay as the job reads.
    pub fn salary(&self) -> Option<Salary> {
        SalaryRange::parse(self.salary_min, self.salary_max)
            .unwrap_or_else(|_| panic!("a valid salary range in {self:?}"));
        (self.salary_min.is_some() || self.salary_max.is_some()).then(|| Salary {
            min: self.salary_min,
            max: self.salary_max,
            currency: self.currency.clone(),
            period: self.period,
        })
    }

    /// Whether a search at `at` finds the job (its words and filters aside): open, and not
    /// past its `expires_at`.
    pub fn searchable_at(&self, at: DateTime<Utc>) -> bool {
        !self.deleted && self.open && !self.expired && self.expires_at.is_none_or(|t| t > at)
    }
}

/// A Zipf-like pick among `n` items: rank `r` (from 0) with weight 1 / (r + 1).
pub fn zipf(rng: &mut StdRng, n: usize) -> usize {
    // The inverse of the continuous 1/x distribution over [1, n + 1).
    let x = ((n as f64 + 1.0).ln() * rng.r#gen::<f64>()).exp();
    (x as usize - 1).min(n - 1)
}

pub fn pick<'a>(rng: &mut StdRng, items: &'a [&'a str]) -> &'a str {
    items.choose(rng).expect("not empty")
}

/// A title: a role word or two, sometimes a made-up word, sometimes a correlated pair.
pub fn gen_title(rng: &mut StdRng, i: usize) -> String {
    let mut words: Vec<String> = Vec::new();
    let roll = rng.gen_range(0..100);
    if roll < 8 {
        words.push(pick(rng, &["Senior", "Junior", "Regional", ""]).to_string());
        words.push(
            pick(
                rng,
                &[
                    "Account Executive",
                    "Account Executives",
                    "account executive",
                ],
            )
            .to_string(),
        );
    } else if roll < 9 {
        words.push("Account Manager".to_string());
    } else if roll < 10 {
        words.push("Executive Assistant".to_string());
    } else {
        for _ in 0..rng.gen_range(1..=3) {
            words.push(TITLE_WORDS[zipf(rng, TITLE_WORDS.len())].to_string());
        }
    }
    if rng.gen_bool(0.15) {
        words.push(made_up(zipf(rng, MADE_UP)));
    }
    if rng.gen_bool(0.05) {
        words.push(format!("{}", i % 17));
    }
    let title = words
        .iter()
        .filter(|w| !w.is_empty())
        .cloned()
        .collect::<Vec<_>>()
        .join(pick(rng, &[" ", " - ", ", ", " / "]));
    if title.trim().is_empty() || rng.gen_bool(0.005) {
        // A title with no word at all: its title terms are empty.
        return "*** !!!".to_string();
    }
    title
}

pub fn gen_description(rng: &mut StdRng, i: usize) -> String {
    let mut words: Vec<String> = Vec::new();
    for _ in 0..rng.gen_range(4..=12) {
        if rng.gen_bool(0.35) {
            words.push(TEXT_WORDS[zipf(rng, TEXT_WORDS.len())].to_string());
        } else {
            let w = made_up(zipf(rng, MADE_UP));
            words.push(if rng.gen_bool(0.1) {
                w.to_uppercase()
            } else {
                w
            });
        }
    }
    // A correlated pair: nearly always together.
    if rng.gen_bool(0.10) {
        words.push("machine learning".into());
    } else if rng.gen_bool(0.003) {
        words.push("machine".into());
    }
    // Two common words that almost never meet, except in a few old jobs.
    match rng.gen_range(0..10) {
        0..=2 => words.push("hospital".into()),
        3..=5 => words.push("kubernetes".into()),
        _ => {}
    }
    if i % 300 == 17 && i < *CORPUS_SIZE / 4 {
        words.push("hospital kubernetes".into());
    }
    // Common among the oldest jobs only; only among the newest; mostly in closed jobs (below).
    if i < *CORPUS_SIZE / 8 && rng.gen_bool(0.5) {
        words.push("legacy".into());
    }
    if i >= *CORPUS_SIZE - *CORPUS_SIZE / 20 && rng.gen_bool(0.5) {
        words.push("launchpad".into());
    }
    if rng.gen_bool(0.08) {
        words.push("cobol".into());
    }
    words.shuffle(rng);
    words.join(pick(rng, &[" ", ", ", ". ", "; "]))
}

/// Creation times over 400 days before [`fixed_now`], increasing with the id, with ties, and a
/// few jobs exactly at a `posted_within_days` boundary.
pub fn gen_times(rng: &mut StdRng) -> Vec<DateTime<Utc>> {
    let gaps: Vec<i64> = (0..*CORPUS_SIZE)
        .map(|_| {
            if rng.gen_bool(0.12) {
                0
            } else {
                rng.gen_range(1..2_000_000_000)
            }
        })
        .collect();
    let span = Duration::days(400).num_microseconds().unwrap() as f64;
    let total: i64 = gaps.iter().sum();
    let start = fixed_now() - Duration::days(400);
    let mut sum = 0i64;
    let mut times: Vec<DateTime<Utc>> = gaps
        .iter()
        .map(|g| {
            sum += g;
            start + Duration::microseconds((sum as f64 / total as f64 * span) as i64)
        })
        .collect();
    for days in BOUNDARY_DAYS {
        let boundary = fixed_now() - Duration::days(*days);
        if let Some(first) = times.iter().position(|t| *t >= boundary) {
            // This job and the next, tied on the boundary itself.
            for t in times.iter_mut().skip(first).take(2) {
                *t = boundary;
            }
        }
    }
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "times follow ids");
    times
}

/// An `expires_at` as of [`fixed_now`]: mostly ahead (up to 90 days), some past (up to 30 days
/// before, the upkeep not having run), some exactly at it (expired: a job is found only while
/// its date is after the search's instant) or a microsecond after it, and some none (written
/// before jobs expired).
pub fn gen_expiry(rng: &mut StdRng) -> Option<DateTime<Utc>> {
    let day = Duration::days(1).num_microseconds().unwrap();
    Some(match rng.gen_range(0..100) {
        0..=4 => return None,
        5..=12 => fixed_now() - Duration::microseconds(rng.gen_range(0..30 * day)),
        13 => fixed_now(),
        14 => fixed_now() + Duration::microseconds(1),
        _ => fixed_now() + Duration::microseconds(rng.gen_range(1..90 * day)),
    })
}

pub fn gen_corpus(rng: &mut StdRng, companies: &[String]) -> Vec<Job> {
    let times = gen_times(rng);
    (0..*CORPUS_SIZE)
        .map(|i| {
            let description = gen_description(rng, i);
            let cobol = description.contains("cobol");
            let salary_max = (!rng.gen_bool(0.2)).then(|| rng.gen_range(30..=250) * 1_000);
            let salary_min = match salary_max {
                Some(max) if rng.gen_bool(0.7) => {
                    Some((max - rng.gen_range(0..=50) * 1_000).max(0))
                }
                None if rng.gen_bool(0.3) => Some(rng.gen_range(20..=100) * 1_000),
                _ => None,
            };
            let employment_type = match rng.gen_range(0..100) {
                0..=69 => EmploymentType::FullTime,
                70..=81 => EmploymentType::PartTime,
                82..=93 => EmploymentType::Contract,
                _ => EmploymentType::Internship,
            };
            let open = !rng.gen_bool(if cobol { 0.9 } else { 0.12 });
            let expires_at = gen_expiry(rng);
            let mut job = Job {
                id: i as i64 + 1,
                company: zipf(rng, companies.len()),
                title: gen_title(rng, i),
                description,
                location: String::new(),
                remote: false,
                salary_min,
                salary_max,
                workplace: Workplace::Onsite,
                places: Vec::new(),
                currency: String::new(),
                period: Period::Year,
                legacy: false,
                employment_type,
                open,
                expired: false,
                deleted: false,
                created_at: times[i],
                expires_at,
                terms: BTreeSet::new(),
                title_terms: BTreeSet::new(),
            };
            gen_pay_and_place(rng, &mut job);
            job.reindex(companies);
            job
        })
        .collect()
}

/// A job's pay and place, its yearly range already drawn: a third stored before pay and place
/// (a free-text location of [`LOCATIONS`], the older columns alone, read as USD a year); the
/// rest with a workplace, 1-3 places of [`PLACES`] with their countries, and pay in one of
/// [`PAY_CURRENCIES`] per one of five periods (the yearly amounts, per that period).
pub fn gen_pay_and_place(rng: &mut StdRng, job: &mut Job) {
    job.legacy = rng.gen_bool(0.3);
    let (workplace, places, currency, period) = if job.legacy {
        let location = LOCATIONS[zipf(rng, LOCATIONS.len())];
        let remote = location.starts_with("Remote") || rng.gen_bool(0.25);
        (
            Workplace::of_remote(remote),
            pay_place::places_of_text(location),
            "USD",
            Period::Year,
        )
    } else {
        let workplace = *Workplace::ALL.choose(rng).unwrap();
        let n = rng.gen_range(1..=3);
        let places: Vec<Place> = PLACES
            .choose_multiple(rng, n)
            .map(|(city, region, country)| Place {
                city: city.to_string(),
                region: region.map(str::to_string),
                country: Some(country.to_string()),
            })
            .collect();
        let period = match rng.gen_range(0..100) {
            0..=59 => Period::Year,
            60..=74 => Period::Month,
            75..=89 => Period::Hour,
            90..=94 => Period::Week,
            _ => Period::Day,
        };
        (workplace, places, pick(rng, PAY_CURRENCIES), period)
    };
    let per_period = |a: Option<i64>| a.map(|a| a / period.yearly(1));
    job.salary_min = per_period(job.salary_min);
    job.salary_max = per_period(job.salary_max);
    job.location = places.first().map(Place::text).unwrap_or_default();
    job.remote = workplace == Workplace::Remote;
    job.workplace = workplace;
    job.places = places;
    job.currency = currency.to_string();
    job.period = period;
}
