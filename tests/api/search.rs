//! Job search (`GET /api/jobs`): word matching, filters, ordering, pagination, parameter
//! validation, the cache and its consistency with every write, both databases agreeing, and
//! searches while Redis is unreachable.

use crate::each_backend;
use crate::helpers::*;
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

each_backend!(
    words_match_singular_and_plural_whole_words_in_any_case,
    words_with_combining_marks_match_only_whole_words,
    every_word_must_match_and_company_names_count,
    query_is_never_syntax,
    location_is_a_unicode_case_insensitive_substring,
    filters_narrow_the_list,
    only_open_jobs_are_listed,
    newest_first_and_pagination,
    a_cursor_serves_the_next_page_of_its_own_search_only,
    relevance_puts_title_matches_first,
    posted_within_days_keeps_recent_jobs,
    bad_parameters_are_422_never_clamped,
    a_page_past_the_window_is_422_naming_page,
    repeated_search_is_a_cache_hit,
    a_lookup_by_ids_lists_those_open_jobs_and_is_never_cached,
    every_write_shows_in_the_next_search,
    write_then_search_loop_is_never_stale,
);

// ------------------------------------------------------------------------------------------
// searching

/// `/api/jobs` with these query parameters, URL-encoded.
fn jobs_url(params: &[(&str, &str)]) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        s.append_pair(k, v);
    }
    let query = s.finish();
    if query.is_empty() {
        "/api/jobs".to_string()
    } else {
        format!("/api/jobs?{query}")
    }
}

/// A search that must succeed; every answer carries `X-Cache: HIT` or `MISS`.
async fn search(app: &TestApp, params: &[(&str, &str)]) -> Resp {
    let r = app.get(&jobs_url(params), None).await;
    assert_eq!(
        r.status.as_u16(),
        200,
        "GET {} -> {}",
        jobs_url(params),
        r.text
    );
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "GET {}",
        jobs_url(params)
    );
    let cache = r.header("x-cache");
    assert!(
        matches!(cache, Some("HIT") | Some("MISS")),
        "X-Cache must be HIT or MISS, got {cache:?} for {}",
        jobs_url(params)
    );
    r
}

fn cache_of(r: &Resp) -> &str {
    r.header("x-cache").unwrap_or("")
}

fn titles_of(r: &Resp) -> Vec<String> {
    r.body["items"]
        .as_array()
        .unwrap_or_else(|| panic!("a list: {}", r.text))
        .iter()
        .map(|j| j["title"].as_str().expect("title").to_string())
        .collect()
}

async fn titles(app: &TestApp, params: &[(&str, &str)]) -> Vec<String> {
    titles_of(&search(app, params).await)
}

/// Runs every case and reports all the searches whose titles differ from the expected ones.
/// Query parameters, and the titles a search with them must list, in order.
type Case<'a> = (Vec<(&'a str, &'a str)>, Vec<&'a str>);

async fn check_cases(app: &TestApp, cases: &[Case<'_>]) {
    let mut wrong = Vec::new();
    for (params, expected) in cases {
        let got = titles(app, params).await;
        if got != *expected {
            wrong.push(format!(
                "{}: expected {expected:?}, got {got:?}",
                jobs_url(params)
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "wrong search results:\n{}",
        wrong.join("\n")
    );
}

fn q(query: &str) -> Vec<(&str, &str)> {
    vec![("q", query)]
}

/// Searches twice and checks that the second answer came from the cache, so that a following
/// write has a cached page it must not let through.
async fn warm(app: &TestApp, params: &[(&str, &str)]) -> Vec<String> {
    let first = search(app, params).await;
    let second = search(app, params).await;
    assert_eq!(
        cache_of(&second),
        "HIT",
        "a repeated search is cached: {}",
        jobs_url(params)
    );
    assert_eq!(first.text, second.text);
    titles_of(&second)
}

fn id_of(job: &Value) -> i64 {
    job["id"].as_i64().expect("job id")
}

// ------------------------------------------------------------------------------------------
// words

async fn words_match_singular_and_plural_whole_words_in_any_case(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    for (title, description) in [
        ("Senior Engineers", "Platform team"),
        ("Staff Engineer", "Payments"),
        ("Engineering Manager", "Lead people"),
        ("Data Analyst", "Work with partner companies"),
    ] {
        app.job(&e, c, json!({"title": title, "description": description}))
            .await;
    }
    let engineers = vec!["Staff Engineer", "Senior Engineers"];
    check_cases(
        &app,
        &[
            (q("engineer"), engineers.clone()),
            (q("engineers"), engineers.clone()),
            (q("ENGINEER"), engineers.clone()),
            (q("eNgInEeRs"), engineers.clone()),
            (q("engineering"), vec!["Engineering Manager"]),
            (q("engin"), vec![]),
            (q("engineerin"), vec![]),
            (q("company"), vec!["Data Analyst"]),
            (q("companies"), vec!["Data Analyst"]),
            (q("partners"), vec!["Data Analyst"]),
            (q("analysts"), vec!["Data Analyst"]),
            (q("people"), vec!["Engineering Manager"]),
            (q("person"), vec!["Engineering Manager"]),
            (q("payment"), vec!["Staff Engineer"]),
            (q("  staff   "), vec!["Staff Engineer"]),
        ],
    )
    .await;
}

async fn words_with_combining_marks_match_only_whole_words(app: TestApp) {
    // Devanagari vowel signs and viramas, and a decomposed accent (e + U+0301), are part of
    // their word: a piece of such a word is not a whole word.
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(
        &e,
        c,
        json!({"title": "हिंदी शिक्षक", "description": "Delhi"}),
    )
    .await;
    app.job(
        &e,
        c,
        json!({"title": "Teacher", "description": "An e\u{301}cole in Lyon"}),
    )
    .await;
    app.job(
        &e,
        c,
        json!({"title": "Rust Engineer", "description": "Backend"}),
    )
    .await;
    check_cases(
        &app,
        &[
            (q("हिंदी"), vec!["हिंदी शिक्षक"]),
            (q("शिक्षक"), vec!["हिंदी शिक्षक"]),
            (q("e\u{301}cole"), vec!["Teacher"]),
            (q("ह"), vec![]),
            (q("षक"), vec![]),
            (q("cole"), vec![]),
            (q("ि rust"), vec![]),
        ],
    )
    .await;
}

async fn every_word_must_match_and_company_names_count(app: TestApp) {
    let e = app.user("employer").await;
    let globex = app.company(&e, "Globex").await;
    let initech = app.company(&e, "Initech").await;
    app.job(
        &e,
        globex,
        json!({"title": "Rust Developer", "description": "Backend services"}),
    )
    .await;
    app.job(
        &e,
        initech,
        json!({"title": "Go Developer", "description": "Backend services"}),
    )
    .await;
    check_cases(
        &app,
        &[
            (q("developer"), vec!["Go Developer", "Rust Developer"]),
            (q("rust developer"), vec!["Rust Developer"]),
            (q("developer rust"), vec!["Rust Developer"]),
            (q("globex"), vec!["Rust Developer"]),
            (q("GLOBEX developers"), vec!["Rust Developer"]),
            (q("initech backend"), vec!["Go Developer"]),
            (q("initech rust"), vec![]),
            (q("rust python"), vec![]),
            (
                q("backend services developer"),
                vec!["Go Developer", "Rust Developer"],
            ),
        ],
    )
    .await;
}

async fn query_is_never_syntax(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(
        &e,
        c,
        json!({"title": "Rust Engineer", "description": "An office near the river"}),
    )
    .await;
    app.job(
        &e,
        c,
        json!({"title": "Python Developer", "description": "Data pipelines"}),
    )
    .await;
    let rust = vec!["Rust Engineer"];
    let python = vec!["Python Developer"];
    check_cases(
        &app,
        &[
            (q("rust*"), rust.clone()),
            (q("\"rust"), rust.clone()),
            (q("rust\""), rust.clone()),
            (q("\"rust engineer\""), rust.clone()),
            (q("\"engineer rust\""), rust.clone()),
            (q("NEAR(rust"), rust.clone()),
            (q("NEAR(python"), vec![]),
            (q("NEAR(rust engineer, 2)"), vec![]),
            (q("rust:engineer"), rust.clone()),
            (q("title:rust"), vec![]),
            (q("rust & engineer"), rust.clone()),
            (q("rust&engineer"), rust.clone()),
            (q("(rust)"), rust.clone()),
            (q("rust OR python"), vec![]),
            (q("rust | python"), vec![]),
            (q("python AND"), vec![]),
            (q("NOT rust"), vec![]),
            (q("-python"), python.clone()),
            (q("rust -python"), vec![]),
            (q("!python"), python.clone()),
            (q("^rust"), rust.clone()),
            (q("rust^2"), vec![]),
            (q("rust:*"), rust.clone()),
            (q("'rust'"), rust.clone()),
            (q("ru'st"), vec![]),
            (q("{rust}"), rust.clone()),
            (q("rust\\"), rust.clone()),
            (q("a\"b"), vec![]),
            (q("'; DROP TABLE jobs; --"), vec![]),
        ],
    )
    .await;
    // Nothing but punctuation and operators: no words, so no word condition.
    for only_syntax in [
        "*",
        "\"",
        "&",
        ":",
        "(",
        ")",
        "-",
        "'",
        "\\",
        "\"\"",
        "* : & ( ) - ' \\",
    ] {
        assert_eq!(
            titles(&app, &q(only_syntax)).await,
            vec!["Python Developer", "Rust Engineer"],
            "q={only_syntax:?}"
        );
    }
    // Every single printable ASCII character, alone and around a word, is plain text.
    for b in 0x21u8..0x7f {
        let ch = (b as char).to_string();
        search(&app, &q(&ch)).await;
        let around = format!("{ch}rust{ch}");
        let got = titles(&app, &q(&around)).await;
        if !(b as char).is_ascii_alphanumeric() {
            assert_eq!(got, rust, "q={around:?}");
        }
    }
    // The jobs are all still there.
    assert_eq!(
        titles(&app, &[]).await,
        vec!["Python Developer", "Rust Engineer"]
    );
}

// ------------------------------------------------------------------------------------------
// filters

async fn location_is_a_unicode_case_insensitive_substring(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    for (title, location) in [
        ("Munich", "München, Bayern"),
        ("Berlin", "Berlin"),
        ("Saint-Etienne", "Saint-Étienne"),
        ("Lyon", "Lyon_1 (100%)"),
    ] {
        app.job(&e, c, json!({"title": title, "location": location}))
            .await;
    }
    let loc = |l| vec![("location", l)];
    check_cases(
        &app,
        &[
            (loc("MÜN"), vec!["Munich"]),
            (loc("ünch"), vec!["Munich"]),
            (loc("münchen"), vec!["Munich"]),
            (loc("MÜNCHEN, BAYERN"), vec!["Munich"]),
            (loc("nchen, b"), vec!["Munich"]),
            (loc("bay"), vec!["Munich"]),
            (loc("ber"), vec!["Berlin"]),
            (loc("ÉTIENNE"), vec!["Saint-Etienne"]),
            (loc("étienne"), vec!["Saint-Etienne"]),
            (loc("t-é"), vec!["Saint-Etienne"]),
            (loc("%"), vec!["Lyon"]),
            (loc("_"), vec!["Lyon"]),
            (loc("(100%)"), vec!["Lyon"]),
            (loc("munchen"), vec![]),
            (loc("zürich"), vec![]),
            (loc("b%n"), vec![]),
        ],
    )
    .await;
}

async fn filters_narrow_the_list(app: TestApp) {
    let e = app.user("employer").await;
    let a = app.company(&e, "Alpha").await;
    let b = app.company(&e, "Beta").await;
    app.job(&e, a, json!({"title": "J1", "remote": true, "salary_max": 50_000, "employment_type": "full_time"}))
        .await;
    app.job(
        &e,
        a,
        json!({"title": "J2", "remote": false, "employment_type": "part_time"}),
    )
    .await;
    app.job(
        &e,
        b,
        json!({"title": "J3", "remote": false, "salary_min": 80_000, "salary_max": 120_000, "employment_type": "contract"}),
    )
    .await;
    app.job(
        &e,
        b,
        json!({"title": "J4", "remote": true, "salary_min": 90_000, "salary_max": 100_000, "employment_type": "internship"}),
    )
    .await;
    let (a, b) = (a.to_string(), b.to_string());
    let (a, b) = (a.as_str(), b.as_str());
    check_cases(
        &app,
        &[
            (vec![], vec!["J4", "J3", "J2", "J1"]),
            (vec![("remote", "true")], vec!["J4", "J1"]),
            (vec![("remote", "false")], vec!["J3", "J2"]),
            (vec![("company_id", a)], vec!["J2", "J1"]),
            (vec![("company_id", b)], vec!["J4", "J3"]),
            (vec![("company_id", "999999")], vec![]),
            (vec![("salary_min", "0")], vec!["J4", "J3", "J2", "J1"]),
            (vec![("salary_min", "50000")], vec!["J4", "J3", "J2", "J1"]),
            (vec![("salary_min", "50001")], vec!["J4", "J3", "J2"]),
            (vec![("salary_min", "100000")], vec!["J4", "J3", "J2"]),
            (vec![("salary_min", "100001")], vec!["J3", "J2"]),
            (vec![("salary_min", "1000000000")], vec!["J2"]),
            (vec![("employment_type", "full_time")], vec!["J1"]),
            (vec![("employment_type", "part_time")], vec!["J2"]),
            (vec![("employment_type", "contract")], vec!["J3"]),
            (vec![("employment_type", "internship")], vec!["J4"]),
            (vec![("remote", "false"), ("company_id", b)], vec!["J3"]),
            (
                vec![("remote", "true"), ("salary_min", "60000")],
                vec!["J4"],
            ),
            (
                vec![("q", "beta"), ("employment_type", "contract")],
                vec!["J3"],
            ),
            (
                vec![("q", "alpha"), ("remote", "true"), ("company_id", b)],
                vec![],
            ),
        ],
    )
    .await;
    let r = search(&app, &[("remote", "true")]).await;
    assert_eq!(r.body["total"], 2);
}

async fn only_open_jobs_are_listed(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let j1 = id_of(&app.job(&e, c, json!({"title": "First Engineer"})).await);
    app.job(&e, c, json!({"title": "Second Engineer"})).await;

    let r = app
        .patch(
            &format!("/api/jobs/{j1}"),
            Some(&e.token),
            json!({"status": "closed"}),
        )
        .await;
    assert_eq!(r.expect(200)["status"], "closed");
    let list = search(&app, &[]).await;
    assert_eq!(titles_of(&list), vec!["Second Engineer"]);
    assert_eq!(list.body["total"], 1);
    assert_eq!(titles(&app, &q("first")).await, Vec::<String>::new());
    let company = c.to_string();
    assert_eq!(
        titles(&app, &[("company_id", company.as_str())]).await,
        vec!["Second Engineer"]
    );

    // The closed job itself is still there for anyone.
    let shown = app.get(&format!("/api/jobs/{j1}"), None).await;
    assert_eq!(shown.expect(200)["status"], "closed");
    assert_eq!(shown.body["title"], "First Engineer");

    app.patch(
        &format!("/api/jobs/{j1}"),
        Some(&e.token),
        json!({"status": "open"}),
    )
    .await
    .expect(200);
    assert_eq!(
        titles(&app, &q("engineer")).await,
        vec!["Second Engineer", "First Engineer"]
    );
}

// ------------------------------------------------------------------------------------------
// order and pages

/// Jobs "Job 01" to "Job 25", created in that order, described "odd" or "even".
async fn twenty_five_jobs(app: &TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    for i in 1..=25 {
        let parity = if i % 2 == 0 { "even" } else { "odd" };
        app.job(
            &e,
            c,
            json!({"title": format!("Job {i:02}"), "description": parity}),
        )
        .await;
    }
}

async fn newest_first_and_pagination(app: TestApp) {
    twenty_five_jobs(&app).await;
    let names = |range: std::ops::RangeInclusive<i32>| -> Vec<String> {
        range.rev().map(|i| format!("Job {i:02}")).collect()
    };

    let first = search(&app, &[]).await;
    assert_eq!(
        titles_of(&first),
        names(6..=25),
        "default: page 1 of 20, newest first"
    );
    assert_eq!(
        (first.body["page"].clone(), first.body["page_size"].clone()),
        (json!(1), json!(20))
    );
    assert_eq!(first.body["total"], 25);
    assert_eq!(first.body["total_exact"], true, "a small total is exact");

    let second = search(&app, &[("page", "2")]).await;
    assert_eq!(titles_of(&second), names(1..=5));
    assert_eq!(
        (
            second.body["page"].clone(),
            second.body["page_size"].clone()
        ),
        (json!(2), json!(20))
    );
    assert_eq!(second.body["total"], 25);

    for beyond in ["3", "500"] {
        let r = search(&app, &[("page", beyond)]).await;
        assert_eq!(r.body["items"], json!([]), "page {beyond}");
        assert_eq!(r.body["total"], 25, "page {beyond}");
        assert_eq!(r.body["page"], beyond.parse::<i64>().unwrap());
    }

    let r = search(&app, &[("page", "4"), ("page_size", "7")]).await;
    assert_eq!(titles_of(&r), names(1..=4));
    assert_eq!(
        (r.body["page"].clone(), r.body["page_size"].clone()),
        (json!(4), json!(7))
    );
    assert_eq!(r.body["total"], 25);

    // One page of 100 equals the pages of 7 put together, and is ordered by
    // (created_at, id) descending.
    let all = search(&app, &[("page_size", "100")]).await;
    assert_eq!(titles_of(&all), names(1..=25));
    let mut stitched = Vec::new();
    for page in 1..=4 {
        let page = page.to_string();
        stitched.extend(titles(&app, &[("page", page.as_str()), ("page_size", "7")]).await);
    }
    assert_eq!(stitched, names(1..=25));
    let items = all.body["items"].as_array().unwrap();
    for pair in items.windows(2) {
        let key = |j: &Value| {
            (
                j["created_at"].as_str().unwrap().to_string(),
                j["id"].as_i64().unwrap(),
            )
        };
        assert!(
            key(&pair[0]) > key(&pair[1]),
            "newest first: {} then {}",
            pair[0],
            pair[1]
        );
    }

    // `total` counts every match of the search, not the page.
    let even = search(&app, &[("q", "even"), ("page", "3"), ("page_size", "5")]).await;
    assert_eq!(even.body["total"], 12);
    assert_eq!(titles_of(&even), vec!["Job 04", "Job 02"]);
    let odd = search(&app, &[("q", "odd"), ("page", "4"), ("page_size", "5")]).await;
    assert_eq!(odd.body["total"], 13);
    assert_eq!(odd.body["items"], json!([]));
}

async fn a_cursor_serves_the_next_page_of_its_own_search_only(app: TestApp) {
    twenty_five_jobs(&app).await;
    // Pages of 7 by cursor are the pages of 7 by number, and the last page has no cursor.
    let mut by_cursor = Vec::new();
    let mut after: Option<String> = None;
    let mut pages = 0;
    loop {
        let mut params = vec![("page_size", "7")];
        if let Some(a) = &after {
            params.push(("after", a.as_str()));
        }
        let r = search(&app, &params).await;
        assert_eq!(r.status, 200, "{}", r.body);
        pages += 1;
        assert_eq!(
            r.body["page"], pages,
            "the page a cursor serves is numbered"
        );
        assert_eq!(r.body["total"], 25);
        by_cursor.extend(titles_of(&r));
        match r.body["next"].as_str() {
            Some(next) => after = Some(next.to_string()),
            None => break,
        }
        assert!(pages < 10, "the cursors end");
    }
    assert_eq!(pages, 4);
    let names: Vec<String> = (1..=25).rev().map(|i| format!("Job {i:02}")).collect();
    assert_eq!(by_cursor, names);
    // A page that fills the list exactly has no cursor either.
    let exact = search(&app, &[("page_size", "5"), ("page", "5")]).await;
    assert_eq!(exact.body["next"], Value::Null);

    let first = search(&app, &[("q", "even"), ("page_size", "5")]).await;
    let next = first.body["next"]
        .as_str()
        .expect("a next page")
        .to_string();
    let second = search(&app, &[("q", "even"), ("page_size", "5"), ("after", &next)]).await;
    assert_eq!(
        titles_of(&second),
        ["Job 14", "Job 12", "Job 10", "Job 08", "Job 06"]
    );
    for (params, why) in [
        (vec![("q", "odd"), ("page_size", "5")], "another q"),
        (vec![("q", "even"), ("page_size", "6")], "another page size"),
        (
            vec![("q", "even"), ("page_size", "5"), ("page", "2")],
            "page and after",
        ),
    ] {
        let mut params = params;
        params.push(("after", &next));
        let r = app.get(&jobs_url(&params), None).await;
        assert_eq!(r.status, 422, "{why}: {}", r.body);
        assert!(r.body.to_string().contains("after"), "{why}: {}", r.body);
    }
    for bad in ["x", "AAAA", &next[1..]] {
        let r = app
            .get(
                &jobs_url(&[("q", "even"), ("page_size", "5"), ("after", bad)]),
                None,
            )
            .await;
        assert_eq!(r.status, 422, "{bad}: {}", r.body);
        assert!(r.body.to_string().contains("after"), "{}", r.body);
    }
}

async fn relevance_puts_title_matches_first(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    // Created in this order, oldest first.
    for (title, description) in [
        ("Rust Engineers", "build things"),
        ("Senior Manager", "a rust engineer at heart"),
        ("Rust Developer", "an engineer"),
        ("Go Engineer", "some rust"),
        ("Designer", "nothing to do with it"),
        ("Platform Lead", "engineers who write rust"),
    ] {
        app.job(&e, c, json!({"title": title, "description": description}))
            .await;
    }
    let relevance = |q: &'static str| {
        let app = &app;
        async move { titles(app, &[("q", q), ("sort", "relevance")]).await }
    };
    // Both words in the title, then one (newest first), then none (newest first).
    assert_eq!(
        relevance("rust engineer").await,
        [
            "Rust Engineers",
            "Go Engineer",
            "Rust Developer",
            "Platform Lead",
            "Senior Manager"
        ]
    );
    // Repeated words count once; newest is still the default and the tie-break.
    assert_eq!(
        relevance("rust RUST").await,
        [
            "Rust Developer",
            "Rust Engineers",
            "Platform Lead",
            "Go Engineer",
            "Senior Manager"
        ]
    );
    assert_eq!(
        titles(&app, &[("q", "rust engineer")]).await,
        [
            "Platform Lead",
            "Go Engineer",
            "Rust Developer",
            "Senior Manager",
            "Rust Engineers"
        ]
    );
    assert_eq!(
        titles(&app, &[("q", "rust engineer"), ("sort", "newest")]).await,
        titles(&app, &[("q", "rust engineer")]).await
    );
    // Without words, relevance is newest first.
    assert_eq!(
        titles(&app, &[("sort", "relevance")]).await,
        titles(&app, &[]).await
    );
    // Pages of a relevance search stitch together into the whole list, with its total.
    let mut stitched = Vec::new();
    for page in ["1", "2", "3"] {
        let r = search(
            &app,
            &[
                ("q", "rust engineer"),
                ("sort", "relevance"),
                ("page", page),
                ("page_size", "2"),
            ],
        )
        .await;
        assert_eq!(r.body["total"], 5, "page {page}");
        assert_eq!(r.body["total_exact"], true, "page {page}");
        stitched.extend(titles_of(&r));
    }
    assert_eq!(stitched, relevance("rust engineer").await);
}

async fn posted_within_days_keeps_recent_jobs(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({"title": "Fresh Welder"})).await;
    for days in ["1", "7", "365"] {
        assert_eq!(
            titles(&app, &[("posted_within_days", days)]).await,
            ["Fresh Welder"],
            "{days}"
        );
        assert_eq!(
            titles(&app, &[("q", "welders"), ("posted_within_days", days)]).await,
            ["Fresh Welder"],
            "{days}"
        );
    }
}

async fn a_page_past_the_window_is_422_naming_page(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({"title": "Welder"})).await;
    // The last page inside the first 10 000 results is served (empty here).
    for (page, size) in [("500", "20"), ("100", "100"), ("10000", "1")] {
        let r = search(
            &app,
            &[("q", "welder"), ("page", page), ("page_size", size)],
        )
        .await;
        assert_eq!(r.body["items"], json!([]), "{page} × {size}");
        assert_eq!(r.body["total"], 1, "{page} × {size}");
    }
    // One past it is refused, however few jobs match, and names `page`.
    for (page, size) in [
        ("501", "20"),
        ("101", "100"),
        ("10001", "1"),
        ("1000000", "20"),
    ] {
        let url = jobs_url(&[("q", "welder"), ("page", page), ("page_size", size)]);
        let r = app.get(&url, None).await;
        let p = r.expect_problem(422, "validation");
        assert!(p["errors"]["page"].is_array(), "{url}: {}", r.text);
        assert_eq!(
            p["errors"].as_object().unwrap().len(),
            1,
            "{url}: {}",
            r.text
        );
        assert!(
            p["errors"]["page"][0].as_str().unwrap().contains("10000"),
            "{url}: the message names the window: {}",
            r.text
        );
    }
}

async fn bad_parameters_are_422_never_clamped(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({})).await;
    for (field, value) in [
        ("page", "0"),
        ("page", "-1"),
        ("page", "abc"),
        ("page", "1.5"),
        ("page_size", "0"),
        ("page_size", "101"),
        ("page_size", "1000"),
        ("page_size", "-5"),
        ("page_size", "x"),
        ("remote", "maybe"),
        ("remote", "yes"),
        ("salary_min", "-1"),
        ("salary_min", "abc"),
        ("salary_min", "1.5"),
        ("employment_type", "boss"),
        ("employment_type", "fulltime"),
        ("company_id", "abc"),
        ("company_id", "1.5"),
        ("sort", "oldest"),
        ("sort", "Relevance"),
        ("sort", "newest,relevance"),
        ("posted_within_days", "0"),
        ("posted_within_days", "366"),
        ("posted_within_days", "-1"),
        ("posted_within_days", "week"),
        ("posted_within_days", "1.5"),
        ("page", "501"),
    ] {
        let url = jobs_url(&[(field, value)]);
        let r = app.get(&url, None).await;
        names_only(&r, &url, field);
    }
    let r = app
        .get(
            &jobs_url(&[("page", "0"), ("page_size", "101"), ("remote", "maybe")]),
            None,
        )
        .await;
    let p = r.expect_problem(422, "validation");
    for field in ["page", "page_size", "remote"] {
        assert!(p["errors"][field].is_array(), "{field}: {}", r.text);
    }
    // The edges of the ranges are fine.
    let r = search(&app, &[("page_size", "100")]).await;
    assert_eq!(r.body["page_size"], 100);
    let r = search(&app, &[("page_size", "1"), ("page", "1")]).await;
    assert_eq!(r.body["page_size"], 1);
    assert_eq!(titles_of(&r).len(), 1);
}

// ------------------------------------------------------------------------------------------
// cache

async fn repeated_search_is_a_cache_hit(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({"title": "Rust Engineer"})).await;
    app.job(&e, c, json!({"title": "Engineering Manager"}))
        .await;

    for params in [
        vec![],
        vec![("q", "engineer")],
        vec![("q", "manager"), ("remote", "false")],
        vec![("q", "engineer"), ("page", "2")],
        vec![("location", "berlin"), ("page_size", "1")],
    ] {
        let first = search(&app, &params).await;
        let second = search(&app, &params).await;
        assert_eq!(cache_of(&first), "MISS", "first {}", jobs_url(&params));
        assert_eq!(cache_of(&second), "HIT", "second {}", jobs_url(&params));
        assert_eq!(first.text, second.text, "{}", jobs_url(&params));
    }
    assert_eq!(titles(&app, &q("engineer")).await, vec!["Rust Engineer"]);
    assert_eq!(
        titles(&app, &q("manager")).await,
        vec!["Engineering Manager"]
    );
}

async fn a_lookup_by_ids_lists_those_open_jobs_and_is_never_cached(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let mut ids = Vec::new();
    for title in [
        "Rust Engineer",
        "Go Engineer",
        "Data Analyst",
        "Closed Engineer",
    ] {
        ids.push(id_of(&app.job(&e, c, json!({"title": title})).await));
    }
    app.job(&e, c, json!({"title": "Not Asked Engineer"})).await;
    app.patch(
        &format!("/api/jobs/{}", ids[3]),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    // Any order, repeats and an id no job has: the open ones among them, as a search orders them.
    let asked = format!(
        "{},{},{},{},{},9007199254740991",
        ids[2], ids[0], ids[3], ids[0], ids[1]
    );
    let first = search(&app, &[("ids", asked.as_str())]).await;
    assert_eq!(
        titles_of(&first),
        vec!["Data Analyst", "Go Engineer", "Rust Engineer"]
    );
    assert_eq!(first.body["total"], 3);
    // The other parameters still apply.
    let with_words = search(
        &app,
        &[
            ("ids", asked.as_str()),
            ("q", "engineer"),
            ("page_size", "1"),
        ],
    )
    .await;
    assert_eq!(titles_of(&with_words), vec!["Go Engineer"]);
    assert_eq!(with_words.body["total"], 2);
    // Never cached: each client's list is its own.
    let second = search(&app, &[("ids", asked.as_str())]).await;
    assert_eq!((cache_of(&first), cache_of(&second)), ("MISS", "MISS"));
    assert_eq!(first.text, second.text);
    // A write shows at once.
    app.patch(
        &format!("/api/jobs/{}", ids[2]),
        Some(&e.token),
        json!({"title": "Data Engineer"}),
    )
    .await
    .expect(200);
    assert_eq!(
        titles(&app, &[("ids", asked.as_str()), ("q", "engineer")]).await,
        vec!["Data Engineer", "Go Engineer", "Rust Engineer"]
    );

    let many = (1..=101)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    for bad in ["abc", "1,,2", "0", "-3", "1.5", "1;2", many.as_str()] {
        let r = app.get(&jobs_url(&[("ids", bad)]), None).await;
        assert_eq!(r.status.as_u16(), 422, "ids={bad}: {}", r.text);
        assert!(
            r.body["errors"]["ids"].is_array(),
            "ids={bad}: names ids: {}",
            r.text
        );
    }
    // A hundred is allowed.
    let hundred = (1..=100)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    search(&app, &[("ids", hundred.as_str())]).await;
}

async fn every_write_shows_in_the_next_search(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let j1 = id_of(&app.job(&e, c, json!({"title": "Rust Engineer"})).await);
    let all: &[(&str, &str)] = &[];
    let engineer = q("engineer");
    let acme = q("acme");

    // create
    assert_eq!(warm(&app, all).await, vec!["Rust Engineer"]);
    assert_eq!(warm(&app, &engineer).await, vec!["Rust Engineer"]);
    let j2 = id_of(&app.job(&e, c, json!({"title": "Go Engineer"})).await);
    assert_eq!(
        titles(&app, all).await,
        vec!["Go Engineer", "Rust Engineer"],
        "after create"
    );
    assert_eq!(
        titles(&app, &engineer).await,
        vec!["Go Engineer", "Rust Engineer"],
        "after create"
    );

    // a new title
    assert_eq!(
        warm(&app, &engineer).await,
        vec!["Go Engineer", "Rust Engineer"]
    );
    app.patch(
        &format!("/api/jobs/{j1}"),
        Some(&e.token),
        json!({"title": "Rust Wizard"}),
    )
    .await
    .expect(200);
    assert_eq!(
        titles(&app, &engineer).await,
        vec!["Go Engineer"],
        "after retitle"
    );
    assert_eq!(
        titles(&app, all).await,
        vec!["Go Engineer", "Rust Wizard"],
        "after retitle"
    );

    // close
    assert_eq!(warm(&app, all).await, vec!["Go Engineer", "Rust Wizard"]);
    assert_eq!(warm(&app, &engineer).await, vec!["Go Engineer"]);
    app.patch(
        &format!("/api/jobs/{j2}"),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    assert_eq!(titles(&app, all).await, vec!["Rust Wizard"], "after close");
    assert_eq!(
        titles(&app, &engineer).await,
        Vec::<String>::new(),
        "after close"
    );

    // reopen
    assert_eq!(warm(&app, &engineer).await, Vec::<String>::new());
    app.patch(
        &format!("/api/jobs/{j2}"),
        Some(&e.token),
        json!({"status": "open"}),
    )
    .await
    .expect(200);
    assert_eq!(
        titles(&app, &engineer).await,
        vec!["Go Engineer"],
        "after reopen"
    );

    // other fields: salary and location filters
    let rich = vec![("salary_min", "200000")];
    assert_eq!(warm(&app, &rich).await, vec!["Go Engineer", "Rust Wizard"]);
    app.patch(
        &format!("/api/jobs/{j2}"),
        Some(&e.token),
        json!({"salary_max": 150_000}),
    )
    .await
    .expect(200);
    assert_eq!(
        titles(&app, &rich).await,
        vec!["Rust Wizard"],
        "after salary change"
    );

    // the company's new name
    assert_eq!(warm(&app, &acme).await, vec!["Go Engineer", "Rust Wizard"]);
    let before = warm(&app, all).await;
    assert_eq!(before, vec!["Go Engineer", "Rust Wizard"]);
    app.patch(
        &format!("/api/companies/{c}"),
        Some(&e.token),
        json!({"name": "Globex"}),
    )
    .await
    .expect(200);
    assert_eq!(
        titles(&app, &acme).await,
        Vec::<String>::new(),
        "after rename"
    );
    assert_eq!(
        titles(&app, &q("globex")).await,
        vec!["Go Engineer", "Rust Wizard"],
        "after rename"
    );
    let listed = search(&app, all).await;
    for item in listed.body["items"].as_array().unwrap() {
        assert_eq!(
            item["company"],
            json!({"id": c, "name": "Globex"}),
            "after rename"
        );
    }

    // delete
    assert_eq!(warm(&app, all).await, vec!["Go Engineer", "Rust Wizard"]);
    app.delete(&format!("/api/jobs/{j1}"), Some(&e.token))
        .await
        .expect(204);
    let after = search(&app, all).await;
    assert_eq!(titles_of(&after), vec!["Go Engineer"], "after delete");
    assert_eq!(after.body["total"], 1);
}

async fn write_then_search_loop_is_never_stale(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let listing: &[(&str, &str)] = &[("page_size", "100")];
    // (id, title, open) in the order the jobs were created.
    let mut jobs: Vec<(i64, String, bool)> = Vec::new();
    let expected = |jobs: &Vec<(i64, String, bool)>| -> Vec<String> {
        jobs.iter()
            .rev()
            .filter(|j| j.2)
            .map(|j| j.1.clone())
            .collect()
    };
    for i in 0..15 {
        assert_eq!(
            warm(&app, listing).await,
            expected(&jobs),
            "before write {i}"
        );
        match i % 6 {
            0 | 1 | 4 => {
                let title = format!("Loop {i}");
                let job = app.job(&e, c, json!({"title": title})).await;
                jobs.push((id_of(&job), title, true));
            }
            2 => {
                let newest = jobs.iter_mut().rev().find(|j| j.2).expect("an open job");
                newest.1 = format!("Loop {i} renamed");
                app.patch(
                    &format!("/api/jobs/{}", newest.0),
                    Some(&e.token),
                    json!({"title": newest.1}),
                )
                .await
                .expect(200);
            }
            3 => {
                let oldest = jobs.iter_mut().find(|j| j.2).expect("an open job");
                oldest.2 = false;
                app.patch(
                    &format!("/api/jobs/{}", oldest.0),
                    Some(&e.token),
                    json!({"status": "closed"}),
                )
                .await
                .expect(200);
            }
            _ => {
                let newest = jobs.iter().rposition(|j| j.2).expect("an open job");
                let (id, _, _) = jobs.remove(newest);
                app.delete(&format!("/api/jobs/{id}"), Some(&e.token))
                    .await
                    .expect(204);
            }
        }
        let got = search(&app, listing).await;
        assert_eq!(titles_of(&got), expected(&jobs), "right after write {i}");
        assert_eq!(
            got.body["total"],
            expected(&jobs).len(),
            "right after write {i}"
        );
    }
    assert!(
        expected(&jobs).len() >= 3,
        "the loop leaves open jobs: {jobs:?}"
    );
}

// ------------------------------------------------------------------------------------------
// both databases

/// Companies and jobs that exercise words, plurals, Unicode, punctuation and every filter.
async fn seed(app: &TestApp) -> Vec<i64> {
    let e = app.user("employer").await;
    let mut companies = Vec::new();
    for name in ["Acme Robotics", "Globex Corporation", "Straße & Söhne"] {
        companies.push(app.company(&e, name).await);
    }
    let jobs = [
        (
            0,
            "Senior Rust Engineers",
            "Build distributed systems in Rust and Go",
            "Berlin",
            false,
            json!(90_000),
            json!(120_000),
            "full_time",
        ),
        (
            0,
            "Staff Engineer",
            "Lead the platform team; C++ and Python",
            "München",
            true,
            Value::Null,
            Value::Null,
            "full_time",
        ),
        (
            1,
            "Engineering Manager",
            "Manage engineers and people",
            "Zürich",
            false,
            json!(120_000),
            json!(150_000),
            "full_time",
        ),
        (
            1,
            "Data Analyst (Junior)",
            "SQL, dashboards & analytics",
            "Saint-Étienne",
            false,
            json!(40_000),
            json!(50_000),
            "part_time",
        ),
        (
            2,
            "Café Barista",
            "Make coffees near the station",
            "Paris 11e",
            false,
            Value::Null,
            json!(30_000),
            "part_time",
        ),
        (
            2,
            "Ingénieur logiciel",
            "Développement backend",
            "Lyon_1 (100%)",
            true,
            json!(50_000),
            json!(70_000),
            "contract",
        ),
        (
            0,
            "Node.js Developer",
            "TypeScript/Node.js services; on-call: yes",
            "Remote - EU",
            true,
            Value::Null,
            Value::Null,
            "contract",
        ),
        (
            1,
            "Intern: Machine Learning",
            "Research boxes, matches and classes",
            "İstanbul",
            false,
            json!(0),
            json!(20_000),
            "internship",
        ),
        (
            2,
            "हिंदी शिक्षक",
            "Teach Hindi",
            "Delhi",
            false,
            Value::Null,
            Value::Null,
            "part_time",
        ),
        (
            1,
            "Ταχυδρόμος ΟΔΟΣ",
            "Greek postal route",
            "Αθήνα",
            false,
            Value::Null,
            json!(35_000),
            "full_time",
        ),
        (
            0,
            "Closed Role Engineer",
            "Rust",
            "Berlin",
            true,
            Value::Null,
            Value::Null,
            "full_time",
        ),
    ];
    let mut ids = Vec::new();
    for (company, title, description, location, remote, salary_min, salary_max, kind) in jobs {
        let job = app
            .job(
                &e,
                companies[company],
                json!({
                    "title": title, "description": description, "location": location, "remote": remote,
                    "salary_min": salary_min, "salary_max": salary_max, "employment_type": kind,
                }),
            )
            .await;
        ids.push(id_of(&job));
    }
    let closed = *ids.last().unwrap();
    app.patch(
        &format!("/api/jobs/{closed}"),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    companies
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_databases_give_the_same_results() {
    let sqlite = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let postgres = TestApp::spawn(Backend::Postgres, CacheKind::Memory).await;
    let sqlite_companies = seed(&sqlite).await;
    let postgres_companies = seed(&postgres).await;
    let searches: Vec<Vec<(&'static str, String)>> = vec![
        vec![],
        vec![("q", "engineer".into())],
        vec![("q", "ENGINEERS".into())],
        vec![("q", "engineering".into())],
        vec![("q", "rust go".into())],
        vec![("q", "rust python".into())],
        vec![("q", "people".into())],
        vec![("q", "person".into())],
        vec![("q", "coffee".into())],
        vec![("q", "café".into())],
        vec![("q", "CAFÉ".into())],
        vec![("q", "cafe".into())],
        vec![("q", "ingénieur DÉVELOPPEMENT".into())],
        vec![("q", "node.js".into())],
        vec![("q", "c++".into())],
        vec![("q", "box match class".into())],
        vec![("q", "machine learnings".into())],
        vec![("q", "NEAR(station".into())],
        vec![("q", "rust*".into())],
        vec![("q", "\"staff".into())],
        vec![("q", "acme".into())],
        vec![("q", "straße".into())],
        vec![("q", "SÖHNE".into())],
        vec![("q", "globex analyst".into())],
        vec![("q", "on-call yes".into())],
        vec![("q", "shell:on-call".into())],
        vec![("q", "analytics".into())],
        vec![("q", "हिंदी".into())],
        vec![("q", "ह".into())],
        vec![("q", "ि rust".into())],
        vec![("q", "ΟΔΟΣ".into())],
        vec![("q", "οδος".into())],
        vec![("q", "οδοσ".into())],
        vec![("location", "mün".into())],
        vec![("location", "MÜNCHEN".into())],
        vec![("location", "ünch".into())],
        vec![("location", "ZÜR".into())],
        vec![("location", "étienne".into())],
        vec![("location", "%".into())],
        vec![("location", "_".into())],
        vec![("location", "remote - eu".into())],
        vec![("location", "αθήνα".into())],
        vec![("location", "İst".into())],
        vec![("remote", "true".into())],
        vec![("remote", "false".into()), ("q", "engineer".into())],
        vec![("salary_min", "100000".into())],
        vec![("salary_min", "0".into())],
        vec![("employment_type", "contract".into())],
        vec![("employment_type", "internship".into())],
        vec![("company_id", "COMPANY0".into())],
        vec![("company_id", "COMPANY2".into()), ("remote", "true".into())],
        vec![("page", "2".into()), ("page_size", "3".into())],
        vec![
            ("q", "engineer".into()),
            ("page", "2".into()),
            ("page_size", "1".into()),
        ],
    ];
    let mut differences = Vec::new();
    let mut non_empty = 0;
    for params in &searches {
        let resolve = |companies: &[i64]| -> Vec<(&'static str, String)> {
            params
                .iter()
                .map(|(k, v)| match v.strip_prefix("COMPANY") {
                    Some(n) => (*k, companies[n.parse::<usize>().unwrap()].to_string()),
                    None => (*k, v.clone()),
                })
                .collect()
        };
        let on_sqlite = resolve(&sqlite_companies);
        let on_postgres = resolve(&postgres_companies);
        let s = search(&sqlite, &pairs(&on_sqlite)).await;
        let p = search(&postgres, &pairs(&on_postgres)).await;
        let (st, pt) = (titles_of(&s), titles_of(&p));
        if !st.is_empty() {
            non_empty += 1;
        }
        if st != pt || s.body["total"] != p.body["total"] {
            differences.push(format!(
                "{}: sqlite {st:?} (total {}), postgres {pt:?} (total {})",
                jobs_url(&pairs(&on_sqlite)),
                s.body["total"],
                p.body["total"]
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "the databases disagree:\n{}",
        differences.join("\n")
    );
    assert!(
        non_empty >= 30,
        "most searches find something ({non_empty} did)"
    );
}

fn pairs<'a>(owned: &'a [(&'a str, String)]) -> Vec<(&'a str, &'a str)> {
    owned.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

// ------------------------------------------------------------------------------------------
// Redis outages

/// A TCP proxy in front of Redis that can drop every connection and refuse new ones.
struct RedisProxy {
    addr: std::net::SocketAddr,
    up: watch::Sender<bool>,
    connections: Arc<Mutex<Vec<JoinHandle<()>>>>,
    acceptor: JoinHandle<()>,
}

impl RedisProxy {
    async fn start() -> RedisProxy {
        let target = url::Url::parse(&redis_url()).expect("redis url");
        let target = format!(
            "{}:{}",
            target.host_str().expect("redis host"),
            target.port().unwrap_or(6379)
        );
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy addr");
        let (up, up_rx) = watch::channel(true);
        let connections: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let tracked = connections.clone();
        let acceptor = tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                if !*up_rx.borrow() {
                    // Down: the connection is closed as soon as it is accepted.
                    drop(inbound);
                    continue;
                }
                let mut up_rx = up_rx.clone();
                let target = target.clone();
                let pipe = tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = up_rx.wait_for(|up| !*up) => {}
                    }
                });
                tracked.lock().unwrap().push(pipe);
            }
        });
        RedisProxy {
            addr,
            up,
            connections,
            acceptor,
        }
    }

    fn url(&self) -> String {
        format!("redis://{}", self.addr)
    }

    /// Drops every open connection (returning once they are closed) and refuses new ones.
    async fn cut(&self) {
        self.up.send_replace(false);
        let open: Vec<JoinHandle<()>> = std::mem::take(&mut *self.connections.lock().unwrap());
        for pipe in open {
            let _ = pipe.await;
        }
    }

    fn restore(&self) {
        self.up.send_replace(true);
    }
}

impl Drop for RedisProxy {
    fn drop(&mut self) {
        self.acceptor.abort();
        for pipe in self.connections.lock().unwrap().drain(..) {
            pipe.abort();
        }
    }
}

/// Searches until one is answered from the cache again, checking every answer on the way.
async fn until_cached(app: &TestApp, params: &[(&str, &str)], expected: &[&str]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let r = search(app, params).await;
        assert_eq!(titles_of(&r), expected);
        if cache_of(&r) == "HIT" {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache was not used again within 20 s of Redis coming back"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_outage_falls_back_to_the_database_and_never_serves_stale_pages() {
    let proxy = RedisProxy::start().await;
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Redis,
        &[("REDIS_URL", &proxy.url())],
    )
    .await;
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({"title": "Before Outage"})).await;

    let first = search(&app, &[]).await;
    let second = search(&app, &[]).await;
    assert_eq!(cache_of(&first), "MISS");
    assert_eq!(cache_of(&second), "HIT");
    assert_eq!(first.text, second.text);
    assert_eq!(titles_of(&second), vec!["Before Outage"]);
    let ready = app.get("/readyz", None).await;
    assert_eq!(ready.expect(200)["checks"]["cache"], "ok");

    proxy.cut().await;
    let during = search(&app, &[]).await;
    assert_eq!(cache_of(&during), "MISS", "an unreachable cache is a miss");
    assert_eq!(titles_of(&during), vec!["Before Outage"]);
    assert_eq!(during.body["total"], 1);
    // The API stays ready: the cache is reported, not required.
    let ready = app.get("/readyz", None).await;
    let body = ready.expect(200);
    assert_eq!(body["status"], "ready");
    assert_eq!(body["checks"]["database"], "ok");
    assert_ne!(body["checks"]["cache"], "ok", "{}", ready.text);

    let job = app.job(&e, c, json!({"title": "During Outage"})).await;
    let during = search(&app, &[]).await;
    assert_eq!(cache_of(&during), "MISS");
    assert_eq!(titles_of(&during), vec!["During Outage", "Before Outage"]);
    let shown = app.get(&format!("/api/jobs/{}", id_of(&job)), None).await;
    assert_eq!(shown.expect(200)["title"], "During Outage");

    proxy.restore();
    let after = search(&app, &[]).await;
    assert_eq!(
        titles_of(&after),
        vec!["During Outage", "Before Outage"],
        "the page cached before the outage must not come back"
    );
    until_cached(&app, &[], &["During Outage", "Before Outage"]).await;

    // Writes after the outage invalidate as usual.
    app.job(&e, c, json!({"title": "After Outage"})).await;
    assert_eq!(
        titles(&app, &[]).await,
        vec!["After Outage", "During Outage", "Before Outage"]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_during_one_process_redis_outage_reaches_every_process_once_redis_is_back() {
    // Two processes sharing one database and one Redis key space; only the first loses Redis.
    let proxy = RedisProxy::start().await;
    let prefix = format!("{}:", unique("jbt-shared-"));
    let a = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Redis,
        &[("REDIS_URL", &proxy.url()), ("REDIS_KEY_PREFIX", &prefix)],
    )
    .await;
    let b = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Redis,
        &[
            ("DATABASE_URL", &a.database_url),
            ("REDIS_KEY_PREFIX", &prefix),
        ],
    )
    .await;
    let e = a.user("employer").await;
    let c = a.company(&e, "Acme").await;
    a.job(&e, c, json!({"title": "First"})).await;

    // A write through one process shows in the other's next search.
    assert_eq!(warm(&b, &[]).await, vec!["First"]);
    a.job(&e, c, json!({"title": "Second"})).await;
    assert_eq!(titles(&b, &[]).await, vec!["Second", "First"]);

    assert_eq!(warm(&b, &[]).await, vec!["Second", "First"]);
    proxy.cut().await;
    a.job(&e, c, json!({"title": "Third"})).await;
    // The writer itself never serves a page from before its write.
    assert_eq!(titles(&a, &[]).await, vec!["Third", "Second", "First"]);
    // The other process cannot learn of the write while the writer cannot reach Redis (the
    // documented limit); once Redis is back, the owed bump lands within about a second.
    proxy.restore();
    let start = std::time::Instant::now();
    loop {
        if titles(&b, &[]).await == vec!["Third", "Second", "First"] {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(5),
            "the owed bump must land soon after Redis is back"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(titles(&a, &[]).await, vec!["Third", "Second", "First"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_that_lost_its_keys_never_brings_back_an_old_page() {
    // Each process keeps the pages it has seen; a Redis that restarts empty (or evicts the
    // version) must not make an old version current again.
    let prefix = format!("{}:", unique("jbt-reset-"));
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Redis,
        &[("REDIS_KEY_PREFIX", &prefix)],
    )
    .await;
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let wipe = || async {
        let client = redis::Client::open(redis_url()).expect("redis url");
        let mut conn = client
            .get_multiplexed_async_connection()
            .await
            .expect("redis");
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query_async(&mut conn)
            .await
            .expect("KEYS");
        if !keys.is_empty() {
            let _: i64 = redis::cmd("DEL")
                .arg(&keys)
                .query_async(&mut conn)
                .await
                .expect("DEL");
        }
    };
    // The first page is cached before any version exists.
    wipe().await;
    app.job(&e, c, json!({"title": "First Job"})).await;
    wipe().await;
    until_cached(&app, &[], &["First Job"]).await;
    app.job(&e, c, json!({"title": "Second Job"})).await;
    until_cached(&app, &[], &["Second Job", "First Job"]).await;

    wipe().await;
    let after = search(&app, &[]).await;
    assert_eq!(
        titles_of(&after),
        vec!["Second Job", "First Job"],
        "a page from before the second job came back"
    );
    assert_eq!(cache_of(&after), "MISS");
    until_cached(&app, &[], &["Second Job", "First Job"]).await;
}
