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
