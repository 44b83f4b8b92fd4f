//! `EMAIL_BACKEND=ses` against the SES v2 API of the AWS test server (moto, the same server as the
//! SQS tests, in `AWS_ENDPOINT_URL`): the message goes out raw with our headers, exactly once; an
//! unverified sender and an endpoint that refuses connections are outages of the mail service
//! (nothing counted, `/readyz` 503) that end when it is fixed or back; an answer lost after the
//! request went out is an unknown outcome, repeated only through a counted reclaim.
//!
//! moto keeps every message it accepted and shows them at `GET /moto-api/data.json`, under
//! `ses.RawMessage` (`raw_data`: the message as sent). It cannot be made to throttle, so
//! throttling's classification is a unit test on the SDK's error type (`src/email/ses.rs`).

use crate::helpers::*;
use crate::worker::{Harness, now_ms_sql, reclaimed_total, wait_until};
use jobboard::worker::Outcome;
use proxy::SesProxy;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

mod proxy;

/// The sender's domain, verified on the test server by [`verify_sender`].
const FROM: &str = "jobs@ses.jobboard.example";

/// The test server's `host:port`, for a proxy in front of it.
fn moto_address() -> String {
    let moto = url::Url::parse(&endpoint()).unwrap();
    format!(
        "{}:{}",
        moto.host_str().unwrap(),
        moto.port_or_known_default().unwrap()
    )
}

fn endpoint() -> String {
    std::env::var("AWS_ENDPOINT_URL").expect(
        "the EMAIL_BACKEND=ses tests need the AWS test server in AWS_ENDPOINT_URL; scripts/test starts one",
    )
}

/// Verifies the sender's domain on the test server.
async fn verify_sender() {
    verify(FROM.split_once('@').unwrap().1).await;
}

/// Verifies `domain` on the test server (SES v2 `CreateEmailIdentity`).
async fn verify(domain: &str) {
    let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
    let client = aws_sdk_sesv2::Client::new(&config);
    if let Err(e) = client
        .create_email_identity()
        .email_identity(domain)
        .send()
        .await
    {
        // A second run on the same server finds it there already.
        let text = format!("{}", aws_sdk_sesv2::error::DisplayErrorContext(&e));
        assert!(text.contains("AlreadyExists"), "verify {domain}: {text}");
    }
}

/// The raw messages the test server accepted that carry `X-Jobboard-Event-Id: event_id`.
async fn sent(event_id: &str) -> Vec<String> {
    let data: Value = reqwest::get(format!("{}/moto-api/data.json", endpoint()))
        .await
        .expect("the test server answers")
        .json()
        .await
        .unwrap();
    let header = format!("X-Jobboard-Event-Id: {event_id}\r\n");
    data["ses"]["RawMessage"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter_map(|m| m["raw_data"].as_str())
                .filter(|raw| raw.contains(&header))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

async fn ses_worker(h: &Harness, extra: &[(&str, &str)]) -> jobboard::worker::Worker {
    let mut vars = vec![("EMAIL_BACKEND", "ses"), ("EMAIL_FROM", FROM)];
    vars.extend_from_slice(extra);
    h.worker_with(&vars).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ses_sends_the_raw_message_once_with_our_headers() {
    verify_sender().await;
    let h = Harness::new(Backend::Postgres, "lease").await;
    let (s, event_id) = h.status_change().await;
    let worker = ses_worker(&h, &[]).await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    // A copy of the message finds the event processed.
    h.duplicate(&event_id, s.application_id).await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::Duplicate]
    );
    let sent = sent(&event_id).await;
    assert_eq!(sent.len(), 1, "exactly one message: {sent:?}");
    let raw = &sent[0];
    assert!(
        raw.contains(&format!(
            "Message-ID: <{event_id}@ses.jobboard.example>\r\n"
        )),
        "{raw}"
    );
    assert!(
        raw.contains("Subject: Update on your application for Backend Engineer at Acme"),
        "{raw}"
    );
    assert!(raw.contains(&s.candidate.email), "{raw}");
    assert!(
        raw.replace("=\r\n", "")
            .contains("from submitted to reviewing"),
        "{raw}"
    );
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
}

/// A worker running its receive loop, with its `/readyz`.
struct Running {
    worker: Arc<jobboard::worker::Worker>,
    ready: String,
    shutdown: tokio_util::sync::CancellationToken,
    running: tokio::task::JoinHandle<bool>,
}

impl Running {
    async fn start(h: &Harness, worker: jobboard::worker::Worker) -> Running {
        let worker = Arc::new(worker);
        let shutdown = tokio_util::sync::CancellationToken::new();
        let router = jobboard::http::ops::worker_router(
            jobboard::http::ops::WorkerState::new(
                h.app.state.store.clone(),
                worker.queue().clone(),
                worker.healthy.clone(),
                shutdown.clone(),
            )
            .with_mail(worker.mail_up.clone()),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let ready = format!("http://{}/readyz", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, router).await });
        let running = tokio::spawn(worker.clone().run(shutdown.clone()));
        Running {
            worker,
            ready,
            shutdown,
            running,
        }
    }

    /// `/readyz` answers 503 with `checks.mail: refused`.
    async fn assert_mail_refused(&self) {
        let r = reqwest::get(&self.ready).await.unwrap();
        assert_eq!(r.status().as_u16(), 503);
        let body: Value = r.json().await.unwrap();
        assert_eq!(body["checks"]["mail"], "refused", "{body}");
    }

    async fn wait_ready(&self) {
        wait_until("ready again", || async {
            reqwest::get(&self.ready).await.unwrap().status().as_u16() == 200
        })
        .await;
    }

    async fn stop(self) {
        self.shutdown.cancel();
        assert!(self.running.await.unwrap(), "clean stop");
    }
}

/// SES refuses the sender (the test server, as SES, refuses an identity that is not verified):
/// no message can go, so it is an outage of the mail service, not this message's dead letter
/// (docs/guarantee.md): nothing counted, nothing dead-lettered, `/readyz` 503; once the identity is
/// verified, the email goes out once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ses_unverified_sender_is_an_outage_not_a_dead_letter() {
    let h = Harness::new(Backend::Sqlite, "lease").await;
    let (_, event_id) = h.status_change().await;
    let domain = format!("{}.example", unique("unverified"));
    let unverified = format!("jobs@{domain}");
    let worker = ses_worker(&h, &[("EMAIL_FROM", unverified.as_str())]).await;
    let run = Running::start(&h, worker).await;
    let dead = || async { run.worker.queue().dead_letters().await.unwrap() };
    wait_until("the send is refused", || async {
        !run.worker.mail_is_up() || !dead().await.is_empty()
    })
    .await;
    let letters = dead().await;
    assert!(
        letters.is_empty(),
        "an unverified sender dead-lettered the message: {:?}",
        letters.iter().map(|d| &d.reason).collect::<Vec<_>>()
    );
    run.assert_mail_refused().await;
    // A few more tries with backoff, none of them counted.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(h.attempts(&event_id).await, 0, "no attempt counted");
    assert!(dead().await.is_empty());
    assert!(sent(&event_id).await.is_empty());
    run.assert_mail_refused().await;

    verify(&domain).await;
    wait_until("sent once the sender is verified", || async {
        !sent(&event_id).await.is_empty()
    })
    .await;
    run.wait_ready().await;
    wait_until("recorded", || async {
        h.processed_status(&event_id).await.as_deref() == Some("done")
    })
    .await;
    run.stop().await;
    assert_eq!(sent(&event_id).await.len(), 1);
    assert_eq!(h.attempts(&event_id).await, 0);
}

/// The SES endpoint (behind a proxy, through `AWS_ENDPOINT_URL_SESV2`) refuses connections: the
/// worker counts no attempt, dead-letters nothing and is not ready; when it is back, the email
/// goes out once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ses_stopped_endpoint_is_an_outage_then_recovers() {
    verify_sender().await;
    let h = Harness::new(Backend::Postgres, "lease").await;
    let proxy = SesProxy::start(&moto_address()).await;
    let through = proxy.url();
    let worker = ses_worker(
        &h,
        &[
            ("AWS_ENDPOINT_URL_SESV2", through.as_str()),
            ("EMAIL_SEND_TIMEOUT_SECS", "2"),
        ],
    )
    .await;
    proxy.refuse();
    // The change is made (its application's confirmation sent and forgotten by the harness's own
    // worker) before this worker runs, so that the two never race for that confirmation.
    let (_, event_id) = h.status_change().await;
    let run = Running::start(&h, worker).await;
    wait_until("the worker sees the outage", || async {
        !run.worker.mail_is_up()
    })
    .await;
    run.assert_mail_refused().await;
    // A few more tries with backoff, none of them counted.
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(h.attempts(&event_id).await, 0, "no attempt counted");
    assert!(run.worker.queue().dead_letters().await.unwrap().is_empty());
    assert!(sent(&event_id).await.is_empty());

    proxy.restore();
    wait_until("sent after the outage", || async {
        !sent(&event_id).await.is_empty()
    })
    .await;
    run.wait_ready().await;
    wait_until("recorded", || async {
        h.processed_status(&event_id).await.as_deref() == Some("done")
    })
    .await;
    run.stop().await;
    assert_eq!(sent(&event_id).await.len(), 1);
    assert_eq!(h.attempts(&event_id).await, 0);
}

/// What the SES server does with the first send: it takes the message, and its answer comes
/// after the send's deadline, or never.
#[derive(Clone, Copy)]
enum LostAnswer {
    Late,
    Cut,
}

/// The SES server has the message but the worker never learns it (docs/guarantee.md.2, window W):
/// the send is one request, its outcome unknown, and its repeat comes only through a counted
/// reclaim. The proxy counts the `SendEmail` requests: one per attempt.
async fn a_lost_answer_repeats_only_through_a_counted_reclaim(h: Harness, lost: LostAnswer) {
    verify_sender().await;
    let proxy = SesProxy::start(&moto_address()).await;
    let through = proxy.url();
    let (_, event_id) = h.status_change().await;
    match lost {
        LostAnswer::Late => proxy.answer_next_late(Duration::from_secs(4)),
        LostAnswer::Cut => proxy.cut_next_answer(),
    }
    let worker = ses_worker(
        &h,
        &[
            ("AWS_ENDPOINT_URL_SESV2", through.as_str()),
            ("EMAIL_SEND_TIMEOUT_SECS", "2"),
        ],
    )
    .await;
    let before = reclaimed_total(&h.app).await;
    let first = worker.run_until_empty().await.unwrap();
    // Whatever lease the failed send left lapses, and the retry's backoff passes.
    h.app
        .exec(&format!(
            "UPDATE processed_events SET locked_until = {} - 1 WHERE locked_until IS NOT NULL",
            now_ms_sql(h.app.backend)
        ))
        .await;
    h.app.time_passes().await;
    let second = worker.run_until_empty().await.unwrap();
    let copies = sent(&event_id).await.len();
    let reclaims = reclaimed_total(&h.app).await - before;
    assert!(copies >= 1, "the server kept the first message");
    assert!(
        (copies - 1) as f64 <= reclaims,
        "{} repeated email(s) at the SES server but {reclaims} counted reclaim(s)",
        copies - 1
    );
    let attempts = h.attempts(&event_id).await;
    assert_eq!(
        proxy.sends() as i64,
        attempts + 1,
        "one SendEmail request per attempt: {attempts} failed attempt(s) and one success"
    );
    assert_eq!(first, vec![Outcome::Failed], "the outcome is unknown");
    assert_eq!(attempts, 1, "the unknown outcome is a counted attempt");
    assert_eq!(second, vec![Outcome::Sent]);
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ses_late_answer_repeats_only_through_a_counted_reclaim() {
    for mode in ["lease", "transaction"] {
        let h = Harness::new(Backend::Postgres, mode).await;
        a_lost_answer_repeats_only_through_a_counted_reclaim(h, LostAnswer::Late).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ses_cut_answer_repeats_only_through_a_counted_reclaim() {
    for mode in ["lease", "transaction"] {
        let h = Harness::new(Backend::Postgres, mode).await;
        a_lost_answer_repeats_only_through_a_counted_reclaim(h, LostAnswer::Cut).await;
    }
}
