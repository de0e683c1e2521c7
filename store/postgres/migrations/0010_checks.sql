-- Schema hygiene (docs/decisions/0230-postgres-check-constraints.md): every column that
-- holds one of a fixed set of values refuses any other, and a tenant's slug is unique.
-- The lists follow engine/model (EventStatuses, Priorities, MissionStates, AlertStatuses,
-- AlertKinds, ChangeKinds, DownKinds, Permissions); TestChecks_FollowModel compares them.
-- Values inside the JSON documents are the node's to check.

ALTER TABLE events ADD CONSTRAINT events_status_check
    CHECK (status IN ('pending', 'delivered', 'failed', 'queued_offline', 'closed'));
ALTER TABLE events ADD CONSTRAINT events_priority_check
    CHECK (priority IN ('critical', 'high', 'normal', 'low'));

ALTER TABLE missions ADD CONSTRAINT missions_status_check
    CHECK (status IN ('CREATED', 'SENT', 'ACK', 'ON_ROUTE', 'ON_SITE', 'COMPLETED', 'FAILED'));

ALTER TABLE alerts ADD CONSTRAINT alerts_status_check
    CHECK (status IN ('open', 'closed'));
ALTER TABLE alerts ADD CONSTRAINT alerts_kind_check
    CHECK (kind IN ('event_undispatched', 'requires_manual', 'mission_unacknowledged', 'mission_overdue',
        'crew_message', 'mission_terminal_conflict', 'device_silent', 'sms_gateway_down', 'upstream_down'));

ALTER TABLE upstream_log ADD CONSTRAINT upstream_log_kind_check
    CHECK (kind IN ('upstream_event', 'upstream_dispatch', 'upstream_mission', 'upstream_dispatch_request'));

ALTER TABLE downstream_log ADD CONSTRAINT downstream_log_kind_check
    CHECK (kind IN ('zone', 'team', 'user', 'dispatch_request', 'mission'));

ALTER TABLE stream_changes ADD CONSTRAINT stream_changes_perm_check
    CHECK (perm IN ('tenant:admin', 'events:read', 'events:write', 'webhooks:manage', 'zones:manage',
        'zones:read', 'apikeys:manage', 'devices:manage', 'devices:sync', 'sync:write',
        'missions:view', 'missions:manage', 'missions:receive', 'dispatch:assign', 'teams:read',
        'teams:manage', 'settings:dispatch', 'usage:read', 'connectivity:report', 'location:self'));

-- A tenant's slug is unique: tenants.slug must name the tenant's row of tenant_slugs, whose
-- key is the slug. A plain UNIQUE (slug) would be a unique index of a tenant-owned table
-- that does not lead with tenant_id, which Citus cannot keep across shards; a foreign key
-- to the global table can be. Deferred to the commit: PutTenant replaces the slug's row
-- before it updates the tenant.
CREATE UNIQUE INDEX tenant_slugs_tenant ON tenant_slugs (slug, tenant_id);
ALTER TABLE tenants ADD CONSTRAINT tenants_slug_fkey FOREIGN KEY (slug, tenant_id)
    REFERENCES tenant_slugs (slug, tenant_id) DEFERRABLE INITIALLY DEFERRED;
