-- Search by relevance ranks jobs by the query terms their title holds, so a job keeps its title's
-- terms (made by the application's tokenizer, like search_terms) beside its document's. Rows
-- written before this column existed get theirs from `jobboard migrate`, which fills every NULL.
SET LOCAL lock_timeout = '5s';
-- The one-time alignment below reads every job once (seconds at a million jobs).
SET LOCAL statement_timeout = '10min';
ALTER TABLE jobs ADD COLUMN title_terms TEXT;

-- Ids follow creation time: a job's created_at is never earlier than that of a job with a lower
-- id (create_job takes it as the later of the clock and the newest job's, under a lock), so the
-- id order and the newest-first order are one order. Rows written before that rule are brought
-- into line once: a created_at behind an older id's moves up to it (only a clock that stepped
-- back can have made one).
UPDATE jobs SET created_at = m.latest
FROM (SELECT id, MAX(created_at) OVER (ORDER BY id) AS latest FROM jobs) m
WHERE m.id = jobs.id AND m.latest > jobs.created_at;
