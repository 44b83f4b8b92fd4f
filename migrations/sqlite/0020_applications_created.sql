-- The applications of one hour, for its digests (see 0019): without this index every hour's
-- digests would read the whole applications table.
CREATE INDEX applications_created ON applications (created_at);
