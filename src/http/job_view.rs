//! A job as the API shows it (`JobOut`): the one shape the job, search, admin and application
//! answers share, read from a stored row at the instant it is shown.

use crate::domain::pay_place::{Place, Salary, Workplace};
use crate::domain::{EmploymentType, JobStatus};
use crate::store::JobRow;
use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
pub struct CompanyRef {
    pub id: i64,
    pub name: String,
}

#[derive(Serialize, ToSchema)]
pub struct JobOut {
    pub id: i64,
    pub company: CompanyRef,
    pub title: String,
    pub description: String,
    pub workplace: Workplace,
    /// Where the job is done, or (remote) where its candidates may live; a place's `country` is
    /// `null` only for one written as the older `location`, until a member sets it.
    pub locations: Vec<Place>,
    /// The pay range, `null` when the job states none.
    #[schema(required = true)]
    pub salary: Option<Salary>,
    /// Deprecated: the first place as text (use `locations`).
    #[schema(deprecated)]
    pub location: String,
    /// Deprecated: `workplace == remote`.
    #[schema(deprecated)]
    pub remote: bool,
    /// Deprecated: `salary.min` (use `salary`).
    #[schema(required = true, deprecated)]
    pub salary_min: Option<i64>,
    /// Deprecated: `salary.max` (use `salary`).
    #[schema(required = true, deprecated)]
    pub salary_max: Option<i64>,
    pub employment_type: EmploymentType,
    /// `expired` as soon as `expires_at` has passed, whether or not the upkeep has run.
    pub status: JobStatus,
    /// When the job expires: `null` for a job written before jobs expired (until the upkeep
    /// gives it one) and for a job waiting for review without one (its approval gives it one).
    #[schema(required = true)]
    #[serde(with = "crate::timefmt::option")]
    pub expires_at: Option<DateTime<Utc>>,
    /// Why an operator rejected the job; `null` unless it is `rejected`.
    #[schema(required = true)]
    pub rejection_reason: Option<String>,
    /// Whether applying needs a résumé (`resume_id`).
    pub resume_required: bool,
    /// The screening questions applying answers (at most 20).
    pub questions: Vec<crate::domain::questions::Question>,
    /// When the job opened: its creation, or its approval under moderation.
    #[serde(with = "crate::timefmt")]
    pub created_at: DateTime<Utc>,
    #[serde(with = "crate::timefmt")]
    pub updated_at: DateTime<Utc>,
}

impl From<JobRow> for JobOut {
    fn from(j: JobRow) -> Self {
        let status = j.status_at(crate::timefmt::now());
        let (workplace, locations, salary) = (j.workplace(), j.places(), j.salary());
        JobOut {
            id: j.id,
            company: CompanyRef {
                id: j.company_id,
                name: j.company_name,
            },
            title: j.title,
            description: j.description,
            remote: workplace == Workplace::Remote,
            location: locations.first().map(Place::text).unwrap_or_default(),
            workplace,
            locations,
            salary,
            salary_min: j.salary_min,
            salary_max: j.salary_max,
            employment_type: j.employment_type,
            status,
            expires_at: j.expires_at,
            rejection_reason: j.rejection_reason.filter(|_| status == JobStatus::Rejected),
            resume_required: j.resume_required,
            questions: crate::domain::questions::stored(j.questions.as_deref()),
            created_at: j.created_at,
            updated_at: j.updated_at,
        }
    }
}
