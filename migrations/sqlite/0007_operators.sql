-- Operator rights: an account listed here may use /api/admin/* and the console. Given and taken
-- only by `jobboard admin grant|revoke`; a deleted account loses them with it.
CREATE TABLE operators (
    user_id    INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    granted_at TEXT NOT NULL
);
