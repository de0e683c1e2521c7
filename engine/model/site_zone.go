package model

import (
	"fmt"

	"github.com/google/uuid"
)

// A site's own zones, as its central node knows them (docs/decisions/0204-site-zone-collisions.md):
// the central node refuses a zone of its own whose code one of them holds at a site the
// zone goes to.

// SiteZone is a zone a site created itself.
type SiteZone struct {
	ID   string `json:"id"`
	Code string `json:"code"`
	Name string `json:"name"`
}

// SiteZoneReport is the payload of an upstream_site_zone item: the zone under its key, or
// Zone nil when the site no longer has a zone of its own with that code.
type SiteZoneReport struct {
	Key  string    `json:"key"`
	Zone *SiteZone `json:"zone"`
}

// siteZoneSpace is the UUID namespace of SiteZoneKey.
var siteZoneSpace = uuid.MustParse("0b6c7f3e-5c1d-4f0e-9a43-2d1f6b8e7a10")

// SiteZoneKey is the change-log id of a zone code (the log keys records by UUID, and a
// zone is known by its code): the same code gives the same key, deleted or not.
func SiteZoneKey(code string) string { return uuid.NewSHA1(siteZoneSpace, []byte(code)).String() }

// SiteZoneConflict is the error of a central zone whose code the site of device d holds
// as a zone of its own: 409 conflict naming the site and the local zone; nil when it
// holds none (or d is no site).
func SiteZoneConflict(d *Device, code string) error {
	z, ok := d.SiteZones[SiteZoneKey(code)]
	if !ok || z.Code != code {
		return nil
	}
	node := ""
	if d.HardwareID != nil {
		node = *d.HardwareID
	}
	return Errorf(KindConflict, "%s", fmt.Sprintf("zone code %s is held at site %s (device %s, node %s) by its own zone %s (%s): "+
		"rename one of them", Quote(code), Quote(d.Name), d.ID, node, Quote(z.Name), z.ID))
}
