package model

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
	// Connectivity is the last reported link state of the zone as stored; AsOf turns it
	// into the state in force at a time.
	Connectivity Connectivity `json:"connectivity"`
	// SiteID routes a record of a central node to one site: the central device id of the
	// site's node (docs/decisions/0196-downstream-log.md); nil sends it to no site.
	SiteID *string `json:"site_id,omitempty"`
	// Origin is the node that owns the record when this is a copy of it (received from a
	// central node): its owned fields are read-only here; OriginVersion is the owner's
	// version of the copy (docs/decisions/0195-record-owners.md).
	Origin        *string `json:"origin,omitempty"`
	OriginVersion int64   `json:"origin_version,omitempty"`
	CreatedAt     Time    `json:"created_at"`
	UpdatedAt     Time    `json:"updated_at"`
}

// AsOf returns a copy of the zone whose connectivity shows the state in force at now
// (staleness included), as every answer shows a zone.
func (z *Zone) AsOf(now time.Time) Zone {
	out := *z
	st := z.ConnectivityAt(now)
	out.Connectivity.State, out.Connectivity.Since = st.State, st.Since
	return out
}

// ZoneInput is the body of POST /v1/zones.
type ZoneInput struct {
	Code     string   `json:"code"`
	Name     string   `json:"name"`
	Boundary *Polygon `json:"boundary"`
	SiteID   *string  `json:"site_id"`
}

// ZonePatch is the body of PATCH /v1/zones/:code; nil fields stay as they are. Code may
// be given only when it equals the zone's: a code never changes.
type ZonePatch struct {
	Code     *string  `json:"code"`
	Name     *string  `json:"name"`
	Boundary *Polygon `json:"boundary"`
	// SiteID "" clears the site.
	SiteID *string `json:"site_id"`
}

var zoneCodeRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`)

// ValidZoneCode reports whether s can be a zone code.
func ValidZoneCode(s string) bool { return zoneCodeRE.MatchString(s) }
