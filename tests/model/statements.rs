//! The statements the model stands for, read from the source, each with the hash of its text as
//! the model was last reviewed against it. When one changes, the test fails until the model in
//! `protocol.rs` is reviewed against the new text and the hash here updated.

use sha2::{Digest, Sha256};

const STATEMENTS: &str = include_str!("../../src/store/sql/statements.rs");
const EVENTS: &str = include_str!("../../src/store/sql/events.rs");
const DB_QUEUE: &str = include_str!("../../src/store/sql/db_queue.rs");

/// Where a statement's text is.
pub enum Source {
    /// A `const` of `src/store/sql/statements.rs`.
    Const(&'static str),
    /// A statement built inside a function of `src/store/sql/events.rs` (the whole function).
    Function(&'static str),
}

/// (the statement, the model's action that stands for it, the reviewed hash).
pub const TIED: &[(Source, &str, &str)] = &[
    (
        Source::Const("CLAIM_INSERT"),
        "Step/Phase::Claim: lease.rs handle_lease → claim_event",
        "ecb01fff828cd398",
    ),
    (
        Source::Const("CLAIM_READ_LOCKED"),
        "Step/Phase::Claim: claim_event",
        "a08e61033f063c7f",
    ),
    (
        Source::Const("CLAIM_TAKE"),
        "Step/Phase::Claim: claim_event",
        "7ad4c71056b0d839",
    ),
    (
        Source::Const("APPLICATION_EVENT"),
        "Step/Phase::Data, Phase::TxData: email_data, process_in_transaction",
        "6daf692afc817713",
    ),
    (
        Source::Const("STATUS_CHANGED_DATA"),
        "Step/Phase::Data, Phase::TxData: email_data, process_in_transaction",
        "6c3181d3871d4f1f",
    ),
    (
        Source::Const("SUBMITTED_EVENT"),
        "Step/Phase::Data, Phase::TxData: email_data, process_in_transaction",
        "35d721ead8f91818",
    ),
    (
        Source::Const("SUBMITTED_DATA"),
        "Step/Phase::Data, Phase::TxData: email_data, process_in_transaction",
        "180892aef6697c2a",
    ),
    (
        Source::Const("JOB_EVENT_DATA"),
        "Step/Phase::Data, Phase::TxData: email_data, process_in_transaction",
        "ddf51c514f16b3aa",
    ),
    (
        Source::Const("DIGEST_DATA"),
        "Step/Phase::Data, Phase::TxData: email_data, process_in_transaction",
        "6a86960b14781094",
    ),
    (
        Source::Const("CLAIM_EXTEND"),
        "Beat: heartbeat.rs send_with_heartbeat → extend_claim",
        "255f0032482ebe6a",
    ),
    (
        Source::Const("CLAIM_FINISH"),
        "Step/Phase::Missing: lease.rs missing → finish_claim",
        "bb710ccfd70375bf",
    ),
    (
        Source::Function("finish_claims"),
        "Step/Phase::Accepted: record.rs record_done → finish_claims",
        "cf390dd30b81f34b",
    ),
    (
        Source::Const("CLAIM_FAIL_SET"),
        "Step/Phase::Failed, Phase::TxFail: record_failure",
        "fbacc9d9d69949c6",
    ),
    (
        Source::Const("CLAIM_FAIL_LEASED"),
        "Step/Phase::Failed: lease.rs failed_send → fail_claim",
        "f97be78baeed7dab",
    ),
    (
        Source::Const("CLAIM_FAIL_UNLEASED"),
        "Step/Phase::TxFail: process_in_transaction → record_failure",
        "b820a3689869c0df",
    ),
    (
        Source::Const("CLAIM_KEEP_SET"),
        "Step/Phase::Failed, Phase::TxFail with kept: record_failure",
        "5a9bd476f7bb8296",
    ),
    (
        Source::Const("CLAIM_KEEP_LEASED"),
        "Step/Phase::Failed with kept: lease.rs failed_send → keep_failed_claim",
        "2e656e398487484f",
    ),
    (
        Source::Const("CLAIM_KEEP_UNLEASED"),
        "Step/Phase::TxFail with kept: process_in_transaction → record_failure",
        "91f4d0cd9af806b8",
    ),
    (
        Source::Const("CLAIM_FOR_FAILURE"),
        "Step/Phase::TxFail: process_in_transaction",
        "8a243c39c7a5c560",
    ),
    (
        Source::Const("CLAIM_STATUS"),
        "Step/Phase::TxFail: claim_status",
        "a8222ac754799733",
    ),
    (
        Source::Const("CLAIM_TX_PEEK"),
        "Step/Phase::TxMark: process_in_transaction",
        "0010323581cb025b",
    ),
    (
        Source::Const("CLAIM_TX_MARK"),
        "Step/Phase::TxMark: process_in_transaction",
        "e24bed467affbf06",
    ),
    (
        Source::Const("CLAIM_IN_TRANSACTION"),
        "Step/Phase::TxClaim: process_in_transaction",
        "400f73d3c2b4a360",
    ),
    (
        Source::Const("CLAIM_STATE"),
        "Step/Phase::TxClaim: process_in_transaction",
        "d6ee67b6b9c301a2",
    ),
    (
        Source::Const("CLAIM_MISSING"),
        "Step/Phase::TxData: process_in_transaction",
        "f5f9a0adafd8dbae",
    ),
    (
        Source::Const("CLAIM_RESET"),
        "Redrive: redrive, reset_dead_event",
        "50c9256a5727efb8",
    ),
    (
        Source::Function("claim_new_events"),
        "ReceiveBatch: batch.rs handle_batch → claim_new_events",
        "b5d4e0e441d4b6ca",
    ),
    (
        Source::Const("QUEUE_RECEIVE"),
        "Receive, ReceiveBatch: DbQueue::receive → queue_receive",
        "68c52c5438fc934e",
    ),
    (
        Source::Const("QUEUE_ACK"),
        "Step/Phase::Ack, Phase::DeadLetter: DbQueue::ack, queue_dead_letter",
        "18d3e2c6ae7d8f85",
    ),
    (
        Source::Function("queue_ack_many"),
        "Step/Phase::Ack: batch.rs record_group → ack_many",
        "4928566d24fc5920",
    ),
    (
        Source::Const("QUEUE_DELAY"),
        "Step/Phase::RetryLater, Beat: DbQueue::retry_later, extend",
        "cac1e8ab786038f3",
    ),
    (
        Source::Const("DEAD_LETTER_INSERT"),
        "Step/Phase::DeadLetter: queue_dead_letter",
        "e40ab3b23c5236e9",
    ),
    (
        Source::Const("DEAD_LETTER_DELETE"),
        "Redrive: redrive",
        "4b03c20ce6a5ef82",
    ),
    (
        Source::Const("OUTBOX_INSERT"),
        "Redrive: redrive (the copy)",
        "18aec6c2a3eaf474",
    ),
];

/// The statement's text: its definition with the whitespace collapsed.
pub fn text(source: &Source) -> String {
    let (file, start, end) = match source {
        Source::Const(name) => (STATEMENTS, format!("const {name}: &str"), ";\n"),
        Source::Function(name) => {
            let start = format!("async fn {name}(");
            // The events' methods, and the database queue's since they moved to a file of their own.
            let file = if EVENTS.contains(&start) {
                EVENTS
            } else {
                DB_QUEUE
            };
            (file, start, "\n    }\n")
        }
    };
    let at = file
        .find(&start)
        .unwrap_or_else(|| panic!("`{start}` is gone from the source: review the model"));
    let rest = &file[at..];
    let len = rest.find(end).expect("the definition ends") + end.len();
    rest[..len].split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn hash(source: &Source) -> String {
    hex::encode(&Sha256::digest(text(source).as_bytes())[..8])
}

pub fn name(source: &Source) -> &'static str {
    match source {
        Source::Const(n) | Source::Function(n) => n,
    }
}
