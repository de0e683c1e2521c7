package upstream

import (
	"encoding/json"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// applySettings applies the tenant's settings as its central node (owner) holds them at
// version: they become the site tenant's, read-only here from then on, unless the copy
// is as new already (docs/decisions/0200-tenant-settings-down.md). Settings that are no
// longer the owner's own (null) change nothing: the site keeps the last copy.
func (u *Runner) applySettings(tx model.Tx, tenantID, owner string, version int64, gone bool, raw json.RawMessage) error {
	if gone {
		return nil
	}
	var s model.TenantSettings
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	t, err := tx.Tenant(tenantID)
	if err != nil {
		return err
	}
	if t.SettingsOrigin != nil && *t.SettingsOrigin == owner && t.SettingsVersion >= version {
		return nil
	}
	t.SettingsOrigin, t.SettingsVersion = &owner, version
	t.UpdatedAt = model.At(u.clock.Now())
	return u.setSettings(tx, t, s)
}
