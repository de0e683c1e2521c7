package engine

import (
	"regexp"
)

// Zone is an operational area of a tenant, addressed by its code.
type Zone struct {
	ID        string  `json:"id"`
	Code      string  `json:"code"`
	Name      string  `json:"name"`
	Boundary  Polygon `json:"boundary"`
	Centroid  LatLng  `json:"centroid"`
	CreatedAt Time    `json:"created_at"`
	UpdatedAt Time    `json:"updated_at"`
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

// CreateZone adds a zone to a tenant (KindConflict when the code is taken).
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
		return nil, Errorf(KindConflict, "zone code %q is taken", in.Code)
	} else if !IsKind(err, KindNotFound) {
		return nil, err
	}
	now := At(e.clock.Now())
	z := &Zone{ID: NewID(), Code: in.Code, Name: name, Boundary: *in.Boundary,
		Centroid: in.Boundary.Centroid(), CreatedAt: now, UpdatedAt: now}
	return z, tx.PutZone(tenantID, z)
}
