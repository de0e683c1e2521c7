package engine_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func createTeam(e *engine.Engine, tenantID string, in model.TeamInput) (*model.Team, error) {
	var out *model.Team
	err := func() (err error) {
		out, err = e.CreateTeam(context.Background(), tenantAdmin(tenantID), in, nil)
		return err
	}()
	return out, err
}

func validTeamInput() model.TeamInput {
	return model.TeamInput{Name: "Alpha", Verticals: []string{"healthcare"}}
}

func TestEngine_CreateTeam(t *testing.T) {
	type fixture struct {
		e     *engine.Engine
		clock *model.FakeClock
		tid   string
		user  *model.User
	}
	setup := func(t *testing.T) fixture {
		e, clock := MustOpenEngine(t)
		ct := MustCreateTenant(t, e, "acme")
		u := MustCreateUser(t, e, "acme", "op@acme.example", model.RoleFieldOperator)
		if _, err := createZone(e, ct.Tenant.ID, validZoneInput()); err != nil {
			t.Fatal(err)
		}
		return fixture{e, clock, ct.Tenant.ID, u}
	}
	t.Run("OK", func(t *testing.T) {
		f := setup(t)
		f.clock.Advance(time.Minute)
		tm, err := createTeam(f.e, f.tid, model.TeamInput{
			Name: " Alpha ", Verticals: []string{"healthcare", "emergency"}, Equipment: []string{"defibrillator"},
			ZoneCode: "PAR-01",
			Members: []model.MemberInput{
				{Name: "Ann", UserID: f.user.ID, Phone: "+33612345678", Lat: ptr(48.85), Lng: ptr(2.35)},
				{Name: "Ben"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		now := f.clock.Now()
		if !model.ValidID(tm.ID) || tm.Name != "Alpha" || tm.Status != engine.TeamAvailable || tm.ZoneCode != "PAR-01" ||
			!tm.CreatedAt.Equal(now) || !tm.UpdatedAt.Equal(now) || len(tm.Members) != 2 {
			t.Fatalf("team = %+v", tm)
		}
		ann, ben := tm.Members[0], tm.Members[1]
		if !model.ValidID(ann.ID) || ann.UserID != f.user.ID || ann.Phone != "+33612345678" ||
			*ann.Lat != 48.85 || *ann.Lng != 2.35 || ann.LocationUpdatedAt == nil || !ann.LocationUpdatedAt.Equal(now) {
			t.Fatalf("member = %+v", ann)
		}
		if ben.Lat != nil || ben.Lng != nil || ben.LocationUpdatedAt != nil || ben.ID == ann.ID {
			t.Fatalf("member without a position = %+v", ben)
		}
		var stored *model.Team
		err = f.e.View(context.Background(), func(tx model.Tx) (err error) {
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
		if _, err := createTeam(e, ct.Tenant.ID, model.TeamInput{Name: "Deep", Verticals: []string{"mining", "gov"}}); err != nil {
			t.Fatalf("an enabled and a standard vertical: %v", err)
		}
	})
	for name, tc := range map[string]struct {
		field  string
		mutate func(*model.TeamInput, fixture)
	}{
		"ErrNameRequired":      {"name", func(in *model.TeamInput, _ fixture) { in.Name = "  " }},
		"ErrNameTooLong":       {"name", func(in *model.TeamInput, _ fixture) { in.Name = strings.Repeat("n", 201) }},
		"ErrVerticalsRequired": {"verticals", func(in *model.TeamInput, _ fixture) { in.Verticals = nil }},
		"ErrVerticalUnknown":   {"verticals", func(in *model.TeamInput, _ fixture) { in.Verticals = []string{"healthcare", "mining"} }},
		"ErrEquipmentEmpty":    {"equipment", func(in *model.TeamInput, _ fixture) { in.Equipment = []string{"rope", ""} }},
		"ErrEquipmentTooLong":  {"equipment", func(in *model.TeamInput, _ fixture) { in.Equipment = []string{strings.Repeat("e", 65)} }},
		"ErrZoneUnknown":       {"zone_code", func(in *model.TeamInput, _ fixture) { in.ZoneCode = "LYO-01" }},
		"ErrMemberName": {"members.name", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann"}, {Name: ""}}
		}},
		"ErrMemberPhone": {"members.phone", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", Phone: "0612345678"}}
		}},
		"ErrMemberPhoneShort": {"members.phone", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", Phone: "+12345"}}
		}},
		"ErrMemberUserIDMalformed": {"members.user_id", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", UserID: "ann"}}
		}},
		"ErrMemberUserIDUnknown": {"members.user_id", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", UserID: model.NewID()}}
		}},
		"ErrMemberLatWithoutLng": {"members.lng", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", Lat: ptr(48.0)}}
		}},
		"ErrMemberLngWithoutLat": {"members.lat", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", Lng: ptr(2.0)}}
		}},
		"ErrMemberOutOfRange": {"members.lat", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", Lat: ptr(91.0), Lng: ptr(2.0)}}
		}},
		"ErrMemberLngOutOfRange": {"members.lng", func(in *model.TeamInput, _ fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", Lat: ptr(45.0), Lng: ptr(-180.5)}}
		}},
		"ErrMemberUserTwice": {"members.user_id", func(in *model.TeamInput, f fixture) {
			in.Members = []model.MemberInput{{Name: "Ann", UserID: f.user.ID}, {Name: "Ann again", UserID: f.user.ID}}
		}},
		"ErrEquipmentTooMany": {"equipment", func(in *model.TeamInput, _ fixture) {
			in.Equipment = nil
			for i := range 51 {
				in.Equipment = append(in.Equipment, fmt.Sprintf("item-%d", i))
			}
		}},
		"ErrEquipmentBlank": {"equipment", func(in *model.TeamInput, _ fixture) { in.Equipment = []string{"  "} }},
	} {
		t.Run(name, func(t *testing.T) {
			f := setup(t)
			in := validTeamInput()
			tc.mutate(&in, f)
			_, err := createTeam(f.e, f.tid, in)
			AssertInvalid(t, err, tc.field)
			var teams []model.Team
			_ = f.e.View(context.Background(), func(tx model.Tx) (err error) {
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
		_, err := createTeam(f.e, other, model.TeamInput{Name: "Alpha", Verticals: []string{"gov"},
			Members: []model.MemberInput{{Name: "Ann", UserID: f.user.ID}}})
		AssertInvalid(t, err, "members.user_id")
	})
	t.Run("ErrOtherTenantsZone", func(t *testing.T) {
		f := setup(t)
		other := MustCreateTenant(t, f.e, "other").Tenant.ID
		_, err := createTeam(f.e, other, model.TeamInput{Name: "Alpha", Verticals: []string{"gov"}, ZoneCode: "PAR-01"})
		AssertInvalid(t, err, "zone_code")
	})
	t.Run("ErrUnknownTenant", func(t *testing.T) {
		f := setup(t)
		_, err := createTeam(f.e, model.NewID(), validTeamInput())
		AssertKind(t, err, model.KindNotFound)
	})
}

func TestEngine_CreateTeamNormalizes(t *testing.T) {
	e, _ := MustOpenEngine(t)
	tid := MustCreateTenant(t, e, "acme").Tenant.ID
	eq := []string{" Rope ", "rope", "LADDER", strings.Repeat("É", 64)}
	for i := range 60 { // 60 names, 47 once lowercased: 50 in all, the limit
		eq = append(eq, fmt.Sprintf("Item-%d", i%47))
	}
	tm, err := createTeam(e, tid, model.TeamInput{Name: "Alpha", Verticals: []string{"gov", "gov", "banking"}, Equipment: eq})
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Equipment) != 50 || tm.Equipment[0] != "rope" || tm.Equipment[1] != "ladder" || tm.Equipment[2] != strings.Repeat("é", 64) {
		t.Fatalf("equipment = %v", tm.Equipment)
	}
	if !slices.Equal(tm.Verticals, []string{"gov", "banking"}) {
		t.Fatalf("verticals = %v", tm.Verticals)
	}
}

// teamFixture is a tenant with a zone, a team whose first member is a field operator
// user, and principals.
type teamFixture struct {
	e                     *engine.Engine
	clock                 *model.FakeClock
	tenant                *model.Tenant
	team                  *model.Team
	admin, super, opP     model.Principal
	operator, otherUser   *model.User
	otherTenant           model.Principal
	operatorMember, other string // member ids
}

func newTeamFixture(t *testing.T) teamFixture {
	t.Helper()
	e, clock := MustOpenEngine(t)
	ct := MustCreateTenant(t, e, "acme")
	op := MustCreateUser(t, e, "acme", "op@acme.example", model.RoleFieldOperator)
	op2 := MustCreateUser(t, e, "acme", "op2@acme.example", model.RoleFieldOperator)
	if _, err := createZone(e, ct.Tenant.ID, validZoneInput()); err != nil {
		t.Fatal(err)
	}
	tm, err := createTeam(e, ct.Tenant.ID, model.TeamInput{Name: "Alpha", Verticals: []string{"healthcare"},
		Members: []model.MemberInput{{Name: "Ann", UserID: op.ID}, {Name: "Ben", UserID: op2.ID}}})
	if err != nil {
		t.Fatal(err)
	}
	other := MustCreateTenant(t, e, "other").Tenant
	user := func(tn *model.Tenant, id string, role model.Role) model.Principal {
		return model.Principal{TenantID: tn.ID, TenantActive: true, UserID: id, Role: role}
	}
	return teamFixture{e: e, clock: clock, tenant: ct.Tenant, team: tm,
		admin:          adminOf(ct.Tenant, model.NewID()),
		super:          user(ct.Tenant, model.NewID(), model.RoleOperationalSupervisor),
		opP:            user(ct.Tenant, op.ID, model.RoleFieldOperator),
		operator:       op,
		otherUser:      op2,
		otherTenant:    adminOf(other, model.NewID()),
		operatorMember: tm.Members[0].ID, other: tm.Members[1].ID}
}

func (f teamFixture) update(fn func() (any, error)) (any, error) {
	return fn()
}

func (f teamFixture) patch(p model.Principal, id string, in model.TeamPatch) (*model.Team, error) {
	v, err := f.update(func() (any, error) { return f.e.UpdateTeam(context.Background(), p, id, in, nil) })
	tm, _ := v.(*model.Team)
	return tm, err
}

func (f teamFixture) stored(t *testing.T) *model.Team {
	t.Helper()
	tm, err := f.e.Team(context.Background(), f.admin, f.team.ID)
	if err != nil {
		t.Fatal(err)
	}
	return tm
}

func (f teamFixture) setStatus(t *testing.T, status string) {
	t.Helper()
	MustUpdate(t, f.e, func(tx model.Tx) error {
		tm, err := tx.Team(f.tenant.ID, f.team.ID)
		if err != nil {
			return err
		}
		tm.Status = status
		return tx.PutTeam(f.tenant.ID, tm)
	})
}

func TestEngine_UpdateTeam(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		f := newTeamFixture(t)
		f.clock.Advance(time.Minute)
		tm, err := f.patch(f.super, f.team.ID, model.TeamPatch{Name: ptr(" Bravo "), Verticals: &[]string{"gov"},
			Equipment: &[]string{"Van", "van"}, ZoneCode: ptr("PAR-01"), Status: ptr(engine.TeamOffDuty)})
		if err != nil {
			t.Fatal(err)
		}
		if tm.Name != "Bravo" || !slices.Equal(tm.Verticals, []string{"gov"}) || !slices.Equal(tm.Equipment, []string{"van"}) ||
			tm.ZoneCode != "PAR-01" || tm.Status != engine.TeamOffDuty || !tm.UpdatedAt.Equal(f.clock.Now()) ||
			!tm.CreatedAt.Equal(f.team.CreatedAt.Time) || len(tm.Members) != 2 {
			t.Fatalf("patched = %+v", tm)
		}
		if got := f.stored(t); got.Name != "Bravo" || got.Status != engine.TeamOffDuty {
			t.Fatalf("stored = %+v", got)
		}
		f.clock.Advance(time.Minute)
		tm, err = f.patch(f.super, f.team.ID, model.TeamPatch{ZoneCode: ptr(""), Status: ptr(engine.TeamAvailable), Equipment: &[]string{}})
		if err != nil || tm.ZoneCode != "" || tm.Status != engine.TeamAvailable || len(tm.Equipment) != 0 || tm.Equipment == nil {
			t.Fatalf("cleared = %+v, %v", tm, err)
		}
	})
	t.Run("NoChangeKeepsUpdatedAt", func(t *testing.T) {
		f := newTeamFixture(t)
		f.clock.Advance(time.Minute)
		tm, err := f.patch(f.super, f.team.ID, model.TeamPatch{Name: ptr("Alpha"), Status: ptr(engine.TeamAvailable)})
		if err != nil || !tm.UpdatedAt.Equal(f.team.UpdatedAt.Time) {
			t.Fatalf("no-op patch = %+v, %v", tm, err)
		}
	})
	for name, tc := range map[string]struct {
		field string
		in    model.TeamPatch
	}{
		"ErrName":          {"name", model.TeamPatch{Name: ptr("")}},
		"ErrNameTooLong":   {"name", model.TeamPatch{Name: ptr(strings.Repeat("n", 201))}},
		"ErrVerticalsNone": {"verticals", model.TeamPatch{Verticals: &[]string{}}},
		"ErrVertical":      {"verticals", model.TeamPatch{Verticals: &[]string{"mining"}}},
		"ErrEquipment":     {"equipment", model.TeamPatch{Equipment: &[]string{""}}},
		"ErrZone":          {"zone_code", model.TeamPatch{ZoneCode: ptr("LYO-01")}},
		"ErrZoneMalformed": {"zone_code", model.TeamPatch{ZoneCode: ptr("a b")}},
		"ErrStatus":        {"status", model.TeamPatch{Status: ptr("busy")}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newTeamFixture(t)
			_, err := f.patch(f.super, f.team.ID, tc.in)
			AssertInvalid(t, err, tc.field)
			if got := f.stored(t); got.Name != "Alpha" || !got.UpdatedAt.Equal(f.team.UpdatedAt.Time) {
				t.Fatalf("a refused patch changed the team: %+v", got)
			}
		})
	}
	t.Run("ErrOnMission", func(t *testing.T) {
		f := newTeamFixture(t)
		_, err := f.patch(f.super, f.team.ID, model.TeamPatch{Status: ptr(engine.TeamOnMission)})
		AssertKind(t, err, model.KindTeamUnavailable)
		f.setStatus(t, engine.TeamOnMission)
		for _, s := range []string{engine.TeamAvailable, engine.TeamOffDuty, engine.TeamOnMission} {
			_, err := f.patch(f.super, f.team.ID, model.TeamPatch{Status: ptr(s)})
			AssertKind(t, err, model.KindTeamUnavailable)
		}
		// Other fields may change during a mission.
		tm, err := f.patch(f.super, f.team.ID, model.TeamPatch{Name: ptr("Alpha 2")})
		if err != nil || tm.Status != engine.TeamOnMission || tm.Name != "Alpha 2" {
			t.Fatalf("rename on mission = %+v, %v", tm, err)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := newTeamFixture(t)
		for _, id := range []string{model.NewID(), "nope"} {
			_, err := f.patch(f.super, id, model.TeamPatch{Name: ptr("x")})
			AssertKind(t, err, model.KindNotFound)
		}
		_, err := f.patch(f.otherTenant, f.team.ID, model.TeamPatch{Name: ptr("x")})
		AssertKind(t, err, model.KindNotFound)
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		f := newTeamFixture(t)
		_, err := f.patch(f.opP, f.team.ID, model.TeamPatch{Name: ptr("x")})
		AssertKind(t, err, model.KindForbidden)
	})
}

func TestEngine_AddTeamMember(t *testing.T) {
	add := func(f teamFixture, p model.Principal, id string, in model.MemberInput) (*model.Team, error) {
		v, err := f.update(func() (any, error) { return f.e.AddTeamMember(context.Background(), p, id, in, nil) })
		tm, _ := v.(*model.Team)
		return tm, err
	}
	t.Run("OK", func(t *testing.T) {
		f := newTeamFixture(t)
		f.clock.Advance(time.Minute)
		tm, err := add(f, f.super, f.team.ID, model.MemberInput{Name: " Cleo ", Phone: "+33600000009", Lat: ptr(48.0), Lng: ptr(2.0)})
		if err != nil {
			t.Fatal(err)
		}
		if len(tm.Members) != 3 || !tm.UpdatedAt.Equal(f.clock.Now()) {
			t.Fatalf("team = %+v", tm)
		}
		c := tm.Members[2]
		if c.Name != "Cleo" || c.Phone != "+33600000009" || *c.Lat != 48 || !c.LocationUpdatedAt.Equal(f.clock.Now()) || !model.ValidID(c.ID) {
			t.Fatalf("member = %+v", c)
		}
		if len(f.stored(t).Members) != 3 {
			t.Fatal("the member was not stored")
		}
	})
	for name, tc := range map[string]struct {
		field string
		in    func(f teamFixture) model.MemberInput
	}{
		"ErrName":       {"name", func(teamFixture) model.MemberInput { return model.MemberInput{} }},
		"ErrPhone":      {"phone", func(teamFixture) model.MemberInput { return model.MemberInput{Name: "C", Phone: "12"} }},
		"ErrUserID":     {"user_id", func(teamFixture) model.MemberInput { return model.MemberInput{Name: "C", UserID: model.NewID()} }},
		"ErrUserTwice":  {"user_id", func(f teamFixture) model.MemberInput { return model.MemberInput{Name: "C", UserID: f.operator.ID} }},
		"ErrLatMissing": {"lat", func(teamFixture) model.MemberInput { return model.MemberInput{Name: "C", Lng: ptr(1.0)} }},
		"ErrLngMissing": {"lng", func(teamFixture) model.MemberInput { return model.MemberInput{Name: "C", Lat: ptr(1.0)} }},
		"ErrLatRange": {"lat", func(teamFixture) model.MemberInput {
			return model.MemberInput{Name: "C", Lat: ptr(-90.1), Lng: ptr(1.0)}
		}},
		"ErrLngRange": {"lng", func(teamFixture) model.MemberInput {
			return model.MemberInput{Name: "C", Lat: ptr(1.0), Lng: ptr(181.0)}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newTeamFixture(t)
			_, err := add(f, f.super, f.team.ID, tc.in(f))
			AssertInvalid(t, err, tc.field)
			if len(f.stored(t).Members) != 2 {
				t.Fatal("a refused member was stored")
			}
		})
	}
	t.Run("ErrNotFoundAndForbidden", func(t *testing.T) {
		f := newTeamFixture(t)
		_, err := add(f, f.otherTenant, f.team.ID, model.MemberInput{Name: "C"})
		AssertKind(t, err, model.KindNotFound)
		_, err = add(f, f.super, model.NewID(), model.MemberInput{Name: "C"})
		AssertKind(t, err, model.KindNotFound)
		_, err = add(f, f.opP, f.team.ID, model.MemberInput{Name: "C"})
		AssertKind(t, err, model.KindForbidden)
	})
}

func TestEngine_UpdateMemberLocation(t *testing.T) {
	move := func(f teamFixture, p model.Principal, teamID, memberID string, in model.LocationInput) (*model.Member, error) {
		v, err := f.update(func() (any, error) {
			return f.e.UpdateMemberLocation(context.Background(), p, teamID, memberID, in, nil)
		})
		m, _ := v.(*model.Member)
		return m, err
	}
	at := func(t time.Time) *string { s := t.Format(time.RFC3339Nano); return &s }
	t.Run("OwnMember", func(t *testing.T) {
		f := newTeamFixture(t)
		f.clock.Advance(time.Minute)
		m, err := move(f, f.opP, f.team.ID, f.operatorMember, model.LocationInput{Lat: ptr(45.76), Lng: ptr(4.84)})
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != f.operatorMember || *m.Lat != 45.76 || *m.Lng != 4.84 || !m.LocationUpdatedAt.Equal(f.clock.Now()) {
			t.Fatalf("member = %+v", m)
		}
		got := f.stored(t)
		if *got.Members[0].Lat != 45.76 || !got.UpdatedAt.Equal(f.team.UpdatedAt.Time) {
			t.Fatalf("stored = %+v (a position leaves the team's updated_at alone)", got)
		}
	})
	t.Run("RecordedAt", func(t *testing.T) {
		f := newTeamFixture(t)
		now := f.clock.Now()
		m, err := move(f, f.super, f.team.ID, f.other, model.LocationInput{Lat: ptr(1.0), Lng: ptr(2.0), RecordedAt: at(now.Add(-time.Hour))})
		if err != nil || !m.LocationUpdatedAt.Equal(now.Add(-time.Hour)) {
			t.Fatalf("member = %+v, %v", m, err)
		}
		// Within the 2-minute lead, in another offset.
		lead := now.Add(2 * time.Minute).In(time.FixedZone("x", 3600))
		m, err = move(f, f.super, f.team.ID, f.other, model.LocationInput{Lat: ptr(3.0), Lng: ptr(4.0), RecordedAt: at(lead)})
		if err != nil || *m.Lat != 3 || !m.LocationUpdatedAt.Equal(lead) {
			t.Fatalf("member = %+v, %v", m, err)
		}
		// An older position is ignored: the answer is the member as it is.
		m, err = move(f, f.super, f.team.ID, f.other, model.LocationInput{Lat: ptr(5.0), Lng: ptr(6.0), RecordedAt: at(now)})
		if err != nil || *m.Lat != 3 || *m.Lng != 4 || !m.LocationUpdatedAt.Equal(lead) {
			t.Fatalf("older position: %+v, %v", m, err)
		}
		if got := f.stored(t).Members[1]; *got.Lat != 3 {
			t.Fatalf("stored = %+v", got)
		}
	})
	t.Run("ManageAnyMember", func(t *testing.T) {
		f := newTeamFixture(t)
		for _, p := range []model.Principal{f.admin, f.super} {
			if _, err := move(f, p, f.team.ID, f.other, model.LocationInput{Lat: ptr(1.0), Lng: ptr(2.0)}); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("ErrForbidden", func(t *testing.T) {
		f := newTeamFixture(t)
		_, err := move(f, f.opP, f.team.ID, f.other, model.LocationInput{Lat: ptr(1.0), Lng: ptr(2.0)})
		AssertKind(t, err, model.KindForbidden)
		client := model.Principal{TenantID: f.tenant.ID, TenantActive: true, UserID: f.operator.ID, Role: model.RoleCorporateClient}
		_, err = move(f, client, f.team.ID, f.operatorMember, model.LocationInput{Lat: ptr(1.0), Lng: ptr(2.0)})
		AssertKind(t, err, model.KindForbidden)
		// A key with location:self is no user: it owns no member record, even one without a user.
		key := model.Principal{TenantID: f.tenant.ID, TenantActive: true, KeyID: model.NewID(), Scopes: []string{model.PermLocationSelf}}
		v, err := f.update(func() (any, error) {
			return f.e.AddTeamMember(context.Background(), f.super, f.team.ID, model.MemberInput{Name: "No user"}, nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		noUser := v.(*model.Team).Members[2].ID
		_, err = move(f, key, f.team.ID, noUser, model.LocationInput{Lat: ptr(1.0), Lng: ptr(2.0)})
		AssertKind(t, err, model.KindForbidden)
		if m := f.stored(t).Members[1]; m.Lat != nil {
			t.Fatalf("a refused update moved the member: %+v", m)
		}
	})
	t.Run("ErrNotFound", func(t *testing.T) {
		f := newTeamFixture(t)
		in := model.LocationInput{Lat: ptr(1.0), Lng: ptr(2.0)}
		for _, c := range [][2]string{{f.team.ID, model.NewID()}, {f.team.ID, "x"}, {model.NewID(), f.operatorMember}, {"x", f.operatorMember}} {
			_, err := move(f, f.super, c[0], c[1], in)
			AssertKind(t, err, model.KindNotFound)
		}
		_, err := move(f, f.otherTenant, f.team.ID, f.operatorMember, in)
		AssertKind(t, err, model.KindNotFound)
	})
	for name, tc := range map[string]struct {
		field string
		in    func(now time.Time) model.LocationInput
	}{
		"ErrLatRequired": {"lat", func(time.Time) model.LocationInput { return model.LocationInput{Lng: ptr(2.0)} }},
		"ErrLngRequired": {"lng", func(time.Time) model.LocationInput { return model.LocationInput{Lat: ptr(2.0)} }},
		"ErrLatRange":    {"lat", func(time.Time) model.LocationInput { return model.LocationInput{Lat: ptr(90.5), Lng: ptr(2.0)} }},
		"ErrLngRange":    {"lng", func(time.Time) model.LocationInput { return model.LocationInput{Lat: ptr(2.0), Lng: ptr(-181.0)} }},
		"ErrRecordedAtFormat": {"recorded_at", func(time.Time) model.LocationInput {
			return model.LocationInput{Lat: ptr(1.0), Lng: ptr(2.0), RecordedAt: ptr("yesterday")}
		}},
		"ErrRecordedAtFuture": {"recorded_at", func(now time.Time) model.LocationInput {
			return model.LocationInput{Lat: ptr(1.0), Lng: ptr(2.0), RecordedAt: at(now.Add(2*time.Minute + time.Second))}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newTeamFixture(t)
			_, err := move(f, f.opP, f.team.ID, f.operatorMember, tc.in(f.clock.Now()))
			AssertInvalid(t, err, tc.field)
		})
	}
}

func TestEngine_Teams(t *testing.T) {
	f := newTeamFixture(t)
	for _, in := range []model.TeamInput{
		{Name: "Charlie", Verticals: []string{"gov"}, ZoneCode: "PAR-01"},
		{Name: "Bravo", Verticals: []string{"healthcare", "gov"}},
		{Name: "Delta", Verticals: []string{"banking"}, ZoneCode: "PAR-01"},
	} {
		if _, err := createTeam(f.e, f.tenant.ID, in); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.patch(f.super, f.team.ID, model.TeamPatch{Status: ptr(engine.TeamOffDuty)}); err != nil {
		t.Fatal(err)
	}
	reader := model.Principal{TenantID: f.tenant.ID, TenantActive: true, UserID: model.NewID(), Role: model.RoleCorporateClient}
	list := func(flt model.TeamFilter, page model.Page) ([]string, string) {
		t.Helper()
		teams, next, err := f.e.Teams(context.Background(), reader, flt, page)
		if err != nil {
			t.Fatal(err)
		}
		out := []string{}
		for _, tm := range teams {
			out = append(out, tm.Name)
		}
		return out, next
	}
	for _, c := range []struct {
		f    model.TeamFilter
		want []string
	}{
		// Newest first: Alpha (the fixture's), then Charlie, Bravo and Delta were created.
		{model.TeamFilter{}, []string{"Delta", "Bravo", "Charlie", "Alpha"}},
		{model.TeamFilter{Status: engine.TeamAvailable}, []string{"Delta", "Bravo", "Charlie"}},
		{model.TeamFilter{Status: engine.TeamOffDuty}, []string{"Alpha"}},
		{model.TeamFilter{ZoneCode: "PAR-01"}, []string{"Delta", "Charlie"}},
		{model.TeamFilter{Vertical: "gov"}, []string{"Bravo", "Charlie"}},
		{model.TeamFilter{Vertical: "gov", ZoneCode: "PAR-01"}, []string{"Charlie"}},
		{model.TeamFilter{Status: engine.TeamOnMission}, []string{}},
	} {
		if got, next := list(c.f, model.Page{}); !slices.Equal(got, c.want) || next != "" {
			t.Errorf("filter %+v: %v (next %q), want %v", c.f, got, next, c.want)
		}
	}
	p1, next := list(model.TeamFilter{}, model.Page{Limit: 3})
	if !slices.Equal(p1, []string{"Delta", "Bravo", "Charlie"}) || next == "" {
		t.Fatalf("page 1: %v %q", p1, next)
	}
	p2, next2 := list(model.TeamFilter{}, model.Page{Limit: 3, Cursor: next})
	if !slices.Equal(p2, []string{"Alpha"}) || next2 != "" {
		t.Fatalf("page 2: %v %q", p2, next2)
	}
	if _, _, err := f.e.Teams(context.Background(), reader, model.TeamFilter{Status: "busy"}, model.Page{}); err != nil {
		AssertInvalid(t, err, "status")
	} else {
		t.Fatal("an unknown status filter was accepted")
	}
	_, _, err := f.e.Teams(context.Background(), reader, model.TeamFilter{}, model.Page{Cursor: "!!"})
	AssertInvalid(t, err, "cursor")
	_, _, err = f.e.Teams(context.Background(), f.opP, model.TeamFilter{}, model.Page{})
	AssertKind(t, err, model.KindForbidden)
	other, _, err := f.e.Teams(context.Background(), f.otherTenant, model.TeamFilter{}, model.Page{})
	if err != nil || len(other) != 0 {
		t.Fatalf("other tenant's teams: %v, %v", other, err)
	}
	if _, err := f.e.Team(context.Background(), f.otherTenant, f.team.ID); err == nil {
		t.Fatal("another tenant read the team")
	} else {
		AssertKind(t, err, model.KindNotFound)
	}
	_, err = f.e.Team(context.Background(), f.opP, f.team.ID)
	AssertKind(t, err, model.KindForbidden)
}

func TestTeam_CloneSharesNothing(t *testing.T) {
	lat, lng := 45.1, 4.2
	at := model.At(epoch)
	orig := model.Team{ID: "t", Verticals: []string{"emergency"}, Equipment: []string{"axe"},
		Members: []model.Member{{ID: "a", Lat: &lat, Lng: &lng, LocationUpdatedAt: &at}, {ID: "b"}}}
	c := orig.Clone()
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("clone %+v differs from %+v", c, orig)
	}
	*c.Members[0].Lat, *c.Members[0].Lng = 1, 2
	*c.Members[0].LocationUpdatedAt = model.At(epoch.Add(time.Hour))
	c.Members[1].Name, c.Verticals[0], c.Equipment[0] = "changed", "x", "y"
	if lat != 45.1 || lng != 4.2 || !at.Equal(epoch) || orig.Members[1].Name != "" ||
		orig.Verticals[0] != "emergency" || orig.Equipment[0] != "axe" {
		t.Fatalf("changing the clone changed the original: %+v", orig)
	}
}
