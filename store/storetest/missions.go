package storetest

import (
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// newMission returns a mission of an event and a team dispatched at t.
func newMission(eventID, teamID, status string, t time.Time) *model.Mission {
	now := model.At(t)
	return &model.Mission{ID: model.NewIDAt(t), EventID: eventID, TeamID: teamID, Status: status,
		Vertical: "emergency", Priority: "high", DispatchedAt: now, DispatchID: model.NewID(), DispatchedBy: model.NilID,
		History:   []model.MissionMove{{To: model.MissionCreated, At: now, Actor: model.NilID, Source: "system"}},
		CreatedAt: now, UpdatedAt: now}
}

func missionID(m model.Mission) string { return m.ID }

func missionIDs(ms ...*model.Mission) string {
	return ids(ms, func(m *model.Mission) string { return m.ID })
}

func testMissions(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	ev1, ev2 := model.NewID(), model.NewID()
	team1, team2 := model.NewID(), model.NewID()
	origin := model.NewID()
	m1 := newMission(ev1, team1, model.MissionCreated, at(0))
	m2 := newMission(ev1, team2, model.MissionAck, at(1))
	m3 := newMission(ev2, team1, model.MissionCompleted, at(2))
	m3.Origin = &origin
	m4 := newMission(ev2, team2, model.MissionCreated, at(3))
	elsewhere := newMission(ev1, team1, model.MissionCreated, at(4))
	f.update(func(tx model.Tx) error {
		// Stored out of order: the lists follow the missions' age, not the order of writing.
		for _, m := range []*model.Mission{m2, m1, m4, m3} {
			if err := tx.PutMission(a.ID, m); err != nil {
				return err
			}
		}
		return tx.PutMission(b.ID, elsewhere)
	})
	// A changed mission is stored again: it is listed once, as changed.
	m1.Status = model.MissionSent
	m1.Code = "K7Q"
	f.update(func(tx model.Tx) error { return tx.PutMission(a.ID, m1) })

	t.Run("Get", func(t *testing.T) {
		f.view(func(tx model.Tx) error {
			got, err := tx.Mission(a.ID, m1.ID)
			if err != nil || got.Status != model.MissionSent || got.EventID != ev1 || got.TeamID != team1 ||
				got.Code != "K7Q" || len(got.History) != 1 || !got.DispatchedAt.Equal(at(0)) {
				t.Fatalf("Mission = %+v, %v", got, err)
			}
			for _, c := range [][2]string{{b.ID, m1.ID}, {a.ID, model.NewID()}, {a.ID, "not-an-id"}, {model.NewID(), m1.ID}} {
				_, err := tx.Mission(c[0], c[1])
				assertKind(t, err, model.KindNotFound)
			}
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error {
			return tx.PutMission(model.NewID(), newMission(ev1, team1, model.MissionCreated, at(9)))
		})
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("MissionsOfEvent", func(t *testing.T) {
		f.view(func(tx model.Tx) error {
			got, err := tx.MissionsOfEvent(a.ID, ev1)
			if err != nil || ids(got, missionID) != missionIDs(m1, m2) || got[0].Status != model.MissionSent {
				t.Fatalf("MissionsOfEvent(ev1) = %s, %v; want %s (oldest first)", ids(got, missionID), err, missionIDs(m1, m2))
			}
			if got, err := tx.MissionsOfEvent(a.ID, ev2); err != nil || ids(got, missionID) != missionIDs(m3, m4) {
				t.Fatalf("MissionsOfEvent(ev2) = %s, %v", ids(got, missionID), err)
			}
			if got, err := tx.MissionsOfEvent(b.ID, ev1); err != nil || ids(got, missionID) != missionIDs(elsewhere) {
				t.Fatalf("other tenant's MissionsOfEvent = %s, %v", ids(got, missionID), err)
			}
			for _, unknown := range []string{model.NewID(), "bad"} {
				if got, err := tx.MissionsOfEvent(a.ID, unknown); err != nil || len(got) != 0 {
					t.Fatalf("unknown event %q: %s, %v", unknown, ids(got, missionID), err)
				}
			}
			_, err = tx.MissionsOfEvent(model.NewID(), ev1)
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("Filters", func(t *testing.T) {
		all := model.Page{Limit: 50}
		f.view(func(tx model.Tx) error {
			for _, tc := range []struct {
				name string
				f    model.MissionFilter
				want string
			}{
				{"all, newest first", model.MissionFilter{}, missionIDs(m4, m3, m2, m1)},
				{"status", model.MissionFilter{Status: model.MissionCreated}, missionIDs(m4)},
				{"event", model.MissionFilter{EventID: ev1}, missionIDs(m2, m1)},
				{"one team", model.MissionFilter{TeamIDs: []string{team1}}, missionIDs(m3, m1)},
				{"two teams", model.MissionFilter{TeamIDs: []string{team1, team2}}, missionIDs(m4, m3, m2, m1)},
				{"no team", model.MissionFilter{TeamIDs: []string{}}, ""},
				{"unknown team", model.MissionFilter{TeamIDs: []string{model.NewID()}}, ""},
				{"malformed team", model.MissionFilter{TeamIDs: []string{"bad"}}, ""},
				{"origin", model.MissionFilter{Origin: origin}, missionIDs(m3)},
				{"team and event", model.MissionFilter{TeamIDs: []string{team2}, EventID: ev2}, missionIDs(m4)},
				{"team and status", model.MissionFilter{TeamIDs: []string{team1}, Status: model.MissionSent}, missionIDs(m1)},
			} {
				got, next, err := tx.Missions(a.ID, tc.f, all)
				if err != nil || ids(got, missionID) != tc.want || next != "" {
					t.Errorf("%s: %s (next %q), %v; want %s", tc.name, ids(got, missionID), next, err, tc.want)
				}
			}
			if got, _, err := tx.Missions(b.ID, model.MissionFilter{}, all); err != nil || ids(got, missionID) != missionIDs(elsewhere) {
				t.Fatalf("other tenant: %s, %v", ids(got, missionID), err)
			}
			_, _, err := tx.Missions(model.NewID(), model.MissionFilter{}, all)
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("Pages", func(t *testing.T) {
		list := func(mf model.MissionFilter) func(tx model.Tx, p model.Page) ([]model.Mission, string, error) {
			return func(tx model.Tx, p model.Page) ([]model.Mission, string, error) { return tx.Missions(a.ID, mf, p) }
		}
		got, sizes := walk(t, f, model.Page{Limit: 3}, 5, list(model.MissionFilter{}))
		if ids(got, missionID) != missionIDs(m4, m3, m2, m1) || sizesOf(sizes) != "[3 1]" {
			t.Fatalf("pages: %s in %v", ids(got, missionID), sizes)
		}
		// A filtered walk pages over the matching missions only.
		for _, mf := range []model.MissionFilter{{TeamIDs: []string{team1}}, {Status: model.MissionSent, TeamIDs: []string{team1, model.NewID()}}} {
			got, sizes = walk(t, f, model.Page{Limit: 1}, 5, list(mf))
			want := missionIDs(m3, m1)
			if mf.Status != "" {
				want = missionIDs(m1)
			}
			if ids(got, missionID) != want || len(sizes) != len(got) {
				t.Fatalf("filter %+v in pages of 1: %s in %v; want %s", mf, ids(got, missionID), sizes, want)
			}
		}
		f.view(func(tx model.Tx) error {
			for _, mf := range []model.MissionFilter{{}, {TeamIDs: []string{team1}}} {
				_, _, err := tx.Missions(a.ID, mf, model.Page{Limit: 3, Cursor: "!!!"})
				assertKind(t, err, model.KindValidation)
			}
			return nil
		})
	})
	t.Run("Dispatch", func(t *testing.T) {
		d := &model.Dispatch{ID: m1.DispatchID, TenantID: a.ID, EventID: ev1, TeamID: team1, DispatchedBy: model.NilID,
			DispatchedAt: model.At(at(0)), Notes: "go", MissionID: m1.ID, Origin: &origin}
		f.update(func(tx model.Tx) error { return tx.PutDispatch(a.ID, d) })
		f.view(func(tx model.Tx) error {
			got, err := tx.Dispatch(a.ID, d.ID)
			if err != nil || got.EventID != ev1 || got.TeamID != team1 || got.MissionID != m1.ID || got.Notes != "go" ||
				got.Origin == nil || *got.Origin != origin || !got.DispatchedAt.Equal(at(0)) {
				t.Fatalf("Dispatch = %+v, %v", got, err)
			}
			for _, c := range [][2]string{{b.ID, d.ID}, {a.ID, model.NewID()}, {a.ID, "bad"}, {model.NewID(), d.ID}} {
				_, err := tx.Dispatch(c[0], c[1])
				assertKind(t, err, model.KindNotFound)
			}
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error { return tx.PutDispatch(model.NewID(), d) })
		assertKind(t, err, model.KindNotFound)
	})
}
