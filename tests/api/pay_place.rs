//! Pay and place (CONTRACT.md §4): a job's `workplace`, `locations` and `salary` with their
//! currency and period, the older fields derived from them and still writable, the search's
//! `workplace=`, `country=`, `salary_currency=` and `workplace` facet, the alerts that save them,
//! `JOB_REQUIRE_SALARY`, and the `JobPosting` of a job's page.

use crate::each_store;
use crate::helpers::*;
use crate::pages::{canonical_page, google_problems, job_posting};
use serde_json::{Value, json};

each_store!(
    a_job_states_pay_and_place_and_reads_in_the_older_fields,
    the_older_fields_still_write_pay_and_place,
    pay_and_place_are_validated_by_field,
    a_patch_merges_pay_and_place,
    search_filters_by_workplace_country_and_currency,
    alerts_save_the_new_filters,
    a_board_may_require_a_salary,
    a_job_page_states_its_places_and_pay,
    hostile_place_names_stay_text_on_pages_and_in_feeds
);

fn errors(r: &Resp) -> Vec<String> {
    let body = r.expect_problem(422, "validation");
    body["errors"]
        .as_object()
        .unwrap_or_else(|| panic!("errors by field: {}", r.text))
        .keys()
        .cloned()
        .collect()
}

async fn a_job_states_pay_and_place_and_reads_in_the_older_fields(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app
        .job(
            &e,
            c,
            json!({"workplace": "hybrid",
                "locations": [{"city": "Berlin", "country": "de"},
                              {"city": "Austin", "region": "Texas", "country": "US"}],
                "salary": {"min": 40, "max": 60, "currency": "EUR", "period": "hour"}}),
        )
        .await;
    assert_eq!(job["workplace"], "hybrid");
    assert_eq!(
        job["locations"],
        json!([{"city": "Berlin", "region": null, "country": "DE"},
               {"city": "Austin", "region": "Texas", "country": "US"}])
    );
    assert_eq!(
        job["salary"],
        json!({"min": 40, "max": 60, "currency": "EUR", "period": "hour"})
    );
    // The older fields, derived.
    assert_eq!(job["remote"], false);
    assert_eq!(job["location"], "Berlin, DE");
    assert_eq!(
        (&job["salary_min"], &job["salary_max"]),
        (&json!(40), &json!(60))
    );
    // Read back alike.
    let id = job["id"].as_i64().unwrap();
    let read = app.get(&format!("/api/jobs/{id}"), None).await;
    let read = read.expect(200);
    for field in ["workplace", "locations", "salary", "location", "remote"] {
        assert_eq!(read[field], job[field], "{field}");
    }
    // Remote: `remote` is true, and no pay is `null`.
    let remote = app
        .job(
            &e,
            c,
            json!({"workplace": "remote", "locations": [{"city": "Anywhere", "country": "CA"}]}),
        )
        .await;
    assert_eq!(
        (&remote["remote"], &remote["salary"]),
        (&json!(true), &Value::Null)
    );
    assert_eq!(remote["salary_max"], Value::Null);
}

async fn the_older_fields_still_write_pay_and_place(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app
        .job(
            &e,
            c,
            json!({"location": "Remote EU", "remote": true, "salary_max": 90000}),
        )
        .await;
    assert_eq!(job["workplace"], "remote");
    assert_eq!(
        job["locations"],
        json!([{"city": "Remote EU", "region": null, "country": null}]),
        "the country is unknown until a member sets it"
    );
    assert_eq!(
        job["salary"],
        json!({"min": null, "max": 90000, "currency": "USD", "period": "year"}),
        "DEFAULT_SALARY_CURRENCY per year"
    );
    assert_eq!(job["location"], "Remote EU");
    // A job stored before pay and place (its new columns null) reads from the older ones.
    let id = job["id"].as_i64().unwrap();
    app.exec(&format!(
        "UPDATE jobs SET workplace = NULL, locations = NULL, salary_currency = NULL, \
         salary_period = NULL, remote = FALSE, location = 'Hamburg' WHERE id = {id}"
    ))
    .await;
    crate::pages::log_change(&app, id).await;
    let read = app.get(&format!("/api/jobs/{id}"), None).await;
    let read = read.expect(200);
    assert_eq!(read["workplace"], "onsite");
    assert_eq!(
        read["locations"],
        json!([{"city": "Hamburg", "region": null, "country": null}])
    );
    assert_eq!(read["salary"]["currency"], "USD");
    assert_eq!(read["salary"]["period"], "year");
    // A row an older release wrote during a rolling deploy (only its older columns): where
    // they contradict the new ones, they are the newer and win.
    app.exec(&format!(
        "UPDATE jobs SET workplace = 'remote', locations = '[{{\"city\": \"Paris\", \
         \"region\": null, \"country\": \"FR\"}}]', salary_currency = 'USD', \
         salary_period = 'year' WHERE id = {id}"
    ))
    .await;
    crate::pages::log_change(&app, id).await;
    let read = app.get(&format!("/api/jobs/{id}"), None).await;
    let read = read.expect(200);
    assert_eq!(
        read["workplace"], "onsite",
        "remote = false is not hybrid's"
    );
    assert_eq!(
        read["locations"],
        json!([{"city": "Hamburg", "region": null, "country": null}]),
        "the first place is not `location`"
    );
    // And the search finds it by the same values.
    let found = app
        .get(
            "/api/jobs?workplace=onsite&salary_currency=USD&salary_min=90000",
            None,
        )
        .await;
    let ids: Vec<i64> = found.expect(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [id]);
}

async fn pay_and_place_are_validated_by_field(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let valid = json!({"company_id": c, "title": "T", "description": "", "workplace": "onsite",
        "locations": [{"city": "Berlin", "country": "DE"}], "employment_type": "contract"});
    app.post("/api/jobs", Some(&e.token), valid.clone())
        .await
        .expect(201);
    let cases: Vec<(&str, Value, &str)> = vec![
        ("workplace", json!("office"), "workplace"),
        ("workplace", json!(null), "workplace"),
        ("locations", json!([]), "locations"),
        ("locations", json!("Berlin"), "locations"),
        (
            "locations",
            json!([{"city": "Berlin"}]),
            "locations[0].country",
        ),
        (
            "locations",
            json!([{"city": "Berlin", "country": "ZZ"}]),
            "locations[0].country",
        ),
        (
            "locations",
            json!([{"city": "", "country": "DE"}]),
            "locations[0].city",
        ),
        (
            "locations",
            json!([{"city": "Berlin\u{202e}", "country": "DE"}]),
            "locations[0].city",
        ),
        (
            "locations",
            json!([{"city": "B", "country": "DE", "zip": "1"}]),
            "locations[0].zip",
        ),
        (
            "locations",
            json!(
                (0..11)
                    .map(|_| json!({"city": "X", "country": "FR"}))
                    .collect::<Vec<_>>()
            ),
            "locations",
        ),
        (
            "salary",
            json!({"max": 1, "currency": "XYZ", "period": "year"}),
            "salary.currency",
        ),
        (
            "salary",
            json!({"max": 1, "currency": "usd", "period": "year"}),
            "salary.currency",
        ),
        (
            "salary",
            json!({"max": 1, "currency": "USD", "period": "fortnight"}),
            "salary.period",
        ),
        (
            "salary",
            json!({"min": 2, "max": 1, "currency": "USD", "period": "year"}),
            "salary.min",
        ),
        (
            "salary",
            json!({"currency": "USD", "period": "year"}),
            "salary",
        ),
        (
            "salary",
            json!({"max": 1_000_000_001i64, "currency": "USD", "period": "year"}),
            "salary.max",
        ),
        ("salary", json!(5), "salary"),
        // A field and its older form together.
        ("remote", json!(true), "remote"),
        ("location", json!("Paris"), "location"),
    ];
    for (field, value, named) in cases {
        let mut body = valid.clone();
        body[field] = value.clone();
        let r = app.post("/api/jobs", Some(&e.token), body).await;
        assert_eq!(errors(&r), [named], "{field}={value}: {}", r.text);
    }
    let mut body = valid.clone();
    body["salary"] = json!({"max": 1, "currency": "USD", "period": "year"});
    body["salary_min"] = json!(0);
    let r = app.post("/api/jobs", Some(&e.token), body).await;
    assert_eq!(errors(&r), ["salary_min"], "{}", r.text);
    // Neither form: both are required.
    let mut body = valid.clone();
    body.as_object_mut().unwrap().remove("workplace");
    body.as_object_mut().unwrap().remove("locations");
    let r = app.post("/api/jobs", Some(&e.token), body).await;
    assert_eq!(errors(&r), ["locations", "workplace"], "{}", r.text);
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM jobs").await, 1);
}

async fn a_patch_merges_pay_and_place(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let job = app
        .job(
            &e,
            c,
            json!({"workplace": "hybrid", "locations": [{"city": "Lyon", "country": "FR"}],
                "salary": {"min": 3000, "max": 4000, "currency": "EUR", "period": "month"}}),
        )
        .await;
    let path = format!("/api/jobs/{}", job["id"]);
    let patch = |body: Value| app.patch(&path, Some(&e.token), body);
    // An object merges into the salary.
    let r = patch(json!({"salary": {"max": 4500, "min": null}})).await;
    assert_eq!(
        r.expect(200)["salary"],
        json!({"min": null, "max": 4500, "currency": "EUR", "period": "month"})
    );
    // The older range, written alone, is in DEFAULT_SALARY_CURRENCY per year (the end not
    // sent stays as the older fields read it).
    let r = patch(json!({"salary_min": 4000})).await;
    assert_eq!(
        r.expect(200)["salary"],
        json!({"min": 4000, "max": 4500, "currency": "USD", "period": "year"})
    );
    let r = patch(json!({"salary": {"currency": "EUR", "period": "month"}})).await;
    assert_eq!(r.expect(200)["salary"]["currency"], "EUR");
    // `remote` sets the workplace; `location` one place, its country unknown.
    let r = patch(json!({"remote": true, "location": "Paris"})).await;
    let j = r.expect(200);
    assert_eq!(j["workplace"], "remote");
    assert_eq!(
        j["locations"],
        json!([{"city": "Paris", "region": null, "country": null}])
    );
    let r = patch(json!({"remote": false})).await;
    assert_eq!(r.expect(200)["workplace"], "onsite");
    let r = patch(
        json!({"locations": [{"city": "Paris", "region": "IDF", "country": "FR"}],
        "workplace": "hybrid"}),
    )
    .await;
    let j = r.expect(200);
    assert_eq!(j["location"], "Paris, IDF, FR");
    assert_eq!(j["workplace"], "hybrid");
    // A bad value changes nothing.
    let before = app.get(&path, None).await.expect(200).clone();
    let r = patch(json!({"salary": {"currency": "XYZ"}, "title": "Changed"})).await;
    assert_eq!(errors(&r), ["salary.currency"]);
    let r = patch(json!({"locations": null, "workplace": "remote"})).await;
    assert_eq!(errors(&r), ["locations"]);
    let r = patch(
        json!({"locations": [{"city": "c".repeat(100), "region": "r".repeat(100),
        "country": "FR"}]}),
    )
    .await;
    assert_eq!(
        errors(&r),
        ["locations[0]"],
        "the older location is at most 200"
    );
    assert_eq!(app.get(&path, None).await.expect(200), &before);
    // `null` clears the salary.
    let r = patch(json!({"salary": null})).await;
    let j = r.expect(200);
    assert_eq!(
        (&j["salary"], &j["salary_max"]),
        (&Value::Null, &Value::Null)
    );
    // A new salary needs its currency and period.
    let r = patch(json!({"salary": {"max": 10}})).await;
    assert_eq!(errors(&r), ["salary.currency"]);
    let r = patch(json!({"salary_max": 50000})).await;
    assert_eq!(
        r.expect(200)["salary"],
        json!({"min": null, "max": 50000, "currency": "USD", "period": "year"})
    );
}

/// The ids a search answers, in order.
async fn found(app: &TestApp, query: &str) -> Vec<i64> {
    let r = app.get(&format!("/api/jobs?{query}"), None).await;
    r.expect(200)["items"]
        .as_array()
        .unwrap_or_else(|| panic!("{query}: {}", r.text))
        .iter()
        .map(|j| j["id"].as_i64().unwrap())
        .collect()
}

async fn search_filters_by_workplace_country_and_currency(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let id = |j: Value| j["id"].as_i64().unwrap();
    // Newest first: d, c, b, a.
    let a = id(app
        .job(
            &e,
            c,
            json!({"workplace": "onsite", "locations": [{"city": "Munich", "country": "DE"}],
                "salary": {"max": 60000, "currency": "EUR", "period": "year"}}),
        )
        .await);
    // 40 an hour: 83 200 a year.
    let b = id(app
        .job(
            &e,
            c,
            json!({"workplace": "remote", "locations": [{"city": "New York", "country": "US"},
                {"city": "Toronto", "region": "Ontario", "country": "CA"}],
                "salary": {"min": 30, "max": 40, "currency": "USD", "period": "hour"}}),
        )
        .await);
    let no_pay = id(app
        .job(
            &e,
            c,
            json!({"workplace": "hybrid", "locations": [{"city": "Lyon", "country": "FR"}]}),
        )
        .await);
    // The older fields: USD a year.
    let d = id(app
        .job(&e, c, json!({"location": "Boston", "salary_max": 70000}))
        .await);
    assert_eq!(found(&app, "workplace=remote").await, [b]);
    assert_eq!(found(&app, "workplace=onsite").await, [d, a]);
    assert_eq!(found(&app, "remote=true").await, [b]);
    assert_eq!(found(&app, "country=CA").await, [b]);
    assert_eq!(found(&app, "country=de").await, [a]);
    assert_eq!(found(&app, "location=toronto").await, [b], "any place");
    assert_eq!(found(&app, "location=new%20york").await, [b]);
    // Without a currency: the stored max, as before (40 < 80 000), and no pay.
    assert_eq!(found(&app, "salary_min=80000").await, [no_pay]);
    // With one: that currency's yearly top, and no pay.
    assert_eq!(
        found(&app, "salary_min=80000&salary_currency=USD").await,
        [no_pay, b]
    );
    assert_eq!(
        found(&app, "salary_min=60000&salary_currency=USD").await,
        [d, no_pay, b]
    );
    assert_eq!(
        found(&app, "salary_min=50000&salary_currency=EUR").await,
        [no_pay, a]
    );
    assert_eq!(found(&app, "salary_currency=EUR").await, [no_pay, a]);
    assert_eq!(
        found(&app, "salary_min=60001&salary_currency=EUR").await,
        [no_pay]
    );
    // The facet counts every match.
    let r = app.get("/api/jobs?facets=workplace,remote", None).await;
    let facets = &r.expect(200)["facets"];
    assert_eq!(
        facets["workplace"],
        json!({"onsite": 2, "hybrid": 1, "remote": 1})
    );
    assert_eq!(facets["remote"], json!({"true": 1, "false": 3}));
    let r = app.get("/api/jobs?facets=workplace&country=US", None).await;
    assert_eq!(
        r.expect(200)["facets"]["workplace"],
        json!({"onsite": 0, "hybrid": 0, "remote": 1})
    );
    // Bad values name their parameter.
    for (query, field) in [
        ("workplace=office", "workplace"),
        ("country=ZZ", "country"),
        ("country=DEU", "country"),
        ("salary_currency=XYZ", "salary_currency"),
        ("facets=country", "facets"),
    ] {
        let r = app.get(&format!("/api/jobs?{query}"), None).await;
        assert_eq!(errors(&r), [field], "{query}");
    }
}

async fn alerts_save_the_new_filters(app: TestApp) {
    let cand = app.user("candidate").await;
    let r = app
        .post(
            "/api/alerts",
            Some(&cand.token),
            json!({"search": {"q": "rust", "workplace": "remote", "country": "de",
                "salary_min": 50000, "salary_currency": "EUR"}, "frequency": "daily"}),
        )
        .await;
    let alert = r.expect(201);
    assert_eq!(alert["search"]["workplace"], "remote");
    assert_eq!(alert["search"]["country"], "DE");
    assert_eq!(alert["search"]["salary_currency"], "EUR");
    let r = app.get("/api/alerts", Some(&cand.token)).await;
    assert_eq!(r.expect(200)["items"][0]["search"], alert["search"]);
    let r = app
        .post(
            "/api/alerts",
            Some(&cand.token),
            json!({"search": {"q": "rust", "workplace": "office", "country": "XX",
                "salary_currency": "eur"}, "frequency": "daily"}),
        )
        .await;
    assert_eq!(
        errors(&r),
        [
            "search.country",
            "search.salary_currency",
            "search.workplace"
        ]
    );
    // A plain alert leaves them null.
    let r = app
        .post(
            "/api/alerts",
            Some(&cand.token),
            json!({"search": {"q": "go"}, "frequency": "weekly"}),
        )
        .await;
    let s = &r.expect(201)["search"];
    assert_eq!(
        (&s["workplace"], &s["country"], &s["salary_currency"]),
        (&Value::Null, &Value::Null, &Value::Null)
    );
}

async fn a_board_may_require_a_salary(app: TestApp) {
    let app = TestApp::spawn_with(
        app.backend,
        CacheKind::Memory,
        &[("JOB_REQUIRE_SALARY", "true")],
    )
    .await;
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let body = json!({"company_id": c, "title": "T", "description": "", "workplace": "onsite",
        "locations": [{"city": "Berlin", "country": "DE"}], "employment_type": "contract"});
    let r = app.post("/api/jobs", Some(&e.token), body.clone()).await;
    assert_eq!(errors(&r), ["salary"]);
    let mut paid = body.clone();
    paid["salary"] = json!({"min": 50000, "max": 60000, "currency": "EUR", "period": "year"});
    let r = app.post("/api/jobs", Some(&e.token), paid).await;
    let path = format!("/api/jobs/{}", r.expect(201)["id"]);
    let r = app
        .patch(&path, Some(&e.token), json!({"salary": null}))
        .await;
    assert_eq!(errors(&r), ["salary"]);
    let r = app
        .patch(
            &path,
            Some(&e.token),
            json!({"salary_min": null, "salary_max": null}),
        )
        .await;
    assert_eq!(errors(&r), ["salary"]);
    // Other edits of a paid job pass.
    app.patch(&path, Some(&e.token), json!({"title": "U"}))
        .await
        .expect(200);
    // A job already without pay (made before the rule) keeps taking edits of its other
    // fields; writing its pay must give one.
    let id = path.rsplit('/').next().unwrap();
    app.exec(&format!(
        "UPDATE jobs SET salary_min = NULL, salary_max = NULL, salary_currency = NULL, \
         salary_period = NULL WHERE id = {id}"
    ))
    .await;
    crate::pages::log_change(&app, id.parse().unwrap()).await;
    app.patch(
        &path,
        Some(&e.token),
        json!({"title": "V", "status": "closed"}),
    )
    .await
    .expect(200);
    let r = app
        .patch(&path, Some(&e.token), json!({"salary_max": null}))
        .await;
    assert_eq!(errors(&r), ["salary"]);
}

async fn a_job_page_states_its_places_and_pay(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let hybrid = app
        .job(
            &e,
            c,
            json!({"workplace": "hybrid",
                "locations": [{"city": "Austin", "region": "Texas", "country": "US"}],
                "salary": {"min": 40, "max": 60, "currency": "USD", "period": "hour"}}),
        )
        .await;
    let (_, page) = canonical_page(&app, hybrid["id"].as_i64().unwrap()).await;
    let p = job_posting(&page.text).expect("a JobPosting");
    assert!(google_problems(&p).is_empty(), "{:?}", google_problems(&p));
    assert_eq!(
        p["jobLocation"],
        json!([{"@type": "Place", "address": {"@type": "PostalAddress",
            "addressLocality": "Austin", "addressRegion": "Texas", "addressCountry": "US"}}])
    );
    assert_eq!(
        p["baseSalary"],
        json!({"@type": "MonetaryAmount", "currency": "USD", "value":
            {"@type": "QuantitativeValue", "minValue": 40, "maxValue": 60, "unitText": "HOUR"}})
    );
    assert!(
        page.text.contains("Hybrid: Austin, Texas, US"),
        "{}",
        page.text
    );
    let remote = app
        .job(
            &e,
            c,
            json!({"workplace": "remote", "locations": [{"city": "Toronto", "country": "CA"}],
                "salary": {"max": 5000, "currency": "CAD", "period": "month"}}),
        )
        .await;
    let (_, page) = canonical_page(&app, remote["id"].as_i64().unwrap()).await;
    let p = job_posting(&page.text).expect("a JobPosting");
    assert!(google_problems(&p).is_empty(), "{:?}", google_problems(&p));
    assert_eq!(p["jobLocationType"], "TELECOMMUTE");
    assert_eq!(
        p["applicantLocationRequirements"],
        json!([{"@type": "AdministrativeArea", "name": "Toronto, CA"}])
    );
    assert_eq!(p["baseSalary"]["currency"], "CAD");
    assert_eq!(p["baseSalary"]["value"]["unitText"], "MONTH");
}

async fn hostile_place_names_stay_text_on_pages_and_in_feeds(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;
    let city = "</script><script>alert(1)</script>";
    let region = "\"&'<b>]]>";
    let job = app
        .job(
            &e,
            c,
            json!({"workplace": "hybrid",
                "locations": [{"city": city, "region": region, "country": "DE"}]}),
        )
        .await;
    // The API gives the text back as sent.
    assert_eq!(job["locations"][0]["city"], city);
    assert_eq!(job["locations"][0]["region"], region);
    let (_, page) = canonical_page(&app, job["id"].as_i64().unwrap()).await;
    assert!(!page.text.contains("<script>alert(1)"), "{}", page.text);
    assert!(!page.text.contains("<b>]]>"), "{}", page.text);
    // In the JSON-LD the same text, read back by a JSON parser.
    let p = job_posting(&page.text).expect("a JobPosting");
    let address = &p["jobLocation"][0]["address"];
    assert_eq!(address["addressLocality"], city);
    assert_eq!(address["addressRegion"], region);
    // The feed's entry, read by an XML parser's rules: escaped, no element made of it.
    let feed = app.get("/jobs.atom?country=DE", None).await;
    feed.expect(200);
    assert!(!feed.text.contains("<script>"), "{}", feed.text);
    assert!(!feed.text.contains("<b>"), "{}", feed.text);
    assert!(feed.text.contains("&lt;/script&gt;"), "{}", feed.text);
}
