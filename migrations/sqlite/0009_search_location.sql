-- A search narrowed by a location substring reads the open jobs at that location first when they
-- are few (see src/store/sql/search.rs): a trigram index of the location key finds every job
-- whose key holds a substring of three characters or more, without reading the table. Open jobs
-- only, kept so by triggers, as for the other full-text indexes; filled by 0010.
CREATE VIRTUAL TABLE jobs_location_fts USING fts5 (
    location_key,
    content = 'jobs',
    content_rowid = 'id',
    tokenize = 'trigram'
);

CREATE TRIGGER jobs_location_fts_insert AFTER INSERT ON jobs WHEN new.status = 'open' BEGIN
    INSERT INTO jobs_location_fts (rowid, location_key) VALUES (new.id, new.location_key);
END;
CREATE TRIGGER jobs_location_fts_delete AFTER DELETE ON jobs WHEN old.status = 'open' BEGIN
    INSERT INTO jobs_location_fts (jobs_location_fts, rowid, location_key)
        VALUES ('delete', old.id, old.location_key);
END;
CREATE TRIGGER jobs_location_fts_update AFTER UPDATE OF location_key, status ON jobs BEGIN
    INSERT INTO jobs_location_fts (jobs_location_fts, rowid, location_key)
        SELECT 'delete', old.id, old.location_key WHERE old.status = 'open';
    INSERT INTO jobs_location_fts (rowid, location_key)
        SELECT new.id, new.location_key WHERE new.status = 'open';
END;
