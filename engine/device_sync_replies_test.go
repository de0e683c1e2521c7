package engine_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/fieldrelay/fieldrelay/engine"
	"github.com/fieldrelay/fieldrelay/engine/model"
)

// replyCountingStore counts the lookups of event replies its transactions make: one key at
// a time (EventReply) and together (EventReplies).
type replyCountingStore struct {
	model.Store
	mu          sync.Mutex
	one, bulk   int
	keysInBulks int
}

func (s *replyCountingStore) Update(ctx context.Context, fn func(model.Tx) error) error {
	return s.Store.Update(ctx, func(tx model.Tx) error { return fn(&replyCountingTx{Tx: tx, s: s}) })
}

func (s *replyCountingStore) Batch(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	return s.Store.Batch(ctx, tenantID, func(tx model.Tx) error { return fn(&replyCountingTx{Tx: tx, s: s}) })
}

type replyCountingTx struct {
	model.Tx
	s *replyCountingStore
}

func (t *replyCountingTx) EventReply(tenantID, key string) (*model.IdempotencyRecord, error) {
	t.s.mu.Lock()
	t.s.one++
	t.s.mu.Unlock()
	return t.Tx.EventReply(tenantID, key)
}

func (t *replyCountingTx) EventReplies(tenantID string, keys []string) (map[string]*model.IdempotencyRecord, error) {
	t.s.mu.Lock()
	t.s.bulk, t.s.keysInBulks = t.s.bulk+1, t.s.keysInBulks+len(keys)
	t.s.mu.Unlock()
	return t.Tx.EventReplies(tenantID, keys)
}

// TestDeviceSync_RepliesReadTogether: the replies of the keys of the event items a sync
// receives are read in one call (on PostgreSQL a lookup an item was a round trip an item);
// an item whose key an earlier item of the same sync used gets that item's event, and a
// key of an earlier sync its event, as before.
func TestDeviceSync_RepliesReadTogether(t *testing.T) {
	f := newDeviceFix(t)
	d := f.mustRegister(t, f.opA, model.DeviceInput{Name: "Tab", Platform: "android"})
	cs := &replyCountingStore{Store: f.db.(model.Store)}
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
