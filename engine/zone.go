package engine

import (
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
	// Connectivity is the last reported link state of the zone.
	Connectivity Connectivity `json:"connectivity"`
	CreatedAt    Time         `json:"created_at"`
	UpdatedAt    Time         `json:"updated_at"`
}

var zoneCodeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// Zone connectivity states (API.md, Delivery).
const (
	ConnOnline   = "online"
	ConnDegraded = "degraded"
	ConnOffline  = "offline"
	ConnUnknown  = "unknown"
)

// ConnectivityStaleAfter is how long a report holds: a zone with no report for this long
// is unknown.
const ConnectivityStaleAfter = 10 * time.Minute

// Connectivity is the link state of a zone as last reported. State is the reported state;
// StateAt tells the state in force at a time, staleness included.
type Connectivity struct {
	State        string `json:"state"`
	LastReportAt *Time  `json:"last_report_at"`
	// Since is when the zone entered State.
	Since *Time `json:"since"`
}

// StateAt returns the state in force at now: unknown without a report in the last
// ConnectivityStaleAfter.
func (c Connectivity) StateAt(now time.Time) string {
	if c.LastReportAt == nil || c.State == "" || now.Sub(c.LastReportAt.Time) >= ConnectivityStaleAfter {
		return ConnUnknown
	}
	return c.State
}

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
