-- The SMS the node sends (docs/decisions.md, "SMS gateways: the record of each SMS sent"),
-- by the outbox message's id, and found by the id the gateway gave it (its delivery
-- reports name it).
CREATE TABLE sms_outbound (
    tenant_id  uuid NOT NULL REFERENCES tenants,
    id         uuid NOT NULL,
    gateway_id text,
    doc        json NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE INDEX sms_outbound_gateway ON sms_outbound (tenant_id, gateway_id) WHERE gateway_id IS NOT NULL;
