package engine

import (
	"context"
	"time"

	"github.com/fieldrelay/fieldrelay/engine/model"
	"github.com/fieldrelay/fieldrelay/engine/usage"
)

// The use cases of usage and billing, as the server calls them; the counting itself is
// engine/usage.

// PlanDefault is the entry of PlanTable for countries without their own.
const PlanDefault = usage.PlanDefault

// DefaultPlans is the price list of GET /v1/tenant/billing when none is given.
func DefaultPlans() model.PlanTable { return usage.DefaultPlans() }

// ParsePlans reads a price list (the --plans file of serve).
func ParsePlans(data []byte) (model.PlanTable, error) { return usage.ParsePlans(data) }

// count adds d to the usage of tenantID on the day of at, within tx (usage.Counter.Count).
func (e *Engine) count(tx model.TxCommit, tenantID string, at time.Time, d model.UsageDelta) error {
	return e.usage.Count(tx, tenantID, at, d)
}

// CountRequest counts one API request of a tenant (every authenticated request, errors
// included). It allocates only for a tenant's first request.
func (e *Engine) CountRequest(tenantID string) { e.usage.CountRequest(tenantID) }

// FlushUsage writes the API requests counted in memory to their tenants' usage of
// today, in one transaction. On failure the counts are kept for the next flush.
func (e *Engine) FlushUsage(ctx context.Context) error { return e.usage.FlushUsage(ctx) }

// Usage answers GET /v1/tenant/usage for p's tenant (usage:read).
func (e *Engine) Usage(ctx context.Context, p model.Principal, q model.UsageQuery) (*model.UsageReport, error) {
	return e.usage.Report(ctx, p, q)
}

// Billing answers GET /v1/tenant/billing for p's tenant (tenant:admin).
func (e *Engine) Billing(ctx context.Context, p model.Principal) (*model.Billing, error) {
	return e.usage.Billing(ctx, p)
}
