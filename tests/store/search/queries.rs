//! The searches, and the reference that answers them by the contract's rules.

use super::corpus::{COMPANIES, Job, LOCATIONS, MADE_UP, PAY_CURRENCIES, PLACES, made_up, pick};
use super::{BOUNDARY_DAYS, fixed_now};
use chrono::{DateTime, Utc};
use jobboard::domain::pay_place::Workplace;
use jobboard::domain::{EmploymentType, search};
use jobboard::store::{Facets, JobSearch, PostedWithin, SEARCH_WINDOW, SearchSort};
use rand::Rng;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone)]
pub struct Search {
    /// `q` as a user typed it.
    pub q: String,
    /// The search, `company_id` left out (it differs by backend).
    pub search: JobSearch,
    /// Index of the company filtered by.
    pub company: Option<usize>,
    /// Page sizes and pages to read: (page, size).
    pub pages: Vec<(i64, i64)>,
}

/// Words to search by, by class, from the corpus as the searches see it.
pub struct Vocabulary {
    pub common: Vec<String>,
    pub mid: Vec<String>,
    pub rare: Vec<String>,
    pub absent: Vec<String>,
    pub special: Vec<String>,
}

pub fn vocabulary(jobs: &[Job]) -> Vocabulary {
    let mut df: BTreeMap<&str, usize> = BTreeMap::new();
    for job in jobs.iter().filter(|j| !j.deleted) {
        for t in &job.terms {
            *df.entry(t.as_str()).or_default() += 1;
        }
    }
    let class = |lo: usize, hi: usize| -> Vec<String> {
        df.iter()
            .filter(|(_, n)| **n >= lo && **n < hi)
            .map(|(t, _)| t.to_string())
            .collect()
    };
    let v = Vocabulary {
        common: class(jobs.len() / 5, usize::MAX),
        mid: class(jobs.len() / 100, jobs.len() / 5),
        rare: class(1, jobs.len() / 100),
        absent: (MADE_UP..MADE_UP + 20)
            .map(made_up)
            .chain(["zzyzx".to_string(), "rus".to_string()])
            .filter(|w| !df.contains_key(w.as_str()))
            .collect(),
        special: [
            "Account",
            "Executives",
            "account executive",
            "machine",
            "learning",
            "Machine Learning",
            "hospital",
            "kubernetes",
            "legacy",
            "launchpad",
            "cobol",
            "women",
            "woman",
            "people",
            "person",
            "children",
            "companies",
            "company",
            "engineers",
            "ENGINEER",
            "status",
            "analyses",
            "analysis",
            "Hooli",
            "nucleus",
            "and",
            "OR",
            "not",
            "café",
            "research development",
            "Acme",
            "söhne",
            "ünïcode",
            "ingénieur",
            "STRASSE",
            "straße",
            "東京",
            "\"sales\"",
            "a*b",
            "NEAR",
            "x:y",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect(),
    };
    for (name, class) in [("common", &v.common), ("mid", &v.mid), ("rare", &v.rare)] {
        assert!(class.len() >= 3, "the corpus has {name} words: {class:?}");
    }
    v
}

/// A word of the query as a user might type it: the term, or a plural or upper-case form.
pub fn surface(rng: &mut StdRng, term: &str) -> String {
    let plural = format!("{term}s");
    match rng.gen_range(0..6) {
        0 if search::singular(&plural) == term => plural,
        1 => term.to_uppercase(),
        _ => term.to_string(),
    }
}

pub fn gen_search(rng: &mut StdRng, v: &Vocabulary, jobs: &[Job]) -> Search {
    let mut words = Vec::new();
    let n = match rng.gen_range(0..100) {
        0..=14 => 0,
        15..=54 => 1,
        55..=84 => 2,
        _ => 3,
    };
    for _ in 0..n {
        let class = match rng.gen_range(0..100) {
            0..=34 => &v.common,
            35..=64 => &v.mid,
            65..=79 => &v.rare,
            80..=82 => &v.absent,
            _ => &v.special,
        };
        let w = class.choose(rng).expect("a word");
        words.push(surface(rng, w));
    }
    let q = words.join(pick(rng, &[" ", ", ", " - ", "  "]));
    let mut s = JobSearch {
        terms: search::query_terms(&q).expect("short words"),
        at: Some(fixed_now()),
        ..JobSearch::default()
    };
    if rng.gen_bool(0.2) {
        s.location = Some(match rng.gen_range(0..4) {
            0 => pick(
                rng,
                &[
                    "%",
                    "_",
                    "100%",
                    "paris_",
                    "nowhere",
                    "i̇stanbul",
                    "οδος",
                    "strasse",
                ],
            )
            .to_string(),
            // A part of a location, as typed (then lower-cased, as the API does).
            _ => {
                let loc: Vec<char> = pick(rng, LOCATIONS).chars().collect();
                let from = rng.gen_range(0..loc.len());
                let to = rng.gen_range(from + 1..=loc.len().min(from + 7));
                loc[from..to].iter().collect::<String>().to_lowercase()
            }
        })
        .filter(|l| !l.trim().is_empty());
    }
    if rng.gen_bool(0.15) {
        s.remote = Some(rng.r#gen());
    }
    if rng.gen_bool(0.12) {
        s.workplace = Some(Workplace::ALL.choose(rng).unwrap().as_str().to_string());
    }
    if rng.gen_bool(0.12) {
        // A country some places have, or none has.
        s.country = Some(
            match rng.gen_range(0..6) {
                0 => "NZ",
                _ => PLACES.choose(rng).unwrap().2,
            }
            .to_string(),
        );
    }
    if rng.gen_bool(0.15) {
        s.salary_currency = Some(pick(rng, PAY_CURRENCIES).to_string());
    }
    let company = rng
        .gen_bool(0.15)
        .then(|| rng.gen_range(0..COMPANIES.len()));
    if rng.gen_bool(0.2) {
        s.salary_min = Some(match rng.gen_range(0..4) {
            0 => *[0, 1, 250_000, 250_001, 1_000_000_000].choose(rng).unwrap(),
            // Exactly some job's maximum.
            1 => jobs[rng.gen_range(0..jobs.len())]
                .salary_max
                .unwrap_or(100_000),
            _ => rng.gen_range(20..=260) * 1_000,
        });
    }
    if rng.gen_bool(0.15) {
        s.employment_type = Some(
            EmploymentType::ALL
                .choose(rng)
                .unwrap()
                .as_str()
                .to_string(),
        );
    }
    if rng.gen_bool(0.25) {
        let days = match rng.gen_range(0..3) {
            0 => *BOUNDARY_DAYS.choose(rng).unwrap(),
            1 => *[1, 2, 180].choose(rng).unwrap(),
            _ => rng.gen_range(1..=365),
        };
        s.posted_within = Some(PostedWithin::days_before(days, fixed_now()));
    }
    if rng.gen_bool(0.08) {
        // A lookup by ids: some jobs of the corpus (open, closed, deleted alike) and now and
        // then an id no job has.
        let mut ids: Vec<i64> = (0..rng.gen_range(1..=40))
            .map(|_| jobs[rng.gen_range(0..jobs.len())].id)
            .collect();
        if rng.gen_bool(0.2) {
            ids.push(i64::MAX);
        }
        ids.sort_unstable();
        ids.dedup();
        s.ids = Some(ids);
    }
    if rng.gen_bool(0.5) {
        s.sort = SearchSort::Relevance;
    }
    if rng.gen_bool(0.3) {
        s.facets = Facets {
            employment_type: rng.gen_bool(0.6),
            remote: rng.gen_bool(0.6),
            workplace: rng.gen_bool(0.5),
            company: rng.gen_bool(0.6),
        };
    }
    let size = match rng.gen_range(0..4) {
        0 => *[1, 2, 3, 100].choose(rng).unwrap(),
        1 => *[10, 20, 50].choose(rng).unwrap(),
        _ => rng.gen_range(1..=100),
    };
    Search {
        q,
        search: s,
        company,
        pages: vec![(1, size)],
    }
}

/// The pages to read of a search with `matches` results: the first, the second, one inside,
/// the last, the one after it, and a deep one inside the window.
pub fn gen_pages(rng: &mut StdRng, size: i64, matches: i64) -> Vec<(i64, i64)> {
    let max_page = SEARCH_WINDOW / size;
    let last = ((matches + size - 1) / size).clamp(1, max_page);
    let mut pages = BTreeSet::from([1]);
    if rng.gen_bool(0.5) {
        pages.insert(2.min(max_page));
    }
    if last > 2 {
        pages.insert(rng.gen_range(2..=last));
    }
    if rng.gen_bool(0.5) {
        pages.insert(last);
    }
    if rng.gen_bool(0.3) {
        pages.insert((last + 1).min(max_page));
    }
    if rng.gen_bool(0.3) {
        pages.insert(rng.gen_range(1..=max_page));
    }
    pages.into_iter().map(|p| (p, size)).collect()
}

// ---------------------------------------------------------------------------------------------
// The reference: the contract's rules, plainly

/// What a page should be: its ids, `total`, `total_exact`, the position its `next` cursor
/// carries, and its facets as the API shows them (companies named by their index in the corpus).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub ids: Vec<i64>,
    pub total: i64,
    pub total_exact: bool,
    /// The last position of the page, when a next page follows inside the window.
    pub next: Option<i64>,
    pub facets: Option<serde_json::Value>,
}

/// Every match of the search, in result order.
pub fn reference_matches(jobs: &[Job], s: &JobSearch, company: Option<usize>) -> Vec<i64> {
    reference_keyed(jobs, s, company)
        .into_iter()
        .map(|(_, _, id)| id)
        .collect()
}

/// Every match of the search as (score, `created_at` in µs, id), in result order.
pub fn reference_keyed(
    jobs: &[Job],
    s: &JobSearch,
    company: Option<usize>,
) -> Vec<(u32, i64, i64)> {
    // Without an instant (the alert matcher's cases, which judge no dates) no date is judged.
    let mut found: Vec<(usize, &Job)> = jobs
        .iter()
        .filter(|j| match s.at {
            Some(at) => j.searchable_at(at),
            None => !j.deleted && j.open && !j.expired,
        })
        .filter(|j| s.terms.iter().all(|t| j.terms.contains(t)))
        .filter(|j| {
            s.location.as_ref().is_none_or(|l| {
                j.places
                    .iter()
                    .any(|p| p.text().to_lowercase().contains(l.as_str()))
            })
        })
        .filter(|j| s.remote.is_none_or(|r| j.remote == r))
        .filter(|j| {
            s.workplace
                .as_deref()
                .is_none_or(|w| j.workplace.as_str() == w)
        })
        .filter(|j| {
            s.country
                .as_deref()
                .is_none_or(|c| j.places.iter().any(|p| p.country.as_deref() == Some(c)))
        })
        .filter(|j| company.is_none_or(|c| j.company == c))
        .filter(|j| s.ids.as_ref().is_none_or(|ids| ids.contains(&j.id)))
        .filter(|j| match (&s.salary_currency, j.salary()) {
            (None, _) => s
                .salary_min
                .is_none_or(|min| j.salary_max.is_none_or(|max| max >= min)),
            // Stating no pay: kept.
            (Some(_), None) => true,
            (Some(c), Some(pay)) => {
                pay.currency == *c
                    && s.salary_min.is_none_or(|min| {
                        pay.period.yearly(pay.max.or(pay.min).unwrap_or(0)) >= min
                    })
            }
        })
        .filter(|j| {
            s.employment_type
                .as_ref()
                .is_none_or(|t| j.employment_type.as_str() == t)
        })
        .filter(|j| s.posted_within.is_none_or(|p| j.created_at >= p.since))
        .map(|j| {
            let score = if s.sort == SearchSort::Relevance {
                s.terms
                    .iter()
                    .filter(|t| j.title_terms.contains(*t))
                    .count()
            } else {
                0
            };
            (score, j)
        })
        .collect();
    found.sort_by(|(sa, a), (sb, b)| {
        sb.cmp(sa)
            .then(b.created_at.cmp(&a.created_at))
            .then(b.id.cmp(&a.id))
    });
    found
        .into_iter()
        .map(|(score, j)| (score as u32, j.created_at.timestamp_micros(), j.id))
        .collect()
}

/// The earliest `expires_at` a cached copy of the page may be served until, at the latest: that
/// of the matches up to the page's end, and of every match when the total is exact (a cached
/// answer may end sooner, never later).
pub fn reference_valid_until(
    jobs: &[Job],
    matches: &[i64],
    end: usize,
    exact: bool,
) -> Option<DateTime<Utc>> {
    let by_id: BTreeMap<i64, &Job> = jobs.iter().map(|j| (j.id, j)).collect();
    let upto = if exact {
        matches.len()
    } else {
        end.min(matches.len())
    };
    matches[..upto]
        .iter()
        .filter_map(|id| by_id[id].expires_at)
        .min()
}

/// A page of the matches by the count rule: `total` exact up to `limit` (or the page's end if
/// further), that many and not exact past it; every match with facets.
pub fn reference_page(matches: &[i64], page: i64, size: i64, limit: i64, facets: bool) -> Answer {
    let offset = (page - 1) * size;
    reference_after(matches, offset, size, limit, facets)
}

/// The page of `size` results after the first `before` ones.
pub fn reference_after(
    matches: &[i64],
    before: i64,
    size: i64,
    limit: i64,
    facets: bool,
) -> Answer {
    let ids: Vec<i64> = matches
        .iter()
        .skip(before as usize)
        .take(size as usize)
        .copied()
        .collect();
    let n = matches.len() as i64;
    let cap = limit.max(before + size);
    let (total, total_exact) = if facets || n <= cap {
        (n, true)
    } else {
        (cap, false)
    };
    let end = before + ids.len() as i64;
    let next = (ids.len() as i64 == size && end < SEARCH_WINDOW && (!total_exact || total > end))
        .then_some(end);
    Answer {
        ids,
        total,
        total_exact,
        next,
        facets: None,
    }
}

/// The facets asked for, counted over every match: each employment type and remote value with
/// its count (zeros too), and the ten companies with the most matches, then by id (here: by
/// corpus index, which follows the backends' ids).
pub fn reference_facets(
    jobs: &[Job],
    matches: &[i64],
    companies: &[String],
    asked: Facets,
) -> serde_json::Value {
    let by_id: BTreeMap<i64, &Job> = jobs.iter().map(|j| (j.id, j)).collect();
    let found: Vec<&Job> = matches.iter().map(|id| by_id[id]).collect();
    let mut out = serde_json::Map::new();
    if asked.employment_type {
        let counts: serde_json::Map<String, serde_json::Value> = EmploymentType::ALL
            .iter()
            .map(|t| {
                let n = found.iter().filter(|j| j.employment_type == *t).count();
                (t.as_str().to_string(), serde_json::json!(n))
            })
            .collect();
        out.insert("employment_type".into(), counts.into());
    }
    if asked.remote {
        let n = |r: bool| found.iter().filter(|j| j.remote == r).count();
        out.insert(
            "remote".into(),
            serde_json::json!({"false": n(false), "true": n(true)}),
        );
    }
    if asked.workplace {
        let n = |w: Workplace| found.iter().filter(|j| j.workplace == w).count();
        out.insert(
            "workplace".into(),
            serde_json::json!({"onsite": n(Workplace::Onsite), "hybrid": n(Workplace::Hybrid),
                "remote": n(Workplace::Remote)}),
        );
    }
    if asked.company {
        let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
        for j in &found {
            *counts.entry(j.company).or_default() += 1;
        }
        let mut list: Vec<(usize, usize)> = counts.into_iter().collect();
        list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let top: Vec<serde_json::Value> = list
            .into_iter()
            .take(10)
            .map(|(c, n)| serde_json::json!({"id": c, "name": companies[c], "count": n}))
            .collect();
        out.insert("company".into(), top.into());
    }
    out.into()
}

/// Searches that every run makes, whatever the seed draws: the cases bounded plans get wrong.
pub fn fixed_searches() -> Vec<Search> {
    let words = |q: &str, sort: SearchSort, size: i64| Search {
        q: q.to_string(),
        search: JobSearch {
            terms: search::query_terms(q).expect("short words"),
            sort,
            at: Some(fixed_now()),
            ..JobSearch::default()
        },
        company: None,
        pages: vec![(1, size)],
    };
    let mut out = Vec::new();
    for sort in [SearchSort::Newest, SearchSort::Relevance] {
        for (q, size) in [
            ("", 100),
            ("hospital kubernetes", 20),
            ("account executive", 7),
            ("executive", 50),
            ("legacy", 100),
            ("launchpad", 3),
            ("cobol", 20),
            ("engineers senior", 1),
            ("women people children", 20),
            ("machine learning engineer", 100),
            ("team", 100),
            // The renamed company's old and new name: its jobs follow the rename.
            ("hooli", 100),
            ("nucleus labs", 100),
        ] {
            out.push(words(q, sort, size));
        }
    }
    let mut since = words("legacy", SearchSort::Newest, 20);
    since.search.posted_within = Some(PostedWithin::days_before(365, fixed_now()));
    out.push(since);
    let mut boundary = words("", SearchSort::Newest, 1);
    boundary.search.posted_within = Some(PostedWithin::days_before(7, fixed_now()));
    out.push(boundary);
    let mut salary = words("hospital", SearchSort::Relevance, 100);
    salary.search.salary_min = Some(250_000);
    out.push(salary);
    // Pay in a currency over yearly amounts (a month's and an hour's pay among them), places in
    // a country, a kind of workplace.
    for (currency, min) in [("EUR", Some(100_000)), ("USD", Some(60_000)), ("CAD", None)] {
        let mut paid = words("", SearchSort::Newest, 100);
        paid.search.salary_currency = Some(currency.to_string());
        paid.search.salary_min = min;
        out.push(paid);
    }
    let mut placed = words("team", SearchSort::Relevance, 50);
    placed.search.country = Some("CA".to_string());
    placed.search.workplace = Some("hybrid".to_string());
    out.push(placed);
    let every = Facets {
        employment_type: true,
        remote: true,
        workplace: true,
        company: true,
    };
    for q in ["", "team", "nucleus"] {
        let mut facets = words(q, SearchSort::Newest, 20);
        facets.search.facets = every;
        out.push(facets);
    }
    out
}
