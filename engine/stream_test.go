package engine_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestBroker(t *testing.T) {
	t.Run("UnwatchedTenantRecordsNothing", func(t *testing.T) {
		b := engine.NewBroker(4)
		b.Publish("t1", model.Change{Name: "x"})
		s, backlog, head, resumed := b.Subscribe("t1", 0)
		defer s.Close()
		if head != 0 || len(backlog) != 0 || !resumed {
			t.Fatalf("head %d, backlog %d, resumed %v", head, len(backlog), resumed)
		}
	})
	t.Run("OrderAndResume", func(t *testing.T) {
		b := engine.NewBroker(4)
		s, _, _, _ := b.Subscribe("t1", 0)
		for i := range 6 {
			b.Publish("t1", model.Change{Name: fmt.Sprint(i)})
		}
		for want := uint64(1); want <= 6; want++ {
			if c := <-s.C; c.Seq != want {
				t.Fatalf("seq %d, want %d", c.Seq, want)
			}
		}
		s.Close()
		s.Close() // twice is harmless
		// The ring holds 3..6: resuming after 2 brings 3..6; after 1 is too old.
		s2, backlog, head, resumed := b.Subscribe("t1", 2)
		defer s2.Close()
		if !resumed || head != 6 || len(backlog) != 4 || backlog[0].Seq != 3 || backlog[3].Seq != 6 {
			t.Fatalf("resume after 2: resumed %v head %d backlog %v", resumed, head, backlog)
		}
		if _, _, _, resumed := b.Subscribe("t1", 1); resumed {
			t.Fatal("resume after 1 (older than the ring) succeeded")
		}
		if _, _, _, resumed := b.Subscribe("t1", 7); resumed {
			t.Fatal("resume after an id never given succeeded")
		}
		if _, backlog, _, resumed := b.Subscribe("t1", 6); !resumed || len(backlog) != 0 {
			t.Fatalf("resume at the head: %v %v", resumed, backlog)
		}
	})
	t.Run("TenantsApart", func(t *testing.T) {
		b := engine.NewBroker(4)
		s1, _, _, _ := b.Subscribe("t1", 0)
		s2, _, _, _ := b.Subscribe("t2", 0)
		b.Publish("t1", model.Change{Name: "one"})
		if c := <-s1.C; c.Name != "one" {
			t.Fatal(c)
		}
		select {
		case c := <-s2.C:
			t.Fatalf("tenant 2 got %v", c)
		default:
		}
	})
	t.Run("SlowSubscriberDropped", func(t *testing.T) {
		b := engine.NewBroker(0)
		slow, _, _, _ := b.Subscribe("t1", 0)
		fast, _, _, _ := b.Subscribe("t1", 0)
		for i := range 5000 { // never blocks, whatever the slow one does
			b.Publish("t1", model.Change{Name: "x"})
			if c := <-fast.C; c.Seq != uint64(i+1) {
				t.Fatalf("fast subscriber got %d, want %d", c.Seq, i+1)
			}
		}
		n := 0
		for range slow.C {
			n++
		}
		if !slow.Lagged() || n == 0 || n >= 5000 {
			t.Fatalf("slow subscriber: lagged %v after %d changes", slow.Lagged(), n)
		}
		if fast.Lagged() {
			t.Fatal("fast subscriber lagged")
		}
		fast.Close()
		if b.Subscribers("t1") != 0 {
			t.Fatalf("%d subscribers left", b.Subscribers("t1"))
		}
	})
	t.Run("EventIDs", func(t *testing.T) {
		b := engine.NewBroker(0)
		if seq, ok := b.ParseEventID(b.EventID(42)); !ok || seq != 42 {
			t.Fatalf("round trip: %d %v", seq, ok)
		}
		for _, bad := range []string{"", "42", "zz-42", b.Epoch() + "-x", b.Epoch()} {
			if _, ok := b.ParseEventID(bad); ok {
				t.Errorf("%q parsed", bad)
			}
		}
	})
}

// TestStreamViewer: a field operator sees its own team's mission and team changes and no
// other team's, nor team-less mission alerts; a supervisor sees all; a corporate client
// sees no webhook delivery it lacks the permission of.
func TestStreamViewer(t *testing.T) {
	e, _ := MustOpenEngine(t)
	tn := MustCreateTenant(t, e, "acme")
	op := MustCreateUser(t, e, "acme", "op@acme.example", model.RoleFieldOperator)
	var mine, other *model.Team
	mustDo(t, func() (err error) {
		if mine, err = e.CreateTeam(context.Background(), tenantAdmin(tn.Tenant.ID), model.TeamInput{Name: "A", Verticals: []string{"emergency"},
			Members: []model.MemberInput{{Name: "op", UserID: op.ID}}}, nil); err != nil {
			return err
		}
		other, err = e.CreateTeam(context.Background(), tenantAdmin(tn.Tenant.ID), model.TeamInput{Name: "B", Verticals: []string{"emergency"}}, nil)
		return err
	})
	ctx := t.Context()
	viewer := func(role model.Role, userID string) *engine.StreamViewer {
		v, err := e.StreamViewer(ctx, model.Principal{TenantID: tn.Tenant.ID, UserID: userID, Role: role, TenantActive: true})
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	opV, supV, clientV := viewer(model.RoleFieldOperator, op.ID), viewer(model.RoleOperationalSupervisor, "s"),
		viewer(model.RoleCorporateClient, "c")
	for _, c := range []struct {
		change           model.Change
		op, sup, clientS bool
	}{
		{model.Change{Name: "event.created", Perm: model.PermEventsRead}, true, true, true},
		{model.Change{Name: "mission.status_updated", Perm: model.PermMissionsView, TeamID: mine.ID}, true, true, true},
		{model.Change{Name: "mission.status_updated", Perm: model.PermMissionsView, TeamID: other.ID}, false, true, true},
		{model.Change{Name: "dispatch.requires_manual", Perm: model.PermMissionsView}, false, true, true},
		{model.Change{Name: "team.updated", Perm: model.PermTeamsRead, TeamID: mine.ID}, true, true, true},
		{model.Change{Name: "team.updated", Perm: model.PermTeamsRead, TeamID: other.ID}, false, true, true},
		{model.Change{Name: "zone.connectivity", Perm: model.PermZonesRead}, true, true, true},
	} {
		if got := opV.Sees(&c.change); got != c.op {
			t.Errorf("operator sees %s of %s: %v", c.change.Name, c.change.TeamID, got)
		}
		if got := supV.Sees(&c.change); got != c.sup {
			t.Errorf("supervisor sees %s: %v", c.change.Name, got)
		}
		if got := clientV.Sees(&c.change); got != c.clientS {
			t.Errorf("client sees %s: %v", c.change.Name, got)
		}
	}
	if _, err := e.StreamViewer(ctx, model.Principal{TenantID: tn.Tenant.ID, KeyID: "k", Scopes: []string{"zones:read"}}); !model.IsKind(err, model.KindForbidden) {
		t.Fatalf("a key without events:read: %v", err)
	}
}
