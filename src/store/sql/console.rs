//! The operator console's reads and operator rights ([`ConsoleStore`]).

use super::{D, S, sql};
use crate::store::dialect::Dialect;
use crate::store::*;
use chrono::{DateTime, Utc};
use const_format::concatcp;

const NOW: &str = <D as Dialect>::NOW_MS;

const IS_OPERATOR: &str = "SELECT 1 FROM operators WHERE user_id = $1";
const OPERATOR_GRANT: &str = "INSERT INTO operators (user_id, granted_at) VALUES ($1, $2) \
     ON CONFLICT (user_id) DO NOTHING";
const OPERATOR_REVOKE: &str = "DELETE FROM operators WHERE user_id = $1";
const USER_ID_BY_EMAIL_KEY: &str = "SELECT id FROM users WHERE email_key = $1";

/// Every figure in one statement; each count reads one range of an index
/// (`processed_events_status_updated` for the processed events).
/// The hour's start is computed once, in a scalar subquery: PostgreSQL's clock
/// (`clock_timestamp()`) is volatile, so compared row by row it is no index condition and each
/// count read the whole table (40 ms at 100 000 events against 9 ms).
const FIGURES: &str = concatcp!(
    "SELECT (SELECT COUNT(*) FROM outbox), (SELECT MIN(created_at) FROM outbox), \
     (SELECT COUNT(*) FROM processed_events WHERE status = 'in_progress'), \
     (SELECT COUNT(*) FROM processed_events WHERE status = 'done' AND updated_at >= (SELECT ",
    NOW,
    " - 3600000)), \
     (SELECT COUNT(*) FROM processed_events WHERE status IN ('pending', 'dead') AND updated_at >= (SELECT ",
    NOW,
    " - 3600000)), (SELECT COUNT(*) FROM dead_letters)"
);

const STORY_CHANGE: &str = "SELECT h.application_id, a.job_id, j.title AS job_title, \
     a.candidate_id, h.old_status, h.new_status, h.changed_by, h.at \
     FROM application_history h LEFT JOIN applications a ON a.id = h.application_id \
     LEFT JOIN jobs j ON j.id = a.job_id WHERE h.event_id = $1";
const STORY_PROCESSED: &str = "SELECT status, attempts, last_error, locked_until, updated_at, \
     first_failed_at FROM processed_events WHERE event_id = $1";
/// The event's own dead letter (a message that could not be read keeps its own, whatever id it
/// claims, and is found in the list instead).
const STORY_DEAD_LETTER: &str = concatcp!(
    "SELECT ",
    sql::DEAD_LETTER_COLUMNS,
    " FROM dead_letters WHERE event_id = $1 AND NOT invalid"
);

/// The record of an event that is not a status change: its fact's key comes from its body.
const STORY_RECORD: &str = "SELECT body FROM events WHERE event_id = $1";
/// The deliveries of a fact (`$1`, `$2`: the event's id and its fact's key) or with a
/// `webhook-id` (`$3`), each with its latest attempt (`webhook_attempts_of_delivery`: a
/// delivery has a few dozen attempts at most).
const STORY_DELIVERIES: &str = "SELECT d.webhook_id, d.endpoint_id, e.company_id, e.url, \
     d.event_id, d.type AS type_name, d.status, d.attempts, d.next_attempt_at, d.finished_at, \
     (SELECT a.status FROM webhook_attempts a WHERE a.delivery_id = d.id \
         ORDER BY a.id DESC LIMIT 1) AS last_status, \
     (SELECT a.error FROM webhook_attempts a WHERE a.delivery_id = d.id \
         ORDER BY a.id DESC LIMIT 1) AS last_error \
     FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id \
     WHERE d.event_id = $1 OR d.event_id = $2 OR d.webhook_id = $3 ORDER BY d.endpoint_id";
/// Endpoints failing or disabled, the longest failing first (`$1` how many), each with its
/// pending deliveries (read through `webhook_deliveries_due`, which holds the pending rows
/// alone) and its latest attempt (`webhook_attempts_of_endpoint`).
const FAILING_WEBHOOKS: &str = "SELECT w.id, w.company_id, c.name AS company_name, w.url, \
     w.paused, w.disabled_reason, w.failing_since, w.last_success_at, \
     (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.endpoint_id = w.id \
         AND d.status = 'pending') AS pending, \
     (SELECT a.at FROM webhook_attempts a WHERE a.endpoint_id = w.id \
         ORDER BY a.id DESC LIMIT 1) AS last_attempt_at, \
     (SELECT a.status FROM webhook_attempts a WHERE a.endpoint_id = w.id \
         ORDER BY a.id DESC LIMIT 1) AS last_status, \
     (SELECT a.error FROM webhook_attempts a WHERE a.endpoint_id = w.id \
         ORDER BY a.id DESC LIMIT 1) AS last_error \
     FROM webhook_endpoints w JOIN companies c ON c.id = w.company_id \
     WHERE w.failing_since IS NOT NULL OR w.disabled_reason IS NOT NULL \
     ORDER BY w.failing_since IS NULL, w.failing_since, w.id LIMIT $1";

const STORY_REDRIVE: &str = "SELECT redrives, attempts_before, last_redriven_at \
     FROM event_redrives WHERE event_id = $1";

/// A page, newest first, with the total beside each row: one statement.

#[async_trait::async_trait]
impl ConsoleStore for S {
    async fn is_operator(&self, user_id: i64) -> StoreResult<bool> {
        Ok(sqlx::query(IS_OPERATOR)
            .bind(user_id)
            .fetch_optional(&self.pool)
            .await
            .with_step(|| format!("reading whether user {user_id} is an operator"))?
            .is_some())
    }

    async fn set_operator(&self, email_key: &str, grant: bool) -> StoreResult<OperatorChange> {
        let mut tx = self.begin_write().await?;
        let user_id: i64 = sqlx::query_scalar(USER_ID_BY_EMAIL_KEY)
            .bind(email_key)
            .fetch_optional(&mut *tx)
            .await
            .step("reading a user by email")?
            .ok_or(StoreError::NotFound)?;
        let done = if grant {
            let now = Self::clock(&mut *tx).await?;
            sqlx::query(OPERATOR_GRANT)
                .bind(user_id)
                .bind(now)
                .execute(&mut *tx)
                .await
                .step("granting the operator rights")?
        } else {
            sqlx::query(OPERATOR_REVOKE)
                .bind(user_id)
                .execute(&mut *tx)
                .await
                .step("revoking the operator rights")?
        };
        tx.commit().await.step("committing the operator rights")?;
        Ok(OperatorChange {
            user_id,
            changed: done.rows_affected() > 0,
        })
    }

    async fn console_figures(&self) -> StoreResult<ConsoleFigures> {
        let (outbox_pending, oldest, in_flight, sent_last_hour, failed_last_hour, dead_letters): (
            i64,
            Option<DateTime<Utc>>,
            i64,
            i64,
            i64,
            i64,
        ) = sqlx::query_as(FIGURES)
            .fetch_one(&self.pool)
            .await
            .step("reading the console's figures")?;
        // The oldest row's age by the clock that stamped it.
        let now = Self::clock(&self.pool).await?;
        Ok(ConsoleFigures {
            outbox_pending,
            oldest_pending_age_ms: oldest.map(|t| (now - t).num_milliseconds().max(0)),
            in_flight,
            sent_last_hour,
            failed_last_hour,
            dead_letters,
        })
    }

    async fn event_story(&self, event_id: &str) -> StoreResult<EventStory> {
        let mut tx = self.begin_read().await?;
        let change = sqlx::query_as::<_, EventChange>(STORY_CHANGE)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("reading the status change of event {event_id}"))?;
        let processed = sqlx::query_as::<_, ProcessedRecord>(STORY_PROCESSED)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("reading the processed record of event {event_id}"))?;
        let dead_letter = sqlx::query_as::<_, DeadLetterRow>(STORY_DEAD_LETTER)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("reading the dead letter of event {event_id}"))?;
        let redrive = sqlx::query_as::<_, RedriveTrace>(STORY_REDRIVE)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("reading the redrives of event {event_id}"))?;
        let record: Option<String> = sqlx::query_scalar(STORY_RECORD)
            .bind(event_id)
            .fetch_optional(&mut *tx)
            .await
            .with_step(|| format!("reading the record of event {event_id}"))?;
        // A record that does not parse has no fact: its own id is looked for, as for any.
        let fact = record
            .and_then(|body| crate::domain::event::parse_event(&body).ok())
            .and_then(|event| crate::domain::webhook::fact(&event))
            .map(|fact| fact.key)
            .unwrap_or_else(|| event_id.to_string());
        let webhooks = sqlx::query_as::<_, StoryDelivery>(STORY_DELIVERIES)
            .bind(event_id)
            .bind(&fact)
            .bind(event_id)
            .fetch_all(&mut *tx)
            .await
            .with_step(|| format!("reading the webhook deliveries of event {event_id}"))?;
        tx.commit()
            .await
            .with_step(|| format!("committing the read of event {event_id}'s story"))?;
        Ok(EventStory {
            change,
            processed,
            dead_letter,
            redrive,
            webhooks,
        })
    }

    async fn failing_webhooks(&self, limit: i64) -> StoreResult<Vec<FailingEndpoint>> {
        sqlx::query_as::<_, FailingEndpoint>(FAILING_WEBHOOKS)
            .bind(limit)
            .fetch_all(&self.pool)
            .await
            .step("reading the failing webhook endpoints")
    }
}
