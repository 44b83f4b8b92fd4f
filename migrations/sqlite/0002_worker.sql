-- The worker's idempotency claims and the dead letters of the database queue. Times are ms since
-- the epoch on the database's clock, so that every worker compares leases on one clock.

-- One row per event id, ever: the UNIQUE claim. status: in_progress (leased to lease_id until
-- locked_until), pending (released after a failed send; attempts counts those), done (sent),
-- missing (its application or history row is gone), dead (dead-lettered).
CREATE TABLE processed_events (
    event_id        TEXT PRIMARY KEY,
    status          TEXT NOT NULL CHECK (status IN ('in_progress', 'pending', 'done', 'missing', 'dead')),
    lease_id        TEXT,
    locked_until    INTEGER,
    attempts        INTEGER NOT NULL DEFAULT 0,
    last_error      TEXT,
    first_failed_at INTEGER,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX processed_events_updated ON processed_events (updated_at);

CREATE TABLE dead_letters (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id        TEXT,
    reason          TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    body            TEXT NOT NULL,
    first_failed_at INTEGER NOT NULL,
    last_failed_at  INTEGER NOT NULL
);
