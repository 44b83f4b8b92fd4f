-- no-transaction
-- The applications in a final status, by their last change: the worker's retention
-- (`APPLICATION_RETENTION_DAYS`) deletes the oldest of them in batches, reading only this
-- index instead of every application. Built without blocking writes, one statement alone (see
-- 0020); a build that failed leaves an invalid index, which `DROP INDEX CONCURRENTLY
-- applications_retired` clears before the next `jobboard migrate`.
-- squawk-ignore require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY applications_retired ON applications (updated_at)
    WHERE status IN ('hired', 'rejected', 'withdrawn');
