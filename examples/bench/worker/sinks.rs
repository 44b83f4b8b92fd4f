//! Where the emails go and how the harness reads them back: files, a local SMTP server, or
//! SES v2 on the SQS test server behind a recording proxy.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Emails accepted, by event id, with the time each was accepted.
#[derive(Default, Clone)]
struct Accepted(Arc<Mutex<Vec<(String, SystemTime)>>>);

impl Accepted {
    fn snapshot(&self) -> Vec<(String, SystemTime)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Where a scenario's emails go, and how the harness reads them back.
pub(crate) enum Sink {
    Files(PathBuf),
    Smtp(SmtpSink),
    Ses(SesSink),
}

impl Sink {
    pub(crate) fn accepted(&self) -> Result<Vec<(String, SystemTime)>> {
        match self {
            Sink::Smtp(s) => Ok(s.accepted.snapshot()),
            Sink::Ses(s) => Ok(s.accepted.snapshot()),
            Sink::Files(dir) => {
                let mut out = Vec::new();
                let entries = match std::fs::read_dir(dir) {
                    Ok(e) => e,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
                    Err(e) => return Err(e.into()),
                };
                for entry in entries {
                    let entry = entry?;
                    let name = entry.file_name().to_string_lossy().into_owned();
                    if !name.ends_with(".eml") || name.len() < 36 {
                        continue;
                    }
                    out.push((name[..36].to_string(), entry.metadata()?.modified()?));
                }
                Ok(out)
            }
        }
    }

    /// How many emails were accepted (cheap: no file metadata).
    pub(crate) fn count(&self) -> Result<usize> {
        match self {
            Sink::Smtp(s) => Ok(s.accepted.0.lock().unwrap_or_else(|p| p.into_inner()).len()),
            Sink::Ses(s) => Ok(s.accepted.0.lock().unwrap_or_else(|p| p.into_inner()).len()),
            Sink::Files(dir) => match std::fs::read_dir(dir) {
                Ok(entries) => Ok(entries
                    .filter_map(|e| e.ok())
                    .filter(|e| e.file_name().as_encoded_bytes().ends_with(b".eml"))
                    .count()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
                Err(e) => Err(e.into()),
            },
        }
    }

    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        match self {
            Sink::Files(dir) => vec![
                ("EMAIL_BACKEND", "file".into()),
                ("EMAIL_FILE_DIR", dir.display().to_string()),
            ],
            Sink::Smtp(s) => vec![
                ("EMAIL_BACKEND", "smtp".into()),
                ("SMTP_URL", format!("smtp://{}?tls=none", s.addr)),
            ],
            Sink::Ses(s) => vec![
                ("EMAIL_BACKEND", "ses".into()),
                ("AWS_ENDPOINT_URL_SESV2", format!("http://{}", s.addr)),
            ],
        }
    }
}

/// A local SMTP server that accepts every message after `delay`, and notes the event id
/// (`X-Jobboard-Event-Id`) and the time of each.
pub(crate) struct SmtpSink {
    addr: std::net::SocketAddr,
    accepted: Accepted,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SmtpSink {
    pub(crate) async fn start(delay: Duration) -> Result<SmtpSink> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let accepted = Accepted::default();
        let sink = accepted.clone();
        let task = tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                let sink = sink.clone();
                tokio::spawn(async move {
                    let _ = serve_smtp(conn, delay, sink).await;
                });
            }
        });
        Ok(SmtpSink {
            addr,
            accepted,
            task,
        })
    }
}

async fn serve_smtp(conn: tokio::net::TcpStream, delay: Duration, sink: Accepted) -> Result<()> {
    let (read, mut write) = conn.into_split();
    let mut read = BufReader::new(read);
    write.write_all(b"220 bench ESMTP\r\n").await?;
    let mut line = String::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            return Ok(());
        }
        let verb = line.get(..4).unwrap_or("").to_ascii_uppercase();
        match verb.as_str() {
            "EHLO" => write.write_all(b"250-bench\r\n250 8BITMIME\r\n").await?,
            "HELO" | "MAIL" | "RCPT" | "RSET" | "NOOP" => write.write_all(b"250 OK\r\n").await?,
            "DATA" => {
                write.write_all(b"354 go on\r\n").await?;
                let mut event = None;
                loop {
                    line.clear();
                    if read.read_line(&mut line).await? == 0 {
                        return Ok(());
                    }
                    if line == ".\r\n" || line == ".\n" {
                        break;
                    }
                    if event.is_none()
                        && let Some(v) = line.strip_prefix("X-Jobboard-Event-Id:")
                    {
                        event = Some(v.trim().to_string());
                    }
                }
                if !delay.is_zero() {
                    tokio::time::sleep(delay).await;
                }
                if let Some(id) = event {
                    sink.0
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((id, SystemTime::now()));
                }
                write.write_all(b"250 accepted\r\n").await?;
            }
            "QUIT" => {
                write.write_all(b"221 bye\r\n").await?;
                return Ok(());
            }
            _ => write.write_all(b"502 not here\r\n").await?,
        }
    }
}

/// SES v2 on the SQS test server, behind a proxy that notes each `SendEmail` the server
/// accepted, with its event id and the time of the answer, as the SMTP sink notes its 250s.
pub(crate) struct SesSink {
    addr: std::net::SocketAddr,
    accepted: Accepted,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for SesSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SesSink {
    pub(super) async fn start() -> Result<SesSink> {
        let server = std::env::var("AWS_ENDPOINT_URL").context("AWS_ENDPOINT_URL")?;
        // The sender's domain (EMAIL_FROM's), verified; a second run finds it there already.
        let shared = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
        let ses = aws_sdk_sesv2::Client::new(&shared);
        if let Err(e) = ses
            .create_email_identity()
            .email_identity("bench.example")
            .send()
            .await
        {
            let text = aws_sdk_sesv2::error::DisplayErrorContext(&e).to_string();
            anyhow::ensure!(
                text.contains("AlreadyExists"),
                "verifying bench.example: {text}"
            );
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let accepted = Accepted::default();
        let (sink, client) = (accepted.clone(), reqwest::Client::new());
        let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
            let (sink, client, server) = (sink.clone(), client.clone(), server.clone());
            async move { forward_ses(req, &client, &server, &sink).await }
        });
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(SesSink {
            addr,
            accepted,
            task,
        })
    }
}

/// Passes one request on to the test server; a `SendEmail` it accepts is noted.
async fn forward_ses(
    req: axum::extract::Request,
    client: &reqwest::Client,
    server: &str,
    sink: &Accepted,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let (parts, body) = req.into_parts();
    let Ok(body) = axum::body::to_bytes(body, 16 << 20).await else {
        return (axum::http::StatusCode::BAD_REQUEST, "body").into_response();
    };
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str())
        .unwrap_or("/");
    let method = reqwest::Method::from_bytes(parts.method.as_str().as_bytes())
        .unwrap_or(reqwest::Method::POST);
    let mut out = client.request(method, format!("{server}{path}"));
    for (name, value) in &parts.headers {
        if name != axum::http::header::HOST {
            out = out.header(name.as_str(), value.as_bytes());
        }
    }
    let answer = match out.body(body.clone()).send().await {
        Ok(answer) => answer,
        Err(e) => return (axum::http::StatusCode::BAD_GATEWAY, e.to_string()).into_response(),
    };
    let status = answer.status().as_u16();
    let kind = answer
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    let bytes = answer.bytes().await.unwrap_or_default();
    if status == 200
        && let Some(id) = ses_event_id(&body)
    {
        sink.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((id, SystemTime::now()));
    }
    let status = axum::http::StatusCode::from_u16(status).unwrap_or(axum::http::StatusCode::OK);
    (
        status,
        [(axum::http::header::CONTENT_TYPE, kind)],
        bytes.to_vec(),
    )
        .into_response()
}

/// The `X-Jobboard-Event-Id` of a `SendEmail` request's raw message, if it is one.
fn ses_event_id(body: &[u8]) -> Option<String> {
    let request: serde_json::Value = serde_json::from_slice(body).ok()?;
    let data = request["Content"]["Raw"]["Data"].as_str()?;
    let raw = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, data).ok()?;
    let raw = String::from_utf8_lossy(&raw);
    let at = raw.find("X-Jobboard-Event-Id: ")? + "X-Jobboard-Event-Id: ".len();
    Some(raw[at..].lines().next()?.trim().to_string())
}
