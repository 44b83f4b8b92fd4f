//! The worker's promise (docs/guarantee.md), against a real SMTP server: one email per status
//! change, whatever is delivered twice, fails, is slow, is poisoned or is deleted. Each case runs
//! on SQLite with `lease`, and on PostgreSQL with `lease` and with `transaction`.

use crate::helpers::*;
use crate::smtp::SmtpServer;
use jobboard::worker::{Outcome, Worker};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// A running app, an SMTP server, and workers wired to both.
pub struct Harness {
    pub app: TestApp,
    pub smtp: SmtpServer,
    pub mode: &'static str,
    /// With `QUEUE=sqs`: the queue and DLQ made for this test.
    pub sqs: Option<crate::sqs::SqsQueues>,
}

impl Harness {
    pub async fn new(backend: Backend, mode: &'static str) -> Harness {
        Harness {
            app: TestApp::spawn(backend, CacheKind::Memory).await,
            smtp: SmtpServer::start().await,
            mode,
            sqs: None,
        }
    }

    /// The app with `QUEUE=sqs` on fresh queues of the SQS-compatible test server.
    pub async fn new_sqs(backend: Backend, mode: &'static str) -> Harness {
        let queues = crate::sqs::SqsQueues::create().await;
        let app = TestApp::spawn_with(
            backend,
            CacheKind::Memory,
            &[
                ("QUEUE", "sqs"),
                ("SQS_QUEUE_URL", &queues.url),
                ("SQS_DLQ_URL", &queues.dlq),
                ("VISIBILITY_TIMEOUT_SECS", "2"),
                ("EMAIL_SEND_TIMEOUT_SECS", "1"),
            ],
        )
        .await;
        Harness {
            app,
            smtp: SmtpServer::start().await,
            mode,
            sqs: Some(queues),
        }
    }

    /// Publishes what waits in the outbox (with SQS; the database queue needs nothing).
    pub async fn publish(&self) {
        if let Some(relay) = &self.app.state.relay {
            relay.drain().await.expect("relay");
            // The background relay may hold rows this drain skipped; wait for it to finish.
            wait_until("the outbox is published", || async {
                self.app.scalar_i64("SELECT COUNT(*) FROM outbox").await == 0
            })
            .await;
        }
    }

    /// Waits until a retry's delay has passed (moves the clock with the database queue; with
    /// SQS, waits until no message of the queue is hidden any more, however long the backoff).
    pub async fn later(&self) {
        match &self.sqs {
            None => self.app.time_passes().await,
            Some(q) => {
                wait_until("every hidden message is visible again", || async {
                    q.hidden(&q.url).await == 0
                })
                .await
            }
        }
    }

    pub async fn worker_with(&self, extra: &[(&str, &str)]) -> Worker {
        let config = self.worker_config(extra);
        jobboard::run::build_worker(&config, self.app.state.store.clone())
            .await
            .expect("worker")
    }

    /// A worker as [`worker`](Self::worker) builds it, whose mailer is `wrap`'s wrapping of the
    /// real one (a fault of the test's making).
    pub async fn worker_wrapping(
        &self,
        wrap: impl FnOnce(Arc<dyn jobboard::email::Mailer>) -> Arc<dyn jobboard::email::Mailer>,
    ) -> Worker {
        let config = self.worker_config(&[]);
        let store = self.app.state.store.clone();
        let queue = jobboard::run::build_queue(&config, store.clone())
            .await
            .expect("queue");
        let mailer = jobboard::email::from_config(&config).await.expect("mailer");
        Worker::new(&config, store, queue, wrap(mailer))
    }

    /// The configuration of [`worker_with`](Self::worker_with)'s workers.
    fn worker_config(&self, extra: &[(&str, &str)]) -> jobboard::config::Config {
        let url = self.smtp.url();
        // `lease-unbatched`: lease mode handling each message of a batch on its own.
        let (mode, batch) = match self.mode {
            "lease-unbatched" => ("lease", "false"),
            mode => (mode, "true"),
        };
        let mut vars: Vec<(&str, &str)> = vec![
            ("EMAIL_BACKEND", "smtp"),
            ("SMTP_URL", &url),
            ("CLAIM_MODE", mode),
            ("WORKER_BATCH", batch),
            (
                "VISIBILITY_TIMEOUT_SECS",
                if self.sqs.is_some() { "2" } else { "4" },
            ),
            (
                "EMAIL_SEND_TIMEOUT_SECS",
                if self.sqs.is_some() { "1" } else { "2" },
            ),
            ("MAX_ATTEMPTS", "3"),
            ("EMAIL_FROM", "jobs@jobboard.example"),
        ];
        vars.extend_from_slice(extra);
        self.app.config(&vars)
    }

    pub async fn worker(&self) -> Worker {
        self.worker_with(&[]).await
    }

    /// The app's scenario (an employer's job, a candidate's application), with the candidate's
    /// confirmation of the application emailed and then forgotten by the mail server, so that a
    /// case starts with its own events alone. Nothing else may wait in the queue.
    pub async fn scenario(&self) -> Scenario {
        self.scenarios(1).await.remove(0)
    }

    /// `n` scenarios, their confirmations sent and forgotten as [`Harness::scenario`]'s.
    pub async fn scenarios(&self, n: usize) -> Vec<Scenario> {
        let mut made = Vec::new();
        for _ in 0..n {
            made.push(self.app.scenario().await);
        }
        self.publish().await;
        let outcomes = self.worker().await.run_until_empty().await.unwrap();
        assert_eq!(
            outcomes,
            vec![Outcome::Sent; n],
            "the applications' confirmations"
        );
        let confirmed = self
            .smtp
            .mails()
            .iter()
            .filter(|m| {
                m.header("Subject").as_deref()
                    == Some("We received your application for Backend Engineer at Acme")
            })
            .count();
        assert_eq!(confirmed, n, "the applications' confirmations");
        self.smtp.forget();
        made
    }

    /// The scenario's application moved to `reviewing` by its employer; returns the event id.
    pub async fn change(&self, s: &Scenario) -> String {
        self.app
            .patch(
                &format!("/api/applications/{}", s.application_id),
                Some(&s.employer.token),
                json!({"status": "reviewing"}),
            )
            .await
            .expect(200);
        let event_id = self.last_event_id(s.application_id).await;
        self.publish().await;
        event_id
    }

    /// A candidate's application moved once by the employer; returns it and the event id.
    pub async fn status_change(&self) -> (Scenario, String) {
        self.status_changes(1).await.remove(0)
    }

    /// `n` applications each moved once, their events all waiting in the queue.
    pub async fn status_changes(&self, n: usize) -> Vec<(Scenario, String)> {
        let mut changed = Vec::new();
        for s in self.scenarios(n).await {
            let event_id = self.change(&s).await;
            changed.push((s, event_id));
        }
        changed
    }

    /// A status change whose email the mail server refused for good (554): the worker that
    /// handled it dead-lettered it at once. Returns the change, its event id and that worker.
    pub async fn dead_lettered_change(&self) -> (Scenario, String, Worker) {
        let (s, event_id) = self.status_change().await;
        self.smtp.reject_next();
        let worker = self.worker().await;
        assert_eq!(
            worker.run_until_empty().await.unwrap(),
            vec![Outcome::DeadLettered]
        );
        (s, event_id, worker)
    }

    pub async fn last_event_id(&self, application_id: i64) -> String {
        self.app
            .scalar_text(&format!(
                "SELECT event_id FROM application_history WHERE application_id = {application_id} AND old_status IS NOT NULL ORDER BY id DESC LIMIT 1"
            ))
            .await
            .expect("an event id")
    }

    /// The event id of the application's submission (its confirmation).
    pub async fn last_submission(&self, application_id: i64) -> String {
        self.app
            .scalar_text(&format!(
                "SELECT event_id FROM application_history WHERE application_id = {application_id} \
                 AND old_status IS NULL"
            ))
            .await
            .expect("the submission's event")
    }

    pub async fn processed_status(&self, event_id: &str) -> Option<String> {
        self.app
            .scalar_text(&format!(
                "SELECT status FROM processed_events WHERE event_id = '{event_id}'"
            ))
            .await
    }

    pub async fn attempts(&self, event_id: &str) -> i64 {
        self.app.scalar_i64(&format!("SELECT COALESCE(MAX(attempts), 0) FROM processed_events WHERE event_id = '{event_id}'")).await
    }

    /// Messages not yet handled: in the outbox, and with SQS on the queue.
    pub async fn queued(&self) -> i64 {
        let outbox = self.app.scalar_i64("SELECT COUNT(*) FROM outbox").await;
        match &self.sqs {
            None => outbox,
            Some(q) => outbox + q.count(&q.url).await,
        }
    }

    /// Puts a copy of the message for `event_id` on the queue again (a duplicate delivery, as a
    /// separate message with its own message id).
    pub async fn duplicate(&self, event_id: &str, application_id: i64) {
        let body = json!({"type": "application.status_changed", "event_id": event_id, "application_id": application_id,
            "old_status": "submitted", "new_status": "reviewing", "occurred_at": "2026-12-02T10:00:00Z"});
        self.enqueue(&body.to_string()).await;
    }

    /// Puts any body on the queue, as an operator could.
    pub async fn enqueue(&self, body: &str) {
        let config = self.app.config(&[]);
        let queue = jobboard::run::build_queue(&config, self.app.state.store.clone())
            .await
            .unwrap();
        queue.enqueue(body).await.unwrap();
    }
}

/// Each case in every claim mode (SQLite lease; PostgreSQL lease, batched and not, and
/// transaction), one module per case; `sqs:` in the two SQS modes, from a module inside the
/// cases' own.
#[macro_export]
macro_rules! each_worker_mode {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::worker::Harness;
            use $crate::helpers::Backend;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_lease() {
                super::$name(Harness::new(Backend::Sqlite, "lease").await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_lease() {
                super::$name(Harness::new(Backend::Postgres, "lease").await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_lease_unbatched() {
                super::$name(Harness::new(Backend::Postgres, "lease-unbatched").await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_transaction() {
                super::$name(Harness::new(Backend::Postgres, "transaction").await).await
            }
        }
    )*};
    (sqs: $($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::worker::Harness;
            use $crate::helpers::Backend;
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_sqs_lease() {
                super::super::$name(Harness::new_sqs(Backend::Sqlite, "lease").await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_sqs_transaction() {
                super::super::$name(Harness::new_sqs(Backend::Postgres, "transaction").await).await
            }
        }
    )*};
}

crate::each_worker_mode!(
    first_delivery_sends_one_email,
    duplicate_deliveries_send_one_email,
    concurrent_duplicates_send_one_email,
    deleted_application_sends_nothing,
    failed_send_is_released_and_retried,
    max_attempts_dead_letter_then_redrive,
    permanent_failure_dead_letters_at_once,
    poison_messages_are_dead_lettered,
    withdraw_emails_a_confirmation,
    rolled_back_change_emits_nothing,
    dead_event_without_its_dead_letter_is_not_lost,
    a_batch_sends_each_once_and_a_failure_releases_only_its_claim,
    a_late_acceptance_repeats_only_through_a_counted_reclaim,
);

/// One receive holding new events, a copy of one of them, a deleted application and a send that
/// fails: every event gets its one email, the failure releases only its own claim, and nothing
/// else is left on the queue.
async fn a_batch_sends_each_once_and_a_failure_releases_only_its_claim(h: Harness) {
    let mut events = h.status_changes(5).await;
    let (gone, gone_event) = events.pop().unwrap();
    h.app
        .delete(
            &format!("/api/applications/{}", gone.application_id),
            Some(&gone.candidate.token),
        )
        .await
        .expect(204);
    let (copied, copied_event) = &events[0];
    h.duplicate(copied_event, copied.application_id).await;
    h.smtp.fail_next(1);
    let worker = h.worker().await;
    let received = worker.queue().receive(10, Duration::ZERO).await.unwrap();
    assert_eq!(received.len(), 6, "one receive holds the whole batch");
    let outcomes: Vec<Outcome> = worker
        .handle_batch(&received)
        .await
        .into_iter()
        .map(|r| r.expect("handled"))
        .collect();
    let count = |o: Outcome| outcomes.iter().filter(|x| **x == o).count();
    assert_eq!(count(Outcome::Missing), 1, "{outcomes:?}");
    assert_eq!(h.smtp.mails().len(), count(Outcome::Sent));
    // One send failed. With a lease the copy finds the event claimed (deferred) or sent
    // (duplicate); in one transaction it may wait for the failed holder and send it itself.
    let failed: Vec<&String> = events
        .iter()
        .map(|(_, e)| e)
        .filter(|e| h.smtp.count_for(e) == 0)
        .collect();
    // Handled concurrently, the copy of the copied event may meet its failed claim already
    // released and send it: that failure is then recovered, with still one email.
    let recovered = count(Outcome::Failed)
        .checked_sub(failed.len())
        .unwrap_or_else(|| panic!("an event is unsent without a failure: {outcomes:?}"));
    assert!(
        recovered <= 1,
        "only a failed event is unsent: {outcomes:?}"
    );
    if recovered == 1 {
        assert_eq!(h.smtp.count_for(copied_event), 1, "{outcomes:?}");
    }
    assert!(failed.len() <= 1, "{outcomes:?}");
    if h.mode != "transaction" {
        assert_eq!(failed.len() + recovered, 1, "{outcomes:?}");
    }
    for e in &failed {
        assert_eq!(h.processed_status(e).await.as_deref(), Some("pending"));
        assert_eq!(h.attempts(e).await, 1);
    }
    for (_, e) in &events {
        if !failed.contains(&e) {
            assert_eq!(h.processed_status(e).await.as_deref(), Some("done"));
        }
    }
    assert_eq!(
        h.processed_status(&gone_event).await.as_deref(),
        Some("missing")
    );
    // The retry, and a copy deferred behind it if the failed event was the copied one.
    let mut rest = Vec::new();
    for _ in 0..2 {
        h.later().await;
        rest.extend(worker.run_until_empty().await.unwrap());
    }
    assert_eq!(
        rest.iter().filter(|o| **o == Outcome::Sent).count(),
        failed.len(),
        "{rest:?}"
    );
    for (_, e) in &events {
        assert_eq!(h.smtp.count_for(e), 1, "one email for {e}");
    }
    assert_eq!(h.queued().await, 0);
}

/// The worker marked an event dead and died before moving its message to the dead letters: the
/// message's next delivery puts it there (once), instead of dropping it as a duplicate.
async fn dead_event_without_its_dead_letter_is_not_lost(h: Harness) {
    let (s, event_id) = h.status_change().await;
    h.app
        .exec(&format!(
            "INSERT INTO processed_events (event_id, status, attempts, updated_at) VALUES ('{event_id}', 'dead', 3, {})",
            now_ms_sql(h.app.backend)
        ))
        .await;
    let worker = h.worker().await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::DeadLettered]
    );
    h.duplicate(&event_id, s.application_id).await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::DeadLettered]
    );
    let dead = worker.queue().dead_letters().await.unwrap();
    assert_eq!(dead.len(), 1, "one dead letter per event");
    assert_eq!(dead[0].event_id.as_deref(), Some(event_id.as_str()));
    assert!(h.smtp.mails().is_empty());
    assert_eq!(h.queued().await, 0);
}

async fn first_delivery_sends_one_email(h: Harness) {
    let (s, event_id) = h.status_change().await;
    assert_eq!(h.queued().await, 1);
    let outcomes = h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(outcomes, vec![Outcome::Sent]);
    let mails = h.smtp.mails();
    assert_eq!(mails.len(), 1);
    let m = &mails[0];
    assert_eq!(m.event_id(), event_id);
    assert_eq!(
        m.header("Message-ID").unwrap(),
        format!("<{event_id}@jobboard.example>")
    );
    assert_eq!(
        m.header("Subject").unwrap(),
        "Update on your application for Backend Engineer at Acme"
    );
    assert!(
        m.recipients[0].contains(&s.candidate.email),
        "{:?}",
        m.recipients
    );
    assert!(
        m.text().contains("from submitted to reviewing"),
        "{}",
        m.raw
    );
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
    assert_eq!(h.queued().await, 0, "the message was deleted");
}

async fn duplicate_deliveries_send_one_email(h: Harness) {
    let (s, event_id) = h.status_change().await;
    h.duplicate(&event_id, s.application_id).await;
    let worker = h.worker().await;
    // Both copies arrive in one batch and are handled at once: one sends, the other finds the
    // event done or defers to the live lease.
    let mut outcomes = worker.run_until_empty().await.unwrap();
    h.app.time_passes().await;
    outcomes.extend(worker.run_until_empty().await.unwrap());
    h.duplicate(&event_id, s.application_id).await;
    outcomes.extend(worker.run_until_empty().await.unwrap());
    assert_eq!(
        outcomes.iter().filter(|o| **o == Outcome::Sent).count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes.last(),
        Some(&Outcome::Duplicate),
        "a later copy is a duplicate: {outcomes:?}"
    );
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert_eq!(h.queued().await, 0);
}

async fn concurrent_duplicates_send_one_email(h: Harness) {
    let (s, event_id) = h.status_change().await;
    h.duplicate(&event_id, s.application_id).await;
    h.smtp.set_delay(Duration::from_millis(500));
    let (a, b) = (h.worker().await, h.worker().await);
    let first = a.queue().receive(1, Duration::ZERO).await.unwrap();
    let second = b.queue().receive(1, Duration::ZERO).await.unwrap();
    assert_eq!(
        (first.len(), second.len()),
        (1, 1),
        "two workers hold the two copies"
    );
    let (x, y) = tokio::join!(a.handle(&first[0]), b.handle(&second[0]));
    let mut outcomes = vec![x.unwrap(), y.unwrap()];
    outcomes.sort_by_key(|o| o.as_str());
    // The loser either found the event done or deferred to the live lease.
    assert!(outcomes.contains(&Outcome::Sent), "{outcomes:?}");
    assert!(
        outcomes.contains(&Outcome::Duplicate) || outcomes.contains(&Outcome::Deferred),
        "{outcomes:?}"
    );
    h.app.time_passes().await;
    h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert_eq!(h.queued().await, 0);
}

async fn deleted_application_sends_nothing(h: Harness) {
    let (s, event_id) = h.status_change().await;
    h.app
        .delete(
            &format!("/api/applications/{}", s.application_id),
            Some(&s.candidate.token),
        )
        .await
        .expect(204);
    let outcomes = h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(outcomes, vec![Outcome::Missing]);
    assert!(h.smtp.mails().is_empty());
    assert_eq!(
        h.processed_status(&event_id).await.as_deref(),
        Some("missing"),
        "the claim is kept"
    );
    assert_eq!(h.queued().await, 0, "the message is gone");
    // A later copy skips fast.
    h.duplicate(&event_id, s.application_id).await;
    assert_eq!(
        h.worker().await.run_until_empty().await.unwrap(),
        vec![Outcome::Duplicate]
    );
    assert!(h.smtp.mails().is_empty());
}

async fn failed_send_is_released_and_retried(h: Harness) {
    let (_, event_id) = h.status_change().await;
    h.smtp.fail_next(1);
    let worker = h.worker().await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::Failed]
    );
    assert!(h.smtp.mails().is_empty());
    // The claim is released (not held, not done) and the attempt counted.
    assert_eq!(
        h.processed_status(&event_id).await.as_deref(),
        Some("pending")
    );
    assert_eq!(h.attempts(&event_id).await, 1);
    // The retry waits the backoff: VISIBILITY_TIMEOUT_SECS · 2^0 = 4 s ± 10 %.
    let delay_ms = h
        .app
        .scalar_i64(&format!(
            "SELECT MIN(visible_at) - {} FROM outbox",
            now_ms_sql(h.app.backend)
        ))
        .await;
    assert!((3000..=4500).contains(&delay_ms), "retry in {delay_ms} ms");
    assert!(
        worker.run_until_empty().await.unwrap().is_empty(),
        "not visible before the delay"
    );
    h.app.time_passes().await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
}

/// The mail server accepts the message but answers after the send's deadline (2 s): the worker
/// cannot know whether it went out. The retry sends it again (window W of docs/guarantee.md), and
/// that repeat must come through a reclaim that is counted, so repeats never exceed reclaims.
async fn a_late_acceptance_repeats_only_through_a_counted_reclaim(h: Harness) {
    let (_, event_id) = h.status_change().await;
    h.smtp.answer_next_late(Duration::from_secs(4));
    let worker = h.worker().await;
    let before = reclaimed_total(&h.app).await;
    assert_eq!(
        worker.run_until_empty().await.unwrap(),
        vec![Outcome::Failed]
    );
    assert_eq!(
        h.smtp.count_for(&event_id),
        1,
        "the server kept the message"
    );
    assert_eq!(h.attempts(&event_id).await, 1, "the attempt is counted");
    // Time passes: the retry's backoff, and whatever lease the failed send left.
    h.app.time_passes().await;
    h.app
        .exec(&format!(
            "UPDATE processed_events SET locked_until = {} - 1 WHERE locked_until IS NOT NULL",
            now_ms_sql(h.app.backend)
        ))
        .await;
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
    let repeats = h.smtp.count_for(&event_id) as f64 - 1.0;
    let reclaims = reclaimed_total(&h.app).await - before;
    assert!(
        repeats <= reclaims,
        "{repeats} repeated email(s) but {reclaims} counted reclaim(s)"
    );
}

pub fn now_ms_sql(backend: Backend) -> &'static str {
    match backend {
        Backend::Sqlite => "CAST((julianday('now') - 2440587.5) * 86400000.0 AS INTEGER)",
        Backend::Postgres => "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000 AS BIGINT)",
    }
}

async fn max_attempts_dead_letter_then_redrive(h: Harness) {
    let (_, event_id) = h.status_change().await;
    h.smtp.fail_next(3);
    let worker = h.worker().await;
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        outcomes.extend(worker.run_until_empty().await.unwrap());
        h.app.time_passes().await;
    }
    assert_eq!(
        outcomes,
        vec![Outcome::Failed, Outcome::Failed, Outcome::DeadLettered]
    );
    assert!(h.smtp.mails().is_empty());
    assert_eq!(h.queued().await, 0);
    let dead = worker.queue().dead_letters().await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].event_id.as_deref(), Some(event_id.as_str()));
    assert_eq!(dead[0].attempts, 3);
    assert!(
        dead[0].reason.contains("3 failed sends"),
        "{}",
        dead[0].reason
    );
    assert!(dead[0].first_failed_at <= dead[0].last_failed_at);
    // Redrive: once, with attempts reset, and it is sent.
    let r = worker
        .queue()
        .redrive(
            jobboard::queue::Selection::Ids(vec![dead[0].id.clone(), "999".into()]),
            false,
        )
        .await
        .unwrap();
    assert_eq!((r.redriven, r.not_found), (1, 1));
    assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    assert!(worker.queue().dead_letters().await.unwrap().is_empty());
}

async fn permanent_failure_dead_letters_at_once(h: Harness) {
    let (_, event_id, worker) = h.dead_lettered_change().await;
    let dead = worker.queue().dead_letters().await.unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].attempts, 1);
    // The reason says who refused, then what they said: an operator reads it in the console.
    assert!(
        dead[0].reason.starts_with("rejected by the mail server: ")
            && dead[0].reason.contains("554"),
        "{}",
        dead[0].reason
    );
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("dead"));
    // A late copy of a dead-lettered event sends nothing.
    h.app.time_passes().await;
    assert!(worker.run_until_empty().await.unwrap().is_empty());
    assert!(h.smtp.mails().is_empty());
}

async fn poison_messages_are_dead_lettered(h: Harness) {
    let s = h.scenario().await;
    let store = h.app.state.store.clone();
    let valid_event = json!({"type": "application.status_changed", "event_id": "test-poison", "application_id": 1,
        "old_status": "submitted", "new_status": "reviewing", "occurred_at": "2026-12-02T10:00:00Z"});
    let mut unknown_type = valid_event.clone();
    unknown_type["type"] = json!("application.deleted");
    let mut missing_field = valid_event.clone();
    missing_field
        .as_object_mut()
        .unwrap()
        .remove("application_id");
    let mut bad_id = valid_event.clone();
    bad_id["event_id"] = json!("bad id\r\nBcc: someone@example.com");
    let mut wrong_type = valid_event.clone();
    wrong_type["application_id"] = json!("one");
    let poison = [
        ("not json at all".to_string(), "not JSON"),
        (missing_field.to_string(), "application_id"),
        (bad_id.to_string(), "event_id must match"),
        (unknown_type.to_string(), "unknown type"),
        (wrong_type.to_string(), "invalid field"),
    ];
    for (body, _) in &poison {
        store.queue_enqueue(None, None, body).await.unwrap();
    }
    let event_id = h.change(&s).await;
    let mut outcomes = h.worker().await.run_until_empty().await.unwrap();
    outcomes.sort_by_key(|o| o.as_str());
    assert_eq!(
        outcomes.iter().filter(|o| **o == Outcome::Invalid).count(),
        5,
        "{outcomes:?}"
    );
    assert_eq!(
        h.smtp.count_for(&event_id),
        1,
        "the good event after the poison is still sent"
    );
    let dead = h.worker().await.queue().dead_letters().await.unwrap();
    assert_eq!(dead.len(), 5);
    for (body, reason) in &poison {
        let d = dead
            .iter()
            .find(|d| &d.body == body)
            .expect("dead-lettered with its raw body");
        assert!(
            d.reason.contains(reason),
            "{} should mention {reason}",
            d.reason
        );
        assert_eq!(d.attempts, 0);
    }
    // The unknown type and the bad fields still had a usable event id; the others none.
    let with_id = dead
        .iter()
        .filter(|d| d.event_id.as_deref() == Some("test-poison"))
        .count();
    assert_eq!(with_id, 3);
}

async fn withdraw_emails_a_confirmation(h: Harness) {
    let s = h.scenario().await;
    h.app
        .post(
            &format!("/api/applications/{}/withdraw", s.application_id),
            Some(&s.candidate.token),
            json!({}),
        )
        .await
        .expect(200);
    h.worker().await.run_until_empty().await.unwrap();
    let mails = h.smtp.mails();
    assert_eq!(mails.len(), 1);
    assert!(mails[0].text().contains("withdrew"), "{}", mails[0].raw);
    assert!(mails[0].recipients[0].contains(&s.candidate.email));
}

/// A status change whose transaction fails writes no event; the committed ones each write one.
async fn rolled_back_change_emits_nothing(h: Harness) {
    let s = h.scenario().await;
    h.app.refuse_moves_to("interview").await;
    let path = format!("/api/applications/{}", s.application_id);
    h.app
        .patch(
            &path,
            Some(&s.employer.token),
            json!({"status": "reviewing"}),
        )
        .await
        .expect(200);
    let r = h
        .app
        .patch(
            &path,
            Some(&s.employer.token),
            json!({"status": "interview"}),
        )
        .await;
    assert_eq!(r.status, 500, "{}", r.text);
    assert_eq!(
        h.app.get(&path, Some(&s.candidate.token)).await.body["status"],
        "reviewing",
        "the change rolled back"
    );
    assert_eq!(
        h.queued().await,
        1,
        "only the committed change has its event"
    );
    h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(h.smtp.mails().len(), 1);
}

/// A send slower than a heartbeat interval keeps its lease alive; a copy arriving meanwhile
/// defers; one email. The mail server holds the send until the test has seen the heartbeat
/// and the copy's deferral, so no step races another (the send's deadline, 6 s, is 2 s past
/// the first heartbeat at 12 s / 3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeat_keeps_the_lease_during_a_slow_send() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let h = Harness::new(backend, "lease").await;
        let (s, event_id) = h.status_change().await;
        h.duplicate(&event_id, s.application_id).await;
        h.smtp.hold();
        let timing = [
            ("VISIBILITY_TIMEOUT_SECS", "12"),
            ("EMAIL_SEND_TIMEOUT_SECS", "6"),
        ];
        let a = Arc::new(h.worker_with(&timing).await);
        let b = h.worker_with(&timing).await;
        let first = a.queue().receive(1, Duration::ZERO).await.unwrap();
        let sending = {
            let a = a.clone();
            let m = first[0].clone();
            tokio::spawn(async move { a.handle(&m).await })
        };
        // Wait for the claim and note its lease, then for the heartbeat to extend it.
        let locked_until = || async {
            h.app.scalar_i64(&format!("SELECT COALESCE(MAX(locked_until), 0) FROM processed_events WHERE event_id = '{event_id}'")).await
        };
        wait_until("the event is claimed", || async {
            locked_until().await > 0
        })
        .await;
        let claimed_until = locked_until().await;
        wait_until("the heartbeat extends the lease", || async {
            locked_until().await > claimed_until
        })
        .await;
        assert!(!sending.is_finished(), "the send is still held");
        let copy = b.queue().receive(1, Duration::ZERO).await.unwrap();
        assert_eq!(b.handle(&copy[0]).await.unwrap(), Outcome::Deferred);
        h.smtp.release();
        assert_eq!(sending.await.unwrap().unwrap(), Outcome::Sent);
        h.app.time_passes().await;
        assert_eq!(b.run_until_empty().await.unwrap(), vec![Outcome::Duplicate]);
        assert_eq!(h.smtp.count_for(&event_id), 1);
    }
}

/// A lease whose holder died is reclaimed once it expires: logged, counted, and sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn expired_lease_is_reclaimed() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let h = Harness::new(backend, "lease").await;
        let (_, event_id) = h.status_change().await;
        // Another worker claimed it and died: its lease ran out a second ago.
        h.app.exec(&format!(
            "INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, updated_at) \
             VALUES ('{event_id}', 'in_progress', 'dead-worker', {now} - 1000, 0, {now})",
            now = now_ms_sql(backend)
        )).await;
        let before = reclaimed_total(&h.app).await;
        assert_eq!(
            h.worker().await.run_until_empty().await.unwrap(),
            vec![Outcome::Sent]
        );
        assert_eq!(h.smtp.count_for(&event_id), 1);
        assert!(
            reclaimed_total(&h.app).await > before,
            "events_reclaimed_total counted it"
        );
        // A live lease held elsewhere defers instead.
        let (_, second) = h.status_change().await;
        h.app.exec(&format!(
            "INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, updated_at) \
             VALUES ('{second}', 'in_progress', 'other-worker', {now} + 60000, 0, {now})",
            now = now_ms_sql(backend)
        )).await;
        assert_eq!(
            h.worker().await.run_until_empty().await.unwrap(),
            vec![Outcome::Deferred]
        );
        let delay_ms = h
            .app
            .scalar_i64(&format!(
                "SELECT MIN(visible_at) - {} FROM outbox",
                now_ms_sql(backend)
            ))
            .await;
        assert!(
            (55_000..=61_000).contains(&delay_ms),
            "deferred for the lease's remaining time: {delay_ms}"
        );
        assert_eq!(h.attempts(&second).await, 0, "a deferral is not an attempt");
    }
}

/// A queue whose statistics cannot be read would leave the gauges (and the alerts that read
/// them) stale: the upkeep counts each failure in `upkeep_failures_total`, which an alert reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_queue_stats_are_counted() {
    let h = Harness::new_sqs(Backend::Sqlite, "lease").await;
    let missing = format!("{}-missing", h.sqs.as_ref().unwrap().url);
    let worker = Arc::new(h.worker_with(&[("SQS_QUEUE_URL", &missing)]).await);
    let name = r#"upkeep_failures_total{task="queue_stats"}"#;
    let before = metric(&h.app, name).await;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let upkeep = tokio::spawn(worker.clone().maintain(shutdown.clone()));
    wait_until("the failed queue statistics are counted", || async {
        metric(&h.app, name).await > before
    })
    .await;
    shutdown.cancel();
    upkeep.await.unwrap();
}

/// The value of the metric line that starts with `name` (0 when absent).
async fn metric(app: &TestApp, name: &str) -> f64 {
    let text = app.get("/metrics", None).await.text;
    text.lines()
        .find(|l| l.starts_with(name))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

pub async fn reclaimed_total(app: &TestApp) -> f64 {
    let text = app.get("/metrics", None).await.text;
    text.lines()
        .find(|l| l.starts_with("events_reclaimed_total"))
        .and_then(|l| l.split_whitespace().last())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0)
}

/// The database behind a proxy goes away: the worker stops receiving, burns no attempts,
/// reports not ready, and resumes when it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_outage_burns_no_attempts() {
    database_outage(Harness::new(Backend::Postgres, "lease").await).await;
}

/// With SQS the queue still answers while the database is away: the worker must stop
/// receiving all the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn database_outage_with_sqs_burns_no_attempts() {
    database_outage(Harness::new_sqs(Backend::Postgres, "lease").await).await;
}

async fn database_outage(h: Harness) {
    let url = url::Url::parse(&h.app.database_url).unwrap();
    let proxy = crate::proxy::TcpProxy::start(&format!(
        "{}:{}",
        url.host_str().unwrap(),
        url.port().unwrap_or(5432)
    ))
    .await;
    let mut proxied = url.clone();
    proxied.set_port(Some(proxy.port)).unwrap();
    let proxied = proxied.to_string();
    let config = h.app.config(&[
        ("DATABASE_URL", &proxied),
        ("EMAIL_BACKEND", "smtp"),
        ("SMTP_URL", &h.smtp.url()),
        ("VISIBILITY_TIMEOUT_SECS", "4"),
        ("EMAIL_SEND_TIMEOUT_SECS", "2"),
    ]);
    let store = jobboard::store::connect(&config.database_url)
        .await
        .unwrap();
    let worker = Arc::new(
        jobboard::run::build_worker(&config, store.clone())
            .await
            .unwrap(),
    );
    let shutdown = tokio_util::sync::CancellationToken::new();
    let ready = jobboard::http::ops::worker_router(jobboard::http::ops::WorkerState::new(
        store,
        worker.queue().clone(),
        worker.healthy.clone(),
        shutdown.clone(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let ready_url = format!("http://{}/readyz", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, ready).await });
    let running = tokio::spawn(worker.clone().run(shutdown.clone()));

    // The running worker sends the applications' confirmations too.
    let s = h.app.scenario().await;
    let first = h.change(&s).await;
    // Sent and recorded: cutting the database between the two is the one window docs/guarantee.md
    // admits a repeat in, which this case is not about.
    wait_until("first event sent and recorded", || async {
        h.smtp.count_for(&first) == 1 && h.processed_status(&first).await.as_deref() == Some("done")
    })
    .await;
    assert_eq!(reqwest::get(&ready_url).await.unwrap().status(), 200);

    proxy.cut();
    let s = h.app.scenario().await;
    let during = h.change(&s).await;
    wait_until("worker notices the outage", || async {
        !worker.healthy.load(std::sync::atomic::Ordering::SeqCst)
    })
    .await;
    assert_eq!(reqwest::get(&ready_url).await.unwrap().status(), 503);
    assert_eq!(h.smtp.count_for(&during), 0);

    proxy.restore();
    wait_until("event sent after the outage", || async {
        h.smtp.count_for(&during) == 1
    })
    .await;
    assert_eq!(h.attempts(&during).await, 0, "the outage burned no attempt");
    assert_eq!(reqwest::get(&ready_url).await.unwrap().status(), 200);
    shutdown.cancel();
    assert!(running.await.unwrap(), "clean stop");
    assert_eq!(h.smtp.count_for(&first), 1);
}

/// Polls `check` until it holds, for at most 40 s.
pub async fn wait_until<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    for _ in 0..800 {
        if check().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not reached within 40 s: {what}");
}

/// Retention: `delete_expired` removes finished records older than the retention and keeps the
/// rest (the `cleanup` command runs the same code; see `crash.rs` for the binary).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_deletes_old_records_only() {
    for backend in [Backend::Sqlite, Backend::Postgres] {
        let h = Harness::new(backend, "lease").await;
        let now = now_ms_sql(backend);
        let day = 86_400_000i64;
        for (id, status, age_days) in [
            ("old-done", "done", 20),
            ("old-missing", "missing", 15),
            ("recent", "done", 3),
            ("old-pending", "pending", 30),
        ] {
            h.app.exec(&format!(
                "INSERT INTO processed_events (event_id, status, attempts, updated_at) VALUES ('{id}', '{status}', 0, {now} - {})",
                age_days * day
            )).await;
        }
        let deleted = h.worker().await.delete_expired().await.unwrap();
        assert_eq!(deleted, 2);
        assert_eq!(
            h.app
                .scalar_i64("SELECT COUNT(*) FROM processed_events")
                .await,
            2
        );
        assert!(h.processed_status("recent").await.is_some());
        assert!(
            h.processed_status("old-pending").await.is_some(),
            "an event still being retried is kept"
        );
    }
}
