//! The store conformance suite: every method of [`jobboard::store::Store`] (with its
//! `EventStore` and `IdempotencyStore` parts) run against every backend, each case on a fresh,
//! migrated database of its own: a temporary SQLite file, or a new PostgreSQL database on
//! `JOBBOARD_TEST_DATABASE_URL` (the suite fails, never skips, when PostgreSQL is unreachable).
//!
//! A case is an `async fn name(store: Arc<dyn Store>)` listed in its module's
//! `each_backend!(...)`, which generates one `#[tokio::test]` per backend, named
//! `<module>::<backend>::<case>` (so `cargo test --test store sqlite` runs one backend). The
//! generated modules are named after the backends, so a module holds one `each_backend!`; a
//! second list (such as `fresh:` cases) goes in a submodule.
//!
//! Adding a backend: write an `async fn` in `harness.rs` that opens an unmigrated store on a
//! fresh database and returns a [`harness::TestDb`] (whose guard removes the database when the
//! test ends), then add one line to the list in `each_backend!` below,
//! `$crate::each_backend!(@one $migrate $pass $cases name => $crate::harness::that_fn);`, where
//! `name` is what the store's `backend()` answers. Every case then runs on it too; add it also
//! to `search::both`, which runs the search conformance on every backend side by side.

mod harness;

mod accounts;
mod alert_digests;
mod alert_window;
mod alerts;
mod applications;
mod apply_batches;
mod companies;
mod events;
mod idempotency;
mod joblog_order;
mod jobs;
mod lifecycle;
mod ops;
mod pool;
mod queue;
mod resumes;
mod search;
mod upkeep_events;

/// Expands each named case into one test per backend. `fresh: a, b` hands the cases a store
/// whose migrations have not run yet; `with_db: a, b` hands them the whole migrated
/// [`harness::TestDb`] (`&TestDb`), database URL included.
#[macro_export]
macro_rules! each_backend {
    (fresh: $($case:ident),* $(,)?) => {
        $crate::each_backend!(@all false store [$($case)*]);
    };
    (with_db: $($case:ident),* $(,)?) => {
        $crate::each_backend!(@all true db [$($case)*]);
    };
    ($($case:ident),* $(,)?) => {
        $crate::each_backend!(@all true store [$($case)*]);
    };
    (@all $migrate:literal $pass:ident $cases:tt) => {
        // The backends, one line each.
        $crate::each_backend!(@one $migrate $pass $cases sqlite => $crate::harness::sqlite);
        $crate::each_backend!(@one $migrate $pass $cases postgres => $crate::harness::postgres);
    };
    (@call store $case:ident $db:ident) => {
        super::$case($db.store.clone()).await
    };
    (@call db $case:ident $db:ident) => {
        super::$case(&$db).await
    };
    (@one $migrate:literal $pass:ident [$($case:ident)*] $backend:ident => $open:path) => {
        mod $backend {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let db = $open().await;
                    assert_eq!(db.store.backend(), stringify!($backend), "backend name");
                    if $migrate {
                        db.store.migrate().await.expect("migrations run");
                    }
                    $crate::each_backend!(@call $pass $case db);
                }
            )*
        }
    };
}
