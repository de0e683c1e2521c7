package zones

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// CreateZone adds a zone to p's tenant (POST /v1/zones; KindConflict when the code is
// taken). The answer shows the zone's connectivity in force (unknown: nothing was
// reported yet).
func (e *Registry) CreateZone(ctx context.Context, p model.Principal, in model.ZoneInput, w *model.Write) (*model.Zone, error) {
	if err := p.Require(model.PermZonesManage); err != nil {
		return nil, err
	}
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Zone, error) { return e.createZone(tx, p.TenantID, in) })
}

// createZone is CreateZone within tx.
func (e *Registry) createZone(tx model.Tx, tenantID string, in model.ZoneInput) (*model.Zone, error) {
	if in.Code == "" {
		return nil, model.Invalid("code", "code is required")
	}
	if !model.ValidZoneCode(in.Code) {
		return nil, model.Invalid("code", "code must be 1 to 64 letters, digits, '_' or '-'")
	}
	name, err := model.RequireText("name", in.Name, 200)
	if err != nil {
		return nil, err
	}
	if in.Boundary == nil {
		return nil, model.Invalid("boundary", "boundary is required")
	}
	if err := in.Boundary.Validate("boundary"); err != nil {
		return nil, err
	}
	if _, err := tx.Zone(tenantID, in.Code); err == nil {
		return nil, model.Errorf(model.KindConflict, "zone code %s is taken", model.Quote(in.Code))
	} else if !model.IsKind(err, model.KindNotFound) {
		return nil, err
	}
	site, err := model.CheckSite(tx.Device, tenantID, in.SiteID)
	if err != nil {
		return nil, err
	}
	if err := siteZoneFree(tx, tenantID, in.Code, site); err != nil {
		return nil, err
	}
	now := e.clock.Now()
	z := &model.Zone{ID: model.NewID(), Code: in.Code, Name: name, Boundary: *in.Boundary,
		Centroid: in.Boundary.Centroid(), SiteID: site, CreatedAt: model.At(now), UpdatedAt: model.At(now)}
	if err := tx.PutZone(tenantID, z); err != nil {
		return nil, err
	}
	writes.Changed(tx, tenantID, model.DownZone, z.Code)
	out := z.AsOf(now)
	return &out, nil
}

// UpdateZone changes the name and/or boundary of a zone of the principal's tenant (PATCH
// /v1/zones/:code). A new boundary is validated and the centroid recomputed; a request
// that changes nothing leaves updated_at alone.
func (e *Registry) UpdateZone(ctx context.Context, p model.Principal, code string, in model.ZonePatch, w *model.Write) (*model.Zone, error) {
	if err := p.Require(model.PermZonesManage); err != nil {
		return nil, err
	}
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Zone, error) { return e.updateZone(tx, p, code, in) })
}

// updateZone is UpdateZone within tx.
func (e *Registry) updateZone(tx model.Tx, p model.Principal, code string, in model.ZonePatch) (*model.Zone, error) {
	if !model.ValidZoneCode(code) {
		return nil, model.NotFound("zone")
	}
	z, err := tx.Zone(p.TenantID, code)
	if err != nil {
		return nil, err
	}
	if err := model.CopyConflict("zone "+model.Quote(code), z.Origin); err != nil {
		return nil, err
	}
	if in.Code != nil && *in.Code != z.Code {
		return nil, model.Invalid("code", "code cannot change; create a new zone instead")
	}
	var name string
	if in.Name != nil {
		if name, err = model.RequireText("name", *in.Name, 200); err != nil {
			return nil, err
		}
	}
	if in.Boundary != nil {
		if err := in.Boundary.Validate("boundary"); err != nil {
			return nil, err
		}
	}
	changed := false
	if in.Name != nil && name != z.Name {
		z.Name, changed = name, true
	}
	if in.Boundary != nil {
		z.Boundary, z.Centroid, changed = *in.Boundary, in.Boundary.Centroid(), true
	}
	if in.SiteID != nil {
		site, err := model.CheckSite(tx.Device, p.TenantID, in.SiteID)
		if err != nil {
			return nil, err
		}
		if !model.EqualPtr(site, z.SiteID) {
			if err := siteZoneFree(tx, p.TenantID, z.Code, site); err != nil {
				return nil, err
			}
			z.SiteID, changed = site, true
		}
	}
	now := e.clock.Now()
	if changed {
		z.UpdatedAt = model.At(now)
		if err := tx.PutZone(p.TenantID, z); err != nil {
			return nil, err
		}
		writes.Changed(tx, p.TenantID, model.DownZone, z.Code)
	}
	out := z.AsOf(now)
	return &out, nil
}

// DeleteZone removes a zone of the principal's tenant (DELETE /v1/zones/:code) and
// returns it as it was. Events, teams and devices that name the code are left as they
// are.
func (e *Registry) DeleteZone(ctx context.Context, p model.Principal, code string, w *model.Write) (*model.Zone, error) {
	if err := p.Require(model.PermZonesManage); err != nil {
		return nil, err
	}
	return writes.Do(ctx, e.frame, p.TenantID, w, func(tx model.Tx) (*model.Zone, error) {
		if !model.ValidZoneCode(code) {
			return nil, model.NotFound("zone")
		}
		z, err := tx.Zone(p.TenantID, code)
		if err != nil {
			return nil, err
		}
		if err := model.CopyConflict("zone "+model.Quote(code), z.Origin); err != nil {
			return nil, err
		}
		if err := tx.DeleteZone(p.TenantID, code); err != nil {
			return nil, err
		}
		writes.Changed(tx, p.TenantID, model.DownZone, z.Code)
		return z, nil
	})
}

// Zone returns one zone of the principal's tenant (GET /v1/zones/:code), its
// connectivity in force now.
func (e *Registry) Zone(ctx context.Context, p model.Principal, code string) (*model.Zone, error) {
	z, err := e.storedZone(ctx, p, code)
	if err != nil {
		return nil, err
	}
	out := z.AsOf(e.clock.Now())
	return &out, nil
}

// storedZone reads a zone of the principal's tenant as stored.
func (e *Registry) storedZone(ctx context.Context, p model.Principal, code string) (*model.Zone, error) {
	if err := p.Require(model.PermZonesRead); err != nil {
		return nil, err
	}
	if !model.ValidZoneCode(code) {
		return nil, model.NotFound("zone")
	}
	var z *model.Zone
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		z, err = tx.Zone(p.TenantID, code)
		return err
	})
	return z, err
}

// Zones lists a page of the principal's tenant's zones newest first (GET /v1/zones),
// each with its connectivity in force now; the string is the next cursor ("" at the end).
func (e *Registry) Zones(ctx context.Context, p model.Principal, page model.Page) ([]model.Zone, string, error) {
	zones, next, err := e.zonePage(ctx, p, page)
	if err != nil {
		return nil, "", err
	}
	now := e.clock.Now()
	for i := range zones {
		zones[i] = zones[i].AsOf(now)
	}
	return zones, next, nil
}

// zonePage reads one page of a tenant's zones, newest first. A zero Limit reads them
// all.
func (e *Registry) zonePage(ctx context.Context, p model.Principal, page model.Page) ([]model.Zone, string, error) {
	if err := p.Require(model.PermZonesRead); err != nil {
		return nil, "", err
	}
	var zones []model.Zone
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		zones, err = tx.Zones(p.TenantID)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return model.PageList(zones, model.ByIDNewestFirst(func(z *model.Zone) string { return z.ID }), nil, page)
}

// siteZoneFree checks that no site the zone goes to (site; nil: every site of the
// tenant) holds its code as a zone of its own (docs/decisions/0204-site-zone-collisions.md).
func siteZoneFree(tx model.Tx, tenantID, code string, site *string) error {
	if site != nil {
		d, err := tx.Device(tenantID, *site)
		if err != nil {
			return err
		}
		return model.SiteZoneConflict(d, code)
	}
	page := model.Page{Limit: 1000}
	for {
		ds, next, err := tx.Devices(tenantID, page)
		if err != nil {
			return err
		}
		for i := range ds {
			if ds[i].Platform == model.PlatformNode {
				if err := model.SiteZoneConflict(&ds[i], code); err != nil {
					return err
				}
			}
		}
		if next == "" {
			return nil
		}
		page.Cursor = next
	}
}
