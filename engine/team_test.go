package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
)

func createTeam(e *engine.Engine, tenantID string, in engine.TeamInput) (*engine.Team, error) {
	var out *engine.Team
	err := e.Update(context.Background(), func(tx engine.Tx) (err error) {
		out, err = e.CreateTeam(tx, tenantID, in)
		return err
	})
	return out, err
}

func validTeamInput() engine.TeamInput {
	return engine.TeamInput{Name: "Alpha", Verticals: []string{"healthcare"}}
}

func TestEngine_CreateTeam(t *testing.T) {
	type fixture struct {
		e     *engine.Engine
		clock *engine.FakeClock
		tid   string
		user  *engine.User
	}
	setup := func(t *testing.T) fixture {
		e, clock := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		u := MustCreateUser(t, e, "acme", "op@acme.example", engine.RoleFieldOperator)
		if _, err := createZone(e, ct.Tenant.ID, validZoneInput()); err != nil {
			t.Fatal(err)
		}
		return fixture{e, clock, ct.Tenant.ID, u}
	}
	t.Run("OK", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Minute)
		tm, err := createTeam(f.e, f.tid, engine.TeamInput{
			Name: " Alpha ", Verticals: []string{"healthcare", "emergency"}, Equipment: []string{"defibrillator"},
			ZoneCode: "PAR-01",
			Members: []engine.MemberInput{
				{Name: "Ann", UserID: f.user.ID, Phone: "+33612345678", Lat: ptr(48.85), Lng: ptr(2.35)},
				{Name: "Ben"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		now := f.clock.Now()
		if !engine.ValidID(tm.ID) || tm.Name != "Alpha" || tm.Status != engine.TeamAvailable || tm.ZoneCode != "PAR-01" ||
			!tm.CreatedAt.Equal(now) || !tm.UpdatedAt.Equal(now) || len(tm.Members) != 2 {
			t.Fatalf("team = %+v", tm)
		}
		ann, ben := tm.Members[0], tm.Members[1]
		if !engine.ValidID(ann.ID) || ann.UserID != f.user.ID || ann.Phone != "+33612345678" ||
			*ann.Lat != 48.85 || *ann.Lng != 2.35 || ann.LocationUpdatedAt == nil || !ann.LocationUpdatedAt.Equal(now) {
			t.Fatalf("member = %+v", ann)
		}
		if ben.Lat != nil || ben.Lng != nil || ben.LocationUpdatedAt != nil || ben.ID == ann.ID {
			t.Fatalf("member without a position = %+v", ben)
		}
		var stored *engine.Team
		err = f.e.View(context.Background(), func(tx engine.Tx) (err error) {
			stored, err = tx.Team(f.tid, tm.ID)
			return err
		})
		if err != nil || stored.Name != "Alpha" || len(stored.Members) != 2 {
			t.Fatalf("stored team = %+v, %v", stored, err)
		}
	})
	t.Run("EmptyListsNotNull", func(t *testing.T) {
		f := setup(t)
		tm, err := createTeam(f.e, f.tid, validTeamInput())
		if err != nil {
			t.Fatal(err)
		}
		if tm.Equipment == nil || tm.Members == nil {
			t.Fatalf("equipment %v, members %v: want empty lists, not null", tm.Equipment, tm.Members)
		}
	})
	t.Run("TenantVertical", func(t *testing.T) {
		e, _ := MustOpenEngine(t)
		in := validTenantInput()
		in.Verticals = []string{"mining"}
		ct, err := createTenant(e, in)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := createTeam(e, ct.Tenant.ID, engine.TeamInput{Name: "Deep", Verticals: []string{"mining", "gov"}}); err != nil {
			t.Fatalf("an enabled and a standard vertical: %v", err)
		}
	})
	for name, tc := range map[string]struct {
		field  string
		mutate func(*engine.TeamInput, fixture)
	}{
		"ErrNameRequired":      {"name", func(in *engine.TeamInput, _ fixture) { in.Name = "  " }},
		"ErrNameTooLong":       {"name", func(in *engine.TeamInput, _ fixture) { in.Name = strings.Repeat("n", 201) }},
		"ErrVerticalsRequired": {"verticals", func(in *engine.TeamInput, _ fixture) { in.Verticals = nil }},
		"ErrVerticalUnknown":   {"verticals", func(in *engine.TeamInput, _ fixture) { in.Verticals = []string{"healthcare", "mining"} }},
		"ErrEquipmentEmpty":    {"equipment", func(in *engine.TeamInput, _ fixture) { in.Equipment = []string{"rope", ""} }},
		"ErrEquipmentTooLong":  {"equipment", func(in *engine.TeamInput, _ fixture) { in.Equipment = []string{strings.Repeat("e", 65)} }},
		"ErrZoneUnknown":       {"zone_code", func(in *engine.TeamInput, _ fixture) { in.ZoneCode = "LYO-01" }},
		"ErrMemberName": {"members.name", func(in *engine.TeamInput, _ fixture) {
			in.Members = []engine.MemberInput{{Name: "Ann"}, {Name: ""}}
		}},
		"ErrMemberPhone": {"members.phone", func(in *engine.TeamInput, _ fixture) {
			in.Members = []engine.MemberInput{{Name: "Ann", Phone: "0612345678"}}
		}},
		"ErrMemberPhoneShort": {"members.phone", func(in *engine.TeamInput, _ fixture) {
			in.Members = []engine.MemberInput{{Name: "Ann", Phone: "+12345"}}
		}},
		"ErrMemberUserIDMalformed": {"members.user_id", func(in *engine.TeamInput, _ fixture) {
			in.Members = []engine.MemberInput{{Name: "Ann", UserID: "ann"}}
		}},
		"ErrMemberUserIDUnknown": {"members.user_id", func(in *engine.TeamInput, _ fixture) {
			in.Members = []engine.MemberInput{{Name: "Ann", UserID: engine.NewID()}}
		}},
		"ErrMemberLatWithoutLng": {"members.lat", func(in *engine.TeamInput, _ fixture) {
			in.Members = []engine.MemberInput{{Name: "Ann", Lat: ptr(48.0)}}
		}},
		"ErrMemberLngWithoutLat": {"members.lat", func(in *engine.TeamInput, _ fixture) {
			in.Members = []engine.MemberInput{{Name: "Ann", Lng: ptr(2.0)}}
		}},
		"ErrMemberOutOfRange": {"members.lat", func(in *engine.TeamInput, _ fixture) {
			in.Members = []engine.MemberInput{{Name: "Ann", Lat: ptr(91.0), Lng: ptr(2.0)}}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			in := validTeamInput()
			tc.mutate(&in, f)
			_, err := createTeam(f.e, f.tid, in)
			AssertInvalid(t, err, tc.field)
			var teams []engine.Team
			_ = f.e.View(context.Background(), func(tx engine.Tx) (err error) {
				teams, err = tx.Teams(f.tid)
				return err
			})
			if len(teams) != 0 {
				t.Fatalf("a refused team was stored: %+v", teams)
			}
		})
	}
	t.Run("ErrMemberOtherTenantsUser", func(t *testing.T) {
		f := setup(t)
		other := MustCreateTenant(t, f.e, "other").Tenant.ID
		_, err := createTeam(f.e, other, engine.TeamInput{Name: "Alpha", Verticals: []string{"gov"},
			Members: []engine.MemberInput{{Name: "Ann", UserID: f.user.ID}}})
		AssertInvalid(t, err, "members.user_id")
	})
	t.Run("ErrOtherTenantsZone", func(t *testing.T) {
		f := setup(t)
		other := MustCreateTenant(t, f.e, "other").Tenant.ID
		_, err := createTeam(f.e, other, engine.TeamInput{Name: "Alpha", Verticals: []string{"gov"}, ZoneCode: "PAR-01"})
		AssertInvalid(t, err, "zone_code")
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		f := setup(t)
		_, err := createTeam(f.e, engine.NewID(), validTeamInput())
		AssertKind(t, err, engine.KindNotFound)
	})
}
