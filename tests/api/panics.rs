//! A panic while handling an event, and the stored data that used to cause one (docs/guarantee.md,
//! "A panic while handling an event"): a name stored with line
//! breaks is sent folded, never a panic; a handler that panics on one event ends that event's
//! handling alone, leaves no claim, lock or transaction behind, and after `PANIC_LIMIT` panics
//! the event is a dead letter saying so.

use crate::helpers::*;
use crate::worker::Harness;
use jobboard::domain::mail::SendError;
use jobboard::worker::{Outcome, PANIC_LIMIT};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

crate::each_worker_mode!(
    a_name_with_line_breaks_is_sent_folded,
    a_panicking_event_is_dead_lettered_and_its_batch_goes_on,
);

/// Written straight into the database, as before the rule of docs/api.md (the API now
/// refuses it): the candidate's name with CR LF and LF in it.
async fn store_name_with_line_breaks(h: &Harness, user_id: i64) {
    let (cr, lf) = match h.app.backend {
        Backend::Sqlite => ("char(13)", "char(10)"),
        Backend::Postgres => ("chr(13)", "chr(10)"),
    };
    h.app
        .exec(&format!(
            "UPDATE users SET name = 'Pat' || {cr} || {lf} || 'Bcc: victim@evil.example' || \
             {lf} || {lf} || 'IMPORTANT' WHERE id = {user_id}"
        ))
        .await;
}

/// lettre panics writing a `To:` display name with CR or LF: the worker used to panic on every
/// delivery of such a person's email, for ever. It goes out, the name folded onto one line.
async fn a_name_with_line_breaks_is_sent_folded(h: Harness) {
    let s = h.scenario().await;
    store_name_with_line_breaks(&h, s.candidate.id).await;
    let event_id = h.change(&s).await;
    let outcomes = h.worker().await.run_until_empty().await.unwrap();
    assert_eq!(outcomes, vec![Outcome::Sent]);
    assert_eq!(h.smtp.count_for(&event_id), 1);
    let mail = h.smtp.mails().remove(0);
    // The display name, folded, goes out as encoded words: what matters is that it is there,
    // and that no header or body line of its own came of it.
    let to = mail.header("To").expect("a To header");
    assert!(
        to.starts_with("=?utf-8?b?") && to.ends_with(&format!("<{}>", s.candidate.email)),
        "{to}"
    );
    assert!(mail.header("Bcc").is_none(), "{}", mail.raw);
    assert!(
        mail.raw
            .contains("Hello Pat Bcc: victim@evil.example IMPORTANT,"),
        "{}",
        mail.raw
    );
    assert_eq!(mail.recipients.len(), 1, "{:?}", mail.recipients);
    for line in mail.raw.split("\r\n") {
        assert!(
            !line.starts_with("Bcc:") && !line.starts_with("IMPORTANT"),
            "a forged line {line:?} in {}",
            mail.raw
        );
    }
    assert_eq!(h.processed_status(&event_id).await.as_deref(), Some("done"));
}

/// A mailer that panics (a bug in a handler) whenever it is handed a message for `address`, and
/// sends every other message for real.
struct PanicsFor {
    inner: Arc<dyn jobboard::email::Mailer>,
    address: String,
    panics: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl jobboard::email::Mailer for PanicsFor {
    fn kind(&self) -> &'static str {
        "panics-for-one-recipient"
    }
    async fn send(&self, message: &lettre::Message) -> Result<(), SendError> {
        let to_them = message
            .envelope()
            .to()
            .iter()
            .any(|a| a.to_string().eq_ignore_ascii_case(&self.address));
        if to_them {
            self.panics.fetch_add(1, Ordering::SeqCst);
            panic!("a handler bug for one recipient");
        }
        self.inner.send(message).await
    }
}

/// A write through the API answers at once: no connection, lock or transaction was left behind.
async fn a_write_succeeds(app: &TestApp) {
    tokio::time::timeout(Duration::from_secs(5), app.user("candidate"))
        .await
        .expect("a write within 5 s");
}

async fn a_panicking_event_is_dead_lettered_and_its_batch_goes_on(h: Harness) {
    let changed = h.status_changes(3).await;
    let poisoned = changed[1].1.clone();
    let panics = Arc::new(AtomicUsize::new(0));
    let address = changed[1].0.candidate.email.clone();
    let counted = panics.clone();
    let worker = h
        .worker_wrapping(move |inner| {
            Arc::new(PanicsFor {
                inner,
                address,
                panics: counted,
            })
        })
        .await;
    let received = worker.queue().receive(10, Duration::ZERO).await.unwrap();
    assert_eq!(received.len(), 3, "one receive holds the whole batch");
    let outcomes: Vec<Outcome> = worker
        .handle_batch(&received)
        .await
        .into_iter()
        .map(|r| r.expect("handled"))
        .collect();
    assert_eq!(panics.load(Ordering::SeqCst), 1);
    assert_eq!(
        outcomes.iter().filter(|o| **o == Outcome::Sent).count(),
        2,
        "the rest of the batch is sent: {outcomes:?}"
    );
    for (_, event_id) in changed.iter().filter(|(_, e)| *e != poisoned) {
        assert_eq!(h.smtp.count_for(event_id), 1, "{event_id}");
        assert_eq!(h.processed_status(event_id).await.as_deref(), Some("done"));
    }
    // Its claim is released, not left to its lease; no send was counted.
    assert_eq!(
        h.processed_status(&poisoned).await.as_deref(),
        Some("pending")
    );
    assert_eq!(h.attempts(&poisoned).await, 0);
    a_write_succeeds(&h.app).await;
    for n in 2..=PANIC_LIMIT {
        h.later().await;
        let outcomes = worker.run_until_empty().await.unwrap();
        let expected = if n == PANIC_LIMIT {
            Outcome::DeadLettered
        } else {
            Outcome::Failed
        };
        assert_eq!(outcomes, vec![expected], "panic {n}");
        a_write_succeeds(&h.app).await;
    }
    assert_eq!(panics.load(Ordering::SeqCst), PANIC_LIMIT as usize);
    assert_eq!(h.processed_status(&poisoned).await.as_deref(), Some("dead"));
    let dead = worker.queue().dead_letters().await.unwrap();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].event_id.as_deref(), Some(poisoned.as_str()));
    assert!(
        dead[0]
            .reason
            .starts_with("panicked: a handler bug for one recipient"),
        "{}",
        dead[0].reason
    );
    assert_eq!(h.smtp.count_for(&poisoned), 0);
    assert_eq!(h.queued().await, 0);
}
