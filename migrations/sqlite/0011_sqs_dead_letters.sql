-- With QUEUE=sqs, a record of each dead letter in SQS_DLQ_URL, by its SQS message id: written
-- by the worker when it dead-letters a message (and by its upkeep for a message the queue's own
-- redrive policy moved there), read by `jobboard dlq list`, the console and an event's story,
-- so that no read receives (and hides) the dead-letter queue. Redrive and purge act on SQS and
-- then on the record. Times are ms since the epoch, as in dead_letters.
CREATE TABLE sqs_dead_letters (
    message_id      TEXT PRIMARY KEY,
    event_id        TEXT,
    reason          TEXT NOT NULL,
    attempts        INTEGER NOT NULL,
    body            TEXT NOT NULL,
    first_failed_at INTEGER NOT NULL,
    last_failed_at  INTEGER NOT NULL
);
-- The list, newest first; an event's story.
CREATE INDEX sqs_dead_letters_newest ON sqs_dead_letters (last_failed_at DESC, message_id DESC);
CREATE INDEX sqs_dead_letters_event ON sqs_dead_letters (event_id);
