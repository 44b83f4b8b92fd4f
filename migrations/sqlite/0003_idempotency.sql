-- Idempotency keys of retry-safe writes: one row per (user, method, route template, key). A row
-- is in flight (a request holds it until locked_until, ms on the database clock) or done (the
-- first response, stored in the same transaction as the write it describes). Rows expire 24 h
-- after created_at and go with their user.
CREATE TABLE idempotency_keys (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id         INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    method          TEXT NOT NULL,
    route           TEXT NOT NULL,
    key             TEXT NOT NULL,
    request_hash    TEXT NOT NULL,
    state           TEXT NOT NULL CHECK (state IN ('in_flight', 'done')),
    lock_token      TEXT,
    locked_until    INTEGER,
    response_status INTEGER,
    response_body   TEXT,
    created_at      INTEGER NOT NULL,
    UNIQUE (user_id, method, route, key)
);
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
