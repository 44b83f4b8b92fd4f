-- Accounts, companies, jobs, applications and their history, the outbox of status-change
-- events, and the failed-login log that drives rate limiting.
-- AUTOINCREMENT so that ids are never reused after a delete.

CREATE TABLE users (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    email            TEXT NOT NULL,
    email_key        TEXT NOT NULL UNIQUE,
    name             TEXT NOT NULL,
    role             TEXT NOT NULL CHECK (role IN ('candidate', 'employer')),
    password_hash    TEXT NOT NULL,
    token_generation INTEGER NOT NULL DEFAULT 0,
    created_at       TEXT NOT NULL
);

CREATE TABLE companies (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL,
    website     TEXT,
    description TEXT,
    created_at  TEXT NOT NULL
);

CREATE TABLE company_members (
    company_id INTEGER NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    PRIMARY KEY (company_id, user_id)
);
CREATE INDEX company_members_user ON company_members (user_id);

CREATE TABLE jobs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    company_id      INTEGER NOT NULL REFERENCES companies (id),
    title           TEXT NOT NULL,
    description     TEXT NOT NULL,
    location        TEXT NOT NULL,
    location_key    TEXT NOT NULL,
    remote          INTEGER NOT NULL CHECK (remote IN (0, 1)),
    salary_min      INTEGER,
    salary_max      INTEGER,
    employment_type TEXT NOT NULL
        CHECK (employment_type IN ('full_time', 'part_time', 'contract', 'internship')),
    status          TEXT NOT NULL CHECK (status IN ('open', 'closed')),
    -- Terms made by the application's tokenizer (the same on both backends), indexed as-is.
    search_terms    TEXT NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX jobs_open_newest ON jobs (status, created_at DESC, id DESC);
CREATE INDEX jobs_company ON jobs (company_id);

-- The full-text index over jobs.search_terms (rowid = jobs.id), kept in step by triggers.
-- The terms are already lower-case words; the ascii tokenizer splits them only at the spaces
-- between them (every non-ASCII character is part of a token), so it matches them exactly as
-- PostgreSQL's array_to_tsvector does.
CREATE VIRTUAL TABLE jobs_fts USING fts5 (
    search_terms,
    content = 'jobs',
    content_rowid = 'id',
    tokenize = 'ascii'
);
CREATE TRIGGER jobs_fts_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO jobs_fts (rowid, search_terms) VALUES (new.id, new.search_terms);
END;
CREATE TRIGGER jobs_fts_delete AFTER DELETE ON jobs BEGIN
    INSERT INTO jobs_fts (jobs_fts, rowid, search_terms) VALUES ('delete', old.id, old.search_terms);
END;
CREATE TRIGGER jobs_fts_update AFTER UPDATE OF search_terms ON jobs BEGIN
    INSERT INTO jobs_fts (jobs_fts, rowid, search_terms) VALUES ('delete', old.id, old.search_terms);
    INSERT INTO jobs_fts (rowid, search_terms) VALUES (new.id, new.search_terms);
END;

CREATE TABLE applications (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id       INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    candidate_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    status       TEXT NOT NULL CHECK (status IN
        ('submitted', 'reviewing', 'interview', 'offered', 'hired', 'rejected', 'withdrawn')),
    cover_letter TEXT,
    created_at   TEXT NOT NULL,
    updated_at   TEXT NOT NULL,
    UNIQUE (job_id, candidate_id)
);
CREATE INDEX applications_candidate ON applications (candidate_id, created_at DESC, id DESC);

CREATE TABLE application_history (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    application_id INTEGER NOT NULL REFERENCES applications (id) ON DELETE CASCADE,
    old_status     TEXT,
    new_status     TEXT NOT NULL,
    changed_by     INTEGER NOT NULL,
    event_id       TEXT UNIQUE,
    at             TEXT NOT NULL
);
CREATE INDEX application_history_app ON application_history (application_id, id);

-- Transactional outbox: one row per status change, written in the change's transaction. With
-- QUEUE=db it is also the queue: a row is a message, received by moving visible_at forward (the
-- visibility timeout, on the database clock, in ms since the epoch) and deleted when handled.
-- event_id is not unique: a redriven dead letter or a duplicate delivery is a second message for
-- the same event. Rows outlive their application on purpose: such an event ends as "missing".
CREATE TABLE outbox (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id       TEXT,
    application_id INTEGER,
    body           TEXT NOT NULL,
    created_at     TEXT NOT NULL,
    visible_at     INTEGER NOT NULL,
    receive_count  INTEGER NOT NULL DEFAULT 0,
    receipt        TEXT
);
CREATE INDEX outbox_visible ON outbox (visible_at, id);
CREATE INDEX outbox_event ON outbox (event_id);

CREATE TABLE auth_failures (
    id   INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL CHECK (kind IN ('email', 'addr')),
    key  TEXT NOT NULL,
    at   TEXT NOT NULL
);
CREATE INDEX auth_failures_key ON auth_failures (kind, key, at);
