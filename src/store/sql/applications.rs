//! Applications, their status changes (each with its event in the outbox) and history.

use super::store_impl::push_page;
use super::{D, Db, S, Tx, sql};
use crate::domain::event::{Event, EventKind};
use crate::domain::{Actor, ApplicationStatus, Conflict, JobStatus};
use crate::store::dialect::Dialect;
use crate::store::dialect::constraint;
use crate::store::*;
use sqlx::QueryBuilder;

impl S {
    pub(super) async fn apply(
        &self,
        job_id: i64,
        candidate_id: i64,
        input: NewApplication,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<ApplicationRow> {
        if D::NAME == "postgres" {
            return self
                .apply_in_two_statements(job_id, candidate_id, input, idem)
                .await;
        }
        let mut tx = self.begin_write().await?;
        let now = Self::job_takes_applications(&mut tx, job_id).await?;
        if let Some(resume_id) = input.resume_id {
            Self::attach_resume(&mut tx, resume_id, candidate_id, Some(now)).await?;
        }
        // The UNIQUE (job_id, candidate_id) constraint decides races, not a prior check.
        let id: i64 = sqlx::query_scalar(sql::APPLICATION_INSERT)
            .bind(job_id)
            .bind(candidate_id)
            .bind(&input.cover_letter)
            .bind(now)
            .bind(input.resume_id)
            .bind(&input.answers)
            .fetch_one(&mut *tx)
            .await
            .map_err(|e| constraint(e, Conflict::AlreadyApplied))
            .with_step(|| format!("inserting the application to job {job_id}"))?;
        // The candidate's confirmation (docs/guarantee.md); its history row carries its id.
        let event = Event::new(EventKind::Submitted { application_id: id }, now);
        sqlx::query(sql::HISTORY_INSERT)
            .bind(id)
            .bind(None::<&str>)
            .bind(ApplicationStatus::Submitted.as_str())
            .bind(candidate_id)
            .bind(&event.event_id)
            .bind(now)
            .execute(&mut *tx)
            .await
            .step("inserting the application's first history row")?;
        Self::write_event(&mut tx, &event).await?;
        let row = Self::application_in(&mut *tx, id)
            .await
            .step("reading the new application")?;
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    /// Marks résumé `resume_id` used, if it is `candidate_id`'s, and gives its name, kind and
    /// size; `Invalid` naming `resume_id` if it is not. `now`: SQLite's time of the write
    /// (PostgreSQL reads its own clock).
    async fn attach_resume(
        tx: &mut Tx,
        resume_id: i64,
        candidate_id: i64,
        now: Option<chrono::DateTime<chrono::Utc>>,
    ) -> StoreResult<(String, String, i64)> {
        let q = match now {
            Some(now) => sqlx::query_as(sql::RESUME_ATTACH)
                .bind(resume_id)
                .bind(candidate_id)
                .bind(now),
            None => sqlx::query_as(sql::RESUME_ATTACH_PG)
                .bind(resume_id)
                .bind(candidate_id),
        };
        q.fetch_optional(&mut **tx)
            .await
            .with_step(|| format!("attaching résumé {resume_id}"))?
            .ok_or(StoreError::Invalid {
                field: "resume_id",
                message: "is not one of your résumés",
            })
    }

    /// The database's clock, if job `job_id` takes applications now (locked `FOR SHARE` for the
    /// rest of the transaction); `NotFound`, `JobExpired` or `JobClosed` if not. The database's
    /// clock stamps the application and judges the job's expiry: an API host whose clock is
    /// behind must not stamp it into an hour whose digest is written. Past its `expires_at` a job
    /// takes no application, whether or not the upkeep has marked it expired yet.
    async fn job_takes_applications(
        tx: &mut Tx,
        job_id: i64,
    ) -> StoreResult<chrono::DateTime<chrono::Utc>> {
        let (status, expires_at): (String, Option<chrono::DateTime<chrono::Utc>>) =
            sqlx::query_as(sql::JOB_STATUS_SHARED)
                .bind(job_id)
                .fetch_optional(&mut **tx)
                .await
                .with_step(|| format!("reading the status of job {job_id}"))?
                .ok_or(StoreError::NotFound)?;
        let status =
            JobStatus::try_from(status).map_err(|e| StoreError::Other(anyhow::Error::new(e)))?;
        let now = Self::clock(&mut **tx).await?;
        match crate::domain::job::status_at(status, expires_at, now) {
            JobStatus::Open => Ok(now),
            JobStatus::Expired => Err(StoreError::Conflict(Conflict::JobExpired)),
            _ => Err(StoreError::Conflict(Conflict::JobClosed)),
        }
    }

    /// PostgreSQL's apply: the same writes as SQLite's, in one statement when it can (see
    /// [`S::apply_in_one_statement`]), else in two between BEGIN and COMMIT instead of nine
    /// (plus one per webhook delivery, and the idempotent answer's).
    async fn apply_in_two_statements(
        &self,
        job_id: i64,
        candidate_id: i64,
        input: NewApplication,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<ApplicationRow> {
        if idem.is_none()
            && let Some(row) = self
                .apply_in_one_statement(job_id, candidate_id, &input, None)
                .await?
        {
            return Ok(row);
        }
        let mut tx = self.begin_write().await?;
        // A third statement only with a résumé.
        let resume = match input.resume_id {
            Some(id) => Some(Self::attach_resume(&mut tx, id, candidate_id, None).await?),
            None => None,
        };
        // The UNIQUE (job_id, candidate_id) constraint decides races, not a prior check.
        let applied: Option<Submitted> = sqlx::query_as(sql::APPLY_PG)
            .bind(job_id)
            .bind(candidate_id)
            .bind(&input.cover_letter)
            .bind(input.resume_id)
            .bind(&input.answers)
            .fetch_optional(&mut *tx)
            .await
            .map_err(|e| constraint(e, Conflict::AlreadyApplied))
            .with_step(|| format!("inserting the application to job {job_id}"))?;
        let Some(mut applied) = applied else {
            // Nothing inserted: the job takes no application; say why, as the other path does.
            Self::job_takes_applications(&mut tx, job_id).await?;
            return Err(StoreError::Conflict(Conflict::JobClosed));
        };
        let (id, now) = (applied.id, applied.created_at);
        let event = Event::new(EventKind::Submitted { application_id: id }, now);
        let body = event.to_json();
        sqlx::query(sql::APPLIED_WRITES_PG)
            .bind(id)
            .bind(candidate_id)
            .bind(&event.event_id)
            .bind(now)
            .bind(event.type_name())
            .bind(&body)
            .execute(&mut *tx)
            .await
            .step("writing the application's history row, event and outbox row")?;
        let endpoints: Vec<(i64, String)> = applied
            .endpoints
            .iter()
            .flat_map(|list| list.split('|'))
            .filter_map(|pair| {
                let (id, events) = pair.split_once(' ')?;
                Some((id.parse().ok()?, events.to_string()))
            })
            .collect();
        if let Some(fact) = crate::domain::webhook::fact(&event) {
            let owner = crate::domain::webhook::Owner {
                company_id: applied.company_id,
                company: &applied.company_name,
                job: Some((job_id, &applied.job_title)),
            };
            Self::write_deliveries(&mut tx, &event, &fact, owner, &endpoints, Some(now)).await?;
        }
        if let Some((filename, content_type, size)) = resume {
            applied.resume_filename = Some(filename);
            applied.resume_content_type = Some(content_type);
            applied.resume_size = Some(size);
        }
        let row = applied.into_row(job_id, candidate_id, input);
        Self::commit_with(tx, idem, &row).await?;
        Ok(row)
    }

    /// An apply by an account and to a job the caller has not read (PostgreSQL, without
    /// answers): the one statement, which also declines a claim that is not a candidate's own
    /// and a job that asks questions or a résumé not given; `None`,
    /// having written nothing, whenever it declines, and always on SQLite.
    pub(super) async fn apply_unread(
        &self,
        job_id: i64,
        claim: TokenClaim,
        input: &NewApplication,
    ) -> StoreResult<Option<ApplicationRow>> {
        if D::NAME != "postgres" || input.answers.is_some() {
            return Ok(None);
        }
        self.apply_in_one_statement(job_id, claim.candidate_id, input, Some(claim.generation))
            .await
    }

    /// PostgreSQL's apply without an `Idempotency-Key` ([`sql::APPLY_ONE_PG`]): one round
    /// trip, committed on its own, shared with the applies that arrive with it
    /// ([`sql::APPLY_BATCH_PG`], `store::combine`); `None`, having written nothing, when the
    /// job takes no application or is locked by a writer (never waited for here), its company
    /// has an enabled webhook endpoint or the résumé is not the candidate's, and, when the caller has read neither the account nor the job
    /// (`unread`, the token's generation), when the account is not a candidate's of that
    /// generation or the job asks questions or a résumé that is not given; in a batch, also
    /// when the candidate has already applied (the caller's next path answers 409).
    async fn apply_in_one_statement(
        &self,
        job_id: i64,
        candidate_id: i64,
        input: &NewApplication,
        unread: Option<i64>,
    ) -> StoreResult<Option<ApplicationRow>> {
        let Some(combiner) = self.apply_combiner() else {
            return Ok(None);
        };
        let apply = OneApply {
            job_id,
            candidate_id,
            cover_letter: input.cover_letter.clone(),
            answers: input.answers.clone(),
            // The statement writes the event's body; only its id comes from here.
            event_id: uuid::Uuid::new_v4().to_string(),
            resume_id: input.resume_id,
            unread,
        };
        let pool = self.pool.clone();
        let outcome = combiner
            .submit(apply.clone(), move |batch| {
                Self::apply_together(pool.clone(), batch)
            })
            .await;
        let applied = match outcome {
            Some(Batched::Done(applied)) => (*applied)?,
            // The batch failed as a whole (or its runner ended): this apply goes alone, and
            // answers as it would have without the others.
            Some(Batched::Alone) | None => Self::apply_alone(&self.pool, &apply).await?,
        };
        Ok(applied.map(|applied| applied.into_row(job_id, candidate_id, input.clone())))
    }

    /// Writes the applies that arrived together: one alone as [`sql::APPLY_ONE_PG`], more as
    /// [`sql::APPLY_BATCH_PG`]; if that fails, each goes alone.
    async fn apply_together(pool: sqlx::Pool<Db>, batch: Vec<OneApply>) -> Vec<Batched> {
        if let [apply] = batch.as_slice() {
            return vec![Batched::Done(Box::new(
                Self::apply_alone(&pool, apply).await,
            ))];
        }
        let written: Result<Vec<SubmittedAt>, sqlx::Error> = match serde_json::to_string(&batch) {
            Ok(json) => {
                sqlx::query_as(sql::APPLY_BATCH_PG)
                    .bind(json)
                    .fetch_all(&pool)
                    .await
            }
            Err(e) => Err(sqlx::Error::Encode(e.into())),
        };
        match written {
            Ok(rows) => {
                let mut answers: Vec<Option<Submitted>> =
                    std::iter::repeat_with(|| None).take(batch.len()).collect();
                for row in rows {
                    if let Some(slot) = usize::try_from(row.n - 1)
                        .ok()
                        .and_then(|i| answers.get_mut(i))
                    {
                        *slot = Some(row.submitted);
                    }
                }
                answers
                    .into_iter()
                    .map(|a| Batched::Done(Box::new(Ok(a))))
                    .collect()
            }
            // The database refused the statement, which wrote nothing: each apply goes alone,
            // and one that the database refuses alone gets its own answer.
            Err(e @ (sqlx::Error::Database(_) | sqlx::Error::Encode(_))) => {
                tracing::warn!(
                    error = %e,
                    "a batch of {} applies failed as a whole; each is written alone",
                    batch.len()
                );
                batch.iter().map(|_| Batched::Alone).collect()
            }
            // No connection, or one lost with the statement (which may have committed): a
            // retry alone could answer an apply written here with 409, so each fails as one
            // statement would.
            Err(e) => {
                let message = format!("applying in a batch of {}: {e}", batch.len());
                batch
                    .iter()
                    .map(|_| {
                        Batched::Done(Box::new(Err(StoreError::Other(anyhow::anyhow!(
                            message.clone()
                        )))))
                    })
                    .collect()
            }
        }
    }

    /// One apply in one statement ([`sql::APPLY_ONE_PG`]).
    async fn apply_alone(
        pool: &sqlx::Pool<Db>,
        apply: &OneApply,
    ) -> StoreResult<Option<Submitted>> {
        let job_id = apply.job_id;
        sqlx::query_as(sql::APPLY_ONE_PG)
            .bind(job_id)
            .bind(apply.candidate_id)
            .bind(&apply.cover_letter)
            .bind(&apply.answers)
            .bind(&apply.event_id)
            .bind(apply.resume_id)
            .bind(apply.unread)
            .fetch_optional(pool)
            .await
            .map_err(|e| constraint(e, Conflict::AlreadyApplied))
            .with_step(|| format!("applying to job {job_id} in one statement"))
    }

    pub(super) async fn application(&self, id: i64) -> StoreResult<ApplicationRow> {
        Self::application_in(&self.pool, id).await
    }

    pub(super) async fn list_applications(
        &self,
        viewer: ApplicationViewer,
        job_id: Option<i64>,
        status: Option<ApplicationStatus>,
        page: Page,
    ) -> StoreResult<(Vec<ApplicationRow>, i64)> {
        let mut tx = self.begin_read().await?;
        let mut count = QueryBuilder::<Db>::new(
            "SELECT COUNT(*) FROM applications a JOIN jobs j ON j.id = a.job_id",
        );
        push_application_filters(&mut count, viewer, job_id, status);
        let total: i64 = count
            .build_query_scalar()
            .fetch_one(&mut *tx)
            .await
            .step("counting the applications")?;
        let mut list = QueryBuilder::<Db>::new(sql::APPLICATION_SELECT);
        push_application_filters(&mut list, viewer, job_id, status);
        push_page(&mut list, " ORDER BY a.created_at DESC, a.id DESC", page);
        let rows = list
            .build_query_as::<ApplicationRow>()
            .fetch_all(&mut *tx)
            .await
            .step("reading a page of applications")?;
        tx.commit()
            .await
            .step("committing the read of the applications")?;
        Ok((rows, total))
    }

    pub(super) async fn change_status(
        &self,
        id: i64,
        to: ApplicationStatus,
        actor: Actor,
        changed_by: i64,
        idem: Idem<'_, ApplicationRow>,
    ) -> StoreResult<StatusChange> {
        let mut tx = self.begin_write().await?;
        let current: String = Self::locked(&mut tx, sql::APPLICATION_STATUS_LOCKED, id)
            .await
            .with_step(|| format!("locking application {id}"))?;
        let from = ApplicationStatus::parse(&current)
            .ok_or_else(|| anyhow::anyhow!("unknown stored status {current:?}"))?;
        let moves = from
            .check_move(to, actor)
            .map_err(|e| StoreError::Conflict(Conflict::InvalidTransition(e)))?;
        let mut event_id = None;
        if moves {
            let now = Self::clock(&mut *tx).await?;
            let event = Event::new(
                EventKind::StatusChanged {
                    application_id: id,
                    old_status: from,
                    new_status: to,
                },
                now,
            );
            sqlx::query(sql::APPLICATION_SET_STATUS)
                .bind(to.as_str())
                .bind(now)
                .bind(id)
                .execute(&mut *tx)
                .await
                .with_step(|| format!("setting the status of application {id}"))?;
            sqlx::query(sql::HISTORY_INSERT)
                .bind(id)
                .bind(from.as_str())
                .bind(to.as_str())
                .bind(changed_by)
                .bind(&event.event_id)
                .bind(now)
                .execute(&mut *tx)
                .await
                .step("inserting the status change's history row")?;
            // The transactional outbox: the event commits with the change or not at all.
            Self::write_event(&mut tx, &event).await?;
            event_id = Some(event.event_id);
        }
        let application = Self::application_in(&mut *tx, id)
            .await
            .with_step(|| format!("reading application {id} after its status change"))?;
        Self::commit_with(tx, idem, &application).await?;
        Ok(StatusChange {
            application,
            event_id,
        })
    }

    pub(super) async fn delete_application(&self, id: i64, idem: Idem<'_, ()>) -> StoreResult<()> {
        self.delete_one(sql::APPLICATION_DELETE, id, idem).await
    }

    pub(super) async fn history(&self, application_id: i64) -> StoreResult<Vec<HistoryRow>> {
        sqlx::query_as::<_, HistoryRow>(sql::HISTORY)
            .bind(application_id)
            .fetch_all(&self.pool)
            .await
            .with_step(|| format!("reading the history of application {application_id}"))
    }
}

fn push_application_filters(
    qb: &mut QueryBuilder<'_, Db>,
    viewer: ApplicationViewer,
    job_id: Option<i64>,
    status: Option<ApplicationStatus>,
) {
    match viewer {
        ApplicationViewer::Candidate(id) => {
            qb.push(" WHERE a.candidate_id = ").push_bind(id);
        }
        ApplicationViewer::Employer(id) => {
            qb.push(
                " WHERE j.company_id IN (SELECT company_id FROM company_members WHERE user_id = ",
            )
            .push_bind(id)
            .push(")");
        }
    }
    if let Some(job) = job_id {
        qb.push(" AND a.job_id = ").push_bind(job);
    }
    if let Some(st) = status {
        qb.push(" AND a.status = ").push_bind(st.as_str());
    }
}

/// An apply for [`S::apply_in_one_statement`], as the batch carries it.
#[derive(Clone, serde::Serialize)]
pub(crate) struct OneApply {
    job_id: i64,
    candidate_id: i64,
    cover_letter: Option<String>,
    answers: Option<String>,
    event_id: String,
    resume_id: Option<i64>,
    /// `None` when the caller has read the account and the job, else the token's generation.
    #[serde(rename = "generation")]
    unread: Option<i64>,
}

/// What a batch answers one of its applies.
pub(crate) enum Batched {
    /// Written (`Some`) or declined (`None`), or the error of the apply written alone.
    Done(Box<StoreResult<Option<Submitted>>>),
    /// The batch failed as a whole: the apply is to be written alone.
    Alone,
}

/// The applies combined into batches (PostgreSQL's; SQLite writes each in its transaction).
pub(crate) type ApplyCombiner = crate::store::combine::Combiner<OneApply, Batched>;

/// A row of [`sql::APPLY_BATCH_PG`]: the apply's place in the batch, and what it wrote.
#[derive(sqlx::FromRow)]
struct SubmittedAt {
    n: i64,
    #[sqlx(flatten)]
    submitted: Submitted,
}

/// What PostgreSQL's apply statements ([`sql::APPLY_PG`], [`sql::APPLY_ONE_PG`]) read back for
/// the answer: the application's id and time, the job's title and company, the candidate; the
/// first also the company's enabled endpoints, the second the attached résumé's details.
#[derive(sqlx::FromRow)]
pub(crate) struct Submitted {
    id: i64,
    created_at: chrono::DateTime<chrono::Utc>,
    job_title: String,
    company_id: i64,
    company_name: String,
    candidate_name: String,
    candidate_email: String,
    #[sqlx(default)]
    endpoints: Option<String>,
    #[sqlx(default)]
    resume_filename: Option<String>,
    #[sqlx(default)]
    resume_content_type: Option<String>,
    #[sqlx(default)]
    resume_size: Option<i64>,
}

impl Submitted {
    /// The new application as the answer shows it.
    fn into_row(self, job_id: i64, candidate_id: i64, input: NewApplication) -> ApplicationRow {
        ApplicationRow {
            id: self.id,
            job_id,
            job_title: self.job_title,
            company_id: self.company_id,
            company_name: self.company_name,
            candidate_id,
            candidate_name: self.candidate_name,
            candidate_email: self.candidate_email,
            status: ApplicationStatus::Submitted,
            cover_letter: input.cover_letter,
            resume_id: input.resume_id,
            resume_filename: self.resume_filename,
            resume_content_type: self.resume_content_type,
            resume_size: self.resume_size,
            answers: input.answers,
            created_at: self.created_at,
            updated_at: self.created_at,
        }
    }
}
