-- The sitemap's files (GET /sitemaps/jobs-{n}.xml): the open jobs by id, file n starting
-- after the first (n - 1) × 50 000 of them. Carrying `expires_at`, so finding where a file
-- starts and counting the open jobs read this index alone, not every job's row (whose
-- description fills pages of their own).
CREATE INDEX jobs_open_by_id ON jobs (status, id, expires_at);
