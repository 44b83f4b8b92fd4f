-- A job's lifecycle (CONTRACT.md §4, Jobs): it expires (`expires_at`), may be renewed, and
-- under JOB_MODERATION waits for an operator's review (`pending_review`, `rejected` with its
-- `rejection_reason`). Existing jobs get no `expires_at` here: NULL means "not set yet", and
-- the worker's upkeep gives each open one now + JOB_POSTING_DAYS in batches (`upkeep_cursors`
-- holds how far it has read), so no job expires by surprise at the upgrade; a closed one gets
-- its date when it is reopened.
ALTER TABLE jobs ADD COLUMN expires_at TEXT;
ALTER TABLE jobs ADD COLUMN rejection_reason TEXT;

-- The status CHECK of 0001 allows only 'open' and 'closed', and SQLite cannot alter a
-- constraint. Its documented 12-step rebuild (copy jobs into a new table, drop the old one)
-- cannot run here: sqlx runs every SQLite migration in a transaction, where
-- `PRAGMA foreign_keys = OFF` does nothing, and with foreign keys on, dropping jobs deletes
-- every application and its history through their ON DELETE CASCADE. So the constraint is
-- widened in place, by the procedure SQLite documents for a change that leaves the stored
-- rows as they are ("Making Other Kinds Of Table Schema Changes": removing a CHECK, changing a
-- default): the table's CREATE statement in the schema gets the wider list, and every row,
-- which the narrower one allowed, still satisfies it. Nothing is copied; the triggers and
-- full-text indexes of 0006 and 0009 are untouched. `RESET` reloads this connection's schema,
-- and the CREATE TABLE below changes the schema version, so every other connection reloads it.
PRAGMA writable_schema = ON;
UPDATE sqlite_master
SET sql = replace(
    sql,
    'CHECK (status IN (''open'', ''closed''))',
    'CHECK (status IN (''open'', ''closed'', ''expired'', ''pending_review'', ''rejected''))'
)
WHERE type = 'table' AND name = 'jobs';
PRAGMA writable_schema = RESET;
-- The migration fails (and changes nothing) unless the constraint now has the wider list.
CREATE TEMP TABLE migration_0015_check (widened INTEGER NOT NULL CHECK (widened = 1));
INSERT INTO migration_0015_check
SELECT COUNT(*) FROM sqlite_master
WHERE type = 'table' AND name = 'jobs' AND sql LIKE '%''pending_review'', ''rejected''))%';
DROP TABLE migration_0015_check;

-- The upkeep's agenda: one row per (open job, expires_at) to watch, written by every write that
-- leaves a job open with an `expires_at` (create, approve, renew, a PATCH, the backfill). The
-- job's own row stays the record: a row whose job is no longer open with that `expires_at` is
-- dropped when the upkeep meets it. `noticed`: the job.expiring notices of that `expires_at`
-- are written, so the notice step never reads the row again.
CREATE TABLE job_expiries (
    job_id     INTEGER NOT NULL,
    expires_at TEXT NOT NULL,
    noticed    BOOLEAN NOT NULL DEFAULT 0,
    PRIMARY KEY (job_id, expires_at)
);
CREATE INDEX job_expiries_due ON job_expiries (expires_at);
CREATE INDEX job_expiries_unnoticed ON job_expiries (expires_at) WHERE NOT noticed;

-- How far a batched pass of the upkeep has read a table (`expires_at`: the backfill above,
-- by job id).
CREATE TABLE upkeep_cursors (
    name     TEXT PRIMARY KEY,
    position INTEGER NOT NULL
);
INSERT INTO upkeep_cursors (name, position) VALUES ('expires_at', 0);
