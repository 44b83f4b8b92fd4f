-- Job alerts' digests (CONTRACT.md §4, "Digest rule"; §5, alert.digest), written by the worker's
-- upkeep after each period: a UTC day (`2026-12-04`) for daily alerts, an ISO week (`2026-W49`)
-- for weekly ones, two minutes after it ends (a job created just before the end commits a moment
-- later).
--
-- The watermark of 0017 moves to the period's end. An alert is due for the last ended period
-- [S, E) when it is not paused and its watermark (NULL: its own created_at) is before E. Its
-- digest considers the open, unexpired jobs created after the watermark and before E (from the
-- start of the period before at the earliest, so that the window of jobs a run reads stays
-- bounded after a long pause), lists the newest 20 matches, newest first, counts the rest, and
-- sets the watermark to (E, 0), not to the first job listed as 0017 has it: every matching job
-- created before E was listed or counted by this digest, so no later digest lists it, and every
-- job a later digest considers was created at or after E, so it is none this one listed. Hence
-- still no job is listed twice by one alert. An alert with no new match moves too (and gets no
-- event), so every alert's window starts at the last period's end, however long ago it matched.
--
-- The fence between workers running at once is the conditional move
-- `UPDATE alerts ... WHERE id = ? AND COALESCE(watermark_created_at, created_at) < E`: the worker
-- whose move changes the row writes the alert's event in the same transaction (id
-- `alert-{id}-{period}`, which the outbox refuses a second time anyway); another's changes no
-- row and writes nothing.
--
-- This table marks the periods whose digests are all written, so that later runs skip them
-- without reading the alerts; a run that dies before its mark leaves the period to the next run,
-- which finds only the alerts not moved yet. An alert unpaused after its period's mark waits for
-- the next period, whose digest includes what it missed (up to the lookback above).
CREATE TABLE alert_digest_periods (
    period     TEXT PRIMARY KEY,
    written_at TEXT NOT NULL
);
