-- The downstream_lagging alert (docs/decisions/0210-downstream-lag-alert.md): the kinds
-- of alerts follow engine/model's AlertKinds (docs/decisions/0230-postgres-check-constraints.md).

ALTER TABLE alerts DROP CONSTRAINT alerts_kind_check;
ALTER TABLE alerts ADD CONSTRAINT alerts_kind_check
    CHECK (kind IN ('event_undispatched', 'requires_manual', 'mission_unacknowledged', 'mission_overdue',
        'crew_message', 'mission_terminal_conflict', 'device_silent', 'sms_gateway_down', 'upstream_down',
        'downstream_lagging'));
