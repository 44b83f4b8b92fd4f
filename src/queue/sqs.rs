//! `QUEUE=sqs`: Amazon SQS (standard queues) through the official SDK. Long polling, batches of
//! up to 10, deletes gathered into `DeleteMessageBatch`, visibility changes for deferrals, retries
//! and slow sends, and dead letters sent to `SQS_DLQ_URL` (required) with their reason as
//! message attributes. Attempts are counted in the database, not by SQS's receive count; the
//! queue's own redrive policy is only the backstop, and a worker warns at start when it would
//! move a message before `MAX_ATTEMPTS`.

use super::{DeadLetter, DeadLetterReason, Message, Queue, Redriven, Selection};
use crate::store::{Published, SqsDeadLetterRow, SqsQueueStore};
use anyhow::Context;
use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::config::http::HttpResponse;
use aws_sdk_sqs::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_sqs::operation::send_message::SendMessageError;
use aws_sdk_sqs::types::{
    DeleteMessageBatchRequestEntry, MessageAttributeValue, MessageSystemAttributeName,
    QueueAttributeName, SendMessageBatchRequestEntry,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// SQS's limit on a batch.
const BATCH: usize = 10;
/// How long a delete waits for others to share its batch.
const BATCH_WINDOW: Duration = Duration::from_millis(5);

type DeleteRequest = (String, oneshot::Sender<anyhow::Result<()>>);

pub struct SqsQueue {
    client: Client,
    /// One request's deadline (see [`ClientOptions`]).
    timeout: Duration,
    url: String,
    dlq_url: String,
    visibility: Duration,
    store: Arc<dyn SqsQueueStore>,
    deletes: mpsc::UnboundedSender<DeleteRequest>,
    /// Sent times of messages received in the last minute, for `queue_oldest_age_seconds`.
    recent: Mutex<VecDeque<(Instant, i64)>>,
}

fn attr(value: impl Into<String>) -> anyhow::Result<MessageAttributeValue> {
    Ok(MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()?)
}

/// Whether SQS refused a request for its size: a batch over the limit (`BatchRequestTooLong`),
/// or a body too long for the queue (`InvalidParameterValue`, "Message must be shorter than…").
fn size_refusal(code: Option<&str>, message: Option<&str>) -> bool {
    match code {
        Some(code) if code.ends_with("TooLong") => true,
        Some("InvalidParameterValue") => message.is_some_and(|m| m.contains("shorter than")),
        _ => false,
    }
}

/// Whole seconds for SQS, rounded up so that a delay never ends early (and never rounds to 0).
fn secs(d: Duration) -> i32 {
    d.as_millis().div_ceil(1000).min(43_200) as i32
}

/// How the SQS client reaches SQS.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Overrides the endpoint of the AWS environment, for SQS alone.
    pub endpoint_url: Option<String>,
    /// The most one request may take (a long poll gets its wait on top).
    pub timeout: Duration,
}

/// Tries per call, the first included (the SDK's standard retries).
const TRIES: u32 = 3;

/// Deadlines for requests that may also wait `wait` (a long poll): each try, and the call.
fn timeouts(timeout: Duration, wait: Duration) -> aws_sdk_sqs::config::timeout::TimeoutConfig {
    aws_sdk_sqs::config::timeout::TimeoutConfig::builder()
        .connect_timeout(timeout)
        .operation_attempt_timeout(timeout + wait)
        .operation_timeout((timeout + wait) * TRIES)
        .build()
}

impl SqsQueue {
    /// A client from the usual AWS environment (`AWS_REGION`, `AWS_ENDPOINT_URL`, credentials),
    /// with a deadline on every call: a hung SQS stalls nothing for longer.
    pub async fn connect(
        url: &str,
        dlq_url: String,
        visibility: Duration,
        store: Arc<dyn SqsQueueStore>,
        options: ClientOptions,
    ) -> anyhow::Result<SqsQueue> {
        let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let mut config = aws_sdk_sqs::config::Builder::from(&shared)
            .timeout_config(timeouts(options.timeout, Duration::ZERO))
            .retry_config(
                aws_sdk_sqs::config::retry::RetryConfig::standard().with_max_attempts(TRIES),
            );
        if let Some(endpoint) = &options.endpoint_url {
            config = config.endpoint_url(endpoint);
        }
        let client = Client::from_conf(config.build());
        let (deletes, rx) = mpsc::unbounded_channel();
        tokio::spawn(delete_batches(client.clone(), url.to_string(), rx));
        Ok(SqsQueue {
            client,
            timeout: options.timeout,
            url: url.to_string(),
            dlq_url,
            visibility,
            store,
            deletes,
            recent: Mutex::new(VecDeque::new()),
        })
    }

    /// How long the relay holds outbox rows while it publishes them: just past the deadline of
    /// a whole publish (its three tries), so that only a relay that died leaves its rows to
    /// another, and not for long.
    pub fn publish_lease(&self) -> Duration {
        self.timeout * TRIES + Duration::from_secs(1)
    }

    /// The deadlines of a long poll that waits `wait`.
    fn polling(&self, wait: Duration) -> aws_sdk_sqs::config::Builder {
        aws_sdk_sqs::config::Builder::new().timeout_config(timeouts(self.timeout, wait))
    }

    /// Publishes bodies (the outbox relay), in batches. A batch SQS refuses for its size (the
    /// sum of its bodies over the limit, or one body too long) is published one message at a
    /// time, so that one large event never holds up the others; a body SQS refuses alone as too
    /// long is reported as such, to be dead-lettered.
    pub async fn publish(&self, bodies: &[String]) -> anyhow::Result<Published> {
        let mut done = Published::default();
        for (chunk_no, chunk) in bodies.chunks(BATCH).enumerate() {
            let entries = chunk
                .iter()
                .enumerate()
                .map(|(i, body)| {
                    SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(body)
                        .build()
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = match self
                .client
                .send_message_batch()
                .queue_url(&self.url)
                .set_entries(Some(entries))
                .send()
                .await
            {
                Ok(out) => out,
                Err(e) if size_refusal(e.code(), e.message()) => {
                    tracing::warn!(
                        code = e.code(),
                        "SQS refused a batch for its size; publishing its events one by one"
                    );
                    for (i, body) in chunk.iter().enumerate() {
                        let at = chunk_no * BATCH + i;
                        match self.send_to(&self.url, body, HashMap::new()).await {
                            Ok(_) => done.accepted.push(at),
                            Err(e) if size_refusal(e.code(), e.message()) => done.too_long.push((
                                at,
                                format!(
                                    "SQS refused the event as too long ({} bytes): {}",
                                    body.len(),
                                    e.message().unwrap_or("no message")
                                ),
                            )),
                            Err(e) => tracing::warn!(
                                error = format!("{e:#}"),
                                "SQS refused to publish one event; it stays in the outbox"
                            ),
                        }
                    }
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            for ok in out.successful() {
                if let Ok(i) = ok.id().parse::<usize>() {
                    done.accepted.push(chunk_no * BATCH + i);
                }
            }
            for failed in out.failed() {
                tracing::warn!(
                    code = failed.code(),
                    "SQS refused to publish one event; it stays in the outbox"
                );
            }
        }
        Ok(done)
    }

    async fn send_to(
        &self,
        url: &str,
        body: &str,
        attributes: HashMap<String, MessageAttributeValue>,
    ) -> Result<Option<String>, SdkError<SendMessageError, HttpResponse>> {
        let sent = self
            .client
            .send_message()
            .queue_url(url)
            .message_body(body)
            .set_message_attributes(if attributes.is_empty() {
                None
            } else {
                Some(attributes)
            })
            .send()
            .await?;
        Ok(sent.message_id().map(str::to_string))
    }

    /// Every message now in the DLQ: each is hidden for `hide` while the listing goes on (so
    /// none is counted twice or missed), long-polling until two rounds bring nothing new. The
    /// caller makes the ones it keeps visible again.
    async fn dlq_messages(
        &self,
        hide: Duration,
    ) -> anyhow::Result<Vec<aws_sdk_sqs::types::Message>> {
        let dlq = self.dlq_url.as_str();
        let mut seen = HashMap::new();
        let mut empty_rounds = 0;
        while empty_rounds < 2 {
            let out = self
                .client
                .receive_message()
                .queue_url(dlq)
                .max_number_of_messages(BATCH as i32)
                .visibility_timeout(secs(hide).max(1))
                .wait_time_seconds(1)
                .message_attribute_names("All")
                .customize()
                .config_override(self.polling(Duration::from_secs(1)))
                .send()
                .await?;
            let mut new = 0;
            for m in out.messages() {
                if let Some(id) = m.message_id()
                    && !seen.contains_key(id)
                {
                    new += 1;
                    seen.insert(id.to_string(), m.clone());
                }
            }
            if new == 0 {
                empty_rounds += 1;
            }
        }
        let mut all: Vec<_> = seen.into_values().collect();
        all.sort_by_key(|m| m.message_id().unwrap_or_default().to_string());
        Ok(all)
    }

    /// Moves one dead letter back to the queue: its failures forgotten first (a worker may
    /// receive the copy the moment it is sent), the copy sent and the redrive noted in the
    /// event's story, then the dead letter deleted.
    async fn redrive_one(
        &self,
        dlq: &str,
        m: &aws_sdk_sqs::types::Message,
        event_id: Option<&str>,
    ) -> anyhow::Result<()> {
        let id = m.message_id().unwrap_or_default();
        if let Some(e) = event_id {
            self.store
                .reset_dead_event(e)
                .await
                .with_context(|| format!("forgetting the failures of event {e}"))?;
        }
        // The redrive's time is taken before the copy can be sent and received, so the story
        // never shows it after the send it led to.
        let at = chrono::Utc::now().timestamp_millis();
        self.send_to(&self.url, m.body().unwrap_or_default(), HashMap::new())
            .await
            .with_context(|| format!("sending dead letter {id} back to the queue"))?;
        if let Some(e) = event_id {
            // The copy is on its way: a trace that could not be written is logged, and the
            // redrive stands.
            if let Err(err) = self
                .store
                .note_redrive(e, record_of(m).attempts, Some(at))
                .await
            {
                tracing::warn!(
                    error = format!("{err:#}"),
                    event_id = e,
                    "a dead letter was redriven but its trace could not be written; the event's \
                     story will not show this redrive"
                );
            }
        }
        self.client
            .delete_message()
            .queue_url(dlq)
            .receipt_handle(m.receipt_handle().unwrap_or_default())
            .send()
            .await
            .with_context(|| {
                format!("deleting dead letter {id} from the DLQ after its copy was sent")
            })?;
        self.forget(&[id.to_string()]).await;
        Ok(())
    }

    /// Forgets the records of dead letters gone from the DLQ. A failure leaves a record whose
    /// message is gone: listed until a redrive or purge of it finds nothing and forgets it. It
    /// is logged, and the SQS step it follows stands.
    async fn forget(&self, ids: &[String]) {
        if ids.is_empty() {
            return;
        }
        if let Err(e) = self.store.sqs_dead_letters_forget(ids).await {
            tracing::warn!(
                error = format!("{e:#}"),
                count = ids.len(),
                "dead letters left the DLQ but their records could not be deleted; they stay \
                 listed until a redrive or purge of them finds nothing"
            );
        }
    }

    /// Records the DLQ's messages that have no record yet (a failed write after a dead letter
    /// was sent, or a message SQS's own redrive policy moved there); returns how many. Only
    /// when the DLQ holds more messages than there are records: it then receives the whole DLQ,
    /// hiding each message for a few seconds, so the worker's upkeep runs it, never a read.
    pub async fn reconcile(&self) -> anyhow::Result<u64> {
        let recorded = self
            .store
            .sqs_dead_letter_count()
            .await
            .context("counting the recorded dead letters")?;
        let in_dlq = self
            .count(self.dlq_url.clone())
            .await
            .context("counting the DLQ's messages")?;
        if in_dlq <= recorded {
            return Ok(0);
        }
        let messages = self
            .dlq_messages(Duration::from_secs(5))
            .await
            .context("listing the DLQ")?;
        let mut added = 0;
        let mut failed = None;
        for m in &messages {
            match self.store.sqs_dead_letter_record(&record_of(m)).await {
                Ok(true) => added += 1,
                Ok(false) => {}
                Err(e) => {
                    failed = Some(anyhow::Error::from(e).context("recording a dead letter"));
                    break;
                }
            }
        }
        let dlq = self.dlq_url.clone();
        self.release_all(&dlq, &messages).await;
        if added > 0 {
            tracing::info!(
                added,
                "recorded dead letters found in the DLQ without a record"
            );
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(added),
        }
    }

    /// Messages in a queue, visible or in flight (SQS's approximate counts).
    async fn count(&self, url: String) -> anyhow::Result<i64> {
        let out = self
            .client
            .get_queue_attributes()
            .queue_url(url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesNotVisible)
            .send()
            .await?;
        let attrs = out.attributes();
        let get = |k: QueueAttributeName| {
            attrs
                .and_then(|a| a.get(&k))
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0)
        };
        Ok(get(QueueAttributeName::ApproximateNumberOfMessages)
            + get(QueueAttributeName::ApproximateNumberOfMessagesNotVisible))
    }

    /// Makes listed dead letters visible again. One that cannot be stays hidden until its
    /// listing's visibility ends (30 s): nothing is lost, but a `dlq list` meanwhile misses it,
    /// so the failures are logged, once per call.
    async fn release_all(&self, dlq: &str, messages: &[aws_sdk_sqs::types::Message]) {
        let mut failed = 0;
        let mut last_error = None;
        for m in messages {
            if let Some(r) = m.receipt_handle() {
                let released = self
                    .client
                    .change_message_visibility()
                    .queue_url(dlq)
                    .receipt_handle(r)
                    .visibility_timeout(0)
                    .send()
                    .await;
                if let Err(e) = released {
                    failed += 1;
                    last_error = Some(format!("{e}"));
                }
            }
        }
        if let Some(error) = last_error {
            tracing::warn!(
                failed,
                error,
                "could not make listed dead letters visible again; they stay hidden in the DLQ for up to 30 s"
            );
        }
    }

    /// A worker's start-up check: both queues exist (a missing one stops the worker with a
    /// message naming its variable), and the queue's redrive policy does not move a message to
    /// a DLQ before `max_attempts` failed sends (a WARN otherwise: SQS's receive count also
    /// counts deferrals and redeliveries, so it runs ahead of the attempts). An SQS that cannot
    /// be reached is only warned about: the receive loop backs off until it answers.
    pub async fn check_queues(&self, max_attempts: u32) -> anyhow::Result<()> {
        for (var, url) in [("SQS_QUEUE_URL", &self.url), ("SQS_DLQ_URL", &self.dlq_url)] {
            let out = self
                .client
                .get_queue_attributes()
                .queue_url(url)
                .attribute_names(QueueAttributeName::RedrivePolicy)
                .send()
                .await;
            let out = match out {
                Ok(out) => out,
                Err(e) if queue_missing(&e) => {
                    anyhow::bail!("{var}: the queue {url} does not exist")
                }
                Err(e) => {
                    tracing::warn!(error = %aws_sdk_sqs::error::DisplayErrorContext(&e),
                        "cannot check the SQS queues at start; receiving with backoff until SQS answers");
                    return Ok(());
                }
            };
            if var != "SQS_QUEUE_URL" {
                continue;
            }
            let policy = out
                .attributes()
                .and_then(|a| a.get(&QueueAttributeName::RedrivePolicy));
            match policy.map(|p| max_receive_count(p)) {
                None => tracing::warn!(
                    "SQS_QUEUE_URL has no redrive policy: a message whose handling keeps crashing is \
                     delivered for ever; give the queue one with maxReceiveCount above MAX_ATTEMPTS"
                ),
                Some(Some(n)) if n <= u64::from(max_attempts) => tracing::warn!(
                    max_receive_count = n,
                    max_attempts,
                    "the redrive policy of SQS_QUEUE_URL has maxReceiveCount {n}, not above \
                     MAX_ATTEMPTS {max_attempts}: SQS may move an event to its DLQ before its \
                     attempts are used up; raise maxReceiveCount (deferrals count as receives)"
                ),
                Some(None) => tracing::warn!(
                    "the redrive policy of SQS_QUEUE_URL has no readable maxReceiveCount"
                ),
                Some(Some(_)) => {}
            }
        }
        Ok(())
    }

    /// The ids asked for that are not in the DLQ's listing.
    fn missing(which: &Selection, all: &[aws_sdk_sqs::types::Message]) -> Vec<String> {
        match which {
            Selection::All => Vec::new(),
            Selection::Ids(ids) => ids
                .iter()
                .filter(|id| !all.iter().any(|m| m.message_id() == Some(id.as_str())))
                .cloned()
                .collect(),
        }
    }

    fn selected<'a>(
        which: &Selection,
        all: &'a [aws_sdk_sqs::types::Message],
    ) -> (Vec<&'a aws_sdk_sqs::types::Message>, u64) {
        match which {
            Selection::All => (all.iter().collect(), 0),
            Selection::Ids(ids) => {
                let found: Vec<_> = all
                    .iter()
                    .filter(|m| ids.iter().any(|id| Some(id.as_str()) == m.message_id()))
                    .collect();
                let missing = ids
                    .iter()
                    .filter(|id| !all.iter().any(|m| m.message_id() == Some(id.as_str())))
                    .count();
                (found, missing as u64)
            }
        }
    }
}

/// Whether SQS answered that the queue does not exist.
fn queue_missing<R>(
    e: &aws_sdk_sqs::error::SdkError<
        aws_sdk_sqs::operation::get_queue_attributes::GetQueueAttributesError,
        R,
    >,
) -> bool {
    use aws_sdk_sqs::error::ProvideErrorMetadata;
    e.as_service_error().is_some_and(|se| {
        se.is_queue_does_not_exist()
            || se
                .code()
                .is_some_and(|c| c.contains("NonExistentQueue") || c.contains("QueueDoesNotExist"))
    })
}

/// `maxReceiveCount` of a redrive policy (SQS gives it as a string or a number).
fn max_receive_count(policy: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(policy).ok()?;
    let n = &v["maxReceiveCount"];
    n.as_u64().or_else(|| n.as_str()?.parse().ok())
}

/// Gathers deletes into `DeleteMessageBatch` calls of up to ten.
async fn delete_batches(
    client: Client,
    url: String,
    mut rx: mpsc::UnboundedReceiver<DeleteRequest>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + BATCH_WINDOW;
        while batch.len() < BATCH {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(req)) => batch.push(req),
                _ => break,
            }
        }
        let entries: Vec<DeleteMessageBatchRequestEntry> = batch
            .iter()
            .enumerate()
            .filter_map(|(i, (receipt, _))| {
                DeleteMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .receipt_handle(receipt)
                    .build()
                    .ok()
            })
            .collect();
        let result = client
            .delete_message_batch()
            .queue_url(&url)
            .set_entries(Some(entries))
            .send()
            .await;
        match result {
            Ok(out) => {
                let failed: HashMap<String, String> = out
                    .failed()
                    .iter()
                    .map(|f| {
                        (
                            f.id().to_string(),
                            f.message().unwrap_or(f.code()).to_string(),
                        )
                    })
                    .collect();
                for (i, (_, reply)) in batch.into_iter().enumerate() {
                    let r = match failed.get(&i.to_string()) {
                        Some(why) => Err(anyhow::anyhow!("SQS did not delete the message: {why}")),
                        None => Ok(()),
                    };
                    let _ = reply.send(r);
                }
            }
            Err(e) => {
                let why = format!("{e}");
                for (_, reply) in batch {
                    let _ = reply.send(Err(anyhow::anyhow!("DeleteMessageBatch failed: {why}")));
                }
            }
        }
    }
}

#[async_trait]
impl Queue for SqsQueue {
    fn kind(&self) -> &'static str {
        "sqs"
    }

    async fn receive(&self, max: usize, wait: Duration) -> anyhow::Result<Vec<Message>> {
        let wait = Duration::from_secs(wait.as_secs().min(20));
        let out = self
            .client
            .receive_message()
            .queue_url(&self.url)
            .max_number_of_messages(max.clamp(1, BATCH) as i32)
            .wait_time_seconds(wait.as_secs() as i32)
            .visibility_timeout(secs(self.visibility))
            .message_system_attribute_names(MessageSystemAttributeName::ApproximateReceiveCount)
            .message_system_attribute_names(MessageSystemAttributeName::SentTimestamp)
            .customize()
            .config_override(self.polling(wait))
            .send()
            .await?;
        let now = Instant::now();
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        let messages = out
            .messages()
            .iter()
            .map(|m| {
                let attrs = m.attributes();
                let get = |k: MessageSystemAttributeName| {
                    attrs
                        .and_then(|a| a.get(&k))
                        .and_then(|v| v.parse::<i64>().ok())
                };
                if let Some(sent) = get(MessageSystemAttributeName::SentTimestamp) {
                    recent.push_back((now, sent));
                }
                Message {
                    id: m.message_id().unwrap_or_default().to_string(),
                    receipt: m.receipt_handle().unwrap_or_default().to_string(),
                    body: m.body().unwrap_or_default().to_string(),
                    receive_count: get(MessageSystemAttributeName::ApproximateReceiveCount)
                        .unwrap_or(1),
                }
            })
            .collect();
        while recent
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > Duration::from_secs(60))
        {
            recent.pop_front();
        }
        Ok(messages)
    }

    async fn ack(&self, m: &Message) -> anyhow::Result<()> {
        let (tx, rx) = oneshot::channel();
        self.deletes
            .send((m.receipt.clone(), tx))
            .map_err(|_| anyhow::anyhow!("the delete batcher stopped"))?;
        rx.await
            .map_err(|_| anyhow::anyhow!("the delete batcher stopped"))?
    }

    async fn retry_later(&self, m: &Message, delay: Duration) -> anyhow::Result<()> {
        self.client
            .change_message_visibility()
            .queue_url(&self.url)
            .receipt_handle(&m.receipt)
            .visibility_timeout(secs(delay))
            .send()
            .await?;
        Ok(())
    }

    async fn extend(&self, m: &Message, by: Duration) -> anyhow::Result<()> {
        self.retry_later(m, by).await
    }

    async fn dead_letter(&self, m: &Message, r: DeadLetterReason) -> anyhow::Result<()> {
        let dlq = &self.dlq_url;
        let now = chrono::Utc::now().timestamp_millis();
        let mut attributes = HashMap::new();
        // Cut as the store cuts it, so the DLQ's copy and the record say the same.
        let reason = crate::store::stored_text(&r.reason).into_owned();
        attributes.insert("reason".to_string(), attr(reason.clone())?);
        attributes.insert("attempts".to_string(), attr(r.attempts.to_string())?);
        attributes.insert(
            "first_failed_at".to_string(),
            attr(r.first_failed_at.unwrap_or(now).to_string())?,
        );
        attributes.insert("last_failed_at".to_string(), attr(now.to_string())?);
        if let Some(e) = &r.event_id {
            attributes.insert("event_id".to_string(), attr(e.clone())?);
        }
        let message_id = self
            .send_to(dlq, &m.body, attributes)
            .await
            .context("sending the dead letter to the DLQ")?;
        // The message is in the DLQ: its record is what the reads show. Without it the letter
        // is still there, and the worker's upkeep records it (see `reconcile`).
        let recorded = match message_id {
            Some(message_id) => self
                .store
                .sqs_dead_letter_record(&SqsDeadLetterRow {
                    message_id,
                    event_id: r.event_id.clone(),
                    reason,
                    attempts: r.attempts,
                    body: m.body.clone(),
                    first_failed_at: r.first_failed_at.unwrap_or(now),
                    last_failed_at: now,
                })
                .await
                .map(|_| ())
                .map_err(anyhow::Error::from),
            None => Err(anyhow::anyhow!("SQS gave no message id")),
        };
        if let Err(e) = recorded {
            tracing::error!(
                error = format!("{e:#}"),
                event_id = r.event_id.as_deref().unwrap_or("-"),
                "a dead letter is in the DLQ without its record; the worker's upkeep records it"
            );
        }
        self.ack(m).await
    }

    async fn enqueue(&self, body: &str) -> anyhow::Result<()> {
        self.send_to(&self.url, body, HashMap::new()).await?;
        Ok(())
    }

    async fn ping(&self) -> anyhow::Result<()> {
        self.client
            .get_queue_attributes()
            .queue_url(&self.url)
            .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
            .send()
            .await?;
        Ok(())
    }

    async fn stats(&self) -> anyhow::Result<(i64, Option<Duration>, i64)> {
        let pending = self.count(self.url.clone()).await?;
        let dead = self.count(self.dlq_url.clone()).await?;
        let now_ms = chrono::Utc::now().timestamp_millis();
        let oldest = self
            .recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(_, sent)| now_ms - sent)
            .max()
            .map(|ms| Duration::from_millis(ms.max(0) as u64));
        Ok((pending, oldest, dead))
    }

    /// The recorded dead letters: nothing is received from the DLQ, so a read hides nothing.
    async fn dead_letters(&self) -> anyhow::Result<Vec<DeadLetter>> {
        let rows = self
            .store
            .sqs_dead_letters()
            .await
            .context("reading the recorded dead letters")?;
        Ok(rows.into_iter().map(DeadLetter::from).collect())
    }

    async fn dead_letter_page(
        &self,
        offset: usize,
        limit: usize,
    ) -> anyhow::Result<(Vec<DeadLetter>, i64)> {
        let (rows, total) = self
            .store
            .sqs_dead_letter_page(offset as i64, limit as i64)
            .await
            .context("reading a page of the recorded dead letters")?;
        Ok((rows.into_iter().map(DeadLetter::from).collect(), total))
    }

    async fn reconcile_dead_letters(&self) -> anyhow::Result<u64> {
        self.reconcile().await
    }

    async fn redrive(&self, which: Selection, include_invalid: bool) -> anyhow::Result<Redriven> {
        let messages = self.dlq_messages(Duration::from_secs(30)).await?;
        let dlq = self.dlq_url.clone();
        let (chosen, not_found) = Self::selected(&which, &messages);
        // A record whose message is not in the DLQ (a forget that failed earlier) goes now.
        self.forget(&Self::missing(&which, &messages)).await;
        let mut result = Redriven {
            not_found,
            ..Redriven::default()
        };
        // Every listed message that is not gone from the DLQ is made visible again, also when a
        // step fails part way: the rest of the list would stay hidden for 30 s otherwise.
        let mut keep = Vec::new();
        let mut failed = None;
        for m in &messages {
            if failed.is_some() {
                keep.push(m.clone());
                continue;
            }
            let event_id = m
                .message_attributes()
                .and_then(|a| a.get("event_id"))
                .and_then(|v| v.string_value())
                .map(str::to_string)
                .or_else(|| {
                    crate::domain::event::parse_event(m.body().unwrap_or_default())
                        .ok()
                        .map(|e| e.event_id)
                });
            let is_chosen = chosen.iter().any(|c| c.message_id() == m.message_id());
            if !is_chosen {
                keep.push(m.clone());
                continue;
            }
            if event_id.is_none() && !include_invalid {
                result.skipped_invalid += 1;
                keep.push(m.clone());
                continue;
            }
            match self.redrive_one(&dlq, m, event_id.as_deref()).await {
                Ok(()) => result.redriven += 1,
                Err(e) => {
                    keep.push(m.clone());
                    failed = Some(e);
                }
            }
        }
        self.release_all(&dlq, &keep).await;
        match failed {
            Some(e) => Err(e.context(format!(
                "redriving dead letters ({} redriven before the failure)",
                result.redriven
            ))),
            None => Ok(result),
        }
    }

    async fn purge(&self, which: Selection) -> anyhow::Result<u64> {
        let messages = self.dlq_messages(Duration::from_secs(30)).await?;
        let dlq = self.dlq_url.clone();
        let (chosen, _) = Self::selected(&which, &messages);
        let mut n = 0;
        let mut gone = Vec::new();
        let mut failed = None;
        for m in &chosen {
            let deleted = self
                .client
                .delete_message()
                .queue_url(&dlq)
                .receipt_handle(m.receipt_handle().unwrap_or_default())
                .send()
                .await;
            match deleted {
                Ok(_) => {
                    n += 1;
                    gone.push(m.message_id());
                }
                Err(e) => {
                    failed = Some(anyhow::Error::from(e).context(format!(
                        "deleting dead letter {} ({n} purged before it)",
                        m.message_id().unwrap_or_default()
                    )));
                    break;
                }
            }
        }
        let keep: Vec<_> = messages
            .iter()
            .filter(|m| !gone.contains(&m.message_id()))
            .cloned()
            .collect();
        self.release_all(&dlq, &keep).await;
        let mut forgotten: Vec<String> = gone
            .iter()
            .filter_map(|id| id.map(str::to_string))
            .collect();
        forgotten.extend(Self::missing(&which, &messages));
        self.forget(&forgotten).await;
        match failed {
            Some(e) => Err(e),
            None => Ok(n),
        }
    }
}

/// A DLQ message as its record: the attributes the worker gave it, or, for a message SQS's own
/// redrive policy moved, what can be read from the message itself.
fn record_of(m: &aws_sdk_sqs::types::Message) -> SqsDeadLetterRow {
    let get = |k: &str| {
        m.message_attributes()
            .and_then(|a| a.get(k))
            .and_then(|v| v.string_value())
            .map(str::to_string)
    };
    let body = m.body().unwrap_or_default().to_string();
    let event_id = get("event_id").or_else(|| {
        crate::domain::event::parse_event(&body)
            .ok()
            .map(|e| e.event_id)
    });
    let now = chrono::Utc::now().timestamp_millis();
    let time = |k: &str| get(k).and_then(|v| v.parse::<i64>().ok());
    SqsDeadLetterRow {
        message_id: m.message_id().unwrap_or_default().to_string(),
        event_id,
        reason: get("reason").unwrap_or_else(|| "moved by the queue's redrive policy".to_string()),
        attempts: get("attempts").and_then(|a| a.parse().ok()).unwrap_or(0),
        body,
        first_failed_at: time("first_failed_at").unwrap_or(now),
        last_failed_at: time("last_failed_at").unwrap_or(now),
    }
}

impl From<SqsDeadLetterRow> for DeadLetter {
    fn from(d: SqsDeadLetterRow) -> Self {
        let time = |ms: i64| chrono::DateTime::from_timestamp_millis(ms).unwrap_or_default();
        DeadLetter {
            id: d.message_id,
            event_id: d.event_id,
            reason: d.reason,
            attempts: d.attempts,
            first_failed_at: time(d.first_failed_at),
            last_failed_at: time(d.last_failed_at),
            body: d.body,
        }
    }
}
