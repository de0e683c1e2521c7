-- Two-way sync, the flows still missing: the tenant's settings go down to its sites
-- (docs/decisions/0200-tenant-settings-down.md), a kind of the downstream log, and a
-- site's team status goes up (docs/decisions/0202-team-status-up.md) and so do its own
-- zones (docs/decisions/0204-site-zone-collisions.md), kinds of the change log.
ALTER TABLE downstream_log DROP CONSTRAINT downstream_log_kind_check;
ALTER TABLE downstream_log ADD CONSTRAINT downstream_log_kind_check
    CHECK (kind IN ('zone', 'team', 'user', 'dispatch_request', 'mission', 'settings'));

ALTER TABLE upstream_log DROP CONSTRAINT upstream_log_kind_check;
ALTER TABLE upstream_log ADD CONSTRAINT upstream_log_kind_check
    CHECK (kind IN ('upstream_event', 'upstream_dispatch', 'upstream_mission', 'upstream_dispatch_request',
        'upstream_team_status', 'upstream_site_zone'));
