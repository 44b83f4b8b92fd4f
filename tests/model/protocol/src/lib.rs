//! The worker's protocol (docs/guarantee.md) as a state machine for the `stateright` model checker.
//!
//! Every action stands for one function of the code and the statements it runs; the names are in
//! the comments of [`Action`] and in [`TIED` in tests/model/statements.rs], whose hash test fails when one
//! of those statements changes, so that this model is reviewed with it.
//!
//! Abstractions, all on the side of more behaviour than the code can show:
//! - Time is not counted. A lease or a message's visibility runs out whenever its holder has
//!   stopped keeping it (crashed, abandoned the message, or the database is down); while the
//!   holder is alive and working it runs out only by spending the `expiries` bound (a stalled
//!   process, a send slower than the lease). A delayed message (`retry_later`) becomes visible
//!   again at once.
//! - Lease ids are the holder's slot (`worker·2 + slot + 1`): two live tasks never share one.
//! - A batch records each accepted send on its own; the code groups the sends accepted within
//!   5 ms into one statement, whose per-event outcome is the same.
//! - Redrive is one step (with `QUEUE=sqs` the code first resets the claim, then sends the copy).

use std::hash::Hash;

use stateright::{Model, Property};

/// A worker's `CLAIM_MODE` (with `WORKER_BATCH` for lease mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mode {
    Lease,
    Batch,
    Transaction,
}

/// `QUEUE`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QueueKind {
    Db,
    Sqs,
}

/// One fence of the code switched off, to show that the checker notices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mutation {
    /// `CLAIM_FAIL_LEASED` without `AND lease_id = $5`.
    ReleaseWithoutLeaseId,
    /// `CLAIM_EXTEND` without `AND lease_id = $2`.
    HeartbeatExtendsLostLease,
    /// `CLAIM_TX_PEEK`/`CLAIM_TX_MARK`/`CLAIM_IN_TRANSACTION` taking a claim whose lease is live.
    TransactionClaimIgnoresLiveLease,
    /// Dead-lettering once the queue's receive count passes `MAX_ATTEMPTS`.
    ReceiveCountAsAttempts,
    /// Deleting the message once the event is claimed, before its send is recorded.
    AckBeforeRecord,
    /// A send whose outcome is unknown (`SendError::Unknown`) released as a plain failure
    /// (`CLAIM_FAIL_LEASED`/`CLAIM_FAIL_UNLEASED` instead of `CLAIM_KEEP_LEASED`/
    /// `CLAIM_KEEP_UNLEASED`): the retry's claim is not a counted reclaim.
    UnknownOutcomeReleased,
    /// A refused session counted as a failed send (`classify` before `SendError::Unavailable`):
    /// a 4xx greeting or login burns an attempt, a 5xx one dead-letters at once.
    SessionRefusalCounted,
}

/// What the mail service does with one message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mail {
    /// 250: accepted.
    Accept,
    /// A 4xx, or the connection dropped before the data was taken.
    Refuse4xx,
    /// A 5xx for the sender, the recipient or the data.
    Refuse5xx,
    /// The session never started (unreachable, TLS, a 4xx greeting or authentication,
    /// throttling).
    SessionRefused,
    /// The session never started: a 5xx greeting or authentication (`classify` makes it a
    /// permanent failure).
    SessionRefused5xx,
    /// Accepted, but after the client's deadline (`EMAIL_SEND_TIMEOUT_SECS`), or the connection
    /// dropped after the data was taken: the worker sees `SendError::Unknown`.
    AcceptLate,
}

/// What the worker's code is handed for a send: the mailer's result (`SendError`'s variants).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Seen {
    Sent,
    /// `SendError::Transient`: failed for now, counted, released.
    Transient,
    /// `SendError::Permanent`: refused for good, dead-lettered.
    Permanent,
    /// `SendError::Unavailable`: a refused session, nothing counted, released.
    Unavailable,
    /// `SendError::Unknown`: counted, the claim kept until its lease lapses.
    Unknown,
}

impl Mail {
    pub const ALL: [Mail; 6] = [
        Mail::Accept,
        Mail::Refuse4xx,
        Mail::Refuse5xx,
        Mail::SessionRefused,
        Mail::SessionRefused5xx,
        Mail::AcceptLate,
    ];

    /// What the code makes of this outcome. The table in `src/email/smtp.rs`'s tests
    /// (`every_smtp_reply_is_a_modelled_outcome`) ties every SMTP reply, command by command,
    /// to one of these through the real classifier; [`Protocol`]'s `send` acts on this.
    pub fn seen(self) -> Seen {
        match self {
            Mail::Accept => Seen::Sent,
            Mail::Refuse4xx => Seen::Transient,
            Mail::Refuse5xx => Seen::Permanent,
            Mail::SessionRefused | Mail::SessionRefused5xx => Seen::Unavailable,
            Mail::AcceptLate => Seen::Unknown,
        }
    }

    /// Whether the mail server has the message afterwards.
    pub fn taken(self) -> bool {
        matches!(self, Mail::Accept | Mail::AcceptLate)
    }

    /// Whether the server's reply was a 5xx.
    pub fn five_hundred(self) -> bool {
        matches!(self, Mail::Refuse5xx | Mail::SessionRefused5xx)
    }
}

/// The bounds of one check: how much of each fault the environment may spend.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bounds {
    pub events: u8,
    pub crashes: u8,
    pub outages: u8,
    pub expiries: u8,
    pub duplicates: u8,
    pub refusals: u8,
    pub redrives: u8,
    pub deletions: u8,
}

/// The system under check.
#[derive(Clone, Debug)]
pub struct Protocol {
    pub workers: Vec<Mode>,
    pub queue: QueueKind,
    pub max_attempts: u8,
    pub bounds: Bounds,
    /// The mail outcomes other than `Accept` the service may give (each spends a refusal).
    pub refusals: Vec<Mail>,
    pub mutation: Option<Mutation>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    InProgress,
    Pending,
    Done,
    Missing,
    Dead,
}

/// A `processed_events` row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Row {
    pub status: Status,
    /// The `lease_id` column.
    pub lease: Option<u8>,
    /// `locked_until > now` (a NULL `locked_until` is never alive).
    pub alive: bool,
    pub attempts: u8,
    /// Ghost: the slot whose claim last made the row `in_progress` (a transaction's mark has no
    /// lease id, but has a holder).
    pub holder: u8,
    /// The worker whose open transaction holds the row's lock (transaction mode).
    pub locked_by: Option<u8>,
}

/// A message on the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Msg {
    pub id: u8,
    pub event: u8,
    /// The receipt of the receive that hides it; 0 while visible.
    pub receipt: u8,
    /// The queue's receive count, saturating above `MAX_ATTEMPTS`.
    pub receives: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    // Lease mode (src/worker/lease.rs, heartbeat.rs, record.rs, batch.rs).
    Claim,
    Data,
    Send,
    Accepted,
    Failed {
        permanent: bool,
        /// The outcome is unknown: the claim is kept (`CLAIM_KEEP_LEASED`), left to lapse.
        kept: bool,
        /// A failed send (an attempt); not a refused session, which only releases the claim
        /// (`release_claim`: `SendError::Unavailable`, nothing counted).
        counted: bool,
    },
    Missing,
    // Transaction mode (src/worker/transaction.rs, process_in_transaction).
    TxMark,
    TxClaim,
    TxData,
    TxSend,
    TxCommit,
    TxFail {
        permanent: bool,
        /// The outcome is unknown: the mark is kept (`CLAIM_KEEP_UNLEASED`).
        kept: bool,
        /// A failed send; a refused session (`TxOutcome::Released`) counts nothing.
        counted: bool,
    },
    // The queue call that ends the message's handling (src/queue/db.rs, sqs.rs).
    Ack,
    RetryLater,
    DeadLetter,
    /// `QUEUE=sqs`: the copy is in the dead-letter queue; the message is still to be deleted.
    DeadLetterAck,
}

/// One message in a worker's hands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Task {
    pub msg: u8,
    pub event: u8,
    pub phase: Phase,
    /// Transaction mode: the mark took over a vanished holder's claim.
    pub reclaimed: bool,
    /// Ghost: another claim took this task's claim over (the task outlived its lease).
    pub taken_over: bool,
    /// The heartbeat learned that the lease is lost and stopped.
    pub lost: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    pub rows: Vec<Option<Row>>,
    pub queue: Vec<Msg>,
    pub next_msg: u8,
    pub tasks: Vec<[Option<Task>; 2]>,
    pub db_down: bool,
    pub deleted: Vec<bool>,
    /// Per event: acceptances by the mail service, counted reclaims, failed message sends,
    /// dead letters listed.
    pub accepted: Vec<u8>,
    pub reclaims: Vec<u8>,
    pub failed_sends: Vec<u8>,
    pub dead_letters: Vec<u8>,
    pub left: Bounds,
    /// Violations seen on a step (the invariants read them).
    pub burned_other: bool,
    pub send_after_dead: bool,
    pub premature_dead: bool,
    pub false_heartbeat: bool,
}

/// Has a task in this phase made its claim (and not yet given it up)?
fn claimed(phase: Phase) -> bool {
    matches!(
        phase,
        Phase::Data
            | Phase::Send
            | Phase::Accepted
            | Phase::Failed { .. }
            | Phase::Missing
            | Phase::TxClaim
            | Phase::TxData
            | Phase::TxSend
            | Phase::TxCommit
            | Phase::TxFail { .. }
    )
}

/// Slot `s` of worker `w`: its lease ids and its receipts.
pub fn token(w: usize, s: usize) -> u8 {
    (w * 2 + s + 1) as u8
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// `Worker::run` → `Queue::receive` (`QUEUE_RECEIVE`; SQS `ReceiveMessage`).
    Receive {
        w: u8,
        msg: u8,
    },
    /// `handle_batch` → `Queue::receive` of two, `claim_new_events` (the batch `INSERT ... ON
    /// CONFLICT DO NOTHING RETURNING`) and `email_data_many`.
    ReceiveBatch {
        w: u8,
        a: u8,
        b: u8,
    },
    /// One step of the task in slot `s` of worker `w`; what it runs depends on its phase.
    Step {
        w: u8,
        s: u8,
    },
    /// `send_with_heartbeat` (lease) or the send closure (transaction): the mail service's answer.
    Send {
        w: u8,
        s: u8,
        mail: Mail,
    },
    /// `send_with_heartbeat`'s `beat`: `extend_claim` (`CLAIM_EXTEND`) then `Queue::extend`.
    Beat {
        w: u8,
        s: u8,
    },
    /// The database fails the task's next statement: the handler returns an error, the message
    /// is left to come back after its visibility timeout (`Worker::handled`); a transaction
    /// rolls back.
    DbError {
        w: u8,
        s: u8,
    },
    /// The worker process dies (SIGKILL) and starts again with nothing in hand.
    Crash {
        w: u8,
    },
    OutageStarts,
    OutageEnds,
    /// `QUEUE=sqs`: a delete with an outdated receipt handle, which SQS may honour ("the
    /// request succeeds, but the message might not be deleted").
    StaleDelete {
        w: u8,
        s: u8,
    },
    /// A lease runs out on the database clock.
    LeaseExpires {
        e: u8,
    },
    /// A message's visibility timeout passes.
    VisibilityExpires {
        msg: u8,
    },
    /// A second copy of an event's message: the outbox relay publishing again after a crash,
    /// SQS's at-least-once delivery, or a re-injection.
    Duplicate {
        e: u8,
    },
    /// `jobboard dlq redrive` (`redrive`: `OUTBOX_INSERT`, `CLAIM_RESET`, `DEAD_LETTER_DELETE`;
    /// SQS `reset_dead_event` + `SendMessage` + `DeleteMessage` on the DLQ).
    Redrive {
        e: u8,
    },
    /// What the event reports is deleted (for a status change, the application with its
    /// history rows), or its person turns that email off: the same to the worker.
    DeleteApplication {
        e: u8,
    },
}

impl Protocol {
    pub fn new(workers: Vec<Mode>, queue: QueueKind, bounds: Bounds) -> Protocol {
        Protocol {
            workers,
            queue,
            max_attempts: 2,
            bounds,
            refusals: vec![Mail::Refuse4xx, Mail::Refuse5xx],
            mutation: None,
        }
    }

    fn mutated(&self, m: Mutation) -> bool {
        self.mutation == Some(m)
    }

    fn slots(&self, w: usize) -> usize {
        match self.workers[w] {
            Mode::Batch => 2,
            _ => 1,
        }
    }

    /// Does a live task hold the claim of event `e` (keeping its lease alive by its heartbeat)?
    fn held(&self, st: &State, e: usize) -> bool {
        let Some(row) = st.rows[e] else { return false };
        st.tasks.iter().enumerate().any(|(w, slots)| {
            slots.iter().enumerate().any(|(s, t)| {
                t.is_some_and(|t| {
                    t.event as usize == e
                        && !t.taken_over
                        && row.holder == token(w, s)
                        && matches!(
                            t.phase,
                            Phase::Data
                                | Phase::Send
                                | Phase::Accepted
                                | Phase::Failed { .. }
                                | Phase::Missing
                        )
                })
            })
        })
    }

    /// Does a live task hold message `m` under its current receipt?
    fn msg_held(&self, st: &State, m: &Msg) -> bool {
        st.tasks.iter().enumerate().any(|(w, slots)| {
            slots
                .iter()
                .enumerate()
                .any(|(s, t)| t.is_some_and(|t| t.msg == m.id && token(w, s) == m.receipt))
        })
    }

    /// Does this step need the database (rather than only the mail service or, with SQS, the
    /// queue)?
    fn needs_db(&self, phase: Phase) -> bool {
        match phase {
            Phase::Send | Phase::TxSend => false,
            Phase::Ack | Phase::RetryLater | Phase::DeadLetter | Phase::DeadLetterAck => {
                self.queue == QueueKind::Db
            }
            _ => true,
        }
    }

    /// Is the row locked by another worker's open transaction (a statement on it waits)?
    fn blocked(st: &State, w: usize, e: usize) -> bool {
        st.rows[e].is_some_and(|r| r.locked_by.is_some_and(|l| l as usize != w))
    }

    /// Marks every live task whose claim on `e` a new claim replaces as taken over.
    fn take_over(st: &mut State, e: usize, by: u8) {
        let Some(row) = st.rows[e] else { return };
        if row.status != Status::InProgress || row.holder == by {
            return;
        }
        for (w, slots) in st.tasks.iter_mut().enumerate() {
            for (s, t) in slots.iter_mut().enumerate() {
                if let Some(t) = t
                    && t.event as usize == e
                    && token(w, s) == row.holder
                    && claimed(t.phase)
                {
                    t.taken_over = true;
                }
            }
        }
    }

    /// Is some live task other than `me` the holder of `e`'s claim (it took it and nobody took
    /// it over)?
    fn held_by_other(&self, st: &State, e: usize, me: u8) -> bool {
        let Some(row) = st.rows[e] else { return false };
        if row.locked_by.is_some() {
            return true;
        }
        row.status == Status::InProgress && row.holder != me && self.held(st, e)
    }

    /// Ends a message's handling with a queue call.
    fn remove_msg(st: &mut State, id: u8) {
        st.queue.retain(|m| m.id != id);
    }

    /// A dead letter for event `e` is written.
    fn dead_letter(&self, st: &mut State, e: usize) {
        match self.queue {
            // DEAD_LETTER_INSERT: one per event (ON CONFLICT DO NOTHING).
            QueueKind::Db => st.dead_letters[e] = 1,
            QueueKind::Sqs => st.dead_letters[e] = (st.dead_letters[e] + 1).min(2),
        }
    }

    /// The step of a task in `phase` (the database is up and the row not locked by another).
    fn step(&self, st: &mut State, w: usize, s: usize) {
        let me = token(w, s);
        let mut t = st.tasks[w][s].expect("a task");
        let e = t.event as usize;
        let msg_pos = st.queue.iter().position(|m| m.id == t.msg);
        let mine = msg_pos.is_some_and(|p| st.queue[p].receipt == me);
        let max = self.max_attempts;
        let next = match t.phase {
            // lease.rs handle_lease → EventStore::claim_event: CLAIM_INSERT, else
            // CLAIM_READ_LOCKED and CLAIM_TAKE.
            Phase::Claim => {
                let receives = msg_pos.map_or(0, |p| st.queue[p].receives);
                if self.mutated(Mutation::ReceiveCountAsAttempts) && receives > max {
                    // Only failed sends count: a dead letter rests on a claim they made dead.
                    if st.rows[e].is_none_or(|r| r.status != Status::Dead) {
                        st.premature_dead = true;
                    }
                    Phase::DeadLetter
                } else {
                    match st.rows[e] {
                        None => {
                            st.rows[e] = Some(Row {
                                status: Status::InProgress,
                                lease: Some(me),
                                alive: true,
                                attempts: 0,
                                holder: me,
                                locked_by: None,
                            });
                            Phase::Data
                        }
                        Some(row) => match row.status {
                            Status::InProgress if row.alive => Phase::RetryLater,
                            Status::InProgress | Status::Pending => {
                                if row.status == Status::InProgress {
                                    // WARN "reclaiming expired claim", events_reclaimed_total.
                                    st.reclaims[e] += 1;
                                    Self::take_over(st, e, me);
                                }
                                st.rows[e] = Some(Row {
                                    status: Status::InProgress,
                                    lease: Some(me),
                                    alive: true,
                                    holder: me,
                                    ..row
                                });
                                Phase::Data
                            }
                            Status::Dead => Phase::DeadLetter,
                            Status::Done | Status::Missing => Phase::Ack,
                        },
                    }
                }
            }
            // lease.rs handle_lease → email_data (STATUS_CHANGED_DATA, SUBMITTED_DATA,
            // JOB_EVENT_DATA or DIGEST_DATA, by type: each finds nothing once the event's record
            // or what it reports is gone, or its person turned the email off). An event this
            // version cannot email (`Loaded::Unsendable`) fails for good without a send: the
            // path of `Mail::Refuse5xx`, with no message on the server.
            Phase::Data => {
                if self.mutated(Mutation::AckBeforeRecord) && mine {
                    Self::remove_msg(st, t.msg);
                }
                if st.deleted[e] {
                    Phase::Missing
                } else {
                    Phase::Send
                }
            }
            // lease.rs missing → finish_claim(Missing) (CLAIM_FINISH), then ack.
            Phase::Missing => {
                if let Some(row) = st.rows[e]
                    && row.status == Status::InProgress
                    && row.lease == Some(me)
                {
                    st.rows[e] = Some(Row {
                        status: Status::Missing,
                        lease: None,
                        alive: false,
                        ..row
                    });
                }
                Phase::Ack
            }
            // record.rs record_done → finish_claims (Done); lease.rs then acks whatever it
            // recorded.
            Phase::Accepted => {
                if let Some(row) = st.rows[e]
                    && row.status == Status::InProgress
                    && row.lease == Some(me)
                {
                    st.rows[e] = Some(Row {
                        status: Status::Done,
                        lease: None,
                        alive: false,
                        ..row
                    });
                }
                Phase::Ack
            }
            // lease.rs failed_send → fail_claim (CLAIM_FAIL_LEASED), or with the outcome unknown
            // keep_failed_claim (CLAIM_KEEP_LEASED: the claim stays in_progress under its lease,
            // which is no longer extended and lapses), then after_failure.
            Phase::Failed {
                permanent,
                kept,
                counted,
            } => {
                let lease_ok = |row: &Row| {
                    row.lease == Some(me) || self.mutated(Mutation::ReleaseWithoutLeaseId)
                };
                match st.rows[e] {
                    Some(row) if row.status == Status::InProgress && lease_ok(&row) => {
                        if self.held_by_other(st, e, me) {
                            st.burned_other = true;
                        }
                        let attempts = row.attempts + u8::from(counted);
                        let dead = counted && (permanent || attempts >= max);
                        st.rows[e] = Some(if kept && !dead {
                            Row { attempts, ..row }
                        } else {
                            Row {
                                status: if dead { Status::Dead } else { Status::Pending },
                                lease: None,
                                alive: false,
                                attempts,
                                ..row
                            }
                        });
                        if dead {
                            Phase::DeadLetter
                        } else {
                            Phase::RetryLater
                        }
                    }
                    // "send failed after the lease ended; the message will be redelivered"
                    _ => {
                        st.tasks[w][s] = None;
                        return;
                    }
                }
            }
            // transaction.rs → process_in_transaction: CLAIM_TX_PEEK, CLAIM_TX_MARK, committed.
            Phase::TxMark => {
                let ignore_live = self.mutated(Mutation::TransactionClaimIgnoresLiveLease);
                let markable = match st.rows[e] {
                    None => Some(false),
                    Some(row) => match row.status {
                        Status::InProgress if row.alive && !ignore_live => None,
                        Status::InProgress => Some(!row.alive),
                        Status::Pending => Some(false),
                        _ => None,
                    },
                };
                match markable {
                    Some(reclaimed) => {
                        Self::take_over(st, e, me);
                        let attempts = st.rows[e].map_or(0, |r| r.attempts);
                        st.rows[e] = Some(Row {
                            status: Status::InProgress,
                            lease: None,
                            alive: false,
                            attempts,
                            holder: me,
                            locked_by: None,
                        });
                        t.reclaimed = reclaimed;
                        Phase::TxClaim
                    }
                    None => match st.rows[e].map(|r| r.status) {
                        Some(Status::InProgress) => Phase::RetryLater,
                        Some(Status::Dead) => Phase::DeadLetter,
                        _ => Phase::Ack,
                    },
                }
            }
            // process_in_transaction: CLAIM_IN_TRANSACTION (the row stays locked), else
            // CLAIM_STATE.
            Phase::TxClaim => {
                let ignore_live = self.mutated(Mutation::TransactionClaimIgnoresLiveLease);
                // A row gone since the mark (a redrive reset it) is inserted afresh.
                let row = st.rows[e].unwrap_or(Row {
                    status: Status::Pending,
                    lease: None,
                    alive: false,
                    attempts: 0,
                    holder: me,
                    locked_by: None,
                });
                let takes = row.status == Status::Pending
                    || (row.status == Status::InProgress && (!row.alive || ignore_live));
                if takes {
                    // The update ('done', no lease) stays uncommitted, and the row locked: every
                    // other statement on it waits, and a rollback leaves the row as it was
                    // (the claim it would take over is taken over only by the commit).
                    st.rows[e] = Some(Row {
                        locked_by: Some(w as u8),
                        ..row
                    });
                    Phase::TxData
                } else {
                    match row.status {
                        Status::Dead => Phase::DeadLetter,
                        Status::InProgress if row.alive => Phase::RetryLater,
                        _ => Phase::Ack,
                    }
                }
            }
            // process_in_transaction: load_email_data in the transaction (the statements of
            // Phase::Data); CLAIM_MISSING and commit.
            Phase::TxData => {
                if st.deleted[e] {
                    Self::take_over(st, e, me);
                    let row = st.rows[e].expect("locked");
                    st.rows[e] = Some(Row {
                        status: Status::Missing,
                        lease: None,
                        alive: false,
                        locked_by: None,
                        ..row
                    });
                    Phase::Ack
                } else {
                    Phase::TxSend
                }
            }
            // process_in_transaction: the commit of CLAIM_IN_TRANSACTION's 'done'.
            Phase::TxCommit => {
                Self::take_over(st, e, me);
                let row = st.rows[e].expect("locked");
                st.rows[e] = Some(Row {
                    status: Status::Done,
                    lease: None,
                    alive: false,
                    locked_by: None,
                    ..row
                });
                Phase::Ack
            }
            // process_in_transaction after the rollback: CLAIM_FOR_FAILURE, CLAIM_FAIL_UNLEASED
            // (CLAIM_KEEP_UNLEASED with the outcome unknown: the mark stays in_progress), else
            // CLAIM_STATUS.
            Phase::TxFail {
                permanent,
                kept,
                counted,
            } => {
                let row = match st.rows[e] {
                    Some(row) if row.status == Status::Pending => Row {
                        status: Status::InProgress,
                        ..row
                    },
                    Some(row) => row,
                    None => Row {
                        status: Status::InProgress,
                        lease: None,
                        alive: false,
                        attempts: 0,
                        holder: me,
                        locked_by: None,
                    },
                };
                if row.status == Status::InProgress && row.lease.is_none() {
                    if self.held_by_other(st, e, me) {
                        st.burned_other = true;
                    }
                    let attempts = row.attempts + u8::from(counted);
                    let dead = counted && (permanent || max <= 1 || attempts >= max);
                    let status = match (dead, kept) {
                        (true, _) => Status::Dead,
                        (false, true) => Status::InProgress,
                        (false, false) => Status::Pending,
                    };
                    st.rows[e] = Some(Row {
                        status,
                        attempts,
                        alive: false,
                        ..row
                    });
                    if dead {
                        Phase::DeadLetter
                    } else {
                        Phase::RetryLater
                    }
                } else {
                    st.rows[e] = Some(row);
                    match row.status {
                        Status::Dead => Phase::DeadLetter,
                        _ => Phase::Ack,
                    }
                }
            }
            // Queue::ack (QUEUE_ACK; SQS DeleteMessage through the delete batcher).
            Phase::Ack | Phase::DeadLetterAck => {
                if mine {
                    Self::remove_msg(st, t.msg);
                }
                st.tasks[w][s] = None;
                return;
            }
            // Queue::retry_later (QUEUE_DELAY; SQS ChangeMessageVisibility).
            Phase::RetryLater => {
                if let Some(p) = msg_pos
                    && mine
                {
                    st.queue[p].receipt = 0;
                }
                st.tasks[w][s] = None;
                return;
            }
            // Queue::dead_letter: DEAD_LETTER_INSERT and QUEUE_ACK in one transaction; SQS
            // SendMessage to the DLQ, then the delete.
            Phase::DeadLetter => {
                self.dead_letter(st, e);
                match self.queue {
                    QueueKind::Db => {
                        if mine {
                            Self::remove_msg(st, t.msg);
                        }
                        st.tasks[w][s] = None;
                        return;
                    }
                    QueueKind::Sqs => Phase::DeadLetterAck,
                }
            }
            Phase::Send | Phase::TxSend => unreachable!("a send is an Action::Send"),
        };
        t.phase = next;
        st.tasks[w][s] = Some(t);
    }

    /// The mail service's answer to the task's send.
    fn send(&self, st: &mut State, w: usize, s: usize, mail: Mail) {
        let mut t = st.tasks[w][s].expect("a task");
        let e = t.event as usize;
        if t.phase == Phase::TxSend && t.reclaimed {
            // The send closure: WARN "reclaiming expired claim", events_reclaimed_total.
            st.reclaims[e] += 1;
        }
        if mail.taken() {
            st.accepted[e] = (st.accepted[e] + 1).min(3);
            // The claim is dead (and not redriven), but this send's claim was never taken
            // over: the event was dead-lettered under a live holder.
            if st.rows[e].is_some_and(|r| r.status == Status::Dead) && !t.taken_over {
                st.send_after_dead = true;
            }
        }
        if matches!(
            mail.seen(),
            Seen::Transient | Seen::Permanent | Seen::Unknown
        ) {
            st.failed_sends[e] += 1;
        }
        if mail != Mail::Accept {
            st.left.refusals -= 1;
        }
        // Each error is what the code makes of it: SendError::Transient, Permanent or Unknown.
        // (A 5xx refused session is what the code made permanent before SendError::Unavailable,
        // as SessionRefusalCounted restores.)
        let permanent = mail.five_hundred();
        let kept = mail.seen() == Seen::Unknown && !self.mutated(Mutation::UnknownOutcomeReleased);
        // SendError::Unavailable: the claim is released, nothing counted.
        let counted =
            mail.seen() != Seen::Unavailable || self.mutated(Mutation::SessionRefusalCounted);
        let permanent = permanent && counted;
        t.phase = match (t.phase, mail) {
            (Phase::Send, Mail::Accept) => Phase::Accepted,
            (Phase::Send, _) => Phase::Failed {
                permanent,
                kept,
                counted,
            },
            (Phase::TxSend, Mail::Accept) => Phase::TxCommit,
            (Phase::TxSend, _) => {
                // tx.rollback(): the committed mark is what is left.
                let row = st.rows[e].expect("locked");
                st.rows[e] = Some(Row {
                    locked_by: None,
                    ..row
                });
                Phase::TxFail {
                    permanent,
                    kept,
                    counted,
                }
            }
            _ => unreachable!("not sending"),
        };
        st.tasks[w][s] = Some(t);
    }

    /// The task is dropped (an error, or its process died): a transaction rolls back.
    fn drop_task(st: &mut State, w: usize, s: usize) {
        if let Some(t) = st.tasks[w][s].take() {
            let e = t.event as usize;
            if let Some(row) = st.rows[e]
                && row.locked_by == Some(w as u8)
            {
                st.rows[e] = Some(Row {
                    locked_by: None,
                    ..row
                });
            }
        }
    }

    fn first_phase(&self, w: usize) -> Phase {
        match self.workers[w] {
            Mode::Transaction => Phase::TxMark,
            _ => Phase::Claim,
        }
    }

    fn receive(&self, st: &mut State, w: usize, s: usize, id: u8, phase: Phase) {
        let max = self.max_attempts;
        let m = st.queue.iter_mut().find(|m| m.id == id).expect("a message");
        m.receipt = token(w, s);
        m.receives = (m.receives + 1).min(max + 1);
        st.tasks[w][s] = Some(Task {
            msg: id,
            event: m.event,
            phase,
            reclaimed: false,
            taken_over: false,
            lost: false,
        });
    }
}

impl Model for Protocol {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        let n = self.bounds.events as usize;
        vec![State {
            rows: vec![None; n],
            queue: (0..n as u8)
                .map(|e| Msg {
                    id: e,
                    event: e,
                    receipt: 0,
                    receives: 0,
                })
                .collect(),
            next_msg: n as u8,
            tasks: vec![[None, None]; self.workers.len()],
            db_down: false,
            deleted: vec![false; n],
            accepted: vec![0; n],
            reclaims: vec![0; n],
            failed_sends: vec![0; n],
            dead_letters: vec![0; n],
            left: self.bounds,
            burned_other: false,
            send_after_dead: false,
            premature_dead: false,
            false_heartbeat: false,
        }]
    }

    fn actions(&self, st: &State, out: &mut Vec<Action>) {
        let queue_up = self.queue == QueueKind::Sqs || !st.db_down;
        for w in 0..self.workers.len() {
            let free: Vec<usize> = (0..self.slots(w))
                .filter(|&s| st.tasks[w][s].is_none())
                .collect();
            if queue_up && !free.is_empty() {
                let visible: Vec<u8> = st
                    .queue
                    .iter()
                    .filter(|m| m.receipt == 0)
                    .map(|m| m.id)
                    .collect();
                for &id in &visible {
                    out.push(Action::Receive {
                        w: w as u8,
                        msg: id,
                    });
                }
                if self.workers[w] == Mode::Batch && free.len() == 2 && !st.db_down {
                    for (i, &a) in visible.iter().enumerate() {
                        for &b in &visible[i + 1..] {
                            out.push(Action::ReceiveBatch { w: w as u8, a, b });
                        }
                    }
                }
            }
            let mut any = false;
            for s in 0..2 {
                let Some(t) = st.tasks[w][s] else { continue };
                any = true;
                let (w8, s8) = (w as u8, s as u8);
                let e = t.event as usize;
                match t.phase {
                    Phase::Send | Phase::TxSend => {
                        out.push(Action::Send {
                            w: w8,
                            s: s8,
                            mail: Mail::Accept,
                        });
                        if st.left.refusals > 0 {
                            for &mail in &self.refusals {
                                out.push(Action::Send { w: w8, s: s8, mail });
                            }
                        }
                        if t.phase == Phase::Send
                            && !t.lost
                            && !st.db_down
                            && !Self::blocked(st, w, e)
                        {
                            out.push(Action::Beat { w: w8, s: s8 });
                        }
                    }
                    phase => {
                        let db = self.needs_db(phase);
                        if db && st.db_down {
                            out.push(Action::DbError { w: w8, s: s8 });
                        } else if !(db && Self::blocked(st, w, e)) {
                            out.push(Action::Step { w: w8, s: s8 });
                            let stale = st
                                .queue
                                .iter()
                                .any(|m| m.id == t.msg && m.receipt != token(w, s));
                            if self.queue == QueueKind::Sqs
                                && matches!(phase, Phase::Ack | Phase::DeadLetterAck)
                                && stale
                            {
                                out.push(Action::StaleDelete { w: w8, s: s8 });
                            }
                        }
                    }
                }
            }
            if any && st.left.crashes > 0 {
                out.push(Action::Crash { w: w as u8 });
            }
        }
        if st.db_down {
            out.push(Action::OutageEnds);
        } else if st.left.outages > 0 {
            out.push(Action::OutageStarts);
        }
        for e in 0..st.rows.len() {
            if let Some(row) = st.rows[e]
                && row.alive
                && (st.db_down || !self.held(st, e) || st.left.expiries > 0)
            {
                out.push(Action::LeaseExpires { e: e as u8 });
            }
            if st.left.duplicates > 0 {
                out.push(Action::Duplicate { e: e as u8 });
            }
            if st.left.redrives > 0 && st.dead_letters[e] > 0 && queue_up {
                out.push(Action::Redrive { e: e as u8 });
            }
            if st.left.deletions > 0 && !st.deleted[e] {
                out.push(Action::DeleteApplication { e: e as u8 });
            }
        }
        for m in &st.queue {
            if m.receipt != 0 && (!self.msg_held(st, m) || st.left.expiries > 0) {
                out.push(Action::VisibilityExpires { msg: m.id });
            }
        }
    }

    fn next_state(&self, last: &State, action: Action) -> Option<State> {
        let mut st = last.clone();
        match action {
            Action::Receive { w, msg } => {
                let w = w as usize;
                let s = (0..2).find(|&s| st.tasks[w][s].is_none())?;
                self.receive(&mut st, w, s, msg, self.first_phase(w));
            }
            Action::ReceiveBatch { w, a, b } => {
                let w = w as usize;
                self.receive(&mut st, w, 0, a, Phase::Claim);
                self.receive(&mut st, w, 1, b, Phase::Claim);
                // claim_new_events: one lease for the batch's fresh events, new rows only; an
                // event seen twice in the batch and every other message goes through `handle`.
                let ea = st.tasks[w][0].expect("received").event;
                let eb = st.tasks[w][1].expect("received").event;
                for s in 0..2 {
                    let e = if s == 0 { ea } else { eb } as usize;
                    if s == 1 && ea == eb {
                        break;
                    }
                    if st.rows[e].is_none() {
                        let me = token(w, s);
                        st.rows[e] = Some(Row {
                            status: Status::InProgress,
                            lease: Some(me),
                            alive: true,
                            attempts: 0,
                            holder: me,
                            locked_by: None,
                        });
                        let mut t = st.tasks[w][s].expect("received");
                        t.phase = Phase::Data;
                        st.tasks[w][s] = Some(t);
                    }
                }
            }
            Action::Step { w, s } => self.step(&mut st, w as usize, s as usize),
            Action::Send { w, s, mail } => self.send(&mut st, w as usize, s as usize, mail),
            Action::Beat { w, s } => {
                let (w, s) = (w as usize, s as usize);
                let me = token(w, s);
                let mut t = st.tasks[w][s].expect("a task");
                let e = t.event as usize;
                let ours = |row: &Row| {
                    row.lease == Some(me) || self.mutated(Mutation::HeartbeatExtendsLostLease)
                };
                match st.rows[e] {
                    Some(row) if row.status == Status::InProgress && ours(&row) => {
                        if row.holder != me || t.taken_over {
                            st.false_heartbeat = true;
                        }
                        st.rows[e] = Some(Row { alive: true, ..row });
                    }
                    // "lost the lease during the send; no longer extending it"
                    _ => t.lost = true,
                }
                st.tasks[w][s] = Some(t);
            }
            Action::StaleDelete { w, s } => {
                let (w, s) = (w as usize, s as usize);
                let t = st.tasks[w][s].take().expect("a task");
                Self::remove_msg(&mut st, t.msg);
            }
            Action::DbError { w, s } => Self::drop_task(&mut st, w as usize, s as usize),
            Action::Crash { w } => {
                st.left.crashes -= 1;
                for s in 0..2 {
                    Self::drop_task(&mut st, w as usize, s);
                }
            }
            Action::OutageStarts => {
                st.left.outages -= 1;
                st.db_down = true;
            }
            Action::OutageEnds => st.db_down = false,
            Action::LeaseExpires { e } => {
                let e = e as usize;
                if !st.db_down && self.held(&st, e) {
                    st.left.expiries -= 1;
                }
                let row = st.rows[e].expect("a row");
                st.rows[e] = Some(Row {
                    alive: false,
                    ..row
                });
            }
            Action::VisibilityExpires { msg } => {
                let p = st.queue.iter().position(|m| m.id == msg)?;
                if self.msg_held(&st, &st.queue[p]) {
                    st.left.expiries -= 1;
                }
                st.queue[p].receipt = 0;
            }
            Action::Duplicate { e } => {
                st.left.duplicates -= 1;
                st.queue.push(Msg {
                    id: st.next_msg,
                    event: e,
                    receipt: 0,
                    receives: 0,
                });
                st.next_msg += 1;
            }
            Action::Redrive { e } => {
                let e = e as usize;
                st.left.redrives -= 1;
                st.dead_letters[e] = 0;
                if let Some(row) = st.rows[e]
                    && matches!(row.status, Status::Dead | Status::Pending)
                    && row.locked_by.is_none()
                {
                    st.rows[e] = None;
                    // A failed send already under way may still be counted after the reset.
                    st.failed_sends[e] = st
                        .tasks
                        .iter()
                        .flatten()
                        .flatten()
                        .filter(|t| {
                            t.event as usize == e
                                && matches!(t.phase, Phase::Failed { .. } | Phase::TxFail { .. })
                        })
                        .count() as u8;
                }
                st.queue.push(Msg {
                    id: st.next_msg,
                    event: e as u8,
                    receipt: 0,
                    receives: 0,
                });
                st.next_msg += 1;
            }
            Action::DeleteApplication { e } => {
                st.left.deletions -= 1;
                st.deleted[e as usize] = true;
            }
        }
        Some(st)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![
            // §6.1: every event ends accepted by the mail service, listed as a dead letter, or
            // with its application deleted.
            Property::eventually("nothing is lost", |_, st: &State| {
                (0..st.rows.len())
                    .all(|e| st.accepted[e] > 0 || st.dead_letters[e] > 0 || st.deleted[e])
            }),
            // §6.2: repeats never exceed counted reclaims.
            Property::always("repeats never exceed reclaims", |_, st: &State| {
                (0..st.rows.len()).all(|e| st.accepted[e] <= 1 + st.reclaims[e])
            }),
            // A dead-lettered event is not sent again unless redriven (a send already under
            // way whose claim was taken over is the window W).
            Property::always("no send after a dead letter", |_, st: &State| {
                !st.send_after_dead
            }),
            // A failed send counts against its own claim only.
            Property::always(
                "a failed send never burns another holder's claim",
                |_, st: &State| !st.burned_other,
            ),
            // Attempts are failed sends of the message, and a dead letter follows them.
            Property::always("only failed sends count as attempts", |_, st: &State| {
                !st.premature_dead
                    && (0..st.rows.len())
                        .all(|e| st.rows[e].is_none_or(|r| r.attempts <= st.failed_sends[e]))
            }),
            // The heartbeat reports the lease as held only while it is.
            Property::always("a heartbeat knows its lease", |_, st: &State| {
                !st.false_heartbeat
            }),
            Property::sometimes("an event is sent", |_, st: &State| {
                st.accepted.iter().any(|&a| a > 0)
            }),
        ]
    }
}
