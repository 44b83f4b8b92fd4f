-- The hours whose applications.digest events are all written (CONTRACT.md §5). Any worker's
-- upkeep writes an hour's digests once the hour has ended, in batches of members, and then
-- marks the hour here, so later runs skip it. A run that dies before its mark leaves the hour
-- to the next run (of any worker), whose writes of the digests already written are refused by
-- their derived event ids: each digest is written once.
CREATE TABLE application_digest_hours (
    hour       TEXT PRIMARY KEY,
    written_at TEXT NOT NULL
);
