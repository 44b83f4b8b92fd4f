-- The open jobs written before 0009, into the location index.
INSERT INTO jobs_location_fts (rowid, location_key)
    SELECT id, location_key FROM jobs WHERE status = 'open';
