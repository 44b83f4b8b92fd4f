//! The worker as a real process: killed with SIGKILL mid-flight and restarted, every event ends
//! with its email; plus the `cleanup` and `dlq` commands as an operator runs them.

use crate::helpers::*;
use crate::worker::{Harness, now_ms_sql, wait_until};
use serde_json::json;
use std::process::Stdio;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_jobboard");

/// Runs the binary with the app's database and the given variables (and nothing else from the
/// test's environment).
pub fn command(h: &Harness, args: &[&str], extra: &[(&str, &str)]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(BIN);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("DATABASE_URL", &h.app.database_url)
        .env("LOG_FORMAT", "json")
        .env("EMAIL_BACKEND", "smtp")
        .env("SMTP_URL", h.smtp.url())
        .env("WORKER_HTTP_ADDR", "127.0.0.1:0")
        .env("VISIBILITY_TIMEOUT_SECS", "2")
        .env("EMAIL_SEND_TIMEOUT_SECS", "1")
        .env("WORKER_CONCURRENCY", "4")
        .env("SHUTDOWN_GRACE_SECS", "10")
        .env("SEARCH_INDEX_DIR", h.app.search_dir(&args.join("-")))
        .kill_on_drop(true);
    if let Some(q) = &h.sqs {
        cmd.env("QUEUE", "sqs")
            .env("SQS_QUEUE_URL", &q.url)
            .env("SQS_DLQ_URL", &q.dlq);
        for var in [
            "AWS_ENDPOINT_URL",
            "AWS_REGION",
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
        ] {
            if let Ok(v) = std::env::var(var) {
                cmd.env(var, v);
            }
        }
    }
    for (k, v) in extra {
        cmd.env(k, v);
    }
    cmd
}

fn spawn_worker(h: &Harness, log: &std::path::Path) -> tokio::process::Child {
    let file = std::fs::File::create(log).unwrap();
    command(h, &["worker"], &[("CLAIM_MODE", h.mode)])
        .stdout(Stdio::null())
        .stderr(file)
        .spawn()
        .expect("spawn worker")
}

/// Five applications and twenty status changes; a worker process is killed (SIGKILL) while
/// sends are in flight and a new one finishes the job. Every event is emailed exactly once,
/// except for repeats in the one window the contract admits, each of which must show as a logged
/// reclaim.
pub async fn kill_and_restart(h: Harness) {
    let mut events = Vec::new();
    let s = h.app.scenario().await;
    let mut apps = vec![s.application_id];
    for _ in 0..4 {
        let c = h.app.user("candidate").await;
        apps.push(h.app.apply(&c, s.job_id).await["id"].as_i64().unwrap());
    }
    for app_id in &apps {
        events.push(h.last_submission(*app_id).await);
    }
    for app_id in &apps {
        for status in ["reviewing", "interview", "offered", "hired"] {
            h.app
                .patch(
                    &format!("/api/applications/{app_id}"),
                    Some(&s.employer.token),
                    json!({"status": status}),
                )
                .await
                .expect(200);
            events.push(h.last_event_id(*app_id).await);
        }
    }
    assert_eq!(events.len(), 25);
    h.smtp.set_delay(Duration::from_millis(150));
    let dir = tempfile::tempdir().unwrap();
    let mut first = spawn_worker(&h, &dir.path().join("first.log"));
    wait_until("some emails sent", || async { h.smtp.mails().len() >= 5 }).await;
    first.kill().await.expect("SIGKILL");
    let sent_before = h.smtp.mails().len();
    assert!(sent_before < 25, "killed mid-flight ({sent_before} sent)");

    let log = dir.path().join("second.log");
    let mut second = spawn_worker(&h, &log);
    wait_until("every event emailed", || async {
        events.iter().all(|e| h.smtp.count_for(e) >= 1)
    })
    .await;
    wait_until("queue drained", || async { h.queued().await == 0 }).await;
    let pid = second.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), second.wait())
        .await
        .expect("stops")
        .unwrap();
    assert_eq!(status.code(), Some(0), "graceful stop exits 0");

    let logs = std::fs::read_to_string(&log).unwrap();
    for line in logs.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|_| panic!("a JSON log line: {line}"));
        assert!(v["timestamp"].is_string() && v["level"].is_string() && v["target"].is_string());
        assert!(
            !line.contains("@example.com"),
            "no addresses in logs: {line}"
        );
    }
    let reclaims = logs.matches("reclaiming expired claim").count();
    let repeats: usize = events.iter().map(|e| h.smtp.count_for(e) - 1).sum();
    assert!(
        repeats <= reclaims,
        "{repeats} repeats but {reclaims} reclaims"
    );
    assert_eq!(h.smtp.mails().len(), 25 + repeats);
    for e in &events {
        assert_eq!(h.processed_status(e).await.as_deref(), Some("done"), "{e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_flight_sqlite_lease() {
    kill_and_restart(Harness::new(Backend::Sqlite, "lease").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_flight_postgres_lease() {
    kill_and_restart(Harness::new(Backend::Postgres, "lease").await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_flight_postgres_transaction() {
    kill_and_restart(Harness::new(Backend::Postgres, "transaction").await).await;
}

async fn run(h: &Harness, args: &[&str]) -> (i32, String, String) {
    let out = command(h, args, &[]).output().await.expect("run");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A message delivered before without any send (returned at a shutdown, received while the
/// database was away, deferred) is no reclaim: `transaction` mode counts only the takeover of a
/// claim whose holder vanished mid-send. The kill cases above check that those are counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redeliveries_without_a_send_are_no_reclaims() {
    let h = Harness::new(Backend::Postgres, "transaction").await;
    let (_, event_id) = h.status_change().await;
    // Three earlier deliveries that never reached a send.
    h.app.exec("UPDATE outbox SET receive_count = 3").await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("worker.log");
    let mut worker = spawn_worker(&h, &log);
    wait_until("the event is emailed", || async {
        h.smtp.count_for(&event_id) == 1
    })
    .await;
    wait_until("queue drained", || async { h.queued().await == 0 }).await;
    worker.kill().await.unwrap();
    let logs = std::fs::read_to_string(&log).unwrap();
    assert!(
        !logs.contains("reclaiming expired claim"),
        "counted as a reclaim: {logs}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_command_prints_what_it_deleted() {
    let h = Harness::new(Backend::Postgres, "lease").await;
    let now = now_ms_sql(Backend::Postgres);
    h.app
        .exec(&format!(
            "INSERT INTO processed_events (event_id, status, attempts, updated_at) VALUES \
         ('old', 'done', 0, {now} - 20 * 86400000), ('new', 'done', 0, {now}); \
         INSERT INTO events (event_id, type, body, created_at) VALUES \
         ('old', 'job.expired', '{{}}', now() - interval '20 days'), \
         ('new', 'job.expired', '{{}}', now()), \
         ('old-waiting', 'job.expired', '{{}}', now() - interval '20 days'); \
         INSERT INTO outbox (event_id, body, created_at, visible_at) \
         VALUES ('old-waiting', '{{}}', now(), {now})"
        ))
        .await;
    let (code, out, _) = run(&h, &["cleanup"]).await;
    assert_eq!(code, 0);
    assert_eq!(
        out.trim(),
        "deleted 1 processed-event records, 0 idempotency keys, 0 expired sign-in failure counters, 1 event records"
    );
    assert_eq!(
        h.app
            .scalar_i64("SELECT COUNT(*) FROM processed_events")
            .await,
        1
    );
    // The recent record, and the old one whose message still waits, stay.
    assert_eq!(
        h.app
            .scalar_text("SELECT string_agg(event_id, ',' ORDER BY event_id) FROM events")
            .await
            .as_deref(),
        Some("new,old-waiting")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dlq_commands() {
    let h = Harness::new(Backend::Sqlite, "lease").await;
    let store = h.app.state.store.clone();
    let s = h.scenario().await;
    store.queue_enqueue(None, None, "garbage").await.unwrap();
    let event_id = h.change(&s).await;
    h.smtp.reject_next();
    h.worker().await.run_until_empty().await.unwrap();

    let (code, out, _) = run(&h, &["dlq", "list"]).await;
    assert_eq!(code, 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    let invalid: Vec<&str> = lines
        .iter()
        .find(|l| l.contains("\t-\t"))
        .expect("the invalid one")
        .split('\t')
        .collect();
    let rejected: Vec<&str> = lines
        .iter()
        .find(|l| l.contains(&event_id))
        .expect("the rejected one")
        .split('\t')
        .collect();
    assert_eq!(invalid.len(), 6);
    assert!(invalid[2].contains("not JSON"));
    assert_eq!(invalid[3], "0");
    assert_eq!(rejected[3], "1");
    assert!(rejected[4].ends_with('Z') && rejected[5].ends_with('Z'));
    let (_, json_out, _) = run(&h, &["dlq", "list", "--json"]).await;
    let first: serde_json::Value = serde_json::from_str(json_out.lines().next().unwrap()).unwrap();
    assert!(first["reason"].is_string() && first["id"].is_string());

    // Redrive: an unknown id makes it exit non-zero; the invalid one needs --include-invalid.
    let (code, out, _) = run(&h, &["dlq", "redrive", rejected[0], "12345"]).await;
    assert_eq!((code, out.trim()), (1, "redriven 1, not found 1"));
    let (code, out, err) = run(&h, &["dlq", "redrive", "--all"]).await;
    assert_eq!((code, out.trim()), (0, "redriven 0, not found 0"));
    assert!(err.contains("--include-invalid"), "{err}");
    h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(
        h.smtp.count_for(&event_id),
        1,
        "the redriven event was sent once"
    );
    let (code, out, _) = run(&h, &["dlq", "redrive", "--include-invalid", invalid[0]]).await;
    assert_eq!((code, out.trim()), (0, "redriven 1, not found 0"));
    h.worker().await.run_until_empty().await.unwrap();
    let (code, out, _) = run(&h, &["dlq", "purge", "--all"]).await;
    assert_eq!((code, out.trim()), (0, "purged 1"));
    let (_, out, _) = run(&h, &["dlq", "list"]).await;
    assert!(out.trim().is_empty());
}

/// `jobboard` with no command is the whole system: a status change made through the API becomes
/// one `.eml` file written by the in-process worker, and SIGTERM stops it all with exit 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_in_one_process_emails_a_status_change() {
    let dir = tempfile::tempdir().unwrap();
    let mail = dir.path().join("mail");
    // It binds port 0 and says which port it got.
    let mut child = tokio::process::Command::new(BIN)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("BIND_ADDR", "127.0.0.1:0")
        .env("EMAIL_BACKEND", "file")
        .env("EMAIL_FILE_DIR", &mail)
        .env("LOG_FORMAT", "json")
        .current_dir(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let port = announced_port(child.stderr.take().unwrap(), "listening on http://").await;
    let base = format!("http://127.0.0.1:{port}");
    let client = reqwest::Client::new();
    wait_until("the API answers", || async {
        client.get(format!("{base}/healthz")).send().await.is_ok()
    })
    .await;
    let post = |path: &str, token: Option<&str>, body: serde_json::Value| {
        let mut r = client
            .post(format!("{base}{path}"))
            .header("content-type", "application/json")
            .body(body.to_string());
        if let Some(t) = token {
            r = r.bearer_auth(t);
        }
        r.send()
    };
    let pass = "a long enough passphrase";
    for (email, role) in [
        ("erin@acme.example", "employer"),
        ("cody@mail.example", "candidate"),
    ] {
        let r = post(
            "/api/auth/register",
            None,
            json!({"email": email, "password": pass, "name": role, "role": role}),
        )
        .await
        .unwrap();
        assert_eq!(r.status(), 201);
    }
    let token = |email: &'static str| {
        let post = &post;
        async move {
            let r = post(
                "/api/auth/token",
                None,
                json!({"email": email, "password": pass}),
            )
            .await
            .unwrap();
            r.json::<serde_json::Value>().await.unwrap()["access_token"]
                .as_str()
                .unwrap()
                .to_string()
        }
    };
    let (employer, candidate) = (
        token("erin@acme.example").await,
        token("cody@mail.example").await,
    );
    let company: serde_json::Value =
        post("/api/companies", Some(&employer), json!({"name": "Acme"}))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
    let job: serde_json::Value = post(
        "/api/jobs",
        Some(&employer),
        json!({"company_id": company["id"], "title": "Engineer", "description": "", "location": "", "remote": true, "employment_type": "full_time"}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let application: serde_json::Value = post(
        &format!("/api/jobs/{}/applications", job["id"]),
        Some(&candidate),
        json!({}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let r = client
        .patch(format!("{base}/api/applications/{}", application["id"]))
        .bearer_auth(&employer)
        .header("content-type", "application/json")
        .body(json!({"status": "reviewing"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let emails = || {
        std::fs::read_dir(&mail)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| e.path().extension().is_some_and(|x| x == "eml"))
                    .map(|e| e.path())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    // The application's confirmation and the status change.
    wait_until("the email files are written", || async {
        emails().len() == 2
    })
    .await;
    let texts: Vec<String> = emails()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    for text in &texts {
        assert!(text.contains("To: candidate <cody@mail.example>"), "{text}");
        assert!(text.contains("X-Jobboard-Event-Id: "), "{text}");
    }
    let subjects: Vec<&str> = texts
        .iter()
        .filter_map(|t| t.lines().find_map(|l| l.strip_prefix("Subject: ")))
        .collect();
    assert!(
        subjects.contains(&"We received your application for Engineer at Acme")
            && subjects.contains(&"Update on your application for Engineer at Acme"),
        "{subjects:?}"
    );
    // The email is written before the send is recorded and counted.
    let metrics = || async {
        let r = client.get(format!("{base}/metrics")).send().await.unwrap();
        r.text().await.unwrap()
    };
    let sent = "events_handled_total{type=\"application.status_changed\",outcome=\"sent\"} 1";
    wait_until("the send is counted", || async {
        metrics().await.contains(sent)
    })
    .await;
    // A search missed and then hit, so every series the dashboard reads now exists.
    for _ in 0..2 {
        let r = client
            .get(format!("{base}/api/jobs?q=engineer"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    crate::ops::dashboard_reads_only_exported_metrics(&metrics().await);
    std::process::Command::new("kill")
        .args(["-TERM", &child.id().unwrap().to_string()])
        .status()
        .unwrap();
    let status = tokio::time::timeout(Duration::from_secs(15), child.wait())
        .await
        .expect("stops")
        .unwrap();
    assert_eq!(status.code(), Some(0));
    assert_eq!(emails().len(), 2, "exactly one email per event");
}

/// `cleanup` deletes rows and needs nothing but the database: it runs with `QUEUE=sqs` and no
/// SQS to reach, and with a mail backend that could not even start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cleanup_needs_only_the_database() {
    let h = Harness::new(Backend::Postgres, "lease").await;
    let now = now_ms_sql(Backend::Postgres);
    h.app
        .exec(&format!(
            "INSERT INTO processed_events (event_id, status, attempts, updated_at) VALUES \
             ('old', 'done', 0, {now} - 20 * 86400000)"
        ))
        .await;
    h.app
        .exec(
            "INSERT INTO auth_failures (kind, key, window_start, failures) \
             VALUES ('email', 'gone@example.com', 0, 3)",
        )
        .await;
    // Nothing listens on port 9 (discard): SQS cannot be reached; `mail` adds a mail service
    // cleanup must not need either. Cleanup's exit code and what it prints.
    let cleanup = |mail: &'static [(&'static str, &'static str)]| {
        let mut vars = vec![
            ("QUEUE", "sqs"),
            ("SQS_QUEUE_URL", "http://127.0.0.1:9/000000000000/jobs"),
            ("SQS_DLQ_URL", "http://127.0.0.1:9/000000000000/jobs-dlq"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:9"),
            ("AWS_REGION", "us-east-1"),
        ];
        vars.extend_from_slice(mail);
        let run = command(&h, &["cleanup"], &vars).output();
        async move {
            let out = run.await.expect("run cleanup");
            let stderr = String::from_utf8_lossy(&out.stderr).to_string();
            assert_eq!(out.status.code(), Some(0), "{stderr}");
            String::from_utf8_lossy(&out.stdout).trim().to_string()
        }
    };
    assert_eq!(
        cleanup(&[
            ("EMAIL_BACKEND", "file"),
            ("EMAIL_FILE_DIR", "/dev/null/mail")
        ])
        .await,
        "deleted 1 processed-event records, 0 idempotency keys, 1 expired sign-in failure counters, 0 event records"
    );
    // An SMTP server that cannot be reached, with credentials and TLS it would need in
    // production, is no concern of cleanup's either.
    assert_eq!(
        cleanup(&[
            ("EMAIL_BACKEND", "smtp"),
            ("SMTP_URL", "smtps://user:wrong@127.0.0.1:9"),
        ])
        .await,
        "deleted 0 processed-event records, 0 idempotency keys, 0 expired sign-in failure counters, 0 event records"
    );
}

/// The API's own data (idempotency keys, sign-in failure counters) is kept by `serve`, which
/// owns it: a deployment whose workers are scaled to zero still deletes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_deletes_expired_api_data() {
    let h = Harness::new(Backend::Postgres, "lease").await;
    let now = now_ms_sql(Backend::Postgres);
    h.app
        .exec(&format!(
            "INSERT INTO auth_failures (kind, key, window_start, failures) VALUES \
             ('email', 'gone@example.com', 0, 3), ('email', 'recent@example.com', {now}, 1)"
        ))
        .await;
    let mut api = command(&h, &["serve"], &[("BIND_ADDR", "127.0.0.1:0")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    wait_until("serve deletes the expired counter", || async {
        h.app
            .scalar_i64("SELECT COUNT(*) FROM auth_failures WHERE key = 'gone@example.com'")
            .await
            == 0
    })
    .await;
    api.kill().await.unwrap();
    assert_eq!(
        h.app.scalar_i64("SELECT COUNT(*) FROM auth_failures").await,
        1,
        "the counter whose window is still open stays"
    );
}
