-- Operator rights: an account listed here may use /api/admin/* and the console. Given and taken
-- only by `jobboard admin grant|revoke`; a deleted account loses them with it.
SET LOCAL lock_timeout = '5s';
SET LOCAL statement_timeout = '1min';
CREATE TABLE operators (
    user_id    BIGINT PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    granted_at TIMESTAMPTZ NOT NULL
);
