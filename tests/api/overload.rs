//! `MAX_CONCURRENT_REQUESTS`: past the limit a request is answered 503 problem+json with
//! `Retry-After` at once, before it does anything; the operations endpoints still answer; every
//! write that was answered 201 is stored and searchable, and nothing answers 500.

use crate::helpers::*;
use serde_json::{Value, json};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const LIMIT: &str = "4";

mod past_the_limit_requests_are_refused_at_once_and_nothing_is_lost {
    use crate::helpers::{Backend, CacheKind, TestApp};
    const ENV: &[(&str, &str)] = &[("MAX_CONCURRENT_REQUESTS", super::LIMIT)];
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sqlite() {
        super::past_the_limit_requests_are_refused_at_once_and_nothing_is_lost(
            TestApp::spawn_with(Backend::Sqlite, CacheKind::Memory, ENV).await,
        )
        .await
    }
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres() {
        super::past_the_limit_requests_are_refused_at_once_and_nothing_is_lost(
            TestApp::spawn_with(Backend::Postgres, CacheKind::Memory, ENV).await,
        )
        .await
    }
}

fn job_body(company: i64, title: &str) -> String {
    json!({
        "company_id": company, "title": title, "description": "Weld things",
        "location": "Berlin", "remote": false, "employment_type": "full_time",
    })
    .to_string()
}

/// A job creation whose body is sent in two halves: until the second, the request is being
/// served (its handler waits for the body) and holds one of the API's slots.
struct Held {
    stream: TcpStream,
    rest: Vec<u8>,
}

impl Held {
    async fn start(app: &TestApp, token: &str, body: String) -> Held {
        let mut stream = TcpStream::connect(app.addr).await.expect("connect");
        let head = format!(
            "POST /api/jobs HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            app.addr,
            body.len()
        );
        let bytes = body.into_bytes();
        let (first, rest) = bytes.split_at(bytes.len() / 2);
        stream.write_all(head.as_bytes()).await.expect("write");
        stream.write_all(first).await.expect("write");
        Held {
            stream,
            rest: rest.to_vec(),
        }
    }

    /// Sends the rest and reads the answer's status and body.
    async fn finish(mut self) -> (u16, Value) {
        self.stream.write_all(&self.rest).await.expect("write");
        let mut buf = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            let n = tokio::time::timeout(Duration::from_secs(10), self.stream.read(&mut chunk))
                .await
                .expect("an answer within 10 s")
                .expect("read");
            if n == 0 {
                break;
            }
            buf.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&buf);
            if let Some(end) = text.find("\r\n\r\n")
                && let Some(len) = text[..end].lines().find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                })
                && buf.len() >= end + 4 + len
            {
                break;
            }
        }
        let text = String::from_utf8_lossy(&buf).to_string();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .and_then(|(_, b)| serde_json::from_str(b).ok())
            .unwrap_or(Value::Null);
        (status, body)
    }
}

async fn create(app: &TestApp, token: &str, company: i64, title: String) -> Resp {
    let res = app
        .client
        .post(app.url("/api/jobs"))
        .bearer_auth(token)
        .header("content-type", "application/json")
        .body(job_body(company, &title))
        .send()
        .await
        .expect("request");
    TestApp::read(res).await
}

async fn past_the_limit_requests_are_refused_at_once_and_nothing_is_lost(app: TestApp) {
    let e = app.user("employer").await;
    let c = app.company(&e, "Acme").await;

    // Four creations hold the four slots.
    let mut held = Vec::new();
    for i in 0..4 {
        held.push(Held::start(&app, &e.token, job_body(c, &format!("Held welder {i}"))).await);
    }
    // Their heads reach the server before the first probe does (a probe that came first would
    // take a slot and leave a held request refused).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let started = std::time::Instant::now();
    loop {
        let r = app.get("/api/jobs", None).await;
        if r.status.as_u16() == 503 {
            break;
        }
        r.expect(200);
        if started.elapsed() > Duration::from_secs(10) {
            let mut answers = Vec::new();
            for h in held {
                answers.push(h.finish().await);
            }
            panic!("the slots never filled; the held requests got {answers:?}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // Every request past them is refused at once, with Retry-After, and writes nothing.
    let before = app.scalar_i64("SELECT COUNT(*) FROM jobs").await;
    let refused = futures::future::join_all(
        (0..12).map(|i| create(&app, &e.token, c, format!("Refused welder {i}"))),
    )
    .await;
    for r in &refused {
        let p = r.expect_problem(503, "overloaded");
        assert!(p["detail"].is_string(), "{}", r.text);
        assert_eq!(r.header("retry-after"), Some("1"), "{}", r.text);
        assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
    }
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM jobs").await, before);
    // The operations endpoints still answer.
    for path in ["/healthz", "/readyz", "/metrics"] {
        let res = app.client.get(app.url(path)).send().await.expect("request");
        assert_eq!(res.status().as_u16(), 200, "{path}");
    }

    // The held creations complete.
    let mut ids = Vec::new();
    for h in held {
        let (status, body) = h.finish().await;
        assert_eq!(status, 201, "{body}");
        ids.push(body["id"].as_i64().expect("id"));
    }

    // A burst of creations four times the limit: each is 201 or 503, none 500.
    let burst = futures::future::join_all(
        (0..16).map(|i| create(&app, &e.token, c, format!("Burst welder {i}"))),
    )
    .await;
    for r in &burst {
        match r.status.as_u16() {
            201 => ids.push(r.body["id"].as_i64().expect("id")),
            503 => {
                r.expect_problem(503, "overloaded");
                assert_eq!(r.header("retry-after"), Some("1"));
            }
            other => panic!("{other}: {}", r.text),
        }
    }

    // Every job answered 201 is stored and found by search; no other job is.
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM jobs").await,
        ids.len() as i64
    );
    let list: Vec<String> = ids.iter().map(i64::to_string).collect();
    let r = app
        .get(
            &format!("/api/jobs?ids={}&page_size=100", list.join(",")),
            None,
        )
        .await;
    let mut found: Vec<i64> = r.expect(200)["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|j| j["id"].as_i64())
        .collect();
    found.sort_unstable();
    ids.sort_unstable();
    assert_eq!(found, ids);
    let r = app.get("/api/jobs?q=welder&page_size=100", None).await;
    assert_eq!(r.expect(200)["total"], json!(ids.len()));
}
