// Package tenants holds the reads of the node's tenants and the change of a tenant's
// status (the admin's and GET /v1/tenant/me). Creating a tenant, with its keys, users,
// zones and teams, is the engine's: it uses several capabilities.
//
// A Directory is built from the store, the clock and the engine's write frame. It never
// sees the engine: engine/layering_test.go holds it. The engine embeds it, so that its
// use cases are the Engine's.
package tenants

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Directory runs the use cases of the node's tenants.
type Directory struct {
	store model.Store
	clock model.Clock
	frame writes.Frame
}

// New returns the Directory of an engine; frame is the engine's write frame.
func New(store model.Store, clock model.Clock, frame writes.Frame) *Directory {
	return &Directory{store: store, clock: clock, frame: frame}
}

// AdminTenants lists every tenant of the node, oldest first.
func (e *Directory) AdminTenants(ctx context.Context) ([]model.Tenant, error) {
	var out []model.Tenant
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		out, err = tx.Tenants()
		return err
	})
	return out, err
}

// AdminTenant returns the tenant with the given slug.
func (e *Directory) AdminTenant(ctx context.Context, slug string) (*model.Tenant, error) {
	var t *model.Tenant
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		t, err = tx.TenantBySlug(slug)
		return err
	})
	return t, err
}

// AdminSetTenantStatus moves a tenant to active, suspended or inactive.
func (e *Directory) AdminSetTenantStatus(ctx context.Context, slug, status string) (*model.Tenant, error) {
	return writes.Do(ctx, e.frame, "", nil, func(tx model.Tx) (*model.Tenant, error) { return e.setTenantStatus(tx, slug, status) })
}

// setTenantStatus is AdminSetTenantStatus within tx.
func (e *Directory) setTenantStatus(tx model.Tx, slug, status string) (*model.Tenant, error) {
	if status != model.TenantActive && status != model.TenantSuspended && status != model.TenantInactive {
		return nil, model.Invalid("status", "status must be active, suspended or inactive")
	}
	t, err := tx.TenantBySlug(slug)
	if err != nil || t.Status == status {
		return t, err
	}
	t.Status = status
	t.UpdatedAt = model.At(e.clock.Now())
	return t, tx.PutTenant(t)
}

// Tenant returns the principal's tenant (GET /v1/tenant/me).
func (e *Directory) Tenant(ctx context.Context, p model.Principal) (*model.Tenant, error) {
	var t *model.Tenant
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		t, err = tx.Tenant(p.TenantID)
		return err
	})
	return t, err
}
