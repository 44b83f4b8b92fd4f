//! Schema checks, readiness and the database clock.

use jobboard::store::Store;
use std::sync::Arc;

crate::each_backend!(ping_and_backend_name, now_ms_is_the_wall_clock);

async fn ping_and_backend_name(store: Arc<dyn Store>) {
    store.ping().await.expect("ping");
    // `each_backend!` checks that the name is the one its backend line gives.
    assert!(["postgres", "sqlite"].contains(&store.backend()));
}

async fn now_ms_is_the_wall_clock(store: Arc<dyn Store>) {
    let before = chrono::Utc::now().timestamp_millis();
    let db = store.now_ms().await.expect("now_ms");
    let after = chrono::Utc::now().timestamp_millis();
    // The database runs on this machine: its clock agrees to well within a second.
    assert!(
        db >= before - 1000 && db <= after + 1000,
        "{before} <= {db} <= {after}"
    );
    let later = store.now_ms().await.expect("now_ms");
    assert!(later >= db);
}

/// Cases on a database whose migrations have not run.
mod unmigrated {
    use jobboard::store::Store;
    use std::sync::Arc;

    crate::each_backend!(fresh: schema_is_behind_until_migrated);

    async fn schema_is_behind_until_migrated(store: Arc<dyn Store>) {
        store.ping().await.expect("an empty database answers");
        let err = store
            .check_schema()
            .await
            .expect_err("an unmigrated database is refused");
        let text = err.to_string();
        assert!(
            text.contains("behind") && text.contains("jobboard migrate") && text.contains("0001_"),
            "{text}"
        );
        store.migrate().await.expect("migrate");
        store
            .check_schema()
            .await
            .expect("migrated schema accepted");
        store
            .migrate()
            .await
            .expect("migrating again changes nothing");
        store.check_schema().await.expect("still accepted");
    }
}
