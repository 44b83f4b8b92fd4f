//! Webhook endpoints' rules (CONTRACT.md §4, "Webhooks"): which events an endpoint may
//! subscribe to, how many endpoints a company may have, and their texts' limits.

use super::event::{Event, EventKind};
use super::validate::{self, FieldError};
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

/// The most endpoints one company may have.
pub const MAX_ENDPOINTS_PER_COMPANY: i64 = 10;

/// The longest URL an endpoint may have, in bytes (as a company's website).
pub const MAX_URL_LEN: usize = 2048;

/// The longest description, in code points (a one-line text).
pub const MAX_DESCRIPTION: usize = 200;

/// The event types (§5) an endpoint may subscribe to: those about a company's jobs and
/// applications, in the order the contract lists them.
pub const EVENT_TYPES: [&str; 5] = [
    "application.submitted",
    "application.status_changed",
    "job.expiring",
    "job.expired",
    "job.reviewed",
];

/// The event types of an endpoint: a non-empty list of [`EVENT_TYPES`], each once. Returned in
/// the contract's order, so that two lists with the same types are stored alike.
pub fn events(given: &[String]) -> Result<Vec<&'static str>, FieldError> {
    if given.is_empty() {
        return Err(format!(
            "must name at least one of {}",
            EVENT_TYPES.join(", ")
        ));
    }
    let mut chosen = Vec::with_capacity(given.len());
    for name in given {
        let Some(known) = EVENT_TYPES.iter().find(|t| **t == name.as_str()) else {
            return Err(format!(
                "{:?} is not an event type an endpoint can receive; one of {}",
                validate::fold_one_line(name),
                EVENT_TYPES.join(", ")
            ));
        };
        if chosen.contains(known) {
            return Err(format!("{known} is named twice"));
        }
        chosen.push(*known);
    }
    chosen.sort_by_key(|t| EVENT_TYPES.iter().position(|k| k == t));
    Ok(chosen)
}

/// The event types as stored: space-separated.
pub fn events_text(events: &[&str]) -> String {
    events.join(" ")
}

/// The event types of a stored endpoint (types this release does not know are kept, so that an
/// older release never drops a newer one's subscription when it writes the row back).
pub fn stored_events(text: &str) -> Vec<String> {
    text.split(' ')
        .filter(|t| !t.is_empty())
        .map(str::to_string)
        .collect()
}

/// An endpoint's description: a one-line text of at most [`MAX_DESCRIPTION`] code points.
pub fn description(value: &str) -> Result<String, FieldError> {
    validate::one_line(value, 0, MAX_DESCRIPTION)
}

/// The type of the delivery `POST …/webhooks/{wid}/test` sends.
pub const PING: &str = "ping";

/// How a delivery finds the company it goes to: the application or the job the event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum About {
    Application(i64),
    Job(i64),
}

/// What a webhook reports of an event: its fact's key (the delivery's `event_id`: the event's
/// own id, or, for the upkeep's events that are one per member, the fact all of them share), its
/// type, what it is about, and its `data` (the event's facts; never a person's address, never
/// the member an email would go to). `None` for the events no endpoint can receive.
#[derive(Debug, Clone, PartialEq)]
pub struct Fact {
    pub key: String,
    pub type_name: &'static str,
    pub about: About,
    pub data: serde_json::Value,
}

/// The webhook fact of `event`, if endpoints can receive its type.
pub fn fact(event: &Event) -> Option<Fact> {
    use serde_json::json;
    let type_name = event.type_name();
    let (key, about, data) = match &event.kind {
        EventKind::Submitted { application_id } => (
            event.event_id.clone(),
            About::Application(*application_id),
            json!({"application_id": application_id}),
        ),
        EventKind::StatusChanged {
            application_id,
            old_status,
            new_status,
        } => (
            event.event_id.clone(),
            About::Application(*application_id),
            json!({"application_id": application_id, "old_status": old_status,
                   "new_status": new_status}),
        ),
        EventKind::JobExpiring {
            job_id, expires_at, ..
        } => (
            format!("job-expiring-{job_id}-{}", expires_at.timestamp()),
            About::Job(*job_id),
            json!({"job_id": job_id, "expires_at": crate::timefmt::format(expires_at)}),
        ),
        EventKind::JobExpired {
            job_id, expires_at, ..
        } => (
            format!("job-expired-{job_id}-{}", expires_at.timestamp()),
            About::Job(*job_id),
            json!({"job_id": job_id, "expires_at": crate::timefmt::format(expires_at)}),
        ),
        EventKind::JobReviewed {
            job_id, decision, ..
        } => (
            // Every member's event of one decision carries the decision's instant.
            format!(
                "job-reviewed-{job_id}-{}",
                event.occurred_at.timestamp_micros()
            ),
            About::Job(*job_id),
            json!({"job_id": job_id, "decision": decision}),
        ),
        EventKind::ApplicationsDigest { .. }
        | EventKind::AlertDigest { .. }
        | EventKind::WebhookDisabled { .. } => return None,
    };
    Some(Fact {
        key,
        type_name,
        about,
        data,
    })
}

/// Whose a delivery is, as its body names it: the company, and the job when the event is about
/// one (or about an application to one), with their names as they were when it was written.
#[derive(Debug, Clone, Copy)]
pub struct Owner<'a> {
    pub company_id: i64,
    pub company: &'a str,
    pub job: Option<(i64, &'a str)>,
}

/// A delivery's body (Standard Webhooks): `{type, timestamp, data}`, `data` the fact's, with
/// `event_id`, and what its email would say of where it belongs: `company_id`, `company` and,
/// for a job's or an application's event, `job_id` and `job_title`. Serialised by serde, so any
/// stored text is escaped as JSON.
pub fn body(
    type_name: &str,
    at: DateTime<Utc>,
    event_id: &str,
    owner: Owner<'_>,
    data: &serde_json::Value,
) -> String {
    let mut data = data.clone();
    if let Some(map) = data.as_object_mut() {
        map.insert("event_id".into(), event_id.into());
        map.insert("company_id".into(), owner.company_id.into());
        map.insert("company".into(), owner.company.into());
        if let Some((job_id, title)) = owner.job {
            map.insert("job_id".into(), job_id.into());
            map.insert("job_title".into(), title.into());
        }
    }
    serde_json::json!({
        "type": type_name,
        "timestamp": crate::timefmt::format(&at),
        "data": data,
    })
    .to_string()
}

/// The `webhook-id` of a fact's delivery to an endpoint: `msg_` and the lowercase hex of the
/// first 16 bytes of the SHA-256 of `{key}:{endpoint_id}`. The same on every retry, so a
/// receiver can drop repeats.
pub fn webhook_id(key: &str, endpoint_id: i64) -> String {
    let digest = Sha256::digest(format!("{key}:{endpoint_id}").as_bytes());
    format!("msg_{}", hex::encode(&digest[..16]))
}

/// Whether an endpoint's stored event types include `type_name`.
pub fn subscribed(events: &str, type_name: &str) -> bool {
    events.split(' ').any(|t| t == type_name)
}

/// When a failed delivery is tried again: `first` seconds (`WEBHOOK_RETRY_SECS`, 30 by
/// default) doubling with each failed attempt, at most 6 hours, ± 20 % (`jitter` in [-1, 1]).
pub fn retry_delay(first: u64, failed_attempts: u32, jitter: f64) -> chrono::Duration {
    let base = first as f64 * 2f64.powi(failed_attempts.saturating_sub(1).min(20) as i32);
    let secs = base.min(6.0 * 3600.0) * (1.0 + 0.2 * jitter.clamp(-1.0, 1.0));
    chrono::Duration::milliseconds((secs * 1000.0) as i64)
}

/// How long a delivery is retried before it is given up.
pub const RETRY_FOR: chrono::Duration = chrono::Duration::days(3);

/// How long an endpoint may fail without a success before it is disabled.
pub const DISABLE_AFTER: chrono::Duration = chrono::Duration::days(5);

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn events_are_known_types_each_once_in_the_contracts_order() {
        assert_eq!(
            events(&names(&["job.expired", "application.submitted"])).unwrap(),
            ["application.submitted", "job.expired"]
        );
        assert!(events(&[]).is_err());
        assert!(events(&names(&["ping"])).is_err());
        assert!(events(&names(&["webhook.disabled"])).is_err());
        assert!(events(&names(&["job.expired", "job.expired"])).is_err());
        assert!(events(&names(&["Job.Expired"])).is_err());
        let all = events(&names(&EVENT_TYPES)).unwrap();
        assert_eq!(stored_events(&events_text(&all)), EVENT_TYPES);
    }

    #[test]
    fn one_fact_per_decision_and_per_expiry_whatever_the_members() {
        use crate::domain::event::Decision;
        let at = DateTime::from_timestamp(1_796_810_400, 0).unwrap();
        let per_member = |user_id| {
            Event::new(
                EventKind::JobExpired {
                    job_id: 5,
                    user_id,
                    expires_at: at,
                },
                at,
            )
        };
        let (a, b) = (fact(&per_member(1)).unwrap(), fact(&per_member(2)).unwrap());
        assert_eq!(a, b, "two members' events are one fact");
        assert_eq!(a.key, "job-expired-5-1796810400");
        assert_eq!(a.about, About::Job(5));
        assert!(a.data.get("user_id").is_none());
        let reviewed = |user_id| {
            Event::new(
                EventKind::JobReviewed {
                    job_id: 5,
                    user_id,
                    decision: Decision::Approved,
                },
                at,
            )
        };
        assert_eq!(fact(&reviewed(1)), fact(&reviewed(2)));
        let submitted = Event::new(EventKind::Submitted { application_id: 3 }, at);
        let f = fact(&submitted).unwrap();
        assert_eq!(f.key, submitted.event_id);
        assert_eq!(f.about, About::Application(3));
    }

    #[test]
    fn a_webhook_id_is_the_same_for_a_fact_and_an_endpoint() {
        let id = webhook_id("evt_42", 7);
        assert_eq!(id, "msg_2a34347b02bb866c2d321c969a186a2e");
        assert_ne!(id, webhook_id("evt_42", 8));
        assert_ne!(id, webhook_id("evt_43", 7));
    }

    #[test]
    fn a_body_carries_the_fact_and_where_it_belongs() {
        let at = DateTime::from_timestamp(1_796_810_400, 0).unwrap();
        let hostile = "Acme</script>\"\n\u{202E}";
        let body = body(
            "application.submitted",
            at,
            "e1",
            Owner {
                company_id: 9,
                company: hostile,
                job: Some((4, "Rust \"lead\"")),
            },
            &serde_json::json!({"application_id": 3}),
        );
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"type": "application.submitted",
                "timestamp": "2026-12-09T10:00:00.000000Z",
                "data": {"application_id": 3, "event_id": "e1", "company_id": 9,
                    "company": hostile, "job_id": 4, "job_title": "Rust \"lead\""}})
        );
        assert!(!body.contains('\n'), "one line of JSON: {body}");
    }

    #[test]
    fn retries_back_off_to_six_hours() {
        assert_eq!(retry_delay(30, 1, 0.0).num_seconds(), 30);
        assert_eq!(retry_delay(30, 2, 0.0).num_seconds(), 60);
        assert_eq!(retry_delay(30, 5, 0.0).num_seconds(), 480);
        assert_eq!(retry_delay(30, 40, 0.0).num_seconds(), 6 * 3600);
        assert_eq!(retry_delay(30, 1, 1.0).num_seconds(), 36);
        assert_eq!(retry_delay(30, 1, -1.0).num_seconds(), 24);
        assert_eq!(retry_delay(2, 1, 0.0).num_seconds(), 2);
        assert_eq!(retry_delay(2, 3, 0.0).num_seconds(), 8);
        assert_eq!(retry_delay(3600, 9, 0.0).num_seconds(), 6 * 3600);
        assert!(subscribed("job.expired job.reviewed", "job.reviewed"));
        assert!(!subscribed("job.expired", "job.expiring"));
    }

    #[test]
    fn a_description_is_one_line() {
        assert_eq!(description("  ATS sync ").unwrap(), "ATS sync");
        assert!(description("two\nlines").is_err());
        assert!(description(&"x".repeat(MAX_DESCRIPTION + 1)).is_err());
    }
}
