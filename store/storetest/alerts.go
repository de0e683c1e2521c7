package storetest

import (
	"fmt"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

func alertID(a model.Alert) string { return a.ID }

// testAlerts: alerts by id, the open one of a key, and the list (open by default, newest
// first, filtered, paged) (docs/decisions/0172-shared-alerts.md).
func testAlerts(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	ev := model.NewIDAt(at(0))
	mk := func(i int, kind, subject string) *model.Alert {
		al := &model.Alert{ID: model.NewIDAt(at(i)), Kind: kind, Key: model.AlertKey(kind, subject), Priority: model.PriorityHigh,
			Message: fmt.Sprintf("alert %d", i), EventID: &ev, Status: model.AlertOpen, RaisedAt: model.At(at(i)), UpdatedAt: model.At(at(i))}
		f.update(func(tx model.Tx) error { return tx.PutAlert(a.ID, al) })
		return al
	}
	a1 := mk(1, model.AlertEventUndispatched, ev)
	a2 := mk(2, model.AlertRequiresManual, ev)
	a3 := mk(3, model.AlertMissionUnacknowledged, model.NewID())
	list := func(fl model.AlertFilter, limit int) string {
		t.Helper()
		all, _ := walk(t, f, model.Page{Limit: limit}, 10, func(tx model.Tx, p model.Page) ([]model.Alert, string, error) {
			return tx.Alerts(a.ID, fl, p)
		})
		return ids(all, alertID)
	}
	want := ids([]model.Alert{*a3, *a2, *a1}, alertID)
	if got := list(model.AlertFilter{}, 50); got != want {
		t.Fatalf("open alerts = %s; want %s", got, want)
	}
	if got := list(model.AlertFilter{}, 1); got != want {
		t.Fatalf("open alerts by pages of 1 = %s; want %s", got, want)
	}
	f.view(func(tx model.Tx) error {
		got, err := tx.OpenAlert(a.ID, a2.Key)
		if err != nil || got == nil || got.ID != a2.ID || got.Message != "alert 2" {
			t.Fatalf("OpenAlert = %+v, %v", got, err)
		}
		if got, err := tx.OpenAlert(b.ID, a2.Key); err != nil || got != nil {
			t.Fatalf("OpenAlert of another tenant = %+v, %v; want none", got, err)
		}
		_, err = tx.Alert(b.ID, a1.ID)
		assertKind(t, err, model.KindNotFound)
		_, err = tx.OpenAlert(model.NewID(), a2.Key)
		assertKind(t, err, model.KindNotFound)
		return nil
	})

	// Acknowledged, an alert stays open; closed, it leaves the key free for a new one.
	ackAt := model.At(at(4))
	who := model.NewID()
	a1.AckedAt, a1.AckedBy = &ackAt, &who
	a3.EscalatedAt = &ackAt // docs/decisions/0263-alert-escalation.md
	a2.Status, a2.ClosedAt = model.AlertClosed, &ackAt
	f.update(func(tx model.Tx) error {
		if err := tx.PutAlert(a.ID, a1); err != nil {
			return err
		}
		if err := tx.PutAlert(a.ID, a3); err != nil {
			return err
		}
		return tx.PutAlert(a.ID, a2)
	})
	f.view(func(tx model.Tx) error {
		if got, err := tx.OpenAlert(a.ID, a2.Key); err != nil || got != nil {
			t.Fatalf("OpenAlert after closing = %+v, %v; want none", got, err)
		}
		got, err := tx.Alert(a.ID, a1.ID)
		if err != nil || got.AckedBy == nil || *got.AckedBy != who || got.Status != model.AlertOpen {
			t.Fatalf("acknowledged alert = %+v, %v", got, err)
		}
		if got, err := tx.OpenAlert(a.ID, a3.Key); err != nil || got == nil || got.EscalatedAt == nil || !got.EscalatedAt.Equal(ackAt.Time) {
			t.Fatalf("escalated alert = %+v, %v", got, err)
		}
		return nil
	})
	a4 := mk(5, model.AlertRequiresManual, ev) // the same cause again
	for _, tc := range []struct {
		name string
		f    model.AlertFilter
		want []*model.Alert
	}{
		{"open", model.AlertFilter{}, []*model.Alert{a4, a3, a1}},
		{"closed", model.AlertFilter{Status: model.AlertClosed}, []*model.Alert{a2}},
		{"all", model.AlertFilter{Status: "all"}, []*model.Alert{a4, a3, a2, a1}},
		{"kind", model.AlertFilter{Status: "all", Kind: model.AlertRequiresManual}, []*model.Alert{a4, a2}},
		{"event", model.AlertFilter{EventID: ev}, []*model.Alert{a4, a3, a1}},
		{"other event", model.AlertFilter{EventID: model.NewID()}, nil},
	} {
		var w []model.Alert
		for _, x := range tc.want {
			w = append(w, *x)
		}
		if got := list(tc.f, 2); got != ids(w, alertID) {
			t.Errorf("alerts, %s = %s; want %s", tc.name, got, ids(w, alertID))
		}
	}
	f.view(func(tx model.Tx) error {
		if got, err := tx.OpenAlert(a.ID, a4.Key); err != nil || got == nil || got.ID != a4.ID {
			t.Fatalf("OpenAlert of the raised-again cause = %+v, %v", got, err)
		}
		_, _, err := tx.Alerts(model.NewID(), model.AlertFilter{}, model.Page{Limit: 5})
		assertKind(t, err, model.KindNotFound)
		return nil
	})
}
