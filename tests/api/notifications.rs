//! Email preferences and the digest's unsubscribe link (docs/api.md, "Job alerts and email
//! preferences"; RFC 8058): `GET`/`PATCH /api/me/notifications`, and `/api/unsubscribe/{token}`,
//! whose GET a mail scanner may follow without effect and whose POST turns the digest off.

use crate::each_store;
use crate::helpers::*;
use jobboard::unsubscribe::{self, Target};
use reqwest::Method;
use serde_json::json;

each_store!(
    preferences_read_and_change,
    preferences_refuse_what_is_not_a_boolean,
    a_followed_link_changes_nothing,
    one_click_turns_the_digest_off_and_again_is_200,
    the_button_answers_a_page_and_json_clients_json,
    a_link_retried_with_its_key_is_replayed,
    altered_forged_and_stale_tokens_are_404,
    links_signed_with_the_previous_secret_still_work,
    links_signed_with_their_own_key_outlive_jwt_rotations,
    a_percent_encoded_spelling_is_the_same_token,
    the_page_says_when_it_is_done_already,
);

/// The secret the test app signs with (`helpers.rs`).
const SECRET: &[u8] = b"test-secret-test-secret-test-secret";
const FORM: &str = "application/x-www-form-urlencoded";

fn digest_path(secret: &[u8], user_id: i64) -> String {
    format!(
        "/api/unsubscribe/{}",
        unsubscribe::token(secret, Target::Digest { user_id })
    )
}

/// A POST as a mail client sends it (RFC 8058 §3.2): the form body, no cookie, no token.
async fn one_click(app: &TestApp, path: &str) -> Resp {
    post_form(&app.client, &app.url(path)).await
}

async fn post_form(client: &reqwest::Client, url: &str) -> Resp {
    let req = client
        .post(url)
        .header("content-type", FORM)
        .body("List-Unsubscribe=One-Click");
    TestApp::read(req.send().await.expect("request")).await
}

/// The test app's database served by another API process started with `extra` on top of its
/// configuration, as after a restart with new secrets; stopped when dropped.
struct Restarted {
    base: String,
    state: jobboard::http::AppState,
    _stop: tokio_util::sync::DropGuard,
}

impl Restarted {
    async fn start(app: &TestApp, name: &str, extra: &[(&str, &str)]) -> Restarted {
        let search = app.search_dir(name);
        let mut vars = extra.to_vec();
        vars.push(("SEARCH_INDEX_DIR", &search));
        let shutdown = tokio_util::sync::CancellationToken::new();
        let state = jobboard::run::app_state(app.config(&vars), shutdown.clone(), false)
            .await
            .expect("the restarted API");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(jobboard::http::serve(listener, None, state.clone()));
        Restarted {
            base,
            state,
            _stop: shutdown.drop_guard(),
        }
    }

    async fn one_click(&self, client: &reqwest::Client, path: &str) -> Resp {
        post_form(client, &format!("{}{path}", self.base)).await
    }

    /// The link's page as this process serves it: 200 for a token it verifies, else 404.
    async fn page(&self, client: &reqwest::Client, path: &str) -> Resp {
        let req = client.get(format!("{}{path}", self.base));
        TestApp::read(req.send().await.expect("GET")).await
    }
}

async fn digest_is_on(app: &TestApp, user: &User) -> bool {
    let r = app.get("/api/me/notifications", Some(&user.token)).await;
    let on = r.expect(200)["application_digest"]
        .as_bool()
        .expect("a boolean");
    let stored = app
        .scalar_i64(&format!(
            "SELECT COUNT(*) FROM users WHERE id = {} AND application_digest",
            user.id
        ))
        .await;
    assert_eq!(on, stored == 1, "the API shows what is stored");
    on
}

async fn preferences_read_and_change(app: TestApp) {
    let employer = app.user("employer").await;
    let candidate = app.user("candidate").await;
    let r = app
        .get("/api/me/notifications", Some(&employer.token))
        .await;
    assert_eq!(r.expect(200), &json!({"application_digest": true}));
    let r = app
        .patch(
            "/api/me/notifications",
            Some(&employer.token),
            json!({"application_digest": false}),
        )
        .await;
    assert_eq!(r.expect(200), &json!({"application_digest": false}));
    assert!(!digest_is_on(&app, &employer).await);
    assert!(digest_is_on(&app, &candidate).await, "only the caller's");
    // An absent field stays as it is (JSON Merge Patch).
    let r = app
        .patch("/api/me/notifications", Some(&employer.token), json!({}))
        .await;
    assert_eq!(r.expect(200), &json!({"application_digest": false}));
    let r = app
        .patch(
            "/api/me/notifications",
            Some(&employer.token),
            json!({"application_digest": true}),
        )
        .await;
    assert_eq!(r.expect(200), &json!({"application_digest": true}));
    assert!(digest_is_on(&app, &employer).await);

    app.get("/api/me/notifications", None)
        .await
        .expect_problem(401, "unauthorized");
    app.patch(
        "/api/me/notifications",
        None,
        json!({"application_digest": false}),
    )
    .await
    .expect_problem(401, "unauthorized");
    app.get("/api/me/notifications", Some("not-a-token"))
        .await
        .expect_problem(401, "unauthorized");
    assert!(digest_is_on(&app, &employer).await);

    // A deleted account's token is refused, and its preference goes with it.
    app.delete("/api/me", Some(&employer.token))
        .await
        .expect(204);
    app.get("/api/me/notifications", Some(&employer.token))
        .await
        .expect_problem(401, "unauthorized");
}

async fn preferences_refuse_what_is_not_a_boolean(app: TestApp) {
    let employer = app.user("employer").await;
    let before = app.fingerprint().await;
    for body in [
        json!({"application_digest": "false"}),
        json!({"application_digest": 0}),
        json!({"application_digest": null}),
        json!({"application_digest": [false]}),
    ] {
        let r = app
            .patch("/api/me/notifications", Some(&employer.token), body.clone())
            .await;
        let problem = r.expect_problem(422, "validation");
        assert!(
            problem["errors"]["application_digest"].is_array(),
            "{body}: {}",
            r.text
        );
    }
    let r = app
        .patch(
            "/api/me/notifications",
            Some(&employer.token),
            json!({"application_digest": false, "alerts": false}),
        )
        .await;
    assert!(
        r.expect_problem(422, "validation")["errors"]["alerts"].is_array(),
        "{}",
        r.text
    );
    let r = app
        .patch("/api/me/notifications", Some(&employer.token), json!([]))
        .await;
    r.expect_problem(422, "validation");
    assert_eq!(app.fingerprint().await, before);
    assert!(digest_is_on(&app, &employer).await, "nothing changed");
}

async fn a_followed_link_changes_nothing(app: TestApp) {
    let employer = app.user("employer").await;
    let path = digest_path(SECRET, employer.id);
    // A mail scanner fetches every link, perhaps twice; a person may open it and leave.
    for _ in 0..2 {
        let r = app.get(&path, None).await;
        r.expect(200);
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        let csp = r.header("content-security-policy").expect("a CSP");
        assert!(csp.contains("default-src 'none'"), "{csp}");
        assert!(
            !csp.contains("script-src") && !csp.contains("'unsafe"),
            "{csp}"
        );
        assert!(csp.contains("form-action 'self'"), "{csp}");
        assert_eq!(r.header("cache-control"), Some("no-store"));
        assert!(
            r.text.contains("the hourly digest of new applications"),
            "names what it stops: {}",
            r.text
        );
        assert!(r.text.contains("<form method=\"post\">"), "{}", r.text);
        assert!(
            r.text
                .contains("name=\"List-Unsubscribe\" value=\"One-Click\""),
            "the button posts what a one-click client posts: {}",
            r.text
        );
        for outside in ["<script", "src=", "href=", "http://", "https://", "style"] {
            assert!(!r.text.contains(outside), "{outside} in {}", r.text);
        }
        // HEAD, which some scanners send first, changes nothing either.
        let head = app.client.head(app.url(&path)).send().await.expect("HEAD");
        assert_eq!(head.status(), 200);
    }
    assert!(digest_is_on(&app, &employer).await, "a GET changes nothing");
}

async fn one_click_turns_the_digest_off_and_again_is_200(app: TestApp) {
    let employer = app.user("employer").await;
    let other = app.user("employer").await;
    let path = digest_path(SECRET, employer.id);
    for _ in 0..2 {
        let r = one_click(&app, &path).await;
        assert_eq!(
            r.expect(200),
            &json!({"unsubscribed": "application_digest"}),
            "{}",
            r.text
        );
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert!(!digest_is_on(&app, &employer).await);
    }
    assert!(digest_is_on(&app, &other).await, "only the link's user");

    // An empty body does it too, and a link built by `link` is one the API answers.
    app.patch(
        "/api/me/notifications",
        Some(&employer.token),
        json!({"application_digest": true}),
    )
    .await
    .expect(200);
    let link = unsubscribe::link(
        &format!("{}/", app.url("")),
        SECRET,
        Target::Digest {
            user_id: employer.id,
        },
    );
    assert!(link.starts_with(&app.url("/api/unsubscribe/")), "{link}");
    let r = TestApp::read(app.client.post(&link).send().await.expect("POST")).await;
    r.expect(200);
    assert!(!digest_is_on(&app, &employer).await);
    // Nor does a multipart form (RFC 8058 lets the mail client choose) stand in the way.
    let r = TestApp::read(
        app.client
            .post(&link)
            .header("content-type", "multipart/form-data; boundary=x")
            .body("--x\r\nContent-Disposition: form-data; name=\"List-Unsubscribe\"\r\n\r\nOne-Click\r\n--x--\r\n")
            .send()
            .await
            .expect("POST"),
    )
    .await;
    r.expect(200);
}

async fn the_button_answers_a_page_and_json_clients_json(app: TestApp) {
    let employer = app.user("employer").await;
    let path = digest_path(SECRET, employer.id);
    let browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    let req = app
        .client
        .post(app.url(&path))
        .header("accept", browser)
        .header("content-type", FORM)
        .body("List-Unsubscribe=One-Click");
    let r = TestApp::read(req.send().await.expect("request")).await;
    r.expect(200);
    assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
    assert!(
        r.text
            .contains("You will no longer receive the hourly digest of new applications"),
        "{}",
        r.text
    );
    assert!(!r.text.contains("<script"), "{}", r.text);
    assert!(!digest_is_on(&app, &employer).await);
    let r = app.send(Method::POST, &path, None, Some(json!({}))).await;
    assert_eq!(r.expect(200)["unsubscribed"], "application_digest");
}

async fn a_link_retried_with_its_key_is_replayed(app: TestApp) {
    let employer = app.user("employer").await;
    let path = digest_path(SECRET, employer.id);
    let post = |key: &'static str| {
        app.client
            .post(app.url(&path))
            .header("idempotency-key", key)
            .header("accept", "text/html")
            .send()
    };
    let first = TestApp::read(post("unsubscribe-1").await.expect("POST")).await;
    assert_eq!(
        first.expect(200),
        &json!({"unsubscribed": "application_digest"}),
        "a request with a key is answered in JSON"
    );
    assert_eq!(first.header("idempotent-replayed"), None);
    // The user turns it on again; the retry of the first request changes nothing.
    app.patch(
        "/api/me/notifications",
        Some(&employer.token),
        json!({"application_digest": true}),
    )
    .await
    .expect(200);
    let again = TestApp::read(post("unsubscribe-1").await.expect("POST")).await;
    assert_eq!(again.expect(200), &first.body);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert!(
        digest_is_on(&app, &employer).await,
        "a replay changes nothing"
    );
    let bad = TestApp::read(post("not valid").await.expect("POST")).await;
    bad.expect_problem(400, "invalid-idempotency-key");
    assert!(digest_is_on(&app, &employer).await);
}

async fn altered_forged_and_stale_tokens_are_404(app: TestApp) {
    let employer = app.user("employer").await;
    let token = unsubscribe::token(
        SECRET,
        Target::Digest {
            user_id: employer.id,
        },
    );
    // One character changed (each position, so the tag, the id and the kind are all hit).
    let mut altered: Vec<String> = (0..token.len())
        .map(|i| {
            let c = token.as_bytes()[i];
            let with = if c == b'A' { 'B' } else { 'A' };
            format!("{}{with}{}", &token[..i], &token[i + 1..])
        })
        .collect();
    altered.push(token[..token.len() - 1].to_string());
    altered.push(format!("{token}A"));
    altered.push(unsubscribe::token(
        b"another-secret-another-secret-another",
        Target::Digest {
            user_id: employer.id,
        },
    ));
    // An alert's link signed with another secret (a deleted alert's own link answers 200:
    // tests/api/alert_digests.rs).
    altered.push(unsubscribe::token(
        b"another-secret-another-secret-another",
        Target::Alert { alert_id: 1 },
    ));
    // A user that never existed.
    altered.push(unsubscribe::token(
        SECRET,
        Target::Digest { user_id: 999_999 },
    ));
    // An access token is no unsubscribe token.
    altered.push(employer.token.clone());
    altered.push("x1".to_string());
    let before = app.fingerprint().await;
    for t in &altered {
        let path = format!("/api/unsubscribe/{t}");
        app.get(&path, None).await.expect_problem(404, "not-found");
        one_click(&app, &path)
            .await
            .expect_problem(404, "not-found");
    }
    assert_eq!(app.fingerprint().await, before);
    assert!(digest_is_on(&app, &employer).await, "nothing changed");

    // The account is deleted: its link names nothing any more.
    let path = format!("/api/unsubscribe/{token}");
    app.get(&path, None).await.expect(200);
    app.delete("/api/me", Some(&employer.token))
        .await
        .expect(204);
    app.get(&path, None).await.expect_problem(404, "not-found");
    one_click(&app, &path)
        .await
        .expect_problem(404, "not-found");
}

async fn links_signed_with_the_previous_secret_still_work(app: TestApp) {
    let old = std::str::from_utf8(SECRET).unwrap();
    let new = "rotated-secret-rotated-secret-rotated";
    let employer = app.user("employer").await;
    let other = app.user("employer").await;
    // A link mailed before the rotation.
    let mailed = digest_path(SECRET, employer.id);
    let rotated = Restarted::start(
        &app,
        "rotated",
        &[("JWT_SECRET", new), ("JWT_SECRET_PREVIOUS", old)],
    )
    .await;
    assert_eq!(rotated.state.tokens.signing_secret(), new.as_bytes());
    // Without a key of its own, the links are signed with the JWT secret's, as before.
    assert_eq!(rotated.state.unsubscribe.signing(), new.as_bytes());
    let page = TestApp::read(
        app.client
            .get(format!("{}{mailed}", rotated.base))
            .send()
            .await
            .expect("GET"),
    )
    .await;
    page.expect(200);
    assert!(digest_is_on(&app, &employer).await);
    rotated.one_click(&app.client, &mailed).await.expect(200);
    assert!(!digest_is_on(&app, &employer).await);
    // A link of the new secret works; one of a secret neither knows does not.
    rotated
        .one_click(&app.client, &digest_path(new.as_bytes(), other.id))
        .await
        .expect(200);
    assert!(!digest_is_on(&app, &other).await);
    let third = digest_path(b"third-secret-third-secret-third-secret", employer.id);
    rotated
        .one_click(&app.client, &third)
        .await
        .expect_problem(404, "not-found");
    // Once the old secret is dropped, its links stop working.
    let dropped = Restarted::start(&app, "dropped", &[("JWT_SECRET", new)]).await;
    dropped
        .one_click(&app.client, &mailed)
        .await
        .expect_problem(404, "not-found");
}

/// A link signed with `UNSUBSCRIBE_SECRET` does not depend on `JWT_SECRET`: it still works after
/// two rotations of the JWT secret (the second of which drops every JWT secret it knew). The
/// key rotates on its own, `UNSUBSCRIBE_SECRET_PREVIOUS` still verifying; and a link signed
/// before the key existed (with `JWT_SECRET`'s) keeps working while that JWT secret verifies.
async fn links_signed_with_their_own_key_outlive_jwt_rotations(app: TestApp) {
    let key_a = "unsubscribe-key-a-unsubscribe-key-a-0001";
    let key_b = "unsubscribe-key-b-unsubscribe-key-b-0002";
    let jwt = std::str::from_utf8(SECRET).unwrap();
    let jwt_2 = "jwt-secret-two-jwt-secret-two-jwt-secret";
    let jwt_3 = "jwt-secret-three-jwt-secret-three-jwt-se";
    let employer = app.user("employer").await;
    let other = app.user("employer").await;
    let client = &app.client;
    // Mailed before the key existed: signed with the key of `JWT_SECRET`.
    let before = digest_path(SECRET, employer.id);
    // Mailed once the key was set.
    let signed_a = digest_path(key_a.as_bytes(), employer.id);
    let signed_b = digest_path(key_b.as_bytes(), other.id);
    app.get(&signed_a, None)
        .await
        .expect_problem(404, "not-found");

    let with_key = Restarted::start(&app, "key-a", &[("UNSUBSCRIBE_SECRET", key_a)]).await;
    assert_eq!(with_key.state.unsubscribe.signing(), key_a.as_bytes());
    with_key.page(client, &signed_a).await.expect(200);
    with_key.page(client, &before).await.expect(200);
    with_key
        .page(client, &signed_b)
        .await
        .expect_problem(404, "not-found");

    // The JWT secret rotated once, then again: `jwt` is no longer known at all.
    let once = Restarted::start(
        &app,
        "jwt-2",
        &[
            ("UNSUBSCRIBE_SECRET", key_a),
            ("JWT_SECRET", jwt_2),
            ("JWT_SECRET_PREVIOUS", jwt),
        ],
    )
    .await;
    once.page(client, &signed_a).await.expect(200);
    once.page(client, &before).await.expect(200);
    let twice = Restarted::start(
        &app,
        "jwt-3",
        &[
            ("UNSUBSCRIBE_SECRET", key_a),
            ("JWT_SECRET", jwt_3),
            ("JWT_SECRET_PREVIOUS", jwt_2),
        ],
    )
    .await;
    twice.page(client, &signed_a).await.expect(200);
    assert!(digest_is_on(&app, &employer).await);
    twice.one_click(client, &signed_a).await.expect(200);
    assert!(!digest_is_on(&app, &employer).await);
    // The link signed before the key existed went with the JWT secret that signed it.
    twice
        .page(client, &before)
        .await
        .expect_problem(404, "not-found");

    // The key rotated on its own: the previous one still verifies, the new one signs.
    let rotated = Restarted::start(
        &app,
        "key-b",
        &[
            ("UNSUBSCRIBE_SECRET", key_b),
            ("UNSUBSCRIBE_SECRET_PREVIOUS", key_a),
            ("JWT_SECRET", jwt_3),
        ],
    )
    .await;
    rotated.page(client, &signed_a).await.expect(200);
    assert!(digest_is_on(&app, &other).await);
    rotated.one_click(client, &signed_b).await.expect(200);
    assert!(!digest_is_on(&app, &other).await);
    // Once the previous key is dropped, its links stop working.
    let dropped = Restarted::start(
        &app,
        "key-b-only",
        &[("UNSUBSCRIBE_SECRET", key_b), ("JWT_SECRET", jwt_3)],
    )
    .await;
    dropped
        .page(client, &signed_a)
        .await
        .expect_problem(404, "not-found");
    dropped.page(client, &signed_b).await.expect(200);
}

/// The path is percent-decoded before the token is read, so a percent-encoded spelling of a
/// token is the same token (any character, or all of them); an encoded spelling of anything
/// else (padding, a character changed) is 404 as it would be unencoded.
async fn a_percent_encoded_spelling_is_the_same_token(app: TestApp) {
    let employer = app.user("employer").await;
    let token = unsubscribe::token(
        SECRET,
        Target::Digest {
            user_id: employer.id,
        },
    );
    let encoded = |t: &str, every: bool| -> String {
        t.bytes()
            .enumerate()
            .map(|(i, b)| {
                if every || i == 0 {
                    format!("%{b:02X}")
                } else {
                    (b as char).to_string()
                }
            })
            .collect()
    };
    for spelling in [encoded(&token, false), encoded(&token, true)] {
        assert_ne!(spelling, token);
        let path = format!("/api/unsubscribe/{spelling}");
        let r = app.get(&path, None).await;
        r.expect(200);
        assert!(
            r.text.contains("the hourly digest of new applications"),
            "{}",
            r.text
        );
    }
    let path = format!("/api/unsubscribe/{}", encoded(&token, true));
    one_click(&app, &path).await.expect(200);
    assert!(!digest_is_on(&app, &employer).await);
    let first = token.as_bytes()[0];
    let changed = if first == b'A' { 'B' } else { 'A' };
    for spelling in [
        format!("{token}%3D%3D"),
        format!("%{:02X}{}", changed as u8, &token[1..]),
        encoded(&format!("{token}A"), true),
    ] {
        let path = format!("/api/unsubscribe/{spelling}");
        app.get(&path, None).await.expect_problem(404, "not-found");
    }
}

/// A link followed again after it did its work says so, with no button; once the person turned
/// the digest on again, the page offers the button again.
async fn the_page_says_when_it_is_done_already(app: TestApp) {
    let employer = app.user("employer").await;
    let path = digest_path(SECRET, employer.id);
    let r = app.get(&path, None).await;
    r.expect(200);
    assert!(r.text.contains("<form method=\"post\">"), "{}", r.text);
    assert!(!r.text.contains("lready"), "{}", r.text);
    one_click(&app, &path).await.expect(200);
    for _ in 0..2 {
        let r = app.get(&path, None).await;
        r.expect(200);
        assert!(
            r.text.contains(
                "Done already: you no longer receive the hourly digest of new applications."
            ),
            "{}",
            r.text
        );
        assert!(!r.text.contains("<form"), "no button: {}", r.text);
        assert!(!r.text.contains("Nothing changes until"), "{}", r.text);
        assert!(
            r.text.contains("You can turn it on again"),
            "says how to undo it: {}",
            r.text
        );
    }
    // The POST is still the same 200.
    one_click(&app, &path).await.expect(200);
    app.patch(
        "/api/me/notifications",
        Some(&employer.token),
        json!({"application_digest": true}),
    )
    .await
    .expect(200);
    let r = app.get(&path, None).await;
    r.expect(200);
    assert!(r.text.contains("<form method=\"post\">"), "{}", r.text);
    assert!(!r.text.contains("lready"), "{}", r.text);
}
