//! The test harness: the real application on port 0 through its real `serve`, a fresh database
//! per test (a temporary SQLite file or a new PostgreSQL database), an isolated Redis key space,
//! and a real HTTP client with typed helpers.

use jobboard::config::Config;
use jobboard::http::AppState;
use reqwest::header::HeaderMap;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio_util::sync::CancellationToken;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheKind {
    Memory,
    Redis,
}

/// What the servers in this test process have logged at ERROR, as formatted lines. The first
/// call installs the process's subscriber, which keeps ERROR events only; call it before the
/// request whose log a test looks for.
pub fn error_log() -> String {
    static LOG: std::sync::OnceLock<std::sync::Arc<std::sync::Mutex<Vec<u8>>>> =
        std::sync::OnceLock::new();
    let log = LOG.get_or_init(|| {
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let writer = log.clone();
        tracing_subscriber::fmt()
            .with_max_level(tracing::Level::ERROR)
            .with_ansi(false)
            .with_writer(move || Captured(writer.clone()))
            .try_init()
            .expect("no other subscriber in the API tests");
        log
    });
    String::from_utf8_lossy(&log.lock().unwrap()).into_owned()
}

struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The PostgreSQL server the tests create their databases on.
pub fn postgres_admin_url() -> String {
    std::env::var("JOBBOARD_TEST_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".to_string())
}

pub fn redis_url() -> String {
    std::env::var("JOBBOARD_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_string())
}

/// One test's running application.
pub struct TestApp {
    pub addr: SocketAddr,
    pub client: reqwest::Client,
    pub state: AppState,
    pub database_url: String,
    pub backend: Backend,
    /// The environment the app was started with, for building workers and CLI runs alike.
    pub vars: HashMap<String, String>,
    shutdown: CancellationToken,
    server: Option<tokio::task::JoinHandle<anyhow::Result<bool>>>,
    pg_database: Option<String>,
    _dir: tempfile::TempDir,
}

/// A JSON response.
#[derive(Debug)]
pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub text: String,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// Asserts the status, showing the body when it differs.
    #[track_caller]
    pub fn expect(&self, status: u16) -> &Value {
        assert_eq!(
            self.status.as_u16(),
            status,
            "unexpected status; body: {}",
            self.text
        );
        &self.body
    }

    /// Asserts a problem+json answer with this status and problem type.
    #[track_caller]
    pub fn expect_problem(&self, status: u16, kind: &str) -> &Value {
        self.expect(status);
        assert_eq!(
            self.header("content-type"),
            Some("application/problem+json"),
            "problem content type; body: {}",
            self.text
        );
        assert_eq!(
            self.body["type"],
            format!("/problems/{kind}"),
            "body: {}",
            self.text
        );
        assert_eq!(self.body["status"], status);
        assert!(self.body["title"].is_string() && self.body["detail"].is_string());
        &self.body
    }
}

/// A registered user and their token.
#[derive(Debug, Clone)]
pub struct User {
    pub id: i64,
    pub email: String,
    pub password: String,
    pub token: String,
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

pub fn unique(prefix: &str) -> String {
    format!(
        "{prefix}{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::SeqCst)
    )
}

impl TestApp {
    pub async fn spawn(backend: Backend, cache: CacheKind) -> TestApp {
        Self::spawn_with(backend, cache, &[]).await
    }

    /// Starts the app with extra environment variables (as the binary would read them).
    pub async fn spawn_with(backend: Backend, cache: CacheKind, env: &[(&str, &str)]) -> TestApp {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut vars: HashMap<String, String> = HashMap::new();
        let (database_url, pg_database) = match backend {
            Backend::Sqlite => (format!("sqlite://{}/test.db", dir.path().display()), None),
            Backend::Postgres => {
                let name = format!("jbt_{}", uuid::Uuid::new_v4().simple());
                let admin = postgres_admin_url();
                let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&admin)
                    .await
                    .unwrap_or_else(|e| panic!("PostgreSQL is required for these tests ({admin}): {e}; run scripts/test, which starts it"));
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&mut conn)
                    .await
                    .expect("create test database");
                let mut url = url::Url::parse(&admin).expect("admin url");
                url.set_path(&name);
                (url.to_string(), Some(name))
            }
        };
        vars.insert("DATABASE_URL".into(), database_url.clone());
        vars.insert("BIND_ADDR".into(), "127.0.0.1:0".into());
        vars.insert(
            "JWT_SECRET".into(),
            "test-secret-test-secret-test-secret".into(),
        );
        vars.insert(
            "EMAIL_FILE_DIR".into(),
            dir.path().join("mail").display().to_string(),
        );
        // Each app has its own file store folder (FILE_STORE=local).
        vars.insert(
            "FILE_STORE_DIR".into(),
            dir.path().join("files").display().to_string(),
        );
        // Each app has its own search index, as each API process must.
        vars.insert(
            "SEARCH_INDEX_DIR".into(),
            dir.path().join("search").display().to_string(),
        );
        if cache == CacheKind::Redis {
            vars.insert("REDIS_URL".into(), redis_url());
            vars.insert("REDIS_KEY_PREFIX".into(), format!("{}:", unique("jbt-")));
        }
        for (k, v) in env {
            vars.insert(k.to_string(), v.to_string());
        }
        let config = Config::from_map(&vars, false).expect("test config");
        let vars = vars.clone();
        if cache == CacheKind::Redis {
            let client = redis::Client::open(redis_url()).expect("redis url");
            let mut conn = client
                .get_multiplexed_async_connection()
                .await
                .unwrap_or_else(|e| {
                    panic!(
                        "Redis is required for these tests: {e}; run scripts/test, which starts it"
                    )
                });
            let _: String = redis::cmd("PING")
                .query_async(&mut conn)
                .await
                .expect("redis ping");
        }
        let shutdown = CancellationToken::new();
        let state = jobboard::run::app_state(config, shutdown.clone(), true)
            .await
            .expect("build app");
        // The app is ready once its search index has caught up with the log (`/readyz`).
        for _ in 0..600 {
            if state.search.is_caught_up() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(jobboard::http::serve(listener, None, state.clone()));
        TestApp {
            addr,
            client: reqwest::Client::new(),
            state,
            database_url,
            backend,
            vars,
            shutdown,
            server: Some(server),
            pg_database,
            _dir: dir,
        }
    }

    /// A search index folder in this app's temporary folder, for another API process
    /// started on its database (each needs its own).
    pub fn search_dir(&self, name: &str) -> String {
        self._dir
            .path()
            .join(format!("search-{name}"))
            .display()
            .to_string()
    }

    /// This app's `FILE_STORE_DIR`.
    pub fn files_dir(&self) -> std::path::PathBuf {
        self._dir.path().join("files")
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    /// Sends a request; `body` is sent as JSON when given.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Resp {
        let mut req = self.client.request(method, self.url(path));
        if let Some(t) = token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req
                .header("content-type", "application/json")
                .body(b.to_string());
        }
        Self::read(req.send().await.expect("request")).await
    }

    pub async fn read(res: reqwest::Response) -> Resp {
        let status = res.status();
        let headers = res.headers().clone();
        let text = res.text().await.expect("body");
        let body = serde_json::from_str(&text).unwrap_or(Value::Null);
        Resp {
            status,
            headers,
            body,
            text,
        }
    }

    pub async fn get(&self, path: &str, token: Option<&str>) -> Resp {
        self.send(Method::GET, path, token, None).await
    }

    pub async fn post(&self, path: &str, token: Option<&str>, body: Value) -> Resp {
        self.send(Method::POST, path, token, Some(body)).await
    }

    pub async fn patch(&self, path: &str, token: Option<&str>, body: Value) -> Resp {
        self.send(Method::PATCH, path, token, Some(body)).await
    }

    pub async fn delete(&self, path: &str, token: Option<&str>) -> Resp {
        self.send(Method::DELETE, path, token, None).await
    }

    /// Registers a user with `role` and logs them in.
    pub async fn user(&self, role: &str) -> User {
        let email = format!("{}@example.com", unique(role));
        let password = "a long enough passphrase".to_string();
        let r = self
            .post(
                "/api/auth/register",
                None,
                json!({"email": email, "password": password, "name": format!("{role} user"), "role": role}),
            )
            .await;
        let id = r.expect(201)["id"].as_i64().expect("id");
        let token = self.login(&email, &password).await;
        User {
            id,
            email,
            password,
            token,
        }
    }

    /// Runs the `jobboard` binary with this app's environment (at most 60 s); returns whether it
    /// exited 0, its stdout and its stderr.
    pub async fn cli(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_jobboard"));
        cmd.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .envs(&self.vars)
            .stdin(std::process::Stdio::null())
            .kill_on_drop(true);
        let out = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
            .await
            .unwrap_or_else(|_| panic!("jobboard {args:?} did not finish within 60 s"))
            .expect("run jobboard");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// An account given operator rights the only way there is: `jobboard admin grant`.
    pub async fn operator(&self) -> User {
        let user = self.user("candidate").await;
        let (code, out, err) = self.cli(&["admin", "grant", &user.email]).await;
        assert_eq!(code, Some(0), "admin grant: {out}{err}");
        user
    }

    pub async fn login(&self, email: &str, password: &str) -> String {
        let r = self
            .post(
                "/api/auth/token",
                None,
                json!({"email": email, "password": password}),
            )
            .await;
        r.expect(200)["access_token"]
            .as_str()
            .expect("token")
            .to_string()
    }

    pub async fn company(&self, owner: &User, name: &str) -> i64 {
        let r = self
            .post("/api/companies", Some(&owner.token), json!({"name": name}))
            .await;
        r.expect(201)["id"].as_i64().expect("company id")
    }

    /// Publishes a job; `extra` overrides the defaults.
    pub async fn job(&self, owner: &User, company_id: i64, extra: Value) -> Value {
        let mut body = json!({
            "company_id": company_id, "title": "Backend Engineer", "description": "Build the API",
            "location": "Berlin", "remote": false, "employment_type": "full_time",
        });
        if let Value::Object(extra) = extra {
            // A field of this release stands in for the older one the default body states.
            for (newer, older) in [("workplace", "remote"), ("locations", "location")] {
                if extra.contains_key(newer) && !extra.contains_key(older) {
                    body.as_object_mut().unwrap().remove(older);
                }
            }
            for (k, v) in extra {
                body[k] = v;
            }
        }
        let r = self.post("/api/jobs", Some(&owner.token), body).await;
        r.expect(201).clone()
    }

    pub async fn apply(&self, candidate: &User, job_id: i64) -> Value {
        self.post(
            &format!("/api/jobs/{job_id}/applications"),
            Some(&candidate.token),
            json!({}),
        )
        .await
        .expect(201)
        .clone()
    }

    /// An employer with a company, a job in it, and a candidate who applied.
    pub async fn scenario(&self) -> Scenario {
        let employer = self.user("employer").await;
        let company_id = self.company(&employer, "Acme").await;
        let job = self.job(&employer, company_id, json!({})).await;
        let job_id = job["id"].as_i64().unwrap();
        let candidate = self.user("candidate").await;
        let application = self.apply(&candidate, job_id).await;
        Scenario {
            employer,
            company_id,
            job_id,
            candidate,
            application_id: application["id"].as_i64().unwrap(),
        }
    }

    /// Runs a scalar query on the test database (for facts the API does not show).
    pub async fn scalar_i64(&self, sql: &str) -> i64 {
        match self.backend {
            Backend::Sqlite => {
                let mut c =
                    <sqlx::SqliteConnection as sqlx::Connection>::connect(&self.database_url)
                        .await
                        .unwrap();
                sqlx::query_scalar(sql).fetch_one(&mut c).await.unwrap()
            }
            Backend::Postgres => {
                let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&self.database_url)
                    .await
                    .unwrap();
                sqlx::query_scalar(sql).fetch_one(&mut c).await.unwrap()
            }
        }
    }

    /// The app's configuration with `extra` variables on top.
    pub fn config(&self, extra: &[(&str, &str)]) -> Config {
        let mut vars = self.vars.clone();
        for (k, v) in extra {
            vars.insert(k.to_string(), v.to_string());
        }
        Config::from_map(&vars, false).expect("config")
    }

    /// Runs a statement on the test database.
    pub async fn exec(&self, sql: &str) {
        match self.backend {
            Backend::Sqlite => {
                let mut c =
                    <sqlx::SqliteConnection as sqlx::Connection>::connect(&self.database_url)
                        .await
                        .unwrap();
                sqlx::raw_sql(sql).execute(&mut c).await.unwrap();
            }
            Backend::Postgres => {
                let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&self.database_url)
                    .await
                    .unwrap();
                sqlx::raw_sql(sql).execute(&mut c).await.unwrap();
            }
        }
    }

    /// Runs a query returning one optional text value.
    pub async fn scalar_text(&self, sql: &str) -> Option<String> {
        match self.backend {
            Backend::Sqlite => {
                let mut c =
                    <sqlx::SqliteConnection as sqlx::Connection>::connect(&self.database_url)
                        .await
                        .unwrap();
                sqlx::query_scalar(sql)
                    .fetch_optional(&mut c)
                    .await
                    .unwrap()
            }
            Backend::Postgres => {
                let mut c = <sqlx::PgConnection as sqlx::Connection>::connect(&self.database_url)
                    .await
                    .unwrap();
                sqlx::query_scalar(sql)
                    .fetch_optional(&mut c)
                    .await
                    .unwrap()
            }
        }
    }

    /// Makes the database refuse any history row moving an application to `status`, so that
    /// the status change's transaction fails (a fault no request can cause).
    pub async fn refuse_moves_to(&self, status: &str) {
        let sql = match self.backend {
            Backend::Sqlite => format!(
                "CREATE TRIGGER refuse_move BEFORE INSERT ON application_history \
                 WHEN NEW.new_status = '{status}' BEGIN SELECT RAISE(ABORT, 'refused'); END;"
            ),
            Backend::Postgres => format!(
                "CREATE FUNCTION refuse_move() RETURNS trigger AS $$ BEGIN \
                 IF NEW.new_status = '{status}' THEN RAISE EXCEPTION 'refused'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql; \
                 CREATE TRIGGER refuse_move BEFORE INSERT ON application_history FOR EACH ROW EXECUTE FUNCTION refuse_move();"
            ),
        };
        self.exec(&sql).await;
    }

    /// Undoes `refuse_moves_to`.
    pub async fn allow_moves(&self) {
        self.exec(match self.backend {
            Backend::Sqlite => "DROP TRIGGER refuse_move",
            Backend::Postgres => "DROP TRIGGER refuse_move ON application_history",
        })
        .await;
    }

    /// Moves every queued message's visibility to now: the retry delay has passed.
    /// What a refused request must leave as it was: each table's rows and the fields a write
    /// could change.
    pub async fn fingerprint(&self) -> Vec<i64> {
        let mut out = Vec::new();
        for sql in [
            "SELECT COUNT(*) FROM users",
            "SELECT COUNT(*) FROM companies",
            "SELECT COUNT(*) FROM company_members",
            "SELECT COUNT(*) FROM jobs",
            "SELECT COUNT(*) FROM applications",
            "SELECT COUNT(*) FROM application_history",
            "SELECT COUNT(*) FROM outbox",
            "SELECT COUNT(*) FROM idempotency_keys",
            "SELECT COUNT(*) FROM dead_letters",
            "SELECT COUNT(*) FROM operators",
            "SELECT COUNT(*) FROM users WHERE application_digest",
            "SELECT COUNT(*) FROM processed_events",
            "SELECT COUNT(*) FROM alerts",
            "SELECT CAST(COALESCE(SUM(LENGTH(frequency) + CASE WHEN paused THEN 1 ELSE 0 END), 0) AS BIGINT) FROM alerts",
            "SELECT CAST(COALESCE(SUM(LENGTH(name) + LENGTH(password_hash)), 0) AS BIGINT) FROM users",
            "SELECT CAST(COALESCE(SUM(LENGTH(name)), 0) AS BIGINT) FROM companies",
            "SELECT CAST(COALESCE(SUM(LENGTH(title) + LENGTH(status)), 0) AS BIGINT) FROM jobs",
            "SELECT CAST(COALESCE(SUM(LENGTH(status)), 0) AS BIGINT) FROM applications",
        ] {
            out.push(self.scalar_i64(sql).await);
        }
        out
    }

    pub async fn time_passes(&self) {
        self.exec("UPDATE outbox SET visible_at = 0").await;
    }

    /// Stops the server as SIGTERM would and reports whether it finished cleanly.
    pub async fn stop(&mut self) -> bool {
        self.shutdown.cancel();
        match self.server.take() {
            Some(s) => s.await.expect("server task").expect("server"),
            None => true,
        }
    }
}

pub struct Scenario {
    pub employer: User,
    pub company_id: i64,
    pub job_id: i64,
    pub candidate: User,
    pub application_id: i64,
}

impl Drop for TestApp {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(name) = self.pg_database.take() {
            // Dropped on a thread of its own: Drop cannot await on the test's runtime.
            let admin = postgres_admin_url();
            let _ = std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async move {
                    if let Ok(mut c) =
                        <sqlx::PgConnection as sqlx::Connection>::connect(&admin).await
                    {
                        let _ =
                            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                                .execute(&mut c)
                                .await;
                    }
                });
            })
            .join();
        }
    }
}

/// Expands each named `async fn name(app: TestApp)` into one test per backend and cache:
/// SQLite and PostgreSQL, each with the in-process cache and with Redis.
#[macro_export]
macro_rules! each_backend {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::helpers::{Backend, CacheKind, TestApp};
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_memory() {
                super::$name(TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite_redis() {
                super::$name(TestApp::spawn(Backend::Sqlite, CacheKind::Redis).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_memory() {
                super::$name(TestApp::spawn(Backend::Postgres, CacheKind::Memory).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres_redis() {
                super::$name(TestApp::spawn(Backend::Postgres, CacheKind::Redis).await).await
            }
        }
    )*};
}

/// Expands each named `async fn name(app: TestApp)` into one test per database, with the
/// in-process cache: for cases that never read a cached search, where Redis would only run the
/// same code twice.
#[macro_export]
macro_rules! each_store {
    ($($name:ident),* $(,)?) => {$(
        mod $name {
            use $crate::helpers::{Backend, CacheKind, TestApp};
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(TestApp::spawn(Backend::Sqlite, CacheKind::Memory).await).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(TestApp::spawn(Backend::Postgres, CacheKind::Memory).await).await
            }
        }
    )*};
}

/// The address written right after `marker` in a log line, e.g. `127.0.0.1:41234` after
/// `listening on http://`: children bind port 0 and say which port they got, so no test hands
/// a child a port that something else may take first.
pub fn address_after(line: &str, marker: &str) -> String {
    let start = line
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker:?} in {line}"))
        + marker.len();
    line[start..]
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | ':' | '[' | ']'))
        .collect()
}

/// Reads a child's stderr (piped) until a line contains `marker` (at most 60 s) and returns the
/// address after it; the rest of the output is drained in the background, so the child never
/// blocks on a full pipe.
pub async fn address_in_stderr(child: &mut tokio::process::Child, marker: &str) -> String {
    use tokio::io::AsyncBufReadExt;
    let stderr = child.stderr.take().expect("stderr piped");
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    let mut seen = Vec::new();
    let found = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains(marker) {
                return Some(line);
            }
            seen.push(line);
        }
        None
    })
    .await;
    let Ok(Some(line)) = found else {
        panic!("no line with {marker:?}; output:\n{}", seen.join("\n"));
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    address_after(&line, marker)
}

/// The port a child process says it bound (it binds port 0 itself, so no port is picked for it
/// that another process could take first): the digits after the last `:` or space following
/// `marker`, on the first line of `out` that contains it. The rest of `out` is read and
/// dropped, so the child never blocks on a full pipe.
pub async fn announced_port(
    out: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    marker: &str,
) -> u16 {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(out).lines();
    let mut seen = Vec::new();
    let found = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(i) = line.find(marker) {
                let after = &line[i + marker.len()..];
                let digits: String = after
                    .trim_start_matches(|c: char| c != ':' && !c.is_ascii_digit())
                    .split_once(':')
                    .map_or(after, |(_, port)| port)
                    .chars()
                    .take_while(char::is_ascii_digit)
                    .collect();
                return digits.parse::<u16>().ok();
            }
            seen.push(line);
        }
        None
    })
    .await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    match found {
        Ok(Some(port)) => port,
        _ => panic!("no port after {marker:?} in:\n{}", seen.join("\n")),
    }
}

/// A 422 validation problem whose errors name `field` and nothing else.
#[track_caller]
pub fn names_only(r: &Resp, url: &str, field: &str) {
    let p = r.expect_problem(422, "validation");
    let errors = p["errors"].as_object().cloned().unwrap_or_default();
    assert!(
        errors
            .get(field)
            .and_then(Value::as_array)
            .is_some_and(|m| !m.is_empty()),
        "{url}: errors must name {field}: {}",
        r.text
    );
    assert_eq!(errors.len(), 1, "{url}: only {field} is wrong: {}", r.text);
}

/// `text` with its quoted-printable `=XX` bytes decoded (a mail parser has undone the soft line breaks).
pub fn quoted_printable(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'=', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).expect("UTF-8 text")
}
