-- Search by relevance ranks jobs by the query terms their title holds, so a job keeps its title's
-- terms (made by the application's tokenizer, like search_terms) beside its document's, with a
-- full-text index of their own. Rows written before this column existed get theirs from
-- `jobboard migrate`, which fills every NULL (and the triggers index them).
ALTER TABLE jobs ADD COLUMN title_terms TEXT;

CREATE VIRTUAL TABLE jobs_title_fts USING fts5 (
    title_terms,
    content = 'jobs',
    content_rowid = 'id',
    tokenize = 'ascii'
);

-- Both full-text indexes hold open jobs only: a search never returns a closed one, so a search
-- for words alone reads its matches from the index without visiting the table.
DROP TRIGGER jobs_fts_insert;
DROP TRIGGER jobs_fts_delete;
DROP TRIGGER jobs_fts_update;
INSERT INTO jobs_fts (jobs_fts) VALUES ('delete-all');
INSERT INTO jobs_fts (rowid, search_terms) SELECT id, search_terms FROM jobs WHERE status = 'open';
-- Until `jobboard migrate` fills them, the titles of earlier rows are indexed as empty.
INSERT INTO jobs_title_fts (rowid, title_terms) SELECT id, '' FROM jobs WHERE status = 'open';

CREATE TRIGGER jobs_fts_insert AFTER INSERT ON jobs WHEN new.status = 'open' BEGIN
    INSERT INTO jobs_fts (rowid, search_terms) VALUES (new.id, new.search_terms);
    INSERT INTO jobs_title_fts (rowid, title_terms) VALUES (new.id, coalesce(new.title_terms, ''));
END;
CREATE TRIGGER jobs_fts_delete AFTER DELETE ON jobs WHEN old.status = 'open' BEGIN
    INSERT INTO jobs_fts (jobs_fts, rowid, search_terms) VALUES ('delete', old.id, old.search_terms);
    INSERT INTO jobs_title_fts (jobs_title_fts, rowid, title_terms)
        VALUES ('delete', old.id, coalesce(old.title_terms, ''));
END;
CREATE TRIGGER jobs_fts_update AFTER UPDATE OF search_terms, title_terms, status ON jobs BEGIN
    INSERT INTO jobs_fts (jobs_fts, rowid, search_terms)
        SELECT 'delete', old.id, old.search_terms WHERE old.status = 'open';
    INSERT INTO jobs_title_fts (jobs_title_fts, rowid, title_terms)
        SELECT 'delete', old.id, coalesce(old.title_terms, '') WHERE old.status = 'open';
    INSERT INTO jobs_fts (rowid, search_terms)
        SELECT new.id, new.search_terms WHERE new.status = 'open';
    INSERT INTO jobs_title_fts (rowid, title_terms)
        SELECT new.id, coalesce(new.title_terms, '') WHERE new.status = 'open';
END;

-- Ids follow creation time: a job's created_at is never earlier than that of a job with a lower
-- id (create_job takes it as the later of the clock and the newest job's, inside its write
-- transaction), so `ORDER BY rowid DESC`, which the full-text index serves in its own order, is
-- the newest-first order. Rows written before that rule are brought into line once: a created_at
-- behind an older id's moves up to it (only a clock that stepped back can have made one).
UPDATE jobs SET created_at = m.latest
FROM (SELECT id, MAX(created_at) OVER (ORDER BY id) AS latest FROM jobs) m
WHERE m.id = jobs.id AND m.latest > jobs.created_at;
