//! What an event's email needs, and how a send can fail: the contract between the worker, the
//! store that loads the data and a mailer, independent of where the data is stored or how the
//! mail is sent.

/// The person an email goes to, as they are now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    pub user_id: i64,
    pub email: String,
    pub name: String,
}

/// What the email for an event needs, read at send time from current data (what the event
/// fixed, such as statuses or a digest's list, is the event's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailData {
    pub to: Recipient,
    pub about: About,
}

/// The current data an email's text is made from, by what the event reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum About {
    /// `application.status_changed`, `application.submitted`: the application's job and its
    /// company.
    Application {
        job_title: String,
        company: String,
        /// The file name of the résumé attached to the application, if any (the
        /// confirmation names it).
        resume: Option<String>,
    },
    /// `job.expiring`, `job.expired`, `job.reviewed`: the job and its company.
    Job {
        job_title: String,
        company: String,
        /// An operator's reason for a rejection, shown by `job.reviewed`. `None` until the jobs
        /// table stores it (migration 0015 adds `jobs.rejection_reason`; the job-event query
        /// selects NULL in its place until then).
        rejection_reason: Option<String>,
    },
    /// `applications.digest`: the digest's applications still there, counted by job.
    ApplicationsDigest { jobs: Vec<DigestJob> },
    /// `alert.digest`: the alert's search in words (`domain::alert::describe`), how often it
    /// comes, and the listed jobs still there, in the event's order (newest first).
    AlertDigest {
        search: String,
        frequency: super::alert::Frequency,
        jobs: Vec<AlertJob>,
    },
    /// `webhook.disabled`: the endpoint's host and its company.
    Webhook {
        host: String,
        company_id: i64,
        company: String,
    },
}

/// One job's lines in an alert digest, as the job is now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertJob {
    pub job_id: i64,
    pub title: String,
    pub company: String,
    pub location: String,
}

/// One job's line in an applications digest: never a candidate's name or address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DigestJob {
    pub job_id: i64,
    pub job_title: String,
    pub company: String,
    pub applications: i64,
}

/// What the store found for an event's email at send time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Loaded {
    /// Everything the email needs.
    Ready(EmailData),
    /// Nothing to send (`missing`, docs/guarantee.md).
    Missing(Absent),
    /// This version cannot email the event at all (what it needs is not stored here): it is
    /// dead-lettered at once with this reason.
    Unsendable(String),
}

/// Why an event has nothing to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Absent {
    /// What the event reports (or its record) no longer exists.
    Gone,
    /// The person turned this email off.
    TurnedOff,
}

/// How a permanent failure's text starts when the email could not be built, so that no mail
/// service saw it (an address stored before the rule of docs/api.md, an event this version
/// cannot email).
pub const NOT_SENT: &str = "not sent: ";

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
