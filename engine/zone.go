package engine

import (
	"context"
	"regexp"
	"time"
)

// Zone is an operational area of a tenant, addressed by its code.
type Zone struct {
	ID       string  `json:"id"`
	Code     string  `json:"code"`
	Name     string  `json:"name"`
	Boundary Polygon `json:"boundary"`
	Centroid LatLng  `json:"centroid"`
	// Connectivity is the last reported link state of the zone as stored; AsOf turns it
	// into the state in force at a time.
	Connectivity Connectivity `json:"connectivity"`
	CreatedAt    Time         `json:"created_at"`
	UpdatedAt    Time         `json:"updated_at"`
}

// AsOf returns a copy of the zone whose connectivity shows the state in force at now
// (staleness included), as every answer shows a zone.
func (z *Zone) AsOf(now time.Time) Zone {
	out := *z
	st := z.ConnectivityAt(now)
	out.Connectivity.State, out.Connectivity.Since = st.State, st.Since
	return out
}

var zoneCodeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidZoneCode reports whether s can be a zone code.
func ValidZoneCode(s string) bool { return zoneCodeRE.MatchString(s) }

// ZoneInput is the body of POST /v1/zones.
type ZoneInput struct {
	Code     string   `json:"code"`
	Name     string   `json:"name"`
	Boundary *Polygon `json:"boundary"`
}

// CreateZone adds a zone to a tenant (KindConflict when the code is taken). The answer
// shows the zone's connectivity in force (unknown: nothing was reported yet).
func (e *Engine) CreateZone(tx Tx, tenantID string, in ZoneInput) (*Zone, error) {
	if in.Code == "" {
		return nil, Invalid("code", "code is required")
	}
	if !ValidZoneCode(in.Code) {
		return nil, Invalid("code", "code must be 1 to 64 letters, digits, '_' or '-'")
	}
	name, err := requireText("name", in.Name, 200)
	if err != nil {
		return nil, err
	}
	if in.Boundary == nil {
		return nil, Invalid("boundary", "boundary is required")
	}
	if err := in.Boundary.Validate("boundary"); err != nil {
		return nil, err
	}
	if _, err := tx.Zone(tenantID, in.Code); err == nil {
		return nil, Errorf(KindConflict, "zone code %s is taken", Quote(in.Code))
	} else if !IsKind(err, KindNotFound) {
		return nil, err
	}
	now := e.clock.Now()
	z := &Zone{ID: NewID(), Code: in.Code, Name: name, Boundary: *in.Boundary,
		Centroid: in.Boundary.Centroid(), CreatedAt: At(now), UpdatedAt: At(now)}
	if err := tx.PutZone(tenantID, z); err != nil {
		return nil, err
	}
	out := z.AsOf(now)
	return &out, nil
}

// ZonePatch is the body of PATCH /v1/zones/:code; nil fields stay as they are. Code may
// be given only when it equals the zone's: a code never changes.
type ZonePatch struct {
	Code     *string  `json:"code"`
	Name     *string  `json:"name"`
	Boundary *Polygon `json:"boundary"`
}

// UpdateZone changes the name and/or boundary of a zone of the principal's tenant (PATCH
// /v1/zones/:code). A new boundary is validated and the centroid recomputed; a request
// that changes nothing leaves updated_at alone.
func (e *Engine) UpdateZone(tx Tx, p Principal, code string, in ZonePatch) (*Zone, error) {
	if err := p.Require(PermZonesManage); err != nil {
		return nil, err
	}
	if !ValidZoneCode(code) {
		return nil, NotFound("zone")
	}
	z, err := tx.Zone(p.TenantID, code)
	if err != nil {
		return nil, err
	}
	if in.Code != nil && *in.Code != z.Code {
		return nil, Invalid("code", "code cannot change; create a new zone instead")
	}
	var name string
	if in.Name != nil {
		if name, err = requireText("name", *in.Name, 200); err != nil {
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
	now := e.clock.Now()
	if changed {
		z.UpdatedAt = At(now)
		if err := tx.PutZone(p.TenantID, z); err != nil {
			return nil, err
		}
	}
	out := z.AsOf(now)
	return &out, nil
}

// DeleteZone removes a zone of the principal's tenant (DELETE /v1/zones/:code) and
// returns it as it was. Events, teams and devices that name the code are left as they
// are.
func (e *Engine) DeleteZone(tx Tx, p Principal, code string) (*Zone, error) {
	if err := p.Require(PermZonesManage); err != nil {
		return nil, err
	}
	if !ValidZoneCode(code) {
		return nil, NotFound("zone")
	}
	z, err := tx.Zone(p.TenantID, code)
	if err != nil {
		return nil, err
	}
	if err := tx.DeleteZone(p.TenantID, code); err != nil {
		return nil, err
	}
	return z, nil
}

// Zone returns one zone of the principal's tenant (GET /v1/zones/:code), its
// connectivity in force now.
func (e *Engine) Zone(ctx context.Context, p Principal, code string) (*Zone, error) {
	z, err := e.storedZone(ctx, p, code)
	if err != nil {
		return nil, err
	}
	out := z.AsOf(e.clock.Now())
	return &out, nil
}

// storedZone reads a zone of the principal's tenant as stored.
func (e *Engine) storedZone(ctx context.Context, p Principal, code string) (*Zone, error) {
	if err := p.Require(PermZonesRead); err != nil {
		return nil, err
	}
	if !ValidZoneCode(code) {
		return nil, NotFound("zone")
	}
	var z *Zone
	err := e.store.View(ctx, func(tx Tx) (err error) {
		z, err = tx.Zone(p.TenantID, code)
		return err
	})
	return z, err
}

// Zones lists a page of the principal's tenant's zones newest first (GET /v1/zones),
// each with its connectivity in force now; the string is the next cursor ("" at the end).
func (e *Engine) Zones(ctx context.Context, p Principal, page Page) ([]Zone, string, error) {
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
func (e *Engine) zonePage(ctx context.Context, p Principal, page Page) ([]Zone, string, error) {
	if err := p.Require(PermZonesRead); err != nil {
		return nil, "", err
	}
	var zones []Zone
	err := e.store.View(ctx, func(tx Tx) (err error) {
		zones, err = tx.Zones(p.TenantID)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return pageList(zones, byIDNewestFirst(func(z *Zone) string { return z.ID }), nil, page)
}
