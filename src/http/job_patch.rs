//! A member's PATCH of a job (docs/api.md, Jobs): JSON Merge Patch of its fields, and the
//! lifecycle's rules on `status` (only `open ↔ closed`; any edit of a rejected job sends it back
//! to review) and `expires_at` (set while the job is open or waiting for review; reopening a
//! job whose date passed gives it `JOB_POSTING_DAYS` from now); and the validation of a job's
//! fields that a creation and a PATCH share ([`validate_job`] of a [`Draft`]).

use super::error::{ApiError, ApiResult, FieldErrors};
use super::extract::{JsonBody, double_option};
use super::job_pay::{PayPlace, PayPlaceIn};
use crate::domain::job::{check_expires_at, parse_time};
use crate::domain::pay_place::{Place, Salary, Workplace};
use crate::domain::questions::{self, Question};
use crate::domain::values::Title;
use crate::domain::{Conflict, EmploymentType, JobStatus, validate};
use crate::store::{JobFields, JobRow, StoreError};
use chrono::{DateTime, Duration, Utc};
use serde::Deserialize;
use utoipa::ToSchema;

/// The raw values of a job before validation; its status and `expires_at` are already judged.
pub(super) struct Draft {
    pub(super) title: String,
    pub(super) description: String,
    /// Pay and place as sent, in the fields of this release and the older ones.
    pub(super) pay: PayPlaceIn,
    /// The job's pay and place so far (a PATCH), which what is not sent keeps.
    pub(super) current: Option<PayPlace>,
    /// `JOB_REQUIRE_SALARY`.
    pub(super) require_salary: bool,
    pub(super) employment_type: String,
    pub(super) status: JobStatus,
    pub(super) expires_at: Option<DateTime<Utc>>,
    pub(super) resume_required: bool,
    /// New questions as sent (replacing `questions`), or `None` to keep them.
    pub(super) new_questions: Option<serde_json::Value>,
    /// The questions stored so far, whose ids unchanged questions keep.
    pub(super) questions: Vec<Question>,
}

pub(super) fn validate_job(d: Draft, mut errors: FieldErrors) -> ApiResult<JobFields> {
    let title = errors.check("title", Title::parse(&d.title));
    let description = errors.check(
        "description",
        validate::description(&d.description, validate::DESCRIPTION_MAX),
    );
    let pay = d.pay.resolve(d.current, d.require_salary, &mut errors);
    let questions = match &d.new_questions {
        None => Some(d.questions.clone()),
        Some(raw) => match questions::parse(raw, &d.questions) {
            Ok(q) => Some(q),
            Err((field, message)) => {
                errors.add(&field, message);
                None
            }
        },
    };
    let employment_type = errors.check(
        "employment_type",
        EmploymentType::parse(&d.employment_type)
            .ok_or_else(|| "must be full_time, part_time, contract or internship".to_string()),
    );
    match (title, description, pay, employment_type, questions) {
        (Some(title), Some(description), Some(pay), Some(employment_type), Some(questions))
            if errors.is_empty() =>
        {
            Ok(JobFields {
                title,
                description,
                workplace: pay.workplace,
                locations: pay.locations,
                salary: pay.salary,
                employment_type,
                status: d.status,
                expires_at: d.expires_at,
                resume_required: d.resume_required,
                questions: questions::to_stored(&questions),
            })
        }
        _ => Err(ApiError::validation(errors)),
    }
}

/// JSON Merge Patch of a job: absent fields stay, `null` clears `salary` (or the older
/// `salary_min` / `salary_max`).
/// `status` moves only `open ↔ closed` (any PATCH of a `rejected` job sends it back to
/// `pending_review`); `expires_at` is set while the job is open or waiting for review.
#[derive(Deserialize, ToSchema, Default)]
pub struct JobPatch {
    #[serde(default, deserialize_with = "double_option")]
    pub title: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Workplace)]
    pub workplace: Option<Option<String>>,
    /// Replaces the places: 1 to 10 `{city, region, country}`.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Vec<Place>)]
    pub locations: Option<Option<serde_json::Value>>,
    /// Merged into the salary (`null`: none); `{min, max, currency, period}` for a job without
    /// one.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Salary>)]
    pub salary: Option<Option<serde_json::Value>>,
    /// Deprecated: one place, its country unknown (use `locations`).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(deprecated)]
    pub location: Option<Option<String>>,
    /// Deprecated: `true` sets `workplace` to `remote`, `false` to `onsite`.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(deprecated)]
    pub remote: Option<Option<bool>>,
    /// Deprecated: the salary's minimum (use `salary`).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(deprecated)]
    pub salary_min: Option<Option<i64>>,
    /// Deprecated: the salary's maximum (use `salary`).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(deprecated)]
    pub salary_max: Option<Option<i64>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = EmploymentType)]
    pub employment_type: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = JobStatus)]
    pub status: Option<Option<String>>,
    /// Any time in the next 365 days.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: Option<Option<String>>,
    #[serde(default, deserialize_with = "double_option")]
    pub resume_required: Option<Option<bool>>,
    /// Replaces the questions (`[{text, kind, required?}]`; `null` or `[]`: none); an unchanged
    /// question keeps its id.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Vec<QuestionIn>>)]
    pub questions: Option<Option<serde_json::Value>>,
}

/// A screening question as a member sends it; the server assigns its `id`.
#[derive(ToSchema)]
#[allow(dead_code)]
pub struct QuestionIn {
    /// 1-500 characters, one line.
    pub text: String,
    pub kind: crate::domain::questions::QuestionKind,
    /// Default false.
    pub required: Option<bool>,
}

impl JsonBody for JobPatch {
    const FIELDS: &'static [&'static str] = &[
        "title",
        "description",
        "workplace",
        "locations",
        "salary",
        "location",
        "remote",
        "salary_min",
        "salary_max",
        "employment_type",
        "status",
        "expires_at",
        "resume_required",
        "questions",
    ];
    const READ_ONLY: &'static [&'static str] = &[
        "id",
        "company",
        "company_id",
        "rejection_reason",
        "created_at",
        "updated_at",
    ];
}

/// The job's fields after the patch: 422 for a bad field (every one named), then 409 for a
/// move its status does not allow.
pub(super) fn merge(
    job: &JobRow,
    p: &JobPatch,
    now: DateTime<Utc>,
    posting: Duration,
    require_salary: bool,
) -> ApiResult<JobFields> {
    // The stored values stand in for absent fields and are judged again with the patch.
    let cur = job.clone();
    let mut errors = FieldErrors::default();
    fn required<T: Clone>(
        errors: &mut FieldErrors,
        name: &str,
        v: &Option<Option<T>>,
        current: T,
    ) -> T {
        match v {
            None => current,
            Some(Some(x)) => x.clone(),
            Some(None) => {
                errors.add(name, "must not be null");
                current
            }
        }
    }
    let current = job.status_at(now);
    let asked = match &p.status {
        None => Some(current),
        Some(Some(s)) => errors.check(
            "status",
            JobStatus::parse(s).ok_or_else(|| {
                "must be one of open, closed, expired, pending_review, rejected".to_string()
            }),
        ),
        Some(None) => {
            errors.add("status", "must not be null");
            None
        }
    };
    // The same date sent back is no change; a new one is judged against now.
    let new_expiry = match &p.expires_at {
        None => None,
        Some(None) => {
            errors.add("expires_at", "must not be null");
            None
        }
        Some(Some(raw)) => match parse_time(raw) {
            Ok(t) if Some(t) == job.expires_at => None,
            Ok(t) => errors.check("expires_at", check_expires_at(t, now)),
            Err(m) => {
                errors.add("expires_at", m);
                None
            }
        },
    };
    let draft = Draft {
        title: required(&mut errors, "title", &p.title, cur.title),
        description: required(&mut errors, "description", &p.description, cur.description),
        pay: PayPlaceIn {
            workplace: p.workplace.clone(),
            // `null` is no list of places: refused by the parser, named `locations`.
            locations: p
                .locations
                .clone()
                .map(|v| v.unwrap_or(serde_json::Value::Null)),
            salary: p
                .salary
                .clone()
                .map(|v| v.unwrap_or(serde_json::Value::Null)),
            location: p.location.clone(),
            remote: p.remote,
            salary_min: p.salary_min,
            salary_max: p.salary_max,
        },
        current: Some(PayPlace::of(job)),
        require_salary,
        employment_type: required(
            &mut errors,
            "employment_type",
            &p.employment_type,
            cur.employment_type.as_str().to_string(),
        ),
        status: job.status,
        expires_at: new_expiry.or(job.expires_at),
        resume_required: required(
            &mut errors,
            "resume_required",
            &p.resume_required,
            cur.resume_required,
        ),
        new_questions: match &p.questions {
            None => None,
            Some(None) => Some(serde_json::Value::Array(Vec::new())),
            Some(Some(v)) => Some(v.clone()),
        },
        questions: questions::stored(cur.questions.as_deref()),
    };
    // Every field is judged (422) before the move (409).
    let mut fields = validate_job(draft, errors)?;
    let asked = asked.unwrap_or(current);
    let next = current
        .patched(asked)
        .map_err(|e| StoreError::Conflict(Conflict::JobTransition(e)))?;
    if new_expiry.is_some() && !current.takes_expiry() && !next.takes_expiry() {
        return Err(StoreError::Conflict(Conflict::JobNotOpen(current)).into());
    }
    // Without a move the stored status stays: an open job past its date is left for the
    // upkeep to expire (and to email its members about).
    if next != current {
        fields.status = next;
    }
    // Reopened with no date ahead (a job written before jobs expired, or one whose date passed
    // while it was closed): it runs from now, as a renewal would.
    if current == JobStatus::Closed
        && next == JobStatus::Open
        && fields.expires_at.is_none_or(|t| t <= now)
    {
        fields.expires_at = Some(now + posting);
    }
    Ok(fields)
}
