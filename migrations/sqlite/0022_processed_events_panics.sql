-- How many times handling an event panicked (a bug, or stored data the code did not expect),
-- counted apart from failed sends (`attempts`): the worker dead-letters an event whose handling
-- panicked 3 times (docs/contract-notes.md, "A panic while handling an event"), instead of
-- retrying it for ever.
ALTER TABLE processed_events ADD COLUMN panics INTEGER NOT NULL DEFAULT 0;
