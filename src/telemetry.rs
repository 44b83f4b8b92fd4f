//! Logging (pretty or JSON lines) and the Prometheus metrics: every metric name in one place.

use crate::config::LogFormat;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock};
use tracing_subscriber::{EnvFilter, layer::SubscriberExt, util::SubscriberInitExt};

pub const HTTP_REQUESTS_TOTAL: &str = "http_requests_total";
pub const HTTP_REQUEST_DURATION_SECONDS: &str = "http_request_duration_seconds";
/// Requests answered 503 because `MAX_CONCURRENT_REQUESTS` were being served.
pub const HTTP_REQUESTS_SHED_TOTAL: &str = "http_requests_shed_total";
pub const SEARCH_CACHE_REQUESTS_TOTAL: &str = "search_cache_requests_total";
pub const EVENTS_PUBLISHED_TOTAL: &str = "events_published_total";
pub const OUTBOX_PENDING: &str = "outbox_pending";
pub const EVENTS_HANDLED_TOTAL: &str = "events_handled_total";
pub const EVENT_HANDLE_DURATION_SECONDS: &str = "event_handle_duration_seconds";
pub const EVENTS_RECLAIMED_TOTAL: &str = "events_reclaimed_total";
pub const LEASES_LOST_TOTAL: &str = "leases_lost_total";
pub const RECORD_RETRIES_TOTAL: &str = "record_retries_total";
pub const WORKER_TASK_PANICS_TOTAL: &str = "worker_task_panics_total";
pub const PASSWORD_HASHES_RUNNING: &str = "password_hashes_running";
pub const DEAD_LETTERS: &str = "dead_letters";
pub const QUEUE_OLDEST_AGE_SECONDS: &str = "queue_oldest_age_seconds";
pub const PROCESSED_EVENTS_DELETED_TOTAL: &str = "processed_events_deleted_total";
pub const APPLICATIONS_DELETED_TOTAL: &str = "applications_deleted_total";
pub const FILES_DELETED_TOTAL: &str = "files_deleted_total";
pub const UPKEEP_FAILURES_TOTAL: &str = "upkeep_failures_total";
pub const UPKEEP_EVENTS_WRITTEN_TOTAL: &str = "upkeep_events_written_total";
pub const MAIL_SERVICE_UP: &str = "mail_service_up";
pub const MAIL_SESSION_REFUSALS_TOTAL: &str = "mail_session_refusals_total";
pub const IDEMPOTENCY_FAILURES_TOTAL: &str = "idempotency_failures_total";
pub const SEARCH_INDEX_LAG: &str = "search_index_lag";
pub const SEARCH_INDEX_APPLY_SECONDS: &str = "search_index_apply_seconds";
pub const SEARCH_INDEX_APPLIED_SEQ: &str = "search_index_applied_seq";
pub const WEBHOOK_DELIVERIES_TOTAL: &str = "webhook_deliveries_total";
pub const WEBHOOK_DELIVERY_SECONDS: &str = "webhook_delivery_seconds";
pub const WEBHOOK_RETRIES_TOTAL: &str = "webhook_retries_total";
pub const WEBHOOK_ENDPOINTS_DISABLED: &str = "webhook_endpoints_disabled";

/// Installs the global log subscriber. `RUST_LOG` filters (default `info`).
pub fn init_logging(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let registry = tracing_subscriber::registry().with(filter);
    let result = match format {
        LogFormat::Pretty => registry
            .with(tracing_subscriber::fmt::layer().with_writer(std::io::stderr))
            .try_init(),
        LogFormat::Json => registry
            .with(
                tracing_subscriber::fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    // A second init (tests) keeps the first subscriber.
    let _ = result;
}

/// The metrics recorder of the tokio runtime this is called on (created on first use), whose
/// handle renders `/metrics`. The process's global recorder hands each metric to the recorder of
/// the runtime it is recorded on: a process runs one runtime, so it has one recorder; the tests
/// run one runtime per test, so each test's application counts only its own traffic and never
/// reads another test's counts. Metrics recorded outside any runtime go to the first recorder;
/// those of a runtime that never asked for a handle go to none once another runtime has one.
pub fn metrics_handle() -> PrometheusHandle {
    let router = router();
    let runtime = tokio::runtime::Handle::try_current().ok().map(|h| h.id());
    let (handle, created) = router.recorder_for(runtime);
    if created {
        // The new recorder is the current runtime's: these land in it.
        describe();
    }
    handle
}

fn new_recorder() -> PrometheusRecorder {
    PrometheusBuilder::new()
        .set_buckets_for_metric(
            Matcher::Suffix("_duration_seconds".to_string()),
            &[
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
            ],
        )
        .expect("bucket list is not empty")
        .set_buckets_for_metric(
            Matcher::Full(SEARCH_INDEX_APPLY_SECONDS.to_string()),
            &[
                0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
            ],
        )
        .expect("bucket list is not empty")
        .build_recorder()
}

/// The global recorder: one Prometheus recorder per runtime that asked for a handle.
struct Router {
    first: OnceLock<Arc<PrometheusRecorder>>,
    by_runtime: RwLock<HashMap<tokio::runtime::Id, Arc<PrometheusRecorder>>>,
}

fn router() -> &'static Router {
    static ROUTER: OnceLock<&'static Router> = OnceLock::new();
    ROUTER.get_or_init(|| {
        let router: &'static Router = Box::leak(Box::new(Router {
            first: OnceLock::new(),
            by_runtime: RwLock::new(HashMap::new()),
        }));
        if metrics::set_global_recorder(router).is_err() {
            tracing::warn!("another metrics recorder was installed first; /metrics stays empty");
        }
        // Histogram samples wait in buffers until drained; without a scrape they would pile
        // up for ever, so drain them every few seconds.
        let upkeep = std::thread::Builder::new()
            .name("metrics-upkeep".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(std::time::Duration::from_secs(5));
                    for recorder in router.all() {
                        recorder.handle().run_upkeep();
                    }
                }
            });
        if let Err(e) = upkeep {
            tracing::warn!(error = %e, "cannot start the metrics upkeep thread; histograms are drained by scrapes only");
        }
        router
    })
}

impl Router {
    /// The recorder of `runtime`, and whether it was created now.
    fn recorder_for(&self, runtime: Option<tokio::runtime::Id>) -> (PrometheusHandle, bool) {
        let mut created = false;
        let first = self.first.get_or_init(|| {
            created = true;
            Arc::new(new_recorder())
        });
        let Some(id) = runtime else {
            return (first.handle(), created);
        };
        let mut by_runtime = self.by_runtime.write().unwrap_or_else(|p| p.into_inner());
        if by_runtime.is_empty() {
            // The first runtime to ask gets the first recorder.
            by_runtime.insert(id, first.clone());
            return (first.handle(), created);
        }
        if let Some(r) = by_runtime.get(&id) {
            return (r.handle(), false);
        }
        let recorder = Arc::new(new_recorder());
        by_runtime.insert(id, recorder.clone());
        (recorder.handle(), true)
    }

    fn all(&self) -> Vec<Arc<PrometheusRecorder>> {
        let mut all: Vec<_> = self.first.get().into_iter().cloned().collect();
        let by_runtime = self.by_runtime.read().unwrap_or_else(|p| p.into_inner());
        all.extend(
            by_runtime
                .values()
                .filter(|r| !all.iter().any(|a| Arc::ptr_eq(a, r)))
                .cloned()
                .collect::<Vec<_>>(),
        );
        all
    }

    /// The recorder of the runtime this runs on, else the first. A runtime that never asked
    /// for a handle while others have one (the tests' runtimes) records into none: its
    /// metrics must not land in the first runtime's recorder and be counted as another's.
    fn current(&self) -> Option<Arc<PrometheusRecorder>> {
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            let by_runtime = self.by_runtime.read().unwrap_or_else(|p| p.into_inner());
            if let Some(r) = by_runtime.get(&h.id()) {
                return Some(r.clone());
            }
            if !by_runtime.is_empty() {
                return None;
            }
        }
        self.first.get().cloned()
    }
}

impl Recorder for Router {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        if let Some(r) = self.current() {
            r.describe_counter(key, unit, description);
        }
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        if let Some(r) = self.current() {
            r.describe_gauge(key, unit, description);
        }
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        if let Some(r) = self.current() {
            r.describe_histogram(key, unit, description);
        }
    }

    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        match self.current() {
            Some(r) => r.register_counter(key, metadata),
            None => Counter::noop(),
        }
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        match self.current() {
            Some(r) => r.register_gauge(key, metadata),
            None => Gauge::noop(),
        }
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        match self.current() {
            Some(r) => r.register_histogram(key, metadata),
            None => Histogram::noop(),
        }
    }
}

fn describe() {
    // Counters that may stay at zero for days exist from the start, so rates and alerts over
    // them have a series to read.
    metrics::counter!(EVENTS_RECLAIMED_TOTAL).increment(0);
    metrics::counter!(PROCESSED_EVENTS_DELETED_TOTAL).increment(0);
    metrics::counter!(APPLICATIONS_DELETED_TOTAL).increment(0);
    for reason in ["retention", "orphan"] {
        metrics::counter!(FILES_DELETED_TOTAL, "reason" => reason).increment(0);
    }
    metrics::counter!(LEASES_LOST_TOTAL).increment(0);
    metrics::counter!(WORKER_TASK_PANICS_TOTAL).increment(0);
    for task in [
        "queue_stats",
        "retention",
        "dead_letter_records",
        "jobs",
        "digests",
        "alerts",
    ] {
        metrics::counter!(UPKEEP_FAILURES_TOTAL, "task" => task).increment(0);
    }
    metrics::describe_counter!(
        UPKEEP_FAILURES_TOTAL,
        "Worker upkeep runs that failed, by task (queue_stats: the queue gauges are stale; retention; \
         dead_letter_records: SQS dead letters without a record are not listed; jobs: expiries \
         and expiry notices wait; digests: the hourly applications digests are late; alerts: the job \
         alerts' digests are late)"
    );
    for kind in [
        "job.expiring",
        "job.expired",
        "applications.digest",
        "alert.digest",
    ] {
        metrics::counter!(UPKEEP_EVENTS_WRITTEN_TOTAL, "type" => kind).increment(0);
    }
    metrics::describe_counter!(
        UPKEEP_EVENTS_WRITTEN_TOTAL,
        "Events the worker's upkeep wrote to the outbox, by type (an event another run or worker \
         wrote first is not counted)"
    );
    metrics::counter!(MAIL_SESSION_REFUSALS_TOTAL).increment(0);
    for outcome in ["delivered", "failed", "disabled"] {
        metrics::counter!(WEBHOOK_DELIVERIES_TOTAL, "outcome" => outcome).increment(0);
    }
    metrics::describe_counter!(
        WEBHOOK_DELIVERIES_TOTAL,
        "Webhook delivery attempts recorded, by outcome (delivered: a 2xx; failed: any other \
         answer, a timeout or a connection that failed; disabled: the attempt disabled its \
         endpoint)"
    );
    metrics::counter!(WEBHOOK_RETRIES_TOTAL).increment(0);
    metrics::describe_counter!(
        WEBHOOK_RETRIES_TOTAL,
        "Failed webhook attempts that will be tried again (each retry repeats the webhook-id)"
    );
    metrics::counter!(WEBHOOK_ENDPOINTS_DISABLED).increment(0);
    metrics::describe_counter!(
        WEBHOOK_ENDPOINTS_DISABLED,
        "Webhook endpoints disabled by their deliveries (a 410, or 5 days without a success)"
    );
    metrics::describe_histogram!(
        WEBHOOK_DELIVERY_SECONDS,
        "One webhook attempt, from the connection to the last byte of the answer read"
    );
    for step in ["release", "read_response", "store_response"] {
        metrics::counter!(IDEMPOTENCY_FAILURES_TOTAL, "step" => step).increment(0);
    }
    metrics::describe_counter!(
        IDEMPOTENCY_FAILURES_TOTAL,
        "Idempotency-Key steps that failed, by step (release: the key stays held until its 60 s \
         lock lapses, retries get 409 meanwhile; read_response: the answer was lost, the client \
         got a 500; store_response: a 4xx was not kept, a retry runs again)"
    );
    metrics::describe_gauge!(
        MAIL_SERVICE_UP,
        "1 while the mail service takes this worker's sessions; 0 from a refused session \
         (unreachable, TLS, greeting, login, throttling) until a send succeeds"
    );
    metrics::describe_counter!(
        MAIL_SESSION_REFUSALS_TOTAL,
        "Sends and probes that met a refused mail session (an outage: no attempt counted)"
    );
    metrics::gauge!(PASSWORD_HASHES_RUNNING).set(0.0);
    metrics::describe_gauge!(
        PASSWORD_HASHES_RUNNING,
        "Argon2 password hashes and checks running now (at most two per core)"
    );
    metrics::describe_counter!(
        WORKER_TASK_PANICS_TOTAL,
        "Worker handler tasks that panicked (a bug); their messages are delivered again"
    );
    metrics::describe_counter!(
        RECORD_RETRIES_TOTAL,
        "Records of accepted sends that needed retries, by result (recovered, gave_up)"
    );
    metrics::describe_counter!(
        LEASES_LOST_TOTAL,
        "Sends whose lease another worker took over before they finished"
    );
    metrics::describe_counter!(
        HTTP_REQUESTS_TOTAL,
        "HTTP requests by method, route template and status"
    );
    metrics::describe_counter!(
        HTTP_REQUESTS_SHED_TOTAL,
        "HTTP requests answered 503 because MAX_CONCURRENT_REQUESTS were being served"
    );
    metrics::describe_histogram!(
        HTTP_REQUEST_DURATION_SECONDS,
        metrics::Unit::Seconds,
        "HTTP request latency by method and route template"
    );
    metrics::describe_gauge!(
        SEARCH_INDEX_LAG,
        "Job changes in the log that this process's search index has not applied yet"
    );
    metrics::describe_gauge!(
        SEARCH_INDEX_APPLIED_SEQ,
        "The job-change log's seq this process's search index has applied and searches see"
    );
    metrics::describe_histogram!(
        SEARCH_INDEX_APPLY_SECONDS,
        metrics::Unit::Seconds,
        "Time to apply one batch of job changes to the search index, commit included"
    );
    metrics::describe_counter!(
        SEARCH_CACHE_REQUESTS_TOTAL,
        "Job-search cache look-ups by result (hit, miss)"
    );
}
