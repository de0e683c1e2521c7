package store_test

import (
	"strings"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func newMission(eventID, teamID, status string, at time.Time) *model.Mission {
	now := model.At(at)
	return &model.Mission{ID: model.NewIDAt(at), EventID: eventID, TeamID: teamID, Status: status,
		Vertical: "emergency", Priority: "high", DispatchedAt: now, DispatchID: model.NewID(), DispatchedBy: model.NilID,
		History:   []model.MissionMove{{To: model.MissionCreated, At: now, Actor: model.NilID, Source: engine.MoveSourceSystem}},
		CreatedAt: now, UpdatedAt: now}
}

func missionIDs(ms []model.Mission) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.ID)
	}
	return strings.Join(s, ",")
}

func idsOf(ms ...*model.Mission) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.ID)
	}
	return strings.Join(s, ",")
}

func TestTx_Missions(t *testing.T) {
	db := MustOpenDB(t)
	a := MustPutTenant(t, db, "alpha")
	b := MustPutTenant(t, db, "bravo")
	ev1, ev2 := model.NewID(), model.NewID()
	team1, team2 := model.NewID(), model.NewID()
	origin := model.NewID()
	start := time.Date(2026, 6, 9, 10, 0, 0, 0, time.UTC)
	m1 := newMission(ev1, team1, model.MissionCreated, start)
	m2 := newMission(ev1, team2, model.MissionAck, start.Add(time.Second))
	m3 := newMission(ev2, team1, model.MissionCompleted, start.Add(2*time.Second))
	m3.Origin = &origin
	m4 := newMission(ev2, team2, model.MissionCreated, start.Add(3*time.Second))
	elsewhere := newMission(ev1, team1, model.MissionCreated, start.Add(4*time.Second))
	MustUpdate(t, db, func(tx model.Tx) error {
		for _, m := range []*model.Mission{m1, m2, m3, m4} {
			if err := tx.PutMission(a.ID, m); err != nil {
				return err
			}
		}
		return tx.PutMission(b.ID, elsewhere)
	})
	// A changed mission is stored again: its indexes do not grow.
	m1.Status = model.MissionSent
	MustUpdate(t, db, func(tx model.Tx) error { return tx.PutMission(a.ID, m1) })

	t.Run("Get", func(t *testing.T) {
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.Mission(a.ID, m1.ID)
			if err != nil || got.Status != model.MissionSent || got.EventID != ev1 || len(got.History) != 1 {
				t.Fatalf("Mission = %+v, %v", got, err)
			}
			_, err = tx.Mission(b.ID, m1.ID)
			AssertKind(t, err, model.KindNotFound)
			_, err = tx.Mission(a.ID, model.NewID())
			AssertKind(t, err, model.KindNotFound)
			_, err = tx.Mission(a.ID, "not-an-id")
			AssertKind(t, err, model.KindNotFound)
			return nil
		})
	})

	t.Run("MissionsOfEvent", func(t *testing.T) {
		MustView(t, db, func(tx model.Tx) error {
			got, err := tx.MissionsOfEvent(a.ID, ev1)
			if err != nil || missionIDs(got) != idsOf(m1, m2) || got[0].Status != model.MissionSent {
				t.Fatalf("MissionsOfEvent(ev1) = %s, %v; want %s", missionIDs(got), err, idsOf(m1, m2))
			}
			if got, err := tx.MissionsOfEvent(a.ID, ev2); err != nil || missionIDs(got) != idsOf(m3, m4) {
				t.Fatalf("MissionsOfEvent(ev2) = %s, %v", missionIDs(got), err)
			}
			if got, err := tx.MissionsOfEvent(b.ID, ev1); err != nil || missionIDs(got) != idsOf(elsewhere) {
				t.Fatalf("other tenant's MissionsOfEvent = %s, %v", missionIDs(got), err)
			}
			if got, err := tx.MissionsOfEvent(a.ID, model.NewID()); err != nil || len(got) != 0 {
				t.Fatalf("unknown event: %s, %v", missionIDs(got), err)
			}
			return nil
		})
	})

	t.Run("Filters", func(t *testing.T) {
		all := model.Page{Limit: 50}
		MustView(t, db, func(tx model.Tx) error {
			for _, tc := range []struct {
				name string
				f    model.MissionFilter
				want string
			}{
				{"all, newest first", model.MissionFilter{}, idsOf(m4, m3, m2, m1)},
				{"status", model.MissionFilter{Status: model.MissionCreated}, idsOf(m4)},
				{"event", model.MissionFilter{EventID: ev1}, idsOf(m2, m1)},
				{"one team", model.MissionFilter{TeamIDs: []string{team1}}, idsOf(m3, m1)},
				{"two teams", model.MissionFilter{TeamIDs: []string{team1, team2}}, idsOf(m4, m3, m2, m1)},
				{"no team", model.MissionFilter{TeamIDs: []string{}}, ""},
				{"origin", model.MissionFilter{Origin: origin}, idsOf(m3)},
				{"team and event", model.MissionFilter{TeamIDs: []string{team2}, EventID: ev2}, idsOf(m4)},
			} {
				got, next, err := tx.Missions(a.ID, tc.f, all)
				if err != nil || missionIDs(got) != tc.want || next != "" {
					t.Errorf("%s: %s (next %q), %v; want %s", tc.name, missionIDs(got), next, err, tc.want)
				}
			}
			if got, _, err := tx.Missions(b.ID, model.MissionFilter{}, all); err != nil || missionIDs(got) != idsOf(elsewhere) {
				t.Fatalf("other tenant: %s, %v", missionIDs(got), err)
			}
			return nil
		})
	})

	t.Run("Cursor", func(t *testing.T) {
		MustView(t, db, func(tx model.Tx) error {
			var got []model.Mission
			cursor := ""
			for page := 0; page < 5; page++ {
				ms, next, err := tx.Missions(a.ID, model.MissionFilter{}, model.Page{Limit: 3, Cursor: cursor})
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, ms...)
				if cursor = next; cursor == "" {
					break
				}
			}
			if missionIDs(got) != idsOf(m4, m3, m2, m1) {
				t.Fatalf("pages: %s", missionIDs(got))
			}
			// A filtered walk pages over the matching missions only.
			ms, next, err := tx.Missions(a.ID, model.MissionFilter{TeamIDs: []string{team1}}, model.Page{Limit: 1})
			if err != nil || missionIDs(ms) != idsOf(m3) || next == "" {
				t.Fatalf("first filtered page: %s, %q, %v", missionIDs(ms), next, err)
			}
			ms, next, err = tx.Missions(a.ID, model.MissionFilter{TeamIDs: []string{team1}}, model.Page{Limit: 1, Cursor: next})
			if err != nil || missionIDs(ms) != idsOf(m1) || next != "" {
				t.Fatalf("second filtered page: %s, %q, %v", missionIDs(ms), next, err)
			}
			_, _, err = tx.Missions(a.ID, model.MissionFilter{}, model.Page{Limit: 3, Cursor: "!!"})
			AssertKind(t, err, model.KindValidation)
			return nil
		})
	})
}
