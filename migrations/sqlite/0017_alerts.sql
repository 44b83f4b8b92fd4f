-- Job alerts (CONTRACT.md §4): a candidate's saved searches, at most 20 per user, each emailed
-- as a digest once per period (daily: a UTC day; weekly: an ISO week) by the worker's upkeep.
-- The search fields are those of GET /api/jobs, NULL when unset; q and location are kept as the
-- user typed them (trimmed) and reduced to terms and a lower-cased needle when matched, so a
-- change of the word rule applies to every alert at once. An alert goes with its user (ON
-- DELETE CASCADE). company_id has no foreign key: like GET /api/jobs?company_id=, an alert for a
-- company that is gone simply matches nothing.
--
-- The watermark (watermark_created_at, watermark_job_id) is the (created_at, id) of the newest
-- job the alert's last digest listed; NULL (both) before the first digest, read as the alert's
-- own created_at. A digest lists, newest first by (created_at, id), up to 20 open matching jobs
-- after the watermark and counts the rest, then moves the watermark to the first job it listed.
-- Every job it counted but did not list is older than that job, so it is at or before the new
-- watermark and no later digest lists it; every job a later digest lists is after the new
-- watermark, so it is not one this digest listed. Hence no job is ever listed twice by one
-- alert. This needs only that the order is total (ties on created_at broken by id, the same in
-- the matcher and here) and that a job's (created_at, id) does not change once it is listed.
CREATE TABLE alerts (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id              INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    q                    TEXT,
    location             TEXT,
    remote               BOOLEAN,
    company_id           INTEGER,
    salary_min           INTEGER CHECK (salary_min BETWEEN 0 AND 1000000000),
    employment_type      TEXT
        CHECK (employment_type IN ('full_time', 'part_time', 'contract', 'internship')),
    frequency            TEXT NOT NULL CHECK (frequency IN ('daily', 'weekly')),
    paused               BOOLEAN NOT NULL DEFAULT 0,
    created_at           TEXT NOT NULL,
    last_sent_at         TEXT,
    watermark_created_at TEXT,
    watermark_job_id     INTEGER,
    -- A saved search is never "every job" (CONTRACT.md §4): at least one of q, location, company.
    CHECK (q IS NOT NULL OR location IS NOT NULL OR company_id IS NOT NULL),
    CHECK ((watermark_created_at IS NULL) = (watermark_job_id IS NULL))
);
-- The upkeep's scan of the alerts that may be due: one frequency, not paused, in id order (it
-- pages through them by id).
CREATE INDEX alerts_due ON alerts (frequency, id) WHERE NOT paused;
-- A user's alerts, newest first (GET /api/alerts), and their count (the limit of 20).
CREATE INDEX alerts_user ON alerts (user_id, created_at DESC, id DESC);
