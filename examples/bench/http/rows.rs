//! The section's kinds of run, the names of the rows each can report (a row of each search mix,
//! of its pages by ids, of the facets, the cursor, the index lag), and the order they are
//! reported in.

use crate::Opts;

/// The section's name, in the report and the progress lines.
pub(super) const SECTION: &str = "http";

/// The query of the cached-search scenarios.
pub(super) const CACHED_QUERY: &str = "/api/jobs?q=senior+engineer";

/// The order scenarios are reported in.
pub(super) fn order() -> Vec<&'static str> {
    let mut order = vec![
        "search_cached_memory",
        "search_cached_redis",
        "search_uncached",
        "search_broad",
        "search_uncached_scale",
        "search_broad_scale",
        "search_uncached_sqlite",
        "search_broad_sqlite",
    ];
    for kind in [Kind::Scale, Kind::Sqlite] {
        order.push(mix_detail_row(kind));
        order.push(ids_row(kind));
        order.extend(MIXES.iter().flat_map(|m| [m.ids_row(kind), m.row(kind)]));
        order.push(facets_row(kind));
        order.extend([cursor_ids_row(kind), cursor_row(kind)]);
        order.extend(super::pages::page_rows(kind));
    }
    order.extend([
        "job_detail",
        "apply",
        "status_change",
        "resume_apply_local",
        "resume_apply_s3",
        "resume_download_local",
        "resume_rss",
        "console_queue",
        "console_dead_letters",
    ]);
    order
}

/// What one server of this section measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// PostgreSQL with `--jobs` jobs: every scenario, at every connection level.
    Main,
    /// PostgreSQL with `--scale-jobs` jobs: the uncached searches at 16 connections.
    Scale,
    /// SQLite with `--jobs` jobs: the uncached searches at 16 connections.
    Sqlite,
}

impl Kind {
    pub(super) fn jobs(self, opts: &Opts) -> usize {
        match self {
            Kind::Scale => opts.scale_jobs,
            Kind::Sqlite if opts.scale_jobs > 0 => opts.scale_jobs,
            _ => opts.jobs,
        }
    }

    /// Every row this kind of run can report.
    pub(super) fn rows(self) -> Vec<&'static str> {
        match self {
            Kind::Main => vec![
                "search_cached_memory",
                "search_cached_redis",
                "search_uncached",
                "search_broad",
                "job_detail",
                "apply",
                "status_change",
                "resume_apply_local",
                "resume_apply_s3",
                "resume_download_local",
                "resume_rss",
                "console_queue",
                "console_dead_letters",
            ],
            _ => {
                let (a, b) = self.search_names();
                let mut rows = vec![a, b, mix_detail_row(self), ids_row(self), lag_row(self)];
                rows.extend(MIXES.iter().flat_map(|m| [m.ids_row(self), m.row(self)]));
                rows.push(facets_row(self));
                rows.extend([cursor_ids_row(self), cursor_row(self)]);
                rows.extend(super::pages::page_rows(self));
                rows
            }
        }
    }

    /// The names of its uncached search rows (search_uncached, search_broad).
    pub(super) fn search_names(self) -> (&'static str, &'static str) {
        match self {
            Kind::Main => ("search_uncached", "search_broad"),
            Kind::Scale => ("search_uncached_scale", "search_broad_scale"),
            Kind::Sqlite => ("search_uncached_sqlite", "search_broad_sqlite"),
        }
    }
}

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

/// The `job_detail` row measured beside the mixes of this kind of run.
pub(super) fn mix_detail_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_job_detail_sqlite"
    } else {
        "mix_job_detail_pg"
    }
}

/// The row of the mixes' pages asked for by their job ids (`ids=`), on this kind of run: the
/// ceiling a search is judged against (the same pages read and rendered, nothing to find).
pub(super) fn ids_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_ids_page_sqlite"
    } else {
        "mix_ids_page_pg"
    }
}

/// The row of every mix's searches with facets, on this kind of run.
pub(super) fn facets_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_facets_sqlite"
    } else {
        "mix_facets_pg"
    }
}

/// The row of pages 2–50 of the word mixes' searches asked for by cursor (`after=`), on this kind
/// of run.
pub(super) fn cursor_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_cursor_sqlite"
    } else {
        "mix_cursor_pg"
    }
}

/// The cursor row's pages asked for by their ids: its ceiling.
pub(super) fn cursor_ids_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "mix_cursor_ids_sqlite"
    } else {
        "mix_cursor_ids_pg"
    }
}

/// The index-lag step of this kind of run (not a wrk row: selected by `--scenario` like one).
pub(super) fn lag_row(kind: Kind) -> &'static str {
    if kind == Kind::Sqlite {
        "index_lag_sqlite"
    } else {
        "index_lag_pg"
    }
}
