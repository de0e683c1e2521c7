-- The downstream log of a central node (docs/decisions/0196-downstream-log.md): the
-- changes of the records it owns, numbered per tenant from downstream_log_end, which keeps
-- the last number given even when the log is trimmed empty.
CREATE TABLE downstream_log_end (
    tenant_id uuid PRIMARY KEY REFERENCES tenants,
    last_seq  bigint NOT NULL
);

CREATE TABLE downstream_log (
    tenant_id  uuid NOT NULL REFERENCES tenants,
    seq        bigint NOT NULL,
    kind       text NOT NULL,
    record_key text NOT NULL,
    at         timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

-- Dispatches the central node asks of a site (docs/decisions/0197-dispatch-requests.md),
-- on both nodes.
CREATE TABLE dispatch_requests (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
