//! Each stopping rule on an index in blocks of one document, where a rule made non-strict
//! loses a result.

use crate::domain::{EmploymentType, JobStatus};
use crate::search::SearchIndex;
use crate::store::{After, JobRow, JobSearch, Page, PostedWithin, SearchSort};
use chrono::{DateTime, TimeZone, Utc};

fn at(t: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + t, 0).unwrap()
}

fn job(id: i64, t: i64, title: &str) -> JobRow {
    JobRow {
        id,
        company_id: 1,
        company_name: "Acme".into(),
        title: title.into(),
        description: "welding".into(),
        location: "Berlin".into(),
        remote: false,
        salary_min: None,
        salary_max: None,
        workplace: None,
        locations: None,
        salary_currency: None,
        salary_period: None,
        employment_type: EmploymentType::FullTime,
        status: JobStatus::Open,
        expires_at: None,
        rejection_reason: None,
        resume_required: false,
        questions: None,
        created_at: at(t),
        updated_at: at(t),
    }
}

/// An index of `jobs` in this order, one document per block.
fn index(jobs: &[JobRow]) -> (tempfile::TempDir, SearchIndex) {
    let dir = tempfile::tempdir().expect("temp dir");
    let index = SearchIndex::open_with_block_size(dir.path(), 1).expect("open");
    index.apply(&[], &[], jobs, 1, false).expect("apply");
    (dir, index)
}

fn ids(index: &SearchIndex, s: &JobSearch) -> Vec<i64> {
    index
        .search(s)
        .expect("search")
        .rows
        .iter()
        .map(|r| r.id)
        .collect()
}

fn first(size: i64) -> JobSearch {
    JobSearch {
        page: Page { page: 1, size },
        at: Some(at(0)),
        ..JobSearch::default()
    }
}

#[test]
fn a_block_as_new_as_the_page_s_last_is_visited() {
    // The first round visits the four newest blocks (the last four documents, all at 200);
    // the first document, also at 200 but with the highest id, comes first.
    let mut jobs = vec![job(50, 200, "welder")];
    jobs.extend((1..=4).map(|id| job(id, 200, "welder")));
    let (_dir, index) = index(&jobs);
    assert_eq!(ids(&index, &first(1)), vec![50]);
    let found = index.search(&first(1)).expect("search");
    assert_eq!((found.total, found.total_exact), (5, true));
}

#[test]
fn posted_within_keeps_a_job_exactly_at_its_start() {
    let (_dir, index) = index(&[job(1, 100, "welder"), job(2, 10, "welder")]);
    let s = JobSearch {
        posted_within: Some(PostedWithin {
            days: 1,
            since: at(100),
        }),
        ..first(10)
    };
    assert_eq!(ids(&index, &s), vec![1]);
}

#[test]
fn a_cursor_keeps_a_job_created_at_its_instant_with_a_lower_id() {
    let (_dir, index) = index(&[job(1, 100, "welder"), job(2, 100, "welder")]);
    let page = index.search(&first(1)).expect("search");
    assert_eq!(page.rows[0].id, 2);
    let after = page.next.expect("a next page");
    assert_eq!(
        after,
        After {
            score: 0,
            created_at: at(100).timestamp_micros(),
            id: 2,
            position: 1
        }
    );
    let s = JobSearch {
        after: Some(after),
        ..first(1)
    };
    assert_eq!(ids(&index, &s), vec![1]);
    assert!(index.search(&s).expect("search").next.is_none());
}

#[test]
fn relevance_visits_older_blocks_while_a_better_tier_may_be_there() {
    // The newest jobs hold the word in their description only; the oldest in its title.
    let mut jobs = vec![job(1, 10, "welding lead")];
    jobs.extend((2..=9).map(|id| job(id, 100 + id, "foreman")));
    let (_dir, index) = index(&jobs);
    // A count limit below the word's frequency, so that the traversal goes in rounds.
    let s = JobSearch {
        terms: vec!["welding".into()],
        sort: SearchSort::Relevance,
        count_limit: Some(2),
        ..first(1)
    };
    assert_eq!(ids(&index, &s), vec![1]);
}

#[test]
fn past_the_count_limit_the_total_is_the_limit_and_not_exact() {
    let jobs: Vec<JobRow> = (1..=30).map(|id| job(id, id, "welder")).collect();
    let (_dir, index) = index(&jobs);
    let s = JobSearch {
        count_limit: Some(10),
        ..first(5)
    };
    let found = index.search(&s).expect("search");
    assert_eq!(
        found.rows.iter().map(|r| r.id).collect::<Vec<_>>(),
        vec![30, 29, 28, 27, 26]
    );
    assert_eq!((found.total, found.total_exact), (10, false));
    // Facets count every match.
    let s = JobSearch {
        facets: crate::store::Facets {
            remote: true,
            ..Default::default()
        },
        ..s
    };
    let found = index.search(&s).expect("search");
    assert_eq!((found.total, found.total_exact), (30, true));
}
