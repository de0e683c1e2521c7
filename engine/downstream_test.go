package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestDownstream_SnapshotAndRetention: the central side of the downstream log. A new site
// asks for a snapshot and gets every record routed to it (measured for 200 zones, 1,000
// teams and 2,000 users); a site that already applied one follows the log, an empty log
// included (no snapshot per pull); a cursor older than the log keeps gets one snapshot,
// and the next pull after its cursor is a normal one; a zone routed to another site comes
// down as null.
func TestDownstream_SnapshotAndRetention(t *testing.T) {
	f := newUpstreamFix(t)
	f.db, f.e = reopen(t, f.dir, f.db, engine.Options{Clock: f.clock, Sender: f.sender,
		Upstream: model.UpstreamOptions{DownKeep: 5}})
	ctx := context.Background()
	other := f.register(t, f.key, model.DeviceInput{Name: "another site", Platform: engine.PlatformNode, HardwareID: "node-other"})
	pull := func(after int64, snapshot bool) *model.DownPull {
		t.Helper()
		ans, err := f.e.PullDownstream(ctx, f.key, model.DownPullInput{DeviceID: f.node.ID, After: after, Snapshot: snapshot})
		if err != nil {
			t.Fatal(err)
		}
		return ans
	}
	// The fixture's user, zone, team and dispatch settings are the log's first four changes.
	if ans := pull(0, false); ans.Snapshot || ans.Through != 4 || len(ans.Changes) != 4 || ans.Changes[3].Kind != model.DownSettings {
		t.Fatalf("a synced site from the start of the log: %+v", ans)
	}
	if ans := pull(4, false); ans.Snapshot || ans.Through != 4 || len(ans.Changes) != 0 {
		t.Fatalf("a synced site at the end of the log: %+v", ans)
	}

	// A tenant of 200 zones, 1,000 teams and 2,000 users (one password hash for all).
	hash := ""
	mustDo(t, func() error {
		return f.e.Update(ctx, func(tx model.Tx) error {
			now := model.At(f.clock.Now())
			for i := range 200 {
				if err := tx.PutZone(f.tenant.ID, &model.Zone{ID: model.NewID(), Code: fmt.Sprintf("Z%03d", i), Name: "Zone",
					Boundary: *polygon(square(4, 45, 1)), Centroid: model.LatLng{Lat: 45, Lng: 4}, CreatedAt: now, UpdatedAt: now}); err != nil {
					return err
				}
			}
			for i := range 1000 {
				if err := tx.PutTeam(f.tenant.ID, &model.Team{ID: model.NewID(), Name: fmt.Sprintf("Team %d", i), Status: engine.TeamAvailable,
					Verticals: []string{"emergency"}, Equipment: []string{"radio"}, Members: []model.Member{{ID: model.NewID(), Name: "Lead",
						Phone: "+33600000001"}, {ID: model.NewID(), Name: "Second", Phone: "+33600000002"}}, CreatedAt: now, UpdatedAt: now}); err != nil {
					return err
				}
			}
			a, err := tx.UserAccountByEmail("op@central.example")
			if err != nil {
				return err
			}
			hash = a.PasswordHash
			for i := range 2000 {
				if err := tx.PutUserAccount(&model.UserAccount{User: model.User{ID: model.NewID(), TenantID: f.tenant.ID,
					Email: fmt.Sprintf("user%d@central.example", i), Name: "User", RBACLevel: model.RoleFieldOperator,
					Status: "active", CreatedAt: now, UpdatedAt: now}, PasswordHash: hash, TokenVersion: 1}); err != nil {
					return err
				}
			}
			return nil
		})
	})
	began := time.Now()
	snap := pull(0, true)
	took := time.Since(began)
	raw, _ := json.Marshal(snap)
	kinds := map[string]int{}
	for _, c := range snap.Changes {
		kinds[c.Kind]++
	}
	if !snap.Snapshot || kinds["zone"] != 201 || kinds["team"] != 1001 || kinds["user"] != 2001 || kinds["settings"] != 1 {
		t.Fatalf("snapshot: %v", kinds)
	}
	t.Logf("snapshot of 201 zones, 1,001 teams, 2,001 users: %d bytes (%.1f MiB) read and encoded in %s",
		len(raw), float64(len(raw))/(1<<20), took.Round(time.Millisecond))

	// Ten renames: the log keeps 5.
	for i := range 10 {
		mustDo(t, func() error {
			name := fmt.Sprintf("North %d", i)
			_, err := f.e.UpdateZone(ctx, tenantAdmin(f.tenant.ID), "north", model.ZonePatch{Name: &name}, nil)
			return err
		})
	}
	ans := pull(0, false)
	if !ans.Snapshot || ans.End != 14 || ans.Through != 14 {
		t.Fatalf("a cursor older than the log: snapshot %v, through %d, end %d", ans.Snapshot, ans.Through, ans.End)
	}
	if next := pull(ans.Through, false); next.Snapshot || len(next.Changes) != 0 || next.Through != 14 {
		t.Fatalf("the pull after a snapshot: %+v", next)
	}
	// The next changes come as changes: a zone routed to another site as null for this one.
	mustDo(t, func() error {
		_, err := f.e.UpdateZone(ctx, tenantAdmin(f.tenant.ID), "Z000", model.ZonePatch{SiteID: &other.ID}, nil)
		return err
	})
	next := pull(14, false)
	if next.Snapshot || len(next.Changes) != 1 || next.Through != 15 || next.Changes[0].Key != "Z000" ||
		string(next.Changes[0].Record) != "null" {
		t.Fatalf("a zone routed to another site: %+v", next)
	}
	if snap := pull(0, true); len(snap.Changes) != len(ans.Changes)-1 {
		t.Fatalf("a snapshot holds %d records, want %d (a zone of another site left out)", len(snap.Changes), len(ans.Changes)-1)
	}
}
