//! What an event's email needs, read at send time (docs/guarantee.md): one statement per type,
//! each answering only while the database holds the event as committed (a status change's
//! history row, any other event's record in `events`) and what it reports still exists. The
//! application types, the busiest, are also read many at once for a batch.

use super::{Db, S, sql};
use crate::domain::EmploymentType;
use crate::domain::alert::{Frequency, describe};
use crate::domain::event::{Event, EventKind};
use crate::domain::mail::{About, Absent, AlertJob, DigestJob, EmailData, Loaded, Recipient};
use crate::domain::pay_place::{self, Workplace};
use crate::domain::search::SearchFilters;
use crate::store::dialect::placeholders;
use crate::store::{StoreError, StoreResult};
use anyhow::Context;

/// A row of the application events' statements.
#[derive(Clone, sqlx::FromRow)]
struct ApplicationEventRow {
    event_id: String,
    application_id: i64,
    user_id: i64,
    email: String,
    name: String,
    job_title: String,
    company: String,
    resume: Option<String>,
}

impl ApplicationEventRow {
    fn loaded(self) -> Loaded {
        Loaded::Ready(EmailData {
            to: Recipient {
                user_id: self.user_id,
                email: self.email,
                name: self.name,
            },
            about: About::Application {
                job_title: self.job_title,
                company: self.company,
                resume: self.resume,
            },
        })
    }
}

/// The row of [`sql::JOB_EVENT_DATA`].
#[derive(sqlx::FromRow)]
struct JobEventRow {
    user_id: i64,
    email: String,
    name: String,
    job_title: String,
    company: String,
    rejection_reason: Option<String>,
}

/// The row of [`sql::WEBHOOK_EVENT_DATA`].
#[derive(sqlx::FromRow)]
struct WebhookEventRow {
    user_id: i64,
    email: String,
    name: String,
    url: String,
    company_id: i64,
    company: String,
}

/// A row of [`sql::DIGEST_DATA`]: the member, and one job's count (none when no listed
/// application is left).
#[derive(sqlx::FromRow)]
struct DigestRow {
    user_id: i64,
    email: String,
    name: String,
    application_digest: bool,
    job_id: Option<i64>,
    job_title: Option<String>,
    company: Option<String>,
    applications: i64,
}

/// A row of [`sql::ALERT_DIGEST_DATA`]: the owner, the alert, and one listed job (none when
/// no listed job is left).
#[derive(sqlx::FromRow)]
struct AlertDigestRow {
    user_id: i64,
    email: String,
    name: String,
    q: Option<String>,
    location: Option<String>,
    remote: Option<bool>,
    company_id: Option<i64>,
    company_name: Option<String>,
    salary_min: Option<i64>,
    employment_type: Option<String>,
    workplace: Option<String>,
    country: Option<String>,
    salary_currency: Option<String>,
    frequency: String,
    paused: bool,
    job_id: Option<i64>,
    job_title: Option<String>,
    job_company: Option<String>,
    job_location: Option<String>,
}

/// The error of a failed load, naming the step and the event.
fn loading(event: &Event) -> impl FnOnce(sqlx::Error) -> StoreError + '_ {
    move |e| {
        StoreError::Other(anyhow::Error::new(e).context(format!(
            "loading the email data of {} event {}",
            event.type_name(),
            event.event_id
        )))
    }
}

/// The statements that read an application event's data, for one event and for several (the
/// latter's `IN (…)` list to be completed), if `kind` is one.
fn application_statements(kind: &EventKind) -> Option<(&'static str, &'static str)> {
    match kind {
        EventKind::StatusChanged { .. } => {
            Some((sql::STATUS_CHANGED_DATA, sql::STATUS_CHANGED_DATA_MANY))
        }
        EventKind::Submitted { .. } => Some((sql::SUBMITTED_DATA, sql::SUBMITTED_DATA_MANY)),
        _ => None,
    }
}

impl S {
    /// An `alert.digest`'s email data: gone with its record, its alert or its owner, or once
    /// none of its jobs is left to show; off while the alert is paused.
    async fn alert_digest_data<'c, E>(
        e: E,
        event: &Event,
        alert_id: i64,
        jobs: &[i64],
    ) -> StoreResult<Loaded>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        let ids = serde_json::to_string(jobs).context("the digest's job ids as JSON")?;
        let rows = sqlx::query_as::<_, AlertDigestRow>(sql::ALERT_DIGEST_DATA)
            .bind(&event.event_id)
            .bind(alert_id)
            .bind(ids)
            .fetch_all(e)
            .await
            .map_err(loading(event))?;
        Ok(alert_digest(alert_id, jobs, rows))
    }

    /// What `event`'s email needs, read on `e` (the pool, or a transaction-mode claim's
    /// transaction): one statement.
    pub(super) async fn load_email_data<'c, E>(e: E, event: &Event) -> StoreResult<Loaded>
    where
        E: sqlx::Executor<'c, Database = Db>,
    {
        if let Some((statement, _)) = application_statements(&event.kind) {
            let row = sqlx::query_as::<_, ApplicationEventRow>(statement)
                .bind(&event.event_id)
                .fetch_optional(e)
                .await
                .map_err(loading(event))?;
            // A hand-made message may name another application than the one its id wrote.
            return Ok(match row {
                Some(row) if Some(row.application_id) == event.kind.application_id() => {
                    row.loaded()
                }
                _ => Loaded::Missing(Absent::Gone),
            });
        }
        match &event.kind {
            EventKind::JobExpiring {
                job_id, user_id, ..
            }
            | EventKind::JobExpired {
                job_id, user_id, ..
            }
            | EventKind::JobReviewed {
                job_id, user_id, ..
            } => {
                let row = sqlx::query_as::<_, JobEventRow>(sql::JOB_EVENT_DATA)
                    .bind(&event.event_id)
                    .bind(job_id)
                    .bind(user_id)
                    .fetch_optional(e)
                    .await
                    .map_err(loading(event))?;
                Ok(match row {
                    None => Loaded::Missing(Absent::Gone),
                    Some(r) => Loaded::Ready(EmailData {
                        to: Recipient {
                            user_id: r.user_id,
                            email: r.email,
                            name: r.name,
                        },
                        about: About::Job {
                            job_title: r.job_title,
                            company: r.company,
                            rejection_reason: r.rejection_reason,
                        },
                    }),
                })
            }
            EventKind::WebhookDisabled {
                endpoint_id,
                user_id,
                ..
            } => {
                let row = sqlx::query_as::<_, WebhookEventRow>(sql::WEBHOOK_EVENT_DATA)
                    .bind(&event.event_id)
                    .bind(endpoint_id)
                    .bind(user_id)
                    .fetch_optional(e)
                    .await
                    .map_err(loading(event))?;
                Ok(match row {
                    None => Loaded::Missing(Absent::Gone),
                    Some(r) => Loaded::Ready(EmailData {
                        to: Recipient {
                            user_id: r.user_id,
                            email: r.email,
                            name: r.name,
                        },
                        about: About::Webhook {
                            host: url::Url::parse(&r.url)
                                .ok()
                                .and_then(|u| u.host_str().map(str::to_string))
                                .unwrap_or(r.url),
                            company_id: r.company_id,
                            company: r.company,
                        },
                    }),
                })
            }
            EventKind::ApplicationsDigest {
                user_id,
                applications,
                ..
            } => {
                let ids = serde_json::to_string(applications)
                    .context("the digest's application ids as JSON")?;
                let rows = sqlx::query_as::<_, DigestRow>(sql::DIGEST_DATA)
                    .bind(&event.event_id)
                    .bind(user_id)
                    .bind(ids)
                    .fetch_all(e)
                    .await
                    .map_err(loading(event))?;
                Ok(digest(rows))
            }
            EventKind::AlertDigest { alert_id, jobs, .. } => {
                Self::alert_digest_data(e, event, *alert_id, jobs).await
            }
            EventKind::StatusChanged { .. } | EventKind::Submitted { .. } => {
                unreachable!("read by application_statements above")
            }
        }
    }

    /// [`S::load_email_data`] for several events: the application types' in one statement
    /// each, the others one by one (they come a few an hour, not thousands a second).
    pub(super) async fn load_email_data_many(
        &self,
        events: &[Event],
    ) -> StoreResult<Vec<(String, Loaded)>> {
        let mut found: std::collections::HashMap<String, ApplicationEventRow> = Default::default();
        for many in [sql::STATUS_CHANGED_DATA_MANY, sql::SUBMITTED_DATA_MANY] {
            let of_type: Vec<&Event> = events
                .iter()
                .filter(|e| application_statements(&e.kind).is_some_and(|(_, m)| m == many))
                .collect();
            if of_type.is_empty() {
                continue;
            }
            let statement = format!("{many}{})", placeholders(1, of_type.len()));
            let mut query = sqlx::query_as::<_, ApplicationEventRow>(&statement);
            for e in &of_type {
                query = query.bind(&e.event_id);
            }
            let rows = query.fetch_all(&self.pool).await.map_err(|e| {
                StoreError::Other(anyhow::Error::new(e).context(format!(
                    "loading the email data of {} application events",
                    of_type.len()
                )))
            })?;
            found.extend(rows.into_iter().map(|r| (r.event_id.clone(), r)));
        }
        // The other types, one statement each, all at once: the pool bounds how many run
        // together, and a batch's sends wait for the slowest, not for their sum.
        let mut others: std::collections::HashMap<&str, Loaded> = futures::future::try_join_all(
            events
                .iter()
                .filter(|e| application_statements(&e.kind).is_none())
                .map(|e| async move {
                    let loaded = Self::load_email_data(&self.pool, e).await?;
                    StoreResult::Ok((e.event_id.as_str(), loaded))
                }),
        )
        .await?
        .into_iter()
        .collect();
        let mut out = Vec::with_capacity(events.len());
        for event in events {
            let data = if application_statements(&event.kind).is_some() {
                // A hand-made message may name another application than the one its id wrote.
                match found.get(&event.event_id) {
                    Some(row) if Some(row.application_id) == event.kind.application_id() => {
                        row.clone().loaded()
                    }
                    _ => Loaded::Missing(Absent::Gone),
                }
            } else {
                others
                    .remove(event.event_id.as_str())
                    .unwrap_or(Loaded::Missing(Absent::Gone))
            };
            out.push((event.event_id.clone(), data));
        }
        Ok(out)
    }
}

/// An applications digest from its rows: gone with its member or its record, or once no
/// listed application is left to their companies; off when its member turned digests off.
fn digest(rows: Vec<DigestRow>) -> Loaded {
    let Some(first) = rows.first() else {
        return Loaded::Missing(Absent::Gone);
    };
    if !first.application_digest {
        return Loaded::Missing(Absent::TurnedOff);
    }
    let to = Recipient {
        user_id: first.user_id,
        email: first.email.clone(),
        name: first.name.clone(),
    };
    let jobs: Vec<DigestJob> = rows
        .into_iter()
        .filter_map(|r| {
            Some(DigestJob {
                job_id: r.job_id?,
                job_title: r.job_title?,
                company: r.company?,
                applications: r.applications,
            })
        })
        .filter(|j| j.applications > 0)
        .collect();
    if jobs.is_empty() {
        return Loaded::Missing(Absent::Gone);
    }
    Loaded::Ready(EmailData {
        to,
        about: About::ApplicationsDigest { jobs },
    })
}

/// An alert digest from its rows (see [`S::alert_digest_data`]), the jobs in the event's order.
fn alert_digest(alert_id: i64, jobs: &[i64], rows: Vec<AlertDigestRow>) -> Loaded {
    let Some(first) = rows.first() else {
        return Loaded::Missing(Absent::Gone);
    };
    if first.paused {
        return Loaded::Missing(Absent::TurnedOff);
    }
    let workplace = match first.workplace.as_deref() {
        None => Ok(None),
        Some(w) => Workplace::parse(w).map(Some).ok_or(()),
    };
    let currency = match first.salary_currency.as_deref() {
        None => Ok(None),
        Some(c) => pay_place::currency(c)
            .map(|c| Some(c.to_string()))
            .ok_or(()),
    };
    let (Some(frequency), Ok(employment_type), Ok(workplace), Ok(currency)) = (
        Frequency::parse(&first.frequency),
        first
            .employment_type
            .clone()
            .map(EmploymentType::try_from)
            .transpose(),
        workplace,
        currency,
    ) else {
        return Loaded::Unsendable(format!(
            "alert {alert_id} has a frequency, an employment type, a workplace or a currency \
             this release does not know"
        ));
    };
    let filters = SearchFilters {
        q: first.q.clone(),
        location: first.location.clone(),
        remote: first.remote,
        workplace,
        country: first.country.clone(),
        company_id: first.company_id,
        salary_min: first.salary_min,
        salary_currency: currency,
        employment_type,
    };
    let search = describe(&filters, first.company_name.as_deref());
    let to = Recipient {
        user_id: first.user_id,
        email: first.email.clone(),
        name: first.name.clone(),
    };
    let mut by_id: std::collections::HashMap<i64, AlertJob> = rows
        .into_iter()
        .filter_map(|r| {
            Some(AlertJob {
                job_id: r.job_id?,
                title: r.job_title?,
                company: r.job_company?,
                location: r.job_location?,
            })
        })
        .map(|j| (j.job_id, j))
        .collect();
    let listed: Vec<AlertJob> = jobs.iter().filter_map(|id| by_id.remove(id)).collect();
    if listed.is_empty() {
        return Loaded::Missing(Absent::Gone);
    }
    Loaded::Ready(EmailData {
        to,
        about: About::AlertDigest {
            search,
            frequency,
            jobs: listed,
        },
    })
}
