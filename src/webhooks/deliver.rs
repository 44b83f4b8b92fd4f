//! One webhook delivery over HTTP (Standard Webhooks): `POST` the body with `webhook-id`,
//! `webhook-timestamp` and `webhook-signature`, and say what the answer was. The client resolves
//! every host name through [`address::resolve_name`] and connects only to an address it
//! returned, so a name that changes its answer after the endpoint was registered (DNS
//! rebinding) reaches no private address; an IP-literal URL is checked again by
//! [`address::parse`]. No redirect is followed, no proxy used, at most [`MAX_ANSWER`] bytes of an
//! answer read, and the whole exchange has a deadline (`WEBHOOK_TIMEOUT_SECS`, [`TIMEOUT`] by
//! default).

use super::{address, sign};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One attempt's deadline by default, from the connection to the last byte read.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The most of an answer's body that is read.
pub const MAX_ANSWER: usize = 64 * 1024;

/// What to send.
pub struct Request<'a> {
    pub url: &'a str,
    pub webhook_id: &'a str,
    pub body: &'a str,
    /// `whsec_…` secrets; each signs.
    pub secrets: &'a [String],
    /// Unix seconds (`webhook-timestamp`).
    pub timestamp: i64,
}

/// What came of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status, when one came.
    pub status: Option<u16>,
    /// Why it failed, in words, when it did.
    pub error: Option<String>,
    pub duration: Duration,
}

impl Answer {
    /// A 2xx answer.
    pub fn delivered(&self) -> bool {
        self.status.is_some_and(|s| (200..300).contains(&s))
    }

    /// 410 Gone: the receiver wants no more.
    pub fn gone(&self) -> bool {
        self.status == Some(410)
    }
}

/// What an attempt says of a host refused by the address rules, whatever the reason.
const HIDDEN: &str = "the host's addresses are not public, or it does not resolve";

/// Resolves through the address rules.
struct Checked {
    allow_private: bool,
}

impl reqwest::dns::Resolve for Checked {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_string();
        let allow_private = self.allow_private;
        Box::pin(async move {
            let addrs = address::resolve_name(&host, 0, allow_private)
                .await
                .map_err(|refused| {
                    // The endpoint's members read the attempt's error: it does not say what a
                    // name resolves to inside the board's network.
                    tracing::info!(host, reason = %refused, "a webhook's host was refused");
                    Box::<dyn std::error::Error + Send + Sync>::from(HIDDEN)
                })?;
            Ok(Box::new(addrs.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The deliveries' HTTP client.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    allow_private: bool,
    timeout: Duration,
}

impl Client {
    /// `allow_private`: `WEBHOOK_ALLOW_PRIVATE`; `timeout`: `WEBHOOK_TIMEOUT_SECS`.
    pub fn new(allow_private: bool, timeout: Duration) -> anyhow::Result<Client> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(timeout)
            .connect_timeout(timeout)
            .dns_resolver(Arc::new(Checked { allow_private }))
            .user_agent(concat!("jobboard-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| anyhow::anyhow!("building the webhooks' HTTP client: {e}"))?;
        Ok(Client {
            http,
            allow_private,
            timeout,
        })
    }

    /// Sends one delivery and reads at most [`MAX_ANSWER`] bytes of the answer.
    pub async fn send(&self, req: Request<'_>) -> Answer {
        let started = Instant::now();
        let failed = |error: String| Answer {
            status: None,
            error: Some(error),
            duration: started.elapsed(),
        };
        let target = match address::parse(req.url, self.allow_private) {
            Ok(target) => target,
            Err(refused) => return failed(format!("not sent: {refused}")),
        };
        let secrets = match req
            .secrets
            .iter()
            .map(|s| sign::Secret::parse(s))
            .collect::<Result<Vec<_>, _>>()
        {
            Ok(secrets) => secrets,
            Err(e) => {
                return failed(format!(
                    "not sent: the endpoint's secret is unreadable: {e}"
                ));
            }
        };
        let signature =
            sign::signature(&secrets, req.webhook_id, req.timestamp, req.body.as_bytes());
        let sent = self
            .http
            .post(target.url)
            .header("content-type", "application/json")
            .header("webhook-id", req.webhook_id)
            .header("webhook-timestamp", req.timestamp.to_string())
            .header("webhook-signature", signature)
            .body(req.body.to_string())
            .send()
            .await;
        let mut answer = match sent {
            Ok(answer) => answer,
            Err(e) => return failed(describe(&e, self.timeout)),
        };
        let status = answer.status().as_u16();
        // The body is read (to keep the connection reusable) up to the limit, then dropped.
        let mut read = 0usize;
        let mut cut = None;
        while read < MAX_ANSWER {
            match answer.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) => break,
                Err(e) => {
                    cut = Some(describe(&e, self.timeout));
                    break;
                }
            }
        }
        let error = if (200..300).contains(&status) {
            None
        } else {
            Some(match status {
                300..=399 => format!("the receiver answered {status} (redirects are not followed)"),
                _ => format!("the receiver answered {status}"),
            })
        };
        Answer {
            status: Some(status),
            error: error.or(cut.filter(|_| !(200..300).contains(&status))),
            duration: started.elapsed(),
        }
    }
}

/// An error of the client in words, with its causes (a refused address says which).
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    let what = if e.is_timeout() {
        format!("no answer within {} s", timeout.as_secs())
    } else if e.is_connect() {
        "could not connect".to_string()
    } else {
        "the request failed".to_string()
    };
    let mut causes = Vec::new();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !causes.contains(&text) {
            causes.push(text);
        }
        source = cause.source();
    }
    if causes.is_empty() {
        what
    } else {
        format!("{what}: {}", causes.join(": "))
    }
}
