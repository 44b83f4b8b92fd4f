//! The event a status change emits (CONTRACT.md §5), written to the outbox in the same
//! transaction as the change.

use super::ApplicationStatus;
use chrono::{DateTime, Utc};

pub const STATUS_CHANGED: &str = "application.status_changed";

/// `application.status_changed`, as it travels on the queue.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StatusChanged {
    #[serde(rename = "type")]
    pub kind: String,
    pub event_id: String,
    pub application_id: i64,
    pub old_status: ApplicationStatus,
    pub new_status: ApplicationStatus,
    #[serde(with = "crate::timefmt")]
    pub occurred_at: DateTime<Utc>,
}

impl StatusChanged {
    /// A new event with a fresh UUID as its id.
    pub fn new(
        application_id: i64,
        old_status: ApplicationStatus,
        new_status: ApplicationStatus,
        occurred_at: DateTime<Utc>,
    ) -> Self {
        StatusChanged {
            kind: STATUS_CHANGED.to_string(),
            event_id: uuid::Uuid::new_v4().to_string(),
            application_id,
            old_status,
            new_status,
            occurred_at,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("an event always serialises")
    }
}

/// Why a queue message cannot be handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidMessage {
    /// The message's event id, if it has a usable one (a redrive can then re-queue it).
    pub event_id: Option<String>,
    pub reason: String,
}

/// Whether `id` can be an event id: `^[A-Za-z0-9._-]{1,64}$` (it goes into mail headers).
pub fn valid_event_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Parses a queue message body, naming exactly what is wrong with a bad one.
pub fn parse_message(body: &str) -> Result<StatusChanged, InvalidMessage> {
    let value: serde_json::Value = serde_json::from_str(body).map_err(|e| InvalidMessage {
        event_id: None,
        reason: format!("not JSON: {e}"),
    })?;
    let Some(obj) = value.as_object() else {
        return Err(InvalidMessage {
            event_id: None,
            reason: "not a JSON object".into(),
        });
    };
    let event_id = match obj.get("event_id") {
        Some(serde_json::Value::String(s)) if valid_event_id(s) => s.clone(),
        Some(serde_json::Value::String(_)) => {
            return Err(InvalidMessage {
                event_id: None,
                reason: "event_id must match ^[A-Za-z0-9._-]{1,64}$".into(),
            });
        }
        Some(_) => {
            return Err(InvalidMessage {
                event_id: None,
                reason: "event_id must be a string".into(),
            });
        }
        None => {
            return Err(InvalidMessage {
                event_id: None,
                reason: "field event_id is missing".into(),
            });
        }
    };
    let bad = |reason: String| InvalidMessage {
        event_id: Some(event_id.clone()),
        reason,
    };
    match obj.get("type") {
        Some(serde_json::Value::String(t)) if t == STATUS_CHANGED => {}
        Some(serde_json::Value::String(t)) => return Err(bad(format!("unknown type {t:?}"))),
        Some(_) => return Err(bad("type must be a string".into())),
        None => return Err(bad("field type is missing".into())),
    }
    serde_json::from_value::<StatusChanged>(value.clone())
        .map_err(|e| bad(format!("invalid field: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> serde_json::Value {
        serde_json::json!({"type": "application.status_changed", "event_id": "test-1", "application_id": 3,
            "old_status": "reviewing", "new_status": "interview", "occurred_at": "2026-12-02T10:00:00Z"})
    }

    #[test]
    fn parses_the_contract_example() {
        let e = parse_message(&good().to_string()).unwrap();
        assert_eq!(e.event_id, "test-1");
        assert_eq!(e.application_id, 3);
        assert_eq!(e.new_status, ApplicationStatus::Interview);
    }

    #[test]
    fn names_what_is_wrong() {
        let cases: Vec<(String, Option<&str>, &str)> = vec![
            ("not json".into(), None, "not JSON"),
            ("[1]".into(), None, "not a JSON object"),
            (
                serde_json::json!({"type": "application.status_changed"}).to_string(),
                None,
                "event_id is missing",
            ),
            (
                {
                    let mut v = good();
                    v["event_id"] = "has space".into();
                    v.to_string()
                },
                None,
                "event_id must match",
            ),
            (
                {
                    let mut v = good();
                    v["event_id"] = "x".repeat(65).into();
                    v.to_string()
                },
                None,
                "event_id must match",
            ),
            (
                {
                    let mut v = good();
                    v["event_id"] = 5.into();
                    v.to_string()
                },
                None,
                "must be a string",
            ),
            (
                {
                    let mut v = good();
                    v["type"] = "other".into();
                    v.to_string()
                },
                Some("test-1"),
                "unknown type",
            ),
            (
                {
                    let mut v = good();
                    v["application_id"] = "3".into();
                    v.to_string()
                },
                Some("test-1"),
                "invalid field",
            ),
            (
                {
                    let mut v = good();
                    v.as_object_mut().unwrap().remove("new_status");
                    v.to_string()
                },
                Some("test-1"),
                "new_status",
            ),
            (
                {
                    let mut v = good();
                    v["old_status"] = "sleeping".into();
                    v.to_string()
                },
                Some("test-1"),
                "invalid field",
            ),
        ];
        for (body, id, reason) in cases {
            let e = parse_message(&body).unwrap_err();
            assert_eq!(e.event_id.as_deref(), id, "{body}");
            assert!(e.reason.contains(reason), "{body}: {}", e.reason);
        }
    }

    #[test]
    fn event_ids() {
        assert!(valid_event_id("23e48c51-0b1a-4c1e-9f00-000000000000"));
        assert!(valid_event_id("test-missing"));
        assert!(valid_event_id("a.b_c"));
        assert!(!valid_event_id(""));
        assert!(!valid_event_id("a b"));
        assert!(!valid_event_id("a\r\nBcc: x"));
    }
}
