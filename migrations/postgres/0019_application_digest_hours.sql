-- The hours whose applications.digest events are all written (CONTRACT.md §5). Any worker's
-- upkeep writes an hour's digests once the hour has ended, in batches of members, and then
-- marks the hour here, so later runs skip it. A run that dies before its mark leaves the hour
-- to the next run (of any worker), whose writes of the digests already written are refused by
-- their derived event ids: each digest is written once.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
CREATE TABLE application_digest_hours (
    hour       TIMESTAMPTZ PRIMARY KEY,
    written_at TIMESTAMPTZ NOT NULL
);
