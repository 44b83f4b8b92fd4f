//! [`AlertDigestStore`]: the periods written, the due alerts, the window of jobs, and the
//! writing of the digests, each alert's move and event in one transaction (migration 0021).

use super::{D, S, sql};
use crate::domain::alert::Frequency;
use crate::store::dialect::Dialect;
use crate::store::{
    AlertDigest, AlertDigestStore, AlertRow, JobRow, Step, StoreError, StoreResult,
};
use anyhow::Context;
use chrono::{DateTime, Utc};
use const_format::concatcp;

/// An alert's watermark, its own creation before its first digest.
const WATERMARK: &str = "COALESCE(watermark_created_at, created_at)";
/// The alerts of frequency `$1` due for the period ending at `$2`.
const DUE: &str = concatcp!("frequency = $1 AND NOT paused AND ", WATERMARK, " < $2");
const PERIOD_WRITTEN: &str = "SELECT COUNT(*) FROM alert_digest_periods WHERE period = $1";
const PERIOD_MARK: &str = "INSERT INTO alert_digest_periods (period, written_at) VALUES ($1, $2) \
     ON CONFLICT (period) DO NOTHING";
const OLDEST_DUE: &str = concatcp!("SELECT MIN(", WATERMARK, ") FROM alerts WHERE ", DUE);
/// Paged by id through the partial index `alerts_due (frequency, id) WHERE NOT paused`.
const DUE_PAGE: &str = concatcp!(
    "SELECT id, user_id, q, location, remote, company_id, salary_min, employment_type, \
     workplace, country, salary_currency, frequency, paused, created_at, last_sent_at, watermark_created_at, watermark_job_id \
     FROM alerts WHERE ",
    DUE,
    " AND id > $3 AND id <= $4 ORDER BY id LIMIT $5"
);
const LAST_ID: &str = "SELECT COALESCE(MAX(id), 0) FROM alerts";
/// Up to `$6` of the open jobs created in `[$1, $2)` not past their date at `$3`, after
/// (`$4`, `$5`) by (`created_at`, `id`): a page of the window, through the index of open jobs
/// by creation (`jobs_open_newest`), from where the last page ended.
const WINDOW_PAGE: &str = concatcp!(
    sql::JOB_SELECT,
    " WHERE j.status = 'open' AND j.created_at >= $1 AND j.created_at < $2 \
     AND (j.expires_at IS NULL OR j.expires_at > $3) \
     AND (j.created_at > $4 OR (j.created_at = $4 AND j.id > $5)) \
     ORDER BY j.created_at, j.id LIMIT $6"
);
/// `$1` a JSON array of ids, as one bind.
const IDS: &str = concatcp!(
    <D as Dialect>::JSON_IDS_OPEN,
    "$1",
    <D as Dialect>::JSON_IDS_CLOSE
);
/// The move of the watermarks to the period's end `$3` (`$2` the frequency), of the alerts of
/// `$1` still due, locked in id order first (PostgreSQL), so that two workers moving the same
/// alerts wait for each other instead of deadlocking. Returns the alerts moved: those whose
/// events this transaction writes.
const MOVE: &str = concatcp!(
    "UPDATE alerts SET watermark_created_at = $3, watermark_job_id = 0 WHERE id IN (\
     SELECT id FROM alerts WHERE id IN (",
    IDS,
    ") AND frequency = $2 AND NOT paused AND ",
    WATERMARK,
    " < $3 ORDER BY id",
    <D as Dialect>::FOR_UPDATE,
    ") AND frequency = $2 AND NOT paused AND ",
    WATERMARK,
    " < $3 RETURNING id"
);
const SENT: &str = concatcp!(
    "UPDATE alerts SET last_sent_at = $2 WHERE id IN (",
    IDS,
    ")"
);

/// A failed step, named.
fn step(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |e| StoreError::Other(anyhow::Error::new(e).context(what))
}

#[async_trait::async_trait]
impl AlertDigestStore for S {
    async fn alert_period_written(&self, period: &str) -> StoreResult<bool> {
        let n: i64 = sqlx::query_scalar(PERIOD_WRITTEN)
            .bind(period)
            .fetch_one(&self.pool)
            .await
            .map_err(step("reading whether a period's alert digests are written"))?;
        Ok(n > 0)
    }

    async fn mark_alert_period(&self, period: &str) -> StoreResult<()> {
        let now = Self::clock(&self.pool).await?;
        sqlx::query(PERIOD_MARK)
            .bind(period)
            .bind(now)
            .execute(&self.pool)
            .await
            .map_err(step("marking a period's alert digests written"))?;
        Ok(())
    }

    async fn oldest_due_alert(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
    ) -> StoreResult<Option<DateTime<Utc>>> {
        sqlx::query_scalar(OLDEST_DUE)
            .bind(frequency.as_str())
            .bind(end)
            .fetch_one(&self.pool)
            .await
            .map_err(step("reading the oldest watermark of the due alerts"))
    }

    async fn due_alerts(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
        after_id: i64,
        upto_id: i64,
        limit: i64,
    ) -> StoreResult<Vec<AlertRow>> {
        sqlx::query_as(DUE_PAGE)
            .bind(frequency.as_str())
            .bind(end)
            .bind(after_id)
            .bind(upto_id)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(step("reading a page of due alerts"))
    }

    async fn last_alert_id(&self) -> StoreResult<i64> {
        sqlx::query_scalar(LAST_ID)
            .fetch_one(&self.pool)
            .await
            .map_err(step("reading the highest alert id"))
    }

    async fn open_jobs_created(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        at: DateTime<Utc>,
        after: (DateTime<Utc>, i64),
        limit: i64,
    ) -> StoreResult<Vec<JobRow>> {
        sqlx::query_as(WINDOW_PAGE)
            .bind(from)
            .bind(to)
            .bind(at)
            .bind(after.0)
            .bind(after.1)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .map_err(step(
                "reading a page of the window of new jobs for the alerts",
            ))
    }

    async fn write_alert_digests(
        &self,
        frequency: Frequency,
        end: DateTime<Utc>,
        digests: &[AlertDigest],
        now: DateTime<Utc>,
    ) -> StoreResult<u64> {
        if digests.is_empty() {
            return Ok(0);
        }
        let ids: Vec<i64> = digests.iter().map(|d| d.alert_id).collect();
        let mut tx = self.begin_write().await?;
        let moved: Vec<i64> = sqlx::query_scalar(MOVE)
            .bind(serde_json::to_string(&ids).context("alert ids as JSON")?)
            .bind(frequency.as_str())
            .bind(end)
            .fetch_all(&mut *tx)
            .await
            .map_err(step("moving the due alerts' watermarks"))?;
        let moved: std::collections::HashSet<i64> = moved.into_iter().collect();
        let mut written = 0;
        let mut sent = Vec::new();
        for d in digests.iter().filter(|d| moved.contains(&d.alert_id)) {
            let Some(event) = &d.event else { continue };
            sent.push(d.alert_id);
            if Self::write_event(&mut tx, event)
                .await
                .with_context(|| format!("writing alert.digest event {}", event.event_id))?
            {
                written += 1;
            }
        }
        if !sent.is_empty() {
            sqlx::query(SENT)
                .bind(serde_json::to_string(&sent).context("alert ids as JSON")?)
                .bind(now)
                .execute(&mut *tx)
                .await
                .map_err(step("setting the alerts' last_sent_at"))?;
        }
        tx.commit().await.step("committing the alert digests")?;
        Ok(written)
    }
}
