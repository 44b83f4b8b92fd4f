//! Operations: health and readiness, Prometheus metrics, the OpenAPI document, request ids,
//! CORS and a clean stop.

use crate::each_backend;
use crate::helpers::*;
use serde_json::{Value, json};

each_backend!(
    health_and_readiness,
    metrics_count_requests_by_route_template,
    request_ids_are_set_and_echoed,
    stop_is_clean_when_idle,
);

async fn health_and_readiness(app: TestApp) {
    let r = app.get("/healthz", None).await;
    assert_eq!(r.expect(200), &json!({"status": "ok"}));
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("application/json")
    );

    let r = app.get("/readyz", None).await;
    let body = r.expect(200);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("application/json")
    );
    assert_eq!(body["status"], "ready", "{}", r.text);
    assert_eq!(body["checks"]["database"], "ok", "{}", r.text);
    assert_eq!(
        body["checks"]["cache"], "ok",
        "a healthy cache is reported: {}",
        r.text
    );
}

/// The value of the first sample line that starts with `name{` and has all `labels`.
fn sample(metrics: &str, name: &str, labels: &[&str]) -> Option<f64> {
    metrics
        .lines()
        .filter(|l| l.starts_with(&format!("{name}{{")))
        .find(|l| labels.iter().all(|label| l.contains(label)))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn metrics(app: &TestApp) -> String {
    let r = app.get("/metrics", None).await;
    r.expect(200);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("text/plain"),
        "Prometheus text format: {:?}",
        r.header("content-type")
    );
    r.text
}

async fn metrics_count_requests_by_route_template(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let unknown = unique("/api/no-such-thing-");

    app.get("/api/jobs/999999", None).await.expect(404);
    let before = metrics(&app).await;
    let counted_404 = [
        r#"method="GET""#,
        r#"route="/api/jobs/{id}""#,
        r#"status="404""#,
    ];
    let before_404 = sample(&before, "http_requests_total", &counted_404)
        .expect("a 404 on /api/jobs/{id} is counted");

    app.get("/api/jobs/1", None).await;
    app.get("/api/jobs/999999", None).await.expect(404);
    app.get(&format!("/api/jobs/{}", job["id"]), None)
        .await
        .expect(200);
    app.get(&unknown, None).await.expect(404);
    let query = format!("/api/jobs?q={}", unique("word"));
    app.get(&query, None).await.expect(200);
    app.get(&query, None).await.expect(200);

    let text = metrics(&app).await;
    let after_404 = sample(&text, "http_requests_total", &counted_404).unwrap();
    assert!(
        after_404 >= before_404 + 1.0,
        "404s counted: {before_404} then {after_404}"
    );
    assert!(
        sample(
            &text,
            "http_requests_total",
            &[
                r#"method="GET""#,
                r#"route="/api/jobs/{id}""#,
                r#"status="200""#
            ]
        )
        .is_some_and(|v| v >= 1.0),
        "200s on /api/jobs/{{id}} are counted"
    );
    assert!(
        sample(
            &text,
            "http_requests_total",
            &[
                r#"method="POST""#,
                r#"route="/api/jobs""#,
                r#"status="201""#
            ]
        )
        .is_some_and(|v| v >= 1.0)
    );
    assert!(
        sample(
            &text,
            "http_request_duration_seconds_bucket",
            &[r#"route="/api/jobs/{id}""#, r#"le="+Inf""#]
        )
        .is_some_and(|v| v >= 3.0),
        "latency histogram per route template"
    );
    assert!(
        sample(
            &text,
            "http_request_duration_seconds_count",
            &[r#"route="/api/jobs/{id}""#]
        )
        .is_some()
    );
    assert!(
        sample(&text, "search_cache_requests_total", &[r#"result="miss""#])
            .is_some_and(|v| v >= 1.0)
    );
    assert!(
        sample(&text, "search_cache_requests_total", &[r#"result="hit""#])
            .is_some_and(|v| v >= 1.0)
    );
    assert!(
        text.contains("# TYPE http_requests_total counter"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE http_request_duration_seconds histogram"),
        "{text}"
    );

    // Labels are templates: neither concrete ids nor unknown paths become series of their own.
    assert!(!text.contains(r#"route="/api/jobs/999999""#), "{text}");
    assert!(
        !text.contains(&format!(r#"route="/api/jobs/{}""#, job["id"])),
        "{text}"
    );
    assert!(
        !text.contains(&unknown),
        "an unknown path is not a label: {text}"
    );
}

async fn request_ids_are_set_and_echoed(app: TestApp) {
    let a = app.get("/healthz", None).await;
    let b = app.get("/api/jobs", None).await;
    let c = app.get("/api/nothing-here", None).await;
    let d = app.get("/api/me", None).await;
    let mut ids = Vec::new();
    for r in [&a, &b, &c, &d] {
        let id = r
            .header("x-request-id")
            .expect("every response has X-Request-Id");
        assert!(!id.trim().is_empty());
        ids.push(id.to_string());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 4, "each request gets its own id");

    for path in ["/healthz", "/api/jobs", "/api/nothing-here", "/api/me"] {
        let res = app
            .client
            .get(app.url(path))
            .header("x-request-id", "trace-abc-123")
            .send()
            .await
            .expect("request");
        assert_eq!(
            res.headers()
                .get("x-request-id")
                .and_then(|v| v.to_str().ok()),
            Some("trace-abc-123"),
            "{path}"
        );
    }
}

async fn stop_is_clean_when_idle(mut app: TestApp) {
    app.get("/healthz", None).await.expect(200);
    app.get("/api/jobs", None).await.expect(200);
    assert!(app.stop().await, "an idle server stops cleanly");
    let after = reqwest::Client::new().get(app.url("/healthz")).send().await;
    assert!(after.is_err(), "nothing answers after the stop: {after:?}");
}

/// Every route of the contract, with its method.
const ROUTES: &[(&str, &str)] = &[
    ("post", "/api/auth/register"),
    ("post", "/api/auth/token"),
    ("get", "/api/me"),
    ("post", "/api/me/password"),
    ("delete", "/api/me"),
    ("post", "/api/companies"),
    ("get", "/api/companies"),
    ("get", "/api/companies/{id}"),
    ("patch", "/api/companies/{id}"),
    ("delete", "/api/companies/{id}"),
    ("get", "/api/companies/{id}/members"),
    ("post", "/api/companies/{id}/members"),
    ("delete", "/api/companies/{id}/members/{user_id}"),
    ("post", "/api/jobs"),
    ("get", "/api/jobs"),
    ("get", "/api/jobs/{id}"),
    ("patch", "/api/jobs/{id}"),
    ("delete", "/api/jobs/{id}"),
    ("post", "/api/jobs/{id}/applications"),
    ("get", "/api/applications"),
    ("get", "/api/applications/{id}"),
    ("patch", "/api/applications/{id}"),
    ("post", "/api/applications/{id}/withdraw"),
    ("delete", "/api/applications/{id}"),
    ("get", "/api/applications/{id}/history"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/api/openapi.json"),
    ("get", "/docs"),
];

/// Routes anyone may call without a token.
const PUBLIC: &[(&str, &str)] = &[
    ("post", "/api/auth/register"),
    ("post", "/api/auth/token"),
    ("get", "/api/jobs"),
    ("get", "/api/jobs/{id}"),
    ("get", "/api/companies"),
    ("get", "/api/companies/{id}"),
    ("get", "/healthz"),
    ("get", "/readyz"),
    ("get", "/metrics"),
    ("get", "/api/openapi.json"),
    ("get", "/docs"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn openapi_document_describes_every_route() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let r = app.get("/api/openapi.json", None).await;
    let doc = r.expect(200);
    assert!(
        r.header("content-type")
            .unwrap_or("")
            .starts_with("application/json")
    );
    let version = doc["openapi"].as_str().expect("openapi version");
    assert!(version.starts_with("3.1"), "OpenAPI 3.1, got {version}");
    assert!(doc["info"]["title"].is_string() && doc["info"]["version"].is_string());

    let scheme = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(scheme["type"], "http", "{scheme}");
    assert_eq!(
        scheme["scheme"].as_str().map(str::to_ascii_lowercase),
        Some("bearer".into())
    );

    let mut missing = Vec::new();
    for (method, path) in ROUTES {
        let op = &doc["paths"][*path][*method];
        if !op.is_object() {
            missing.push(format!("{} {path}", method.to_uppercase()));
            continue;
        }
        let responses = op["responses"].as_object().map(|r| r.len()).unwrap_or(0);
        assert!(responses > 0, "{method} {path} documents its responses");
        // Every path parameter is declared.
        for name in path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        {
            let declared = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .chain(
                    doc["paths"][*path]["parameters"]
                        .as_array()
                        .into_iter()
                        .flatten(),
                )
                .any(|p| p["name"] == name && p["in"] == "path");
            assert!(
                declared,
                "{method} {path} declares its path parameter {name}"
            );
        }
        let secured = op["security"]
            .as_array()
            .is_some_and(|s| s.iter().any(|req| req.get("bearer").is_some()));
        if PUBLIC.contains(&(*method, *path)) {
            let optional = op["security"]
                .as_array()
                .is_some_and(|s| s.iter().any(|req| req == &json!({})));
            assert!(!secured || optional, "{method} {path} is public");
        } else {
            assert!(secured, "{method} {path} needs the bearer token: {op}");
        }
    }
    assert!(
        missing.is_empty(),
        "operations missing from the OpenAPI document: {missing:?}"
    );

    // The problem body is described.
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    assert!(
        schemas.values().any(|s| {
            let props = &s["properties"];
            ["type", "title", "status", "detail"]
                .iter()
                .all(|p| props.get(*p).is_some())
        }),
        "a problem details schema"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cors_allows_only_configured_origins() {
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Memory,
        &[(
            "CORS_ALLOWED_ORIGINS",
            "https://app.example, https://admin.example",
        )],
    )
    .await;
    let preflight = |origin: &'static str, method: &'static str, headers: &'static str| {
        app.client
            .request(reqwest::Method::OPTIONS, app.url("/api/jobs"))
            .header("origin", origin)
            .header("access-control-request-method", method)
            .header("access-control-request-headers", headers)
            .send()
    };
    for origin in ["https://app.example", "https://admin.example"] {
        let res = preflight(origin, "POST", "authorization,content-type")
            .await
            .expect("preflight");
        assert!(res.status().is_success(), "{}", res.status());
        let h = res.headers();
        assert_eq!(
            h.get("access-control-allow-origin")
                .and_then(|v| v.to_str().ok()),
            Some(origin)
        );
        let methods = h
            .get("access-control-allow-methods")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_uppercase();
        for m in ["GET", "POST", "PATCH", "DELETE"] {
            assert!(methods.contains(m), "allowed methods {methods:?} lack {m}");
        }
        let headers = h
            .get("access-control-allow-headers")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        assert!(
            headers.contains("authorization") && headers.contains("content-type"),
            "{headers:?}"
        );
    }

    for origin in [
        "https://evil.example",
        "https://app.example.evil.example",
        "http://app.example",
    ] {
        let res = preflight(origin, "GET", "authorization")
            .await
            .expect("preflight");
        assert!(
            res.headers().get("access-control-allow-origin").is_none(),
            "{origin} is not allowed: {:?}",
            res.headers()
        );
    }

    // Actual requests: the allowed origin can read answers (errors too) and the cache header.
    let res = app
        .client
        .get(app.url("/api/jobs"))
        .header("origin", "https://app.example")
        .send()
        .await
        .expect("request");
    assert_eq!(
        res.headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("https://app.example")
    );
    let exposed = res
        .headers()
        .get("access-control-expose-headers")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    assert!(
        exposed.contains("x-cache"),
        "X-Cache is readable: {exposed:?}"
    );
    let res = app
        .client
        .get(app.url("/api/nothing-here"))
        .header("origin", "https://app.example")
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 404);
    assert_eq!(
        res.headers()
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some("https://app.example")
    );
    let res = app
        .client
        .get(app.url("/api/jobs"))
        .header("origin", "https://evil.example")
        .send()
        .await
        .expect("request");
    assert!(res.headers().get("access-control-allow-origin").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_cors_without_configured_origins() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    let res = app
        .client
        .request(reqwest::Method::OPTIONS, app.url("/api/jobs"))
        .header("origin", "https://app.example")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .expect("preflight");
    assert!(
        res.headers().get("access-control-allow-origin").is_none(),
        "{:?}",
        res.headers()
    );
    let res = app
        .client
        .get(app.url("/api/jobs"))
        .header("origin", "https://app.example")
        .send()
        .await
        .expect("request");
    assert!(res.headers().get("access-control-allow-origin").is_none());
    let _: Value = res.json().await.expect("json");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_can_move_to_their_own_listener() {
    let app = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Memory,
        &[("METRICS_ADDR", "127.0.0.1:0")],
    )
    .await;
    // With METRICS_ADDR set, the API listener does not serve /metrics.
    app.get("/metrics", None)
        .await
        .expect_problem(404, "not-found");
    app.get("/healthz", None).await.expect(200);
}

/// The metric names a PromQL expression reads: identifiers outside label matchers, ranges,
/// strings and `by (…)` groups that are not functions, keywords or numbers.
pub fn promql_metrics(expr: &str) -> Vec<String> {
    let mut cleaned = String::new();
    let mut depth_brace = 0;
    let mut depth_bracket = 0;
    let mut in_string = false;
    for c in expr.chars() {
        match c {
            '"' => in_string = !in_string,
            '{' if !in_string => depth_brace += 1,
            '}' if !in_string => depth_brace -= 1,
            '[' if !in_string => depth_bracket += 1,
            ']' if !in_string => depth_bracket -= 1,
            _ if in_string || depth_brace > 0 || depth_bracket > 0 => {}
            _ => cleaned.push(c),
        }
        if matches!(c, '{' | '}' | '[' | ']' | '"') {
            cleaned.push(' ');
        }
    }
    // `by (route, status)` and `without (…)` name labels, not metrics.
    let mut words = Vec::new();
    let mut rest = cleaned.as_str();
    while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
        let tail = &rest[start..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        let word = &tail[..end];
        let after = tail[end..].trim_start();
        let preceded_by_digit = start > 0 && rest.as_bytes()[start - 1].is_ascii_digit();
        if matches!(word, "by" | "without") {
            // Skip the label list.
            let close = after.find(')').map(|i| i + 1).unwrap_or(after.len());
            rest = &after[close..];
            continue;
        }
        // Aggregations may put `by (…)` between their name and their parenthesis.
        let keyword = matches!(
            word,
            "and"
                | "or"
                | "unless"
                | "on"
                | "ignoring"
                | "group_left"
                | "group_right"
                | "bool"
                | "offset"
                | "e"
                | "sum"
                | "avg"
                | "min"
                | "max"
                | "count"
                | "group"
                | "stddev"
                | "stdvar"
                | "topk"
                | "bottomk"
                | "quantile"
                | "count_values"
        );
        if !after.starts_with('(') && !keyword && !preceded_by_digit {
            words.push(word.to_string());
        }
        rest = &tail[end..];
    }
    words
}

#[test]
fn promql_metrics_finds_the_metric_names_only() {
    assert_eq!(
        promql_metrics(
            "histogram_quantile(0.99, sum by (le, route) (rate(http_request_duration_seconds_bucket{route=~\"/a\"}[5m]))) / clamp_min(sum(rate(x_total[5m])), 1e-9)"
        ),
        vec!["http_request_duration_seconds_bucket", "x_total"]
    );
}

/// Every query of `deploy/grafana/jobboard.json` names a metric that `exported` (a `/metrics`
/// page after traffic) holds, so the dashboard cannot drift from the code.
pub fn dashboard_reads_only_exported_metrics(exported: &str) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/grafana/jobboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let series: std::collections::BTreeSet<&str> = exported
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap())
        .collect();
    let mut queries = 0;
    let mut missing = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        for target in panel["targets"].as_array().expect("targets") {
            let expr = target["expr"].as_str().expect("expr");
            queries += 1;
            let names = promql_metrics(expr);
            assert!(!names.is_empty(), "{expr} reads no metric");
            for name in names {
                if !series.contains(name.as_str()) {
                    missing.push(format!("{} ({})", name, panel["title"]));
                }
            }
        }
    }
    assert!(queries >= 10, "the dashboard has its panels: {queries}");
    assert!(
        missing.is_empty(),
        "the dashboard reads metrics /metrics does not export: {missing:?}\nexported: {series:?}"
    );
}

/// Each application counts its own requests only: another application in the same process (the
/// tests run many at once, each on a runtime of its own) does not show in its `/metrics`, so a
/// test cannot pass on another test's counts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_of_one_app_count_only_its_own_requests() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    app.get("/healthz", None).await.expect(200);
    // Another application, on a runtime of its own, answers three 404s on /api/jobs/{id}.
    std::thread::spawn(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let other = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
            for _ in 0..3 {
                other.get("/api/jobs/999999", None).await.expect(404);
            }
            assert!(
                sample(
                    &metrics(&other).await,
                    "http_requests_total",
                    &[r#"route="/api/jobs/{id}""#, r#"status="404""#]
                )
                .is_some_and(|n| n >= 3.0),
                "the other application counts its own"
            );
        });
    })
    .join()
    .unwrap();
    let text = metrics(&app).await;
    assert_eq!(
        sample(
            &text,
            "http_requests_total",
            &[r#"route="/api/jobs/{id}""#, r#"status="404""#]
        ),
        None,
        "this application served no 404 on /api/jobs/{{id}}:\n{text}"
    );
}

/// Readiness asks for a database that can start a write, within the check's second: on SQLite,
/// one whose write lock another connection holds (as a connection left inside a transaction
/// did, every write then failing) is not ready, and is again once the lock is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_needs_a_database_that_can_start_a_write() {
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    app.get("/readyz", None).await.expect(200);
    let mut holder = <sqlx::SqliteConnection as sqlx::Connection>::connect(&app.database_url)
        .await
        .unwrap();
    sqlx::raw_sql("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let r = app.get("/readyz", None).await;
    let body = r.expect(503);
    assert_eq!(body["checks"]["database"], "timeout", "{}", r.text);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    sqlx::raw_sql("ROLLBACK")
        .execute(&mut holder)
        .await
        .unwrap();
    let r = app.get("/readyz", None).await;
    assert_eq!(r.expect(200)["checks"]["database"], "ok", "{}", r.text);
}
