//! The `EventStore` implementation shared by both backends (see `sql.rs` for why a macro).

/// Implements `EventStore` for `$store` (with `pool`, `begin_write`), SQL dialect `$dialect`.
macro_rules! impl_event_store {
    ($store:ty, $db:ty, $dialect:ty) => {
        mod event_store_impl {
            use super::*;
            use $crate::store::events::*;
            use $crate::domain::mail::{EmailData, SendError};
            use $crate::store::sql::Dialect;
            use $crate::store::{StoreError, StoreResult};

            const NOW: &str = <$dialect>::NOW_MS;

            impl $store {
                async fn dead_letter_in(
                    tx: &mut sqlx::Transaction<'static, $db>,
                    d: &NewDeadLetter,
                ) -> StoreResult<()> {
                    // A later copy of a dead-lettered event adds no second dead letter.
                    sqlx::query(&format!(
                        "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, last_failed_at) \
                         SELECT $1, $2, $3, $4, COALESCE($5, {NOW}), {NOW} WHERE NOT $6 OR CAST($1 AS TEXT) IS NULL \
                         OR NOT EXISTS (SELECT 1 FROM dead_letters WHERE event_id = $1)"
                    ))
                    .bind(&d.event_id)
                    .bind(&d.reason)
                    .bind(d.attempts)
                    .bind(&d.body)
                    .bind(d.first_failed_at)
                    .bind(d.unless_present)
                    .execute(&mut **tx)
                    .await?;
                    Ok(())
                }

                /// Counts a failed send, creating the record if the claim was rolled back.
                async fn record_failure<'c, E>(
                    e: E,
                    event_id: &str,
                    lease_id: Option<&str>,
                    error: &str,
                    max_attempts: i64,
                    permanent: bool,
                ) -> StoreResult<Option<FailedClaim>>
                where
                    E: sqlx::Executor<'c, Database = $db>,
                {
                    let lease_check = if lease_id.is_some() { " AND lease_id = $5" } else { "" };
                    let sql = format!(
                        "UPDATE processed_events SET attempts = attempts + 1, \
                         status = CASE WHEN $3 OR attempts + 1 >= $4 THEN 'dead' ELSE 'pending' END, \
                         lease_id = NULL, locked_until = NULL, last_error = $2, \
                         first_failed_at = COALESCE(first_failed_at, {NOW}), updated_at = {NOW} \
                         WHERE event_id = $1 AND status = 'in_progress'{lease_check} \
                         RETURNING attempts, status, first_failed_at"
                    );
                    let query = sqlx::query_as::<_, (i64, String, i64)>(&sql)
                    .bind(event_id)
                    .bind(error)
                    .bind(permanent)
                    .bind(max_attempts);
                    let query = match lease_id {
                        Some(lease) => query.bind(lease),
                        None => query,
                    };
                    let row = query.fetch_optional(e).await?;
                    Ok(row.map(|(attempts, status, first)| FailedClaim {
                        attempts,
                        dead: status == "dead",
                        first_failed_at: first,
                    }))
                }
            }

            #[async_trait::async_trait]
            impl EventStore for $store {
                async fn queue_receive(&self, max: i64, visibility_ms: i64) -> StoreResult<Vec<QueuedMessage>> {
                    let receipt = uuid::Uuid::new_v4().to_string();
                    let mut tx = self.begin_write().await?;
                    let rows = sqlx::query_as::<_, (i64, String, String, i64, Option<String>)>(&format!(
                        "UPDATE outbox SET visible_at = {NOW} + $1, receive_count = receive_count + 1, receipt = $2 \
                         WHERE id IN (SELECT id FROM outbox WHERE visible_at <= {NOW} ORDER BY visible_at, id LIMIT $3{}) \
                         RETURNING id, receipt, body, receive_count, event_id",
                        <$dialect>::SKIP_LOCKED
                    ))
                    .bind(visibility_ms)
                    .bind(&receipt)
                    .bind(max)
                    .fetch_all(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    let mut messages: Vec<QueuedMessage> = rows
                        .into_iter()
                        .map(|(id, receipt, body, receive_count, event_id)| QueuedMessage {
                            id,
                            receipt,
                            body,
                            receive_count,
                            event_id,
                        })
                        .collect();
                    messages.sort_by_key(|m| m.id);
                    Ok(messages)
                }

                async fn queue_ack(&self, id: i64, receipt: &str) -> StoreResult<bool> {
                    let done = sqlx::query("DELETE FROM outbox WHERE id = $1 AND receipt = $2")
                        .bind(id)
                        .bind(receipt)
                        .execute(&self.pool)
                        .await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn queue_delay(&self, id: i64, receipt: &str, delay_ms: i64) -> StoreResult<bool> {
                    let done = sqlx::query(&format!(
                        "UPDATE outbox SET visible_at = {NOW} + $3 WHERE id = $1 AND receipt = $2"
                    ))
                    .bind(id)
                    .bind(receipt)
                    .bind(delay_ms.max(0))
                    .execute(&self.pool)
                    .await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn queue_dead_letter(&self, id: i64, receipt: &str, dead: NewDeadLetter) -> StoreResult<()> {
                    let mut tx = self.begin_write().await?;
                    Self::dead_letter_in(&mut tx, &dead).await?;
                    sqlx::query("DELETE FROM outbox WHERE id = $1 AND receipt = $2")
                        .bind(id)
                        .bind(receipt)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                    Ok(())
                }

                async fn queue_enqueue(&self, event_id: Option<&str>, application_id: Option<i64>, body: &str) -> StoreResult<i64> {
                    Ok(sqlx::query_scalar(&format!(
                        "INSERT INTO outbox (event_id, application_id, body, created_at, visible_at) \
                         VALUES ($1, $2, $3, $4, {NOW}) RETURNING id"
                    ))
                    .bind(event_id)
                    .bind(application_id)
                    .bind(body)
                    .bind($crate::timefmt::now())
                    .fetch_one(&self.pool)
                    .await?)
                }

                async fn queue_stats(&self) -> StoreResult<QueueStats> {
                    let (pending, oldest): (i64, Option<chrono::DateTime<chrono::Utc>>) =
                        sqlx::query_as("SELECT COUNT(*), MIN(created_at) FROM outbox")
                            .fetch_one(&self.pool)
                            .await?;
                    let dead_letters: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM dead_letters")
                        .fetch_one(&self.pool)
                        .await?;
                    Ok(QueueStats {
                        pending,
                        oldest_age_ms: oldest.map(|t| (chrono::Utc::now() - t).num_milliseconds().max(0)),
                        dead_letters,
                    })
                }

                async fn claim_event(&self, event_id: &str, lease_ms: i64) -> StoreResult<Claim> {
                    let lease_id = uuid::Uuid::new_v4().to_string();
                    let mut tx = self.begin_write().await?;
                    // The UNIQUE event_id decides between racing workers.
                    let inserted = sqlx::query(&format!(
                        "INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, updated_at) \
                         VALUES ($1, 'in_progress', $2, {NOW} + $3, 0, {NOW}) ON CONFLICT (event_id) DO NOTHING"
                    ))
                    .bind(event_id)
                    .bind(&lease_id)
                    .bind(lease_ms)
                    .execute(&mut *tx)
                    .await?;
                    if inserted.rows_affected() == 1 {
                        tx.commit().await?;
                        return Ok(Claim::Claimed { lease_id, reclaimed: false, attempts: 0 });
                    }
                    let (status, locked_until, attempts, now): (String, Option<i64>, i64, i64) = sqlx::query_as(&format!(
                        "SELECT status, locked_until, attempts, {NOW} FROM processed_events WHERE event_id = $1{}",
                        <$dialect>::FOR_UPDATE
                    ))
                    .bind(event_id)
                    .fetch_one(&mut *tx)
                    .await?;
                    let claim = match status.as_str() {
                        "in_progress" if locked_until.unwrap_or(0) > now => {
                            return Ok(Claim::Deferred { remaining_ms: locked_until.unwrap_or(now) - now });
                        }
                        "in_progress" | "pending" => Claim::Claimed {
                            lease_id: lease_id.clone(),
                            reclaimed: status == "in_progress",
                            attempts,
                        },
                        "dead" => return Ok(Claim::Dead),
                        _ => return Ok(Claim::Duplicate),
                    };
                    sqlx::query(&format!(
                        "UPDATE processed_events SET status = 'in_progress', lease_id = $2, locked_until = {NOW} + $3, \
                         updated_at = {NOW} WHERE event_id = $1"
                    ))
                    .bind(event_id)
                    .bind(&lease_id)
                    .bind(lease_ms)
                    .execute(&mut *tx)
                    .await?;
                    tx.commit().await?;
                    Ok(claim)
                }

                async fn claim_new_events(&self, event_ids: &[String], lease_ms: i64) -> StoreResult<(String, Vec<String>)> {
                    let lease_id = uuid::Uuid::new_v4().to_string();
                    if event_ids.is_empty() {
                        return Ok((lease_id, Vec::new()));
                    }
                    let values = (0..event_ids.len())
                        .map(|i| format!("(${}, 'in_progress', $1, {NOW} + $2, 0, {NOW})", i + 3))
                        .collect::<Vec<_>>()
                        .join(", ");
                    // The UNIQUE event_id decides between racing workers, as for one claim.
                    let sql = format!(
                        "INSERT INTO processed_events (event_id, status, lease_id, locked_until, attempts, updated_at) \
                         VALUES {values} ON CONFLICT (event_id) DO NOTHING RETURNING event_id"
                    );
                    let mut query = sqlx::query_scalar::<_, String>(&sql).bind(&lease_id).bind(lease_ms);
                    for id in event_ids {
                        query = query.bind(id);
                    }
                    let claimed = query.fetch_all(&self.pool).await?;
                    Ok((lease_id, claimed))
                }

                async fn finish_claims(&self, event_ids: &[String], lease_id: &str, finished: Finished) -> StoreResult<Vec<String>> {
                    if event_ids.is_empty() {
                        return Ok(Vec::new());
                    }
                    let list = placeholders(3, event_ids.len());
                    let sql = format!(
                        "UPDATE processed_events SET status = $2, lease_id = NULL, locked_until = NULL, updated_at = {NOW} \
                         WHERE lease_id = $1 AND status = 'in_progress' AND event_id IN ({list}) RETURNING event_id"
                    );
                    let mut query = sqlx::query_scalar::<_, String>(&sql).bind(lease_id).bind(finished.as_str());
                    for id in event_ids {
                        query = query.bind(id);
                    }
                    Ok(query.fetch_all(&self.pool).await?)
                }

                async fn email_data_many(&self, events: &[(i64, String)]) -> StoreResult<Vec<(String, EmailData)>> {
                    if events.is_empty() {
                        return Ok(Vec::new());
                    }
                    let list = placeholders(1, events.len());
                    let sql = format!(
                        "SELECT h.event_id, a.id AS application_id, u.id AS candidate_id, u.email, u.name, \
                         j.title AS job_title, c.name AS company FROM application_history h \
                         JOIN applications a ON a.id = h.application_id JOIN users u ON u.id = a.candidate_id \
                         JOIN jobs j ON j.id = a.job_id JOIN companies c ON c.id = j.company_id \
                         WHERE h.event_id IN ({list})"
                    );
                    let mut query = sqlx::query_as::<_, (String, i64, i64, String, String, String, String)>(&sql);
                    for (_, id) in events {
                        query = query.bind(id);
                    }
                    let rows = query.fetch_all(&self.pool).await?;
                    let wanted: std::collections::HashMap<&str, i64> =
                        events.iter().map(|(app, id)| (id.as_str(), *app)).collect();
                    Ok(rows
                        .into_iter()
                        .filter(|(event_id, app, ..)| wanted.get(event_id.as_str()) == Some(app))
                        .map(|(event_id, _, candidate_id, email, name, job_title, company)| {
                            (event_id, EmailData { candidate_id, email, name, job_title, company })
                        })
                        .collect())
                }

                async fn queue_ack_many(&self, receipt: &str, ids: &[i64]) -> StoreResult<u64> {
                    if ids.is_empty() {
                        return Ok(0);
                    }
                    let list = placeholders(2, ids.len());
                    let sql = format!("DELETE FROM outbox WHERE receipt = $1 AND id IN ({list})");
                    let mut query = sqlx::query(&sql).bind(receipt);
                    for id in ids {
                        query = query.bind(id);
                    }
                    Ok(query.execute(&self.pool).await?.rows_affected())
                }

                async fn extend_claim(&self, event_id: &str, lease_id: &str, lease_ms: i64) -> StoreResult<bool> {
                    let done = sqlx::query(&format!(
                        "UPDATE processed_events SET locked_until = {NOW} + $3 \
                         WHERE event_id = $1 AND lease_id = $2 AND status = 'in_progress'"
                    ))
                    .bind(event_id)
                    .bind(lease_id)
                    .bind(lease_ms)
                    .execute(&self.pool)
                    .await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn finish_claim(&self, event_id: &str, lease_id: &str, finished: Finished) -> StoreResult<bool> {
                    let done = sqlx::query(&format!(
                        "UPDATE processed_events SET status = $3, lease_id = NULL, locked_until = NULL, updated_at = {NOW} \
                         WHERE event_id = $1 AND lease_id = $2 AND status = 'in_progress'"
                    ))
                    .bind(event_id)
                    .bind(lease_id)
                    .bind(finished.as_str())
                    .execute(&self.pool)
                    .await?;
                    Ok(done.rows_affected() == 1)
                }

                async fn fail_claim(
                    &self,
                    event_id: &str,
                    lease_id: &str,
                    error: &str,
                    max_attempts: i64,
                    permanent: bool,
                ) -> StoreResult<Option<FailedClaim>> {
                    Self::record_failure(&self.pool, event_id, Some(lease_id), error, max_attempts, permanent).await
                }

                async fn process_in_transaction(
                    &self,
                    event_id: &str,
                    application_id: i64,
                    max_attempts: i64,
                    send: SendFn<'_>,
                ) -> StoreResult<TxOutcome> {
                    let mut tx = self.begin_write().await?;
                    // The claim: a new row, or a pending one (released by an earlier failure). A
                    // concurrent transaction on the same event blocks here until it ends.
                    let claimed: Option<i64> = sqlx::query_scalar(&format!(
                        "INSERT INTO processed_events (event_id, status, attempts, updated_at) VALUES ($1, 'done', 0, {NOW}) \
                         ON CONFLICT (event_id) DO UPDATE SET status = 'done', lease_id = NULL, locked_until = NULL, \
                         updated_at = {NOW} WHERE processed_events.status IN ('pending', 'in_progress') RETURNING attempts"
                    ))
                    .bind(event_id)
                    .fetch_optional(&mut *tx)
                    .await?;
                    let Some(attempts) = claimed else {
                        let status: Option<String> = sqlx::query_scalar("SELECT status FROM processed_events WHERE event_id = $1")
                            .bind(event_id)
                            .fetch_optional(&mut *tx)
                            .await?;
                        return Ok(if status.as_deref() == Some("dead") { TxOutcome::Dead } else { TxOutcome::Duplicate });
                    };
                    let data = sqlx::query_as::<_, EmailDataRow>(EMAIL_DATA_SQL)
                        .bind(application_id)
                        .bind(event_id)
                        .fetch_optional(&mut *tx)
                        .await?
                        .map(EmailData::from);
                    let Some(data) = data else {
                        sqlx::query("UPDATE processed_events SET status = 'missing' WHERE event_id = $1")
                            .bind(event_id)
                            .execute(&mut *tx)
                            .await?;
                        tx.commit().await?;
                        return Ok(TxOutcome::Missing);
                    };
                    match send(data, attempts).await {
                        Ok(()) => {
                            tx.commit().await?;
                            Ok(TxOutcome::Sent)
                        }
                        Err(error) => {
                            tx.rollback().await?;
                            let permanent = matches!(error, SendError::Permanent(_));
                            let dead = permanent || max_attempts <= 1;
                            let mut tx = self.begin_write().await?;
                            sqlx::query(&format!(
                                "INSERT INTO processed_events (event_id, status, attempts, updated_at) \
                                 VALUES ($1, 'in_progress', 0, {NOW}) ON CONFLICT (event_id) DO UPDATE \
                                 SET status = 'in_progress' WHERE processed_events.status = 'pending'"
                            ))
                            .bind(event_id)
                            .execute(&mut *tx)
                            .await?;
                            let failure = Self::record_failure(&mut *tx, event_id, None, &error.to_string(), max_attempts, dead).await?;
                            let Some(failure) = failure else {
                                // A copy waiting on this transaction took the event after the
                                // rollback, and has sent it or is sending it: this copy is done.
                                let status: Option<String> = sqlx::query_scalar("SELECT status FROM processed_events WHERE event_id = $1")
                                    .bind(event_id)
                                    .fetch_optional(&mut *tx)
                                    .await?;
                                tx.commit().await?;
                                return match status.as_deref() {
                                    Some("done" | "missing") => Ok(TxOutcome::Duplicate),
                                    Some("dead") => Ok(TxOutcome::Dead),
                                    _ => Err(StoreError::Other(anyhow::anyhow!("event {event_id} changed while recording its failure"))),
                                };
                            };
                            tx.commit().await?;
                            Ok(TxOutcome::Failed { failure, error })
                        }
                    }
                }

                async fn email_data(&self, application_id: i64, event_id: &str) -> StoreResult<Option<EmailData>> {
                    Ok(sqlx::query_as::<_, EmailDataRow>(EMAIL_DATA_SQL)
                        .bind(application_id)
                        .bind(event_id)
                        .fetch_optional(&self.pool)
                        .await?
                        .map(EmailData::from))
                }

                async fn dead_letters(&self) -> StoreResult<Vec<DeadLetterRow>> {
                    Ok(sqlx::query_as::<_, DeadLetterRow>(
                        "SELECT id, event_id, reason, attempts, body, first_failed_at, last_failed_at \
                         FROM dead_letters ORDER BY id",
                    )
                    .fetch_all(&self.pool)
                    .await?)
                }

                async fn redrive(&self, ids: Option<&[i64]>, include_invalid: bool) -> StoreResult<RedriveResult> {
                    let mut tx = self.begin_write().await?;
                    let all: Vec<DeadLetterRow> = sqlx::query_as(
                        "SELECT id, event_id, reason, attempts, body, first_failed_at, last_failed_at FROM dead_letters ORDER BY id",
                    )
                    .fetch_all(&mut *tx)
                    .await?;
                    let mut result = RedriveResult::default();
                    let chosen: Vec<&DeadLetterRow> = match ids {
                        None => all.iter().collect(),
                        Some(ids) => {
                            let found: Vec<&DeadLetterRow> = all.iter().filter(|d| ids.contains(&d.id)).collect();
                            result.not_found = (ids.len() - found.len()) as u64;
                            found
                        }
                    };
                    for d in chosen {
                        if d.event_id.is_none() && !include_invalid {
                            result.skipped_invalid += 1;
                            continue;
                        }
                        sqlx::query(&format!(
                            "INSERT INTO outbox (event_id, application_id, body, created_at, visible_at) \
                             VALUES ($1, NULL, $2, $3, {NOW})"
                        ))
                        .bind(&d.event_id)
                        .bind(&d.body)
                        .bind($crate::timefmt::now())
                        .execute(&mut *tx)
                        .await?;
                        if let Some(event_id) = &d.event_id {
                            // Attempts start again from zero.
                            sqlx::query("DELETE FROM processed_events WHERE event_id = $1 AND status IN ('dead', 'pending')")
                                .bind(event_id)
                                .execute(&mut *tx)
                                .await?;
                        }
                        sqlx::query("DELETE FROM dead_letters WHERE id = $1")
                            .bind(d.id)
                            .execute(&mut *tx)
                            .await?;
                        result.redriven += 1;
                    }
                    tx.commit().await?;
                    Ok(result)
                }

                async fn purge_dead_letters(&self, ids: Option<&[i64]>) -> StoreResult<u64> {
                    let mut tx = self.begin_write().await?;
                    let mut n = 0;
                    match ids {
                        None => {
                            n = sqlx::query("DELETE FROM dead_letters").execute(&mut *tx).await?.rows_affected();
                        }
                        Some(ids) => {
                            for id in ids {
                                n += sqlx::query("DELETE FROM dead_letters WHERE id = $1")
                                    .bind(id)
                                    .execute(&mut *tx)
                                    .await?
                                    .rows_affected();
                            }
                        }
                    }
                    tx.commit().await?;
                    Ok(n)
                }

                async fn reset_dead_event(&self, event_id: &str) -> StoreResult<()> {
                    sqlx::query("DELETE FROM processed_events WHERE event_id = $1 AND status IN ('dead', 'pending')")
                        .bind(event_id)
                        .execute(&self.pool)
                        .await?;
                    Ok(())
                }

                async fn relay_outbox(&self, limit: i64, publish: PublishFn<'_>) -> StoreResult<usize> {
                    let select = format!("SELECT id, body FROM outbox ORDER BY id LIMIT $1{}", <$dialect>::SKIP_LOCKED);
                    let (mut tx, rows, accepted) = if <$dialect>::LOCK_WHILE_PUBLISHING {
                        // Row locks keep concurrent relays off each other's rows and block nothing else.
                        let mut tx = self.begin_write().await?;
                        let rows: Vec<(i64, String)> = sqlx::query_as(&select).bind(limit).fetch_all(&mut *tx).await?;
                        if rows.is_empty() {
                            return Ok(0);
                        }
                        let accepted = publish(rows.iter().map(|(_, b)| b.clone()).collect()).await?;
                        (tx, rows, accepted)
                    } else {
                        // SQLite's lock is the whole database: never hold it across a network call.
                        // Two relays may then publish a row twice, which the worker's claim absorbs.
                        let rows: Vec<(i64, String)> = sqlx::query_as(&select).bind(limit).fetch_all(&self.pool).await?;
                        if rows.is_empty() {
                            return Ok(0);
                        }
                        let accepted = publish(rows.iter().map(|(_, b)| b.clone()).collect()).await?;
                        (self.begin_write().await?, rows, accepted)
                    };
                    // Only what the queue accepted leaves the outbox; the rest waits for the next try.
                    for i in &accepted {
                        if let Some((id, _)) = rows.get(*i) {
                            sqlx::query("DELETE FROM outbox WHERE id = $1").bind(id).execute(&mut *tx).await?;
                        }
                    }
                    tx.commit().await?;
                    Ok(accepted.len())
                }

                async fn outbox_pending(&self) -> StoreResult<i64> {
                    Ok(sqlx::query_scalar("SELECT COUNT(*) FROM outbox").fetch_one(&self.pool).await?)
                }

                async fn delete_processed_events(&self, older_than_ms: i64, batch: i64) -> StoreResult<u64> {
                    let done = sqlx::query(
                        "DELETE FROM processed_events WHERE event_id IN (SELECT event_id FROM processed_events \
                         WHERE status IN ('done', 'missing', 'dead') AND updated_at < $1 LIMIT $2)",
                    )
                    .bind(older_than_ms)
                    .bind(batch)
                    .execute(&self.pool)
                    .await?;
                    Ok(done.rows_affected())
                }

                async fn now_ms(&self) -> StoreResult<i64> {
                    Ok(sqlx::query_scalar(&format!("SELECT {NOW}")).fetch_one(&self.pool).await?)
                }
            }

            #[async_trait::async_trait]
            impl $crate::store::IdempotencyStore for $store {
                async fn idem_begin(
                    &self,
                    user_id: i64,
                    method: &str,
                    route: &str,
                    key: &str,
                    request_hash: &str,
                    lock_ms: i64,
                    ttl_ms: i64,
                ) -> StoreResult<$crate::store::IdemBegin> {
                    use $crate::store::IdemBegin;
                    let token = uuid::Uuid::new_v4().to_string();
                    let mut tx = self.begin_write().await?;
                    sqlx::query(&format!(
                        "DELETE FROM idempotency_keys WHERE user_id = $1 AND method = $2 AND route = $3 \
                         AND key = $4 AND created_at < {NOW} - $5"
                    ))
                    .bind(user_id)
                    .bind(method)
                    .bind(route)
                    .bind(key)
                    .bind(ttl_ms)
                    .execute(&mut *tx)
                    .await?;
                    let inserted: Option<i64> = sqlx::query_scalar(&format!(
                        "INSERT INTO idempotency_keys (user_id, method, route, key, request_hash, state, lock_token, locked_until, created_at) \
                         VALUES ($1, $2, $3, $4, $5, 'in_flight', $7, {NOW} + $6, {NOW}) ON CONFLICT DO NOTHING RETURNING id"
                    ))
                    .bind(user_id)
                    .bind(method)
                    .bind(route)
                    .bind(key)
                    .bind(request_hash)
                    .bind(lock_ms)
                    .bind(&token)
                    .fetch_optional(&mut *tx)
                    .await?;
                    if let Some(record_id) = inserted {
                        tx.commit().await?;
                        return Ok(IdemBegin::Started { record_id, token });
                    }
                    let (id, hash, state, locked_until, status, body, now): (i64, String, String, Option<i64>, Option<i64>, Option<String>, i64) =
                        sqlx::query_as(&format!(
                            "SELECT id, request_hash, state, locked_until, response_status, response_body, {NOW} \
                             FROM idempotency_keys WHERE user_id = $1 AND method = $2 AND route = $3 AND key = $4{}",
                            <$dialect>::FOR_UPDATE
                        ))
                        .bind(user_id)
                        .bind(method)
                        .bind(route)
                        .bind(key)
                        .fetch_one(&mut *tx)
                        .await?;
                    if hash != request_hash {
                        return Ok(IdemBegin::Mismatch);
                    }
                    if state == "done" {
                        return Ok(IdemBegin::Replay {
                            status: status.unwrap_or(200) as u16,
                            body: body.unwrap_or_default(),
                        });
                    }
                    if locked_until.unwrap_or(0) > now {
                        return Ok(IdemBegin::InFlight);
                    }
                    // The request that held it died before finishing: nothing was written.
                    sqlx::query(&format!("UPDATE idempotency_keys SET locked_until = {NOW} + $2, lock_token = $3 WHERE id = $1"))
                        .bind(id)
                        .bind(lock_ms)
                        .bind(&token)
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                    Ok(IdemBegin::Started { record_id: id, token })
                }

                async fn idem_complete(&self, record_id: i64, token: &str, status: u16, body: &str) -> StoreResult<()> {
                    sqlx::query(
                        "UPDATE idempotency_keys SET state = 'done', locked_until = NULL, response_status = $2, \
                         response_body = $3 WHERE id = $1 AND state = 'in_flight' AND lock_token = $4",
                    )
                    .bind(record_id)
                    .bind(status as i64)
                    .bind(body)
                    .bind(token)
                    .execute(&self.pool)
                    .await?;
                    Ok(())
                }

                async fn idem_release(&self, record_id: i64, token: &str) -> StoreResult<()> {
                    sqlx::query("DELETE FROM idempotency_keys WHERE id = $1 AND state = 'in_flight' AND lock_token = $2")
                        .bind(record_id)
                        .bind(token)
                        .execute(&self.pool)
                        .await?;
                    Ok(())
                }

                async fn delete_idempotency_keys(&self, older_than_ms: i64, batch: i64) -> StoreResult<u64> {
                    let done = sqlx::query(
                        "DELETE FROM idempotency_keys WHERE id IN (SELECT id FROM idempotency_keys \
                         WHERE created_at < $1 LIMIT $2)",
                    )
                    .bind(older_than_ms)
                    .bind(batch)
                    .execute(&self.pool)
                    .await?;
                    Ok(done.rows_affected())
                }
            }

            /// `$first, $first+1, …` for an `IN (…)` list of `n` values.
            fn placeholders(first: usize, n: usize) -> String {
                (first..first + n).map(|i| format!("${i}")).collect::<Vec<_>>().join(", ")
            }

            /// The email's data, only while the application and its history row for the event
            /// exist.
            const EMAIL_DATA_SQL: &str = "SELECT u.id AS candidate_id, u.email, u.name, j.title AS job_title, \
                 c.name AS company FROM application_history h \
                 JOIN applications a ON a.id = h.application_id JOIN users u ON u.id = a.candidate_id \
                 JOIN jobs j ON j.id = a.job_id JOIN companies c ON c.id = j.company_id \
                 WHERE a.id = $1 AND h.event_id = $2";
        }
    };
}

pub(super) use impl_event_store;
