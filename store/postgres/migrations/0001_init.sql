-- The first schema of the PostgreSQL store (docs/decisions/0091-postgres-schema.md).
-- Every tenant-owned table leads its primary key and unique indexes with tenant_id, so
-- that Citus can distribute it by tenant_id; the global lookups (installation meta,
-- slugs, API key hashes, emails, login guards, auth tokens) live in small tables of
-- their own. Ordered text keys use COLLATE "C": the byte order the bbolt store lists in.
-- doc holds the record's JSON: jsonb where the node composes the whole record, json
-- where it carries a caller's bytes that must come back as they were sent.

CREATE TABLE meta (
    key   text COLLATE "C" PRIMARY KEY,
    value bytea NOT NULL
);

CREATE TABLE tenants (
    tenant_id uuid PRIMARY KEY,
    slug      text NOT NULL,
    doc       jsonb NOT NULL
);

CREATE TABLE tenant_slugs (
    slug      text PRIMARY KEY,
    tenant_id uuid NOT NULL
);

CREATE TABLE users (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    email     text NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE user_emails (
    email     text PRIMARY KEY,
    tenant_id uuid NOT NULL,
    user_id   uuid NOT NULL
);

CREATE TABLE login_guards (
    email text PRIMARY KEY,
    doc   jsonb NOT NULL
);

CREATE TABLE api_keys (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    hash      text NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE api_key_hashes (
    hash      text PRIMARY KEY,
    tenant_id uuid NOT NULL,
    key_id    uuid NOT NULL
);

CREATE TABLE auth_tokens (
    hash text PRIMARY KEY,
    doc  jsonb NOT NULL
);

CREATE TABLE idempotency (
    tenant_id  uuid NOT NULL REFERENCES tenants,
    key        text NOT NULL,
    created_at timestamptz NOT NULL,
    doc        json NOT NULL,
    PRIMARY KEY (tenant_id, key)
);
CREATE INDEX idempotency_created ON idempotency (tenant_id, created_at);

CREATE TABLE zones (
    tenant_id uuid NOT NULL REFERENCES tenants,
    code      text COLLATE "C" NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, code)
);

CREATE TABLE teams (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE events (
    tenant_id  uuid NOT NULL REFERENCES tenants,
    id         uuid NOT NULL,
    created_at timestamptz NOT NULL,
    zone_code  text,
    vertical   text NOT NULL,
    status     text NOT NULL,
    priority   text NOT NULL,
    type       text NOT NULL,
    origin     text,
    doc        json NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX events_status ON events (tenant_id, status, id);
CREATE INDEX events_zone ON events (tenant_id, zone_code, id);
CREATE INDEX events_created ON events (tenant_id, created_at);

CREATE TABLE event_replies (
    tenant_id  uuid NOT NULL REFERENCES tenants,
    key        text NOT NULL,
    status     integer NOT NULL,
    request_id text NOT NULL,
    created_at timestamptz NOT NULL,
    body       bytea NOT NULL,
    PRIMARY KEY (tenant_id, key)
);

CREATE TABLE events_parked (
    tenant_id uuid NOT NULL REFERENCES tenants,
    zone_code text COLLATE "C" NOT NULL,
    event_id  uuid NOT NULL,
    PRIMARY KEY (tenant_id, zone_code, event_id)
);

CREATE TABLE webhooks (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE delivery_attempts (
    tenant_id  uuid NOT NULL REFERENCES tenants,
    webhook_id uuid NOT NULL,
    id         uuid NOT NULL,
    doc        json NOT NULL,
    PRIMARY KEY (tenant_id, webhook_id, id)
);

CREATE TABLE outbox (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    due_at    timestamptz NOT NULL,
    leased    boolean NOT NULL,
    doc       json NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX outbox_due ON outbox (due_at, tenant_id, id);

CREATE TABLE missions (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    event_id  uuid NOT NULL,
    team_id   uuid NOT NULL,
    status    text NOT NULL,
    origin    text,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX missions_event ON missions (tenant_id, event_id, id);
CREATE INDEX missions_team ON missions (tenant_id, team_id, id);

CREATE TABLE dispatches (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE ledger (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    kind      text NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE sync_batches (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    doc       json NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE devices (
    tenant_id   uuid NOT NULL REFERENCES tenants,
    id          uuid NOT NULL,
    hardware_id text,
    team_id     uuid,
    zone_code   text,
    doc         jsonb NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX devices_hardware ON devices (tenant_id, hardware_id) WHERE hardware_id IS NOT NULL;
CREATE INDEX devices_team ON devices (tenant_id, team_id, id);
CREATE INDEX devices_zone ON devices (tenant_id, zone_code, id);

CREATE TABLE device_items (
    tenant_id uuid NOT NULL REFERENCES tenants,
    device_id uuid NOT NULL,
    seq       bigint NOT NULL,
    doc       json NOT NULL,
    PRIMARY KEY (tenant_id, device_id, seq)
);

CREATE TABLE device_queue (
    tenant_id uuid NOT NULL REFERENCES tenants,
    device_id uuid NOT NULL,
    seq       bigint NOT NULL,
    doc       jsonb NOT NULL,
    PRIMARY KEY (tenant_id, device_id, seq)
);

CREATE TABLE mission_codes (
    tenant_id  uuid NOT NULL REFERENCES tenants,
    code       text NOT NULL,
    mission_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, code)
);

CREATE TABLE sms_inbound (
    tenant_id uuid NOT NULL REFERENCES tenants,
    id        uuid NOT NULL,
    doc       json NOT NULL,
    PRIMARY KEY (tenant_id, id)
);

CREATE TABLE usage_counters (
    tenant_id uuid NOT NULL REFERENCES tenants,
    day       text COLLATE "C" NOT NULL,
    metric    text COLLATE "C" NOT NULL,
    n         numeric(20) NOT NULL,
    PRIMARY KEY (tenant_id, day, metric)
);

CREATE TABLE upstreams (
    tenant_id uuid PRIMARY KEY REFERENCES tenants,
    doc       jsonb NOT NULL
);

CREATE TABLE upstream_log_end (
    tenant_id uuid PRIMARY KEY REFERENCES tenants,
    last_seq  bigint NOT NULL
);

CREATE TABLE upstream_log (
    tenant_id uuid NOT NULL REFERENCES tenants,
    seq       bigint NOT NULL,
    kind      text NOT NULL,
    record_id uuid NOT NULL,
    at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);
