-- The trace an operator's redrive leaves in an event's story. A redrive forgets the event's
-- failed sends (it deletes the event's processed_events row, so that the copy is claimed afresh
-- and its attempts start again from zero), and with them every sign that the event ever failed.
-- This row keeps, per event id, how many times it was redriven, the failed sends those redrives
-- forgot, and when it was last redriven (ms since the epoch, as in processed_events). Written in
-- the redrive's own transaction with QUEUE=db, right after the copy is sent with QUEUE=sqs; read
-- by the event's story; deleted by the worker's retention once the event has no processed-event
-- record left and its last redrive is older than the retention. A new table: nothing to lock.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
CREATE TABLE event_redrives (
    event_id         TEXT PRIMARY KEY,
    redrives         BIGINT NOT NULL,
    attempts_before  BIGINT NOT NULL,
    last_redriven_at BIGINT NOT NULL
);
-- Retention reads the traces older than its cutoff.
CREATE INDEX event_redrives_last ON event_redrives (last_redriven_at);
