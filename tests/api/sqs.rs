//! `QUEUE=sqs` against an SQS-compatible server speaking the real protocol (moto in the test
//! command): the outbox relay, the SQS consumer behind the worker, and dead letters in the DLQ.

use crate::helpers::*;
use crate::worker::{Harness, wait_until};
use aws_sdk_sqs::types::QueueAttributeName;
use jobboard::queue::Selection;
use jobboard::worker::Outcome;
use serde_json::json;
use std::time::Duration;

/// A queue and its DLQ (with a redrive policy as the backstop), made for one test.
pub struct SqsQueues {
    pub url: String,
    pub dlq: String,
    client: aws_sdk_sqs::Client,
}

impl SqsQueues {
    pub async fn create() -> SqsQueues {
        assert!(
            std::env::var("AWS_ENDPOINT_URL").is_ok(),
            "the QUEUE=sqs tests need an SQS-compatible server in AWS_ENDPOINT_URL; scripts/test starts one"
        );
        let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let client = aws_sdk_sqs::Client::new(&config);
        let name = unique("jbt-");
        let dlq = client
            .create_queue()
            .queue_name(format!("{name}-dlq"))
            .send()
            .await
            .expect("create DLQ");
        let dlq = dlq.queue_url().unwrap().to_string();
        let arn = client
            .get_queue_attributes()
            .queue_url(&dlq)
            .attribute_names(QueueAttributeName::QueueArn)
            .send()
            .await
            .unwrap()
            .attributes()
            .unwrap()[&QueueAttributeName::QueueArn]
            .clone();
        let policy = json!({"deadLetterTargetArn": arn, "maxReceiveCount": "20"}).to_string();
        let url = client
            .create_queue()
            .queue_name(name)
            .attributes(QueueAttributeName::RedrivePolicy, policy)
            .send()
            .await
            .expect("create queue")
            .queue_url()
            .unwrap()
            .to_string();
        SqsQueues { url, dlq, client }
    }

    /// Messages on `url` that are hidden: in flight, or waiting out a retry's backoff.
    pub async fn hidden(&self, url: &str) -> i64 {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap();
        out.attributes()
            .and_then(|a| a.get(&QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Moves every message of the queue to the DLQ as they are, attributes and all, as the
    /// queue's redrive policy does after `maxReceiveCount`; returns how many.
    pub async fn move_all_to_dlq(&self) -> usize {
        let mut moved = 0;
        loop {
            let out = self
                .client
                .receive_message()
                .queue_url(&self.url)
                .max_number_of_messages(10)
                .wait_time_seconds(1)
                .send()
                .await
                .unwrap();
            if out.messages().is_empty() {
                return moved;
            }
            for m in out.messages() {
                self.client
                    .send_message()
                    .queue_url(&self.dlq)
                    .message_body(m.body().unwrap())
                    .send()
                    .await
                    .unwrap();
                self.client
                    .delete_message()
                    .queue_url(&self.url)
                    .receipt_handle(m.receipt_handle().unwrap())
                    .send()
                    .await
                    .unwrap();
                moved += 1;
            }
        }
    }

    /// Messages on `url`, visible or in flight.
    pub async fn count(&self, url: &str) -> i64 {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await
            .unwrap();
        let a = out.attributes().unwrap();
        let get = |k| {
            a.get(&k)
                .and_then(|v: &String| v.parse::<i64>().ok())
                .unwrap_or(0)
        };
        get(QueueAttributeName::ApproximateNumberOfMessages)
            + get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
    }
}

macro_rules! each_sqs_backend {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use crate::worker::Harness;
            use crate::helpers::Backend;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(Harness::new_sqs(Backend::Sqlite, "lease").await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(Harness::new_sqs(Backend::Postgres, "lease").await).await
            }
        }
    )*};
}

each_sqs_backend!(
    relay_publishes_and_worker_sends_once,
    duplicate_messages_send_one_email,
    failed_send_retried_through_visibility,
    permanent_failure_goes_to_the_dlq_and_redrives,
    poison_messages_go_to_the_dlq,
    deleted_application_sends_nothing,
);

async fn relay_publishes_and_worker_sends_once(h: Harness) {
    let (s, event_id) = h.status_change().await;
    let q = h.sqs.as_ref().unwrap();
    assert_eq!(
        h.app.scalar_i64("SELECT COUNT(*) FROM outbox").await,
        0,
        "published rows leave the outbox"
    );
    assert_eq!(q.count(&q.url).await, 1);
    let outcomes = h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(outcomes, vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert!(h.smtp.mails()[0].recipients[0].contains(&s.candidate.email));
    wait_until("the message is deleted", || async {
        q.count(&q.url).await == 0
    })
    .await;
}

async fn duplicate_messages_send_one_email(h: Harness) {
    let (s, event_id) = h.status_change().await;
    h.duplicate(&event_id, s.application_id).await;
    h.duplicate(&event_id, s.application_id).await;
    let worker = h.worker().await;
    let q = h.sqs.as_ref().unwrap();
    // Copies met during the send are deferred to the end of its lease and handled later.
    wait_until("every copy is handled", || async {
        worker.run_until_empty().await.unwrap();
        q.count(&q.url).await == 0
    })
    .await;
    assert_eq!(h.smtp.count_for(&event_id), 1);
}

async fn failed_send_retried_through_visibility(h: Harness) {
    let (_, event_id) = h.status_change().await;
    h.smtp.fail_next(1);
    let worker = h.worker().await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::Failed]
    );
    assert_eq!(
        h.attempts(&event_id).await,
        1,
        "attempts are counted in the database"
    );
    assert!(
        worker.run_until_empty().await.unwrap().is_empty(),
        "hidden for the backoff"
    );
    h.later().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
}

async fn permanent_failure_goes_to_the_dlq_and_redrives(h: Harness) {
    let (_, event_id, worker) = h.dead_lettered_change().await;
    let q = h.sqs.as_ref().unwrap();
    wait_until("the message moved to the DLQ", || async {
        q.count(&q.url).await == 0 && q.count(&q.dlq).await == 1
    })
    .await;
    let dead = worker.queue().dead_letters().await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].event_id.as_deref(), Some(event_id.as_str()));
    assert!(dead[0].reason.contains("554"), "{}", dead[0].reason);
    assert_eq!(dead[0].attempts, 1);
    // Listing leaves it there; redrive re-queues it once and it is sent.
    assert_eq!(worker.queue().dead_letters().await.unwrap().len(), 1);
    let r = worker
        .queue()
        .redrive(
            Selection::Ids(vec![dead[0].id.clone(), "no-such-id".into()]),
            false,
        )
        .await
        .unwrap();
    assert_eq!((r.redriven, r.not_found), (1, 1));
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert!(worker.queue().dead_letters().await.unwrap().is_empty());
}

async fn poison_messages_go_to_the_dlq(h: Harness) {
    let s = h.scenario().await;
    h.enqueue("not json").await;
    h.enqueue(&json!({"type": "application.status_changed", "event_id": "bad id!"}).to_string())
        .await;
    let event_id = h.change(&s).await;
    let worker = h.worker().await;
    let mut outcomes = worker.run_until_empty().await.unwrap();
    outcomes.sort_by_key(|o| o.as_str());
    assert_eq!(
        outcomes,
        vec![Outcome::Invalid, Outcome::Invalid, Outcome::Sent]
    );
    assert_eq!(h.smtp.count_for(&event_id), 1);
    let dead = worker.queue().dead_letters().await.unwrap();
    assert_eq!(dead.len(), 2);
    assert!(
        dead.iter()
            .any(|d| d.reason.contains("not JSON") && d.body == "not json")
    );
    assert!(dead.iter().all(|d| d.event_id.is_none()));
    // Without --include-invalid a redrive leaves them; with it, they come back (and die again).
    let r = worker.queue().redrive(Selection::All, false).await.unwrap();
    assert_eq!((r.redriven, r.skipped_invalid), (0, 2));
    assert_eq!(worker.queue().purge(Selection::All).await.unwrap(), 2);
    assert!(worker.queue().dead_letters().await.unwrap().is_empty());
}

async fn deleted_application_sends_nothing(h: Harness) {
    let (s, _) = h.status_change().await;
    h.app
        .delete(
            &format!("/api/applications/{}", s.application_id),
            Some(&s.candidate.token),
        )
        .await
        .expect(204);
    assert_eq!(
        h.worker().await.run_until_empty().await.unwrap(),
        vec![Outcome::Missing]
    );
    assert!(h.smtp.mails().is_empty());
}

/// A worker process killed with SIGKILL mid-flight on SQS: every event ends with its email.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_mid_flight_sqs() {
    crate::crash::kill_and_restart(Harness::new_sqs(Backend::Postgres, "lease").await).await;
}

/// The API process dies after committing a status change but before publishing it: a restarted
/// API's relay publishes it, and the worker sends one email.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_publishes_after_an_api_crash() {
    let h = Harness::new_sqs(Backend::Postgres, "lease").await;
    let s = h.scenario().await;
    let q = h.sqs.as_ref().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let spawn_api = |endpoint: String| {
        tokio::process::Command::new(env!("CARGO_BIN_EXE_jobboard"))
            .args(["serve"])
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("DATABASE_URL", &h.app.database_url)
            .env("BIND_ADDR", "127.0.0.1:0")
            .env("JWT_SECRET", "test-secret-test-secret-test-secret")
            .env("QUEUE", "sqs")
            .env("SQS_QUEUE_URL", &q.url)
            .env("SQS_DLQ_URL", &q.dlq)
            // A publish the crash cut short holds its rows for three tries of this, plus 1 s.
            .env("SQS_TIMEOUT_SECS", "2")
            .env("AWS_ENDPOINT_URL", endpoint)
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("LOG_FORMAT", "json")
            .current_dir(dir.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    // First life: SQS cannot be reached (a listener that hangs up on every connection), so the
    // committed event stays in the outbox.
    let refuser = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let unreachable = format!("http://{}", refuser.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((conn, _)) = refuser.accept().await {
            drop(conn)
        }
    });
    let mut api = spawn_api(unreachable);
    let base = format!(
        "http://{}",
        address_in_stderr(&mut api, "listening on http://").await
    );
    let client = reqwest::Client::new();
    let r = client
        .patch(format!("{base}/api/applications/{}", s.application_id))
        .bearer_auth(&s.employer.token)
        .header("content-type", "application/json")
        .body(json!({"status": "reviewing"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        h.app.scalar_i64("SELECT COUNT(*) FROM outbox").await,
        1,
        "committed, not published"
    );
    api.kill().await.unwrap();
    // Second life: the sweep publishes what the crash left behind.
    let mut api = spawn_api(std::env::var("AWS_ENDPOINT_URL").unwrap());
    address_in_stderr(&mut api, "listening on http://").await;
    wait_until("the outbox is published", || async {
        h.app.scalar_i64("SELECT COUNT(*) FROM outbox").await == 0
    })
    .await;
    let event_id = h.last_event_id(s.application_id).await;
    h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(h.smtp.count_for(&event_id), 1);
}

/// Two relays publish the same outbox at once: each event is published at least once, and the
/// worker still sends one email per event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_relays_at_once() {
    let h = Harness::new_sqs(Backend::Postgres, "lease").await;
    let other = TestApp::spawn_with(
        Backend::Postgres,
        CacheKind::Memory,
        &[
            ("DATABASE_URL", &h.app.database_url),
            ("QUEUE", "sqs"),
            ("SQS_QUEUE_URL", &h.sqs.as_ref().unwrap().url),
            ("SQS_DLQ_URL", &h.sqs.as_ref().unwrap().dlq),
        ],
    )
    .await;
    let s = h.app.scenario().await;
    let mut events = Vec::new();
    let mut apps = vec![s.application_id];
    for _ in 0..4 {
        let c = h.app.user("candidate").await;
        apps.push(h.app.apply(&c, s.job_id).await["id"].as_i64().unwrap());
    }
    for app_id in &apps {
        for status in ["reviewing", "interview"] {
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
    let (a, b) = tokio::join!(
        h.app.state.relay.as_ref().unwrap().drain(),
        other.state.relay.as_ref().unwrap().drain()
    );
    a.unwrap();
    b.unwrap();
    // The relays' own background runs may still hold rows the drains skipped.
    wait_until("the outbox is published", || async {
        h.app.scalar_i64("SELECT COUNT(*) FROM outbox").await == 0
    })
    .await;
    let worker = h.worker().await;
    let q = h.sqs.as_ref().unwrap();
    for _ in 0..5 {
        worker.run_until_empty().await.unwrap();
        if q.count(&q.url).await == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    for e in &events {
        assert_eq!(h.smtp.count_for(e), 1, "{e}");
    }
}

/// The API reports SQS without depending on it; the worker is not ready without it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readiness_reports_the_queue() {
    let h = Harness::new_sqs(Backend::Sqlite, "lease").await;
    let r = h.app.get("/readyz", None).await;
    assert_eq!(r.expect(200)["checks"]["queue"], "ok");
    assert_eq!(r.body["checks"]["queue_backend"], "sqs");
    assert_eq!(worker_ready(&h, None).await, 200);

    let missing = format!("{}-missing", h.sqs.as_ref().unwrap().url);
    let broken = TestApp::spawn_with(
        Backend::Sqlite,
        CacheKind::Memory,
        &[
            ("QUEUE", "sqs"),
            ("SQS_QUEUE_URL", &missing),
            ("SQS_DLQ_URL", &h.sqs.as_ref().unwrap().dlq),
        ],
    )
    .await;
    let r = broken.get("/readyz", None).await;
    assert_eq!(
        r.expect(200)["checks"]["queue"],
        "error",
        "reported, not required"
    );
    assert_eq!(worker_ready(&h, Some(&missing)).await, 503);
}

/// The status of a worker's `/readyz` for the harness's queue (or `queue_url`).
async fn worker_ready(h: &Harness, queue_url: Option<&str>) -> u16 {
    let mut extra = vec![];
    if let Some(u) = queue_url {
        extra.push(("SQS_QUEUE_URL", u));
    }
    let worker = h.worker_with(&extra).await;
    let router = jobboard::http::ops::worker_router(jobboard::http::ops::WorkerState::new(
        h.app.state.store.clone(),
        worker.queue().clone(),
        worker.healthy.clone(),
        tokio_util::sync::CancellationToken::new(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/readyz", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    reqwest::get(url).await.unwrap().status().as_u16()
}

/// Transactions open on the app's PostgreSQL database that wait on their client.
async fn idle_in_transaction(app: &TestApp) -> i64 {
    app.scalar_i64(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
         AND state = 'idle in transaction'",
    )
    .await
}

/// An SQS that accepts connections and never answers stalls nothing: the relay holds no
/// database transaction while it waits, and every call gives up within its timeout; when SQS
/// answers again the outbox drains.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_sqs_times_out_and_holds_no_transaction() {
    let queues = SqsQueues::create().await;
    let moto = url::Url::parse(&std::env::var("AWS_ENDPOINT_URL").unwrap()).unwrap();
    let proxy = crate::proxy::TcpProxy::start(&format!(
        "{}:{}",
        moto.host_str().unwrap(),
        moto.port().unwrap_or(80)
    ))
    .await;
    let endpoint = format!("http://127.0.0.1:{}", proxy.port);
    let vars = [
        ("QUEUE", "sqs"),
        ("SQS_QUEUE_URL", queues.url.as_str()),
        ("SQS_DLQ_URL", queues.dlq.as_str()),
        ("AWS_ENDPOINT_URL_SQS", endpoint.as_str()),
        ("SQS_TIMEOUT_SECS", "2"),
        ("VISIBILITY_TIMEOUT_SECS", "4"),
        ("EMAIL_SEND_TIMEOUT_SECS", "2"),
    ];
    let app = TestApp::spawn_with(Backend::Postgres, CacheKind::Memory, &vars).await;
    let relay = app.state.relay.clone().expect("a relay with QUEUE=sqs");
    let config = app.config(&vars);
    let worker = jobboard::run::build_worker(&config, app.state.store.clone())
        .await
        .unwrap();

    proxy.stall();
    let s = app.scenario().await;
    app.patch(
        &format!("/api/applications/{}", s.application_id),
        Some(&s.employer.token),
        json!({"status": "reviewing"}),
    )
    .await
    .expect(200);
    // The background relay is publishing into the stall now.
    for _ in 0..30 {
        assert_eq!(
            idle_in_transaction(&app).await,
            0,
            "a transaction is held across the SQS call"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let published = tokio::time::timeout(Duration::from_secs(20), relay.drain()).await;
    assert!(
        matches!(published, Ok(Err(_))),
        "publishing into a hung SQS must fail within its timeout"
    );
    let received = tokio::time::timeout(
        Duration::from_secs(20),
        worker.queue().receive(1, Duration::ZERO),
    )
    .await;
    assert!(
        matches!(received, Ok(Err(_))),
        "receiving from a hung SQS must fail within its timeout"
    );
    assert!(
        app.scalar_i64("SELECT COUNT(*) FROM outbox").await >= 1,
        "the event waits"
    );

    proxy.restore();
    wait_until("the outbox drains", || async {
        app.scalar_i64("SELECT COUNT(*) FROM outbox").await == 0
    })
    .await;
    // The application's confirmation and the move.
    assert_eq!(queues.count(&queues.url).await, 2);
}

/// Runs `jobboard worker` on the harness's queues with `extra` variables, its stderr in `log`.
fn worker_process(
    h: &Harness,
    log: &std::path::Path,
    extra: &[(&str, &str)],
) -> tokio::process::Child {
    let file = std::fs::File::create(log).unwrap();
    crate::crash::command(h, &["worker"], extra)
        .stdout(std::process::Stdio::null())
        .stderr(file)
        .spawn()
        .expect("spawn worker")
}

/// A worker given a queue or DLQ that does not exist stops at start with a line naming the
/// variable (a dead letter would otherwise have nowhere to go), instead of running.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_refuses_a_queue_that_does_not_exist() {
    let h = Harness::new_sqs(Backend::Sqlite, "lease").await;
    let q = h.sqs.as_ref().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let missing_queue = format!("{}-missing", q.url);
    let missing_dlq = format!("{}-missing", q.dlq);
    for (var, vars) in [
        ("SQS_DLQ_URL", [("SQS_DLQ_URL", missing_dlq.as_str())]),
        ("SQS_QUEUE_URL", [("SQS_QUEUE_URL", missing_queue.as_str())]),
    ] {
        let log = dir.path().join(format!("{var}.log"));
        let mut worker = worker_process(&h, &log, &vars);
        let status = tokio::time::timeout(Duration::from_secs(30), worker.wait()).await;
        let text = std::fs::read_to_string(&log).unwrap();
        let Ok(status) = status else {
            panic!("the worker runs with a {var} that does not exist:\n{text}");
        };
        assert_eq!(status.unwrap().code(), Some(1), "{text}");
        assert!(
            text.lines()
                .any(|l| l.contains(var) && l.contains("does not exist")),
            "a line names {var}:\n{text}"
        );
    }
}

/// The worker warns at start when the queue's redrive policy would move a message to the DLQ
/// before MAX_ATTEMPTS failed sends (SQS's receive count also counts deferrals and shutdowns).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn worker_warns_when_the_redrive_comes_before_max_attempts() {
    // The harness's queue moves a message after 20 receives.
    let h = Harness::new_sqs(Backend::Sqlite, "lease").await;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("ok.log");
    let mut worker = worker_process(&h, &log, &[("MAX_ATTEMPTS", "5")]);
    wait_until("the worker starts", || async {
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("worker started")
    })
    .await;
    worker.kill().await.unwrap();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        !text.contains("maxReceiveCount"),
        "20 receives are above 5 attempts:\n{text}"
    );

    let log = dir.path().join("warn.log");
    let mut worker = worker_process(&h, &log, &[("MAX_ATTEMPTS", "20")]);
    wait_until("the worker warns about the redrive policy", || async {
        std::fs::read_to_string(&log).unwrap().lines().any(|l| {
            l.contains("\"WARN\"") && l.contains("maxReceiveCount") && l.contains("MAX_ATTEMPTS")
        })
    })
    .await;
    worker.kill().await.unwrap();
}

/// A redrive that fails part way (here the main queue is gone, so the first copy cannot be sent)
/// makes every dead letter it listed visible again: a listing right after it shows them all,
/// instead of missing them for the 30 s the listing hid them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redrive_that_fails_part_way_leaves_every_dead_letter_listed() {
    let h = Harness::new_sqs(Backend::Sqlite, "lease").await;
    let q = h.sqs.as_ref().unwrap();
    for body in ["first dead letter", "second dead letter"] {
        q.client
            .send_message()
            .queue_url(&q.dlq)
            .message_body(body)
            .send()
            .await
            .unwrap();
    }
    let broken = jobboard::queue::sqs::SqsQueue::connect(
        &format!("{}-gone", q.url),
        q.dlq.clone(),
        Duration::from_secs(30),
        h.app.state.store.clone(),
        jobboard::queue::sqs::ClientOptions {
            endpoint_url: None,
            timeout: Duration::from_secs(5),
        },
    )
    .await
    .unwrap();
    use jobboard::queue::Queue;
    let failed = broken.redrive(Selection::All, true).await;
    assert!(failed.is_err(), "the copy had nowhere to go: {failed:?}");
    assert_eq!(q.hidden(&q.dlq).await, 0, "no dead letter is left hidden");
    // They were put there by hand, with no record: the upkeep's look at the DLQ finds both.
    assert_eq!(broken.reconcile().await.unwrap(), 2);
    let listed = broken.dead_letters().await.unwrap();
    assert_eq!(
        listed.len(),
        2,
        "both dead letters are listed right after the failed redrive: {listed:?}"
    );
}

/// With SQS, reading the dead letters (the console's list, the queue's figures, `dlq list`)
/// receives nothing from the DLQ: no letter is hidden by a read, so a redrive (or a purge) at
/// the same moment finds its letter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_console_read_leaves_the_dlq_alone_and_a_redrive_during_it_finds_its_letter() {
    let h = Harness::new_sqs(Backend::Postgres, "lease").await;
    let q = h.sqs.as_ref().unwrap();
    let (_, event_id, worker) = h.dead_lettered_change().await;
    let op = h.app.operator().await;
    let token = op.token.as_str();
    let list = h.app.get("/api/admin/dead-letters", Some(token)).await;
    let id = list.expect(200)["items"][0]["id"]
        .as_str()
        .expect("the dead letter is listed")
        .to_string();
    h.app.get("/api/admin/queue", Some(token)).await.expect(200);
    assert_eq!(q.hidden(&q.dlq).await, 0, "a read hides no dead letter");

    // Reads keep going while the redrive runs.
    let reading = {
        let app_url = h.app.url("/api/admin/dead-letters");
        let token = token.to_string();
        tokio::spawn(async move {
            let client = reqwest::Client::new();
            for _ in 0..20 {
                let r = client
                    .get(&app_url)
                    .bearer_auth(&token)
                    .send()
                    .await
                    .unwrap();
                assert_eq!(r.status(), 200);
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = h
        .app
        .post(
            "/api/admin/dead-letters/redrive",
            Some(token),
            json!({"ids": [id]}),
        )
        .await;
    assert_eq!(
        r.expect(200),
        &json!({"redriven": 1, "not_found": 0, "skipped_invalid": 0})
    );
    reading.await.unwrap();
    h.later().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    let list = h.app.get("/api/admin/dead-letters", Some(token)).await;
    assert_eq!(list.expect(200)["total"], 0, "{}", list.text);
}

/// A message SQS's own redrive policy moved to the DLQ has no record of the worker's: the
/// worker's upkeep finds it, and from then it is listed and can be redriven like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_letter_the_queue_moved_itself_is_listed_and_redriven() {
    let h = Harness::new_sqs(Backend::Sqlite, "lease").await;
    let q = h.sqs.as_ref().unwrap();
    let (_, event_id) = h.status_change().await;
    // What the redrive policy does: the message, as it was, now in the DLQ.
    let moved = q.move_all_to_dlq().await;
    assert_eq!(moved, 1);
    let worker = h.worker().await;
    assert_eq!(worker.queue().reconcile_dead_letters().await.unwrap(), 1);
    let listed = worker.queue().dead_letters().await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0].event_id.as_deref(), Some(event_id.as_str()));
    assert_eq!(listed[0].reason, "moved by the queue's redrive policy");
    // Found once: a second pass adds nothing.
    assert_eq!(worker.queue().reconcile_dead_letters().await.unwrap(), 0);
    let r = worker
        .queue()
        .redrive(Selection::Ids(vec![listed[0].id.clone()]), false)
        .await
        .unwrap();
    assert_eq!((r.redriven, r.not_found), (1, 0));
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert!(worker.queue().dead_letters().await.unwrap().is_empty());
}
