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
    /// 4xx, a connection error or a timeout: try again later.
    Transient(String),
    /// 5xx: the server will never take it.
    Permanent(String),
}

impl std::fmt::Display for SendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SendError::Transient(m) => write!(f, "temporary failure: {m}"),
            SendError::Permanent(m) => write!(f, "permanent failure: {m}"),
        }
    }
}
