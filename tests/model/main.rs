//! The worker's promise (docs/guarantee.md) checked exhaustively by a model checker over a model of
//! the protocol as the code runs it (`protocol.rs`), tied to the code's statements
//! (`statements.rs`).
//!
//! `cargo test --test model -- --nocapture` prints each check's state counts and time. The
//! default bounds take a few minutes on two cores in the debug build; `JOBBOARD_MODEL_BIG=1`
//! raises them for a longer run; `JOBBOARD_MODEL_PROBE_SECS=N` stops each check after N seconds
//! (for trying bounds), and `JOBBOARD_MODEL_TRACE_STATES=1` prints each state of a
//! counterexample.

mod ses_outcomes;
mod statements;

use jobboard_protocol_model::{Bounds, Mail, Mode, Mutation, Protocol, QueueKind};
use stateright::{Checker, HasDiscoveries, Model};
use std::time::Instant;

fn big() -> bool {
    std::env::var("JOBBOARD_MODEL_BIG").is_ok_and(|v| v == "1")
}

/// The bounds of the checks: one event (two with `JOBBOARD_MODEL_BIG=1`), and at most one of
/// each fault (two refusals with `JOBBOARD_MODEL_BIG=1`); redrive and deletion have checks of
/// their own.
fn bounds() -> Bounds {
    Bounds {
        events: if big() { 2 } else { 1 },
        crashes: 1,
        outages: 1,
        expiries: 1,
        duplicates: 1,
        refusals: if big() { 2 } else { 1 },
        redrives: if big() { 1 } else { 0 },
        deletions: if big() { 1 } else { 0 },
    }
}

const SAFETY_AND_LIVENESS: &[&str] = &[
    "nothing is lost",
    "repeats never exceed reclaims",
    "no send after a dead letter",
    "a failed send never burns another holder's claim",
    "only failed sends count as attempts",
    "a heartbeat knows its lease",
];

/// What one check found: for each property broken, its first counterexample.
struct Found {
    broken: Vec<(&'static str, String)>,
}

fn describe(model: &Protocol) -> String {
    format!(
        "workers {:?}, QUEUE={:?}, MAX_ATTEMPTS={}, {:?}, refusals {:?}, mutation {:?}",
        model.workers,
        model.queue,
        model.max_attempts,
        model.bounds,
        model.refusals,
        model.mutation
    )
}

/// Checks the model exhaustively (breadth first, two threads). With `stop_early`, stops at the
/// first property broken.
fn check(model: Protocol, stop_early: bool) -> Found {
    let what = describe(&model);
    let start = Instant::now();
    let mut builder = model.checker().threads(2);
    if stop_early {
        builder = builder.finish_when(HasDiscoveries::AnyFailures);
    }
    if let Some(secs) = std::env::var("JOBBOARD_MODEL_PROBE_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        builder = builder.timeout(std::time::Duration::from_secs(secs));
    }
    let checker = builder.spawn_bfs().join();
    let elapsed = start.elapsed();
    let mut broken = Vec::new();
    for name in SAFETY_AND_LIVENESS {
        if let Some(path) = checker.discovery(name) {
            let verbose = std::env::var("JOBBOARD_MODEL_TRACE_STATES").is_ok();
            let steps: Vec<String> = path
                .into_vec()
                .into_iter()
                .filter_map(|(state, action)| match (verbose, action) {
                    (true, a) => Some(format!("{state:?}\n    {a:?}")),
                    (false, a) => a.map(|a| format!("{a:?}")),
                })
                .collect();
            broken.push((*name, steps.join("\n  ")));
        }
    }
    println!(
        "model check: {what}: {} states ({} unique), depth {}, {:.1} s{}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        elapsed.as_secs_f64(),
        if broken.is_empty() {
            String::new()
        } else {
            format!(
                ", broken: {:?}",
                broken.iter().map(|(n, _)| *n).collect::<Vec<_>>()
            )
        }
    );
    if !stop_early {
        assert!(
            checker.discovery("an event is sent").is_some(),
            "the model never sends: it proves nothing"
        );
    }
    Found { broken }
}

fn assert_kept(model: Protocol) {
    let found = check(model, false);
    for (name, trace) in &found.broken {
        println!("the checker broke \"{name}\":\n  {trace}");
    }
    assert!(found.broken.is_empty(), "the checker broke the promise");
}

/// A model of the code as it is, with the mail outcomes it handles as the contract says.
fn code(workers: Vec<Mode>, queue: QueueKind) -> Protocol {
    Protocol::new(workers, queue, bounds())
}

// The code keeps the promise.

#[test]
fn lease_and_transaction_workers_on_the_database_queue() {
    assert_kept(code(vec![Mode::Lease, Mode::Transaction], QueueKind::Db));
}

#[test]
fn two_lease_workers_on_sqs() {
    assert_kept(code(vec![Mode::Lease, Mode::Lease], QueueKind::Sqs));
}

#[test]
fn a_batch_worker_and_a_transaction_worker_on_sqs() {
    // Two messages in one receive multiply the interleavings: no outage here (the other
    // checks have one), except in the big run.
    let mut model = code(vec![Mode::Batch, Mode::Transaction], QueueKind::Sqs);
    if !big() {
        model.bounds.outages = 0;
    }
    assert_kept(model);
}

#[test]
fn redrive_and_deleted_applications() {
    let mut model = code(vec![Mode::Lease, Mode::Transaction], QueueKind::Db);
    model.bounds = Bounds {
        outages: 0,
        redrives: 1,
        deletions: 1,
        ..model.bounds
    };
    assert_kept(model);
}

#[test]
fn two_transaction_workers_on_the_database_queue() {
    assert_kept(code(
        vec![Mode::Transaction, Mode::Transaction],
        QueueKind::Db,
    ));
}

/// The mail service accepts a message after the worker's deadline (`EMAIL_SEND_TIMEOUT_SECS`),
/// or the connection drops after the data was taken: the worker cannot know it went, counts the
/// attempt and keeps the claim until its lease lapses, so the retry that sends again is a
/// counted reclaim. With a 4xx too, so that both kinds of failure meet on one event.
#[test]
fn a_late_acceptance_is_retried_through_a_counted_reclaim() {
    for workers in [
        vec![Mode::Lease, Mode::Transaction],
        vec![Mode::Lease, Mode::Lease],
        vec![Mode::Transaction, Mode::Transaction],
    ] {
        let mut model = code(workers, QueueKind::Db);
        model.refusals = vec![Mail::Refuse4xx, Mail::AcceptLate];
        assert_kept(model);
    }
}

// Teeth: each fence switched off, the checker finds a counterexample.

fn assert_broken(mutation: Mutation, workers: Vec<Mode>, property: &str) {
    let mut model = code(workers, QueueKind::Db);
    model.mutation = Some(mutation);
    let found = check(model, true);
    let (name, trace) = found
        .broken
        .first()
        .unwrap_or_else(|| panic!("without the fence ({mutation:?}) the checker found nothing"));
    println!("first counterexample without the fence ({mutation:?}), \"{name}\":\n  {trace}");
    assert!(
        found.broken.iter().any(|(n, _)| *n == property),
        "expected \"{property}\" to break, found {:?}",
        found.broken.iter().map(|(n, _)| *n).collect::<Vec<_>>()
    );
}

#[test]
fn without_the_lease_id_a_release_burns_another_holders_claim() {
    assert_broken(
        Mutation::ReleaseWithoutLeaseId,
        vec![Mode::Lease, Mode::Lease],
        "a failed send never burns another holder's claim",
    );
}

#[test]
fn without_the_lease_id_a_heartbeat_extends_a_lost_lease() {
    assert_broken(
        Mutation::HeartbeatExtendsLostLease,
        vec![Mode::Lease, Mode::Lease],
        "a heartbeat knows its lease",
    );
}

#[test]
fn a_transaction_claim_that_ignores_a_live_lease_repeats_unreclaimed() {
    assert_broken(
        Mutation::TransactionClaimIgnoresLiveLease,
        vec![Mode::Lease, Mode::Transaction],
        "repeats never exceed reclaims",
    );
}

#[test]
fn counting_receives_as_attempts_dead_letters_unsent_events() {
    assert_broken(
        Mutation::ReceiveCountAsAttempts,
        vec![Mode::Lease, Mode::Lease],
        "only failed sends count as attempts",
    );
}

#[test]
fn deleting_the_message_before_the_record_loses_events() {
    assert_broken(
        Mutation::AckBeforeRecord,
        vec![Mode::Lease, Mode::Lease],
        "nothing is lost",
    );
}

/// A send whose outcome is unknown released as a plain failure (pending, as a 4xx would be):
/// the retry takes the claim as an ordinary one and sends again with no reclaim counted.
#[test]
fn releasing_a_late_acceptance_repeats_without_a_reclaim() {
    for workers in [
        vec![Mode::Lease, Mode::Lease],
        vec![Mode::Transaction, Mode::Transaction],
    ] {
        let mut model = code(workers, QueueKind::Db);
        model.refusals = vec![Mail::AcceptLate];
        model.mutation = Some(Mutation::UnknownOutcomeReleased);
        let found = check(model, true);
        let (_, trace) = found
            .broken
            .iter()
            .find(|(n, _)| *n == "repeats never exceed reclaims")
            .expect("without the fence the checker finds an unreclaimed repeat");
        println!("counterexample without the fence (UnknownOutcomeReleased):\n  {trace}");
    }
}

// What the checker finds against the code: the mail outcomes the checks above leave out.

fn assert_found(model: Protocol, property: &str) {
    let found = check(model, true);
    let (_, trace) = found
        .broken
        .iter()
        .find(|(n, _)| *n == property)
        .unwrap_or_else(|| panic!("expected the checker to break \"{property}\""));
    println!("counterexample, \"{property}\":\n  {trace}");
}

/// docs/guarantee.md: a refused session (unreachable, TLS, greeting, authentication, throttling)
/// is an outage of the mail service, not an attempt: the claim is released and nothing counts.
/// Every invariant holds. "Nothing is lost" is left out here: a refused session spends a
/// redelivery without an attempt, so within the model's bound on redeliveries a path can end
/// with the event still queued (the real queue redelivers without bound).
#[test]
fn a_refused_session_counts_no_attempt() {
    let mut model = code(vec![Mode::Lease, Mode::Transaction], QueueKind::Db);
    model.bounds.refusals = 2;
    model.refusals = vec![Mail::SessionRefused, Mail::SessionRefused5xx];
    let found = check(model, false);
    for (name, trace) in &found.broken {
        println!("the checker broke \"{name}\":\n  {trace}");
    }
    assert!(
        found
            .broken
            .iter()
            .all(|(name, _)| *name == "nothing is lost"),
        "a refused session broke an invariant"
    );
}

/// Before `SendError::Unavailable`, the mailer reported a refused session as a failed send:
/// with that fence off the checker finds attempts burned (and events dead-lettered) that no
/// server ever took.
#[test]
fn counting_a_refused_session_as_an_attempt_is_found() {
    let mut model = code(vec![Mode::Lease, Mode::Transaction], QueueKind::Db);
    model.bounds.refusals = 2;
    model.mutation = Some(Mutation::SessionRefusalCounted);
    for refused in [Mail::SessionRefused, Mail::SessionRefused5xx] {
        let mut model = model.clone();
        model.refusals = vec![refused];
        assert_found(model, "only failed sends count as attempts");
    }
}

// Tied to the code.

#[test]
fn the_modelled_statements_are_the_reviewed_ones() {
    let mut changed = Vec::new();
    for (source, action, reviewed) in statements::TIED {
        let now = statements::hash(source);
        if now != *reviewed {
            changed.push(format!(
                "{} (model: {action}): reviewed {reviewed}, now {now}",
                statements::name(source)
            ));
        }
    }
    assert!(
        changed.is_empty(),
        "statements the model stands for changed:\n  {}\nreview the model (tests/model/protocol.rs), \
         then update the hash in tests/model/statements.rs",
        changed.join("\n  ")
    );
}
