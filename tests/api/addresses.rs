//! Addresses every mail service can send to (docs/api.md): an ASCII local part, and a domain
//! sent in its ASCII (A-label) form. An address that breaks the rule is refused where it comes
//! in (422 naming `email`); one stored before the rule is its email's dead letter at once, with
//! the reason, never a failure retried until `MAX_ATTEMPTS`.

use crate::each_store;
use crate::helpers::*;
use crate::worker::Harness;
use jobboard::worker::Outcome;
use serde_json::{Value, json};

each_store!(
    a_non_ascii_local_part_is_refused_where_an_address_comes_in,
    an_idn_domain_is_accepted_and_kept_as_given,
);

/// Local parts no mail service without SMTPUTF8 (nor SES) can send to.
const NON_ASCII: [&str; 3] = ["josé@example.com", "Ünal@example.com", "日本@example.jp"];

fn email_errors(body: &Value) -> String {
    body["errors"]["email"]
        .as_array()
        .unwrap_or_else(|| panic!("a message for `email`: {body}"))
        .iter()
        .filter_map(Value::as_str)
        .collect::<Vec<_>>()
        .join("; ")
}

async fn a_non_ascii_local_part_is_refused_where_an_address_comes_in(app: TestApp) {
    for email in NON_ASCII {
        let r = app
            .post(
                "/api/auth/register",
                None,
                json!({"email": email, "password": "a long enough passphrase", "name": "N", "role": "employer"}),
            )
            .await;
        let body = r.expect(422);
        let errors = email_errors(body);
        assert!(errors.contains("ASCII"), "{email}: {errors}");
    }
    let users = app.scalar_i64("SELECT COUNT(*) FROM users").await;

    // Adding a member by email: the address itself is refused, before any account is looked
    // for.
    let owner = app.user("employer").await;
    let company = app.company(&owner, "Acme").await;
    for email in NON_ASCII {
        let r = app
            .post(
                &format!("/api/companies/{company}/members"),
                Some(&owner.token),
                json!({ "email": email }),
            )
            .await;
        let body = r.expect(422);
        let errors = email_errors(body);
        assert!(errors.contains("ASCII"), "{email}: {errors}");
    }
    let members = app
        .get(
            &format!("/api/companies/{company}/members"),
            Some(&owner.token),
        )
        .await
        .expect(200)
        .clone();
    assert_eq!(members.as_array().map(Vec::len), Some(1), "{members}");
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM users").await,
        users + 1,
        "only the owner was added"
    );
}

async fn an_idn_domain_is_accepted_and_kept_as_given(app: TestApp) {
    let r = app
        .post(
            "/api/auth/register",
            None,
            json!({"email": "Ann@Bücher.example", "password": "a long enough passphrase", "name": "Ann", "role": "candidate"}),
        )
        .await;
    let body = r.expect(201);
    assert_eq!(body["email"], "Ann@Bücher.example", "stored as given");
    app.login("ann@bücher.example", "a long enough passphrase")
        .await;
}

/// The candidate's stored address, replaced behind the API's back (as one stored before the
/// rule would be).
async fn store_address(h: &Harness, user_id: i64, email: &str) {
    let key = email.to_lowercase();
    h.app
        .exec(&format!(
            "UPDATE users SET email = '{email}', email_key = '{key}' WHERE id = {user_id}"
        ))
        .await;
}

/// An IDN domain goes out in its A-label form, in the envelope and in `To:`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idn_domain_is_sent_in_its_a_label_form() {
    for (backend, mode) in [
        (Backend::Sqlite, "lease"),
        (Backend::Postgres, "transaction"),
    ] {
        let h = Harness::new(backend, mode).await;
        let (s, event_id) = h.status_change().await;
        let local = unique("cody");
        store_address(&h, s.candidate.id, &format!("{local}@Bücher.example")).await;
        let worker = h.worker().await;
        assert_eq!(worker.run_until_empty().await.unwrap(), vec![Outcome::Sent]);
        let mails = h.smtp.mails();
        let mail = mails
            .iter()
            .find(|m| m.event_id() == event_id)
            .expect("the email");
        assert_eq!(
            mail.recipients,
            vec![format!("<{local}@xn--bcher-kva.example>")],
            "{mode}"
        );
        let to = mail.header("To").expect("a To header");
        assert!(
            to.contains(&format!("{local}@xn--bcher-kva.example")),
            "{to}"
        );
        assert!(mail.raw.is_ascii(), "{}", mail.raw);
    }
}

/// An address stored before the rule, which no mail service can be relied on to take: the
/// email's dead letter at once, with a reason naming the user (never the address), not a
/// failure retried until `MAX_ATTEMPTS`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_address_the_mailer_cannot_send_is_a_dead_letter_at_once() {
    for (backend, mode) in [
        (Backend::Sqlite, "lease"),
        (Backend::Postgres, "transaction"),
    ] {
        let h = Harness::new(backend, mode).await;
        let (s, event_id) = h.status_change().await;
        store_address(&h, s.candidate.id, "josé@example.com").await;
        let worker = h.worker().await;
        assert_eq!(
            worker.run_until_empty().await.unwrap(),
            vec![Outcome::DeadLettered],
            "{mode}"
        );
        assert_eq!(h.smtp.count_for(&event_id), 0, "nothing sent");
        let dead = worker.queue().dead_letters().await.unwrap();
        let letter = dead
            .iter()
            .find(|d| d.event_id.as_deref() == Some(event_id.as_str()))
            .expect("a dead letter");
        let reason = &letter.reason;
        assert!(
            reason.contains(&format!("user {}", s.candidate.id)),
            "{reason}"
        );
        assert!(reason.contains("ASCII"), "{reason}");
        assert!(!reason.contains("josé"), "no address: {reason}");
        assert!(
            !reason.starts_with("rejected by the mail server"),
            "no mail server saw it: {reason}"
        );
    }
}
