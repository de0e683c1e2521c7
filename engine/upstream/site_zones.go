package upstream

import (
	"fmt"
	"maps"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// A site's own zones go up (docs/decisions/0204-site-zone-collisions.md): a change of a
// zone of its own is logged under the key of its code (LogChanges), and every snapshot it
// applies logs them all, so that a site that joins with zones of its own reports them
// before its central node can collide with one. The central node keeps them on the
// site's device (applySiteZone) and refuses a zone of its own whose code one of them
// holds at a site it goes to (model.SiteZoneConflict).

// reportSiteZones logs every zone of the site's own (not a copy) for its upstream.
func reportSiteZones(tx model.Tx, tenantID string) error {
	zs, err := tx.Zones(tenantID)
	if err != nil {
		return err
	}
	for i := range zs {
		if zs[i].Origin == nil {
			writes.Changed(tx, tenantID, model.ChangeSiteZone, model.SiteZoneKey(zs[i].Code))
		}
	}
	return nil
}

// siteZoneOf is the upstream_site_zone payload of key as it stands in tx: the zone of
// the node's own whose code has that key, or none.
func siteZoneOf(tx Tx, tenantID, key string) (*model.SiteZoneReport, error) {
	zs, err := tx.Zones(tenantID)
	if err != nil {
		return nil, err
	}
	out := &model.SiteZoneReport{Key: key}
	for i := range zs {
		if z := &zs[i]; z.Origin == nil && model.SiteZoneKey(z.Code) == key {
			out.Zone = &model.SiteZone{ID: z.ID, Code: z.Code, Name: z.Name}
		}
	}
	return out, nil
}

// applySiteZone keeps on d, the sending site's device, a zone of the site's own (or
// forgets it); the same state is a duplicate.
func applySiteZone(tx Tx, tenantID string, d *model.Device, it *model.DeviceItem) (bool, error) {
	var r model.SiteZoneReport
	if err := decodeUpstream(it.Payload, &r); err != nil {
		return false, err
	}
	if err := requireID("key", r.Key); err != nil {
		return false, err
	}
	if r.Zone != nil && (!model.ValidZoneCode(r.Zone.Code) || model.SiteZoneKey(r.Zone.Code) != r.Key) {
		return false, model.Invalid("zone.code", "zone.code must be a zone code whose key is key")
	}
	old, held := d.SiteZones[r.Key]
	switch {
	case r.Zone == nil && !held, r.Zone != nil && held && old == *r.Zone:
		return true, nil
	}
	zones := maps.Clone(d.SiteZones)
	if zones == nil {
		zones = map[string]model.SiteZone{}
	}
	if r.Zone == nil {
		delete(zones, r.Key)
	} else {
		zones[r.Key] = *r.Zone
	}
	if len(zones) == 0 {
		zones = nil
	}
	d.SiteZones = zones
	if err := tx.PutDevice(tenantID, d); err != nil {
		return false, fmt.Errorf("keeping a site's zone: %w", err)
	}
	return false, nil
}
