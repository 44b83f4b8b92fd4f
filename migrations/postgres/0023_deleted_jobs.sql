-- The ids of deleted jobs (CONTRACT.md §4, "Public pages": a deleted job's page is 410 Gone, an
-- id that never was a job's is 404). Written in the deletion's transaction; a few bytes per
-- deletion, kept, since ids are never reused. `deleted_at` dates the change in the sitemap's
-- `lastmod` of the file the job was listed in.
--
-- The jobs deleted before this release that the job-change log still names (a deletion adds a
-- row naming the job, and the log keeps its newest 1 000 000 rows) are recorded here too, dated
-- by their last row.
--
-- A new table: nothing existing is locked; the backfill reads the log once.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
CREATE TABLE deleted_jobs (
    id         BIGINT PRIMARY KEY,
    deleted_at TIMESTAMPTZ NOT NULL
);
INSERT INTO deleted_jobs (id, deleted_at)
SELECT c.job_id, MAX(c.changed_at)
FROM job_changes c
WHERE c.job_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.job_id)
GROUP BY c.job_id;
