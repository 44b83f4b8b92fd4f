//! The events of docs/guarantee.md, each one email to one person, written to the outbox in the
//! same transaction as what they report (a request's write, or the upkeep's).

use super::ApplicationStatus;
use chrono::{DateTime, Utc};

pub const STATUS_CHANGED: &str = "application.status_changed";
pub const SUBMITTED: &str = "application.submitted";
pub const JOB_EXPIRING: &str = "job.expiring";
pub const JOB_EXPIRED: &str = "job.expired";
pub const JOB_REVIEWED: &str = "job.reviewed";
pub const APPLICATIONS_DIGEST: &str = "applications.digest";
pub const ALERT_DIGEST: &str = "alert.digest";
pub const WEBHOOK_DISABLED: &str = "webhook.disabled";

/// The most applications an `applications.digest` lists; it counts the rest (`further`).
pub const DIGEST_APPLICATIONS: usize = 20;

/// Every type of §5, in the contract's order.
pub const TYPES: [&str; 8] = [
    STATUS_CHANGED,
    SUBMITTED,
    JOB_EXPIRING,
    JOB_EXPIRED,
    JOB_REVIEWED,
    APPLICATIONS_DIGEST,
    ALERT_DIGEST,
    WEBHOOK_DISABLED,
];

/// An operator's decision on a job waiting for review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approved,
    Rejected,
}

/// What an event reports: its `type` and the fields of that type (§5).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "type")]
pub enum EventKind {
    /// To the candidate, with the move.
    #[serde(rename = "application.status_changed")]
    StatusChanged {
        application_id: i64,
        old_status: ApplicationStatus,
        new_status: ApplicationStatus,
    },
    /// To the candidate, with the application.
    #[serde(rename = "application.submitted")]
    Submitted { application_id: i64 },
    /// To one member of the job's company, `JOB_EXPIRY_NOTICE_DAYS` before `expires_at`.
    #[serde(rename = "job.expiring")]
    JobExpiring {
        job_id: i64,
        user_id: i64,
        #[serde(with = "crate::timefmt")]
        expires_at: DateTime<Utc>,
    },
    /// To one member of the job's company, when the job expires.
    #[serde(rename = "job.expired")]
    JobExpired {
        job_id: i64,
        user_id: i64,
        #[serde(with = "crate::timefmt")]
        expires_at: DateTime<Utc>,
    },
    /// To one member of the job's company, with an operator's decision.
    #[serde(rename = "job.reviewed")]
    JobReviewed {
        job_id: i64,
        user_id: i64,
        decision: Decision,
    },
    /// To one member: the applications their companies' jobs received in one hour (fixed when
    /// the event is written): the first up to [`DIGEST_APPLICATIONS`], ascending, and how many
    /// more there were (0 when absent), so that the event always fits one queue message.
    #[serde(rename = "applications.digest")]
    ApplicationsDigest {
        user_id: i64,
        #[serde(with = "crate::timefmt")]
        hour: DateTime<Utc>,
        applications: Vec<i64>,
        #[serde(default)]
        further: u64,
    },
    /// To an alert's owner: the alert's new matches of one period (fixed when written): the
    /// newest up to `DIGEST_JOBS`, newest first, and how many more matched (0 when absent).
    #[serde(rename = "alert.digest")]
    AlertDigest {
        alert_id: i64,
        period: String,
        jobs: Vec<i64>,
        #[serde(default)]
        more: u64,
    },
    /// To one member of an endpoint's company, when its deliveries disabled it (written with
    /// the attempt that did).
    #[serde(rename = "webhook.disabled")]
    WebhookDisabled {
        endpoint_id: i64,
        user_id: i64,
        reason: String,
    },
}

impl EventKind {
    /// The event's `type`, as it travels on the queue.
    pub fn type_name(&self) -> &'static str {
        match self {
            EventKind::StatusChanged { .. } => STATUS_CHANGED,
            EventKind::Submitted { .. } => SUBMITTED,
            EventKind::JobExpiring { .. } => JOB_EXPIRING,
            EventKind::JobExpired { .. } => JOB_EXPIRED,
            EventKind::JobReviewed { .. } => JOB_REVIEWED,
            EventKind::ApplicationsDigest { .. } => APPLICATIONS_DIGEST,
            EventKind::AlertDigest { .. } => ALERT_DIGEST,
            EventKind::WebhookDisabled { .. } => WEBHOOK_DISABLED,
        }
    }

    /// The application the event reports, for the types that report one.
    pub fn application_id(&self) -> Option<i64> {
        match self {
            EventKind::StatusChanged { application_id, .. }
            | EventKind::Submitted { application_id } => Some(*application_id),
            _ => None,
        }
    }

    /// The id the upkeep gives this event, made from what it is about, so that writing it
    /// twice (two runs, or two workers at once) is refused by the outbox the second time.
    /// `None` for the types written with a request's change, which get a UUID.
    pub fn derived_id(&self) -> Option<String> {
        match self {
            EventKind::JobExpiring {
                job_id,
                user_id,
                expires_at,
            } => Some(format!(
                "job-expiring-{job_id}-{}-{user_id}",
                expires_at.timestamp()
            )),
            EventKind::JobExpired {
                job_id,
                user_id,
                expires_at,
            } => Some(format!(
                "job-expired-{job_id}-{}-{user_id}",
                expires_at.timestamp()
            )),
            EventKind::ApplicationsDigest { user_id, hour, .. } => Some(format!(
                "applications-digest-{user_id}-{}",
                hour.timestamp()
            )),
            EventKind::AlertDigest {
                alert_id, period, ..
            } => Some(format!("alert-{alert_id}-{period}")),
            EventKind::StatusChanged { .. }
            | EventKind::Submitted { .. }
            | EventKind::JobReviewed { .. }
            | EventKind::WebhookDisabled { .. } => None,
        }
    }
}

/// An event as it travels on the queue: `type`, `event_id`, `occurred_at` and the type's fields.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Event {
    pub event_id: String,
    #[serde(with = "crate::timefmt")]
    pub occurred_at: DateTime<Utc>,
    #[serde(flatten)]
    pub kind: EventKind,
}

impl Event {
    /// A new event: its derived id for the upkeep's types, else a fresh UUID.
    pub fn new(kind: EventKind, occurred_at: DateTime<Utc>) -> Self {
        let event_id = kind
            .derived_id()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        debug_assert!(valid_event_id(&event_id), "{event_id}");
        Event {
            event_id,
            occurred_at,
            kind,
        }
    }

    pub fn type_name(&self) -> &'static str {
        self.kind.type_name()
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

/// Parses a queue message body of any type of §5, naming exactly what is wrong with a bad one.
pub fn parse_event(body: &str) -> Result<Event, InvalidMessage> {
    let value: serde_json::Value = serde_json::from_str(body).map_err(|e| InvalidMessage {
        event_id: None,
        reason: format!("not JSON: {e}"),
    })?;
    let event_id = event_id_of(&value)?;
    let bad = |reason: String| InvalidMessage {
        event_id: Some(event_id.clone()),
        reason,
    };
    match value.get("type") {
        Some(serde_json::Value::String(t)) if TYPES.contains(&t.as_str()) => {}
        Some(serde_json::Value::String(t)) => return Err(bad(format!("unknown type {t:?}"))),
        Some(_) => return Err(bad("type must be a string".into())),
        None => return Err(bad("field type is missing".into())),
    }
    let event = serde_json::from_value::<Event>(value.clone()).map_err(|e| {
        // serde names a missing field but not a mistyped one: find it, so the reason names it.
        match bad_field(&value) {
            Some((field, why)) => bad(format!("invalid field {field}: {why}")),
            None => bad(format!("invalid field: {e}")),
        }
    })?;
    if let EventKind::AlertDigest { period, .. } = &event.kind
        && !valid_period(period)
    {
        return Err(bad(format!(
            "invalid field period: {period:?} is neither YYYY-MM-DD nor YYYY-Www"
        )));
    }
    Ok(event)
}

/// The first field of the message's type (§5) that is missing or does not read as its type,
/// and why: a message whose type is known and whose event id is valid.
fn bad_field(value: &serde_json::Value) -> Option<(&'static str, String)> {
    use serde::de::DeserializeOwned;
    type Check = fn(&serde_json::Value) -> Result<(), String>;
    fn reads<T: DeserializeOwned>(v: &serde_json::Value) -> Result<(), String> {
        T::deserialize(v).map(|_| ()).map_err(|e| e.to_string())
    }
    fn time(v: &serde_json::Value) -> Result<(), String> {
        crate::timefmt::deserialize(v)
            .map(|_| ())
            .map_err(|e: serde_json::Error| format!("{e} (RFC 3339 expected)"))
    }
    let id: Check = reads::<i64>;
    let ids: Check = reads::<Vec<i64>>;
    let status: Check = reads::<ApplicationStatus>;
    let fields: &[(&'static str, Check)] = match value.get("type")?.as_str()? {
        STATUS_CHANGED => &[
            ("application_id", id),
            ("old_status", status),
            ("new_status", status),
        ],
        SUBMITTED => &[("application_id", id)],
        JOB_EXPIRING | JOB_EXPIRED => &[("job_id", id), ("user_id", id), ("expires_at", time)],
        JOB_REVIEWED => &[
            ("job_id", id),
            ("user_id", id),
            ("decision", reads::<Decision>),
        ],
        APPLICATIONS_DIGEST => &[("user_id", id), ("hour", time), ("applications", ids)],
        ALERT_DIGEST => &[("alert_id", id), ("period", reads::<String>), ("jobs", ids)],
        WEBHOOK_DISABLED => &[
            ("endpoint_id", id),
            ("user_id", id),
            ("reason", reads::<String>),
        ],
        _ => return None,
    };
    // Fields that may be absent, checked only when present.
    let optional: &[(&'static str, Check)] = match value.get("type")?.as_str()? {
        ALERT_DIGEST => &[("more", reads::<u64>)],
        APPLICATIONS_DIGEST => &[("further", reads::<u64>)],
        _ => &[],
    };
    [("occurred_at", time as Check)]
        .iter()
        .chain(fields)
        .find_map(|(field, check)| match value.get(*field) {
            None => Some((*field, "missing".to_string())),
            Some(v) => check(v).err().map(|why| (*field, why)),
        })
        .or_else(|| {
            optional.iter().find_map(|(field, check)| {
                let v = value.get(*field)?;
                check(v).err().map(|why| (*field, why))
            })
        })
}

/// The message's event id, checked: the first thing a bad message is judged by.
fn event_id_of(value: &serde_json::Value) -> Result<String, InvalidMessage> {
    let Some(obj) = value.as_object() else {
        return Err(InvalidMessage {
            event_id: None,
            reason: "not a JSON object".into(),
        });
    };
    let reason = match obj.get("event_id") {
        Some(serde_json::Value::String(s)) if valid_event_id(s) => return Ok(s.clone()),
        Some(serde_json::Value::String(_)) => "event_id must match ^[A-Za-z0-9._-]{1,64}$",
        Some(_) => "event_id must be a string",
        None => "field event_id is missing",
    };
    Err(InvalidMessage {
        event_id: None,
        reason: reason.into(),
    })
}

/// An alert digest's period: a UTC day `2026-12-04` or an ISO week `2026-W49`.
pub fn valid_period(p: &str) -> bool {
    if let Some((year, week)) = p.split_once("-W") {
        return year.len() == 4
            && week.len() == 2
            && year.bytes().chain(week.bytes()).all(|b| b.is_ascii_digit())
            && week
                .parse::<u32>()
                .ok()
                .and_then(|w| year.parse::<i32>().ok().map(|y| (y, w)))
                .is_some_and(|(y, w)| {
                    chrono::NaiveDate::from_isoywd_opt(y, w, chrono::Weekday::Mon).is_some()
                });
    }
    p.len() == 10 && chrono::NaiveDate::parse_from_str(p, "%Y-%m-%d").is_ok()
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
        let e = parse_event(&good().to_string()).unwrap();
        assert_eq!(e.event_id, "test-1");
        assert_eq!(
            e.kind,
            EventKind::StatusChanged {
                application_id: 3,
                old_status: ApplicationStatus::Reviewing,
                new_status: ApplicationStatus::Interview,
            }
        );
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
                "invalid field application_id",
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
                "invalid field old_status",
            ),
        ];
        for (body, id, reason) in cases {
            let e = parse_event(&body).unwrap_err();
            assert_eq!(e.event_id.as_deref(), id, "{body}");
            assert!(e.reason.contains(reason), "{body}: {}", e.reason);
        }
    }

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    /// One event of every type of §5.
    fn one_of_each() -> Vec<EventKind> {
        vec![
            EventKind::StatusChanged {
                application_id: 3,
                old_status: ApplicationStatus::Reviewing,
                new_status: ApplicationStatus::Interview,
            },
            EventKind::Submitted { application_id: 4 },
            EventKind::JobExpiring {
                job_id: 5,
                user_id: 6,
                expires_at: t("2026-12-09T10:00:00Z"),
            },
            EventKind::JobExpired {
                job_id: 5,
                user_id: 6,
                expires_at: t("2026-12-09T10:00:00Z"),
            },
            EventKind::JobReviewed {
                job_id: 5,
                user_id: 6,
                decision: Decision::Rejected,
            },
            EventKind::ApplicationsDigest {
                user_id: 6,
                hour: t("2026-12-04T10:00:00Z"),
                applications: vec![7, 8],
                further: 4,
            },
            EventKind::AlertDigest {
                alert_id: 9,
                period: "2026-W49".into(),
                jobs: vec![10, 11],
                more: 3,
            },
            EventKind::WebhookDisabled {
                endpoint_id: 12,
                user_id: 6,
                reason: "the receiver answered 410 Gone".into(),
            },
        ]
    }

    #[test]
    fn every_type_travels_and_parses_back() {
        let kinds = one_of_each();
        assert_eq!(
            kinds.iter().map(|k| k.type_name()).collect::<Vec<_>>(),
            TYPES.to_vec()
        );
        for kind in kinds {
            let e = Event::new(kind, t("2026-12-04T11:00:00Z"));
            let json: serde_json::Value = serde_json::from_str(&e.to_json()).unwrap();
            assert_eq!(json["type"], e.type_name(), "{json}");
            assert_eq!(json["occurred_at"], "2026-12-04T11:00:00.000000Z");
            assert_eq!(parse_event(&e.to_json()).unwrap(), e);
        }
    }

    #[test]
    fn the_contract_example_parses_as_an_event() {
        let e = parse_event(&good().to_string()).unwrap();
        assert_eq!(e.event_id, "test-1");
        assert_eq!(e.kind.application_id(), Some(3));
    }

    #[test]
    fn upkeep_ids_are_made_from_what_they_are_about() {
        let kinds = one_of_each();
        let ids: Vec<Option<String>> = kinds.iter().map(|k| k.derived_id()).collect();
        assert_eq!(
            ids,
            vec![
                None,
                None,
                Some("job-expiring-5-1796810400-6".to_string()),
                Some("job-expired-5-1796810400-6".to_string()),
                None,
                Some("applications-digest-6-1796378400".to_string()),
                Some("alert-9-2026-W49".to_string()),
                None,
            ]
        );
        for kind in kinds {
            let a = Event::new(kind.clone(), t("2026-12-04T11:00:00Z"));
            let b = Event::new(kind, t("2026-12-04T12:00:00Z"));
            assert!(valid_event_id(&a.event_id), "{}", a.event_id);
            // Two writings of an upkeep event are the same event; a request's are two.
            assert_eq!(a.event_id == b.event_id, a.kind.derived_id().is_some());
        }
        // The longest derived id still fits the 64 characters of an event id.
        let long = EventKind::JobExpiring {
            job_id: (1 << 53) - 1,
            user_id: (1 << 53) - 1,
            expires_at: t("9999-12-31T23:59:59Z"),
        };
        assert!(valid_event_id(&long.derived_id().unwrap()));
    }

    #[test]
    fn each_type_names_its_bad_field() {
        let cases: Vec<(serde_json::Value, &str)> = vec![
            (
                serde_json::json!({"type": "application.submitted", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z"}),
                "application_id",
            ),
            (
                serde_json::json!({"type": "job.expiring", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "job_id": 1, "user_id": 2, "expires_at": "tomorrow"}),
                "invalid field expires_at",
            ),
            (
                serde_json::json!({"type": "job.reviewed", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "job_id": 1, "user_id": 2, "decision": "maybe"}),
                "invalid field decision",
            ),
            (
                serde_json::json!({"type": "applications.digest", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "user_id": 2, "hour": "2026-12-02T10:00:00Z", "applications": "1,2"}),
                "invalid field applications",
            ),
            (
                serde_json::json!({"type": "alert.digest", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "alert_id": 2, "period": "2026-W54", "jobs": [1]}),
                "period",
            ),
            (
                serde_json::json!({"type": "alert.digest", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "alert_id": 2, "period": "2026-02-30", "jobs": [1]}),
                "period",
            ),
            (
                serde_json::json!({"type": "job.expired", "event_id": "e", "job_id": 1, "user_id": 2,
                    "expires_at": "2026-12-02T10:00:00Z"}),
                "occurred_at",
            ),
            (
                serde_json::json!({"type": "application.submitted", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "application_id": "4"}),
                "invalid field application_id",
            ),
            (
                serde_json::json!({"type": "job.expired", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "job_id": 1, "user_id": -0.5, "expires_at": "2026-12-02T10:00:00Z"}),
                "invalid field user_id",
            ),
            (
                serde_json::json!({"type": "applications.digest", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "user_id": 2, "hour": 3, "applications": [1]}),
                "invalid field hour",
            ),
            (
                serde_json::json!({"type": "alert.digest", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "alert_id": 2, "period": "2026-W49", "jobs": ["one"]}),
                "invalid field jobs",
            ),
            (
                serde_json::json!({"type": "alert.digest", "event_id": "e", "occurred_at": "2026-12-02T10:00:00Z",
                    "alert_id": 2, "period": "2026-W49", "jobs": [1], "more": -1}),
                "invalid field more",
            ),
            (
                serde_json::json!({"type": 7, "event_id": "e"}),
                "type must be a string",
            ),
            (
                serde_json::json!({"type": "job.opened", "event_id": "e"}),
                "unknown type",
            ),
        ];
        for (body, reason) in cases {
            let e = parse_event(&body.to_string()).unwrap_err();
            assert_eq!(e.event_id.as_deref(), Some("e"), "{body}");
            assert!(e.reason.contains(reason), "{body}: {}", e.reason);
        }
        let e = parse_event(r#"{"type": "job.expired", "event_id": "a b"}"#).unwrap_err();
        assert_eq!(e.event_id, None);
    }

    #[test]
    fn an_alert_digest_without_more_has_none() {
        let e = parse_event(
            &serde_json::json!({"type": "alert.digest", "event_id": "alert-2-2026-W49",
                "occurred_at": "2026-12-07T00:02:00Z", "alert_id": 2, "period": "2026-W49",
                "jobs": [5, 4]})
            .to_string(),
        )
        .unwrap();
        assert_eq!(
            e.kind,
            EventKind::AlertDigest {
                alert_id: 2,
                period: "2026-W49".into(),
                jobs: vec![5, 4],
                more: 0,
            }
        );
    }

    #[test]
    fn periods() {
        for good in ["2026-12-04", "2026-W49", "2026-W01", "2020-W53"] {
            assert!(valid_period(good), "{good}");
        }
        for bad in [
            "2026-12-4",
            "2026-W9",
            "2026-W00",
            "2026-W54",
            "2021-W53",
            "2026-13-01",
            "26-W10",
            "x",
        ] {
            assert!(!valid_period(bad), "{bad}");
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
