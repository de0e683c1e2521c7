-- The changes of GET /v1/stream, shared by the processes
-- (docs/decisions/0105-stream-postgres.md). seq is the
-- writing transaction's id shifted left by 20 bits, plus the
-- change's number in that transaction: rows whose transaction id is below the oldest one
-- still running are final, so reading them in seq order never misses one that commits later.
-- The last 1000 changes of each tenant are kept; stream_pruned.upto is the greatest seq
-- deleted, below which a Last-Event-ID cannot be resumed.

CREATE TABLE stream_changes (
    tenant_id uuid NOT NULL,
    seq       bigint NOT NULL,
    name      text NOT NULL,
    perm      text NOT NULL,
    team_id   text NOT NULL,
    at        timestamptz NOT NULL,
    data      json NOT NULL,
    PRIMARY KEY (tenant_id, seq)
);

CREATE TABLE stream_pruned (
    tenant_id uuid PRIMARY KEY,
    upto      bigint NOT NULL
);
