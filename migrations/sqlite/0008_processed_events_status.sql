-- The console's queue figures count processed events by status over a recent span (sent and
-- failed in the last hour, claims in flight): with the status first, each count reads one range
-- of this index and never the table.
CREATE INDEX processed_events_status_updated ON processed_events (status, updated_at);
