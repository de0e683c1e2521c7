package engine

import (
	"slices"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// tenantConfig is what the delivery of an event reads of its tenant: the tenant, its
// zones, webhook subscriptions and teams.
type tenantConfig struct {
	tenant   *model.Tenant
	zones    []model.Zone
	webhooks []model.Webhook
	teams    []model.Team
}

// tenantConfig returns a tenant's configuration as tx sees it, from the cache when it is
// current. It must be called in a write transaction: the cache is filled when tx commits.
// The answer is shared and read-only, and does not show changes tx itself made to the
// directory: a use case that made some reads loadTenantConfig instead.
func (e *Engine) tenantConfig(tx model.Tx, tenantID string) (*tenantConfig, error) {
	v := e.store.Version(tenantID)
	if c, ok := e.configs.Get(tenantID, v); ok {
		return c, nil
	}
	c, err := loadTenantConfig(tx, tenantID)
	if err != nil {
		return nil, err
	}
	tx.OnCommit(func() { e.configs.Put(tenantID, v, c) })
	return c, nil
}

// loadTenantConfig reads a tenant's configuration within tx.
func loadTenantConfig(tx model.Tx, tenantID string) (*tenantConfig, error) {
	t, err := tx.Tenant(tenantID)
	if err != nil {
		return nil, err
	}
	c := &tenantConfig{tenant: t}
	if c.zones, err = tx.Zones(tenantID); err != nil {
		return nil, err
	}
	if c.webhooks, err = tx.Webhooks(tenantID); err != nil {
		return nil, err
	}
	if c.teams, err = tx.Teams(tenantID); err != nil {
		return nil, err
	}
	return c, nil
}

// zone returns the zone with code, or nil.
func (c *tenantConfig) zone(code string) *model.Zone {
	for i := range c.zones {
		if c.zones[i].Code == code {
			return &c.zones[i]
		}
	}
	return nil
}

// centroid returns the centroid of the zone with the code (ScoreTarget.ZoneCentroid).
func (c *tenantConfig) centroid(code string) (model.LatLng, bool) {
	if z := c.zone(code); z != nil {
		return z.Centroid, true
	}
	return model.LatLng{}, false
}

// zoneAt returns the first zone (by code) whose polygon holds the point, or nil.
func (c *tenantConfig) zoneAt(lat, lng float64) *model.Zone {
	for i := range c.zones {
		if c.zones[i].Boundary.Contains(lat, lng) {
			return &c.zones[i]
		}
	}
	return nil
}

// wantsWebhook reports whether an active subscription wants the webhook name.
func (c *tenantConfig) wantsWebhook(name string) bool {
	for i := range c.webhooks {
		if c.webhooks[i].Status == WebhookActive && c.webhooks[i].Wants(name) {
			return true
		}
	}
	return false
}

// maxSMSRecipients bounds the SMS sent for one event.
const maxSMSRecipients = 10

// smsRecipients returns the phones that receive an event's SMS: the members of the teams
// that serve the event's zone (teams with no zone serve events with no zone) and its
// vertical, and are not off duty.
func (c *tenantConfig) smsRecipients(ev *model.Event) []string {
	var out []string
	seen := map[string]bool{}
	for i := range c.teams {
		tm := &c.teams[i]
		zone := ""
		if ev.ZoneCode != nil {
			zone = *ev.ZoneCode
		}
		if tm.Status == TeamOffDuty || tm.ZoneCode != zone || !slices.Contains(tm.Verticals, ev.Vertical) {
			continue
		}
		for _, m := range tm.Members {
			if m.Phone != "" && !seen[m.Phone] && len(out) < maxSMSRecipients {
				seen[m.Phone] = true
				out = append(out, m.Phone)
			}
		}
	}
	return out
}
