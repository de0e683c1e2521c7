-- The SMS the node sends (docs/decisions/0123-sms-outbound-record.md),
-- by the outbox message's id, found by the id the gateway gave it (its delivery reports
-- name it), and counted per recipient from the time the gateway accepted it (the
-- recipients' rate limits).
CREATE TABLE sms_outbound (
    tenant_id  uuid NOT NULL REFERENCES tenants,
    id         uuid NOT NULL,
    gateway_id text,
    to_phone   text NOT NULL,
    sent_at    timestamptz,
    doc        json NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX sms_outbound_gateway ON sms_outbound (tenant_id, gateway_id) WHERE gateway_id IS NOT NULL;
CREATE INDEX sms_outbound_sent ON sms_outbound (tenant_id, to_phone, sent_at) WHERE sent_at IS NOT NULL;
