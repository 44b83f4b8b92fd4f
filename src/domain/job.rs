//! A job's lifecycle: its statuses, the moves a member's PATCH may make, an operator's review,
//! renewal, and the rules of `expires_at`. No I/O: the store and the HTTP layer apply them.

use chrono::{DateTime, Duration, Utc};
use std::fmt;

/// Where a job stands.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum JobStatus {
    /// Takes applications and is in searches until its `expires_at`.
    Open,
    /// Closed by a member; a member may reopen it.
    Closed,
    /// Its `expires_at` passed; a member may renew it.
    Expired,
    /// Under `JOB_MODERATION`: waiting for an operator's approval, seen only by its company's
    /// members and operators.
    PendingReview,
    /// Refused by an operator (with a reason); a member's PATCH sends it back to review.
    Rejected,
}

impl JobStatus {
    pub const ALL: [JobStatus; 5] = [
        JobStatus::Open,
        JobStatus::Closed,
        JobStatus::Expired,
        JobStatus::PendingReview,
        JobStatus::Rejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            JobStatus::Open => "open",
            JobStatus::Closed => "closed",
            JobStatus::Expired => "expired",
            JobStatus::PendingReview => "pending_review",
            JobStatus::Rejected => "rejected",
        }
    }

    pub fn parse(s: &str) -> Option<JobStatus> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Whether anyone may see a job in this status: a job waiting for review, or rejected, is
    /// its company's members' and the operators' alone.
    pub fn is_public(self) -> bool {
        !matches!(self, JobStatus::PendingReview | JobStatus::Rejected)
    }

    /// The status a member's PATCH that asks for `to` leaves the job in: `open ↔ closed`, the
    /// same status again, and any PATCH of a rejected job sends it back to review. Anything
    /// else is refused.
    pub fn patched(self, to: JobStatus) -> Result<JobStatus, JobTransitionError> {
        use JobStatus::*;
        match (self, to) {
            (Open | Closed, Open | Closed) => Ok(to),
            (Rejected, Rejected | PendingReview) => Ok(PendingReview),
            (from, to) if from == to => Ok(to),
            (from, to) => Err(JobTransitionError {
                from,
                to,
                by: Mover::Patch,
            }),
        }
    }

    /// The status an operator's decision leaves the job in: only a job waiting for review can
    /// be approved (`open`) or rejected.
    pub fn reviewed(self, approve: bool) -> Result<JobStatus, JobTransitionError> {
        let to = if approve {
            JobStatus::Open
        } else {
            JobStatus::Rejected
        };
        if self == JobStatus::PendingReview {
            Ok(to)
        } else {
            Err(JobTransitionError {
                from: self,
                to,
                by: Mover::Review,
            })
        }
    }

    /// Whether `POST /api/jobs/{id}/renew` may open the job again.
    pub fn is_renewable(self) -> bool {
        matches!(self, JobStatus::Open | JobStatus::Expired)
    }

    /// Whether a member may set `expires_at` in this status: while the job is open, or before it
    /// opens (waiting for review, or rejected and about to go back to it).
    pub fn takes_expiry(self) -> bool {
        matches!(
            self,
            JobStatus::Open | JobStatus::PendingReview | JobStatus::Rejected
        )
    }
}

impl fmt::Display for JobStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who asked for a move a job's status does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mover {
    /// A member's `PATCH /api/jobs/{id}`.
    Patch,
    /// An operator's approve or reject.
    Review,
}

/// A move of a job's status that is not allowed; its message says which are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobTransitionError {
    pub from: JobStatus,
    pub to: JobStatus,
    pub by: Mover,
}

impl fmt::Display for JobTransitionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.by {
            Mover::Review => write!(
                f,
                "only a job waiting for review can be approved or rejected; this one is {}",
                self.from
            ),
            Mover::Patch => {
                write!(
                    f,
                    "a PATCH cannot move a job from {} to {}: it moves a job only between open \
                     and closed",
                    self.from, self.to
                )?;
                match self.from {
                    JobStatus::Expired => {
                        f.write_str("; renew an expired job (POST /api/jobs/{id}/renew)")
                    }
                    JobStatus::PendingReview => {
                        f.write_str("; an operator approves or rejects a job waiting for review")
                    }
                    _ => Ok(()),
                }
            }
        }
    }
}

/// How far ahead a member may set `expires_at`.
pub const MAX_EXPIRY_DAYS: i64 = 365;

/// Checks a member's `expires_at`: a time in the next [`MAX_EXPIRY_DAYS`] days after `now`.
pub fn check_expires_at(t: DateTime<Utc>, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    if t <= now {
        return Err("must be a time in the future".to_string());
    }
    if t > now + Duration::days(MAX_EXPIRY_DAYS) {
        return Err(format!("must be at most {MAX_EXPIRY_DAYS} days from now"));
    }
    Ok(t)
}

/// Parses an RFC 3339 time (any offset) as UTC, truncated to the microsecond both databases
/// store.
///
/// A leap second (`…:60`) is refused: chrono would keep it as a time the databases store
/// differently (SQLite as `:60`, PostgreSQL as the next day) and clients could not read back.
pub fn parse_time(raw: &str) -> Result<DateTime<Utc>, String> {
    use chrono::{SubsecRound, Timelike};
    let t = DateTime::parse_from_rfc3339(raw.trim())
        .map(|t| t.with_timezone(&Utc).trunc_subsecs(6))
        .map_err(|_| "must be an RFC 3339 time such as 2026-12-31T23:59:59Z".to_string())?;
    if t.nanosecond() >= 1_000_000_000 {
        return Err("must not be a leap second (seconds 60): use :59".to_string());
    }
    Ok(t)
}

/// The status a job reads as at `now`: an open job whose `expires_at` has passed is expired,
/// whether or not the upkeep has written it yet, so that every process agrees at once.
pub fn status_at(
    stored: JobStatus,
    expires_at: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> JobStatus {
    match (stored, expires_at) {
        (JobStatus::Open, Some(t)) if t <= now => JobStatus::Expired,
        (s, _) => s,
    }
}

/// The longest rejection reason, in code points after trimming.
pub const REJECTION_REASON_MAX: usize = 1000;

#[cfg(test)]
mod tests {
    use super::JobStatus::*;
    use super::*;

    #[test]
    fn a_patch_moves_only_between_open_and_closed() {
        for from in JobStatus::ALL {
            for to in JobStatus::ALL {
                let got = from.patched(to);
                let want = match (from, to) {
                    (Open | Closed, Open | Closed) => Some(to),
                    (Rejected, Rejected | PendingReview) => Some(PendingReview),
                    _ if from == to => Some(to),
                    _ => None,
                };
                assert_eq!(got.ok(), want, "{from} -> {to}");
            }
        }
        let err = Expired.patched(Open).unwrap_err().to_string();
        assert!(err.contains("renew"), "{err}");
    }

    #[test]
    fn only_a_job_waiting_for_review_is_reviewed() {
        assert_eq!(PendingReview.reviewed(true), Ok(Open));
        assert_eq!(PendingReview.reviewed(false), Ok(Rejected));
        for from in [Open, Closed, Expired, Rejected] {
            assert!(from.reviewed(true).is_err() && from.reviewed(false).is_err());
        }
    }

    #[test]
    fn expiry_is_read_at_the_time_asked() {
        let now = Utc::now();
        let past = Some(now - Duration::seconds(1));
        assert_eq!(status_at(Open, past, now), Expired);
        assert_eq!(status_at(Open, Some(now), now), Expired);
        assert_eq!(status_at(Open, Some(now + Duration::seconds(1)), now), Open);
        assert_eq!(status_at(Open, None, now), Open);
        assert_eq!(status_at(Closed, past, now), Closed);
        assert_eq!(status_at(PendingReview, past, now), PendingReview);
    }

    #[test]
    fn a_leap_second_is_refused() {
        assert!(parse_time("2026-12-31T23:59:60Z").is_err());
        assert!(parse_time("2026-06-30T23:59:60.5+00:00").is_err());
        assert!(parse_time("2026-12-31T23:59:59.999999Z").is_ok());
    }

    #[test]
    fn expires_at_is_within_a_year() {
        let now = Utc::now();
        assert!(check_expires_at(now, now).is_err());
        assert!(check_expires_at(now + Duration::seconds(1), now).is_ok());
        assert!(check_expires_at(now + Duration::days(365), now).is_ok());
        assert!(check_expires_at(now + Duration::days(365) + Duration::seconds(1), now).is_err());
        assert!(parse_time("tomorrow").is_err());
        let t = parse_time("2026-12-31T23:59:59.1234567+01:00").unwrap();
        assert_eq!(crate::timefmt::format(&t), "2026-12-31T22:59:59.123456Z");
    }

    #[test]
    fn statuses_round_trip() {
        for s in JobStatus::ALL {
            assert_eq!(JobStatus::parse(s.as_str()), Some(s));
        }
        assert!(!PendingReview.is_public() && !Rejected.is_public());
        assert!(Open.is_public() && Closed.is_public() && Expired.is_public());
    }
}
