//! What the search mixes search for: each mix's distinct searches, drawn from what the seeded
//! jobs hold, and the rows they are reported under.

use super::Kind;
use super::corpus::{TAIL_WORDS, TOWN_WORDS_FROM, TOWNS, pseudo_word};
use super::vocabulary::{BENEFITS, LEVELS, OBJECTS, OTHER_ROLES, ROLES, SKILLS, TECH};
use chrono::Utc;
use jobboard::store::{JobSearch, Page, PostedWithin, SearchSort};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeSet, HashMap, HashSet};

/// The search mixes measured at scale, each a row of its own beside `job_detail` in the same
/// run on the same database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mix {
    /// One word of the long tail, in 0.005–0.05 % of the jobs.
    Rare,
    /// One word in 5–50 % of the jobs.
    Common,
    /// Two words that occur together (`account executive`, `machine learning`).
    Pair,
    /// A common word and a selective filter: a company, or a place few jobs are in.
    Filter,
    /// `sort=relevance` with one or two words of the titles.
    Relevance,
    /// Page 400 of 20 (results 7 981–8 000) of a word with enough matches to fill it.
    DeepPage,
    /// A common word with `posted_within_days` 1, 2, 3, 7, 14, 30 or 90.
    Posted,
}

pub(super) const MIXES: [Mix; 7] = [
    Mix::Rare,
    Mix::Common,
    Mix::Pair,
    Mix::Filter,
    Mix::Relevance,
    Mix::DeepPage,
    Mix::Posted,
];

/// Searches prepared per mix (distinct; they repeat past this many).
pub(super) const MIX_QUERIES: usize = 150_000;

impl Mix {
    /// The row of this mix's pages asked for by their ids (its ceiling), on this kind of run.
    pub(super) fn ids_row(self, kind: Kind) -> &'static str {
        let pg = kind != Kind::Sqlite;
        match (self, pg) {
            (Mix::Rare, true) => "mix_rare_word_ids_pg",
            (Mix::Rare, false) => "mix_rare_word_ids_sqlite",
            (Mix::Common, true) => "mix_common_word_ids_pg",
            (Mix::Common, false) => "mix_common_word_ids_sqlite",
            (Mix::Pair, true) => "mix_pair_ids_pg",
            (Mix::Pair, false) => "mix_pair_ids_sqlite",
            (Mix::Filter, true) => "mix_word_filter_ids_pg",
            (Mix::Filter, false) => "mix_word_filter_ids_sqlite",
            (Mix::Relevance, true) => "mix_relevance_ids_pg",
            (Mix::Relevance, false) => "mix_relevance_ids_sqlite",
            (Mix::DeepPage, true) => "mix_deep_page_ids_pg",
            (Mix::DeepPage, false) => "mix_deep_page_ids_sqlite",
            (Mix::Posted, true) => "mix_posted_within_ids_pg",
            (Mix::Posted, false) => "mix_posted_within_ids_sqlite",
        }
    }

    /// The row's name on this kind of run.
    pub(super) fn row(self, kind: Kind) -> &'static str {
        let pg = kind != Kind::Sqlite;
        match (self, pg) {
            (Mix::Rare, true) => "mix_rare_word_pg",
            (Mix::Rare, false) => "mix_rare_word_sqlite",
            (Mix::Common, true) => "mix_common_word_pg",
            (Mix::Common, false) => "mix_common_word_sqlite",
            (Mix::Pair, true) => "mix_pair_pg",
            (Mix::Pair, false) => "mix_pair_sqlite",
            (Mix::Filter, true) => "mix_word_filter_pg",
            (Mix::Filter, false) => "mix_word_filter_sqlite",
            (Mix::Relevance, true) => "mix_relevance_pg",
            (Mix::Relevance, false) => "mix_relevance_sqlite",
            (Mix::DeepPage, true) => "mix_deep_page_pg",
            (Mix::DeepPage, false) => "mix_deep_page_sqlite",
            (Mix::Posted, true) => "mix_posted_within_pg",
            (Mix::Posted, false) => "mix_posted_within_sqlite",
        }
    }
}

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
