//! The security headers of every answer (the OWASP REST Security Cheat Sheet): each class of
//! route, public read, authenticated, operator, page and problem, held to its headers.

use crate::each_store;
use crate::helpers::*;
use reqwest::Method;
use serde_json::json;

each_store!(every_class_of_answer_carries_its_headers);

/// What every answer carries.
fn common(what: &str, r: &Resp) {
    assert_eq!(
        r.header("x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(r.header("x-frame-options"), Some("DENY"), "{what}");
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "{what}");
    let csp = r.header("content-security-policy").unwrap_or("");
    assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp:?}");
    assert!(!csp.contains("unsafe-inline"), "{what}: {csp:?}");
    assert!(!csp.contains("unsafe-eval"), "{what}: {csp:?}");
}

fn no_store(what: &str, r: &Resp) {
    assert_eq!(r.header("cache-control"), Some("no-store"), "{what}");
}

async fn every_class_of_answer_carries_its_headers(app: TestApp) {
    let s = app.scenario().await;
    let op = app.operator().await;
    let employer = Some(s.employer.token.as_str());

    // Public reads: the common headers; shared caches may keep them.
    for path in [
        "/api/jobs?q=engineer".to_string(),
        format!("/api/jobs/{}", s.job_id),
        "/healthz".to_string(),
        "/api/openapi.json".to_string(),
    ] {
        let r = app.get(&path, None).await;
        r.expect(200);
        common(&path, &r);
        assert_eq!(
            r.header("content-security-policy"),
            Some("default-src 'none'; frame-ancestors 'none'"),
            "{path}: an answer that is no page loads nothing"
        );
        assert_ne!(r.header("cache-control"), Some("no-store"), "{path}");
    }

    // Authenticated answers, and the one that hands out a token: never stored.
    for path in [
        "/api/me".to_string(),
        format!("/api/applications/{}", s.application_id),
        format!("/api/jobs/{}", s.job_id),
    ] {
        let r = app.get(&path, employer).await;
        r.expect(200);
        common(&path, &r);
        no_store(&path, &r);
    }
    let r = app
        .post(
            "/api/auth/token",
            None,
            json!({"email": s.employer.email, "password": s.employer.password}),
        )
        .await;
    r.expect(200);
    common("token", &r);
    no_store("token", &r);

    // Operator answers, refused or not.
    for token in [Some(op.token.as_str()), None, employer] {
        let r = app.get("/api/admin/queue", token).await;
        common("/api/admin/queue", &r);
        no_store("/api/admin/queue", &r);
    }

    // Pages and their assets: their own policy, which lets them load only themselves.
    for (path, kind) in [
        ("/docs", "text/html"),
        ("/docs/docs.css", "text/css"),
        ("/docs/docs.js", "text/javascript"),
        ("/console", "text/html"),
        ("/console/console.css", "text/css"),
        ("/console/console.js", "text/javascript"),
    ] {
        let r = app.get(path, None).await;
        r.expect(200);
        common(path, &r);
        assert!(
            r.header("content-type").unwrap_or("").starts_with(kind),
            "{path}"
        );
        let csp = r.header("content-security-policy").unwrap();
        for directive in [
            "default-src 'none'",
            "script-src 'self'",
            "style-src 'self'",
        ] {
            assert!(csp.contains(directive), "{path}: {csp}");
        }
    }

    // The unsubscribe link's page: no script or style at all, a form posting back to itself,
    // never stored (its address holds a credential).
    let link = format!(
        "/api/unsubscribe/{}",
        jobboard::unsubscribe::token(
            b"test-secret-test-secret-test-secret",
            jobboard::unsubscribe::Target::Digest {
                user_id: s.employer.id
            },
        )
    );
    let r = app.get(&link, None).await;
    r.expect(200);
    common("unsubscribe page", &r);
    no_store("unsubscribe page", &r);
    assert_eq!(
        r.header("content-security-policy"),
        Some("default-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
    );

    // Problem answers, from the handlers, the extractors and the framework alike.
    let unknown_route = app.get("/api/nothing", None).await;
    let bad_token = app.get("/api/me", Some("not-a-token")).await;
    let invalid = app.get("/api/jobs?page=0", None).await;
    let not_allowed = app.send(Method::PUT, "/api/jobs", None, None).await;
    let forbidden = app
        .post(
            "/api/companies",
            Some(&s.candidate.token),
            json!({"name": "X"}),
        )
        .await;
    for (what, r, status) in [
        ("unknown route", &unknown_route, 404),
        ("bad token", &bad_token, 401),
        ("invalid query", &invalid, 422),
        ("method not allowed", &not_allowed, 405),
        ("forbidden", &forbidden, 403),
    ] {
        assert_eq!(r.status.as_u16(), status, "{what}: {}", r.text);
        assert_eq!(r.header("content-type"), Some("application/problem+json"));
        common(what, r);
    }
    no_store("bad token", &bad_token);
    no_store("forbidden", &forbidden);
}

/// One answer read off a raw connection: its head's lines and its body (by `Content-Length`).
async fn read_answer(stream: &mut tokio::net::TcpStream) -> (Vec<String>, String) {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 4096];
    let end = loop {
        if let Some(at) = bytes.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(
            n > 0,
            "the connection closed before a whole head: {bytes:?}"
        );
        bytes.extend_from_slice(&chunk[..n]);
    };
    let head: Vec<String> = String::from_utf8_lossy(&bytes[..end])
        .split("\r\n")
        .map(str::to_string)
        .collect();
    let length: usize = head
        .iter()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0);
    let mut body = bytes[end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the connection closed inside the body");
        body.extend_from_slice(&chunk[..n]);
    }
    (head, String::from_utf8_lossy(&body[..length]).into_owned())
}

/// The answers the HTTP server makes itself, before any route runs (a URI longer than it
/// reads, a request it cannot parse), carry the same headers as every other answer, and a
/// problem body, also on a connection that served other requests first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_own_refusals_carry_the_headers_too() {
    use tokio::io::AsyncWriteExt;
    let app = TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await;
    // Longer than any URI an HTTP client library builds (they stop at 64 KiB, as the server).
    let long = format!("/api/jobs?q={}", "x".repeat(70_000));
    // On one connection: an ordinary request, then the refused one.
    let mut stream = tokio::net::TcpStream::connect(app.addr)
        .await
        .expect("connect");
    for (request, status) in [
        (
            "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n".to_string(),
            200,
        ),
        (format!("GET {long} HTTP/1.1\r\nHost: test\r\n\r\n"), 414),
    ] {
        stream.write_all(request.as_bytes()).await.expect("write");
        let (head, body) = read_answer(&mut stream).await;
        assert!(
            head[0].starts_with(&format!("HTTP/1.1 {status} ")),
            "{head:?}"
        );
        let has = |name: &str, value: &str| {
            head.iter().any(|l| {
                l.split_once(':')
                    .is_some_and(|(n, v)| n.eq_ignore_ascii_case(name) && v.trim() == value)
            })
        };
        for (name, value) in [
            ("x-content-type-options", "nosniff"),
            ("x-frame-options", "DENY"),
            ("referrer-policy", "no-referrer"),
            (
                "content-security-policy",
                "default-src 'none'; frame-ancestors 'none'",
            ),
        ] {
            assert!(has(name, value), "{status}: {name}: {value} in {head:?}");
        }
        if status == 414 {
            assert!(has("content-type", "application/problem+json"), "{head:?}");
            let problem: serde_json::Value = serde_json::from_str(&body).expect(&body);
            assert_eq!(problem["status"], json!(414), "{body}");
            assert_eq!(problem["type"], json!("/problems/uri-too-long"), "{body}");
        }
    }

    // A request the server cannot parse at all: 400, with the headers.
    let mut stream = tokio::net::TcpStream::connect(app.addr)
        .await
        .expect("connect");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: test\r\nno colon here\r\n\r\n")
        .await
        .expect("write");
    let (head, body) = read_answer(&mut stream).await;
    assert!(head[0].starts_with("HTTP/1.1 400 "), "{head:?}");
    for name in [
        "x-content-type-options: nosniff",
        "x-frame-options: DENY",
        "referrer-policy: no-referrer",
        "content-type: application/problem+json",
    ] {
        assert!(
            head.iter().any(|l| l.eq_ignore_ascii_case(name)),
            "{name} in {head:?}"
        );
    }
    let problem: serde_json::Value = serde_json::from_str(&body).expect(&body);
    assert_eq!(problem["status"], json!(400), "{body}");
}
