//! Job alerts ([`AlertStore`]): a candidate's saved searches (migration 0017). Every method is
//! scoped by the owner, so that someone else's alert is `NotFound`, never visible.

use super::{Idem, JobSearch, Page, StoreResult};
use crate::domain::EmploymentType;
use crate::domain::alert::{Frequency, Watermark};
use crate::domain::pay_place::{self, Workplace};
use crate::domain::search::SearchFilters;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// An alert as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AlertRow {
    pub id: i64,
    pub user_id: i64,
    pub q: Option<String>,
    pub location: Option<String>,
    pub remote: Option<bool>,
    pub company_id: Option<i64>,
    pub salary_min: Option<i64>,
    /// Read through [`AlertRow::filters`], strictly.
    pub employment_type: Option<String>,
    /// Read through [`AlertRow::filters`], strictly.
    pub workplace: Option<String>,
    pub country: Option<String>,
    pub salary_currency: Option<String>,
    #[sqlx(try_from = "String")]
    pub frequency: Frequency,
    pub paused: bool,
    pub created_at: DateTime<Utc>,
    pub last_sent_at: Option<DateTime<Utc>>,
    /// With `watermark_job_id`: where the last digest ended (see [`Watermark`]).
    pub watermark_created_at: Option<DateTime<Utc>>,
    pub watermark_job_id: Option<i64>,
}

impl AlertRow {
    /// The saved search. An employment type this release does not know is an error, never a
    /// filter dropped.
    pub fn filters(&self) -> Result<SearchFilters, crate::domain::UnknownValue> {
        let employment_type = self
            .employment_type
            .clone()
            .map(EmploymentType::try_from)
            .transpose()?;
        let unknown = |kind: &'static str, value: &str| crate::domain::UnknownValue {
            kind,
            value: value.to_string(),
        };
        let workplace = match self.workplace.as_deref() {
            None => None,
            Some(w) => Some(Workplace::parse(w).ok_or_else(|| unknown("workplace", w))?),
        };
        let salary_currency = match self.salary_currency.as_deref() {
            None => None,
            Some(c) => Some(
                pay_place::currency(c)
                    .ok_or_else(|| unknown("salary currency", c))?
                    .to_string(),
            ),
        };
        Ok(SearchFilters {
            q: self.q.clone(),
            location: self.location.clone(),
            remote: self.remote,
            workplace,
            country: self.country.clone(),
            company_id: self.company_id,
            salary_min: self.salary_min,
            salary_currency,
            employment_type,
        })
    }

    /// Where the next digest starts: the end of the last one's period, or the alert's
    /// creation.
    pub fn watermark(&self) -> Watermark {
        match (self.watermark_created_at, self.watermark_job_id) {
            (Some(at), Some(id)) => Watermark::listed(at, id),
            _ => Watermark::creation(self.created_at),
        }
    }
}

/// A new alert, its search validated (`domain::alert::check_saved_search`).
#[derive(Debug, Clone)]
pub struct NewAlert {
    pub filters: SearchFilters,
    pub frequency: Frequency,
}

/// What `PATCH /api/alerts/{id}` may change; `None` keeps the value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AlertChange {
    pub frequency: Option<Frequency>,
    pub paused: Option<bool>,
}

impl JobSearch {
    /// The search of saved `filters`: newest first, every filter as `GET /api/jobs` applies
    /// it. `None` when it can match nothing (a word too long to be indexed).
    pub fn of_filters(filters: &SearchFilters) -> Option<JobSearch> {
        Some(JobSearch {
            terms: filters.terms()?,
            location: filters.location_needle(),
            remote: filters.remote,
            workplace: filters.workplace.map(|w| w.as_str().to_string()),
            country: filters.country.clone(),
            company_id: filters.company_id,
            salary_min: filters.salary_min,
            salary_currency: filters.salary_currency.clone(),
            employment_type: filters.employment_type.map(|t| t.as_str().to_string()),
            ..JobSearch::default()
        })
    }
}

/// The alerts of the API's `/api/alerts`.
#[async_trait]
pub trait AlertStore: Send + Sync {
    /// Creates an alert for `user_id`; `Conflict(TooManyAlerts)` when the user has `max`
    /// already, decided under a lock on the user, so that concurrent requests cannot pass it.
    /// `NotFound` when the user is gone.
    async fn create_alert(
        &self,
        user_id: i64,
        alert: NewAlert,
        max: i64,
        idem: Idem<'_, AlertRow>,
    ) -> StoreResult<AlertRow>;
    /// The user's alert `id`; `NotFound` if there is none or it is someone else's.
    async fn alert_of(&self, user_id: i64, id: i64) -> StoreResult<AlertRow>;
    /// A page of the user's alerts, newest first (`created_at`, then `id`), and their count.
    async fn alerts_of(&self, user_id: i64, page: Page) -> StoreResult<(Vec<AlertRow>, i64)>;
    /// Changes the user's alert `id`; `NotFound` if there is none or it is someone else's.
    async fn update_alert(
        &self,
        user_id: i64,
        id: i64,
        change: AlertChange,
        idem: Idem<'_, AlertRow>,
    ) -> StoreResult<AlertRow>;
    /// Deletes the user's alert `id`; `NotFound` if there is none or it is someone else's.
    async fn delete_alert(&self, user_id: i64, id: i64, idem: Idem<'_, ()>) -> StoreResult<()>;
    /// The alert `id`, whoever's it is (its unsubscribe link names it); `NotFound` if gone.
    async fn alert(&self, id: i64) -> StoreResult<AlertRow>;
    /// Pauses the alert `id` (its unsubscribe link; paused already: as it is) and returns it;
    /// `NotFound` if gone.
    async fn pause_alert(&self, id: i64, idem: Idem<'_, AlertRow>) -> StoreResult<AlertRow>;
}
