-- Each tenant's stream changes are numbered by a sequence of the tenant's own
-- (docs/decisions/0238-stream-tenant-sequence.md): stream_heads.seq is the tenant's last
-- number, advanced by the transaction that adds changes, whose lock on the row orders the
-- numbers as the commits. No transaction id orders the stream any more: on Citus a
-- tenant's changes are numbered on its own shard.
--
-- In place: the numbers already given (transaction ids shifted left by 20 bits) stay, and
-- each tenant's sequence continues above its greatest one, so that a Last-Event-ID given
-- before the upgrade still resumes.

CREATE TABLE stream_heads (
    tenant_id uuid PRIMARY KEY REFERENCES tenants,
    seq       bigint NOT NULL
);

INSERT INTO stream_heads (tenant_id, seq)
SELECT tenant_id, max(seq) FROM (
    SELECT tenant_id, seq FROM stream_changes
    UNION ALL SELECT tenant_id, upto FROM stream_pruned
) s WHERE EXISTS (SELECT FROM tenants t WHERE t.tenant_id = s.tenant_id) GROUP BY tenant_id;
