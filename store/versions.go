package store

import (
	"sync"
	"sync/atomic"
)

// versions count, per tenant and in all, the commits that changed a tenant's directory:
// the tenant record, its API keys, users, zones, webhooks and teams. The engine's caches
// compare them to know when to reload. They live in memory: a restart starts them over,
// with empty caches.
type versions struct {
	all       atomic.Uint64
	perTenant sync.Map // tenant id → *atomic.Uint64
}

func (v *versions) counter(tenantID string) *atomic.Uint64 {
	if c, ok := v.perTenant.Load(tenantID); ok {
		return c.(*atomic.Uint64)
	}
	c, _ := v.perTenant.LoadOrStore(tenantID, new(atomic.Uint64))
	return c.(*atomic.Uint64)
}

func (v *versions) get(tenantID string) uint64 {
	if tenantID == "" {
		return v.all.Load()
	}
	return v.counter(tenantID).Load()
}

func (v *versions) bump(tenantID string) {
	v.counter(tenantID).Add(1)
	v.all.Add(1)
}

// Version returns the directory version of a tenant ("" for all tenants): it changes
// after every commit that changes the tenant, its API keys, users, zones, webhooks or
// teams.
func (db *DB) Version(tenantID string) uint64 { return db.versions.get(tenantID) }

// changed bumps the tenant's directory version once tx commits (never on rollback).
func (t *tx) changed(tenantID string) {
	if t.db != nil {
		t.btx.OnCommit(func() { t.db.versions.bump(tenantID) })
	}
}
