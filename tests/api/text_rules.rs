//! What people may write (docs/api.md): one-line texts (names, titles, locations, an
//! alert's words and place) refuse control characters, line and paragraph separators and
//! bidirectional controls with a 422 naming the field; descriptions keep their line breaks and
//! tabs, and nothing else of the kind.

use crate::helpers::*;
use serde_json::{Value, json};

crate::each_store!(
    validate_one_line_fields_refuse_controls,
    validate_descriptions_keep_line_breaks_and_tabs,
    validate_alert_words_are_bounded,
);

/// Text that would make a line of its own in an email, or read in another order than written.
const BREAKERS: [&str; 5] = [
    "Rust\r\nBcc: x@example.com",
    "Rust\nIMPORTANT",
    "Rust\u{2028}Engineer",
    "Rust \u{202e}reenigne",
    "Rust\u{0085}Engineer",
];

#[track_caller]
fn names_field(r: &Resp, field: &str, what: &str) {
    let p = r.expect_problem(422, "validation");
    assert!(
        p["errors"][field].is_array(),
        "{what}: expected an error naming {field}: {p}"
    );
}

async fn validate_one_line_fields_refuse_controls(app: TestApp) {
    let employer = app.user("employer").await;
    let candidate = app.user("candidate").await;
    let company = app.company(&employer, "Acme").await;
    let job = app.job(&employer, company, json!({})).await;
    let job_id = job["id"].as_i64().unwrap();
    for bad in BREAKERS {
        let what = format!("{bad:?}");
        let r = app
            .post(
                "/api/auth/register",
                None,
                json!({"email": format!("{}@example.com", unique("n")), "password": "a long enough passphrase",
                       "name": bad, "role": "candidate"}),
            )
            .await;
        names_field(&r, "name", &what);
        let r = app
            .post(
                "/api/companies",
                Some(&employer.token),
                json!({"name": bad}),
            )
            .await;
        names_field(&r, "name", &what);
        let r = app
            .patch(
                &format!("/api/companies/{company}"),
                Some(&employer.token),
                json!({"name": bad}),
            )
            .await;
        names_field(&r, "name", &what);
        for field in ["title", "location"] {
            let mut body = json!({
                "company_id": company, "title": "Backend Engineer", "description": "Build it",
                "location": "Berlin", "remote": false, "employment_type": "full_time",
            });
            body[field] = Value::from(bad);
            let r = app.post("/api/jobs", Some(&employer.token), body).await;
            names_field(&r, field, &what);
            let r = app
                .patch(
                    &format!("/api/jobs/{job_id}"),
                    Some(&employer.token),
                    json!({ field: bad }),
                )
                .await;
            names_field(&r, field, &what);
        }
        for field in ["q", "location"] {
            let r = app
                .post(
                    "/api/alerts",
                    Some(&candidate.token),
                    json!({"search": { field: bad }, "frequency": "daily"}),
                )
                .await;
            names_field(&r, &format!("search.{field}"), &what);
        }
    }
    // Nothing of it was stored.
    let r = app
        .get(&format!("/api/jobs/{job_id}"), Some(&employer.token))
        .await;
    assert_eq!(r.expect(200)["title"], "Backend Engineer");
}

async fn validate_descriptions_keep_line_breaks_and_tabs(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let text = "What you do:\n\t- build the API\r\n\t- run it";
    let job = app
        .job(&employer, company, json!({"description": text}))
        .await;
    assert_eq!(job["description"], text);
    let r = app
        .patch(
            &format!("/api/companies/{company}"),
            Some(&employer.token),
            json!({"description": text}),
        )
        .await;
    assert_eq!(r.expect(200)["description"], text);
    for bad in [
        "a\u{0085}b",
        "a\u{2028}b",
        "a\u{202e}b",
        "a\rb",
        "a\u{1b}[31mb",
    ] {
        let mut body = json!({
            "company_id": company, "title": "Backend Engineer", "location": "Berlin",
            "remote": false, "employment_type": "full_time",
        });
        body["description"] = Value::from(bad);
        let r = app.post("/api/jobs", Some(&employer.token), body).await;
        names_field(&r, "description", &format!("{bad:?}"));
    }
}

/// An alert's `q` and `location` are at most as long as the job fields they match.
async fn validate_alert_words_are_bounded(app: TestApp) {
    let candidate = app.user("candidate").await;
    let long = format!("{} w", "rust ".repeat(39));
    assert_eq!(long.chars().count(), 197);
    for field in ["q", "location"] {
        let too_long = format!("{long}xyzw");
        let r = app
            .post(
                "/api/alerts",
                Some(&candidate.token),
                json!({"search": { field: too_long }, "frequency": "daily"}),
            )
            .await;
        names_field(&r, &format!("search.{field}"), "201 code points");
        let r = app
            .post(
                "/api/alerts",
                Some(&candidate.token),
                json!({"search": { field: format!("{long}xyz") }, "frequency": "daily"}),
            )
            .await;
        r.expect(201);
    }
}
