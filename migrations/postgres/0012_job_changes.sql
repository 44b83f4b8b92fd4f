-- The job-change log: one row per job write (create, patch, close, reopen, delete) and per
-- company rename or deletion, written in the write's own transaction. Every process that serves
-- the API applies it, in `seq` order, to its search index (SEARCH_INDEX_DIR). A row names what
-- changed, never how: applying it re-reads those jobs, so applying twice is harmless.
-- Writers take a transaction-level advisory lock just before their insert, so rows commit in
-- `seq` order and a reader that has seen `seq` N has every row below it.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
CREATE TABLE job_changes (
    seq        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    job_id     BIGINT,
    company_id BIGINT,
    changed_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    CHECK ((job_id IS NULL) <> (company_id IS NULL))
);
