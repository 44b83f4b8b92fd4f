//! The rows the API's use cases read and write, and the values they take.

use crate::domain::pay_place::{self, Period, Place, Salary, Workplace};
use crate::domain::values::{Email, SalaryRange, Title};
use crate::domain::{ApplicationStatus, EmploymentType, JobStatus, Role, UnknownValue};
use chrono::{DateTime, Utc};

/// A user as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct UserRow {
    pub id: i64,
    pub email: String,
    pub name: String,
    #[sqlx(try_from = "String")]
    pub role: Role,
    pub password_hash: String,
    pub token_generation: i64,
    pub created_at: DateTime<Utc>,
}

impl UserRow {
    pub fn role(&self) -> Role {
        self.role
    }
}

/// A user's email preferences (docs/api.md, "Job alerts and email preferences").
#[derive(Debug, Clone, Copy, PartialEq, Eq, sqlx::FromRow)]
pub struct Notifications {
    /// Whether the hourly `applications.digest` is sent to them.
    pub application_digest: bool,
}

/// A new account; its email is unique by [`Email::key`].
#[derive(Debug, Clone)]
pub struct NewUser {
    pub email: Email,
    pub name: String,
    pub role: Role,
    pub password_hash: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CompanyRow {
    pub id: i64,
    pub name: String,
    pub website: Option<String>,
    pub description: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// A company's editable fields, complete (a PATCH is merged before it reaches the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompanyFields {
    pub name: String,
    pub website: Option<String>,
    pub description: Option<String>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MemberRow {
    pub id: i64,
    pub name: String,
    pub email: String,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct JobRow {
    pub id: i64,
    pub company_id: i64,
    pub company_name: String,
    pub title: String,
    pub description: String,
    pub location: String,
    pub remote: bool,
    pub salary_min: Option<i64>,
    pub salary_max: Option<i64>,
    /// `onsite`, `hybrid` or `remote`; `None` for a job written before pay and place (read
    /// from `remote` through [`JobRow::workplace`]).
    pub workplace: Option<String>,
    /// The places as stored (a JSON array of [`Place`]); `None` for a job written before pay
    /// and place (read from `location` through [`JobRow::places`]).
    pub locations: Option<String>,
    /// The salary's ISO 4217 currency and its period; `None` for a job written before pay had
    /// a currency (`DEFAULT_SALARY_CURRENCY` per `year`, through [`JobRow::salary`]).
    pub salary_currency: Option<String>,
    pub salary_period: Option<String>,
    #[sqlx(try_from = "String")]
    pub employment_type: EmploymentType,
    /// The stored status: an open job past its `expires_at` reads as expired
    /// ([`JobRow::status_at`]) before the upkeep writes it.
    #[sqlx(try_from = "String")]
    pub status: JobStatus,
    /// When the job expires; `None` for a job written before jobs expired (the upkeep gives
    /// it one) and for a job waiting for review without one (its approval gives it one).
    pub expires_at: Option<DateTime<Utc>>,
    /// An operator's reason, while the job is rejected.
    pub rejection_reason: Option<String>,
    /// Whether applying needs a résumé.
    pub resume_required: bool,
    /// The screening questions as stored (`domain::questions`, a JSON array; `None`: none).
    pub questions: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl JobRow {
    /// The status the job reads as at `now` (see [`crate::domain::job::status_at`]).
    pub fn status_at(&self, now: DateTime<Utc>) -> JobStatus {
        crate::domain::job::status_at(self.status, self.expires_at, now)
    }

    /// Where the work is done: as stored, else (a job written before pay and place) from
    /// `remote`. A stored value that `remote` contradicts was overwritten by a release that
    /// writes only `remote` (during a rolling deploy): `remote` is the newer, and wins. A
    /// value this release does not know reads from `remote` too; [`JobRow::fields`] refuses it.
    pub fn workplace(&self) -> Workplace {
        self.workplace
            .as_deref()
            .and_then(Workplace::parse)
            .filter(|w| (*w == Workplace::Remote) == self.remote)
            .unwrap_or(Workplace::of_remote(self.remote))
    }

    /// The job's places: as stored, else (a job written before pay and place) the one its
    /// `location` names, its country unknown (none for an empty `location`). Stored places
    /// whose first does not read as `location` were overwritten by a release that writes only
    /// `location`: that text is the newer, and wins.
    pub fn places(&self) -> Vec<Place> {
        pay_place::stored_places(self.locations.as_deref())
            .filter(|places| places.first().map(Place::text).unwrap_or_default() == self.location)
            .unwrap_or_else(|| pay_place::places_of_text(&self.location))
    }

    /// The job's pay (`None`: it states none), in `DEFAULT_SALARY_CURRENCY` per `year` for a
    /// job written before pay had a currency.
    pub fn salary(&self) -> Option<Salary> {
        if self.salary_min.is_none() && self.salary_max.is_none() {
            return None;
        }
        Some(Salary {
            min: self.salary_min,
            max: self.salary_max,
            currency: self
                .salary_currency
                .clone()
                .unwrap_or_else(|| pay_place::default_currency().to_string()),
            period: self
                .salary_period
                .as_deref()
                .and_then(Period::parse)
                .unwrap_or(Period::Year),
        })
    }

    /// The job's fields, parsed again by today's rules.
    pub fn fields(&self) -> Result<JobFields, UnknownValue> {
        let invalid = |kind, value: String| UnknownValue { kind, value };
        if let Some(w) = self
            .workplace
            .as_deref()
            .filter(|w| Workplace::parse(w).is_none())
        {
            return Err(invalid("workplace", w.to_string()));
        }
        if let Some(p) = self
            .salary_period
            .as_deref()
            .filter(|p| Period::parse(p).is_none())
        {
            return Err(invalid("salary period", p.to_string()));
        }
        if let Some(c) = self
            .salary_currency
            .as_deref()
            .filter(|c| pay_place::currency(c).is_none())
        {
            return Err(invalid("salary currency", c.to_string()));
        }
        if self.locations.is_some() && pay_place::stored_places(self.locations.as_deref()).is_none()
        {
            return Err(invalid(
                "locations",
                self.locations.clone().unwrap_or_default(),
            ));
        }
        SalaryRange::parse(self.salary_min, self.salary_max).map_err(|_| {
            invalid(
                "salary range",
                format!("{:?}..{:?}", self.salary_min, self.salary_max),
            )
        })?;
        Ok(JobFields {
            title: Title::parse(&self.title)
                .map_err(|_| invalid("job title", self.title.clone()))?,
            description: self.description.clone(),
            workplace: self.workplace(),
            locations: self.places(),
            salary: self.salary(),
            employment_type: self.employment_type,
            status: self.status,
            expires_at: self.expires_at,
            resume_required: self.resume_required,
            questions: self.questions.clone(),
        })
    }
}

/// A job's editable fields, complete and validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobFields {
    pub title: Title,
    pub description: String,
    pub workplace: Workplace,
    /// 0–10 places (none only for a job written before pay and place with no location).
    pub locations: Vec<Place>,
    pub salary: Option<Salary>,
    pub employment_type: EmploymentType,
    pub status: JobStatus,
    /// When the job expires (see [`JobRow::expires_at`]).
    pub expires_at: Option<DateTime<Utc>>,
    pub resume_required: bool,
    /// As stored (see [`JobRow::questions`]).
    pub questions: Option<String>,
}

impl JobFields {
    /// The older `location`: the first place as text ("" for none).
    pub fn location(&self) -> String {
        self.locations.first().map(Place::text).unwrap_or_default()
    }

    /// The older `remote`: `workplace == remote`.
    pub fn remote(&self) -> bool {
        self.workplace == Workplace::Remote
    }
}

/// An operator's decision on a job waiting for review.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Review {
    /// The job opens now (its `created_at` becomes the approval), until the `expires_at` its
    /// members set if that is still ahead, else for `posting` (`JOB_POSTING_DAYS`).
    Approve { posting: chrono::Duration },
    /// The job is rejected with this reason (already checked: 1–1000 code points).
    Reject { reason: String },
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApplicationRow {
    pub id: i64,
    pub job_id: i64,
    pub job_title: String,
    pub company_id: i64,
    pub company_name: String,
    pub candidate_id: i64,
    pub candidate_name: String,
    pub candidate_email: String,
    #[sqlx(try_from = "String")]
    pub status: ApplicationStatus,
    pub cover_letter: Option<String>,
    /// The attached résumé, if any (its row's id, name, kind and size).
    pub resume_id: Option<i64>,
    pub resume_filename: Option<String>,
    pub resume_content_type: Option<String>,
    pub resume_size: Option<i64>,
    /// The screening answers, as stored (a JSON array of `{question_id, answer}`).
    pub answers: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// A candidate as a bearer token names them, their account not read: the store writes for
/// them only if the account is still a candidate's and the token's generation is its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenClaim {
    pub candidate_id: i64,
    pub generation: i64,
}

/// What an application is made with, its values validated.
#[derive(Debug, Clone, Default)]
pub struct NewApplication {
    pub cover_letter: Option<String>,
    /// One of the candidate's résumés.
    pub resume_id: Option<i64>,
    /// The screening answers as stored (a JSON array), `None` for a job without questions.
    pub answers: Option<String>,
}

impl ApplicationRow {
    pub fn status(&self) -> ApplicationStatus {
        self.status
    }
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct HistoryRow {
    /// Read through [`HistoryRow::old_status`].
    old_status: Option<String>,
    #[sqlx(try_from = "String")]
    pub new_status: ApplicationStatus,
    pub changed_by: i64,
    pub event_id: Option<String>,
    pub at: DateTime<Utc>,
}

impl HistoryRow {
    /// The status before the change (none for the first row), read strictly.
    pub fn old_status(&self) -> Result<Option<ApplicationStatus>, UnknownValue> {
        self.old_status
            .clone()
            .map(ApplicationStatus::try_from)
            .transpose()
    }
}

/// Whose applications a listing shows.
#[derive(Debug, Clone, Copy)]
pub enum ApplicationViewer {
    Candidate(i64),
    /// Applications to jobs of the companies this employer is a member of.
    Employer(i64),
}

/// The outcome of a status change.
#[derive(Debug, Clone)]
pub struct StatusChange {
    pub application: ApplicationRow,
    /// The event written to the outbox; `None` when the status was already the requested one.
    pub event_id: Option<String>,
}

/// How long a sign-in failure counts: 15 minutes.
pub const AUTH_FAILURE_WINDOW_MS: i64 = 15 * 60 * 1000;

/// The keys of the two counters a sign-in's failures are charged to: its email's and its
/// client address's.
#[derive(Debug, Clone, Copy)]
pub struct AuthKeys<'a> {
    pub email: &'a str,
    pub addr: &'a str,
}

/// One failure counter: the failures of its current window and the ms until that window ends.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FailureCount {
    pub failures: i64,
    pub remaining_ms: i64,
}

/// Both counters of a sign-in; one with no failures in a live window is the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuthCounters {
    pub email: FailureCount,
    pub addr: FailureCount,
}
