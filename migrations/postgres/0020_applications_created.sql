-- no-transaction
-- The applications of one hour, for its digests (see 0019): without this index every hour's
-- digests would read the whole applications table. Built without blocking writes; one
-- statement alone, since PostgreSQL runs several sent together in one transaction, where
-- CONCURRENTLY is refused. A build that failed leaves an invalid index, which `DROP INDEX
-- CONCURRENTLY applications_created` clears before the next `jobboard migrate`.
-- Why: the file can hold no SET before it (see above), and the lock it takes (SHARE UPDATE
-- EXCLUSIVE) blocks no read or write of applications, only other schema changes of the table.
-- squawk-ignore require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY applications_created ON applications (created_at);
