//! The PostgreSQL pool's connections: one the database closed while it sat in the pool (a
//! restart, an operator's `pg_terminate_backend`) is replaced when it is next handed out, not
//! handed out to fail a request.

use crate::harness::*;
use jobboard::config::DatabaseUrl;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_the_database_closed_while_idle_is_replaced() {
    let db = postgres().await;
    db.store.migrate().await.expect("migrations run");
    let DatabaseUrl::Postgres(url) = &db.url else {
        panic!("a PostgreSQL database")
    };
    let name = url::Url::parse(url)
        .expect("url")
        .path()
        .trim_start_matches('/')
        .to_string();
    // Connections opened and handed back, idle in the pool.
    let busy: Vec<_> = (0..4).map(|_| db.store.resume_count(1)).collect();
    for counted in futures::future::join_all(busy).await {
        assert_eq!(counted.expect("a count"), 0);
    }
    let mut admin = <sqlx::PgConnection as sqlx::Connection>::connect(&postgres_admin_url())
        .await
        .expect("the admin connection");
    let closed: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = $1 AND pid <> pg_backend_pid()) t",
    )
    .bind(&name)
    .fetch_one(&mut admin)
    .await
    .expect("closing the store's connections");
    assert!(closed >= 1, "the store had connections to close");
    // Idle for longer than the pool's check allows: each is checked before it is handed out.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for _ in 0..8 {
        assert_eq!(
            db.store
                .resume_count(1)
                .await
                .expect("answered on a new connection"),
            0
        );
    }
}
