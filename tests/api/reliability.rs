//! The holes a review of the worker and the store found, each pinned by a case that failed
//! before its fix.

use crate::helpers::{Backend, TestApp};
use jobboard::store::NewDeadLetter;

/// Runs a statement on the test database, returning the database's refusal instead of
/// panicking on it.
async fn try_exec(app: &TestApp, sql: &str) -> Result<(), sqlx::Error> {
    match app.backend {
        Backend::Sqlite => {
            let mut c =
                <sqlx::SqliteConnection as sqlx::Connection>::connect(&app.database_url).await?;
            sqlx::raw_sql(sql).execute(&mut c).await.map(|_| ())
        }
        Backend::Postgres => {
            let mut c =
                <sqlx::PgConnection as sqlx::Connection>::connect(&app.database_url).await?;
            sqlx::raw_sql(sql).execute(&mut c).await.map(|_| ())
        }
    }
}

fn dead_letter(event_id: &str, reason: &str) -> NewDeadLetter {
    NewDeadLetter {
        event_id: Some(event_id.to_string()),
        reason: reason.to_string(),
        attempts: 5,
        body: format!(r#"{{"event_id":"{event_id}"}}"#),
        first_failed_at: None,
        invalid: false,
    }
}

const INSERT_DEAD: &str = "INSERT INTO dead_letters (event_id, reason, attempts, body, \
     first_failed_at, last_failed_at) VALUES ('e-1', 'send failed', 5, '{}', 1, 2)";

/// The database itself refuses a second dead letter for one event: no check-then-insert race
/// can make two.
async fn the_database_refuses_a_second_dead_letter_for_an_event(app: TestApp) {
    try_exec(&app, INSERT_DEAD)
        .await
        .expect("the first dead letter");
    let second = try_exec(&app, INSERT_DEAD).await;
    assert!(second.is_err(), "a second dead letter for e-1 was stored");
    // Messages that are not readable events each keep their own, with or without an event id.
    for event_id in ["NULL", "NULL", "'e-1'", "'e-1'"] {
        let invalid = format!(
            "INSERT INTO dead_letters (event_id, reason, attempts, body, first_failed_at, \
             last_failed_at, invalid) VALUES ({event_id}, 'invalid message: x', 0, 'x', 1, 2, {})",
            if app.backend == Backend::Sqlite {
                "1"
            } else {
                "TRUE"
            }
        );
        try_exec(&app, &invalid).await.unwrap();
    }
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM dead_letters").await, 5);
}

/// Copies of one event dead-lettered at the same moment leave one dead letter, and every copy
/// leaves the queue.
async fn concurrent_copies_of_a_dead_event_leave_one_dead_letter(app: TestApp) {
    let store = app.state.store.clone();
    for round in 0..10 {
        let event = format!("e-{round}");
        let mut ids = Vec::new();
        for _ in 0..4 {
            store.queue_enqueue(Some(&event), None, "{}").await.unwrap();
        }
        for m in store.queue_receive(4, 60_000).await.unwrap() {
            ids.push((m.id, m.receipt));
        }
        assert_eq!(ids.len(), 4);
        let copies = ids.into_iter().map(|(id, receipt)| {
            let store = store.clone();
            let dead = dead_letter(&event, "send failed");
            tokio::spawn(async move { store.queue_dead_letter(id, &receipt, dead).await })
        });
        for copy in copies.collect::<Vec<_>>() {
            copy.await
                .unwrap()
                .expect("each copy is dead-lettered without an error");
        }
    }
    assert_eq!(
        app.scalar_i64("SELECT COUNT(*) FROM dead_letters").await,
        10
    );
    assert_eq!(
        app.scalar_i64("SELECT COUNT(DISTINCT event_id) FROM dead_letters")
            .await,
        10
    );
    assert_eq!(app.scalar_i64("SELECT COUNT(*) FROM outbox").await, 0);
}

/// A database that already holds duplicate dead letters (from before the rule) migrates to
/// one per event, keeping the first, and keeps every invalid message's own.
async fn migrating_keeps_the_first_of_duplicate_dead_letters(app: TestApp) {
    // The schema as the release before left it.
    app.exec("DROP INDEX dead_letters_event_id").await;
    app.exec("ALTER TABLE dead_letters DROP COLUMN invalid")
        .await;
    app.exec("DELETE FROM _sqlx_migrations WHERE version = 4")
        .await;
    app.exec(INSERT_DEAD).await;
    app.exec(&INSERT_DEAD.replace("send failed", "a later copy"))
        .await;
    let invalid = INSERT_DEAD
        .replace("'e-1'", "'e-2'")
        .replace("send failed", "invalid message: unknown type");
    app.exec(&invalid).await;
    app.exec(&invalid).await;
    app.state.store.migrate().await.expect("the migration");
    let kept = "SELECT COUNT(*) FROM dead_letters WHERE event_id = 'e-1'";
    assert_eq!(app.scalar_i64(kept).await, 1);
    assert_eq!(
        app.scalar_text("SELECT reason FROM dead_letters WHERE event_id = 'e-1'")
            .await
            .as_deref(),
        Some("send failed")
    );
    let invalid_kept = "SELECT COUNT(*) FROM dead_letters WHERE event_id = 'e-2' AND invalid";
    assert_eq!(app.scalar_i64(invalid_kept).await, 2);
    assert!(try_exec(&app, INSERT_DEAD).await.is_err());
}

crate::each_store!(
    the_database_refuses_a_second_dead_letter_for_an_event,
    concurrent_copies_of_a_dead_event_leave_one_dead_letter,
    migrating_keeps_the_first_of_duplicate_dead_letters,
);
