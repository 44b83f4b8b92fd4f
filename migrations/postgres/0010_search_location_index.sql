-- no-transaction
-- The trigram index of open jobs' location keys (see 0009), built without blocking writes; one
-- statement alone, since PostgreSQL runs several sent together in one transaction, where
-- CONCURRENTLY is refused. A build that failed leaves an invalid index, which `DROP INDEX
-- CONCURRENTLY jobs_open_location_trgm` clears before the next `jobboard migrate`.
-- Why: the file can hold no SET before it (see above), and the lock it takes (SHARE UPDATE
-- EXCLUSIVE) blocks no read or write of jobs, only other schema changes of the table.
-- squawk-ignore require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY jobs_open_location_trgm ON jobs USING GIN (location_key gin_trgm_ops)
    WHERE status = 'open';
