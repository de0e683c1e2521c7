package engine_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/smscodec"
)

// codeFix is a tenant with many available teams, a supervisor, and an engine that sends
// SMS (so that dispatch writes the mission SMS).
type codeFix struct {
	e      *engine.Engine
	tenant *model.Tenant
	sup    model.Principal
	teams  []*model.Team
}

func newCodeFix(t *testing.T, teams int) *codeFix {
	t.Helper()
	e, _ := MustOpenEngine(t)
	f := &codeFix{e: e, tenant: MustCreateTenant(t, e, "acme").Tenant}
	u := MustCreateUser(t, e, "acme", "sup@acme.example", model.RoleOperationalSupervisor)
	f.sup = model.Principal{TenantID: f.tenant.ID, Plan: f.tenant.LicenseType, TenantActive: true, UserID: u.ID,
		Role: model.RoleOperationalSupervisor}
	mustDo(t, func() error {
		for i := range teams {
			tm, err := e.CreateTeam(context.Background(), tenantAdmin(f.tenant.ID), model.TeamInput{Name: fmt.Sprintf("T%03d", i),
				Verticals: []string{"emergency"}, Members: []model.MemberInput{{Name: "lead"}}}, nil)
			if err != nil {
				return err
			}
			f.teams = append(f.teams, tm)
		}
		return nil
	})
	return f
}

// dispatch stores an event and dispatches team to it.
func (f *codeFix) dispatch(t *testing.T, team *model.Team) *model.Mission {
	t.Helper()
	var m *model.Mission
	now := model.At(f.e.Clock().Now())
	ev := &model.Event{ID: model.NewID(), Type: "FIRE", Priority: "high", Vertical: "emergency",
		IdempotencyKey: model.NewID(), Status: model.EventDelivered, ChannelSelected: model.ChannelREST,
		ChannelsAttempted: []string{}, Source: engine.SourceAPI, CreatedAt: now, UpdatedAt: now}
	MustUpdate(t, f.e, func(tx model.Tx) error { return tx.PutEvent(f.tenant.ID, ev) })
	d, err := f.e.DispatchTeam(context.Background(), f.sup, model.DispatchInput{EventID: ev.ID, TeamID: team.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	MustUpdate(t, f.e, func(tx model.Tx) (err error) {
		m, err = tx.Mission(f.tenant.ID, d.MissionID)
		return err
	})
	return m
}

// owner returns the mission holding code, or "" when none does.
func (f *codeFix) owner(t *testing.T, code string) string {
	t.Helper()
	var id string
	err := f.e.View(context.Background(), func(tx model.Tx) (err error) {
		id, err = tx.MissionByCode(f.tenant.ID, code)
		if model.IsKind(err, model.KindNotFound) {
			id, err = "", nil
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestMissionCode_DispatchUniqueAndReleased: every dispatched mission gets a well-formed
// code that no other active mission holds and that the index resolves to it; finishing a
// mission (COMPLETED or FAILED) releases its code and only its code.
func TestMissionCode_DispatchUniqueAndReleased(t *testing.T) {
	const n = 120
	f := newCodeFix(t, n)
	active := map[string]string{} // code → mission id
	var missions []*model.Mission
	check := func(t *testing.T) {
		t.Helper()
		for code, id := range active {
			if got := f.owner(t, code); got != id {
				t.Fatalf("code %s resolves to %q, want %s", code, got, id)
			}
		}
	}
	for _, tm := range f.teams {
		m := f.dispatch(t, tm)
		if !smscodec.ValidMissionCode(m.Code) {
			t.Fatalf("mission code %q is not %d characters of %s", m.Code, smscodec.MissionCodeLen, smscodec.MissionCodeAlphabet)
		}
		if other, dup := active[m.Code]; dup {
			t.Fatalf("code %s given to %s while %s is active", m.Code, m.ID, other)
		}
		active[m.Code] = m.ID
		missions = append(missions, m)
	}
	check(t)

	// Finish every other mission, half COMPLETED (through the field path), half FAILED.
	for i, m := range missions {
		if i%2 == 1 {
			continue
		}
		steps := []string{model.MissionFailed}
		if i%4 == 0 {
			steps = []string{model.MissionAck, model.MissionOnRoute, model.MissionOnSite, model.MissionCompleted}
		}
		for _, st := range steps {
			mustDo(t, func() error {
				_, err := f.e.UpdateMissionStatus(context.Background(), f.sup, m.ID, model.MissionStatusInput{Status: st}, engine.MoveSourceAPI, nil, nil)
				return err
			})
			if st == model.MissionAck {
				// A move short of the end keeps the code.
				if got := f.owner(t, m.Code); got != m.ID {
					t.Fatalf("code %s after ACK resolves to %q", m.Code, got)
				}
			}
		}
		if got := f.owner(t, m.Code); got != "" {
			t.Fatalf("code %s of finished mission %s still resolves to %q", m.Code, m.ID, got)
		}
		delete(active, m.Code)
	}
	check(t)

	// The freed teams go out again: new codes are unique among the still active ones.
	for i := 0; i < len(missions); i += 2 {
		m := f.dispatch(t, f.teams[i])
		if other, dup := active[m.Code]; dup {
			t.Fatalf("code %s given to %s while %s is active", m.Code, m.ID, other)
		}
		active[m.Code] = m.ID
	}
	check(t)
}

// smallCodeSource is a random source whose bytes are all below 3: every code is drawn
// from the 3^5 = 243 codes of the characters 2, 3 and 4, so that draws collide often.
type smallCodeSource struct{ r *rand.Rand }

func (s smallCodeSource) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(s.r.IntN(3))
	}
	return len(p), nil
}

// cycleSource repeats the bytes of its codes' indexes in the alphabet, code after code.
type cycleSource struct {
	codes []string
	i     int
}

func (c *cycleSource) Read(p []byte) (int, error) {
	for i := range p {
		code := c.codes[(c.i/smscodec.MissionCodeLen)%len(c.codes)]
		p[i] = byte(indexOf(smscodec.MissionCodeAlphabet, code[c.i%smscodec.MissionCodeLen]))
		c.i++
	}
	return len(p), nil
}

func indexOf(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// TestMissionCode_Property allocates and releases codes at random from a source where
// draws collide all the time: the index always equals the reference map (a code is held by at
// most one mission, released codes are free again), and an allocation fails only when
// the draws found nothing free.
func TestMissionCode_Property(t *testing.T) {
	e, _ := MustOpenEngine(t)
	tenant := MustCreateTenant(t, e, "acme").Tenant
	for seed := uint64(1); seed <= 2; seed++ {
		rng := rand.New(rand.NewPCG(seed, 42))
		src := smallCodeSource{r: rand.New(rand.NewPCG(seed, 7))}
		want := map[string]string{} // code → mission id
		var codes []string
		for op := range 700 {
			if len(codes) > 0 && rng.IntN(3) == 0 { // release one
				i := rng.IntN(len(codes))
				code := codes[i]
				MustUpdate(t, e, func(tx model.Tx) error {
					// A release by another mission leaves the code alone.
					if err := tx.DeleteMissionCode(tenant.ID, code, model.NewID()); err != nil {
						return err
					}
					if id, err := tx.MissionByCode(tenant.ID, code); err != nil || id != want[code] {
						return fmt.Errorf("a stranger's release moved code %s: %q %v", code, id, err)
					}
					return tx.DeleteMissionCode(tenant.ID, code, want[code])
				})
				delete(want, code)
				codes = append(codes[:i], codes[i+1:]...)
				continue
			}
			id := model.NewID()
			var code string
			err := e.Update(context.Background(), func(tx model.Tx) (err error) {
				code, err = engine.AllocateMissionCode(tx, tenant.ID, id, src)
				return err
			})
			if err != nil {
				// 32 draws all taken: only plausible when most of the 243 codes are.
				if len(want) < 120 {
					t.Fatalf("seed %d op %d: allocation failed with %d of 243 codes taken: %v", seed, op, len(want), err)
				}
				continue
			}
			if other, dup := want[code]; dup {
				t.Fatalf("seed %d op %d: code %s given to %s while %s holds it", seed, op, code, id, other)
			}
			want[code] = id
			codes = append(codes, code)
		}
		// The index holds exactly the want.
		err := e.View(context.Background(), func(tx model.Tx) error {
			for _, a := range "234" {
				for _, b := range "234" {
					for _, c := range "234" {
						for _, d := range "234" {
							for _, x := range "234" {
								code := string([]rune{a, b, c, d, x})
								id, err := tx.MissionByCode(tenant.ID, code)
								if model.IsKind(err, model.KindNotFound) {
									id, err = "", nil
								}
								if err != nil {
									return err
								}
								if id != want[code] {
									return fmt.Errorf("code %s: index %q, want %q", code, id, want[code])
								}
							}
						}
					}
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		// Clean up for the next seed.
		MustUpdate(t, e, func(tx model.Tx) error {
			for code, id := range want {
				if err := tx.DeleteMissionCode(tenant.ID, code, id); err != nil {
					return err
				}
			}
			return nil
		})
	}
}

// TestMissionCode_Exhausted: when every draw is taken the allocation fails (internal
// error) instead of sharing a code; a released code is drawn again.
func TestMissionCode_Exhausted(t *testing.T) {
	e, _ := MustOpenEngine(t)
	tenant := MustCreateTenant(t, e, "acme").Tenant
	src := &cycleSource{codes: []string{"22222", "33333"}}
	alloc := func() (string, string, error) {
		id := model.NewID()
		var code string
		err := e.Update(context.Background(), func(tx model.Tx) (err error) {
			code, err = engine.AllocateMissionCode(tx, tenant.ID, id, src)
			return err
		})
		return id, code, err
	}
	id1, c1, err1 := alloc()
	_, c2, err2 := alloc()
	if err1 != nil || err2 != nil || c1 != "22222" || c2 != "33333" {
		t.Fatalf("first two: %s %v, %s %v", c1, err1, c2, err2)
	}
	if _, c3, err := alloc(); !model.IsKind(err, model.KindInternal) {
		t.Fatalf("third allocation with every draw taken: %q %v, want an internal error", c3, err)
	}
	MustUpdate(t, e, func(tx model.Tx) error { return tx.DeleteMissionCode(tenant.ID, c1, id1) })
	if _, c4, err := alloc(); err != nil || c4 != c1 {
		t.Fatalf("after releasing %s: %q %v", c1, c4, err)
	}
}
