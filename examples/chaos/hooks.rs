//! The chaos run's webhook receivers: a steady endpoint that answers 204 at once, and a flaky one
//! that answers 500 to a share of the requests, and to another share answers only after the
//! workers' deadline has passed (a hang: they have given up by then). Each counts, per
//! `webhook-id`, the requests it got and the 2xx it answered, so that the run can tell which
//! deliveries arrived and how often each was repeated.

use anyhow::{Context, Result};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use rand::Rng;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What one receiver saw of one `webhook-id`.
#[derive(Debug, Default, Clone, Copy)]
pub struct Seen {
    pub requests: usize,
    pub answered_2xx: usize,
}

#[derive(Debug, Clone, Copy)]
pub struct Flakiness {
    /// Share of requests answered 500.
    pub fail: f64,
    /// Share of requests answered (503) only after `hang_for`.
    pub hang: f64,
    pub hang_for: Duration,
}

#[derive(Default)]
struct Book {
    /// (receiver, webhook-id) -> what it saw.
    seen: HashMap<(String, String), Seen>,
    failed: usize,
    hung: usize,
}

#[derive(Clone)]
pub struct Receivers {
    base: String,
    book: Arc<Mutex<Book>>,
    flaky: Arc<Mutex<Flakiness>>,
}

/// The receiver names: `steady` answers 204 at once, `flaky` as [`Flakiness`] says.
pub const STEADY: &str = "steady";
pub const FLAKY: &str = "flaky";

impl Receivers {
    pub async fn start(flaky: Flakiness) -> Result<Receivers> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the webhook receivers")?;
        let base = format!("http://{}", listener.local_addr()?);
        let receivers = Receivers {
            base,
            book: Arc::default(),
            flaky: Arc::new(Mutex::new(flaky)),
        };
        let app = axum::Router::new()
            .route("/{name}", axum::routing::post(receive))
            .with_state(receivers.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(receivers)
    }

    pub fn url(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    /// From now on the flaky receiver answers every request at once with 204.
    pub fn calm(&self) {
        if let Ok(mut f) = self.flaky.lock() {
            f.fail = 0.0;
            f.hang = 0.0;
        }
    }

    /// What `name` saw, per `webhook-id`.
    pub fn seen(&self, name: &str) -> HashMap<String, Seen> {
        let book = self.book.lock().map(|b| b.seen.clone()).unwrap_or_default();
        book.into_iter()
            .filter(|((r, _), _)| r == name)
            .map(|((_, id), s)| (id, s))
            .collect()
    }

    /// The flaky receiver's 500s and hangs.
    pub fn troubles(&self) -> (usize, usize) {
        self.book
            .lock()
            .map(|b| (b.failed, b.hung))
            .unwrap_or_default()
    }
}

async fn receive(
    State(r): State<Receivers>,
    Path(name): Path<String>,
    headers: HeaderMap,
) -> StatusCode {
    let id = headers
        .get("webhook-id")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let flaky = r.flaky.lock().map(|f| *f).ok();
    let roll: f64 = rand::thread_rng().r#gen();
    let answer = match flaky {
        Some(f) if name == FLAKY && roll < f.fail => Some(StatusCode::INTERNAL_SERVER_ERROR),
        Some(f) if name == FLAKY && roll < f.fail + f.hang => None,
        _ => Some(StatusCode::NO_CONTENT),
    };
    {
        let Ok(mut book) = r.book.lock() else {
            return StatusCode::INTERNAL_SERVER_ERROR;
        };
        match answer {
            Some(StatusCode::NO_CONTENT) => {}
            Some(_) => book.failed += 1,
            None => book.hung += 1,
        }
        let seen = book.seen.entry((name, id)).or_default();
        seen.requests += 1;
        if answer == Some(StatusCode::NO_CONTENT) {
            seen.answered_2xx += 1;
        }
    }
    match answer {
        Some(status) => status,
        None => {
            let hang_for = flaky.map(|f| f.hang_for).unwrap_or_default();
            tokio::time::sleep(hang_for).await;
            StatusCode::SERVICE_UNAVAILABLE
        }
    }
}
