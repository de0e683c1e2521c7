package postgres_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/store/postgres/pgtest"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// TestFeedNamesEvent: a change that carries the document of an event written in its
// transaction names the event instead of a copy (docs/decisions/0227-event-stored-once.md),
// and reads as published whatever happens to the event afterwards: changed in the same
// transaction, changed later, deleted by retention. A change whose bytes are not the
// event's document as last written keeps its own copy.
func TestFeedNamesEvent(t *testing.T) {
	db := open(t, pgtest.URL(t))
	ctx := context.Background()
	tn := uuid.NewString()
	putTenant(t, db, tn, "active")
	created := time.Now().Add(-48 * time.Hour)
	newEvent := func() *model.Event {
		return &model.Event{ID: model.NewIDAt(created), Type: "FIRE", Priority: "high", Vertical: "emergency",
			Status: model.EventPending, Payload: []byte(`{"a":1}`), CreatedAt: model.At(created)}
	}
	published := func(ev *model.Event) json.RawMessage {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	changeOf := func(data json.RawMessage) model.Change {
		return model.Change{Name: "event.created", Perm: model.PermEventsRead, Data: data, At: model.At(time.Now())}
	}
	// stored says how many changes carry their own data and how many name an event.
	stored := func() (copies, named int) {
		t.Helper()
		if err := db.Pool().QueryRow(ctx, `SELECT count(data), count(event_id) FROM stream_changes`).Scan(&copies, &named); err != nil {
			t.Fatal(err)
		}
		return copies, named
	}
	var want []string // the data of every change, as published
	check := func(what string, copies, named int) {
		t.Helper()
		got, _, err := db.ChangesAfter(ctx, tn, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d changes, want %d", what, len(got), len(want))
		}
		for i := range got {
			if string(got[i].Data) != want[i] {
				t.Fatalf("%s: change %d reads %s, was published as %s", what, i+1, got[i].Data, want[i])
			}
		}
		if c, n := stored(); c != copies || n != named {
			t.Fatalf("%s: %d changes with a copy and %d naming an event, want %d and %d", what, c, n, copies, named)
		}
	}
	update := func(fn func(tx model.Tx) error) {
		t.Helper()
		if err := db.Update(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}

	// Created and announced: named.
	a := newEvent()
	update(func(tx model.Tx) error {
		if err := tx.PutEvent(tn, a); err != nil {
			return err
		}
		return db.AppendChange(tx, tn, changeOf(published(a)))
	})
	want = append(want, string(published(a)))
	check("created", 0, 1)

	// Changed later: the change takes the document it was published with.
	a.Status = model.EventDelivered
	update(func(tx model.Tx) error { return tx.PutEvent(tn, a) })
	check("changed later", 1, 0)

	// Announced, then changed in the same transaction.
	b := newEvent()
	update(func(tx model.Tx) error {
		if err := tx.PutEvent(tn, b); err != nil {
			return err
		}
		if err := db.AppendChange(tx, tn, changeOf(published(b))); err != nil {
			return err
		}
		b.Status = model.EventQueuedOffline
		return tx.PutEvent(tn, b)
	})
	b.Status = model.EventPending
	want = append(want, string(published(b)))
	check("changed in its transaction", 2, 0)

	// Written twice, then announced as first written: not the event's document any more.
	c := newEvent()
	update(func(tx model.Tx) error {
		if err := tx.PutEvent(tn, c); err != nil {
			return err
		}
		first := published(c)
		c.Status = model.EventDelivered
		if err := tx.PutEvent(tn, c); err != nil {
			return err
		}
		want = append(want, string(first))
		return db.AppendChange(tx, tn, changeOf(first))
	})
	check("announced as it was", 3, 0)

	// Written again unchanged: the change still names it.
	d := newEvent()
	update(func(tx model.Tx) error {
		if err := tx.PutEvent(tn, d); err != nil {
			return err
		}
		return db.AppendChange(tx, tn, changeOf(published(d)))
	})
	want = append(want, string(published(d)))
	update(func(tx model.Tx) error { return tx.PutEvent(tn, d) })
	check("written unchanged", 3, 1)

	// Deleted by retention: the change keeps its document.
	update(func(tx model.Tx) error {
		n, _, err := tx.PruneEvents(tn, "", time.Now(), 10, func(*model.Event) (bool, error) { return false, nil })
		if err == nil && n != 4 {
			t.Errorf("PruneEvents deleted %d events, want 4", n)
		}
		return err
	})
	check("after retention", 4, 0)
}

// A stream change names its event without a foreign key
// (docs/decisions/0255-stream-event-reference-unchecked.md): migration 16 drops the key of
// migration 12 in place, and no key of stream_changes refers to events, whose check
// locked the event's row for every change that named one. TestFeedNamesEvent holds the
// store to what the key protected.
func TestStreamChangeNamesEventUnchecked(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	eventKeys := func(q interface {
		QueryRow(context.Context, string, ...any) pgx.Row
	}) int {
		var n int
		if err := q.QueryRow(ctx, `SELECT count(*) FROM pg_constraint
			WHERE conrelid = 'stream_changes'::regclass AND confrelid = 'events'::regclass AND contype = 'f'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	conn := migratedTo(t, url, 15)
	if n := eventKeys(conn); n != 1 {
		t.Fatalf("at version 15, %d foreign keys from stream_changes to events, want migration 12's", n)
	}
	db := upgradedWith(t, url, conn, 15, nil)
	if n := eventKeys(db.Pool()); n != 0 {
		t.Errorf("%d foreign keys from stream_changes to events after the migration, want none", n)
	}
}
