-- The applications in a final status, by their last change: the worker's retention
-- (`APPLICATION_RETENTION_DAYS`) deletes the oldest of them in batches, reading only this
-- index instead of every application.
CREATE INDEX applications_retired ON applications (updated_at)
    WHERE status IN ('hired', 'rejected', 'withdrawn');
