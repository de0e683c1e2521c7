package storetest

import (
	"slices"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// testBackfill pins RecordIDs: a tenant's events, dispatches and missions in ascending
// id order (oldest first), after a given id, at most limit, never another tenant's.
func testBackfill(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	want := map[string][]string{}
	f.update(func(tx model.Tx) error {
		// Written newest first, so that an order of writing would show.
		for i := 6; i >= 0; i-- {
			ev := newEvent(i)
			if err := tx.PutEvent(a.ID, ev); err != nil {
				return err
			}
			want[model.ChangeEvent] = append(want[model.ChangeEvent], ev.ID)
			if i%2 == 0 {
				m := newMission(ev.ID, model.NewID(), model.MissionCreated, at(i))
				d := &model.Dispatch{ID: model.NewIDAt(at(i)), TenantID: a.ID, EventID: ev.ID, TeamID: m.TeamID,
					DispatchedBy: model.NilID, DispatchedAt: model.At(at(i)), MissionID: m.ID}
				if err := tx.PutMission(a.ID, m); err != nil {
					return err
				}
				if err := tx.PutDispatch(a.ID, d); err != nil {
					return err
				}
				want[model.ChangeMission] = append(want[model.ChangeMission], m.ID)
				want[model.ChangeDispatch] = append(want[model.ChangeDispatch], d.ID)
			}
		}
		return tx.PutEvent(b.ID, newEvent(3))
	})
	for _, ids := range want {
		slices.Sort(ids) // UUIDv7 strings sort as their bytes, oldest first
	}
	f.view(func(tx model.Tx) error {
		for kind, ids := range want {
			if got, err := tx.RecordIDs(a.ID, kind, "", 100); err != nil || !slices.Equal(got, ids) {
				t.Fatalf("RecordIDs(%s, all) = %v, %v; want %v", kind, got, err, ids)
			}
			if got, err := tx.RecordIDs(a.ID, kind, "", 2); err != nil || !slices.Equal(got, ids[:2]) {
				t.Fatalf("RecordIDs(%s, limit 2) = %v, %v; want %v", kind, got, err, ids[:2])
			}
			if got, err := tx.RecordIDs(a.ID, kind, ids[1], 100); err != nil || !slices.Equal(got, ids[2:]) {
				t.Fatalf("RecordIDs(%s, after the second) = %v, %v; want %v", kind, got, err, ids[2:])
			}
			if got, err := tx.RecordIDs(a.ID, kind, ids[len(ids)-1], 100); err != nil || len(got) != 0 {
				t.Fatalf("RecordIDs(%s, after the last) = %v, %v; want none", kind, got, err)
			}
		}
		// After an id that is not a record: the ids above it.
		gap := model.NewIDAt(at(3).Add(500e6))
		if got, err := tx.RecordIDs(a.ID, model.ChangeEvent, gap, 100); err != nil || !slices.Equal(got, want[model.ChangeEvent][4:]) {
			t.Fatalf("RecordIDs(after an id between records) = %v, %v; want %v", got, err, want[model.ChangeEvent][4:])
		}
		if got, err := tx.RecordIDs(b.ID, model.ChangeMission, "", 100); err != nil || len(got) != 0 {
			t.Fatalf("RecordIDs of another tenant's missions = %v, %v; want none", got, err)
		}
		_, err := tx.RecordIDs(model.NewID(), model.ChangeEvent, "", 10)
		assertKind(t, err, model.KindNotFound)
		if _, err := tx.RecordIDs(a.ID, "upstream_team", "", 10); err == nil {
			t.Fatal("RecordIDs of an unknown kind: no error")
		}
		return nil
	})
}
