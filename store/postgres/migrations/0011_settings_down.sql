-- The tenant's settings go down to its sites (docs/decisions/0200-tenant-settings-down.md):
-- the downstream log holds a new kind, settings.
ALTER TABLE downstream_log DROP CONSTRAINT downstream_log_kind_check;
ALTER TABLE downstream_log ADD CONSTRAINT downstream_log_kind_check
    CHECK (kind IN ('zone', 'team', 'user', 'dispatch_request', 'mission', 'settings'));
