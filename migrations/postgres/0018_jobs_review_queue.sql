-- no-transaction
-- The review queue (GET /api/admin/jobs?status=pending_review, oldest first), which an open
-- console reads every 5 seconds: without this index each read scans every job. Partial, so it
-- holds only the few jobs waiting for a decision. Built without blocking writes; one statement
-- alone, since PostgreSQL runs several sent together in one transaction, where CONCURRENTLY is
-- refused. A build that failed leaves an invalid index, which `DROP INDEX CONCURRENTLY
-- jobs_review_queue` clears before the next `jobboard migrate`.
-- squawk-ignore require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY jobs_review_queue ON jobs (created_at, id)
    WHERE status = 'pending_review';
