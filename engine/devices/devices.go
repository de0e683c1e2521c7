// Package devices holds the credentials of the field devices (issue, revoke, and the
// check of a device's grant on each request) and the lists of a tenant's devices.
//
// Credentials is built from the store, the clock and what it needs of the engine as
// functions (the write frame, which devices a caller may see, a user's check). It never
// sees the engine: engine/layering_test.go holds it. The engine embeds it, so that its
// use cases are the Engine's.
package devices

import (
	"context"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// Credentials runs the use cases of device credentials and device lists.
type Credentials struct {
	store    model.Store
	clock    model.Clock
	frame    writes.Frame
	visible  func(tx model.Tx, p model.Principal, deviceID string, read bool) (*model.Device, error)
	authUser func(ctx context.Context, tenantID, userID string, ver int64) (model.Principal, error)
}

// New returns the Credentials of an engine: frame is the engine's write frame, visible
// reads a device p may see (read: p only reads it; visibleDevice of the engine),
// authUser checks a user's principal as a session token would.
func New(store model.Store, clock model.Clock, frame writes.Frame,
	visible func(tx model.Tx, p model.Principal, deviceID string, read bool) (*model.Device, error),
	authUser func(ctx context.Context, tenantID, userID string, ver int64) (model.Principal, error)) *Credentials {
	return &Credentials{store: store, clock: clock, frame: frame, visible: visible, authUser: authUser}
}

// tenantBySlug reads the tenant of a slug.
func (e *Credentials) tenantBySlug(ctx context.Context, slug string) (*model.Tenant, error) {
	var t *model.Tenant
	err := e.store.View(ctx, func(tx model.Tx) (err error) {
		t, err = tx.TenantBySlug(slug)
		return err
	})
	return t, err
}
