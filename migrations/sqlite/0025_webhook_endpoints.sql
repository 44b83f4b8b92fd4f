-- Webhook endpoints (CONTRACT.md §4, "Webhooks"): where a company's systems receive its events,
-- at most 10 per company, each with the event types it takes (space-separated, in the
-- contract's order) and its signing secret (`whsec_…`). The secret is kept as it is shown: a
-- delivery signs with it, so it cannot be stored as a hash. After a rotation the previous
-- secret keeps signing beside the new one until `previous_secret_until`. `disabled_reason` is
-- set when deliveries stopped without the company asking (a 410, or days without a success);
-- un-pausing clears it. An endpoint goes with its company.
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
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL,
    CHECK ((previous_secret IS NULL) = (previous_secret_until IS NULL))
);
-- A company's endpoints, in the order they were made (its list, its count under its lock).
CREATE INDEX webhook_endpoints_of_company ON webhook_endpoints (company_id, id);
