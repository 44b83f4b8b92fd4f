-- Failed sign-ins are counted, not logged: one row per counter (an email or a client address),
-- holding the failures of its current window. A flood of attempts updates a bounded set of rows
-- instead of inserting two rows each, and a counter whose window has ended is deleted by the
-- worker's upkeep. Windows are on the database clock, in ms since the epoch. The old per-attempt
-- rows only ever served the 15-minute limit, so they are dropped rather than converted.
DROP TABLE auth_failures;
CREATE TABLE auth_failures (
    kind         TEXT NOT NULL CHECK (kind IN ('email', 'addr')),
    key          TEXT NOT NULL,
    window_start BIGINT NOT NULL,
    failures     BIGINT NOT NULL,
    PRIMARY KEY (kind, key)
);
CREATE INDEX auth_failures_window ON auth_failures (window_start);
