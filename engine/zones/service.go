// Package zones holds a tenant's zones (create, change, delete, list) and their
// connectivity: the link state a site reports for a zone, which starts the delivery of
// the events that waited for it and goes to the stream.
//
// A Registry is built from the store, the clock, and what it needs of the engine as
// functions (the write frame, the stream, the release of the events a zone's link
// brings back). It never sees the engine: engine/layering_test.go holds it. The engine
// embeds it, so that its use cases are the Engine's.
package zones

import (
	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/writes"
)

// StreamConnectivity names the stream's change of a zone's reported link state; its data
// is the ConnectivityStatus.
const StreamConnectivity = "zone.connectivity"

// Parts are what a Registry is built from.
type Parts struct {
	Store model.Store
	Clock model.Clock
	// Frame is the engine's write frame.
	Frame writes.Frame
	// Publish sends a change of a tenant to its stream once tx commits.
	Publish func(tx model.TxCommit, tenantID, name string, perm model.Permission, teamID string, payload any) error
	// ReleaseQueued starts the delivery of the events queued for a zone whose link came
	// back.
	ReleaseQueued func(tx model.Tx, tenantID, zoneCode string) error
}

// Registry runs the use cases of zones and their connectivity.
type Registry struct {
	store         model.Store
	clock         model.Clock
	frame         writes.Frame
	publish       func(tx model.TxCommit, tenantID, name string, perm model.Permission, teamID string, payload any) error
	releaseQueued func(tx model.Tx, tenantID, zoneCode string) error
}

// New returns the Registry of an engine.
func New(p Parts) *Registry {
	return &Registry{store: p.Store, clock: p.Clock, frame: p.Frame, publish: p.Publish, releaseQueued: p.ReleaseQueued}
}

// What the engine's other use cases need of zones within their transaction. Functions,
// not methods, so that the Engine that embeds a Registry does not show them.

// Create creates a zone of a tenant within tx (a new tenant's zones).
func Create(s *Registry, tx model.Tx, tenantID string, in model.ZoneInput) (*model.Zone, error) {
	return s.createZone(tx, tenantID, in)
}

// Report applies a link state reported for a zone within tx (a device's sync, a new
// tenant's zones).
func Report(s *Registry, tx model.Tx, tenantID string, in model.ConnectivityReport) (*model.ConnectivityStatus, error) {
	return s.reportConnectivity(tx, tenantID, in)
}
