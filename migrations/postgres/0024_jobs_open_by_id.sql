-- no-transaction
-- The sitemap's files (GET /sitemaps/jobs-{n}.xml): the open jobs by id, file n starting
-- after the first (n - 1) × 50 000 of them. Partial and carrying `expires_at`, so finding where
-- a file starts and counting the open jobs are index-only scans instead of reads of every
-- job's row. Built without blocking writes, one statement alone (see 0018); a build that
-- failed leaves an invalid index, which `DROP INDEX CONCURRENTLY jobs_open_by_id` clears
-- before the next `jobboard migrate`.
-- squawk-ignore require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY jobs_open_by_id ON jobs (id) INCLUDE (expires_at)
    WHERE status = 'open';
