-- no-transaction
-- The applications that name a résumé: what a résumé's deletion sets to null, and what the
-- retention asks before it deletes a résumé no application uses, without reading every
-- application. Built without blocking writes, one statement alone (see 0020); a build that
-- failed leaves an invalid index, which `DROP INDEX CONCURRENTLY applications_resume` clears
-- before the next `jobboard migrate`.
-- squawk-ignore require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY applications_resume ON applications (resume_id)
    WHERE resume_id IS NOT NULL;
