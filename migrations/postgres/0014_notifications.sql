-- Email preferences (CONTRACT.md §4): whether a member receives the hourly applications.digest.
-- Read by the worker when it sends a digest (off: the event ends as `missing`), written by
-- PATCH /api/me/notifications and by the digest's unsubscribe link. A constant default is a
-- catalogue-only change on PostgreSQL 11+: no rewrite of users.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
ALTER TABLE users ADD COLUMN application_digest BOOLEAN NOT NULL DEFAULT TRUE;
