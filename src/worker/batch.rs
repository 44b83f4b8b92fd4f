//! Batching: the new events of one receive claimed and read together, and their sends
//! recorded and acknowledged in groups as the mail server accepts them.

use super::record::GROUP_WINDOW;
use super::{Outcome, Worker, count};
use crate::domain::event::{Event, parse_event};
use crate::domain::mail::{EmailData, Loaded};
use crate::queue::Message;
use futures::FutureExt;
use std::panic::AssertUnwindSafe;
use std::time::Instant;
use tracing::Instrument;

impl Worker {
    /// Handles one receive's messages. In lease mode with `WORKER_BATCH`, the new events of the
    /// batch are claimed in one statement and their email data read in one query; the sends
    /// accepted within a few milliseconds of each other are recorded in one statement and
    /// acknowledged in one call, as soon as they are accepted; each event is still sent once,
    /// and a failed send releases only its own claim. Anything unusual (an invalid message, an
    /// event seen before, a copy of an event in the same batch) goes through `handle`.
    pub async fn handle_batch(&self, batch: &[Message]) -> Vec<anyhow::Result<Outcome>> {
        if !self.batch || batch.len() < 2 {
            return futures::future::join_all(batch.iter().map(|m| self.handle(m))).await;
        }
        let start = Instant::now();
        let mut seen = std::collections::HashSet::new();
        let mut alone = Vec::new();
        let mut fresh: Vec<(usize, Event)> = Vec::new();
        for (i, m) in batch.iter().enumerate() {
            match parse_event(&m.body) {
                Ok(e) if seen.insert(e.event_id.clone()) => fresh.push((i, e)),
                _ => alone.push(i),
            }
        }
        let ids: Vec<String> = fresh.iter().map(|(_, e)| e.event_id.clone()).collect();
        let lease_ms = self.visibility.as_millis() as i64;
        let mut results: Vec<Option<anyhow::Result<Outcome>>> =
            batch.iter().map(|_| None).collect();
        let (lease_id, claimed) = match self.store.claim_new_events(&ids, lease_ms).await {
            Ok((lease_id, claimed)) => (lease_id, claimed),
            Err(err) => {
                let err = anyhow::Error::from(err);
                for (i, _) in &fresh {
                    results[*i] = Some(Err(anyhow::anyhow!("{err:#}")));
                }
                (String::new(), Vec::new())
            }
        };
        let claimed: std::collections::HashSet<String> = claimed.into_iter().collect();
        let mut mine = Vec::new();
        for (i, e) in fresh {
            if claimed.contains(&e.event_id) {
                mine.push((i, e));
            } else if results[i].is_none() {
                alone.push(i);
            }
        }
        let singles = futures::future::join_all(alone.iter().map(|&i| self.handle(&batch[i])));
        let together = self.handle_claimed(batch, &mine, &lease_id);
        let (single_results, claimed_results) = futures::future::join(singles, together).await;
        for (i, r) in alone.into_iter().zip(single_results) {
            results[i] = Some(r);
        }
        for ((i, e), r) in mine.iter().zip(claimed_results) {
            if let Ok(outcome) = &r {
                count(e.type_name(), *outcome, start);
            }
            results[*i] = Some(r);
        }
        results
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(anyhow::anyhow!("message left unhandled"))))
            .collect()
    }

    /// The rest of `handle_batch` for the events claimed under `lease_id`.
    async fn handle_claimed(
        &self,
        batch: &[Message],
        mine: &[(usize, Event)],
        lease_id: &str,
    ) -> Vec<anyhow::Result<Outcome>> {
        if mine.is_empty() {
            return Vec::new();
        }
        let all_failed = |err: anyhow::Error| {
            mine.iter()
                .map(|_| Err(anyhow::anyhow!("{err:#}")))
                .collect::<Vec<_>>()
        };
        let wanted: Vec<Event> = mine.iter().map(|(_, e)| e.clone()).collect();
        let mut data: std::collections::HashMap<String, Loaded> =
            match self.store.email_data_many(&wanted).await {
                Ok(rows) => rows.into_iter().collect(),
                Err(err) => return all_failed(err.into()),
            };
        // Each accepted send is reported here, and recorded and acknowledged with whatever
        // else was accepted within GROUP_WINDOW: never later than its own group.
        let (accepted, mut reports) = tokio::sync::mpsc::unbounded_channel::<usize>();
        let sends: Vec<_> = mine
            .iter()
            .enumerate()
            .map(|(k, (i, e))| {
                let data = data.remove(&e.event_id);
                let accepted = accepted.clone();
                let one = async move {
                    let m = &batch[*i];
                    let span = super::span(e);
                    let loaded = data.unwrap_or(Loaded::Missing(crate::domain::mail::Absent::Gone));
                    let data = match self
                        .unless_ready(m, e, lease_id, loaded)
                        .instrument(span.clone())
                        .await
                    {
                        Ok(Ok(data)) => data,
                        Ok(Err(outcome)) => return (None, Ok(outcome)),
                        Err(err) => return (None, Err(err)),
                    };
                    let sent = self
                        .send_with_heartbeat(m, e, lease_id, &data)
                        .instrument(span.clone())
                        .await;
                    match sent {
                        Ok(()) => {
                            let _ = accepted.send(k);
                            (Some(data), Ok(Outcome::Sent))
                        }
                        Err(error) => (
                            None,
                            self.failed_send(m, e, lease_id, error)
                                .instrument(span)
                                .await,
                        ),
                    }
                };
                // A panic ends this event's handling alone: the others of the batch go on (a
                // panic in the joined future would drop them mid-flight, with their claims and
                // whatever transaction they were beginning).
                async move {
                    match AssertUnwindSafe(one).catch_unwind().await {
                        Ok(done) => done,
                        Err(panic) => {
                            let m = &batch[*i];
                            let outcome = self
                                .panicked(m, e, Some(lease_id), panic)
                                .instrument(super::span(e))
                                .await;
                            (None, outcome)
                        }
                    }
                }
            })
            .collect();
        drop(accepted);
        let recorder = async {
            let mut recorded: Vec<(usize, Result<(), String>)> = Vec::new();
            while let Some(first) = reports.recv().await {
                let mut group = vec![first];
                let window = tokio::time::sleep(GROUP_WINDOW);
                tokio::pin!(window);
                loop {
                    tokio::select! {
                        next = reports.recv() => match next {
                            Some(k) => group.push(k),
                            None => break,
                        },
                        _ = &mut window => break,
                    }
                }
                let result = self.record_group(batch, mine, &group, lease_id).await;
                let result = result.map_err(|err| format!("{err:#}"));
                recorded.extend(group.into_iter().map(|k| (k, result.clone())));
            }
            recorded
        };
        let (mut results, recorded): (Vec<(Option<EmailData>, anyhow::Result<Outcome>)>, _) =
            futures::future::join(futures::future::join_all(sends), recorder).await;
        for (k, result) in recorded {
            match result {
                Ok(()) => {
                    if let Some(data) = &results[k].0 {
                        self.log_sent(data, &mine[k].1);
                    }
                }
                Err(err) => results[k].1 = Err(anyhow::anyhow!(err)),
            }
        }
        results.into_iter().map(|(_, r)| r).collect()
    }

    /// Records and acknowledges one group of accepted sends (indexes into `mine`).
    async fn record_group(
        &self,
        batch: &[Message],
        mine: &[(usize, Event)],
        group: &[usize],
        lease_id: &str,
    ) -> anyhow::Result<()> {
        let ids: Vec<String> = group.iter().map(|&k| mine[k].1.event_id.clone()).collect();
        self.record_done(&ids, lease_id).await?;
        let acked: Vec<Message> = group.iter().map(|&k| batch[mine[k].0].clone()).collect();
        self.queue.ack_many(&acked).await?;
        Ok(())
    }
}
