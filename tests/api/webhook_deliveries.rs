//! Webhook deliveries (docs/guarantee.md, "Webhook deliveries"), from the event to a real HTTP
//! receiver: every delivery's signature verified by an independent implementation
//! (`webhooks/verify.py`: the standardwebhooks package), the events an endpoint took when the
//! event was written and no others, a failure retried with the same `webhook-id` and body, a
//! 410 that disables its endpoint, the attempts the API lists, a redelivery and a ping; and no
//! delivery that reaches a private address when the worker is not allowed to (a name that
//! resolves to loopback at delivery, an address literal), nor follows a redirect. Operators see
//! the failing endpoints and an event's deliveries (`/api/admin`).

use crate::each_store;
use crate::helpers::*;
use crate::worker::wait_until;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

each_store!(
    deliveries_are_signed_retried_recorded_and_redelivered,
    no_delivery_reaches_a_private_address_or_follows_a_redirect,
    a_hanging_receiver_holds_only_its_own_lane,
    operators_see_failing_endpoints_and_an_events_deliveries,
    concurrent_claimers_never_take_one_delivery_twice,
);

/// A job title a receiver must get exactly, as JSON escapes it: quotes, markup, a backslash.
const HOSTILE_TITLE: &str = "Rust \"lead\" </script><!-- & {\\u0000}";

/// One request the receiver took.
#[derive(Debug, Clone)]
struct Received {
    script: String,
    headers: HashMap<String, String>,
    body: String,
}

#[derive(Clone, Default)]
struct Seen {
    got: Arc<Mutex<Vec<Received>>>,
}

/// An HTTP receiver whose answer is its path's script: `ok` 204, `flaky` 500 to the first two
/// requests of a `webhook-id` then 200, `gone` 410, `redirect` 302 to `/ok-redirected`, `hang`
/// 200 after 15 s (past a delivery's deadline).
struct Receiver {
    port: u16,
    seen: Seen,
}

async fn receive(
    State(seen): State<Seen>,
    Path(script): Path<String>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, HeaderMap) {
    let headers: HashMap<String, String> = headers
        .iter()
        .filter_map(|(k, v)| Some((k.to_string(), v.to_str().ok()?.to_string())))
        .collect();
    let id = headers.get("webhook-id").cloned().unwrap_or_default();
    let earlier = {
        let mut got = seen.got.lock().unwrap();
        let earlier = got
            .iter()
            .filter(|r| r.script == script && r.headers.get("webhook-id") == Some(&id))
            .count();
        got.push(Received {
            script: script.clone(),
            headers,
            body,
        });
        earlier
    };
    let mut out = HeaderMap::new();
    let status = match script.as_str() {
        "ok" | "ok-redirected" => StatusCode::NO_CONTENT,
        "flaky" if earlier < 2 => StatusCode::INTERNAL_SERVER_ERROR,
        "flaky" => StatusCode::OK,
        "gone" => StatusCode::GONE,
        "hang" => {
            tokio::time::sleep(std::time::Duration::from_secs(15)).await;
            StatusCode::OK
        }
        "redirect" => {
            out.insert("location", "/ok-redirected".parse().unwrap());
            StatusCode::FOUND
        }
        _ => StatusCode::NOT_FOUND,
    };
    (status, out)
}

impl Receiver {
    async fn start() -> Receiver {
        let seen = Seen::default();
        let app = axum::Router::new()
            .route("/{script}", axum::routing::post(receive))
            .with_state(seen.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move { axum::serve(listener, app).await });
        Receiver { port, seen }
    }

    fn url(&self, script: &str) -> String {
        format!("http://127.0.0.1:{}/{script}", self.port)
    }

    fn received(&self, script: &str) -> Vec<Received> {
        let got = self.seen.got.lock().unwrap();
        got.iter().filter(|r| r.script == script).cloned().collect()
    }
}

/// Verifies each request with standardwebhooks under `secret`; the payloads.
async fn verify(secret: &str, got: &[Received]) -> Vec<Value> {
    let python = std::env::var("JOBBOARD_TEST_WEBHOOKS_PYTHON").expect(
        "JOBBOARD_TEST_WEBHOOKS_PYTHON names a Python with standardwebhooks (scripts/test \
         installs one from scripts/python/webhooks.txt)",
    );
    let items: Vec<Value> = got
        .iter()
        .map(|r| {
            json!({"secret": secret, "body": r.body, "headers": {
                "webhook-id": r.headers.get("webhook-id"),
                "webhook-timestamp": r.headers.get("webhook-timestamp"),
                "webhook-signature": r.headers.get("webhook-signature"),
            }})
        })
        .collect();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/api/webhooks/verify.py");
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the verifier starts");
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(Value::Array(items).to_string().as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    assert!(
        out.status.success(),
        "the verifier failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    results
        .into_iter()
        .map(|r| {
            assert_eq!(r["ok"], true, "a delivery that does not verify: {r}");
            r["payload"].clone()
        })
        .collect()
}

/// A worker delivering webhooks until the token is cancelled.
async fn deliverer(app: &TestApp, allow_private: bool) -> CancellationToken {
    let config = app.config(&[(
        "WEBHOOK_ALLOW_PRIVATE",
        if allow_private { "true" } else { "false" },
    )]);
    let worker = Arc::new(
        jobboard::run::build_worker(&config, app.state.store.clone())
            .await
            .expect("worker"),
    );
    let stop = CancellationToken::new();
    tokio::spawn(worker.deliver_webhooks(stop.clone()));
    stop
}

async fn private_app(backend: Backend) -> TestApp {
    TestApp::spawn_with(
        backend,
        CacheKind::Memory,
        &[("WEBHOOK_ALLOW_PRIVATE", "true")],
    )
    .await
}

async fn endpoint(
    app: &TestApp,
    employer: &User,
    company: i64,
    url: &str,
    events: Value,
) -> (i64, String) {
    let r = app
        .post(
            &format!("/api/companies/{company}/webhooks"),
            Some(&employer.token),
            json!({"url": url, "events": events}),
        )
        .await;
    let r = r.expect(201);
    (
        r["id"].as_i64().unwrap(),
        r["secret"].as_str().unwrap().to_string(),
    )
}

/// Makes every pending delivery due now (the backoff's wait, passed).
async fn due_now(app: &TestApp) {
    app.exec("UPDATE webhook_deliveries SET next_attempt_at = '2000-01-01T00:00:00Z' WHERE status = 'pending'")
        .await;
}

async fn deliveries_are_signed_retried_recorded_and_redelivered(app: TestApp) {
    let backend = app.backend;
    drop(app);
    let app = private_app(backend).await;
    let receiver = Receiver::start().await;
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app
        .job(&employer, company, json!({"title": HOSTILE_TITLE}))
        .await["id"]
        .as_i64()
        .unwrap();
    let (a, secret_a) = endpoint(
        &app,
        &employer,
        company,
        &receiver.url("ok"),
        json!(["application.submitted", "application.status_changed"]),
    )
    .await;
    let (b, secret_b) = endpoint(
        &app,
        &employer,
        company,
        &receiver.url("flaky"),
        json!(["application.submitted"]),
    )
    .await;
    let (c, _) = endpoint(
        &app,
        &employer,
        company,
        &receiver.url("gone"),
        json!(["application.status_changed"]),
    )
    .await;
    let (_, _) = endpoint(
        &app,
        &employer,
        company,
        &receiver.url("other"),
        json!(["job.expired"]),
    )
    .await;

    let candidate = app.user("candidate").await;
    let application = app
        .post(
            &format!("/api/jobs/{job}/applications"),
            Some(&candidate.token),
            json!({}),
        )
        .await;
    let application = application.expect(201)["id"].as_i64().unwrap();
    app.patch(
        &format!("/api/applications/{application}"),
        Some(&employer.token),
        json!({"status": "reviewing"}),
    )
    .await
    .expect(200);
    // Written with the events: one delivery per (event, endpoint that took its type).
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM webhook_deliveries")
            .await,
        4
    );

    let stop = deliverer(&app, true).await;
    wait_until("the first attempts", || async {
        receiver.received("ok").len() == 2
            && receiver.received("flaky").len() == 1
            && receiver.received("gone").len() == 1
    })
    .await;
    // The 410 disabled its endpoint.
    let path_c = format!("/api/companies/{company}/webhooks/{c}");
    wait_until("the 410 is recorded", || async {
        app.get(&path_c, Some(&employer.token)).await.body["disabled_reason"].is_string()
    })
    .await;
    let shown = app.get(&path_c, Some(&employer.token)).await;
    assert_eq!(shown.body["paused"], true);
    assert_eq!(
        shown.body["disabled_reason"],
        "the receiver answered 410 Gone"
    );
    // Each member of the company is told, by an event of its own, with the email's data.
    let body = app
        .scalar_text("SELECT body FROM events WHERE type = 'webhook.disabled'")
        .await
        .expect("a webhook.disabled event");
    let event = jobboard::domain::event::parse_event(&body).expect("the event parses");
    assert_eq!(
        event.kind,
        jobboard::domain::event::EventKind::WebhookDisabled {
            endpoint_id: c,
            user_id: employer.id,
            reason: "the receiver answered 410 Gone".into(),
        }
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM events WHERE type = 'webhook.disabled'")
            .await,
        1
    );
    let store = &app.state.store;
    match jobboard::store::EventStore::email_data(&**store, &event)
        .await
        .unwrap()
    {
        jobboard::domain::mail::Loaded::Ready(data) => {
            assert_eq!(data.to.user_id, employer.id);
            assert_eq!(
                data.about,
                jobboard::domain::mail::About::Webhook {
                    host: "127.0.0.1".into(),
                    company_id: company,
                    company: "Acme".into(),
                }
            );
        }
        other => panic!("the email's data: {other:?}"),
    }

    // The flaky receiver's 500s are retried, with the same webhook-id and body.
    for n in 2..=3 {
        wait_until("the failure is recorded", || async {
            app.scalar_i64(&format!(
                "SELECT COUNT(*) FROM webhook_attempts WHERE endpoint_id = {b}"
            ))
            .await
                == n - 1
        })
        .await;
        due_now(&app).await;
        wait_until("the retry", || async {
            receiver.received("flaky").len() as i64 == n
        })
        .await;
    }
    let flaky = receiver.received("flaky");
    assert!(
        flaky
            .iter()
            .all(|r| r.headers["webhook-id"] == flaky[0].headers["webhook-id"])
    );
    assert!(flaky.iter().all(|r| r.body == flaky[0].body));
    wait_until("the delivery is recorded", || async {
        app.scalar_i64(&format!(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = {b} AND status = 'delivered'"
        ))
        .await
            == 1
    })
    .await;

    // Every request verifies with standardwebhooks, and says what happened.
    // Deliveries of one endpoint may arrive in any order.
    let mut ok = verify(&secret_a, &receiver.received("ok")).await;
    ok.sort_by_key(|p| p["type"] != "application.submitted");
    let types: Vec<&str> = ok.iter().map(|p| p["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["application.submitted", "application.status_changed"]
    );
    assert_eq!(ok[1]["data"]["application_id"], application);
    assert_eq!(ok[1]["data"]["job_id"], job);
    assert_eq!(ok[1]["data"]["company_id"], company);
    assert_eq!(ok[1]["data"]["company"], "Acme");
    assert_eq!(
        ok[1]["data"]["job_title"], HOSTILE_TITLE,
        "the title as it was written"
    );
    assert_eq!(ok[1]["data"]["old_status"], "submitted");
    assert_eq!(ok[1]["data"]["new_status"], "reviewing");
    assert!(
        !ok[0].to_string().contains(&candidate.email),
        "no address: {}",
        ok[0]
    );
    verify(&secret_b, &flaky).await;
    assert!(receiver.received("other").is_empty(), "job.expired only");

    // The attempts the API lists, newest first.
    let attempts = app
        .get(
            &format!("/api/companies/{company}/webhooks/{b}/attempts"),
            Some(&employer.token),
        )
        .await;
    let attempts = attempts.expect(200);
    assert_eq!(attempts["total"], 3);
    let statuses: Vec<i64> = attempts["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].as_i64().unwrap())
        .collect();
    assert_eq!(statuses, [200, 500, 500]);
    assert_eq!(attempts["items"][0]["attempt"], 3);
    assert_eq!(
        attempts["items"][0]["webhook_id"],
        flaky[0].headers["webhook-id"]
    );
    assert_eq!(attempts["items"][1]["error"], "the receiver answered 500");
    assert!(attempts["items"][0]["error"].is_null());

    // A redelivery repeats the webhook-id; a ping has its own.
    let event_id = ok[0]["data"]["event_id"].as_str().unwrap().to_string();
    let base = format!("/api/companies/{company}/webhooks/{a}");
    app.post(
        &format!("{base}/redeliver"),
        Some(&employer.token),
        json!({"event_id": event_id}),
    )
    .await
    .expect(202);
    app.post(
        &format!("{base}/redeliver"),
        Some(&employer.token),
        json!({"event_id": "no-such-event"}),
    )
    .await
    .expect_problem(404, "not-found");
    app.post(&format!("{base}/test"), Some(&employer.token), json!({}))
        .await
        .expect(202);
    wait_until("the redelivery and the ping", || async {
        receiver.received("ok").len() == 4
    })
    .await;
    let ok_all = receiver.received("ok");
    let payloads = verify(&secret_a, &ok_all).await;
    let redelivered = ok_all
        .iter()
        .zip(&payloads)
        .filter(|(_, p)| p["data"]["event_id"] == event_id)
        .map(|(r, _)| r.headers["webhook-id"].clone())
        .collect::<Vec<_>>();
    assert_eq!(redelivered.len(), 2);
    assert_eq!(redelivered[0], redelivered[1]);
    let ping = payloads
        .iter()
        .find(|p| p["type"] == "ping")
        .expect("a ping");
    assert_eq!(ping["data"]["endpoint_id"], a);
    stop.cancel();

    // Retention: the deliveries that ended longer ago than the retention go, with their
    // attempts; nothing before that.
    let worker = jobboard::run::build_worker(&app.config(&[]), app.state.store.clone())
        .await
        .expect("worker");
    wait_until("every delivery has ended", || async {
        app.scalar_i64("SELECT COUNT(*) FROM webhook_deliveries WHERE status = 'pending'")
            .await
            == 0
    })
    .await;
    // Four for the events (a redelivery reuses its row) and the ping.
    let finished = app
        .scalar_i64("SELECT COUNT(*) FROM webhook_deliveries")
        .await;
    assert_eq!(finished, 5);
    worker.delete_expired().await.unwrap();
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM webhook_deliveries")
            .await,
        finished
    );
    app.exec("UPDATE webhook_deliveries SET finished_at = '2000-01-01T00:00:00Z'")
        .await;
    worker.delete_expired().await.unwrap();
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM webhook_deliveries")
            .await,
        0
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM webhook_attempts")
            .await,
        0
    );
}

async fn no_delivery_reaches_a_private_address_or_follows_a_redirect(app: TestApp) {
    let backend = app.backend;
    drop(app);
    let app = private_app(backend).await;
    let receiver = Receiver::start().await;
    // A listener that counts the connections it is offered.
    let trap = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let trap_port = trap.local_addr().unwrap().port();
    let contacted = Arc::new(AtomicUsize::new(0));
    tokio::spawn({
        let contacted = contacted.clone();
        async move {
            while let Ok((_socket, _)) = trap.accept().await {
                contacted.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app.job(&employer, company, json!({})).await["id"]
        .as_i64()
        .unwrap();
    let events = json!(["application.submitted"]);
    // Registered while private addresses were allowed; delivered by a worker that refuses them:
    // a name that resolves to loopback, and address literals.
    let mut refused = Vec::new();
    for url in [
        format!("https://localhost:{trap_port}/hook"),
        format!("https://127.0.0.1:{trap_port}/hook"),
        format!("https://[::ffff:127.0.0.1]:{trap_port}/hook"),
        format!("http://127.0.0.1:{trap_port}/hook"),
    ] {
        refused.push(
            endpoint(&app, &employer, company, &url, events.clone())
                .await
                .0,
        );
    }
    let candidate = app.user("candidate").await;
    app.post(
        &format!("/api/jobs/{job}/applications"),
        Some(&candidate.token),
        json!({}),
    )
    .await
    .expect(201);
    let stop = deliverer(&app, false).await;
    wait_until("an attempt of each", || async {
        app.scalar_i64("SELECT COUNT(*) FROM webhook_attempts")
            .await
            == 4
    })
    .await;
    stop.cancel();
    for id in refused {
        let attempts = app
            .get(
                &format!("/api/companies/{company}/webhooks/{id}/attempts"),
                Some(&employer.token),
            )
            .await;
        let item = attempts.expect(200)["items"][0].clone();
        assert!(item["status"].is_null(), "{item}");
        let error = item["error"].as_str().unwrap();
        assert!(
            error.contains("not public") || error.contains("must use https"),
            "endpoint {id}: {error}"
        );
    }
    assert_eq!(
        contacted.load(Ordering::SeqCst),
        0,
        "no connection reached the trap"
    );

    // A redirect is an answer, not followed.
    let app2 = private_app(backend).await;
    let employer = app2.user("employer").await;
    let company = app2.company(&employer, "Acme").await;
    let job = app2.job(&employer, company, json!({})).await["id"]
        .as_i64()
        .unwrap();
    let (id, _) = endpoint(&app2, &employer, company, &receiver.url("redirect"), events).await;
    let candidate = app2.user("candidate").await;
    app2.post(
        &format!("/api/jobs/{job}/applications"),
        Some(&candidate.token),
        json!({}),
    )
    .await
    .expect(201);
    let stop = deliverer(&app2, true).await;
    wait_until("the redirect's attempt", || async {
        app2.scalar_i64("SELECT COUNT(*) FROM webhook_attempts")
            .await
            == 1
    })
    .await;
    stop.cancel();
    let attempts = app2
        .get(
            &format!("/api/companies/{company}/webhooks/{id}/attempts"),
            Some(&employer.token),
        )
        .await;
    let item = attempts.expect(200)["items"][0].clone();
    assert_eq!(item["status"], 302);
    assert_eq!(
        item["error"],
        "the receiver answered 302 (redirects are not followed)"
    );
    assert_eq!(receiver.received("redirect").len(), 1);
    assert!(receiver.received("ok-redirected").is_empty());
}

/// A receiver that hangs past the deadline, and one that closes every connection at once, beside
/// one that answers: the answering endpoint's deliveries all arrive while the others' lanes are
/// held, and the others' attempts are recorded as failures to retry.
async fn a_hanging_receiver_holds_only_its_own_lane(app: TestApp) {
    let backend = app.backend;
    drop(app);
    let app = private_app(backend).await;
    let receiver = Receiver::start().await;
    let closer = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let closer_port = closer.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((socket, _)) = closer.accept().await {
            drop(socket);
        }
    });
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app.job(&employer, company, json!({})).await["id"]
        .as_i64()
        .unwrap();
    let events = json!(["application.submitted"]);
    let (hang, _) = endpoint(
        &app,
        &employer,
        company,
        &receiver.url("hang"),
        events.clone(),
    )
    .await;
    let (closes, _) = endpoint(
        &app,
        &employer,
        company,
        &format!("http://127.0.0.1:{closer_port}/hook"),
        events.clone(),
    )
    .await;
    let (_, secret) = endpoint(&app, &employer, company, &receiver.url("ok"), events).await;
    for _ in 0..8 {
        let candidate = app.user("candidate").await;
        app.post(
            &format!("/api/jobs/{job}/applications"),
            Some(&candidate.token),
            json!({}),
        )
        .await
        .expect(201);
    }
    let started = std::time::Instant::now();
    let stop = deliverer(&app, true).await;
    wait_until("every delivery to the answering endpoint", || async {
        receiver.received("ok").len() == 8
    })
    .await;
    assert!(
        started.elapsed() < std::time::Duration::from_secs(8),
        "the answering endpoint waited for the hanging one: {:?}",
        started.elapsed()
    );
    verify(&secret, &receiver.received("ok")).await;
    // At most a lane's worth of the hanging endpoint's deliveries were sent at once.
    assert!(
        receiver.received("hang").len() <= 4,
        "{}",
        receiver.received("hang").len()
    );
    wait_until(
        "the hanging endpoint's first attempts fail at their deadline",
        || async {
            app.scalar_i64(&format!(
                "SELECT COUNT(*) FROM webhook_attempts WHERE endpoint_id = {hang}"
            ))
            .await
                >= 4
        },
    )
    .await;
    stop.cancel();
    for (id, expected) in [
        (hang, ["no answer within 10 s"].as_slice()),
        // Accepted, then closed before any answer: never a timeout, never a status.
        (
            closes,
            ["the request failed", "could not connect"].as_slice(),
        ),
    ] {
        let attempts = app
            .get(
                &format!("/api/companies/{company}/webhooks/{id}/attempts"),
                Some(&employer.token),
            )
            .await;
        let items = attempts.expect(200)["items"].as_array().unwrap().clone();
        assert!(!items.is_empty(), "endpoint {id} has attempts");
        for item in items {
            assert!(item["status"].is_null(), "{item}");
            let error = item["error"].as_str().unwrap();
            assert!(
                expected.iter().any(|e| error.starts_with(e)),
                "endpoint {id}: {error}"
            );
        }
    }
    // Each is due again, not given up.
    assert_eq!(
        app.scalar_i64(&format!(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id IN ({hang}, {closes}) \
             AND status <> 'pending'"
        ))
        .await,
        0
    );
}

/// What an operator sees: the endpoints failing (a 500, until a success) and disabled (a 410),
/// across companies, and an event's deliveries in its story, found by the event's id or by a
/// delivery's `webhook-id`.
async fn operators_see_failing_endpoints_and_an_events_deliveries(app: TestApp) {
    let backend = app.backend;
    drop(app);
    let app = private_app(backend).await;
    let receiver = Receiver::start().await;
    let operator = app.operator().await;
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    let job = app.job(&employer, company, json!({})).await["id"]
        .as_i64()
        .unwrap();
    let submitted = json!(["application.submitted"]);
    let (ok, _) = endpoint(
        &app,
        &employer,
        company,
        &receiver.url("ok"),
        submitted.clone(),
    )
    .await;
    let (flaky, _) = endpoint(
        &app,
        &employer,
        company,
        &receiver.url("flaky"),
        submitted.clone(),
    )
    .await;
    let (gone, _) = endpoint(&app, &employer, company, &receiver.url("gone"), submitted).await;
    let failing = || async {
        app.get("/api/admin/webhooks/failing", Some(&operator.token))
            .await
            .expect(200)["items"]
            .as_array()
            .unwrap()
            .clone()
    };
    assert!(failing().await.is_empty(), "nothing has failed yet");
    app.get("/api/admin/webhooks/failing", Some(&employer.token))
        .await
        .expect_problem(404, "not-found");

    let candidate = app.user("candidate").await;
    app.post(
        &format!("/api/jobs/{job}/applications"),
        Some(&candidate.token),
        json!({}),
    )
    .await
    .expect(201);
    let event_id = app
        .scalar_text("SELECT event_id FROM events WHERE type = 'application.submitted'")
        .await
        .expect("the confirmation's event");
    let story = || async {
        let s = app
            .get(
                &format!("/api/admin/events/{event_id}"),
                Some(&operator.token),
            )
            .await;
        let s = s.expect(200);
        let by_endpoint: HashMap<i64, Value> = s["webhooks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| (d["endpoint_id"].as_i64().unwrap(), d.clone()))
            .collect();
        by_endpoint
    };
    // Written with the event, not tried yet.
    let before = story().await;
    assert_eq!(before.len(), 3);
    for d in before.values() {
        assert_eq!(d["status"], "pending", "{d}");
        assert_eq!(d["attempts"], 0, "{d}");
        assert_eq!(d["type"], "application.submitted");
        assert_eq!(d["event_id"], event_id.as_str());
        assert_eq!(d["company_id"], company);
        assert!(
            d["last_status"].is_null() && d["finished_at"].is_null(),
            "{d}"
        );
    }

    let stop = deliverer(&app, true).await;
    wait_until("the first attempts", || async {
        app.scalar_i64("SELECT COUNT(*) FROM webhook_attempts")
            .await
            == 3
    })
    .await;
    stop.cancel();

    let after = story().await;
    assert_eq!(after[&ok]["status"], "delivered");
    assert_eq!(after[&ok]["last_status"], 204);
    assert!(after[&ok]["finished_at"].is_string());
    assert_eq!(after[&flaky]["status"], "pending");
    assert_eq!(after[&flaky]["attempts"], 1);
    assert_eq!(after[&flaky]["last_status"], 500);
    assert_eq!(after[&flaky]["last_error"], "the receiver answered 500");
    assert_eq!(after[&gone]["status"], "failed");
    assert_eq!(after[&gone]["last_status"], 410);
    assert_eq!(
        after[&ok]["url"],
        receiver.url("ok"),
        "the endpoint's address"
    );

    // The failing endpoint and the disabled one, not the one that answered.
    let items = failing().await;
    let find = |id: i64| {
        items
            .iter()
            .find(|i| i["id"] == id)
            .unwrap_or_else(|| panic!("endpoint {id} in {items:?}"))
    };
    assert_eq!(items.len(), 2, "{items:?}");
    let f = find(flaky);
    assert_eq!(f["company_id"], company);
    assert_eq!(f["company_name"], "Acme");
    assert_eq!(f["url"], receiver.url("flaky"));
    assert!(f["failing_since"].is_string(), "{f}");
    assert!(f["last_success_at"].is_null(), "{f}");
    assert!(f["disabled_reason"].is_null(), "{f}");
    assert_eq!(f["pending"], 1);
    assert_eq!(f["last_status"], 500);
    assert_eq!(f["last_error"], "the receiver answered 500");
    assert!(f["last_attempt_at"].is_string(), "{f}");
    let g = find(gone);
    assert_eq!(g["disabled_reason"], "the receiver answered 410 Gone");
    assert_eq!(g["paused"], true);
    assert_eq!(g["pending"], 0);
    assert_eq!(g["last_status"], 410);

    // A webhook-id finds its delivery alone; an id nothing knows is 404.
    let wid = after[&flaky]["webhook_id"].as_str().unwrap().to_string();
    assert!(wid.starts_with("msg_"), "{wid}");
    let one = app
        .get(&format!("/api/admin/events/{wid}"), Some(&operator.token))
        .await;
    let one = one.expect(200);
    assert!(one["change"].is_null() && one["processed"].is_null());
    let found: Vec<i64> = one["webhooks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["endpoint_id"].as_i64().unwrap())
        .collect();
    assert_eq!(found, [flaky]);
    app.get("/api/admin/events/msg_nothing", Some(&operator.token))
        .await
        .expect_problem(404, "not-found");

    // A success ends the failing streak: the flaky receiver answers its third request.
    let stop = deliverer(&app, true).await;
    for n in [2, 3] {
        due_now(&app).await;
        wait_until("the retry", || async {
            receiver.received("flaky").len() == n
        })
        .await;
    }
    wait_until("the success is recorded", || async {
        app.scalar_i64(&format!(
            "SELECT COUNT(*) FROM webhook_deliveries WHERE endpoint_id = {flaky} AND status = 'delivered'"
        ))
        .await
            == 1
    })
    .await;
    stop.cancel();
    let items = failing().await;
    let ids: Vec<i64> = items.iter().map(|i| i["id"].as_i64().unwrap()).collect();
    assert_eq!(ids, [gone], "only the disabled endpoint is left");
}

/// Eight claimers at once over 200 due deliveries of 25 endpoints: every delivery is claimed, by
/// exactly one of them, and no claim takes more than a lane's worth of one endpoint.
async fn concurrent_claimers_never_take_one_delivery_twice(app: TestApp) {
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Acme").await;
    for e in 0..25 {
        app.exec(&format!(
            "INSERT INTO webhook_endpoints (company_id, url, events, secret, created_at, updated_at) \
             VALUES ({company}, 'https://hooks{e}.example/in', 'application.submitted', \
             'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw/0Xr7zd7Q/0=', '2000-01-01T00:00:00Z', \
             '2000-01-01T00:00:00Z')"
        ))
        .await;
    }
    app.exec(
        "WITH RECURSIVE g(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM g WHERE n < 199) \
         INSERT INTO webhook_deliveries (webhook_id, endpoint_id, event_id, type, body, \
         next_attempt_at, created_at) SELECT 'msg_claim' || n, \
         (SELECT MIN(id) FROM webhook_endpoints) + n % 25, 'claim-' || n, \
         'application.submitted', '{}', '2000-01-01T00:00:00Z', '2000-01-01T00:00:00Z' FROM g",
    )
    .await;
    // A pool of its own, as large as the claimers: each claim runs on its own connection.
    let store = jobboard::store::connect_with_pool(&app.config(&[]).database_url, Some(8))
        .await
        .expect("a store");
    let start = Arc::new(tokio::sync::Barrier::new(8));
    let claimers = (0..8).map(|_| {
        let start = start.clone();
        let store = store.clone();
        tokio::spawn(async move {
            start.wait().await;
            let mut mine = Vec::new();
            let mut empty = 0;
            while empty < 3 {
                let claims = store
                    .claim_deliveries(64, 60_000, 4, &HashMap::new())
                    .await
                    .expect("a claim");
                let mut per_endpoint: HashMap<i64, usize> = HashMap::new();
                for c in &claims {
                    *per_endpoint.entry(c.endpoint_id).or_default() += 1;
                }
                assert!(per_endpoint.values().all(|n| *n <= 4), "{per_endpoint:?}");
                if claims.is_empty() {
                    empty += 1;
                }
                mine.extend(claims.into_iter().map(|c| c.webhook_id));
            }
            mine
        })
    });
    let claimers: Vec<_> = claimers.collect();
    let mut all = Vec::new();
    for c in claimers {
        all.extend(c.await.unwrap());
    }
    let distinct: std::collections::HashSet<&String> = all.iter().collect();
    assert_eq!(distinct.len(), all.len(), "a delivery claimed twice");
    assert_eq!(all.len(), 200, "every delivery claimed");
}
