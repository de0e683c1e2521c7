package model

// UpstreamTx holds the transaction methods of upstream sync: the per-tenant settings and
// push state, and the per-tenant change log.
type UpstreamTx interface {
	// Upstream returns a tenant's upstream settings (KindNotFound when it has none).
	Upstream(tenantID string) (*UpstreamConfig, error)
	// PutUpstream stores a tenant's upstream settings (KindNotFound when the tenant does
	// not exist).
	PutUpstream(c *UpstreamConfig) error
	// UpstreamTenants lists the ids of the tenants with upstream settings.
	UpstreamTenants() ([]string, error)

	// AppendChange appends a change to a tenant's change log under the log's next
	// sequence number (contiguous from 1, never reused) and returns it.
	AppendChange(tenantID string, c LogChange) (int64, error)
	// Changes lists at most limit changes of a tenant's log above after, in order.
	Changes(tenantID string, after int64, limit int) ([]LogChange, error)
	// TrimChanges removes the changes of a tenant's log up to through (included).
	TrimChanges(tenantID string, through int64) error
	// ChangeLogEnd returns the last sequence number given in a tenant's log (0 when none).
	ChangeLogEnd(tenantID string) (int64, error)
}
