-- Webhooks (CONTRACT.md §4, "Webhooks"; §6 for deliveries).
--
-- Endpoints: where a company's systems receive its events, at most 10 per company, each with
-- the event types it takes (space-separated, in the contract's order) and its signing secret
-- (`whsec_…`). The secret is kept as it is shown: a delivery signs with it, so it cannot be
-- stored as a hash. After a rotation the previous secret keeps signing beside the new one until
-- `previous_secret_until`. `disabled_reason` is set when deliveries stopped without the company
-- asking (a 410, or 5 days without a success, counted from `failing_since`); un-pausing clears
-- it. An endpoint goes with its company.
--
-- Deliveries: one row per (event, endpoint), written in the event's own transaction for every
-- endpoint subscribed to its type at that moment (the outbox's fan-out), with the body it
-- sends, fixed then. `webhook_id` is derived from the event and the endpoint, so every retry
-- repeats it and the upkeep's events that are one per member make one delivery. A worker claims
-- a due delivery with a lease (`lease_id`, `locked_until`, from the database's clock), sends it
-- outside any transaction, and records the outcome only while the lease is its own; a claim
-- whose lease lapsed is taken again (a counted reclaim). Each attempt leaves a row in
-- `webhook_attempts` (what the API lists), kept with its delivery; the worker's retention deletes a
-- delivery that ended, with its attempts, after `PROCESSED_EVENTS_RETENTION_DAYS`.
CREATE TABLE webhook_endpoints (
    id                    INTEGER PRIMARY KEY AUTOINCREMENT,
    company_id            INTEGER NOT NULL REFERENCES companies (id) ON DELETE CASCADE,
    url                   TEXT NOT NULL,
    events                TEXT NOT NULL,
    description           TEXT,
    secret                TEXT NOT NULL,
    previous_secret       TEXT,
    previous_secret_until TEXT,
    paused                BOOLEAN NOT NULL DEFAULT 0,
    disabled_reason       TEXT,
    last_success_at       TEXT,
    failing_since         TEXT,
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL,
    CHECK ((previous_secret IS NULL) = (previous_secret_until IS NULL))
);
-- A company's endpoints, in the order they were made (its list, its count under its lock).
CREATE INDEX webhook_endpoints_of_company ON webhook_endpoints (company_id, id);

CREATE TABLE webhook_deliveries (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    webhook_id      TEXT NOT NULL UNIQUE,
    endpoint_id     INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL,
    type            TEXT NOT NULL,
    body            TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    lease_id        TEXT,
    locked_until    TEXT,
    created_at      TEXT NOT NULL,
    finished_at     TEXT
);
-- The due deliveries, soonest first (the workers' claim).
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at)
    WHERE status = 'pending';
-- The deliveries that ended, oldest first (the worker's retention).
CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (finished_at)
    WHERE status <> 'pending';
-- An endpoint's delivery of an event (redeliver, the console's story of an event).
CREATE INDEX webhook_deliveries_of_event ON webhook_deliveries (event_id, endpoint_id);

CREATE TABLE webhook_attempts (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id INTEGER NOT NULL REFERENCES webhook_deliveries (id) ON DELETE CASCADE,
    endpoint_id INTEGER NOT NULL,
    attempt     INTEGER NOT NULL,
    at          TEXT NOT NULL,
    status      INTEGER,
    duration_ms INTEGER NOT NULL,
    error       TEXT
);
-- An endpoint's attempts, newest first.
CREATE INDEX webhook_attempts_of_endpoint ON webhook_attempts (endpoint_id, id);
CREATE INDEX webhook_attempts_of_delivery ON webhook_attempts (delivery_id);
