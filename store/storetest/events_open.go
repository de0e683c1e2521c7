package storetest

import (
	"encoding/json"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// testOpenEvents: EventFilter.Open lists the events that are not closed, in dispatcher
// order (priority, then oldest first), from an index that follows every write that opens
// or closes an event (docs/decisions/0170-open-events.md).
func testOpenEvents(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	b := f.tenant("bravo")
	origin := model.NewID()
	e := make([]*model.Event, 8)
	for i := range e {
		e[i] = newEvent(i * 10)
	}
	e[0].Priority = model.PriorityHigh // the oldest: first of the high ones
	e[2].Priority, e[2].ZoneCode = model.PriorityCritical, strp("north")
	e[3].Priority = model.PriorityHigh
	e[4].Priority, e[4].Vertical = model.PriorityLow, "gov"
	e[6].Origin, e[6].Priority = &origin, model.PriorityCritical // an upstream replica, open
	e[7].Origin, e[7].Status = &origin, model.EventClosed        // a replica that arrives closed
	put := func(tenantID string, evs ...*model.Event) {
		t.Helper()
		f.update(func(tx model.Tx) error {
			for _, ev := range evs {
				if err := tx.PutEvent(tenantID, ev); err != nil {
					return err
				}
			}
			return nil
		})
	}
	put(a.ID, e...)
	put(b.ID, newEvent(100))
	list := func(fl model.EventFilter) string {
		t.Helper()
		fl.Open = true
		all, _ := walk(t, f, model.Page{Limit: 50}, 3, func(tx model.Tx, p model.Page) ([]model.Event, string, error) {
			return tx.Events(a.ID, fl, p)
		})
		return ids(all, eventID)
	}
	idsOf := func(is ...int) string {
		var evs []model.Event
		for _, i := range is {
			evs = append(evs, *e[i])
		}
		return ids(evs, eventID)
	}
	if got, want := list(model.EventFilter{}), idsOf(2, 6, 0, 3, 1, 5, 4); got != want {
		t.Fatalf("open events = %s; want critical, high, normal, low, oldest first in each: %s", got, want)
	}

	// Paging: pages of two give the same list, each cursor naming its place.
	all, sizes := walk(t, f, model.Page{Limit: 2}, 10, func(tx model.Tx, p model.Page) ([]model.Event, string, error) {
		return tx.Events(a.ID, model.EventFilter{Open: true}, p)
	})
	if ids(all, eventID) != idsOf(2, 6, 0, 3, 1, 5, 4) || sizesOf(sizes) != "[2 2 2 1]" {
		t.Fatalf("open events by pages of 2 = %s %v", ids(all, eventID), sizes)
	}

	// Every filter of the list applies.
	tp := func(i int) *model.Time { v := model.At(at(i)); return &v }
	for _, tc := range []struct {
		name string
		f    model.EventFilter
		want string
	}{
		{"priority high", model.EventFilter{Priority: model.PriorityHigh}, idsOf(0, 3)},
		{"priority low", model.EventFilter{Priority: model.PriorityLow}, idsOf(4)},
		{"zone", model.EventFilter{ZoneCode: "north"}, idsOf(2)},
		{"vertical", model.EventFilter{Vertical: "gov"}, idsOf(4)},
		{"origin", model.EventFilter{Origin: origin}, idsOf(6)},
		{"status closed", model.EventFilter{Status: model.EventClosed}, ""},
		{"since", model.EventFilter{Since: &tp(30).Time}, idsOf(6, 3, 5, 4)},
		{"until", model.EventFilter{Until: &tp(30).Time}, idsOf(2, 0, 3, 1)},
		{"type", model.EventFilter{Type: "flood"}, ""},
	} {
		if got := list(tc.f); got != tc.want {
			t.Errorf("open events, %s = %s; want %s", tc.name, got, tc.want)
		}
	}

	// Writes that keep an event open (delivered, dispatched: its record changes) keep it
	// once; closing (completion, last failure, a replica closed upstream) removes it.
	e[0].Status, e[0].DeliveredAt = model.EventDelivered, tp(1)
	e[1].Status = model.EventFailed
	put(a.ID, e[0], e[1])
	if got, want := list(model.EventFilter{}), idsOf(2, 6, 0, 3, 1, 5, 4); got != want {
		t.Fatalf("open events after delivered and failed = %s; want %s", got, want)
	}
	e[2].Status, e[2].ClosedAt = model.EventClosed, tp(50)
	e[6].Status = model.EventClosed
	put(a.ID, e[2], e[6])
	if got, want := list(model.EventFilter{}), idsOf(0, 3, 1, 5, 4); got != want {
		t.Fatalf("open events after two closed = %s; want %s", got, want)
	}
	// A priority changed while open moves the event to its new rank.
	e[5].Priority = model.PriorityCritical
	put(a.ID, e[5])
	if got, want := list(model.EventFilter{}), idsOf(5, 0, 3, 1, 4); got != want {
		t.Fatalf("open events after a priority change = %s; want %s", got, want)
	}
	e[5].Status = model.EventClosed
	put(a.ID, e[5])
	if got, want := list(model.EventFilter{}), idsOf(0, 3, 1, 4); got != want {
		t.Fatalf("open events after closing the moved event = %s; want %s", got, want)
	}

	// An event retention deletes leaves no open key behind.
	f.update(func(tx model.Tx) error {
		_, _, err := tx.PruneEvents(a.ID, "", at(25), 10, func(ev *model.Event) (bool, error) { return ev.ID != e[0].ID, nil })
		return err
	})
	if got, want := list(model.EventFilter{}), idsOf(3, 1, 4); got != want {
		t.Fatalf("open events after retention deleted one = %s; want %s", got, want)
	}

	f.view(func(tx model.Tx) error {
		got, _, err := tx.Events(b.ID, model.EventFilter{Open: true}, model.Page{Limit: 10})
		if err != nil || len(got) != 1 {
			t.Fatalf("open events of the other tenant = %d, %v; want its own one", len(got), err)
		}
		_, _, err = tx.Events(a.ID, model.EventFilter{Open: true}, model.Page{Limit: 10, Cursor: "bad!"})
		assertKind(t, err, model.KindValidation)
		_, _, err = tx.Events(model.NewID(), model.EventFilter{Open: true}, model.Page{Limit: 10})
		assertKind(t, err, model.KindNotFound)
		return nil
	})
}

// testEventSearch: the matching rule of EventFilter.Query, table-driven
// (docs/decisions/0171-event-search.md), alone and with the other filters and Open.
func testEventSearch(t *testing.T, open Opener) {
	f := newFx(t, open)
	a := f.tenant("alpha")
	e := make([]*model.Event, 5)
	for i := range e {
		e[i] = newEvent(i * 10)
	}
	e[0].Type, e[0].Priority, e[0].Payload = "GAS_LEAK", model.PriorityHigh,
		json.RawMessage(`{"address":"12 Rue de la Paix","caller":{"name":"Zoé Martin","phone":"+33 6 12"},"floor":42}`)
	e[1].Type, e[1].ZoneCode, e[1].IdempotencyKey = "fire", strp("lyon-north"), "alarm-7f3a"
	e[2].DeviceID, e[2].Payload = strp("tablet-Kilo"), json.RawMessage(`{"notes":["smoke \u0047as","x"],"gas":1}`)
	e[3].Payload, e[3].Status = json.RawMessage(`{"description":"Gasleak at depot"}`), model.EventClosed
	e[4].Type, e[4].Payload = "medical", json.RawMessage(`{"ÉTAGE":"Sous-sol","k":"ÉCOLE"}`)
	f.update(func(tx model.Tx) error {
		for _, ev := range e {
			if err := tx.PutEvent(a.ID, ev); err != nil {
				return err
			}
		}
		return nil
	})
	idsOf := func(is ...int) string {
		var evs []model.Event
		for _, i := range is {
			evs = append(evs, *e[i])
		}
		return ids(evs, eventID)
	}
	for _, tc := range []struct {
		name string
		f    model.EventFilter
		want string
	}{
		{"type word, case aside", model.EventFilter{Query: "gas"}, idsOf(3, 2, 0)},
		{"a word's beginning", model.EventFilter{Query: "lea"}, idsOf(0)},
		{"never inside a word", model.EventFilter{Query: "leak"}, idsOf(0)},
		{"every word must match", model.EventFilter{Query: "gas paix"}, idsOf(0)},
		{"words of different fields", model.EventFilter{Query: "leak zoé"}, idsOf(0)},
		{"nested payload string", model.EventFilter{Query: "martin"}, idsOf(0)},
		{"accents and capitals folded", model.EventFilter{Query: "ZOE"}, ""},
		{"unicode lower case", model.EventFilter{Query: "école"}, idsOf(4)},
		{"payload keys are not searched", model.EventFilter{Query: "address"}, ""},
		{"payload numbers are not searched", model.EventFilter{Query: "42"}, ""},
		{"digits in a string value", model.EventFilter{Query: "33"}, idsOf(0)},
		{"zone code", model.EventFilter{Query: "north"}, idsOf(1)},
		{"idempotency key", model.EventFilter{Query: "7f3a"}, idsOf(1)},
		{"source device", model.EventFilter{Query: "kilo"}, idsOf(2)},
		{"escaped payload text", model.EventFilter{Query: "smoke gas"}, idsOf(2)},
		{"punctuation splits words", model.EventFilter{Query: "sous-sol"}, idsOf(4)},
		{"no match", model.EventFilter{Query: "flood"}, ""},
		{"with a filter", model.EventFilter{Query: "gas", Priority: model.PriorityHigh}, idsOf(0)},
		{"with open", model.EventFilter{Query: "gas", Open: true}, idsOf(0, 2)},
	} {
		var got []model.Event
		f.view(func(tx model.Tx) (err error) {
			got, _, err = tx.Events(a.ID, tc.f, model.Page{Limit: 50})
			return err
		})
		if ids(got, eventID) != tc.want {
			t.Errorf("q %q (%s) = %s; want %s", tc.f.Query, tc.name, ids(got, eventID), tc.want)
		}
	}
	// A search is paged like the list.
	all, sizes := walk(t, f, model.Page{Limit: 1}, 10, func(tx model.Tx, p model.Page) ([]model.Event, string, error) {
		return tx.Events(a.ID, model.EventFilter{Query: "gas"}, p)
	})
	if ids(all, eventID) != idsOf(3, 2, 0) || sizesOf(sizes) != "[1 1 1]" {
		t.Fatalf("q=gas by pages of 1 = %s %v", ids(all, eventID), sizes)
	}
}
