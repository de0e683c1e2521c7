package engine_test

import (
	"context"
	"sync"

	"github.com/fieldrelay/fieldrelay/engine/model"
)

// readCountingStore counts some reads its transactions make: event replies one key at a
// time (EventReply) and together (EventReplies), and the tenant's zones (Zones: a read of
// the tenant's configuration, engine/tenant_config.go).
type readCountingStore struct {
	model.Store
	mu          sync.Mutex
	one, bulk   int
	keysInBulks int
	zones       int
}

func (s *readCountingStore) Update(ctx context.Context, fn func(model.Tx) error) error {
	return s.Store.Update(ctx, func(tx model.Tx) error { return fn(&readCountingTx{Tx: tx, s: s}) })
}

func (s *readCountingStore) Batch(ctx context.Context, tenantID string, fn func(model.Tx) error) error {
	return s.Store.Batch(ctx, tenantID, func(tx model.Tx) error { return fn(&readCountingTx{Tx: tx, s: s}) })
}

type readCountingTx struct {
	model.Tx
	s *readCountingStore
}

func (t *readCountingTx) EventReply(tenantID, key string) (*model.IdempotencyRecord, error) {
	t.s.mu.Lock()
	t.s.one++
	t.s.mu.Unlock()
	return t.Tx.EventReply(tenantID, key)
}

func (t *readCountingTx) EventReplies(tenantID string, keys []string) (map[string]*model.IdempotencyRecord, error) {
	t.s.mu.Lock()
	t.s.bulk, t.s.keysInBulks = t.s.bulk+1, t.s.keysInBulks+len(keys)
	t.s.mu.Unlock()
	return t.Tx.EventReplies(tenantID, keys)
}

func (t *readCountingTx) Zones(tenantID string) ([]model.Zone, error) {
	t.s.mu.Lock()
	t.s.zones++
	t.s.mu.Unlock()
	return t.Tx.Zones(tenantID)
}
