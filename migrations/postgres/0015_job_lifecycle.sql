-- no-transaction
-- A job's lifecycle (CONTRACT.md §4, Jobs): it expires (`expires_at`), may be renewed, and
-- under JOB_MODERATION waits for an operator's review (`pending_review`, `rejected` with its
-- `rejection_reason`).
--
-- This file holds two transactions of its own, so sqlx runs it as written: the wider status
-- constraint is added NOT VALID in the first (a catalogue change under a moment's lock) and
-- checked against every row in the second, under SHARE UPDATE EXCLUSIVE, which blocks no read
-- or write of jobs. Checked in the first, the ACCESS EXCLUSIVE lock of the ADD would be held
-- for the whole scan of a million rows. Every statement can run again: if the second
-- transaction fails after the first committed, the next `jobboard migrate` starts over.
--
-- Existing jobs get no `expires_at` here (that would rewrite every row under the lock): NULL
-- means "not set yet", and the worker's upkeep gives each open one now + JOB_POSTING_DAYS, in
-- batches of 500 (`upkeep_cursors` holds how far it has read), so no job expires by surprise
-- at the upgrade. A closed one gets its date when it is reopened.
-- Why: this file manages its transactions itself (see above); the linter assumes sqlx's.
-- squawk-ignore transaction-nesting
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
-- Nullable, no default: catalogue-only, no row is rewritten.
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS expires_at TIMESTAMPTZ;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS rejection_reason TEXT;
-- Why: only an earlier run of this file that failed in its second transaction can have left
-- it, not yet checked; it is added again at once.
-- squawk-ignore ban-drop-constraint
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_status_lifecycle;
ALTER TABLE jobs ADD CONSTRAINT jobs_status_lifecycle
    CHECK (status IN ('open', 'closed', 'expired', 'pending_review', 'rejected')) NOT VALID;
-- Why: the wider constraint above takes its place, and every status the old one allowed it
-- allows too. A release before this one that reads a new status answers 500 and names it
-- rather than guess (docs/contract-notes.md, Stored values).
-- squawk-ignore ban-drop-constraint
ALTER TABLE jobs DROP CONSTRAINT IF EXISTS jobs_status_check;

-- The upkeep's agenda: one row per (open job, expires_at) to watch, written by every write that
-- leaves a job open with an `expires_at` (create, approve, renew, a PATCH, the backfill). The
-- job's own row stays the record: a row whose job is no longer open with that `expires_at` is
-- dropped when the upkeep meets it. A table of its own, so that the upkeep finds what is due
-- through small indexes created here with it, rather than indexes on jobs, which would each
-- need a CREATE INDEX CONCURRENTLY (and a migration file) of their own. `noticed`: the
-- job.expiring notices of that `expires_at` are written, so the notice step never reads the
-- row again.
CREATE TABLE IF NOT EXISTS job_expiries (
    job_id     BIGINT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    noticed    BOOLEAN NOT NULL DEFAULT FALSE,
    PRIMARY KEY (job_id, expires_at)
);
CREATE INDEX IF NOT EXISTS job_expiries_due ON job_expiries (expires_at);
CREATE INDEX IF NOT EXISTS job_expiries_unnoticed ON job_expiries (expires_at) WHERE NOT noticed;

-- How far a batched pass of the upkeep has read a table (`expires_at`: the backfill above,
-- by job id).
CREATE TABLE IF NOT EXISTS upkeep_cursors (
    name     TEXT PRIMARY KEY,
    position BIGINT NOT NULL
);
INSERT INTO upkeep_cursors (name, position) VALUES ('expires_at', 0) ON CONFLICT DO NOTHING;
-- Why: see the top of the file.
-- squawk-ignore transaction-nesting
COMMIT;

-- Why: see the top of the file.
-- squawk-ignore transaction-nesting
BEGIN;
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '10min';
ALTER TABLE jobs VALIDATE CONSTRAINT jobs_status_lifecycle;
-- Why: see the top of the file.
-- squawk-ignore transaction-nesting
COMMIT;
