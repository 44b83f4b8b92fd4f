//! `/docs` rendered by a real headless browser with no network but loopback: the page loads the
//! OpenAPI document from the API and shows every operation, with no error.

use crate::helpers::*;
use std::collections::BTreeSet;
use std::time::Duration;

/// The value of attribute `name` in one start tag.
fn attribute(tag: &str, name: &str) -> Option<String> {
    let start = tag.find(&format!(" {name}=\""))? + name.len() + 3;
    let end = tag[start..].find('"')? + start;
    Some(tag[start..end].replace("&amp;", "&"))
}

/// (method, path) of every element whose class list contains `operation`.
fn rendered_operations(dom: &str) -> BTreeSet<(String, String)> {
    let mut found = BTreeSet::new();
    let mut rest = dom;
    while let Some(open) = rest.find('<') {
        rest = &rest[open + 1..];
        let Some(close) = rest.find('>') else { break };
        let tag = &rest[..close];
        let is_operation =
            attribute(tag, "class").is_some_and(|c| c.split_whitespace().any(|c| c == "operation"));
        if is_operation
            && let (Some(m), Some(p)) = (attribute(tag, "data-method"), attribute(tag, "data-path"))
        {
            found.insert((m.to_ascii_lowercase(), p));
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docs_page_renders_every_operation_offline() {
    let chromium =
        std::env::var("JOBBOARD_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".to_string());
    assert!(
        std::path::Path::new(&chromium).exists(),
        "Chromium is required for this test ({chromium}); install it (scripts/services does) or set JOBBOARD_TEST_CHROMIUM"
    );
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let page = app.get("/docs", None).await;
    page.expect(200);
    assert!(
        page.header("content-type")
            .unwrap_or("")
            .starts_with("text/html")
    );
    let spec = app.get("/api/openapi.json", None).await;
    let spec = spec.expect(200).clone();

    let profile = tempfile::tempdir().expect("profile dir");
    let url = app.url("/docs");
    let mut cmd = tokio::process::Command::new(&chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
    ])
    .arg(format!("--user-data-dir={}", profile.path().display()))
    // Everything but loopback goes to a proxy that is not there: no internet for the page.
    .arg("--proxy-server=127.0.0.1:9")
    .arg("--proxy-bypass-list=<-loopback>;127.0.0.1")
    .arg("--virtual-time-budget=10000")
    .arg("--dump-dom")
    .arg(&url)
    .env("HOME", profile.path())
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::null())
    .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(120), cmd.output())
        .await
        .expect("Chromium finished within 120 s")
        .expect("Chromium runs");
    assert!(out.status.success(), "Chromium failed: {:?}", out.status);
    let dom = String::from_utf8_lossy(&out.stdout);

    assert!(
        !dom.contains("id=\"error\""),
        "the page shows an error: {dom}"
    );
    assert!(
        !dom.contains("Loading API description"),
        "the page never finished loading: {dom}"
    );
    let title = spec["info"]["title"].as_str().unwrap();
    assert!(
        dom.contains(&format!("<h1>{title}")),
        "the API title is shown: {dom}"
    );

    let rendered = rendered_operations(&dom);
    for (method, path) in [
        ("post", "/api/auth/register"),
        ("post", "/api/auth/token"),
        ("get", "/api/jobs"),
        ("post", "/api/jobs"),
        ("patch", "/api/jobs/{id}"),
        ("post", "/api/jobs/{id}/applications"),
        ("patch", "/api/applications/{id}"),
        ("get", "/api/applications/{id}/history"),
        ("delete", "/api/companies/{id}/members/{user_id}"),
        ("get", "/readyz"),
    ] {
        assert!(
            rendered.contains(&(method.to_string(), path.to_string())),
            "{method} {path} is rendered; rendered: {rendered:?}"
        );
    }
    // Exactly the operations of the document, each once.
    let mut documented = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            if ["get", "post", "put", "patch", "delete"].contains(&method.as_str()) {
                documented.insert((method.clone(), path.clone()));
            }
        }
    }
    assert_eq!(rendered, documented);
    // Parameters and responses are part of the rendering, e.g. the search's query parameters.
    for shown in ["employment_type", "salary_min", "page_size"] {
        assert!(dom.contains(shown), "{shown} is shown");
    }
}
