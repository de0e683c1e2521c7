package store

import (
	"testing"
	"time"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

func TestEventReplyCodec(t *testing.T) {
	in := &model.IdempotencyRecord{Reply: model.Reply{Status: 201, Body: []byte(`{"event_id":"x"}`),
		RequestID: model.NewID()}, CreatedAt: model.At(time.Date(2026, 6, 9, 10, 11, 12, 345e6, time.UTC))}
	raw, err := encodeEventReply(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := decodeEventReply(raw)
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != in.Status || string(out.Body) != string(in.Body) || out.RequestID != in.RequestID || !out.CreatedAt.Equal(in.CreatedAt.Time) {
		t.Fatalf("round trip: %+v, want %+v", out, in)
	}
	for _, bad := range [][]byte{nil, {1, 0}, append([]byte{2}, raw[1:]...), raw[:12]} {
		if _, err := decodeEventReply(bad); err == nil {
			t.Fatalf("decoded a malformed record %x", bad)
		}
	}
}

// TestEventsTimeBounds: since and until before 1970 or after a UUIDv7's range bound the
// list like any other time (an until before 1970 once wrapped to the largest key and
// listed every event).
func TestEventsTimeBounds(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	tn := &model.Tenant{ID: model.NewID(), Slug: "acme", Name: "Acme", Status: engine.TenantActive}
	at := time.Date(2026, 6, 9, 10, 11, 12, 0, time.UTC)
	ctx := t.Context()
	err = db.Update(ctx, func(tx model.Tx) error {
		if err := tx.PutTenant(tn); err != nil {
			return err
		}
		for i := range 3 {
			ev := &model.Event{ID: model.NewIDAt(at.Add(time.Duration(i) * time.Second)), Type: "fire",
				Priority: model.PriorityNormal, Status: model.EventPending, CreatedAt: model.At(at)}
			if err := tx.PutEvent(tn.ID, ev); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	day := func(y int) *time.Time { v := time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC); return &v }
	for _, tc := range []struct {
		name         string
		since, until *time.Time
		want         int
	}{
		{"until before 1970", nil, day(1969), 0},
		{"until in year 0", nil, day(0), 0},
		{"until far ahead", nil, day(10000), 3},
		{"since before 1970", day(1969), nil, 3},
		{"since far ahead", day(10000), nil, 0},
		{"since 1969 until 2025", day(1969), day(2025), 0},
		{"since 1969 until 2027", day(1969), day(2027), 3},
	} {
		err := db.View(ctx, func(tx model.Tx) error {
			evs, _, err := tx.Events(tn.ID, model.EventFilter{Since: tc.since, Until: tc.until}, model.Page{Limit: 10})
			if err == nil && len(evs) != tc.want {
				t.Errorf("%s: %d events, want %d", tc.name, len(evs), tc.want)
			}
			return err
		})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
}
