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
