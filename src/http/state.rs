//! The state every request handler shares. Built by the wiring in `run`; the HTTP layer only
//! uses it.

use crate::auth::Tokens;
use crate::cache::SearchCache;
use crate::config::Config;
use crate::queue::Queue;
use crate::relay::Relay;
use crate::search::SearchIndex;
use crate::store::Store;
use metrics_exporter_prometheus::PrometheusHandle;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Everything a request handler needs. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub cache: Arc<dyn SearchCache>,
    /// This process's search index, which every search is answered from.
    pub search: Arc<SearchIndex>,
    pub tokens: Arc<Tokens>,
    /// The keys of unsubscribe links: `UNSUBSCRIBE_SECRET` (or `JWT_SECRET`'s) signs; the
    /// previous ones and the JWT secrets verify too.
    pub unsubscribe: Arc<crate::unsubscribe::Keys>,
    pub metrics: PrometheusHandle,
    /// Cancelled when shutdown begins; `/readyz` turns 503 at once.
    pub shutdown: CancellationToken,
    /// Cancelled `SHUTDOWN_DRAIN_SECS` after `shutdown`: the listeners stop taking new work and
    /// the background loops (outbox relay, cache upkeep) end.
    pub stopping: CancellationToken,
    /// A hash that unknown emails are checked against, so a login takes as long either way.
    pub dummy_hash: Arc<str>,
    /// With `QUEUE=sqs`, the relay that publishes the outbox.
    pub relay: Option<Arc<Relay>>,
    /// The queue the operator endpoints read and act on (dead letters, figures), the same the
    /// `dlq` commands use.
    pub queue: Arc<dyn Queue>,
    /// Where résumés live (`FILE_STORE`), and the folder uploads are spooled in.
    pub files: crate::files::Files,
}

impl AppState {
    /// Called after a status change committed its event to the outbox.
    pub fn event_committed(&self) {
        match &self.relay {
            Some(relay) => relay.poke(),
            // With QUEUE=db the outbox is the queue: committed is published.
            None => metrics::counter!(crate::telemetry::EVENTS_PUBLISHED_TOTAL).increment(1),
        }
    }
}
