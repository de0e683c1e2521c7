package engine_test

import (
	"context"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// countingStore counts what its read-write transactions do: the changes each appends to
// the change log, and some reads, event replies one key at a time (EventReply) and
// together (EventReplies), and the tenant's zones (a read of the tenant's configuration,
// engine/tenant_config.go).
type countingStore struct {
	model.Store
	mu       sync.Mutex
	most     int // the most changes one transaction appended
	appended int // transactions that appended
	// one and bulk count reply lookups, keysInBulks the keys of the bulk ones; zones the
	// reads of the zones.
	one, bulk, keysInBulks, zones int
}

func (s *countingStore) Update(ctx context.Context, fn func(model.Tx) error) error {
	return s.Store.Update(ctx, s.wrap(fn))
}

func (s *countingStore) Batch(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	return s.Store.Batch(ctx, tenantID, s.wrap(fn))
}

func (s *countingStore) wrap(fn func(model.Tx) error) func(model.Tx) error {
	return func(tx model.Tx) error {
		ct := &countingTx{Tx: tx, s: s}
		err := fn(ct)
		if err == nil && ct.n > 0 {
			s.mu.Lock()
			s.most, s.appended = max(s.most, ct.n), s.appended+1
			s.mu.Unlock()
		}
		return err
	}
}

// count adds n to the counter c of the store.
func (s *countingStore) count(c *int, n int) {
	s.mu.Lock()
	*c += n
	s.mu.Unlock()
}

type countingTx struct {
	model.Tx
	s *countingStore
	n int // the changes appended
}

func (t *countingTx) AppendChange(tenantID string, c model.LogChange) (int64, error) {
	t.n++
	return t.Tx.AppendChange(tenantID, c)
}

func (t *countingTx) EventReply(tenantID, key string) (*model.IdempotencyRecord, error) {
	t.s.count(&t.s.one, 1)
	return t.Tx.EventReply(tenantID, key)
}

func (t *countingTx) EventReplies(tenantID string, keys []string) (map[string]*model.IdempotencyRecord, error) {
	t.s.count(&t.s.bulk, 1)
	t.s.count(&t.s.keysInBulks, len(keys))
	return t.Tx.EventReplies(tenantID, keys)
}

func (t *countingTx) Zones(tenantID string) ([]model.Zone, error) {
	t.s.count(&t.s.zones, 1)
	return t.Tx.Zones(tenantID)
}
