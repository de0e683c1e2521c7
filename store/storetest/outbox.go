package storetest

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// newOutbox returns a webhook message of a tenant due at(due).
func newOutbox(tenantID string, due int) *model.OutboxEntry {
	return &model.OutboxEntry{ID: model.NewID(), TenantID: tenantID, Kind: model.OutboxWebhook, WebhookID: model.NewID(),
		Name: "event.created", Body: json.RawMessage(`{"event":"event.created"}`), DueAt: model.At(at(due)),
		CreatedAt: model.At(at(0))}
}

func testOutbox(t *testing.T, open Opener) {
	t.Run("OK", func(t *testing.T) {
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		o := newOutbox(a.ID, 5)
		f.update(func(tx model.Tx) error { return tx.PutOutboxEntry(o) })
		f.view(func(tx model.Tx) error {
			got, err := tx.OutboxEntry(a.ID, o.ID)
			if err != nil || got.Kind != model.OutboxWebhook || got.WebhookID != o.WebhookID || got.Name != o.Name ||
				string(got.Body) != string(o.Body) || !got.DueAt.Equal(at(5)) {
				t.Fatalf("OutboxEntry = %+v, %v", got, err)
			}
			for _, c := range [][2]string{{b.ID, o.ID}, {a.ID, model.NewID()}, {a.ID, "bad"}, {model.NewID(), o.ID}} {
				_, err := tx.OutboxEntry(c[0], c[1])
				assertKind(t, err, model.KindNotFound)
			}
			return nil
		})
		err := f.updateErr(func(tx model.Tx) error { return tx.PutOutboxEntry(newOutbox(model.NewID(), 1)) })
		assertKind(t, err, model.KindNotFound)
	})
	t.Run("Due", func(t *testing.T) {
		// DueOutbox lists every tenant's pending entries soonest first, each once, at its
		// latest due time, leased or not.
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		o1, o2, o3, o4 := newOutbox(a.ID, 30), newOutbox(b.ID, 10), newOutbox(a.ID, 20), newOutbox(b.ID, 40)
		f.update(func(tx model.Tx) error {
			for _, o := range []*model.OutboxEntry{o1, o2, o3, o4} {
				if err := tx.PutOutboxEntry(o); err != nil {
					return err
				}
			}
			return nil
		})
		due := func() []model.OutboxRef {
			var refs []model.OutboxRef
			f.view(func(tx model.Tx) (err error) {
				refs, err = tx.DueOutbox()
				return err
			})
			return refs
		}
		refID := func(r model.OutboxRef) string { return r.ID }
		entryIDs := func(os ...*model.OutboxEntry) string {
			return ids(os, func(o *model.OutboxEntry) string { return o.ID })
		}
		refs := due()
		if ids(refs, refID) != entryIDs(o2, o3, o1, o4) {
			t.Fatalf("DueOutbox = %+v; want o2, o3, o1, o4", refs)
		}
		if r := refs[0]; r.TenantID != b.ID || !r.DueAt.Equal(at(10)) || r.Leased {
			t.Fatalf("ref = %+v", r)
		}
		// Moved: o2 is retried later and leased, o4 comes sooner.
		o2.DueAt, o2.Attempts, o2.LeasedBy, o2.LastError = model.At(at(50)), 1, "run-1", "timeout"
		o4.DueAt = model.At(at(5))
		f.update(func(tx model.Tx) error {
			if err := tx.PutOutboxEntry(o2); err != nil {
				return err
			}
			return tx.PutOutboxEntry(o4)
		})
		refs = due()
		if ids(refs, refID) != entryIDs(o4, o3, o1, o2) {
			t.Fatalf("DueOutbox after moves = %+v; want o4, o3, o1, o2", refs)
		}
		if r := refs[3]; !r.Leased || !r.DueAt.Equal(at(50)) || r.TenantID != b.ID {
			t.Fatalf("leased ref = %+v", r)
		}
		f.view(func(tx model.Tx) error {
			got, err := tx.OutboxEntry(b.ID, o2.ID)
			if err != nil || got.Attempts != 1 || got.LeasedBy != "run-1" || got.LastError != "timeout" {
				t.Fatalf("changed entry = %+v, %v", got, err)
			}
			return nil
		})
		// Released: the lease ends.
		o2.LeasedBy = ""
		f.update(func(tx model.Tx) error { return tx.PutOutboxEntry(o2) })
		if refs = due(); refs[3].Leased {
			t.Fatalf("a released entry is still leased: %+v", refs[3])
		}
		// Settled: gone from the index and the tenant; deleting again is no error.
		f.update(func(tx model.Tx) error {
			if err := tx.DeleteOutboxEntry(a.ID, o3.ID); err != nil {
				return err
			}
			if err := tx.DeleteOutboxEntry(a.ID, o3.ID); err != nil {
				return err
			}
			return tx.DeleteOutboxEntry(a.ID, model.NewID())
		})
		if refs = due(); ids(refs, refID) != entryIDs(o4, o1, o2) {
			t.Fatalf("DueOutbox after a delete = %+v", refs)
		}
		f.view(func(tx model.Tx) error {
			_, err := tx.OutboxEntry(a.ID, o3.ID)
			assertKind(t, err, model.KindNotFound)
			return nil
		})
	})
	t.Run("DueBefore", func(t *testing.T) {
		// DueOutboxBefore reads the same index up to a time (included, to the millisecond),
		// soonest first, at most limit entries, leased ones with their lease.
		f := newFx(t, open)
		a := f.tenant("alpha")
		b := f.tenant("bravo")
		o1, o2, o3, o4 := newOutbox(a.ID, 30), newOutbox(b.ID, 10), newOutbox(a.ID, 20), newOutbox(b.ID, 40)
		o3.LeasedBy = "run-1"
		f.update(func(tx model.Tx) error {
			for _, o := range []*model.OutboxEntry{o1, o2, o3, o4} {
				if err := tx.PutOutboxEntry(o); err != nil {
					return err
				}
			}
			return nil
		})
		before := func(until time.Time, limit int) []model.OutboxRef {
			var refs []model.OutboxRef
			f.view(func(tx model.Tx) (err error) {
				refs, err = tx.DueOutboxBefore(until, limit)
				return err
			})
			return refs
		}
		refID := func(r model.OutboxRef) string { return r.ID }
		entryIDs := func(os ...*model.OutboxEntry) string {
			return ids(os, func(o *model.OutboxEntry) string { return o.ID })
		}
		for _, c := range []struct {
			until time.Time
			limit int
			want  []*model.OutboxEntry
		}{
			{at(30), 10, []*model.OutboxEntry{o2, o3, o1}},
			{at(30).Add(999 * time.Microsecond), 10, []*model.OutboxEntry{o2, o3, o1}},
			{at(30).Add(-time.Millisecond), 10, []*model.OutboxEntry{o2, o3}},
			{at(100), 2, []*model.OutboxEntry{o2, o3}},
			{at(100), 10, []*model.OutboxEntry{o2, o3, o1, o4}},
			{at(5), 10, nil},
			{at(100), 0, nil},
		} {
			refs := before(c.until, c.limit)
			if ids(refs, refID) != entryIDs(c.want...) {
				t.Fatalf("DueOutboxBefore(%v, %d) = %+v; want %d entries", c.until, c.limit, refs, len(c.want))
			}
		}
		refs := before(at(20), 10)
		if r := refs[1]; r.TenantID != a.ID || !r.DueAt.Equal(at(20)) || !r.Leased || refs[0].Leased {
			t.Fatalf("refs = %+v", refs)
		}
	})
	t.Run("Empty", func(t *testing.T) {
		f := newFx(t, open)
		f.view(func(tx model.Tx) error {
			refs, err := tx.DueOutbox()
			if err != nil || len(refs) != 0 {
				t.Fatalf("DueOutbox of an empty store = %+v, %v", refs, err)
			}
			return nil
		})
	})
}
