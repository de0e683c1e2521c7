package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// newEvent returns an event created at(i).
func newEvent(i int) *model.Event {
	lat, lng := 48.85, 2.35
	return &model.Event{ID: model.NewIDAt(at(i)), Type: "fire", Priority: model.PriorityNormal, Vertical: "emergency",
		Payload: json.RawMessage(`{"floor":3}`), Lat: &lat, Lng: &lng, Status: model.EventPending,
		ChannelsAttempted: []string{}, Source: "api", CreatedAt: model.At(at(i)), UpdatedAt: model.At(at(i))}
}

func eventID(e model.Event) string { return e.ID }

func strp(s string) *string { return &s }

func testEvents(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		ev := newEvent(1)
		ev.ZoneCode, ev.IdempotencyKey, ev.RequiredEquipment = strp("north"), "k1", []string{"ladder"}
		f.update(func(tx model.Tx) error { return tx.PutEvent(a.ID, ev) })
		ev.Status, ev.DeliveredAt, ev.ChannelSelected = model.EventDelivered, model.TimePtr(at(2)), "sms"
		f.update(func(tx model.Tx) error { return tx.PutEvent(a.ID, ev) })
		f.view(func(tx model.Tx) error {
			got, err := tx.Event(a.ID, ev.ID)
			if err != nil || got.Status != model.EventDelivered || got.DeliveredAt == nil || !got.DeliveredAt.Equal(at(2)) ||
				got.ZoneCode == nil || *got.ZoneCode != "north" || string(got.Payload) != `{"floor":3}` ||
				got.Lat == nil || *got.Lat != 48.85 || got.IdempotencyKey != "k1" || got.ChannelSelected != "sms" ||
				len(got.RequiredEquipment) != 1 || !got.CreatedAt.Equal(at(1)) {
				t.Fatalf("Event = %+v, %v", got, err)
			}
			all, _, err := tx.Events(a.ID, model.EventFilter{}, model.Page{Limit: 10})
			if err != nil || len(all) != 1 || all[0].Status != model.EventDelivered {
				t.Fatalf("Events after a change = %+v, %v; want the event once, as changed", all, err)
			}
			for _, c := range [][2]string{{b.ID, ev.ID}, {a.ID, model.NewID()}, {a.ID, "bad"}, {model.NewID(), ev.ID}} {
				_, err := tx.Event(c[0], c[1])
				assertKind(t, err, model.KindNotFound)
			}
			_, _, err = tx.Events(model.NewID(), model.EventFilter{}, model.Page{Limit: 10})
			assertKind(t, err, model.KindNotFound)
			none, next, err := tx.Events(b.ID, model.EventFilter{}, model.Page{Limit: 10})
			if err != nil || len(none) != 0 || next != "" {
				t.Fatalf("Events of a tenant with none = %+v, %q, %v", none, next, err)
			}
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error { return tx.PutEvent(model.NewID(), newEvent(3)) })
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("SinceUntilByIDTime", func(t *testing.T) {
		// An event whose id was taken at a later millisecond than its created_at (ids
		// keep the last millisecond when the clock steps back,
		// docs/decisions/0116-ids-clock-steps.md) is in a list of since and until when both
		// its id's time and its created_at are: a list walks the ids between those times
		// (docs/decisions/0256-event-lists-by-id.md), and filters on created_at.
		f := newFx(t, open)
		a := f.tenant("alpha")
		ev := newEvent(40)
		ev.CreatedAt, ev.UpdatedAt = model.At(at(25)), model.At(at(25))
		f.update(func(tx model.Tx) error { return tx.PutEvent(a.ID, ev) })
		tp := func(i int) *time.Time { v := at(i); return &v }
		f.view(func(tx model.Tx) error {
			for _, tc := range []struct {
				name string
				f    model.EventFilter
				want string
			}{
				{"until between created_at and the id's time", model.EventFilter{Until: tp(30)}, ""},
				{"since between created_at and the id's time", model.EventFilter{Since: tp(30)}, ""},
				{"until after both", model.EventFilter{Until: tp(45)}, ev.ID},
				{"since before both", model.EventFilter{Since: tp(20)}, ev.ID},
			} {
				got, _, err := tx.Events(a.ID, tc.f, model.Page{Limit: 50})
				if err != nil || ids(got, eventID) != tc.want {
					t.Errorf("%s: %s, %v; want %q", tc.name, ids(got, eventID), err, tc.want)
				}
			}
			return nil
		})
	})
	t.Run("Filters", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		origin := model.NewID()
		e := make([]*model.Event, 6)
		for i := range e {
			e[i] = newEvent(i * 10)
		}
		e[0].ZoneCode, e[1].ZoneCode, e[2].ZoneCode = strp("north"), strp("south"), strp("north")
		e[1].Vertical, e[3].Vertical = "gov", "gov"
		e[2].Status, e[4].Status = model.EventDelivered, model.EventClosed
		e[3].Priority = model.PriorityCritical
		e[4].Type = "flood"
		e[5].Origin = &origin
		f.update(func(tx model.Tx) error {
			for _, ev := range e {
				if err := tx.PutEvent(a.ID, ev); err != nil {
					return err
				}
			}
			return nil
		})
		tp := func(i int) *time.Time { v := at(i); return &v }
		day := func(y int) *time.Time { v := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC); return &v }
		idsOf := func(is ...int) string {
			var evs []model.Event
			for _, i := range is {
				evs = append(evs, *e[i])
			}
			return ids(evs, eventID)
		}
		f.view(func(tx model.Tx) error {
			for _, tc := range []struct {
				name string
				f    model.EventFilter
				want string
			}{
				{"all, newest first", model.EventFilter{}, idsOf(5, 4, 3, 2, 1, 0)},
				{"zone", model.EventFilter{ZoneCode: "north"}, idsOf(2, 0)},
				{"vertical", model.EventFilter{Vertical: "gov"}, idsOf(3, 1)},
				{"status", model.EventFilter{Status: model.EventDelivered}, idsOf(2)},
				{"priority", model.EventFilter{Priority: model.PriorityCritical}, idsOf(3)},
				{"type", model.EventFilter{Type: "flood"}, idsOf(4)},
				{"origin", model.EventFilter{Origin: origin}, idsOf(5)},
				{"zone and vertical", model.EventFilter{ZoneCode: "south", Vertical: "gov"}, idsOf(1)},
				{"since, inclusive", model.EventFilter{Since: tp(30)}, idsOf(5, 4, 3)},
				{"until, inclusive", model.EventFilter{Until: tp(20)}, idsOf(2, 1, 0)},
				{"since and until", model.EventFilter{Since: tp(15), Until: tp(35)}, idsOf(3, 2)},
				{"between two events", model.EventFilter{Since: tp(11), Until: tp(19)}, ""},
				{"until before 1970", model.EventFilter{Until: day(1969)}, ""},
				{"until in year 0", model.EventFilter{Until: day(0)}, ""},
				{"until far ahead", model.EventFilter{Until: day(10000)}, idsOf(5, 4, 3, 2, 1, 0)},
				{"since before 1970", model.EventFilter{Since: day(1969)}, idsOf(5, 4, 3, 2, 1, 0)},
				{"since far ahead", model.EventFilter{Since: day(10000)}, ""},
				{"since 1969 until 2025", model.EventFilter{Since: day(1969), Until: day(2025)}, ""},
			} {
				got, next, err := tx.Events(a.ID, tc.f, model.Page{Limit: 50})
				if err != nil || ids(got, eventID) != tc.want || next != "" {
					t.Errorf("%s: %s (next %q), %v; want %s", tc.name, ids(got, eventID), next, err, tc.want)
				}
			}
			return nil
		})
		t.Run("Pages", func(t *testing.T) {
			// A filtered walk pages over the matching events only.
			got, sizes := walk(t, f, model.Page{Limit: 1}, 5, func(tx model.Tx, p model.Page) ([]model.Event, string, error) {
				return tx.Events(a.ID, model.EventFilter{ZoneCode: "north"}, p)
			})
			if ids(got, eventID) != idsOf(2, 0) || sizesOf(sizes) != "[1 1]" {
				t.Fatalf("north in pages of 1: %s, pages %v", ids(got, eventID), sizes)
			}
			got, sizes = walk(t, f, model.Page{Limit: 2}, 5, func(tx model.Tx, p model.Page) ([]model.Event, string, error) {
				return tx.Events(a.ID, model.EventFilter{Until: tp(40)}, p)
			})
			if ids(got, eventID) != idsOf(4, 3, 2, 1, 0) || sizesOf(sizes) != "[2 2 1]" {
				t.Fatalf("until in pages of 2: %s, pages %v", ids(got, eventID), sizes)
			}
			f.view(func(tx model.Tx) error {
				_, _, err := tx.Events(a.ID, model.EventFilter{}, model.Page{Limit: 2, Cursor: "!!!"})
				assertKind(t, err, model.KindValidation)
				return nil
			})
		})
	})
	t.Run("Replies", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		rec := &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"event_id":"x"}`), RequestID: model.NewID()},
			CreatedAt: model.At(at(1))}
		f.view(func(tx model.Tx) error {
			for _, key := range []string{"k", ""} {
				if got, err := tx.EventReply(a.ID, key); err != nil || got != nil {
					t.Fatalf("EventReply(%q) of a new key = %+v, %v; want nil", key, got, err)
				}
			}
			return nil
		})
		f.update(func(tx model.Tx) error { return tx.PutEventReply(a.ID, "k", rec) })
		f.view(func(tx model.Tx) error {
			got, err := tx.EventReply(a.ID, "k")
			if err != nil || got == nil || got.Status != 201 || string(got.Body) != string(rec.Body) ||
				got.RequestID != rec.RequestID || !got.CreatedAt.Equal(at(1)) {
				t.Fatalf("EventReply = %+v, %v", got, err)
			}
			if got, err := tx.EventReply(b.ID, "k"); err != nil || got != nil {
				t.Fatalf("a reply leaked to another tenant: %+v, %v", got, err)
			}
			if got, err := tx.Idempotency(a.ID, "k"); err != nil || got != nil {
				t.Fatalf("an event reply is an idempotency record: %+v, %v", got, err)
			}
			_, err = tx.EventReply(model.NewID(), "k")
			assertKind(t, err, model.KindNotFound)
			replies, err := tx.EventReplies(a.ID, []string{"k", "other", ""})
			if err != nil || len(replies) != 1 || replies["k"] == nil || replies["k"].Status != 201 ||
				string(replies["k"].Body) != string(rec.Body) || replies["k"].RequestID != rec.RequestID || !replies["k"].CreatedAt.Equal(at(1)) {
				t.Fatalf("EventReplies = %+v, %v", replies, err)
			}
			if got, err := tx.EventReplies(b.ID, []string{"k"}); err != nil || len(got) != 0 {
				t.Fatalf("EventReplies of another tenant = %+v, %v", got, err)
			}
			_, err = tx.EventReplies(model.NewID(), []string{"k"})
			assertKind(t, err, model.KindNotFound)
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error { return tx.PutEventReply(model.NewID(), "k", rec) })
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("Parked", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		e := make([]string, 5)
		for i := range e {
			e[i] = model.NewIDAt(at(i))
		}
		ref := func(zone string, i int) model.ParkedRef { return model.ParkedRef{ZoneCode: zone, EventID: e[i]} }
		// Filed out of order: the list is oldest first whatever the order of filing.
		f.update(func(tx model.Tx) error {
			for _, p := range []model.ParkedRef{ref("north", 3), ref("north", 0), ref("", 1), ref("south", 2), ref("north-2", 4)} {
				if err := tx.ParkEvent(a.ID, p.ZoneCode, p.EventID); err != nil {
					return err
				}
			}
			return tx.ParkEvent(b.ID, "north", model.NewIDAt(at(9)))
		})
		refs := func(rs []model.ParkedRef) string {
			return ids(rs, func(r model.ParkedRef) string { return r.ZoneCode + "/" + r.EventID })
		}
		north, none, unknown := "north", "", "east"
		check := func(zone *string, want ...model.ParkedRef) {
			t.Helper()
			f.view(func(tx model.Tx) error {
				got, err := tx.ParkedEvents(a.ID, zone)
				if err != nil || refs(got) != refs(want) {
					t.Errorf("ParkedEvents(%v) = %s, %v; want %s", zone, refs(got), err, refs(want))
				}
				return nil
			})
		}
		check(&north, ref("north", 0), ref("north", 3))
		check(&none, ref("", 1))
		check(&unknown)
		all := func() []model.ParkedRef {
			var got []model.ParkedRef
			f.view(func(tx model.Tx) (err error) {
				got, err = tx.ParkedEvents(a.ID, nil)
				return err
			})
			return got
		}
		// Every zone: each zone's events oldest first, every ref once.
		if got := all(); len(got) != 5 {
			t.Fatalf("ParkedEvents(nil) = %s; want the 5 refs", refs(got))
		}
		f.update(func(tx model.Tx) error {
			if err := tx.UnparkEvent(a.ID, "north", e[0]); err != nil {
				return err
			}
			if err := tx.UnparkEvent(a.ID, "south", e[0]); err != nil { // not parked there: no error
				return err
			}
			return tx.ParkEvent(a.ID, "north", e[3]) // filed twice: once in the list
		})
		check(&north, ref("north", 3))
		if got := all(); len(got) != 4 {
			t.Fatalf("ParkedEvents(nil) after an unpark = %s", refs(got))
		}
		f.view(func(tx model.Tx) error {
			_, err := tx.ParkedEvents(model.NewID(), nil)
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
}
