package engine_test

import (
	"log/slog"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// TestDeviceSync_RepliesReadTogether: the replies of the keys of the event items a sync
// receives are read in one call (on PostgreSQL a lookup an item was a round trip an item);
// an item whose key an earlier item of the same sync used gets that item's event, and a
// key of an earlier sync its event, as before.
func TestDeviceSync_RepliesReadTogether(t *testing.T) {
	f := newDeviceFix(t)
	d := f.mustRegister(t, f.opA, model.DeviceInput{Name: "Tab", Platform: "android"})
	cs := &countingStore{Store: f.db.(model.Store)}
	f.e = engine.New(cs, engine.Options{Clock: f.clock, Password: cheapPasswords, Logger: slog.New(slog.DiscardHandler)})
	ev := func(seq int64, key string) map[string]any {
		return item(seq, "event", map[string]any{"type": "FIRE", "priority": "low", "vertical": "emergency",
			"idempotency_key": key}, f.clock.Now())
	}
	res, err := f.sync(t, f.opA, d.ID, nil, ev(1, "k1"), ev(2, "k2"), ev(3, "k1"))
	if err != nil {
		t.Fatal(err)
	}
	r := res.Results
	if len(r) != 3 || r[0].Status != model.ItemApplied || r[1].Status != model.ItemApplied || r[2].Status != model.ItemApplied ||
		r[0].EventID == "" || r[0].EventID == r[1].EventID || r[2].EventID != r[0].EventID {
		t.Fatalf("first sync: %+v", r)
	}
	// k1, k2 and k1 read together; the second k1 asks the store, which holds the first's.
	if cs.bulk != 1 || cs.keysInBulks != 3 || cs.one != 1 {
		t.Fatalf("first sync: %d reads together (%d keys), %d one by one; want 1 (3 keys), 1", cs.bulk, cs.keysInBulks, cs.one)
	}
	res, err = f.sync(t, f.opA, d.ID, nil, ev(4, "k2"), ev(5, "k3"))
	if err != nil {
		t.Fatal(err)
	}
	r2 := res.Results
	if len(r2) != 2 || r2[0].EventID != r[1].EventID || r2[1].Status != model.ItemApplied || r2[1].EventID == "" ||
		r2[1].EventID == r[1].EventID {
		t.Fatalf("second sync: %+v", r2)
	}
	if cs.bulk != 2 || cs.one != 1 {
		t.Fatalf("after the second sync: %d reads together, %d one by one; want 2, 1", cs.bulk, cs.one)
	}
}
