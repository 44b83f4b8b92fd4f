-- The review queue (GET /api/admin/jobs?status=pending_review, oldest first), which an open
-- console reads every 5 seconds: without this index each read scans every job. Partial, so it
-- holds only the few jobs waiting for a decision.
CREATE INDEX jobs_review_queue ON jobs (created_at, id) WHERE status = 'pending_review';
