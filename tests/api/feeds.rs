//! The sitemap, `robots.txt` and the Atom feeds of searches (docs/api.md, "Public pages"), each
//! read by an independent reader (`feeds/read.py`: feedparser for the feeds, the sitemap
//! protocol's rules over Python's XML parser for the sitemaps): a board of 120 000 open jobs in
//! three files, what the sitemap leaves out, the feed's newest 50 matches and their stable ids,
//! hostile text, the filters a feed refuses, conditional requests, and answers never older than
//! the last write.

use crate::helpers::*;
use crate::pages::{BASE, board, fetch, hostile_description, log_change};
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use tokio::io::AsyncWriteExt;

macro_rules! on_each_store {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use crate::helpers::{Backend, CacheKind};
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(crate::pages::board(Backend::Sqlite, CacheKind::Memory, &[]).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(crate::pages::board(Backend::Postgres, CacheKind::Memory, &[]).await).await
            }
        }
    )*};
}

on_each_store!(
    the_sitemap_lists_every_open_job_in_files_of_50_000,
    a_feed_lists_the_newest_matches_with_stable_ids,
    hostile_text_leaves_a_feed_readable,
    a_feed_takes_the_filters_and_refuses_the_rest,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemap_and_feed_are_never_older_than_the_last_write() {
    let app = board(Backend::Postgres, CacheKind::Redis, &[]).await;
    never_older_than_the_last_write(app).await;
}

/// `read.py kind` over `doc`: what the independent reader made of it (it fails the test on a
/// document it finds malformed).
async fn read(kind: &str, doc: &str) -> Value {
    let python = std::env::var("JOBBOARD_TEST_FEEDS_PYTHON").expect(
        "JOBBOARD_TEST_FEEDS_PYTHON names a Python with feedparser (scripts/test installs one \
         from scripts/python/feeds.txt)",
    );
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/feeds/read.py");
    let mut child = tokio::process::Command::new(&python)
        .args([script, kind])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("running {python}: {e}"));
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(doc.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "the {kind} reader refused the document: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        &doc[..doc.len().min(2000)]
    );
    serde_json::from_slice(&out.stdout).expect("the reader's JSON")
}

fn id_of(job: &Value) -> i64 {
    job["id"].as_i64().expect("job id")
}

/// Adds `copies` open jobs to the database as copies of job `template` (through SQL: the API
/// would take minutes for a board this size). Their changes are not logged: the sitemap reads
/// the table, and the search never sees them.
async fn copy_job(app: &TestApp, template: i64, copies: i64) {
    let columns_sql = match app.backend {
        Backend::Sqlite => "SELECT group_concat(name, ',') FROM pragma_table_info('jobs') \
                            WHERE name <> 'id'"
            .to_string(),
        Backend::Postgres => "SELECT string_agg(column_name, ',' ORDER BY ordinal_position) \
                              FROM information_schema.columns WHERE table_schema = current_schema() \
                              AND table_name = 'jobs' AND column_name <> 'id' \
                              AND is_generated = 'NEVER' AND identity_generation IS NULL"
            .to_string(),
    };
    let columns = app
        .scalar_text(&columns_sql)
        .await
        .expect("the jobs' columns");
    let chosen = columns
        .split(',')
        .map(|c| format!("j.{c}"))
        .collect::<Vec<_>>()
        .join(",");
    let sql = match app.backend {
        Backend::Sqlite => format!(
            "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {copies}) \
             INSERT INTO jobs ({columns}) SELECT {chosen} FROM jobs j, g WHERE j.id = {template}"
        ),
        Backend::Postgres => format!(
            "INSERT INTO jobs ({columns}) SELECT {chosen} FROM jobs j, \
             generate_series(1, {copies}) g WHERE j.id = {template}"
        ),
    };
    app.exec(&sql).await;
}

async fn the_sitemap_lists_every_open_job_in_files_of_50_000(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = |title: &str| app.job(&employer, company, json!({"title": title}));
    let first = job("Senior Rust Engineer").await;
    let open = id_of(&first);
    let closed = id_of(&job("Closed role").await);
    app.patch(
        &format!("/api/jobs/{closed}"),
        Some(&employer.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    let expired = id_of(&job("Expired role").await);
    let pending = id_of(&job("Pending role").await);
    app.exec(&format!(
        "UPDATE jobs SET expires_at = '2020-01-01T00:00:00+00:00' WHERE id = {expired}; \
         UPDATE jobs SET status = 'pending_review' WHERE id = {pending};"
    ))
    .await;
    copy_job(&app, open, 119_999).await;
    log_change(&app, open).await;
    let open_ids: BTreeSet<i64> = {
        let top = app.scalar_i64("SELECT MAX(id) FROM jobs").await;
        (open..=top)
            .filter(|id| ![closed, expired, pending].contains(id))
            .collect()
    };
    assert_eq!(open_ids.len(), 120_000);

    let index = fetch(&app, "/sitemap.xml", &[]).await;
    assert_eq!(index.status, StatusCode::OK, "{}", index.text);
    assert_eq!(
        index.header("content-type"),
        Some("application/xml; charset=utf-8")
    );
    let read_index = read("sitemap", &index.text).await;
    assert_eq!(read_index["kind"], "sitemapindex");
    let files: Vec<String> = (1..=3)
        .map(|n| format!("{BASE}/sitemaps/jobs-{n}.xml"))
        .collect();
    assert_eq!(read_index["locs"], json!(files));

    let mut listed = BTreeSet::new();
    let mut sizes = Vec::new();
    for n in 1..=3 {
        let file = fetch(&app, &format!("/sitemaps/jobs-{n}.xml"), &[]).await;
        assert_eq!(file.status, StatusCode::OK, "file {n}");
        let read_file = read("sitemap", &file.text).await;
        assert_eq!(read_file["kind"], "urlset");
        let locs = read_file["locs"].as_array().unwrap();
        assert_eq!(read_file["lastmods"].as_array().unwrap().len(), locs.len());
        sizes.push(locs.len());
        for loc in locs {
            let loc = loc.as_str().unwrap();
            let key = loc
                .strip_prefix(&format!("{BASE}/jobs/"))
                .unwrap_or_else(|| panic!("{loc} is not a job page"));
            let id: i64 = key.split('-').next().unwrap().parse().unwrap();
            assert!(listed.insert(id), "job {id} listed twice");
        }
        if n == 1 {
            // The canonical address, and the job's last write as its date.
            assert_eq!(
                locs[0].as_str().unwrap(),
                format!("{BASE}/jobs/{open}-senior-rust-engineer")
            );
            let updated = first["updated_at"].as_str().unwrap();
            assert_eq!(
                read_file["lastmods"][0].as_str().unwrap(),
                format!("{}Z", &updated[..19]),
                "lastmod from updated_at"
            );
        }
    }
    assert_eq!(sizes, [50_000, 50_000, 20_000]);
    assert_eq!(listed, open_ids, "every open job once, and nothing else");

    // Past the last file, or not a file's name: 404.
    for path in [
        "/sitemaps/jobs-4.xml",
        "/sitemaps/jobs-0.xml",
        "/sitemaps/jobs-01.xml",
        "/sitemaps/other.xml",
    ] {
        assert_eq!(
            fetch(&app, path, &[]).await.status,
            StatusCode::NOT_FOUND,
            "{path}"
        );
    }
    // Conditional requests, of the index and of a file (a file's answer is streamed: its ETag
    // is known before its jobs are read).
    let etag = index.header("etag").expect("ETag").to_string();
    let again = fetch(&app, "/sitemap.xml", &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    let file = fetch(&app, "/sitemaps/jobs-2.xml", &[]).await;
    let file_etag = file.header("etag").expect("a file's ETag").to_string();
    let last_modified = file
        .header("last-modified")
        .expect("Last-Modified")
        .to_string();
    let again = fetch(
        &app,
        "/sitemaps/jobs-2.xml",
        &[("if-none-match", &file_etag)],
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    assert_eq!(again.header("etag"), Some(file_etag.as_str()));
    assert_eq!(again.text, "");
    let again = fetch(
        &app,
        "/sitemaps/jobs-2.xml",
        &[("if-modified-since", &last_modified)],
    )
    .await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
    let other = fetch(&app, "/sitemaps/jobs-3.xml", &[]).await;
    assert_ne!(other.header("etag"), Some(file_etag.as_str()));

    // robots.txt names the index.
    let robots = fetch(&app, "/robots.txt", &[]).await;
    assert_eq!(robots.status, StatusCode::OK);
    assert!(
        robots
            .text
            .contains(&format!("\nSitemap: {BASE}/sitemap.xml\n")),
        "{}",
        robots.text
    );
    assert!(robots.text.contains("Disallow: /api/"), "{}", robots.text);
}

/// `n` jobs titled `{title} {i}`, one after the other; their ids in order.
async fn jobs(app: &TestApp, employer: &User, company: i64, title: &str, n: usize) -> Vec<i64> {
    let mut ids = Vec::new();
    for i in 0..n {
        ids.push(id_of(
            &app.job(employer, company, json!({"title": format!("{title} {i}")}))
                .await,
        ));
    }
    ids
}

async fn feed(app: &TestApp, query: &str) -> Value {
    let page = fetch(app, &format!("/jobs.atom{query}"), &[]).await;
    assert_eq!(page.status, StatusCode::OK, "{query}: {}", page.text);
    assert_eq!(
        page.header("content-type"),
        Some("application/atom+xml; charset=utf-8")
    );
    read("feed", &page.text).await
}

fn entry_ids(feed: &Value) -> Vec<String> {
    feed["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_string())
        .collect()
}

async fn a_feed_lists_the_newest_matches_with_stable_ids(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme Robotics").await;
    let rust = jobs(&app, &employer, company, "Rust Engineer", 53).await;
    jobs(&app, &employer, company, "Welder", 2).await;

    let read = feed(&app, "?q=rust").await;
    assert_eq!(read["id"], format!("{BASE}/jobs.atom?q=rust"));
    assert!(
        read["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["rel"] == "self" && l["href"] == format!("{BASE}/jobs.atom?q=rust")),
        "{read}"
    );
    let newest: Vec<String> = rust
        .iter()
        .rev()
        .take(50)
        .map(|id| format!("{BASE}/jobs/{id}"))
        .collect();
    assert_eq!(
        entry_ids(&read),
        newest,
        "the newest 50 matches, newest first"
    );
    let top = &read["entries"][0];
    let last = rust.len() - 1;
    assert_eq!(
        top["title"],
        format!("Rust Engineer {last} – Acme Robotics")
    );
    assert_eq!(
        top["link"],
        format!("{BASE}/jobs/{}-rust-engineer-{last}", rust[last])
    );
    assert_eq!(top["author"], "Acme Robotics");
    assert_eq!(top["tags"], json!(["full_time"]));
    let summary = top["summary"].as_str().unwrap();
    assert!(
        summary.contains("Berlin") && summary.contains("Build the API"),
        "{summary}"
    );
    assert!(top["updated"].as_str().unwrap().ends_with('Z'));
    assert!(top["published"].as_str().is_some());
    assert_eq!(read["updated"], top["updated"]);

    // A new match goes first; the others keep their ids.
    let newer = jobs(&app, &employer, company, "Rust Lead", 1).await[0];
    let again = feed(&app, "?q=rust").await;
    let ids = entry_ids(&again);
    assert_eq!(ids[0], format!("{BASE}/jobs/{newer}"));
    assert_eq!(ids[1..], newest[..49]);

    // Every match of a filter, the id naming the filters in a fixed order; none at all.
    let acme = feed(
        &app,
        &format!("?employment_type=full_time&company_id={company}"),
    )
    .await;
    assert_eq!(
        acme["id"],
        format!("{BASE}/jobs.atom?company_id={company}&employment_type=full_time")
    );
    assert_eq!(entry_ids(&acme).len(), 50);
    let none = feed(&app, "?q=zzyzx").await;
    assert_eq!(entry_ids(&none), Vec::<String>::new());

    // The job page names its company's feed, and that feed reads.
    let page = fetch(&app, &format!("/jobs/{}", rust[0]), &[]).await;
    let page = fetch(
        &app,
        &format!(
            "/jobs/{}",
            page.header("location")
                .map(|l| l.trim_start_matches("./").to_string())
                .unwrap_or(rust[0].to_string())
        ),
        &[],
    )
    .await;
    let link = format!("{BASE}/jobs.atom?company_id={company}");
    assert!(
        page.text.contains(&format!(
            "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"Jobs at Acme Robotics\" href=\"{link}\">"
        )),
        "{}",
        page.text
    );
    assert_eq!(
        entry_ids(&feed(&app, &format!("?company_id={company}")).await).len(),
        50
    );

    // Conditional requests.
    let first = fetch(&app, "/jobs.atom?q=rust", &[]).await;
    let etag = first.header("etag").expect("ETag").to_string();
    let again = fetch(&app, "/jobs.atom?q=rust", &[("if-none-match", &etag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
}

async fn hostile_text_leaves_a_feed_readable(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme & <Sons>").await;
    let title = r#"]]></title><entry><id>x</id></entry> "Lead" 'Dev' <!-- & -->"#;
    let line = "]]></summary></entry></feed><!-- <b>\"quoted\" & 'single'</b> -->\n";
    let description = hostile_description(line);
    let id = id_of(
        &app.job(
            &employer,
            company,
            json!({"title": title, "description": description, "location": "<Berlin> & \"Mitte\""}),
        )
        .await,
    );
    // What rows from before the text rules may hold: controls XML cannot carry at all, and
    // bidirectional controls.
    app.exec(&format!(
        "UPDATE jobs SET title = title || '\u{1}\u{1b}\u{202E}' WHERE id = {id}; \
         UPDATE companies SET name = name || '\u{7}' WHERE id = {company};"
    ))
    .await;
    log_change(&app, id).await;

    let read = feed(&app, &format!("?company_id={company}")).await;
    assert_eq!(entry_ids(&read), [format!("{BASE}/jobs/{id}")]);
    let entry = &read["entries"][0];
    assert_eq!(entry["title"], format!("{title} – Acme & <Sons>"));
    assert_eq!(entry["author"], "Acme & <Sons>");
    let summary = entry["summary"].as_str().unwrap();
    assert!(summary.contains("<Berlin> & \"Mitte\""), "{summary}");
    assert!(
        summary.contains("]]></summary></entry></feed><!--"),
        "{summary}"
    );
}

async fn a_feed_takes_the_filters_and_refuses_the_rest(app: TestApp) {
    for (query, field) in [
        ("?page=2", "page"),
        ("?page_size=10", "page_size"),
        ("?sort=relevance", "sort"),
        ("?facets=remote", "facets"),
        ("?ids=1,2", "ids"),
        ("?after=abc", "after"),
        ("?remote=maybe", "remote"),
        ("?company_id=0", "company_id"),
        ("?employment_type=gig", "employment_type"),
        ("?posted_within_days=400", "posted_within_days"),
        ("?q=a&q=b", "q"),
    ] {
        let r = app.get(&format!("/jobs.atom{query}"), None).await;
        names_only(&r, query, field);
    }
    // Every filter at once is a feed.
    let read = feed(
        &app,
        "?q=engineer&location=berlin&remote=false&salary_min=1&employment_type=contract\
         &posted_within_days=7",
    )
    .await;
    assert_eq!(
        read["id"],
        format!(
            "{BASE}/jobs.atom?q=engineer&location=berlin&remote=false&salary_min=1\
             &employment_type=contract&posted_within_days=7"
        )
    );
}

async fn never_older_than_the_last_write(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let ids = jobs(&app, &employer, company, "Welder", 2).await;
    let query = format!("?company_id={company}");
    let sitemap_ids = |text: &str| -> Vec<i64> {
        text.split("<loc>")
            .skip(1)
            .map(|s| {
                let loc = &s[..s.find("</loc>").unwrap()];
                let key = loc.rsplit('/').next().unwrap();
                key.split('-').next().unwrap().parse().unwrap()
            })
            .collect()
    };
    assert_eq!(entry_ids(&feed(&app, &query).await).len(), 2);
    let first = fetch(&app, "/sitemaps/jobs-1.xml", &[]).await;
    assert_eq!(sitemap_ids(&first.text), ids);
    let first_etag = first.header("etag").expect("ETag").to_string();
    // Closed: gone from both at the next request, and the file's old ETag is not current.
    app.patch(
        &format!("/api/jobs/{}", ids[0]),
        Some(&employer.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    assert_eq!(
        entry_ids(&feed(&app, &query).await),
        [format!("{BASE}/jobs/{}", ids[1])]
    );
    let file = fetch(
        &app,
        "/sitemaps/jobs-1.xml",
        &[("if-none-match", &first_etag)],
    )
    .await;
    assert_eq!(file.status, StatusCode::OK);
    assert_eq!(sitemap_ids(&file.text), [ids[1]]);
    let closed_etag = file.header("etag").expect("ETag").to_string();
    // Renamed: the new title in both.
    app.patch(
        &format!("/api/jobs/{}", ids[1]),
        Some(&employer.token),
        json!({"title": "Pipe Fitter"}),
    )
    .await
    .expect(200);
    let read = feed(&app, &query).await;
    assert_eq!(read["entries"][0]["title"], "Pipe Fitter – Acme");
    let file = fetch(
        &app,
        "/sitemaps/jobs-1.xml",
        &[("if-none-match", &closed_etag)],
    )
    .await;
    assert_eq!(
        file.status,
        StatusCode::OK,
        "a rename is a new state of the file"
    );
    assert!(
        file.text
            .contains(&format!("/jobs/{}-pipe-fitter</loc>", ids[1])),
        "{}",
        file.text
    );
    // None open: an empty index, and no file.
    app.delete(&format!("/api/jobs/{}", ids[1]), Some(&employer.token))
        .await
        .expect(204);
    let index = fetch(&app, "/sitemap.xml", &[]).await;
    assert!(!index.text.contains("<sitemap>"), "{}", index.text);
    assert_eq!(
        fetch(&app, "/sitemaps/jobs-1.xml", &[]).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(entry_ids(&feed(&app, &query).await).len(), 0);
}
