//! The deadlines a public endpoint needs: the API's request deadline (`REQUEST_TIMEOUT_SECS`)
//! and PostgreSQL's `statement_timeout` / `lock_timeout` on every connection. The database is
//! made slow the way it is in production: a lock another session holds (here the test's own).

use crate::helpers::*;
use std::time::{Duration, Instant};

/// Holds `ACCESS EXCLUSIVE` on `users` until the returned connection rolls back or drops:
/// every statement that reads or writes accounts (signing in included) waits for it.
async fn lock_users(app: &TestApp) -> sqlx::PgConnection {
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&app.database_url)
        .await
        .expect("a session of the test's own");
    sqlx::query("BEGIN").execute(&mut conn).await.unwrap();
    sqlx::query("LOCK TABLE users IN ACCESS EXCLUSIVE MODE")
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

async fn unlock(mut conn: sqlx::PgConnection) {
    sqlx::query("ROLLBACK").execute(&mut conn).await.unwrap();
}

/// A request that outlives `REQUEST_TIMEOUT_SECS` gets its answer: 503 problem+json with
/// `Retry-After`, at the deadline, never a hung connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_past_its_deadline_is_answered_503_with_retry_after() {
    let app = TestApp::spawn_with(
        Backend::Postgres,
        CacheKind::Memory,
        &[("REQUEST_TIMEOUT_SECS", "1")],
    )
    .await;
    let user = app.user("candidate").await;
    let lock = lock_users(&app).await;
    let started = Instant::now();
    let r = tokio::time::timeout(
        Duration::from_secs(8),
        app.get("/api/me", Some(&user.token)),
    )
    .await
    .expect("an answer, not a hung connection");
    let took = started.elapsed();
    unlock(lock).await;
    r.expect_problem(503, "request-timeout");
    assert_eq!(r.header("retry-after"), Some("1"), "{:?}", r.headers);
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "answered at the deadline: {took:?}"
    );
    // The same request after the lock is gone is answered as usual.
    app.get("/api/me", Some(&user.token)).await.expect(200);
}

/// A statement past `DATABASE_STATEMENT_TIMEOUT_SECS`, or a lock wait past
/// `DATABASE_LOCK_TIMEOUT_SECS`, is cancelled by PostgreSQL, and the client is told clearly:
/// 503 `database-timeout` with `Retry-After`, before the request's own deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_statement_past_its_timeout_fails_with_a_clear_error() {
    for (var, code) in [
        ("DATABASE_STATEMENT_TIMEOUT_SECS", "statement timeout"),
        ("DATABASE_LOCK_TIMEOUT_SECS", "lock timeout"),
    ] {
        let app = TestApp::spawn_with(Backend::Postgres, CacheKind::Memory, &[(var, "1")]).await;
        let user = app.user("candidate").await;
        let lock = lock_users(&app).await;
        let started = Instant::now();
        let r = app.get("/api/me", Some(&user.token)).await;
        let took = started.elapsed();
        unlock(lock).await;
        let problem = r.expect_problem(503, "database-timeout");
        assert_eq!(r.header("retry-after"), Some("1"), "{var}: {problem}");
        assert!(
            took < Duration::from_secs(5),
            "{var}=1 ({code}) cut the wait short: {took:?}"
        );
        app.get("/api/me", Some(&user.token)).await.expect(200);
    }
}
