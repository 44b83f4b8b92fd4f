//! A rollout as an operator runs one: HAProxy in front of two `jobboard serve` processes on one
//! PostgreSQL database, health-checking `/readyz` every 200 ms and taking a server out after two
//! failed checks, with no retries and no redispatch (so the proxy hides no failure from the
//! client). While a steady, bounded load of reads and keyed writes goes through the proxy, each
//! API process is restarted in turn (SIGTERM, wait for its exit, start it again), then each worker
//! process. Not one request may fail, and every status change is emailed exactly once.

use crate::helpers::*;
use crate::smtp::SmtpServer;
use crate::worker::wait_until;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_jobboard");

/// The proxy's health check: every 200 ms, out after 2 failures, back after 2 successes. A drain
/// of 1 s covers the 400 ms the proxy needs to notice, with room for a check in flight.
const HAPROXY_BACKEND: &str = "    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 200ms fastinter 200ms downinter 200ms fall 2 rise 2
";
const DRAIN_SECS: &str = "1";

/// One `jobboard` process whose log goes to a file.
struct Process {
    args: Vec<String>,
    env: Vec<(String, String)>,
    log: PathBuf,
    child: tokio::process::Child,
    starts: usize,
}

impl Process {
    fn spawn(args: &[&str], env: &[(&str, &str)], dir: &Path, name: &str) -> Process {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let mut env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        // Each API process keeps its own search index, across its restarts.
        if !env.iter().any(|(k, _)| k == "SEARCH_INDEX_DIR") {
            let search = dir.join(format!("{name}-search")).display().to_string();
            env.push(("SEARCH_INDEX_DIR".to_string(), search));
        }
        let log = dir.join(format!("{name}.log"));
        let child = Self::start(&args, &env, &log, 0);
        Process {
            args,
            env,
            log,
            child,
            starts: 1,
        }
    }

    fn start(
        args: &[String],
        env: &[(String, String)],
        log: &Path,
        n: usize,
    ) -> tokio::process::Child {
        let file = std::fs::File::create(log.with_extension(format!("{n}.log"))).unwrap();
        let mut cmd = tokio::process::Command::new(BIN);
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("LOG_FORMAT", "json")
            .stdout(Stdio::null())
            .stderr(file)
            .kill_on_drop(true);
        for (k, v) in env {
            cmd.env(k, v);
        }
        cmd.spawn().expect("spawn jobboard")
    }

    fn current_log(&self) -> String {
        std::fs::read_to_string(self.log.with_extension(format!("{}.log", self.starts - 1)))
            .unwrap_or_default()
    }

    /// The port the API reports it listens on.
    async fn port(&self) -> u16 {
        let needle = "listening on http://127.0.0.1:";
        for _ in 0..600 {
            let log = self.current_log();
            if let Some(i) = log.find(needle) {
                let digits: String = log[i + needle.len()..]
                    .chars()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                return digits.parse().expect("a port");
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the API did not start: {}", self.current_log());
    }

    /// SIGTERM, then waits for the exit, which must be a clean one.
    async fn stop(&mut self) {
        let pid = self.child.id().expect("running").to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("stops within 30 s")
            .unwrap();
        assert_eq!(
            status.code(),
            Some(0),
            "a graceful stop exits 0: {}",
            self.current_log()
        );
    }

    /// Starts the same command again, with `extra` variables on top.
    fn restart(&mut self, extra: &[(&str, &str)]) {
        for (k, v) in extra {
            self.env.retain(|(key, _)| key != k);
            self.env.push((k.to_string(), v.to_string()));
        }
        self.child = Self::start(&self.args, &self.env, &self.log, self.starts);
        self.starts += 1;
    }
}

/// HAProxy in the foreground, with its statistics page on the public frontend.
struct Haproxy {
    port: u16,
    _child: tokio::process::Child,
}

impl Haproxy {
    /// Starts HAProxy on a port the test binds (port 0) and hands over as HAProxy's standard
    /// input (`bind fd@0`): nothing else can take the port between the two.
    async fn start(dir: &Path, servers: &[u16]) -> Haproxy {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut cfg = format!(
            "global
    maxconn 256
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    retries 0
frontend public
    bind fd@0
    stats enable
    stats uri /haproxy-stats
    default_backend api
backend api
    balance roundrobin
{HAPROXY_BACKEND}"
        );
        for (i, p) in servers.iter().enumerate() {
            cfg.push_str(&format!("    server api{i} 127.0.0.1:{p} check\n"));
        }
        let path = dir.join("haproxy.cfg");
        std::fs::write(&path, &cfg).unwrap();
        // The check opens the listeners too: it gets a copy of the socket.
        let socket = listener.try_clone().unwrap();
        let check = std::process::Command::new("haproxy")
            .args(["-c", "-f"])
            .arg(&path)
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(socket)))
            .output()
            .unwrap_or_else(|e| {
                panic!("HAProxy is required for this test ({e}); scripts/services installs it")
            });
        assert!(
            check.status.success(),
            "haproxy -c: {}",
            String::from_utf8_lossy(&check.stderr)
        );
        let log = dir.join("haproxy.log");
        let mut child = tokio::process::Command::new("haproxy")
            .args(["-db", "-f"])
            .arg(&path)
            .stdin(Stdio::from(std::os::fd::OwnedFd::from(listener)))
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).unwrap())
            .kill_on_drop(true)
            .spawn()
            .expect("start haproxy");
        let proxy_url = format!("http://127.0.0.1:{port}/haproxy-stats;csv");
        let client = reqwest::Client::new();
        for _ in 0..100 {
            if let Some(status) = child.try_wait().unwrap() {
                panic!(
                    "haproxy exited ({status}): {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            if let Ok(res) = client.get(&proxy_url).send().await
                && res.text().await.unwrap_or_default().starts_with("# pxname")
            {
                return Haproxy {
                    port,
                    _child: child,
                };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "HAProxy did not answer: {}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{}", self.port, path)
    }

    /// Each API server's state as the proxy sees it (`UP`, `DOWN`, ...), in server order.
    async fn states(&self, client: &reqwest::Client) -> Vec<String> {
        let Ok(res) = client.get(self.url("/haproxy-stats;csv")).send().await else {
            return vec![];
        };
        let text = res.text().await.unwrap_or_default();
        let mut lines = text.lines();
        let header: Vec<&str> = lines
            .next()
            .unwrap_or("")
            .trim_start_matches("# ")
            .split(',')
            .collect();
        let col = |name: &str| header.iter().position(|h| *h == name);
        let (Some(sv), Some(st)) = (col("svname"), col("status")) else {
            return vec![];
        };
        lines
            .map(|l| l.split(',').collect::<Vec<_>>())
            .filter(|f| f.get(sv).is_some_and(|s| s.starts_with("api")))
            .map(|f| f.get(st).unwrap_or(&"").to_string())
            .collect()
    }

    async fn wait_all_up(&self, client: &reqwest::Client, n: usize) {
        wait_until("every API server is UP in the proxy", || async {
            let s = self.states(client).await;
            s.len() == n && s.iter().all(|s| s == "UP")
        })
        .await;
    }
}

/// What the load saw.
#[derive(Default)]
struct Load {
    reads: AtomicUsize,
    writes: AtomicUsize,
    failures: Mutex<Vec<String>>,
    stop: AtomicBool,
}

impl Load {
    fn failed(&self, what: String) {
        self.failures.lock().unwrap().push(what);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rolling_restart_behind_haproxy_fails_no_request_and_emails_once() {
    let app = TestApp::spawn(Backend::Postgres, CacheKind::Memory).await;
    let smtp = SmtpServer::start().await;
    smtp.set_delay(Duration::from_millis(20));
    let dir = tempfile::tempdir().unwrap();

    // Applications to move through the workflow: 8 candidates applying to 10 jobs.
    let employer = app.user("employer").await;
    let company = app.company(&employer, "Rollout").await;
    let mut jobs = Vec::new();
    for _ in 0..10 {
        jobs.push(
            app.job(&employer, company, json!({})).await["id"]
                .as_i64()
                .unwrap(),
        );
    }
    let mut applications = Vec::new();
    for _ in 0..8 {
        let c = app.user("candidate").await;
        for job in &jobs {
            applications.push(app.apply(&c, *job).await["id"].as_i64().unwrap());
        }
    }

    let events_before = app
        .scalar_i64("SELECT COUNT(*) FROM application_history WHERE event_id IS NOT NULL")
        .await as usize;

    let smtp_url = smtp.url();
    let jwt = app.vars["JWT_SECRET"].clone();
    let api_env: Vec<(&str, &str)> = vec![
        ("DATABASE_URL", &app.database_url),
        ("BIND_ADDR", "127.0.0.1:0"),
        ("JWT_SECRET", &jwt),
        ("SHUTDOWN_DRAIN_SECS", DRAIN_SECS),
        ("SHUTDOWN_GRACE_SECS", "10"),
    ];
    let mut apis: Vec<Process> = (0..2)
        .map(|i| {
            Process::spawn(
                &["serve", "--no-migrate"],
                &api_env,
                dir.path(),
                &format!("api{i}"),
            )
        })
        .collect();
    let mut ports = Vec::new();
    for api in &apis {
        ports.push(api.port().await);
    }
    let worker_env: Vec<(&str, &str)> = vec![
        ("DATABASE_URL", &app.database_url),
        ("WORKER_HTTP_ADDR", "127.0.0.1:0"),
        ("EMAIL_BACKEND", "smtp"),
        ("SMTP_URL", &smtp_url),
        ("EMAIL_FROM", "jobs@jobboard.example"),
        ("SHUTDOWN_GRACE_SECS", "10"),
    ];
    let mut workers: Vec<Process> = (0..2)
        .map(|i| Process::spawn(&["worker"], &worker_env, dir.path(), &format!("worker{i}")))
        .collect();

    let proxy = Arc::new(Haproxy::start(dir.path(), &ports).await);
    let client = reqwest::Client::new();
    proxy.wait_all_up(&client, 2).await;

    // The load: two readers, two writers moving their applications through the workflow, each
    // change with its own Idempotency-Key; one request at a time each, with a pause between.
    let load = Arc::new(Load::default());
    let mut tasks = Vec::new();
    for &job in &jobs[..2] {
        let (load, proxy, client) = (load.clone(), proxy.clone(), client.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0usize;
            while !load.stop.load(Ordering::SeqCst) {
                let path = if i.is_multiple_of(2) {
                    "/api/jobs?page_size=5".to_string()
                } else {
                    format!("/api/jobs/{job}")
                };
                i += 1;
                match client.get(proxy.url(&path)).send().await {
                    Ok(res) if res.status() == 200 => {
                        load.reads.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok(res) => {
                        let s = res.status();
                        load.failed(format!(
                            "GET {path}: {s} {}",
                            res.text().await.unwrap_or_default()
                        ));
                    }
                    Err(e) => load.failed(format!("GET {path}: {e}")),
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }));
    }
    for w in 0..2 {
        let (load, proxy, client) = (load.clone(), proxy.clone(), client.clone());
        let token = employer.token.clone();
        let mine: Vec<i64> = applications.iter().copied().skip(w).step_by(2).collect();
        tasks.push(tokio::spawn(async move {
            'apps: for id in mine {
                for status in ["reviewing", "interview", "offered", "hired"] {
                    if load.stop.load(Ordering::SeqCst) {
                        break 'apps;
                    }
                    let res = client
                        .patch(proxy.url(&format!("/api/applications/{id}")))
                        .bearer_auth(&token)
                        .header("Idempotency-Key", format!("rollout-{id}-{status}"))
                        .json(&json!({"status": status}))
                        .send()
                        .await;
                    match res {
                        Ok(res) if res.status() == 200 => {
                            load.writes.fetch_add(1, Ordering::SeqCst);
                        }
                        Ok(res) => {
                            let s = res.status();
                            load.failed(format!(
                                "PATCH {id} {status}: {s} {}",
                                res.text().await.unwrap_or_default()
                            ));
                            // The workflow of this application cannot go on.
                            continue 'apps;
                        }
                        Err(e) => {
                            load.failed(format!("PATCH {id} {status}: {e}"));
                            continue 'apps;
                        }
                    }
                    tokio::time::sleep(Duration::from_millis(25)).await;
                }
            }
        }));
    }

    tokio::time::sleep(Duration::from_millis(500)).await;
    for (i, api) in apis.iter_mut().enumerate() {
        let before = load.reads.load(Ordering::SeqCst) + load.writes.load(Ordering::SeqCst);
        api.stop().await;
        // Back on the same port, so the proxy's server comes back.
        let bind = format!("127.0.0.1:{}", ports[i]);
        api.restart(&[("BIND_ADDR", &bind)]);
        assert_eq!(api.port().await, ports[i]);
        proxy.wait_all_up(&client, 2).await;
        let after = load.reads.load(Ordering::SeqCst) + load.writes.load(Ordering::SeqCst);
        assert!(after > before, "the load went on while api{i} restarted");
    }
    for worker in workers.iter_mut() {
        tokio::time::sleep(Duration::from_millis(300)).await;
        worker.stop().await;
        worker.restart(&[]);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    load.stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.unwrap();
    }

    let failures = load.failures.lock().unwrap().clone();
    let (reads, writes) = (
        load.reads.load(Ordering::SeqCst),
        load.writes.load(Ordering::SeqCst),
    );
    assert!(
        failures.is_empty(),
        "{} of {} requests failed during the rollout: {failures:#?}",
        failures.len(),
        failures.len() + reads + writes
    );
    assert!(
        reads >= 100 && writes >= 40,
        "{reads} reads, {writes} writes"
    );

    // Every status change committed is emailed, each exactly once.
    let events: Vec<String> = {
        let rows = app
            .scalar_text(
                "SELECT string_agg(event_id, ',') FROM application_history WHERE event_id IS NOT NULL",
            )
            .await
            .unwrap_or_default();
        rows.split(',')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    };
    assert_eq!(
        events.len(),
        events_before + writes,
        "one event per status change"
    );
    wait_until("every event emailed", || async {
        app.scalar_i64("SELECT COUNT(*) FROM outbox").await == 0
            && events.iter().all(|e| smtp.count_for(e) >= 1)
    })
    .await;
    for w in workers.iter_mut() {
        w.stop().await;
    }
    for e in &events {
        assert_eq!(smtp.count_for(e), 1, "event {e} emailed once");
    }
    assert_eq!(smtp.mails().len(), events.len(), "no other email");
    for api in apis.iter_mut() {
        api.stop().await;
    }
}
