// Package upstream is the upstream sync of a node: the settings of a tenant's link, the
// change log that a pre-commit hook of the engine's store writes (changelog.go), the
// backfill that puts a tenant's history in it (backfill.go), the pusher that sends it to
// the upstream node through its device sync (push.go), and, on the receiving node, the
// application of the records a node sends (apply.go).
//
// A Runner is built from its parts (Parts): the store, the clock, and what it needs of
// the engine as two functions (a lease of a shared store, an installation secret). It
// never sees the engine: engine/layering_test.go holds it.
package upstream

import "github.com/fieldrelay/fieldrelay/engine/model"

// Tx is what upstream sync reads and writes of a transaction: the change log and the
// link settings (model.UpstreamTx), the records it sends or applies, and the node's
// secrets. The stores' model.Tx has all of it.
type Tx interface {
	model.TxCommit
	model.AlertsTx
	model.UpstreamTx
	model.BackfillTx
	model.DispatchRequestTx
	Meta(key string) ([]byte, error)
	PutMeta(key string, value []byte) error
	TenantBySlug(slug string) (*model.Tenant, error)
	Event(tenantID, id string) (*model.Event, error)
	PutEvent(tenantID string, ev *model.Event) error
	Mission(tenantID, id string) (*model.Mission, error)
	PutMission(tenantID string, m *model.Mission) error
	Dispatch(tenantID, id string) (*model.Dispatch, error)
	PutDispatch(tenantID string, d *model.Dispatch) error
	Team(tenantID, id string) (*model.Team, error)
	PutTeam(tenantID string, t *model.Team) error
	Zones(tenantID string) ([]model.Zone, error)
	PutDevice(tenantID string, d *model.Device) error
}

var _ Tx = model.Tx(nil)
