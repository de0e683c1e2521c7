package storetest

import (
	"fmt"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// testDownstream pins the downstream log of a central node: numbered per tenant from 1,
// never reused, trimmed from the front, its bounds read after a trim and a roll back.
func testDownstream(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	f.view(func(tx model.Tx) error {
		if first, end, err := tx.DownBounds(a.ID); err != nil || first != 1 || end != 0 {
			t.Fatalf("DownBounds of an empty log = %d, %d, %v; want 1, 0", first, end, err)
		}
		return nil
	})
	kinds := []string{model.DownZone, model.DownTeam, model.DownUser}
	var want []model.DownChange
	f.update(func(tx model.Tx) error {
		for i := range 5 {
			c := model.DownChange{Kind: kinds[i%3], Key: fmt.Sprintf("key-%d", i), At: model.At(at(i))}
			seq, err := tx.AppendDown(a.ID, c)
			if err != nil {
				return err
			}
			if seq != int64(i+1) {
				t.Fatalf("AppendDown #%d = %d, want %d", i, seq, i+1)
			}
			c.Seq = seq
			want = append(want, c)
		}
		seq, err := tx.AppendDown(b.ID, model.DownChange{Kind: model.DownZone, Key: "Z", At: model.At(at(0))})
		if err == nil && seq != 1 {
			t.Fatalf("another tenant's first change = %d, want 1", seq)
		}
		return err
	})
	str := func(cs []model.DownChange) string {
		return ids(cs, func(c model.DownChange) string {
			return fmt.Sprintf("%d %s %s %d", c.Seq, c.Kind, c.Key, c.At.UnixMilli())
		})
	}
	f.view(func(tx model.Tx) error {
		for _, c := range []struct {
			after      int64
			limit      int
			from, till int
		}{{0, 10, 0, 5}, {0, 2, 0, 2}, {2, 2, 2, 4}, {5, 10, 5, 5}} {
			got, err := tx.DownChanges(a.ID, c.after, c.limit)
			if err != nil || str(got) != str(want[c.from:c.till]) {
				t.Errorf("DownChanges(%d, %d) = %s, %v; want %s", c.after, c.limit, str(got), err, str(want[c.from:c.till]))
			}
		}
		return nil
	})
	f.update(func(tx model.Tx) error { return tx.TrimDown(a.ID, 3) })
	_ = f.updateErr(func(tx model.Tx) error {
		if _, err := tx.AppendDown(a.ID, model.DownChange{Kind: model.DownUser, Key: "u", At: model.At(at(9))}); err != nil {
			return err
		}
		return fmt.Errorf("roll back")
	})
	f.view(func(tx model.Tx) error {
		if first, end, err := tx.DownBounds(a.ID); err != nil || first != 4 || end != 5 {
			t.Fatalf("DownBounds after a trim = %d, %d, %v; want 4, 5", first, end, err)
		}
		if got, err := tx.DownChanges(a.ID, 0, 10); err != nil || str(got) != str(want[3:]) {
			t.Fatalf("DownChanges after a trim = %s, %v", str(got), err)
		}
		return nil
	})
	f.update(func(tx model.Tx) error { return tx.TrimDown(a.ID, 5) })
	f.view(func(tx model.Tx) error {
		if first, end, err := tx.DownBounds(a.ID); err != nil || first != 6 || end != 5 {
			t.Fatalf("DownBounds trimmed empty = %d, %d, %v; want 6, 5", first, end, err)
		}
		_, _, err := tx.DownBounds(model.NewID())
		assertKind(t, err, model.KindNotFound)
		return nil
	})
	assertKind(t, f.updateErr(func(tx model.Tx) error {
		_, err := tx.AppendDown(model.NewID(), model.DownChange{Kind: model.DownZone, Key: "Z"})
		return err
	}), model.KindNotFound)
}

// testDispatchRequests pins the dispatch requests: stored and read back by id, replaced
// whole, per tenant.
func testDispatchRequests(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	r := &model.DispatchRequest{ID: model.NewID(), EventID: model.NewID(), TeamID: model.NewID(), Notes: "go",
		Status: model.RequestRequested, SiteID: model.NewID(), RequestedBy: "user:x", RequestedAt: model.At(at(1))}
	f.update(func(tx model.Tx) error { return tx.PutDispatchRequest(a.ID, r) })
	mission := model.NewID()
	r.Status, r.MissionID, r.DecidedAt = model.RequestDispatched, &mission, model.TimePtr(at(2))
	f.update(func(tx model.Tx) error { return tx.PutDispatchRequest(a.ID, r) })
	f.view(func(tx model.Tx) error {
		got, err := tx.DispatchRequest(a.ID, r.ID)
		if err != nil || got.Status != model.RequestDispatched || got.MissionID == nil || *got.MissionID != mission ||
			got.TeamID != r.TeamID || !got.RequestedAt.Equal(at(1)) || got.DecidedAt == nil {
			t.Fatalf("DispatchRequest = %+v, %v", got, err)
		}
		for _, c := range []struct{ tenant, id string }{{b.ID, r.ID}, {a.ID, model.NewID()}, {a.ID, "bad"}} {
			_, err := tx.DispatchRequest(c.tenant, c.id)
			assertKind(t, err, model.KindNotFound)
		}
		return nil
	})
	assertKind(t, f.updateErr(func(tx model.Tx) error { return tx.PutDispatchRequest(model.NewID(), r) }), model.KindNotFound)
}
