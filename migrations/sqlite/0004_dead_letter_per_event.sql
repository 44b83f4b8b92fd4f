-- One dead letter per event, decided by the database rather than by a check before the insert
-- (two copies of one event could both pass the check). A message that could not be read as an
-- event is `invalid` and keeps its own dead letter whatever event id it claims; so does one
-- with no event id at all (NULLs never conflict). Duplicates left by earlier releases keep
-- their first row.
ALTER TABLE dead_letters ADD COLUMN invalid BOOLEAN NOT NULL DEFAULT 0;
UPDATE dead_letters SET invalid = 1 WHERE reason LIKE 'invalid message:%';
DELETE FROM dead_letters WHERE NOT invalid AND event_id IS NOT NULL AND id NOT IN
    (SELECT MIN(id) FROM dead_letters WHERE NOT invalid AND event_id IS NOT NULL
     GROUP BY event_id);
CREATE UNIQUE INDEX dead_letters_event_id ON dead_letters (event_id) WHERE NOT invalid;
