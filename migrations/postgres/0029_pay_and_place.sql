-- Pay and place (CONTRACT.md §4, "Pay and place"): a job's `workplace` (`onsite`, `hybrid`,
-- `remote`), its places (`locations`, a JSON array of `{city, region, country}`), and its
-- salary's currency (ISO 4217) and period (`hour` ... `year`); an alert saves the new filters.
--
-- Expand/contract: the columns are added without defaults, so no existing row is rewritten
-- and the lock is held for a catalogue change only. A job whose new columns are null reads
-- them from the older ones (`remote`, `location`, and `DEFAULT_SALARY_CURRENCY` per `year`),
-- which every write keeps filling; `jobboard migrate` (and a start that migrates) then writes
-- the new columns of such jobs in batches of ids (`backfill_pay_and_place`), so that a later
-- release may drop the older ones once no earlier release writes jobs.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS workplace TEXT;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS locations TEXT;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS salary_currency TEXT;
ALTER TABLE jobs ADD COLUMN IF NOT EXISTS salary_period TEXT;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS workplace TEXT;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS country TEXT;
ALTER TABLE alerts ADD COLUMN IF NOT EXISTS salary_currency TEXT;
