-- Résumés (CONTRACT.md §4, "Résumés"; DESIGN.md, "Files beside the database"): see the
-- PostgreSQL migration of the same name.
CREATE TABLE resumes (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    user_id      INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    filename     TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         INTEGER NOT NULL,
    sha256       TEXT NOT NULL,
    storage_key  TEXT NOT NULL UNIQUE,
    created_at   TEXT NOT NULL,
    used_at      TEXT NOT NULL
);
CREATE INDEX resumes_user ON resumes (user_id, created_at DESC, id DESC);
CREATE INDEX resumes_used ON resumes (used_at);
ALTER TABLE applications ADD COLUMN resume_id INTEGER REFERENCES resumes (id) ON DELETE SET NULL;
ALTER TABLE jobs ADD COLUMN resume_required INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN questions TEXT;
ALTER TABLE applications ADD COLUMN answers TEXT;
