//! One clock: an API or worker process whose wall clock is off the database's stamps and judges
//! by the database's clock, so that it loses nothing from a digest and expires nothing early.
//!
//! The processes are the real `jobboard` binary run under libfaketime (Debian's `faketime`,
//! which `scripts/services` installs): `LD_PRELOAD` and `FAKETIME` move that one process's wall
//! clock (`clock_gettime`, which Rust's `SystemTime` calls through libc), while PostgreSQL keeps
//! the true one. Each case first checks that the skew took, by the HTTP `Date` header the
//! process sends. PostgreSQL only: SQLite runs inside the process, so its clock is the
//! process's own and moves with it, and there is no second clock to disagree with.

use crate::helpers::*;
use chrono::{DateTime, Duration, DurationRound, Utc};
use jobboard::domain::event::{EventKind, parse_event};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_jobboard");

mod postgres {
    use crate::helpers::{Backend, CacheKind, TestApp};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_api_ten_minutes_behind_stamps_the_databases_time() {
        let app = TestApp::spawn(Backend::Postgres, CacheKind::Memory).await;
        super::an_api_off_stamps_the_databases_time(&app, -600).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_api_ten_minutes_ahead_stamps_the_databases_time() {
        let app = TestApp::spawn(Backend::Postgres, CacheKind::Memory).await;
        super::an_api_off_stamps_the_databases_time(&app, 600).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_alert_made_on_an_api_ten_minutes_ahead_misses_no_job() {
        let app = TestApp::spawn(Backend::Postgres, CacheKind::Memory).await;
        super::an_alert_made_ahead_misses_no_job(&app, 600).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_api_behind_into_a_written_hour_and_day_loses_nothing_from_a_digest() {
        let app = TestApp::spawn(Backend::Postgres, CacheKind::Memory).await;
        super::an_api_behind_loses_nothing_from_a_digest(&app).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_worker_ahead_past_the_days_end_writes_no_digest_early_and_expires_no_job_early() {
        let app = TestApp::spawn(Backend::Postgres, CacheKind::Memory).await;
        super::a_worker_ahead_writes_nothing_early(&app).await;
    }
}

/// libfaketime's library for this machine; the case fails, saying how to get it, without it.
fn libfaketime() -> String {
    let path = format!(
        "/usr/lib/{}-linux-gnu/faketime/libfaketime.so.1",
        std::env::consts::ARCH
    );
    assert!(
        std::path::Path::new(&path).exists(),
        "{path} is missing: these cases need libfaketime (apt-get install faketime; \
         scripts/services installs it)"
    );
    path
}

/// The database's clock now.
async fn db_now(app: &TestApp) -> DateTime<Utc> {
    let us = app
        .scalar_i64("SELECT CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)")
        .await;
    DateTime::from_timestamp_micros(us).unwrap()
}

fn time(v: &Value) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(v.as_str().unwrap_or_else(|| panic!("a time: {v}")))
        .unwrap()
        .with_timezone(&Utc)
}

/// `what` (a time the API answered) was read from the database's clock between `before` and
/// `after` (two readings of it around the request), give or take a second.
#[track_caller]
fn stamped(what: &str, v: &Value, before: DateTime<Utc>, after: DateTime<Utc>) {
    stamped_at(what, time(v), before, after)
}

#[track_caller]
fn stamped_at(what: &str, t: DateTime<Utc>, before: DateTime<Utc>, after: DateTime<Utc>) {
    let slack = Duration::seconds(1);
    assert!(
        t >= before - slack && t <= after + slack,
        "{what} is {t}, but the database's clock read {before} to {after} around the request \
         (off by {} s)",
        (t - before).num_seconds()
    );
}

/// A `jobboard` process (`serve` or `worker`) on `app`'s database whose wall clock is `skew`
/// seconds off the true one (negative: behind), and a client for its HTTP listener.
struct Skewed {
    base: String,
    client: reqwest::Client,
    _child: tokio::process::Child,
}

impl Skewed {
    async fn start(app: &TestApp, command: &str, skew: i64, env: &[(&str, &str)]) -> Skewed {
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.arg(command)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(&app.vars)
            .env("SEARCH_INDEX_DIR", app.search_dir(&unique("skewed")))
            .env("WORKER_HTTP_ADDR", "127.0.0.1:0")
            .env("EMAIL_BACKEND", "file")
            .env("LOG_FORMAT", "json")
            .env("LD_PRELOAD", libfaketime())
            .env("FAKETIME", format!("{skew:+}"))
            // The wall clock alone: timers and deadlines (the monotonic clock) run true.
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1")
            .env("DONT_FAKE_MONOTONIC", "1")
            // Files' times as the file system has them (the search index's files).
            .env("NO_FAKE_STAT", "1")
            .envs(env.iter().copied())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn jobboard");
        let marker = match command {
            "worker" => "worker health and metrics on http://",
            _ => "listening on http://",
        };
        let addr = address_in_stderr(&mut child, marker).await;
        let process = Skewed {
            base: format!("http://{addr}"),
            client: reqwest::Client::new(),
            _child: child,
        };
        // The skew took: the process's own `Date` header is that far from the true time.
        let r = process
            .send(reqwest::Method::GET, "/healthz", None, None)
            .await;
        let date = r.header("date").expect("a Date header");
        let shown = DateTime::parse_from_rfc2822(date)
            .unwrap_or_else(|e| panic!("Date {date:?}: {e}"))
            .with_timezone(&Utc);
        let off = (shown - Utc::now()).num_seconds();
        assert!(
            (off - skew).abs() <= 5,
            "the process's clock is {off} s off, not {skew} s: libfaketime did not take"
        );
        process
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        TestApp::read(req.send().await.expect("request")).await
    }

    async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Resp {
        self.send(reqwest::Method::POST, path, token, Some(body))
            .await
    }

    async fn patch(&self, path: &str, token: Option<&str>, body: Value) -> Resp {
        self.send(reqwest::Method::PATCH, path, token, Some(body))
            .await
    }

    /// Registers a user with `role` here and signs them in here (a token is judged by the clock
    /// of the process that made it).
    async fn user(&self, role: &str) -> User {
        let email = format!("{}@example.com", unique(role));
        let password = "a long enough passphrase".to_string();
        let body = json!({"email": email, "password": password, "name": role, "role": role});
        let id = self
            .post("/api/auth/register", None, body)
            .await
            .expect(201)["id"]
            .as_i64()
            .unwrap();
        let token = self.login(&email, &password).await;
        User {
            id,
            email,
            password,
            token,
        }
    }

    async fn login(&self, email: &str, password: &str) -> String {
        let body = json!({"email": email, "password": password});
        self.post("/api/auth/token", None, body).await.expect(200)["access_token"]
            .as_str()
            .unwrap()
            .to_string()
    }

    async fn company(&self, owner: &User) -> i64 {
        self.post(
            "/api/companies",
            Some(&owner.token),
            json!({"name": "Acme"}),
        )
        .await
        .expect(201)["id"]
            .as_i64()
            .unwrap()
    }
}

fn job_body(company: i64, title: &str) -> Value {
    json!({
        "company_id": company, "title": title, "description": "Weld the frames",
        "location": "Berlin", "remote": false, "employment_type": "full_time",
    })
}

/// Through an API process `skew` seconds off: a job's creation (with its default date), a
/// member's change and renewal, an operator's approval, an application and its status change,
/// and an alert are all stamped with the database's time, and the dates run from it.
async fn an_api_off_stamps_the_databases_time(app: &TestApp, skew: i64) {
    let api = Skewed::start(app, "serve", skew, &[]).await;
    let moderated = Skewed::start(app, "serve", skew, &[("JOB_MODERATION", "true")]).await;
    let posting = Duration::days(30);
    let employer = api.user("employer").await;
    let company = api.company(&employer).await;

    // A job opens at its creation, for JOB_POSTING_DAYS from it.
    let before = db_now(app).await;
    let r = api
        .post(
            "/api/jobs",
            Some(&employer.token),
            job_body(company, "Welder"),
        )
        .await;
    let job = r.expect(201).clone();
    let after = db_now(app).await;
    stamped("a new job's created_at", &job["created_at"], before, after);
    stamped("a new job's updated_at", &job["updated_at"], before, after);
    stamped_at(
        "a new job's expires_at less JOB_POSTING_DAYS",
        time(&job["expires_at"]) - posting,
        before,
        after,
    );
    let job_id = job["id"].as_i64().unwrap();
    let db_created: String = app
        .scalar_text(&format!(
            "SELECT to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"') \
             FROM jobs WHERE id = {job_id}"
        ))
        .await
        .unwrap();
    assert_eq!(json!(db_created), job["created_at"], "as stored");

    // A member's change and renewal.
    let before = db_now(app).await;
    let r = api
        .patch(
            &format!("/api/jobs/{job_id}"),
            Some(&employer.token),
            json!({"title": "Senior Welder"}),
        )
        .await;
    let after = db_now(app).await;
    stamped(
        "a changed job's updated_at",
        &r.expect(200)["updated_at"],
        before,
        after,
    );
    let before = db_now(app).await;
    let r = api
        .post(
            &format!("/api/jobs/{job_id}/renew"),
            Some(&employer.token),
            json!({}),
        )
        .await;
    let renewed = r.expect(200).clone();
    let after = db_now(app).await;
    stamped(
        "a renewed job's updated_at",
        &renewed["updated_at"],
        before,
        after,
    );
    stamped_at(
        "a renewed job's expires_at less JOB_POSTING_DAYS",
        time(&renewed["expires_at"]) - posting,
        before,
        after,
    );

    // An application and its status change.
    let candidate = api.user("candidate").await;
    let before = db_now(app).await;
    let r = api
        .post(
            &format!("/api/jobs/{job_id}/applications"),
            Some(&candidate.token),
            json!({}),
        )
        .await;
    let application = r.expect(201).clone();
    let after = db_now(app).await;
    stamped(
        "an application's created_at",
        &application["created_at"],
        before,
        after,
    );
    let before = db_now(app).await;
    let r = api
        .patch(
            &format!("/api/applications/{}", application["id"]),
            Some(&employer.token),
            json!({"status": "reviewing"}),
        )
        .await;
    let after = db_now(app).await;
    stamped(
        "a status change's updated_at",
        &r.expect(200)["updated_at"],
        before,
        after,
    );

    // An alert: its creation is where its first digest starts.
    let before = db_now(app).await;
    let r = api
        .post(
            "/api/alerts",
            Some(&candidate.token),
            json!({"search": {"q": "welder"}, "frequency": "daily"}),
        )
        .await;
    let after = db_now(app).await;
    stamped(
        "an alert's created_at",
        &r.expect(201)["created_at"],
        before,
        after,
    );

    // Under moderation: the job waits, then opens at its approval, for JOB_POSTING_DAYS.
    let before = db_now(app).await;
    let r = moderated
        .post(
            "/api/jobs",
            Some(&employer.token),
            job_body(company, "Fitter"),
        )
        .await;
    let waiting = r.expect(201).clone();
    let after = db_now(app).await;
    assert_eq!(waiting["status"], "pending_review");
    stamped(
        "a waiting job's created_at",
        &waiting["created_at"],
        before,
        after,
    );
    let operator = moderated.user("candidate").await;
    let (code, out, err) = app.cli(&["admin", "grant", &operator.email]).await;
    assert_eq!(code, Some(0), "admin grant: {out}{err}");
    let before = db_now(app).await;
    let r = moderated
        .post(
            &format!("/api/admin/jobs/{}/approve", waiting["id"]),
            Some(&operator.token),
            json!({}),
        )
        .await;
    let approved = r.expect(200).clone();
    let after = db_now(app).await;
    assert_eq!(approved["status"], "open");
    stamped(
        "an approval's created_at",
        &approved["created_at"],
        before,
        after,
    );
    stamped(
        "an approval's updated_at",
        &approved["updated_at"],
        before,
        after,
    );
    assert_eq!(
        time(&approved["expires_at"]),
        time(&approved["created_at"]) + posting,
        "open for JOB_POSTING_DAYS from its approval"
    );
}

/// A worker of `app` on the true clock (the in-process one).
async fn worker(app: &TestApp) -> jobboard::worker::Worker {
    jobboard::run::build_worker(&app.config(&[]), app.state.store.clone())
        .await
        .expect("worker")
}

/// Every `applications.digest` written: (the member, the applications listed).
async fn applications_digests(app: &TestApp) -> Vec<(i64, Vec<i64>)> {
    let n = app
        .scalar_i64("SELECT COUNT(*) FROM events WHERE type = 'applications.digest'")
        .await;
    let mut out = Vec::new();
    for i in 0..n {
        let body = app
            .scalar_text(&format!(
                "SELECT body FROM events WHERE type = 'applications.digest' \
                 ORDER BY event_id LIMIT 1 OFFSET {i}"
            ))
            .await
            .unwrap();
        if let EventKind::ApplicationsDigest {
            user_id,
            applications,
            ..
        } = parse_event(&body).unwrap().kind
        {
            out.push((user_id, applications));
        }
    }
    out
}

/// The jobs listed by alert `alert`'s digests.
async fn alert_digest_jobs(app: &TestApp, alert: i64) -> Vec<i64> {
    let n = app
        .scalar_i64("SELECT COUNT(*) FROM events WHERE type = 'alert.digest'")
        .await;
    let mut out = Vec::new();
    for i in 0..n {
        let body = app
            .scalar_text(&format!(
                "SELECT body FROM events WHERE type = 'alert.digest' \
                 ORDER BY event_id LIMIT 1 OFFSET {i}"
            ))
            .await
            .unwrap();
        if let EventKind::AlertDigest { alert_id, jobs, .. } = parse_event(&body).unwrap().kind
            && alert_id == alert
        {
            out.extend(jobs);
        }
    }
    out
}

/// The candidate's daily alert for welders, made on the in-process API (the true clock).
async fn welder_alert(app: &TestApp, candidate: &User) -> i64 {
    app.post(
        "/api/alerts",
        Some(&candidate.token),
        json!({"search": {"q": "welder"}, "frequency": "daily"}),
    )
    .await
    .expect(201)["id"]
        .as_i64()
        .unwrap()
}

/// An API process behind the database by more than the day so far, and an hour more, so that
/// its clock is in an hour and a day whose digests the upkeep has already written. Its new job
/// and application must still reach the digests the upkeep writes next (an hour, a day later
/// by the database's clock), as they do when stamped with the database's time.
async fn an_api_behind_loses_nothing_from_a_digest(app: &TestApp) {
    let now = db_now(app).await;
    let day_so_far = now - now.duration_trunc(Duration::days(1)).unwrap();
    let skew = -(day_so_far.num_seconds() + 70 * 60);

    // A daily alert made on the true clock, and the upkeep's runs so far: the last ended hour
    // and day are written.
    let watcher = app.user("candidate").await;
    let alert = welder_alert(app, &watcher).await;
    let upkeep = worker(app).await;
    upkeep.write_digests(db_now(app).await).await.unwrap();
    upkeep.write_alert_digests(db_now(app).await).await.unwrap();

    // Then a job and an application through the API that is behind.
    let api = Skewed::start(app, "serve", skew, &[]).await;
    let employer = api.user("employer").await;
    let company = api.company(&employer).await;
    let job = api
        .post(
            "/api/jobs",
            Some(&employer.token),
            job_body(company, "Welder"),
        )
        .await;
    let job_id = job.expect(201)["id"].as_i64().unwrap();
    let candidate = api.user("candidate").await;
    let application = api
        .post(
            &format!("/api/jobs/{job_id}/applications"),
            Some(&candidate.token),
            json!({}),
        )
        .await;
    let application_id = application.expect(201)["id"].as_i64().unwrap();

    // The upkeep an hour later lists the application; a day later, the job.
    let later = db_now(app).await;
    upkeep
        .write_digests(later + Duration::minutes(63))
        .await
        .unwrap();
    let digests = applications_digests(app).await;
    assert!(
        digests
            .iter()
            .any(|(user, listed)| *user == employer.id && listed.contains(&application_id)),
        "application {application_id} is in no digest of its employer: {digests:?}"
    );
    upkeep
        .write_alert_digests(later + Duration::days(1) + Duration::minutes(3))
        .await
        .unwrap();
    let listed = alert_digest_jobs(app, alert).await;
    assert_eq!(listed, vec![job_id], "the alert's digest lists the new job");
}

/// An alert made through an API process ahead of the database, then a matching job made at
/// once on the true clock: the alert's digest lists the job (an alert starts at its creation,
/// which must not be in the database's future).
async fn an_alert_made_ahead_misses_no_job(app: &TestApp, skew: i64) {
    let api = Skewed::start(app, "serve", skew, &[]).await;
    let watcher = api.user("candidate").await;
    let alert = api
        .post(
            "/api/alerts",
            Some(&watcher.token),
            json!({"search": {"q": "plumber"}, "frequency": "daily"}),
        )
        .await
        .expect(201)["id"]
        .as_i64()
        .unwrap();
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Globex").await;
    let job = app
        .job(&employer, company, json!({"title": "Plumber"}))
        .await["id"]
        .as_i64()
        .unwrap();
    let upkeep = worker(app).await;
    let later = db_now(app).await + Duration::days(1) + Duration::minutes(3);
    upkeep.write_alert_digests(later).await.unwrap();
    assert_eq!(
        alert_digest_jobs(app, alert).await,
        vec![job],
        "the job made just after the alert is in its digest"
    );
}

/// A worker process ahead of the database past the end of the database's day (and so of its
/// hour), and by an hour at least: its upkeep marks no digest hour or day that has not ended by
/// the database's clock (so an application of this hour still gets its digest), and expires
/// no job whose date the database's clock has not reached.
async fn a_worker_ahead_writes_nothing_early(app: &TestApp) {
    let now = db_now(app).await;
    let tomorrow = now.duration_trunc(Duration::days(1)).unwrap() + Duration::days(1);
    let skew = ((tomorrow - now).num_seconds() + 180).max(3600);
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let expires_at = jobboard::timefmt::format(&(now + Duration::minutes(30)));
    let job = app
        .job(
            &employer,
            company,
            json!({"title": "Welder", "expires_at": expires_at}),
        )
        .await["id"]
        .as_i64()
        .unwrap();
    let candidate = app.user("candidate").await;
    let first = app.apply(&candidate, job).await["id"].as_i64().unwrap();

    let _worker = Skewed::start(app, "worker", skew, &[]).await;
    // Its first runs: the digests' marks, and the job's expiry notice (due within
    // JOB_EXPIRY_NOTICE_DAYS), which the job step writes.
    crate::worker::wait_until("the skewed worker's first upkeep runs", || async {
        app.scalar_i64("SELECT COUNT(*) FROM application_digest_hours")
            .await
            > 0
            && app
                .scalar_i64("SELECT COUNT(*) FROM alert_digest_periods")
                .await
                >= 2
            && app
                .scalar_i64(
                    "SELECT COUNT(*) FROM events WHERE type IN ('job.expiring', 'job.expired')",
                )
                .await
                > 0
    })
    .await;
    assert_eq!(
        app.scalar_i64(
            "SELECT COUNT(*) FROM application_digest_hours \
             WHERE hour >= date_trunc('hour', clock_timestamp())"
        )
        .await,
        0,
        "no hour marked written before it ended by the database's clock"
    );
    assert_eq!(
        app.scalar_i64(
            "SELECT COUNT(*) FROM alert_digest_periods \
             WHERE period = to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
        )
        .await,
        0,
        "no day marked written before it ended by the database's clock"
    );
    assert_eq!(
        app.scalar_text(&format!("SELECT status FROM jobs WHERE id = {job}"))
            .await
            .as_deref(),
        Some("open"),
        "the job is not expired before its date"
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM events WHERE type = 'job.expired'")
            .await,
        0,
        "no job.expired before the date"
    );

    // Applications of this hour, before and after the skewed worker's runs, reach the digest
    // written once the hour has ended.
    let other = app.user("candidate").await;
    let second = app.apply(&other, job).await["id"].as_i64().unwrap();
    worker(app)
        .await
        .write_digests(db_now(app).await + Duration::minutes(63))
        .await
        .unwrap();
    let digests = applications_digests(app).await;
    for application in [first, second] {
        assert!(
            digests
                .iter()
                .any(|(user, listed)| *user == employer.id && listed.contains(&application)),
            "application {application} is in no digest of its employer: {digests:?}"
        );
    }
}
