-- Email preferences (CONTRACT.md §4): whether a member receives the hourly applications.digest.
-- Read by the worker when it sends a digest (off: the event ends as `missing`), written by
-- PATCH /api/me/notifications and by the digest's unsubscribe link.
ALTER TABLE users ADD COLUMN application_digest BOOLEAN NOT NULL DEFAULT 1;
