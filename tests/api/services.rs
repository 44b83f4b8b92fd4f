//! The test command changes nothing on the machine it runs on: the tests use a PostgreSQL
//! cluster and a Redis of their own (`scripts/services`), never the machine's, and the chaos
//! runs restart only that cluster.

use crate::helpers::*;

fn var(name: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| {
        panic!(
            "{name} is not set: run the tests through scripts/test, or source the env file \
             scripts/services writes under the build directory"
        )
    })
}

#[tokio::test]
async fn the_tests_run_on_a_throwaway_postgresql_cluster() {
    let data = var("JOBBOARD_TEST_PG_DATA");
    let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&postgres_admin_url())
        .await
        .expect("the test PostgreSQL answers");
    let dir: String = sqlx::query_scalar("SELECT current_setting('data_directory')")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let canonical = |p: &str| std::fs::canonicalize(p).map_err(|e| format!("{p}: {e}"));
    assert_eq!(
        canonical(&dir),
        canonical(&data),
        "the tests' database lives in the throwaway cluster, not the machine's"
    );
    let hba: String = sqlx::query_scalar("SELECT current_setting('hba_file')")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert!(
        hba.starts_with(&dir),
        "the trust rules are the throwaway cluster's own pg_hba.conf: {hba}"
    );
    let restart = var("JOBBOARD_TEST_PG_RESTART");
    assert!(
        restart.contains(&data) && !restart.contains("pg_ctlcluster"),
        "the chaos runs restart the throwaway cluster only: {restart}"
    );
}

#[tokio::test]
async fn the_tests_run_on_a_throwaway_redis_that_saves_nothing() {
    let client = redis::Client::open(redis_url()).expect("redis url");
    let mut conn = client
        .get_multiplexed_async_connection()
        .await
        .expect("the test Redis answers");
    let save: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("save")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(
        save,
        vec!["save".to_string(), String::new()],
        "no snapshots"
    );
    let pidfile: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("pidfile")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(
        pidfile[1].ends_with("jobboard-test-services/redis.pid"),
        "the Redis is the one scripts/services started, not the machine's: {pidfile:?}"
    );
}
