-- The record of every event that is not a status change (a status change keeps its record in
-- application_history): the worker sends an event only when its record is committed, and the
-- primary key makes an event id unique, so an upkeep that derives its ids from what they are
-- about (CONTRACT.md §5) and runs twice, or in several workers at once, writes each event once
-- (INSERT … ON CONFLICT DO NOTHING). The body is the event as it travels, the digests' lists
-- fixed in it.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
CREATE TABLE events (
    event_id   TEXT PRIMARY KEY,
    type       TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
-- Retention deletes the oldest records in bounded batches.
CREATE INDEX events_created ON events (created_at);
