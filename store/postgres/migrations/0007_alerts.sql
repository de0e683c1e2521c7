-- Alerts (docs/decisions/0172-shared-alerts.md): one row per alert; at most one open alert
-- per key (its cause), found by key while open.
CREATE TABLE alerts (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    key       text NOT NULL,
    status    text NOT NULL,
    kind      text NOT NULL,
    event_id  text,
    doc       json NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE UNIQUE INDEX alerts_open ON alerts (tenant_id, key) WHERE status = 'open';
CREATE INDEX alerts_status ON alerts (tenant_id, status, id);
