-- The job-change log: one row per job write (create, patch, close, reopen, delete) and per
-- company rename or deletion, written in the write's own transaction. Every process that serves
-- the API applies it, in `seq` order, to its search index (SEARCH_INDEX_DIR). A row names what
-- changed, never how: applying it re-reads those jobs, so applying twice is harmless.
-- SQLite's single writer commits the rows in `seq` order; AUTOINCREMENT never reuses a `seq`.
CREATE TABLE job_changes (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id     INTEGER,
    company_id INTEGER,
    changed_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    CHECK ((job_id IS NULL) <> (company_id IS NULL))
);
