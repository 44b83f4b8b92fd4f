-- Pay and place: see the PostgreSQL migration of the same name.
ALTER TABLE jobs ADD COLUMN workplace TEXT;
ALTER TABLE jobs ADD COLUMN locations TEXT;
ALTER TABLE jobs ADD COLUMN salary_currency TEXT;
ALTER TABLE jobs ADD COLUMN salary_period TEXT;
ALTER TABLE alerts ADD COLUMN workplace TEXT;
ALTER TABLE alerts ADD COLUMN country TEXT;
ALTER TABLE alerts ADD COLUMN salary_currency TEXT;
