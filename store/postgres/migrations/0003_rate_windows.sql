-- The rate-limit windows that processes share (docs/decisions/0100-rate-limit-processes.md):
-- what every process has taken from a tenant's one-minute window.
-- UNLOGGED: a window lives a minute, so it is not worth a WAL record or a flush per
-- block; a crash empties the table, which restarts the windows in progress.
CREATE UNLOGGED TABLE rate_windows (
    tenant_id    uuid NOT NULL REFERENCES tenants,
    window_start timestamptz NOT NULL,
    taken        bigint NOT NULL,
    PRIMARY KEY (tenant_id, window_start)
);
