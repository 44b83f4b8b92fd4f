//! The strict reading of `GET /api/jobs`'s query string: an empty `ids=`, a repeated
//! parameter, a boolean other than `true`/`false`, a NUL in `q` and an id past 2^53 are each
//! 422 naming the parameter, never a search that quietly means something else.

use crate::each_store;
use crate::helpers::*;
use serde_json::json;

each_store!(
    an_empty_ids_is_422_not_the_unfiltered_search,
    a_repeated_parameter_is_422_naming_it,
    booleans_are_exactly_true_or_false,
    a_nul_in_q_is_422,
    ids_past_2_pow_53_are_422,
);

async fn an_empty_ids_is_422_not_the_unfiltered_search(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({})).await;
    for url in ["/api/jobs?ids=", "/api/jobs?ids", "/api/jobs?q=rust&ids="] {
        let r = app.get(url, None).await;
        names_only(&r, url, "ids");
    }
}

async fn a_repeated_parameter_is_422_naming_it(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({})).await;
    for (url, field) in [
        ("/api/jobs?remote=true&remote=false", "remote"),
        ("/api/jobs?q=rust&q=go", "q"),
        ("/api/jobs?page=1&page=2", "page"),
        ("/api/jobs?company_id=1&company_id=", "company_id"),
        ("/api/jobs?sort=newest&sort=newest", "sort"),
    ] {
        let r = app.get(url, None).await;
        names_only(&r, url, field);
    }
    app.get("/api/jobs?q=engineer&page=1", None)
        .await
        .expect(200);
}

async fn booleans_are_exactly_true_or_false(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({})).await;
    for v in ["1", "0", "TRUE", "False", "yes", " true"] {
        let url = format!("/api/jobs?remote={}", urlencode(v));
        let r = app.get(&url, None).await;
        names_only(&r, &url, "remote");
    }
    for v in ["true", "false"] {
        app.get(&format!("/api/jobs?remote={v}"), None)
            .await
            .expect(200);
    }
}

async fn a_nul_in_q_is_422(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    app.job(&e, c, json!({})).await;
    for url in ["/api/jobs?q=%00", "/api/jobs?q=rust%00engineer"] {
        let r = app.get(url, None).await;
        names_only(&r, url, "q");
    }
}

async fn ids_past_2_pow_53_are_422(app: TestApp) {
    // 2^53 − 1 is the largest id a JSON client reads exactly; it names no company here.
    app.get("/api/jobs?company_id=9007199254740991", None)
        .await
        .expect(200);
    let url = "/api/jobs?company_id=9007199254740992";
    names_only(&app.get(url, None).await, url, "company_id");

    let cand = app.user("candidate").await;
    for (id, status) in [(9_007_199_254_740_992_i64, 422), (i64::MAX, 422)] {
        let r = app
            .post(
                "/api/alerts",
                Some(&cand.token),
                json!({"search": {"company_id": id}, "frequency": "daily"}),
            )
            .await;
        let p = r.expect_problem(status, "validation");
        assert!(p["errors"]["search.company_id"].is_array(), "{}", r.text);
    }
    let r = app.get("/api/alerts", Some(&cand.token)).await;
    assert_eq!(
        r.expect(200)["items"].as_array().map(Vec::len),
        Some(0),
        "{}",
        r.text
    );
}

fn urlencode(v: &str) -> String {
    url::form_urlencoded::byte_serialize(v.as_bytes()).collect()
}
