package model

import (
	"strings"
	"testing"
	"time"
)

// TestMergeMessages: messages written on two nodes' copies of a mission merge by id, in
// the order of their writing then of their ids, whatever the order they arrive in; a
// message held already is not added again.
func TestMergeMessages(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	msg := func(id string, sec int) MissionMessage {
		return MissionMessage{ID: id, Text: id, WrittenAt: At(t0.Add(time.Duration(sec) * time.Second))}
	}
	site := &Mission{Messages: []MissionMessage{msg("a", 1), msg("c", 3)}}
	central := &Mission{Messages: []MissionMessage{msg("b", 2), msg("d", 3)}}
	siteAdded := MergeMessages(site, central.Messages)
	centralAdded := MergeMessages(central, []MissionMessage{msg("c", 3), msg("a", 1)})
	texts := func(ms []MissionMessage) string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return strings.Join(out, ",")
	}
	if texts(site.Messages) != "a,b,c,d" || texts(central.Messages) != "a,b,c,d" {
		t.Fatalf("merged: site %s, central %s; want a,b,c,d on both", texts(site.Messages), texts(central.Messages))
	}
	if texts(siteAdded) != "b,d" || texts(centralAdded) != "c,a" {
		t.Fatalf("added: site %s, central %s", texts(siteAdded), texts(centralAdded))
	}
	if again := MergeMessages(site, central.Messages); len(again) != 0 || len(site.Messages) != 4 {
		t.Fatalf("a second merge added %v", again)
	}
}

// TestSiteZoneConflict: a site's device refuses a code one of its own zones holds, with an
// error naming the site and the zone; another code, or a device without zones, passes.
func TestSiteZoneConflict(t *testing.T) {
	node := "node-1"
	d := &Device{ID: "dev-1", Name: "Lyon site", HardwareID: &node,
		SiteZones: map[string]SiteZone{SiteZoneKey("NORTH"): {ID: "zone-1", Code: "NORTH", Name: "North (site)"}}}
	if a, b := SiteZoneKey("NORTH"), SiteZoneKey("NORTH"); a != b || a == SiteZoneKey("north") {
		t.Fatal("SiteZoneKey is not a function of the code alone")
	}
	err := SiteZoneConflict(d, "NORTH")
	if !IsKind(err, KindConflict) || !strings.Contains(err.Error(), "Lyon site") || !strings.Contains(err.Error(), "zone-1") ||
		!strings.Contains(err.Error(), "dev-1") {
		t.Fatalf("SiteZoneConflict = %v", err)
	}
	if err := SiteZoneConflict(d, "SOUTH"); err != nil {
		t.Fatalf("another code: %v", err)
	}
	if err := SiteZoneConflict(&Device{ID: "dev-2"}, "NORTH"); err != nil {
		t.Fatalf("a device without zones: %v", err)
	}
}
