-- How many times handling an event panicked (a bug, or stored data the code did not expect),
-- counted apart from failed sends (`attempts`): the worker dead-letters an event whose handling
-- panicked 3 times (docs/contract-notes.md, "A panic while handling an event"), instead of
-- retrying it for ever.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
-- A constant default: catalogue-only since PostgreSQL 11, no row is rewritten.
ALTER TABLE processed_events ADD COLUMN IF NOT EXISTS panics BIGINT NOT NULL DEFAULT 0;
