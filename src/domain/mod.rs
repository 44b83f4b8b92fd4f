//! The job board's rules, free of HTTP, SQL and queues: validated values, the application
//! status workflow, the search tokenizer, the events a status change emits and what its email
//! needs.

pub mod alert;
pub mod event;
pub mod job;
pub mod mail;
pub mod passwords;
pub mod pay_place;
pub mod questions;
pub mod search;
pub mod status;
pub mod validate;
pub mod values;
pub mod webhook;

pub use job::{JobStatus, JobTransitionError};
pub use status::{Actor, ApplicationStatus, TransitionError};

use std::fmt;

/// What a user is allowed to be. Stored as TEXT with a CHECK constraint.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    Candidate,
    Employer,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Candidate => "candidate",
            Role::Employer => "employer",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "candidate" => Some(Role::Candidate),
            "employer" => Some(Role::Employer),
            _ => None,
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The kind of work a job offers.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EmploymentType {
    FullTime,
    PartTime,
    Contract,
    Internship,
}

impl EmploymentType {
    pub const ALL: [EmploymentType; 4] = [
        EmploymentType::FullTime,
        EmploymentType::PartTime,
        EmploymentType::Contract,
        EmploymentType::Internship,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EmploymentType::FullTime => "full_time",
            EmploymentType::PartTime => "part_time",
            EmploymentType::Contract => "contract",
            EmploymentType::Internship => "internship",
        }
    }

    pub fn parse(s: &str) -> Option<EmploymentType> {
        Self::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// A stored value this release does not know (a newer release wrote it, or a hand did): an
/// error to report, never a default to read it as.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} {value:?} in the database")]
pub struct UnknownValue {
    pub kind: &'static str,
    pub value: String,
}

/// Reads a stored enumerated value strictly.
pub fn stored<T>(
    kind: &'static str,
    value: String,
    parse: fn(&str) -> Option<T>,
) -> Result<T, UnknownValue> {
    parse(&value).ok_or(UnknownValue { kind, value })
}

impl TryFrom<String> for Role {
    type Error = UnknownValue;
    fn try_from(value: String) -> Result<Self, UnknownValue> {
        stored("role", value, Role::parse)
    }
}

impl TryFrom<String> for EmploymentType {
    type Error = UnknownValue;
    fn try_from(value: String) -> Result<Self, UnknownValue> {
        stored("employment type", value, EmploymentType::parse)
    }
}

impl TryFrom<String> for JobStatus {
    type Error = UnknownValue;
    fn try_from(value: String) -> Result<Self, UnknownValue> {
        stored("job status", value, JobStatus::parse)
    }
}

impl TryFrom<String> for ApplicationStatus {
    type Error = UnknownValue;
    fn try_from(value: String) -> Result<Self, UnknownValue> {
        stored("application status", value, ApplicationStatus::parse)
    }
}

/// A state that forbids a request (HTTP 409). Each has a stable problem type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conflict {
    EmailTaken,
    AlreadyApplied,
    JobClosed,
    CompanyHasJobs,
    LastMember,
    InvalidTransition(TransitionError),
    /// A move of a job's status that its status does not allow (`invalid-transition` too).
    JobTransition(JobTransitionError),
    /// The job's `expires_at` has passed: it takes no applications (`job-closed`, as a closed
    /// job: a client that knows closed jobs knows these).
    JobExpired,
    /// Only an open or expired job can be renewed.
    NotRenewable(JobStatus),
    /// `expires_at` is set while a job is open (or before it opens), not on a closed or expired
    /// one.
    JobNotOpen(JobStatus),
    /// A user has [`alert::MAX_ALERTS_PER_USER`] alerts already.
    TooManyAlerts,
    /// A company has [`webhook::MAX_ENDPOINTS_PER_COMPANY`] webhook endpoints already.
    TooManyWebhooks,
    /// A user has [`MAX_RESUMES_PER_USER`] résumés already.
    TooManyResumes,
}

/// The most résumés one account keeps.
pub const MAX_RESUMES_PER_USER: i64 = 10;

impl Conflict {
    /// The last segment of the problem `type` URI.
    pub fn slug(&self) -> &'static str {
        match self {
            Conflict::EmailTaken => "email-taken",
            Conflict::AlreadyApplied => "already-applied",
            Conflict::JobClosed => "job-closed",
            Conflict::CompanyHasJobs => "company-has-jobs",
            Conflict::LastMember => "last-member",
            Conflict::InvalidTransition(_) | Conflict::JobTransition(_) => "invalid-transition",
            Conflict::JobExpired => "job-closed",
            Conflict::NotRenewable(_) => "not-renewable",
            Conflict::JobNotOpen(_) => "job-not-open",
            Conflict::TooManyAlerts => "too-many-alerts",
            Conflict::TooManyWebhooks => "too-many-webhooks",
            Conflict::TooManyResumes => "too-many-resumes",
        }
    }

    pub fn title(&self) -> &'static str {
        match self {
            Conflict::EmailTaken => "Email already registered",
            Conflict::AlreadyApplied => "Already applied",
            Conflict::JobClosed => "Job closed",
            Conflict::CompanyHasJobs => "Company has jobs",
            Conflict::LastMember => "Last member",
            Conflict::InvalidTransition(_) | Conflict::JobTransition(_) => {
                "Invalid status transition"
            }
            Conflict::JobExpired => "Job closed",
            Conflict::NotRenewable(_) => "Job not renewable",
            Conflict::JobNotOpen(_) => "Job not open",
            Conflict::TooManyAlerts => "Too many alerts",
            Conflict::TooManyWebhooks => "Too many webhook endpoints",
            Conflict::TooManyResumes => "Too many résumés",
        }
    }

    pub fn detail(&self) -> String {
        match self {
            Conflict::EmailTaken => "an account with this email already exists".into(),
            Conflict::AlreadyApplied => {
                "you have already applied to this job; delete that application to apply again"
                    .into()
            }
            Conflict::JobClosed => "this job is closed and takes no applications".into(),
            Conflict::CompanyHasJobs => {
                "the company still has jobs; delete them before deleting the company".into()
            }
            Conflict::LastMember => "a company must keep at least one member".into(),
            Conflict::InvalidTransition(e) => e.to_string(),
            Conflict::JobTransition(e) => e.to_string(),
            Conflict::JobExpired => {
                "this job has expired and takes no applications; its company may renew it".into()
            }
            Conflict::NotRenewable(s) => {
                format!("only an open or expired job can be renewed; this one is {s}")
            }
            Conflict::JobNotOpen(s) => format!(
                "expires_at can be set only while the job is open (or waiting for review); this \
                 one is {s}: renew an expired job, or reopen a closed one in the same PATCH"
            ),
            Conflict::TooManyAlerts => format!(
                "you have {} alerts, the most one account may have; delete one first",
                alert::MAX_ALERTS_PER_USER
            ),
            Conflict::TooManyWebhooks => format!(
                "this company has {} webhook endpoints, the most one company may have; delete one \
                 first",
                webhook::MAX_ENDPOINTS_PER_COMPANY
            ),
            Conflict::TooManyResumes => format!(
                "you have {MAX_RESUMES_PER_USER} résumés, the most one account may keep; delete                  one first"
            ),
        }
    }
}
