//! What a status-change email needs, and how a send can fail: the contract between the worker
//! and a mailer, independent of where the data is stored or how the mail is sent.

/// What the email for an event needs, read at send time from current data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailData {
    pub candidate_id: i64,
    pub email: String,
    pub name: String,
    pub job_title: String,
    pub company: String,
}

/// A send's failure, as the mail server reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// This message failed for now (a 4xx to RCPT TO or DATA, 421 and 454 included; a
    /// connection lost, or the deadline passed, before its content was written): try again
    /// later, counting the attempt.
    Transient(String),
    /// The server refuses this message for good (5xx at the sender, a recipient or the data).
    Permanent(String),
    /// The mail service refuses the session, whatever the message: it cannot be reached, the
    /// session does not open within half the send's deadline, TLS fails, the greeting or the
    /// login is refused, it refuses or throttles the sender (421 or 454 to MAIL FROM). An outage of the
    /// mail service, not a failure of this message: no attempt is counted.
    Unavailable(String),
    /// The outcome is unknown: the send's deadline passed, or the connection dropped once the
    /// message was handed over, so the server may have accepted it. Counted as an attempt, but
    /// the claim is kept until its lease lapses, so a retry is a counted reclaim.
    Unknown(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Transient(m) => write!(f, "temporary failure: {m}"),
            SendError::Permanent(m) => write!(f, "permanent failure: {m}"),
            SendError::Unavailable(m) => write!(f, "mail service unavailable: {m}"),
            SendError::Unknown(m) => write!(f, "outcome unknown: {m}"),
        }
    }
}
