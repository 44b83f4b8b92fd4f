//! What the searches search for, drawn from what the seeded jobs hold: the words
//! `search_uncached` combines, the broad searches of `search_broad`, and each mix's distinct
//! searches.

use super::corpus::{TAIL_WORDS, TOWN_WORDS_FROM, TOWNS, pseudo_word};
use super::rows::{MIXES, Mix};
use super::vocabulary::{
    BENEFITS, CITIES, DOMAINS, LEVELS, OBJECTS, OTHER_ROLES, ROLES, SKILLS, TECH,
};
use crate::seed::SeedJob;
use chrono::Utc;
use jobboard::store::{JobSearch, Page, PostedWithin, SearchSort};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// The words uncached searches combine: what people search a job board for (titles,
/// technologies, skills, industries, places) from the seed vocabulary, as the tokenizer makes
/// them; ASCII only (they go into URLs as they are), at least three letters, and not in more
/// than half of the jobs (such words, like "team", act as stop words of this corpus).
pub(super) fn query_words(df: &HashMap<String, usize>, njobs: usize) -> Vec<String> {
    let mut words = BTreeSet::new();
    for list in [TECH, ROLES, OTHER_ROLES, DOMAINS, SKILLS, CITIES] {
        for phrase in list {
            for w in jobboard::domain::search::words(phrase) {
                if w.len() >= 3 && w.chars().all(|c| c.is_ascii_alphanumeric()) {
                    words.insert(w);
                }
            }
        }
    }
    words
        .into_iter()
        .filter(|w| df.get(w.as_str()).copied().unwrap_or(0) * 2 <= njobs)
        .collect()
}

/// The searches of search_broad prepared per run (distinct; they repeat past this many).
pub(super) const BROAD_QUERIES: usize = 400_000;

/// One broad search: a common word of the seeded text, a pay filter and a page.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct BroadQuery {
    word: String,
    salary_min: i64,
    page: i64,
}

impl BroadQuery {
    pub(super) fn path(&self) -> String {
        format!(
            "/api/jobs?q={}&salary_min={}&page={}",
            self.word, self.salary_min, self.page
        )
    }

    pub(super) fn search(&self) -> JobSearch {
        JobSearch {
            terms: jobboard::domain::search::query_terms(&self.word).unwrap_or_default(),
            salary_min: Some(self.salary_min),
            page: Page {
                page: self.page,
                size: 20,
            },
            ..JobSearch::default()
        }
    }
}

/// `n` distinct broad searches: words drawn from the seeded titles and descriptions weighted by
/// how often they occur there, among those in at least 1 % of the jobs (hundreds to all of the
/// jobs match each), with `salary_min` a multiple of 500 from 20 000 to 200 000 and pages 1–3.
pub(super) fn broad_queries(
    jobs: &[SeedJob],
    df: &HashMap<String, usize>,
    n: usize,
) -> Vec<BroadQuery> {
    let mut occurrences: BTreeMap<String, u64> = BTreeMap::new();
    for job in jobs {
        for text in [&job.title, &job.description[..job.core_len]] {
            for w in jobboard::domain::search::words(text) {
                *occurrences.entry(w).or_default() += 1;
            }
        }
    }
    let common: Vec<(&str, u64)> = occurrences
        .iter()
        .filter(|(w, _)| {
            w.chars().all(|c| c.is_ascii_alphanumeric())
                && df.get(w.as_str()).copied().unwrap_or(0) * 100 >= jobs.len()
        })
        .map(|(w, count)| (w.as_str(), *count))
        .collect();
    if common.is_empty() {
        return Vec::new();
    }
    let weights = rand::distributions::WeightedIndex::new(common.iter().map(|c| c.1));
    let Ok(weights) = weights else {
        return Vec::new();
    };
    let mut rng = StdRng::seed_from_u64(14);
    let space = common.len() * 361 * 3;
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    while out.len() < n.min(space / 2) {
        let q = BroadQuery {
            word: common[rng.sample(&weights)].0.to_string(),
            salary_min: 20_000 + 500 * rng.gen_range(0..361),
            page: rng.gen_range(1..=3),
        };
        if seen.insert(q.clone()) {
            out.push(q);
        }
    }
    out
}

/// Searches prepared per mix (distinct; they repeat past this many).
pub(super) const MIX_QUERIES: usize = 150_000;

/// One search of a mix.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct MixQuery {
    /// Words, separated by single spaces.
    q: String,
    /// A town's name in lower case (letters only).
    location: Option<String>,
    company_id: Option<i64>,
    remote: Option<bool>,
    salary_min: Option<i64>,
    posted_within_days: Option<i64>,
    relevance: bool,
    pub(super) page: i64,
    page_size: i64,
}

impl MixQuery {
    fn new(q: String, page: i64, page_size: i64) -> MixQuery {
        MixQuery {
            q,
            location: None,
            company_id: None,
            remote: None,
            salary_min: None,
            posted_within_days: None,
            relevance: false,
            page,
            page_size,
        }
    }

    /// The words searched for, separated by single spaces.
    pub(super) fn words(&self) -> &str {
        &self.q
    }

    pub(super) fn path(&self) -> String {
        let mut p = format!("/api/jobs?q={}", self.q.replace(' ', "+"));
        if let Some(l) = &self.location {
            p.push_str(&format!("&location={l}"));
        }
        if let Some(c) = self.company_id {
            p.push_str(&format!("&company_id={c}"));
        }
        if let Some(r) = self.remote {
            p.push_str(&format!("&remote={r}"));
        }
        if let Some(s) = self.salary_min {
            p.push_str(&format!("&salary_min={s}"));
        }
        if let Some(d) = self.posted_within_days {
            p.push_str(&format!("&posted_within_days={d}"));
        }
        if self.relevance {
            p.push_str("&sort=relevance");
        }
        p.push_str(&format!("&page={}&page_size={}", self.page, self.page_size));
        p
    }

    /// The search the API makes of the path (`posted_within_days` counted back from now).
    pub(super) fn search(&self) -> JobSearch {
        JobSearch {
            terms: jobboard::domain::search::query_terms(&self.q).unwrap_or_default(),
            location: self.location.clone(),
            remote: self.remote,
            company_id: self.company_id,
            salary_min: self.salary_min,
            posted_within: self
                .posted_within_days
                .map(|d| PostedWithin::days_before(d, Utc::now())),
            sort: if self.relevance {
                SearchSort::Relevance
            } else {
                SearchSort::Newest
            },
            page: Page {
                page: self.page,
                size: self.page_size,
            },
            ..JobSearch::default()
        }
    }
}

/// Words that are ASCII letters and digits, at least three long, not a stop word.
fn searchable(w: &str) -> bool {
    w.len() >= 3
        && w.chars().all(|c| c.is_ascii_alphanumeric())
        && !["the", "and", "with", "for", "our", "you", "are"].contains(&w)
}

/// The two-word phrases of the seed vocabulary whose words occur together: job titles
/// (`account executive`), technologies (`machine learning`), skills, products and benefits.
fn correlated_pairs(df: &HashMap<String, usize>) -> Vec<String> {
    let mut pairs = BTreeSet::new();
    for list in [TECH, ROLES, OTHER_ROLES, OBJECTS, SKILLS, BENEFITS] {
        for phrase in list {
            let words: Vec<String> = jobboard::domain::search::words(phrase).collect();
            for w in words.windows(2) {
                if w.iter().all(|w| searchable(w) && df.contains_key(w)) && w[0] != w[1] {
                    pairs.insert(format!("{} {}", w[0], w[1]));
                }
            }
        }
    }
    pairs.into_iter().collect()
}

/// Up to `n` distinct searches of every mix, drawn from what the seeded jobs hold.
pub(super) fn mix_queries(
    df: &HashMap<String, usize>,
    njobs: usize,
    company_ids: &[i64],
    n: usize,
) -> Vec<(Mix, Vec<MixQuery>)> {
    let words_where = |keep: &dyn Fn(usize) -> bool| -> Vec<String> {
        let mut w: Vec<String> = df
            .iter()
            .filter(|(w, d)| searchable(w) && keep(**d))
            .map(|(w, _)| w.clone())
            .collect();
        w.sort();
        w
    };
    let njobs_f = njobs.max(1) as f64;
    // Rare: tail words in 0.005–0.05 % of the jobs (at least one job).
    let tail: HashSet<String> = (0..TAIL_WORDS).map(pseudo_word).collect();
    let lo = (njobs_f * 0.000_05).ceil().max(1.0) as usize;
    let hi = (njobs_f * 0.000_5).ceil().max(lo as f64 + 1.0) as usize;
    let mut rare: Vec<String> = words_where(&|d| d >= lo && d <= hi)
        .into_iter()
        .filter(|w| tail.contains(w))
        .collect();
    if rare.is_empty() {
        rare = words_where(&|d| d <= hi)
            .into_iter()
            .filter(|w| tail.contains(w))
            .collect();
    }
    let common = words_where(&|d| d as f64 >= njobs_f * 0.05 && d as f64 <= njobs_f * 0.5);
    // Deep page: words with matches enough to fill page 400 of 20 without remote jobs (75 %).
    let mut deep = words_where(&|d| d >= 12_000 && d as f64 <= njobs_f * 0.95);
    if deep.is_empty() {
        let mut by_df: Vec<(&String, &usize)> = df
            .iter()
            .filter(|(w, d)| searchable(w) && (**d as f64) <= njobs_f * 0.95)
            .collect();
        by_df.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        deep = by_df.into_iter().take(20).map(|(w, _)| w.clone()).collect();
    }
    let pairs = correlated_pairs(df);
    // Title words: the first of a title (a level or a technology) and the last (a role).
    let title_list = |lists: &[&[&str]]| -> Vec<String> {
        let mut words = BTreeSet::new();
        for list in lists {
            for phrase in *list {
                for w in jobboard::domain::search::words(phrase) {
                    if searchable(&w) && df.contains_key(&w) {
                        words.insert(w);
                    }
                }
            }
        }
        words.into_iter().collect()
    };
    let title_words = title_list(&[LEVELS, TECH, ROLES, OTHER_ROLES]);
    let title_heads = title_list(&[LEVELS, TECH]);
    let title_roles = title_list(&[ROLES, OTHER_ROLES]);
    let towns: Vec<String> = (0..TOWNS)
        .map(|i| pseudo_word(TOWN_WORDS_FROM + i))
        .filter(|t| df.contains_key(t))
        .collect();
    let companies = company_ids.get(1..).unwrap_or(&[]);

    let remote = |rng: &mut StdRng| match rng.gen_range(0..3) {
        0 => None,
        1 => Some(true),
        _ => Some(false),
    };
    let size = |rng: &mut StdRng| rng.gen_range(10..=40);
    let mut out = Vec::new();
    for (i, mix) in MIXES.into_iter().enumerate() {
        let mut rng = StdRng::seed_from_u64(4_000 + i as u64);
        let draw = |rng: &mut StdRng| -> Option<MixQuery> {
            let pick_word = |rng: &mut StdRng, list: &[String]| list.choose(rng).cloned();
            Some(match mix {
                Mix::Rare => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &rare)?, rng.gen_range(1..=2), size(rng));
                    m.remote = remote(rng);
                    m
                }
                Mix::Common => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &common)?, rng.gen_range(1..=10), size(rng));
                    m.remote = remote(rng);
                    m
                }
                Mix::Pair => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &pairs)?, rng.gen_range(1..=20), size(rng));
                    m.remote = remote(rng);
                    m
                }
                Mix::Filter => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &common)?, rng.gen_range(1..=3), size(rng));
                    if rng.gen_bool(0.5) && !companies.is_empty() {
                        m.company_id = companies.choose(rng).copied();
                    } else {
                        m.location = Some(pick_word(rng, &towns)?);
                    }
                    m.remote = remote(rng);
                    m
                }
                Mix::Relevance => {
                    // One title word, or a level or technology with a role (`senior
                    // accountant`, `python engineer`), as people search for a title.
                    let q = if rng.gen_bool(0.5) {
                        pick_word(rng, &title_words)?
                    } else {
                        let head = pick_word(rng, &title_heads)?;
                        let role = pick_word(rng, &title_roles)?;
                        if head == role {
                            head
                        } else {
                            format!("{head} {role}")
                        }
                    };
                    let mut m = MixQuery::new(q, rng.gen_range(1..=5), size(rng));
                    m.relevance = true;
                    m.remote = remote(rng);
                    m
                }
                Mix::DeepPage => {
                    let mut m = MixQuery::new(pick_word(rng, &deep)?, 400, 20);
                    m.remote = if rng.gen_bool(0.5) { None } else { Some(false) };
                    // Every seeded salary_max is at least 30 000: a salary_min up to that keeps
                    // every job, so the page stays page 400 of the word, and each request is
                    // still one the cache has not seen.
                    m.salary_min = Some(100 * rng.gen_range(0..=300));
                    m
                }
                Mix::Posted => {
                    let mut m =
                        MixQuery::new(pick_word(rng, &common)?, rng.gen_range(1..=3), size(rng));
                    m.posted_within_days = Some(*[1, 2, 3, 7, 14, 30, 90].choose(rng)?);
                    m.remote = remote(rng);
                    m
                }
            })
        };
        let mut seen = HashSet::new();
        let mut list = Vec::new();
        // A small corpus has fewer distinct searches than asked for: stop when draws keep
        // repeating.
        let mut misses = 0;
        while list.len() < n && misses < 1_000 + n / 4 {
            match draw(&mut rng) {
                Some(q) if seen.insert(q.clone()) => list.push(q),
                Some(_) => misses += 1,
                None => break,
            }
        }
        out.push((mix, list));
    }
    out
}
