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

/// Jobs whose titles have no terms of their own (written before titles had them) get them when
/// the migrations run: every one, over batches that cross jobs already filled.
mod title_terms {
    use crate::harness::*;
    use jobboard::domain::Role;

    crate::each_backend!(with_db: titles_without_terms_get_them_when_migrating);

    async fn titles_without_terms_get_them_when_migrating(db: &TestDb) {
        let owner = user(&db.store, Role::Employer).await;
        let c = company(&db.store, owner.id, "Acme").await;
        for _ in 0..1_200 {
            job(&db.store, c.id, job_fields("Senior Welders")).await;
        }
        let filled = "SELECT COUNT(*) FROM jobs WHERE title_terms IS NOT NULL";
        assert_eq!(count(db, filled).await, 1_200);
        // Two of every three lose their terms: more than two batches of 500, with filled jobs
        // between and before them.
        run_sql(db, "UPDATE jobs SET title_terms = NULL WHERE id % 3 <> 0").await;
        assert_eq!(count(db, filled).await, 400);

        db.store.migrate().await.expect("migrate");

        assert_eq!(count(db, filled).await, 1_200, "every title has terms");
        assert_eq!(
            count(db, "SELECT COUNT(DISTINCT title_terms) FROM jobs").await,
            1,
            "the same title, the same terms, whoever wrote them"
        );
    }
}

/// A connection handed back to the pool while still inside a transaction (a future dropped
/// between `BEGIN IMMEDIATE` and the `Transaction` that would have rolled it back) is closed,
/// not handed out again: kept, it would hold SQLite's write lock for ever, and every write of
/// the process would fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_returned_inside_a_transaction_is_not_reused() {
    use sqlx::TransactionManager;
    let dir = tempfile::tempdir().expect("temp dir");
    let url = format!("sqlite://{}/store.db", dir.path().display());
    let store = jobboard::store::SqliteStore::connect(&url, 2)
        .await
        .expect("open SQLite");
    {
        let mut conn = store.pool().acquire().await.unwrap();
        // What the dropped future leaves: the transaction begun, no `Transaction` to end it.
        sqlx::sqlite::SqliteTransactionManager::begin(&mut conn, Some("BEGIN IMMEDIATE".into()))
            .await
            .unwrap();
    }
    // Every connection of the pool, in turn, writes at once.
    for i in 0..4 {
        let write = async {
            let mut tx = store.pool().begin_with("BEGIN IMMEDIATE").await?;
            sqlx::query("CREATE TABLE IF NOT EXISTS t (x INTEGER)")
                .execute(&mut *tx)
                .await?;
            sqlx::query("INSERT INTO t VALUES (1)")
                .execute(&mut *tx)
                .await?;
            tx.commit().await
        };
        tokio::time::timeout(std::time::Duration::from_secs(5), write)
            .await
            .unwrap_or_else(|_| panic!("write {i}: still waiting for the write lock"))
            .unwrap_or_else(|e| panic!("write {i}: {e}"));
    }
}
