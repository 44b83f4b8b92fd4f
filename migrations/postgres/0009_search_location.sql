-- A search narrowed by a location substring reads the open jobs at that location first when they
-- are few (see src/store/sql/search.rs): a trigram index of the location key (0010) finds every
-- job whose key holds a substring of three characters or more. pg_trgm ships with PostgreSQL
-- (contrib) and is a trusted extension: the database's owner may create it.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
CREATE EXTENSION IF NOT EXISTS pg_trgm;
