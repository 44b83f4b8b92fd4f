//! Accounts: registration, tokens (every JWT rule), password change, deletion, rate limits.

use crate::each_store;
use crate::helpers::*;
use base64::Engine;
use serde_json::json;

each_store!(
    register_and_me,
    registration_validation,
    email_taken_case_insensitively,
    login_failures_look_alike,
    login_rate_limited_per_email,
    parallel_guesses_cannot_pass_the_limit,
    token_rules,
    auth_endpoints_refuse_a_bad_token,
    password_change_revokes_tokens,
    delete_account_takes_applications,
);

async fn register_and_me(app: TestApp) {
    let r = app
        .post(
            "/api/auth/register",
            None,
            json!({"email": " Ann@Example.com ", "password": "a long enough passphrase", "name": "  Ann  ", "role": "candidate"}),
        )
        .await;
    let body = r.expect(201);
    assert_eq!(body["email"], "Ann@Example.com", "trimmed, case kept");
    assert_eq!(body["name"], "Ann");
    assert_eq!(body["role"], "candidate");
    let created = body["created_at"].as_str().unwrap();
    assert!(created.ends_with('Z') && created.contains('T'), "{created}");
    assert!(body.get("password").is_none() && body.get("password_hash").is_none());

    let token = app
        .login("ann@EXAMPLE.com", "a long enough passphrase")
        .await;
    let r = app
        .post(
            "/api/auth/token",
            None,
            json!({"email": "ann@example.com", "password": "a long enough passphrase"}),
        )
        .await;
    let t = r.expect(200);
    assert_eq!(t["token_type"], "Bearer");
    assert_eq!(t["expires_in"], 3600);
    let me = app.get("/api/me", Some(&token)).await;
    assert_eq!(me.expect(200)["id"], body["id"]);
    assert_eq!(me.body["email"], "Ann@Example.com");
}

async fn registration_validation(app: TestApp) {
    let base = json!({"email": "v@example.com", "password": "a long enough passphrase", "name": "V", "role": "employer"});
    let cases = [
        ("password", json!("short")),
        ("password", json!("password123")),
        ("password", json!("x".repeat(129))),
        ("email", json!("not-an-email")),
        ("email", json!(format!("{}@example.com", "a".repeat(250)))),
        // Addresses the mailer cannot send to: every email to them would be dead-lettered.
        ("email", json!("a,b@example.com")),
        ("email", json!("a;b@example.com")),
        ("email", json!("<ann>@example.com")),
        ("email", json!("ann(x)@example.com")),
        ("name", json!("   ")),
        ("name", json!("é".repeat(101))),
        ("role", json!("admin")),
        ("role", json!(5)),
    ];
    for (field, value) in cases {
        let mut body = base.clone();
        body[field] = value.clone();
        let r = app.post("/api/auth/register", None, body).await;
        let p = r.expect_problem(422, "validation");
        assert!(p["errors"][field].is_array(), "{field}={value}: {}", r.text);
    }
    let r = app
        .post(
            "/api/auth/register",
            None,
            json!({"email": "v@example.com"}),
        )
        .await;
    let p = r.expect_problem(422, "validation");
    assert!(
        p["errors"]["password"].is_array() || p["errors"]["name"].is_array(),
        "{}",
        r.text
    );
    let mut body = base.clone();
    body["is_admin"] = json!(true);
    let r = app.post("/api/auth/register", None, body).await;
    assert!(r.expect_problem(422, "validation")["errors"]["is_admin"].is_array());
    // 100 code points is allowed, and a password of exactly 8 that is not common.
    let mut body = base.clone();
    body["name"] = json!("é".repeat(100));
    body["password"] = json!("zq8!vL2p");
    app.post("/api/auth/register", None, body).await.expect(201);
    // Nothing was created by the refused requests.
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM users").await, 1);
}

async fn email_taken_case_insensitively(app: TestApp) {
    let u = app.user("candidate").await;
    let r = app
        .post(
            "/api/auth/register",
            None,
            json!({"email": u.email.to_uppercase(), "password": "another passphrase", "name": "X", "role": "employer"}),
        )
        .await;
    r.expect_problem(409, "email-taken");
    // The original password still works: the account was not touched.
    app.login(&u.email, &u.password).await;
}

async fn login_failures_look_alike(app: TestApp) {
    let u = app.user("candidate").await;
    let wrong = app
        .post(
            "/api/auth/token",
            None,
            json!({"email": u.email, "password": "wrong passphrase"}),
        )
        .await;
    let unknown = app
        .post(
            "/api/auth/token",
            None,
            json!({"email": "nobody@example.com", "password": "wrong passphrase"}),
        )
        .await;
    wrong.expect_problem(401, "unauthorized");
    unknown.expect_problem(401, "unauthorized");
    assert_eq!(
        wrong.text, unknown.text,
        "the same body whether or not the email exists"
    );
}

async fn login_rate_limited_per_email(app: TestApp) {
    let u = app.user("candidate").await;
    for _ in 0..10 {
        app.post(
            "/api/auth/token",
            None,
            json!({"email": u.email, "password": "wrong passphrase"}),
        )
        .await
        .expect(401);
    }
    // Even the right password is refused now, with a Retry-After of at most the window.
    let r = app
        .post(
            "/api/auth/token",
            None,
            json!({"email": u.email, "password": u.password}),
        )
        .await;
    r.expect_problem(429, "rate-limited");
    let retry: u64 = r
        .header("retry-after")
        .expect("Retry-After")
        .parse()
        .unwrap();
    assert!((1..=901).contains(&retry), "{retry}");
    // Another account is not affected.
    let other = app.user("employer").await;
    app.login(&other.email, &other.password).await;
}

fn b64(v: &serde_json::Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

async fn token_rules(app: TestApp) {
    let u = app.user("candidate").await;
    app.get("/api/me", None)
        .await
        .expect_problem(401, "unauthorized");
    let r = app.get("/api/me", Some("garbage")).await;
    r.expect_problem(401, "unauthorized");
    assert_eq!(r.header("www-authenticate"), Some("Bearer"));
    let now = chrono::Utc::now().timestamp();
    let claims = json!({"sub": u.id.to_string(), "iat": now, "nbf": now, "exp": now + 600,
        "iss": "jobboard", "aud": "jobboard-api", "generation": 0});
    // alg "none": an unsigned token.
    let none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "typ": "JWT"})),
        b64(&claims)
    );
    app.get("/api/me", Some(&none)).await.expect(401);
    // A tampered payload under the real header and signature.
    let parts: Vec<&str> = u.token.split('.').collect();
    let mut forged = claims.clone();
    forged["sub"] = json!("999");
    let tampered = format!("{}.{}.{}", parts[0], b64(&forged), parts[2]);
    app.get("/api/me", Some(&tampered)).await.expect(401);
    // A bad token is refused even on a public endpoint.
    app.get("/api/jobs", Some("garbage"))
        .await
        .expect_problem(401, "unauthorized");
    // The good one works.
    app.get("/api/me", Some(&u.token)).await.expect(200);
}

/// docs/api.md checks the token first, "also on public endpoints when a bad token is sent":
/// registering and logging in are no exception, and a refused request writes nothing.
async fn auth_endpoints_refuse_a_bad_token(app: TestApp) {
    let u = app.user("candidate").await;
    let email = format!("{}@example.com", unique("bad-token"));
    let register = json!({"email": email, "password": "a long enough passphrase",
        "name": "Bea", "role": "employer"});
    let login = json!({"email": u.email, "password": u.password});
    for token in ["garbage", "", "not.a.jwt"] {
        let r = app
            .send(
                reqwest::Method::POST,
                "/api/auth/register",
                Some(token),
                Some(register.clone()),
            )
            .await;
        r.expect_problem(401, "unauthorized");
        assert_eq!(r.header("www-authenticate"), Some("Bearer"));
        app.post("/api/auth/token", Some(token), login.clone())
            .await
            .expect_problem(401, "unauthorized");
    }
    // A scheme other than Bearer is no token either.
    let r = app
        .client
        .post(app.url("/api/auth/token"))
        .header("authorization", "Basic dXNlcjpwYXNz")
        .json(&login)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 401);
    // Nothing was registered; without the header both work.
    app.post(
        "/api/auth/token",
        None,
        json!({"email": email, "password": "a long enough passphrase"}),
    )
    .await
    .expect(401);
    app.post("/api/auth/register", None, register)
        .await
        .expect(201);
    app.post("/api/auth/token", None, login).await.expect(200);
    // A valid token does not stand in the way either.
    app.post(
        "/api/auth/token",
        Some(&u.token),
        json!({"email": u.email, "password": u.password}),
    )
    .await
    .expect(200);
}

async fn password_change_revokes_tokens(app: TestApp) {
    let u = app.user("candidate").await;
    let r = app
        .post(
            "/api/me/password",
            Some(&u.token),
            json!({"current_password": "wrong one!", "new_password": "a brand new passphrase"}),
        )
        .await;
    assert!(r.expect_problem(422, "validation")["errors"]["current_password"].is_array());
    let r = app
        .post(
            "/api/me/password",
            Some(&u.token),
            json!({"current_password": u.password, "new_password": "qwerty123"}),
        )
        .await;
    assert!(r.expect_problem(422, "validation")["errors"]["new_password"].is_array());
    app.post(
        "/api/me/password",
        Some(&u.token),
        json!({"current_password": u.password, "new_password": "a brand new passphrase"}),
    )
    .await
    .expect(204);
    app.get("/api/me", Some(&u.token)).await.expect(401);
    app.post(
        "/api/auth/token",
        None,
        json!({"email": u.email, "password": u.password}),
    )
    .await
    .expect(401);
    let token = app.login(&u.email, "a brand new passphrase").await;
    app.get("/api/me", Some(&token)).await.expect(200);
}

async fn delete_account_takes_applications(app: TestApp) {
    let s = app.scenario().await;
    app.delete("/api/me", Some(&s.candidate.token))
        .await
        .expect(204);
    app.get("/api/me", Some(&s.candidate.token))
        .await
        .expect(401);
    let r = app.get("/api/applications", Some(&s.employer.token)).await;
    assert_eq!(
        r.expect(200)["total"],
        0,
        "the application went with its candidate"
    );
    app.get(
        &format!("/api/applications/{}", s.application_id),
        Some(&s.employer.token),
    )
    .await
    .expect(404);
    app.post(
        "/api/auth/token",
        None,
        json!({"email": s.candidate.email, "password": s.candidate.password}),
    )
    .await
    .expect(401);
}

async fn parallel_guesses_cannot_pass_the_limit(app: TestApp) {
    let u = app.user("candidate").await;
    let guesses = (0..25).map(|i| {
        app.post(
            "/api/auth/token",
            None,
            json!({"email": u.email, "password": format!("wrong guess {i}")}),
        )
    });
    let answers = futures::future::join_all(guesses).await;
    let refused = answers.iter().filter(|r| r.status == 401).count();
    let limited = answers.iter().filter(|r| r.status == 429).count();
    assert_eq!(refused + limited, 25);
    assert!(
        refused <= 10,
        "{refused} guesses were checked; the limit is 10"
    );
}
