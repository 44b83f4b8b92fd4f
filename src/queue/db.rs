//! `QUEUE=db`: the outbox table is the queue. Receiving moves a row's `visible_at` forward by the
//! visibility timeout (PostgreSQL picks rows with `FOR UPDATE SKIP LOCKED`, so concurrent
//! receivers never get the same message; SQLite has a single writer), deleting acknowledges, and
//! dead letters live in their own table.

use super::{DeadLetter, DeadLetterReason, Message, Queue, Redriven, Selection};
use crate::store::{DbQueueStore, DeadLetterRow, NewDeadLetter};
use anyhow::Context;
use async_trait::async_trait;
use std::sync::Arc;
use std::time::Duration;

pub struct DbQueue {
    store: Arc<dyn DbQueueStore>,
    visibility: Duration,
}

impl DbQueue {
    pub fn new(store: Arc<dyn DbQueueStore>, visibility: Duration) -> DbQueue {
        DbQueue { store, visibility }
    }
}

fn id_of(m: &Message) -> anyhow::Result<i64> {
    m.id.parse().context("not a database queue message id")
}

fn ms(d: Duration) -> i64 {
    d.as_millis().min(i64::MAX as u128) as i64
}

fn time_of(ms: i64) -> chrono::DateTime<chrono::Utc> {
    chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

fn ids(which: &Selection) -> Option<Vec<i64>> {
    match which {
        Selection::All => None,
        // An id that is not a number names no dead letter: it will count as not found.
        Selection::Ids(ids) => Some(ids.iter().map(|s| s.parse().unwrap_or(-1)).collect()),
    }
}

#[async_trait]
impl Queue for DbQueue {
    fn kind(&self) -> &'static str {
        "db"
    }

    /// One statement receives them all; the worker's free slots bound it in practice.
    fn max_receive(&self) -> usize {
        100
    }

    async fn receive(&self, max: usize, _wait: Duration) -> anyhow::Result<Vec<Message>> {
        let rows = self
            .store
            .queue_receive(max as i64, ms(self.visibility))
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| Message {
                id: r.id.to_string(),
                receipt: r.receipt,
                body: r.body,
                receive_count: r.receive_count,
            })
            .collect())
    }

    async fn ack(&self, m: &Message) -> anyhow::Result<()> {
        if !self.store.queue_ack(id_of(m)?, &m.receipt).await? {
            tracing::debug!(message_id = %m.id, "acknowledged a message that was already redelivered");
        }
        Ok(())
    }

    /// One statement per receive (a receive's messages share its receipt).
    async fn ack_many(&self, ms: &[Message]) -> anyhow::Result<()> {
        let mut by_receipt: std::collections::BTreeMap<&str, Vec<i64>> = Default::default();
        for m in ms {
            by_receipt.entry(&m.receipt).or_default().push(id_of(m)?);
        }
        for (receipt, ids) in by_receipt {
            let deleted = self.store.queue_ack_many(receipt, &ids).await?;
            if deleted < ids.len() as u64 {
                tracing::debug!(
                    stale = ids.len() as u64 - deleted,
                    "acknowledged messages that were already redelivered"
                );
            }
        }
        Ok(())
    }

    async fn retry_later(&self, m: &Message, delay: Duration) -> anyhow::Result<()> {
        self.store
            .queue_delay(id_of(m)?, &m.receipt, ms(delay))
            .await?;
        Ok(())
    }

    async fn extend(&self, m: &Message, by: Duration) -> anyhow::Result<()> {
        self.store
            .queue_delay(id_of(m)?, &m.receipt, ms(by))
            .await?;
        Ok(())
    }

    async fn dead_letter(&self, m: &Message, r: DeadLetterReason) -> anyhow::Result<()> {
        let dead = NewDeadLetter {
            event_id: r.event_id,
            reason: r.reason,
            attempts: r.attempts,
            body: m.body.clone(),
            first_failed_at: r.first_failed_at,
            invalid: r.invalid,
        };
        self.store
            .queue_dead_letter(id_of(m)?, &m.receipt, dead)
            .await?;
        Ok(())
    }

    async fn enqueue(&self, body: &str) -> anyhow::Result<()> {
        let event = crate::domain::event::parse_event(body).ok();
        self.store
            .queue_enqueue(
                event.as_ref().map(|e| e.event_id.as_str()),
                event.as_ref().and_then(|e| e.kind.application_id()),
                body,
            )
            .await?;
        Ok(())
    }

    async fn ping(&self) -> anyhow::Result<()> {
        self.store.ping().await
    }

    async fn stats(&self) -> anyhow::Result<(i64, Option<Duration>, i64)> {
        let s = self.store.queue_stats().await?;
        Ok((
            s.pending,
            s.oldest_age_ms.map(|ms| Duration::from_millis(ms as u64)),
            s.dead_letters,
        ))
    }

    async fn dead_letters(&self) -> anyhow::Result<Vec<DeadLetter>> {
        Ok(self
            .store
            .dead_letters()
            .await?
            .into_iter()
            .map(DeadLetter::from)
            .collect())
    }

    async fn dead_letter_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> anyhow::Result<(Vec<DeadLetter>, i64)> {
        let (rows, total) = self
            .store
            .dead_letter_page(offset as i64, limit as i64)
            .await?;
        Ok((rows.into_iter().map(DeadLetter::from).collect(), total))
    }

    async fn redrive(&self, which: Selection, include_invalid: bool) -> anyhow::Result<Redriven> {
        let r = self
            .store
            .redrive(ids(&which).as_deref(), include_invalid)
            .await?;
        Ok(Redriven {
            redriven: r.redriven,
            not_found: r.not_found,
            skipped_invalid: r.skipped_invalid,
        })
    }

    async fn purge(&self, which: Selection) -> anyhow::Result<u64> {
        Ok(self
            .store
            .purge_dead_letters(ids(&which).as_deref())
            .await?)
    }
}

impl From<DeadLetterRow> for DeadLetter {
    fn from(d: DeadLetterRow) -> Self {
        DeadLetter {
            id: d.id.to_string(),
            event_id: d.event_id,
            reason: d.reason,
            attempts: d.attempts,
            first_failed_at: time_of(d.first_failed_at),
            last_failed_at: time_of(d.last_failed_at),
            body: d.body,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The queue over a fake of the one part of the store it holds ([`DbQueueStore`]).

    use super::*;
    use crate::store::{DatabaseStore, QueueStats, QueueStore, QueuedMessage, RedriveResult};
    use crate::store::{StoreError, StoreResult};
    use std::sync::Mutex;

    /// Records each `queue_ack_many`; every other method is one the tests do not reach.
    #[derive(Default)]
    struct Acks(Mutex<Vec<(String, Vec<i64>)>>);

    #[async_trait]
    impl QueueStore for Acks {
        async fn queue_ack_many(&self, receipt: &str, ids: &[i64]) -> StoreResult<u64> {
            self.0
                .lock()
                .unwrap()
                .push((receipt.to_string(), ids.to_vec()));
            // The second receive's messages were redelivered meanwhile: none is ours.
            Ok(if receipt == "r2" { 0 } else { ids.len() as u64 })
        }
        async fn queue_receive(&self, _: i64, _: i64) -> StoreResult<Vec<QueuedMessage>> {
            unreachable!()
        }
        async fn queue_ack(&self, _: i64, _: &str) -> StoreResult<bool> {
            unreachable!()
        }
        async fn queue_delay(&self, _: i64, _: &str, _: i64) -> StoreResult<bool> {
            unreachable!()
        }
        async fn queue_dead_letter(&self, _: i64, _: &str, _: NewDeadLetter) -> StoreResult<()> {
            unreachable!()
        }
        async fn queue_enqueue(
            &self,
            _: Option<&str>,
            _: Option<i64>,
            _: &str,
        ) -> StoreResult<i64> {
            unreachable!()
        }
        async fn queue_stats(&self) -> StoreResult<QueueStats> {
            unreachable!()
        }
        async fn dead_letters(&self) -> StoreResult<Vec<DeadLetterRow>> {
            unreachable!()
        }
        async fn dead_letter_page(&self, _: i64, _: i64) -> StoreResult<(Vec<DeadLetterRow>, i64)> {
            unreachable!()
        }
        async fn redrive(&self, _: Option<&[i64]>, _: bool) -> StoreResult<RedriveResult> {
            unreachable!()
        }
        async fn purge_dead_letters(&self, _: Option<&[i64]>) -> StoreResult<u64> {
            unreachable!()
        }
    }

    #[async_trait]
    impl DatabaseStore for Acks {
        fn backend(&self) -> &'static str {
            "fake"
        }
        async fn migrate(&self) -> anyhow::Result<()> {
            unreachable!()
        }
        async fn check_schema(&self) -> anyhow::Result<Vec<String>> {
            unreachable!()
        }
        async fn ping(&self) -> anyhow::Result<()> {
            Err(StoreError::NotFound.into())
        }
    }

    fn message(id: &str, receipt: &str) -> Message {
        Message {
            id: id.to_string(),
            receipt: receipt.to_string(),
            body: String::new(),
            receive_count: 1,
        }
    }

    #[tokio::test]
    async fn ack_many_deletes_each_receive_in_one_call_under_its_own_receipt() {
        let store = Arc::new(Acks::default());
        let queue = DbQueue::new(store.clone(), Duration::from_secs(30));
        let batch = [message("1", "r1"), message("2", "r2"), message("3", "r1")];
        queue.ack_many(&batch).await.unwrap();
        let mut calls = store.0.lock().unwrap().clone();
        calls.sort();
        assert_eq!(
            calls,
            [("r1".to_string(), vec![1, 3]), ("r2".to_string(), vec![2])]
        );

        // An id this queue never gave out is refused before anything is deleted.
        store.0.lock().unwrap().clear();
        let e = queue
            .ack_many(&[message("4", "r3"), message("sqs-id", "r3")])
            .await
            .unwrap_err();
        assert!(e.to_string().contains("not a database queue message id"));
        assert!(store.0.lock().unwrap().is_empty());
        // The queue answers its ping from the store's.
        assert!(queue.ping().await.is_err());
    }
}
