//! The holes a review of the worker and the store found, each pinned by a case that failed
//! before its fix.

use crate::helpers::{Backend, TestApp};
use crate::worker::{Harness, wait_until};
use jobboard::domain::event::{Event, parse_event};
use jobboard::domain::mail::SendError;
use jobboard::store::{Claim, NewDeadLetter, SendFn, TxOutcome};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Runs a statement on the test database, returning the database's refusal instead of
/// panicking on it.
async fn try_exec(app: &TestApp, sql: &str) -> Result<(), sqlx::Error> {
    match app.backend {
        Backend::Sqlite => {
            let mut c =
                <sqlx::SqliteConnection as sqlx::Connection>::connect(&app.database_url).await?;
            sqlx::raw_sql(sql).execute(&mut c).await.map(|_| ())
        }
        Backend::Postgres => {
            let mut c =
                <sqlx::PgConnection as sqlx::Connection>::connect(&app.database_url).await?;
            sqlx::raw_sql(sql).execute(&mut c).await.map(|_| ())
        }
    }
}

fn dead_letter(event_id: &str, reason: &str) -> NewDeadLetter {
    NewDeadLetter {
        event_id: Some(event_id.to_string()),
        reason: reason.to_string(),
        attempts: 5,
        body: format!(r#"{{"event_id":"{event_id}"}}"#),
        first_failed_at: None,
        invalid: false,
    }
}

const INSERT_DEAD: &str = "INSERT INTO dead_letters (event_id, reason, attempts, body, \
     first_failed_at, last_failed_at) VALUES ('e-1', 'send failed', 5, '{}', 1, 2)";

/// The database itself refuses a second dead letter for one event: no check-then-insert race
/// can make two.
async fn the_database_refuses_a_second_dead_letter_for_an_event(app: TestApp) {
    try_exec(&app, INSERT_DEAD)
        .await
        .expect("the first dead letter");
    let second = try_exec(&app, INSERT_DEAD).await;
    assert!(second.is_err(), "a second dead letter for e-1 was stored");
    // Messages that are not readable events each keep their own, with or without an event id.
    for event_id in ["NULL", "NULL", "'e-1'", "'e-1'"] {
        let invalid = format!(
            "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, \
             last_failed_at, invalid) VALUES ({event_id}, 'invalid message: x', 0, 'x', 1, 2, {})",
            if app.backend == Backend::Sqlite {
                "1"
            } else {
                "TRUE"
            }
        );
        try_exec(&app, &invalid).await.unwrap();
    }
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM dead_letters").await, 5);
}

/// Copies of one event dead-lettered at the same moment leave one dead letter, and every copy
/// leaves the queue.
async fn concurrent_copies_of_a_dead_event_leave_one_dead_letter(app: TestApp) {
    let store = app.state.store.clone();
    for round in 0..10 {
        let event = format!("e-{round}");
        let mut ids = Vec::new();
        for _ in 0..4 {
            store.queue_enqueue(Some(&event), None, "{}").await.unwrap();
        }
        for m in store.queue_receive(4, 60_000).await.unwrap() {
            ids.push((m.id, m.receipt));
        }
        assert_eq!(ids.len(), 4);
        let copies = ids.into_iter().map(|(id, receipt)| {
            let store = store.clone();
            let dead = dead_letter(&event, "send failed");
            tokio::spawn(async move { store.queue_dead_letter(id, &receipt, dead).await })
        });
        for copy in copies.collect::<Vec<_>>() {
            copy.await
                .unwrap()
                .expect("each copy is dead-lettered without an error");
        }
    }
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM dead_letters").await,
        10
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(DISTINCT event_id) FROM dead_letters")
            .await,
        10
    );
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 0);
}

/// A database that already holds duplicate dead letters (from before the rule) migrates to
/// one per event, keeping the first, and keeps every invalid message's own.
async fn migrating_keeps_the_first_of_duplicate_dead_letters(app: TestApp) {
    // The schema as the release before left it.
    app.exec("DROP INDEX dead_letters_event_id").await;
    app.exec("ALTER TABLE dead_letters DROP COLUMN invalid")
        .await;
    app.exec("DELETE FROM _sqlx_migrations WHERE version = 4")
        .await;
    app.exec(INSERT_DEAD).await;
    app.exec(&INSERT_DEAD.replace("send failed", "a later copy"))
        .await;
    let invalid = INSERT_DEAD
        .replace("'e-1'", "'e-2'")
        .replace("send failed", "invalid message: unknown type");
    app.exec(&invalid).await;
    app.exec(&invalid).await;
    app.state.store.migrate().await.expect("the migration");
    let kept = "SELECT COUNT(*) FROM dead_letters WHERE event_id = 'e-1'";
    assert_eq!(app.scalar_i64(kept).await, 1);
    assert_eq!(
        app.scalar_text("SELECT reason FROM dead_letters WHERE event_id = 'e-1'")
            .await
            .as_deref(),
        Some("send failed")
    );
    let invalid_kept = "SELECT COUNT(*) FROM dead_letters WHERE event_id = 'e-2' AND invalid";
    assert_eq!(app.scalar_i64(invalid_kept).await, 2);
    assert!(try_exec(&app, INSERT_DEAD).await.is_err());
}

/// A status change through the API: its event, as the outbox holds it.
async fn status_change(app: &TestApp) -> Event {
    let s = app.scenario().await;
    app.patch(
        &format!("/api/applications/{}", s.application_id),
        Some(&s.employer.token),
        json!({"status": "reviewing"}),
    )
    .await
    .expect(200);
    let body = app
        .scalar_text(&format!(
            "SELECT o.body FROM outbox o JOIN application_history h ON h.event_id = o.event_id \
             WHERE h.application_id = {} AND h.old_status IS NOT NULL",
            s.application_id
        ))
        .await
        .expect("the status change's event");
    parse_event(&body).expect("an event")
}

/// A send that counts its calls and fails (transiently) when told to, after `pause`.
fn counting_send(sends: Arc<AtomicUsize>, fail: bool, pause: Duration) -> SendFn<'static> {
    Box::new(move |_data, _attempts| {
        Box::pin(async move {
            sends.fetch_add(1, Ordering::SeqCst);
            tokio::time::sleep(pause).await;
            if fail {
                Err(SendError::Transient("421 try again later".into()))
            } else {
                Ok(())
            }
        })
    })
}

/// During a rolling deploy that switches `CLAIM_MODE`, a `transaction`-mode worker finds an
/// event another worker holds under a live lease: it must not send it too.
async fn transaction_mode_leaves_a_live_lease_alone(app: TestApp) {
    let store = app.state.store.clone();
    let event = status_change(&app).await;
    let event_id = event.event_id.clone();
    let Claim::Claimed { lease_id, .. } = store.claim_event(&event_id, 60_000).await.unwrap()
    else {
        panic!("the lease worker claims the new event");
    };
    let sends = Arc::new(AtomicUsize::new(0));
    let send = counting_send(sends.clone(), false, Duration::ZERO);
    let outcome = store.process_in_transaction(&event, 5, send).await.unwrap();
    assert_eq!(
        sends.load(Ordering::SeqCst),
        0,
        "sent under another's lease"
    );
    assert!(
        matches!(outcome, TxOutcome::Deferred { remaining_ms } if remaining_ms > 0),
        "{outcome:?}"
    );
    assert!(
        store
            .extend_claim(&event_id, &lease_id, 60_000)
            .await
            .unwrap(),
        "the lease is still its holder's"
    );
}

/// A `transaction`-mode send fails; while its transaction rolls back, a `lease`-mode worker
/// claims the event. Counting the failure must not clear that worker's lease.
async fn a_failed_transaction_send_leaves_a_new_lease_alone(app: TestApp) {
    let store = app.state.store.clone();
    let event = status_change(&app).await;
    let event_id = event.event_id.clone();
    let sends = Arc::new(AtomicUsize::new(0));
    let claimer = {
        let (store, event_id) = (store.clone(), event_id.clone());
        tokio::spawn(async move {
            // Waits behind the transaction's claim, and takes the event when it rolls back.
            tokio::time::sleep(Duration::from_millis(100)).await;
            store.claim_event(&event_id, 60_000).await.unwrap()
        })
    };
    let send = counting_send(sends.clone(), true, Duration::from_millis(400));
    let outcome = store.process_in_transaction(&event, 5, send).await;
    let claim = claimer.await.unwrap();
    match claim {
        Claim::Claimed { lease_id, .. } => {
            // The lease worker won the event after the rollback: its lease must be intact.
            assert!(
                store
                    .extend_claim(&event_id, &lease_id, 60_000)
                    .await
                    .unwrap(),
                "the failure of the transaction-mode copy cleared the new lease ({outcome:?})"
            );
            assert!(outcome.is_ok(), "{outcome:?}");
        }
        Claim::Deferred { .. } => {
            // The failure was counted first and the event waits out its backoff.
            assert!(
                matches!(outcome, Ok(TxOutcome::Failed { .. })),
                "{outcome:?}"
            );
        }
        other => panic!("unexpected claim {other:?} ({outcome:?})"),
    }
    assert_eq!(sends.load(Ordering::SeqCst), 1);
}

/// A worker whose lease is taken from it mid-send (it ran past its lease and another worker
/// reclaimed the event) must stop keeping the message hidden: that is now the other's to do.
async fn a_lost_lease_stops_the_heartbeat(h: Harness) {
    let (_, event_id) = h.status_change().await;
    h.smtp.set_delay(Duration::from_secs(8));
    // A beat every 4 s; the send gives up after 6 s.
    let worker = h
        .worker_with(&[
            ("VISIBILITY_TIMEOUT_SECS", "12"),
            ("EMAIL_SEND_TIMEOUT_SECS", "6"),
        ])
        .await;
    let run = tokio::spawn(async move { worker.run_until_empty().await });
    wait_until("the event is claimed", || async {
        h.processed_status(&event_id).await.as_deref() == Some("in_progress")
    })
    .await;
    h.app
        .exec("UPDATE processed_events SET lease_id = 'another-worker'")
        .await;
    let visible_at = "SELECT MAX(visible_at) FROM outbox";
    let before = h.app.scalar_i64(visible_at).await;
    // Past the first beat, before the send gives up.
    tokio::time::sleep(Duration::from_millis(5000)).await;
    let after = h.app.scalar_i64(visible_at).await;
    assert_eq!(
        before, after,
        "the message's visibility was extended after the lease was lost"
    );
    h.smtp.set_delay(Duration::ZERO);
    run.abort();
}

/// Makes the database refuse to record any event as done until `allow_done` (a blip right
/// after the mail server accepted the message).
async fn refuse_done(app: &TestApp) {
    app.exec(match app.backend {
        Backend::Sqlite => {
            "CREATE TRIGGER refuse_done BEFORE UPDATE ON processed_events \
             WHEN NEW.status = 'done' BEGIN SELECT RAISE(ABORT, 'database blip'); END;"
        }
        Backend::Postgres => {
            "CREATE FUNCTION refuse_done() RETURNS trigger AS $$ BEGIN \
             IF NEW.status = 'done' THEN RAISE EXCEPTION 'database blip'; END IF; \
             RETURN NEW; END $$ LANGUAGE plpgsql; \
             CREATE TRIGGER refuse_done BEFORE UPDATE ON processed_events \
             FOR EACH ROW EXECUTE FUNCTION refuse_done();"
        }
    })
    .await;
}

async fn allow_done(app: &TestApp) {
    app.exec(match app.backend {
        Backend::Sqlite => "DROP TRIGGER refuse_done",
        Backend::Postgres => "DROP TRIGGER refuse_done ON processed_events",
    })
    .await;
}

/// The mail server accepted two emails, then recording them failed for a moment: the worker
/// retries the record within its lease instead of letting a redelivery send them again.
async fn a_record_that_fails_after_the_send_is_retried_not_resent(h: Harness) {
    let changed = h.status_changes(2).await;
    let (first, second) = (changed[0].1.clone(), changed[1].1.clone());
    refuse_done(&h.app).await;
    let worker = h.worker().await;
    let run = tokio::spawn(async move { worker.run_until_empty().await });
    wait_until("both are sent", || async { h.smtp.mails().len() >= 2 }).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    allow_done(&h.app).await;
    let _ = run.await.unwrap();
    // Whatever was left: its lease and its message's visibility run out, and a worker retries.
    h.app
        .exec("UPDATE processed_events SET locked_until = 0 WHERE status = 'in_progress'")
        .await;
    h.later().await;
    let _ = h.worker().await.run_until_empty().await;
    for event_id in [&first, &second] {
        assert_eq!(h.smtp.count_for(event_id), 1, "{event_id} was sent again");
        assert_eq!(h.processed_status(event_id).await.as_deref(), Some("done"));
    }
}

/// In a batch, each send is recorded as soon as it is accepted (grouped over a few
/// milliseconds), not when the slowest send of the batch ends: a worker killed meanwhile would
/// send again everything whose record was waiting.
async fn a_batch_records_each_send_promptly(h: Harness) {
    let changed = h.status_changes(3).await;
    let [slow, b, c] = [0, 1, 2].map(|i| changed[i].1.clone());
    h.smtp.stall_matching(&slow, Duration::from_millis(1800));
    let worker = h.worker().await;
    let run = tokio::spawn(async move { worker.run_until_empty().await });
    wait_until("the quick two are sent", || async {
        h.smtp.count_for(&b) == 1 && h.smtp.count_for(&c) == 1
    })
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        h.smtp.count_for(&slow),
        0,
        "the slow send is still in flight"
    );
    for event_id in [&b, &c] {
        assert_eq!(
            h.processed_status(event_id).await.as_deref(),
            Some("done"),
            "an accepted send waits for the rest of its batch to be recorded"
        );
    }
    let _ = run.await.unwrap();
    assert_eq!(h.smtp.count_for(&slow), 1);
}

mod a_record_that_fails_after_the_send_is_retried_not_resent {
    use crate::helpers::Backend;
    use crate::worker::Harness;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite_batched() {
        let h = Harness::new(Backend::Sqlite, "lease").await;
        super::a_record_that_fails_after_the_send_is_retried_not_resent(h).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_batched() {
        let h = Harness::new(Backend::Postgres, "lease").await;
        super::a_record_that_fails_after_the_send_is_retried_not_resent(h).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_unbatched() {
        let h = Harness::new(Backend::Postgres, "lease-unbatched").await;
        super::a_record_that_fails_after_the_send_is_retried_not_resent(h).await
    }
}

/// A mailer whose first send panics (a bug in a handler), then sends for real.
struct PanicsOnce {
    inner: Arc<dyn jobboard::email::Mailer>,
    calls: AtomicUsize,
}

#[async_trait::async_trait]
impl jobboard::email::Mailer for PanicsOnce {
    fn kind(&self) -> &'static str {
        "panics-once"
    }
    async fn send(&self, message: &lettre::Message) -> Result<(), SendError> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            panic!("a handler bug");
        }
        self.inner.send(message).await
    }
}

/// The value of a counter in the process's metrics (0 before its first increment).
fn counter(name: &str) -> f64 {
    jobboard::telemetry::metrics_handle()
        .render()
        .lines()
        .find_map(|l| l.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// A handler task that panics is counted and logged (not silently dropped), the worker goes on
/// handling, and the event is sent once when its message comes back.
async fn a_panicking_handler_is_surfaced(h: Harness) {
    let (_, event_id) = h.status_change().await;
    let config = h.app.config(&[
        ("EMAIL_BACKEND", "smtp"),
        ("SMTP_URL", &h.smtp.url()),
        ("CLAIM_MODE", "lease"),
        ("VISIBILITY_TIMEOUT_SECS", "2"),
        ("EMAIL_SEND_TIMEOUT_SECS", "1"),
    ]);
    let store = h.app.state.store.clone();
    let queue = jobboard::run::build_queue(&config, store.clone())
        .await
        .unwrap();
    let mailer = Arc::new(PanicsOnce {
        inner: jobboard::email::from_config(&config).await.unwrap(),
        calls: AtomicUsize::new(0),
    });
    let worker = Arc::new(jobboard::worker::Worker::new(
        &config,
        store,
        queue,
        mailer.clone(),
    ));
    let before = counter("worker_task_panics_total");
    let shutdown = tokio_util::sync::CancellationToken::new();
    let running = tokio::spawn(worker.clone().run(shutdown.clone()));
    wait_until("the panic is counted", || async {
        counter("worker_task_panics_total") > before
    })
    .await;
    wait_until("the event is sent after its lease ends", || async {
        h.smtp.count_for(&event_id) == 1
    })
    .await;
    shutdown.cancel();
    running.await.unwrap();
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
}

/// The worker's `/readyz` answers 503 while the worker itself reports itself unhealthy, even
/// when its database and queue answer a ping.
async fn worker_readiness_follows_the_worker(h: Harness) {
    let worker = h.worker().await;
    let router = jobboard::http::ops::worker_router(jobboard::http::ops::WorkerState::new(
        h.app.state.store.clone(),
        worker.queue().clone(),
        worker.healthy.clone(),
        tokio_util::sync::CancellationToken::new(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/readyz", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    let ready = |url: String| async move {
        let r = reqwest::get(url).await.unwrap();
        let code = r.status().as_u16();
        (code, r.json::<serde_json::Value>().await.unwrap())
    };
    let (code, body) = ready(url.clone()).await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["checks"]["worker"], "ok");
    worker.healthy.store(false, Ordering::SeqCst);
    let (code, body) = ready(url.clone()).await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(body["checks"]["worker"], "unavailable");
    assert_eq!(body["checks"]["database"], "ok");
}

/// Failed logins with a huge, made-up email: each stored counter key stays small.
async fn login_failure_keys_are_bounded(app: TestApp) {
    let huge = format!("{}@example.com", "a".repeat(60_000));
    app.post(
        "/api/auth/token",
        None,
        json!({"email": huge, "password": "wrong passphrase"}),
    )
    .await
    .expect_problem(401, "unauthorized");
    let longest = app
        .scalar_i64("SELECT CAST(MAX(LENGTH(key)) AS BIGINT) FROM auth_failures")
        .await;
    assert!(longest <= 300, "a {longest}-character key was stored");
}

/// A client that has hit its limit is refused without anything more being written: a flood of
/// refused logins does not grow the database.
async fn a_limited_client_writes_nothing_more(app: TestApp) {
    for i in 0..50 {
        app.post(
            "/api/auth/token",
            None,
            json!({"email": format!("guess{i}@example.com"), "password": "wrong passphrase"}),
        )
        .await
        .expect(401);
    }
    let rows = app.scalar_i64("SELECT COUNT(*) FROM auth_failures").await;
    for i in 0..20 {
        app.post(
            "/api/auth/token",
            None,
            json!({"email": format!("more{i}@example.com"), "password": "wrong passphrase"}),
        )
        .await
        .expect_problem(429, "rate-limited");
    }
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM auth_failures").await,
        rows,
        "refused attempts were stored"
    );
}

/// Counters whose window has ended are deleted by the `cleanup` command (the worker's hourly
/// upkeep runs the same code); the ones still counting stay.
async fn expired_login_failures_are_cleaned_up(h: Harness) {
    let u = h.app.user("candidate").await;
    for email in [u.email.as_str(), "nobody@example.com"] {
        h.app
            .post(
                "/api/auth/token",
                None,
                json!({"email": email, "password": "wrong passphrase"}),
            )
            .await
            .expect(401);
    }
    let rows = h.app.scalar_i64("SELECT COUNT(*) FROM auth_failures").await;
    assert!(rows > 0);
    // The counters of the unknown email ended an hour ago.
    h.app
        .exec(
            "UPDATE auth_failures SET window_start = window_start - 3600000 \
             WHERE key LIKE '%nobody@example.com'",
        )
        .await;
    let config = h.app.config(&[]);
    let code = jobboard::run::run(Some(jobboard::cli::Command::Cleanup), config)
        .await
        .unwrap();
    assert_eq!(code, 0);
    assert_eq!(
        h.app.scalar_i64("SELECT COUNT(*) FROM auth_failures").await,
        rows - 1
    );
    // The limit still counts the live ones.
    h.app.login(&u.email, &u.password).await;
}

/// The Argon2 hashes running now, as the process's metrics report them.
fn hashes_running() -> f64 {
    counter("password_hashes_running")
}

/// Requests dropped by their client mid-hash (connect, send, disconnect) keep their place in
/// the hashing limit until their hash ends: no flood runs more hashes at once than the limit.
async fn cancelled_requests_keep_the_hashing_limit(app: TestApp) {
    let limit = (2 * std::thread::available_parallelism().map_or(2, |n| n.get())) as f64;
    let most = Arc::new(std::sync::Mutex::new(0.0f64));
    let done = tokio_util::sync::CancellationToken::new();
    let sampler = {
        let (most, done) = (most.clone(), done.clone());
        tokio::spawn(async move {
            while !done.is_cancelled() {
                let now = hashes_running();
                {
                    let mut m = most.lock().unwrap();
                    *m = m.max(now);
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        })
    };
    let url = app.url("/api/auth/token");
    // Clients that give up after 10 to 205 ms, some before their hash starts, most during it;
    // every tenth waits for its answer.
    let flood = (0..40u64).map(|i| {
        let (client, url) = (app.client.clone(), url.clone());
        async move {
            let body = json!({"email": format!("flood{i}@example.com"), "password": "guess"});
            let mut send = client.post(url).json(&body);
            if i % 10 != 0 {
                send = send.timeout(Duration::from_millis(10 + 5 * i));
            }
            let _ = send.send().await;
        }
    });
    futures::future::join_all(flood).await;
    wait_until("the hashes end", || async { hashes_running() == 0.0 }).await;
    done.cancel();
    sampler.await.unwrap();
    let most = *most.lock().unwrap();
    assert!(most > 0.0, "no hash was seen running");
    assert!(
        most <= limit,
        "{most} hashes ran at once; the limit is {limit}"
    );
}

/// Registering a taken email is a failure that counts before the password is hashed, as for
/// logins: parallel attempts cannot all pass the limit.
async fn parallel_registrations_of_a_taken_email_are_limited(app: TestApp) {
    let u = app.user("candidate").await;
    let attempts = (0..25).map(|_| {
        app.post(
            "/api/auth/register",
            None,
            json!({"email": u.email, "password": "another long passphrase", "name": "Eve", "role": "candidate"}),
        )
    });
    let answers = futures::future::join_all(attempts).await;
    let taken = answers.iter().filter(|r| r.status == 409).count();
    let limited = answers.iter().filter(|r| r.status == 429).count();
    assert_eq!(taken + limited, 25);
    assert!(taken <= 10, "{taken} attempts were hashed; the limit is 10");
}

/// Wrong current passwords are throttled like failed logins: ten per account, then 429 with
/// `Retry-After`, the right password included, in parallel too.
async fn password_change_is_throttled(app: TestApp) {
    let u = app.user("candidate").await;
    let change = |current: String| {
        app.post(
            "/api/me/password",
            Some(&u.token),
            json!({"current_password": current, "new_password": "a brand new passphrase"}),
        )
    };
    let answers =
        futures::future::join_all((0..25).map(|i| change(format!("wrong guess {i}")))).await;
    let wrong = answers.iter().filter(|r| r.status == 422).count();
    let limited = answers.iter().filter(|r| r.status == 429).count();
    assert_eq!(wrong + limited, 25);
    assert!(wrong <= 10, "{wrong} guesses were checked; the limit is 10");
    let r = change(u.password.clone()).await;
    r.expect_problem(429, "rate-limited");
    assert!(r.header("retry-after").is_some());
}

mod a_batch_records_each_send_promptly {
    use crate::helpers::Backend;
    use crate::worker::Harness;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::a_batch_records_each_send_promptly(Harness::new(Backend::Sqlite, "lease").await)
            .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        let h = Harness::new(Backend::Postgres, "lease").await;
        super::a_batch_records_each_send_promptly(h).await
    }
}

mod a_lost_lease_stops_the_heartbeat {
    use crate::helpers::Backend;
    use crate::worker::Harness;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::a_lost_lease_stops_the_heartbeat(Harness::new(Backend::Sqlite, "lease").await).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_unbatched() {
        let h = Harness::new(Backend::Postgres, "lease-unbatched").await;
        super::a_lost_lease_stops_the_heartbeat(h).await
    }
}

/// Runs `sql` with the database's own checks of the enumerated columns off, as if a newer
/// release (one that knows more values) had written the row.
async fn write_unchecked(app: &TestApp, sql: &str) {
    match app.backend {
        Backend::Sqlite => {
            app.exec(&format!("PRAGMA ignore_check_constraints = ON; {sql}"))
                .await
        }
        Backend::Postgres => {
            app.exec(&format!(
                "ALTER TABLE users DROP CONSTRAINT IF EXISTS users_role_check; \
                 ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_employment_type_check; \
                 ALTER TABLE applications DROP CONSTRAINT IF EXISTS applications_status_check; \
                 {sql}"
            ))
            .await
        }
    }
}

/// A stored role, employment type or status this release does not know is an error that
/// someone sees (a 500 and a log line), never silently read as some default.
async fn unknown_stored_values_fail_loudly(app: TestApp) {
    let s = app.scenario().await;
    let job = format!("/api/jobs/{}", s.job_id);
    let application = format!("/api/applications/{}", s.application_id);
    let history = format!("{application}/history");
    let token = Some(s.candidate.token.as_str());
    app.get(&job, None).await.expect(200);
    app.get(&history, token).await.expect(200);

    write_unchecked(
        &app,
        &format!(
            "UPDATE jobs SET employment_type = 'freelance' WHERE id = {}",
            s.job_id
        ),
    )
    .await;
    app.get(&job, None).await.expect_problem(500, "internal");

    app.exec(&format!(
        "UPDATE application_history SET new_status = 'archived' WHERE application_id = {}",
        s.application_id
    ))
    .await;
    app.get(&history, token)
        .await
        .expect_problem(500, "internal");

    write_unchecked(
        &app,
        &format!(
            "UPDATE applications SET status = 'archived' WHERE id = {}",
            s.application_id
        ),
    )
    .await;
    app.get(&application, token)
        .await
        .expect_problem(500, "internal");

    write_unchecked(
        &app,
        &format!(
            "UPDATE users SET role = 'admin' WHERE id = {}",
            s.candidate.id
        ),
    )
    .await;
    app.get("/api/me", token)
        .await
        .expect_problem(500, "internal");
}

crate::each_store!(
    unknown_stored_values_fail_loudly,
    transaction_mode_leaves_a_live_lease_alone,
    a_failed_transaction_send_leaves_a_new_lease_alone,
    the_database_refuses_a_second_dead_letter_for_an_event,
    concurrent_copies_of_a_dead_event_leave_one_dead_letter,
    migrating_keeps_the_first_of_duplicate_dead_letters,
    login_failure_keys_are_bounded,
    a_limited_client_writes_nothing_more,
    cancelled_requests_keep_the_hashing_limit,
    parallel_registrations_of_a_taken_email_are_limited,
    password_change_is_throttled,
);

mod a_panicking_handler_is_surfaced {
    use crate::helpers::Backend;
    use crate::worker::Harness;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::a_panicking_handler_is_surfaced(Harness::new(Backend::Sqlite, "lease").await).await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        let h = Harness::new(Backend::Postgres, "lease").await;
        super::a_panicking_handler_is_surfaced(h).await
    }
}

mod worker_readiness_follows_the_worker {
    use crate::helpers::Backend;
    use crate::worker::Harness;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::worker_readiness_follows_the_worker(Harness::new(Backend::Sqlite, "lease").await)
            .await
    }
}

mod expired_login_failures_are_cleaned_up {
    use crate::helpers::Backend;
    use crate::worker::Harness;
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::expired_login_failures_are_cleaned_up(Harness::new(Backend::Sqlite, "lease").await)
            .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        let h = Harness::new(Backend::Postgres, "lease").await;
        super::expired_login_failures_are_cleaned_up(h).await
    }
}
