//! The public job pages (docs/api.md, "Public pages"): the status of each kind of job's
//! page, what an open job's page shows and its `JobPosting` data held against the properties
//! Google's job search requires and recommends, hostile employer text, conditional requests,
//! and the cache's versioned keys. The pages in a real browser are in `pages_browser.rs`.

use crate::helpers::*;
use reqwest::StatusCode;
use serde_json::{Value, json};

/// The board's public address in these tests: with a path, as behind a proxy.
pub const BASE: &str = "https://jobs.example.com/board";

/// The pages' policy, as `/console` has it.
pub const PAGE_CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; \
     frame-ancestors 'none'";

pub async fn board(backend: Backend, cache: CacheKind, env: &[(&str, &str)]) -> TestApp {
    let mut vars = vec![("PUBLIC_BASE_URL", BASE)];
    vars.extend_from_slice(env);
    TestApp::spawn_with(backend, cache, &vars).await
}

macro_rules! on_each_store {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use crate::helpers::{Backend, CacheKind};
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::board(Backend::Sqlite, CacheKind::Memory, &[]).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(super::board(Backend::Postgres, CacheKind::Memory, &[]).await).await
            }
        }
    )*};
}

macro_rules! on_each_backend {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use crate::helpers::{Backend, CacheKind};
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_memory() {
                super::$name(super::board(Backend::Sqlite, CacheKind::Memory, &[]).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_redis() {
                super::$name(super::board(Backend::Sqlite, CacheKind::Redis, &[]).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_memory() {
                super::$name(super::board(Backend::Postgres, CacheKind::Memory, &[]).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_redis() {
                super::$name(super::board(Backend::Postgres, CacheKind::Redis, &[]).await).await
            }
        }
    )*};
}

on_each_store!(
    each_kind_of_job_answers_with_its_status,
    an_open_jobs_page_shows_the_job_to_people_and_crawlers,
    hostile_text_stays_text,
    the_job_posting_holds_googles_properties,
    pages_answer_conditional_requests,
);
on_each_backend!(a_page_is_never_older_than_the_last_write);

/// An answer as it came, redirects not followed.
pub struct Page {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub text: String,
}

impl Page {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

pub async fn fetch(app: &TestApp, path: &str, headers: &[(&str, &str)]) -> Page {
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut req = client.get(app.url(path));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let res = req.send().await.expect("request");
    Page {
        status: res.status(),
        headers: res.headers().clone(),
        text: res.text().await.expect("body"),
    }
}

/// The page of `id`, through its redirect to the canonical address; that address's last
/// segment and the page.
pub async fn canonical_page(app: &TestApp, id: i64) -> (String, Page) {
    let first = fetch(app, &format!("/jobs/{id}"), &[]).await;
    let key = match first.status {
        StatusCode::OK => id.to_string(),
        StatusCode::MOVED_PERMANENTLY => {
            let location = first.header("location").expect("Location").to_string();
            location
                .strip_prefix("./")
                .unwrap_or_else(|| panic!("a Location relative to the page: {location}"))
                .to_string()
        }
        other => panic!("/jobs/{id}: {other} {}", first.text),
    };
    let page = fetch(app, &format!("/jobs/{key}"), &[]).await;
    assert_eq!(page.status, StatusCode::OK, "/jobs/{key}: {}", page.text);
    (key, page)
}

/// A description of 20 000 characters: `line` again and again, then `x` up to the length.
pub fn hostile_description(line: &str) -> String {
    let mut description = line.repeat(20_000 / line.chars().count());
    while description.chars().count() < 20_000 {
        description.push('x');
    }
    assert_eq!(description.chars().count(), 20_000);
    description
}

/// The page's `JobPosting` block, parsed; none when it has none.
pub fn job_posting(html: &str) -> Option<Value> {
    let open = "<script type=\"application/ld+json\">";
    let start = html.find(open)? + open.len();
    let end = start + html[start..].find("</script>").expect("the block ends");
    Some(serde_json::from_str(&html[start..end]).expect("the block is JSON"))
}

/// A job change the log records, as a write adds (for rows the tests change in SQL).
pub async fn log_change(app: &TestApp, job_id: i64) {
    app.exec(&format!(
        "INSERT INTO job_changes (job_id) VALUES ({job_id})"
    ))
    .await;
}

/// Midnight UTC `days` from now, as an API timestamp and as the page writes the day.
fn in_days(days: i64) -> (String, String) {
    let day = (chrono::Utc::now() + chrono::Duration::days(days)).date_naive();
    (
        format!("{}T00:00:00Z", day.format("%Y-%m-%d")),
        day.format("%-d %B %Y").to_string(),
    )
}

fn id_of(job: &Value) -> i64 {
    job["id"].as_i64().expect("job id")
}

/// What Google's job search documentation lists for `JobPosting` (developers.google.com/search/
/// docs/appearance/structured-data/job-posting): the required properties, with the rule on
/// `jobLocation` for jobs done entirely remotely, and the recommended ones, each with the form
/// it takes. An empty list: the posting keeps every rule.
pub fn google_problems(p: &Value) -> Vec<String> {
    let mut wrong = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            wrong.push(what.to_string());
        }
    };
    let text = |v: &Value| v.as_str().is_some_and(|s| !s.trim().is_empty());
    let date = |v: &Value| {
        v.as_str()
            .is_some_and(|s| chrono::DateTime::parse_from_rfc3339(s).is_ok())
    };
    check(
        p["@context"] == "https://schema.org/",
        "@context is schema.org",
    );
    check(p["@type"] == "JobPosting", "@type is JobPosting");
    // Required.
    check(text(&p["title"]), "title (required)");
    check(text(&p["description"]), "description (required)");
    check(date(&p["datePosted"]), "datePosted, ISO 8601 (required)");
    let org = &p["hiringOrganization"];
    check(
        org["@type"] == "Organization" && text(&org["name"]),
        "hiringOrganization, an Organization with a name (required)",
    );
    let remote = p["jobLocationType"] == "TELECOMMUTE";
    if remote {
        let areas = p["applicantLocationRequirements"].as_array();
        check(
            areas.is_some_and(|a| {
                !a.is_empty()
                    && a.iter().all(|x| {
                        ["Country", "State", "AdministrativeArea"]
                            .contains(&x["@type"].as_str().unwrap_or(""))
                            && text(&x["name"])
                    })
            }),
            "a TELECOMMUTE job's applicantLocationRequirements: Country, State or \
             AdministrativeArea, named (required for remote jobs)",
        );
    } else {
        check(
            p["jobLocationType"].is_null(),
            "jobLocationType is TELECOMMUTE when present",
        );
        let places = p["jobLocation"].as_array();
        check(
            places.is_some_and(|a| {
                !a.is_empty()
                    && a.iter().all(|x| {
                        let addr = &x["address"];
                        x["@type"] == "Place"
                            && addr["@type"] == "PostalAddress"
                            && ["addressLocality", "addressRegion", "addressCountry"]
                                .iter()
                                .any(|k| text(&addr[*k]))
                    })
            }),
            "jobLocation, Places with a PostalAddress (required unless TELECOMMUTE)",
        );
    }
    // Recommended, each in its form where present.
    if !p["validThrough"].is_null() {
        check(date(&p["validThrough"]), "validThrough, ISO 8601");
        check(
            p["validThrough"].as_str() > p["datePosted"].as_str(),
            "validThrough after datePosted",
        );
    }
    if !p["employmentType"].is_null() {
        let kinds = [
            "FULL_TIME",
            "PART_TIME",
            "CONTRACTOR",
            "TEMPORARY",
            "INTERN",
            "VOLUNTEER",
            "PER_DIEM",
            "OTHER",
        ];
        check(
            kinds.contains(&p["employmentType"].as_str().unwrap_or("")),
            "employmentType, one of Google's values",
        );
    }
    if !p["baseSalary"].is_null() {
        let s = &p["baseSalary"];
        let v = &s["value"];
        let currency = s["currency"].as_str().unwrap_or("");
        check(
            s["@type"] == "MonetaryAmount"
                && currency.len() == 3
                && currency.chars().all(|c| c.is_ascii_uppercase()),
            "baseSalary, a MonetaryAmount in an ISO 4217 currency",
        );
        check(
            v["@type"] == "QuantitativeValue"
                && ["HOUR", "DAY", "WEEK", "MONTH", "YEAR"]
                    .contains(&v["unitText"].as_str().unwrap_or(""))
                && (v["value"].is_number()
                    || v["minValue"].is_number()
                    || v["maxValue"].is_number())
                && v["minValue"].as_i64() <= v["maxValue"].as_i64().or(v["minValue"].as_i64()),
            "baseSalary.value, a QuantitativeValue with an amount or a range and a unitText",
        );
    }
    if !p["identifier"].is_null() {
        let i = &p["identifier"];
        check(
            i["@type"] == "PropertyValue" && text(&i["name"]) && text(&i["value"]),
            "identifier, a PropertyValue with a name and a value",
        );
    }
    if !p["directApply"].is_null() {
        check(p["directApply"].is_boolean(), "directApply, a boolean");
    }
    wrong
}

async fn each_kind_of_job_answers_with_its_status(app: TestApp) {
    let s = app.scenario().await;
    let open = s.job_id;
    let job = |title: &str| app.job(&s.employer, s.company_id, json!({"title": title}));
    let closed = id_of(&job("Closed role").await);
    app.patch(
        &format!("/api/jobs/{closed}"),
        Some(&s.employer.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    let expired = id_of(&job("Expired role").await);
    let pending = id_of(&job("Pending role").await);
    let rejected = id_of(&job("Rejected role").await);
    let deleted = id_of(&job("Deleted role").await);
    app.exec(&format!(
        "UPDATE jobs SET expires_at = '2020-01-01T00:00:00+00:00' WHERE id = {expired}; \
         UPDATE jobs SET status = 'pending_review' WHERE id = {pending}; \
         UPDATE jobs SET status = 'rejected', rejection_reason = 'no' WHERE id = {rejected};"
    ))
    .await;
    for id in [expired, pending, rejected] {
        log_change(&app, id).await;
    }
    app.delete(&format!("/api/jobs/{deleted}"), Some(&s.employer.token))
        .await
        .expect(204);

    // Open: 200, indexable, with its JobPosting; the bare id and a stale slug are 301.
    let (key, page) = canonical_page(&app, open).await;
    assert_eq!(key, format!("{open}-backend-engineer"));
    assert!(!page.text.contains("noindex"), "{}", page.text);
    assert!(job_posting(&page.text).is_some());
    for stale in [
        format!("{open}"),
        format!("{open}-old-title"),
        format!("0{open}-backend-engineer"),
        format!("{open}-"),
    ] {
        let r = fetch(&app, &format!("/jobs/{stale}"), &[]).await;
        assert_eq!(r.status, StatusCode::MOVED_PERMANENTLY, "{stale}");
        assert_eq!(
            r.header("location"),
            Some(format!("./{key}").as_str()),
            "{stale}"
        );
        assert_eq!(r.header("cache-control"), Some("no-cache"));
    }
    // Closed and expired: 200, say so, noindex, no JobPosting, no way to apply.
    for (id, says) in [
        (closed, "This job is closed"),
        (expired, "This job expired on 1 January 2020"),
    ] {
        let (_, page) = canonical_page(&app, id).await;
        assert!(page.text.contains(says), "{}", page.text);
        assert!(
            page.text
                .contains("<meta name=\"robots\" content=\"noindex\">"),
            "{}",
            page.text
        );
        assert!(job_posting(&page.text).is_none(), "{}", page.text);
        assert!(page.text.contains("no longer takes applications"));
        assert!(!page.text.contains("/applications</code>"));
    }
    // Deleted: 410; waiting for review, rejected, never a job, not an id: 404. Pages of their
    // own, never indexed, under the pages' policy.
    for (path, status) in [
        (format!("/jobs/{deleted}"), StatusCode::GONE),
        (format!("/jobs/{deleted}-deleted-role"), StatusCode::GONE),
        (format!("/jobs/{pending}"), StatusCode::NOT_FOUND),
        (
            format!("/jobs/{pending}-pending-role"),
            StatusCode::NOT_FOUND,
        ),
        (format!("/jobs/{rejected}"), StatusCode::NOT_FOUND),
        ("/jobs/999999".to_string(), StatusCode::NOT_FOUND),
        ("/jobs/x1".to_string(), StatusCode::NOT_FOUND),
        ("/jobs/9007199254740992".to_string(), StatusCode::NOT_FOUND),
    ] {
        let r = fetch(&app, &path, &[]).await;
        assert_eq!(r.status, status, "{path}: {}", r.text);
        assert_eq!(r.header("content-type"), Some("text/html; charset=utf-8"));
        assert_eq!(r.header("content-security-policy"), Some(PAGE_CSP));
        assert!(
            r.text
                .contains("<meta name=\"robots\" content=\"noindex\">")
        );
        assert!(r.text.contains("<h1>"), "{}", r.text);
    }
    // Even to the company's member who may see it through the API: the pages are anonymous.
    let r = app
        .client
        .get(app.url(&format!("/jobs/{pending}")))
        .bearer_auth(&s.employer.token)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    app.get(&format!("/api/jobs/{pending}"), Some(&s.employer.token))
        .await
        .expect(200);
}

async fn an_open_jobs_page_shows_the_job_to_people_and_crawlers(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme Robotics").await;
    let (closes, closes_day) = in_days(100);
    let job = app
        .job(
            &employer,
            company,
            json!({"title": "Senior Rust Engineer", "salary_min": 70000, "salary_max": 95000,
                   "description": "Build the API.\nShip it weekly.\n\nWork with a small team.",
                   "expires_at": closes}),
        )
        .await;
    let id = id_of(&job);
    let (key, page) = canonical_page(&app, id).await;
    let canonical = format!("{BASE}/jobs/{key}");
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("content-security-policy"), Some(PAGE_CSP));
    let html = &page.text;
    for want in [
        "<html lang=\"en\">".to_string(),
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">".into(),
        "<title>Senior Rust Engineer – Acme Robotics</title>".into(),
        format!("<link rel=\"canonical\" href=\"{canonical}\">"),
        format!("<meta property=\"og:url\" content=\"{canonical}\">"),
        "<meta property=\"og:title\" content=\"Senior Rust Engineer – Acme Robotics\">".into(),
        "<meta property=\"og:description\" content=\"Build the API. Ship it weekly. Work with a small team.\">".into(),
        format!(
            "<link rel=\"alternate\" type=\"application/atom+xml\" title=\"Jobs at Acme Robotics\" \
             href=\"{BASE}/jobs.atom?company_id={company}\">"
        ),
        "<h1 dir=\"auto\">Senior Rust Engineer</h1>".into(),
        "<p class=\"company\" dir=\"auto\">Acme Robotics</p>".into(),
        "<dt>Place</dt><dd dir=\"auto\">Berlin</dd>".into(),
        "<dt>Pay</dt><dd dir=\"auto\">70,000–95,000 USD a year</dd>".into(),
        "<dt>Kind</dt><dd dir=\"auto\">Full time</dd>".into(),
        format!("<dt>Closes</dt><dd dir=\"auto\"><time datetime=\"{closes}\">{closes_day}</time></dd>"),
        "<p>Build the API.<br>\nShip it weekly.</p>\n<p>Work with a small team.</p>".into(),
        format!("<code>POST {BASE}/api/jobs/{id}/applications</code>"),
        "<main>".into(),
        "<footer>".into(),
    ] {
        assert!(html.contains(&want), "{want}\nnot in\n{html}");
    }
    assert_eq!(html.matches("<h1").count(), 1);
    assert!(html.contains("<dt>Posted</dt>"));
    let posting = job_posting(html).expect("a JobPosting");
    assert_eq!(posting["url"], canonical);
    assert_eq!(posting["directApply"], false);

    // A board with its own front end: the Apply link is its, and applying is direct.
    let own = board(
        app.backend,
        CacheKind::Memory,
        &[(
            "APPLY_URL_TEMPLATE",
            "https://apply.example.com/jobs/{id}?via=board",
        )],
    )
    .await;
    let employer = own.user("employer").await;
    let company = own.company(&employer, "Acme").await;
    let id = id_of(&own.job(&employer, company, json!({})).await);
    let (_, page) = canonical_page(&own, id).await;
    assert!(
        page.text.contains(&format!(
            "<a class=\"apply\" href=\"https://apply.example.com/jobs/{id}?via=board\">Apply for this job</a>"
        )),
        "{}",
        page.text
    );
    assert_eq!(job_posting(&page.text).unwrap()["directApply"], true);
}

async fn hostile_text_stays_text(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    // What the text rules let through: markup, comment openers, quotes; 20 000 characters.
    let title = r#"</script><script>alert(1)</script> "Lead" 'Dev' <!-- & -->"#;
    let line = "</script><!-- <b>\"quoted\" & 'single'</b> -->\n";
    let description = hostile_description(line);
    let id = id_of(
        &app.job(
            &employer,
            company,
            json!({"title": title, "description": description, "location": "<Berlin> & \"Mitte\""}),
        )
        .await,
    );
    // And what rows from before the rules may hold: bidirectional controls, a line break and
    // a C0 control in one-line texts (folded to spaces, as emails show them).
    app.exec(&format!(
        "UPDATE companies SET name = 'Ac\u{202E}me\nCorp\u{7}' WHERE id = {company}; \
         UPDATE jobs SET description = description || '\u{2067}tail\u{2069}\u{202D}' WHERE id = {id};"
    ))
    .await;
    log_change(&app, id).await;

    let (_, page) = canonical_page(&app, id).await;
    let html = &page.text;
    // One script element, the data block, and nothing in it that could end it.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert_eq!(html.matches("</script>").count(), 1);
    assert!(!html.contains("<!--"), "no comment opener reaches the page");
    assert!(!html.contains("<b>"));
    let block_start = html.find("<script type=\"application/ld+json\">").unwrap();
    let block = &html[block_start + 35..html.find("</script>").unwrap()];
    assert!(!block.contains('<') && !block.contains('>'), "{block}");
    // No character that could reorder the page around it.
    for c in ['\u{202E}', '\u{2067}', '\u{2069}', '\u{202D}', '\u{7}'] {
        assert!(!html.contains(c), "{c:?} reached the page");
    }
    assert!(html.contains(
        "<h1 dir=\"auto\">&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt; &quot;Lead&quot; \
         &#39;Dev&#39; &lt;!-- &amp; --&gt;</h1>"
    ));
    assert!(
        html.contains("<p class=\"company\" dir=\"auto\">Ac me Corp</p>"),
        "{html}"
    );
    assert!(html.contains("&lt;Berlin&gt; &amp; &quot;Mitte&quot;"));
    assert!(html.contains("-&gt;<br>\n&lt;/script&gt;&lt;!-- &lt;b&gt;&quot;quoted&quot;"));
    assert!(html.contains("tail"));
    // The data reads back as the texts, as one line where they are one line.
    let p = job_posting(html).unwrap();
    assert_eq!(p["title"], title);
    assert_eq!(p["hiringOrganization"]["name"], "Ac me Corp");
    let described = p["description"].as_str().unwrap();
    assert!(
        described.starts_with("<p>&lt;/script&gt;&lt;!-- &lt;b&gt;"),
        "{described}"
    );
    assert!(
        described.ends_with("tail</p>\n"),
        "{}",
        &described[described.len() - 40..]
    );
    assert_eq!(
        described.matches("<br>").count(),
        20_000 / line.chars().count()
    );
    assert!(google_problems(&p).is_empty(), "{:?}", google_problems(&p));
}

async fn the_job_posting_holds_googles_properties(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let post = |extra: Value| app.job(&employer, company, extra);
    let (closes, _) = in_days(200);
    // Every field.
    let full = id_of(
        &post(
            json!({"title": "Welder", "salary_min": 40000, "salary_max": 52000,
                      "employment_type": "contract", "expires_at": closes}),
        )
        .await,
    );
    // Remote: where its candidates may live.
    let remote = id_of(
        &post(
            json!({"title": "Remote Welder", "remote": true, "location": "Germany",
                      "salary_min": 50000, "employment_type": "part_time"}),
        )
        .await,
    );
    // The fewest: no pay, no date (a job from before jobs expired).
    let fewest = id_of(&post(json!({"title": "Fewest", "employment_type": "internship"})).await);
    app.exec(&format!(
        "UPDATE jobs SET expires_at = NULL WHERE id = {fewest}"
    ))
    .await;
    log_change(&app, fewest).await;

    let posting = |id| {
        let app = &app;
        async move {
            let (key, page) = canonical_page(app, id).await;
            (key, job_posting(&page.text))
        }
    };
    let (key, p) = posting(full).await;
    let p = p.expect("a JobPosting");
    assert!(
        google_problems(&p).is_empty(),
        "{:?}: {p:#}",
        google_problems(&p)
    );
    assert_eq!(p["title"], "Welder");
    assert_eq!(p["description"], "<p>Build the API</p>\n");
    assert_eq!(
        p["hiringOrganization"],
        json!({"@type": "Organization", "name": "Acme"})
    );
    assert_eq!(
        p["jobLocation"],
        json!([{"@type": "Place", "address": {"@type": "PostalAddress", "addressLocality": "Berlin"}}])
    );
    assert_eq!(p["validThrough"], closes);
    assert_eq!(p["employmentType"], "CONTRACTOR");
    assert_eq!(
        p["baseSalary"],
        json!({"@type": "MonetaryAmount", "currency": "USD", "value":
            {"@type": "QuantitativeValue", "minValue": 40000, "maxValue": 52000, "unitText": "YEAR"}})
    );
    assert_eq!(
        p["identifier"],
        json!({"@type": "PropertyValue", "name": "Acme", "value": full.to_string()})
    );
    assert_eq!(p["directApply"], false);
    assert_eq!(p["url"], format!("{BASE}/jobs/{key}"));
    let created = app
        .get(&format!("/api/jobs/{full}"), None)
        .await
        .expect(200)["created_at"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(p["datePosted"], format!("{}Z", &created[..19]));

    let (_, p) = posting(remote).await;
    let p = p.expect("a JobPosting");
    assert!(
        google_problems(&p).is_empty(),
        "{:?}: {p:#}",
        google_problems(&p)
    );
    assert_eq!(p["jobLocationType"], "TELECOMMUTE");
    assert_eq!(
        p["applicantLocationRequirements"],
        json!([{"@type": "AdministrativeArea", "name": "Germany"}])
    );
    assert!(p["jobLocation"].is_null());
    assert_eq!(p["employmentType"], "PART_TIME");
    assert_eq!(
        p["baseSalary"]["value"],
        json!({"@type": "QuantitativeValue", "minValue": 50000, "unitText": "YEAR"})
    );

    let (_, p) = posting(fewest).await;
    let p = p.expect("a JobPosting");
    assert!(
        google_problems(&p).is_empty(),
        "{:?}: {p:#}",
        google_problems(&p)
    );
    assert!(p["validThrough"].is_null() && p["baseSalary"].is_null());
    assert_eq!(p["employmentType"], "INTERN");

    // A job that cannot state a required property gets no posting at all: no description; no
    // place on site; remote with nowhere its candidates may live.
    for extra in [
        json!({"description": ""}),
        json!({"location": ""}),
        json!({"location": "", "remote": true}),
    ] {
        let id = id_of(&post(extra.clone()).await);
        let (_, page) = canonical_page(&app, id).await;
        assert!(job_posting(&page.text).is_none(), "{extra}");
        assert!(
            !page.text.contains("noindex"),
            "the page itself stays indexable"
        );
    }
}

async fn pages_answer_conditional_requests(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let id = id_of(
        &app.job(&employer, company, json!({"title": "Welder"}))
            .await,
    );
    let path = format!("/jobs/{id}-welder");
    let first = fetch(&app, &path, &[]).await;
    assert_eq!(first.status, StatusCode::OK);
    let etag = first.header("etag").expect("an ETag").to_string();
    assert!(
        etag.starts_with('"') && etag.ends_with('"') && etag.len() > 10,
        "{etag}"
    );
    let modified = first
        .header("last-modified")
        .expect("Last-Modified")
        .to_string();
    assert!(modified.ends_with(" GMT"), "{modified}");
    assert_eq!(first.header("cache-control"), Some("no-cache"));

    let weak = format!("W/{etag}");
    let earlier = "Thu, 01 Jan 1970 00:00:01 GMT";
    for (headers, want) in [
        (vec![("if-none-match", etag.as_str())], 304),
        (vec![("if-none-match", weak.as_str())], 304),
        (vec![("if-none-match", "\"other\", *")], 304),
        (vec![("if-none-match", "\"other\"")], 200),
        (vec![("if-modified-since", modified.as_str())], 304),
        (vec![("if-modified-since", earlier)], 200),
        (vec![("if-modified-since", "not a date")], 200),
        // If-None-Match decides when both are sent.
        (
            vec![
                ("if-none-match", "\"other\""),
                ("if-modified-since", modified.as_str()),
            ],
            200,
        ),
    ] {
        let r = fetch(&app, &path, &headers).await;
        assert_eq!(r.status.as_u16(), want, "{headers:?}");
        assert_eq!(r.header("etag"), Some(etag.as_str()), "{headers:?}");
        assert_eq!(r.header("last-modified"), Some(modified.as_str()));
        if want == 304 {
            assert!(r.text.is_empty());
            assert_eq!(r.header("content-security-policy"), Some(PAGE_CSP));
        } else {
            assert_eq!(r.text, first.text);
        }
    }

    // A write: a new ETag and a later date, and the old validators get the new page.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    app.patch(
        &format!("/api/jobs/{id}"),
        Some(&employer.token),
        json!({"description": "Weld and teach"}),
    )
    .await
    .expect(200);
    for headers in [
        vec![("if-none-match", etag.as_str())],
        vec![("if-modified-since", modified.as_str())],
    ] {
        let r = fetch(&app, &path, &headers).await;
        assert_eq!(r.status, StatusCode::OK, "{headers:?}");
        assert!(r.text.contains("Weld and teach"));
        assert_ne!(r.header("etag"), Some(etag.as_str()));
        assert_ne!(r.header("last-modified"), Some(modified.as_str()));
    }
    // The style sheet too.
    let css = fetch(&app, "/pages/pages.css", &[]).await;
    assert_eq!(css.header("content-type"), Some("text/css; charset=utf-8"));
    let tag = css.header("etag").unwrap().to_string();
    let again = fetch(&app, "/pages/pages.css", &[("if-none-match", &tag)]).await;
    assert_eq!(again.status, StatusCode::NOT_MODIFIED);
}

async fn a_page_is_never_older_than_the_last_write(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let id = id_of(
        &app.job(&employer, company, json!({"title": "Welder"}))
            .await,
    );
    let path = format!("/jobs/{id}-welder");
    assert!(fetch(&app, &path, &[]).await.text.contains("Build the API"));
    // A change the log does not record (no write does that) is not seen: the page is the one
    // kept under the log's newest change...
    app.exec(&format!(
        "UPDATE jobs SET description = 'Changed behind the log' WHERE id = {id}"
    ))
    .await;
    assert!(fetch(&app, &path, &[]).await.text.contains("Build the API"));
    // ...until the log moves, as every write moves it.
    log_change(&app, id).await;
    assert!(
        fetch(&app, &path, &[])
            .await
            .text
            .contains("Changed behind the log")
    );
    // Each write is seen by the next request: an edit, a rename of the company, a close, a
    // deletion.
    app.patch(
        &format!("/api/jobs/{id}"),
        Some(&employer.token),
        json!({"description": "Edited"}),
    )
    .await
    .expect(200);
    assert!(fetch(&app, &path, &[]).await.text.contains("Edited"));
    app.patch(
        &format!("/api/companies/{company}"),
        Some(&employer.token),
        json!({"name": "Renamed Co"}),
    )
    .await
    .expect(200);
    assert!(fetch(&app, &path, &[]).await.text.contains("Renamed Co"));
    app.patch(
        &format!("/api/jobs/{id}"),
        Some(&employer.token),
        json!({"status": "closed"}),
    )
    .await
    .expect(200);
    assert!(
        fetch(&app, &path, &[])
            .await
            .text
            .contains("This job is closed")
    );
    app.delete(&format!("/api/jobs/{id}"), Some(&employer.token))
        .await
        .expect(204);
    assert_eq!(fetch(&app, &path, &[]).await.status, StatusCode::GONE);
}
