//! Errors the framework and the extractors produce: problem+json for unknown routes, wrong
//! methods, oversized bodies, wrong content types, malformed JSON and bad ids; the order in which
//! the checks run; and no 500 for any bad input.

use crate::each_backend;
use crate::helpers::*;
use reqwest::Method;
use serde_json::{Value, json};

each_backend!(
    unknown_routes_are_404_problems,
    wrong_method_is_a_405_problem,
    bodies_over_64_kib_are_413,
    wrong_content_type_is_415,
    malformed_or_unexpected_json,
    bad_path_ids_are_404,
    caller_checks_come_first,
    role_and_visibility_come_before_the_body,
    validation_comes_before_state,
    bad_inputs_never_cause_a_500,
    nul_characters_never_cause_a_500,
    sql_metacharacters_are_plain_text,
);

/// Sends raw bytes with the given headers.
async fn raw(
    app: &TestApp,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> Resp {
    let mut req = app.client.request(method, app.url(path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    TestApp::read(req.body(body).send().await.expect("request")).await
}

type Headers<'a> = Vec<(&'a str, &'a str)>;

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

/// Asserts a problem+json answer with this status, whatever its type.
#[track_caller]
fn assert_problem(r: &Resp, status: u16) -> &Value {
    assert_eq!(
        r.status.as_u16(),
        status,
        "unexpected status; body: {}",
        r.text
    );
    assert_eq!(
        r.header("content-type"),
        Some("application/problem+json"),
        "problem content type; body: {}",
        r.text
    );
    let kind = r.body["type"].as_str().unwrap_or_default();
    assert!(
        kind.starts_with("/problems/") && kind.len() > 10,
        "type: {}",
        r.text
    );
    assert_eq!(r.body["status"], status, "{}", r.text);
    assert!(
        r.body["title"].is_string() && r.body["detail"].is_string(),
        "{}",
        r.text
    );
    &r.body
}

fn register_body(name: &str) -> Value {
    json!({"email": format!("{}@example.com", unique("err")), "password": "a long enough passphrase",
           "name": name, "role": "candidate"})
}

async fn unknown_routes_are_404_problems(app: TestApp) {
    for path in [
        "/nope",
        "/api/nope",
        "/api/jobs/1/nope",
        "/api/jobs/",
        "/API/JOBS",
        "/api",
    ] {
        app.get(path, None).await.expect_problem(404, "not-found");
    }
    app.post("/api/nope", None, json!({}))
        .await
        .expect_problem(404, "not-found");
    app.delete("/api/nope", None)
        .await
        .expect_problem(404, "not-found");
}

async fn wrong_method_is_a_405_problem(app: TestApp) {
    for (method, path, allowed) in [
        (Method::PUT, "/api/jobs", &["GET", "POST"][..]),
        (Method::DELETE, "/api/jobs", &["GET", "POST"][..]),
        (Method::PUT, "/api/jobs/1", &["GET", "PATCH", "DELETE"][..]),
        (Method::POST, "/api/jobs/1", &["GET", "PATCH", "DELETE"][..]),
        (Method::GET, "/api/auth/register", &["POST"][..]),
        (Method::POST, "/healthz", &["GET"][..]),
    ] {
        let r = app.send(method.clone(), path, None, Some(json!({}))).await;
        assert_problem(&r, 405);
        let allow = r
            .header("allow")
            .unwrap_or_else(|| panic!("{method} {path}: a 405 lists the allowed methods"));
        for m in allowed {
            assert!(
                allow.contains(m),
                "{method} {path}: Allow {allow:?} lacks {m}"
            );
        }
    }
}

async fn bodies_over_64_kib_are_413(app: TestApp) {
    let limit = 64 * 1024;
    // A registration body of exactly `len` bytes (its name is what makes it long).
    let body_of = |len: usize| -> String {
        let email = format!("{}@example.com", unique("big"));
        let make = |name: &str| {
            json!({"email": email, "password": "a long enough passphrase", "name": name, "role": "candidate"})
                .to_string()
        };
        let body = make(&"x".repeat(len - make("").len()));
        assert_eq!(body.len(), len);
        body
    };
    let json_ct = [("content-type", "application/json")];

    let at_limit = body_of(limit);
    assert_eq!(at_limit.len(), limit);
    let r = raw(&app, Method::POST, "/api/auth/register", &json_ct, at_limit).await;
    assert_ne!(
        r.status.as_u16(),
        413,
        "exactly 64 KiB is allowed: {}",
        r.text
    );
    assert_problem(&r, 422);
    assert!(r.body["errors"]["name"].is_array(), "{}", r.text);

    let over = body_of(limit + 1);
    let r = raw(
        &app,
        Method::POST,
        "/api/auth/register",
        &json_ct,
        over.clone(),
    )
    .await;
    assert_problem(&r, 413);

    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let big = json!({"company_id": c, "title": "Big", "description": "x".repeat(70_000), "location": "",
                     "remote": false, "employment_type": "full_time"});
    let auth = bearer(&e.token);
    let r = raw(
        &app,
        Method::POST,
        "/api/jobs",
        &[
            ("content-type", "application/json"),
            ("authorization", &auth),
        ],
        big.to_string(),
    )
    .await;
    assert_problem(&r, 413);
    let r = raw(
        &app,
        Method::POST,
        "/api/companies",
        &[
            ("content-type", "application/json"),
            ("authorization", &auth),
        ],
        over,
    )
    .await;
    assert_problem(&r, 413);
    assert_eq!(app.get("/api/jobs", None).await.expect(200)["total"], 0);
}

async fn wrong_content_type_is_415(app: TestApp) {
    let body = register_body("Ann").to_string();
    for headers in [
        vec![("content-type", "text/plain")],
        vec![("content-type", "application/x-www-form-urlencoded")],
        vec![("content-type", "application/xml")],
        vec![("content-type", "multipart/form-data; boundary=x")],
        vec![],
    ] {
        let r = raw(
            &app,
            Method::POST,
            "/api/auth/register",
            &headers,
            body.clone(),
        )
        .await;
        assert_problem(&r, 415);
    }
    // JSON with parameters, and JSON subtypes, are JSON.
    let r = raw(
        &app,
        Method::POST,
        "/api/auth/register",
        &[("content-type", "application/json; charset=utf-8")],
        register_body("Ann").to_string(),
    )
    .await;
    r.expect(201);

    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app.job(&e, c, json!({})).await;
    let auth = bearer(&e.token);
    let path = format!("/api/jobs/{}", job["id"]);
    let r = raw(
        &app,
        Method::PATCH,
        &path,
        &[("content-type", "text/plain"), ("authorization", &auth)],
        r#"{"title":"X"}"#,
    )
    .await;
    assert_problem(&r, 415);
    let r = raw(
        &app,
        Method::PATCH,
        &path,
        &[
            ("content-type", "application/merge-patch+json"),
            ("authorization", &auth),
        ],
        r#"{"title":"Merged"}"#,
    )
    .await;
    assert_eq!(r.expect(200)["title"], "Merged");
}

async fn malformed_or_unexpected_json(app: TestApp) {
    let json_ct = [("content-type", "application/json")];
    let malformed: [&[u8]; 7] = [
        b"{\"email\":",
        b"{email: 1}",
        b"{\"a\":1}{",
        b"{\"a\":1,}",
        b"",
        b"   ",
        b"{\"name\": \"\xff\xfe\"}",
    ];
    for body in malformed {
        let r = raw(
            &app,
            Method::POST,
            "/api/auth/register",
            &json_ct,
            body.to_vec(),
        )
        .await;
        assert_problem(&r, 400);
        assert_ne!(r.body["type"], "/problems/validation");
    }
    for body in [
        "[]",
        "[{\"email\":\"a@b.c\"}]",
        "\"text\"",
        "42",
        "null",
        "true",
    ] {
        let r = raw(&app, Method::POST, "/api/auth/register", &json_ct, body).await;
        r.expect_problem(422, "validation");
    }
    let mut body = register_body("Ann");
    body["nickname"] = json!("annie");
    let r = app.post("/api/auth/register", None, body).await;
    let p = r.expect_problem(422, "validation");
    assert!(p["errors"]["nickname"].is_array(), "{}", r.text);

    let r = app
        .post(
            "/api/auth/register",
            None,
            json!({"email": "x@example.com"}),
        )
        .await;
    let p = r.expect_problem(422, "validation");
    let named: Vec<&String> = p["errors"].as_object().unwrap().keys().collect();
    assert!(!named.is_empty(), "{}", r.text);
    for field in named {
        assert!(
            ["password", "name", "role"].contains(&field.as_str()),
            "{field} is not missing: {}",
            r.text
        );
    }
    let mut body = register_body("Ann");
    body["name"] = json!(42);
    let r = app.post("/api/auth/register", None, body).await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["name"].is_array(),
        "{}",
        r.text
    );
    assert_eq!(
        app.get("/api/companies", None).await.expect(200)["total"],
        0
    );
}

async fn bad_path_ids_are_404(app: TestApp) {
    let s = app.scenario().await;
    let bad = [
        "abc",
        "-1",
        "1.5",
        "0",
        "1e3",
        "99999999999999999999",
        "18446744073709551616",
        "%20",
        "1%20",
        "0x1",
    ];
    for id in bad {
        app.get(&format!("/api/jobs/{id}"), None)
            .await
            .expect_problem(404, "not-found");
        app.get(&format!("/api/companies/{id}"), None)
            .await
            .expect_problem(404, "not-found");
        app.get(&format!("/api/applications/{id}"), Some(&s.candidate.token))
            .await
            .expect_problem(404, "not-found");
        app.patch(
            &format!("/api/jobs/{id}"),
            Some(&s.employer.token),
            json!({"title": "X"}),
        )
        .await
        .expect_problem(404, "not-found");
        app.delete(&format!("/api/jobs/{id}"), Some(&s.employer.token))
            .await
            .expect_problem(404, "not-found");
        app.post(
            &format!("/api/jobs/{id}/applications"),
            Some(&s.candidate.token),
            json!({}),
        )
        .await
        .expect_problem(404, "not-found");
        app.delete(
            &format!("/api/companies/{}/members/{id}", s.company_id),
            Some(&s.employer.token),
        )
        .await
        .expect_problem(404, "not-found");
    }
    // Nothing was touched.
    let job = app.get(&format!("/api/jobs/{}", s.job_id), None).await;
    assert_eq!(job.expect(200)["title"], "Backend Engineer");
}

async fn caller_checks_come_first(app: TestApp) {
    let s = app.scenario().await;
    let job = format!("/api/jobs/{}", s.job_id);
    let company = format!("/api/companies/{}", s.company_id);
    // A bad token is 401 even where no token is needed, before any other check.
    for bad in ["not-a-token", "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxIn0.", ""] {
        let auth = format!("Bearer {bad}");
        for path in [
            "/api/jobs".to_string(),
            "/api/jobs?page=0".to_string(),
            job.clone(),
            "/api/jobs/99999999".to_string(),
            "/api/jobs/abc".to_string(),
            company.clone(),
            "/api/companies".to_string(),
        ] {
            let r = raw(&app, Method::GET, &path, &[("authorization", &auth)], "").await;
            assert_problem(&r, 401);
            assert_eq!(r.header("www-authenticate"), Some("Bearer"), "GET {path}");
        }
    }
    let r = raw(
        &app,
        Method::GET,
        "/api/jobs",
        &[("authorization", "Basic dXNlcjpwYXNz")],
        "",
    )
    .await;
    assert_problem(&r, 401);

    // No token where one is needed: 401 with the challenge, whatever the body or the id.
    let json_ct = ("content-type", "application/json");
    for (method, path, body) in [
        (Method::GET, "/api/me".to_string(), ""),
        (Method::GET, "/api/applications".to_string(), ""),
        (
            Method::GET,
            "/api/applications?status=bogus".to_string(),
            "",
        ),
        (Method::POST, "/api/jobs".to_string(), "{\"title\":"),
        (Method::POST, "/api/companies".to_string(), "not json"),
        (Method::PATCH, job.clone(), "{\"title\":"),
        (Method::PATCH, "/api/jobs/abc".to_string(), "{}"),
        (Method::DELETE, job.clone(), ""),
        (
            Method::PATCH,
            format!("/api/applications/{}", s.application_id),
            "{\"status\":\"bogus\"}",
        ),
        (
            Method::POST,
            format!("/api/jobs/{}/applications", s.job_id),
            "{",
        ),
        (
            Method::GET,
            format!("/api/applications/{}/history", s.application_id),
            "",
        ),
    ] {
        let r = raw(&app, method.clone(), &path, &[json_ct], body).await;
        assert_problem(&r, 401);
        assert_eq!(
            r.header("www-authenticate"),
            Some("Bearer"),
            "{method} {path}"
        );
    }
    // A bad token with a bad body is still 401.
    let r = raw(
        &app,
        Method::POST,
        "/api/jobs",
        &[json_ct, ("authorization", "Bearer nope")],
        "{",
    )
    .await;
    assert_problem(&r, 401);
    // And nothing changed.
    let shown = app.get(&job, None).await;
    assert_eq!(shown.expect(200)["title"], "Backend Engineer");
}

async fn role_and_visibility_come_before_the_body(app: TestApp) {
    let s = app.scenario().await;
    let outsider = app.user("employer").await;
    let json_ct = ("content-type", "application/json");
    let text_ct = ("content-type", "text/plain");
    let candidate = bearer(&s.candidate.token);
    let stranger = bearer(&outsider.token);

    // 403: what the caller's role can never do, whatever the body.
    for (path, ct, body) in [
        ("/api/jobs".to_string(), json_ct, "{\"title\":"),
        ("/api/jobs".to_string(), text_ct, "title=x"),
        ("/api/jobs".to_string(), json_ct, "[]"),
        ("/api/companies".to_string(), json_ct, "{"),
    ] {
        let r = raw(
            &app,
            Method::POST,
            &path,
            &[ct, ("authorization", &candidate)],
            body,
        )
        .await;
        assert_problem(&r, 403);
    }
    for (method, path) in [
        (Method::PATCH, format!("/api/jobs/{}", s.job_id)),
        (
            Method::PATCH,
            format!("/api/applications/{}", s.application_id),
        ),
    ] {
        let r = raw(
            &app,
            method.clone(),
            &path,
            &[json_ct, ("authorization", &candidate)],
            "{",
        )
        .await;
        assert_problem(&r, 403);
    }
    let r = raw(
        &app,
        Method::POST,
        &format!("/api/jobs/{}/applications", s.job_id),
        &[json_ct, ("authorization", &stranger)],
        "{",
    )
    .await;
    assert_problem(&r, 403);

    // 404: a write by a non-member, whatever the body, and the same answer as for nothing at all.
    let missing = app
        .patch(
            "/api/jobs/99999999",
            Some(&outsider.token),
            json!({"title": "X"}),
        )
        .await;
    missing.expect_problem(404, "not-found");
    for (method, path) in [
        (Method::PATCH, format!("/api/jobs/{}", s.job_id)),
        (Method::PATCH, format!("/api/companies/{}", s.company_id)),
        (
            Method::PATCH,
            format!("/api/applications/{}", s.application_id),
        ),
        (
            Method::POST,
            format!("/api/companies/{}/members", s.company_id),
        ),
    ] {
        for (ct, body) in [
            (json_ct, "{\"title\":"),
            (text_ct, "hello"),
            (json_ct, "[1,2]"),
            (json_ct, "{\"id\": 5, \"unknown\": true}"),
            (json_ct, "{\"title\": \"\", \"status\": \"bogus\"}"),
        ] {
            let r = raw(
                &app,
                method.clone(),
                &path,
                &[ct, ("authorization", &stranger)],
                body,
            )
            .await;
            r.expect_problem(404, "not-found");
            assert_eq!(
                r.body, missing.body,
                "{method} {path}: no hint that it exists"
            );
        }
    }
    app.delete(&format!("/api/jobs/{}", s.job_id), Some(&outsider.token))
        .await
        .expect_problem(404, "not-found");
    // A non-member naming the company in a new job, with a broken job: still 404.
    let r = app
        .post(
            "/api/jobs",
            Some(&outsider.token),
            json!({"company_id": s.company_id, "title": ""}),
        )
        .await;
    r.expect_problem(404, "not-found");

    // Members get the body checks.
    let member = bearer(&s.employer.token);
    let path = format!("/api/jobs/{}", s.job_id);
    let r = raw(
        &app,
        Method::PATCH,
        &path,
        &[json_ct, ("authorization", &member)],
        "{\"title\":",
    )
    .await;
    assert_problem(&r, 400);
    let r = raw(
        &app,
        Method::PATCH,
        &path,
        &[text_ct, ("authorization", &member)],
        "{}",
    )
    .await;
    assert_problem(&r, 415);
    let r = raw(
        &app,
        Method::PATCH,
        &path,
        &[json_ct, ("authorization", &member)],
        "{\"wage\": 1}",
    )
    .await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["wage"].is_array(),
        "{}",
        r.text
    );

    let shown = app.get(&path, None).await;
    assert_eq!(shown.expect(200)["title"], "Backend Engineer");
    let r = app
        .get(
            &format!("/api/applications/{}", s.application_id),
            Some(&s.candidate.token),
        )
        .await;
    assert_eq!(r.expect(200)["status"], "submitted");
}

async fn validation_comes_before_state(app: TestApp) {
    let s = app.scenario().await;
    let path = format!("/api/applications/{}", s.application_id);
    let token = Some(s.employer.token.as_str());

    let r = app.patch(&path, token, json!({"status": "bogus"})).await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["status"].is_array(),
        "{}",
        r.text
    );
    for body in [json!({}), json!({"status": 5}), json!({"status": null})] {
        let r = app.patch(&path, token, body.clone()).await;
        assert!(
            r.expect_problem(422, "validation")["errors"]["status"].is_array(),
            "{body}: {}",
            r.text
        );
    }
    let r = app
        .patch(&path, token, json!({"status": "reviewing", "note": "x"}))
        .await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["note"].is_array(),
        "{}",
        r.text
    );

    let r = app.patch(&path, token, json!({"status": "hired"})).await;
    let p = r.expect_problem(409, "invalid-transition");
    let detail = p["detail"].as_str().unwrap();
    assert!(
        detail.contains("reviewing") && detail.contains("rejected"),
        "the allowed moves: {detail}"
    );
    app.patch(&path, token, json!({"status": "withdrawn"}))
        .await
        .expect_problem(409, "invalid-transition");

    let r = app.get(&path, Some(&s.candidate.token)).await;
    assert_eq!(r.expect(200)["status"], "submitted", "nothing changed");

    app.patch(&path, token, json!({"status": "rejected"}))
        .await
        .expect(200);
    // A final application: a bad body is still 422, a valid one 409.
    let r = app.patch(&path, token, json!({"status": "bogus"})).await;
    r.expect_problem(422, "validation");
    app.patch(&path, token, json!({"status": "reviewing"}))
        .await
        .expect_problem(409, "invalid-transition");
    let history = app
        .get(&format!("{path}/history"), Some(&s.candidate.token))
        .await;
    assert_eq!(
        history.expect(200).as_array().unwrap().len(),
        2,
        "{}",
        history.text
    );
}

async fn bad_inputs_never_cause_a_500(app: TestApp) {
    let s = app.scenario().await;
    let employer = bearer(&s.employer.token);
    let candidate = bearer(&s.candidate.token);
    let json_ct = ("content-type", "application/json");
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let deep_object = format!("{}1{}", "{\"a\":".repeat(3000), "}".repeat(3000));
    let many_words: String = (0..300).map(|i| format!("word{i} ")).collect();
    let long_word = "y".repeat(5000);
    let job = format!("/api/jobs/{}", s.job_id);
    let application = format!("/api/applications/{}", s.application_id);
    let cases: Vec<(Method, String, Headers, String)> = vec![
        (Method::GET, "/api/jobs?page=999999999999".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?page=99999999999999999999999".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?page_size=100&page=1000000".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?salary_min=99999999999999999999".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?salary_min=9223372036854775807".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?company_id=9223372036854775807".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?company_id=-9223372036854775808".into(), vec![], "".into()),
        (Method::GET, format!("/api/jobs?q={many_words}"), vec![], "".into()),
        (Method::GET, format!("/api/jobs?q={long_word}"), vec![], "".into()),
        (Method::GET, format!("/api/jobs?location={long_word}"), vec![], "".into()),
        (Method::GET, "/api/jobs?q=%FF%FE%00".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?location=%FF".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?q=%E2%80%AE%F0%9F%98%80".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?q&location&remote&page".into(), vec![], "".into()),
        (Method::GET, "/api/jobs?page=1&page=2&page=x".into(), vec![], "".into()),
        (Method::GET, "/api/companies?page_size=1000".into(), vec![], "".into()),
        (Method::GET, "/api/applications?job_id=abc".into(), vec![("authorization", &employer)], "".into()),
        (Method::GET, "/api/applications?job_id=99999999999999999999".into(), vec![("authorization", &employer)], "".into()),
        (Method::GET, "/api/applications?status=bogus".into(), vec![("authorization", &candidate)], "".into()),
        (Method::GET, "/api/applications?page=0".into(), vec![("authorization", &candidate)], "".into()),
        (Method::GET, "/api/jobs/18446744073709551616".into(), vec![], "".into()),
        (Method::GET, "/api/jobs/9007199254740993".into(), vec![], "".into()),
        (Method::POST, "/api/auth/register".into(), vec![json_ct], deep.clone()),
        (Method::POST, "/api/auth/register".into(), vec![json_ct], deep_object.clone()),
        (Method::POST, "/api/auth/register".into(), vec![json_ct], "{\"email\": 1e400}".into()),
        (Method::POST, "/api/auth/register".into(), vec![json_ct], "{\"email\": {\"$ne\": 1}}".into()),
        (Method::POST, "/api/auth/token".into(), vec![json_ct], "{\"email\": [], \"password\": 1}".into()),
        (Method::POST, "/api/auth/token".into(), vec![json_ct], format!("{{\"email\": \"{long_word}@x.com\", \"password\": \"{long_word}\"}}")),
        (Method::POST, "/api/jobs".into(), vec![json_ct, ("authorization", &employer)], format!("{{\"company_id\": {}, \"title\": \"T\", \"description\": \"\", \"location\": \"\", \"remote\": false, \"employment_type\": \"full_time\", \"salary_min\": 1e20}}", s.company_id)),
        (Method::POST, "/api/jobs".into(), vec![json_ct, ("authorization", &employer)], format!("{{\"company_id\": {}, \"title\": \"T\", \"description\": \"\", \"location\": \"\", \"remote\": false, \"employment_type\": \"full_time\", \"salary_max\": 9223372036854775808}}", s.company_id)),
        (Method::POST, "/api/jobs".into(), vec![json_ct, ("authorization", &employer)], "{\"company_id\": 9223372036854775807, \"title\": \"T\", \"description\": \"\", \"location\": \"\", \"remote\": false, \"employment_type\": \"full_time\"}".into()),
        (Method::POST, "/api/jobs".into(), vec![json_ct, ("authorization", &employer)], "{\"company_id\": -1, \"title\": \"T\", \"description\": \"\", \"location\": \"\", \"remote\": false, \"employment_type\": \"full_time\"}".into()),
        (Method::POST, "/api/jobs".into(), vec![json_ct, ("authorization", &employer)], "{\"company_id\": \"1\"}".into()),
        (Method::POST, "/api/jobs".into(), vec![json_ct, ("authorization", &employer)], deep.clone()),
        (Method::PATCH, job.clone(), vec![json_ct, ("authorization", &employer)], "{\"title\": null, \"salary_min\": null, \"status\": null}".into()),
        (Method::PATCH, job.clone(), vec![json_ct, ("authorization", &employer)], "{\"salary_min\": -5, \"salary_max\": 1e3}".into()),
        (Method::PATCH, job.clone(), vec![json_ct, ("authorization", &employer)], "{\"employment_type\": [\"full_time\"]}".into()),
        (Method::PATCH, application.clone(), vec![json_ct, ("authorization", &employer)], "{\"status\": \"\"}".into()),
        (Method::PATCH, application.clone(), vec![json_ct, ("authorization", &employer)], "{\"status\": \"SUBMITTED\"}".into()),
        (Method::POST, format!("/api/jobs/{}/applications", s.job_id), vec![json_ct, ("authorization", &candidate)], "{\"cover_letter\": 5}".into()),
        (Method::POST, format!("/api/companies/{}/members", s.company_id), vec![json_ct, ("authorization", &employer)], "{\"email\": \"\"}".into()),
        (Method::POST, format!("/api/companies/{}/members", s.company_id), vec![json_ct, ("authorization", &employer)], format!("{{\"email\": \"{long_word}\"}}")),
        (Method::POST, "/api/me/password".into(), vec![json_ct, ("authorization", &candidate)], "{\"current_password\": 1}".into()),
        (Method::GET, "/api/me".into(), vec![("authorization", "Bearer a.b.c")], "".into()),
        (Method::GET, "/api/me".into(), vec![("authorization", "Bearer ...")], "".into()),
        (Method::GET, "/api/me".into(), vec![("authorization", "Bearer")], "".into()),
    ];
    let mut server_errors = Vec::new();
    for (method, path, headers, body) in cases {
        let before = app.fingerprint().await;
        let r = raw(&app, method.clone(), &path, &headers, body).await;
        let shown: String = path.chars().take(80).collect();
        if r.status.is_server_error() {
            server_errors.push(format!("{method} {shown}: {} {}", r.status, r.text));
        } else if r.status.is_client_error() {
            assert_eq!(
                r.header("content-type"),
                Some("application/problem+json"),
                "{method} {shown}: {}",
                r.text
            );
            assert_eq!(
                app.fingerprint().await,
                before,
                "{method} {shown} was refused ({}) but changed the database",
                r.status
            );
        }
    }
    // A header value that is not text.
    let r = TestApp::read(
        app.client
            .get(app.url("/api/me"))
            .header(
                "authorization",
                reqwest::header::HeaderValue::from_bytes(b"Bearer \xff\xfe").unwrap(),
            )
            .send()
            .await
            .expect("request"),
    )
    .await;
    assert_problem(&r, 401);
    assert!(
        server_errors.is_empty(),
        "server errors:\n{}",
        server_errors.join("\n")
    );
    // The scenario is intact.
    assert_eq!(
        app.get(&job, None).await.expect(200)["title"],
        "Backend Engineer"
    );
}

async fn nul_characters_never_cause_a_500(app: TestApp) {
    // U+0000 cannot be stored as text by every database; it is refused as invalid input, the
    // same on both backends, and never reaches a query that would fail.
    let r = app
        .post("/api/auth/register", None, register_body("Ann\u{0}Lee"))
        .await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["name"].is_array(),
        "{}",
        r.text
    );

    let r = app
        .post(
            "/api/auth/token",
            None,
            json!({"email": "nobody\u{0}@example.com", "password": "whatever it is"}),
        )
        .await;
    assert_problem(&r, 401);

    let e = app.user("employer").await;
    let r = app
        .post(
            "/api/companies",
            Some(&e.token),
            json!({"name": "Ac\u{0}me"}),
        )
        .await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["name"].is_array(),
        "{}",
        r.text
    );
    let c = app.company(&e, "Acme").await;
    let r = app
        .post(
            "/api/jobs",
            Some(&e.token),
            json!({"company_id": c, "title": "Nul\u{0}Title", "description": "", "location": "", "remote": false,
                   "employment_type": "full_time"}),
        )
        .await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["title"].is_array(),
        "{}",
        r.text
    );
    app.job(&e, c, json!({"title": "Plain"})).await;

    let r = app.get("/api/jobs?location=%00", None).await;
    assert_eq!(
        r.expect(200)["items"],
        json!([]),
        "no location contains U+0000"
    );
    let r = app.get("/api/jobs?location=Ber%00lin", None).await;
    assert_eq!(r.expect(200)["items"], json!([]));
    // A NUL in `q` is no word separator a client meant: it is refused, naming `q`.
    let r = app.get("/api/jobs?q=plain%00", None).await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["q"].is_array(),
        "{}",
        r.text
    );
}

/// Quotes, comment markers, wildcards and statement separators in every string are plain text:
/// stored and answered as given, found by search only as words, and no table is touched.
async fn sql_metacharacters_are_plain_text(app: TestApp) {
    let nasty = "Robert'); DROP TABLE jobs; -- %_\\ \" OR '1'='1";
    let e = app.user("employer").await;
    let r = app
        .post(
            "/api/companies",
            Some(&e.token),
            json!({"name": nasty, "description": nasty}),
        )
        .await;
    let company = r.expect(201)["id"].as_i64().unwrap();
    assert_eq!(r.body["name"], nasty);
    let job = app
        .job(
            &e,
            company,
            json!({"title": nasty, "description": nasty, "location": nasty}),
        )
        .await;
    assert_eq!(job["title"], nasty);
    assert_eq!(job["location"], nasty);
    let before = app.fingerprint().await;
    for query in [
        "q=%27%3B%20DROP%20TABLE%20jobs%3B%20--",
        "q=robert%20drop%20table",
        "location=%25%27%20OR%20%271%27%3D%271",
        "location=%25",
        "location=_",
        "q=%22%20OR%201%3D1",
    ] {
        let r = app.get(&format!("/api/jobs?{query}"), None).await;
        let body = r.expect(200);
        assert!(body["total"].as_i64().unwrap() <= 1, "{query}: {body}");
    }
    // The words of the text find it; a wildcard is a character like any other.
    let r = app.get("/api/jobs?q=robert+drop+table", None).await;
    assert_eq!(r.expect(200)["total"], 1);
    let r = app.get("/api/jobs?location=%25_", None).await;
    assert_eq!(
        r.expect(200)["total"],
        1,
        "the literal %_ is in the location"
    );
    let r = app.get("/api/jobs?location=x%25y", None).await;
    assert_eq!(r.expect(200)["total"], 0, "% matches only a %");
    assert_eq!(
        app.fingerprint().await,
        before,
        "a search changed the database"
    );
    app.get(&format!("/api/companies/{company}"), None)
        .await
        .expect(200);
}
