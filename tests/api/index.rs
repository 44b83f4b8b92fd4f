//! The search index behind `GET /api/jobs`: facets counted over every match, the cap on the
//! words of `q`, readiness, its metrics, and `jobboard search status|rebuild` with the folder
//! held by the running process.

use crate::each_store;
use crate::helpers::*;
use serde_json::{Value, json};

each_store!(
    facets_count_every_match_not_the_page,
    unknown_facets_are_422_naming_facets,
    q_has_at_most_32_distinct_words,
    readiness_and_metrics_report_the_index,
    search_commands_read_and_rebuild_the_index,
    a_search_waits_for_the_index_then_answers_503,
    an_index_missing_a_segment_file_is_rebuilt,
    an_index_with_a_truncated_segment_file_is_rebuilt,
    an_index_with_a_garbage_meta_json_is_rebuilt,
    an_index_folder_that_cannot_be_made_is_named,
    readiness_fails_while_the_index_cannot_be_written_and_recovers,
    an_index_folder_removed_under_the_process_is_made_again,
);

async fn facets_count_every_match_not_the_page(app: TestApp) {
    let e = app.user("employer").await;
    let acme = app.company(&e, "Acme").await;
    let globex = app.company(&e, "Globex").await;
    let initech = app.company(&e, "Initech").await;
    for (company, remote, kind) in [
        (acme, true, "full_time"),
        (acme, false, "full_time"),
        (acme, false, "contract"),
        (globex, true, "part_time"),
        (globex, false, "full_time"),
        (initech, false, "internship"),
    ] {
        app.job(
            &e,
            company,
            json!({"title": "Welder", "remote": remote, "employment_type": kind}),
        )
        .await;
    }
    // A closed job and a job the search does not match count nowhere.
    let closed = app.job(&e, initech, json!({"title": "Welder"})).await;
    let r = app
        .patch(
            &format!("/api/jobs/{}", closed["id"]),
            Some(&e.token),
            json!({"status": "closed"}),
        )
        .await;
    r.expect(200);
    app.job(&e, globex, json!({"title": "Painter"})).await;

    let url = "/api/jobs?q=welders&page_size=1&facets=employment_type,remote,company";
    let r = app.get(url, None).await;
    let body = r.expect(200);
    assert_eq!(body["total"], 6, "{}", r.text);
    assert_eq!(body["total_exact"], true);
    assert_eq!(body["items"].as_array().map(Vec::len), Some(1));
    assert_eq!(
        body["facets"],
        json!({
            "employment_type": {"full_time": 3, "part_time": 1, "contract": 1, "internship": 1},
            "remote": {"true": 2, "false": 4},
            "company": [
                {"id": acme, "name": "Acme", "count": 3},
                {"id": globex, "name": "Globex", "count": 2},
                {"id": initech, "name": "Initech", "count": 1},
            ],
        }),
        "{}",
        r.text
    );
    // The same from the cache; a filter narrows the facets with the matches.
    let again = app.get(url, None).await;
    assert_eq!(again.header("x-cache"), Some("HIT"));
    assert_eq!(again.text, r.text);
    let r = app
        .get("/api/jobs?q=welder&remote=true&facets=company", None)
        .await;
    let body = r.expect(200);
    assert_eq!(body["total"], 2);
    assert_eq!(
        body["facets"],
        json!({"company": [
            {"id": acme, "name": "Acme", "count": 1},
            {"id": globex, "name": "Globex", "count": 1},
        ]}),
        "only what was asked, ties by id: {}",
        r.text
    );
    // A rename shows in the next search's facets.
    app.patch(
        &format!("/api/companies/{acme}"),
        Some(&e.token),
        json!({"name": "Acme Welding"}),
    )
    .await
    .expect(200);
    let r = app.get("/api/jobs?q=welder&facets=company", None).await;
    assert_eq!(
        r.expect(200)["facets"]["company"][0]["name"],
        "Acme Welding"
    );
    // Without facets= there is no facets field; with no match, every count is 0.
    let r = app.get("/api/jobs?q=welder", None).await;
    assert!(r.expect(200).get("facets").is_none(), "{}", r.text);
    let r = app
        .get("/api/jobs?q=astronaut&facets=remote,company", None)
        .await;
    assert_eq!(
        r.expect(200)["facets"],
        json!({"remote": {"true": 0, "false": 0}, "company": []})
    );
}

async fn unknown_facets_are_422_naming_facets(app: TestApp) {
    for value in ["salary", "company,salary", "Company", "remote;company"] {
        let r = app.get(&format!("/api/jobs?facets={value}"), None).await;
        let p = r.expect_problem(422, "validation");
        assert!(p["errors"]["facets"].is_array(), "{value}: {}", r.text);
    }
    let r = app.get("/api/jobs?facets=remote,,company", None).await;
    r.expect(200);
}

async fn q_has_at_most_32_distinct_words(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let words: Vec<String> = (0..33).map(|i| format!("word{i}")).collect();
    app.job(&e, c, json!({"description": words[..32].join(" ")}))
        .await;
    let app = &app;
    let ask = |q: String| {
        let url = format!(
            "/api/jobs?sort=relevance&q={}",
            url::form_urlencoded::byte_serialize(q.as_bytes()).collect::<String>()
        );
        async move { app.get(&url, None).await }
    };
    let r = ask(words[..32].join(" ")).await;
    assert_eq!(r.expect(200)["total"], 1, "32 words are served");
    // Repeats and plurals of one word are one word.
    let r = ask(format!("{} word0s WORD0", words[..32].join(" "))).await;
    assert_eq!(r.expect(200)["total"], 1, "{}", r.text);
    let r = ask(words.join(" ")).await;
    let p = r.expect_problem(422, "validation");
    let message = p["errors"]["q"][0].as_str().unwrap_or_default();
    assert!(
        message.contains("32"),
        "the message names the cap: {}",
        r.text
    );
}

/// Polls `/readyz` until the search check is `ok` (the index follows the log from start).
async fn until_search_ready(app: &TestApp) -> Value {
    for _ in 0..100 {
        let r = app.get("/readyz", None).await;
        if r.status.as_u16() == 200 {
            return r.body.clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("/readyz never turned 200");
}

async fn readiness_and_metrics_report_the_index(app: TestApp) {
    let ready = until_search_ready(&app).await;
    assert_eq!(ready["checks"]["search"], "ok", "{ready}");
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({"title": "Welder"})).await;
    assert_eq!(
        app.get("/api/jobs?q=welder", None).await.expect(200)["total"],
        1
    );
    // The search returns once the index has applied the write; the round that applied it
    // records its time and the lag just after, so /metrics shows them within moments.
    let names = [
        "search_index_lag",
        "search_index_apply_seconds_bucket",
        "search_index_apply_seconds_count",
    ];
    let mut missing = Vec::new();
    for _ in 0..100 {
        let metrics = app.get("/metrics", None).await;
        missing = names
            .iter()
            .filter(|name| !metrics.text.lines().any(|l| l.starts_with(**name)))
            .collect();
        if missing.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        missing.is_empty(),
        "/metrics lacks {missing:?} 5 s after the index applied a write"
    );
    // The applied seq is what the searches see; a write is applied with no search asking.
    let applied = |text: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix("search_index_applied_seq ")?.parse().ok())
            .unwrap_or_else(|| panic!("no search_index_applied_seq in /metrics:\n{text}"))
    };
    let before = applied(&app.get("/metrics", None).await.text);
    assert!(before >= 1.0, "the job's change is applied: {before}");
    app.job(&e, c, json!({"title": "Painter"})).await;
    for _ in 0..100 {
        if applied(&app.get("/metrics", None).await.text) > before {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the index did not apply a write within 5 s when no search asked for it");
}

async fn search_commands_read_and_rebuild_the_index(app: TestApp) {
    until_search_ready(&app).await;
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    for title in ["Welder", "Painter", "Fitter"] {
        app.job(&e, c, json!({"title": title})).await;
    }
    let closed = app.job(&e, c, json!({"title": "Closed"})).await;
    app.patch(
        &format!("/api/jobs/{}", closed["id"]),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    // The running app's index has applied every change once a search has waited for it.
    app.get("/api/jobs", None).await.expect(200);
    let dir = app.vars["SEARCH_INDEX_DIR"].clone();

    let (code, out, err) = app.cli(&["search", "status"]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(&dir), "names the folder: {out}");
    assert!(out.contains("3 documents"), "{out}");
    assert!(out.contains("lag 0"), "{out}");

    // The folder is held by the running app: a rebuild there is refused, naming it and the
    // holder's pid (this test process).
    let (code, out, err) = app.cli(&["search", "rebuild"]).await;
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains(&dir), "{err}");
    assert!(
        err.contains(&format!("pid {}", std::process::id())),
        "names the holder: {err}"
    );

    // A second API process on the same folder is refused at start, with one line naming it.
    let (code, out, err) = app.cli(&["serve"]).await;
    assert_eq!(code, Some(1), "{out}{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("jobboard:"))
        .unwrap_or_else(|| panic!("an error line: {err}"));
    assert!(
        line.contains(&dir) && line.contains(&format!("pid {}", std::process::id())),
        "{line}"
    );

    // In a folder of its own, a rebuild reads the open jobs and the log.
    let other = app.search_dir("rebuilt");
    let mut cli = tokio::process::Command::new(env!("CARGO_BIN_EXE_jobboard"));
    let out = cli
        .args(["search", "rebuild"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(&app.vars)
        .env("SEARCH_INDEX_DIR", &other)
        .output()
        .await
        .expect("run jobboard");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("3 documents"), "{stdout}");
}

/// An index that cannot follow the log (its job reads fail) makes a search (and a feed) that
/// must see a newer change wait a second and answer 503 with `Retry-After`, never an older page; once
/// the log can be applied again, the search answers with the change.
async fn a_search_waits_for_the_index_then_answers_503(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let welder = app.job(&e, c, json!({"title": "Welder"})).await;
    assert_eq!(
        app.get("/api/jobs?q=welder", None).await.expect(200)["total"],
        1
    );
    app.exec("ALTER TABLE jobs RENAME TO jobs_away").await;
    app.exec(&format!(
        "INSERT INTO job_changes (job_id) VALUES ({})",
        welder["id"]
    ))
    .await;
    let started = std::time::Instant::now();
    let r = app.get("/api/jobs?q=painter", None).await;
    let waited = started.elapsed();
    r.expect_problem(503, "search-index-behind");
    assert_eq!(r.header("retry-after"), Some("1"), "{}", r.text);
    assert!(
        waited >= std::time::Duration::from_millis(900),
        "it waited for the index first: {waited:?}"
    );
    // A feed is the same search, and waits the same way.
    let r = app.get("/jobs.atom?q=painter", None).await;
    r.expect_problem(503, "search-index-behind");
    assert_eq!(r.header("retry-after"), Some("1"), "{}", r.text);
    app.exec("ALTER TABLE jobs_away RENAME TO jobs").await;
    let mut answered = None;
    for _ in 0..50 {
        let r = app.get("/api/jobs?q=welder", None).await;
        if r.status.as_u16() == 200 {
            answered = Some(r.body["total"].clone());
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(answered, Some(json!(1)), "the index follows the log again");
}

/// An index built by `jobboard search rebuild` in a folder of its own, from three open jobs
/// and a closed one; returns the folder and the open jobs' ids.
async fn built_index(app: &TestApp) -> (String, Vec<i64>) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let mut open = Vec::new();
    for title in ["Welder", "Painter", "Fitter"] {
        open.push(
            app.job(&e, c, json!({"title": title})).await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    let closed = app.job(&e, c, json!({"title": "Closed"})).await;
    app.patch(
        &format!("/api/jobs/{}", closed["id"]),
        Some(&e.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    let dir = app.search_dir("damaged");
    let (code, out, err) = search_cli(app, "rebuild", &dir).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains("3 documents"), "{out}");
    (dir, open)
}

/// `jobboard search <command>` on the index in `dir`.
async fn search_cli(app: &TestApp, command: &str, dir: &str) -> (Option<i32>, String, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_jobboard"))
        .args(["search", command])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(&app.vars)
        .env("SEARCH_INDEX_DIR", dir)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("run jobboard");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The segment files of the index in `dir` with this extension.
fn segment_files(dir: &str, extension: &str) -> Vec<std::path::PathBuf> {
    let files: Vec<_> = std::fs::read_dir(std::path::Path::new(dir).join("index"))
        .expect("the index folder")
        .map(|e| e.expect("an entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    assert!(!files.is_empty(), "no .{extension} file in {dir}");
    files
}

/// `jobboard search rebuild` repairs the damaged index in `dir` (saying why it could not be
/// read), and the index it leaves finds every open job.
async fn assert_repaired(app: &TestApp, dir: &str, open: &[i64]) {
    let (code, out, err) = search_cli(app, "rebuild", dir).await;
    assert_eq!(code, Some(0), "the rebuild repairs it: {out}{err}");
    assert!(out.contains("3 documents"), "{out}");
    assert!(
        err.contains("unreadable") && err.contains("rebuilding it from the database"),
        "the WARN says why: {err}"
    );
    let (code, out, err) = search_cli(app, "status", dir).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("3 documents") && out.contains("lag 0"),
        "{out}"
    );
    // Opened as the API opens it at start: every open job is found.
    let index = jobboard::search::SearchIndex::open(std::path::Path::new(dir)).expect("open");
    let found = index
        .search(&jobboard::store::JobSearch {
            ids: Some(open.to_vec()),
            ..Default::default()
        })
        .expect("search");
    let ids: Vec<i64> = found.rows.iter().map(|r| r.id).collect::<Vec<_>>();
    let mut ids = ids;
    ids.sort_unstable();
    assert_eq!(ids, open, "every open job is found");
}

async fn an_index_missing_a_segment_file_is_rebuilt(app: TestApp) {
    let (dir, open) = built_index(&app).await;
    for file in segment_files(&dir, "store") {
        std::fs::remove_file(file).unwrap();
    }
    assert_repaired(&app, &dir, &open).await;
}

async fn an_index_with_a_truncated_segment_file_is_rebuilt(app: TestApp) {
    let (dir, open) = built_index(&app).await;
    for file in segment_files(&dir, "idx") {
        let len = std::fs::metadata(&file).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&file)
            .unwrap()
            .set_len(len / 2)
            .unwrap();
    }
    assert_repaired(&app, &dir, &open).await;
}

async fn an_index_with_a_garbage_meta_json_is_rebuilt(app: TestApp) {
    let (dir, open) = built_index(&app).await;
    let meta = std::path::Path::new(&dir).join("index").join("meta.json");
    std::fs::write(&meta, b"{\"segments\": [garbage").unwrap();
    assert_repaired(&app, &dir, &open).await;
}

/// `SEARCH_INDEX_DIR` under a regular file cannot be made (not even by root): the rebuild and
/// the API's start exit 1 with a message naming the folder.
async fn an_index_folder_that_cannot_be_made_is_named(app: TestApp) {
    let file = app.search_dir("a-file");
    std::fs::write(&file, b"not a folder").unwrap();
    let dir = format!("{file}/search");
    let (code, out, err) = search_cli(&app, "rebuild", &dir).await;
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(
        err.contains("SEARCH_INDEX_DIR") && err.contains(&dir),
        "names the folder: {err}"
    );
    let mut serve = tokio::process::Command::new(env!("CARGO_BIN_EXE_jobboard"));
    let out = serve
        .args(["serve", "--no-migrate"])
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .envs(&app.vars)
        .env("SEARCH_INDEX_DIR", &dir)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), out)
        .await
        .expect("serve exits")
        .expect("run jobboard");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("jobboard:"))
        .unwrap_or_else(|| panic!("an error line: {err}"));
    assert!(
        line.contains("SEARCH_INDEX_DIR") && line.contains(&dir),
        "{line}"
    );
}

/// Polls `/readyz` (at most `within`) until `ok` says its answer is the one awaited; returns it.
async fn until_readyz(
    app: &TestApp,
    within: std::time::Duration,
    ok: impl Fn(&Resp) -> bool,
) -> Resp {
    let started = std::time::Instant::now();
    loop {
        let r = app.get("/readyz", None).await;
        if ok(&r) {
            return r;
        }
        assert!(
            started.elapsed() < within,
            "/readyz still {} {} after {within:?}",
            r.status,
            r.text
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// The index folder replaced by a file under the running API: the next write cannot be
/// applied, `/readyz` turns 503 with `checks.search` (well within the contract's 10 s), and
/// turns 200 again once the folder can be made, with the write searchable.
async fn readiness_fails_while_the_index_cannot_be_written_and_recovers(app: TestApp) {
    until_search_ready(&app).await;
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({"title": "Welder"})).await;
    app.get("/api/jobs?q=welder", None).await.expect(200);

    let folder = std::path::Path::new(&app.vars["SEARCH_INDEX_DIR"]).join("index");
    std::fs::remove_dir_all(&folder).unwrap();
    std::fs::write(&folder, b"in the way").unwrap();
    app.job(&e, c, json!({"title": "Plumber"})).await;
    let started = std::time::Instant::now();
    let r = until_readyz(&app, std::time::Duration::from_secs(10), |r| {
        r.status == 503
    })
    .await;
    assert_ne!(r.body["checks"]["search"], "ok", "{}", r.text);
    assert_eq!(r.body["checks"]["database"], "ok", "{}", r.text);
    eprintln!("/readyz 503 after {:?}", started.elapsed());
    // It stays 503 while the folder cannot be made.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    let r = app.get("/readyz", None).await;
    assert_eq!(r.status, 503, "{}", r.text);

    std::fs::remove_file(&folder).unwrap();
    until_readyz(&app, std::time::Duration::from_secs(20), |r| {
        r.status == 200
    })
    .await;
    for q in ["welder", "plumber"] {
        let r = app.get(&format!("/api/jobs?q={q}"), None).await;
        assert_eq!(r.expect(200)["total"], 1, "{q}: {}", r.text);
    }
    assert!(folder.join("meta.json").exists(), "the index is made again");
}

/// `SEARCH_INDEX_DIR` removed under the running API: the next write is applied to an index
/// made again from the database, and every open job is searchable.
async fn an_index_folder_removed_under_the_process_is_made_again(app: TestApp) {
    until_search_ready(&app).await;
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({"title": "Welder"})).await;
    app.get("/api/jobs?q=welder", None).await.expect(200);

    std::fs::remove_dir_all(&app.vars["SEARCH_INDEX_DIR"]).unwrap();
    app.job(&e, c, json!({"title": "Plumber"})).await;
    let started = std::time::Instant::now();
    loop {
        let r = app.get("/api/jobs?q=plumber", None).await;
        if r.status == 200 && r.body["total"] == 1 {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "the write is not searchable 20 s after the folder was removed: {} {}",
            r.status,
            r.text
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let r = app.get("/api/jobs?q=welder", None).await;
    assert_eq!(r.expect(200)["total"], 1, "{}", r.text);
    until_readyz(&app, std::time::Duration::from_secs(10), |r| {
        r.status == 200
    })
    .await;
}
