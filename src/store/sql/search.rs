//! The job search: the plans that read a page of matches without reading every match.
//!
//! Results are ordered newest first (`created_at` desc, then `id` desc), or by relevance: the
//! jobs whose title holds all `k` distinct query terms first, then those holding `k − 1`, …, then
//! those whose title holds none, each group newest first. So every search is a sequence of
//! *branches* (one for `newest`, `k + 1` for relevance), each an ordered stream of ids; the
//! search reads each branch only as far as it needs: up to the count's limit
//! ([`JobSearch::count_limit`], plus one to tell that there are more) and the page's rows.
//!
//! How a branch streams its matches newest first without reading them all differs by backend:
//!
//! * **SQLite.** FTS5 returns a query's matches in rowid order and consumes
//!   `ORDER BY rowid DESC` itself, stopping at the `LIMIT`. Ids follow creation time (a job's
//!   `created_at` is never earlier than a lower id's: `create_job` and migration 0006), so the
//!   rowid order is the newest-first order. The indexes hold open jobs only, so a search for
//!   words alone counts and pages from the index without visiting the table;
//!   `posted_within_days` becomes a lower bound on the rowid. Relevance branches with title
//!   terms read the title-only index.
//! * **PostgreSQL.** A GIN index returns matches unordered, so a branch first walks the
//!   newest-first index of open jobs, testing each row, for a bounded number of rows (see
//!   [`WALK_COST_RATIO`]): a common word fills its page within a few rows. When the walk ends short
//!   (a sparse word, a rare pair, a selective filter) the branch reads its matches through the
//!   GIN index instead, which then are few, and sorts them. Each statement is planned for its
//!   own values (never a generic plan).
//!
//! On both, a search with words and a `company_id` or a `location` (three characters or more)
//! first counts, up to [`NARROW_LIMIT`], the open jobs that filter leaves (through
//! `jobs_company`, or a trigram index of location keys); when they are fewer, each branch reads
//! those jobs and tests the words on each ([`Access::Narrow`]), so a common word in a small
//! company or town costs the town's jobs, not the word's matches.

use super::{D, Db, sql};
use crate::store::dialect::Dialect;
use crate::store::{JobRow, JobSearch, SearchPage, StoreResult};
use sqlx::{FromRow, QueryBuilder, Row};

/// On PostgreSQL, what reading one match through the GIN index costs, in rows of the
/// newest-first walk (measured at 1 000 000 jobs: about 6 µs a match against 1.1 µs a row; see
/// the README's Performance section). A walk that needs `n` matches among `N` jobs tests at most
/// `sqrt(ratio × n × N)` rows: the budget that makes a walk that fails plus the reading that
/// follows it cost no more than twice the worse of the two, whatever the word's frequency.
pub(in crate::store) const WALK_COST_RATIO: i64 = 5;

/// One ordered stream of a search's results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum Branch {
    /// Every match, newest first.
    All,
    /// The matches whose title holds exactly this many of the query's terms, newest first.
    TitleScore(usize),
}

/// How a branch reads its matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum Access {
    /// PostgreSQL: the newest-first index, testing each row, until this many matches are found
    /// or the walk's budget of rows is spent.
    Walk(i64),
    /// The full-text index (or whatever the planner finds best), then sorted.
    Matches,
    /// The few open jobs a filter narrows the search to, each tested for the words.
    Narrow(Narrow),
}

/// A filter that can narrow a search to few open jobs through an index of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::store) enum Narrow {
    /// `company_id`: the company's jobs (`jobs_company`).
    Company,
    /// A `location` substring of three characters or more: the trigram index of location keys
    /// (`jobs_location_fts` on SQLite, `jobs_open_location_trgm` on PostgreSQL).
    Place,
}

/// A search whose words are common but whose company or location holds fewer open jobs than
/// this reads those jobs and tests the words on each ([`Access::Narrow`]): its cost is bounded
/// by this, where reading the words' matches (or walking the newest jobs) and testing the filter
/// on each would grow with the number of matches. Larger sets are left to the other accesses.
pub(in crate::store) const NARROW_LIMIT: i64 = 1000;

/// The location substring, if the trigram indexes can find it (three characters or more).
fn place_needle(s: &JobSearch) -> Option<&str> {
    s.location.as_deref().filter(|l| l.chars().count() >= 3)
}

/// The FTS5 phrase that matches `needle` as a substring in a trigram index.
fn trigram_phrase(needle: &str) -> String {
    format!("\"{}\"", needle.replace('"', "\"\""))
}

/// The `LIKE` pattern that matches `needle` as a substring (`\` escapes).
fn like_pattern(needle: &str) -> String {
    let mut out = String::from("%");
    for c in needle.chars() {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('%');
    out
}

/// The branches of a search, in result order.
pub(in crate::store) fn branches(s: &JobSearch) -> Vec<Branch> {
    if s.by_relevance() {
        (0..=s.terms.len()).rev().map(Branch::TitleScore).collect()
    } else {
        vec![Branch::All]
    }
}

/// Whether anything but the terms narrows the search.
fn has_row_filters(s: &JobSearch) -> bool {
    s.location.is_some()
        || s.remote.is_some()
        || s.company_id.is_some()
        || s.salary_min.is_some()
        || s.employment_type.is_some()
        || s.posted_within.is_some()
}

/// `AND …` for every filter but the terms, on a jobs table aliased `j`.
fn push_row_filters(qb: &mut QueryBuilder<'_, Db>, s: &JobSearch) {
    qb.push(" AND j.status = 'open'");
    if let Some(loc) = &s.location {
        D::push_contains(qb, "j.location_key", loc.clone());
    }
    if let Some(remote) = s.remote {
        qb.push(" AND j.remote = ").push_bind(remote);
    }
    if let Some(company) = s.company_id {
        qb.push(" AND j.company_id = ").push_bind(company);
    }
    if let Some(min) = s.salary_min {
        qb.push(" AND (j.salary_max IS NULL OR j.salary_max >= ")
            .push_bind(min)
            .push(")");
    }
    if let Some(t) = &s.employment_type {
        qb.push(" AND j.employment_type = ").push_bind(t.clone());
    }
    if let Some(p) = s.posted_within {
        qb.push(" AND j.created_at >= ").push_bind(p.since);
    }
}

/// `(<1 if the title holds term 1> + … )`: how many of the terms the job's title holds.
fn push_title_score(qb: &mut QueryBuilder<'_, Db>, terms: &[String]) {
    qb.push(" AND (0");
    for t in terms {
        qb.push(" + CASE WHEN ");
        D::push_contains_expr(
            qb,
            "' ' || COALESCE(j.title_terms, '') || ' '",
            format!(" {t} "),
        );
        qb.push(" THEN 1 ELSE 0 END");
    }
    qb.push(")");
}

/// `AND <the branch's own condition>`.
fn push_branch_filter(qb: &mut QueryBuilder<'_, Db>, s: &JobSearch, branch: Branch) {
    if let Branch::TitleScore(n) = branch {
        push_title_score(qb, &s.terms);
        qb.push(" = ").push_bind(n as i64);
    }
}

/// The FTS5 query that every one of `terms` matches (`"a" "b"`), or any of them (`"a" OR "b"`).
/// Terms are letters and digits only; each double-quoted is a string, never an operator.
fn fts_query(terms: &[String], any: bool) -> String {
    let quoted: Vec<String> = terms.iter().map(|t| format!("\"{t}\"")).collect();
    quoted.join(if any { " OR " } else { " " })
}

/// The PostgreSQL tsquery that every one of `terms` matches.
fn ts_query(terms: &[String]) -> String {
    let quoted: Vec<String> = terms.iter().map(|t| format!("'{t}'")).collect();
    quoted.join(" & ")
}

/// `SELECT id[, created_at] FROM … ORDER BY <the branch's order>` (no LIMIT): the branch's
/// matches, with what [`Dialect::SEARCH_ORDER`] orders them by.
fn push_branch_ids(qb: &mut QueryBuilder<'_, Db>, s: &JobSearch, branch: Branch, access: Access) {
    if let Access::Narrow(narrow) = access {
        push_narrow_branch_ids(qb, s, branch, narrow);
        return;
    }
    if s.terms.is_empty() {
        // No words: the newest-first index of open jobs, or whichever index the planner finds
        // best for the filters; no full-text index is involved.
        qb.push("SELECT j.id, j.created_at FROM jobs j WHERE 1 = 1");
        push_row_filters(qb, s);
        qb.push(" ORDER BY j.created_at DESC, j.id DESC");
        return;
    }
    if D::NAME == "sqlite" {
        push_fts5_branch_ids(qb, s, branch);
    } else {
        push_pg_branch_ids(qb, s, branch, access);
    }
}

fn push_fts5_branch_ids(qb: &mut QueryBuilder<'_, Db>, s: &JobSearch, branch: Branch) {
    // Relevance branches whose title holds terms read the title index: any of the terms, or all
    // of them for the first branch. The rest read the document index.
    let (table, query) = match branch {
        Branch::TitleScore(n) if n > 0 => {
            ("jobs_title_fts", fts_query(&s.terms, n < s.terms.len()))
        }
        _ => ("jobs_fts", fts_query(&s.terms, false)),
    };
    let from_index_alone = branch == Branch::All && !has_row_filters(s);
    if from_index_alone {
        qb.push(format!(
            "SELECT f.rowid AS id FROM {table} f WHERE {table} MATCH "
        ))
        .push_bind(query)
        .push(" ORDER BY f.rowid DESC");
        return;
    }
    qb.push(format!(
        "SELECT j.id FROM {table} f JOIN jobs j ON j.id = f.rowid WHERE {table} MATCH "
    ))
    .push_bind(query);
    if let Some(p) = s.posted_within {
        // The first open job posted since then: every later id is at least as new.
        qb.push(
            " AND f.rowid >= COALESCE((SELECT id FROM jobs WHERE status = 'open' \
             AND created_at >= ",
        )
        .push_bind(p.since)
        .push(" ORDER BY created_at, id LIMIT 1), 9223372036854775807)");
    }
    push_row_filters(qb, s);
    if matches!(branch, Branch::TitleScore(n) if n > 0 && n < s.terms.len()) {
        // Read from the title index by any term: the document must still hold every term.
        for t in &s.terms {
            qb.push(" AND ");
            D::push_contains_expr(qb, "' ' || j.search_terms || ' '", format!(" {t} "));
        }
    }
    push_branch_filter(qb, s, branch);
    qb.push(" ORDER BY f.rowid DESC");
}

/// The branch read from the open jobs `narrow` selects, newest first, each tested for the words
/// and every filter (the location substring again: the trigram index only narrows).
fn push_narrow_branch_ids(
    qb: &mut QueryBuilder<'_, Db>,
    s: &JobSearch,
    branch: Branch,
    narrow: Narrow,
) {
    let location = s.location.clone().unwrap_or_default();
    if D::NAME == "sqlite" {
        let order = match narrow {
            Narrow::Company => {
                qb.push("SELECT j.id FROM jobs j WHERE j.company_id = ")
                    .push_bind(s.company_id.unwrap_or_default());
                " ORDER BY j.id DESC"
            }
            Narrow::Place => {
                qb.push(
                    "SELECT j.id FROM jobs_location_fts l JOIN jobs j ON j.id = l.rowid \
                     WHERE jobs_location_fts MATCH ",
                )
                .push_bind(trigram_phrase(&location));
                " ORDER BY l.rowid DESC"
            }
        };
        push_row_filters(qb, s);
        for t in &s.terms {
            qb.push(" AND ");
            D::push_contains_expr(qb, "' ' || j.search_terms || ' '", format!(" {t} "));
        }
        push_branch_filter(qb, s, branch);
        qb.push(order);
        return;
    }
    // OFFSET 0 keeps the order's LIMIT out of the inner plan, so that it reads the narrow set
    // instead of walking the newest-first index.
    qb.push("SELECT r.id, r.created_at FROM (SELECT j.id, j.created_at FROM jobs j WHERE ");
    match narrow {
        Narrow::Company => {
            qb.push("j.company_id = ")
                .push_bind(s.company_id.unwrap_or_default());
        }
        Narrow::Place => {
            qb.push(
                "j.id = ANY(ARRAY(SELECT id FROM jobs WHERE status = 'open' \
                 AND location_key LIKE ",
            )
            .push_bind(like_pattern(&location))
            .push("))");
        }
    }
    if !s.terms.is_empty() {
        qb.push(" AND j.search_vector @@ CAST(")
            .push_bind(ts_query(&s.terms))
            .push(" AS tsquery)");
    }
    push_row_filters(qb, s);
    push_branch_filter(qb, s, branch);
    qb.push(" OFFSET 0) r ORDER BY r.created_at DESC, r.id DESC");
}

/// PostgreSQL: whether the statistics say the walk of the newest jobs cannot fill `need`
/// matches within its budget, so that the branch should read its matches through the GIN index
/// at once. The rarest term's share of the jobs bounds the matches' share: its frequency when
/// it is among the column's most common elements, else at most the least frequent of those. No
/// statistics (a table never analysed): walk, as without them.
async fn walk_is_hopeless(conn: &mut Conn, s: &JobSearch, need: i64) -> StoreResult<bool> {
    if D::NAME != "postgres" || s.terms.is_empty() {
        return Ok(false);
    }
    // As text, so that the statement (never run on SQLite) compiles for both backends; terms
    // hold no space.
    let stats: Option<(Option<String>, Option<String>, f64)> = sqlx::query_as(
        "SELECT array_to_string(CAST(CAST(s.most_common_elems AS TEXT) AS TEXT[]), ' '), \
         array_to_string(s.most_common_elem_freqs, ' '), CAST(c.reltuples AS FLOAT8) \
         FROM pg_stats s JOIN pg_class c ON c.oid = CAST('jobs' AS regclass) \
         WHERE s.schemaname = current_schema() AND s.tablename = 'jobs' \
         AND s.attname = 'search_vector'",
    )
    .fetch_optional(&mut *conn)
    .await?;
    let Some((Some(elems), Some(freqs), jobs)) = stats else {
        return Ok(false);
    };
    let elems: Vec<&str> = elems.split(' ').collect();
    let freqs: Vec<f32> = freqs.split(' ').filter_map(|f| f.parse().ok()).collect();
    // The element frequencies, then the least and the greatest of them, then the null share.
    let Some(&least) = freqs.get(elems.len()) else {
        return Ok(false);
    };
    let share = s
        .terms
        .iter()
        .map(|t| match elems.iter().position(|e| *e == t.as_str()) {
            Some(i) => freqs.get(i).copied().unwrap_or(least),
            None => least,
        })
        .fold(f32::INFINITY, f32::min) as f64;
    let jobs = jobs.max(0.0);
    let budget = (10 * need).max((WALK_COST_RATIO as f64 * need as f64 * jobs).sqrt() as i64);
    // The rows a walk tests to find `need` matches at that share, at best.
    Ok(share <= 0.0 || need as f64 / share > budget as f64)
}

/// Whether a filter narrows the search to fewer than [`NARROW_LIMIT`] open jobs, and which
/// narrows it most: one bounded count per filter that has an index.
async fn narrowing(conn: &mut Conn, s: &JobSearch) -> StoreResult<Option<Narrow>> {
    if s.terms.is_empty() {
        // No words to test: the planner's choice among the filters' indexes already reads no
        // more than the page needs.
        return Ok(None);
    }
    let mut best: Option<(i64, Narrow)> = None;
    if let Some(company) = s.company_id {
        let n: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE company_id = $1 AND status = 'open' \
             LIMIT $2) c",
        )
        .bind(company)
        .bind(NARROW_LIMIT)
        .fetch_one(&mut *conn)
        .await?;
        if n < NARROW_LIMIT {
            best = Some((n, Narrow::Company));
        }
    }
    if let Some(needle) = place_needle(s) {
        let n: i64 = if D::NAME == "sqlite" {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM (SELECT 1 FROM jobs_location_fts \
                 WHERE jobs_location_fts MATCH $1 LIMIT $2) c",
            )
            .bind(trigram_phrase(needle))
        } else {
            sqlx::query_scalar(
                "SELECT COUNT(*) FROM (SELECT 1 FROM jobs WHERE status = 'open' \
                 AND location_key LIKE $1 LIMIT $2) c",
            )
            .bind(like_pattern(needle))
        }
        .bind(NARROW_LIMIT)
        .fetch_one(&mut *conn)
        .await?;
        if n < NARROW_LIMIT && best.is_none_or(|(m, _)| n < m) {
            best = Some((n, Narrow::Place));
        }
    }
    Ok(best.map(|(_, narrow)| narrow))
}

fn push_pg_branch_ids(
    qb: &mut QueryBuilder<'_, Db>,
    s: &JobSearch,
    branch: Branch,
    access: Access,
) {
    match access {
        Access::Walk(rows) => {
            qb.push("SELECT j.id, j.created_at FROM (SELECT * FROM jobs j WHERE j.status = 'open'");
            if let Some(p) = s.posted_within {
                qb.push(" AND j.created_at >= ").push_bind(p.since);
            }
            // The table's size is the planner's estimate (never-analysed: 0).
            qb.push(" ORDER BY j.created_at DESC, j.id DESC LIMIT GREATEST(")
                .push_bind(rows.saturating_mul(10))
                .push(", CAST(sqrt(")
                .push_bind(WALK_COST_RATIO as f64 * rows as f64)
                .push(
                    " * GREATEST((SELECT reltuples FROM pg_class \
                     WHERE oid = CAST('jobs' AS regclass)), 0)) AS BIGINT))",
                )
                .push(") j WHERE j.search_vector @@ CAST(")
                .push_bind(ts_query(&s.terms))
                .push(" AS tsquery)");
            push_row_filters(qb, s);
            push_branch_filter(qb, s, branch);
            qb.push(" ORDER BY j.created_at DESC, j.id DESC");
        }
        Access::Narrow(narrow) => push_narrow_branch_ids(qb, s, branch, narrow),
        Access::Matches => {
            // OFFSET 0 keeps the outer LIMIT out of the inner plan: the matches are found
            // through the index that finds them, not by walking the newest-first index.
            qb.push(
                "SELECT r.id, r.created_at FROM (SELECT j.id, j.created_at FROM jobs j \
                 WHERE j.search_vector @@ CAST(",
            )
            .push_bind(ts_query(&s.terms))
            .push(" AS tsquery)");
            push_row_filters(qb, s);
            push_branch_filter(qb, s, branch);
            qb.push(" OFFSET 0) r ORDER BY r.created_at DESC, r.id DESC");
        }
    }
}

/// `SELECT COUNT(*)` of a branch's first `limit` matches.
pub(in crate::store) fn branch_count<'a>(
    prefix: &str,
    s: &'a JobSearch,
    branch: Branch,
    access: Access,
    limit: i64,
) -> QueryBuilder<'a, Db> {
    let mut qb = QueryBuilder::<Db>::new(prefix);
    qb.push("SELECT COUNT(*) FROM (");
    push_branch_ids(&mut qb, s, branch, access);
    qb.push(" LIMIT ").push_bind(limit).push(") c");
    qb
}

/// One statement: the branch's first `limit` matches counted (`matches`, on every row), and its
/// rows from position `offset` (from 0), at most `size` of them. The matches are read once.
pub(in crate::store) fn branch_page<'a>(
    prefix: &str,
    s: &'a JobSearch,
    branch: Branch,
    access: Access,
    limit: i64,
    offset: i64,
    size: i64,
) -> QueryBuilder<'a, Db> {
    let mut qb = QueryBuilder::<Db>::new(prefix);
    let select = sql::JOB_SELECT
        .strip_prefix("SELECT ")
        .unwrap_or(sql::JOB_SELECT);
    qb.push("WITH m AS MATERIALIZED (SELECT * FROM (");
    push_branch_ids(&mut qb, s, branch, access);
    qb.push(" LIMIT ")
        .push_bind(limit)
        .push(") x) SELECT (SELECT COUNT(*) FROM m) AS matches, ")
        .push(select)
        .push(" WHERE j.id IN (SELECT id FROM m ORDER BY ")
        .push(D::SEARCH_ORDER)
        .push(" LIMIT ")
        .push_bind(size)
        .push(" OFFSET ")
        .push_bind(offset)
        .push(") ORDER BY j.created_at DESC, j.id DESC");
    qb
}

/// How PostgreSQL reads a branch first: by walking, when there are words to test.
fn first_access(s: &JobSearch, limit: i64) -> Access {
    if D::NAME == "sqlite" || s.terms.is_empty() {
        Access::Matches
    } else {
        Access::Walk(limit)
    }
}

/// What one branch gave: how many of its first `limit` matches there are, and its rows on the
/// page.
struct BranchPage {
    counted: i64,
    rows: Vec<JobRow>,
}

type Conn = <Db as sqlx::Database>::Connection;

#[allow(clippy::too_many_arguments)]
async fn read_branch(
    conn: &mut Conn,
    s: &JobSearch,
    branch: Branch,
    start: Option<Access>,
    limit: i64,
    offset: i64,
    size: i64,
) -> StoreResult<BranchPage> {
    let mut access = start.unwrap_or_else(|| first_access(s, limit));
    loop {
        let page = if size > 0 {
            let found = branch_page("", s, branch, access, limit, offset, size)
                .build()
                .persistent(false)
                .fetch_all(&mut *conn)
                .await?;
            let counted = match found.first() {
                Some(row) => Some(row.try_get::<i64, _>("matches")?),
                // No row on the page: nothing matched if the page starts at the first match.
                None if offset == 0 => Some(0),
                None => None,
            };
            let rows = found
                .iter()
                .map(JobRow::from_row)
                .collect::<Result<Vec<_>, _>>()?;
            counted.map(|counted| BranchPage { counted, rows })
        } else {
            None
        };
        let page = match page {
            Some(page) => page,
            None => BranchPage {
                counted: branch_count("", s, branch, access, limit)
                    .build_query_scalar()
                    .persistent(false)
                    .fetch_one(&mut *conn)
                    .await?,
                rows: Vec::new(),
            },
        };
        match access {
            // The walk ended before it found all it needed: the matches are sparse among the
            // newest jobs, so read them through the full-text index.
            Access::Walk(_) if page.counted < limit => access = Access::Matches,
            _ => return Ok(page),
        }
    }
}

/// Runs a search: its branches in order, each read only as far as the count and the page need.
/// Several branches are read in one snapshot (`conn` in a read transaction).
pub(in crate::store) async fn search(conn: &mut Conn, s: &JobSearch) -> StoreResult<SearchPage> {
    let limit = s.count_limit();
    // One more than the limit tells whether there are more.
    let need = limit + 1;
    let mut counted = 0;
    let mut rows = Vec::new();
    // How every branch starts: the narrow set of a filter, or the GIN index when the statistics
    // say a walk would fail; else the branch's own first access.
    let start = match narrowing(conn, s).await? {
        Some(narrow) => Some(Access::Narrow(narrow)),
        None if walk_is_hopeless(conn, s, need).await? => Some(Access::Matches),
        None => None,
    };
    for branch in branches(s) {
        let offset = (s.page.offset() - counted).max(0);
        let size = s.page.size - rows.len() as i64;
        let page = read_branch(conn, s, branch, start, need - counted, offset, size).await?;
        counted += page.counted;
        rows.extend(page.rows);
        if counted >= need {
            break;
        }
    }
    Ok(SearchPage {
        rows,
        total: counted.min(limit),
        total_exact: counted <= limit,
    })
}

/// The statements of a search's first branch, every way PostgreSQL can read it, for
/// `EXPLAIN`.
#[allow(dead_code)] // PgStore::explain_search; the SQLite build of this module has no use for it
pub(in crate::store) fn explained<'a>(prefix: &str, s: &'a JobSearch) -> Vec<QueryBuilder<'a, Db>> {
    let limit = s.count_limit() + 1;
    let branch = branches(s)[0];
    let mut out = vec![branch_page(
        prefix,
        s,
        branch,
        first_access(s, limit),
        limit,
        s.page.offset(),
        s.page.size,
    )];
    if first_access(s, limit) != Access::Matches {
        out.push(branch_page(
            prefix,
            s,
            branch,
            Access::Matches,
            limit,
            s.page.offset(),
            s.page.size,
        ));
    }
    // And the narrow read of a company or a town, where the search may start when they hold
    // few open jobs.
    let narrows = [
        (s.company_id.is_some(), Narrow::Company),
        (place_needle(s).is_some(), Narrow::Place),
    ];
    for (applies, narrow) in narrows {
        if applies && !s.terms.is_empty() {
            out.push(branch_page(
                prefix,
                s,
                branch,
                Access::Narrow(narrow),
                limit,
                s.page.offset(),
                s.page.size,
            ));
        }
    }
    out
}
